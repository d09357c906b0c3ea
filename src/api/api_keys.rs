//! Tenant-scoped API keys for scripts and integrations (the SPEC leaves this route "not shown"):
//! `POST /api-keys {name, role, tenantId?}` (Admin+) returns the raw key once;
//! `GET /api-keys` lists the team's keys without secrets; `DELETE /api-keys/:id` revokes one.
//! Send a key as `Authorization: Bearer <key>`. Satellite-scoped keys appear here too, with
//! their `satelliteId`; they are minted at satellite registration.

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::{extract::State, http::StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{ApiError, Json, Path};
use crate::{
    auth::{Admin, Audit, Authenticated, ClientIp, RequestedTenant, guard},
    domain::{Role, validate},
    ids::{SatelliteId, TenantId, UserId},
    state::AppState,
    store::{self, api_keys::ApiKey},
    time::Timestamp,
    usecases::team_credentials,
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list, create)).routes(routes!(revoke))
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct KeyView {
    id: String,
    tenant_id: TenantId,
    satellite_id: Option<SatelliteId>,
    created_by: Option<UserId>,
    name: String,
    key_prefix: String,
    role: Role,
    created_at: Timestamp,
    last_used_at: Option<Timestamp>,
    revoked_at: Option<Timestamp>,
}

impl From<&ApiKey> for KeyView {
    fn from(k: &ApiKey) -> Self {
        Self {
            id: k.id.clone(),
            tenant_id: k.tenant_id,
            satellite_id: k.satellite_id,
            created_by: k.created_by,
            name: k.name.clone(),
            key_prefix: k.key_prefix.clone(),
            role: k.role,
            created_at: k.created_at,
            last_used_at: k.last_used_at,
            revoked_at: k.revoked_at,
        }
    }
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct CreateBody {
    name: String,
    role: Role,
    tenant_id: Option<TenantId>,
}

#[utoipa::path(
    post, path = "/api-keys", tag = tags::AUTH,
    description = "Admin+ of the team. Creates a team-scoped API key; the raw key is in the answer, once. The key is revoked when its maker stops being an admin of the team (removed, leaves, demoted, blocked, deleted).",
    responses((status = 201, description = "the key with `key` (shown once)", body = Object), err::BadRequest, err::Auth, err::Unprocessable)
)]
async fn create(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
    RequestedTenant(requested): RequestedTenant,
    Json(body): Json<CreateBody>,
) -> Result<(StatusCode, axum::Json<Value>), ApiError> {
    let access = guard::access(&state, &ctx, guard::choose_tenant(body.tenant_id, requested)?, Role::Admin).await?;
    let me = ctx.require_user()?; // keys do not mint keys
    let name = validate::name(&body.name, "name").map_err(|e| ApiError::Unprocessable("invalid_name", e))?;
    let (tenant, role) = (access.tenant_id, body.role);
    let (key, raw) = team_credentials::create_api_key(&state.store, tenant, me, name, role).await?;
    Audit::new("admin.api_key_created")
        .actor(&ctx)
        .tenant(tenant)
        .target("api_key", &key.id)
        .ip(&ip)
        .details(json!({ "role": role }))
        .write(&state)
        .await;
    let mut view = serde_json::to_value(KeyView::from(&key)).map_err(ApiError::internal)?;
    view["key"] = json!(raw);
    Ok((StatusCode::CREATED, axum::Json(view)))
}

#[utoipa::path(
    get, path = "/api-keys", tag = tags::AUTH,
    description = "Admin+. The team's API keys (never the raw key): `{apiKeys}`.",
    responses((status = 200, description = "`{apiKeys: [KeyView]}`", body = Object), err::Auth)
)]
async fn list(State(state): State<AppState>, Admin(access): Admin) -> Result<axum::Json<Value>, ApiError> {
    let tenant = access.tenant_id;
    let keys = state.store.call(move |c| store::api_keys::list(c, tenant)).await?;
    let views: Vec<KeyView> = keys.iter().map(KeyView::from).collect();
    Ok(axum::Json(json!({ "apiKeys": views })))
}

#[utoipa::path(
    delete, path = "/api-keys/{id}", tag = tags::AUTH,
    description = "Admin+. Revokes a key at once.",
    params(("id" = String, Path, description = "key id")),
    responses((status = 204, description = "revoked"), err::Auth, err::NotFound)
)]
async fn revoke(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Admin(access): Admin,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let tenant = access.tenant_id;
    team_credentials::revoke_api_key(&state.store, &state.clock, tenant, id.clone()).await?;
    Audit::new("admin.api_key_revoked")
        .actor(&access.ctx)
        .tenant(tenant)
        .target("api_key", id)
        .ip(&ip)
        .write(&state)
        .await;
    Ok(StatusCode::NO_CONTENT)
}
