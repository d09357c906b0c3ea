//! What a satellite's own API key may call (SPEC 5.4, 5.5.5). The key is minted at registration
//! for the device to call the hub back; it has no role in the team. It reaches only the calls
//! listed in [`ALLOWED`], and only on its own satellite id: everything else answers 403
//! `satellite_key_not_allowed`, so a route added later is closed to it by default.
//!
//! Public routes (`GET /health`, `GET /mobile/latest`, `GET /mobile/download/:id`) take no
//! credential at all and answer a satellite like anyone else; they need no entry here.

use axum::http::Method;

use crate::ids::SatelliteId;

/// A path segment of an allowed call: fixed text, or the key's own satellite id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Segment {
    Text(&'static str),
    Own,
}

use Segment::{Own, Text};

/// Every call a satellite key may make: the method and the path below `/api`.
const ALLOWED: &[(Method, &[Segment])] = &[
    // Read its own record, effective config and recording schedule.
    (Method::GET, &[Text("satellites"), Own]),
    (Method::GET, &[Text("satellites"), Own, Text("config")]),
    (Method::GET, &[Text("satellites"), Own, Text("schedule")]),
    // Rename itself, rotate its own key, push its own config (the device rule still applies:
    // a locked config and `configLocked` stay refused).
    (Method::PATCH, &[Text("satellites"), Own]),
    (Method::POST, &[Text("satellites"), Own, Text("rotate-api-key")]),
    (Method::PUT, &[Text("satellites"), Own, Text("config")]),
];

/// The allow-list as `(method, path)` lines with `{id}` for the key's own satellite, for the docs
/// and the route-table test.
pub fn allowed_calls() -> Vec<(Method, String)> {
    ALLOWED
        .iter()
        .map(|(m, segs)| {
            let path: String = segs
                .iter()
                .map(|s| match s {
                    Text(t) => format!("/{t}"),
                    Own => "/{id}".to_owned(),
                })
                .collect();
            (m.clone(), path)
        })
        .collect()
}

/// Whether the key of satellite `own` may make this call. `path` is the request path, with or
/// without the `/api` prefix (nested routers see it stripped); it must match a line exactly.
pub fn allows(method: &Method, path: &str, own: SatelliteId) -> bool {
    let path = path.strip_prefix("/api").filter(|p| p.starts_with('/')).unwrap_or(path);
    let Some(rest) = path.strip_prefix('/') else { return false };
    let got: Vec<&str> = rest.split('/').collect();
    let own = own.to_string();
    ALLOWED.iter().any(|(m, segs)| {
        m == method
            && segs.len() == got.len()
            && segs.iter().zip(&got).all(|(s, g)| match s {
                Text(t) => t == g,
                Own => g.eq_ignore_ascii_case(&own),
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_its_own_device_calls_are_allowed() {
        let me = SatelliteId(uuid::Uuid::from_u128(7));
        let other = SatelliteId(uuid::Uuid::from_u128(8));
        let ok = |m: Method, p: String| allows(&m, &p, me);
        assert!(ok(Method::PATCH, format!("/satellites/{me}")));
        assert!(ok(Method::PATCH, format!("/api/satellites/{me}")));
        assert!(ok(Method::POST, format!("/satellites/{me}/rotate-api-key")));
        assert!(ok(Method::PUT, format!("/satellites/{me}/config")));
        assert!(ok(Method::GET, format!("/satellites/{me}/config")));
        assert!(ok(Method::GET, format!("/satellites/{me}/schedule")));
        assert!(ok(Method::GET, format!("/satellites/{}", me.to_string().to_uppercase())));
        for (m, p) in [
            (Method::PATCH, format!("/satellites/{other}")),
            (Method::GET, format!("/satellites/{other}/config")),
            (Method::DELETE, format!("/satellites/{me}")),
            (Method::POST, format!("/satellites/{me}/profile")),
            (Method::POST, format!("/satellites/{me}/update")),
            (Method::GET, format!("/satellites/{me}/telemetry")),
            (Method::GET, format!("/satellites/{me}/config/")),
            (Method::GET, format!("/x/satellites/{me}")),
            (Method::GET, "/satellites".to_owned()),
            (Method::POST, "/satellites".to_owned()),
            (Method::GET, "/ws/events".to_owned()),
            (Method::GET, "/export/detections".to_owned()),
            (Method::GET, "/settings/tenant".to_owned()),
            (Method::GET, "/auth/me".to_owned()),
            (Method::GET, String::new()),
        ] {
            assert!(!ok(m.clone(), p.clone()), "{m} {p}");
        }
    }

    #[test]
    fn the_documented_list_names_each_call() {
        let calls = allowed_calls();
        assert_eq!(calls.len(), ALLOWED.len());
        assert!(calls.contains(&(Method::POST, "/satellites/{id}/rotate-api-key".to_owned())));
    }
}
