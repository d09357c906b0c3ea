//! Upgrading a database with data from schema 0015 to 0016 (the compact layout): every
//! detection, chunk and session is kept, the store answers as before, and the triggers still
//! keep their summaries.

use rusqlite::Connection;

use super::{
    chunks, detection_list, detections,
    detections::testing::{robin, satellite},
    migrate, recording_sessions, timeline, users,
};
use crate::{
    domain::sort::SortField,
    ids::{ChunkId, SatelliteId, TenantId},
    time::Timestamp,
};

/// A file database at schema 0015, as a hub before the compact layout left it.
fn at_0015(path: &std::path::Path) -> Connection {
    let conn = Connection::open(path).expect("open");
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON;").expect("pragmas");
    for (version, _, sql) in migrate::MIGRATIONS.iter().filter(|m| m.0 <= 15) {
        conn.execute_batch(sql).expect("old migration");
        conn.pragma_update(None, "user_version", version).expect("version");
    }
    conn
}

/// A chunk stored the way the ingest before 0016 stored it: with its whole derived key.
fn old_chunk(c: &mut Connection, tenant: TenantId, sat: SatelliteId, at: Timestamp) -> ChunkId {
    let id = ChunkId::new();
    let key = chunks::derived_key(tenant, sat, at, id);
    let new = chunks::NewChunk {
        id,
        tenant_id: tenant,
        satellite_id: sat,
        recorded_at: at,
        duration_ms: 3000,
        sample_rate: 48_000,
        latitude: Some(40.5),
        longitude: Some(-78.1),
        storage_key: key.clone(),
        size_bytes: 288_044,
    };
    chunks::insert_with_job(c, &new, at).expect("chunk");
    c.execute("UPDATE audio_chunks SET storage_key = ?2 WHERE id = ?1", rusqlite::params![id, key]).expect("old key");
    id
}

/// Everything the API reads of the team's detections, chunks and sessions.
#[derive(Debug, PartialEq)]
struct Answers {
    pages: Vec<(Vec<detections::Stored>, Option<u64>)>,
    one_by_one: Vec<detections::Stored>,
    metas: Vec<Option<chunks::ChunkMeta>>,
    keys: Vec<Option<String>>,
    timeline: timeline::Timeline,
    sessions: String,
    counts: (i64, i64, i64, i64),
}

fn answers(c: &Connection, tenant: TenantId, chunk_ids: &[ChunkId]) -> Answers {
    let mut pages = Vec::new();
    for (_, sort_by) in detection_list::SortBy::FIELDS {
        for (species, status) in [(None, None), (Some("turdus_migratorius"), None), (None, Some("unverified"))] {
            let q = detection_list::Query {
                satellite_id: None,
                species_code: species.map(str::to_owned),
                species_search: None,
                min_confidence: None,
                verification_status: status.map(str::to_owned),
                sort_by: *sort_by,
                descending: true,
                limit: 50,
                offset: 0,
                with_count: true,
            };
            pages.push(detection_list::list(c, tenant, &q).expect("list"));
        }
    }
    let one_by_one =
        pages[0].0.iter().map(|d| detections::get(c, tenant, d.id).expect("detection")).collect::<Vec<_>>();
    let metas = chunk_ids.iter().map(|id| chunks::meta(c, tenant, *id).expect("meta")).collect();
    let keys = chunk_ids.iter().map(|id| chunks::storage_key(c, tenant, *id).expect("key")).collect();
    let (from, to) = ("2026-01-01T00:00:00.000Z".parse().expect("t"), "2027-01-01T00:00:00.000Z".parse().expect("t"));
    let timeline = timeline::range(c, tenant, None, from, to).expect("timeline");
    let filter = recording_sessions::Filter {
        satellite_id: None,
        with_detections: None,
        sort_by: recording_sessions::SortBy::Date,
        descending: true,
        limit: 50,
        offset: 0,
    };
    let sessions = format!("{:?}", recording_sessions::list(c, tenant, &filter).expect("sessions"));
    let count = |sql: &str| c.query_row(sql, [], |r| r.get::<_, i64>(0)).expect("count");
    let counts = (
        count("SELECT count(*) FROM detections"),
        count("SELECT count(*) FROM audio_chunks"),
        count("SELECT count(*) FROM recording_sessions"),
        count("SELECT coalesce(sum(detection_count), 0) FROM tenant_species"),
    );
    Answers { pages, one_by_one, metas, keys, timeline, sessions, counts }
}

#[test]
fn a_database_at_0015_keeps_every_row_and_answer_through_the_compact_migration() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut c = at_0015(&dir.path().join("hub.db"));
    let new = users::NewUser {
        email: "a@example.org".into(),
        name: "A".into(),
        password_hash: "x".into(),
        is_platform_admin: false,
    };
    let tenant = users::create_with_team(&mut c, &new, "t").expect("team").tenant_id;
    let sat = satellite(&c, tenant).expect("satellite");
    let mut chunk_ids = Vec::new();
    let flags = crate::domain::detection_flags::judge(Default::default(), None);
    for i in 0..40i64 {
        // Two sessions a day over several days; every third chunk holds a robin.
        let at: Timestamp = Timestamp(
            "2026-05-01T05:00:00.000Z".parse::<Timestamp>().expect("t").at()
                + chrono::Duration::hours(12 * (i / 10))
                + chrono::Duration::seconds(3 * (i % 10)),
        );
        let chunk = old_chunk(&mut c, tenant, sat, at);
        if i % 3 == 0 {
            detections::insert(&c, &robin(tenant, sat, chunk, at, Some(true)), flags, at).expect("detection");
        }
        chunk_ids.push(chunk);
    }
    // A key of another shape (a restored or hand-made row) is kept as it is.
    let odd: Timestamp = "2026-05-09T05:00:00.000Z".parse().expect("t");
    let odd_chunk = super::detections::testing::chunk(&mut c, tenant, sat, odd).expect("chunk");
    chunk_ids.push(odd_chunk);
    let before = answers(&c, tenant, &chunk_ids);
    assert_eq!(before.counts.0, 14, "the fixture holds detections");

    let report = migrate::run(&mut c).expect("migrate");
    assert_eq!(report.applied, ["0016_compact"]);
    let after = answers(&c, tenant, &chunk_ids);
    assert_eq!(after, before, "the same rows and the same answers");

    let stored: Vec<String> = c
        .prepare("SELECT storage_key FROM audio_chunks ORDER BY recorded_at")
        .expect("sql")
        .query_map([], |r| r.get(0))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("keys");
    assert_eq!(stored.iter().filter(|k| k.is_empty()).count(), 40, "derived keys are stored as ''");
    assert_eq!(stored.last().map(String::as_str), Some(format!("audio/{odd_chunk}.wav").as_str()));
    assert_eq!(
        after.keys[0].as_deref(),
        Some(format!("audio/{tenant}/{sat}/2026-05-01/{}.wav", chunk_ids[0]).as_str()),
        "the key is derived again on read"
    );
    let index: i64 = c
        .query_row("SELECT count(*) FROM sqlite_master WHERE name = 'detections_chunk'", [], |r| r.get(0))
        .expect("index");
    assert_eq!(index, 0, "the redundant index is gone");
    let (mode, check): (i64, String) = (
        c.pragma_query_value(None, "auto_vacuum", |r| r.get(0)).expect("pragma"),
        c.query_row("PRAGMA integrity_check", [], |r| r.get(0)).expect("check"),
    );
    assert_eq!((mode, check.as_str()), (2, "ok"), "compacted into incremental auto-vacuum, intact");

    // The triggers of 0004 and 0009 still keep their summaries.
    let at: Timestamp = "2026-05-10T05:00:00.000Z".parse().expect("t");
    let chunk = super::detections::testing::chunk(&mut c, tenant, sat, at).expect("chunk");
    detections::insert(&c, &robin(tenant, sat, chunk, at, Some(true)), flags, at).expect("detection");
    let (species, rollup): (i64, i64) = c
        .query_row("SELECT (SELECT detection_count FROM tenant_species), (SELECT sum(n) FROM stats_daily)", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .expect("summaries");
    assert_eq!((species, rollup), (15, 15));
}

#[test]
fn new_chunks_store_the_derived_key_as_empty_and_read_it_back_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut c = Connection::open(dir.path().join("hub.db")).expect("open");
    migrate::run(&mut c).expect("migrate");
    let mode: i64 = c.pragma_query_value(None, "auto_vacuum", |r| r.get(0)).expect("pragma");
    assert_eq!(mode, 2, "a new database is in incremental auto-vacuum from the start");
    let new = users::NewUser {
        email: "a@example.org".into(),
        name: "A".into(),
        password_hash: "x".into(),
        is_platform_admin: false,
    };
    let tenant = users::create_with_team(&mut c, &new, "t").expect("team").tenant_id;
    let sat = satellite(&c, tenant).expect("satellite");
    let at: Timestamp = "2026-05-01T23:59:59.999Z".parse().expect("t");
    let id = ChunkId::new();
    let key = chunks::derived_key(tenant, sat, at, id);
    let chunk = chunks::NewChunk {
        id,
        tenant_id: tenant,
        satellite_id: sat,
        recorded_at: at,
        duration_ms: 3000,
        sample_rate: 48_000,
        latitude: None,
        longitude: None,
        storage_key: key.clone(),
        size_bytes: 1,
    };
    assert_eq!(chunks::stored_key(&chunk), "");
    chunks::insert_with_job(&mut c, &chunk, at).expect("insert");
    let raw: String =
        c.query_row("SELECT storage_key FROM audio_chunks WHERE id = ?1", [id], |r| r.get(0)).expect("raw");
    assert_eq!(raw, "");
    assert_eq!(chunks::storage_key(&c, tenant, id).expect("key"), Some(key.clone()));
    assert_eq!(chunks::meta(&c, tenant, id).expect("meta").map(|m| m.storage_key), Some(key.clone()));
    let claimed = super::jobs::claim(&mut c, "w", 1, at).expect("claim");
    assert_eq!(claimed.iter().map(|j| j.storage_key.clone()).collect::<Vec<_>>(), [key]);
}

#[test]
fn the_detection_select_derives_keys_as_the_chunks_store_does() {
    assert!(detections::SELECT.replace(['\n', ' '], "").contains(&chunks::key_sql("c").replace(['\n', ' '], "")));
}
