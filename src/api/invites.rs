//! Invites and members of a team (SPEC 4.1): `POST/GET /auth/invites`, `DELETE /auth/invites/:id`,
//! `GET /auth/members`. An invite is a link carrying a one-time token, valid for 7 days, redeemed
//! at `POST /auth/register` with `inviteToken`; an invite for an email address is also mailed there.
//! `GET /auth/register/options` tells the sign-up page what it may offer (and an invite's team).

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::{extract::State, http::StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{ApiError, Json, Path, Query, session};
use crate::{
    auth::{Admin, Audit, Authenticated, ClientIp, RequestedTenant, guard, tokens},
    domain::{
        Role,
        validate::{self, TOKEN_MAX},
    },
    ids::{TenantId, UserId},
    state::AppState,
    store::{self, invites::Invite},
    time::Timestamp,
    usecases::{accounts, team_credentials},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(revoke))
        .routes(routes!(members))
        .routes(routes!(register_options))
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
    description = "Admin+ of the team. An invite link for a team and a role; with an `email`, the link is also mailed there (`mailed` says whether it left). A pending invite is revoked when its maker stops being an admin of the team (removed, leaves, demoted, blocked, deleted).",
    responses((status = 201, description = "the invite with its link and `mailed`", body = InviteView), err::BadRequest, err::Auth, err::Unprocessable)
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
    let mailed = match &invite.email {
        Some(to) => mail_invite(&state, &invite, me, to, &url).await,
        None => false,
    };
    let mut view = serde_json::to_value(InviteView::from(&invite)).map_err(ApiError::internal)?;
    view["token"] = json!(token);
    view["url"] = json!(url);
    view["mailed"] = json!(mailed);
    Ok((StatusCode::CREATED, axum::Json(view)))
}

/// Mails the invite link to the address it is for; whether it was sent (never fails the invite).
async fn mail_invite(state: &AppState, invite: &Invite, by: UserId, to: &str, url: &str) -> bool {
    let tenant = invite.tenant_id;
    let names =
        state.store.call(move |c| Ok((store::tenants::get(c, tenant)?.name, store::users::get(c, by)?.name))).await;
    let Ok((team, inviter)) = names else { return false };
    let text = format!(
        "Hello,\n\n{inviter} invited you to join the team \"{team}\" on birdhub as a {role}.\n\
         Open this link within 7 days to create your account (it works once):\n\n{url}\n",
        role = invite.role.as_str(),
    );
    let subject = format!("You are invited to {team} on birdhub");
    state.mailer.send(&state.store, &state.clock, to, &subject, text, "invite").await == crate::mail::Outcome::Sent
}

#[derive(Debug, Deserialize)]
struct OptionsQuery {
    invite: Option<String>,
}

#[utoipa::path(
    get, path = "/auth/register/options", tag = tags::AUTH,
    description = "Public. What the sign-up page may offer: `{selfRegistration}` (accounts without an invite), and with `?invite=<token>` the invite's `{invite: {teamName, role, email, expiresAt}}`; 400 `invalid_invite`, `invite_used` or `invite_expired` for a link that no longer works.",
    params(("invite" = Option<String>, Query, description = "the invite token of the link")),
    responses((status = 200, description = "`{selfRegistration, invite}`", body = Object), err::BadRequest),
    security(())
)]
async fn register_options(
    State(state): State<AppState>,
    Query(q): Query<OptionsQuery>,
) -> Result<axum::Json<serde_json::Value>, ApiError> {
    let token = q.invite.filter(|t| !t.is_empty());
    if let Some(t) = &token {
        validate::within("invite", t, TOKEN_MAX)?;
    }
    let options =
        accounts::sign_up_options(&state.store, &state.clock, token.as_deref().map(tokens::sha256_hex)).await?;
    let invite = options
        .invite
        .map(|i| json!({ "teamName": i.team_name, "role": i.role, "email": i.email, "expiresAt": i.expires_at }));
    Ok(axum::Json(json!({ "selfRegistration": options.open, "invite": invite })))
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

/// Members of the team; platform admins are not listed (SPEC 4.1) unless they own the team.
#[utoipa::path(
    get, path = "/auth/members", tag = tags::AUTH,
    description = "Admin+. Members of the team (platform admins are not listed, except the team's owner): `{members}`.",
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
