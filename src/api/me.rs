//! The signed-in person's own account (SPEC 4.1, 2.13): me, preferences, profile, password, deletion.

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::{
    extract::State,
    http::{StatusCode, header},
    response::{IntoResponse, Response},
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    ApiError, Json, session,
    views::{TenantView, UserView},
};
use crate::{
    auth::{Audit, Authenticated, ClientIp, Principal},
    domain::{preferences::Preferences, settings},
    state::AppState,
    store,
    usecases::{access_changes, accounts, passwords},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(me, delete_me))
        .routes(routes!(preferences))
        .routes(routes!(profile))
        .routes(routes!(change_password))
}

#[utoipa::path(
    get, path = "/auth/me", tag = tags::AUTH,
    description = "Signed in (a person). The current user (SPEC 2.13): `{user, tenants, preferences, mfa}`.",
    responses((status = 200, description = "`{user, tenants, preferences, mfa}`", body = Object), err::Unauthorized, err::Forbidden)
)]
async fn me(State(state): State<AppState>, Authenticated(ctx): Authenticated) -> Result<axum::Json<Value>, ApiError> {
    let id = ctx.require_user()?;
    let (user, tenants) =
        state.store.call(move |c| Ok((store::users::get(c, id)?, store::tenants::list_for_user(c, id)?))).await?;
    let tenants: Vec<TenantView> = tenants.iter().map(|(t, role)| TenantView::new(t, *role, Some(id))).collect();
    let passkeys_offered = super::mfa::relying_party(&state).is_ok();
    let mfa_status = crate::usecases::mfa::status(super::mfa::factors(&state), &user, passkeys_offered).await?;
    Ok(axum::Json(json!({
        "user": UserView::from(&user),
        "tenants": tenants,
        "preferences": Preferences::from_stored(&user.preferences_json),
        "mfa": mfa_status,
    })))
}

#[utoipa::path(
    put, path = "/auth/me/preferences", tag = tags::AUTH,
    description = "Signed in (a person). Changes some preferences (language, date/time format, voting mode); the fields sent replace the stored ones.",
    request_body = Object,
    responses((status = 200, description = "the preferences after the change", body = Object), err::Unauthorized, err::Forbidden, err::Unprocessable)
)]
async fn preferences(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
    Json(patch): Json<Value>,
) -> Result<axum::Json<Preferences>, ApiError> {
    let id = ctx.require_user()?;
    let current = state.store.call(move |c| store::users::get(c, id)).await?;
    let next: Preferences = settings::patch(&Preferences::from_stored(&current.preferences_json), &patch)
        .map_err(|e| ApiError::Unprocessable("invalid_preferences", e))?;
    next.validate().map_err(|e| ApiError::Unprocessable("invalid_preferences", e))?;
    let json = serde_json::to_string(&next).map_err(ApiError::internal)?;
    accounts::save_preferences(&state.store, &state.clock, id, json).await?;
    Audit::new("user.preferences_updated").actor(&ctx).target("user", id).ip(&ip).write(&state).await;
    Ok(axum::Json(next))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct ProfileBody {
    name: Option<String>,
    email: Option<String>,
    /// Required when the email changes.
    current_password: Option<String>,
}

#[utoipa::path(
    put, path = "/auth/me/profile", tag = tags::AUTH,
    description = "Signed in (a person). Changes the name and/or the email. A new email needs `currentPassword` (403 `current_password_required` without it, 403 `wrong_password` when it is wrong); the old address is mailed a notice (when SMTP is set up) and unused reset links stop working.",
    responses((status = 200, description = "the user", body = UserView), err::Unauthorized, err::Forbidden, err::Conflict, err::Unprocessable)
)]
async fn profile(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
    Json(body): Json<ProfileBody>,
) -> Result<axum::Json<UserView>, ApiError> {
    let id = ctx.require_user()?;
    let (name, email) = super::views::profile_fields(body.name, body.email)?;
    if name.is_none() && email.is_none() {
        return Err(ApiError::Unprocessable("nothing_to_change", "send name and/or email".into()));
    }
    let asked = json!({ "name": name.is_some(), "email": email.is_some() });
    let changed =
        access_changes::change_own_profile(state.access_ctx(), id, name, email, body.current_password).await?;
    let mut details = asked;
    details["emailChanged"] = json!(changed.old_email.is_some());
    Audit::new("user.profile_updated").actor(&ctx).target("user", id).ip(&ip).details(details).write(&state).await;
    Ok(axum::Json(UserView::from(&changed.user)))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct PasswordBody {
    current_password: String,
    new_password: String,
}

#[utoipa::path(
    put, path = "/auth/me/password", tag = tags::AUTH,
    description = "Signed in (a person). Changes the password (the current one is required); other sessions end, remembered devices are forgotten (the next sign-in asks for the second factor) and unused reset links stop working.",
    responses((status = 204, description = "changed"), err::BadRequest, err::Unauthorized, err::Forbidden, err::Unprocessable)
)]
async fn change_password(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
    Json(body): Json<PasswordBody>,
) -> Result<StatusCode, ApiError> {
    let id = ctx.require_user()?;
    let keep = match &ctx.principal {
        Principal::User { session_id, .. } => Some(session_id.clone()),
        _ => None,
    };
    let ended =
        passwords::change_password(state.access_ctx(), id, body.current_password, body.new_password, keep).await?;
    let details = json!({ "endedSessions": ended.sessions, "forgottenDevices": ended.remembered_devices });
    Audit::new("user.password_changed").actor(&ctx).target("user", id).ip(&ip).details(details).write(&state).await;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
struct DeleteBody {
    password: String,
}

/// Deletes the caller's account after checking the password. Teams they own alone go with them;
/// a team with other members must be handed over first (`transfer_ownership_first`), and the last
/// platform admin cannot leave the hub without one (`last_platform_admin`).
#[utoipa::path(
    delete, path = "/auth/me", tag = tags::AUTH,
    description = "Signed in (a person). Deletes the account after checking the password; teams owned alone go with it.",
    responses((status = 204, description = "deleted; the cookie is cleared"), err::BadRequest, err::Unauthorized, err::Forbidden, err::Conflict)
)]
async fn delete_me(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
    Json(body): Json<DeleteBody>,
) -> Result<Response, ApiError> {
    let id = ctx.require_user()?;
    let user = state.store.call(move |c| store::users::get(c, id)).await?;
    if !state.passwords.verify(body.password, user.password_hash).await {
        return Err(ApiError::BadRequest("wrong_password", "the password is not correct".into()));
    }
    let ended = access_changes::delete_account(state.access_ctx(), id).await?;
    super::tenants::audit_transferred(&state, &ctx, &ip, id, &ended, "account_deleted").await;
    Audit::new("user.account_deleted").actor_user(id).target("user", id).ip(&ip).write(&state).await;
    Ok((StatusCode::NO_CONTENT, [(header::SET_COOKIE, session::clear_cookie(&state))]).into_response())
}
