//! Where a freshly minted MQTT secret goes besides the database. The embedded broker checks every
//! login against the stored SHA-256, so it needs nothing ([`NoBrokerLogins`]). An existing
//! mosquitto (`mqtt.external`) keeps its own logins: the hub must hand it the plaintext at the one
//! moment it exists, when a satellite is registered or a worker key minted
//! ([`crate::mqtt::dynsec`] implements [`BrokerLogins`] for it).
//!
//! The secret only ever travels in-process, through this trait: never on the event bus (whose
//! events are logged and relayed) and never in a log line.

use std::{future::Future, pin::Pin};

use crate::{
    domain::DeviceKind,
    ids::{SatelliteId, TenantId},
};

/// A future a [`BrokerLogins`] method returns.
pub type LoginFuture<'a> = Pin<Box<dyn Future<Output = Result<(), LoginSyncError>> + Send + 'a>>;

/// The broker could not take a new login.
#[derive(Debug, thiserror::Error)]
#[error("the MQTT broker did not take the new login: {0}")]
pub struct LoginSyncError(pub String);

/// The logins of a broker the hub does not run itself.
pub trait BrokerLogins: Send + Sync {
    /// A satellite's (new) MQTT password: create its login, or change the password of the one it
    /// has (which drops its current session).
    fn satellite<'a>(
        &'a self,
        tenant: TenantId,
        satellite: SatelliteId,
        kind: DeviceKind,
        password: &'a str,
    ) -> LoginFuture<'a>;

    /// A worker key's secret: create the worker's login.
    fn worker<'a>(&'a self, id: uuid::Uuid, secret: &'a str) -> LoginFuture<'a>;
}

/// The embedded broker: logins are checked against the database, nothing to hand over.
pub struct NoBrokerLogins;

impl BrokerLogins for NoBrokerLogins {
    fn satellite<'a>(&'a self, _: TenantId, _: SatelliteId, _: DeviceKind, _: &'a str) -> LoginFuture<'a> {
        Box::pin(async { Ok(()) })
    }

    fn worker<'a>(&'a self, _: uuid::Uuid, _: &'a str) -> LoginFuture<'a> {
        Box::pin(async { Ok(()) })
    }
}
