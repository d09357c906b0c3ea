//! `GET /system/status` (SPEC 2.21, platform admin): one page on how the whole system is doing.
//!
//! - `services`: every live instance in the service registry ([`super::service_registry`]), across
//!   processes, each `ok` or `stale`.
//! - `infrastructure`: the database (a timed real query, the file and WAL sizes), the in-memory
//!   cache (entries), the MQTT broker (connected clients and messages per second: this process's
//!   own broker, or in mode `api` the figures of the dispatcher's registry entry, marked
//!   `"source": "remote"`), and object storage (free space of the data dir's filesystem and the
//!   bytes of audio and pictures as recorded in the database).
//! - `data`: detection counts (total, today on the hub zone's calendar: hub-wide, no team's zone applies), the inference queue,
//!   species picture totals, and the numbers of teams, accounts and satellites.
//!
//! - `integrations`: whether Home Assistant / the MQTT feed publish a team, and why not when not
//!   (an ambiguous `integrations.team` turns them off rather than stopping the start).
//!
//! A part that cannot be read says `"status": "error"` with the reason; only a database that does
//! not answer at all fails the request (everything else on the page comes from it).

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::service_registry::{Listed, Registry, RegistryError, Service, ThisProcess};
use crate::{
    cache::Cache,
    objects::ObjectStore,
    store::{
        self, Store,
        jobs::QueueStats,
        system::{DatabaseFacts, Totals},
    },
    time::Timestamp,
};

#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    #[error("the database did not answer: {0}")]
    Database(store::Error),
    #[error("the service registry could not be read: {0}")]
    Registry(RegistryError),
}

impl From<store::Error> for StatusError {
    fn from(e: store::Error) -> Self {
        Self::Database(e)
    }
}

/// Whether a part of the system is usable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Health {
    Ok,
    /// Nothing reports it (mode `api` with no dispatcher in the registry).
    Unknown,
    Error,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SystemStatus {
    pub generated_at: Timestamp,
    pub instance_id: String,
    pub services: Vec<Listed>,
    pub infrastructure: Infrastructure,
    pub data: Data,
    pub integrations: Integrations,
}

/// The Home Assistant / MQTT feed integrations, as the last start (or wait) decided.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Integrations {
    /// `not_configured`, `publishing`, `waiting` (no team yet) or `off` (the operator must act).
    pub status: &'static str,
    pub team_id: Option<crate::ids::TenantId>,
    /// Why nothing is published, when nothing is.
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Infrastructure {
    pub database: Database,
    pub cache: CacheStatus,
    pub mqtt: Broker,
    pub object_storage: ObjectStorage,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Database {
    pub status: Health,
    pub engine: &'static str,
    pub journal_mode: String,
    /// How long the timed query took, including the hop to a database thread.
    pub latency_ms: f64,
    pub size_bytes: u64,
    pub wal_bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheStatus {
    pub status: Health,
    pub kind: &'static str,
    pub entries: u64,
    pub max_entries: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Broker {
    pub status: Health,
    /// `local`: this process runs the broker; `remote`: the dispatcher's, from its registry entry.
    pub source: &'static str,
    /// The process whose broker this is.
    pub instance_id: Option<String>,
    pub connected_clients: Option<u64>,
    pub messages_per_second: Option<f64>,
    pub messages_received: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectStorage {
    pub status: Health,
    pub kind: &'static str,
    pub free_bytes: Option<u64>,
    pub total_bytes: Option<u64>,
    /// Audio plus stored species pictures.
    pub used_bytes: u64,
    pub audio_bytes: u64,
    pub audio_chunks: u64,
    pub image_bytes: u64,
    /// Audio retention: what it gave up so far and its policy.
    pub retention: RetentionStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RetentionStatus {
    /// Bytes of audio retention deleted (the rows are kept, marked "audio expired").
    pub reclaimed_bytes: u64,
    pub expired_chunks: u64,
    pub keep_audio_days: u32,
    pub min_free_bytes: u64,
    /// Free space is under the minimum: ingest refuses new chunks until retention makes room.
    pub below_minimum: bool,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Data {
    pub detections: DetectionCounts,
    pub queue: QueueStats,
    pub species_images: SpeciesImages,
    pub tenants: u64,
    pub users: u64,
    pub satellites: u64,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DetectionCounts {
    pub total: u64,
    pub today: u64,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SpeciesImages {
    pub total: u64,
    /// Species per picture status (`cached`, `queued`, `fetching`, `failed`, `none`).
    pub by_status: std::collections::BTreeMap<String, u64>,
    pub bytes: u64,
}

/// The handles the page reads.
pub struct Sources<'a> {
    pub store: &'a Store,
    pub registry: &'a Registry,
    pub this: &'a ThisProcess,
    pub cache: &'a Cache,
    pub objects: &'a ObjectStore,
    pub retention: super::audio_retention::Policy,
    /// Whether Home Assistant or the MQTT feed is configured.
    pub integrations_on: bool,
}

pub async fn gather(src: Sources<'_>, now: DateTime<Utc>) -> Result<SystemStatus, StatusError> {
    let started = std::time::Instant::now();
    let facts: DatabaseFacts = src.store.call(|c| store::system::database(c)).await?;
    let latency_ms = started.elapsed().as_secs_f64() * 1e3;
    let stamp = Timestamp(now);
    let (totals, queue, images, expired) = src
        .store
        .call(move |c| {
            Ok((
                store::system::totals(c, stamp)?,
                store::jobs::stats(c, None)?,
                store::species_images::totals(c)?,
                store::audio_retention::totals(c)?,
            ))
        })
        .await?;
    let services = src.registry.list(now, src.this.entry().await).await.map_err(StatusError::Registry)?;
    let (entries, max_entries) = src.cache.entries().await;
    let infrastructure = Infrastructure {
        database: Database {
            status: Health::Ok,
            engine: "sqlite",
            journal_mode: facts.journal_mode,
            latency_ms,
            size_bytes: facts.size_bytes,
            wal_bytes: facts.wal_bytes,
        },
        cache: CacheStatus { status: Health::Ok, kind: "in-memory", entries, max_entries },
        mqtt: broker(&services, src.this.service),
        object_storage: object_storage(src.objects, &totals, images.cached_bytes, expired, src.retention).await,
    };
    let by_status: std::collections::BTreeMap<String, u64> =
        images.by_status.iter().map(|(s, n)| (s.as_str().to_owned(), *n)).collect();
    let data = Data {
        detections: DetectionCounts { total: totals.detections, today: totals.detections_today },
        queue,
        species_images: SpeciesImages { total: by_status.values().sum(), by_status, bytes: images.cached_bytes },
        tenants: totals.tenants,
        users: totals.users,
        satellites: totals.satellites,
    };
    let integrations = integrations(src.store, src.integrations_on).await?;
    Ok(SystemStatus {
        generated_at: stamp,
        instance_id: src.this.instance_id.clone(),
        services,
        infrastructure,
        data,
        integrations,
    })
}

async fn integrations(store: &Store, on: bool) -> Result<Integrations, StatusError> {
    if !on {
        return Ok(Integrations { status: "not_configured", team_id: None, reason: None });
    }
    let kept = super::home_feed::kept_team(store).await?.unwrap_or_default();
    let status = match (kept.team_id, kept.off) {
        (Some(_), _) => "publishing",
        (None, true) => "off",
        (None, false) => "waiting",
    };
    Ok(Integrations { status, team_id: kept.team_id, reason: kept.problem })
}

/// This process's broker, or (mode `api`) the freshest dispatcher's as its registry entry says.
fn broker(services: &[Listed], me: Service) -> Broker {
    let (source, owner) = if me.runs_broker() {
        ("local", services.iter().find(|l| l.this_process))
    } else {
        let newest = services
            .iter()
            .filter(|l| l.entry.service.runs_broker() && l.entry.details.broker.is_some())
            .max_by_key(|l| l.last_seen_at);
        ("remote", newest)
    };
    let report = owner.and_then(|l| l.entry.details.broker.as_ref().map(|b| (l, b)));
    match report {
        Some((l, b)) => Broker {
            status: Health::Ok,
            source,
            instance_id: Some(l.entry.instance_id.clone()),
            connected_clients: Some(b.connected_clients),
            messages_per_second: Some(b.messages_per_second),
            messages_received: Some(b.messages_received),
        },
        None => Broker {
            status: Health::Unknown,
            source,
            instance_id: None,
            connected_clients: None,
            messages_per_second: None,
            messages_received: None,
        },
    }
}

async fn object_storage(
    objects: &ObjectStore,
    totals: &Totals,
    image_bytes: u64,
    expired: store::audio_retention::Totals,
    policy: super::audio_retention::Policy,
) -> ObjectStorage {
    let objects = objects.clone();
    let space = tokio::task::spawn_blocking(move || objects.disk_space()).await;
    let (status, free, total, error) = match space {
        Ok(Ok(s)) => (Health::Ok, Some(s.free_bytes), Some(s.total_bytes), None),
        Ok(Err(e)) => (Health::Error, None, None, Some(e.to_string())),
        Err(e) => (Health::Error, None, None, Some(e.to_string())),
    };
    ObjectStorage {
        status,
        kind: "filesystem",
        free_bytes: free,
        total_bytes: total,
        // Audio on disk: what retention deleted is no longer counted.
        used_bytes: expired.audio_bytes.max(0) as u64 + image_bytes,
        audio_bytes: expired.audio_bytes.max(0) as u64,
        audio_chunks: totals.audio_chunks,
        image_bytes,
        retention: RetentionStatus {
            reclaimed_bytes: expired.reclaimed_bytes.max(0) as u64,
            expired_chunks: expired.expired_chunks.max(0) as u64,
            keep_audio_days: policy.keep_audio_days,
            min_free_bytes: policy.min_free_bytes,
            below_minimum: free.is_some_and(|f| f < policy.min_free_bytes),
        },
        error,
    }
}
