//! On-demand exports (SPEC 4.7), Member+, for the caller's team. The query is the filters of
//! `GET /detections` (`satelliteId`, `species`, `speciesSearch`, `minConfidence`,
//! `verificationStatus`) plus `from`/`to` (local `YYYY-MM-DD`, inclusive) or `days`, and each
//! format's options; `usecases::exports` checks them all before the first byte, so bad input is a
//! 4xx and never a half-written file.
//!
//! - `GET /export/detections?format=csv|json` (streamed; `lang` names the translated column);
//! - `GET /export/checklist` (eBird; `groupBy=day|session`, `verifiedOnly`, `allReported`);
//! - `GET /export/observation` (iNaturalist; `groupBy=day|session|detection`, `geoprivacy`);
//! - `GET /export/recording` (xeno-canto-style ZIP of WAVs and `metadata.csv`; `verifiedOnly`).

use axum::{
    body::Body,
    extract::State,
    http::{HeaderValue, header},
    response::Response,
};
use serde::Deserialize;
use tokio::sync::mpsc;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    ApiError, Query,
    openapi::{err, tags},
};
use crate::{
    auth::{Member, TenantAccess},
    state::AppState,
    store,
    usecases::exports::{self, Env, ExportError, ExportFile, Filters, Format, ShareLinks, detections, recording},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(detections_export))
        .routes(routes!(checklist))
        .routes(routes!(observation))
        .routes(routes!(recording_bundle))
}

/// What exports read, from the hub's state.
pub fn env(state: &AppState) -> Env {
    Env {
        store: state.store.clone(),
        names: state.names.clone(),
        share: ShareLinks::from_links(state.links(), state.settings.security.jwt_secret.expose()),
    }
}

#[derive(Debug, Deserialize)]
struct FormatQuery {
    format: Option<String>,
}

/// A response that downloads as `name`.
fn download(content_type: &str, name: &str, body: Body) -> Result<Response, ApiError> {
    let disposition = format!("attachment; filename=\"{name}\"");
    Response::builder()
        .header(header::CONTENT_TYPE, HeaderValue::from_str(content_type).map_err(ApiError::internal)?)
        .header(header::CONTENT_DISPOSITION, HeaderValue::from_str(&disposition).map_err(ApiError::internal)?)
        .header(header::CACHE_CONTROL, "no-store")
        .body(body)
        .map_err(ApiError::internal)
}

fn whole(file: ExportFile) -> Result<Response, ApiError> {
    download(file.content_type, &file.file_name, Body::from(file.bytes))
}

/// The channel's chunks as a response body; dropping the body (the client left) drops the
/// receiver, which stops the producer. Once the channel is drained and closed the stream keeps
/// answering "no more" however often it is polled: the gzip layer polls again after the end, and a
/// stream that panics there (as `stream::unfold` does) sends browsers an empty file.
fn streamed(mut rx: mpsc::Receiver<Result<Vec<u8>, ExportError>>) -> Body {
    let chunks = futures_util::stream::poll_fn(move |cx| {
        rx.poll_recv(cx).map(|next| next.map(|chunk| chunk.map_err(|e| std::io::Error::other(e.to_string()))))
    });
    Body::from_stream(chunks)
}

#[utoipa::path(
    get, path = "/export/detections", tag = tags::EXPORTS,
    description = "Member+. Every detection field plus the translated common name, streamed, oldest first. `format=csv|json`, `lang`. Filters as `GET /detections`: `satelliteId`, `species`, `speciesSearch`, `minConfidence`, `verificationStatus`; range `from`/`to` (local `YYYY-MM-DD`) or `days`.",
    responses((status = 200, description = "The file (attachment)", content((String = "text/csv"), (Vec<detections::Row> = "application/json"))), err::BadRequest, err::Auth, err::NotFound, err::Unprocessable)
)]
async fn detections_export(
    State(state): State<AppState>,
    Member(access): Member,
    Query(f): Query<FormatQuery>,
    Query(filters): Query<Filters>,
) -> Result<Response, ApiError> {
    let filters = named(&state, &access, filters).await?;
    let format = match f.format.as_deref().map(str::trim) {
        None | Some("" | "csv") => Format::Csv,
        Some("json") => Format::Json,
        Some(other) => {
            return Err(ApiError::Unprocessable("invalid_format", format!("format is csv or json, not {other:?}")));
        }
    };
    let lang = exports::language(&state.store, access.tenant_id, access.ctx.user_id(), filters.lang.as_deref()).await?;
    let checked = exports::check(&state.store, access.tenant_id, &filters, state.clock.now(), false).await?;
    let (name, content_type) = detections::file_of(&checked, format);
    let rx = detections::stream(&env(&state), access.tenant_id, &lang, format, checked);
    download(content_type, &name, streamed(rx))
}

#[utoipa::path(
    get, path = "/export/checklist", tag = tags::EXPORTS,
    description = "Member+. eBird Record Format (Extended): 19 columns, no header; a ZIP of files under 1 MB when larger. `groupBy=day|session`, `verifiedOnly`, `allReported`, and the filters of `/export/detections`.",
    responses((status = 200, description = "The CSV, or a ZIP of CSVs", content((String = "text/csv"), (String = "application/zip"))), err::BadRequest, err::Auth, err::NotFound, err::Unprocessable)
)]
async fn checklist(
    State(state): State<AppState>,
    Member(access): Member,
    Query(filters): Query<Filters>,
) -> Result<Response, ApiError> {
    let filters = named(&state, &access, filters).await?;
    let file = exports::checklist::render(&env(&state), access.tenant_id, &filters, state.clock.now()).await?;
    whole(file)
}

#[utoipa::path(
    get, path = "/export/observation", tag = tags::EXPORTS,
    description = "Member+. iNaturalist bulk-import CSV (header + 8 columns), every row validated (422 `observation_rows_invalid`). `groupBy=day|session|detection`, `geoprivacy`, and the filters of `/export/detections`.",
    responses((status = 200, description = "The CSV", content_type = "text/csv", body = String), err::BadRequest, err::Auth, err::NotFound, err::Unprocessable)
)]
async fn observation(
    State(state): State<AppState>,
    Member(access): Member,
    Query(filters): Query<Filters>,
) -> Result<Response, ApiError> {
    let filters = named(&state, &access, filters).await?;
    let file = exports::observation::render(&env(&state), access.tenant_id, &filters, state.clock.now()).await?;
    whole(file)
}

/// The person exporting (xeno-canto's recordist): their name, else the team's.
/// `filters` with its species search also matching common names in the caller's and the team's
/// languages, as the Detections list does.
async fn named(state: &AppState, access: &TenantAccess, filters: Filters) -> Result<Filters, ApiError> {
    if filters.species_search.is_none() {
        return Ok(filters);
    }
    let langs =
        crate::usecases::species::reading_languages(&state.store, access.tenant_id, access.ctx.user_id()).await?;
    Ok(exports::name_search(&env(state), filters, langs).await)
}

async fn recordist(state: &AppState, access: &TenantAccess) -> Result<String, ApiError> {
    let (user, tenant) = (access.ctx.user_id(), access.tenant_id);
    Ok(state
        .store
        .call(move |c| match user {
            Some(id) => Ok(store::users::get(c, id)?.name),
            None => Ok(store::tenants::get(c, tenant)?.name),
        })
        .await?)
}

#[utoipa::path(
    get, path = "/export/recording", tag = tags::EXPORTS,
    description = "Member+. xeno-canto-style bundle: a ZIP of `metadata.csv` and the WAVs; at most 500 recordings and 200 MB (422 `export_too_large`). `verifiedOnly` and the filters of `/export/detections`.",
    responses((status = 200, description = "The ZIP", content_type = "application/zip", body = String), err::BadRequest, err::Auth, err::NotFound, err::Unprocessable)
)]
async fn recording_bundle(
    State(state): State<AppState>,
    Member(access): Member,
    Query(filters): Query<Filters>,
) -> Result<Response, ApiError> {
    let filters = named(&state, &access, filters).await?;
    let rec = recordist(&state, &access).await?;
    let bundle =
        recording::prepare(&env(&state), &state.objects, access.tenant_id, &filters, state.clock.now(), &rec).await?;
    let name = bundle.file_name.clone();
    download("application/zip", &name, streamed(recording::stream(&state.objects, bundle)))
}
