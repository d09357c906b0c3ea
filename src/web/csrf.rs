//! CSRF protection for the dashboard's own form posts (sign-in, first run, sign-out, team switch):
//! a double-submit token plus an origin check.
//!
//! - Every page response carries a `bh_csrf` cookie (random, `SameSite=Strict`) and the same token
//!   in `<meta name="csrf-token">` and in each form's hidden `_csrf` field. A post is accepted only
//!   when the field equals the cookie (constant-time) and, when the browser sends `Origin`, that
//!   origin is the hub's own host. A page on another site can neither read the cookie nor set it.
//! - The `/api` routes the pages call with `fetch` take JSON bodies only (a cross-site form cannot
//!   send `application/json` without a CORS preflight, which the hub never grants), ride on the
//!   `SameSite=Lax` session cookie, and refuse cookie-authenticated writes whose `Origin` is another
//!   host (see `api::origin`).

use axum::{
    extract::Request,
    http::{HeaderMap, HeaderValue, header},
    middleware::Next,
    response::Response,
};
use subtle::ConstantTimeEq;

use crate::auth::tokens;

pub const COOKIE: &str = "bh_csrf";

/// The request's CSRF token: the cookie's, or a fresh one that the response will set.
#[derive(Debug, Clone)]
pub struct Token(pub String);

/// Gives every dashboard request a [`Token`] and sets the cookie when it was missing.
pub async fn layer(mut req: Request, next: Next) -> Response {
    let existing = crate::auth::context::cookie(req.headers(), COOKIE)
        .filter(|t| t.len() == 32 && t.bytes().all(|b| b.is_ascii_hexdigit()))
        .map(str::to_owned);
    let fresh = existing.is_none();
    let token = existing.unwrap_or_else(|| tokens::random_hex(16));
    req.extensions_mut().insert(Token(token.clone()));
    let mut resp = next.run(req).await;
    if fresh && let Ok(v) = HeaderValue::from_str(&format!("{COOKIE}={token}; Path=/; SameSite=Strict")) {
        resp.headers_mut().append(header::SET_COOKIE, v);
    }
    resp
}

/// Whether a form post may act: the field matches the cookie and the origin is ours.
pub(crate) fn verify(headers: &HeaderMap, field: &str) -> bool {
    let Some(cookie) = crate::auth::context::cookie(headers, COOKIE) else { return false };
    let same = cookie.len() == field.len() && bool::from(cookie.as_bytes().ct_eq(field.as_bytes()));
    same && same_origin(headers)
}

/// True when the request has no `Origin` (not sent by every browser on same-origin posts) or its
/// host is the `Host` the request was sent to.
pub fn same_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else { return true };
    let Some(host) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) else { return false };
    origin.split_once("://").map(|(_, rest)| rest) == Some(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(cookie: &str, origin: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, HeaderValue::from_str(&format!("{COOKIE}={cookie}")).expect("cookie"));
        h.insert(header::HOST, HeaderValue::from_static("birdhub.local:8080"));
        if let Some(o) = origin {
            h.insert(header::ORIGIN, HeaderValue::from_str(o).expect("origin"));
        }
        h
    }

    #[test]
    fn a_post_needs_the_cookie_token_and_our_origin() {
        let t = "0123456789abcdef0123456789abcdef";
        assert!(verify(&headers(t, None), t));
        assert!(verify(&headers(t, Some("http://birdhub.local:8080")), t));
        assert!(!verify(&headers(t, Some("http://evil.example")), t), "another site");
        assert!(!verify(&headers(t, Some("http://birdhub.local:9999")), t), "another port is another origin");
        assert!(!verify(&headers(t, None), "fedcba9876543210fedcba9876543210"), "a forged token");
        assert!(!verify(&HeaderMap::new(), t), "no cookie at all");
    }
}
