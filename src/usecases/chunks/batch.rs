//! Group commit: checked chunks that arrive together are written with shared fsyncs
//! ([`ObjectStore::put_many_blocking`]) and committed in one SQLite transaction. Each chunk still
//! has its own outcome: a chunk the hub already holds is `Duplicate`, one whose file or row
//! cannot be written fails alone (its row is rolled back to a savepoint and its file removed),
//! and only a commit that fails fails the whole batch. On return every `Ok(New)` chunk is on
//! disk and committed, so its ack may go out.

use std::collections::HashSet;

use rusqlite::Connection;

use super::{Checked, ChunkError, Stored};
use crate::{
    clock::Clock,
    objects::ObjectStore,
    store::{self, Store},
    time::Timestamp,
    usecases::audio_retention::DiskGuard,
};

/// One result per chunk, in order.
pub type Outcomes = Vec<Result<Stored, ChunkError>>;

/// Stores `batch`; see the module docs.
pub async fn store_batch(
    store: &Store,
    objects: &ObjectStore,
    clock: &Clock,
    disk: &DiskGuard,
    batch: Vec<Checked>,
) -> Outcomes {
    let n = batch.len();
    if let Err(full) = disk.room_for_chunk(store, objects, clock).await {
        let ids: Vec<_> = batch.iter().map(Checked::chunk).collect();
        return refused(store.call(move |c| held(c, &ids)).await, &full, n);
    }
    let (objects, now) = (objects.clone(), clock.stamp());
    finish(store.call(move |c| held_then_write(c, &objects, now, &batch)).await, n)
}

/// [`store_batch`] on the calling thread with its own connection `c`, for the writer's thread
/// ([`super::writer`]): no hop to another thread for the database. `rt` runs the disk guard (a
/// statvfs, or rarely a sweep).
pub fn store_batch_blocking(
    c: &mut Connection,
    store: &Store,
    objects: &ObjectStore,
    clock: &Clock,
    disk: &DiskGuard,
    rt: &tokio::runtime::Handle,
    batch: Vec<Checked>,
) -> Outcomes {
    let n = batch.len();
    let room = if disk.surely_room() { Ok(()) } else { rt.block_on(disk.room_for_chunk(store, objects, clock)) };
    if let Err(full) = room {
        let ids: Vec<_> = batch.iter().map(Checked::chunk).collect();
        return refused(held(c, &ids), &full, n);
    }
    let now = clock.stamp();
    finish(held_then_write(c, objects, now, &batch), n)
}

/// Never a half-written file: a batch is refused before writing when the disk cannot take it,
/// though a chunk the hub already holds is still a duplicate, acknowledged as such.
fn refused(held: store::Result<Vec<bool>>, full: &crate::usecases::audio_retention::DiskFull, n: usize) -> Outcomes {
    match held {
        Ok(held) => held
            .iter()
            .map(|h| if *h { Ok(Stored::Duplicate) } else { Err(ChunkError::DiskFull(full.clone())) })
            .collect(),
        Err(e) => failed(&e, n),
    }
}

/// Every chunk of a batch failed for `e`.
pub fn failed(e: &store::Error, n: usize) -> Outcomes {
    (0..n).map(|_| Err(ChunkError::NotStored(e.to_string()))).collect()
}

/// The outcomes of a written batch; wakes the zone mover when a satellite moved far.
fn finish(written: store::Result<(Outcomes, bool)>, n: usize) -> Outcomes {
    match written {
        Ok((outcomes, moved)) => {
            if moved {
                // A satellite that moved far had its zone decided again: its statistics may have
                // to follow (`usecases::zones`). A position that stayed put wakes nobody.
                crate::usecases::zones::wake();
            }
            outcomes
        }
        Err(e) => failed(&e, n),
    }
}

/// Which chunks are held, then the writing of the others (nothing when all are held).
fn held_then_write(
    c: &mut Connection,
    objects: &ObjectStore,
    now: Timestamp,
    batch: &[Checked],
) -> store::Result<(Outcomes, bool)> {
    let ids: Vec<_> = batch.iter().map(Checked::chunk).collect();
    let held = held(c, &ids)?;
    if held.iter().all(|h| *h) {
        return Ok((held.iter().map(|_| Ok(Stored::Duplicate)).collect(), false));
    }
    Ok(write(c, objects, now, batch, &held))
}

/// Whether each chunk is already stored, or is repeated earlier in the same batch.
fn held(c: &mut Connection, ids: &[crate::ids::ChunkId]) -> store::Result<Vec<bool>> {
    let mut seen = HashSet::new();
    ids.iter().map(|id| Ok(!seen.insert(*id) || store::chunks::exists(c, *id)?)).collect()
}

/// Where a chunk's WAV lives.
fn key_of(c: &Checked) -> String {
    let up = &c.up;
    format!("audio/{}/{}/{}/{}.wav", up.tenant, up.satellite, up.recorded_at.at().format("%Y-%m-%d"), up.chunk)
}

/// The blocking part: files first (durable before any row names them), then one transaction.
/// Also returns whether a committed chunk moved its satellite far (a zone decided again).
fn write(
    c: &mut Connection,
    objects: &ObjectStore,
    now: Timestamp,
    batch: &[Checked],
    held: &[bool],
) -> (Outcomes, bool) {
    let keys: Vec<String> = batch.iter().map(key_of).collect();
    let todo: Vec<usize> = (0..batch.len()).filter(|i| !held[*i]).collect();
    let items: Vec<(&str, &[u8])> = todo.iter().map(|&i| (keys[i].as_str(), batch[i].up.wav.as_slice())).collect();
    let mut sizes = objects.put_many_blocking(&items).into_iter();
    let mut out: Outcomes = held.iter().map(|_| Ok(Stored::Duplicate)).collect(); // `held` stays so
    let mut files = Vec::new(); // (index, size) of the chunks whose file is in place
    for &i in &todo {
        match sizes.next() {
            Some(Ok(size)) => files.push((i, size)),
            Some(Err(e)) => out[i] = Err(e.into()),
            None => out[i] = Err(ChunkError::NotStored("file not written".into())),
        }
    }
    let mut moved = false;
    match commit(c, now, batch, &keys, &files) {
        Ok(inserted) => {
            for ((i, _), result) in files.iter().zip(inserted) {
                moved |= result.as_ref().is_ok_and(|r| r.moved);
                // Not `new`: the same chunk was committed meanwhile, under the same key.
                out[*i] = result.map(|r| if r.new { Stored::New } else { Stored::Duplicate }).map_err(Into::into);
            }
        }
        Err(e) => files.iter().for_each(|(i, _)| out[*i] = Err(e.clone().into())),
    }
    for &(i, _) in &files {
        // Nothing half-written remains: a file whose row was not committed goes (unless another
        // writer committed the same chunk, whose row names this same file).
        if out[i].is_err() && !store::chunks::exists(c, batch[i].up.chunk).unwrap_or(true) {
            let _ = objects.remove_blocking(&keys[i]);
        }
    }
    (out, moved)
}

/// Inserts each chunk in one IMMEDIATE transaction and commits it, each under its own savepoint
/// when there are several. Returns what became of each chunk, or why that chunk alone was
/// rolled back.
///
/// The transaction statements are cached like the inserts, rather than parsed per batch as
/// rusqlite's `Transaction` does; a lone chunk (the real rate) needs no savepoint, so SQLite
/// keeps no sub-journal of the pages it changes (issue 39).
fn commit(
    c: &mut Connection,
    now: Timestamp,
    batch: &[Checked],
    keys: &[String],
    files: &[(usize, u64)],
) -> Result<Vec<store::Result<Inserted>>, CommitFailed> {
    run(c, "BEGIN IMMEDIATE")?;
    let outcome = inserts(c, now, batch, keys, files).and_then(|inserted| {
        // Nothing to keep when every insert failed: a lone chunk's half-done insert goes too.
        run(c, if inserted.iter().any(Result::is_ok) { "COMMIT" } else { "ROLLBACK" })?;
        Ok(inserted)
    });
    if outcome.is_err() && !c.is_autocommit() {
        let _ = c.execute_batch("ROLLBACK");
    }
    Ok(outcome?)
}

/// Runs one of the transaction statements, prepared once per connection.
fn run(c: &Connection, sql: &str) -> rusqlite::Result<()> {
    c.prepare_cached(sql)?.execute([])?;
    Ok(())
}

/// The inserts of [`commit`], inside its transaction.
fn inserts(
    c: &Connection,
    now: Timestamp,
    batch: &[Checked],
    keys: &[String],
    files: &[(usize, u64)],
) -> rusqlite::Result<Vec<store::Result<Inserted>>> {
    if let [(i, size)] = files {
        return Ok(vec![insert(c, now, &batch[*i], &keys[*i], *size)]);
    }
    files
        .iter()
        .map(|&(i, size)| {
            run(c, "SAVEPOINT chunk")?;
            let result = insert(c, now, &batch[i], &keys[i], size);
            if result.is_err() {
                run(c, "ROLLBACK TO chunk")?; // this chunk only
            }
            run(c, "RELEASE chunk")?;
            Ok(result)
        })
        .collect()
}

/// What inserting one chunk did.
struct Inserted {
    /// The row is new (not a chunk committed meanwhile).
    new: bool,
    /// Its position moved the satellite far enough for its zone to be decided again.
    moved: bool,
}

/// The chunk's row, job and session, and the satellite's location when it sent one.
fn insert(c: &Connection, now: Timestamp, chunk: &Checked, key: &str, size: u64) -> store::Result<Inserted> {
    let up = &chunk.up;
    let row = store::chunks::NewChunk {
        id: up.chunk,
        tenant_id: up.tenant,
        satellite_id: up.satellite,
        recorded_at: up.recorded_at,
        duration_ms: chunk.wav_ms,
        sample_rate: up.sample_rate,
        latitude: up.location.map(|l| l.0),
        longitude: up.location.map(|l| l.1),
        storage_key: key.to_owned(),
        size_bytes: size as i64,
    };
    let Some(moved) = store::chunks::insert_arrived(c, &row, now, true)? else {
        return Ok(Inserted { new: false, moved: false });
    };
    if let Some(reported) = chunk.reported_at {
        store::clock::mark_corrected(c, up.chunk, up.satellite, reported)?;
    }
    Ok(Inserted { new: true, moved })
}

/// A failure of the batch's transaction itself, which every chunk in it shares.
#[derive(Debug, Clone)]
struct CommitFailed(String);

impl From<rusqlite::Error> for CommitFailed {
    fn from(e: rusqlite::Error) -> Self {
        Self(store::Error::from(e).to_string())
    }
}

impl From<CommitFailed> for ChunkError {
    fn from(e: CommitFailed) -> Self {
        ChunkError::NotStored(e.0)
    }
}
