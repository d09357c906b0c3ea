//! Mobile app releases (SPEC 2.14, 4.11): the app asks `GET /mobile/latest?currentVersion=` and
//! downloads `GET /mobile/download/:id` (both public); a platform admin uploads, lists, flags and
//! deletes releases. The upload is `multipart/form-data` with `apk` (the file), `version`
//! (SemVer), `notes` and `forceUpdate`, in any order; the APK streams to disk
//! (`usecases::mobile_releases::upload`). This one route takes bodies up to
//! `releases.max_apk_bytes` (200 MiB) plus 1 MiB for the form, whatever `http.max_body_bytes` says.

use axum::{
    body::Bytes,
    extract::{DefaultBodyLimit, Multipart, Request, State, multipart::MultipartRejection},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::Response,
};
use serde::{Deserialize, Serialize};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use super::{
    ApiError, Json, Path, Query,
    files::serve_object,
    form_fields::{multipart_error, text},
    openapi::{err, tags},
};
use crate::{
    auth::{Audit, ClientIp, PlatformAdmin},
    config::UPLOAD_ENVELOPE_BYTES,
    ids::UserId,
    state::AppState,
    store::mobile_releases::Release,
    time::Timestamp,
    usecases::mobile_releases::{
        self as releases,
        upload::{self, ApkUpload, ReceivedApk, ReleaseForm},
    },
};

/// The APK media type (SPEC 4.11).
pub const APK_CONTENT_TYPE: &str = "application/vnd.android.package-archive";
/// Longest text field of the upload form, in bytes.
const MAX_FIELD_BYTES: usize = 64 * 1024;

pub fn router(max_apk_bytes: u64) -> OpenApiRouter<AppState> {
    let body_limit = usize::try_from(max_apk_bytes + UPLOAD_ENVELOPE_BYTES).unwrap_or(usize::MAX);
    // The upload alone takes large bodies: its own router, so the layer applies to it only.
    let upload = OpenApiRouter::new().routes(routes!(upload_release)).layer(DefaultBodyLimit::max(body_limit));
    OpenApiRouter::new()
        .routes(routes!(latest))
        .routes(routes!(download))
        .routes(routes!(list))
        .routes(routes!(set_force, delete))
        .merge(upload)
}

/// A release as the admin list and the upload answer show it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ReleaseView {
    id: String,
    version: String,
    notes: Option<String>,
    force_update: bool,
    file_size: i64,
    sha256: String,
    download_url: String,
    uploaded_by: Option<UserId>,
    created_at: Timestamp,
}

fn download_url(state: &AppState, id: &str) -> String {
    format!("{}/api/mobile/download/{id}", state.links().http_base.trim_end_matches('/'))
}

fn view(state: &AppState, r: Release) -> ReleaseView {
    ReleaseView {
        download_url: download_url(state, &r.id),
        id: r.id,
        version: r.version,
        notes: r.notes,
        force_update: r.force_update,
        file_size: r.file_size,
        sha256: r.sha256,
        uploaded_by: r.uploaded_by,
        created_at: r.created_at,
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LatestQuery {
    current_version: Option<String>,
}

/// SPEC 2.14. With no release yet: `updateAvailable: false` and the other fields null.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct LatestView {
    update_available: bool,
    version: Option<String>,
    download_url: Option<String>,
    file_size: Option<i64>,
    sha256: Option<String>,
    force_update: bool,
    notes: Option<String>,
}

#[utoipa::path(
    get, path = "/mobile/latest", tag = tags::MOBILE,
    description = "Public. The newest release by SemVer (SPEC 2.14); `updateAvailable` compares it with `currentVersion`. With no release: `updateAvailable: false`, other fields null.",
    security(()),
    params(("currentVersion" = Option<String>, Query, description = "the app's version (SemVer)")),
    responses((status = 200, description = "`{updateAvailable, version, downloadUrl, fileSize, sha256, forceUpdate, notes}`", body = Object), err::BadRequest, err::Unprocessable)
)]
async fn latest(State(state): State<AppState>, Query(q): Query<LatestQuery>) -> Result<Json<LatestView>, ApiError> {
    let latest = releases::latest(&state.store, q.current_version).await?;
    let r = latest.release;
    Ok(Json(LatestView {
        update_available: latest.update_available,
        download_url: r.as_ref().map(|r| download_url(&state, &r.id)),
        file_size: r.as_ref().map(|r| r.file_size),
        sha256: r.as_ref().map(|r| r.sha256.clone()),
        force_update: latest.force_update,
        notes: r.as_ref().and_then(|r| r.notes.clone()),
        version: r.map(|r| r.version),
    }))
}

#[utoipa::path(
    get, path = "/mobile/download/{id}", tag = tags::MOBILE,
    description = "Public. The APK, with single byte ranges (206) for resumed downloads.",
    security(()),
    params(("id" = uuid::Uuid, Path, description = "release id")),
    responses((status = 200, description = "The APK", content_type = "application/vnd.android.package-archive", body = String), (status = 206, description = "The requested range"), err::BadRequest, err::NotFound, err::RangeNotSatisfiable)
)]
async fn download(State(state): State<AppState>, Path(id): Path<Uuid>, req: Request) -> Result<Response, ApiError> {
    let release = releases::get(&state.store, id.to_string()).await?;
    let mut resp = serve_object(&state.objects, &release.storage_key, APK_CONTENT_TYPE, req).await?;
    // SemVer text is [0-9A-Za-z.+-] only, so it needs no quoting rules beyond the quotes.
    let disposition = format!("attachment; filename=\"birdhub-{}.apk\"", release.version);
    if let Ok(v) = HeaderValue::from_str(&disposition) {
        resp.headers_mut().insert(header::CONTENT_DISPOSITION, v);
    }
    Ok(resp)
}

#[utoipa::path(
    get, path = "/mobile/releases", tag = tags::MOBILE,
    description = "Platform admin. The 20 most recent releases.",
    responses((status = 200, description = "`{releases: [`{id, version, notes, forceUpdate, fileSize, sha256, downloadUrl, uploadedBy, createdAt}`]}`", body = Object), err::Auth)
)]
async fn list(
    State(state): State<AppState>,
    PlatformAdmin(_admin): PlatformAdmin,
) -> Result<Json<serde_json::Value>, ApiError> {
    let rows = releases::recent(&state.store).await?;
    let views: Vec<ReleaseView> = rows.into_iter().map(|r| view(&state, r)).collect();
    Ok(Json(serde_json::json!({ "releases": views })))
}

#[utoipa::path(
    post, path = "/mobile/upload", tag = tags::MOBILE,
    description = "Platform admin. multipart/form-data: `apk` (the file, at most 200 MiB by default), `version` (SemVer, unique), `notes`, `forceUpdate`.",
    request_body(content = Object, content_type = "multipart/form-data", description = "`apk`, `version`, `notes`, `forceUpdate`"),
    responses((status = 201, description = "`{id, version, notes, forceUpdate, fileSize, sha256, downloadUrl, uploadedBy, createdAt}`", body = Object), err::BadRequest, err::Auth, err::Conflict, err::PayloadTooLarge, err::Unprocessable)
)]
async fn upload_release(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    PlatformAdmin(ctx): PlatformAdmin,
    headers: HeaderMap,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<(StatusCode, Json<ReleaseView>), ApiError> {
    let max = state.settings.releases.max_apk_bytes;
    // A declared length over the limit is refused before a byte is read (curl waits for
    // `100 Continue`, so it never sends the file at all).
    let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max + UPLOAD_ENVELOPE_BYTES) {
        return Err(too_large(max));
    }
    let mut multipart = multipart.map_err(|e| {
        ApiError::BadRequest("invalid_multipart", format!("send the release as multipart/form-data: {}", e.body_text()))
    })?;
    let mut apk: Option<ReceivedApk> = None;
    let mut form = ReleaseForm::default();
    let too_large_form = || too_large(max);
    while let Some(mut field) = multipart.next_field().await.map_err(|e| multipart_error(e, too_large_form))? {
        let name = field.name().unwrap_or_default().to_owned();
        match name.as_str() {
            "apk" if apk.is_none() => {
                let mut sink = ApkUpload::begin(&state.objects, max).await?;
                while let Some(piece) = field.chunk().await.map_err(|e| multipart_error(e, too_large_form))? {
                    sink.write(&piece).await?;
                }
                apk = Some(sink.finish().await?);
            }
            "version" if form.version.is_none() => {
                form.version = Some(text(&mut field, &name, MAX_FIELD_BYTES, too_large_form).await?)
            }
            "notes" if form.notes.is_none() => {
                form.notes = Some(text(&mut field, &name, MAX_FIELD_BYTES, too_large_form).await?)
            }
            "forceUpdate" | "force_update" if form.force_update.is_none() => {
                form.force_update = Some(text(&mut field, &name, MAX_FIELD_BYTES, too_large_form).await?)
            }
            "apk" | "version" | "notes" | "forceUpdate" | "force_update" => {
                return Err(ApiError::Unprocessable("duplicate_field", format!("the form has `{name}` twice")));
            }
            _ => {
                return Err(ApiError::Unprocessable(
                    "unknown_field",
                    format!("unknown form field {name:?}; send apk, version, notes and forceUpdate"),
                ));
            }
        }
    }
    let by = ctx.user_id();
    let release = upload::publish(&state.store, &state.objects, &state.clock, by, apk, form).await?;
    Audit::new("mobile.release_uploaded")
        .actor(&ctx)
        .target("mobile_release", &release.id)
        .details(serde_json::json!({ "version": release.version, "fileSize": release.file_size }))
        .ip(&ip)
        .write(&state)
        .await;
    Ok((StatusCode::CREATED, Json(view(&state, release))))
}

fn too_large(max: u64) -> ApiError {
    ApiError::PayloadTooLarge(format!("an APK may be at most {max} bytes"))
}

/// `PUT /mobile/releases/:id` body: `{"forceUpdate": true|false}` sets the flag; no body (or `{}`)
/// toggles it (SPEC 3).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ForceBody {
    #[serde(rename = "forceUpdate", alias = "force_update")]
    force_update: Option<bool>,
}

#[utoipa::path(
    put, path = "/mobile/releases/{id}", tag = tags::MOBILE,
    description = "Platform admin. Toggles `force_update`, or sets it from `{forceUpdate: bool}`.",
    params(("id" = uuid::Uuid, Path, description = "release id")),
    request_body(content = Option<Object>, description = "optional `{forceUpdate}`"),
    responses((status = 200, description = "`{id, version, notes, forceUpdate, fileSize, sha256, downloadUrl, uploadedBy, createdAt}`", body = Object), err::BadRequest, err::Auth, err::NotFound, err::Unprocessable)
)]
async fn set_force(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    PlatformAdmin(ctx): PlatformAdmin,
    Path(id): Path<Uuid>,
    body: Bytes,
) -> Result<Json<ReleaseView>, ApiError> {
    let body: ForceBody =
        if body.iter().all(u8::is_ascii_whitespace) { ForceBody::default() } else { super::json_body(&body)? };
    let release = releases::set_force_update(&state.store, id.to_string(), body.force_update).await?;
    Audit::new("mobile.release_updated")
        .actor(&ctx)
        .target("mobile_release", id)
        .details(serde_json::json!({ "forceUpdate": release.force_update }))
        .ip(&ip)
        .write(&state)
        .await;
    Ok(Json(view(&state, release)))
}

#[utoipa::path(
    delete, path = "/mobile/releases/{id}", tag = tags::MOBILE,
    description = "Platform admin. Deletes the release file and row.",
    params(("id" = uuid::Uuid, Path, description = "release id")),
    responses((status = 204, description = "Deleted"), err::BadRequest, err::Auth, err::NotFound)
)]
async fn delete(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    PlatformAdmin(ctx): PlatformAdmin,
    Path(id): Path<Uuid>,
) -> Result<StatusCode, ApiError> {
    let release = releases::delete(&state.store, &state.objects, id.to_string()).await?;
    Audit::new("mobile.release_deleted")
        .actor(&ctx)
        .target("mobile_release", id)
        .details(serde_json::json!({ "version": release.version }))
        .ip(&ip)
        .write(&state)
        .await;
    Ok(StatusCode::NO_CONTENT)
}
