//! Birds left out because they are not expected at the satellite's place this week
//! (`not_expected_hours`, migration 0034): counted per satellite and hour as the inference
//! workers record them, so the dashboard can say how many in the last 24 hours (issue 51,
//! defect 18). The lifetime total stays in `hub_filter_counts` (`notExpectedDropped`).

use std::collections::HashMap;

use rusqlite::{Connection, params};

use super::Result;
use crate::{
    ids::{SatelliteId, TenantId},
    time::Timestamp,
};

const HOUR_MS: i64 = 3_600_000;
/// Hours kept: two days, more than the 24 hours the dashboard shows.
const KEPT_MS: i64 = 48 * HOUR_MS;

/// Adds `n` birds left out at `at` to `satellite`'s hour, and forgets its hours older than two days.
pub fn add(conn: &Connection, satellite: SatelliteId, at: Timestamp, n: u32) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let hour = at.millis().div_euclid(HOUR_MS) * HOUR_MS;
    conn.prepare_cached(
        "INSERT INTO not_expected_hours (satellite_pk, hour, count)
         VALUES ((SELECT pk FROM satellites WHERE id = ?1), ?2, ?3)
         ON CONFLICT (satellite_pk, hour) DO UPDATE SET count = count + excluded.count",
    )?
    .execute(params![satellite, hour, n])?;
    conn.prepare_cached(
        "DELETE FROM not_expected_hours WHERE satellite_pk = (SELECT pk FROM satellites WHERE id = ?1) AND hour < ?2",
    )?
    .execute(params![satellite, hour - KEPT_MS])?;
    Ok(())
}

/// Birds left out per satellite of `tenant` in the hours that end after `since` (the hour
/// holding `since` counts whole: a count may include up to an hour before it).
pub fn by_satellite(conn: &Connection, tenant: TenantId, since: Timestamp) -> Result<HashMap<SatelliteId, u64>> {
    let from = since.millis().div_euclid(HOUR_MS) * HOUR_MS;
    let mut stmt = conn.prepare_cached(
        "SELECT s.id, SUM(h.count) FROM not_expected_hours h JOIN satellites s ON s.pk = h.satellite_pk
         WHERE s.tenant_id = ?1 AND h.hour >= ?2 GROUP BY s.id",
    )?;
    let rows = stmt.query_map(params![tenant, from], |r| Ok((r.get::<_, SatelliteId>(0)?, r.get::<_, i64>(1)?)))?;
    let mut out = HashMap::new();
    for row in rows {
        let (id, n) = row?;
        out.insert(id, u64::try_from(n).unwrap_or(0));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing;

    #[tokio::test]
    async fn the_last_day_is_counted_and_older_hours_are_forgotten() {
        let (store, _dir) = testing::store().await;
        let (tenant, sat) = store
            .call(|c| {
                let (t, _) = testing::team(c, "ana")?;
                let s = crate::store::satellites::insert(
                    c,
                    &crate::store::satellites::NewSatellite {
                        tenant_id: t,
                        name: "Garden",
                        device_id: None,
                        kind: crate::domain::DeviceKind::Satellite,
                        registered_by: None,
                        mqtt_password_hash: "!",
                        latitude: None,
                        longitude: None,
                    },
                )?;
                Ok((t, s))
            })
            .await
            .expect("seed");
        let now: Timestamp = "2026-12-07T18:30:00Z".parse().expect("now");
        let ago = move |h: i64| Timestamp(now.at() - chrono::Duration::hours(h));
        let counted = store
            .call(move |c| {
                add(c, sat, ago(72), 5)?;
                add(c, sat, ago(30), 4)?;
                add(c, sat, ago(2), 2)?;
                add(c, sat, now, 1)?;
                add(c, sat, now, 0)?;
                let last_day = by_satellite(c, tenant, ago(24))?;
                let kept: i64 = c.query_row("SELECT count(*) FROM not_expected_hours", [], |r| r.get(0))?;
                Ok((last_day, kept))
            })
            .await
            .expect("count");
        assert_eq!(counted.0.get(&sat), Some(&3));
        assert_eq!(counted.1, 3, "the hour three days ago is gone");
    }
}
