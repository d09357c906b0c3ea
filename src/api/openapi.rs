//! The OpenAPI 3.1 document of the whole HTTP API, served at `GET /api/openapi.json`, and the
//! Swagger UI page at `/api/docs` (its files are compiled into the binary: no internet needed).
//! Both are public: the document only describes routes, it holds no data.
//!
//! # How a route gets into the document (follow this in every `api/*.rs`)
//!
//! 1. `router()` returns `OpenApiRouter<AppState>` and registers handlers with
//!    `.routes(routes!(get_x, put_x))`: one `routes!` per path, every handler of that path in it.
//!    Never `.route(...)`: such a route works but is missing from the document, and
//!    `tests/openapi.rs` fails on it (its source scan allows only a named, justified list).
//! 2. Each handler carries `#[utoipa::path(...)]`; the `path` is the one inside `/api`:
//!    ```text
//!    #[utoipa::path(get, path = "/satellites/{id}", tag = tags::SATELLITES,
//!        description = "Viewer+. The satellite with its ownership fields.",
//!        params(("id" = uuid::Uuid, Path, description = "satellite id")),
//!        responses((status = 200, body = SatelliteView), err::Auth, err::NotFound))]
//!    ```
//!    - `tag`: the SPEC section, one of the constants in [`tags`].
//!    - `description`: starts with the role the route needs (SPEC 5.2), then what it does.
//!    - `params`: every path segment (`("id" = uuid::Uuid, Path)`), and a query struct that derives
//!      `utoipa::IntoParams` with `#[into_params(parameter_in = Query)]` (`params(ListQuery)`).
//!    - request body: a `Json<T>` argument is picked up by itself; `T` derives `utoipa::ToSchema`.
//!    - responses: the success with its `body` (a `ToSchema` type; for a `Json<Value>` built
//!      with `json!`, `body = Object` plus a description of the fields), then the refusals from
//!      [`err`]: `err::Auth` (401 + 403 for a role guard), `err::Unauthorized`, `err::BadRequest`,
//!      `err::NotFound`, `err::Conflict`, `err::Unprocessable`, ... each with the `{code, message}`
//!      body ([`ErrorBody`]).
//!    - security: every route needs a credential (session cookie or bearer token) unless it says
//!      `security(())` (public).
//! 3. A new response type derives `utoipa::ToSchema` next to `Serialize`; fields of our id types
//!    and `Timestamp` already have schemas.
//! 4. WebSocket upgrades and file downloads are documented like any route, with a description
//!    of what the connection or the bytes are.

use std::sync::{Arc, LazyLock};

use axum::{
    http::header,
    response::{IntoResponse, Redirect, Response},
};
use utoipa::{
    Modify, OpenApi,
    openapi::{
        OpenApi as Document,
        security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme},
    },
};
use utoipa_axum::{router::OpenApiRouter, routes};
use utoipa_swagger_ui::Config;

use super::{ErrorBody, Path};
use crate::{auth::tokens::SESSION_COOKIE, state::AppState};

/// The tags, one per section of SPEC 4 (the docs page groups routes by them).
pub mod tags {
    pub const AUTH: &str = "auth";
    pub const DETECTIONS: &str = "detections";
    pub const SESSIONS: &str = "sessions";
    pub const SATELLITES: &str = "satellites";
    pub const AUDIO: &str = "audio";
    pub const ALERTS: &str = "alerts";
    pub const EXPORTS: &str = "exports";
    pub const STATS: &str = "stats";
    pub const SPECIES: &str = "species";
    pub const CALIBRATION: &str = "calibration";
    pub const MOBILE: &str = "mobile";
    pub const SYSTEM: &str = "system";
    pub const ADMIN: &str = "admin";
    pub const WEBSOCKET: &str = "websocket";
    pub const DOCS: &str = "docs";
    pub const PUBLIC: &str = "public";
}

/// The refusals a route can answer with, each a status with the `{code, message}` body.
/// Listed by type in `responses(...)` so that each route says which ones apply.
#[allow(dead_code)] // only their `IntoResponses` impls are used, by the `#[utoipa::path]` macros
pub mod err {
    use utoipa::IntoResponses;

    use super::ErrorBody;

    /// Routes behind a role guard: no credential, or a credential without the role.
    #[derive(IntoResponses)]
    pub enum Auth {
        /// No or bad credentials (`unauthenticated`, `session_expired`, ...).
        #[response(status = 401)]
        Unauthorized(ErrorBody),
        /// Known caller without the role or team (`insufficient_role`, `platform_admin_required`, ...).
        #[response(status = 403)]
        Forbidden(ErrorBody),
    }

    /// No or bad credentials.
    #[derive(IntoResponses)]
    #[response(status = 401)]
    pub struct Unauthorized(ErrorBody);

    /// A known caller that may not do this.
    #[derive(IntoResponses)]
    #[response(status = 403)]
    pub struct Forbidden(ErrorBody);

    /// Malformed request: bad query, bad id, bad JSON.
    #[derive(IntoResponses)]
    #[response(status = 400)]
    pub struct BadRequest(ErrorBody);

    /// Unknown, or not visible to the caller.
    #[derive(IntoResponses)]
    #[response(status = 404)]
    pub struct NotFound(ErrorBody);

    /// It existed and was removed on purpose (`audio_expired`: retention deleted the recording).
    #[derive(IntoResponses)]
    #[response(status = 410)]
    pub struct Gone(ErrorBody);

    /// Conflicts with what exists (a duplicate, a state that forbids it).
    #[derive(IntoResponses)]
    #[response(status = 409)]
    pub struct Conflict(ErrorBody);

    /// Well-formed but invalid (wrong types, missing fields, failed validation).
    #[derive(IntoResponses)]
    #[response(status = 422)]
    pub struct Unprocessable(ErrorBody);

    /// Too many attempts; try again later.
    #[derive(IntoResponses)]
    #[response(status = 429)]
    pub struct TooManyRequests(ErrorBody);

    /// The account is locked after failed logins.
    #[derive(IntoResponses)]
    #[response(status = 423)]
    pub struct Locked(ErrorBody);

    /// The body is larger than the route takes.
    #[derive(IntoResponses)]
    #[response(status = 413)]
    pub struct PayloadTooLarge(ErrorBody);

    /// The requested byte range starts past the end of the file.
    #[derive(IntoResponses)]
    #[response(status = 416)]
    pub struct RangeNotSatisfiable(ErrorBody);

    /// A part of the hub (or an outside service it asks) is not available.
    #[derive(IntoResponses)]
    #[response(status = 503)]
    pub struct Unavailable(ErrorBody);
}

/// The parts of the document that no handler owns: info, tags, credentials, shared schemas.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "birdhub",
        description = "The HTTP API of a birdhub: the hub of a bird-sound network (SPEC section 4). \
            Every path is under `/api`. Errors are JSON `{code, message}`.",
    ),
    components(schemas(ErrorBody)),
    modifiers(&Credentials),
    tags(
        (name = "auth", description = "SPEC 4.1: accounts, sessions, MFA, invites, teams"),
        (name = "detections", description = "SPEC 4.2: detections, votes, comments, annotations, sharing"),
        (name = "sessions", description = "SPEC 4.3: recording sessions"),
        (name = "satellites", description = "SPEC 4.4: recording devices"),
        (name = "audio", description = "SPEC 4.5: stored audio and spectrograms"),
        (name = "alerts", description = "SPEC 4.6: alerts, rules and channels"),
        (name = "exports", description = "SPEC 4.7: exports to eBird, iNaturalist, xeno-canto, files; scheduled exports"),
        (name = "stats", description = "SPEC 4.8: statistics of the caller's team"),
        (name = "species", description = "SPEC 4.9: names, translations and images"),
        (name = "calibration", description = "SPEC 4.10: confidence calibration"),
        (name = "mobile", description = "SPEC 4.11: releases of the Android app"),
        (name = "system", description = "SPEC 4.12: workers, settings, teams, health"),
        (name = "admin", description = "SPEC 4.13: platform administration"),
        (name = "websocket", description = "SPEC 4.14: the real-time event stream"),
        (name = "docs", description = "This document and its docs page"),
        (name = "public", description = "A team's public page, when its admins turn it on (no credentials; not in the SPEC)"),
    )
)]
struct Base;

/// The two ways to send a credential (SPEC 5.1). Every route needs one of them unless it says
/// `security(())`.
struct Credentials;

impl Modify for Credentials {
    fn modify(&self, doc: &mut Document) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "session_cookie",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                SESSION_COOKIE,
                "The session cookie set by `POST /api/auth/login` (browsers).",
            ))),
        );
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "`Authorization: Bearer <token>` with a session JWT (`POST /api/auth/login?returnToken=true`), \
                         an API key (hex), or the internal API key.",
                    ))
                    .build(),
            ),
        );
        doc.security = Some(vec![
            SecurityRequirement::new("session_cookie", Vec::<String>::new()),
            SecurityRequirement::new("bearer", Vec::<String>::new()),
        ]);
    }
}

/// The version of the crate, in the document's `info.version`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Completes a document gathered from the routers: the base parts and the crate's version.
pub fn finish(routes: Document) -> Document {
    let mut doc = Base::openapi().merge_from(routes);
    doc.info.version = VERSION.into();
    doc
}

/// The routes of this file: the document and the docs page.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(document)).routes(routes!(docs)).routes(routes!(docs_file))
}

/// The document of every route, built once from the same routers the hub serves.
static DOCUMENT: LazyLock<String> =
    LazyLock::new(|| super::document().to_json().unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}")));

#[utoipa::path(get, path = "/openapi.json", tag = tags::DOCS, security(()),
    description = "Public. This OpenAPI 3.1 document: every route of the hub with its parameters, bodies, \
        responses and credentials.",
    responses((status = 200, description = "the OpenAPI document", content_type = "application/json", body = Object)))]
async fn document() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], DOCUMENT.as_str()).into_response()
}

#[utoipa::path(get, path = "/docs", tag = tags::DOCS, security(()),
    description = "Public. The Swagger UI page for this document (redirects to `/api/docs/index.html`). \
        Its scripts and styles are served by the hub itself, so it works with no internet.",
    responses((status = 303, description = "to the docs page")))]
async fn docs() -> Redirect {
    Redirect::to("/api/docs/index.html")
}

/// Swagger UI reads the document from next to the page (relative, so a reverse proxy that moves
/// `/api` keeps it working); no validator badge, which would call an outside service.
static UI_CONFIG: LazyLock<Arc<Config<'static>>> =
    LazyLock::new(|| Arc::new(Config::from("../openapi.json").validator_url("none").try_it_out_enabled(true)));

#[utoipa::path(get, path = "/docs/{file}", tag = tags::DOCS, security(()),
    description = "Public. A file of the docs page (`index.html`, its scripts, styles and icons), compiled into \
        the hub.",
    params(("file" = String, Path, description = "file name, e.g. `index.html`, `swagger-ui.css`")),
    responses((status = 200, description = "the file"), err::NotFound))]
async fn docs_file(Path(file): Path<String>) -> Result<Response, super::ApiError> {
    match utoipa_swagger_ui::serve(&file, UI_CONFIG.clone()) {
        Ok(Some(f)) => {
            let mut response = ([(header::CONTENT_TYPE, f.content_type)], f.bytes.into_owned()).into_response();
            if f.gzpipped {
                response.headers_mut().insert(header::CONTENT_ENCODING, header::HeaderValue::from_static("gzip"));
            }
            Ok(response)
        }
        Ok(None) => Err(super::ApiError::NotFound("not_found", format!("no docs file {file:?}"))),
        Err(e) => Err(super::ApiError::Internal(anyhow::anyhow!("docs file {file:?}: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_is_openapi_3_1_with_the_crate_version() {
        let doc: serde_json::Value = serde_json::from_str(&DOCUMENT).expect("json");
        assert_eq!(doc["openapi"], "3.1.0");
        assert_eq!(doc["info"]["version"], VERSION);
        assert!(doc["paths"]["/api/openapi.json"]["get"].is_object());
    }
}
