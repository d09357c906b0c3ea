//! Alert rules and channels (SPEC 4.6): `/alert-rules/rules` and `/alert-rules/channels`, Viewer+
//! to read and Admin+ to write, plus `GET /alert-rules/channels/:id` (the channel with its
//! delivery log) and `POST /alert-rules/channels/:id/test`. Bodies are documented in
//! `usecases::alert_rules` and `usecases::alert_channels`.

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::{extract::State, http::StatusCode};
use serde_json::{Value, json};

use super::{ApiError, Json, Path};
use crate::{
    auth::{Admin, Audit, ClientIp, TenantAccess, Viewer},
    domain::Role,
    state::AppState,
    store::alert_rules::Rule,
    usecases::{
        alert_channels::{self, ChannelInput, ChannelView},
        alert_delivery::TestReport,
        alert_rules::{self, RuleInput},
    },
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_rules, create_rule))
        .routes(routes!(update_rule, delete_rule))
        .routes(routes!(list_channels, create_channel))
        .routes(routes!(get_channel, update_channel, delete_channel))
        .routes(routes!(test_channel))
}

#[utoipa::path(
    get, path = "/alert-rules/rules", tag = tags::ALERTS,
    description = "Viewer+. The team's alert rules: `{rules}`.",
    responses((status = 200, description = "`{rules}`", body = Object), err::Auth)
)]
async fn list_rules(State(state): State<AppState>, Viewer(access): Viewer) -> Result<axum::Json<Value>, ApiError> {
    let rules = alert_rules::list(&state.store, access.tenant_id).await?;
    Ok(axum::Json(json!({ "rules": rules, "total": rules.len() })))
}

#[utoipa::path(
    post, path = "/alert-rules/rules", tag = tags::ALERTS,
    description = "Admin+. Creates a rule (SPEC 2.15). A species the model does not know is 422 `unknown_species`, naming it.",
    request_body = Object,
    responses((status = 201, description = "the rule", body = Object), err::Auth, err::Unprocessable)
)]
async fn create_rule(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Admin(access): Admin,
    Json(body): Json<RuleInput>,
) -> Result<(StatusCode, axum::Json<Rule>), ApiError> {
    let rule = alert_rules::create(&state.store, &state.names, access.tenant_id, body, state.clock.stamp()).await?;
    audit_rule(&state, &access, &ip, "admin.alert_rule_created", &rule).await;
    Ok((StatusCode::CREATED, axum::Json(rule)))
}

#[utoipa::path(
    put, path = "/alert-rules/rules/{id}", tag = tags::ALERTS,
    description = "Admin+. Replaces a rule.",
    params(("id" = uuid::Uuid, Path, description = "rule id")),
    request_body = Object,
    responses((status = 200, description = "the rule", body = Object), err::Auth, err::NotFound, err::Unprocessable)
)]
async fn update_rule(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Admin(access): Admin,
    Path(id): Path<uuid::Uuid>,
    Json(body): Json<RuleInput>,
) -> Result<axum::Json<Rule>, ApiError> {
    let rule =
        alert_rules::update(&state.store, &state.names, access.tenant_id, id.to_string(), body, state.clock.stamp())
            .await?;
    audit_rule(&state, &access, &ip, "admin.alert_rule_updated", &rule).await;
    Ok(axum::Json(rule))
}

#[utoipa::path(
    delete, path = "/alert-rules/rules/{id}", tag = tags::ALERTS,
    description = "Admin+. Deletes a rule.",
    params(("id" = uuid::Uuid, Path, description = "rule id")),
    responses((status = 204, description = "deleted"), err::Auth, err::NotFound)
)]
async fn delete_rule(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Admin(access): Admin,
    Path(id): Path<uuid::Uuid>,
) -> Result<StatusCode, ApiError> {
    let rule = alert_rules::delete(&state.store, access.tenant_id, id.to_string()).await?;
    audit_rule(&state, &access, &ip, "admin.alert_rule_deleted", &rule).await;
    Ok(StatusCode::NO_CONTENT)
}

async fn audit_rule(state: &AppState, access: &TenantAccess, ip: &str, action: &'static str, rule: &Rule) {
    Audit::new(action)
        .actor(&access.ctx)
        .tenant(access.tenant_id)
        .target("alert_rule", &rule.id)
        .ip(ip)
        .details(json!({ "name": rule.name, "trigger": rule.trigger, "channelIds": rule.channel_ids, "enabled": rule.enabled }))
        .write(state)
        .await;
}

#[utoipa::path(
    get, path = "/alert-rules/channels", tag = tags::ALERTS,
    description = "Viewer+. The team's channels (secrets never shown): `{channels}`.",
    responses((status = 200, description = "`{channels}`", body = Object), err::Auth)
)]
async fn list_channels(State(state): State<AppState>, Viewer(access): Viewer) -> Result<axum::Json<Value>, ApiError> {
    let full = access.role.at_least(Role::Admin);
    let channels = alert_channels::list(&state.store, access.tenant_id, full).await?;
    Ok(axum::Json(json!({ "channels": channels, "total": channels.len() })))
}

#[utoipa::path(
    get, path = "/alert-rules/channels/{id}", tag = tags::ALERTS,
    description = "Viewer+. One channel.",
    params(("id" = uuid::Uuid, Path, description = "channel id")),
    responses((status = 200, description = "the channel", body = Object), err::Auth, err::NotFound)
)]
async fn get_channel(
    State(state): State<AppState>,
    Viewer(access): Viewer,
    Path(id): Path<uuid::Uuid>,
) -> Result<axum::Json<ChannelView>, ApiError> {
    let full = access.role.at_least(Role::Admin);
    Ok(axum::Json(alert_channels::get(&state.store, access.tenant_id, id.to_string(), full).await?))
}

#[utoipa::path(
    post, path = "/alert-rules/channels", tag = tags::ALERTS,
    description = "Admin+. Creates a channel (body per SPEC 2.16).",
    request_body = Object,
    responses((status = 201, description = "the channel", body = Object), err::Auth, err::Unprocessable)
)]
async fn create_channel(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Admin(access): Admin,
    Json(body): Json<ChannelInput>,
) -> Result<(StatusCode, axum::Json<ChannelView>), ApiError> {
    let ch = alert_channels::create(&state.store, &state.secrets, access.tenant_id, body, state.clock.stamp()).await?;
    audit_channel(&state, &access, &ip, "admin.webhook_created", &ch.id, &ch.kind, &ch.name).await;
    Ok((StatusCode::CREATED, axum::Json(ch)))
}

#[utoipa::path(
    put, path = "/alert-rules/channels/{id}", tag = tags::ALERTS,
    description = "Admin+. Replaces a channel.",
    params(("id" = uuid::Uuid, Path, description = "channel id")),
    request_body = Object,
    responses((status = 200, description = "the channel", body = Object), err::Auth, err::NotFound, err::Unprocessable)
)]
async fn update_channel(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Admin(access): Admin,
    Path(id): Path<uuid::Uuid>,
    Json(body): Json<ChannelInput>,
) -> Result<axum::Json<ChannelView>, ApiError> {
    let ch = alert_channels::update(
        &state.store,
        &state.secrets,
        access.tenant_id,
        id.to_string(),
        body,
        state.clock.stamp(),
    )
    .await?;
    audit_channel(&state, &access, &ip, "admin.webhook_updated", &ch.id, &ch.kind, &ch.name).await;
    Ok(axum::Json(ch))
}

#[utoipa::path(
    delete, path = "/alert-rules/channels/{id}", tag = tags::ALERTS,
    description = "Admin+. Deletes a channel.",
    params(("id" = uuid::Uuid, Path, description = "channel id")),
    responses((status = 204, description = "deleted"), err::Auth, err::NotFound)
)]
async fn delete_channel(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Admin(access): Admin,
    Path(id): Path<uuid::Uuid>,
) -> Result<StatusCode, ApiError> {
    let ch = alert_channels::delete(&state.store, access.tenant_id, id.to_string()).await?;
    audit_channel(&state, &access, &ip, "admin.webhook_deleted", &ch.id, &ch.kind, &ch.name).await;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(
    post, path = "/alert-rules/channels/{id}/test", tag = tags::ALERTS,
    description = "Admin+. Sends a sample payload through the full pipeline (signature included) and reports the receiver's status code and a classified reason (`errorCode`), never its reply.",
    params(("id" = uuid::Uuid, Path, description = "channel id")),
    responses((status = 200, description = "the test report", body = Object), err::Auth, err::NotFound)
)]
async fn test_channel(
    State(state): State<AppState>,
    Admin(access): Admin,
    Path(id): Path<uuid::Uuid>,
) -> Result<axum::Json<TestReport>, ApiError> {
    let report = state
        .outbound
        .test_send(access.tenant_id, &id.to_string())
        .await
        .map_err(super::not_found("channel_not_found", "no such alert channel"))?;
    Ok(axum::Json(report))
}

async fn audit_channel(
    state: &AppState,
    access: &TenantAccess,
    ip: &str,
    action: &'static str,
    id: &str,
    kind: &str,
    name: &str,
) {
    Audit::new(action)
        .actor(&access.ctx)
        .tenant(access.tenant_id)
        .target("alert_channel", id)
        .ip(ip)
        .details(json!({ "type": kind, "name": name }))
        .write(state)
        .await;
}
