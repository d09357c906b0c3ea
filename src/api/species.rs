//! Species names (SPEC 4.9): `GET /species/languages` (public), `GET /species/translate?code=&lang=`
//! and `POST /species/translate {names, lang}` (Viewer+), and `GET /species/search?q=&lang=&kind=`
//! (Viewer+: the species pickers of the detection settings). Pictures are in `species_images.rs`.

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::extract::State;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ApiError, Json, Query};
use crate::{
    auth::Viewer,
    state::AppState,
    usecases::{species, species_rank},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(languages))
        .routes(routes!(translate_one, translate_many))
        .routes(routes!(search))
}

#[utoipa::path(
    get, path = "/species/languages", tag = tags::SPECIES,
    description = "Public. The languages species names can be translated into.",
    responses((status = 200, description = "`{languages}`", body = Object)),
    security(())
)]
async fn languages(State(state): State<AppState>) -> Result<axum::Json<Value>, ApiError> {
    let names = state.names.clone();
    let list = tokio::task::spawn_blocking(move || species::languages(&names))
        .await
        .map_err(|e| ApiError::Internal(e.into()))?;
    Ok(axum::Json(json!({ "languages": list, "total": list.len() })))
}

#[derive(Debug, Deserialize)]
struct OneQuery {
    /// A species code, scientific name or common name.
    code: String,
    lang: String,
}

#[utoipa::path(
    get, path = "/species/translate", tag = tags::SPECIES,
    description = "Viewer+. One species name translated (`?code=&lang=`).",
    responses((status = 200, description = "the translated name", body = Object), err::BadRequest, err::Auth, err::NotFound)
)]
async fn translate_one(
    State(state): State<AppState>,
    Viewer(_viewer): Viewer,
    Query(q): Query<OneQuery>,
) -> Result<axum::Json<species::Translated>, ApiError> {
    let names = state.names.clone();
    let done = tokio::task::spawn_blocking(move || species::translate(&names, &q.code, &q.lang))
        .await
        .map_err(|e| ApiError::Internal(e.into()))?;
    Ok(axum::Json(done?))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct BulkBody {
    names: Vec<String>,
    lang: String,
}

#[utoipa::path(
    post, path = "/species/translate", tag = tags::SPECIES,
    description = "Viewer+. Bulk translation of species names.",
    responses((status = 200, description = "the translated names", body = Object), err::Auth, err::Unprocessable)
)]
async fn translate_many(
    State(state): State<AppState>,
    Viewer(_viewer): Viewer,
    Json(body): Json<BulkBody>,
) -> Result<axum::Json<Value>, ApiError> {
    let names = state.names.clone();
    let lines = tokio::task::spawn_blocking(move || species::translate_many(&names, &body.names, &body.lang))
        .await
        .map_err(|e| ApiError::Internal(e.into()))??;
    let found = lines.iter().filter(|l| l.error.is_none()).count();
    Ok(axum::Json(json!({ "results": lines, "total": lines.len(), "found": found })))
}

#[derive(Debug, Deserialize)]
struct SearchQuery {
    /// Part of a common name (in `lang` or English), a scientific name or a species code.
    #[serde(default)]
    q: String,
    /// The language of the common names answered (default `en`).
    lang: Option<String>,
    /// `bird` (default) or `other` (the model's classes that are not birds).
    #[serde(default)]
    kind: species::ClassKind,
    /// At most this many (1 to 50, default 20).
    limit: Option<usize>,
}

#[utoipa::path(
    get, path = "/species/search", tag = tags::SPECIES,
    description = "Viewer+. The model's classes whose name holds `q` (`?q=&lang=&kind=bird|other&limit=`), best first (the species the team heard, then those expected at its stations this week, then the rest; within each, names that start with the typed words first), each with its code and its common name in `lang`: the species pickers of the detection settings. `kind=other` with no `q` lists every class that is not a bird, sounds such as dog, engine and siren first.",
    responses((status = 200, description = "`{species: [{speciesCode, scientificName, lang, commonName}], total}`", body = Object), err::BadRequest, err::Auth, err::Unprocessable)
)]
async fn search(
    State(state): State<AppState>,
    Viewer(viewer): Viewer,
    Query(q): Query<SearchQuery>,
) -> Result<axum::Json<Value>, ApiError> {
    let team =
        species_rank::team_species(&state.store, &state.clock, &state.range, &state.names, viewer.tenant_id).await?;
    let names = state.names.clone();
    let text: String = q.q.chars().take(100).collect();
    let lang = q.lang.unwrap_or_else(|| "en".into());
    let limit = q.limit.unwrap_or(20);
    let tier = move |code: &str| team.tier(code);
    let found = tokio::task::spawn_blocking(move || species::search_ranked(&names, &text, &lang, q.kind, limit, &tier))
        .await
        .map_err(|e| ApiError::Internal(e.into()))??;
    Ok(axum::Json(json!({ "species": found, "total": found.len() })))
}
