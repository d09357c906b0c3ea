//! The service registry (SPEC 2.21): which birdhub processes run on this data dir, and how each is
//! doing. It must work across processes: in split mode the `api` process answers
//! `GET /system/status` and `GET /workers` about a `dispatcher` that runs in another process.
//!
//! How: the one thing the two processes share is the SQLite file, so the registry is a table in it
//! (`store::registry`). Each process's registry task ([`crate::jobs::registry`]) upserts its own row
//! every [`REFRESH`] (and at once when an inference job finishes) with `expires_at = now + TTL`,
//! under the SPEC's key `{prefix}:registry:{service}:{instanceId}`. Readers skip expired rows, and
//! the task deletes them. A process that stops cleanly withdraws its row; one that dies drops out
//! of every list [`TTL`] after its last refresh. The in-memory cache still holds this process's
//! own entry under the same key (the SPEC's in-memory store), but it cannot be seen from another
//! process, so nothing reads the registry from it.
//!
//! The process answering a request always lists itself from live counters ([`ThisProcess`]), not
//! from its possibly 10 s old row.

use std::{collections::BTreeMap, net::IpAddr, time::Duration};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::{
    config::Mode,
    inference::worker::WorkerBoard,
    mqtt::MqttHandle,
    store::{self, Store, registry::Row},
    time::Timestamp,
};

/// An entry not refreshed for this long is gone (SPEC 2.21).
pub const TTL: Duration = Duration::from_secs(30);
/// How often each process refreshes its entry.
pub const REFRESH: Duration = Duration::from_secs(10);
/// An entry not refreshed for this long (two missed refreshes) is listed as `stale`.
pub const STALE_AFTER: Duration = Duration::from_secs(20);

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("a registry entry could not be encoded: {0}")]
    Encode(#[from] serde_json::Error),
    #[error(transparent)]
    Store(#[from] store::Error),
}

/// What kind of process an entry describes (the `{service}` of the key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Service {
    /// `--mode full`: everything in one process.
    Hub,
    Api,
    Dispatcher,
}

impl Service {
    pub fn of(mode: Mode) -> Self {
        match mode {
            Mode::Full => Self::Hub,
            Mode::Api => Self::Api,
            Mode::Dispatcher => Self::Dispatcher,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hub => "hub",
            Self::Api => "api",
            Self::Dispatcher => "dispatcher",
        }
    }

    /// Whether this kind of process runs the embedded broker.
    pub fn runs_broker(self) -> bool {
        self != Self::Api
    }
}

/// What one process says about itself in its registry entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub service: Service,
    pub instance_id: String,
    pub version: String,
    pub started_at: Timestamp,
    /// Resident memory of the process (Linux `/proc`), when readable.
    pub memory_bytes: Option<u64>,
    /// The LAN address the process serves on.
    pub ip: IpAddr,
    pub pid: u32,
    pub details: Details,
}

/// Per-service details: workers where the process runs inference, the broker where it runs one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Details {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<Vec<WorkerReport>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broker: Option<BrokerReport>,
}

/// One inference worker's counters since its process started (SPEC 4.12).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerReport {
    pub id: String,
    /// `idle`, `busy`, `stopped` or `waiting_for_model`.
    pub status: String,
    pub jobs_processed: u64,
    pub jobs_succeeded: u64,
    pub jobs_failed: u64,
    pub avg_duration_ms: f64,
    pub last_job_at: Option<Timestamp>,
}

/// The embedded broker's load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokerReport {
    pub connected_clients: u64,
    pub messages_per_second: f64,
    /// Messages received from clients since the broker started.
    pub messages_received: u64,
}

/// Whether a listed entry is being refreshed on time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Liveness {
    Ok,
    /// Missed two refreshes: probably stopped; it disappears when its TTL runs out.
    Stale,
}

/// A live entry as a reader lists it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Listed {
    /// `{prefix}:registry:{service}:{instanceId}`.
    pub key: String,
    pub status: Liveness,
    pub uptime_seconds: i64,
    pub last_seen_at: Timestamp,
    /// The process that answered this request.
    pub this_process: bool,
    #[serde(flatten)]
    pub entry: Entry,
}

/// The registry of one data dir, under the configured key prefix.
#[derive(Clone)]
pub struct Registry {
    store: Store,
    prefix: String,
}

impl Registry {
    pub fn new(store: Store, prefix: &str) -> Self {
        Self { store, prefix: prefix.to_owned() }
    }

    /// The SPEC's key of one instance.
    pub fn key(&self, service: Service, instance_id: &str) -> String {
        format!("{}:registry:{}:{instance_id}", self.prefix, service.as_str())
    }

    /// Writes (refreshes) `entry`, alive until `now + TTL`.
    pub async fn publish(&self, entry: &Entry, now: DateTime<Utc>) -> Result<(), RegistryError> {
        let row = Row {
            key: self.key(entry.service, &entry.instance_id),
            service: entry.service.as_str().to_owned(),
            instance_id: entry.instance_id.clone(),
            info: serde_json::to_string(entry)?,
            seen_at: Timestamp(now),
            expires_at: Timestamp(now + ttl()),
        };
        Ok(self.store.call(move |c| store::registry::upsert(c, &row)).await?)
    }

    /// Removes an entry at once (a clean stop).
    pub async fn withdraw(&self, service: Service, instance_id: &str) -> Result<(), RegistryError> {
        let key = self.key(service, instance_id);
        Ok(self.store.call(move |c| store::registry::remove(c, &key)).await?)
    }

    /// Deletes entries whose TTL ran out; returns how many.
    pub async fn prune(&self, now: DateTime<Utc>) -> Result<usize, RegistryError> {
        Ok(self.store.call(move |c| store::registry::prune(c, Timestamp(now))).await?)
    }

    /// Every live entry at `now`, with `this` (the caller's own live entry) in place of its row.
    /// A row that does not parse (written by another birdhub version) is skipped with a warning.
    pub async fn list(&self, now: DateTime<Utc>, this: Entry) -> Result<Vec<Listed>, RegistryError> {
        let prefix = format!("{}:registry:", self.prefix);
        let rows = self.store.call(move |c| store::registry::live(c, &prefix, Timestamp(now))).await?;
        let this_key = self.key(this.service, &this.instance_id);
        let mut listed = BTreeMap::new();
        for row in rows.into_iter().filter(|r| r.key != this_key) {
            match serde_json::from_str::<Entry>(&row.info) {
                Ok(entry) => {
                    listed.insert(row.key.clone(), listed_entry(row.key, entry, row.seen_at, now, false));
                }
                Err(e) => tracing::warn!(key = %row.key, error = %e, "skipping an unreadable registry entry"),
            }
        }
        listed.insert(this_key.clone(), listed_entry(this_key, this, Timestamp(now), now, true));
        Ok(listed.into_values().collect())
    }
}

fn ttl() -> chrono::Duration {
    chrono::Duration::from_std(TTL).unwrap_or(chrono::Duration::seconds(30))
}

fn listed_entry(key: String, entry: Entry, seen: Timestamp, now: DateTime<Utc>, this_process: bool) -> Listed {
    let silent = (now - seen.at()).to_std().unwrap_or_default();
    let status = if silent >= STALE_AFTER { Liveness::Stale } else { Liveness::Ok };
    let uptime_seconds = (now - entry.started_at.at()).num_seconds().max(0);
    Listed { key, status, uptime_seconds, last_seen_at: seen, this_process, entry }
}

/// The handles a process reads its own entry from: its worker counters and its broker.
#[derive(Clone)]
pub struct ThisProcess {
    pub service: Service,
    pub instance_id: String,
    pub started_at: Timestamp,
    /// The HTTP bind address (`0.0.0.0` resolves to the LAN address at each refresh).
    pub bind: IpAddr,
    pub workers: WorkerBoard,
    pub mqtt: MqttHandle,
}

impl ThisProcess {
    /// This process's entry from its live counters.
    pub async fn entry(&self) -> Entry {
        let workers = (self.service != Service::Api).then(|| {
            self.workers
                .snapshot()
                .into_iter()
                .map(|w| WorkerReport {
                    status: serde_json::to_value(w.status)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default(),
                    id: w.id,
                    jobs_processed: w.jobs_processed,
                    jobs_succeeded: w.jobs_succeeded,
                    jobs_failed: w.jobs_failed,
                    avg_duration_ms: w.avg_duration_ms,
                    last_job_at: w.last_job_at,
                })
                .collect()
        });
        let broker = match self.service.runs_broker() {
            true => Some(BrokerReport {
                connected_clients: self.mqtt.connected_clients().await.unwrap_or(0) as u64,
                messages_per_second: self.mqtt.meter().rate(),
                messages_received: self.mqtt.meter().received(),
            }),
            false => None,
        };
        Entry {
            service: self.service,
            instance_id: self.instance_id.clone(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            started_at: self.started_at,
            memory_bytes: resident_memory_bytes(),
            ip: crate::links::lan_ip(self.bind),
            pid: std::process::id(),
            details: Details { workers, broker },
        }
    }
}

/// Resident set size of this process from /proc (Linux), if readable.
pub fn resident_memory_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}
