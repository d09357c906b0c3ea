//! The trigger-kept rollups against a from-scratch aggregate, after random inserts, votes,
//! status changes and deletes (of a detection, a chunk, a satellite, a voter), over two teams.

use chrono::{DateTime, Utc};
use proptest::prelude::*;
use rusqlite::Connection;

use super::rollups::{drift, rebuild};
use crate::{
    domain::{consensus::Vote, detection_flags::Flags},
    ids::{ChunkId, DetectionId, SatelliteId, TenantId, UserId},
    store::{
        detections::{self, testing},
        migrate, users, votes,
    },
    time::Timestamp,
};

#[derive(Debug, Clone)]
enum Op {
    /// A detection on team `team % 2`, satellite `sat % 2`, `minutes` after the start, with a
    /// species and a confidence.
    Detect {
        team: usize,
        sat: usize,
        minutes: i64,
        species: usize,
        confidence: f64,
    },
    /// User `user % 3` of the detection's team votes on detection `pick % len`.
    Vote {
        pick: usize,
        user: usize,
        vote: u8,
    },
    /// Deletes detection `pick % len` alone, or its whole chunk.
    Delete {
        pick: usize,
        whole_chunk: bool,
    },
    DeleteSatellite {
        team: usize,
        sat: usize,
    },
    DeleteUser {
        user: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..2usize, 0..2usize, 0..(60 * 24 * 70i64), 0..4usize, 0.1f64..1.0)
            .prop_map(|(team, sat, minutes, species, confidence)| Op::Detect { team, sat, minutes, species, confidence }),
        3 => (any::<usize>(), 0..3usize, 0..3u8).prop_map(|(pick, user, vote)| Op::Vote { pick, user, vote }),
        2 => (any::<usize>(), any::<bool>()).prop_map(|(pick, whole_chunk)| Op::Delete { pick, whole_chunk }),
        1 => Just(Op::DeleteSatellite { team: 1, sat: 1 }),
        1 => (0..3usize).prop_map(|user| Op::DeleteUser { user }),
    ]
}

struct Team {
    id: TenantId,
    satellites: Vec<SatelliteId>,
    users: Vec<UserId>,
}

fn team(conn: &mut Connection, n: usize) -> Team {
    let user = |i: usize| users::NewUser {
        email: format!("u{i}@t{n}.org"),
        name: format!("U{i}"),
        password_hash: "x".into(),
        is_platform_admin: false,
    };
    let created = users::create_with_team(conn, &user(0), "t").expect("team");
    let mut members = vec![created.user_id];
    for i in 1..3 {
        members.push(
            users::create_in_tenant(conn, &user(i), created.tenant_id, crate::domain::Role::Member).expect("member"),
        );
    }
    let satellites = (0..2).map(|_| testing::satellite(conn, created.tenant_id).expect("satellite")).collect();
    Team { id: created.tenant_id, satellites, users: members }
}

fn apply(conn: &mut Connection, teams: &[Team], kept: &mut Vec<(usize, DetectionId, ChunkId)>, op: &Op) {
    let start = DateTime::<Utc>::UNIX_EPOCH + chrono::Duration::days(20_500);
    match *op {
        Op::Detect { team, sat, minutes, species, confidence } => {
            let t = &teams[team];
            let Some(&s) = t.satellites.get(sat) else { return };
            let exists: bool =
                conn.query_row("SELECT count(*) FROM satellites WHERE id = ?1", [s], |r| r.get(0)).expect("sat");
            if !exists {
                return;
            }
            let at = Timestamp(start + chrono::Duration::minutes(minutes));
            let chunk = testing::chunk(conn, t.id, s, at).expect("chunk");
            let mut d = testing::robin(t.id, s, chunk, at, Some(true));
            d.species_code = format!("sp{species}");
            d.confidence = confidence as f32;
            let stored = detections::insert(
                conn,
                &d,
                Flags { is_first_of_day: false, is_first_of_season: false, is_first_for_team: false, rare: None },
                at,
            )
            .expect("insert")
            .expect("stored");
            kept.push((team, stored.id, chunk));
        }
        Op::Vote { pick, user, vote } if !kept.is_empty() => {
            let (team, id, _) = kept[pick % kept.len()];
            let vote = [Vote::Confirm, Vote::Reject, Vote::Unsure][vote as usize];
            let t = &teams[team];
            let voter = t.users[user];
            let alive: bool =
                conn.query_row("SELECT count(*) FROM users WHERE id = ?1", [voter], |r| r.get(0)).expect("user");
            if alive {
                votes::cast(conn, t.id, id, voter, vote, None, Timestamp(Utc::now())).expect("vote");
            }
        }
        Op::Delete { pick, whole_chunk } if !kept.is_empty() => {
            let (_, id, chunk) = kept.remove(pick % kept.len());
            if whole_chunk {
                conn.execute("DELETE FROM audio_chunks WHERE id = ?1", [chunk]).expect("delete chunk");
            } else {
                conn.execute("DELETE FROM detections WHERE id = ?1", [id]).expect("delete");
            }
        }
        Op::DeleteSatellite { team, sat } => {
            conn.execute("DELETE FROM satellites WHERE id = ?1", [teams[team].satellites[sat]]).expect("delete");
            let gone: Vec<DetectionId> = kept
                .iter()
                .filter(|(_, id, _)| {
                    conn.query_row("SELECT count(*) = 0 FROM detections WHERE id = ?1", [*id], |r| r.get(0))
                        .expect("read")
                })
                .map(|k| k.1)
                .collect();
            kept.retain(|k| !gone.contains(&k.1));
        }
        Op::DeleteUser { user } => {
            conn.execute("DELETE FROM users WHERE id = ?1", [teams[0].users[user]]).expect("delete user");
        }
        _ => {}
    }
}

fn fresh() -> (Connection, Vec<Team>) {
    at(migrate::latest())
}

/// A database at schema `version` with two teams.
fn at(version: u32) -> (Connection, Vec<Team>) {
    let mut conn = Connection::open_in_memory().expect("open");
    conn.pragma_update(None, "foreign_keys", "ON").expect("fk");
    migrate::run_until(&mut conn, version).expect("migrate");
    let teams = vec![team(&mut conn, 0), team(&mut conn, 1)];
    (conn, teams)
}

/// The last schema whose rollups were keyed by UUIDs and codes, with `stats_daily`,
/// `stats_monthly` and `stats_day_species` (migration 0032 changed both).
const BEFORE_KEYS: u32 = 31;

/// Every rollup table the database has, by name.
fn rollup_tables(conn: &Connection) -> Vec<String> {
    conn.prepare(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE 'stats\\_%' ESCAPE '\\' ORDER BY name",
    )
    .expect("prepare")
    .query_map([], |r| r.get(0))
    .expect("query")
    .collect::<rusqlite::Result<_>>()
    .expect("names")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn rollups_equal_a_from_scratch_aggregate(ops in proptest::collection::vec(op(), 1..120)) {
        let (mut conn, teams) = fresh();
        let mut kept = Vec::new();
        for op in &ops {
            apply(&mut conn, &teams, &mut kept, op);
        }
        let drifted: Vec<_> = drift(&conn).expect("drift").into_iter().filter(|(_, n)| *n > 0).collect();
        prop_assert!(drifted.is_empty(), "rollups drifted: {drifted:?}");
        // A rebuild changes nothing.
        rebuild(&mut conn).expect("rebuild");
        let after: Vec<_> = drift(&conn).expect("drift").into_iter().filter(|(_, n)| *n > 0).collect();
        prop_assert!(after.is_empty(), "{after:?}");
    }
}

#[test]
fn the_migrations_fill_rollups_from_detections_already_stored() {
    // Detections stored before the rollups (migrations 0009 and 0028 fill them as below), then
    // upgraded to integer keys (0032).
    let (mut conn, teams) = at(BEFORE_KEYS);
    let mut kept = Vec::new();
    for minutes in [0, 30, 60 * 30] {
        let op = Op::Detect { team: 0, sat: 0, minutes, species: 1, confidence: 0.8 };
        apply(&mut conn, &teams, &mut kept, &op);
    }
    let old = rollup_tables(&conn);
    assert!(old.iter().any(|t| t == "stats_daily"), "{old:?}");
    for table in &old {
        conn.execute(&format!("DELETE FROM {table}"), []).expect("empty");
    }
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).expect("tx");
    let filled = super::rollups::fill(&tx).expect("fill");
    let grains = super::rollups::fill_grains(&tx).expect("fill grains");
    tx.commit().expect("commit");
    let dekads = grains.iter().find(|(t, _)| *t == "stats_dekads").map(|f| f.1);
    // Both days fall in one dekad.
    assert_eq!(dekads, Some(1));
    let daily = filled.iter().find(|(t, _)| *t == "stats_daily").map(|f| f.1);
    // Two days (0 and 30 minutes fall on one), one band, one satellite, one species.
    assert_eq!(daily, Some(2));
    migrate::run(&mut conn).expect("upgrade");
    let now = rollup_tables(&conn);
    let mut want: Vec<String> = super::rollups::TABLES.iter().map(|t| (*t).to_owned()).collect();
    want.sort();
    assert_eq!(now, want, "0032 dropped the three tables the others repeat");
    assert!(drift(&conn).expect("drift").iter().all(|(_, n)| *n == 0));
    let n: i64 = conn.query_row("SELECT sum(n) FROM stats_pair_months", [], |r| r.get(0)).expect("sum");
    assert_eq!(n, 3);
    let days: i64 = conn.query_row("SELECT count(*) FROM stats_pair_days", [], |r| r.get(0)).expect("days");
    assert_eq!(days, 2);
}

/// Row counts and sums of every column, per table: what a conversion must keep.
fn totals(conn: &Connection, tables: &[String]) -> Vec<(String, Vec<i64>)> {
    tables
        .iter()
        .map(|table| {
            let counts: Vec<String> = conn
                .prepare(&format!("SELECT name FROM pragma_table_info('{table}') WHERE type = 'INTEGER'"))
                .expect("columns")
                .query_map([], |r| r.get::<_, String>(0))
                .expect("query")
                .map(|c| c.expect("column"))
                .filter(|c| !c.ends_with("_pk"))
                .collect();
            let sums: Vec<String> = counts.iter().map(|c| format!("coalesce(sum({c}), 0)")).collect();
            let sql = format!("SELECT count(*), {} FROM {table}", sums.join(", "));
            let row = conn
                .query_row(&sql, [], |r| {
                    (0..=counts.len()).map(|i| r.get::<_, i64>(i)).collect::<rusqlite::Result<Vec<_>>>()
                })
                .expect("totals");
            (table.clone(), row)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// A hub with rows counted by the old triggers, upgraded to integer keys: the rollups hold
    /// what a from-scratch count of its detections gives, every table keeps its rows and sums,
    /// and the new triggers go on counting detections, votes and deletes right.
    #[test]
    fn upgrading_to_integer_keys_keeps_every_count(
        before in proptest::collection::vec(op(), 1..80),
        after in proptest::collection::vec(op(), 0..40),
    ) {
        let (mut conn, teams) = at(BEFORE_KEYS);
        let mut kept = Vec::new();
        for op in &before {
            apply(&mut conn, &teams, &mut kept, op);
        }
        let old = totals(&conn, &rollup_tables(&conn));
        migrate::run(&mut conn).expect("upgrade");
        let drifted: Vec<_> = drift(&conn).expect("drift").into_iter().filter(|(_, n)| *n > 0).collect();
        prop_assert!(drifted.is_empty(), "rollups drifted in the upgrade: {drifted:?}");
        let new = totals(&conn, &rollup_tables(&conn));
        for (table, sums) in &new {
            let was = old.iter().find(|(t, _)| t == table).map(|(_, s)| s);
            prop_assert_eq!(Some(sums), was, "{}", table);
        }
        for op in &after {
            apply(&mut conn, &teams, &mut kept, op);
        }
        let drifted: Vec<_> = drift(&conn).expect("drift").into_iter().filter(|(_, n)| *n > 0).collect();
        prop_assert!(drifted.is_empty(), "rollups drifted after the upgrade: {drifted:?}");
    }
}

/// `day hour` as it sorts: by day, then by the hour as a number.
fn heatmap_order(key: &str) -> (String, u8) {
    let (day, hour) = key.split_once(' ').expect("day and hour");
    (day.to_owned(), hour.parse().expect("hour"))
}

/// What a scope counts, straight from the detections (the test satellites keep UTC days).
fn brute(conn: &Connection, scope: &super::Scope, keys: &str) -> Vec<(String, i64)> {
    let sql = format!(
        "SELECT {keys}, count(*) FROM detections x JOIN tenants t ON t.pk = x.tenant_pk
           JOIN satellites s ON s.pk = x.satellite_pk JOIN species_labels l ON l.pk = x.species_pk
         WHERE t.id = ?1 AND date(x.detected_at / 1000, 'unixepoch') BETWEEN ?2 AND ?3
           AND CAST(x.confidence * 20 AS INTEGER) >= ?4 AND (?5 OR x.verification_status <> 'rejected')
           AND (?6 IS NULL OR s.id = ?6)
         GROUP BY 1 ORDER BY 1"
    );
    let mut stmt = conn.prepare(&sql).expect("prepare");
    let params = rusqlite::params![
        scope.tenant,
        super::day_key(scope.from),
        super::day_key(scope.to),
        scope.min_band,
        scope.include_rejected,
        scope.satellite
    ];
    stmt.query_map(params, |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("query")
        .collect::<rusqlite::Result<_>>()
        .expect("rows")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Every range, cut into days, dekads and months, with or without a satellite, a lowest band
    /// and the rejected detections, counts what the detections themselves say.
    #[test]
    fn statistics_over_any_range_count_what_the_detections_say(
        ops in proptest::collection::vec(op(), 1..80),
        ranges in proptest::collection::vec((0..75i64, 0..75i64, 0..3usize, 0..21u8, any::<bool>()), 1..6),
    ) {
        use super::{Scope, queries, series};
        let (mut conn, teams) = fresh();
        let mut kept = Vec::new();
        for op in &ops {
            apply(&mut conn, &teams, &mut kept, op);
        }
        let start = chrono::NaiveDate::from_ymd_opt(1970, 1, 1).expect("epoch") + chrono::Duration::days(20_500 - 2);
        for (a, b, sat, band, include_rejected) in ranges {
            let (from, to) = (start + chrono::Duration::days(a.min(b)), start + chrono::Duration::days(a.max(b)));
            let scope = Scope {
                tenant: teams[0].id,
                satellite: teams[0].satellites.get(sat).copied(),
                from,
                to,
                min_band: band,
                include_rejected,
                species: None,
            };
            let pairs = brute(&conn, &scope, "s.id || ' ' || l.species_code");
            let got: Vec<(String, i64)> = queries::by_satellite_species(&conn, &scope)
                .expect("pairs")
                .into_iter()
                .map(|(s, sp, n)| (format!("{s} {sp}"), n))
                .collect();
            prop_assert_eq!(&got, &pairs, "{:?}", scope);
            let totals = queries::totals(&conn, &scope).expect("totals");
            prop_assert_eq!(totals, queries::totals_of(&queries::by_satellite_species(&conn, &scope).expect("pairs")));
            let days = brute(&conn, &scope, "date(x.detected_at / 1000, 'unixepoch')");
            let trend: Vec<(String, i64)> =
                series::by_day(&conn, &scope).expect("days").into_iter().map(|(d, n, _)| (d, n)).collect();
            prop_assert_eq!(trend, days, "{:?}", scope);
            let hours = brute(&conn, &scope, "CAST(strftime('%H', x.detected_at / 1000, 'unixepoch') AS INTEGER) || ' ' || s.id");
            let mut by_hour: Vec<(String, i64)> = series::by_hour_satellite(&conn, &scope)
                .expect("hours")
                .into_iter()
                .map(|(h, s, n)| (format!("{h} {s}"), n))
                .collect();
            by_hour.sort();
            prop_assert_eq!(by_hour, hours, "{:?}", scope);
            let day_hours = brute(&conn, &scope, "date(x.detected_at / 1000, 'unixepoch') || ' ' || CAST(strftime('%H', x.detected_at / 1000, 'unixepoch') AS INTEGER)");
            let heatmap: Vec<(String, i64)> = series::by_day_hour(&conn, &scope)
                .expect("heatmap")
                .into_iter()
                .map(|(d, h, n)| (format!("{d} {h}"), n))
                .collect();
            let mut sorted = day_hours.clone();
            sorted.sort_by_key(|a| heatmap_order(&a.0));
            prop_assert_eq!(heatmap, sorted, "{:?}", scope);
            let months = brute(&conn, &scope, "l.species_code || ' ' || strftime('%Y-%m', x.detected_at / 1000, 'unixepoch')");
            let migration: Vec<(String, i64)> = queries::by_species_month(&conn, &scope)
                .expect("months")
                .into_iter()
                .map(|(sp, m, n)| (format!("{sp} {m}"), n))
                .collect();
            prop_assert_eq!(migration, months, "{:?}", scope);
            if scope.satellite.is_none() {
                // A species profile's days and hours, and the daily grid, are of all satellites.
                let species_hours = brute(&conn, &scope, "l.species_code || ' ' || CAST(strftime('%H', x.detected_at / 1000, 'unixepoch') AS INTEGER)");
                let mut grid: Vec<(String, i64)> = series::species_hour(&conn, &scope)
                    .expect("grid")
                    .into_iter()
                    .map(|(sp, h, n)| (format!("{sp} {h}"), n))
                    .collect();
                grid.sort();
                prop_assert_eq!(grid, species_hours, "{:?}", scope);
                let want: Vec<(String, i64)> = brute(&conn, &scope, "l.species_code || ' ' || date(x.detected_at / 1000, 'unixepoch') || ' ' || CAST(strftime('%H', x.detected_at / 1000, 'unixepoch') AS INTEGER)")
                    .into_iter()
                    .filter_map(|(k, n)| k.strip_prefix("sp1 ").map(|k| (k.to_owned(), n)))
                    .collect();
                let mut got: Vec<(String, i64)> = series::species_day_hour(&conn, &scope, "sp1")
                    .expect("profile hours")
                    .into_iter()
                    .map(|(d, h, n)| (format!("{d} {h}"), n))
                    .collect();
                got.sort();
                prop_assert_eq!(got, want, "{:?}", scope);
            }
            let all = Scope { include_rejected: true, ..scope.clone() };
            let total: i64 = brute(&conn, &all, "'all'").iter().map(|r| r.1).sum();
            prop_assert_eq!(queries::detections(&conn, &all).expect("detections"), total);
        }
    }
}
