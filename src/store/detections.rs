//! Detections: written by inference workers with their first-of-day, first-of-season and rarity
//! flags, read by the API.

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::Serialize;

use super::Result;
use chrono::{DateTime, Utc};

use crate::{
    domain::{
        detection_flags::{Flags, RareReason, SpeciesHistory},
        zone,
    },
    ids::{ChunkId, DetectionId, SatelliteId, TenantId},
    time::Timestamp,
};

/// A species found in a chunk, before the flags are worked out.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct NewDetection {
    pub tenant_id: TenantId,
    pub satellite_id: SatelliteId,
    pub satellite_name: String,
    pub audio_chunk_id: ChunkId,
    pub model_id: String,
    pub species_code: String,
    pub scientific_name: String,
    pub common_name: String,
    pub confidence: f32,
    pub detected_at: Timestamp,
    pub start_ms: i64,
    pub end_ms: i64,
    /// From the range model; `None` when the chunk had no location.
    pub expected_here: Option<bool>,
}

/// A stored detection as the API lists it (SPEC 2.9; snake_case like the SPEC's record fields).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stored {
    pub id: DetectionId,
    pub tenant_id: TenantId,
    pub satellite_id: SatelliteId,
    pub satellite_name: String,
    pub audio_chunk_id: ChunkId,
    pub model_id: String,
    pub species_code: String,
    pub scientific_name: String,
    pub common_name: String,
    pub confidence: f64,
    pub detected_at: Timestamp,
    pub start_ms: i64,
    pub end_ms: i64,
    pub is_rare: bool,
    pub rare_reason: Option<String>,
    pub is_first_of_day: bool,
    pub is_first_of_season: bool,
    /// The team's first detection of the species ever ("New for the team"); not a kind of rare.
    pub is_first_for_team: bool,
    pub expected_here: Option<bool>,
    pub verification_status: String,
    pub storage_key: String,
    pub created_at: Timestamp,
    /// When retention deleted the chunk's audio ("audio expired"); `null` while it plays.
    pub audio_expired_at: Option<Timestamp>,
    /// The team's isotonic calibration of `confidence` for this model (SPEC 4.10); `null` until
    /// a curve has been fitted. Filled per page by [`super::detection_list`], never per row.
    pub calibrated_confidence: Option<f64>,
    /// The satellite's effective IANA zone (issue 37): the dashboard writes the detection's time
    /// in it; `null` until the hub has decided the satellite's zone.
    pub time_zone: Option<String>,
}

/// How many columns [`SELECT`] reads; queries that add their own columns after it read them from
/// here on.
pub(super) const COLUMNS: usize = 24;

pub(super) const SELECT: &str =
    "SELECT d.id, (SELECT id FROM tenants WHERE pk = d.tenant_pk), s.id, s.name, c.id, d.model_id,
        l.species_code, l.scientific_name, l.common_name, d.confidence, d.detected_at, d.start_ms, d.end_ms, d.is_rare,
        d.rare_reason, d.is_first_of_day, d.is_first_of_season, d.expected_here, d.verification_status,
        (CASE c.storage_key WHEN '' THEN 'audio/' || (SELECT id FROM tenants WHERE pk = c.tenant_pk) || '/' ||
         (SELECT id FROM satellites WHERE pk = c.satellite_pk) || '/' ||
         date(c.recorded_at / 1000, 'unixepoch') || '/' || (SELECT substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-' ||
         substr(h, 13, 4) || '-' || substr(h, 17, 4) || '-' || substr(h, 21, 12) FROM (SELECT lower(hex(c.id)) AS h)) ||
         '.wav' ELSE c.storage_key END), d.created_at, c.audio_expired_at, d.is_first_for_team, s.time_zone
     FROM detections d JOIN satellites s ON s.pk = d.satellite_pk JOIN audio_chunks c ON c.pk = d.chunk_pk
     JOIN species_labels l ON l.pk = d.species_pk";

pub(super) fn from_row(r: &Row<'_>) -> rusqlite::Result<Stored> {
    Ok(Stored {
        id: r.get(0)?,
        tenant_id: r.get(1)?,
        satellite_id: r.get(2)?,
        satellite_name: r.get(3)?,
        audio_chunk_id: r.get(4)?,
        model_id: r.get(5)?,
        species_code: r.get(6)?,
        scientific_name: r.get(7)?,
        common_name: r.get(8)?,
        confidence: r.get(9)?,
        detected_at: r.get(10)?,
        start_ms: r.get(11)?,
        end_ms: r.get(12)?,
        is_rare: r.get(13)?,
        rare_reason: r.get(14)?,
        is_first_of_day: r.get(15)?,
        is_first_of_season: r.get(16)?,
        expected_here: r.get(17)?,
        verification_status: r.get(18)?,
        storage_key: r.get(19)?,
        created_at: r.get(20)?,
        audio_expired_at: r.get(21)?,
        is_first_for_team: r.get(22)?,
        calibrated_confidence: None,
        time_zone: r.get(23)?,
    })
}

/// Whether the team already has this species in `[from, to)`.
fn any_in(
    conn: &Connection,
    tenant: TenantId,
    species: &str,
    (from, to): (DateTime<Utc>, DateTime<Utc>),
) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "SELECT 1 FROM detections WHERE tenant_pk = (SELECT pk FROM tenants WHERE id = ?1)
             AND species_pk = (SELECT pk FROM species_labels WHERE species_code = ?2) AND detected_at >= ?3 AND detected_at < ?4 LIMIT 1",
        )?
        .query_row(params![tenant, species, Timestamp(from).millis(), Timestamp(to).millis()], |_| Ok(()))
        .optional()?
        .is_some())
}

/// What the team has of `species` before a detection at `at`: ever, that local day and that
/// season, the day and season being those of `tz`, the detecting station's zone.
pub fn history(
    conn: &Connection,
    tenant: TenantId,
    species: &str,
    at: DateTime<Utc>,
    tz: chrono_tz::Tz,
) -> Result<SpeciesHistory> {
    let seen_before = conn
        .prepare_cached("SELECT 1 FROM tenant_species WHERE tenant_id = ?1 AND species_code = ?2")?
        .query_row(params![tenant, species], |_| Ok(()))
        .optional()?
        .is_some();
    Ok(SpeciesHistory {
        seen_before,
        seen_today: any_in(conn, tenant, species, zone::day_bounds_in(at, tz))?,
        seen_this_season: any_in(conn, tenant, species, zone::season_bounds_in(at, tz))?,
    })
}

/// The key of a species' names (migration 0018), added on its first detection. A code stored
/// under other names takes the newest ones, as a model update would rename it.
pub fn label(conn: &Connection, code: &str, scientific: &str, common: &str) -> Result<i64> {
    let known: Option<(i64, String, String)> = conn
        .prepare_cached("SELECT pk, scientific_name, common_name FROM species_labels WHERE species_code = ?1")?
        .query_row([code], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?;
    match known {
        Some((pk, s, c)) if s == scientific && c == common => Ok(pk),
        Some((pk, _, _)) => {
            conn.prepare_cached("UPDATE species_labels SET scientific_name = ?2, common_name = ?3 WHERE pk = ?1")?
                .execute(params![pk, scientific, common])?;
            Ok(pk)
        }
        None => {
            conn.prepare_cached(
                "INSERT INTO species_labels (species_code, scientific_name, common_name) VALUES (?1, ?2, ?3)",
            )?
            .execute(params![code, scientific, common])?;
            Ok(conn.last_insert_rowid())
        }
    }
}

/// Inserts one detection with the flags the use case judged. Returns `None` when the chunk already
/// has this species (a retried job), and counts it in its chunk's recording session.
pub fn insert(conn: &Connection, d: &NewDetection, flags: Flags, now: Timestamp) -> Result<Option<Stored>> {
    let rare_reason = flags.rare.map(RareReason::as_str);
    let id = DetectionId::new();
    let species = label(conn, &d.species_code, &d.scientific_name, &d.common_name)?;
    let inserted = conn.prepare_cached(
        "INSERT OR IGNORE INTO detections (id, tenant_pk, satellite_pk, chunk_pk, model_id, species_pk, confidence,
             detected_at, start_ms, end_ms, is_rare, rare_reason, is_first_of_day, is_first_of_season, expected_here, created_at,
             is_first_for_team)
         VALUES (?1, (SELECT pk FROM tenants WHERE id = ?2), (SELECT pk FROM satellites WHERE id = ?3),
                 (SELECT pk FROM audio_chunks WHERE id = ?4), ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
    )?
    .execute(params![
            id,
            d.tenant_id,
            d.satellite_id,
            d.audio_chunk_id,
            d.model_id,
            species,
            f64::from(d.confidence),
            d.detected_at.millis(),
            d.start_ms,
            d.end_ms,
            rare_reason.is_some(),
            rare_reason,
            flags.is_first_of_day,
            flags.is_first_of_season,
            d.expected_here,
            now.millis(),
            flags.is_first_for_team
        ])?;
    if inserted == 0 {
        return Ok(None);
    }
    super::recording_sessions::add_detection(
        conn,
        d.audio_chunk_id,
        &d.species_code,
        &d.common_name,
        &d.scientific_name,
    )?;
    // Called for every detection a worker writes: both statements stay prepared.
    Ok(Some(conn.prepare_cached(&format!("{SELECT} WHERE d.id = ?1"))?.query_row([id], from_row)?))
}

pub fn get(conn: &Connection, tenant: TenantId, id: DetectionId) -> Result<Stored> {
    Ok(conn.query_row(
        &format!("{SELECT} WHERE d.id = ?1 AND d.tenant_pk = (SELECT pk FROM tenants WHERE id = ?2)"),
        params![id, tenant],
        from_row,
    )?)
}

/// A detection of any team (share links, which carry their own proof).
pub fn get_any(conn: &Connection, id: DetectionId) -> Result<Stored> {
    Ok(conn.query_row(&format!("{SELECT} WHERE d.id = ?1"), [id], from_row)?)
}

pub fn count(conn: &Connection) -> Result<u64> {
    let n: i64 = conn.query_row("SELECT count(*) FROM detections", [], |r| r.get(0))?;
    Ok(n.max(0) as u64)
}

#[cfg(test)]
pub(crate) mod testing {
    //! Satellites, chunks and detections of a team, for tests of what is done to detections.
    use super::*;
    use crate::store::{chunks, satellites};

    pub fn satellite(c: &Connection, tenant: TenantId) -> Result<SatelliteId> {
        satellites::insert(
            c,
            &satellites::NewSatellite {
                tenant_id: tenant,
                name: "s",
                device_id: None,
                kind: crate::domain::DeviceKind::Satellite,
                registered_by: None,
                mqtt_password_hash: "h",
                latitude: None,
                longitude: None,
            },
        )
    }

    /// A 3 s chunk of `sat` recorded (and received) at `at`, with its inference job.
    pub fn chunk(c: &mut Connection, tenant: TenantId, sat: SatelliteId, at: Timestamp) -> Result<ChunkId> {
        let id = ChunkId::new();
        let new = chunks::NewChunk {
            id,
            tenant_id: tenant,
            satellite_id: sat,
            recorded_at: at,
            duration_ms: 3000,
            sample_rate: 48_000,
            latitude: None,
            longitude: None,
            storage_key: format!("audio/{id}.wav"),
            size_bytes: 1,
        };
        chunks::insert_with_job(c, &new, at)?;
        Ok(id)
    }

    /// An American Robin heard at `at` in `chunk`.
    pub fn robin(
        tenant: TenantId,
        sat: SatelliteId,
        chunk: ChunkId,
        at: Timestamp,
        expected: Option<bool>,
    ) -> NewDetection {
        NewDetection {
            tenant_id: tenant,
            satellite_id: sat,
            satellite_name: "s".into(),
            audio_chunk_id: chunk,
            model_id: "m".into(),
            species_code: "turdus_migratorius".into(),
            scientific_name: "Turdus migratorius".into(),
            common_name: "American Robin".into(),
            confidence: 0.9,
            detected_at: at,
            start_ms: 0,
            end_ms: 3000,
            expected_here: expected,
        }
    }

    /// A satellite, a chunk and a detection of `tenant`; returns the detection's id.
    pub fn one(c: &mut Connection, tenant: TenantId) -> Result<DetectionId> {
        let at = Timestamp(DateTime::<Utc>::UNIX_EPOCH + chrono::Duration::days(20_574));
        let sat = satellite(c, tenant)?;
        let chunk = chunk(c, tenant, sat, at)?;
        let flags = crate::domain::detection_flags::judge(Default::default(), None);
        insert(c, &robin(tenant, sat, chunk, at, None), flags, at)?.map(|s| s.id).ok_or(crate::store::Error::NotFound)
    }
}

#[cfg(test)]
mod tests {
    use super::{testing::robin, *};
    use crate::store::{testing, users};

    async fn fixture() -> (crate::store::Store, tempfile::TempDir, TenantId, SatelliteId) {
        let (store, dir) = testing::store().await;
        let ids = store
            .call(|c| {
                let new = users::NewUser {
                    email: "a@b.org".into(),
                    name: "A".into(),
                    password_hash: "x".into(),
                    is_platform_admin: false,
                };
                let created = users::create_with_team(c, &new, "t")?;
                Ok((created.tenant_id, super::testing::satellite(c, created.tenant_id)?))
            })
            .await
            .expect("fixture");
        (store, dir, ids.0, ids.1)
    }

    /// The facts from the store, the rule from `domain`, as the workers' use case composes them.
    fn judged(c: &Connection, d: &NewDetection, now: Timestamp) -> Result<Option<Stored>> {
        let history = history(c, d.tenant_id, &d.species_code, d.detected_at.at(), chrono_tz::UTC)?;
        insert(c, d, crate::domain::detection_flags::judge(history, d.expected_here), now)
    }

    #[tokio::test]
    async fn a_species_is_stored_once_and_a_renamed_label_renames_its_detections() {
        let (store, _dir, tenant, sat) = fixture().await;
        let (names, labels) = store
            .call(move |c| {
                let at: Timestamp = "2026-02-27T06:00:00.000Z".parse().expect("time");
                let mut ids = Vec::new();
                for common in ["American Robin", "American Robin", "Robin"] {
                    let chunk = super::testing::chunk(c, tenant, sat, at)?;
                    let robin = NewDetection { common_name: common.into(), ..robin(tenant, sat, chunk, at, None) };
                    ids.push(judged(c, &robin, at)?.expect("inserted").id);
                }
                let names =
                    ids.iter().map(|id| get(c, tenant, *id).map(|d| d.common_name)).collect::<Result<Vec<_>>>()?;
                let labels: i64 = c.query_row("SELECT count(*) FROM species_labels", [], |r| r.get(0))?;
                Ok((names, labels))
            })
            .await
            .expect("insert");
        assert_eq!(labels, 1, "one row per species code");
        assert_eq!(names, ["Robin", "Robin", "Robin"], "the newest label names every detection of the code");
    }

    #[tokio::test]
    async fn flags_follow_day_season_and_range() {
        let (store, _dir, tenant, sat) = fixture().await;
        let flags = store
            .call(move |c| {
                let mut out = Vec::new();
                for (at, expected) in [
                    ("2026-02-27T06:00:00.000Z", Some(true)), // first ever: new for the team, not rare
                    ("2026-02-27T07:00:00.000Z", Some(true)), // same day
                    ("2026-02-28T07:00:00.000Z", Some(false)), // next day, out of range: rare again
                    ("2026-03-01T07:00:00.000Z", Some(true)), // spring starts
                ] {
                    let at: Timestamp = at.parse().expect("time");
                    let chunk = super::testing::chunk(c, tenant, sat, at)?;
                    let d = judged(c, &robin(tenant, sat, chunk, at, expected), at)?.expect("inserted");
                    assert!(judged(c, &robin(tenant, sat, chunk, at, expected), at)?.is_none(), "once per chunk");
                    out.push((d.is_first_of_day, d.is_first_of_season, d.is_first_for_team, d.is_rare, d.rare_reason));
                }
                Ok(out)
            })
            .await
            .expect("insert");
        assert_eq!(
            flags,
            [
                (true, true, true, false, None),
                (false, false, false, false, None),
                (true, false, false, true, Some("not_expected_here".into())),
                (true, true, false, false, None),
            ]
        );
    }
}
