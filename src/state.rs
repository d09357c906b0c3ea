//! `AppState`: the one cloneable handle that handlers (through axum's `State`) and background
//! tasks receive. There is no global state anywhere else.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::{
    cache::Cache,
    clock::Clock,
    config::Settings,
    events::Bus,
    inference::worker::{JobSignal, WorkerBoard},
    links::{Links, PublicLinks},
    mail::Mailer,
    mqtt::MqttHandle,
    objects::ObjectStore,
    store::Store,
};

#[derive(Clone)]
pub struct AppState {
    /// The resolved configuration, read-only after start.
    pub settings: Arc<Settings>,
    /// The SQLite database.
    pub store: Store,
    /// Audio, APKs and images on disk.
    pub objects: ObjectStore,
    /// Rate limits, pending MFA secrets and the service registry.
    pub cache: Cache,
    /// Carries detections and satellite events between the parts of the hub.
    pub bus: Bus,
    /// The time every rule reads; tests move it forward.
    pub clock: Clock,
    /// Password-reset and notification mail.
    pub mailer: Mailer,
    /// Publishes to satellites (embedded broker or, in `api` mode, the dispatcher's).
    pub mqtt: MqttHandle,
    /// Wakes the inference workers when a chunk is queued.
    pub job_signal: JobSignal,
    /// Per-worker counters for `GET /workers`.
    pub workers: WorkerBoard,
    /// Remote inference workers (`birdhub worker`): their joins, offers and counters.
    pub remote: crate::inference::remote::RemotePool,
    /// This process's id in the service registry.
    pub instance_id: Uuid,
    /// When this process started, for uptime in status reports.
    pub started_at: DateTime<Utc>,
    /// The hub's own public addresses for links in mail and API responses (never a request's
    /// `Host`); resolved once the listeners are bound.
    pub links: Links,
    /// The range model for `/stats/expected-species`, loaded on first use.
    pub range: crate::inference::range::Shared,
    /// Species names in every installed label language (alerts and `/species/translate`).
    pub names: crate::inference::translations::Translations,
    /// What the alert engine needs besides the database (translations, links).
    pub alerts: crate::usecases::alerting::AlertContext,
    /// Sends alert deliveries (HTTP and SMTP) and test sends.
    pub outbound: crate::usecases::alert_delivery::Outbound,
    /// The species picture source and the fetcher's wake-up call.
    pub images: crate::usecases::species_images::Images,
    /// Seals second-factor secrets at rest with `MFA_ENCRYPTION_KEY`.
    pub secrets: crate::auth::secretbox::SecretBox,
    /// The weather service of `/stats/weather-correlation` (`weather.provider_url`; may be off).
    pub weather: crate::usecases::weather::Provider,
    /// Pending `log-request`s and their answers (10 minutes, in memory).
    pub logs: crate::mqtt::logs::LogRequests,
    /// Live-audio sessions and their watching WebSockets (in memory).
    pub live: crate::mqtt::live::LiveSessions,
    /// Audio retention's policy and free-space check, shared by ingest and its job.
    pub disk: crate::usecases::audio_retention::DiskGuard,
    /// Prometheus counters and histograms (`GET /metrics`); a no-op while `metrics.enabled` is off.
    pub metrics: crate::metrics::Metrics,
    /// The one bound on concurrent argon2 runs: every password hash and verification goes through it.
    pub passwords: crate::auth::password::Passwords,
    /// The bounds of spectrogram drawing: the first minute of a file, undecodable files
    /// remembered, one drawing per core at a time.
    pub spectrograms: crate::media::audio_source::Sources,
}

impl AppState {
    /// The service registry shared by every process on this data dir.
    pub fn registry(&self) -> crate::usecases::service_registry::Registry {
        crate::usecases::service_registry::Registry::new(self.store.clone(), &self.settings.cache.registry_prefix)
    }

    /// The handles this process's own registry entry is read from.
    pub fn this_process(&self) -> crate::usecases::service_registry::ThisProcess {
        crate::usecases::service_registry::ThisProcess {
            service: crate::usecases::service_registry::Service::of(self.settings.mode),
            instance_id: self.instance_id.to_string(),
            started_at: self.started_at.into(),
            bind: self.settings.http.bind.ip(),
            workers: self.workers.clone(),
            mqtt: self.mqtt.clone(),
        }
    }

    /// The handles a change of who may do what takes (`usecases::access_changes`, `membership`).
    pub fn access_ctx(&self) -> crate::usecases::access_changes::Handles<'_> {
        crate::usecases::access_changes::Handles {
            store: &self.store,
            clock: &self.clock,
            bus: &self.bus,
            live: self.live_ctx(),
            mailer: &self.mailer,
            passwords: &self.passwords,
        }
    }

    /// The handles the live-audio use cases take.
    pub fn live_ctx(&self) -> crate::usecases::satellite_live::LiveContext<'_> {
        crate::usecases::satellite_live::LiveContext {
            live: &self.live,
            store: &self.store,
            mqtt: &self.mqtt,
            clock: &self.clock,
            topic_root: &self.settings.mqtt.topic_root,
            timeout_ms: i64::try_from(self.settings.live_audio.timeout_ms).unwrap_or(i64::MAX),
        }
    }

    /// The handles the public-page use cases take.
    pub fn public_ctx(&self) -> crate::usecases::public_page::Ctx<'_> {
        crate::usecases::public_page::Ctx {
            store: &self.store,
            labels: &self.names,
            cache: &self.cache,
            now: self.clock.now(),
            per_minute: self.settings.http.public_page_per_minute,
        }
    }

    /// The hub's public addresses (see [`crate::links`]).
    pub fn links(&self) -> &PublicLinks {
        self.links.get(&self.settings)
    }
}
