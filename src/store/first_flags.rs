//! Recomputing the "first of the day" and "first of the season" flags of stored detections under
//! the rules of issue 37 (`birdhub admin recompute-flags`): a detection is the first of its day
//! (season) when its team has no earlier detection of the species within that local day
//! (season) of the detecting station's zone. Detections written before these rules were judged
//! by UTC days, and detections that arrived out of order (a satellite's backlog) may have been
//! judged before an earlier one was stored; neither changes unless this command is run.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use rusqlite::{Connection, params};

use super::Result;
use crate::domain::zone;

/// What a recomputation found (and, unless it was a dry run, changed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recomputed {
    /// Detections read.
    pub detections: u64,
    /// Flags that become set, and that become cleared.
    pub day_set: u64,
    pub day_cleared: u64,
    pub season_set: u64,
    pub season_cleared: u64,
}

impl Recomputed {
    /// Detections whose flags differ from the rules.
    pub fn changes(&self) -> u64 {
        self.day_set + self.day_cleared + self.season_set + self.season_cleared
    }
}

/// Every satellite's effective zone by its key; those not resolved take their team's.
fn zones(conn: &Connection) -> Result<HashMap<i64, Tz>> {
    let mut stmt = conn.prepare("SELECT pk, id FROM satellites WHERE pk IS NOT NULL")?;
    let sats =
        stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get(1)?)))?.collect::<rusqlite::Result<Vec<(i64, _)>>>()?;
    let mut out = HashMap::with_capacity(sats.len());
    for (pk, id) in sats {
        out.insert(pk, super::zones::satellite_zone(conn, &id)?);
    }
    Ok(out)
}

/// Whether a detection at `at` (station zone `tz`) is the first of its local day and of its
/// season, given the team's previous detection of the species (`before`): it is when there is
/// none earlier in that day (season).
fn firsts(before: Option<DateTime<Utc>>, at: DateTime<Utc>, tz: Tz) -> (bool, bool) {
    let day = before.is_none_or(|b| b < zone::day_bounds_in(at, tz).0);
    let season = before.is_none_or(|b| b < zone::season_bounds_in(at, tz).0);
    (day, season)
}

/// Walks every detection by team, species and time and compares its flags with the rules;
/// writes the differences unless `dry_run`, in transactions of 5,000 rows.
pub fn recompute(conn: &mut Connection, dry_run: bool) -> Result<Recomputed> {
    let zones = zones(conn)?;
    let mut found = Recomputed::default();
    let mut fixes: Vec<(i64, bool, bool)> = Vec::new();
    {
        let mut stmt = conn.prepare(
            "SELECT pk, tenant_pk, species_pk, satellite_pk, detected_at, is_first_of_day, is_first_of_season
             FROM detections ORDER BY tenant_pk, species_pk, detected_at, pk",
        )?;
        let mut rows = stmt.query([])?;
        let mut previous: Option<(i64, i64, DateTime<Utc>)> = None;
        while let Some(r) = rows.next()? {
            let (pk, tenant, species, sat): (i64, i64, i64, i64) = (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?);
            let at = DateTime::from_timestamp_millis(r.get(4)?).unwrap_or_default();
            let (day_was, season_was): (bool, bool) = (r.get(5)?, r.get(6)?);
            let tz = zones.get(&sat).copied().unwrap_or(chrono_tz::UTC);
            let before = previous.filter(|p| p.0 == tenant && p.1 == species).map(|p| p.2);
            let (day, season) = firsts(before, at, tz);
            found.detections += 1;
            match (day_was, day) {
                (false, true) => found.day_set += 1,
                (true, false) => found.day_cleared += 1,
                _ => {}
            }
            match (season_was, season) {
                (false, true) => found.season_set += 1,
                (true, false) => found.season_cleared += 1,
                _ => {}
            }
            if (day, season) != (day_was, season_was) {
                fixes.push((pk, day, season));
            }
            previous = Some((tenant, species, at));
        }
    }
    if !dry_run {
        for part in fixes.chunks(5_000) {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            {
                let mut update = tx.prepare_cached(
                    "UPDATE detections SET is_first_of_day = ?2, is_first_of_season = ?3 WHERE pk = ?1",
                )?;
                for (pk, day, season) in part {
                    update.execute(params![pk, day, season])?;
                }
            }
            tx.commit()?;
        }
    }
    Ok(found)
}

/// After an import brought older history (issue 38): the first-of-day, first-of-season and
/// first-for-team flags of `tenant`'s detections of `species` (codes), judged again in time
/// order and written where they differ.
pub fn recompute_species(conn: &mut Connection, tenant: crate::ids::TenantId, species: &[String]) -> Result<u64> {
    let zones = zones(conn)?;
    let mut fixes: Vec<(i64, bool, bool, bool)> = Vec::new();
    for code in species {
        let mut stmt = conn.prepare_cached(
            "SELECT d.pk, d.satellite_pk, d.detected_at, d.is_first_of_day, d.is_first_of_season, d.is_first_for_team
             FROM detections d
             WHERE d.tenant_pk = (SELECT pk FROM tenants WHERE id = ?1)
               AND d.species_pk = (SELECT pk FROM species_labels WHERE species_code = ?2)
             ORDER BY d.detected_at, d.pk",
        )?;
        let mut rows = stmt.query(params![tenant, code])?;
        let mut before: Option<DateTime<Utc>> = None;
        while let Some(r) = rows.next()? {
            let (pk, sat): (i64, i64) = (r.get(0)?, r.get(1)?);
            let at = DateTime::from_timestamp_millis(r.get(2)?).unwrap_or_default();
            let was: (bool, bool, bool) = (r.get(3)?, r.get(4)?, r.get(5)?);
            let tz = zones.get(&sat).copied().unwrap_or(chrono_tz::UTC);
            let (day, season) = firsts(before, at, tz);
            let now = (day, season, before.is_none());
            if now != was {
                fixes.push((pk, now.0, now.1, now.2));
            }
            before = Some(at);
        }
    }
    let changed = fixes.len() as u64;
    for part in fixes.chunks(5_000) {
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        {
            let mut update = tx.prepare_cached(
                "UPDATE detections SET is_first_of_day = ?2, is_first_of_season = ?3, is_first_for_team = ?4 WHERE pk = ?1",
            )?;
            for (pk, day, season, team) in part {
                update.execute(params![pk, day, season, team])?;
            }
        }
        tx.commit()?;
    }
    Ok(changed)
}
