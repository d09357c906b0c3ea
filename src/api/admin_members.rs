//! Memberships and the audit log (SPEC 4.13): a platform admin's role changes, removals and
//! ownership transfers; a team admin's removals (`DELETE /auth/members/:id`) and renaming of the
//! team (`PUT /tenants/:id/name`). A member id is the membership's id (as listed by
//! `GET /auth/members` and `GET /admin/users/:id`).

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
    auth::{Admin, Audit, Authenticated, ClientIp, PlatformAdmin, guard},
    domain::{Role, validate},
    ids::{TenantId, UserId},
    state::AppState,
    store::{self, tenants::Membership},
    time::Timestamp,
    usecases::membership::{self, Departure},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(change_role))
        .routes(routes!(remove))
        .routes(routes!(transfer))
        .routes(routes!(audit_log))
        .routes(routes!(team_remove))
        .routes(routes!(rename_team))
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
    remove_and_audit(&state, &ctx, &ip, &m, keep).await
}

/// Removes the member of `m` and audits it as `admin.member_removed` by `actor`.
async fn remove_and_audit(
    state: &AppState,
    actor: &crate::auth::AuthContext,
    ip: &str,
    m: &Membership,
    keep: bool,
) -> Result<StatusCode, ApiError> {
    let ended = membership::remove(state.access_ctx(), m.tenant_id, m.user_id, keep, Departure::Removed).await?;
    super::tenants::audit_transferred(state, actor, ip, m.user_id, &ended, "member_removed").await;
    Audit::new("admin.member_removed")
        .actor(actor)
        .tenant(m.tenant_id)
        .target("user", m.user_id)
        .ip(ip)
        .details(ended_details(&ended, m.tenant_id))
        .write(state)
        .await;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(
    delete, path = "/auth/members/{id}", tag = tags::AUTH,
    description = "Admin+ of the team. Removes a member of the team (never its owner: 400 `OWNER_CANNOT_LEAVE`); as `DELETE /admin/members/:id` otherwise: devices disconnected unless `?devices=keep`, the person's team API keys and pending invites revoked. 404 `member_not_found` for a membership of another team.",
    params(("id" = String, Path, description = "membership id"), ("devices" = Option<String>, Query, description = "`keep` leaves the person's devices running")),
    responses((status = 204, description = "removed"), err::BadRequest, err::Auth, err::NotFound)
)]
async fn team_remove(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Admin(access): Admin,
    Path(id): Path<String>,
    Query(q): Query<DevicesQuery>,
) -> Result<StatusCode, ApiError> {
    let keep = q.keep()?;
    let m = membership::membership_in(&state.store, access.tenant_id, id).await?;
    remove_and_audit(&state, &access.ctx, &ip, &m, keep).await
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
struct NameBody {
    name: String,
}

#[utoipa::path(
    put, path = "/tenants/{id}/name", tag = tags::SYSTEM,
    description = "Admin+ of the team. Renames the team `{name}` (1 to 100 characters; 422 `invalid_name`). The public page shows its own title (`public_page_title`) when one is set.",
    params(("id" = uuid::Uuid, Path, description = "team id")),
    request_body = NameBody,
    responses((status = 200, description = "`{id, name}`", body = Object), err::BadRequest, err::Auth, err::NotFound, err::Unprocessable)
)]
async fn rename_team(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
    Path(tenant): Path<TenantId>,
    Json(body): Json<NameBody>,
) -> Result<axum::Json<Value>, ApiError> {
    let access = guard::access(&state, &ctx, Some(tenant), Role::Admin).await?;
    let name = validate::name(&body.name, "name").map_err(|e| ApiError::Unprocessable("invalid_name", e))?;
    let team = membership::rename_team(&state.store, access.tenant_id, name).await?;
    Audit::new("admin.tenant_renamed")
        .actor(&ctx)
        .tenant(team.id)
        .target("tenant", team.id)
        .ip(&ip)
        .details(json!({ "name": team.name }))
        .write(&state)
        .await;
    Ok(axum::Json(json!({ "id": team.id, "name": team.name })))
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
    from: Option<String>,
    to: Option<String>,
}

/// `from`/`to` of the audit filter: an RFC 3339 instant, or a day (`2026-11-27`, UTC) that starts
/// (`from`) or ends inclusively (`to`) the range.
fn audit_bound(raw: Option<&str>, name: &str, end_of_day: bool) -> Result<Option<Timestamp>, ApiError> {
    let Some(s) = raw.map(str::trim).filter(|s| !s.is_empty()) else { return Ok(None) };
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Ok(Some(Timestamp(t.with_timezone(&chrono::Utc))));
    }
    let day = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").map_err(|_| {
        ApiError::BadRequest("invalid_time", format!("{name} must be a day such as 2026-11-27 or an ISO 8601 time"))
    })?;
    let day = if end_of_day { day.succ_opt().unwrap_or(day) } else { day };
    Ok(Some(Timestamp(day.and_time(chrono::NaiveTime::MIN).and_utc())))
}

/// The audit log, newest first: `?tenantId=&action=&userId=&from=&to=&limit=&offset=`.
#[utoipa::path(
    get, path = "/admin/audit-log", tag = tags::ADMIN,
    description = "Platform admin. The audit log, newest first: `?tenantId=&action=&userId=&from=&to=&limit=&offset=` (`from`/`to`: a UTC day, `to` inclusive, or an ISO 8601 time). Each entry carries `userName`, `userEmail` and `tenantName`, and in words `targetName`, `summary`, `changes` (`{setting, label, from, to}` ..., secrets masked) and `changeLines`; `actions` lists every action in the log.",
    responses((status = 200, description = "`{entries, total, actions}`", body = Object), err::BadRequest, err::Auth)
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
        from: audit_bound(q.from.as_deref(), "from", false)?,
        to: audit_bound(q.to.as_deref(), "to", true)?,
        limit: page.limit,
        offset: page.offset,
    };
    let (entries, total, actions) = state
        .store
        .call(move |c| {
            let (entries, total) = store::audit::list(c, &filter)?;
            Ok((entries, total, store::audit::actions(c)?))
        })
        .await?;
    Ok(axum::Json(json!({
        "entries": entries, "total": total, "actions": actions, "limit": page.limit, "offset": page.offset
    })))
}
