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
//! - [`external`]: the hub as a client of an existing mosquitto instead of the embedded broker.
//! - [`dynsec`]: the logins on that mosquitto, through its dynamic-security plugin.
//! - [`logins`]: keeping those logins in step with the database (start, deletions, revocations).
//! - [`meter`]: the broker's message counter and rate, for the status page.
//! - [`protocol`], [`topics`]: message and topic shapes.
//!
//! [`MqttHandle`] is how the rest of the hub publishes, whichever way it is connected.

pub mod acl;
pub mod auth;
pub mod broker;
pub mod client;
pub mod dynsec;
pub mod external;
pub mod ingest;
pub mod live;
pub mod logins;
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
    /// As an MQTT 5 client of an existing mosquitto (`mqtt.external`, modes `full`/`dispatcher`).
    External(rumqttc::v5::AsyncClient),
}

/// Publishes from anywhere in the hub. Cheap to clone; empty until the broker or client is up.
#[derive(Clone, Default)]
pub struct MqttHandle {
    inner: Arc<RwLock<Option<Arc<Outbound>>>>,
    /// The embedded broker's TCP address, for the `brokerUrl` handed out at registration.
    tcp_addr: Arc<std::sync::OnceLock<std::net::SocketAddr>>,
    /// Messages the embedded broker received (counted by ingest), for the status page.
    meter: Arc<meter::Meter>,
    /// The logins of an existing mosquitto (`mqtt.external`); unset with the embedded broker.
    dynsec: Arc<std::sync::OnceLock<dynsec::DynSec>>,
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

    /// Points the hub's publishes at its connection to an existing mosquitto.
    pub fn set_external(&self, client: rumqttc::v5::AsyncClient) {
        if let Ok(mut g) = self.inner.write() {
            *g = Some(Arc::new(Outbound::External(client)));
        }
    }

    /// Hands the hub the logins of an existing mosquitto (`mqtt.external`).
    pub fn set_dynsec(&self, dynsec: dynsec::DynSec) {
        let _ = self.dynsec.set(dynsec);
    }

    /// The logins of an existing mosquitto, when the hub uses one.
    pub fn dynsec(&self) -> Option<&dynsec::DynSec> {
        self.dynsec.get()
    }

    /// Where new MQTT secrets go besides the database: the external broker's logins, or nowhere
    /// (the embedded broker reads the database).
    pub fn logins(&self) -> &dyn crate::usecases::broker_logins::BrokerLogins {
        match self.dynsec.get() {
            Some(d) => d,
            None => &crate::usecases::broker_logins::NoBrokerLogins,
        }
    }

    /// Deletes a client's login on an existing mosquitto (which disconnects it); nothing with the
    /// embedded broker, which reads the database at every login.
    pub async fn delete_login(&self, client_id: &str) {
        let Some(d) = self.dynsec.get() else { return };
        let username = login_of_client(client_id);
        if let Err(e) = d.delete(username).await {
            tracing::error!(client = %client_id, error = %e, "could not delete a login on mosquitto");
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
            Some(Outbound::External(client)) => {
                use rumqttc::v5::mqttbytes::QoS as Q;
                let qos = match qos {
                    0 => Q::AtMostOnce,
                    1 => Q::AtLeastOnce,
                    _ => Q::ExactlyOnce,
                };
                client.publish(topic, qos, retain, payload).await.map_err(|e| e.to_string())
            }
        }
    }

    /// Drops a client's broker session: directly in-process, by asking the dispatcher, or on an
    /// existing mosquitto by disabling and enabling its login.
    pub async fn disconnect(&self, client_id: &str) -> bool {
        if let Some(d) = self.dynsec.get() {
            return d.kick(login_of_client(client_id)).await.is_ok();
        }
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
            Some(Outbound::External(_)) | None => false,
        }
    }
}

/// The login behind a client id on an existing mosquitto: a satellite's UUID (client id
/// `satellite-<id>` or `mobile-<id>`), a worker's `worker-<id>` as it is.
fn login_of_client(client_id: &str) -> &str {
    ["satellite-", "mobile-"].iter().find_map(|p| client_id.strip_prefix(p)).unwrap_or(client_id)
}
