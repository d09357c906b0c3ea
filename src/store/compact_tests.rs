//! Upgrading a database with data from schema 0015 through 0016 (the compact layout) and 0017
//! (integer keys): every detection, chunk and session is kept, the store answers as a database
//! made by today's hub with the same rows does, and the triggers still keep their summaries.

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

/// A person who makes a team.
fn owner(who: &str) -> users::NewUser {
    users::NewUser {
        email: format!("{who}@example.org"),
        name: who.into(),
        password_hash: "x".into(),
        is_platform_admin: false,
    }
}

/// When the fixture's chunk `i` was recorded: two sessions a day over several days.
fn fixture_time(i: i64) -> Timestamp {
    Timestamp(
        "2026-05-01T05:00:00.000Z".parse::<Timestamp>().expect("t").at()
            + chrono::Duration::hours(12 * (i / 10))
            + chrono::Duration::seconds(3 * (i % 10)),
    )
}

/// The fixture's 40 chunks (every third holding a robin) and one chunk whose key has another
/// shape (a restored or hand-made row), written with the SQL of the schema the database is at:
/// before 0016 with the whole derived key and UUID references, from 0018 on with integer keys,
/// 16-byte ids and a species key.
/// Ids are fixed, so two databases filled this way hold the same rows.
fn fixture(c: &Connection, tenant: TenantId, sat: SatelliteId, keyed: bool) -> Vec<ChunkId> {
    let (chunk_sql, detection_sql) = if keyed {
        (
            "INSERT INTO audio_chunks (id, tenant_pk, satellite_pk, recorded_at, duration_ms, sample_rate, latitude,
                 longitude, storage_key, size_bytes, received_at)
             VALUES (?1, (SELECT pk FROM tenants WHERE id = ?2), (SELECT pk FROM satellites WHERE id = ?3), ?4, 3000,
                     48000, 40.5, -78.1, ?5, 288044, ?4)",
            "INSERT INTO detections (id, tenant_pk, satellite_pk, chunk_pk, model_id, species_pk, confidence, detected_at,
                 created_at)
             VALUES (?1, (SELECT pk FROM tenants WHERE id = ?2), (SELECT pk FROM satellites WHERE id = ?3),
                     (SELECT pk FROM audio_chunks WHERE id = ?4), 'm',
                     (SELECT pk FROM species_labels WHERE species_code = 'turdus_migratorius'), ?5, ?6, ?6)",
        )
    } else {
        (
            "INSERT INTO audio_chunks (id, tenant_id, satellite_id, recorded_at, duration_ms, sample_rate, latitude,
                 longitude, storage_key, size_bytes, received_at)
             VALUES (?1, ?2, ?3, ?4, 3000, 48000, 40.5, -78.1, ?5, 288044, ?4)",
            "INSERT INTO detections (id, tenant_id, satellite_id, audio_chunk_id, model_id, species_code, scientific_name,
                 common_name, confidence, detected_at, created_at)
             VALUES (?1, ?2, ?3, ?4, 'm', 'turdus_migratorius', 'Turdus migratorius', 'American Robin', ?5, ?6, ?6)",
        )
    };
    if keyed {
        detections::label(c, "turdus_migratorius", "Turdus migratorius", "American Robin").expect("label");
    }
    // Ids: the text an old hub wrote, the 16 bytes from 0018 on.
    let as_stored = |id: uuid::Uuid| -> rusqlite::types::Value {
        if keyed { id.as_bytes().to_vec().into() } else { id.to_string().into() }
    };
    let mut ids = Vec::new();
    for i in 0..41i64 {
        let id = ChunkId(uuid::Uuid::from_u128(i as u128 + 1));
        let at = if i < 40 { fixture_time(i) } else { "2026-05-09T05:00:00.000Z".parse().expect("t") };
        let derived = chunks::derived_key(tenant, sat, at, id);
        let key = match (i < 40, keyed) {
            (false, _) => format!("audio/{id}.wav"),
            (true, false) => derived,
            (true, true) => String::new(),
        };
        // Times: the SPEC's text before 0017, milliseconds from it on.
        let time = if keyed { rusqlite::types::Value::Integer(at.millis()) } else { at.to_string().into() };
        c.execute(chunk_sql, rusqlite::params![as_stored(id.0), tenant, sat, time, key]).expect("chunk");
        if i < 40 && i % 3 == 0 {
            let detection = crate::ids::DetectionId(uuid::Uuid::from_u128(1000 + i as u128));
            let confidence = 0.5 + f64::from(i as u32) / 100.0;
            let row = rusqlite::params![as_stored(detection.0), tenant, sat, as_stored(id.0), confidence, time];
            c.execute(detection_sql, row).expect("detection");
        }
        ids.push(id);
    }
    ids
}

/// The answers with each session's random id replaced by its rank in time, so that two
/// databases that placed the same chunks in the same sessions answer alike.
fn without_session_ids(mut a: Answers) -> Answers {
    let mut ids: Vec<String> = Vec::new();
    for chunk in &a.timeline.chunks {
        if let Some(s) = &chunk.session_id
            && !ids.contains(s)
        {
            ids.push(s.clone());
        }
    }
    for (rank, id) in ids.iter().enumerate() {
        a.sessions = a.sessions.replace(id.as_str(), &format!("session-{rank}"));
    }
    for chunk in &mut a.timeline.chunks {
        if let Some(s) = &mut chunk.session_id {
            *s = format!("session-{}", ids.iter().position(|i| i == s).expect("listed"));
        }
    }
    a
}

/// Everything the API reads of the team's detections, chunks and sessions.
#[derive(Debug, PartialEq)]
struct Answers {
    pages: Vec<(Vec<detections::Stored>, Option<super::detection_count::Total>)>,
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
                named: Vec::new(),
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
fn a_database_at_0015_keeps_every_row_and_answer_through_the_compact_migrations() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (old_path, fresh_path) = (dir.path().join("old.db"), dir.path().join("fresh.db"));
    let mut c = at_0015(&old_path);
    let new = owner("a");
    let tenant = users::create_with_team(&mut c, &new, "t").expect("team").tenant_id;
    let sat = satellite(&c, tenant).expect("satellite");
    c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").expect("checkpoint");
    // The same team and satellite in a database made by today's hub, filled with the same rows.
    std::fs::copy(&old_path, &fresh_path).expect("copy");
    let mut fresh = Connection::open(&fresh_path).expect("open");
    fresh.execute_batch("PRAGMA foreign_keys = ON;").expect("pragmas");
    migrate::run(&mut fresh).expect("migrate");
    let fresh_ids = fixture(&fresh, tenant, sat, true);
    recording_sessions::backfill(&mut fresh).expect("sessions");

    let chunk_ids = fixture(&c, tenant, sat, false);
    assert_eq!(chunk_ids, fresh_ids);
    // Rows that point at a chunk or a detection by its id, as an old hub wrote them (text).
    let (first_detection, first_chunk) = (uuid::Uuid::from_u128(1000), chunk_ids[0].0);
    c.execute(
        "INSERT INTO comments (id, detection_id, tenant_id, body) VALUES ('c1', ?1, ?2, 'nice')",
        rusqlite::params![first_detection.to_string(), tenant],
    )
    .expect("comment");
    c.execute(
        "INSERT INTO inference_jobs (id, chunk_id, tenant_id, status) VALUES ('j1', ?1, ?2, 'done')",
        rusqlite::params![first_chunk.to_string(), tenant],
    )
    .expect("job");
    let report = migrate::run(&mut c).expect("migrate");
    // The compact migrations run in order; later migrations (0019 on) may follow them.
    assert_eq!(report.applied[..3], ["0016_compact", "0017_compact_rows", "0018_compact_ids"]);
    let comments = super::comments::list(&c, tenant, crate::ids::DetectionId(first_detection)).expect("comments");
    assert_eq!(comments.iter().map(|m| m.body.as_str()).collect::<Vec<_>>(), ["nice"], "a comment keeps its detection");
    let job_chunk: ChunkId =
        c.query_row("SELECT chunk_id FROM inference_jobs WHERE id = 'j1'", [], |r| r.get(0)).expect("job");
    assert_eq!(job_chunk, chunk_ids[0], "a job keeps its chunk");
    recording_sessions::backfill(&mut c).expect("sessions");
    let after = without_session_ids(answers(&c, tenant, &chunk_ids));
    assert_eq!(after.counts.0, 14, "the fixture holds detections");
    assert_eq!(after, without_session_ids(answers(&fresh, tenant, &chunk_ids)), "the same rows and answers");

    let stored: Vec<String> = c
        .prepare("SELECT storage_key FROM audio_chunks ORDER BY recorded_at")
        .expect("sql")
        .query_map([], |r| r.get(0))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("keys");
    assert_eq!(stored.iter().filter(|k| k.is_empty()).count(), 40, "derived keys are stored as ''");
    let odd_chunk = chunk_ids[40];
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
    let broken: i64 = c.query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| r.get(0)).expect("fk");
    assert_eq!(broken, 0, "every reference resolves");

    // The triggers of 0004 and 0009, rebuilt by 0017, still keep their summaries.
    let flags = crate::domain::detection_flags::judge(Default::default(), None);
    let at: Timestamp = "2026-05-10T05:00:00.000Z".parse().expect("t");
    let chunk = super::detections::testing::chunk(&mut c, tenant, sat, at).expect("chunk");
    detections::insert(&c, &robin(tenant, sat, chunk, at, Some(true)), flags, at).expect("detection");
    let (species, rollup): (i64, i64) = c
        .query_row(
            "SELECT (SELECT detection_count FROM tenant_species), (SELECT sum(n) FROM stats_pair_days)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("summaries");
    assert_eq!((species, rollup), (15, 15));
    let drift = super::stats::rollups::drift(&c).expect("drift");
    assert!(drift.iter().all(|(_, n)| *n == 0), "{drift:?}");
}

#[test]
fn new_chunks_store_the_derived_key_as_empty_and_read_it_back_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut c = Connection::open(dir.path().join("hub.db")).expect("open");
    migrate::run(&mut c).expect("migrate");
    let mode: i64 = c.pragma_query_value(None, "auto_vacuum", |r| r.get(0)).expect("pragma");
    assert_eq!(mode, 2, "a new database is in incremental auto-vacuum from the start");
    let new = owner("a");
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

#[test]
fn new_teams_satellites_and_sessions_get_their_own_keys_and_take_their_rows_with_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut c = Connection::open(dir.path().join("hub.db")).expect("open");
    c.execute_batch("PRAGMA foreign_keys = ON;").expect("pragmas");
    migrate::run(&mut c).expect("migrate");
    let mut teams = Vec::new();
    for who in ["a", "b"] {
        let new = owner(who);
        let tenant = users::create_with_team(&mut c, &new, who).expect("team").tenant_id;
        let sat = satellite(&c, tenant).expect("satellite");
        let flags = crate::domain::detection_flags::judge(Default::default(), None);
        for i in 0..3 {
            let at = fixture_time(i);
            let chunk = super::detections::testing::chunk(&mut c, tenant, sat, at).expect("chunk");
            detections::insert(&c, &robin(tenant, sat, chunk, at, Some(true)), flags, at).expect("detection");
        }
        teams.push(tenant);
    }
    let distinct = |table: &str| -> (i64, i64) {
        c.query_row(&format!("SELECT count(*), count(DISTINCT pk) FROM {table} WHERE pk IS NOT NULL"), [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .expect("keys")
    };
    assert_eq!(distinct("tenants"), (2, 2));
    assert_eq!(distinct("satellites"), (2, 2));
    assert_eq!(distinct("recording_sessions"), (2, 2));
    let rows = |c: &Connection| -> (i64, i64, i64) {
        c.query_row(
            "SELECT (SELECT count(*) FROM audio_chunks), (SELECT count(*) FROM detections),
                    (SELECT coalesce(sum(n), 0) FROM stats_pair_days)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("rows")
    };
    assert_eq!(rows(&c), (6, 6, 6));
    c.execute("DELETE FROM tenants WHERE id = ?1", [teams[0]]).expect("remove a team");
    assert_eq!(rows(&c), (3, 3, 3), "the team's chunks, detections and statistics went with it, the other's stayed");
    let drift = super::stats::rollups::drift(&c).expect("drift");
    assert!(drift.iter().all(|(_, n)| *n == 0), "{drift:?}");
}

#[test]
fn every_reader_of_the_big_tables_gives_times_back_as_they_went_in() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut c = Connection::open(dir.path().join("hub.db")).expect("open");
    migrate::run(&mut c).expect("migrate");
    let new = owner("a");
    let tenant = users::create_with_team(&mut c, &new, "t").expect("team").tenant_id;
    let sat = satellite(&c, tenant).expect("satellite");
    c.execute("UPDATE satellites SET latitude = 40.5, longitude = -78.1 WHERE id = ?1", [sat]).expect("place");
    let at: Timestamp = "2026-05-01T23:59:59.987Z".parse().expect("t");
    let chunk = super::detections::testing::chunk(&mut c, tenant, sat, at).expect("chunk");
    let flags = crate::domain::detection_flags::judge(Default::default(), None);
    let stored = detections::insert(&c, &robin(tenant, sat, chunk, at, Some(true)), flags, at).expect("insert");
    assert_eq!(stored.expect("stored").detected_at, at);
    let text = at.to_string();
    let places = super::stats::queries::places(&c, tenant).expect("places");
    assert_eq!(places[0].last_detection_at.as_deref(), Some(text.as_str()));
    let scope = super::stats::Scope {
        tenant,
        satellite: None,
        from: at.at().date_naive(),
        to: at.at().date_naive(),
        min_band: 0,
        include_rejected: true,
        species: None,
    };
    let before: Timestamp = "2026-05-01T00:00:00.000Z".parse().expect("t");
    let points = super::stats::queries::points(&c, &scope, before, 10).expect("points");
    assert_eq!(points.iter().map(|p| p.detected_at).collect::<Vec<_>>(), [at]);
    let after: Timestamp = "2026-05-02T00:00:00.000Z".parse().expect("t");
    assert!(super::stats::queries::points(&c, &scope, after, 10).expect("points").is_empty(), "compared as times");
    let recent = super::stats::queries::recent(&c, &scope, "turdus_migratorius", 10).expect("recent");
    assert_eq!(recent.iter().map(|p| p.detected_at).collect::<Vec<_>>(), [at]);
    assert_eq!(super::activity::last_detection(&c, tenant, Some(sat)).expect("last"), Some(at));
    assert_eq!(super::activity::last_chunk(&c, tenant, None).expect("last"), Some(at));
    assert_eq!(super::activity::last_detected(&c, tenant, "turdus_migratorius").expect("last"), Some(at));
    let days = super::activity::daily_totals(&c, tenant, None, false, before, after).expect("days");
    assert_eq!(days, [("2026-05-01".to_owned(), 1.0)], "the UTC day");
    let line = timeline::range(&c, tenant, None, before, after).expect("timeline");
    assert_eq!((line.chunks[0].recorded_at, line.detections[0].detected_at), (at, at));
    let (first, last): (String, String) = c
        .query_row("SELECT first_detected_at, last_detected_at FROM tenant_species", [], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("species");
    assert_eq!((first.as_str(), last.as_str()), (text.as_str(), text.as_str()), "the summary keeps the SPEC's text");
}

#[test]
fn a_hub_created_new_is_in_incremental_auto_vacuum_with_wal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("hub.db");
    let store = super::Store::open(&path).expect("open");
    store.call_blocking(|c| migrate::run(c).map(|_| ())).expect("migrate");
    let (mode, journal): (i64, String) = store
        .call_blocking(|c| {
            Ok((
                c.pragma_query_value(None, "auto_vacuum", |r| r.get(0))?,
                c.pragma_query_value(None, "journal_mode", |r| r.get(0))?,
            ))
        })
        .expect("pragmas");
    assert_eq!((mode, journal.as_str()), (2, "wal"), "freed pages can be given back to the disk");
}
