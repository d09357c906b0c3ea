//! Serving stored objects over HTTP with `Content-Length`, `Content-Type` and `Range` support,
//! so browsers can seek in audio.

use axum::{
    body::Body,
    extract::Request,
    http::{HeaderValue, header},
    response::Response,
};
use tower::ServiceExt;
use tower_http::services::ServeFile;

use super::ApiError;
use crate::objects::ObjectStore;

/// Streams the object under `key` as `content_type`, honouring the request's `Range` header.
pub async fn serve_object(
    objects: &ObjectStore,
    key: &str,
    content_type: &str,
    req: Request,
) -> Result<Response, ApiError> {
    objects.size(key).await?; // 404 with our body when missing
    let path = objects.path_of(key)?;
    let mime: mime::Mime = content_type.parse().unwrap_or(mime::APPLICATION_OCTET_STREAM);
    let resp = ServeFile::new_with_mime(path, &mime).oneshot(req).await.map_err(ApiError::internal)?;
    let mut resp = resp.map(Body::new);
    resp.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("private, max-age=3600"));
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;

    use super::*;

    async fn get(
        objects: &ObjectStore,
        key: &str,
        range: Option<&str>,
    ) -> Result<(StatusCode, axum::http::HeaderMap, Vec<u8>), ApiError> {
        let mut req = Request::get("/audio/x");
        if let Some(r) = range {
            req = req.header(header::RANGE, r);
        }
        let resp = serve_object(objects, key, "audio/wav", req.body(Body::empty()).expect("req")).await?;
        let (parts, body) = resp.into_parts();
        let bytes = axum::body::to_bytes(body, 1 << 20).await.expect("body").to_vec();
        Ok((parts.status, parts.headers, bytes))
    }

    #[tokio::test]
    async fn whole_file_and_byte_ranges() {
        let dir = tempfile::tempdir().expect("tempdir");
        let objects = ObjectStore::open(dir.path()).expect("open");
        let data: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
        objects.put("audio/a.wav", data.clone()).await.expect("put");

        let (status, headers, body) = get(&objects, "audio/a.wav", None).await.expect("get");
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers[header::CONTENT_TYPE], "audio/wav");
        assert_eq!(headers[header::CONTENT_LENGTH], "10000");
        assert_eq!(headers[header::ACCEPT_RANGES], "bytes");
        assert_eq!(body, data);

        let (status, headers, body) = get(&objects, "audio/a.wav", Some("bytes=100-199")).await.expect("range");
        assert_eq!(status, StatusCode::PARTIAL_CONTENT);
        assert_eq!(headers[header::CONTENT_RANGE], "bytes 100-199/10000");
        assert_eq!(body, data[100..200]);

        let (status, _, _) = get(&objects, "audio/a.wav", Some("bytes=20000-")).await.expect("unsatisfiable");
        assert_eq!(status, StatusCode::RANGE_NOT_SATISFIABLE);

        assert!(matches!(get(&objects, "audio/missing.wav", None).await, Err(ApiError::NotFound(..))));
    }
}
