//! Species names (SPEC 4.9): `GET /species/languages` (public), `GET /species/translate?code=&lang=`
//! and `POST /species/translate {names, lang}` (Viewer+). Pictures are in `species_images.rs`.

use axum::{Router, extract::State, routing::get};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ApiError, Json, Query};
use crate::{auth::Viewer, state::AppState, usecases::species};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/species/languages", get(languages))
        .route("/species/translate", get(translate_one).post(translate_many))
}

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

async fn translate_one(
    State(state): State<AppState>,
    Viewer(_): Viewer,
    Query(q): Query<OneQuery>,
) -> Result<axum::Json<species::Translated>, ApiError> {
    let names = state.names.clone();
    let done = tokio::task::spawn_blocking(move || species::translate(&names, &q.code, &q.lang))
        .await
        .map_err(|e| ApiError::Internal(e.into()))?;
    Ok(axum::Json(done?))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BulkBody {
    names: Vec<String>,
    lang: String,
}

async fn translate_many(
    State(state): State<AppState>,
    Viewer(_): Viewer,
    Json(body): Json<BulkBody>,
) -> Result<axum::Json<Value>, ApiError> {
    let names = state.names.clone();
    let lines = tokio::task::spawn_blocking(move || species::translate_many(&names, &body.names, &body.lang))
        .await
        .map_err(|e| ApiError::Internal(e.into()))??;
    let found = lines.iter().filter(|l| l.error.is_none()).count();
    Ok(axum::Json(json!({ "results": lines, "total": lines.len(), "found": found })))
}
