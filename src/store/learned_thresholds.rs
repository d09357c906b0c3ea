//! What learned thresholds read: a team's detections of the species people voted on, grouped by
//! confidence (to 0.001) and verdict, so one species costs a few hundred rows however many
//! detections it has.

use std::collections::BTreeMap;

use rusqlite::{Connection, OptionalExtension, params};

use super::Result;
use crate::{
    domain::learned_threshold::{Group, Verdict},
    ids::{DetectionId, TenantId},
};

/// Confidences are grouped to this many steps per unit, rounded *down* (the tiny nudge keeps a
/// stored 0.7, which is 0.69999... as a 32-bit float, at 0.700): a threshold with at most three
/// decimals keeps a group exactly when it keeps each of its detections.
const STEPS: f64 = 1000.0;

/// The groups of every species of `tenant` with at least one settled detection (confirmed or
/// rejected), or of `only` that species; keyed by species code.
pub fn groups(conn: &Connection, tenant: TenantId, only: Option<&str>) -> Result<BTreeMap<String, Vec<Group>>> {
    let mut stmt = conn.prepare_cached(
        "WITH voted AS (
             SELECT DISTINCT species_pk FROM detections INDEXED BY detections_tenant_status_confidence
             WHERE tenant_pk = (SELECT pk FROM tenants WHERE id = ?1) AND verification_status IN ('confirmed', 'rejected')
         )
         SELECT l.species_code, CAST(d.confidence * 1000 + 0.0001 AS INTEGER) AS step, d.verification_status, count(*)
         FROM voted v JOIN species_labels l ON l.pk = v.species_pk
         JOIN detections d INDEXED BY detections_tenant_species_day
             ON d.tenant_pk = (SELECT pk FROM tenants WHERE id = ?1) AND d.species_pk = v.species_pk
         WHERE ?2 IS NULL OR l.species_code = ?2
         GROUP BY l.species_code, step, d.verification_status
         ORDER BY l.species_code, step",
    )?;
    let rows = stmt.query_map(params![tenant, only], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, String>(2)?, r.get::<_, i64>(3)?))
    })?;
    let mut out: BTreeMap<String, Vec<Group>> = BTreeMap::new();
    for row in rows {
        let (code, step, status, count) = row?;
        let verdict = match status.as_str() {
            "confirmed" => Verdict::Confirmed,
            "rejected" => Verdict::Rejected,
            _ => Verdict::Open,
        };
        out.entry(code).or_default().push(Group {
            confidence: step as f64 / STEPS,
            verdict,
            count: count.max(0) as u64,
        });
    }
    Ok(out)
}

/// The species code of `tenant`'s detection (`None` for another team's or an unknown one).
pub fn species_of(conn: &Connection, tenant: TenantId, detection: DetectionId) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached(
            "SELECT l.species_code FROM detections d JOIN species_labels l ON l.pk = d.species_pk
             WHERE d.id = ?1 AND d.tenant_pk = (SELECT pk FROM tenants WHERE id = ?2)",
        )?
        .query_row(params![detection, tenant], |r| r.get(0))
        .optional()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing;

    #[tokio::test]
    async fn groups_hold_the_voted_species_of_one_team_only() {
        let (store, _dir) = testing::store().await;
        let (a, b) = store
            .call(|c| {
                let (a, _) = testing::team(c, "a")?;
                let (b, _) = testing::team(c, "b")?;
                let mine = crate::store::detections::testing::one(c, a)?;
                crate::store::detections::testing::one(c, b)?;
                c.execute(
                    "UPDATE detections SET verification_status = 'rejected', confidence = 0.7 WHERE id = ?1",
                    [mine],
                )?;
                Ok((a, b))
            })
            .await
            .expect("fixture");
        let (of_a, of_b) = store.call(move |c| Ok((groups(c, a, None)?, groups(c, b, None)?))).await.expect("groups");
        assert!(of_b.is_empty(), "team b voted on nothing: {of_b:?}");
        let all: Vec<&Group> = of_a.values().flatten().collect();
        assert_eq!(all.len(), 1, "{of_a:?}");
        assert_eq!((all[0].confidence, all[0].verdict, all[0].count), (0.7, Verdict::Rejected, 1));
    }
}
