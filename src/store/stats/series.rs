//! Series over the day-keyed rollups: per day, per day, hour and satellite, one species' days
//! and hours; chunk counts and the votes of the leaderboard.

use rusqlite::{Connection, types::Value};

use super::{super::Result, Names, Scope, each, rows};

/// `(day, detections, species)` for each day of the scope with counted detections.
///
/// The team's days come from the per-day species table, one satellite's from the per-day
/// satellite-and-species table through its index; their kept columns leave rejected detections
/// out. Either gives a row per day and species in day order, added up here as they come: a year
/// of one satellite is some 12,000 rows, and an aggregate step per row and column was most of
/// the work.
pub fn by_day(conn: &Connection, scope: &Scope) -> Result<Vec<(String, i64, i64)>> {
    let col = if scope.include_rejected { scope.column() } else { scope.kept_column() };
    let sql = match scope.satellite {
        None => format!(
            "SELECT day, {col} FROM stats_species_days
             WHERE tenant_pk = :tk AND day BETWEEN :from AND :to AND {col} > 0 ORDER BY day"
        ),
        Some(_) => format!(
            "SELECT day, {col} FROM stats_pair_days INDEXED BY stats_pair_days_satellite
             WHERE tenant_pk = :tk AND satellite_pk = :sk AND day BETWEEN :from AND :to AND {col} > 0
             ORDER BY day"
        ),
    };
    let mut out: Vec<(String, i64, i64)> = Vec::new();
    each(conn, &sql, &scope.keyed(conn)?, |r| {
        let (day, n) = (r.get_ref(0)?.as_str()?, r.get::<_, i64>(1)?);
        match out.last_mut() {
            Some(last) if last.0 == day => {
                last.1 += n;
                last.2 += 1;
            }
            _ => out.push((day.to_owned(), n, 1)),
        }
        Ok(())
    })?;
    Ok(out)
}

/// `(day, hour, detections)` with counted detections, all satellites (or the scope's one).
pub fn by_day_hour(conn: &Connection, scope: &Scope) -> Result<Vec<(String, u8, i64)>> {
    if scope.satellite.is_some() {
        return satellite_day_hour(conn, scope);
    }
    let col = if scope.include_rejected { scope.column() } else { scope.kept_column() };
    let sql = format!(
        "SELECT day, hour, {col} FROM stats_hour_days
         WHERE tenant_pk = :tk AND day BETWEEN :from AND :to AND {col} > 0 ORDER BY day, hour"
    );
    rows(conn, &sql, &scope.keyed(conn)?, |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
}

/// `(hour, satellite, detections)` over the scope's range with counted detections: whole months
/// from `stats_hour_months`, other days from `stats_hourly`.
pub fn by_hour_satellite(conn: &Connection, scope: &Scope) -> Result<Vec<(u8, String, i64)>> {
    let sql = format!(
        "SELECT hour, satellite_pk, sum(c) FROM {} GROUP BY hour, satellite_pk HAVING sum(c) > 0",
        scope.counts("hour, satellite_pk", super::Family::HOUR_SATELLITE)
    );
    let found = rows(conn, &sql, &scope.keyed(conn)?, |r| Ok((r.get::<_, u8>(0)?, r.get::<_, i64>(1)?, r.get(2)?)))?;
    let mut names = Names::new(conn);
    let mut out = Vec::with_capacity(found.len());
    for (hour, satellite, n) in found {
        out.push((hour, names.satellite(satellite)?, n));
    }
    out.sort_unstable();
    Ok(out)
}

/// One satellite's `(day, hour, detections)` with counted detections: its rows of
/// `stats_hourly` through its own index, less its rejected detections unless they count.
fn satellite_day_hour(conn: &Connection, scope: &Scope) -> Result<Vec<(String, u8, i64)>> {
    let sql = format!(
        "SELECT day, hour, sum(c) AS c FROM (
             SELECT day, hour, {} AS c FROM stats_hourly INDEXED BY stats_hourly_satellite
             WHERE tenant_pk = :tk AND satellite_pk = :sk AND day BETWEEN :from AND :to
             UNION ALL {})
         GROUP BY day, hour HAVING sum(c) > 0 ORDER BY day, hour",
        scope.column(),
        scope.rejected("day, hour")
    );
    rows(conn, &sql, &scope.keyed(conn)?, |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
}

/// For one species (all satellites): `(day, hour, detections)` with counted detections. Its
/// rejected ones (a row per hour, band and satellite) are read through their species index and
/// taken off here, rather than sorted with the counts to group them.
pub fn species_day_hour(conn: &Connection, scope: &Scope, code: &str) -> Result<Vec<(String, u8, i64)>> {
    let rejected = if scope.include_rejected {
        ""
    } else {
        " UNION ALL SELECT day, hour, -n AS c FROM stats_verdicts INDEXED BY stats_verdicts_species
         WHERE tenant_pk = :tk AND species_pk = :spk AND status = 'rejected' AND day BETWEEN :from AND :to
           AND band >= :band"
    };
    let sql = format!(
        "SELECT day, hour, {} AS c FROM stats_species_hourly
         WHERE tenant_pk = :tk AND species_pk = :spk AND day BETWEEN :from AND :to{rejected}",
        scope.column(),
    );
    let params = Scope { species: Some(code.to_owned()), ..scope.clone() }.keyed(conn)?;
    let mut sums: std::collections::BTreeMap<(String, u8), i64> = std::collections::BTreeMap::new();
    each(conn, &sql, &params, |r| {
        *sums.entry((r.get(0)?, r.get(1)?)).or_default() += r.get::<_, i64>(2)?;
        Ok(())
    })?;
    Ok(sums.into_iter().filter(|(_, n)| *n > 0).map(|((day, hour), n)| (day, hour, n)).collect())
}

/// Chunks received in the scope's days (of its satellite, or all).
pub fn chunks(conn: &Connection, scope: &Scope) -> Result<i64> {
    let found = rows(
        conn,
        "SELECT coalesce(sum(n), 0) FROM stats_chunks
         WHERE tenant_pk = :tk AND day BETWEEN :from AND :to AND (:sat IS NULL OR satellite_pk = :sk)",
        &scope.keyed(conn)?,
        |r| r.get(0),
    )?;
    Ok(found.first().copied().unwrap_or(0))
}

/// A voter's votes in a range of days.
#[derive(Debug, Clone, PartialEq)]
pub struct Voter {
    pub user_id: String,
    pub name: String,
    pub confirm: i64,
    pub reject: i64,
    pub unsure: i64,
}

/// The team's voters with their votes cast in the scope's days, most votes first. Voters who
/// left the team keep their place (their votes still stand).
pub fn voters(conn: &Connection, scope: &Scope, limit: usize) -> Result<Vec<Voter>> {
    let mut params = scope.keyed(conn)?;
    params.push((":limit", Value::Integer(limit as i64)));
    rows(
        conn,
        "SELECT v.user_id, coalesce(u.name, ''), sum(CASE WHEN v.vote = 'confirm' THEN v.n ELSE 0 END),
                sum(CASE WHEN v.vote = 'reject' THEN v.n ELSE 0 END), sum(CASE WHEN v.vote = 'unsure' THEN v.n ELSE 0 END),
                sum(v.n) AS total
         FROM stats_votes v LEFT JOIN users u ON u.id = v.user_id
         WHERE v.tenant_id = :t AND v.day BETWEEN :from AND :to
         GROUP BY v.user_id ORDER BY total DESC, v.user_id LIMIT :limit",
        &params,
        |r| Ok(Voter { user_id: r.get(0)?, name: r.get(1)?, confirm: r.get(2)?, reject: r.get(3)?, unsure: r.get(4)? }),
    )
}

/// `(species, hour, detections)` over the scope's days, all species, from `stats_species_hourly`
/// (the Live page's daily activity grid).
pub fn species_hour(conn: &Connection, scope: &Scope) -> Result<Vec<(String, u8, i64)>> {
    let sql = format!(
        "SELECT species_pk, hour, sum(c) AS c FROM (
             SELECT species_pk, hour, {} AS c FROM stats_species_hourly
             WHERE tenant_pk = :tk AND day BETWEEN :from AND :to
             UNION ALL SELECT species_pk, hour, c FROM ({}))
         GROUP BY species_pk, hour HAVING sum(c) > 0",
        scope.column(),
        scope.rejected("day, hour, species_pk")
    );
    let found = rows(conn, &sql, &scope.keyed(conn)?, |r| Ok((r.get::<_, i64>(0)?, r.get(1)?, r.get(2)?)))?;
    let mut names = Names::new(conn);
    let mut out = Vec::with_capacity(found.len());
    for (species, hour, n) in found {
        out.push((names.species(species)?, hour, n));
    }
    out.sort_unstable();
    Ok(out)
}
