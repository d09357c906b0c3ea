//! The hub's side of the six satellite channels (SPEC 2.1-2.4, 2.8, 4.15) and of the remote
//! workers' channels. The embedded broker hands every publish to [`Ingest`] before acknowledging
//! it, so a slow hub slows satellites down instead of losing data. Satellite messages are consumed
//! here and never routed to other clients. Before anything else, every publish goes through the
//! same ACL decision the broker used ([`super::acl`]); only an allowed one is looked at.
//! With an existing mosquitto, [`super::external`] hands its messages to the same
//! [`Ingest::handle`], the sender read from the topic.

use std::{future::Future, pin::Pin, sync::Arc};

use base64::Engine;
use mqtt5::broker::{BrokerEventHandler, ClientDisconnectEvent, ClientPublishEvent, PublishAction};
use serde::Deserialize;

use super::{
    auth::{BrokerAuth, Identity},
    live::{MAX_LIVE_AUDIO_BYTES, Relay},
    protocol::{self, Ack},
    publish, topics,
    topics::Channel,
};
use crate::{
    domain::{satellite_config::Overrides, settings::TenantSettings},
    events::Event,
    ids::{ChunkId, SatelliteId, TenantId},
    metrics::RefusedReason,
    state::AppState,
    store,
    time::Timestamp,
    usecases::chunks,
};

/// The largest `audio` message accepted (10 s of 48 kHz 16-bit mono is ~1.3 MB as base64).
/// Bigger ones, up to the broker's packet limit, are acknowledged and answered with an error ack.
pub const MAX_AUDIO_MESSAGE_BYTES: usize = 2 << 20;

pub struct Ingest {
    state: AppState,
    /// The one task that writes chunks, committing those that arrive together at once.
    writer: chunks::ChunkWriter,
    /// The broker's logins, for the shared publish ACL (each connection's user id says its protocol).
    auth: Arc<BrokerAuth>,
}

/// A satellite message that was refused, with the reason the satellite is told.
#[derive(Debug)]
struct Refused(String);

impl<E: std::fmt::Display> From<E> for Refused {
    fn from(e: E) -> Self {
        Refused(e.to_string())
    }
}

/// A refused `audio` message: what the satellite is told, and the reason label of the metrics.
struct AudioRefused(RefusedReason, Refused);

impl From<Refused> for AudioRefused {
    fn from(r: Refused) -> Self {
        AudioRefused(RefusedReason::Malformed, r)
    }
}

impl Ingest {
    /// Starts the chunk writer too (its thread uses the current runtime).
    pub fn new(state: AppState, auth: Arc<BrokerAuth>) -> std::io::Result<Self> {
        let writer = chunks::ChunkWriter::spawn(chunks::Handles {
            store: state.store.clone(),
            objects: state.objects.clone(),
            clock: state.clock.clone(),
            disk: state.disk.clone(),
        })?;
        Ok(Self { state, writer, auth })
    }

    async fn on_publish(&self, event: ClientPublishEvent) -> PublishAction {
        self.state.mqtt.meter().count_received();
        let root = &self.state.settings.mqtt.topic_root;
        let decision = self.auth.publish_decision(event.user_id.as_deref(), &event.topic);
        if !decision.consumer_handles() {
            // Only MQTT 3.1.1 clients get here (`DropInConsumer`): the broker acknowledged the
            // publish so the client stays connected, and it goes no further.
            tracing::warn!(client_id = %event.client_id, topic = %event.topic, ?decision, "dropped a publish outside the client's tree");
            return PublishAction::Handled;
        }
        let Some(login) = BrokerAuth::login(event.user_id.as_deref()) else { return PublishAction::Handled };
        match &login.identity {
            Identity::Hub
                if event.topic.strip_prefix(root.as_str()).and_then(|t| t.strip_prefix('/'))
                    == Some(super::DISCONNECT_TOPIC) =>
            {
                let client_id = String::from_utf8_lossy(&event.payload).into_owned();
                self.state.mqtt.disconnect(&client_id).await;
                PublishAction::Handled
            }
            Identity::Hub => PublishAction::Continue, // the hub's own messages to satellites
            Identity::ReadOnly => PublishAction::Handled, // never reached: it may publish nowhere
            // Consumed: no other client sees a worker's or a satellite's messages.
            from => {
                self.handle(from, &event.client_id, &event.topic, &event.payload).await;
                PublishAction::Handled
            }
        }
    }

    /// One publish of a satellite or a worker, whichever broker it came through: `from` is who
    /// published it (the embedded broker's login, or what the topic says on an external broker,
    /// whose ACL let only that client publish there); `who` names the client in logs.
    pub async fn handle(&self, from: &Identity, who: &str, topic: &str, payload: &[u8]) {
        let root = &self.state.settings.mqtt.topic_root;
        let satellite = match from {
            Identity::Worker(id) => return self.worker_message(*id, topic, payload).await,
            Identity::Satellite { satellite, .. } => *satellite,
            Identity::Hub | Identity::ReadOnly => return,
        };
        let Some(parsed) = topics::parse(root, topic) else { return };
        if parsed.satellite != satellite {
            return; // the ACL allows only the own tree; never act for another
        }
        let tenant = parsed.tenant;
        match Channel::parse(parsed.channel) {
            Some(Channel::Audio) => self.audio(tenant, satellite, payload).await,
            Some(Channel::Heartbeat) => log_refusal("heartbeat", who, self.heartbeat(tenant, satellite, payload).await),
            Some(Channel::Telemetry) => log_refusal("telemetry", who, self.telemetry(tenant, satellite, payload).await),
            Some(Channel::ConfigRequest) => {
                log_refusal("config-request", who, self.config_request(tenant, satellite, payload).await)
            }
            Some(Channel::LogResponse) => {
                log_refusal("log-response", who, self.log_response(tenant, satellite, payload))
            }
            Some(Channel::LiveAudio) => log_refusal("live-audio", who, self.live_audio(tenant, satellite, payload)),
            Some(c) => {
                tracing::warn!(client_id = %who, channel = c.as_str(), "satellites may not publish on a hub channel")
            }
            None => tracing::warn!(client_id = %who, %topic, "message on an unknown channel dropped"),
        }
    }

    /// A remote worker's join, result, give-back or status: the pool reads it; a join is answered
    /// on the worker's control topic.
    async fn worker_message(&self, id: uuid::Uuid, topic: &str, payload: &[u8]) {
        use crate::inference::remote::pool::{self, Channel};
        let root = &self.state.settings.mqtt.topic_root;
        let Some(channel) = pool::parse_worker_topic(root, topic).and_then(|(_, kind)| Channel::parse(kind)) else {
            return;
        };
        let now = self.state.clock.stamp();
        let answer = self.state.remote.on_message(id, channel, payload, now);
        if matches!(channel, Channel::Hello | Channel::Status) && answer.as_ref().is_none_or(|a| a.accepted) {
            let machine = answer
                .as_ref()
                .and_then(|_| self.state.remote.snapshot().into_iter().find(|w| w.id == id).map(|w| w.machine));
            let seen = self.state.store.call(move |c| store::worker_keys::seen(c, id, machine.as_deref(), now)).await;
            if let Err(e) = seen {
                tracing::error!(worker = %id, error = %e, "could not record that a worker was seen");
            }
        }
        let Some(answer) = answer else { return };
        match &answer.reason {
            None => tracing::info!(worker = %id, "a remote worker joined"),
            Some(why) => tracing::warn!(worker = %id, reason = %why, "a remote worker's join was refused"),
        }
        let body = serde_json::to_vec(&answer).unwrap_or_default();
        if let Err(e) = self.state.mqtt.publish(pool::worker_topic(root, id, "control"), body, 1).await {
            tracing::error!(worker = %id, error = %e, "could not answer a worker's join");
        }
    }

    async fn audio(&self, tenant: TenantId, satellite: SatelliteId, payload: &[u8]) {
        let outcome = self.store_audio(tenant, satellite, payload).await;
        self.state.metrics.chunk_answered(outcome.as_ref().map(|_| ()).map_err(|AudioRefused(reason, _)| *reason));
        let ack = match outcome {
            Ok(chunk) => Ack::stored(&chunk),
            Err(AudioRefused(_, Refused(why))) => {
                // Only a refusal needs the id read leniently (the message may be half valid).
                let chunk_hint = serde_json::from_slice::<protocol::Envelope>(payload)
                    .ok()
                    .and_then(|e| e.chunk_id)
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                tracing::warn!(%satellite, chunk = %chunk_hint, reason = %why, "audio chunk refused");
                Ack::error(&chunk_hint, why)
            }
        };
        let topic = topics::topic(&self.state.settings.mqtt.topic_root, tenant, satellite, Channel::Ack);
        let body = serde_json::to_vec(&ack).unwrap_or_default();
        if let Err(e) = self.state.mqtt.publish(topic, body, 1).await {
            tracing::error!(%satellite, error = %e, "could not send an ack");
        }
    }

    /// Checks the chunk here, then has the writer store the WAV and commit the chunk with its job
    /// (with whatever else arrived meanwhile). Returns the chunk id once it is durable.
    async fn store_audio(
        &self,
        tenant: TenantId,
        satellite: SatelliteId,
        payload: &[u8],
    ) -> Result<String, AudioRefused> {
        let mut checked = checked_audio(tenant, satellite, payload)?;
        let chunk = checked.chunk();
        // A stamp the hub cannot check is filed as sent: the audio is never lost over it.
        if let Err(e) = chunks::clock::correct(&self.state.store, &self.state.clock, &mut checked).await {
            tracing::error!(%satellite, %chunk, error = %e, "could not check the chunk's stamp");
        }
        match self
            .writer
            .store(checked)
            .await
            .map_err(|e| AudioRefused(RefusedReason::from(&e), Refused(e.to_string())))?
        {
            chunks::Stored::New => self.state.job_signal.notify(),
            chunks::Stored::Duplicate => {} // a retry of a chunk we already hold
        }
        Ok(chunk.to_string())
    }

    /// Any message on the satellite's own status channels is a sign of life, whatever its body.
    async fn refresh_seen(&self, tenant: TenantId, satellite: SatelliteId) {
        let now = self.state.clock.stamp();
        if let Err(e) = self.state.store.call(move |c| store::satellites::seen(c, tenant, satellite, now)).await {
            tracing::error!(%satellite, error = %e, "could not refresh last_seen_at");
        }
    }

    /// Records the heartbeat; a body the hub cannot use still refreshes `last_seen_at`.
    async fn heartbeat(&self, tenant: TenantId, satellite: SatelliteId, payload: &[u8]) -> Result<(), Refused> {
        let result = self.record_heartbeat(tenant, satellite, payload).await;
        if result.is_err() {
            self.refresh_seen(tenant, satellite).await;
        }
        result
    }

    async fn record_heartbeat(&self, tenant: TenantId, satellite: SatelliteId, payload: &[u8]) -> Result<(), Refused> {
        let msg: protocol::Heartbeat = parse(payload)?;
        check_ids(&msg.tenant_id, &msg.satellite_id, tenant, satellite)?;
        if !protocol::HEARTBEAT_STATES.contains(&msg.state.as_str()) {
            tracing::info!(%satellite, state = %msg.state, "heartbeat with a state this hub does not know; kept as sent");
        }
        let update_failed = msg
            .update_report()
            .filter(|r| r.status == "failed")
            .map(|r| (r.target_version, failure_text(r.exit_code, r.message.as_deref())));
        // A clean stop's last word (docs/mqtt.md): offline at once.
        let stopped = msg.state == protocol::STOPPED;
        let hb = store::satellites::Heartbeat {
            update_failed,
            state: msg.state,
            uptime_seconds: msg.uptime_seconds,
            noise_floor_rms: msg.noise_floor_rms,
            version: msg.version,
            stream: msg.stream,
            filter_stats_json: msg.filter_stats.map(|v| v.to_string()),
            outbox_stats_json: msg.outbox_stats.map(|v| v.to_string()),
        };
        let now = self.state.clock.stamp();
        let timeout = self.state.settings.releases.update_timeout_minutes;
        let deadline = Timestamp(now.0 - chrono::Duration::minutes(timeout as i64));
        // The satellite's clock against the hub's (a heartbeat is sent at once); an unreadable
        // timestamp only costs the measurement.
        let offset = msg
            .timestamp
            .as_deref()
            .and_then(|t| t.parse::<chrono::DateTime<chrono::Utc>>().ok())
            .map(|sent| crate::domain::clock_sanity::offset_ms(sent, now.at()));
        self.state
            .store
            .call(move |c| {
                store::satellites::record_heartbeat(c, tenant, satellite, &hb, now, deadline)?;
                match offset {
                    Some(ms) => store::clock::record_offset(c, tenant, satellite, ms, now),
                    None => Ok(()),
                }
            })
            .await?;
        self.state.bus.publish(Event::SatelliteReported { tenant_id: tenant, satellite_id: satellite });
        if stopped {
            crate::usecases::monitor::said_stopped(&self.state.store, &self.state.bus, tenant, satellite, now).await?;
        }
        Ok(())
    }

    /// Hands a `log-response` to the request waiting for it (same id, sent to this satellite);
    /// anything else is dropped. The text is capped there ([`super::logs`]).
    fn log_response(&self, tenant: TenantId, satellite: SatelliteId, payload: &[u8]) -> Result<(), Refused> {
        let msg: protocol::LogResponse = parse(payload)?;
        check_ids(&msg.tenant_id, &msg.satellite_id, tenant, satellite)?;
        let request_id = msg.request_id.clone();
        if !self.state.logs.answer(tenant, satellite, msg, self.state.clock.stamp()) {
            tracing::info!(%satellite, request = %request_id, "log-response for no pending request of this satellite dropped");
        }
        Ok(())
    }

    /// Relays a `live-audio` chunk to the WebSockets watching the satellite's session
    /// ([`super::live`]); chunks of no or another session, and oversized ones, are dropped.
    fn live_audio(&self, tenant: TenantId, satellite: SatelliteId, payload: &[u8]) -> Result<(), Refused> {
        if payload.len() > MAX_LIVE_AUDIO_BYTES {
            return Err(Refused(format!(
                "live chunk too large: {} bytes, at most {MAX_LIVE_AUDIO_BYTES}",
                payload.len()
            )));
        }
        let msg: protocol::LiveAudio = parse(payload)?;
        check_ids(&msg.tenant_id, &msg.satellite_id, tenant, satellite)?;
        match self.state.live.relay(tenant, satellite, &msg) {
            Relay::Relayed(_) => {}
            Relay::NoSession => {
                tracing::debug!(%satellite, session = %msg.session_id, "live-audio with no live session dropped")
            }
            Relay::WrongSession => {
                tracing::info!(%satellite, session = %msg.session_id, "live-audio of another session dropped")
            }
        }
        Ok(())
    }

    /// Stores a telemetry sample; a body the hub cannot use still refreshes `last_seen_at`.
    async fn telemetry(&self, tenant: TenantId, satellite: SatelliteId, payload: &[u8]) -> Result<(), Refused> {
        let result = self.record_telemetry(tenant, satellite, payload).await;
        if result.is_err() {
            self.refresh_seen(tenant, satellite).await;
        }
        result
    }

    async fn record_telemetry(&self, tenant: TenantId, satellite: SatelliteId, payload: &[u8]) -> Result<(), Refused> {
        let msg: protocol::Telemetry = parse(payload)?;
        check_ids(&msg.tenant_id, &msg.satellite_id, tenant, satellite)?;
        let at: chrono::DateTime<chrono::Utc> =
            msg.timestamp.parse().map_err(|_| Refused("timestamp is not an ISO 8601 timestamp".into()))?;
        let sample = store::telemetry::Sample {
            recorded_at: at.into(),
            battery_level: msg.battery_level,
            storage_free_bytes: msg.storage_free_bytes,
            cpu_temp: msg.cpu_temp,
            network_latency_ms: msg.network_latency_ms,
            packet_loss_pct: msg.packet_loss_pct,
            uptime_seconds: msg.uptime_seconds,
        };
        let now = self.state.clock.stamp();
        self.state
            .store
            .call(move |c| {
                store::telemetry::insert(c, satellite, tenant, &sample, now)?;
                store::satellites::seen(c, tenant, satellite, now)
            })
            .await?;
        self.state.bus.publish(Event::SatelliteReported { tenant_id: tenant, satellite_id: satellite });
        Ok(())
    }

    /// Applies non-empty overrides (unless the config is locked), then pushes the config. The
    /// config is pushed whatever happened to the overrides: a satellite without one stays idle.
    async fn config_request(&self, tenant: TenantId, satellite: SatelliteId, payload: &[u8]) -> Result<(), Refused> {
        let applied = self.apply_requested_overrides(tenant, satellite, payload).await;
        if let Err(Refused(why)) = &applied {
            tracing::warn!(%satellite, reason = %why, "config-request overrides not applied; pushing the config anyway");
        }
        publish::push_config(&self.state, satellite).await.map_err(Refused)
    }

    /// Stores the device's own overrides, keeping every valid key and dropping (with a warning)
    /// each bad one, in the request or already stored.
    async fn apply_requested_overrides(
        &self,
        tenant: TenantId,
        satellite: SatelliteId,
        payload: &[u8],
    ) -> Result<(), Refused> {
        let msg: protocol::ConfigRequest = parse(payload)?;
        check_ids(&msg.tenant_id, &msg.satellite_id, tenant, satellite)?;
        let non_empty = msg.overrides.as_object().is_some_and(|o| !o.is_empty());
        if non_empty {
            let scope = tenant.to_string();
            let (sat, tenant_settings) = self
                .state
                .store
                .call(move |c| {
                    Ok((store::satellites::get(c, satellite)?, store::settings::load::<TenantSettings>(c, &scope)?))
                })
                .await?;
            if sat.config_locked {
                tracing::info!(%satellite, "config is locked; the satellite's overrides were ignored");
            } else {
                let (current, _) = Overrides::sanitized(&sat.overrides_json, &tenant_settings);
                let (next, dropped) = current.patched_leniently(&msg.overrides, &tenant_settings);
                for d in &dropped {
                    tracing::warn!(%satellite, key = %d.key, reason = %d.reason, "a requested override was refused");
                }
                let (json, now) = (serde_json::to_string(&next)?, self.state.clock.stamp());
                self.state
                    .store
                    .call(move |c| store::satellites::set_overrides(c, tenant, satellite, &json, now))
                    .await?;
            }
        }
        Ok(())
    }
}

/// Parses an `audio` message (borrowing its base64, not copying it), decodes the WAV straight
/// into its buffer and checks it: everything but the writing, on the caller's task.
fn checked_audio(tenant: TenantId, satellite: SatelliteId, payload: &[u8]) -> Result<chunks::Checked, AudioRefused> {
    if payload.len() > MAX_AUDIO_MESSAGE_BYTES {
        let why = format!("message too large: {} bytes, at most {MAX_AUDIO_MESSAGE_BYTES}", payload.len());
        return Err(AudioRefused(RefusedReason::TooLarge, Refused(why)));
    }
    let msg: protocol::Audio<'_> = parse(payload)?;
    check_ids(&msg.tenant_id, &msg.satellite_id, tenant, satellite)?;
    let chunk: ChunkId = msg.chunk_id.parse().map_err(|_| Refused("chunkId is not a UUID".into()))?;
    let recorded: Timestamp =
        msg.recorded_at.parse().map_err(|_| Refused("recordedAt is not an ISO 8601 timestamp".into()))?;
    let b64 = msg.audio.trim();
    // The SIMD decoder is the fast path (a fixed cost of every chunk, issue 39); what it refuses
    // goes to the scalar one, which has the last word and says where the bad byte is.
    let wav = match base64_simd::STANDARD.decode_to_vec(b64.as_bytes()) {
        Ok(wav) => wav,
        Err(_) => base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| Refused(format!("audio is not valid base64: {e}")))?,
    };
    let upload = chunks::Upload {
        tenant,
        satellite,
        chunk,
        recorded_at: recorded,
        duration_ms: msg.duration_ms,
        sample_rate: msg.sample_rate,
        location: msg.latitude.zip(msg.longitude),
        wav,
    };
    chunks::check(upload).map_err(|e| AudioRefused(RefusedReason::from(&e), Refused(e.to_string())))
}

fn log_refusal(what: &str, who: &str, result: Result<(), Refused>) {
    if let Err(Refused(why)) = result {
        tracing::warn!(client_id = %who, what, reason = %why, "satellite message refused");
    }
}

fn parse<'a, T: Deserialize<'a>>(payload: &'a [u8]) -> Result<T, Refused> {
    serde_json::from_slice(payload).map_err(|e| Refused(format!("malformed message: {e}")))
}

/// The body must name the same tenant and satellite as the topic (and so the login).
fn check_ids(tenant_id: &str, satellite_id: &str, tenant: TenantId, satellite: SatelliteId) -> Result<(), Refused> {
    if tenant_id != tenant.to_string() || satellite_id != satellite.to_string() {
        return Err(Refused("tenantId/satelliteId do not match the topic".into()));
    }
    Ok(())
}

impl BrokerEventHandler for Ingest {
    fn on_client_publish<'a>(
        &'a self,
        event: ClientPublishEvent,
    ) -> Pin<Box<dyn Future<Output = PublishAction> + Send + 'a>> {
        Box::pin(self.on_publish(event))
    }

    fn on_client_disconnect<'a>(
        &'a self,
        event: ClientDisconnectEvent,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        Box::pin(async move {
            tracing::debug!(client_id = %event.client_id, unexpected = event.unexpected, "MQTT client disconnected");
            if let Some(id) = event
                .client_id
                .strip_prefix(crate::inference::remote::CLIENT_PREFIX)
                .and_then(|id| id.parse::<uuid::Uuid>().ok())
            {
                self.state.remote.disconnected(id);
            }
        })
    }
}

/// The longest reason for a failed update the hub keeps.
const MAX_UPDATE_ERROR_CHARS: usize = 2000;

/// What the hub keeps of a failed update's report: the satellite's message (capped), else its
/// exit code.
fn failure_text(exit_code: Option<i64>, message: Option<&str>) -> String {
    match message.map(str::trim).filter(|m| !m.is_empty()) {
        Some(m) => m.chars().take(MAX_UPDATE_ERROR_CHARS).collect(),
        None => match exit_code {
            Some(code) => format!("the update command failed (exit status {code})"),
            None => "the update command failed".to_owned(),
        },
    }
}
