//! Calibration curves per (team, model) (SPEC 4.10): the verified samples they are fitted on,
//! the stored buckets, coverage, and `calibrated_confidence` for a page of detections.

use std::collections::HashMap;

use rusqlite::{Connection, params};
use serde::Serialize;

use super::{Result, detections::Stored};
use crate::{
    domain::calibration::{self, Bucket},
    ids::TenantId,
    time::Timestamp,
};

/// The confirmed (true) and rejected (false) confidences of one team and model.
pub fn samples(conn: &Connection, tenant: TenantId, model: &str) -> Result<Vec<(f64, bool)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT confidence, verification_status = 'confirmed' FROM detections INDEXED BY detections_tenant_status_confidence
         WHERE tenant_pk = (SELECT pk FROM tenants WHERE id = ?1) AND verification_status IN ('confirmed', 'rejected') AND model_id = ?2",
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
pub fn save(conn: &mut Connection, tenant: TenantId, model: &str, curve: &[Bucket], now: Timestamp) -> Result<()> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
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
pub fn curve(conn: &Connection, tenant: TenantId, model: &str) -> Result<(Vec<Bucket>, Option<Timestamp>)> {
    let mut stmt = conn.prepare_cached(
        "SELECT bucket_index, lower_bound, upper_bound, calibrated, sample_count, updated_at FROM calibration_buckets
         WHERE tenant_id = ?1 AND model_id = ?2 ORDER BY bucket_index",
    )?;
    let mut updated = None;
    let rows = stmt.query_map(params![tenant, model], |r| Ok((bucket(r, 0)?, r.get::<_, Timestamp>(5)?)))?;
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

/// Confirmed and rejected counts per model of one team, read through the status index (a
/// few verified rows, not every detection).
fn verified_counts(conn: &Connection, tenant: TenantId) -> Result<Vec<(String, i64, i64)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT model_id, coalesce(sum(verification_status = 'confirmed'), 0),
             coalesce(sum(verification_status = 'rejected'), 0)
         FROM detections INDEXED BY detections_tenant_status_confidence
         WHERE tenant_pk = (SELECT pk FROM tenants WHERE id = ?1) AND verification_status IN ('confirmed', 'rejected')
         GROUP BY model_id",
    )?;
    let rows = stmt.query_map([tenant], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The (team, model) pairs with verified detections or a stored curve, for one team or all,
/// with their (confirmed, rejected) counts.
fn pairs_with_counts(conn: &Connection, tenant: Option<TenantId>) -> Result<Vec<(TenantId, String, i64, i64)>> {
    let tenants: Vec<TenantId> = match tenant {
        Some(t) => vec![t],
        None => conn
            .prepare_cached("SELECT id FROM tenants ORDER BY id")?
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?,
    };
    let mut out = Vec::new();
    for t in tenants {
        let mut models = verified_counts(conn, t)?;
        let fitted: Vec<String> = conn
            .prepare_cached("SELECT DISTINCT model_id FROM calibration_buckets WHERE tenant_id = ?1")?
            .query_map([t], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        for m in fitted {
            if !models.iter().any(|(x, ..)| *x == m) {
                models.push((m, 0, 0));
            }
        }
        models.sort();
        out.extend(models.into_iter().map(|(m, yes, no)| (t, m, yes, no)));
    }
    Ok(out)
}

/// The (team, model) pairs with verified detections or a stored curve, for one team or all.
pub fn pairs(conn: &Connection, tenant: Option<TenantId>) -> Result<Vec<(TenantId, String)>> {
    Ok(pairs_with_counts(conn, tenant)?.into_iter().map(|(t, m, ..)| (t, m)).collect())
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
    pub fitted_at: Option<Timestamp>,
    /// Fitted on this many samples when it was last refreshed.
    pub curve_samples: u64,
}

pub fn coverage(conn: &Connection, tenant: Option<TenantId>) -> Result<Vec<Coverage>> {
    let mut out = Vec::new();
    for (t, model, confirmed, rejected) in pairs_with_counts(conn, tenant)? {
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
