//! Filling the statistics rollups from scratch (migration 0009 and `birdhub admin rebuild-stats`).
//! Triggers keep them right from then on (see `migrations/0009_stats_rollups.sql`, and
//! `0024_time_zones.sql` for the local days of each station); the expressions here are the
//! triggers' own, so a rebuild gives the rows the triggers would. Migration 0009 filled them in
//! the machine's zone ([`fill`]); since 0024 days and hours are each station's
//! ([`super::zoned`]). Since 0032 the rollups (but `stats_votes`) are keyed by the team's,
//! satellite's and species' integer keys (`tenant_pk`, `satellite_pk`, `species_pk`).

use rusqlite::Connection;

use super::super::Result;

/// Every rollup table, in the order they are filled. Migration 0032 dropped `stats_daily`,
/// `stats_monthly` and `stats_day_species`, which [`fill`] still fills at migration 0009.
pub const TABLES: [&str; 19] = [
    "stats_hourly",
    "stats_species_hourly",
    "stats_verdicts",
    "stats_verdicts_monthly",
    "stats_chunks",
    "stats_votes",
    // Migration 0028: coarser grains, with the kept counts (see `GRAINS`).
    "stats_dekads",
    "stats_species_days",
    "stats_species_months",
    "stats_satellite_days",
    "stats_satellite_months",
    "stats_hour_days",
    "stats_hour_months",
    "stats_pair_days",
    "stats_pair_months",
    "stats_verdict_satellite_days",
    "stats_verdict_satellite_months",
    "stats_verdict_species_days",
    "stats_verdict_species_months",
];

/// The tables of migration 0028, which it fills from the source tables. Beside `n` and the
/// thresholds they count the detections not voted down: `kn` and [`kept_columns`].
pub const GRAINS: [&str; 9] = [
    "stats_dekads",
    "stats_species_days",
    "stats_species_months",
    "stats_satellite_days",
    "stats_satellite_months",
    "stats_hour_days",
    "stats_hour_months",
    "stats_pair_days",
    "stats_pair_months",
];

/// Migration 0028's verdict tables: per satellite or species, status and day or month, with the
/// thresholds as columns.
pub const VERDICT_GRAINS: [&str; 4] = [
    "stats_verdict_satellite_days",
    "stats_verdict_satellite_months",
    "stats_verdict_species_days",
    "stats_verdict_species_months",
];

/// The counting tables' threshold columns, `ge05` to `ge100`: detections with a confidence band
/// (floor(confidence * 20)) of at least 1 to 20.
pub fn threshold_columns() -> impl Iterator<Item = (u8, String)> {
    (1..=20u8).map(|band| (band, format!("ge{:02}", u32::from(band) * 5)))
}

/// The kept-count columns of migration 0028's tables, `k05` to `k100`: detections not voted
/// down with a confidence band of at least 1 to 20.
pub fn kept_columns() -> impl Iterator<Item = (u8, String)> {
    (1..=20u8).map(|band| (band, format!("k{:02}", u32::from(band) * 5)))
}

const BAND: &str = "CAST(d.confidence * 20 AS INTEGER)";
const DAY: &str = "date(d.detected_at, 'localtime')";
const HOUR: &str = "CAST(strftime('%H', d.detected_at, 'localtime') AS INTEGER)";

/// The detections and chunks as the rollups read them: their team's and satellite's UUIDs as
/// `tenant_id` and `satellite_id`, the species code, and their times as the SPEC's text. Since
/// migrations 0017 and 0018 the tables hold integer keys, milliseconds and a species key;
/// before them (when 0009 fills the rollups of an old database) the UUIDs, code and text
/// themselves.
fn sources(conn: &Connection) -> Result<(&'static str, &'static str)> {
    let keyed: bool = conn.query_row(
        "SELECT count(*) > 0 FROM pragma_table_info('detections') WHERE name = 'species_pk'",
        [],
        |r| r.get(0),
    )?;
    Ok(if keyed {
        (
            "(SELECT x.id, l.species_code, x.confidence, x.verification_status,
                     strftime('%Y-%m-%dT%H:%M:%fZ', x.detected_at / 1000.0, 'unixepoch') AS detected_at,
                     t.id AS tenant_id, s.id AS satellite_id
              FROM detections x JOIN tenants t ON t.pk = x.tenant_pk JOIN satellites s ON s.pk = x.satellite_pk
                   JOIN species_labels l ON l.pk = x.species_pk)",
            "(SELECT strftime('%Y-%m-%dT%H:%M:%fZ', x.recorded_at / 1000.0, 'unixepoch') AS recorded_at,
                     t.id AS tenant_id, s.id AS satellite_id
              FROM audio_chunks x JOIN tenants t ON t.pk = x.tenant_pk JOIN satellites s ON s.pk = x.satellite_pk)",
        )
    } else {
        ("detections", "audio_chunks")
    })
}

/// The rollups as migration 0009 counted them, in the machine's zone: `(table, SELECT producing
/// its rows)`. Only [`fill`] at that migration uses them.
fn legacy_aggregates(conn: &Connection) -> Result<Vec<(&'static str, String)>> {
    let (detections, chunks) = sources(conn)?;
    let thresholds: Vec<String> = threshold_columns().map(|(b, _)| format!("sum({BAND} >= {b})")).collect();
    let counting = |keys: &[&str]| {
        let group: Vec<String> = (1..=keys.len() + 1).map(|i| i.to_string()).collect();
        format!(
            "SELECT d.tenant_id, {}, count(*), {} FROM {detections} d GROUP BY {}",
            keys.join(", "),
            thresholds.join(", "),
            group.join(", ")
        )
    };
    let month = "strftime('%Y-%m', d.detected_at, 'localtime')";
    Ok(vec![
        ("stats_daily", counting(&[DAY, "d.satellite_id", "d.species_code"])),
        ("stats_monthly", counting(&[month, "d.satellite_id", "d.species_code"])),
        ("stats_hourly", counting(&[DAY, HOUR, "d.satellite_id"])),
        ("stats_day_species", counting(&[DAY, "d.species_code"])),
        ("stats_species_hourly", counting(&["d.species_code", DAY, HOUR])),
        (
            "stats_verdicts",
            format!(
                "SELECT d.tenant_id, {DAY}, {HOUR}, d.satellite_id, d.species_code, {BAND}, d.verification_status, count(*)
                 FROM {detections} d WHERE d.verification_status <> 'unverified' GROUP BY 1, 2, 3, 4, 5, 6, 7"
            ),
        ),
        (
            "stats_verdicts_monthly",
            format!(
                "SELECT d.tenant_id, {month}, d.satellite_id, d.species_code, {BAND}, d.verification_status, count(*)
                 FROM {detections} d WHERE d.verification_status <> 'unverified' GROUP BY 1, 2, 3, 4, 5, 6"
            ),
        ),
        (
            "stats_chunks",
            format!(
                "SELECT tenant_id, date(recorded_at, 'localtime'), satellite_id, count(*) FROM {chunks} GROUP BY 1, 2, 3"
            ),
        ),
        (
            "stats_votes",
            format!(
                "SELECT d.tenant_id, date(v.created_at, 'localtime'), v.user_id, v.vote, count(*)
                 FROM verification_votes v JOIN {detections} d ON d.id = v.detection_id GROUP BY 1, 2, 3, 4"
            ),
        ),
    ])
}

/// What a rebuild wrote: rows per table.
pub type Filled = Vec<(&'static str, i64)>;

/// Fills empty rollups from the source tables as migration 0009 did, in the machine's zone (what
/// 0024 then takes for each satellite's zone). The caller holds the transaction.
pub fn fill(conn: &Connection) -> Result<Filled> {
    let mut filled = Vec::with_capacity(TABLES.len());
    for (table, select) in legacy_aggregates(conn)? {
        let rows = conn.execute(&format!("INSERT INTO {table} {select}"), [])?;
        filled.push((table, rows as i64));
    }
    Ok(filled)
}

/// The rollups as aggregates of the source tables, each row in its station's zone: `(table,
/// SELECT producing its rows)`. Also what the property test compares the trigger-kept tables
/// with.
pub fn aggregates(_conn: &Connection) -> Result<Vec<(&'static str, String)>> {
    Ok(super::zoned::aggregates(super::zoned::Rows::All, super::zoned::Keys::Pk)
        .into_iter()
        .map(|a| (a.table, a.select))
        .collect())
}

/// Empties the rollups and fills them again, each satellite in its effective zone (a zone move
/// under way is finished by it), in one IMMEDIATE transaction: readers see the old numbers or the
/// new ones, never a half-built table.
pub fn rebuild(conn: &mut Connection) -> Result<Filled> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    super::super::zones::settle_all(&tx)?;
    let mut filled = Vec::with_capacity(TABLES.len());
    for (table, select) in aggregates(&tx)? {
        tx.execute(&format!("DELETE FROM {table}"), [])?;
        let rows = tx.execute(&format!("INSERT INTO {table} {select}"), [])?;
        filled.push((table, rows as i64));
    }
    tx.commit()?;
    Ok(filled)
}

/// Fills the tables of migration 0028 from the source tables, each row in the zone the older
/// rollups count it in (a zone move under way goes on moving both), keyed by UUIDs and codes as
/// that migration made them (0032 turns them into integer keys). The caller holds the
/// transaction.
pub fn fill_grains(conn: &Connection) -> Result<Filled> {
    let mut filled = Vec::with_capacity(GRAINS.len() + VERDICT_GRAINS.len());
    let grains = super::zoned::aggregates(super::zoned::Rows::AsCounted, super::zoned::Keys::Text)
        .into_iter()
        .filter(|a| GRAINS.contains(&a.table) || VERDICT_GRAINS.contains(&a.table));
    let total = GRAINS.len() + VERDICT_GRAINS.len();
    for (i, super::zoned::Aggregate { table, select, .. }) in grains.enumerate() {
        // Each table reads every detection once: minutes on a Pi with millions of them.
        tracing::info!(table, step = i + 1, of = total, "filling statistics at a coarser grain (migration 0028)");
        let rows = conn.execute(&format!("INSERT INTO {table} {select}"), [])?;
        filled.push((table, rows as i64));
    }
    Ok(filled)
}

/// Per table, rows that differ between the rollup and its from-scratch aggregate, counted both
/// ways (a wrong row counts twice: as kept and as missing); all zero when the triggers kept the
/// rollups right.
pub fn drift(conn: &Connection) -> Result<Vec<(&'static str, i64)>> {
    let mut out = Vec::with_capacity(TABLES.len());
    for (table, fresh) in aggregates(conn)? {
        let kept = format!("SELECT * FROM {table}");
        let fresh = format!("SELECT * FROM ({fresh})");
        let n: i64 = conn.query_row(
            &format!(
                "SELECT (SELECT count(*) FROM ({kept} EXCEPT {fresh})) + (SELECT count(*) FROM ({fresh} EXCEPT {kept}))"
            ),
            [],
            |r| r.get(0),
        )?;
        out.push((table, n));
    }
    Ok(out)
}
