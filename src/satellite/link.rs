//! The satellite's MQTT connection (SPEC 4.15, 5.5): client id `satellite-{id}`, the satellite
//! id and its password as credentials, plain TCP to the hub's broker.
//!
//! On every connect it subscribes to its own topics and sends `config-request` with empty
//! overrides (SPEC 2.4). When the hub is away it retries with backoff (1 s doubling to 30 s);
//! the outbox keeps every chunk meanwhile. Messages from the hub are handed to
//! [`remote`](super::remote). On a clean stop it says goodbye ([`goodbye`]) before it leaves.

use std::{sync::Arc, time::Duration};

use rumqttc::{AsyncClient, ConnectReturnCode, Event, EventLoop, MqttOptions, Outgoing, Packet, QoS};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{remote, run::Shared, settings::SatelliteSettings, status};
use crate::mqtt::topics::Channel;

/// QoS 1 publishes in flight at once, and the depth of the client's request queue.
const INFLIGHT: u16 = 16;

/// Longest wait between two connection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// How long a clean stop may take to say goodbye before it drops the connection anyway.
const GOODBYE_WITHIN: Duration = Duration::from_secs(3);

/// The client and its event loop (not connected until the loop is polled).
pub fn client(s: &SatelliteSettings) -> (AsyncClient, EventLoop) {
    let mut options = MqttOptions::new(format!("satellite-{}", s.satellite_id), &s.mqtt_host, s.mqtt_port);
    options.set_credentials(s.satellite_id.to_string(), s.mqtt_password.clone());
    options.set_keep_alive(Duration::from_secs(30));
    // Config pushes and log requests are small; a chunk is ~400 KB of base64.
    options.set_max_packet_size(16 << 20, 16 << 20);
    options.set_clean_session(true);
    // At most this many chunks in flight (sent, not yet acknowledged by the broker) and queued:
    // a backlog drains at the broker's pace instead of piling ~400 KB messages into memory.
    options.set_inflight(INFLIGHT);
    AsyncClient::new(options, usize::from(INFLIGHT))
}

/// Polls the connection until shutdown, then says goodbye; reconnects with backoff.
pub async fn run(shared: Arc<Shared>, mut eventloop: EventLoop, shutdown: CancellationToken) {
    let mut backoff = Duration::from_secs(1);
    loop {
        let event = tokio::select! {
            () = shutdown.cancelled() => return goodbye(&shared, eventloop).await,
            e = eventloop.poll() => e,
        };
        match event {
            Ok(Event::Incoming(Packet::ConnAck(ack))) if ack.code == ConnectReturnCode::Success => {
                backoff = Duration::from_secs(1);
                on_connect(&shared).await;
            }
            Ok(Event::Incoming(Packet::Publish(p))) => {
                let shared = shared.clone();
                let channel = p.topic.rsplit('/').next().and_then(Channel::parse);
                match channel {
                    // Acks come fast and in order; the rest may take a while (update, logs).
                    Some(Channel::Ack) => remote::on_ack(&shared, &p.payload).await,
                    Some(c) => {
                        tokio::spawn(async move { remote::on_message(&shared, c, p.payload.to_vec()).await });
                    }
                    None => tracing::debug!(topic = %p.topic, "ignoring a message on an unknown topic"),
                }
            }
            Ok(_) => {}
            Err(e) => {
                if shared.connected.send_replace(None).is_some() {
                    tracing::warn!(error = %e, "lost the hub; chunks wait in the outbox");
                } else {
                    tracing::warn!(error = %e, retry_in = ?backoff, "cannot reach the hub's broker");
                }
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// A clean stop, while connected: the last heartbeat says `stopped`, then a DISCONNECT, both sent
/// in order on the connection, which is polled until the DISCONNECT is out (at most
/// [`GOODBYE_WITHIN`]). The hub shows the satellite offline at once; a satellite that just goes
/// silent waits for the team's offline threshold. Every broker carries it (no will needed).
async fn goodbye(shared: &Shared, mut eventloop: EventLoop) {
    if shared.connected.borrow().is_none() {
        return; // nobody to tell; polling would only try to connect
    }
    let say = async {
        status::goodbye(shared).await;
        let _ = shared.client.disconnect().await;
        std::future::pending::<()>().await
    };
    let send = async {
        loop {
            match eventloop.poll().await {
                Ok(Event::Outgoing(Outgoing::Disconnect)) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    let said = tokio::time::timeout(GOODBYE_WITHIN, async {
        tokio::select! {
            () = say => {}
            () = send => {}
        }
    })
    .await;
    match said {
        Ok(()) => tracing::info!("told the hub this satellite stopped"),
        Err(_) => tracing::warn!("could not tell the hub this satellite stopped; it will show offline later"),
    }
}

async fn on_connect(shared: &Shared) {
    tracing::info!(host = %shared.settings.mqtt_host, port = shared.settings.mqtt_port, "connected to the hub");
    let topics =
        [Channel::Config, Channel::Ack, Channel::Update, Channel::LiveStart, Channel::LiveStop, Channel::LogRequest];
    for c in topics {
        if let Err(e) = shared.client.subscribe(shared.topic(c), QoS::AtLeastOnce).await {
            tracing::warn!(error = %e, "subscribe failed");
        }
    }
    let request = json!({
        "satelliteId": shared.settings.satellite_id,
        "tenantId": shared.settings.tenant_id,
        "overrides": {},
    });
    publish(shared, Channel::ConfigRequest, QoS::AtLeastOnce, request.to_string().into_bytes()).await;
    shared.connected.send_replace(Some(chrono::Utc::now()));
    shared.wake.notify_one();
}

/// Queues a message on the satellite's own topic; logs when the client is gone.
pub async fn publish(shared: &Shared, channel: Channel, qos: QoS, payload: Vec<u8>) -> bool {
    match shared.client.publish(shared.topic(channel), qos, false, payload).await {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(channel = channel.as_str(), error = %e, "publish failed");
            false
        }
    }
}
