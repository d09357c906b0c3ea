//! The bridge: the hub as a client of another broker (Home Assistant's mosquitto), publishing the
//! discovery configs and the feed there too. It never slows ingest: publishing only queues, a
//! full queue drops the message (counted), and a broker that is down is retried with backoff.
//! Each time the connection comes up, and whenever Home Assistant announces itself on
//! `<prefix>/status`, the publisher is asked to send its retained messages again.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use anyhow::Context;
use rumqttc::{
    AsyncClient, Event as MqttEvent, LastWill, MqttOptions, Outgoing, Packet, QoS, TlsConfiguration, Transport,
};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::feed::OFFLINE;
use crate::config::BridgeSettings;

/// Messages the client may hold while the other broker is slow or away.
const QUEUE: usize = 1024;
/// How long the bridge keeps sending after shutdown, for the last messages (`offline`).
pub const CLOSE_GRACE: Duration = Duration::from_secs(2);
/// The longest wait between two attempts to reach the other broker.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// The publishing side of the bridge; cheap to clone.
#[derive(Clone)]
pub struct Bridge {
    client: AsyncClient,
    shared: Arc<Shared>,
}

struct Shared {
    /// Messages dropped because the queue was full (the other broker away for long); logged
    /// when the connection comes back.
    dropped: AtomicU64,
    /// Set when the retained messages must be sent again (a new connection, Home Assistant's birth).
    resend: Notify,
}

impl Bridge {
    /// Queues one message; never waits. Returns false (and counts it) when the queue is full.
    pub fn publish(&self, topic: &str, payload: &[u8], retain: bool) -> bool {
        let queued = self.client.try_publish(topic, QoS::AtLeastOnce, retain, payload.to_vec()).is_ok();
        if !queued {
            self.shared.dropped.fetch_add(1, Ordering::Relaxed);
        }
        queued
    }

    /// Ends the session cleanly once everything queued before it is sent (the task stops by
    /// itself at most [`CLOSE_GRACE`] after shutdown otherwise).
    pub fn close(&self) {
        let _ = self.client.try_disconnect();
    }

    /// Resolves when the retained messages should be sent again.
    pub async fn resend_wanted(&self) {
        self.shared.resend.notified().await
    }
}

/// Starts the bridge's connection task. `will_topic` gets a retained `offline` if the hub
/// vanishes; `birth_topic` is Home Assistant's status topic.
pub fn start(
    settings: &BridgeSettings,
    will_topic: &str,
    birth_topic: &str,
    shutdown: CancellationToken,
) -> anyhow::Result<(Bridge, tokio::task::JoinHandle<()>)> {
    let mut options = MqttOptions::new(settings.client_id.trim(), settings.host.trim(), settings.port);
    options.set_keep_alive(Duration::from_secs(30));
    options.set_last_will(LastWill::new(will_topic, OFFLINE, QoS::AtLeastOnce, true));
    if !settings.username.is_empty() {
        options.set_credentials(settings.username.clone(), settings.password.expose());
    }
    if settings.tls {
        options.set_transport(Transport::Tls(tls(settings)?));
    }
    let (client, eventloop) = AsyncClient::new(options, QUEUE);
    let shared = Arc::new(Shared { dropped: AtomicU64::new(0), resend: Notify::new() });
    let bridge = Bridge { client: client.clone(), shared: shared.clone() };
    let target = format!("{}:{}", settings.host.trim(), settings.port);
    let birth = birth_topic.to_owned();
    let task = tokio::spawn(drive(client, eventloop, shared, target, birth, shutdown));
    Ok((bridge, task))
}

fn tls(settings: &BridgeSettings) -> anyhow::Result<TlsConfiguration> {
    let mut roots = rustls::RootCertStore::empty();
    if settings.ca_file.is_empty() {
        let found = rustls_native_certs::load_native_certs();
        for cert in found.certs {
            let _ = roots.add(cert);
        }
        anyhow::ensure!(!roots.is_empty(), "integrations.bridge.tls: no system root certificates; set ca_file");
    } else {
        let pem = std::fs::read(&settings.ca_file)
            .with_context(|| format!("integrations.bridge.ca_file: cannot read {}", settings.ca_file))?;
        use rustls::pki_types::{CertificateDer, pem::PemObject};
        for cert in CertificateDer::pem_slice_iter(&pem) {
            roots.add(cert.context("integrations.bridge.ca_file: not a PEM certificate")?)?;
        }
        anyhow::ensure!(!roots.is_empty(), "integrations.bridge.ca_file holds no certificate");
    }
    let config = rustls::ClientConfig::builder().with_root_certificates(roots).with_no_client_auth();
    Ok(TlsConfiguration::Rustls(Arc::new(config)))
}

async fn drive(
    client: AsyncClient,
    mut eventloop: rumqttc::EventLoop,
    shared: Arc<Shared>,
    target: String,
    birth: String,
    shutdown: CancellationToken,
) {
    let mut backoff = Duration::from_secs(1);
    let mut failures: u64 = 0;
    // After shutdown: keep sending until the publisher's `close` goes out, or the grace ends.
    let mut closing: Option<tokio::time::Instant> = None;
    loop {
        let polled = tokio::select! {
            _ = shutdown.cancelled(), if closing.is_none() => {
                closing = Some(tokio::time::Instant::now() + CLOSE_GRACE);
                continue;
            }
            _ = tokio::time::sleep_until(closing.unwrap_or_else(tokio::time::Instant::now)), if closing.is_some() => return,
            p = eventloop.poll() => p,
        };
        match polled {
            Ok(MqttEvent::Incoming(Packet::ConnAck(_))) => {
                let dropped_so_far = shared.dropped.load(Ordering::Relaxed);
                tracing::info!(broker = %target, after_failures = failures, dropped_so_far, "bridge connected");
                backoff = Duration::from_secs(1);
                failures = 0;
                let _ = client.try_subscribe(birth.clone(), QoS::AtLeastOnce);
                shared.resend.notify_one();
            }
            Ok(MqttEvent::Outgoing(Outgoing::Disconnect)) => return,
            Ok(MqttEvent::Incoming(Packet::Publish(p))) if p.topic == birth && p.payload.as_ref() == b"online" => {
                tracing::info!(broker = %target, "Home Assistant came online; sending the discovery configs again");
                shared.resend.notify_one();
            }
            Ok(_) => {}
            Err(_) if closing.is_some() => return,
            Err(e) => {
                failures += 1;
                // The first failure is news; the rest of an outage is not worth a line each.
                if failures == 1 {
                    tracing::warn!(broker = %target, error = %e, "bridge broker unreachable; retrying with backoff");
                } else {
                    tracing::debug!(broker = %target, error = %e, failures, "bridge broker still unreachable");
                }
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}
