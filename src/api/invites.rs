//! Invites and members of a team (SPEC 4.1): `POST/GET /auth/invites`, `DELETE /auth/invites/:id`,
//! `GET /auth/members`. An invite is a link carrying a one-time token, valid for 7 days, redeemed
//! at `POST /auth/register` with `inviteToken`.

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::{extract::State, http::StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{ApiError, Json, Path, session};
use crate::{
    auth::{Admin, Audit, Authenticated, ClientIp, RequestedTenant, guard},
    domain::{Role, validate},
    ids::{TenantId, UserId},
    state::AppState,
    store::{self, invites::Invite},
    time::Timestamp,
    usecases::team_credentials,
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list, create)).routes(routes!(revoke)).routes(routes!(members))
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct InviteView {
    id: String,
    tenant_id: TenantId,
    role: Role,
    email: Option<String>,
    created_by: Option<UserId>,
    expires_at: Timestamp,
    created_at: Timestamp,
}

impl From<&Invite> for InviteView {
    fn from(i: &Invite) -> Self {
        Self {
            id: i.id.clone(),
            tenant_id: i.tenant_id,
            role: i.role,
            email: i.email.clone(),
            created_by: i.created_by,
            expires_at: i.expires_at,
            created_at: i.created_at,
        }
    }
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct CreateBody {
    tenant_id: Option<TenantId>,
    role: Role,
    email: Option<String>,
}

#[utoipa::path(
    post, path = "/auth/invites", tag = tags::AUTH,
    description = "Admin+ of the team. An invite link for a team and a role. A pending invite is revoked when its maker stops being an admin of the team (removed, leaves, demoted, blocked, deleted).",
    responses((status = 201, description = "the invite with its link", body = InviteView), err::BadRequest, err::Auth, err::Unprocessable)
)]
async fn create(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
    RequestedTenant(requested): RequestedTenant,
    Json(body): Json<CreateBody>,
) -> Result<(StatusCode, axum::Json<serde_json::Value>), ApiError> {
    let access = guard::access(&state, &ctx, guard::choose_tenant(body.tenant_id, requested)?, Role::Admin).await?;
    let me = ctx.require_user()?;
    if let Some(e) = &body.email {
        validate::within("email", e, validate::EMAIL_MAX)?;
    }
    let email =
        body.email.map(|e| validate::email(&e)).transpose().map_err(|e| ApiError::Unprocessable("invalid_email", e))?;
    let tenant = access.tenant_id;
    let (invite, token) =
        team_credentials::create_invite(&state.store, &state.clock, tenant, me, body.role, email).await?;
    let url = format!("{}/register?invite={token}", session::base_url(&state));
    Audit::new("admin.invite_created")
        .actor(&ctx)
        .tenant(tenant)
        .target("invite", &invite.id)
        .ip(&ip)
        .details(json!({ "role": invite.role }))
        .write(&state)
        .await;
    let mut view = serde_json::to_value(InviteView::from(&invite)).map_err(ApiError::internal)?;
    view["token"] = json!(token);
    view["url"] = json!(url);
    Ok((StatusCode::CREATED, axum::Json(view)))
}

#[utoipa::path(
    get, path = "/auth/invites", tag = tags::AUTH,
    description = "Admin+. Pending invites of the team: `{invites}`.",
    responses((status = 200, description = "`{invites: [InviteView]}`", body = Object), err::Auth)
)]
async fn list(State(state): State<AppState>, Admin(access): Admin) -> Result<axum::Json<serde_json::Value>, ApiError> {
    let (tenant, now) = (access.tenant_id, state.clock.stamp());
    let invites = state.store.call(move |c| store::invites::pending(c, tenant, now)).await?;
    let views: Vec<InviteView> = invites.iter().map(InviteView::from).collect();
    Ok(axum::Json(json!({ "invites": views })))
}

#[utoipa::path(
    delete, path = "/auth/invites/{id}", tag = tags::AUTH,
    description = "Admin+. Revokes a pending invite.",
    params(("id" = String, Path, description = "invite id")),
    responses((status = 204, description = "revoked"), err::Auth, err::NotFound)
)]
async fn revoke(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Admin(access): Admin,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let tenant = access.tenant_id;
    team_credentials::revoke_invite(&state.store, &state.clock, tenant, id.clone()).await?;
    Audit::new("admin.invite_revoked")
        .actor(&access.ctx)
        .tenant(tenant)
        .target("invite", id)
        .ip(&ip)
        .write(&state)
        .await;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberView {
    pub id: String,
    pub user_id: UserId,
    pub tenant_id: TenantId,
    pub name: String,
    pub email: String,
    pub role: Role,
    pub is_owner: bool,
    pub joined_at: Timestamp,
}

impl From<&store::tenants::Membership> for MemberView {
    fn from(m: &store::tenants::Membership) -> Self {
        Self {
            id: m.id.clone(),
            user_id: m.user_id,
            tenant_id: m.tenant_id,
            name: m.name.clone(),
            email: m.email.clone(),
            role: m.role,
            is_owner: m.is_owner,
            joined_at: m.created_at,
        }
    }
}

/// Members of the team; platform admins are not listed (SPEC 4.1).
#[utoipa::path(
    get, path = "/auth/members", tag = tags::AUTH,
    description = "Admin+. Members of the team (platform admins are not listed): `{members}`.",
    responses((status = 200, description = "`{members: [MemberView]}`", body = Object), err::Auth)
)]
async fn members(
    State(state): State<AppState>,
    Admin(access): Admin,
) -> Result<axum::Json<serde_json::Value>, ApiError> {
    let tenant = access.tenant_id;
    let members = state.store.call(move |c| store::tenants::members(c, tenant, false)).await?;
    let views: Vec<MemberView> = members.iter().map(MemberView::from).collect();
    Ok(axum::Json(json!({ "members": views })))
}
