//! Platform admin: memberships and the audit log (SPEC 4.13). A member id is the membership's id
//! (as listed by `GET /auth/members` and `GET /admin/users/:id`).

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::{extract::State, http::StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    ApiError, Json, Path, Query, invites::MemberView, not_found, tenants::DevicesQuery, tenants::ended_details,
    views::Page,
};
use crate::{
    auth::{Audit, ClientIp, PlatformAdmin},
    domain::Role,
    ids::{TenantId, UserId},
    state::AppState,
    store::{self, tenants::Membership},
    usecases::membership::{self, Departure},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(change_role))
        .routes(routes!(remove))
        .routes(routes!(transfer))
        .routes(routes!(audit_log))
}

async fn membership(state: &AppState, id: String) -> Result<Membership, ApiError> {
    state
        .store
        .call(move |c| store::tenants::membership(c, &id))
        .await
        .map_err(not_found("member_not_found", "no such membership"))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
struct RoleBody {
    role: Role,
}

#[utoipa::path(
    put, path = "/admin/members/{id}/role", tag = tags::ADMIN,
    description = "Platform admin. Changes a membership's role `{role}`. Below admin, the team API keys and pending invites the person made in the team are revoked; below member, their live-audio watching there ends.",
    params(("id" = String, Path, description = "membership id")),
    responses((status = 200, description = "the membership", body = MemberView), err::BadRequest, err::Auth, err::NotFound, err::Unprocessable)
)]
async fn change_role(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    PlatformAdmin(ctx): PlatformAdmin,
    Path(id): Path<String>,
    Json(body): Json<RoleBody>,
) -> Result<axum::Json<MemberView>, ApiError> {
    let changed = membership::change_role(state.access_ctx(), id, body.role).await?;
    let m = &changed.membership;
    let mut details = ended_details(&changed.ended, m.tenant_id);
    details["from"] = json!(changed.from);
    details["to"] = json!(m.role);
    Audit::new("admin.member_role_changed")
        .actor(&ctx)
        .tenant(m.tenant_id)
        .target("user", m.user_id)
        .ip(&ip)
        .details(details)
        .write(&state)
        .await;
    Ok(axum::Json(MemberView::from(m)))
}

#[utoipa::path(
    delete, path = "/admin/members/{id}", tag = tags::ADMIN,
    description = "Platform admin. Removes a membership (devices disconnected unless `?devices=keep`); the team API keys and pending invites the person made in the team are revoked and their live-audio watching there ends.",
    params(("id" = String, Path, description = "membership id"), ("devices" = Option<String>, Query, description = "`keep` leaves the person's devices running")),
    responses((status = 204, description = "removed"), err::BadRequest, err::Auth, err::NotFound)
)]
async fn remove(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    PlatformAdmin(ctx): PlatformAdmin,
    Path(id): Path<String>,
    Query(q): Query<DevicesQuery>,
) -> Result<StatusCode, ApiError> {
    let keep = q.keep()?;
    let m = membership(&state, id).await?;
    let ended = membership::remove(state.access_ctx(), m.tenant_id, m.user_id, keep, Departure::Removed).await?;
    super::tenants::audit_transferred(&state, &ctx, &ip, m.user_id, &ended, "member_removed").await;
    Audit::new("admin.member_removed")
        .actor(&ctx)
        .tenant(m.tenant_id)
        .target("user", m.user_id)
        .ip(&ip)
        .details(ended_details(&ended, m.tenant_id))
        .write(&state)
        .await;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(
    post, path = "/admin/members/{id}/transfer-ownership", tag = tags::ADMIN,
    description = "Platform admin. Makes this member the owner of the team.",
    params(("id" = String, Path, description = "membership id")),
    responses((status = 200, description = "the membership", body = MemberView), err::BadRequest, err::Auth, err::NotFound)
)]
async fn transfer(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    PlatformAdmin(ctx): PlatformAdmin,
    Path(id): Path<String>,
) -> Result<axum::Json<MemberView>, ApiError> {
    let (m, previous) = membership::transfer_ownership(&state.store, id).await?;
    Audit::new("admin.ownership_transferred")
        .actor(&ctx)
        .tenant(m.tenant_id)
        .target("user", m.user_id)
        .ip(&ip)
        .details(json!({ "previousOwner": previous }))
        .write(&state)
        .await;
    Ok(axum::Json(MemberView::from(&m)))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AuditQuery {
    tenant_id: Option<TenantId>,
    action: Option<String>,
    user_id: Option<UserId>,
}

/// The audit log, newest first: `?tenantId=&action=&userId=&limit=&offset=`.
#[utoipa::path(
    get, path = "/admin/audit-log", tag = tags::ADMIN,
    description = "Platform admin. The audit log, newest first: `?tenantId=&action=&userId=&limit=&offset=`.",
    responses((status = 200, description = "`{entries, total}`", body = Object), err::BadRequest, err::Auth)
)]
async fn audit_log(
    State(state): State<AppState>,
    PlatformAdmin(_admin): PlatformAdmin,
    Query(q): Query<AuditQuery>,
    Query(page): Query<Page>,
) -> Result<axum::Json<Value>, ApiError> {
    let page = page.checked()?;
    let filter = store::audit::Filter {
        tenant_id: q.tenant_id,
        action: q.action.filter(|a| !a.is_empty()),
        actor_user_id: q.user_id,
        limit: page.limit,
        offset: page.offset,
    };
    let (entries, total) = state.store.call(move |c| store::audit::list(c, &filter)).await?;
    Ok(axum::Json(json!({ "entries": entries, "total": total, "limit": page.limit, "offset": page.offset })))
}
