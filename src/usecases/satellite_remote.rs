//! Remote actions on a satellite (SPEC 4.4, 2.8): ask it to update to a version. The device rule
//! is checked by the caller (`auth::device_rule`); this owns the validation, the state change and
//! the message to the satellite.

use crate::{
    clock::Clock,
    config::ReleaseSettings,
    domain::versions,
    ids::{SatelliteId, TenantId},
    mqtt::{
        MqttHandle,
        logs::{AnswerReceiver, LogRequests},
        protocol::{LogRequest, Update},
        topics::{self, Channel},
    },
    store::{self, Store},
    usecases::system_versions,
};

#[derive(Debug, thiserror::Error)]
pub enum UpdateError {
    #[error("{0}")]
    InvalidVersion(versions::BadVersion),
    #[error("no satellite release is known yet; give targetVersion")]
    NoTargetVersion,
    #[error("the satellite already runs {installed}: it is up to date")]
    AlreadyUpToDate { installed: String },
    #[error("satellite not found")]
    NotFound,
    #[error("could not send the update to the satellite: {0}")]
    Publish(String),
    #[error(transparent)]
    Store(store::Error),
}

impl From<store::Error> for UpdateError {
    fn from(e: store::Error) -> Self {
        match e {
            store::Error::NotFound => Self::NotFound,
            e => Self::Store(e),
        }
    }
}

impl From<system_versions::VersionsError> for UpdateError {
    fn from(e: system_versions::VersionsError) -> Self {
        match e {
            system_versions::VersionsError::Store(e) => e.into(),
        }
    }
}

/// What the hub asked for.
#[derive(Debug, Clone)]
pub struct UpdateRequested {
    pub target_version: String,
}

/// The hub's side of an update request.
pub struct UpdateContext<'a> {
    pub store: &'a Store,
    pub clock: &'a Clock,
    pub mqtt: &'a MqttHandle,
    pub releases: &'a ReleaseSettings,
    pub topic_root: &'a str,
}

/// Stamps the satellite `updating` with its target and sends it `update` (QoS 1). Without
/// `target_version`, the latest satellite release that `GET /system/versions` reports is used.
/// The version the satellite already runs is refused ([`UpdateError::AlreadyUpToDate`]), and so
/// is a default target no newer than it: an "update" to it would only restart the device.
pub async fn request_update(
    ctx: UpdateContext<'_>,
    tenant: TenantId,
    satellite: SatelliteId,
    target_version: Option<&str>,
) -> Result<UpdateRequested, UpdateError> {
    let installed = ctx.store.call(move |c| Ok(store::satellites::get(c, satellite)?.version)).await?;
    let installed = installed.as_deref().and_then(|v| versions::parse(v).ok());
    let target = match target_version {
        Some(text) => {
            let wanted = versions::parse(text).map_err(UpdateError::InvalidVersion)?;
            // Asking for the version it runs would only restart it: say so instead.
            if let Some(now) = installed.as_ref().filter(|now| versions::precedence(now, &wanted).is_eq()) {
                return Err(UpdateError::AlreadyUpToDate { installed: now.to_string() });
            }
            wanted.to_string()
        }
        None => {
            let latest = system_versions::latest(ctx.store, env!("CARGO_PKG_VERSION"), ctx.releases)
                .await?
                .satellite
                .ok_or(UpdateError::NoTargetVersion)?;
            if let (Some(now), Ok(newest)) = (installed.as_ref(), versions::parse(&latest))
                && !versions::update_available(now, &newest)
            {
                return Err(UpdateError::AlreadyUpToDate { installed: now.to_string() });
            }
            latest
        }
    };
    let now = ctx.clock.stamp();
    let stored = target.clone();
    ctx.store
        .call(move |c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            store::satellites::request_update(&tx, tenant, satellite, &stored, now)?;
            tx.commit()?;
            Ok(())
        })
        .await?;
    let message =
        Update { satellite_id: satellite.to_string(), tenant_id: tenant.to_string(), target_version: target.clone() };
    let body = serde_json::to_vec(&message).map_err(|e| UpdateError::Publish(e.to_string()))?;
    let topic = topics::topic(ctx.topic_root, tenant, satellite, Channel::Update);
    ctx.mqtt.publish(topic, body, 1).await.map_err(UpdateError::Publish)?;
    Ok(UpdateRequested { target_version: target })
}

/// The default and the largest `tail` of a log request.
pub const DEFAULT_TAIL: u32 = 500;
pub const MAX_TAIL: u32 = 5000;

#[derive(Debug, thiserror::Error)]
pub enum LogsError {
    #[error("tail must be an integer from 1 to 5000")]
    InvalidTail,
    #[error("could not send the log request to the satellite: {0}")]
    Publish(String),
}

/// `tail` as given (any JSON value): absent means [`DEFAULT_TAIL`].
pub fn parse_tail(tail: Option<&serde_json::Value>) -> Result<u32, LogsError> {
    match tail {
        None | Some(serde_json::Value::Null) => Ok(DEFAULT_TAIL),
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| (1..=MAX_TAIL).contains(n))
            .ok_or(LogsError::InvalidTail),
    }
}

/// Registers a log request and sends `log-request {requestId, tail}` (QoS 1). Returns the
/// request's id and where its answer arrives.
pub async fn request_logs(
    mqtt: &MqttHandle,
    logs: &LogRequests,
    topic_root: &str,
    tenant: TenantId,
    satellite: SatelliteId,
    tail: u32,
) -> Result<(String, AnswerReceiver), LogsError> {
    let request_id = uuid::Uuid::new_v4().to_string();
    let rx = logs.register(&request_id, tenant, satellite);
    let body = serde_json::to_vec(&LogRequest { request_id: request_id.clone(), tail })
        .map_err(|e| LogsError::Publish(e.to_string()))?;
    let topic = topics::topic(topic_root, tenant, satellite, Channel::LogRequest);
    mqtt.publish(topic, body, 1).await.map_err(LogsError::Publish)?;
    Ok((request_id, rx))
}
