//! `GET /workers` (SPEC 4.12): the inference workers connected to this hub, from every process in
//! the service registry (so the `api` process of a split pair shows the dispatcher's workers), each
//! machine once.
//!
//! Deduplicated by IP: a restarted dispatcher leaves its old entry behind until the TTL runs out,
//! and one machine's workers must not be listed twice, so per IP only the most recently refreshed
//! entry that runs workers is kept. Counts: a platform admin sees each worker's own counters since
//! its process started; a team admin sees only the team's jobs as each worker ran them (from the
//! jobs table, the last 7 days of done jobs and every failed one), never another team's.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::service_registry::{Listed, Registry, RegistryError, ThisProcess};
use crate::{
    ids::TenantId,
    store::{self, Store, jobs::QueueStats},
    time::Timestamp,
};

#[derive(Debug, thiserror::Error)]
pub enum WorkersError {
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error(transparent)]
    Store(#[from] store::Error),
}

/// Whose counts a caller sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// A platform admin: every job of every team.
    Platform,
    /// A team admin: the team's own jobs.
    Team(TenantId),
}

/// One worker as `GET /workers` lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Worker {
    pub id: String,
    pub status: String,
    pub ip: String,
    pub service: String,
    pub instance_id: String,
    pub jobs_processed: u64,
    pub jobs_succeeded: u64,
    pub jobs_failed: u64,
    pub avg_duration_ms: f64,
    pub last_job_at: Option<Timestamp>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Workers {
    /// The team's queue (or the whole hub's, for a platform admin).
    pub queue: QueueStats,
    pub workers: Vec<Worker>,
    /// The process that answered.
    pub instance_id: String,
}

pub async fn list(
    store: &Store,
    registry: &Registry,
    this: &ThisProcess,
    now: DateTime<Utc>,
    scope: Scope,
) -> Result<Workers, WorkersError> {
    let listed = registry.list(now, this.entry().await).await?;
    let mut workers = connected(&listed);
    let tenant = match scope {
        Scope::Platform => None,
        Scope::Team(t) => Some(t),
    };
    let queue = store.call(move |c| store::jobs::stats(c, tenant)).await?;
    if let Some(tenant) = tenant {
        let tallies = store.call(move |c| store::jobs::tally_by_worker(c, tenant)).await?;
        let by_id: BTreeMap<_, _> = tallies.into_iter().map(|t| (t.worker_id.clone(), t)).collect();
        for w in &mut workers {
            let t = by_id.get(&w.id).cloned().unwrap_or_default();
            (w.jobs_processed, w.jobs_succeeded, w.jobs_failed) = (t.processed, t.succeeded, t.failed);
            w.avg_duration_ms = t.avg_duration_ms;
            w.last_job_at = None; // the worker's last job may be another team's
        }
    }
    Ok(Workers { queue, workers, instance_id: this.instance_id.clone() })
}

/// The workers of the newest entry per IP, among entries that run workers.
pub fn connected(listed: &[Listed]) -> Vec<Worker> {
    let mut newest: BTreeMap<String, &Listed> = BTreeMap::new();
    for l in listed.iter().filter(|l| l.entry.details.workers.as_ref().is_some_and(|w| !w.is_empty())) {
        let ip = l.entry.ip.to_string();
        let newer = |old: &&Listed| {
            (l.this_process, l.last_seen_at, l.entry.started_at)
                > (old.this_process, old.last_seen_at, old.entry.started_at)
        };
        if newest.get(&ip).is_none_or(newer) {
            newest.insert(ip, l);
        }
    }
    newest
        .into_iter()
        .flat_map(|(ip, l)| {
            l.entry.details.workers.iter().flatten().map(move |w| Worker {
                id: w.id.clone(),
                status: w.status.clone(),
                ip: ip.clone(),
                service: l.entry.service.as_str().to_owned(),
                instance_id: l.entry.instance_id.clone(),
                jobs_processed: w.jobs_processed,
                jobs_succeeded: w.jobs_succeeded,
                jobs_failed: w.jobs_failed,
                avg_duration_ms: w.avg_duration_ms,
                last_job_at: w.last_job_at,
            })
        })
        .collect()
}
