//! Extractors that answer bad input with our `{code, message}` body instead of axum's plain text:
//! malformed JSON is 400, wrong types or missing fields 422, an oversize body 413, a body that is
//! not JSON 415, a bad query string or path parameter 400. The messages name the field in words
//! (`humane.rs`), never serde's own text.

use axum::{
    extract::{
        FromRequest, FromRequestParts,
        rejection::{JsonRejection, PathRejection, QueryRejection},
    },
    http::StatusCode,
    response::{IntoResponse, Response},
};
use serde::Serialize;

use super::{ApiError, humane};

/// `Json<T>` that rejects with [`ApiError`]; also a JSON response.
#[derive(Debug, Clone, Copy, Default, FromRequest)]
#[from_request(via(axum::Json), rejection(ApiError))]
pub struct Json<T>(pub T);

/// `Query<T>` that rejects with [`ApiError`].
#[derive(Debug, Clone, Copy, Default, FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub struct Query<T>(pub T);

/// `Path<T>` that rejects with [`ApiError`].
#[derive(Debug, Clone, Copy, FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(ApiError))]
pub struct Path<T>(pub T);

impl<T: Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        axum::Json(self.0).into_response()
    }
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> Self {
        match &r {
            JsonRejection::JsonSyntaxError(_) => ApiError::BadRequest("invalid_json", humane::json_syntax(&r)),
            JsonRejection::JsonDataError(_) => ApiError::Unprocessable("invalid_body", humane::json_data(&r)),
            JsonRejection::MissingJsonContentType(_) => {
                ApiError::UnsupportedMediaType("send the body as JSON with Content-Type: application/json".into())
            }
            other if other.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                ApiError::PayloadTooLarge("the request body is larger than this endpoint accepts".into())
            }
            _ => ApiError::BadRequest("invalid_body", "the request body could not be read".into()),
        }
    }
}

impl From<QueryRejection> for ApiError {
    fn from(r: QueryRejection) -> Self {
        ApiError::BadRequest("invalid_query", humane::query(&r))
    }
}

impl From<PathRejection> for ApiError {
    fn from(r: PathRejection) -> Self {
        ApiError::BadRequest("invalid_path", humane::path(&r))
    }
}

/// A JSON body read by hand (routes whose body is optional): the same answers as [`Json`].
pub fn json_body<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    axum::Json::<T>::from_bytes(bytes).map(|j| j.0).map_err(ApiError::from)
}

#[cfg(test)]
mod tests {
    use axum::{Router, body::Body, http::Request, routing::post};
    use tower::ServiceExt;

    use super::*;
    use crate::api::ErrorBody;

    #[derive(serde::Deserialize, Serialize)]
    struct Rename {
        name: String,
        count: u32,
    }

    async fn rename(Json(body): Json<Rename>) -> Json<Rename> {
        Json(body)
    }

    async fn send(body: &'static str, content_type: Option<&str>) -> (StatusCode, String) {
        let app = Router::new().route("/x", post(rename)).layer(axum::extract::DefaultBodyLimit::max(64));
        let mut req = Request::post("/x");
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
        }
        let resp = app.oneshot(req.body(Body::from(body)).expect("request")).await.expect("response");
        let status = resp.status();
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 16).await.expect("body");
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }

    #[tokio::test]
    async fn bad_bodies_get_json_errors_with_the_right_status() {
        let json = Some("application/json");
        let long = Box::leak(format!("{{\"name\":\"{}\",\"count\":1}}", "a".repeat(100)).into_boxed_str());
        let cases: [(&'static str, Option<&str>, StatusCode, &str); 5] = [
            ("{\"name\": \"x\",", json, StatusCode::BAD_REQUEST, "invalid_json"),
            ("{\"name\": 5, \"count\": 1}", json, StatusCode::UNPROCESSABLE_ENTITY, "invalid_body"),
            ("{\"name\": \"x\"}", json, StatusCode::UNPROCESSABLE_ENTITY, "invalid_body"),
            ("{\"name\":\"x\",\"count\":1}", None, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type"),
            (long, json, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large"),
        ];
        for (body, ct, status, code) in cases {
            let (got, text) = send(body, ct).await;
            assert_eq!(got, status, "{body}");
            let err: ErrorBody = serde_json::from_str(&text).expect("JSON error body");
            assert_eq!(err.code, code);
            assert!(!err.message.is_empty());
            for serde_words in ["invalid type", "at line", "Failed to deserialize"] {
                assert!(!err.message.contains(serde_words), "{body}: {}", err.message);
            }
        }
        let (ok, text) = send("{\"name\":\"x\",\"count\":1,\"extra\":true}", json).await;
        assert_eq!(ok, StatusCode::OK, "unknown fields are ignored");
        assert_eq!(text, "{\"name\":\"x\",\"count\":1}");
    }
}
