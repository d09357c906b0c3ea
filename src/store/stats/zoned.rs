//! The rollups as aggregates of the detections, chunks and votes in their stations' local time
//! (migration 0024): what `birdhub admin rebuild-stats` fills, what the drift check compares
//! with, and the batches that count a satellite's rows over from one zone to another.
//!
//! A row's local time is its UTC instant plus the offset its zone had then, looked up in
//! `zone_offsets`; the triggers use the same lookup, so both give the same days and hours.

use rusqlite::Connection;

use super::{super::Result, rollups::threshold_columns};

/// Local Unix seconds of the millisecond instant `t` in zone `zone` (both SQL expressions).
fn local(zone: &str, t: &str) -> String {
    format!(
        "({t} / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = {zone} AND o.start_ms <= {t}
                                  ORDER BY o.start_ms DESC LIMIT 1), 0))"
    )
}

/// Milliseconds of a stored RFC 3339 text time.
fn millis(text: &str) -> String {
    format!("CAST(round((julianday({text}) - 2440587.5) * 86400000) AS INTEGER)")
}

/// Which rows an aggregate reads: all of them in their satellites' zones, all of them in the
/// zone the triggers count them in now (a satellite's rows that a zone move has not reached
/// yet are still in its old zone), or one satellite's rows with pk in `(:lo, :hi]` in the zone
/// `:zone`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rows {
    All,
    AsCounted,
    Batch,
}

impl Rows {
    /// The zone of a detection (`det`) or chunk row `x` of satellite `s`.
    fn zone(self, det: bool) -> &'static str {
        match (self, det) {
            (Self::All, _) => "s.zone_pk",
            (Self::AsCounted, true) => {
                "(CASE WHEN s.zone_move_from IS NOT NULL AND x.pk > s.zone_move_det_done AND x.pk <= s.zone_move_det_last
                   THEN s.zone_move_from ELSE s.zone_pk END)"
            }
            (Self::AsCounted, false) => {
                "(CASE WHEN s.zone_move_from IS NOT NULL AND x.pk > s.zone_move_chunk_done AND x.pk <= s.zone_move_chunk_last
                   THEN s.zone_move_from ELSE s.zone_pk END)"
            }
            (Self::Batch, _) => ":zone",
        }
    }

    fn filter(self, x: &str) -> String {
        match self {
            Self::All | Self::AsCounted => "1".to_owned(),
            // `+` keeps SQLite on the primary key's range, not the satellite's time index.
            Self::Batch => format!("{x}.pk > :lo AND {x}.pk <= :hi AND +{x}.satellite_pk = :sat"),
        }
    }
}

/// How a rollup names a row's team, satellite and species.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keys {
    /// By their UUIDs and the species code, as migrations 0009 to 0028 made the tables (only
    /// 0028's own fill still writes them so).
    Text,
    /// By their integer keys (`tenant_pk`, `satellite_pk`, `species_pk`): every rollup since
    /// migration 0032 but `stats_votes`, which keeps the team's UUID.
    Pk,
}

/// The detections as the aggregates read them, with `lt`, their local Unix seconds.
fn detections(rows: Rows) -> String {
    format!(
        "SELECT x.pk, x.id, t.id AS tenant_id, s.id AS satellite_id, l.species_code, x.tenant_pk, x.satellite_pk,
                x.species_pk, x.confidence, x.verification_status, {zone} AS zone_pk, {lt} AS lt
         FROM detections x JOIN tenants t ON t.pk = x.tenant_pk JOIN satellites s ON s.pk = x.satellite_pk
              JOIN species_labels l ON l.pk = x.species_pk
         WHERE {filter}",
        zone = rows.zone(true),
        lt = local(rows.zone(true), "x.detected_at"),
        filter = rows.filter("x"),
    )
}

const BAND: &str = "CAST(d.confidence * 20 AS INTEGER)";
/// 1 for a detection not voted down.
const KEPT: &str = "(d.verification_status <> 'rejected')";
const DAY: &str = "date(d.lt, 'unixepoch')";
const HOUR: &str = "CAST(strftime('%H', d.lt, 'unixepoch') AS INTEGER)";
const MONTH: &str = "strftime('%Y-%m', d.lt, 'unixepoch')";
/// The third of the month (`YYYY-MM-1`: days 1 to 10, `-2`: 11 to 20, `-3`: 21 to the end).
const DEKAD: &str =
    "strftime('%Y-%m-', d.lt, 'unixepoch') || min(3, (CAST(strftime('%d', d.lt, 'unixepoch') AS INTEGER) + 9) / 10)";

/// A rollup: its table, its key columns, and the SELECT of its rows (keys named as the table's
/// columns, then the counts, multiplied by `:sign` for batches).
pub struct Aggregate {
    pub table: &'static str,
    pub keys: Vec<&'static str>,
    pub select: String,
}

/// Every rollup's aggregate, its keys named as `keys` says.
pub fn aggregates(rows: Rows, keys: Keys) -> Vec<Aggregate> {
    let sign = if rows == Rows::Batch { ":sign * " } else { "" };
    let dets = format!("WITH d AS MATERIALIZED ({})", detections(rows));
    let thresholds: Vec<String> = threshold_columns().map(|(b, _)| format!("{sign}sum({BAND} >= {b})")).collect();
    let named = |keys: &[(&'static str, &str)]| {
        keys.iter().map(|(name, expr)| format!("{expr} AS {name}")).collect::<Vec<_>>().join(", ")
    };
    let group = |n: usize| (1..=n).map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
    let aggregate = |table: &'static str, keys: &[(&'static str, &str)], select: String| Aggregate {
        table,
        keys: keys.iter().map(|k| k.0).collect(),
        select,
    };
    // Counts per key with the threshold columns, then `extra` columns, over the rows `filter` keeps.
    let grouped = |table: &'static str, keys: &[(&'static str, &str)], extra: &str, filter: &str| {
        let select = format!(
            "{dets} SELECT {}, {sign}count(*), {}{extra} FROM d WHERE {filter} GROUP BY {}",
            named(keys),
            thresholds.join(", "),
            group(keys.len())
        );
        aggregate(table, keys, select)
    };
    let counting = |table: &'static str, keys: &[(&'static str, &str)]| grouped(table, keys, "", "1");
    // Migration 0028's tables also count the detections not voted down (`kn`, `k05`..`k100`).
    let kept: String = std::iter::once(format!("{sign}sum({KEPT})"))
        .chain(threshold_columns().map(|(b, _)| format!("{sign}sum(({BAND} >= {b}) * {KEPT})")))
        .map(|c| format!(", {c}"))
        .collect();
    let kept_counting = |table: &'static str, keys: &[(&'static str, &str)]| grouped(table, keys, &kept, "1");
    // Its verdict tables: the thresholds as columns, never the unverified.
    let verdict_counting = |table: &'static str, keys: &[(&'static str, &str)]| {
        grouped(table, keys, "", "d.verification_status <> 'unverified'")
    };
    let counted = |table: &'static str, source: &str, keys: &[(&'static str, &str)], from: &str| {
        let select =
            format!("{source} SELECT {}, {sign}count(*) FROM {from} GROUP BY {}", named(keys), group(keys.len()));
        aggregate(table, keys, select)
    };
    let chunks = format!(
        "WITH d AS MATERIALIZED (SELECT t.id AS tenant_id, s.id AS satellite_id, x.tenant_pk, x.satellite_pk, {lt} AS lt
         FROM audio_chunks x JOIN tenants t ON t.pk = x.tenant_pk JOIN satellites s ON s.pk = x.satellite_pk WHERE {filter})",
        lt = local(rows.zone(false), "x.recorded_at"),
        filter = rows.filter("x"),
    );
    let vote_day = format!("date({}, 'unixepoch')", local("d.zone_pk", &millis("v.created_at")));
    let verdicts = "d WHERE d.verification_status <> 'unverified'";
    let (tenant, sat, species) = match keys {
        Keys::Text => {
            (("tenant_id", "d.tenant_id"), ("satellite_id", "d.satellite_id"), ("species_code", "d.species_code"))
        }
        Keys::Pk => (("tenant_pk", "d.tenant_pk"), ("satellite_pk", "d.satellite_pk"), ("species_pk", "d.species_pk")),
    };
    let status = ("status", "d.verification_status");
    let (day, hour, month, band, dekad) =
        (("day", DAY), ("hour", HOUR), ("month", MONTH), ("band", BAND), ("dekad", DEKAD));
    vec![
        counting("stats_hourly", &[tenant, day, hour, sat]),
        counting("stats_species_hourly", &[tenant, species, day, hour]),
        counted("stats_verdicts", &dets, &[tenant, day, hour, sat, species, band, status], verdicts),
        counted("stats_verdicts_monthly", &dets, &[tenant, month, sat, species, band, status], verdicts),
        counted("stats_chunks", &chunks, &[tenant, day, sat], "d WHERE 1"),
        counted(
            "stats_votes",
            &dets,
            &[("tenant_id", "d.tenant_id"), ("day", vote_day.as_str()), ("user_id", "v.user_id"), ("vote", "v.vote")],
            "verification_votes v JOIN d ON d.id = v.detection_id WHERE 1",
        ),
        kept_counting("stats_dekads", &[tenant, dekad, sat, species]),
        kept_counting("stats_species_days", &[tenant, day, species]),
        kept_counting("stats_species_months", &[tenant, month, species]),
        kept_counting("stats_satellite_days", &[tenant, day, sat]),
        kept_counting("stats_satellite_months", &[tenant, month, sat]),
        kept_counting("stats_hour_days", &[tenant, day, hour]),
        kept_counting("stats_hour_months", &[tenant, month, hour, sat]),
        kept_counting("stats_pair_days", &[tenant, day, sat, species]),
        kept_counting("stats_pair_months", &[tenant, month, sat, species]),
        verdict_counting("stats_verdict_satellite_days", &[tenant, day, sat, status]),
        verdict_counting("stats_verdict_satellite_months", &[tenant, month, sat, status]),
        verdict_counting("stats_verdict_species_days", &[tenant, day, species, status]),
        verdict_counting("stats_verdict_species_months", &[tenant, month, species, status]),
    ]
}

/// Which of a batch's rows a table's aggregate reads: detections or chunks.
fn reads_chunks(table: &str) -> bool {
    table == "stats_chunks"
}

/// The `ON CONFLICT` clause adding a batch's signed counts to a table's rows.
fn upsert(table: &str) -> String {
    let mut sets = vec!["n = n + excluded.n".to_owned()];
    if !matches!(table, "stats_verdicts" | "stats_verdicts_monthly" | "stats_chunks" | "stats_votes") {
        sets.extend(threshold_columns().map(|(_, c)| format!("{c} = {c} + excluded.{c}")));
    }
    if super::rollups::GRAINS.contains(&table) {
        sets.push("kn = kn + excluded.kn".to_owned());
        sets.extend(super::rollups::kept_columns().map(|(_, c)| format!("{c} = {c} + excluded.{c}")));
    }
    format!("ON CONFLICT DO UPDATE SET {}", sets.join(", "))
}

/// One batch of a satellite's move: its detections with pk in `(det_lo, det_hi]` and chunks
/// with pk in `(chunk_lo, chunk_hi]` are taken out of the rollups as counted in zone `from` and
/// put back as counted in zone `to`; rows left at zero go. The caller holds the transaction and
/// advances the satellite's move pointers in it.
pub struct Batch {
    pub satellite_pk: i64,
    pub from: i64,
    pub to: i64,
    pub det: (i64, i64),
    pub chunk: (i64, i64),
}

pub fn move_batch(conn: &Connection, b: &Batch) -> Result<()> {
    for a in aggregates(Rows::Batch, Keys::Pk) {
        let (lo, hi) = if reads_chunks(a.table) { b.chunk } else { b.det };
        if lo >= hi {
            continue;
        }
        let (table, keys) = (a.table, a.keys.join(", "));
        let add = format!("INSERT INTO {table} {} {}", a.select, upsert(table));
        let mut add = conn.prepare_cached(&add)?;
        let params = |zone: i64, sign: i64| {
            [(":zone", zone), (":sat", b.satellite_pk), (":lo", lo), (":hi", hi), (":sign", sign)]
        };
        let bind = |stmt: &mut rusqlite::CachedStatement<'_>, ps: [(&str, i64); 5]| -> Result<()> {
            let named: Vec<(&str, &dyn rusqlite::ToSql)> =
                ps.iter().map(|(k, v)| (*k, v as &dyn rusqlite::ToSql)).collect();
            stmt.execute(named.as_slice())?;
            Ok(())
        };
        bind(&mut add, params(b.from, -1))?;
        // The rows the old zone's counts lived in, where nothing is left.
        let emptied = format!("DELETE FROM {table} WHERE n <= 0 AND ({keys}) IN (SELECT {keys} FROM ({}))", a.select);
        bind(&mut conn.prepare_cached(&emptied)?, params(b.from, 1))?;
        bind(&mut add, params(b.to, 1))?;
    }
    Ok(())
}
