//! The hub as an MQTT client of a dispatcher's broker (mode `api`): config pushes go out through
//! it, and detections come back in to feed this process's WebSocket clients. With `mqtt.external`,
//! the broker is that mosquitto.

use std::time::Duration;

use rumqttc::{AsyncClient, Event as MqttEvent, MqttOptions, Packet, QoS};
use tokio_util::sync::CancellationToken;

use super::{
    auth::{HUB_CLIENT_PREFIX, HUB_USER},
    topics::{self, Channel},
};
use crate::{
    events::{DetectionCreated, Event, Relayed},
    state::AppState,
};

/// Connects to `mqtt.upstream` and keeps the connection alive until shutdown.
pub async fn run(state: AppState, shutdown: CancellationToken) -> anyhow::Result<()> {
    let s = &state.settings;
    // With an existing mosquitto (`mqtt.external`), the dispatcher's broker is that one, reached
    // with the hub's own login there.
    let (upstream, user, password) = match s.uses_external_broker() {
        true => (s.mqtt.external.trim().to_owned(), s.mqtt.external_username.as_str(), &s.mqtt.external_password),
        false => (s.mqtt.upstream.clone(), HUB_USER, &s.security.internal_api_key),
    };
    let (host, port) = upstream.rsplit_once(':').ok_or_else(|| anyhow::anyhow!("mqtt.upstream must be host:port"))?;
    let host = host.trim_matches(['[', ']']);
    let mut options = MqttOptions::new(format!("{HUB_CLIENT_PREFIX}{}", state.instance_id), host, port.parse()?);
    options.set_credentials(user, password.expose());
    options.set_keep_alive(Duration::from_secs(30));
    options.set_max_packet_size(super::broker::MAX_PACKET_BYTES, super::broker::MAX_PACKET_BYTES);
    let (client, mut eventloop) = AsyncClient::new(options, 64);
    state.mqtt.set_client(client.clone(), &state.settings.mqtt.topic_root);
    let root = state.settings.mqtt.topic_root.clone();
    let detections = format!("{root}/+/+/{}", Channel::Detection.as_str());
    let relayed = topics::hub_events(&root);
    loop {
        let polled = tokio::select! {
            _ = shutdown.cancelled() => {
                let _ = client.disconnect().await;
                return Ok(());
            }
            p = eventloop.poll() => p,
        };
        match polled {
            Ok(MqttEvent::Incoming(Packet::ConnAck(_))) => {
                tracing::info!(%upstream, "connected to the dispatcher's broker");
                client.subscribe(detections.clone(), QoS::AtLeastOnce).await?;
                client.subscribe(relayed.clone(), QoS::AtLeastOnce).await?;
            }
            Ok(MqttEvent::Incoming(Packet::Publish(p))) if p.topic == relayed => {
                match serde_json::from_slice::<Relayed>(&p.payload) {
                    Ok(r) => {
                        state.bus.publish(r.into_event());
                    }
                    Err(e) => tracing::warn!(error = %e, "unreadable relayed event from the dispatcher"),
                }
            }
            Ok(MqttEvent::Incoming(Packet::Publish(p))) => {
                let on_detection =
                    topics::parse(&root, &p.topic).is_some_and(|t| t.channel == Channel::Detection.as_str());
                if on_detection {
                    match serde_json::from_slice::<DetectionCreated>(&p.payload) {
                        Ok(d) => {
                            state.bus.publish(Event::DetectionCreated(std::sync::Arc::new(d)));
                        }
                        Err(e) => tracing::warn!(error = %e, "unreadable detection from the dispatcher"),
                    }
                }
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(%upstream, error = %e, "MQTT connection to the dispatcher lost; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}
