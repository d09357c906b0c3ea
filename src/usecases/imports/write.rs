//! Writing one batch of imported rows in one transaction: the chunk of each row (its clip's, or
//! one without audio), the detection with the flags the hub would have given it at ingest, the
//! verdict and comments the old station kept, and the de-duplication key. Written through the
//! store only: no alert, webhook, MQTT message, live event or BirdWeather upload.

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;
use rusqlite::Connection;

use super::{
    clips::{self, Measured},
    peer::{PeerRow, RowTime, StationInfo, Verdict},
};
use crate::{
    domain::{DeviceKind, detection_flags, validate},
    ids::{ChunkId, ImportId, SatelliteId, TenantId},
    inference::labels::Label,
    store::{
        self,
        chunks::NewChunk,
        detections::NewDetection,
        import_rows::{ChunkAudio, ImportedRow},
        imports::{Counts, ImportJob},
    },
    time::Timestamp,
};

/// The satellite the rows go into.
#[derive(Debug, Clone)]
pub struct Target {
    pub satellite: SatelliteId,
    pub pk: i64,
    pub name: String,
    /// The model id imported detections carry (`birdnet-pi`, `birdnet-go`): their confidences
    /// come from another program, so the hub's calibration of its own model leaves them out.
    pub model_id: String,
}

/// The chunk a row's clip became, or becomes in this batch.
#[derive(Debug, Clone)]
pub enum ClipChunk {
    /// Copied in this batch; the chunk row is still to be written.
    New { chunk: ChunkId, key: String, size: u64, measured: Option<Measured>, path: String, recorded: Timestamp },
    /// Copied by an earlier batch or run.
    Existing { chunk: ChunkId, undecodable: bool, path: String },
}

/// A row ready to be written.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub row: PeerRow,
    pub label: Label,
    /// The label's index in the model's classes (for the range model).
    pub index: usize,
    pub at: Timestamp,
    pub clip: Option<ClipChunk>,
    pub expected_here: Option<bool>,
}

/// The instant a row means. A local time in a DST gap (which no clock showed) is read as the
/// wall clock an hour later, as the clock itself jumped; a time in the repeated autumn hour is
/// read as its first occurrence (the station stored nothing to tell them apart).
pub fn instant(t: RowTime, tz: Tz) -> Timestamp {
    match t {
        RowTime::Instant(i) => Timestamp(i),
        RowTime::Local(naive) => {
            let local = tz
                .from_local_datetime(&naive)
                .earliest()
                .or_else(|| tz.from_local_datetime(&(naive + chrono::Duration::hours(1))).earliest());
            Timestamp(
                local.map_or_else(|| DateTime::<Utc>::from_naive_utc_and_offset(naive, Utc), |l| l.with_timezone(&Utc)),
            )
        }
    }
}

/// Where the 3 s the detection covers starts in its clip: the middle (BirdNET-Pi pads the 3 s
/// chunk equally on both sides; BirdNET-Go's pre-capture is about as long as the rest).
pub fn clip_offset(m: Option<Measured>) -> i64 {
    m.map_or(0, |m| ((m.duration_ms - 3000) / 2).max(0))
}

pub fn target(c: &mut Connection, tenant: TenantId, satellite: SatelliteId, kind: &str) -> store::Result<Target> {
    store::satellites::ensure_in_tenant(c, tenant, satellite)?;
    let sat = store::satellites::get(c, satellite)?;
    let pk = store::import_rows::satellite_pk(c, satellite)?;
    Ok(Target { satellite, pk, name: sat.name, model_id: kind.to_owned() })
}

/// Creates the satellite a job asked for: named as asked, else after the station; placed where
/// the station was; in the zone the station's clock kept when one was given. It has no device
/// until one registers under its name (docs/commands.md).
pub fn new_satellite(
    c: &mut Connection,
    job: &ImportJob,
    tenant: TenantId,
    station: &StationInfo,
    tz: Tz,
) -> store::Result<SatelliteId> {
    let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let fallback = if job.kind == "birdnet-go" { "BirdNET-Go" } else { "BirdNET-Pi" };
    // The name asked for was checked at the start; the station's own (from its files) is cleaned
    // to one the API would take, else the default. Its position is kept only when valid.
    let base = job.internal.new_name.as_deref().and_then(validate::clean_name);
    let base =
        base.or_else(|| station.name.as_deref().and_then(validate::clean_name)).unwrap_or_else(|| fallback.into());
    let (latitude, longitude) = position(station.latitude, station.longitude);
    let mut name = base.clone();
    let mut n = 2;
    while store::satellites::find_by_name(&tx, tenant, &name)?.is_some() {
        let suffix = format!(" ({n})");
        let room = validate::NAME_MAX.saturating_sub(suffix.chars().count());
        name = format!("{}{suffix}", base.chars().take(room).collect::<String>().trim_end());
        n += 1;
    }
    let id = store::satellites::insert(
        &tx,
        &store::satellites::NewSatellite {
            tenant_id: tenant,
            name: &name,
            device_id: None,
            kind: DeviceKind::Satellite,
            registered_by: job.internal.actor,
            // No password hashes to this: no device can log in until one registers.
            mqtt_password_hash: store::import_rows::NO_DEVICE,
            latitude,
            longitude,
        },
    )?;
    if store::zones::satellite_zone(&tx, &id)? != tz {
        let pk = store::zones::set_override(&tx, &id, Some(tz))?;
        store::zones::refresh_now(&tx, pk)?;
    }
    store::imports::set_satellite(&tx, job.id, id, Timestamp(Utc::now()))?;
    tx.commit()?;
    Ok(id)
}

/// A position from the source, kept only when the API would take it (both or neither).
fn position(latitude: Option<f64>, longitude: Option<f64>) -> (Option<f64>, Option<f64>) {
    match (latitude, longitude) {
        (Some(a), Some(o)) if validate::position(a, o).is_ok() => (Some(a), Some(o)),
        _ => (None, None),
    }
}

/// Which rows the satellite already has.
pub fn seen(c: &mut Connection, pk: i64, rows: &[Prepared]) -> store::Result<Vec<bool>> {
    rows.iter().map(|p| store::import_rows::row_seen(c, pk, &p.row.key)).collect()
}

/// Writes one batch; with `report`, the job's counters and cursor too.
pub fn batch(
    c: &mut Connection,
    (import, tenant, report): (ImportId, TenantId, Option<(&Counts, i64)>),
    t: &Target,
    rows: &[Prepared],
) -> store::Result<()> {
    let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let now = Timestamp(Utc::now());
    for p in rows {
        if store::import_rows::row_seen(&tx, t.pk, &p.row.key)? {
            continue;
        }
        let (chunk, state) = chunk_of(&tx, tenant, t, p, now)?;
        let recorded = store::import_rows::chunk_recorded_at(&tx, chunk)?;
        let start_ms = recorded.map_or(0, |r| r.millis_until(p.at).max(0));
        let d = NewDetection {
            tenant_id: tenant,
            satellite_id: t.satellite,
            satellite_name: t.name.clone(),
            audio_chunk_id: chunk,
            model_id: t.model_id.clone(),
            species_code: p.label.code.clone(),
            scientific_name: p.label.scientific.clone(),
            common_name: p.label.common.clone(),
            confidence: p.row.confidence as f32,
            detected_at: p.at,
            start_ms,
            end_ms: start_ms + 3000,
            expected_here: p.expected_here,
        };
        let tz = store::zones::satellite_zone(&tx, &t.satellite)?;
        let history = store::detections::history(&tx, tenant, &d.species_code, p.at.at(), tz)?;
        let stored = store::detections::insert(&tx, &d, detection_flags::judge(history, d.expected_here), now)?;
        let detection = stored.map(|s| s.id);
        if let Some(id) = detection {
            // A note locked on BirdNET-Go (kept from its clean-up) is kept here as a verified
            // detection is: confirmed, which audio retention deletes last (docs/imports.md).
            let status = match (p.row.verdict, p.row.reidentified || p.row.locked) {
                (Some(Verdict::FalsePositive), _) => Some("rejected"),
                (Some(Verdict::Correct), _) | (None, true) => Some("confirmed"),
                (None, false) => None,
            };
            if let Some(s) = status {
                store::import_rows::set_status(&tx, id, s)?;
            }
            for comment in &p.row.comments {
                let at = comment.at.map_or(now, Timestamp);
                store::import_rows::add_comment(&tx, tenant, id, (&comment.text, &t.model_id), at)?;
            }
        }
        store::import_rows::insert_row(
            &tx,
            &ImportedRow {
                satellite_pk: t.pk,
                key: &p.row.key,
                detection,
                import,
                threshold: p.row.threshold,
                sensitivity: p.row.sensitivity,
                clip_state: state,
            },
        )?;
    }
    if let Some((counts, cursor)) = report {
        store::imports::progress(&tx, import, counts, cursor, now)?;
    }
    tx.commit()?;
    Ok(())
}

/// The chunk of a row, written if new, and the state of its clip. Rows sharing a clip share its
/// chunk, except a second row of the same species (the hub keeps one detection per chunk and
/// species): it gets a chunk of its own over the same audio object.
fn chunk_of(
    tx: &Connection,
    tenant: TenantId,
    t: &Target,
    p: &Prepared,
    now: Timestamp,
) -> store::Result<(ChunkId, &'static str)> {
    let (chunk, path, undecodable) = match &p.clip {
        None => {
            let chunk = clips::chunk_id(t.satellite, &format!("row:{}", p.row.key));
            if !store::chunks::exists(tx, chunk)? {
                let new = NewChunk {
                    id: chunk,
                    tenant_id: tenant,
                    satellite_id: t.satellite,
                    recorded_at: p.at,
                    duration_ms: 3000,
                    sample_rate: 48_000,
                    latitude: position(p.row.latitude, p.row.longitude).0,
                    longitude: position(p.row.latitude, p.row.longitude).1,
                    storage_key: clips::no_audio_key(tenant, t.satellite, chunk),
                    size_bytes: 0,
                };
                store::import_rows::insert_chunk(tx, &new, ChunkAudio::None, now)?;
            }
            let state = if p.row.clip.is_some() { "missing" } else { "none" };
            return Ok((chunk, state));
        }
        Some(ClipChunk::New { chunk, key, size, measured, path, recorded }) => {
            if !store::chunks::exists(tx, *chunk)? {
                let new = NewChunk {
                    id: *chunk,
                    tenant_id: tenant,
                    satellite_id: t.satellite,
                    recorded_at: *recorded,
                    duration_ms: measured.map_or(0, |m| m.duration_ms),
                    sample_rate: measured.map_or(0, |m| m.sample_rate),
                    latitude: position(p.row.latitude, p.row.longitude).0,
                    longitude: position(p.row.latitude, p.row.longitude).1,
                    storage_key: key.clone(),
                    size_bytes: *size as i64,
                };
                store::import_rows::insert_chunk(tx, &new, ChunkAudio::Clip, now)?;
            }
            store::import_rows::insert_clip(tx, t.pk, path, *chunk, measured.is_none())?;
            (*chunk, path, measured.is_none())
        }
        Some(ClipChunk::Existing { chunk, undecodable, path }) => (*chunk, path, *undecodable),
    };
    let state = if undecodable { "undecodable" } else { "copied" };
    if !store::import_rows::chunk_has_species(tx, chunk, &p.label.code)? {
        return Ok((chunk, state));
    }
    let twin = clips::chunk_id(t.satellite, &format!("{path}#{}", p.row.key));
    if !store::chunks::exists(tx, twin)? {
        store::import_rows::copy_chunk(tx, chunk, twin)?;
    }
    Ok((twin, state))
}

/// After an import, the flags of the team's detections of the species it touched, judged again
/// in time order: the older history now precedes detections that were first before.
pub fn refresh_flags(c: &mut Connection, tenant: TenantId, species: &[String]) -> store::Result<()> {
    store::first_flags::recompute_species(c, tenant, species).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local(s: &str) -> RowTime {
        RowTime::Local(chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S").expect("time"))
    }

    #[test]
    fn wall_clock_times_become_instants_across_dst() {
        let ny = chrono_tz::America::New_York;
        for (wall, utc) in [
            ("2023-05-01 06:12:03", "2023-05-01T10:12:03.000Z"), // EDT
            ("2023-01-15 06:00:00", "2023-01-15T11:00:00.000Z"), // EST
            ("2023-03-12 02:30:00", "2023-03-12T07:30:00.000Z"), // the gap: read as 03:30 EDT
            ("2023-11-05 01:30:00", "2023-11-05T05:30:00.000Z"), // the repeated hour: its first (EDT)
        ] {
            assert_eq!(instant(local(wall), ny).to_string(), utc, "{wall}");
        }
    }

    #[test]
    fn the_detection_sits_in_the_middle_of_its_clip() {
        assert_eq!(clip_offset(Some(Measured { duration_ms: 6000, sample_rate: 48_000 })), 1500);
        assert_eq!(clip_offset(Some(Measured { duration_ms: 2000, sample_rate: 48_000 })), 0);
        assert_eq!(clip_offset(None), 0);
    }
}
