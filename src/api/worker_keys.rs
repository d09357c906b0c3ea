//! Remote inference workers' keys (issue 49): `POST /workers/keys` mints one (the key is in the
//! answer, once), `GET /workers/keys` lists them with what each worker last said, and
//! `DELETE /workers/keys/{id}` revokes one and drops its worker's connection. Platform admin only:
//! a worker hears every team's audio (docs/security.md).

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::{extract::State, http::StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ApiError, Json, Path};
use crate::{
    auth::{Audit, ClientIp, PlatformAdmin},
    state::AppState,
    usecases::worker_keys::{self, Error},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(create, list)).routes(routes!(revoke))
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        match e {
            Error::InvalidName(m) => ApiError::Unprocessable("invalid_name", m),
            Error::NotFound => ApiError::NotFound("worker_key_not_found", "no such worker key".into()),
            Error::BrokerUnavailable(e) => {
                tracing::error!(error = %e, "a worker key's login did not reach the broker");
                ApiError::Unavailable("broker_unavailable", Error::BrokerUnavailable(e).to_string())
            }
            Error::Store(e) => e.into(),
        }
    }
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CreateBody {
    /// What the admin calls the machine ("study desktop").
    name: String,
}

#[utoipa::path(
    post, path = "/workers/keys", tag = tags::SYSTEM,
    description = "Platform admin. Mints a remote worker's key: `{id, name, createdAt, key}`; `key` (`bhw.<id>.<secret>`) is in this answer only. Run `birdhub worker --hub <host> --key-file <file>` with it.",
    responses((status = 201, description = "the key, with `key` shown once", body = Object), err::BadRequest, err::Auth, err::Unprocessable)
)]
async fn create(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    PlatformAdmin(ctx): PlatformAdmin,
    Json(body): Json<CreateBody>,
) -> Result<(StatusCode, axum::Json<Value>), ApiError> {
    let by = ctx.require_user().ok();
    let (key, raw) = worker_keys::mint(&state.store, state.mqtt.logins(), &body.name, by, state.clock.stamp()).await?;
    Audit::new("admin.worker_key_created").actor(&ctx).target("worker_key", key.id).ip(&ip).write(&state).await;
    let mut view = serde_json::to_value(&key).map_err(ApiError::internal)?;
    view["key"] = json!(raw);
    Ok((StatusCode::CREATED, axum::Json(view)))
}

#[utoipa::path(
    get, path = "/workers/keys", tag = tags::SYSTEM,
    description = "Platform admin. Every worker key (never its secret), newest first, revoked ones with `revokedAt`, each with `connected` and what its worker last reported (`worker`, null when it has not joined since the hub started).",
    responses((status = 200, description = "`{keys}`", body = Object), err::Auth)
)]
async fn list(
    State(state): State<AppState>,
    PlatformAdmin(_admin): PlatformAdmin,
) -> Result<axum::Json<Value>, ApiError> {
    let keys = worker_keys::list(&state.store).await?;
    let live = state.remote.snapshot();
    let keys: Vec<Value> = keys
        .iter()
        .map(|k| {
            let worker = live.iter().find(|w| w.id == k.id);
            let mut v = serde_json::to_value(k).unwrap_or_default();
            v["connected"] = json!(worker.is_some_and(|w| w.connected));
            v["worker"] = json!(worker);
            v
        })
        .collect();
    Ok(axum::Json(json!({ "keys": keys })))
}

#[utoipa::path(
    delete, path = "/workers/keys/{id}", tag = tags::SYSTEM,
    description = "Platform admin. Revokes a worker key: the worker is disconnected at once, its results from then on are refused, and it cannot log in again. Revoking a revoked key answers 204 too.",
    params(("id" = String, Path, description = "worker key id")),
    responses((status = 204, description = "revoked"), err::Auth, err::NotFound)
)]
async fn revoke(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    PlatformAdmin(ctx): PlatformAdmin,
    Path(id): Path<uuid::Uuid>,
) -> Result<StatusCode, ApiError> {
    worker_keys::revoke(&state.store, id, state.clock.stamp()).await?;
    drop_worker(&state, id).await;
    Audit::new("admin.worker_key_revoked").actor(&ctx).target("worker_key", id).ip(&ip).write(&state).await;
    Ok(StatusCode::NO_CONTENT)
}

/// Forgets a revoked worker (nothing it sends is read) and drops its broker connection; on an
/// external broker, its login is deleted there too.
pub async fn drop_worker(state: &AppState, id: uuid::Uuid) {
    state.remote.forget(id);
    let client = format!("{}{id}", crate::inference::remote::CLIENT_PREFIX);
    state.mqtt.disconnect(&client).await;
    state.mqtt.delete_login(&client).await;
}
