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
    let ids: Vec<_> = batch.iter().map(Checked::chunk).collect();
    let held = match store.call(move |c| held(c, &ids)).await {
        Ok(held) => held,
        Err(e) => return (0..n).map(|_| Err(ChunkError::NotStored(e.to_string()))).collect(),
    };
    if held.iter().all(|h| *h) {
        return (0..n).map(|_| Ok(Stored::Duplicate)).collect();
    }
    // Never a half-written file: refused before writing when the disk cannot take it.
    if let Err(full) = disk.room_for_chunk(store, objects, clock).await {
        return held
            .iter()
            .map(|h| if *h { Ok(Stored::Duplicate) } else { Err(ChunkError::DiskFull(full.clone())) })
            .collect();
    }
    let (objects, now) = (objects.clone(), clock.stamp());
    let located = batch.iter().any(Checked::located);
    let written = store.call(move |c| Ok(write(c, &objects, now, &batch, &held))).await;
    if located {
        // A satellite that moved far gets its zone decided again (`usecases::zones`).
        crate::usecases::zones::wake();
    }
    written.unwrap_or_else(|e| (0..n).map(|_| Err(ChunkError::NotStored(e.to_string()))).collect())
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
fn write(c: &mut Connection, objects: &ObjectStore, now: Timestamp, batch: &[Checked], held: &[bool]) -> Outcomes {
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
    match commit(c, now, batch, &keys, &files) {
        Ok(inserted) => {
            for ((i, _), result) in files.iter().zip(inserted) {
                // `false`: the same chunk was committed meanwhile, under the same key.
                out[*i] = result.map(|new| if new { Stored::New } else { Stored::Duplicate }).map_err(Into::into);
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
    out
}

/// Inserts each chunk under its own savepoint in one IMMEDIATE transaction and commits it.
/// Returns whether each chunk was inserted, or why that chunk alone was rolled back.
fn commit(
    c: &mut Connection,
    now: Timestamp,
    batch: &[Checked],
    keys: &[String],
    files: &[(usize, u64)],
) -> Result<Vec<store::Result<bool>>, CommitFailed> {
    let mut tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let mut inserted = Vec::with_capacity(files.len());
    for &(i, size) in files {
        let sp = tx.savepoint()?;
        let result = insert(&sp, now, &batch[i], &keys[i], size);
        match result {
            Ok(_) => sp.commit()?,
            Err(_) => sp.finish()?, // rolls back to the savepoint: this chunk only
        }
        inserted.push(result);
    }
    tx.commit()?;
    Ok(inserted)
}

/// The chunk's row, job and session, and the satellite's location when it sent one.
fn insert(c: &Connection, now: Timestamp, chunk: &Checked, key: &str, size: u64) -> store::Result<bool> {
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
    let inserted = store::chunks::insert_with_job_in(c, &row, now)?;
    if let (true, Some(reported)) = (inserted, chunk.reported_at) {
        store::clock::mark_corrected(c, up.chunk, up.satellite, reported)?;
    }
    if let (true, Some((lat, lon))) = (inserted, up.location) {
        store::satellites::set_location(c, up.tenant, up.satellite, lat, lon)?;
    }
    Ok(inserted)
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
