//! The durable inference queue: jobs live in SQLite, are claimed atomically, and are finished in
//! the same transaction that writes their detections, so a crash never loses or doubles work.

use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};
use serde::Serialize;

use super::Result;
use crate::{
    ids::{ChunkId, SatelliteId, TenantId},
    time::Timestamp,
};

/// A job taken by a worker, with what it needs to classify the chunk.
#[derive(Debug, Clone)]
pub struct Claimed {
    pub job_id: String,
    pub chunk_id: ChunkId,
    pub tenant_id: TenantId,
    pub satellite_id: SatelliteId,
    pub satellite_name: String,
    pub attempts: u32,
    pub storage_key: String,
    pub recorded_at: Timestamp,
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
}

/// After a crash or restart nothing is running: put those jobs back in the queue.
pub fn requeue_running(conn: &Connection) -> Result<usize> {
    Ok(conn.execute(
        "UPDATE inference_jobs SET status = 'queued', worker_id = NULL, lease_until = NULL WHERE status = 'running'",
        [],
    )?)
}

/// Claims up to `max` due jobs for `worker`, oldest first.
pub fn claim(conn: &mut Connection, worker: &str, max: u32, now: Timestamp) -> Result<Vec<Claimed>> {
    claim_until(conn, worker, max, now, None)
}

/// Claims like [`claim`] with a lease: a job offered to remote workers carries the deadline after
/// which [`requeue_expired`] puts it back in the queue, whatever became of the process holding it.
pub fn claim_until(
    conn: &mut Connection,
    worker: &str,
    max: u32,
    now: Timestamp,
    lease_until: Option<Timestamp>,
) -> Result<Vec<Claimed>> {
    // An idle worker asks every second and after every chunk another worker took: a read finds
    // there is nothing without taking the write lock that ingest's next chunk may be waiting for.
    let any: bool = conn
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM inference_jobs WHERE status = 'queued' AND run_after <= ?1)")?
        .query_row([now], |r| r.get(0))?;
    if !any {
        return Ok(Vec::new());
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let claimed = {
        // Cached, as they run for every chunk the hub classifies.
        let mut stmt = tx.prepare_cached(
            "UPDATE inference_jobs SET status = 'running', claimed_at = ?1, worker_id = ?2, attempts = attempts + 1,
                    lease_until = ?4
             WHERE id IN (SELECT id FROM inference_jobs WHERE status = 'queued' AND run_after <= ?1
                          ORDER BY run_after, created_at LIMIT ?3)
             RETURNING id",
        )?;
        let ids: Vec<String> =
            stmt.query_map(params![now, worker, max, lease_until], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            out.push(tx.prepare_cached(&CLAIMED)?.query_row([id], claimed_row)?);
        }
        out
    };
    tx.commit()?;
    Ok(claimed)
}

/// What a worker needs of a claimed job.
static CLAIMED: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "SELECT j.id, j.chunk_id, j.tenant_id, s.id, s.name, j.attempts, {}, c.recorded_at, c.latitude, c.longitude
         FROM inference_jobs j JOIN audio_chunks c ON c.id = j.chunk_id JOIN satellites s ON s.pk = c.satellite_pk
         WHERE j.id = ?1",
        super::chunks::key_sql("c")
    )
});

fn claimed_row(r: &Row<'_>) -> rusqlite::Result<Claimed> {
    Ok(Claimed {
        job_id: r.get(0)?,
        chunk_id: r.get(1)?,
        tenant_id: r.get(2)?,
        satellite_id: r.get(3)?,
        satellite_name: r.get(4)?,
        attempts: r.get(5)?,
        storage_key: r.get(6)?,
        recorded_at: r.get(7)?,
        latitude: r.get(8)?,
        longitude: r.get(9)?,
    })
}

/// Whether the job is still running for `worker`: not requeued (after a restart or an expired
/// lease) and claimed again by someone else. Only the claim that holds a job may finish it, so its
/// detections are written once.
pub fn is_held(conn: &Connection, job_id: &str, worker: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT status = 'running' AND worker_id IS ?2 FROM inference_jobs WHERE id = ?1")?
        .query_row([job_id, worker], |r| r.get(0))
        .optional()?
        .unwrap_or(false))
}

/// Puts `worker`'s running jobs among `ids` back in the queue without counting the attempt: they
/// were offered and not done (no remote worker answered in time, or one gave them back).
pub fn release(conn: &Connection, ids: &[&str], worker: &str) -> Result<usize> {
    let mut stmt = conn.prepare_cached(
        "UPDATE inference_jobs SET status = 'queued', worker_id = NULL, lease_until = NULL,
                attempts = max(attempts - 1, 0)
         WHERE id = ?1 AND status = 'running' AND worker_id IS ?2",
    )?;
    let mut n = 0;
    for id in ids {
        n += stmt.execute(params![id, worker])?;
    }
    Ok(n)
}

/// Jobs whose lease ended before `now` go back to the queue: their holder is gone (a hub thread
/// that stopped, a worker that vanished). The attempt counts.
pub fn requeue_expired(conn: &Connection, now: Timestamp) -> Result<usize> {
    Ok(conn
        .prepare_cached(
            "UPDATE inference_jobs SET status = 'queued', worker_id = NULL, lease_until = NULL
         WHERE status = 'running' AND lease_until IS NOT NULL AND lease_until < ?1",
        )?
        .execute([now])?)
}

pub fn mark_done(conn: &Connection, job_id: &str, duration_ms: i64, now: Timestamp) -> Result<()> {
    conn.prepare_cached(
        "UPDATE inference_jobs SET status = 'done', finished_at = ?2, duration_ms = ?3, error = NULL WHERE id = ?1",
    )?
    .execute(params![job_id, now, duration_ms])?;
    Ok(())
}

/// Records a failure: back to the queue at `retry_at`, or failed for good when `None`.
pub fn fail(conn: &Connection, job_id: &str, error: &str, retry_at: Option<Timestamp>, now: Timestamp) -> Result<()> {
    match retry_at {
        Some(at) => conn.execute(
            "UPDATE inference_jobs SET status = 'queued', run_after = ?2, error = ?3, worker_id = NULL WHERE id = ?1",
            params![job_id, at, error],
        )?,
        None => conn.execute(
            "UPDATE inference_jobs SET status = 'failed', error = ?2, finished_at = ?3 WHERE id = ?1",
            params![job_id, error, now],
        )?,
    };
    Ok(())
}

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueStats {
    pub queued: u64,
    pub running: u64,
    pub done: u64,
    pub failed: u64,
}

/// Jobs per status, for one team or (with `None`) the whole hub.
pub fn stats(conn: &Connection, tenant: Option<TenantId>) -> Result<QueueStats> {
    let mut s = QueueStats::default();
    let mut stmt = conn
        .prepare("SELECT status, count(*) FROM inference_jobs WHERE (?1 IS NULL OR tenant_id = ?1) GROUP BY status")?;
    for row in stmt.query_map([tenant], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))? {
        let (status, n) = row?;
        let n = n.max(0) as u64;
        match status.as_str() {
            "queued" => s.queued = n,
            "running" => s.running = n,
            "done" => s.done = n,
            _ => s.failed = n,
        }
    }
    Ok(s)
}

/// Finished jobs are kept this long (for `GET /workers/jobs` and the queue counts), then
/// dropped: the chunk and its detections stay; only the queue's bookkeeping goes. Failed jobs
/// are kept until they are retried.
pub const DONE_RETENTION_DAYS: i64 = 7;

/// A batch of done jobs finished before `?1`.
const PRUNABLE: &str = "SELECT rowid FROM inference_jobs WHERE finished_at < ?1 AND status = 'done' LIMIT 5000";

/// Deletes done jobs finished before `before`, in batches so writers are never held up long.
pub fn prune_done(conn: &Connection, before: Timestamp) -> Result<u64> {
    let mut total = 0u64;
    loop {
        let n = conn.execute(&format!("DELETE FROM inference_jobs WHERE rowid IN ({PRUNABLE})"), [before])?;
        total += n as u64;
        if n < 5000 {
            return Ok(total);
        }
    }
}

/// A finished (done or failed) job, for `GET /workers/jobs`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finished {
    pub id: String,
    pub chunk_id: ChunkId,
    pub tenant_id: TenantId,
    pub status: String,
    pub attempts: u32,
    pub worker_id: Option<String>,
    pub error: Option<String>,
    pub duration_ms: Option<i64>,
    pub created_at: Timestamp,
    pub finished_at: Option<Timestamp>,
}

/// The latest finished jobs, newest first, read down `inference_jobs_finished` (which holds only
/// finished jobs, hence the `IS NOT NULL` that lets the planner use it).
const RECENT: &str =
    "SELECT id, chunk_id, tenant_id, status, attempts, worker_id, error, duration_ms, created_at, finished_at
     FROM inference_jobs
     WHERE finished_at IS NOT NULL AND status IN ('done', 'failed') AND (?1 IS NULL OR tenant_id = ?1)
     ORDER BY finished_at DESC LIMIT ?2";

/// The most recently finished jobs; platform-wide when `tenant` is `None`.
pub fn recent(conn: &Connection, tenant: Option<TenantId>, limit: u32) -> Result<Vec<Finished>> {
    let mut stmt = conn.prepare(RECENT)?;
    let rows = stmt.query_map(params![tenant, limit], |r| {
        Ok(Finished {
            id: r.get(0)?,
            chunk_id: r.get(1)?,
            tenant_id: r.get(2)?,
            status: r.get(3)?,
            attempts: r.get(4)?,
            worker_id: r.get(5)?,
            error: r.get(6)?,
            duration_ms: r.get(7)?,
            created_at: r.get(8)?,
            finished_at: r.get(9)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// One worker's finished jobs of one team (`GET /workers` for a team admin).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkerTally {
    pub worker_id: String,
    pub processed: u64,
    pub succeeded: u64,
    pub failed: u64,
    /// Mean `duration_ms` of the done jobs (0 when none).
    pub avg_duration_ms: f64,
}

/// The team's finished jobs (kept [`DONE_RETENTION_DAYS`]) counted per worker that ran them.
pub fn tally_by_worker(conn: &Connection, tenant: TenantId) -> Result<Vec<WorkerTally>> {
    let mut stmt = conn.prepare_cached(
        "SELECT worker_id, count(*), sum(status = 'done'), sum(status = 'failed'),
                coalesce(avg(CASE WHEN status = 'done' THEN duration_ms END), 0.0)
         FROM inference_jobs WHERE tenant_id = ?1 AND status IN ('done', 'failed') AND worker_id IS NOT NULL
         GROUP BY worker_id ORDER BY worker_id",
    )?;
    let rows = stmt.query_map([tenant], |r| {
        Ok(WorkerTally {
            worker_id: r.get(0)?,
            processed: r.get::<_, i64>(1)?.max(0) as u64,
            succeeded: r.get::<_, i64>(2)?.max(0) as u64,
            failed: r.get::<_, i64>(3)?.max(0) as u64,
            avg_duration_ms: r.get(4)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_done_jobs_past_their_retention_are_pruned() {
        let mut conn = Connection::open_in_memory().expect("open");
        super::super::migrate::run(&mut conn).expect("migrate");
        // Bare rows are enough here, without the chunks and teams they would point at.
        conn.pragma_update(None, "foreign_keys", "OFF").expect("pragma");
        for (id, status, finished) in [
            ("old-done", "done", "2026-01-01T00:00:00.000Z"),
            ("new-done", "done", "2026-01-09T00:00:00.000Z"),
            ("old-failed", "failed", "2026-01-01T00:00:00.000Z"),
            ("queued", "queued", ""),
        ] {
            conn.execute(
                "INSERT INTO inference_jobs (id, chunk_id, tenant_id, status, finished_at) VALUES (?1, ?1, 't', ?2, nullif(?3, ''))",
                [id, status, finished],
            )
            .expect("job");
        }
        assert_eq!(prune_done(&conn, "2026-01-02T00:00:00.000Z".parse().expect("time")).expect("prune"), 1);
        let left: Vec<String> = conn
            .prepare("SELECT id FROM inference_jobs ORDER BY id")
            .expect("prepare")
            .query_map([], |r| r.get(0))
            .expect("query")
            .map(|r| r.expect("row"))
            .collect();
        assert_eq!(left, ["new-done", "old-failed", "queued"]);
    }

    #[test]
    fn the_finished_index_leaves_queued_jobs_out_and_the_latest_finished_come_first() {
        let mut conn = Connection::open_in_memory().expect("open");
        super::super::migrate::run(&mut conn).expect("migrate");
        // A queued job (every chunk's, as it arrives) gets no entry: one page less per chunk.
        let index: String = conn
            .query_row("SELECT sql FROM sqlite_master WHERE name = 'inference_jobs_finished'", [], |r| r.get(0))
            .expect("index");
        assert!(index.ends_with("WHERE finished_at IS NOT NULL"), "{index}");
        conn.pragma_update(None, "foreign_keys", "OFF").expect("pragma");
        for (id, status, finished) in [
            ("done", "done", "2026-01-01T00:00:00.000Z"),
            ("failed", "failed", "2026-01-02T00:00:00.000Z"),
            ("queued", "queued", ""),
        ] {
            conn.execute(
                "INSERT INTO inference_jobs (id, chunk_id, tenant_id, status, finished_at, created_at)
                 VALUES (?1, ?2, ?3, ?4, nullif(?5, ''), '2026-01-01T00:00:00.000Z')",
                params![id, ChunkId::new(), TenantId::new(), status, finished],
            )
            .expect("job");
        }
        let ids: Vec<String> = recent(&conn, None, 10).expect("recent").into_iter().map(|j| j.id).collect();
        assert_eq!(ids, ["failed", "done"]);
    }
}
