//! Form posts of the dashboard's own pages: the fields, the CSRF check, and copying the API's
//! cookies onto the page's response.

use std::collections::HashMap;

use axum::{
    extract::{FromRequest, Request},
    http::header,
    response::{IntoResponse, Redirect, Response},
};

use crate::web::{client::Answer, csrf, error::PageError};

/// The biggest form a dashboard page posts.
const MAX_FORM: usize = 64 * 1024;

/// A posted `application/x-www-form-urlencoded` form whose CSRF token was checked.
pub struct Fields {
    map: HashMap<String, String>,
}

impl Fields {
    pub fn get(&self, name: &str) -> &str {
        self.map.get(name).map(String::as_str).unwrap_or_default()
    }

    pub fn checked(&self, name: &str) -> bool {
        matches!(self.get(name), "on" | "true" | "1")
    }
}

impl<S: Send + Sync> FromRequest<S> for Fields {
    type Rejection = Response;

    async fn from_request(req: Request, _: &S) -> Result<Self, Self::Rejection> {
        let uri = req.uri().clone();
        let (parts, body) = req.into_parts();
        let bytes = axum::body::to_bytes(body, MAX_FORM)
            .await
            .map_err(|_| PageError::Invalid("The form is larger than the hub accepts.".into()).respond(&uri))?;
        let map: HashMap<String, String> = url::form_urlencoded::parse(&bytes).into_owned().collect();
        let token = map.get("_csrf").map(String::as_str).unwrap_or_default();
        if !csrf::verify(&parts.headers, token) {
            return Err(PageError::Forbidden(
                "This form was not sent from this hub's own page (its security token did not match). Reload the page and try again."
                    .into(),
            )
            .respond(&uri));
        }
        Ok(Self { map })
    }
}

/// Only a path of this hub is followed after sign-in, never another site: it starts with one `/`
/// (not `//` or `/\\`, which browsers read as another host) and holds no backslash, control
/// character or whitespace (browsers drop a tab or a newline, so `/\t/evil.example` becomes
/// `//evil.example`). Its percent-decoded path must pass the same test and its decoded query
/// holds no control character (an encoded space in a search is fine). Anything else is `/`.
pub fn safe_next(next: &str) -> &str {
    const MAX_NEXT: usize = 2048;
    let local = |p: &str| {
        p.starts_with('/')
            && !p.starts_with("//")
            && !p.contains('\\')
            && !p.chars().any(|c| c.is_control() || c.is_whitespace())
    };
    let path = next.split(['?', '#']).next().unwrap_or_default();
    let ok = next.len() <= MAX_NEXT
        && local(next)
        && local(&percent_decoded(path))
        && !percent_decoded(next).chars().any(char::is_control);
    if ok { next } else { "/" }
}

/// `%XX` escapes decoded (invalid ones kept as they are); bytes that are not UTF-8 become U+FFFD.
fn percent_decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A redirect to `to` that carries the API answer's `Set-Cookie` headers (session, remember).
pub fn redirect_with_cookies(to: &str, answer: &Answer) -> Response {
    let mut resp = Redirect::to(to).into_response();
    for c in answer.headers.get_all(header::SET_COOKIE) {
        resp.headers_mut().append(header::SET_COOKIE, c.clone());
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_local_paths_are_followed() {
        let cases = [
            ("/detections?x=1", "/detections?x=1"),
            ("/", "/"),
            ("/satellites/abc-123", "/satellites/abc-123"),
            ("/stats?from=2026-01-01&to=2026-02-01", "/stats?from=2026-01-01&to=2026-02-01"),
            ("/detections?species=European%20Robin", "/detections?species=European%20Robin"),
            ("/a%20b", "/"),
            ("/detections?q=%0d%0aSet-Cookie:x", "/"),
            ("/a%2Fb", "/a%2Fb"),
            ("", "/"),
            ("//evil.example/", "/"),
            ("https://evil.example/", "/"),
            ("javascript:alert(1)", "/"),
            ("evil.example", "/"),
            ("/\\evil.example", "/"),
            ("/x\\y", "/"),
            ("/\t/evil.example", "/"),
            ("/\n/evil.example", "/"),
            ("/\r\n//evil.example", "/"),
            (" /detections", "/"),
            ("/det ections", "/"),
            ("/\u{2028}/evil.example", "/"),
            ("/%09/evil.example", "/"),
            ("/%2F/evil.example", "/"),
            ("/%5Cevil.example", "/"),
            ("/%0a", "/"),
            ("/%zz", "/%zz"),
        ];
        for (given, expected) in cases {
            assert_eq!(safe_next(given), expected, "{given:?}");
        }
        assert_eq!(safe_next(&format!("/{}", "a".repeat(3000))), "/", "over-long");
    }
}
