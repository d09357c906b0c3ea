//! The HTTP request metrics.
//!
//! Requests are counted by the matched route template, never by the raw path, so ids cannot grow
//! the series. The API router sits behind the dashboard's fallback, so its template is not visible
//! from outside: [`label_route`] (on the API router) hands it out in a response extension, and
//! [`track`] (around everything, added by [`counted`]) reads it there, then the outer router's own
//! match, else `unmatched`. The dashboard's in-process calls to the API pass only the inner layer,
//! so they are not counted as requests of their own.
//!
//! `GET /metrics` itself and its access rule are `api::metrics`'s: this module knows nothing of
//! the hub's state or its error answers.

use std::time::Instant;

use axum::{
    Router,
    extract::{MatchedPath, Request, State},
    http::Method,
    middleware::{self, Next},
    response::Response,
};

use super::Metrics;

/// The content type of the Prometheus text exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The route label of a request no route matched.
pub const UNMATCHED: &str = "unmatched";

/// The matched route template of an inner router's answer (see the module docs).
#[derive(Debug, Clone)]
struct RouteLabel(String);

/// `router` with every request it answers counted in `metrics`.
pub fn counted(router: Router, metrics: Metrics) -> Router {
    router.layer(middleware::from_fn_with_state(metrics, track))
}

/// Puts the matched route template of the API router into the response (for [`track`]).
pub async fn label_route(req: Request, next: Next) -> Response {
    let route = req.extensions().get::<MatchedPath>().map(|m| m.as_str().to_owned());
    let mut resp = next.run(req).await;
    if let Some(route) = route {
        resp.extensions_mut().insert(RouteLabel(route));
    }
    resp
}

/// Counts and times every request by method, route template and status.
async fn track(State(metrics): State<Metrics>, req: Request, next: Next) -> Response {
    if !metrics.is_enabled() {
        return next.run(req).await;
    }
    let started = Instant::now();
    let method = method_label(req.method());
    let outer = req.extensions().get::<MatchedPath>().map(|m| m.as_str().to_owned());
    let resp = next.run(req).await;
    let route = resp.extensions().get::<RouteLabel>().map(|r| r.0.as_str()).or(outer.as_deref()).unwrap_or(UNMATCHED);
    metrics.http_request(method, route, resp.status().as_u16(), started.elapsed());
    resp
}

/// Standard methods by name; anything else is `other`, so made-up methods add no series.
fn method_label(m: &Method) -> &'static str {
    match *m {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_up_methods_share_one_label() {
        assert_eq!(method_label(&Method::GET), "GET");
        assert_eq!(method_label(&Method::from_bytes(b"BREW").expect("method")), "other");
    }
}
