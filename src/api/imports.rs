//! Importing an old station from the browser (issue 38), team admins only:
//! `POST /imports` takes `multipart/form-data` with `file` (a BirdNET-Pi backup tar or `birds.db`,
//! a BirdNET-Go `birdnet.db` or a tar of its data directory) and the fields `kind`
//! (`birdnet-pi`|`birdnet-go`), `satellite_id` or `name`, `time_zone`, `dry_run`, in any order;
//! the file streams to disk (`usecases::import_uploads`) and the answer is 202 with the queued
//! job, which the hub then runs. `GET /imports` and `GET /imports/{id}` show the jobs: progress,
//! figures and report. This one route takes bodies up to `imports.max_upload_bytes` plus 1 MiB
//! for the form, whatever `http.max_body_bytes` says.

use axum::{
    extract::{DefaultBodyLimit, Multipart, State, multipart::MultipartRejection},
    http::{HeaderMap, StatusCode, header},
};
use serde::Deserialize;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    ApiError, Path, Query,
    form_fields::{multipart_error, text},
    openapi::{err, tags},
};
use crate::{
    auth::{Admin, Audit, ClientIp},
    config::UPLOAD_ENVELOPE_BYTES,
    ids::ImportId,
    state::AppState,
    store::{self, imports::ImportJob},
    usecases::import_uploads::{self as uploads, Handles, Upload, UploadError, UploadForm},
};

/// Longest text field of the upload form, in bytes.
const MAX_FIELD_BYTES: usize = 4 * 1024;

pub fn router(max_upload_bytes: u64) -> OpenApiRouter<AppState> {
    let body_limit = usize::try_from(max_upload_bytes + UPLOAD_ENVELOPE_BYTES).unwrap_or(usize::MAX);
    // The upload alone takes large bodies: its own router, so the layer applies to it only.
    let upload = OpenApiRouter::new().routes(routes!(create)).layer(DefaultBodyLimit::max(body_limit));
    OpenApiRouter::new().routes(routes!(list)).routes(routes!(get_one)).merge(upload)
}

/// What the import task needs of the hub.
pub fn handles(state: &AppState) -> Handles {
    Handles {
        store: state.store.clone(),
        objects: state.objects.clone(),
        names: state.names.clone(),
        range: state.range.clone(),
        data_dir: state.settings.data_dir.clone(),
    }
}

#[utoipa::path(
    post, path = "/imports", tag = tags::SATELLITES,
    description = "Team admin. Imports an old BirdNET-Pi or BirdNET-Go station's history. multipart/form-data: `file` (a BirdNET-Pi backup tar or `birds.db`; a BirdNET-Go `birdnet.db` or a tar of its data directory; at most `imports.max_upload_bytes`, 10 GiB by default), `kind` (`birdnet-pi`|`birdnet-go`), `satellite_id` (an existing satellite of the team) or `name` (a new satellite; empty: the station's own name), `time_zone` (IANA; default the satellite's, else the team's), `dry_run`. 202 with the queued job; poll `GET /imports/{id}`. A file that holds no database of that kind or an unknown schema gets 422 (`source_not_found`, `unknown_schema`, `wrong_kind`, `source_unreadable`) and is removed. One import per team at a time (409 `import_running`), at most `imports.max_concurrent` on the hub (503 `imports_busy`, refused before the file is read); a file that does not fit on the disk beside the other imports gets 503 `insufficient_storage`; a tar past the bounds of a station's backup (200,000 entries, 16 directories deep, 1,024-byte paths) gets 422 `archive_refused`. Messages and the job name the file as it was sent, never a path on the hub.",
    request_body(content = Object, content_type = "multipart/form-data", description = "`file`, `kind`, `satellite_id` or `name`, `time_zone`, `dry_run`"),
    responses((status = 202, description = "the queued job", body = ImportJob), err::BadRequest, err::Auth, err::NotFound, err::Conflict, err::PayloadTooLarge, err::Unprocessable, err::Unavailable)
)]
async fn create(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Admin(access): Admin,
    headers: HeaderMap,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<(StatusCode, axum::Json<ImportJob>), ApiError> {
    let max = state.settings.imports.max_upload_bytes;
    // A declared length over the limit is refused before a byte is read.
    let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max + UPLOAD_ENVELOPE_BYTES) {
        return Err(UploadError::TooLarge { limit: max }.into());
    }
    let mut multipart = multipart.map_err(|e| {
        ApiError::BadRequest("invalid_multipart", format!("send the import as multipart/form-data: {}", e.body_text()))
    })?;
    let slot = uploads::reserve(
        &state.store,
        &state.settings.data_dir,
        access.tenant_id,
        state.settings.imports.max_concurrent,
    )
    .await?;
    let mut file: Option<Upload> = None;
    let mut form = UploadForm::default();
    let too_large = || ApiError::from(UploadError::TooLarge { limit: max });
    while let Some(mut field) = multipart.next_field().await.map_err(|e| multipart_error(e, too_large))? {
        let name = field.name().unwrap_or_default().to_owned();
        match name.as_str() {
            "file" if file.is_none() => {
                let sent = field.file_name().unwrap_or("upload").to_owned();
                let mut up = Upload::begin(&state.settings.data_dir, &sent, max, declared).await?;
                while let Some(piece) = field.chunk().await.map_err(|e| multipart_error(e, too_large))? {
                    up.write(&piece).await?;
                }
                up.finish().await?;
                file = Some(up);
            }
            "kind" if form.kind.is_none() => {
                form.kind = Some(text(&mut field, &name, MAX_FIELD_BYTES, too_large).await?)
            }
            "satellite_id" | "satelliteId" if form.satellite_id.is_none() => {
                form.satellite_id = Some(text(&mut field, &name, MAX_FIELD_BYTES, too_large).await?)
            }
            "name" if form.name.is_none() => {
                form.name = Some(text(&mut field, &name, MAX_FIELD_BYTES, too_large).await?)
            }
            "time_zone" | "timeZone" if form.time_zone.is_none() => {
                form.time_zone = Some(text(&mut field, &name, MAX_FIELD_BYTES, too_large).await?)
            }
            "dry_run" | "dryRun" if form.dry_run.is_none() => {
                form.dry_run = Some(text(&mut field, &name, MAX_FIELD_BYTES, too_large).await?)
            }
            "file" | "kind" | "satellite_id" | "satelliteId" | "name" | "time_zone" | "timeZone" | "dry_run"
            | "dryRun" => {
                return Err(ApiError::Unprocessable("duplicate_field", format!("the form has `{name}` twice")));
            }
            _ => {
                return Err(ApiError::Unprocessable(
                    "unknown_field",
                    format!("unknown form field {name:?}; send file, kind, satellite_id or name, time_zone, dry_run"),
                ));
            }
        }
    }
    let Some(file) = file else {
        return Err(ApiError::Unprocessable(
            "file_missing",
            "attach the station's backup or database as `file`".into(),
        ));
    };
    let job = uploads::start(&handles(&state), slot, access.ctx.user_id(), form, file).await?;
    Audit::new("import.started")
        .actor(&access.ctx)
        .tenant(access.tenant_id)
        .target("import", job.id)
        .details(serde_json::json!({ "kind": job.kind, "schema": job.schema, "dryRun": job.dry_run }))
        .ip(&ip)
        .write(&state)
        .await;
    Ok((StatusCode::ACCEPTED, axum::Json(job)))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    limit: Option<u32>,
}

#[utoipa::path(
    get, path = "/imports", tag = tags::SATELLITES,
    description = "Team admin. The team's imports, newest first (`limit`, default 20, at most 100): status `queued|running|done|failed`, rows read/added/duplicate/unmapped/corrupt, clips copied/missing/undecodable, rates, seconds left, the unmapped names with counts, corrupt rows and missing clips (capped lists), the error.",
    params(("limit" = Option<u32>, Query, description = "at most this many (1–100, default 20)")),
    responses((status = 200, description = "the jobs", body = Vec<ImportJob>), err::BadRequest, err::Auth)
)]
async fn list(
    State(state): State<AppState>,
    Admin(access): Admin,
    Query(q): Query<ListQuery>,
) -> Result<axum::Json<Vec<ImportJob>>, ApiError> {
    let limit = q.limit.unwrap_or(20).clamp(1, 100);
    let tenant = access.tenant_id;
    Ok(axum::Json(state.store.call(move |c| store::imports::list(c, tenant, limit)).await?))
}

#[utoipa::path(
    get, path = "/imports/{id}", tag = tags::SATELLITES,
    description = "Team admin. One import job: what the page polls while it runs. Another team's job is 404 `import_not_found`.",
    params(("id" = uuid::Uuid, Path, description = "import id")),
    responses((status = 200, description = "the job", body = ImportJob), err::BadRequest, err::Auth, err::NotFound)
)]
async fn get_one(
    State(state): State<AppState>,
    Admin(access): Admin,
    Path(id): Path<ImportId>,
) -> Result<axum::Json<ImportJob>, ApiError> {
    let tenant = access.tenant_id;
    match state.store.call(move |c| store::imports::get(c, tenant, id)).await {
        Ok(job) => Ok(axum::Json(job)),
        Err(store::Error::NotFound) => {
            Err(ApiError::NotFound("import_not_found", "no such import in this team".into()))
        }
        Err(e) => Err(e.into()),
    }
}
