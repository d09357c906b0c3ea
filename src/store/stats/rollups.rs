//! Filling the statistics rollups from scratch (migration 0009 and `birdhub admin rebuild-stats`).
//! Triggers keep them right from then on (see `migrations/0009_stats_rollups.sql`); the
//! expressions here are the triggers' own, so a rebuild gives the same rows the triggers would.

use rusqlite::Connection;

use super::super::Result;

/// Every rollup table, in the order they are filled.
pub const TABLES: [&str; 6] =
    ["stats_daily", "stats_monthly", "stats_hourly", "stats_species_hourly", "stats_chunks", "stats_votes"];

/// The rollups as aggregates of the source tables: `(table, SELECT producing its rows)`. Also what
/// the property test compares the trigger-kept tables with.
pub const AGGREGATES: [(&str, &str); 6] = [
    (
        "stats_daily",
        "SELECT tenant_id, date(detected_at, 'localtime'), satellite_id, species_code,
                CAST(confidence * 20 AS INTEGER) AS band, count(*), sum(verification_status = 'rejected'),
                sum(verification_status = 'confirmed'), sum(verification_status = 'pending_review'), sum(confidence),
                sum((verification_status = 'rejected') * confidence)
         FROM detections GROUP BY 1, 2, 3, 4, 5",
    ),
    (
        "stats_monthly",
        "SELECT tenant_id, strftime('%Y-%m', detected_at, 'localtime'), satellite_id, species_code,
                CAST(confidence * 20 AS INTEGER) AS band, count(*), sum(verification_status = 'rejected'),
                sum(verification_status = 'confirmed'), sum(verification_status = 'pending_review'), sum(confidence),
                sum((verification_status = 'rejected') * confidence)
         FROM detections GROUP BY 1, 2, 3, 4, 5",
    ),
    (
        "stats_hourly",
        "SELECT tenant_id, date(detected_at, 'localtime'), CAST(strftime('%H', detected_at, 'localtime') AS INTEGER),
                satellite_id, CAST(confidence * 20 AS INTEGER), count(*), sum(verification_status = 'rejected')
         FROM detections GROUP BY 1, 2, 3, 4, 5",
    ),
    (
        "stats_species_hourly",
        "SELECT tenant_id, species_code, date(detected_at, 'localtime'),
                CAST(strftime('%H', detected_at, 'localtime') AS INTEGER), CAST(confidence * 20 AS INTEGER), count(*),
                sum(verification_status = 'rejected')
         FROM detections GROUP BY 1, 2, 3, 4, 5",
    ),
    (
        "stats_chunks",
        "SELECT tenant_id, date(recorded_at, 'localtime'), satellite_id, count(*) FROM audio_chunks GROUP BY 1, 2, 3",
    ),
    (
        "stats_votes",
        "SELECT d.tenant_id, date(v.created_at, 'localtime'), v.user_id, v.vote, count(*)
         FROM verification_votes v JOIN detections d ON d.id = v.detection_id GROUP BY 1, 2, 3, 4",
    ),
];

/// What a rebuild wrote: rows per table.
pub type Filled = Vec<(&'static str, i64)>;

/// Fills empty rollups from the source tables. The caller holds the transaction.
pub fn fill(conn: &Connection) -> Result<Filled> {
    let mut filled = Vec::with_capacity(AGGREGATES.len());
    for (table, select) in AGGREGATES {
        let rows = conn.execute(&format!("INSERT INTO {table} {select}"), [])?;
        filled.push((table, rows as i64));
    }
    Ok(filled)
}

/// Empties the rollups and fills them again, in one IMMEDIATE transaction: readers see the old
/// numbers or the new ones, never a half-built table.
pub fn rebuild(conn: &mut Connection) -> Result<Filled> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    for table in TABLES {
        tx.execute(&format!("DELETE FROM {table}"), [])?;
    }
    let filled = fill(&tx)?;
    tx.commit()?;
    Ok(filled)
}

/// Rows that differ between each rollup and its from-scratch aggregate (both directions), per
/// table; all zero when the triggers kept the rollups right.
pub fn drift(conn: &Connection) -> Result<Vec<(&'static str, i64)>> {
    let mut out = Vec::with_capacity(AGGREGATES.len());
    for (table, select) in AGGREGATES {
        // Sums of REAL confidences may differ in the last bits with the order of additions.
        let rounded = |sql: &str| {
            sql.replace("sum(confidence)", "round(sum(confidence), 6)").replace(
                "sum((verification_status = 'rejected') * confidence)",
                "round(sum((verification_status = 'rejected') * confidence), 6)",
            )
        };
        let kept = if table == "stats_daily" || table == "stats_monthly" {
            format!(
                "SELECT tenant_id, {k}, satellite_id, species_code, band, n, rejected, confirmed, pending,
                        round(confidence_sum, 6), round(rejected_confidence, 6) FROM {table}",
                k = if table == "stats_daily" { "day" } else { "month" }
            )
        } else {
            format!("SELECT * FROM {table}")
        };
        let fresh = rounded(select);
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
