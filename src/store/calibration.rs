//! Calibration curves per (team, model) (SPEC 4.10): the verified samples they are fitted on,
//! the stored buckets, coverage, and `calibrated_confidence` for a page of detections.

use std::collections::HashMap;

use rusqlite::{Connection, params};
use serde::Serialize;

use super::{Result, detections::Stored};
use crate::{
    domain::calibration::{self, Bucket},
    ids::TenantId,
};

/// The confirmed (true) and rejected (false) confidences of one team and model.
pub fn samples(conn: &Connection, tenant: TenantId, model: &str) -> Result<Vec<(f64, bool)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT confidence, verification_status = 'confirmed' FROM detections
         WHERE tenant_id = ?1 AND verification_status IN ('confirmed', 'rejected') AND model_id = ?2",
    )?;
    let rows = stmt.query_map(params![tenant, model], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// A bucket from columns `at..at + 5` (index, lower, upper, calibrated, samples).
fn bucket(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<Bucket> {
    Ok(Bucket {
        index: r.get::<_, i64>(at)?.max(0) as usize,
        lower: r.get(at + 1)?,
        upper: r.get(at + 2)?,
        calibrated: r.get(at + 3)?,
        samples: r.get(at + 4)?,
    })
}

/// Replaces the stored curve of (`tenant`, `model`); an empty `curve` removes it.
pub fn save(conn: &mut Connection, tenant: TenantId, model: &str, curve: &[Bucket], now: &str) -> Result<()> {
    let tx = conn.transaction()?;
    tx.execute("DELETE FROM calibration_buckets WHERE tenant_id = ?1 AND model_id = ?2", params![tenant, model])?;
    for b in curve {
        tx.execute(
            "INSERT INTO calibration_buckets (tenant_id, model_id, bucket_index, lower_bound, upper_bound, calibrated,
                 sample_count, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![tenant, model, b.index as i64, b.lower, b.upper, b.calibrated, b.samples, now],
        )?;
    }
    tx.commit()?;
    Ok(())
}

/// The stored curve of (`tenant`, `model`) and when it was fitted (empty when there is none).
pub fn curve(conn: &Connection, tenant: TenantId, model: &str) -> Result<(Vec<Bucket>, Option<String>)> {
    let mut stmt = conn.prepare_cached(
        "SELECT bucket_index, lower_bound, upper_bound, calibrated, sample_count, updated_at FROM calibration_buckets
         WHERE tenant_id = ?1 AND model_id = ?2 ORDER BY bucket_index",
    )?;
    let mut updated = None;
    let rows = stmt.query_map(params![tenant, model], |r| Ok((bucket(r, 0)?, r.get::<_, String>(5)?)))?;
    let mut buckets = Vec::new();
    for row in rows {
        let (b, at) = row?;
        updated = Some(at);
        buckets.push(b);
    }
    Ok((buckets, updated))
}

/// Sets `calibrated_confidence` on every row from one read of the team's curves.
pub fn apply(conn: &Connection, tenant: TenantId, rows: &mut [Stored]) -> Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let mut stmt = conn.prepare_cached(
        "SELECT model_id, bucket_index, lower_bound, upper_bound, calibrated, sample_count FROM calibration_buckets
         WHERE tenant_id = ?1 ORDER BY model_id, bucket_index",
    )?;
    let mut curves: HashMap<String, Vec<Bucket>> = HashMap::new();
    let found = stmt.query_map([tenant], |r| Ok((r.get::<_, String>(0)?, bucket(r, 1)?)))?;
    for row in found {
        let (model, bucket) = row?;
        curves.entry(model).or_default().push(bucket);
    }
    for d in rows {
        d.calibrated_confidence = curves.get(&d.model_id).and_then(|c| calibration::calibrate(c, d.confidence));
    }
    Ok(())
}

/// The (team, model) pairs with verified detections, for one team or all.
pub fn pairs(conn: &Connection, tenant: Option<TenantId>) -> Result<Vec<(TenantId, String)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT DISTINCT tenant_id, model_id FROM detections
         WHERE verification_status IN ('confirmed', 'rejected') AND (?1 IS NULL OR tenant_id = ?1)
         UNION SELECT tenant_id, model_id FROM calibration_buckets WHERE ?1 IS NULL OR tenant_id = ?1
         ORDER BY 1, 2",
    )?;
    let rows = stmt.query_map([tenant], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Verified-sample counts of one (team, model) pair and the state of its curve.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Coverage {
    pub tenant_id: TenantId,
    pub model_id: String,
    pub confirmed: u64,
    pub rejected: u64,
    pub samples: u64,
    pub has_curve: bool,
    pub fitted_at: Option<String>,
    /// Fitted on this many samples when it was last refreshed.
    pub curve_samples: u64,
}

pub fn coverage(conn: &Connection, tenant: Option<TenantId>) -> Result<Vec<Coverage>> {
    let mut out = Vec::new();
    for (t, model) in pairs(conn, tenant)? {
        let (confirmed, rejected): (i64, i64) = conn.query_row(
            "SELECT coalesce(sum(verification_status = 'confirmed'), 0), coalesce(sum(verification_status = 'rejected'), 0)
             FROM detections WHERE tenant_id = ?1 AND verification_status IN ('confirmed', 'rejected') AND model_id = ?2",
            params![t, model],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let (curve, fitted_at) = curve(conn, t, &model)?;
        out.push(Coverage {
            tenant_id: t,
            curve_samples: curve.iter().map(|b| u64::from(b.samples)).sum(),
            model_id: model,
            confirmed: confirmed.max(0) as u64,
            rejected: rejected.max(0) as u64,
            samples: (confirmed + rejected).max(0) as u64,
            has_curve: !curve.is_empty(),
            fitted_at,
        });
    }
    Ok(out)
}
