//! Satellites REST (SPEC 4.4, 2.11): registration, list, detail, rename, key rotation, deletion.
//! Config and profile routes are in `satellite_config.rs`. Mutations follow the device rule.

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::{extract::State, http::StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{ApiError, Json, Path, Query, views::Page};
use crate::{
    auth::{
        Audit, Authenticated, ClientIp, RequestedTenant, Viewer, choose_tenant,
        device_rule::{self, DeviceAction},
        guard,
    },
    domain::{DeviceKind, Role, clock_sanity, settings::TenantSettings, sort},
    events::Event,
    ids::{SatelliteId, TenantId, UserId},
    state::AppState,
    store::{self, satellites::Satellite, zones::ZoneSource},
    time::Timestamp,
    usecases::satellites,
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, register))
        .routes(routes!(detail, rename, remove))
        .routes(routes!(rotate_key))
}

/// A satellite as listed (SPEC 2.11; snake_case like the SPEC's record fields).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SatelliteView {
    pub id: SatelliteId,
    pub tenant_id: TenantId,
    pub name: String,
    /// The device's stable id; null unless the caller may manage the device (`can_manage`).
    pub device_id: Option<String>,
    pub kind: DeviceKind,
    pub registered_by: Option<UserId>,
    pub registered_by_name: Option<String>,
    pub registered_by_me: bool,
    pub can_manage: bool,
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
    pub last_seen_at: Option<Timestamp>,
    pub is_online: bool,
    /// The satellite is only the history of an imported station (BirdNET-Pi, BirdNET-Go): no
    /// device has registered under its name, so it is never online, has no update or schedule,
    /// and is not one of the stations listening (docs/imports.md, "The imported satellite").
    pub history_only: bool,
    pub heartbeat_state: Option<String>,
    pub noise_floor_rms: Option<f64>,
    pub uptime_seconds: Option<i64>,
    pub version: Option<String>,
    pub stream: Option<String>,
    pub update_status: Option<String>,
    /// The version an update asked for (`updating` or `failed`); null when none is under way.
    pub target_version: Option<String>,
    /// Why the last update failed, as the satellite reported it in a heartbeat (its update
    /// command's exit status and last lines); null unless `update_status` is `failed`.
    pub update_error: Option<String>,
    pub config_locked: bool,
    /// The last heartbeat's `filterStats` (SPEC 2.3), as the device sent it; null before one.
    #[schema(value_type = Option<Object>)]
    pub filter_stats: Option<Value>,
    /// The last heartbeat's `outboxStats` (SPEC 2.3), as the device sent it; null before one.
    #[schema(value_type = Option<Object>)]
    pub outbox_stats: Option<Value>,
    /// What the hub's own filters did to this satellite's chunks (docs/detection-quality.md):
    /// `privacyDropped`, `suppressed`, `excluded`, `notIncluded`, `belowThreshold`,
    /// `notExpectedDropped`, `secondLookConfirmed`, `secondLookDiscarded`, `secondLookHidden`.
    /// On `GET /satellites/{id}` only.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub hub_filter_stats: Option<std::collections::BTreeMap<String, u64>>,
    /// Birds the hub left out in the last 24 hours because they are not expected at the
    /// satellite's place this week (`not_expected_action = drop`; docs/detection-quality.md). On
    /// `GET /satellites` and `GET /satellites/{id}` only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_expected_left_out_24h: Option<u64>,
    /// The satellite's clock minus the hub's (ms), from its last heartbeat with a `timestamp`;
    /// null before one (docs/satellites.md, "The satellite's clock").
    pub clock_offset_ms: Option<i64>,
    /// When that offset was measured.
    pub clock_checked_at: Option<Timestamp>,
    /// The offset is more than 2 minutes either way: the satellite's health says its clock is wrong.
    pub clock_wrong: bool,
    /// The offset in words: "Clock 3 s ahead", "Clock wrong: 56 years behind the hub"; null before a measurement.
    pub clock_text: Option<String>,
    /// How many of its chunks the hub re-stamped because their `recordedAt` was implausible.
    pub clock_corrected_chunks: i64,
    /// The satellite's effective IANA zone (issue 37): its days and hours are counted in it.
    pub time_zone: String,
    /// Where `time_zone` comes from: `override` (chosen for it), `position` (found from its
    /// coordinates) or `team` (its team's `time_zone`: no position and no override).
    pub time_zone_source: ZoneSource,
    /// The zone chosen for it (`PUT /satellites/{id}/time-zone`); null when automatic.
    pub time_zone_override: Option<String>,
    pub created_at: Timestamp,
}

pub fn view(state: &AppState, s: &Satellite, rel: device_rule::Relation, settings: &TenantSettings) -> SatelliteView {
    let threshold = chrono::Duration::minutes(i64::from(settings.satellite_offline_threshold_minutes));
    let online_after = state.clock.now() - threshold;
    let can_manage = device_rule::may(rel, s.registered_by, settings.device_policy, DeviceAction::Manage);
    SatelliteView {
        id: s.id,
        tenant_id: s.tenant_id,
        name: s.name.clone(),
        // Whoever knows a team-owned device's id may claim it (SPEC 4.4 rule 1): only those who
        // may manage the device see it.
        device_id: s.device_id.clone().filter(|_| can_manage),
        kind: s.kind,
        registered_by: s.registered_by,
        registered_by_name: s.registered_by_name.clone(),
        registered_by_me: rel.user.is_some() && s.registered_by == rel.user,
        can_manage,
        latitude: s.latitude,
        longitude: s.longitude,
        last_seen_at: s.last_seen_at,
        // A satellite whose last heartbeat said it stopped is offline at once (docs/mqtt.md).
        is_online: s.last_seen_at.is_some_and(|t| t > online_after)
            && s.heartbeat_state.as_deref() != Some(crate::mqtt::protocol::STOPPED),
        history_only: store::import_rows::is_history_only(&s.mqtt_password_hash),
        heartbeat_state: s.heartbeat_state.clone(),
        noise_floor_rms: s.noise_floor_rms,
        uptime_seconds: s.uptime_seconds,
        version: s.version.clone(),
        stream: s.stream.clone(),
        update_status: s.update_status.clone(),
        target_version: s.target_version.clone(),
        update_error: s.update_error.clone().filter(|_| s.update_status.as_deref() == Some("failed")),
        config_locked: s.config_locked,
        filter_stats: s.filter_stats_json.as_deref().and_then(|j| serde_json::from_str(j).ok()),
        outbox_stats: s.outbox_stats_json.as_deref().and_then(|j| serde_json::from_str(j).ok()),
        hub_filter_stats: None,
        not_expected_left_out_24h: None,
        clock_offset_ms: s.clock_offset_ms,
        clock_checked_at: s.clock_checked_at,
        clock_wrong: s.clock_offset_ms.is_some_and(clock_sanity::is_wrong),
        clock_text: s.clock_offset_ms.map(clock_sanity::describe),
        clock_corrected_chunks: s.clock_corrected_chunks,
        // Not decided yet (a satellite just registered): the team's zone, until the zone mover
        // has looked at its position.
        time_zone: s.time_zone.clone().unwrap_or_else(|| settings.time_zone.clone()),
        time_zone_source: s.zone_source.as_deref().and_then(ZoneSource::parse).unwrap_or(ZoneSource::Team),
        time_zone_override: s.zone_override.clone(),
        created_at: s.created_at,
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListQuery {
    search: Option<String>,
    /// `online` or `offline`.
    status: Option<String>,
    /// `satellite` or `mobile`.
    kind: Option<String>,
    /// `name` (default), `lastSeen` or `created`.
    sort_by: Option<String>,
    /// `asc` (default for name) or `desc`.
    sort_dir: Option<String>,
}

#[utoipa::path(
    get, path = "/satellites", tag = tags::SATELLITES,
    description = "Viewer+. The team's satellites, filterable (`search`, `status`, `kind`), sortable (`sortBy`, `sortDir`) and paginated (`limit`, `offset`): `{satellites: [SatelliteView], total}`.",
    responses((status = 200, description = "`{satellites, total}`", body = Object), err::BadRequest, err::Auth)
)]
async fn list(
    State(state): State<AppState>,
    Viewer(access): Viewer,
    Query(q): Query<ListQuery>,
    Query(page): Query<Page>,
) -> Result<axum::Json<Value>, ApiError> {
    let page = page.checked()?;
    let tenant = access.tenant_id;
    let settings: TenantSettings = {
        let scope = tenant.to_string();
        state.store.call(move |c| store::settings::load(c, &scope)).await?
    };
    let threshold = chrono::Duration::minutes(i64::from(settings.satellite_offline_threshold_minutes));
    let online_after = Timestamp::from(state.clock.now() - threshold);
    let seen_after = match q.status.as_deref() {
        None | Some("") => None,
        Some("online") => Some((online_after, true)),
        Some("offline") => Some((online_after, false)),
        Some(other) => {
            return Err(ApiError::BadRequest(
                "invalid_status",
                format!("status must be online or offline, not {other:?}"),
            ));
        }
    };
    let kind = match q.kind.as_deref().filter(|k| !k.is_empty()) {
        None => None,
        Some(k) => Some(k.parse::<DeviceKind>().map_err(|e| ApiError::BadRequest("invalid_kind", e))?),
    };
    let sort = sort::parse::<store::satellites::SortBy>(q.sort_by.as_deref(), q.sort_dir.as_deref())?;
    let filter = store::satellites::ListFilter {
        search: q.search.filter(|s| !s.trim().is_empty()),
        kind,
        seen_after,
        sort: sort.by,
        descending: sort.descending,
        limit: page.limit,
        offset: page.offset,
    };
    let day_ago = Timestamp::from(state.clock.now() - chrono::Duration::hours(24));
    let (rows, total, left_out) = state
        .store
        .call(move |c| {
            let (rows, total) = store::satellites::list(c, tenant, &filter)?;
            Ok((rows, total, store::left_out::by_satellite(c, tenant, day_ago)?))
        })
        .await?;
    let views: Vec<SatelliteView> = rows
        .iter()
        .map(|s| SatelliteView {
            not_expected_left_out_24h: Some(left_out.get(&s.id).copied().unwrap_or(0)),
            ..view(&state, s, device_rule::relation(&access.ctx, s, Some(access.role)), &settings)
        })
        .collect();
    Ok(axum::Json(json!({ "satellites": views, "total": total })))
}

#[utoipa::path(
    get, path = "/satellites/{id}", tag = tags::SATELLITES,
    description = "Viewer+. One satellite with its ownership fields.",
    params(("id" = uuid::Uuid, Path, description = "satellite id")),
    responses((status = 200, description = "the satellite", body = SatelliteView), err::Auth, err::NotFound)
)]
async fn detail(
    State(state): State<AppState>,
    Authenticated(ctx): Authenticated,
    Path(id): Path<SatelliteId>,
) -> Result<axum::Json<SatelliteView>, ApiError> {
    let (sat, rel, settings) = device_rule::check(&state, &ctx, id, DeviceAction::View).await?;
    let (tenant, day_ago) = (sat.tenant_id, Timestamp::from(state.clock.now() - chrono::Duration::hours(24)));
    let (mut counts, left_out) = state
        .store
        .call(move |c| {
            let left_out = crate::store::left_out::by_satellite(c, tenant, day_ago)?;
            Ok((crate::store::held::counts(c, id)?, left_out.get(&id).copied().unwrap_or(0)))
        })
        .await?;
    for name in crate::usecases::detection_settings::COUNTERS {
        counts.entry((*name).to_owned()).or_insert(0);
    }
    Ok(axum::Json(SatelliteView {
        hub_filter_stats: Some(counts),
        not_expected_left_out_24h: Some(left_out),
        ..view(&state, &sat, rel, &settings)
    }))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct RegisterBody {
    name: String,
    device_id: Option<String>,
    /// `satellite` (a Pi, default) or `mobile` (the Android app).
    kind: Option<String>,
    latitude: Option<f64>,
    longitude: Option<f64>,
    tenant_id: Option<TenantId>,
}

/// Registers a satellite, or re-registers a known one (by `deviceId`, or adopts one by name),
/// following the rules of SPEC 4.4. Returns fresh MQTT credentials and a satellite API key, once.
/// The team is chosen like on every route: body `tenantId`, else `?tenantId=` / `X-Tenant-Id`,
/// else the caller's default team.
#[utoipa::path(
    post, path = "/satellites", tag = tags::SATELLITES,
    description = "Member+ (Admin+ when the team's `device_policy` is `admins`). Registers or re-registers a satellite: `{id, tenantId, name, mqtt: {username, password, brokerUrl, clientId, topicPrefix}, apiKey}`; the password and key are shown once.",
    responses((status = 201, description = "registered", body = Object), (status = 200, description = "re-registered (new credentials)", body = Object), err::BadRequest, err::Auth, err::Conflict, err::Unprocessable)
)]
async fn register(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
    RequestedTenant(requested): RequestedTenant,
    Json(body): Json<RegisterBody>,
) -> Result<(StatusCode, axum::Json<Value>), ApiError> {
    let team = choose_tenant(body.tenant_id, requested)?;
    let access = guard::access(&state, &ctx, team, Role::Member).await?;
    let me = ctx.require_user()?;
    let kind = match body.kind.as_deref() {
        None => DeviceKind::default(),
        Some(k) => k.parse().map_err(|e| ApiError::Unprocessable("invalid_kind", e))?,
    };
    let registration = satellites::Registration {
        tenant: access.tenant_id,
        by: me,
        by_admin: access.role == Role::Admin,
        name: body.name,
        device_id: body.device_id,
        kind,
        location: body.latitude.zip(body.longitude),
    };
    let done = satellites::register(&state.store, &state.clock, state.mqtt.logins(), registration).await?;
    let sat = &done.satellite;
    if !done.created {
        // The old password is void: its session is dropped like any revoked one.
        state.bus.publish(Event::SatelliteRevoked { tenant_id: sat.tenant_id, satellite_id: sat.id });
    }
    Audit::new(if done.created { "satellite.registered" } else { "satellite.reregistered" })
        .actor(&ctx)
        .tenant(sat.tenant_id)
        .target("satellite", sat.id)
        .ip(&ip)
        .write(&state)
        .await;
    if done.claimed {
        Audit::new("admin.satellite_transferred")
            .actor(&ctx)
            .tenant(sat.tenant_id)
            .target("satellite", sat.id)
            .ip(&ip)
            .details(json!({ "from": null, "to": me, "reason": "claimed" }))
            .write(&state)
            .await;
    }
    let body = json!({
        "id": sat.id,
        "tenantId": sat.tenant_id,
        "name": sat.name,
        "mqtt": {
            "username": sat.id,
            "password": done.mqtt_password,
            "brokerUrl": broker_url(&state),
            "clientId": format!("{}-{}", sat.kind.client_prefix(), sat.id),
            "topicPrefix": crate::mqtt::topics::prefix(&state.settings.mqtt.topic_root, sat.tenant_id, sat.id),
        },
        "apiKey": done.api_key,
    });
    Ok((if done.created { StatusCode::CREATED } else { StatusCode::OK }, axum::Json(body)))
}

/// `mqtt.public_url`, else the hub's own broker address ([`crate::links`]); never the request's `Host`.
fn broker_url(state: &AppState) -> String {
    state.links().broker_url.clone()
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
struct RenameBody {
    name: String,
}

#[utoipa::path(
    patch, path = "/satellites/{id}", tag = tags::SATELLITES,
    description = "Device rule (SPEC 5.4). Renames the satellite.",
    params(("id" = uuid::Uuid, Path, description = "satellite id")),
    responses((status = 200, description = "the satellite", body = SatelliteView), err::Auth, err::NotFound, err::Conflict, err::Unprocessable)
)]
async fn rename(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
    Path(id): Path<SatelliteId>,
    Json(body): Json<RenameBody>,
) -> Result<axum::Json<SatelliteView>, ApiError> {
    let (sat, rel, settings) = device_rule::check(&state, &ctx, id, DeviceAction::SelfService).await?;
    let renamed = satellites::rename(&state.store, &state.clock, sat.tenant_id, id, &body.name).await?;
    Audit::new("admin.satellite_renamed")
        .actor(&ctx)
        .tenant(sat.tenant_id)
        .target("satellite", id)
        .ip(&ip)
        .details(json!({ "from": sat.name, "to": renamed.name }))
        .write(&state)
        .await;
    Ok(axum::Json(view(&state, &renamed, rel, &settings)))
}

#[utoipa::path(
    post, path = "/satellites/{id}/rotate-api-key", tag = tags::SATELLITES,
    description = "Device rule. A new satellite API key `{apiKey}`; the previous keys expire.",
    params(("id" = uuid::Uuid, Path, description = "satellite id")),
    responses((status = 200, description = "`{apiKey}`", body = Object), err::Auth, err::NotFound)
)]
async fn rotate_key(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
    Path(id): Path<SatelliteId>,
) -> Result<axum::Json<Value>, ApiError> {
    let (sat, _, _) = device_rule::check(&state, &ctx, id, DeviceAction::SelfService).await?;
    let key = satellites::rotate_key(&state.store, &state.clock, sat.tenant_id, id, ctx.user_id()).await?;
    Audit::new("admin.satellite_api_key_rotated")
        .actor(&ctx)
        .tenant(sat.tenant_id)
        .target("satellite", id)
        .ip(&ip)
        .write(&state)
        .await;
    Ok(axum::Json(json!({ "apiKey": key })))
}

/// Deletes a satellite: its broker login and keys stop working at once and a live session is
/// dropped. Its recordings and detections stay with the team.
#[utoipa::path(
    delete, path = "/satellites/{id}", tag = tags::SATELLITES,
    description = "Device rule. Deletes the satellite and revokes its MQTT login and keys; its recordings stay.",
    params(("id" = uuid::Uuid, Path, description = "satellite id")),
    responses((status = 204, description = "deleted"), err::Auth, err::NotFound)
)]
async fn remove(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
    Path(id): Path<SatelliteId>,
) -> Result<StatusCode, ApiError> {
    let (sat, _, _) = device_rule::check(&state, &ctx, id, DeviceAction::Manage).await?;
    satellites::remove(&state.store, &state.clock, sat.tenant_id, id).await?;
    state.bus.publish(Event::SatelliteRevoked { tenant_id: sat.tenant_id, satellite_id: id });
    Audit::new("admin.satellite_deleted")
        .actor(&ctx)
        .tenant(sat.tenant_id)
        .target("satellite", id)
        .ip(&ip)
        .details(json!({ "name": sat.name }))
        .write(&state)
        .await;
    Ok(StatusCode::NO_CONTENT)
}
