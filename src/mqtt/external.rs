//! The hub as an MQTT 5 client of an existing mosquitto (`mqtt.external`), in place of the
//! embedded broker (modes `full` and `dispatcher`). Everything the hub publishes goes out through
//! this connection ([`super::MqttHandle`]); every satellite and worker message comes in through
//! it and goes to the same handling as the embedded broker's ([`Ingest::handle`]).
//!
//! The session outlives the connection ([`SESSION_KEPT`]), so what satellites send while the hub
//! reconnects or restarts is queued by mosquitto for it (up to its `max_queued_messages`).
//! Who sent a message is read from its topic: mosquitto's ACL (made by [`super::dynsec`]) lets
//! only that satellite or worker publish there. The hub subscribes with No Local, so its own acks,
//! configs and answers never come back to it, and without retained copies, so a message a client
//! left retained is never taken twice. mosquitto does not tell the hub when a worker goes away:
//! a worker silent for [`WORKER_SILENCE`] counts as gone, and a worker the hub does not know (it
//! was counted gone, or the hub restarted) is asked to join again.

use std::{sync::Arc, time::Duration};

use rumqttc::v5::{
    AsyncClient, Event, MqttOptions,
    mqttbytes::{
        QoS,
        v5::{Filter, Packet, RetainForwardRule},
    },
};
use tokio_util::sync::CancellationToken;

use super::{auth::Identity, broker::MAX_PACKET_BYTES, ingest::Ingest, topics};
use crate::{
    inference::remote::{
        CLIENT_PREFIX,
        pool::{self, Channel as WorkerChannel},
        wire::Answer,
    },
    state::AppState,
    store,
    time::Timestamp,
};

/// A worker heard from neither by status (every 30 s) nor by result for this long is taken as
/// disconnected: it gets no more offers until it joins again.
pub const WORKER_SILENCE: Duration = Duration::from_secs(75);
/// How long mosquitto keeps the hub's session (and the messages for it) while the hub is away.
const SESSION_KEPT: Duration = Duration::from_secs(3600);
/// The longest wait between two connection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Connects to `mqtt.external` as the hub's login and keeps the connection until shutdown,
/// reconnecting with backoff. Satellite and worker messages go to `ingest`.
pub async fn run(state: AppState, ingest: Arc<Ingest>, shutdown: CancellationToken) -> anyhow::Result<()> {
    let s = &state.settings;
    let (host, port) = s.external_broker().ok_or_else(|| anyhow::anyhow!("mqtt.external must be host:port"))?;
    let address = format!("{host}:{port}");
    let root = s.mqtt.topic_root.clone();
    // One session per topic root, kept by mosquitto while the hub is away (reconnecting, or
    // restarting): the satellites' messages of that time wait for it instead of being dropped.
    let client_id = format!("{}ingest-{root}", super::auth::HUB_CLIENT_PREFIX);
    let mut options = MqttOptions::new(client_id, host, port);
    options.set_credentials(&s.mqtt.external_username, s.mqtt.external_password.expose());
    options.set_keep_alive(Duration::from_secs(30));
    options.set_clean_start(false);
    options.set_session_expiry_interval(Some(SESSION_KEPT.as_secs() as u32));
    let max = u32::try_from(MAX_PACKET_BYTES).unwrap_or(u32::MAX);
    options.set_max_packet_size(Some(max));
    let (client, mut eventloop) = AsyncClient::new(options, 256);
    state.mqtt.set_external(client.clone());
    // `{root}/+/+/+` holds both the satellites' `{root}/{team}/{sat}/{channel}` and the workers'
    // `{root}/_work/{id}/{channel}`.
    let mut filter = Filter::new(format!("{root}/+/+/+"), QoS::AtLeastOnce);
    filter.nolocal = true;
    filter.retain_forward_rule = RetainForwardRule::Never;
    let mut failures = 0u32;
    let mut sweep = tokio::time::interval(Duration::from_secs(15));
    loop {
        let polled = tokio::select! {
            _ = shutdown.cancelled() => {
                let _ = client.disconnect().await;
                return Ok(());
            }
            _ = sweep.tick() => {
                count_silent_workers_gone(&state);
                continue;
            }
            p = eventloop.poll() => p,
        };
        match polled {
            Ok(Event::Incoming(Packet::ConnAck(_))) => {
                if failures > 0 {
                    tracing::info!(broker = %address, "reconnected to mosquitto");
                } else {
                    tracing::info!(broker = %address, "connected to mosquitto");
                }
                failures = 0;
                client.subscribe_many([filter.clone()]).await?;
            }
            Ok(Event::Incoming(Packet::SubAck(ack))) => {
                let refused = ack
                    .return_codes
                    .iter()
                    .any(|c| !matches!(c, rumqttc::v5::mqttbytes::v5::SubscribeReasonCode::Success(_)));
                if refused {
                    tracing::error!(
                        broker = %address,
                        "mosquitto refused the hub's subscription to {root}/+/+/+: no satellite message will arrive. \
                         Does the hub's login have the role {}?",
                        super::dynsec::HUB_ROLE
                    );
                }
            }
            Ok(Event::Incoming(Packet::Publish(p))) => {
                state.mqtt.meter().count_received();
                let Ok(topic) = std::str::from_utf8(&p.topic) else { continue };
                route(&state, &ingest, topic, &p.payload).await;
            }
            Ok(_) => {}
            Err(e) => {
                failures += 1;
                let wait = Duration::from_secs(1 << failures.min(5)).min(MAX_BACKOFF);
                tracing::warn!(broker = %address, error = %e, retry_in_s = wait.as_secs(), "connection to mosquitto lost; reconnecting");
                tokio::select! {
                    _ = shutdown.cancelled() => return Ok(()),
                    _ = tokio::time::sleep(wait) => {}
                }
            }
        }
    }
}

/// Hands one message to ingest as its sender's, read from the topic; anything else (the hub's
/// own channels, published by another hub process) is left alone.
async fn route(state: &AppState, ingest: &Ingest, topic: &str, payload: &[u8]) {
    let root = &state.settings.mqtt.topic_root;
    if let Some((id, kind)) = pool::parse_worker_topic(root, topic) {
        let Some(channel) = WorkerChannel::parse(kind) else { return }; // `control`: the hub's own
        if channel == WorkerChannel::Status && !state.remote.is_joined(id) {
            return ask_to_join_again(state, id).await;
        }
        if channel == WorkerChannel::Hello && !worker_key_live(state, id).await {
            tracing::warn!(worker = %id, "a join from a revoked or unknown worker key was ignored");
            return;
        }
        let who = format!("{CLIENT_PREFIX}{id}");
        return ingest.handle(&Identity::Worker(id), &who, topic, payload).await;
    }
    let Some(parsed) = topics::parse(root, topic) else { return };
    if !topics::Channel::parse(parsed.channel).is_some_and(|c| c.from_satellite()) {
        return; // the hub's own channels (config, ack, detection ...), from another hub process
    }
    let (tenant, satellite) = (parsed.tenant, parsed.satellite);
    let login = state.store.call(move |c| store::satellites::credential(c, satellite)).await;
    match login {
        Ok(Some((t, hash))) if t == tenant && hash != store::satellites::REVOKED_PASSWORD => {}
        Ok(_) => {
            tracing::warn!(%satellite, %topic, "a message for no live satellite of that team was ignored");
            return;
        }
        Err(e) => {
            tracing::error!(%satellite, error = %e, "could not look a satellite up");
            return;
        }
    }
    let from = Identity::Satellite { satellite, prefix: topics::prefix(root, tenant, satellite) };
    ingest.handle(&from, &format!("satellite {satellite}"), topic, payload).await;
}

async fn worker_key_live(state: &AppState, id: uuid::Uuid) -> bool {
    match state.store.call(move |c| store::worker_keys::live_hash(c, id)).await {
        Ok(found) => found.is_some(),
        Err(e) => {
            tracing::error!(worker = %id, error = %e, "could not look a worker key up");
            false
        }
    }
}

/// A worker the hub does not count as joined still sends its status: it stays connected to
/// mosquitto across a hub restart or a silence. Tell it to send its hello again.
async fn ask_to_join_again(state: &AppState, id: uuid::Uuid) {
    tracing::info!(worker = %id, "a worker the hub does not count as joined is asked to join again");
    let answer = Answer {
        accepted: false,
        reason: Some("the hub lost track of this worker; join again".into()),
        jobs: String::new(),
        retry: true,
    };
    let body = serde_json::to_vec(&answer).unwrap_or_default();
    let topic = pool::worker_topic(&state.settings.mqtt.topic_root, id, "control");
    if let Err(e) = state.mqtt.publish(topic, body, 1).await {
        tracing::warn!(worker = %id, error = %e, "could not ask a worker to join again");
    }
}

/// Workers silent for [`WORKER_SILENCE`] count as disconnected.
fn count_silent_workers_gone(state: &AppState) {
    let workers: Vec<_> = state.remote.snapshot().iter().map(|w| (w.id, w.connected, w.last_seen_at)).collect();
    for id in silent(&workers, state.clock.stamp()) {
        tracing::info!(worker = %id, "a remote worker went silent; it gets no more jobs until it joins again");
        state.remote.disconnected(id);
    }
}

/// Of the workers (id, connected, last heard from), the connected ones last heard from more than
/// [`WORKER_SILENCE`] before `now`.
fn silent(workers: &[(uuid::Uuid, bool, Timestamp)], now: Timestamp) -> Vec<uuid::Uuid> {
    let silence = chrono::Duration::from_std(WORKER_SILENCE).unwrap_or(chrono::Duration::MAX);
    workers.iter().filter(|(_, connected, seen)| *connected && now.0 - seen.0 > silence).map(|w| w.0).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_is_gone_after_75_silent_seconds() {
        let now = Timestamp(chrono::Utc::now());
        let ago = |s: i64| Timestamp(now.0 - chrono::Duration::seconds(s));
        let id = || uuid::Uuid::new_v4();
        let workers = [(id(), true, ago(30)), (id(), true, ago(74)), (id(), true, ago(76)), (id(), false, ago(300))];
        assert_eq!(silent(&workers, now), vec![workers[2].0], "only the connected one silent past 75 s");
    }
}
