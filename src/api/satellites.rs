//! Satellites REST (SPEC 4.4, 2.11): registration, list, detail, rename, key rotation, deletion.
//! Config and profile routes are in `satellite_config.rs`. Mutations follow the device rule.

use axum::{
    Router,
    extract::State,
    http::StatusCode,
    routing::{get, post},
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{ApiError, Json, Path, Query, views::Page};
use crate::{
    auth::{
        Audit, Authenticated, ClientIp, Viewer,
        device_rule::{self, DeviceAction},
        guard, tokens,
    },
    domain::{
        Role,
        settings::{DevicePolicy, TenantSettings},
        validate,
    },
    events::Event,
    ids::{SatelliteId, TenantId, UserId},
    state::AppState,
    store::{self, satellites::Satellite},
};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/satellites", get(list).post(register))
        .route("/satellites/{id}", get(detail).patch(rename).delete(remove))
        .route("/satellites/{id}/rotate-api-key", post(rotate_key))
}

/// A satellite as listed (SPEC 2.11; snake_case like the SPEC's record fields).
#[derive(Debug, Serialize)]
pub struct SatelliteView {
    pub id: SatelliteId,
    pub tenant_id: TenantId,
    pub name: String,
    pub device_id: Option<String>,
    pub kind: String,
    pub registered_by: Option<UserId>,
    pub registered_by_name: Option<String>,
    pub registered_by_me: bool,
    pub can_manage: bool,
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
    pub last_seen_at: Option<String>,
    pub is_online: bool,
    pub heartbeat_state: Option<String>,
    pub noise_floor_rms: Option<f64>,
    pub uptime_seconds: Option<i64>,
    pub version: Option<String>,
    pub stream: Option<String>,
    pub update_status: Option<String>,
    pub config_locked: bool,
    pub created_at: String,
}

pub fn view(state: &AppState, s: &Satellite, rel: device_rule::Relation, settings: &TenantSettings) -> SatelliteView {
    let threshold = chrono::Duration::minutes(i64::from(settings.satellite_offline_threshold_minutes));
    let online_after = crate::time::format(state.clock.now() - threshold);
    SatelliteView {
        id: s.id,
        tenant_id: s.tenant_id,
        name: s.name.clone(),
        device_id: s.device_id.clone(),
        kind: s.kind.clone(),
        registered_by: s.registered_by,
        registered_by_name: s.registered_by_name.clone(),
        registered_by_me: rel.user.is_some() && s.registered_by == rel.user,
        can_manage: device_rule::may(rel, s.registered_by, settings.device_policy, DeviceAction::Manage),
        latitude: s.latitude,
        longitude: s.longitude,
        last_seen_at: s.last_seen_at.clone(),
        is_online: s.last_seen_at.as_deref().is_some_and(|t| t > online_after.as_str()),
        heartbeat_state: s.heartbeat_state.clone(),
        noise_floor_rms: s.noise_floor_rms,
        uptime_seconds: s.uptime_seconds,
        version: s.version.clone(),
        stream: s.stream.clone(),
        update_status: s.update_status.clone(),
        config_locked: s.config_locked,
        created_at: s.created_at.clone(),
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
    let online_after = crate::time::format(state.clock.now() - threshold);
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
    if q.kind.as_deref().is_some_and(|k| k != "satellite" && k != "mobile") {
        return Err(ApiError::BadRequest("invalid_kind", "kind must be satellite or mobile".into()));
    }
    let sort = match q.sort_by.as_deref() {
        None | Some("name") => "name",
        Some("lastSeen") => "last_seen_at",
        Some("created") => "created_at",
        Some(other) => {
            return Err(ApiError::BadRequest(
                "invalid_sort",
                format!("sortBy must be name, lastSeen or created, not {other:?}"),
            ));
        }
    };
    let descending = match q.sort_dir.as_deref() {
        None => sort != "name",
        Some("asc") => false,
        Some("desc") => true,
        Some(other) => {
            return Err(ApiError::BadRequest("invalid_sort", format!("sortDir must be asc or desc, not {other:?}")));
        }
    };
    let filter = store::satellites::ListFilter {
        search: q.search.filter(|s| !s.trim().is_empty()),
        kind: q.kind,
        seen_after,
        sort,
        descending,
        limit: page.limit,
        offset: page.offset,
    };
    let (rows, total) = state.store.call(move |c| store::satellites::list(c, tenant, &filter)).await?;
    let views: Vec<SatelliteView> = rows
        .iter()
        .map(|s| view(&state, s, device_rule::relation(&access.ctx, s, Some(access.role)), &settings))
        .collect();
    Ok(axum::Json(json!({ "satellites": views, "total": total })))
}

async fn detail(
    State(state): State<AppState>,
    Authenticated(ctx): Authenticated,
    Path(id): Path<SatelliteId>,
) -> Result<axum::Json<SatelliteView>, ApiError> {
    let (sat, rel, settings) = device_rule::check(&state, &ctx, id, DeviceAction::View).await?;
    Ok(axum::Json(view(&state, &sat, rel, &settings)))
}

#[derive(Debug, Deserialize)]
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

fn valid_device_id(s: &str) -> bool {
    !s.is_empty() && s.len() <= 128 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b))
}

/// Registers a satellite, or re-registers a known one (by `deviceId`, or adopts one by name),
/// following the rules of SPEC 4.4. Returns fresh MQTT credentials and a satellite API key, once.
async fn register(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
    Json(body): Json<RegisterBody>,
) -> Result<(StatusCode, axum::Json<Value>), ApiError> {
    let access = guard::access(&state, &ctx, body.tenant_id.or(ctx.default_tenant), Role::Member).await?;
    let me = ctx.require_user()?;
    let name = validate::name(&body.name, "name").map_err(|e| ApiError::Unprocessable("invalid_name", e))?;
    let device_id = body.device_id.filter(|d| !d.is_empty());
    if device_id.as_deref().is_some_and(|d| !valid_device_id(d)) {
        return Err(ApiError::Unprocessable(
            "invalid_device_id",
            "deviceId must be 1 to 128 of A-Z a-z 0-9 . _ : -".into(),
        ));
    }
    let kind = body.kind.unwrap_or_else(|| "satellite".into());
    if kind != "satellite" && kind != "mobile" {
        return Err(ApiError::Unprocessable("invalid_kind", "kind must be satellite or mobile".into()));
    }
    if body
        .latitude
        .zip(body.longitude)
        .is_some_and(|(a, o)| !(-90.0..=90.0).contains(&a) || !(-180.0..=180.0).contains(&o))
    {
        return Err(ApiError::Unprocessable("invalid_location", "latitude/longitude out of range".into()));
    }
    let tenant = access.tenant_id;
    let is_admin = access.role == Role::Admin;
    let scope = tenant.to_string();
    let settings: TenantSettings = state.store.call(move |c| store::settings::load(c, &scope)).await?;
    if settings.device_policy == DevicePolicy::Admins && !is_admin {
        return Err(ApiError::Forbidden(
            "DEVICE_POLICY_ADMINS",
            "this team lets only admins register satellites".into(),
        ));
    }

    let password = tokens::random_hex(32);
    let api_key = tokens::random_hex(32);
    let (pw_hash, key_hash, key_prefix) =
        (tokens::sha256_hex(&password), tokens::sha256_hex(&api_key), api_key[..8].to_owned());
    let now = state.clock.now_str();
    let (lat, lon) = (body.latitude, body.longitude);
    let outcome = state
        .store
        .call(move |c| {
            let tx = c.transaction()?;
            let existing = match &device_id {
                Some(d) => store::satellites::find_by_device(&tx, tenant, d)?.map(|s| (s, true)),
                None => None,
            }
            .or(store::satellites::find_by_name(&tx, tenant, &name)?.map(|s| (s, false)));
            let (id, created) = match existing {
                Some((sat, by_device)) => {
                    let mine = sat.registered_by == Some(me);
                    let claimable = by_device && sat.registered_by.is_none();
                    if !(is_admin || mine || claimable) {
                        return Ok(Err(if by_device { "device_registered_by_another" } else { "name_taken" }));
                    }
                    store::satellites::set_password_hash(&tx, sat.id, &pw_hash, &now)?;
                    if claimable && !is_admin {
                        store::satellites::set_registered_by(&tx, sat.id, Some(me), &now)?;
                    }
                    if let (Some(la), Some(lo)) = (lat, lon) {
                        store::satellites::set_location(&tx, sat.id, la, lo)?;
                    }
                    store::api_keys::revoke_for_satellite(&tx, sat.id, &now)?;
                    (sat.id, false)
                }
                None => {
                    let id = store::satellites::insert(
                        &tx,
                        &store::satellites::NewSatellite {
                            tenant_id: tenant,
                            name: &name,
                            device_id: device_id.as_deref(),
                            kind: &kind,
                            registered_by: Some(me),
                            mqtt_password_hash: &pw_hash,
                            latitude: lat,
                            longitude: lon,
                        },
                    )?;
                    (id, true)
                }
            };
            store::api_keys::create(
                &tx,
                &store::api_keys::NewKey {
                    tenant_id: tenant,
                    satellite_id: Some(id),
                    created_by: Some(me),
                    name: "satellite",
                    key_hash: &key_hash,
                    key_prefix: &key_prefix,
                    role: Role::Member,
                },
            )?;
            let sat = store::satellites::get(&tx, id)?;
            tx.commit()?;
            Ok(Ok((sat, created)))
        })
        .await?;
    let (sat, created) = match outcome {
        Ok(pair) => pair,
        Err("name_taken") => {
            return Err(ApiError::Conflict(
                "name_taken",
                "a satellite of this team already has that name; choose another".into(),
            ));
        }
        Err(_) => {
            return Err(ApiError::Forbidden(
                "device_registered_by_another",
                "another member registered this device".into(),
            ));
        }
    };
    if !created {
        // The old password is void: its session is dropped like any revoked one.
        state.bus.publish(Event::SatelliteRevoked { tenant_id: sat.tenant_id, satellite_id: sat.id });
    }
    Audit::new(if created { "satellite.registered" } else { "satellite.reregistered" })
        .actor(&ctx)
        .tenant(tenant)
        .target("satellite", sat.id)
        .ip(&ip)
        .write(&state)
        .await;
    let client_prefix = if sat.kind == "mobile" { "mobile" } else { "satellite" };
    let body = json!({
        "id": sat.id,
        "tenantId": sat.tenant_id,
        "name": sat.name,
        "mqtt": {
            "username": sat.id,
            "password": password,
            "brokerUrl": broker_url(&state),
            "clientId": format!("{client_prefix}-{}", sat.id),
            "topicPrefix": crate::mqtt::topics::prefix(&state.settings.mqtt.topic_root, sat.tenant_id, sat.id),
        },
        "apiKey": api_key,
    });
    Ok((if created { StatusCode::CREATED } else { StatusCode::OK }, axum::Json(body)))
}

/// `mqtt.public_url`, else the hub's own broker address ([`crate::links`]); never the request's `Host`.
fn broker_url(state: &AppState) -> String {
    state.links().broker_url.clone()
}

#[derive(Debug, Deserialize)]
struct RenameBody {
    name: String,
}

async fn rename(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
    Path(id): Path<SatelliteId>,
    Json(body): Json<RenameBody>,
) -> Result<axum::Json<SatelliteView>, ApiError> {
    let name = validate::name(&body.name, "name").map_err(|e| ApiError::Unprocessable("invalid_name", e))?;
    let (sat, rel, settings) = device_rule::check(&state, &ctx, id, DeviceAction::SelfService).await?;
    let now = state.clock.now_str();
    let new_name = name.clone();
    let taken = state
        .store
        .call(move |c| {
            if store::satellites::find_by_name(c, sat.tenant_id, &new_name)?.is_some_and(|o| o.id != id) {
                return Ok(true);
            }
            store::satellites::rename(c, id, &new_name, &now)?;
            Ok(false)
        })
        .await?;
    if taken {
        return Err(ApiError::Conflict("name_taken", "a satellite of this team already has that name".into()));
    }
    Audit::new("admin.satellite_renamed")
        .actor(&ctx)
        .tenant(sat.tenant_id)
        .target("satellite", id)
        .ip(&ip)
        .details(json!({ "from": sat.name, "to": name }))
        .write(&state)
        .await;
    let sat = state.store.call(move |c| store::satellites::get(c, id)).await?;
    Ok(axum::Json(view(&state, &sat, rel, &settings)))
}

async fn rotate_key(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
    Path(id): Path<SatelliteId>,
) -> Result<axum::Json<Value>, ApiError> {
    let (sat, _, _) = device_rule::check(&state, &ctx, id, DeviceAction::SelfService).await?;
    let key = tokens::random_hex(32);
    let (hash, prefix, now, creator) =
        (tokens::sha256_hex(&key), key[..8].to_owned(), state.clock.now_str(), ctx.user_id());
    state
        .store
        .call(move |c| {
            let tx = c.transaction()?;
            store::api_keys::revoke_for_satellite(&tx, id, &now)?;
            store::api_keys::create(
                &tx,
                &store::api_keys::NewKey {
                    tenant_id: sat.tenant_id,
                    satellite_id: Some(id),
                    created_by: creator,
                    name: "satellite",
                    key_hash: &hash,
                    key_prefix: &prefix,
                    role: Role::Member,
                },
            )?;
            tx.commit()?;
            Ok(())
        })
        .await?;
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
async fn remove(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
    Path(id): Path<SatelliteId>,
) -> Result<StatusCode, ApiError> {
    let (sat, _, _) = device_rule::check(&state, &ctx, id, DeviceAction::Manage).await?;
    let now = state.clock.now_str();
    state
        .store
        .call(move |c| {
            let tx = c.transaction()?;
            store::satellites::soft_delete(&tx, id, &now)?;
            store::api_keys::revoke_for_satellite(&tx, id, &now)?;
            tx.commit()?;
            Ok(())
        })
        .await?;
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
