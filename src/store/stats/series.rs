//! Series over the day-keyed rollups: per day, per hour, per day and hour, per satellite and
//! hour; chunk counts and the votes of the leaderboard.

use rusqlite::{Connection, params_from_iter, types::Value};

use super::{super::Result, Scope};

/// `(day, detections, species)` for each day of the scope with counted detections.
pub fn by_day(conn: &Connection, scope: &Scope) -> Result<Vec<(String, i64, i64)>> {
    let cnt = scope.count();
    let sql = format!(
        "SELECT day, sum({cnt}) AS c, count(DISTINCT CASE WHEN {cnt} > 0 THEN species_code END) FROM stats_daily
         WHERE tenant_id = ?1 AND day BETWEEN ?4 AND ?5 AND band >= ?2 AND (?3 IS NULL OR satellite_id = ?3)
         GROUP BY day HAVING c > 0 ORDER BY day"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params_from_iter(scope.days()), |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// `(day, hour, satellite, detections)` with counted detections, from `stats_hourly`.
pub fn by_day_hour_satellite(conn: &Connection, scope: &Scope) -> Result<Vec<(String, u8, String, i64)>> {
    let cnt = scope.count();
    let sql = format!(
        "SELECT day, hour, satellite_id, sum({cnt}) AS c FROM stats_hourly
         WHERE tenant_id = ?1 AND day BETWEEN ?4 AND ?5 AND band >= ?2 AND (?3 IS NULL OR satellite_id = ?3)
         GROUP BY day, hour, satellite_id HAVING c > 0 ORDER BY day, hour, satellite_id"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params_from_iter(scope.days()), |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// For one species (all satellites): `(day, hour, detections)` with counted detections.
pub fn species_day_hour(conn: &Connection, scope: &Scope, code: &str) -> Result<Vec<(String, u8, i64)>> {
    let cnt = scope.count();
    let sql = format!(
        "SELECT day, hour, sum({cnt}) AS c FROM stats_species_hourly
         WHERE tenant_id = ?1 AND species_code = ?6 AND day BETWEEN ?4 AND ?5 AND band >= ?2 AND ?3 IS NULL
         GROUP BY day, hour HAVING c > 0 ORDER BY day, hour"
    );
    let mut p = scope.days();
    p.push(Value::Text(code.to_owned()));
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params_from_iter(p), |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Chunks received in the scope's days (of its satellite, or all).
pub fn chunks(conn: &Connection, scope: &Scope) -> Result<i64> {
    Ok(conn
        .prepare_cached(
            "SELECT coalesce(sum(n), 0) FROM stats_chunks
             WHERE tenant_id = ?1 AND day BETWEEN ?2 AND ?3 AND (?4 IS NULL OR satellite_id = ?4)",
        )?
        .query_row(
            params_from_iter([
                Value::Text(scope.tenant.to_string()),
                Value::Text(super::day_key(scope.from)),
                Value::Text(super::day_key(scope.to)),
                scope.satellite.map_or(Value::Null, |s| Value::Text(s.to_string())),
            ]),
            |r| r.get(0),
        )?)
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
    let mut stmt = conn.prepare_cached(
        "SELECT v.user_id, coalesce(u.name, ''), sum(CASE WHEN v.vote = 'confirm' THEN v.n ELSE 0 END),
                sum(CASE WHEN v.vote = 'reject' THEN v.n ELSE 0 END), sum(CASE WHEN v.vote = 'unsure' THEN v.n ELSE 0 END),
                sum(v.n) AS total
         FROM stats_votes v LEFT JOIN users u ON u.id = v.user_id
         WHERE v.tenant_id = ?1 AND v.day BETWEEN ?2 AND ?3
         GROUP BY v.user_id ORDER BY total DESC, v.user_id LIMIT ?4",
    )?;
    let rows = stmt.query_map(
        params_from_iter([
            Value::Text(scope.tenant.to_string()),
            Value::Text(super::day_key(scope.from)),
            Value::Text(super::day_key(scope.to)),
            Value::Integer(limit as i64),
        ]),
        |r| Ok(Voter { user_id: r.get(0)?, name: r.get(1)?, confirm: r.get(2)?, reject: r.get(3)?, unsure: r.get(4)? }),
    )?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
