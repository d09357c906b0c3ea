//! Starting the embedded broker: MQTT over TCP (3.1.1 and 5) and over WebSocket at `/mqtt`, with
//! TLS on both when a certificate is configured. Sessions live in memory; audio is never retained,
//! and retained messages are bounded in number and size.

use std::{net::SocketAddr, path::PathBuf, sync::Arc};

use anyhow::Context;
use mqtt5::broker::{
    BrokerConfig, BrokerShutdownHandle, MqttBroker, StorageBackendType, StorageConfig,
    auth::{AuthRateLimiter, RateLimitedAuthProvider},
    config::{TlsConfig, WebSocketConfig},
};

use super::{auth::BrokerAuth, ingest::Ingest};
use crate::state::AppState;

/// The largest MQTT packet the broker accepts (MQTT 5 clients are told so in CONNACK's Maximum
/// Packet Size). A 3 s 48 kHz WAV is 288 KB (~384 KB as base64 in JSON); ingest refuses audio
/// messages over [`super::ingest::MAX_AUDIO_MESSAGE_BYTES`] with an error ack.
///
/// This limit sits far above that on purpose. A packet over it makes the broker drop the
/// connection without a PUBACK, and an MQTT 3.1.1 client (which has no way to learn the limit)
/// then resends the same QoS 1 message after every reconnect, forever. mqtt5 has no
/// mosquitto-style `message_size_limit` (acknowledge and drop), so every message a misconfigured
/// satellite plausibly sends (60 s of 48 kHz mono is ~7.7 MB in JSON, 30 s of 96 kHz 16-bit
/// stereo ~15.4 MB) must reach ingest, which acknowledges it and answers with an error ack.
/// Only a packet over 16 MiB still costs the connection.
///
/// Memory: the broker buffers at most one incoming packet per connection (read in 4 KiB steps,
/// never allocated up front from the announced length), so the worst case is 16 MiB times the
/// connections sending an oversize packet at the same moment; ingest refuses an oversize audio
/// message before decoding it, without copying it.
pub const MAX_PACKET_BYTES: usize = 16 << 20;

/// At most this many retained messages are kept. Only the hub retains: its Home Assistant configs
/// and feed states, nine per satellite of the published team and a few for the hub. A satellite's
/// publishes are consumed (never routed), satellites may name no will, and the read-only login
/// publishes nowhere. A retained message past the limit is still delivered, just not kept (the
/// broker logs it); a client's retained publish past it is answered "quota exceeded".
pub const MAX_RETAINED_MESSAGES: usize = 10_000;

/// A retained message's largest payload. The hub's biggest (a discovery config) is under 2 KiB.
/// Satellites never need the retain flag; a satellite message over this size with it set is
/// answered "quota exceeded" and not ingested. With the count above, retained messages use at most
/// about 160 MiB, and in practice a few KiB per satellite.
pub const MAX_RETAINED_MESSAGE_BYTES: usize = 16 << 10;

pub struct Broker {
    pub tcp_addr: SocketAddr,
    pub ws_addr: Option<SocketAddr>,
    pub shutdown: BrokerShutdownHandle,
    pub broker: MqttBroker,
}

/// Builds and binds the broker; `run` it on a task. Also points the hub's [`super::MqttHandle`] at it.
pub async fn start(state: &AppState) -> anyhow::Result<Broker> {
    let s = &state.settings.mqtt;
    let readonly = super::auth::ReadOnlyLogin::from_settings(&state.settings);
    let auth = BrokerAuth::new(
        state.store.clone(),
        &s.topic_root,
        state.settings.security.internal_api_key.clone(),
        readonly,
        state.remote.clone(),
    );
    let ingest = Arc::new(Ingest::new(state.clone(), auth.clone()).context("starting the chunk writer")?);

    let mut config = BrokerConfig::default()
        .with_bind_address(s.bind)
        .with_max_packet_size(MAX_PACKET_BYTES)
        .with_sys_topics_enabled(false)
        .with_max_retained_messages(MAX_RETAINED_MESSAGES)
        .with_max_retained_message_size(MAX_RETAINED_MESSAGE_BYTES)
        .with_storage(StorageConfig::new().with_backend(StorageBackendType::Memory).with_persistence(false))
        .with_event_handler(ingest);
    let tls = !s.tls_cert.is_empty() && !s.tls_key.is_empty();
    let ws = WebSocketConfig::new().with_bind_address(s.ws_bind).with_path("/mqtt");
    if tls {
        config = config.with_tls(TlsConfig::new(PathBuf::from(&s.tls_cert), PathBuf::from(&s.tls_key)));
        config = config.with_websocket_tls(ws.with_tls(true));
    } else {
        config = config.with_websocket(ws);
    }
    let limiter = Arc::new(AuthRateLimiter::new(30, 60, 60));
    let broker = MqttBroker::with_config(config)
        .await
        .with_context(|| format!("starting the MQTT broker on {} (is the port free?)", s.bind))?
        .with_auth_provider(Arc::new(RateLimitedAuthProvider::new(auth, limiter)));
    let tcp_addr = broker.local_addr().context("the broker has no TCP listener")?;
    let ws_addr = broker.ws_local_addr();
    state.mqtt.set_router(broker.router(), tcp_addr);
    tracing::info!(%tcp_addr, ?ws_addr, tls, "MQTT broker listening");
    Ok(Broker { tcp_addr, ws_addr, shutdown: broker.shutdown_handle(), broker })
}
