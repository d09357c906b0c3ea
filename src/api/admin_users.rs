//! Platform admin: users (SPEC 4.13). Every route needs a platform admin.

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::{extract::State, http::StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    ApiError, Json, Path, Query, session,
    tenants::{DevicesQuery, audit_transferred, ended_details},
    views::{Page, TenantView, UserView},
};
use crate::{
    auth::{Audit, ClientIp, PlatformAdmin},
    domain::Role,
    ids::{TenantId, UserId},
    state::AppState,
    store,
    usecases::{
        access_changes::{self, Ended},
        membership::{self, Departure},
    },
};

/// The audit details of what a change of a whole account ended.
fn account_details(ended: &Ended) -> Value {
    json!({
        "revokedApiKeys": ended.keys.len(),
        "revokedInvites": ended.invites.len(),
        "endedSessions": ended.sessions,
        "forgottenDevices": ended.remembered_devices,
    })
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(detail, edit, remove))
        .routes(routes!(block))
        .routes(routes!(reset_password))
        .routes(routes!(add_to_tenant))
        .routes(routes!(remove_from_tenant))
}

fn user_not_found(e: store::Error) -> ApiError {
    super::not_found("user_not_found", "no such user")(e)
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListQuery {
    search: Option<String>,
    /// `active` or `blocked`.
    status: Option<String>,
    tenant_id: Option<TenantId>,
}

#[utoipa::path(
    get, path = "/admin/users", tag = tags::ADMIN,
    description = "Platform admin. Users, filtered by `search`, `status` (`active` or `blocked`), `tenantId`; paginated: `{users, total}`.",
    responses((status = 200, description = "`{users, total}`", body = Object), err::BadRequest, err::Auth)
)]
async fn list(
    State(state): State<AppState>,
    PlatformAdmin(_admin): PlatformAdmin,
    Query(q): Query<ListQuery>,
    Query(page): Query<Page>,
) -> Result<axum::Json<Value>, ApiError> {
    let page = page.checked()?;
    let blocked = match q.status.as_deref() {
        None | Some("") => None,
        Some("active") => Some(false),
        Some("blocked") => Some(true),
        Some(other) => {
            return Err(ApiError::BadRequest(
                "invalid_status",
                format!("status must be active or blocked, not {other:?}"),
            ));
        }
    };
    let filter = store::users::ListFilter {
        search: q.search.filter(|s| !s.trim().is_empty()).map(|s| s.trim().to_owned()),
        blocked,
        tenant_id: q.tenant_id,
        limit: page.limit,
        offset: page.offset,
    };
    let (users, total) = state.store.call(move |c| store::users::list(c, &filter)).await?;
    let users: Vec<UserView> = users.iter().map(UserView::from).collect();
    Ok(axum::Json(json!({ "users": users, "total": total, "limit": page.limit, "offset": page.offset })))
}

#[utoipa::path(
    get, path = "/admin/users/{id}", tag = tags::ADMIN,
    description = "Platform admin. One user with their teams.",
    params(("id" = uuid::Uuid, Path, description = "user id")),
    responses((status = 200, description = "the user with `tenants`", body = Object), err::Auth, err::NotFound)
)]
async fn detail(
    State(state): State<AppState>,
    PlatformAdmin(_admin): PlatformAdmin,
    Path(id): Path<UserId>,
) -> Result<axum::Json<Value>, ApiError> {
    let (user, tenants) = state
        .store
        .call(move |c| Ok((store::users::get(c, id)?, store::tenants::list_for_user(c, id)?)))
        .await
        .map_err(user_not_found)?;
    let tenants: Vec<TenantView> = tenants.iter().map(|(t, r)| TenantView::new(t, *r, Some(id))).collect();
    Ok(axum::Json(json!({ "user": UserView::from(&user), "tenants": tenants })))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct EditBody {
    name: Option<String>,
    email: Option<String>,
    is_platform_admin: Option<bool>,
}

#[utoipa::path(
    put, path = "/admin/users/{id}", tag = tags::ADMIN,
    description = "Platform admin. Changes name, email and the platform-admin flag.",
    params(("id" = uuid::Uuid, Path, description = "user id")),
    responses((status = 200, description = "the user", body = UserView), err::Auth, err::NotFound, err::Conflict, err::Unprocessable)
)]
async fn edit(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    PlatformAdmin(ctx): PlatformAdmin,
    Path(id): Path<UserId>,
    Json(body): Json<EditBody>,
) -> Result<axum::Json<UserView>, ApiError> {
    let (name, email) = super::views::profile_fields(body.name, body.email)?;
    let admin = body.is_platform_admin;
    let details = json!({ "name": name.is_some(), "email": email.is_some(), "isPlatformAdmin": admin });
    let change = access_changes::ProfileChange { name, email, platform_admin: admin };
    let changed = access_changes::edit_account(state.access_ctx(), id, change).await?;
    let mut details = details;
    details["revokedApiKeys"] = json!(changed.ended.keys.len());
    details["revokedInvites"] = json!(changed.ended.invites.len());
    Audit::new("admin.user_edited").actor(&ctx).target("user", id).ip(&ip).details(details).write(&state).await;
    Ok(axum::Json(UserView::from(&changed.user)))
}

/// Toggles the block: a blocked user cannot log in or reset; their sessions, remembered devices,
/// reset links, the team keys and pending invites they made and their live-audio watching end at once.
#[utoipa::path(
    post, path = "/admin/users/{id}/block", tag = tags::ADMIN,
    description = "Platform admin. Toggles the block; a blocked user's sessions, remembered devices and reset links end at once, and the team API keys and pending invites they made are revoked in every team. Unblocking restores none of them.",
    params(("id" = uuid::Uuid, Path, description = "user id")),
    responses((status = 200, description = "`{isBlocked}`", body = Object), err::Auth, err::NotFound, err::Conflict)
)]
async fn block(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    PlatformAdmin(ctx): PlatformAdmin,
    Path(id): Path<UserId>,
) -> Result<axum::Json<Value>, ApiError> {
    let (blocked, ended) = access_changes::toggle_block(state.access_ctx(), id, ctx.user_id()).await?;
    let action = if blocked { "admin.user_blocked" } else { "admin.user_unblocked" };
    Audit::new(action).actor(&ctx).target("user", id).ip(&ip).details(account_details(&ended)).write(&state).await;
    Ok(axum::Json(json!({ "id": id, "blocked": blocked })))
}

/// Issues a reset link for the user, mails it when SMTP is configured, and returns it so the
/// admin can hand it over either way.
#[utoipa::path(
    post, path = "/admin/users/{id}/reset-password", tag = tags::ADMIN,
    description = "Platform admin. Issues a reset link, mails it when SMTP is set, and returns it.",
    params(("id" = uuid::Uuid, Path, description = "user id")),
    responses((status = 200, description = "the reset link", body = Object), err::Auth, err::NotFound)
)]
async fn reset_password(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    PlatformAdmin(ctx): PlatformAdmin,
    Path(id): Path<UserId>,
) -> Result<axum::Json<Value>, ApiError> {
    let user = state.store.call(move |c| store::users::get(c, id)).await.map_err(user_not_found)?;
    let token = session::issue_reset_token(&state, id, &ip).await?;
    let url = format!("{}/reset-password?token={token}", session::base_url(&state));
    let text = format!(
        "Hello {},\n\nAn administrator of this birdhub started a password reset for your account.\n\
         Open this link within 60 minutes to choose a new password:\n\n{url}\n",
        user.name
    );
    let outcome = state
        .mailer
        .send(&state.store, &state.clock, &user.email, "Reset your birdhub password", text, "admin_password_reset")
        .await;
    Audit::new("admin.password_reset").actor(&ctx).target("user", id).ip(&ip).write(&state).await;
    Ok(axum::Json(json!({ "resetUrl": url, "mailed": outcome == crate::mail::Outcome::Sent })))
}

#[utoipa::path(
    delete, path = "/admin/users/{id}", tag = tags::ADMIN,
    description = "Platform admin. Deletes a user; the team API keys and pending invites they made are revoked in every team and their devices become team-owned and are disconnected.",
    params(("id" = uuid::Uuid, Path, description = "user id")),
    responses((status = 204, description = "deleted"), err::Auth, err::NotFound, err::Conflict)
)]
async fn remove(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    PlatformAdmin(ctx): PlatformAdmin,
    Path(id): Path<UserId>,
) -> Result<StatusCode, ApiError> {
    if ctx.user_id() == Some(id) {
        return Err(ApiError::BadRequest("cannot_delete_self", "delete your own account with DELETE /auth/me".into()));
    }
    let ended = access_changes::delete_account(state.access_ctx(), id).await?;
    audit_transferred(&state, &ctx, &ip, id, &ended, "account_deleted").await;
    Audit::new("admin.user_deleted")
        .actor(&ctx)
        .target("user", id)
        .ip(&ip)
        .details(account_details(&ended))
        .write(&state)
        .await;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct AddBody {
    tenant_id: TenantId,
    role: Role,
}

#[utoipa::path(
    post, path = "/admin/users/{id}/tenants", tag = tags::ADMIN,
    description = "Platform admin. Adds the user to a team `{tenantId, role}`; 409 if already a member.",
    params(("id" = uuid::Uuid, Path, description = "user id")),
    responses((status = 201, description = "the membership", body = Object), err::Auth, err::NotFound, err::Conflict, err::Unprocessable)
)]
async fn add_to_tenant(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    PlatformAdmin(ctx): PlatformAdmin,
    Path(id): Path<UserId>,
    Json(body): Json<AddBody>,
) -> Result<(StatusCode, axum::Json<Value>), ApiError> {
    let (tenant, role) = (body.tenant_id, body.role);
    let membership = membership::add_member(&state.store, id, tenant, role).await?;
    Audit::new("admin.user_added_to_tenant")
        .actor(&ctx)
        .tenant(tenant)
        .target("user", id)
        .ip(&ip)
        .details(json!({ "role": role }))
        .write(&state)
        .await;
    Ok((
        StatusCode::CREATED,
        axum::Json(json!({ "membershipId": membership, "tenantId": tenant, "userId": id, "role": role })),
    ))
}

#[utoipa::path(
    delete, path = "/admin/users/{id}/tenants/{tid}", tag = tags::ADMIN,
    description = "Platform admin. Removes the user from a team; their devices are disconnected unless `?devices=keep`; the team API keys and pending invites they made in the team are revoked; never the owner (400 `OWNER_CANNOT_LEAVE`).",
    params(("id" = uuid::Uuid, Path, description = "user id"), ("tid" = uuid::Uuid, Path, description = "team id"), ("devices" = Option<String>, Query, description = "`keep` leaves the person's devices running")),
    responses((status = 204, description = "removed"), err::BadRequest, err::Auth, err::NotFound)
)]
async fn remove_from_tenant(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    PlatformAdmin(ctx): PlatformAdmin,
    Path((id, tenant)): Path<(UserId, TenantId)>,
    Query(q): Query<DevicesQuery>,
) -> Result<StatusCode, ApiError> {
    let keep = q.keep()?;
    let ended = membership::remove(state.access_ctx(), tenant, id, keep, Departure::Removed).await?;
    audit_transferred(&state, &ctx, &ip, id, &ended, "member_removed").await;
    Audit::new("admin.user_removed_from_tenant")
        .actor(&ctx)
        .tenant(tenant)
        .target("user", id)
        .ip(&ip)
        .details(ended_details(&ended, tenant))
        .write(&state)
        .await;
    Ok(StatusCode::NO_CONTENT)
}
