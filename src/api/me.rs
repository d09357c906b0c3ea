//! The signed-in person's own account (SPEC 4.1, 2.13): me, preferences, profile, password, deletion.

use axum::{
    Router,
    extract::State,
    http::{StatusCode, header},
    response::{IntoResponse, Response},
    routing::{get, put},
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

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/auth/me", get(me).delete(delete_me))
        .route("/auth/me/preferences", put(preferences))
        .route("/auth/me/profile", put(profile))
        .route("/auth/me/password", put(change_password))
}

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

#[derive(Debug, Deserialize)]
struct ProfileBody {
    name: Option<String>,
    email: Option<String>,
}

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

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PasswordBody {
    current_password: String,
    new_password: String,
}

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
    let new_password = body.new_password;
    let hash = tokio::task::spawn_blocking(move || {
        password::verify(&body.current_password, &user.password_hash).then(|| password::hash(&new_password))
    })
    .await
    .map_err(ApiError::internal)?
    .ok_or_else(|| ApiError::BadRequest("wrong_password", "the current password is not correct".into()))?
    .map_err(ApiError::internal)?;
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

#[derive(Debug, Deserialize)]
struct DeleteBody {
    password: String,
}

/// Deletes the caller's account after checking the password. Teams they own alone go with them;
/// a team with other members must be handed over first (`transfer_ownership_first`), and the last
/// platform admin cannot leave the hub without one (`last_platform_admin`).
async fn delete_me(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
    Json(body): Json<DeleteBody>,
) -> Result<Response, ApiError> {
    let id = ctx.require_user()?;
    let user = state.store.call(move |c| store::users::get(c, id)).await?;
    let hash = user.password_hash.clone();
    let ok = tokio::task::spawn_blocking(move || password::verify(&body.password, &hash))
        .await
        .map_err(ApiError::internal)?;
    if !ok {
        return Err(ApiError::BadRequest("wrong_password", "the password is not correct".into()));
    }
    accounts::delete_account(&state.store, &state.clock, id).await?;
    Audit::new("user.account_deleted").actor_user(id).target("user", id).ip(&ip).write(&state).await;
    Ok((StatusCode::NO_CONTENT, [(header::SET_COOKIE, session::clear_cookie(&state))]).into_response())
}
