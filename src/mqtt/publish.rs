//! What the hub publishes: config pushes (QoS 2), detection notifications (QoS 1), and dropping
//! the sessions of revoked satellites. The tasks follow the event bus.

use tokio_util::sync::CancellationToken;

use super::topics::{self, Channel};
use crate::{
    domain::{
        satellite_config::{self, Overrides, RecordingProfile},
        settings::TenantSettings,
    },
    events::{Event, Relayed},
    ids::SatelliteId,
    state::AppState,
    store,
};

/// Resolves a satellite's config and publishes it on its `config` channel (QoS 2). Stored
/// overrides that are no longer valid are left out (and logged), never the whole config.
pub async fn push_config(state: &AppState, satellite: SatelliteId) -> Result<(), String> {
    let (sat, tenant) = state
        .store
        .call(move |c| {
            let sat = store::satellites::get(c, satellite)?;
            let tenant: TenantSettings = store::settings::load(c, &sat.tenant_id.to_string())?;
            Ok((sat, tenant))
        })
        .await
        .map_err(|e| e.to_string())?;
    let profile: Option<RecordingProfile> =
        sat.recording_profile_json.as_deref().and_then(|j| serde_json::from_str(j).ok());
    // A bad stored key must not cost the satellite its config: drop only that key.
    let (overrides, dropped) = Overrides::sanitized(&sat.overrides_json, &tenant);
    for d in &dropped {
        tracing::warn!(%satellite, key = %d.key, reason = %d.reason, "a stored override was ignored");
    }
    let config =
        satellite_config::resolve(&sat.id.to_string(), &sat.tenant_id.to_string(), &tenant, &overrides, profile);
    let topic = topics::topic(&state.settings.mqtt.topic_root, sat.tenant_id, sat.id, Channel::Config);
    let body = serde_json::to_vec(&config).map_err(|e| e.to_string())?;
    state.mqtt.publish(topic, body, 2).await
}

/// Pushes config on every `ConfigChanged` (tenant settings or one satellite's overrides/profile),
/// and drops the broker sessions of satellites whose credentials were revoked.
pub async fn run_config_pusher(state: AppState, shutdown: CancellationToken) -> anyhow::Result<()> {
    let mut events = state.bus.subscribe("config-pusher");
    loop {
        let event = tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            e = events.recv() => e,
        };
        let Some(event) = event else { return Ok(()) };
        if let Event::SatelliteRevoked { satellite_id, .. } = event {
            if let Some(dynsec) = state.mqtt.dynsec() {
                super::logins::satellite_revoked(&state, dynsec, satellite_id).await;
                continue;
            }
            for prefix in ["satellite", "mobile"] {
                state.mqtt.disconnect(&format!("{prefix}-{satellite_id}")).await;
            }
            continue;
        }
        let Event::ConfigChanged { tenant_id, satellite_id } = event else { continue };
        let targets = match satellite_id {
            Some(s) => vec![s],
            None => state.store.call(move |c| store::satellites::ids_of_tenant(c, tenant_id)).await.unwrap_or_default(),
        };
        for s in targets {
            if let Err(e) = push_config(&state, s).await {
                tracing::warn!(satellite = %s, error = %e, "config push failed");
            }
        }
    }
}

/// Publishes what the remote pool hands over (offers to the worker group, answers to joins),
/// in order, until shutdown.
pub async fn run_offer_forwarder(
    state: AppState,
    mut outbox: tokio::sync::mpsc::Receiver<crate::inference::remote::pool::Outgoing>,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    loop {
        let next = tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            m = outbox.recv() => m,
        };
        let Some(m) = next else { return Ok(()) };
        if let Err(e) = state.mqtt.publish(m.topic, m.payload, 1).await {
            tracing::warn!(error = %e, "a message to the remote workers was not sent");
        }
    }
}

/// Drops the connection of any joined remote worker whose key was revoked where the hub could
/// not act at once (`birdhub admin worker-key revoke`, another process): checked every 2 s.
pub async fn run_worker_guard(state: AppState, shutdown: CancellationToken) -> anyhow::Result<()> {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(2));
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = tick.tick() => {}
        }
        let joined: Vec<uuid::Uuid> = state.remote.snapshot().iter().filter(|w| w.connected).map(|w| w.id).collect();
        if joined.is_empty() {
            continue;
        }
        match crate::usecases::worker_keys::revoked_among(&state.store, joined).await {
            Ok(gone) => {
                for id in gone {
                    tracing::info!(worker = %id, "a revoked worker's connection is dropped");
                    state.remote.forget(id);
                    let client = format!("{}{id}", crate::inference::remote::CLIENT_PREFIX);
                    state.mqtt.disconnect(&client).await;
                    state.mqtt.delete_login(&client).await;
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not check the remote workers' keys"),
        }
    }
}

/// Republishes each new detection on its satellite's `detection` channel (SPEC 2.7).
pub async fn run_detection_publisher(state: AppState, shutdown: CancellationToken) -> anyhow::Result<()> {
    let mut events = state.bus.subscribe("detection-publisher");
    let root = state.settings.mqtt.topic_root.clone();
    let relay = state.settings.mode == crate::config::Mode::Dispatcher;
    loop {
        let event = tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            e = events.recv() => e,
        };
        match event {
            None => return Ok(()),
            Some(Event::DetectionCreated(d)) => {
                let topic = topics::topic(&root, d.tenant_id, d.satellite_id, Channel::Detection);
                let body = serde_json::to_vec(&*d).unwrap_or_default();
                if let Err(e) = state.mqtt.publish(topic, body, 1).await {
                    tracing::warn!(detection = %d.id, error = %e, "detection notification not sent");
                }
            }
            // A dispatcher relays alerts and outages to the API processes' WebSocket clients.
            Some(other) if relay => {
                if let Some(r) = Relayed::of(&other) {
                    let body = serde_json::to_vec(&r).unwrap_or_default();
                    if let Err(e) = state.mqtt.publish(topics::hub_events(&root), body, 1).await {
                        tracing::warn!(error = %e, "event not relayed to the API processes");
                    }
                }
            }
            Some(_) => {}
        }
    }
}
