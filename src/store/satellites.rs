//! Satellites: registration, credentials, heartbeats, overrides, soft deletion, and what happens
//! to a person's devices when they leave a team.

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::{Error, Result};
use crate::{
    domain::DeviceKind,
    ids::{SatelliteId, TenantId, UserId},
    time::Timestamp,
};

/// A password hash no password matches: the device's broker login is dropped.
pub const REVOKED_PASSWORD: &str = "!revoked";

#[derive(Debug, Clone, PartialEq)]
pub struct Satellite {
    pub id: SatelliteId,
    pub tenant_id: TenantId,
    pub name: String,
    pub device_id: Option<String>,
    pub kind: DeviceKind,
    pub registered_by: Option<UserId>,
    pub registered_by_name: Option<String>,
    pub mqtt_password_hash: String,
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
    pub last_seen_at: Option<Timestamp>,
    pub heartbeat_state: Option<String>,
    pub noise_floor_rms: Option<f64>,
    pub version: Option<String>,
    pub stream: Option<String>,
    pub update_status: Option<String>,
    pub target_version: Option<String>,
    pub config_locked: bool,
    pub overrides_json: String,
    pub recording_profile_json: Option<String>,
    pub uptime_seconds: Option<i64>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// The last heartbeat's `filterStats` and `outboxStats` as the device sent them (JSON).
    pub filter_stats_json: Option<String>,
    pub outbox_stats_json: Option<String>,
    /// Why the last update failed, as the satellite reported it (its command's exit status and
    /// last lines); cleared by the next update request and by reaching the target version.
    pub update_error: Option<String>,
    /// The satellite's clock minus the hub's at its last timestamped heartbeat (ms), and when
    /// that was measured (migration 0024).
    pub clock_offset_ms: Option<i64>,
    pub clock_checked_at: Option<Timestamp>,
    /// Since when the monitor has counted the clock as wrong (one alert per episode).
    pub clock_wrong_since: Option<Timestamp>,
    /// How many of its chunks the hub re-stamped because their stamp was implausible.
    pub clock_corrected_chunks: i64,
    /// The effective IANA zone (`store::zones`); `None` until the zone mover decides it.
    pub time_zone: Option<String>,
    /// Where `time_zone` comes from (`override`, `position`, `team`).
    pub zone_source: Option<String>,
    /// The zone chosen on the satellite's page, if any.
    pub zone_override: Option<String>,
}

const SELECT: &str =
    "SELECT s.id, s.tenant_id, s.name, s.device_id, s.kind, s.registered_by, u.name, s.mqtt_password_hash,
        s.latitude, s.longitude, s.last_seen_at, s.heartbeat_state, s.noise_floor_rms, s.version, s.stream,
        s.update_status, s.target_version, s.config_locked, s.overrides_json, s.recording_profile_json,
        s.uptime_seconds, s.created_at, s.updated_at, s.filter_stats_json, s.outbox_stats_json, s.update_error,
        s.clock_offset_ms, s.clock_checked_at, s.clock_wrong_since, s.clock_corrected_chunks,
        s.time_zone, s.zone_source, s.zone_override
     FROM satellites s LEFT JOIN users u ON u.id = s.registered_by";

fn from_row(r: &Row<'_>) -> rusqlite::Result<Satellite> {
    Ok(Satellite {
        id: r.get(0)?,
        tenant_id: r.get(1)?,
        name: r.get(2)?,
        device_id: r.get(3)?,
        kind: r.get(4)?,
        registered_by: r.get(5)?,
        registered_by_name: r.get(6)?,
        mqtt_password_hash: r.get(7)?,
        latitude: r.get(8)?,
        longitude: r.get(9)?,
        last_seen_at: r.get(10)?,
        heartbeat_state: r.get(11)?,
        noise_floor_rms: r.get(12)?,
        version: r.get(13)?,
        stream: r.get(14)?,
        update_status: r.get(15)?,
        target_version: r.get(16)?,
        config_locked: r.get(17)?,
        overrides_json: r.get(18)?,
        recording_profile_json: r.get(19)?,
        uptime_seconds: r.get(20)?,
        created_at: r.get(21)?,
        updated_at: r.get(22)?,
        filter_stats_json: r.get(23)?,
        outbox_stats_json: r.get(24)?,
        update_error: r.get(25)?,
        clock_offset_ms: r.get(26)?,
        clock_checked_at: r.get(27)?,
        clock_wrong_since: r.get(28)?,
        clock_corrected_chunks: r.get(29)?,
        time_zone: r.get(30)?,
        zone_source: r.get(31)?,
        zone_override: r.get(32)?,
    })
}

pub struct NewSatellite<'a> {
    pub tenant_id: TenantId,
    pub name: &'a str,
    pub device_id: Option<&'a str>,
    pub kind: DeviceKind,
    pub registered_by: Option<UserId>,
    pub mqtt_password_hash: &'a str,
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
}

pub fn insert(conn: &Connection, n: &NewSatellite<'_>) -> Result<SatelliteId> {
    let id = SatelliteId::new();
    conn.execute(
        "INSERT INTO satellites (id, tenant_id, name, device_id, kind, registered_by, mqtt_password_hash, latitude, longitude)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![id, n.tenant_id, n.name, n.device_id, n.kind, n.registered_by, n.mqtt_password_hash, n.latitude, n.longitude],
    )?;
    // Its zone: from its position, else its team's (a database older than migration 0024, in
    // the upgrade tests, has no zones yet: the mover decides them after it).
    if super::zones::present(conn)? {
        let pk: i64 = conn.query_row("SELECT pk FROM satellites WHERE id = ?1", [id], |r| r.get(0))?;
        super::zones::refresh_now(conn, pk)?;
    }
    Ok(id)
}

/// A live (not deleted) satellite.
pub fn get(conn: &Connection, id: SatelliteId) -> Result<Satellite> {
    Ok(conn.query_row(&format!("{SELECT} WHERE s.id = ?1 AND s.deleted_at IS NULL"), [id], from_row)?)
}

pub fn find_by_device(conn: &Connection, tenant: TenantId, device_id: &str) -> Result<Option<Satellite>> {
    Ok(conn
        .query_row(
            &format!("{SELECT} WHERE s.tenant_id = ?1 AND s.device_id = ?2 AND s.deleted_at IS NULL"),
            params![tenant, device_id],
            from_row,
        )
        .optional()?)
}

pub fn find_by_name(conn: &Connection, tenant: TenantId, name: &str) -> Result<Option<Satellite>> {
    Ok(conn
        .query_row(
            &format!(
                "{SELECT} WHERE s.tenant_id = ?1 AND s.name = ?2 AND s.deleted_at IS NULL ORDER BY s.created_at LIMIT 1"
            ),
            params![tenant, name],
            from_row,
        )
        .optional()?)
}

/// `sortBy` of the satellite list: by name (ascending by default), last seen or created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortBy {
    #[default]
    Name,
    LastSeen,
    Created,
}

impl crate::domain::sort::SortField for SortBy {
    const FIELDS: &'static [(&'static str, Self)] =
        &[("name", SortBy::Name), ("lastSeen", SortBy::LastSeen), ("created", SortBy::Created)];
    fn descending_by_default(self) -> bool {
        self != SortBy::Name
    }
}

/// Filters and order of the satellite list.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    pub search: Option<String>,
    pub kind: Option<DeviceKind>,
    /// Only those seen after (online) or not after (offline) this time.
    pub seen_after: Option<(Timestamp, bool)>,
    pub sort: SortBy,
    pub descending: bool,
    pub limit: u32,
    pub offset: u32,
}

pub fn list(conn: &Connection, tenant: TenantId, f: &ListFilter) -> Result<(Vec<Satellite>, u64)> {
    let search = f.search.as_ref().map(|s| format!("%{}%", s.replace(['%', '_'], "")));
    let (since, online) = match &f.seen_after {
        Some((t, online)) => (Some(*t), Some(*online)),
        None => (None, None),
    };
    // Online: heard from recently, and not last saying it stopped (a clean stop, docs/mqtt.md).
    // Offline: a device that is not; an imported station's history is neither (issue 51, 13).
    let stopped = crate::mqtt::protocol::STOPPED;
    let history = super::import_rows::NO_DEVICE;
    let filter = format!(
        "s.tenant_id = ?1 AND s.deleted_at IS NULL AND (?2 IS NULL OR s.name LIKE ?2) AND (?3 IS NULL OR s.kind = ?3)
         AND (?5 IS NULL OR (?5 = 1 AND s.last_seen_at > ?4 AND coalesce(s.heartbeat_state, '') <> '{stopped}')
              OR (?5 = 0 AND s.mqtt_password_hash <> '{history}'
                  AND (s.last_seen_at IS NULL OR s.last_seen_at <= ?4 OR s.heartbeat_state = '{stopped}')))"
    );
    let total: i64 = conn.query_row(
        &format!("SELECT count(*) FROM satellites s WHERE {filter}"),
        params![tenant, search, f.kind, since, online],
        |r| r.get(0),
    )?;
    let dir = if f.descending { "DESC" } else { "ASC" };
    let sort = match f.sort {
        SortBy::LastSeen => "s.last_seen_at",
        SortBy::Created => "s.created_at",
        SortBy::Name => "s.name COLLATE NOCASE",
    };
    let mut stmt = conn.prepare(&format!("{SELECT} WHERE {filter} ORDER BY {sort} {dir}, s.id LIMIT ?6 OFFSET ?7"))?;
    let rows = stmt
        .query_map(params![tenant, search, f.kind, since, online, f.limit, f.offset], from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok((rows, total.max(0) as u64))
}

/// `NotFound` unless `id` is one of `tenant`'s live satellites (before writes keyed by satellite alone).
pub fn ensure_in_tenant(conn: &Connection, tenant: TenantId, id: SatelliteId) -> Result<()> {
    conn.prepare_cached("SELECT 1 FROM satellites WHERE id = ?1 AND tenant_id = ?2 AND deleted_at IS NULL")?
        .query_row(params![id, tenant], |_| Ok(()))?;
    Ok(())
}

/// One column of one of `tenant`'s satellites; `NotFound` when the id is not the team's (or deleted).
fn touch(
    conn: &Connection,
    sql: &str,
    tenant: TenantId,
    id: SatelliteId,
    value: &dyn rusqlite::ToSql,
    now: Timestamp,
) -> Result<()> {
    let n = conn.execute(sql, params![id, value, now, tenant])?;
    if n == 0 { Err(Error::NotFound) } else { Ok(()) }
}

pub fn rename(conn: &Connection, tenant: TenantId, id: SatelliteId, name: &str, now: Timestamp) -> Result<()> {
    touch(
        conn,
        "UPDATE satellites SET name = ?2, updated_at = ?3 WHERE id = ?1 AND tenant_id = ?4 AND deleted_at IS NULL",
        tenant,
        id,
        &name,
        now,
    )
}

pub fn set_password_hash(
    conn: &Connection,
    tenant: TenantId,
    id: SatelliteId,
    hash: &str,
    now: Timestamp,
) -> Result<()> {
    touch(
        conn,
        "UPDATE satellites SET mqtt_password_hash = ?2, updated_at = ?3
         WHERE id = ?1 AND tenant_id = ?4 AND deleted_at IS NULL",
        tenant,
        id,
        &hash,
        now,
    )
}

pub fn set_registered_by(
    conn: &Connection,
    tenant: TenantId,
    id: SatelliteId,
    user: Option<UserId>,
    now: Timestamp,
) -> Result<()> {
    touch(
        conn,
        "UPDATE satellites SET registered_by = ?2, updated_at = ?3 WHERE id = ?1 AND tenant_id = ?4",
        tenant,
        id,
        &user,
        now,
    )
}

pub fn set_overrides(conn: &Connection, tenant: TenantId, id: SatelliteId, json: &str, now: Timestamp) -> Result<()> {
    touch(
        conn,
        "UPDATE satellites SET overrides_json = ?2, updated_at = ?3 WHERE id = ?1 AND tenant_id = ?4 AND deleted_at IS NULL",
        tenant,
        id,
        &json,
        now,
    )
}

pub fn set_config_locked(
    conn: &Connection,
    tenant: TenantId,
    id: SatelliteId,
    locked: bool,
    now: Timestamp,
) -> Result<()> {
    touch(
        conn,
        "UPDATE satellites SET config_locked = ?2, updated_at = ?3 WHERE id = ?1 AND tenant_id = ?4 AND deleted_at IS NULL",
        tenant,
        id,
        &locked,
        now,
    )
}

pub fn set_profile(conn: &Connection, tenant: TenantId, id: SatelliteId, json: &str, now: Timestamp) -> Result<()> {
    touch(
        conn,
        "UPDATE satellites SET recording_profile_json = ?2, updated_at = ?3
         WHERE id = ?1 AND tenant_id = ?4 AND deleted_at IS NULL",
        tenant,
        id,
        &json,
        now,
    )
}

/// Stores a satellite's position. Returns whether it moved far enough for its zone to be decided
/// again (done here), so the caller wakes the zone mover only then, not for every chunk.
pub fn set_location(conn: &Connection, tenant: TenantId, id: SatelliteId, lat: f64, lon: f64) -> Result<bool> {
    seen_or_moved(conn, tenant, id, None, Some((lat, lon)))
}

/// Soft deletion: the row stays for its history (chunks, detections), the device can no longer log in.
pub fn soft_delete(conn: &Connection, tenant: TenantId, id: SatelliteId, now: Timestamp) -> Result<()> {
    let n = conn.execute(
        "UPDATE satellites SET deleted_at = ?2, mqtt_password_hash = ?3, device_id = NULL, updated_at = ?2
         WHERE id = ?1 AND tenant_id = ?4 AND deleted_at IS NULL",
        params![id, now, REVOKED_PASSWORD, tenant],
    )?;
    if n == 0 { Err(Error::NotFound) } else { Ok(()) }
}

/// What a heartbeat reports (SPEC 2.3).
#[derive(Debug, Clone, Default)]
pub struct Heartbeat {
    pub state: String,
    pub uptime_seconds: Option<i64>,
    pub noise_floor_rms: Option<f64>,
    pub version: Option<String>,
    pub stream: Option<String>,
    pub filter_stats_json: Option<String>,
    pub outbox_stats_json: Option<String>,
    /// The satellite reports that its update to this version failed, and why.
    pub update_failed: Option<(String, String)>,
}

/// Records a heartbeat: last seen, state, version. Once the target version runs, `update_status`,
/// `target_version` and `update_error` are cleared. A pending update is marked `failed` when the
/// satellite reports that its update to the target failed (the reason is kept in `update_error`),
/// or when a heartbeat with another version comes from a satellite whose update was asked for at
/// or before `update_deadline`.
pub fn record_heartbeat(
    conn: &Connection,
    tenant: TenantId,
    id: SatelliteId,
    hb: &Heartbeat,
    now: Timestamp,
    update_deadline: Timestamp,
) -> Result<()> {
    let (failed_target, failed_why) = hb.update_failed.clone().unzip();
    let n = conn.execute(
        "UPDATE satellites SET last_seen_at = ?2, last_heartbeat_at = ?2, heartbeat_state = ?3, uptime_seconds = ?4,
             noise_floor_rms = coalesce(?5, noise_floor_rms), version = coalesce(?6, version), stream = coalesce(?7, stream),
             filter_stats_json = coalesce(?8, filter_stats_json), outbox_stats_json = coalesce(?9, outbox_stats_json),
             update_error = CASE
                 WHEN ?6 IS NOT NULL AND ?6 = target_version THEN NULL
                 WHEN ?12 IS NOT NULL AND ?12 = target_version AND update_status IN ('updating', 'failed') THEN ?13
                 ELSE update_error END,
             update_status = CASE
                 WHEN ?6 IS NOT NULL AND ?6 = target_version THEN NULL
                 WHEN ?12 IS NOT NULL AND ?12 = target_version AND update_status = 'updating' THEN 'failed'
                 WHEN ?6 IS NOT NULL AND update_status = 'updating' AND update_requested_at IS NOT NULL
                      AND update_requested_at <= ?11 THEN 'failed'
                 ELSE update_status END,
             target_version = CASE WHEN ?6 IS NOT NULL AND ?6 = target_version THEN NULL ELSE target_version END
         WHERE id = ?1 AND tenant_id = ?10 AND deleted_at IS NULL",
        params![
            id,
            now,
            hb.state,
            hb.uptime_seconds,
            hb.noise_floor_rms,
            hb.version,
            hb.stream,
            hb.filter_stats_json,
            hb.outbox_stats_json,
            tenant,
            update_deadline,
            failed_target,
            failed_why
        ],
    )?;
    if n == 0 { Err(Error::NotFound) } else { Ok(()) }
}

/// What a stored chunk tells of its satellite, as one statement (ingest runs it per chunk):
/// [`seen`], and with `at` (the chunk's position) [`set_location`]. Returns whether the
/// satellite moved far enough for its zone to be decided again (done here).
pub fn chunk_arrived(
    conn: &Connection,
    tenant: TenantId,
    id: SatelliteId,
    now: Timestamp,
    at: Option<(f64, f64)>,
) -> Result<bool> {
    seen_or_moved(conn, tenant, id, Some(now), at)
}

/// Marks the satellite seen at `seen` and stores its position `at`, each when given, in one
/// statement. A move of more than about 5 km decides its zone again (the CASE reads the position
/// as it was), unless the zone is an override. Without a position only `last_seen_at` changes,
/// and a satellite that is gone is then no error.
fn seen_or_moved(
    conn: &Connection,
    tenant: TenantId,
    id: SatelliteId,
    seen: Option<Timestamp>,
    at: Option<(f64, f64)>,
) -> Result<bool> {
    let row: Option<(i64, bool)> = conn
        .prepare_cached(
            "UPDATE satellites SET last_seen_at = coalesce(?2, last_seen_at),
                 latitude = coalesce(?4, latitude), longitude = coalesce(?5, longitude),
                 zone_source = CASE WHEN ?4 IS NULL OR ?5 IS NULL OR zone_source = 'override' THEN zone_source
                                    WHEN latitude IS NULL OR longitude IS NULL OR abs(latitude - ?4) > 0.05 OR abs(longitude - ?5) > 0.05
                                    THEN NULL ELSE zone_source END
             WHERE id = ?1 AND tenant_id = ?3 AND deleted_at IS NULL
             RETURNING pk, zone_source IS NULL",
        )?
        .query_row(params![id, seen, tenant, at.map(|a| a.0), at.map(|a| a.1)], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    match (row, at) {
        (None, Some(_)) => Err(Error::NotFound),
        (Some((pk, true)), Some(_)) => {
            super::zones::refresh_now(conn, pk)?;
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// Any sign of life (audio, telemetry) refreshes `last_seen_at` of one of `tenant`'s satellites.
pub fn seen(conn: &Connection, tenant: TenantId, id: SatelliteId, now: Timestamp) -> Result<()> {
    // Cached: ingest runs it for every chunk.
    conn.prepare_cached(
        "UPDATE satellites SET last_seen_at = ?2 WHERE id = ?1 AND tenant_id = ?3 AND deleted_at IS NULL",
    )?
    .execute(params![id, now, tenant])?;
    Ok(())
}

/// The tenant and password hash of a live satellite, for the broker's login check.
pub fn credential(conn: &Connection, id: SatelliteId) -> Result<Option<(TenantId, String)>> {
    Ok(conn
        .query_row(
            "SELECT tenant_id, mqtt_password_hash FROM satellites WHERE id = ?1 AND deleted_at IS NULL",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?)
}

/// Every live satellite whose MQTT password still works, with its name, in every team (for the
/// logins of an external broker).
pub fn with_login(conn: &Connection) -> Result<Vec<(SatelliteId, String)>> {
    let mut stmt = conn.prepare(
        "SELECT id, name FROM satellites WHERE deleted_at IS NULL AND mqtt_password_hash != ?1 ORDER BY name",
    )?;
    Ok(stmt.query_map([REVOKED_PASSWORD], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<rusqlite::Result<_>>()?)
}

/// Every live satellite of a team (for config pushes).
pub fn ids_of_tenant(conn: &Connection, tenant: TenantId) -> Result<Vec<SatelliteId>> {
    let mut stmt = conn.prepare("SELECT id FROM satellites WHERE tenant_id = ?1 AND deleted_at IS NULL")?;
    Ok(stmt.query_map([tenant], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?)
}

/// The devices `user` registered in `tenant` become team-owned. Unless `keep`, they are also
/// disconnected: their API keys expire and their broker password stops working. Returns the ids.
pub fn release_registrant_devices(
    conn: &Connection,
    tenant: TenantId,
    user: UserId,
    keep: bool,
    now: Timestamp,
) -> Result<Vec<SatelliteId>> {
    let mut stmt = conn.prepare("SELECT id FROM satellites WHERE tenant_id = ?1 AND registered_by = ?2")?;
    let ids: Vec<SatelliteId> =
        stmt.query_map(params![tenant, user], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
    for id in &ids {
        conn.execute("UPDATE satellites SET registered_by = NULL, updated_at = ?2 WHERE id = ?1", params![id, now])?;
        if !keep {
            super::api_keys::revoke_for_satellite(conn, *id, now)?;
            conn.execute("UPDATE satellites SET mqtt_password_hash = ?2 WHERE id = ?1", params![id, REVOKED_PASSWORD])?;
        }
    }
    Ok(ids)
}

/// The distinct versions that satellites of `stream` (`satellite`, `mobile`) last reported in a
/// heartbeat, across every team, for `GET /system/versions`.
pub fn reported_versions(conn: &Connection, stream: &str) -> Result<Vec<String>> {
    let mut st = conn.prepare(
        "SELECT DISTINCT version FROM satellites WHERE stream = ?1 AND version IS NOT NULL AND deleted_at IS NULL",
    )?;
    let rows = st.query_map([stream], |r| r.get(0))?.collect::<rusqlite::Result<Vec<String>>>()?;
    Ok(rows)
}

/// Marks a remote update as asked for: `update_status = 'updating'`, the target and the time.
pub fn request_update(
    conn: &Connection,
    tenant: TenantId,
    id: SatelliteId,
    target_version: &str,
    now: Timestamp,
) -> Result<()> {
    let n = conn.execute(
        "UPDATE satellites SET update_status = 'updating', target_version = ?3, update_requested_at = ?4, updated_at = ?4,
             update_error = NULL
         WHERE id = ?1 AND tenant_id = ?2 AND deleted_at IS NULL",
        params![id, tenant, target_version, now],
    )?;
    if n == 0 { Err(Error::NotFound) } else { Ok(()) }
}
