//! The incremental sessions against the rule applied from scratch, for chunks arriving in any
//! order, and the start-up backfill.

use chrono::{DateTime, Utc};
use proptest::prelude::*;
use rusqlite::Connection;

use super::*;
use crate::store::{migrate, users};

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
    let sat = crate::store::detections::testing::satellite(&conn, created.tenant_id).expect("satellite");
    (conn, created.tenant_id, sat)
}

fn at(ms: i64) -> String {
    crate::time::format(
        DateTime::<Utc>::UNIX_EPOCH + chrono::Duration::days(20_000) + chrono::Duration::milliseconds(ms),
    )
}

/// Inserts a chunk row at `ms` without a session (as an older hub would have).
fn bare_chunk(conn: &Connection, tenant: TenantId, sat: SatelliteId, ms: i64) -> ChunkId {
    let id = ChunkId::new();
    conn.execute(
        "INSERT INTO audio_chunks (id, tenant_pk, satellite_pk, recorded_at, duration_ms, sample_rate, storage_key, size_bytes)
         VALUES (?1, (SELECT pk FROM tenants WHERE id = ?2), (SELECT pk FROM satellites WHERE id = ?3),
                 CAST(round((julianday(?4) - 2440587.5) * 86400000) AS INTEGER), 3000, 48000, 'k', 1)",
        params![id, tenant, sat, at(ms)],
    )
    .expect("chunk");
    id
}

/// (start, end, chunk count) of every session, oldest first.
fn sessions(conn: &Connection) -> Vec<(String, String, i64)> {
    let mut stmt = conn
        .prepare("SELECT started_at, ended_at, chunk_count FROM recording_sessions ORDER BY started_at")
        .expect("prepare");
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).expect("query").map(|r| r.expect("row")).collect()
}

/// The rule from scratch: sort, split where the start-to-start gap reaches 5 minutes.
fn expected(mut starts: Vec<i64>) -> Vec<(String, String, i64)> {
    starts.sort_unstable();
    let mut out: Vec<(i64, i64, i64)> = Vec::new();
    for s in starts {
        match out.last_mut() {
            Some((_, last_start, n)) if s - *last_start < GAP_MS => {
                *last_start = s;
                *n += 1;
            }
            _ => out.push((s, s, 1)),
        }
    }
    out.into_iter().map(|(first, last, n)| (at(first), at(last + 3000), n)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_arrival_order_gives_the_sessions_of_the_rule(
        gaps in prop::collection::vec(prop_oneof![0i64..10_000, 200_000i64..400_000, Just(GAP_MS), Just(GAP_MS - 1)], 1..40),
        order_seed in any::<u64>(),
    ) {
        let starts: Vec<i64> = gaps.iter().scan(0i64, |t, g| { *t += g; Some(*t) }).collect();
        let mut arrival = starts.clone();
        // A deterministic shuffle from the seed (a satellite's outbox can deliver in any order).
        let mut state = order_seed | 1;
        for i in (1..arrival.len()).rev() {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17;
            arrival.swap(i, (state % (i as u64 + 1)) as usize);
        }
        let (conn, tenant, sat) = db();
        for ms in &arrival {
            let chunk = bare_chunk(&conn, tenant, sat, *ms);
            add_chunk(&conn, chunk, tenant, sat, at(*ms).parse().expect("time"), 3000).expect("add");
        }
        prop_assert_eq!(sessions(&conn), expected(starts));
        let orphans: i64 = conn
            .query_row("SELECT count(*) FROM audio_chunks WHERE session_pk IS NULL OR session_pk NOT IN (SELECT pk FROM recording_sessions)", [], |r| r.get(0))
            .expect("count");
        prop_assert_eq!(orphans, 0);
    }
}

#[test]
fn backfill_places_old_chunks_and_counts_their_detections() {
    let (mut conn, tenant, sat) = db();
    let first = bare_chunk(&conn, tenant, sat, 0);
    bare_chunk(&conn, tenant, sat, 3_000);
    bare_chunk(&conn, tenant, sat, GAP_MS + 3_000);
    let robin = crate::store::detections::label(&conn, "turdus-migratorius", "Turdus migratorius", "American Robin")
        .expect("label");
    conn.execute(
        "INSERT INTO detections (id, tenant_pk, satellite_pk, chunk_pk, model_id, species_pk, confidence, detected_at)
         VALUES (?5, (SELECT pk FROM tenants WHERE id = ?1), (SELECT pk FROM satellites WHERE id = ?2),
                 (SELECT pk FROM audio_chunks WHERE id = ?3), 'm', ?6, 0.9,
                 CAST(round((julianday(?4) - 2440587.5) * 86400000) AS INTEGER))",
        params![tenant, sat, first, at(0), crate::ids::DetectionId::new(), robin],
    )
    .expect("detection");
    assert_eq!(backfill(&mut conn).expect("backfill"), 3);
    assert_eq!(backfill(&mut conn).expect("again"), 0, "idempotent");
    assert_eq!(sessions(&conn).iter().map(|s| s.2).collect::<Vec<_>>(), [2, 1]);
    let (detections, species): (i64, i64) = conn
        .query_row(
            "SELECT detection_count, species_count FROM recording_sessions ORDER BY started_at LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("summary");
    assert_eq!((detections, species), (1, 1));
}
