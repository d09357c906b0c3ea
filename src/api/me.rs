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
    auth::{Audit, Authenticated, ClientIp, Principal, password},
    domain::{preferences::Preferences, settings},
    state::AppState,
    store,
    usecases::accounts,
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
    let (json, now) = (serde_json::to_string(&next).map_err(ApiError::internal)?, state.clock.stamp());
    state.store.call(move |c| store::users::set_preferences(c, id, &json, now)).await?;
    Audit::new("user.preferences_updated").actor(&ctx).target("user", id).ip(&ip).write(&state).await;
    Ok(axum::Json(next))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
struct ProfileBody {
    name: Option<String>,
    email: Option<String>,
}

#[utoipa::path(
    put, path = "/auth/me/profile", tag = tags::AUTH,
    description = "Signed in (a person). Changes the name and/or the email.",
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
    let changed = json!({ "name": name.is_some(), "email": email.is_some() });
    let change = accounts::ProfileChange { name, email, platform_admin: None };
    let user = accounts::change_profile(&state.store, &state.clock, id, change).await?;
    Audit::new("user.profile_updated").actor(&ctx).target("user", id).ip(&ip).details(changed).write(&state).await;
    Ok(axum::Json(UserView::from(&user)))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct PasswordBody {
    current_password: String,
    new_password: String,
}

#[utoipa::path(
    put, path = "/auth/me/password", tag = tags::AUTH,
    description = "Signed in (a person). Changes the password (the current one is required); other sessions end.",
    responses((status = 204, description = "changed"), err::BadRequest, err::Unauthorized, err::Forbidden, err::Unprocessable)
)]
async fn change_password(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
    Json(body): Json<PasswordBody>,
) -> Result<StatusCode, ApiError> {
    let id = ctx.require_user()?;
    password::check_strength(&body.new_password)
        .map_err(|e| ApiError::Unprocessable("weak_password", e.to_string()))?;
    let user = state.store.call(move |c| store::users::get(c, id)).await?;
    // Both go through the hub's bounded pool of argon2 runs.
    if !state.passwords.verify(body.current_password, user.password_hash).await {
        return Err(ApiError::BadRequest("wrong_password", "the current password is not correct".into()));
    }
    let hash = state.passwords.hash(body.new_password).await.map_err(|e| ApiError::internal(anyhow::anyhow!(e)))?;
    let keep = match &ctx.principal {
        Principal::User { session_id, .. } => Some(session_id.clone()),
        _ => None,
    };
    let now = state.clock.stamp();
    state
        .store
        .call(move |c| {
            store::users::set_password(c, id, &hash, now)?;
            store::sessions::revoke_all(c, id, keep.as_deref(), now)
        })
        .await?;
    Audit::new("user.password_changed").actor(&ctx).target("user", id).ip(&ip).write(&state).await;
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
    for (tenant, released) in accounts::delete_account(&state.store, &state.clock, id).await? {
        super::tenants::announce_released(&state, tenant, &released, false);
        super::tenants::audit_transferred(&state, &ctx, &ip, tenant, id, &released, "account_deleted").await;
    }
    Audit::new("user.account_deleted").actor_user(id).target("user", id).ip(&ip).write(&state).await;
    Ok((StatusCode::NO_CONTENT, [(header::SET_COOKIE, session::clear_cookie(&state))]).into_response())
}
