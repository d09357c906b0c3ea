//! The browser security headers on every HTTP response of the hub: dashboard pages, a team's
//! public page, the API, assets, error pages and 404s (`app::run` puts the layer outside
//! everything else). The MQTT-over-WebSocket listener is the broker's, not this router's.
//!
//! - `Content-Security-Policy` ([`policy`]): scripts only from the hub's own files, so an injected
//!   `<script>`, `on*=` handler or `javascript:` URL never runs; no framing; forms, `<base>` and
//!   plugins pinned down. The API docs page (`/api/docs/`, Swagger UI) gets the same policy except
//!   that its bundle may add `<style>` elements.
//! - `X-Frame-Options: DENY` (framing, for browsers older than `frame-ancestors`),
//!   `X-Content-Type-Options: nosniff` (a JSON body or upload is never run as a script or page),
//!   `Referrer-Policy: same-origin` (share-link tokens and page paths stay on the hub).

use std::sync::Arc;

use axum::{
    Router,
    extract::{Request, State},
    http::{HeaderValue, header},
    middleware::{self, Next},
    response::Response,
};

use crate::config::Settings;

/// The policy every page is served with. `style-src-attr 'unsafe-inline'` lets the server-drawn
/// bars keep their `style="width:…"` (text, never script); `<style>` elements stay refused where
/// the browser knows `style-src-elem`, and `style-src` is the fallback for those that do not.
/// `img-src data:` is the authenticator QR code; the configured map tile server (`http.map_tiles`)
/// is the one outside origin, and only for images. `connect-src 'self'` covers `fetch` and the
/// team WebSocket on the same host.
pub fn policy(settings: &Settings) -> String {
    directives(settings, "'self'")
}

/// [`policy`] for the Swagger UI files under `/api/docs/`, whose script inserts `<style>` elements.
pub fn docs_policy(settings: &Settings) -> String {
    directives(settings, "'self' 'unsafe-inline'")
}

fn directives(settings: &Settings, style_elements: &str) -> String {
    let mut img = String::from("'self' data:");
    if let Some(origin) = tile_origin(&settings.http.map_tiles) {
        img.push(' ');
        img.push_str(&origin);
    }
    [
        "default-src 'self'".to_owned(),
        "script-src 'self'".to_owned(),
        "style-src 'self' 'unsafe-inline'".to_owned(),
        format!("style-src-elem {style_elements}"),
        "style-src-attr 'unsafe-inline'".to_owned(),
        format!("img-src {img}"),
        "connect-src 'self'".to_owned(),
        "object-src 'none'".to_owned(),
        "base-uri 'self'".to_owned(),
        "form-action 'self'".to_owned(),
        "frame-ancestors 'none'".to_owned(),
    ]
    .join("; ")
}

/// The `scheme://host[:port]` of a tile URL template, as a CSP source; the bare scheme when the
/// host part is not a plain host name (a placeholder in it, say).
fn tile_origin(template: &str) -> Option<String> {
    let template = template.trim();
    let (scheme, rest) = template.split_once("://")?;
    if !matches!(scheme, "http" | "https") {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let plain =
        !host.is_empty() && host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'));
    Some(if plain { format!("{scheme}://{host}") } else { format!("{scheme}:") })
}

/// The policies, made once.
struct Headers {
    csp: HeaderValue,
    docs_csp: HeaderValue,
}

/// `router` with the headers on each of its responses.
pub fn apply(router: Router, settings: &Settings) -> Router {
    let value =
        |p: String| HeaderValue::from_str(&p).unwrap_or_else(|_| HeaderValue::from_static("default-src 'self'"));
    let headers = Headers { csp: value(policy(settings)), docs_csp: value(docs_policy(settings)) };
    router.layer(middleware::from_fn_with_state(Arc::new(headers), add))
}

async fn add(State(h): State<Arc<Headers>>, req: Request, next: Next) -> Response {
    let docs = req.uri().path().starts_with("/api/docs/");
    let mut resp = next.run(req).await;
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, if docs { h.docs_csp.clone() } else { h.csp.clone() });
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_names_only_the_hub_and_the_configured_tile_server() {
        let mut s = Settings::default();
        let p = policy(&s);
        for part in [
            "default-src 'self'",
            "script-src 'self'",
            "frame-ancestors 'none'",
            "base-uri 'self'",
            "form-action 'self'",
            "object-src 'none'",
            "img-src 'self' data:;",
        ] {
            assert!(p.contains(part), "{part} in {p}");
        }
        assert!(!p.contains("unsafe-eval"), "{p}");
        assert!(p.contains("style-src-elem 'self';"), "no inline <style> on pages: {p}");
        let docs = docs_policy(&s);
        assert!(
            docs.contains("script-src 'self';") && docs.contains("style-src-elem 'self' 'unsafe-inline';"),
            "{docs}"
        );
        s.http.map_tiles = "https://user@tile.example.org:8443/{z}/{x}/{y}.png".into();
        assert!(policy(&s).contains("img-src 'self' data: https://tile.example.org:8443;"), "{}", policy(&s));
    }

    #[test]
    fn a_template_with_a_placeholder_in_its_host_allows_its_scheme() {
        assert_eq!(tile_origin("https://{s}.tile.example/{z}/{x}/{y}.png").as_deref(), Some("https:"));
        assert_eq!(tile_origin("http://127.0.0.1:9000/{z}/{x}/{y}.png").as_deref(), Some("http://127.0.0.1:9000"));
        assert_eq!(tile_origin(""), None);
    }
}
