//! The list's total against `count(*)`: exact from the rollups wherever it says so (confidences
//! on and around the band edges, several satellites, species and every status, two teams), and a
//! lower bound, flagged, when a small cap stops the count of a partial band.

use chrono::{DateTime, Utc};
use proptest::prelude::*;
use rusqlite::Connection;

use super::{
    detection_count::{Total, least_of_band},
    detection_list::{self, Query, SortBy},
    detections::{self, testing},
    migrate, users,
};
use crate::{
    domain::detection_flags::Flags,
    ids::{SatelliteId, TenantId},
    time::Timestamp,
};

/// Confidences on band edges (as the f32 the classifier gives and as exact doubles), a hair
/// either side of them, and between them. 0.45 has a double below it in its band: those rows
/// are counted by the rollups' `ge45` but are not `>= 0.45`.
fn confidences() -> Vec<f64> {
    let below = |x: f64| x.next_down();
    vec![
        0.05,
        0.1,
        0.42,
        below(below(0.45)),
        below(0.45),
        0.45,
        0.5,
        0.8499,
        0.85,
        0.8999,
        0.9,
        0.9001,
        0.93,
        0.95,
        0.97,
        0.9999,
        1.0,
    ]
}
const NO_FLAGS: Flags =
    Flags { is_first_of_day: false, is_first_of_season: false, is_first_for_team: false, rare: None };
const STATUSES: [&str; 4] = ["unverified", "confirmed", "rejected", "pending_review"];

struct Team {
    id: TenantId,
    satellites: Vec<SatelliteId>,
}

fn team(conn: &mut Connection, n: usize) -> Team {
    let owner = users::NewUser {
        email: format!("o@t{n}.org"),
        name: "O".into(),
        password_hash: "x".into(),
        is_platform_admin: false,
    };
    let id = users::create_with_team(conn, &owner, "t").expect("team").tenant_id;
    let satellites = (0..3).map(|_| testing::satellite(conn, id).expect("satellite")).collect();
    Team { id, satellites }
}

/// `n` detections of `team` spread over its satellites, four species, every confidence above
/// (some stored as f32, some as the exact double) and every status, a day apart.
fn fill(conn: &mut Connection, team: &Team, n: usize, seed: usize) {
    let start = DateTime::<Utc>::UNIX_EPOCH + chrono::Duration::days(20_500);
    let confidences = confidences();
    for i in 0..n {
        // 5 shares no factor with the numbers of satellites, species, confidences and statuses.
        let k = i * 5 + seed;
        let sat = team.satellites[k % team.satellites.len()];
        let at = Timestamp(start + chrono::Duration::hours(i as i64 * 13));
        let chunk = testing::chunk(conn, team.id, sat, at).expect("chunk");
        let mut d = testing::robin(team.id, sat, chunk, at, None);
        d.species_code = format!("sp{}", k % 4);
        d.confidence = confidences[k % confidences.len()] as f32;
        let stored = detections::insert(conn, &d, NO_FLAGS, at).expect("insert").expect("new");
        if k.is_multiple_of(3) {
            // Half of these as the exact double, not the f32 nearest it.
            conn.execute(
                "UPDATE detections SET confidence = ?1 WHERE id = ?2",
                rusqlite::params![confidences[k % confidences.len()], stored.id],
            )
            .expect("exact confidence");
        }
        let status = STATUSES[(k / 2) % STATUSES.len()];
        conn.execute(
            "UPDATE detections SET verification_status = ?1 WHERE id = ?2",
            rusqlite::params![status, stored.id],
        )
        .expect("status");
    }
}

/// Migrations, two teams with detections; the trigger on `confidence` updates is not there,
/// so the rollups are rebuilt after the exact doubles went in.
fn world() -> (Connection, Vec<Team>) {
    let mut conn = Connection::open_in_memory().expect("open");
    conn.pragma_update(None, "foreign_keys", "ON").expect("fk");
    migrate::run(&mut conn).expect("migrate");
    let teams = vec![team(&mut conn, 0), team(&mut conn, 1)];
    fill(&mut conn, &teams[0], 240, 0);
    fill(&mut conn, &teams[1], 60, 3);
    super::stats::rollups::rebuild(&mut conn).expect("rebuild");
    (conn, teams)
}

fn query(satellite: Option<SatelliteId>, species: Option<&str>, min: Option<f64>, status: Option<&str>) -> Query {
    Query {
        satellite_id: satellite,
        species_code: None,
        species_search: species.map(str::to_owned),
        named: Vec::new(),
        min_confidence: min,
        verification_status: status.map(str::to_owned),
        sort_by: SortBy::Date,
        descending: true,
        limit: 5,
        offset: 0,
        with_count: true,
    }
}

/// `count(*)` over the same filter, species by their codes.
fn counted(conn: &Connection, tenant: TenantId, q: &Query) -> u64 {
    let n: i64 = conn
        .query_row(
            "SELECT count(*) FROM detections d JOIN species_labels l ON l.pk = d.species_pk
             WHERE d.tenant_pk = (SELECT pk FROM tenants WHERE id = ?1)
               AND (?2 IS NULL OR d.satellite_pk = (SELECT pk FROM satellites WHERE id = ?2))
               AND (?3 IS NULL OR instr(l.species_code, ?3) > 0)
               AND (?4 IS NULL OR d.confidence >= ?4)
               AND (?5 IS NULL OR d.verification_status = ?5)",
            rusqlite::params![tenant, q.satellite_id, q.species_search, q.min_confidence, q.verification_status],
            |r| r.get(0),
        )
        .expect("count");
    n as u64
}

/// Every combination of the filters the count reads differently.
fn queries(team: &Team) -> Vec<Query> {
    let mut mins: Vec<Option<f64>> = vec![None, Some(0.0)];
    mins.extend(confidences().into_iter().map(Some));
    mins.extend([Some(f64::from(0.9f32)), Some(0.91), Some(0.0001), Some(0.96)]);
    let mut out = Vec::new();
    for satellite in [None, Some(team.satellites[1])] {
        // No species filter, one species ("sp2"), all four ("sp").
        for species in [None, Some("sp2"), Some("sp")] {
            for min in &mins {
                for status in [None, Some("unverified"), Some("confirmed"), Some("rejected"), Some("pending_review")] {
                    out.push(query(satellite, species, *min, status));
                }
            }
        }
    }
    out
}

#[test]
fn totals_are_exact_wherever_the_cap_is_not_reached() {
    let (conn, teams) = world();
    for team in &teams {
        for q in queries(team) {
            let (_, total) = detection_list::list_capped(&conn, team.id, &q, 10_000).expect("list");
            let want = counted(&conn, team.id, &q);
            assert_eq!(total, Some(Total { n: want, is_lower_bound: false }), "{q:?}");
        }
    }
}

#[test]
fn a_small_cap_keeps_steps_exact_and_flags_what_it_stopped_counting() {
    let (conn, teams) = world();
    let (mut exact, mut bounded) = (0, 0);
    for team in &teams {
        for q in queries(team) {
            let (_, total) = detection_list::list_capped(&conn, team.id, &q, 12).expect("list");
            let total = total.expect("counted");
            let want = counted(&conn, team.id, &q);
            // A step as people write it: 0.9, 0.45.
            let on_edge = q.min_confidence.is_none_or(|m| (m * 20.0).round() / 20.0 == m);
            if on_edge || !total.is_lower_bound {
                assert_eq!(total, Total { n: want, is_lower_bound: false }, "exact: {q:?}");
                exact += 1;
            } else {
                assert!(total.n <= want, "a lower bound: {} of {want}, {q:?}", total.n);
                bounded += 1;
            }
        }
    }
    assert!(bounded > 0, "some partial bands are longer than the cap");
    assert!(exact > bounded, "the edges and short bands are exact");
}

#[test]
fn past_the_cap_the_total_says_it_is_a_lower_bound() {
    let (conn, teams) = world();
    // 0.91 lies inside the 0.90 band: the rows from 0.91 to 0.95 are read, at most `cap` of them.
    let q = query(None, None, Some(0.91), None);
    let want = counted(&conn, teams[0].id, &q);
    let above = counted(&conn, teams[0].id, &query(None, None, Some(0.95), None));
    let (rows, total) = detection_list::list_capped(&conn, teams[0].id, &q, 2).expect("list");
    let total = total.expect("counted");
    assert!(total.is_lower_bound, "{total:?}");
    assert!(above < total.n && total.n < want, "{above} < {} < {want}", total.n);
    assert_eq!(rows.len(), 5, "the page itself is whole");
    let (_, uncapped) = detection_list::list_capped(&conn, teams[0].id, &q, 10_000).expect("list");
    assert_eq!(uncapped, Some(Total { n: want, is_lower_bound: false }));
}

#[test]
fn each_band_starts_at_its_step_or_a_double_or_two_below_it() {
    for k in 0..=20u8 {
        let step = f64::from(k) / 20.0;
        let least = least_of_band(k);
        assert!(least <= step && step.to_bits() - least.to_bits() <= 2, "band {k} starts at {least:e}");
    }
    assert!(least_of_band(9) < 0.45, "0.45 is one of the steps with a double below it in its band");
}

proptest! {
    /// `c >= least_of_band(k)` and the rollups' band test agree for every confidence, including
    /// the doubles next to each step and the f32 values the classifier gives.
    #[test]
    fn the_band_test_agrees_with_the_comparison(k in 0..=20u8, c in 0.0f64..=1.0, ulps in -4i64..=4) {
        let min = least_of_band(k);
        let near = f64::from_bits((min.to_bits() as i64 + ulps).max(0) as u64);
        for c in [c, near, f64::from(c as f32), f64::from(near as f32)] {
            let band = (c * 20.0) as i64;
            prop_assert_eq!(c >= min, band >= i64::from(k), "c = {:e}, k = {}", c, k);
        }
    }
}
