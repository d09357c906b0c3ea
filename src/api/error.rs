//! `ApiError`: every failure of the HTTP API, one mapping to a status and a JSON body
//! `{"code": "...", "message": "..."}`. Internal errors are logged; the client gets a generic message.

use axum::{
    Json,
    http::StatusCode,
    response::{IntoResponse, Response},
};
use serde::Serialize;

use crate::{auth::AuthError, objects::ObjectError, store};

#[derive(Debug)]
pub enum ApiError {
    /// 400: the request is malformed (bad JSON, bad query, bad id).
    BadRequest(&'static str, String),
    /// 401: no or bad credentials.
    Unauthorized(&'static str, String),
    /// 403: known caller, not allowed.
    Forbidden(&'static str, String),
    /// 404: unknown, or not visible to the caller.
    NotFound(&'static str, String),
    /// 405: the path exists, the method does not.
    MethodNotAllowed,
    /// 410: it existed and was deliberately removed (audio given up by retention).
    Gone(&'static str, String),
    /// 409: conflicts with what exists.
    Conflict(&'static str, String),
    /// 413: the body is over the limit.
    PayloadTooLarge(String),
    /// 415: the body is not JSON.
    UnsupportedMediaType(String),
    /// 422: well-formed but invalid (wrong types, missing fields, failed validation).
    Unprocessable(&'static str, String),
    /// 422 about one field: `(code, field, message)`; the body's `field` points at it (a setting's
    /// key, or `key.code` for one species' entry) so that a form can mark it.
    InvalidField(&'static str, String, String),
    /// 423: the account is locked.
    Locked(String),
    /// 429: rate limited.
    TooManyRequests(String),
    /// 503: a part of the hub is not ready (model missing, database down).
    Unavailable(&'static str, String),
    /// 500: a bug or an outage; details go to the log only.
    Internal(anyhow::Error),
}

/// The codes of a 503 whose cause is a part of the hub the operator has not installed (the
/// classifier model and its label files), not a failure: every species route answers it until
/// `birdhub model fetch` runs, so it is logged once, not per request.
pub const NOT_INSTALLED: &[&str] = &["model_unavailable", "model_missing"];

/// Marks a response as a [`NOT_INSTALLED`] 503 for the request log (`request_log.rs`), which
/// reports it once at WARN instead of an ERROR line per request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotInstalled {
    pub code: &'static str,
    /// The answer's message, which says what is missing and how to install it.
    pub message: String,
}

/// The body of every error response.
#[derive(Debug, Serialize, serde::Deserialize, PartialEq, Eq, utoipa::ToSchema)]
pub struct ErrorBody {
    /// A stable, machine-readable code (`satellite_not_found`, `OWNER_CANNOT_LEAVE`, ...).
    pub code: String,
    /// What went wrong, for people.
    pub message: String,
    /// The field the error is about, when it is about one (`time_zone`,
    /// `species_min_confidence.parus_major`): for programs and forms, never shown as such.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

impl ApiError {
    pub fn internal(e: impl Into<anyhow::Error>) -> Self {
        Self::Internal(e.into())
    }

    fn parts(&self) -> (StatusCode, &'static str, String) {
        use ApiError::*;
        match self {
            BadRequest(c, m) => (StatusCode::BAD_REQUEST, c, m.clone()),
            Unauthorized(c, m) => (StatusCode::UNAUTHORIZED, c, m.clone()),
            Forbidden(c, m) => (StatusCode::FORBIDDEN, c, m.clone()),
            NotFound(c, m) => (StatusCode::NOT_FOUND, c, m.clone()),
            MethodNotAllowed => {
                (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", "this method is not allowed on this path".into())
            }
            Conflict(c, m) => (StatusCode::CONFLICT, c, m.clone()),
            Gone(c, m) => (StatusCode::GONE, c, m.clone()),
            PayloadTooLarge(m) => (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", m.clone()),
            UnsupportedMediaType(m) => (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type", m.clone()),
            Unprocessable(c, m) | InvalidField(c, _, m) => (StatusCode::UNPROCESSABLE_ENTITY, c, m.clone()),
            Locked(m) => (StatusCode::LOCKED, "account_locked", m.clone()),
            TooManyRequests(m) => (StatusCode::TOO_MANY_REQUESTS, "rate_limited", m.clone()),
            Unavailable(c, m) => (StatusCode::SERVICE_UNAVAILABLE, c, m.clone()),
            Internal(_) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal_error",
                "something went wrong on the hub; it has been logged".into(),
            ),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let ApiError::Internal(e) = &self {
            tracing::error!(error = ?e, "internal error");
        }
        let (status, code, message) = self.parts();
        let not_installed = matches!(self, ApiError::Unavailable(..)) && NOT_INSTALLED.contains(&code);
        let marker = not_installed.then(|| NotInstalled { code, message: message.clone() });
        let field = match self {
            ApiError::InvalidField(_, f, _) if !f.is_empty() => Some(f),
            _ => None,
        };
        let mut resp = (status, Json(ErrorBody { code: code.into(), message, field })).into_response();
        if let Some(m) = marker {
            resp.extensions_mut().insert(m);
        }
        if status == StatusCode::TOO_MANY_REQUESTS {
            // Every limit here counts over a minute at most.
            resp.headers_mut().insert(axum::http::header::RETRY_AFTER, axum::http::HeaderValue::from_static("60"));
        }
        resp
    }
}

/// A refused setting, 422 `code` with its field.
impl ApiError {
    pub fn invalid_setting(code: &'static str, e: crate::domain::settings::Invalid) -> Self {
        Self::InvalidField(code, e.field, e.message)
    }
}

/// Maps a store `NotFound` to a 404 with `code` and `message`; anything else as usual.
pub fn not_found(code: &'static str, message: &'static str) -> impl Fn(store::Error) -> ApiError {
    move |e| match e {
        store::Error::NotFound => ApiError::NotFound(code, message.into()),
        other => other.into(),
    }
}

impl From<store::Error> for ApiError {
    fn from(e: store::Error) -> Self {
        match e {
            store::Error::NotFound => Self::NotFound("not_found", "no such record".into()),
            store::Error::Duplicate => Self::Conflict("conflict", "that already exists".into()),
            other => Self::Internal(other.into()),
        }
    }
}

impl From<crate::domain::sort::BadSort> for ApiError {
    fn from(e: crate::domain::sort::BadSort) -> Self {
        Self::BadRequest("invalid_sort", e.0)
    }
}

/// An over-long input at the edge of a route: 400 `input_too_long`, before anything reads it.
impl From<crate::domain::validate::TooLong> for ApiError {
    fn from(e: crate::domain::validate::TooLong) -> Self {
        Self::BadRequest("input_too_long", e.to_string())
    }
}

impl From<ObjectError> for ApiError {
    fn from(e: ObjectError) -> Self {
        match e {
            ObjectError::NotFound(_) => Self::NotFound("object_not_found", "the stored file does not exist".into()),
            ObjectError::InvalidKey(k) => Self::BadRequest("invalid_key", format!("invalid object key {k:?}")),
            other => Self::Internal(other.into()),
        }
    }
}

/// The one place that decides how each refusal of `auth` reaches a client.
impl From<AuthError> for ApiError {
    fn from(e: AuthError) -> Self {
        use AuthError::*;
        let message = e.to_string();
        match e {
            Unauthenticated => Self::Unauthorized("unauthenticated", message),
            InvalidCredentials => Self::Unauthorized("invalid_credentials", message),
            SessionExpired => Self::Unauthorized("session_expired", message),
            UserBlocked => Self::Forbidden("user_blocked", message),
            TenantNotFound => Self::NotFound("tenant_not_found", message),
            TenantRequired => Self::BadRequest("tenant_required", message),
            InvalidTenantId(_) => Self::BadRequest("invalid_tenant_id", message),
            TenantMismatch => Self::BadRequest("tenant_mismatch", message),
            InsufficientRole { .. } => Self::Forbidden("insufficient_role", message),
            PlatformAdminRequired => Self::Forbidden("platform_admin_required", message),
            UserRequired => Self::Forbidden("user_required", message),
            SatelliteNotFound => {
                Self::NotFound("satellite_not_found", "There is no such satellite in this team.".into())
            }
            DeviceNotManageable => Self::Forbidden("device_not_manageable", message),
            MfaEnrollmentRequired => Self::Forbidden("mfa_enrollment_required", message),
            SatelliteKeyNotAllowed => Self::Forbidden("satellite_key_not_allowed", message),
            Store(e) => e.into(),
        }
    }
}

/// Extractor rejections answer exactly like a handler returning the same error.
impl IntoResponse for AuthError {
    fn into_response(self) -> Response {
        ApiError::from(self).into_response()
    }
}
