//! MQTT: the embedded broker (mqtt5) with per-satellite logins and topic ACL, the ingest of the
//! six satellite channels, and everything the hub publishes (acks, config, detections).
//!
//! - [`broker`]: starting the broker on TCP and WebSocket (TLS optional).
//! - [`auth`]: logins, and the broker's side of the ACL.
//! - [`acl`]: the one publish rule both the broker and ingest apply.
//! - [`ingest`]: audio, heartbeat, telemetry and config-request handling.
//! - [`live`]: live-audio sessions and the WebSockets watching them.
//! - [`logs`]: pending log requests and their answers.
//! - [`publish`]: config pushes, the detection publisher and revocation kicks.
//! - [`client`]: the hub as an MQTT client of a dispatcher's broker (split mode).
//! - [`meter`]: the broker's message counter and rate, for the status page.
//! - [`protocol`], [`topics`]: message and topic shapes.
//!
//! [`MqttHandle`] is how the rest of the hub publishes, whichever way it is connected.

pub mod acl;
pub mod auth;
pub mod broker;
pub mod client;
pub mod ingest;
pub mod live;
pub mod logs;
pub mod meter;
pub mod protocol;
pub mod publish;
pub mod topics;

use std::sync::{Arc, RwLock};

use mqtt5::{QoS, broker::router::MessageRouter, packet::publish::PublishPacket};

/// The hub-internal topic (under the topic root) on which an `api` process asks the dispatcher
/// to drop a client's session; only the `hub` identity may publish there.
pub const DISCONNECT_TOPIC: &str = "_hub/disconnect";

enum Outbound {
    /// In-process: the embedded broker's router (modes `full` and `dispatcher`).
    Router(Arc<MessageRouter>),
    /// As a client of a dispatcher's broker (mode `api`), under this topic root.
    Client(rumqttc::AsyncClient, String),
}

/// Publishes from anywhere in the hub. Cheap to clone; empty until the broker or client is up.
#[derive(Clone, Default)]
pub struct MqttHandle {
    inner: Arc<RwLock<Option<Arc<Outbound>>>>,
    /// The embedded broker's TCP address, for the `brokerUrl` handed out at registration.
    tcp_addr: Arc<std::sync::OnceLock<std::net::SocketAddr>>,
    /// Messages the embedded broker received (counted by ingest), for the status page.
    meter: Arc<meter::Meter>,
}

impl MqttHandle {
    pub fn set_router(&self, router: Arc<MessageRouter>, tcp_addr: std::net::SocketAddr) {
        let _ = self.tcp_addr.set(tcp_addr);
        if let Ok(mut g) = self.inner.write() {
            *g = Some(Arc::new(Outbound::Router(router)));
        }
    }

    pub fn tcp_addr(&self) -> Option<std::net::SocketAddr> {
        self.tcp_addr.get().copied()
    }

    /// The embedded broker's message counter (idle in mode `api`).
    pub fn meter(&self) -> &meter::Meter {
        &self.meter
    }

    /// Clients connected to the embedded broker; `None` without one (mode `api`).
    pub async fn connected_clients(&self) -> Option<usize> {
        match self.current().as_deref() {
            Some(Outbound::Router(router)) => Some(router.client_count().await),
            _ => None,
        }
    }

    pub fn set_client(&self, client: rumqttc::AsyncClient, topic_root: &str) {
        if let Ok(mut g) = self.inner.write() {
            *g = Some(Arc::new(Outbound::Client(client, topic_root.to_owned())));
        }
    }

    fn current(&self) -> Option<Arc<Outbound>> {
        self.inner.read().ok().and_then(|g| g.clone())
    }

    /// Publishes `payload` on `topic` with QoS 0, 1 or 2.
    pub async fn publish(&self, topic: String, payload: Vec<u8>, qos: u8) -> Result<(), String> {
        self.publish_with(topic, payload, qos, false).await
    }

    /// Publishes and, with `retain`, has the broker keep it for later subscribers (an empty
    /// retained payload clears the topic's retained message).
    pub async fn publish_with(&self, topic: String, payload: Vec<u8>, qos: u8, retain: bool) -> Result<(), String> {
        match self.current().as_deref() {
            None => Err("MQTT is not connected yet".into()),
            Some(Outbound::Router(router)) => {
                let qos = match qos {
                    0 => QoS::AtMostOnce,
                    1 => QoS::AtLeastOnce,
                    _ => QoS::ExactlyOnce,
                };
                let mut packet = PublishPacket::new(topic, payload, qos);
                packet.retain = retain;
                router.route_message(&packet, None).await;
                Ok(())
            }
            Some(Outbound::Client(client, _)) => {
                let qos = match qos {
                    0 => rumqttc::QoS::AtMostOnce,
                    1 => rumqttc::QoS::AtLeastOnce,
                    _ => rumqttc::QoS::ExactlyOnce,
                };
                client.publish(topic, qos, retain, payload).await.map_err(|e| e.to_string())
            }
        }
    }

    /// Drops a client's broker session: directly in-process, or by asking the dispatcher.
    pub async fn disconnect(&self, client_id: &str) -> bool {
        match self.current().as_deref() {
            Some(Outbound::Router(router)) => {
                router.disconnect_client(client_id).await;
                true
            }
            Some(Outbound::Client(client, root)) => client
                .publish(
                    format!("{root}/{DISCONNECT_TOPIC}"),
                    rumqttc::QoS::AtLeastOnce,
                    false,
                    client_id.as_bytes().to_vec(),
                )
                .await
                .is_ok(),
            None => false,
        }
    }
}
