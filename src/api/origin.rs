//! Cross-site request refusal for cookie-authenticated writes: a browser sends `Origin` with every
//! `POST`/`PUT`/`PATCH`/`DELETE` from a page, so a write that rides on the session cookie is
//! refused when that origin is not the hub's own host. With `SameSite=Lax` cookies and JSON-only
//! bodies (which a cross-site form cannot send without a preflight the hub never grants), this
//! is the dashboard's CSRF protection for `/api` (see `web::csrf`). Bearer tokens, API keys and
//! clients that send no `Origin` (curl, satellites, the Android app) are not affected.

use axum::{
    extract::Request,
    http::{Method, header},
    middleware::Next,
    response::{IntoResponse, Response},
};

use super::ApiError;
use crate::auth::tokens::SESSION_COOKIE;

pub async fn layer(req: Request, next: Next) -> Response {
    let safe = matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if !safe
        && crate::auth::context::cookie(req.headers(), SESSION_COOKIE).is_some()
        && !crate::web::csrf::same_origin(req.headers())
    {
        let origin = req.headers().get(header::ORIGIN).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
        return ApiError::Forbidden(
            "cross_origin",
            format!("a page on {origin} may not act with this hub's session; use the hub's own dashboard"),
        )
        .into_response();
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use axum::{Router, body::Body, http::StatusCode, middleware};
    use tower::ServiceExt;

    async fn send(origin: Option<&str>, cookie: bool, method: &str) -> StatusCode {
        let app = Router::new().fallback(|| async { "ok" }).layer(middleware::from_fn(super::layer));
        let mut req = axum::http::Request::builder().method(method).uri("/x").header("host", "hub.local:8080");
        if let Some(o) = origin {
            req = req.header("origin", o);
        }
        if cookie {
            req = req.header("cookie", "birdhub_session=abc");
        }
        app.oneshot(req.body(Body::empty()).expect("request")).await.expect("response").status()
    }

    #[tokio::test]
    async fn cookie_writes_from_another_site_are_refused() {
        assert_eq!(send(Some("http://evil.example"), true, "POST").await, StatusCode::FORBIDDEN);
        assert_eq!(send(Some("http://hub.local:8080"), true, "POST").await, StatusCode::OK, "our own page");
        assert_eq!(send(None, true, "POST").await, StatusCode::OK, "no Origin: not a browser page");
        assert_eq!(send(Some("http://evil.example"), false, "POST").await, StatusCode::OK, "no cookie to abuse");
        assert_eq!(send(Some("http://evil.example"), true, "GET").await, StatusCode::OK, "reads are not writes");
    }
}
