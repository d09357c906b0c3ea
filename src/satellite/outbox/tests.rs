//! Outbox tests on real SQLite files and real directories.

use std::{collections::HashSet, fs, path::Path, time::SystemTime};

use chrono::{DateTime, Duration, TimeZone, Utc};

use super::*;
use crate::satellite::gate::FilterStats;

/// Bytes of the WAV file of a 3 s chunk.
const CHUNK_BYTES: u64 = 44 + 144_000 * 2;

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 5, 1, 6, 0, 0).single().expect("time")
}

fn chunk(recorded_at: DateTime<Utc>, seed: i16) -> CapturedChunk {
    CapturedChunk { recorded_at, samples: (0..144_000).map(|i| ((i % 200) as i16 - 100) * seed).collect() }
}

fn caps(soft_mb: u32, hard_mb: u32, max_age_hours: u32) -> Caps {
    Caps { soft_mb, hard_mb, max_age_hours }
}

fn open(dir: &Path, caps: Caps, max_attempts: u32) -> Outbox {
    Outbox::open(dir, caps, max_attempts).expect("open outbox")
}

fn files_in(dir: &Path) -> usize {
    fs::read_dir(dir.join("audio")).expect("audio dir").count()
}

#[test]
fn push_due_mark_sent_and_ack() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut ob = open(dir.path(), caps(100, 200, 48), 5);
    let now = t0();
    let late = ob.push(&chunk(now + Duration::seconds(6), 3), now).expect("push");
    let early = ob.push(&chunk(now, 1), now).expect("push");
    let middle = ob.push(&chunk(now + Duration::seconds(3), 2), now).expect("push");
    assert_eq!(files_in(dir.path()), 3);

    let due = ob.due(10, now).expect("due");
    let ids: Vec<_> = due.iter().map(|p| p.chunk_id).collect();
    assert_eq!(ids, [early, middle, late], "oldest recording first");
    assert_eq!(due[0].wav, chunk(now, 1).to_wav(), "the stored WAV comes back byte for byte");
    assert_eq!((due[0].recorded_at, due[0].duration_ms, due[0].attempts), (now, 3000, 0));

    for p in &due {
        ob.mark_sent(p.chunk_id, now).expect("mark_sent");
    }
    assert!(ob.due(10, now).expect("due").is_empty(), "just sent: not due before the resend time");
    let again = ob.due(10, now + Duration::seconds(30)).expect("due");
    assert_eq!(again.len(), 3, "no ack came: sent again later");
    assert!(again.iter().all(|p| p.attempts == 1));

    assert_eq!(ob.ack(middle, true, None, now).expect("ack"), AckOutcome::Acked);
    assert_eq!(ob.ack(middle, true, None, now).expect("ack"), AckOutcome::Acked, "duplicate ack");
    assert_eq!(ob.ack(uuid::Uuid::new_v4(), true, None, now).expect("ack"), AckOutcome::Unknown);
    let ids: Vec<_> = ob.due(10, now + Duration::seconds(30)).expect("due").iter().map(|p| p.chunk_id).collect();
    assert_eq!(ids, [early, late], "an acked row is never due");

    let s = ob.stats().expect("stats");
    assert_eq!(s.row_count, 3);
    assert_eq!(s.unacked_count, 2);
    assert_eq!(s.acked_bytes, CHUNK_BYTES);
    assert_eq!(s.unacked_bytes, 2 * CHUNK_BYTES);
    assert_eq!(s.total_bytes, 3 * CHUNK_BYTES);
    assert_eq!(s.disk_bytes, 3 * CHUNK_BYTES, "acked files stay until the soft cap needs room");
}

#[test]
fn due_takes_exactly_the_oldest_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut ob = open(dir.path(), caps(100, 200, 48), 5);
    let now = t0();
    let mut pushed = Vec::new();
    for i in [4i64, 0, 3, 1, 2] {
        pushed.push((i, ob.push(&chunk(now + Duration::seconds(3 * i), 1), now).expect("push")));
    }
    pushed.sort();
    let first: Vec<_> = ob.due(2, now).expect("due").iter().map(|p| p.chunk_id).collect();
    assert_eq!(first, [pushed[0].1, pushed[1].1]);
    for id in &first {
        ob.mark_sent(*id, now).expect("mark");
    }
    let next: Vec<_> = ob.due(2, now).expect("due").iter().map(|p| p.chunk_id).collect();
    assert_eq!(next, [pushed[2].1, pushed[3].1], "rows sent since resend_before wait");
}

#[test]
fn error_acks_end_in_failed_and_never_due_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut ob = open(dir.path(), caps(100, 200, 48), 3);
    let now = t0();
    let id = ob.push(&chunk(now, 1), now).expect("push");
    let other = ob.push(&chunk(now + Duration::seconds(3), 1), now).expect("push");
    for attempt in 1..=3 {
        let at = now + Duration::minutes(attempt);
        let due: Vec<_> = ob.due(10, at).expect("due").iter().map(|p| p.chunk_id).collect();
        assert!(due.contains(&id), "attempt {attempt}: the row is still due");
        ob.mark_sent(id, at).expect("mark");
        let outcome = ob.ack(id, false, Some("object storage down"), at).expect("ack");
        let want = if attempt < 3 { AckOutcome::WillRetry } else { AckOutcome::Failed };
        assert_eq!(outcome, want, "attempt {attempt}");
    }
    assert_eq!(ob.failed_count().expect("failed"), 1);
    assert!(!files::wav_path(&dir.path().join("audio"), &id).exists(), "a failed row's audio is deleted");
    let later: Vec<_> = ob.due(10, now + Duration::days(1)).expect("due").iter().map(|p| p.chunk_id).collect();
    assert_eq!(later, [other], "a failed row is never sent again");
    assert_eq!(ob.ack(id, false, Some("again"), now).expect("ack"), AckOutcome::Failed);
    let s = ob.stats().expect("stats");
    assert_eq!((s.row_count, s.unacked_count, s.total_bytes), (2, 1, CHUNK_BYTES));

    drop(ob);
    let mut ob = open(dir.path(), caps(100, 200, 48), 3);
    assert_eq!(ob.failed_count().expect("failed"), 1, "failed rows are counted across restarts");
}

#[test]
fn an_error_ack_waits_for_the_resend_interval() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut ob = open(dir.path(), caps(100, 200, 48), 5);
    let now = t0();
    let id = ob.push(&chunk(now, 1), now).expect("push");
    ob.mark_sent(id, now).expect("mark");
    let answered = now + Duration::seconds(2);
    assert_eq!(ob.ack(id, false, None, answered).expect("ack"), AckOutcome::WillRetry);
    assert!(ob.due(10, answered).expect("due").is_empty());
    assert_eq!(ob.due(10, answered + Duration::seconds(1)).expect("due").len(), 1);
}

#[test]
fn soft_cap_evicts_acked_rows_only_oldest_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    // 1 MB holds three 3 s chunks.
    let mut ob = open(dir.path(), caps(1, 100, 48), 5);
    let now = t0();
    let ids: Vec<_> = (0..5).map(|i| ob.push(&chunk(now + Duration::seconds(3 * i), 1), now).expect("push")).collect();
    assert_eq!(ob.stats().expect("stats").row_count, 5, "unacked rows are never soft-evicted");

    for id in &ids[..3] {
        ob.ack(*id, true, None, now).expect("ack");
    }
    let newest = ob.push(&chunk(now + Duration::seconds(15), 1), now).expect("push");
    // 6 chunks, soft cap 3: only the 3 acked ones may go, oldest first.
    let s = ob.stats().expect("stats");
    assert_eq!((s.row_count, s.acked_bytes, s.unacked_count), (3, 0, 3));
    let left: Vec<_> = ob.due(10, now).expect("due").iter().map(|p| p.chunk_id).collect();
    assert_eq!(left, [ids[3], ids[4], newest]);
    assert_eq!(files_in(dir.path()), 3, "evicted files are deleted");
    let ev = ob.eviction_stats().expect("evictions");
    assert_eq!((ev.evicted_soft, ev.evicted_hard, ev.dropped_unacked), (3, 0, 0));

    // Only as many acked rows go as the cap needs.
    let dir2 = tempfile::tempdir().expect("tempdir");
    let mut ob = open(dir2.path(), caps(1, 100, 48), 5);
    let ids: Vec<_> = (0..3).map(|i| ob.push(&chunk(now + Duration::seconds(3 * i), 1), now).expect("push")).collect();
    for id in &ids {
        ob.ack(*id, true, None, now).expect("ack");
    }
    ob.push(&chunk(now + Duration::seconds(9), 1), now).expect("push");
    let s = ob.stats().expect("stats");
    assert_eq!((s.row_count, s.acked_bytes), (3, 2 * CHUNK_BYTES), "one acked row made room");
    assert_eq!(ob.ack(ids[0], true, None, now).expect("ack"), AckOutcome::Unknown, "the oldest went");
}

#[test]
fn hard_cap_is_never_exceeded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let hard = 2 * MB;
    let mut ob = open(dir.path(), caps(1, 2, 48), 5);
    let now = t0();
    let mut last = None;
    for i in 0..30 {
        let id = ob.push(&chunk(now + Duration::seconds(3 * i), 1), now).expect("push");
        if i % 3 == 0 {
            ob.ack(id, true, None, now).expect("ack");
        }
        let s = ob.stats().expect("stats");
        assert!(s.total_bytes <= hard, "push {i}: {} > {hard}", s.total_bytes);
        assert!(s.disk_bytes <= hard, "push {i}: disk {} > {hard}", s.disk_bytes);
        last = Some(id);
    }
    let s = ob.stats().expect("stats");
    assert_eq!(s.total_bytes, s.disk_bytes, "every file has its row and no more");
    assert_eq!(s.row_count, hard / CHUNK_BYTES, "the cap is filled, not emptied");
    let due: Vec<_> = ob.due(100, now).expect("due").iter().map(|p| p.chunk_id).collect();
    assert_eq!(due.last().copied(), last, "the newest chunk is kept");
    let ev = ob.eviction_stats().expect("evictions");
    assert!(ev.dropped_unacked > 0 && ev.evicted_hard > 0, "{ev:?}");

    let mut tiny = open(tempfile::tempdir().expect("tempdir").path(), caps(0, 0, 48), 5);
    assert!(matches!(tiny.push(&chunk(now, 1), now), Err(OutboxError::Full(0))));
}

#[test]
fn age_cap_removes_old_rows_whatever_their_state() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut ob = open(dir.path(), caps(100, 200, 1), 5);
    let now = t0();
    let old_unacked = ob.push(&chunk(now, 1), now).expect("push");
    let old_acked = ob.push(&chunk(now, 2), now + Duration::minutes(1)).expect("push");
    ob.ack(old_acked, true, None, now).expect("ack");
    let young = ob.push(&chunk(now, 3), now + Duration::minutes(40)).expect("push");

    ob.evict(now + Duration::minutes(59)).expect("evict");
    assert_eq!(ob.stats().expect("stats").row_count, 3, "nothing is an hour old yet");
    ob.evict(now + Duration::minutes(62)).expect("evict");
    let s = ob.stats().expect("stats");
    assert_eq!((s.row_count, s.disk_bytes), (1, CHUNK_BYTES));
    assert_eq!(ob.ack(old_unacked, true, None, now).expect("ack"), AckOutcome::Unknown);
    let due: Vec<_> = ob.due(10, now + Duration::hours(2)).expect("due").iter().map(|p| p.chunk_id).collect();
    assert_eq!(due, [young]);
    let ev = ob.eviction_stats().expect("evictions");
    assert_eq!((ev.evicted_age, ev.dropped_unacked), (2, 1));
}

#[test]
fn disk_bytes_counts_orphans_and_open_cleans_old_ones() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut ob = open(dir.path(), caps(100, 200, 48), 5);
    let now = t0();
    ob.push(&chunk(now, 1), now).expect("push");
    let orphan = dir.path().join("audio").join(format!("{}.wav", uuid::Uuid::new_v4()));
    fs::write(&orphan, vec![0u8; 1000]).expect("orphan");
    let s = ob.stats().expect("stats");
    assert_eq!((s.total_bytes, s.disk_bytes), (CHUNK_BYTES, CHUNK_BYTES + 1000));
    drop(ob);

    let mut ob = open(dir.path(), caps(100, 200, 48), 5);
    assert!(orphan.exists(), "a young orphan is left alone");
    assert_eq!(ob.stats().expect("stats").disk_bytes, CHUNK_BYTES + 1000);
    drop(ob);

    let two_hours_ago = SystemTime::now() - std::time::Duration::from_secs(7200);
    fs::File::options().write(true).open(&orphan).expect("open").set_modified(two_hours_ago).expect("mtime");
    let mut ob = open(dir.path(), caps(100, 200, 48), 5);
    assert!(!orphan.exists(), "an orphan over an hour old is deleted at open");
    assert_eq!(ob.stats().expect("stats").disk_bytes, CHUNK_BYTES);
    assert_eq!(ob.due(10, now).expect("due").len(), 1, "the real row's file is kept");
}

#[test]
fn a_row_whose_file_vanished_is_dropped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut ob = open(dir.path(), caps(100, 200, 48), 5);
    let now = t0();
    let ids: Vec<_> = (0..4).map(|i| ob.push(&chunk(now + Duration::seconds(3 * i), 1), now).expect("push")).collect();
    fs::remove_file(files::wav_path(&dir.path().join("audio"), &ids[1])).expect("rm");
    let due: Vec<_> = ob.due(3, now).expect("due").iter().map(|p| p.chunk_id).collect();
    assert_eq!(due, [ids[0], ids[2], ids[3]], "the limit is still filled from the next rows");
    assert_eq!(ob.stats().expect("stats").row_count, 3);
    assert_eq!(ob.eviction_stats().expect("evictions").missing_files, 1);
}

#[test]
fn unacked_rows_survive_a_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let now = t0();
    let (a, b) = {
        let mut ob = open(dir.path(), caps(100, 200, 48), 5);
        let a = ob.push(&chunk(now, 7), now).expect("push");
        let b = ob.push(&chunk(now + Duration::seconds(3), 8), now).expect("push");
        ob.mark_sent(a, now).expect("mark");
        ob.ack(b, true, None, now).expect("ack");
        (a, b)
    };
    let mut ob = open(dir.path(), caps(100, 200, 48), 5);
    let due = ob.due(10, now + Duration::seconds(1)).expect("due");
    assert_eq!(due.len(), 1);
    assert_eq!((due[0].chunk_id, due[0].attempts), (a, 1));
    assert_eq!(due[0].wav, chunk(now, 7).to_wav());
    assert_eq!(ob.ack(b, true, None, now).expect("ack"), AckOutcome::Acked, "acked state persisted");
    let s = ob.stats().expect("stats");
    assert_eq!((s.row_count, s.unacked_count, s.acked_bytes), (2, 1, CHUNK_BYTES));
}

#[test]
fn filter_stats_and_config_persist_across_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let mut ob = open(dir.path(), caps(100, 200, 48), 5);
        assert_eq!(ob.filter_stats().expect("stats"), FilterStats::default());
        assert_eq!(ob.last_config().expect("config"), None);
        let stats = FilterStats { total_processed: 10, total_sent: 4, rejected_silence: 6, ..Default::default() };
        ob.save_filter_stats(&stats).expect("save");
        ob.save_config(r#"{"filterEnabled":true}"#).expect("save");
        ob.save_config(r#"{"filterEnabled":false}"#).expect("save again");
    }
    let mut ob = open(dir.path(), caps(100, 200, 48), 5);
    let stats = ob.filter_stats().expect("stats");
    assert_eq!((stats.total_processed, stats.total_sent, stats.rejected_silence), (10, 4, 6));
    assert_eq!(ob.last_config().expect("config").as_deref(), Some(r#"{"filterEnabled":false}"#));
}

#[test]
fn the_database_is_in_wal_mode_with_full_sync() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ob = open(dir.path(), caps(100, 200, 48), 5);
    let mode: String = ob.conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).expect("pragma");
    let sync: i64 = ob.conn.query_row("PRAGMA synchronous", [], |r| r.get(0)).expect("pragma");
    assert_eq!((mode.as_str(), sync), ("wal", 2));
    assert!(dir.path().join("outbox.db").is_file());
}

/// Set for the child process of [`pushed_chunks_survive_sigkill`]: the outbox directory.
const KILL_CHILD_ENV: &str = "BIRDHUB_TEST_OUTBOX_KILL_CHILD_DIR";

/// Not a test on its own: in the child process of [`pushed_chunks_survive_sigkill`] it pushes
/// chunks and prints each id once `push` has returned, until it is killed.
#[test]
fn sigkill_child_pushes_until_killed() {
    let Some(dir) = std::env::var_os(KILL_CHILD_ENV) else { return };
    let mut ob = open(Path::new(&dir), caps(100, 200, 48), 5);
    let now = t0();
    for i in 0..400 {
        let c = CapturedChunk { recorded_at: now + Duration::seconds(i), samples: vec![i as i16; 24_000] };
        let id = ob.push(&c, now).expect("push");
        println!("PUSHED {id}");
    }
}

#[test]
fn pushed_chunks_survive_sigkill() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", "satellite::outbox::tests::sigkill_child_pushes_until_killed", "--nocapture"])
        .args(["--test-threads", "1"])
        .env(KILL_CHILD_ENV, dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn child");
    let stdout = child.stdout.take().expect("stdout");
    let mut acknowledged = Vec::new();
    for line in std::io::BufReader::new(stdout).lines() {
        let line = line.expect("line");
        if let Some(id) = line.strip_prefix("PUSHED ") {
            acknowledged.push(uuid::Uuid::parse_str(id.trim()).expect("uuid"));
            if acknowledged.len() == 25 {
                break;
            }
        }
    }
    child.kill().expect("SIGKILL"); // std's kill() sends SIGKILL on Unix
    let status = child.wait().expect("wait");
    assert_eq!(acknowledged.len(), 25, "the child pushed 25 chunks before it was killed ({status})");

    let mut ob = open(dir.path(), caps(100, 200, 48), 5);
    let due = ob.due(1000, t0()).expect("due");
    let ids: HashSet<_> = due.iter().map(|p| p.chunk_id).collect();
    for id in &acknowledged {
        assert!(ids.contains(id), "chunk {id} was pushed before the kill and must still be there");
    }
    for p in &due {
        let reader = hound::WavReader::new(std::io::Cursor::new(&p.wav)).expect("a complete WAV file");
        assert_eq!(reader.duration(), 24_000);
    }
    let s = ob.stats().expect("stats");
    assert_eq!(s.row_count as usize, due.len());
    assert!(s.disk_bytes >= s.total_bytes, "every row has its file (a file without a row is possible)");
    println!("killed ({status}) after {} acknowledged pushes; {} rows survived", acknowledged.len(), due.len());
}
