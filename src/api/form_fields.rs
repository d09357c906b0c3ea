//! The text fields and errors of the API's two `multipart/form-data` uploads (an app release,
//! an old station to import): a field is read piece by piece up to its own cap, and a body over
//! the route's limit is 413 while any other broken form is 400.

use axum::{
    extract::multipart::{Field, MultipartError},
    http::StatusCode,
};

use super::ApiError;

/// The text of `field` (named `name` in errors), at most `max_bytes` of UTF-8; `too_large` is
/// the route's 413 for a body cut off at its limit.
pub(super) async fn text(
    field: &mut Field<'_>,
    name: &str,
    max_bytes: usize,
    too_large: impl Fn() -> ApiError,
) -> Result<String, ApiError> {
    let mut bytes = Vec::new();
    while let Some(piece) = field.chunk().await.map_err(|e| multipart_error(e, &too_large))? {
        if bytes.len() + piece.len() > max_bytes {
            return Err(ApiError::Unprocessable(
                "field_too_long",
                format!("`{name}` is longer than {max_bytes} bytes"),
            ));
        }
        bytes.extend_from_slice(&piece);
    }
    String::from_utf8(bytes)
        .map_err(|_| ApiError::Unprocessable("invalid_field", format!("`{name}` is not UTF-8 text")))
}

/// A body over the route's limit is `too_large()` (413); anything else (a malformed form, a body
/// cut off) is 400.
pub(super) fn multipart_error(e: MultipartError, too_large: impl Fn() -> ApiError) -> ApiError {
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        too_large()
    } else {
        ApiError::BadRequest(
            "invalid_multipart",
            format!("the upload form is malformed or incomplete: {}", e.body_text()),
        )
    }
}
