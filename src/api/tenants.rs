//! Teams: `GET /tenants`, `POST /tenants/:id/leave` (SPEC 4.12) and `POST /auth/create-tenant` (4.1).

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::{extract::State, http::StatusCode};
use serde::Deserialize;
use serde_json::json;

use super::{ApiError, Json, Path, Query, views::TenantView};
use crate::{
    auth::{Audit, Authenticated, ClientIp},
    domain::{Role, validate},
    ids::TenantId,
    state::AppState,
    store,
    usecases::{
        access_changes::Ended,
        membership::{self, Departure},
    },
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list)).routes(routes!(leave)).routes(routes!(create))
}

/// The caller's teams with their role; platform admins see every team (as admin).
#[utoipa::path(
    get, path = "/tenants", tag = tags::SYSTEM,
    description = "Signed in. The caller's teams with their role; platform admins see every team. `{tenants}`.",
    responses((status = 200, description = "`{tenants: [TenantView]}`", body = Object), err::Unauthorized, err::Forbidden)
)]
async fn list(
    State(state): State<AppState>,
    Authenticated(ctx): Authenticated,
) -> Result<axum::Json<serde_json::Value>, ApiError> {
    let me = ctx.user_id();
    let sees_all = ctx.sees_all();
    let key_tenant = ctx.api_key_id().and(ctx.default_tenant);
    let key_role = match &ctx.principal {
        crate::auth::Principal::ApiKey { role, .. } => Some(*role),
        _ => None,
    };
    let views = state
        .store
        .call(move |c| {
            let mine = match me {
                Some(u) => store::tenants::list_for_user(c, u)?,
                None => Vec::new(),
            };
            if let (Some(t), Some(role)) = (key_tenant, key_role) {
                return Ok(vec![TenantView::new(&store::tenants::get(c, t)?, role, None)]);
            }
            if sees_all {
                return Ok(store::tenants::list_all(c)?
                    .iter()
                    .map(|t| {
                        let role = mine.iter().find(|(m, _)| m.id == t.id).map_or(Role::Admin, |(_, r)| *r);
                        TenantView::new(t, role.max(Role::Admin), me)
                    })
                    .collect());
            }
            Ok(mine.iter().map(|(t, r)| TenantView::new(t, *r, me)).collect())
        })
        .await?;
    Ok(axum::Json(json!({ "tenants": views })))
}

#[derive(Debug, Deserialize)]
pub struct DevicesQuery {
    /// `keep` leaves the person's devices running for the team.
    pub devices: Option<String>,
}

impl DevicesQuery {
    pub fn keep(&self) -> Result<bool, ApiError> {
        match self.devices.as_deref() {
            None | Some("disconnect") => Ok(false),
            Some("keep") => Ok(true),
            Some(other) => Err(ApiError::BadRequest(
                "invalid_devices",
                format!("devices must be keep or disconnect, not {other:?}"),
            )),
        }
    }
}

/// Leaves a team. The owner must transfer ownership first (400 `OWNER_CANNOT_LEAVE`). The leaver's
/// devices become team-owned and are disconnected unless `?devices=keep`; the team API keys and
/// pending invites they made in the team are revoked; their live-audio watching there ends.
#[utoipa::path(
    post, path = "/tenants/{id}/leave", tag = tags::SYSTEM,
    description = "Signed in (a person). Leaves a team; the owner gets 400 `OWNER_CANNOT_LEAVE`. The leaver's devices become team-owned and are disconnected unless `?devices=keep`; the team API keys and pending invites they made in the team are revoked.",
    params(("id" = uuid::Uuid, Path, description = "team id"), ("devices" = Option<String>, Query, description = "`keep` leaves the leaver's devices running")),
    responses((status = 204, description = "left"), err::BadRequest, err::Unauthorized, err::Forbidden, err::NotFound)
)]
async fn leave(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
    Path(tenant): Path<TenantId>,
    Query(q): Query<DevicesQuery>,
) -> Result<StatusCode, ApiError> {
    let me = ctx.require_user()?;
    let keep = q.keep()?;
    let ended = membership::remove(state.access_ctx(), tenant, me, keep, Departure::Left).await?;
    audit_transferred(&state, &ctx, &ip, me, &ended, "member_left").await;
    Audit::new("user.left_tenant")
        .actor(&ctx)
        .tenant(tenant)
        .target("user", me)
        .ip(&ip)
        .details(ended_details(&ended, tenant))
        .write(&state)
        .await;
    Ok(StatusCode::NO_CONTENT)
}

/// The audit details of what a change ended in `tenant`: devices, keys, invites.
pub fn ended_details(ended: &Ended, tenant: TenantId) -> serde_json::Value {
    let released: usize = ended.released.iter().filter(|(t, _)| *t == tenant).map(|(_, s)| s.len()).sum();
    json!({
        "devices": if ended.devices_kept { "keep" } else { "disconnect" },
        "releasedDevices": released,
        "revokedApiKeys": ended.keys_in(tenant),
        "revokedInvites": ended.invites_in(tenant),
    })
}

/// Audits `admin.satellite_transferred` for each device of `from` that became team-owned.
pub async fn audit_transferred(
    state: &AppState,
    actor: &crate::auth::AuthContext,
    ip: &str,
    from: crate::ids::UserId,
    ended: &Ended,
    reason: &str,
) {
    for (tenant, released) in &ended.released {
        for satellite_id in released {
            Audit::new("admin.satellite_transferred")
                .actor(actor)
                .tenant(*tenant)
                .target("satellite", satellite_id)
                .ip(ip)
                .details(json!({ "from": from, "to": null, "reason": reason }))
                .write(state)
                .await;
        }
    }
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
struct CreateBody {
    name: String,
}

/// Creates a team owned by the caller (gated by `allow_tenant_creation`; platform admins always may).
#[utoipa::path(
    post, path = "/auth/create-tenant", tag = tags::AUTH,
    description = "Signed in (gated by `allow_tenant_creation`; platform admins always may). Creates a team owned by the caller.",
    responses((status = 201, description = "the team", body = TenantView), err::Unauthorized, err::Forbidden, err::Unprocessable)
)]
async fn create(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
    Json(body): Json<CreateBody>,
) -> Result<(StatusCode, axum::Json<TenantView>), ApiError> {
    let me = ctx.require_user()?;
    let name = validate::name(&body.name, "name").map_err(|e| ApiError::Unprocessable("invalid_name", e))?;
    let team = membership::create_team(&state.store, me, ctx.is_platform_admin, name).await?;
    Audit::new("admin.tenant_created")
        .actor(&ctx)
        .tenant(team.id)
        .target("tenant", team.id)
        .ip(&ip)
        .write(&state)
        .await;
    Ok((StatusCode::CREATED, axum::Json(TenantView::new(&team, Role::Admin, Some(me)))))
}
