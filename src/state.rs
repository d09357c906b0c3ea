//! `AppState`: the one cloneable handle that handlers (through axum's `State`) and background
//! tasks receive. There is no global state anywhere else.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::{
    cache::Cache, clock::Clock, config::Settings, events::Bus, mail::Mailer, objects::ObjectStore, store::Store,
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
    /// This process's id in the service registry.
    pub instance_id: Uuid,
    /// When this process started, for uptime in status reports.
    pub started_at: DateTime<Utc>,
}
