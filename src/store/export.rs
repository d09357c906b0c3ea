//! Reading detections for an export (SPEC 4.7): every matching row in time order, a page at a
//! time after a cursor (keyset paging on `(detected_at, id)` over the team's time index), so an
//! export of millions of rows holds one page in memory and each page costs the same.
//!
//! [`page`] reads the listed detection; [`placed_page`] adds where and in which recording it was
//! heard (the chunk's position and audio, the satellite's position, the session), which the
//! citizen-science formats need.

use rusqlite::{Connection, types::Value};

use super::{
    Result,
    detections::{SELECT, Stored, from_row},
};
use crate::{
    ids::{SatelliteId, TenantId},
    time::Timestamp,
};

/// Which detections an export holds (the filters of `GET /detections`, plus a time range).
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub satellite: Option<SatelliteId>,
    /// Species codes; `None` for all.
    pub species: Option<Vec<String>>,
    pub verification_status: Option<String>,
    pub min_confidence: Option<f64>,
    /// Detected at or after `from` and before `to`.
    pub from: Option<Timestamp>,
    pub to: Option<Timestamp>,
    /// Leave out rejected detections (what citizen-science exports want).
    pub exclude_rejected: bool,
}

/// Where the previous page ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub detected_at: Timestamp,
    pub id: crate::ids::DetectionId,
}

impl Cursor {
    pub fn after(d: &Stored) -> Self {
        Self { detected_at: d.detected_at, id: d.id }
    }
}

/// A detection with where and in which recording it was heard.
#[derive(Debug, Clone)]
pub struct Placed {
    pub detection: Stored,
    /// The chunk's own position (a phone's GPS), else `None`.
    pub chunk_latitude: Option<f64>,
    pub chunk_longitude: Option<f64>,
    /// The satellite's registered position.
    pub satellite_latitude: Option<f64>,
    pub satellite_longitude: Option<f64>,
    pub recorded_at: Timestamp,
    pub duration_ms: i64,
    pub sample_rate: i64,
    pub size_bytes: i64,
    /// The recording session: id, start, end.
    pub session: Option<(String, Timestamp, Timestamp)>,
}

/// The columns [`placed_page`] reads after the detection's.
const PLACED: &str = ", c.latitude, c.longitude, s.latitude, s.longitude, c.recorded_at, c.duration_ms, c.sample_rate,
     c.size_bytes, rs.id, rs.started_at, rs.ended_at FROM detections d";

/// Up to `limit` detections of `tenant` matching `f` after `after`, oldest first (ties by id).
pub fn page(
    conn: &Connection,
    tenant: TenantId,
    f: &Filter,
    after: Option<&Cursor>,
    limit: usize,
) -> Result<Vec<Stored>> {
    let (sql, args) = query(tenant, f, after, limit, false);
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(rusqlite::params_from_iter(args), from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// [`page`] with each detection's place and recording.
pub fn placed_page(
    conn: &Connection,
    tenant: TenantId,
    f: &Filter,
    after: Option<&Cursor>,
    limit: usize,
) -> Result<Vec<Placed>> {
    let (sql, args) = query(tenant, f, after, limit, true);
    let mut stmt = conn.prepare_cached(&sql)?;
    // The place and recording columns come after the detection's own.
    let k = super::detections::COLUMNS;
    let rows = stmt.query_map(rusqlite::params_from_iter(args), |r| {
        let session = match r.get::<_, Option<String>>(k + 8)? {
            Some(id) => Some((id, r.get(k + 9)?, r.get(k + 10)?)),
            None => None,
        };
        Ok(Placed {
            detection: from_row(r)?,
            chunk_latitude: r.get(k)?,
            chunk_longitude: r.get(k + 1)?,
            satellite_latitude: r.get(k + 2)?,
            satellite_longitude: r.get(k + 3)?,
            recorded_at: r.get(k + 4)?,
            duration_ms: r.get(k + 5)?,
            sample_rate: r.get(k + 6)?,
            size_bytes: r.get(k + 7)?,
            session,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

fn query(tenant: TenantId, f: &Filter, after: Option<&Cursor>, limit: usize, placed: bool) -> (String, Vec<Value>) {
    let mut clauses = vec!["d.tenant_pk = (SELECT pk FROM tenants WHERE id = ?)".to_owned()];
    let mut args = vec![Value::Text(tenant.to_string())];
    if let Some(c) = after {
        clauses.push("(d.detected_at, d.id) > (?, ?)".into());
        // Ids are stored as their 16 bytes, which sort as the text does.
        args.extend([Value::Integer(c.detected_at.millis()), Value::from(c.id)]);
    }
    if let Some(s) = f.satellite {
        clauses.push("d.satellite_pk = (SELECT pk FROM satellites WHERE id = ?)".into());
        args.push(Value::Text(s.to_string()));
    }
    if let Some(codes) = &f.species {
        clauses.push(format!(
            "d.species_pk IN (SELECT pk FROM species_labels WHERE species_code IN ({}))",
            vec!["?"; codes.len().max(1)].join(",")
        ));
        if codes.is_empty() {
            args.push(Value::Null);
        }
        args.extend(codes.iter().map(|c| Value::Text(c.clone())));
    }
    if let Some(status) = &f.verification_status {
        clauses.push("d.verification_status = ?".into());
        args.push(Value::Text(status.clone()));
    }
    if f.exclude_rejected {
        clauses.push("d.verification_status <> 'rejected'".into());
    }
    if let Some(min) = f.min_confidence {
        // `+`: a filter, not an index to walk (the time index gives the order).
        clauses.push("+d.confidence >= ?".into());
        args.push(Value::Real(min));
    }
    if let Some(from) = f.from {
        clauses.push("d.detected_at >= ?".into());
        args.push(Value::Integer(from.millis()));
    }
    if let Some(to) = f.to {
        clauses.push("d.detected_at < ?".into());
        args.push(Value::Integer(to.millis()));
    }
    args.push(Value::Integer(limit as i64));
    let mut select = SELECT.replacen("FROM detections d", "FROM detections d INDEXED BY detections_tenant_time", 1);
    if placed {
        select = select.replacen(" FROM detections d", PLACED, 1)
            + " LEFT JOIN recording_sessions rs ON rs.pk = c.session_pk";
    }
    let sql = format!("{select} WHERE {} ORDER BY d.detected_at, d.id LIMIT ?", clauses.join(" AND "));
    (sql, args)
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};

    use super::*;
    use crate::{
        domain::detection_flags::Flags,
        store::{detections, detections::testing, migrate, users},
    };

    fn db() -> (Connection, TenantId, SatelliteId) {
        let mut conn = Connection::open_in_memory().expect("open");
        conn.pragma_update(None, "foreign_keys", "ON").expect("fk");
        migrate::run(&mut conn).expect("migrate");
        let new = users::NewUser {
            email: "a@b.org".into(),
            name: "A".into(),
            password_hash: "x".into(),
            is_platform_admin: false,
        };
        let created = users::create_with_team(&mut conn, &new, "t").expect("user");
        let sat = testing::satellite(&conn, created.tenant_id).expect("satellite");
        (conn, created.tenant_id, sat)
    }

    #[test]
    fn the_detections_own_columns_are_counted_where_the_place_columns_start() {
        let (conn, _, _) = db();
        let stmt = conn.prepare(super::super::detections::SELECT).expect("the detection select");
        assert_eq!(stmt.column_count(), super::super::detections::COLUMNS);
    }

    #[test]
    fn pages_after_a_cursor_return_every_row_once_in_time_order() {
        let (mut conn, tenant, sat) = db();
        let start = DateTime::<Utc>::UNIX_EPOCH + chrono::Duration::days(20_500);
        let flags = Flags { is_first_of_day: false, is_first_of_season: false, is_first_for_team: false, rare: None };
        let mut want = Vec::new();
        // Three detections share each second: ties are ordered by id, and none is skipped.
        for i in 0..24i64 {
            let at = Timestamp(start + chrono::Duration::seconds(i / 3));
            let chunk = testing::chunk(&mut conn, tenant, sat, at).expect("chunk");
            let mut d = testing::robin(tenant, sat, chunk, at, Some(true));
            d.confidence = if i % 4 == 0 { 0.5 } else { 0.9 };
            d.species_code = format!("sp{}", i % 3);
            let stored = detections::insert(&conn, &d, flags, at).expect("insert").expect("stored");
            want.push((stored.detected_at, stored.id.to_string()));
        }
        want.sort();
        let mut got = Vec::new();
        let mut after = None;
        loop {
            let rows = page(&conn, tenant, &Filter::default(), after.as_ref(), 7).expect("page");
            let Some(last) = rows.last() else { break };
            after = Some(Cursor::after(last));
            got.extend(rows.iter().map(|d| (d.detected_at, d.id.to_string())));
        }
        assert_eq!(got, want);

        let f = Filter {
            species: Some(vec!["sp1".into()]),
            min_confidence: Some(0.8),
            from: Some(Timestamp(start + chrono::Duration::seconds(2))),
            ..Filter::default()
        };
        let rows = page(&conn, tenant, &f, None, 100).expect("filtered");
        assert!(!rows.is_empty());
        assert!(rows.iter().all(|d| d.species_code == "sp1"
            && d.confidence >= 0.8
            && d.detected_at.at() >= start + chrono::Duration::seconds(2)));
        let none =
            page(&conn, tenant, &Filter { species: Some(vec![]), ..Filter::default() }, None, 100).expect("empty");
        assert!(none.is_empty(), "an empty species list matches nothing");
    }
}
