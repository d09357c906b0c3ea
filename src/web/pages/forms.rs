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

/// Only local paths are followed after sign-in, never another site.
pub fn safe_next(next: &str) -> &str {
    if next.starts_with('/') && !next.starts_with("//") && !next.starts_with("/\\") { next } else { "/" }
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
        assert_eq!(safe_next("/detections?x=1"), "/detections?x=1");
        assert_eq!(safe_next("//evil.example/"), "/");
        assert_eq!(safe_next("https://evil.example/"), "/");
        assert_eq!(safe_next("/\\evil.example"), "/");
    }
}
