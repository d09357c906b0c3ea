//! The typed in-process event bus (tokio broadcast). Ingest and inference publish; the detection
//! publisher, WebSocket clients and the alert engine subscribe. A slow subscriber never blocks a
//! publisher: it skips the events it could not keep up with, and the skip is logged and counted.

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use crate::ids::{ChunkId, DetectionId, SatelliteId, TenantId};

/// A new detection, as carried to the MQTT `detection` channel (SPEC 2.7) and WebSocket clients.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DetectionCreated {
    pub id: DetectionId,
    pub tenant_id: TenantId,
    pub satellite_id: SatelliteId,
    pub satellite_name: String,
    pub species_code: String,
    pub common_name: String,
    pub scientific_name: String,
    pub confidence: f32,
    pub is_rare: bool,
    pub is_first_of_day: bool,
    pub is_first_of_season: bool,
    /// The team's first detection of this species ever ("New for the team"); not a kind of rare.
    #[serde(default)]
    pub is_first_for_team: bool,
    /// `not_expected_here` when `is_rare`, else null.
    pub rare_reason: Option<String>,
    pub detected_at: DateTime<Utc>,
    pub audio_chunk_id: ChunkId,
}

/// A satellite went silent past its team's threshold, or was heard from again (the monitor).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SatelliteStatus {
    pub tenant_id: TenantId,
    pub satellite_id: SatelliteId,
    pub name: String,
    pub last_seen_at: Option<DateTime<Utc>>,
}

/// Everything that happens in the hub that more than one part cares about.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    DetectionCreated(Arc<DetectionCreated>),
    /// A satellite's credentials were revoked: its broker session must be dropped.
    SatelliteRevoked {
        tenant_id: TenantId,
        satellite_id: SatelliteId,
    },
    /// Tenant settings or a satellite's overrides changed: its config must be pushed.
    ConfigChanged {
        tenant_id: TenantId,
        satellite_id: Option<SatelliteId>,
    },
    /// The monitor marked a satellite offline (once per outage).
    SatelliteOffline(Arc<SatelliteStatus>),
    /// The monitor saw an offline satellite again.
    SatelliteOnline(Arc<SatelliteStatus>),
    /// A satellite sent a heartbeat or telemetry that was recorded (its status is fresh).
    SatelliteReported {
        tenant_id: TenantId,
        satellite_id: SatelliteId,
    },
    /// An alert was raised for a team (the alert record, as `GET /alerts` shows it).
    AlertRaised {
        tenant_id: TenantId,
        alert: Arc<serde_json::Value>,
    },
}

/// The events a dispatcher relays to API processes in split mode (over the broker, on
/// [`crate::mqtt::topics::hub_events`]), so their WebSocket clients see alerts and outages.
/// Detections travel on the satellites' own `detection` topics instead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Relayed {
    Alert { tenant_id: TenantId, alert: serde_json::Value },
    SatelliteOffline { status: SatelliteStatus },
    SatelliteOnline { status: SatelliteStatus },
}

impl Relayed {
    /// The relayed form of `event`, for the events that are relayed.
    pub fn of(event: &Event) -> Option<Self> {
        match event {
            Event::AlertRaised { tenant_id, alert } => {
                Some(Relayed::Alert { tenant_id: *tenant_id, alert: (**alert).clone() })
            }
            Event::SatelliteOffline(s) => Some(Relayed::SatelliteOffline { status: (**s).clone() }),
            Event::SatelliteOnline(s) => Some(Relayed::SatelliteOnline { status: (**s).clone() }),
            _ => None,
        }
    }

    pub fn into_event(self) -> Event {
        match self {
            Relayed::Alert { tenant_id, alert } => Event::AlertRaised { tenant_id, alert: Arc::new(alert) },
            Relayed::SatelliteOffline { status } => Event::SatelliteOffline(Arc::new(status)),
            Relayed::SatelliteOnline { status } => Event::SatelliteOnline(Arc::new(status)),
        }
    }
}

impl Event {
    /// The tenant the event belongs to; WebSocket fan-out filters on it.
    pub fn tenant_id(&self) -> TenantId {
        match self {
            Event::DetectionCreated(d) => d.tenant_id,
            Event::SatelliteRevoked { tenant_id, .. }
            | Event::ConfigChanged { tenant_id, .. }
            | Event::SatelliteReported { tenant_id, .. } => *tenant_id,
            Event::SatelliteOffline(s) | Event::SatelliteOnline(s) => s.tenant_id,
            Event::AlertRaised { tenant_id, .. } => *tenant_id,
        }
    }
}

/// The publishing side; cheap to clone.
#[derive(Clone)]
pub struct Bus {
    tx: broadcast::Sender<Event>,
    lagged: Arc<AtomicU64>,
}

/// One subscription, named for the logs.
pub struct Subscriber {
    name: &'static str,
    rx: broadcast::Receiver<Event>,
    lagged: Arc<AtomicU64>,
}

impl Bus {
    /// `capacity` events are buffered per subscriber before the slowest starts skipping.
    pub fn new(capacity: usize) -> Self {
        let (tx, _) = broadcast::channel(capacity);
        Self { tx, lagged: Arc::new(AtomicU64::new(0)) }
    }

    /// Sends `event` to every current subscriber and returns how many there were. Never waits.
    pub fn publish(&self, event: Event) -> usize {
        self.tx.send(event).unwrap_or(0)
    }

    pub fn subscribe(&self, name: &'static str) -> Subscriber {
        Subscriber { name, rx: self.tx.subscribe(), lagged: self.lagged.clone() }
    }

    /// Events skipped by slow subscribers since start, across all of them.
    pub fn lagged_total(&self) -> u64 {
        self.lagged.load(Ordering::Relaxed)
    }
}

impl Subscriber {
    /// The next event, or `None` once the bus is gone. Skipped events are logged, not fatal.
    pub async fn recv(&mut self) -> Option<Event> {
        loop {
            match self.rx.recv().await {
                Ok(event) => return Some(event),
                Err(broadcast::error::RecvError::Lagged(skipped)) => {
                    self.lagged.fetch_add(skipped, Ordering::Relaxed);
                    tracing::warn!(subscriber = self.name, skipped, "slow event subscriber skipped events");
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_changed(n: u128) -> Event {
        Event::ConfigChanged {
            tenant_id: TenantId(uuid::Uuid::from_u128(1)),
            satellite_id: Some(SatelliteId(uuid::Uuid::from_u128(n))),
        }
    }

    #[tokio::test]
    async fn every_subscriber_gets_every_event() {
        let bus = Bus::new(16);
        let mut ws = bus.subscribe("ws");
        let mut publisher = bus.subscribe("mqtt-publish");
        assert_eq!(bus.publish(config_changed(7)), 2);
        assert_eq!(ws.recv().await, Some(config_changed(7)));
        assert_eq!(publisher.recv().await, Some(config_changed(7)));
        assert_eq!(config_changed(7).tenant_id(), TenantId(uuid::Uuid::from_u128(1)));
    }

    #[tokio::test]
    async fn a_slow_subscriber_never_blocks_the_publisher_and_its_lag_is_counted() {
        let bus = Bus::new(4);
        let mut slow = bus.subscribe("slow");
        let mut fast = bus.subscribe("fast");
        for n in 0..10 {
            bus.publish(config_changed(n));
            assert_eq!(fast.recv().await, Some(config_changed(n)));
        }
        // The slow one missed the oldest six and resumes at the newest four.
        assert_eq!(slow.recv().await, Some(config_changed(6)));
        assert_eq!(bus.lagged_total(), 6);
    }

    #[test]
    fn relayed_events_survive_the_wire() {
        let status = SatelliteStatus {
            tenant_id: TenantId(uuid::Uuid::from_u128(1)),
            satellite_id: SatelliteId(uuid::Uuid::from_u128(2)),
            name: "ridge".into(),
            last_seen_at: None,
        };
        for e in [
            Event::SatelliteOffline(Arc::new(status.clone())),
            Event::SatelliteOnline(Arc::new(status)),
            Event::AlertRaised {
                tenant_id: TenantId(uuid::Uuid::from_u128(1)),
                alert: Arc::new(serde_json::json!({"id": "a"})),
            },
        ] {
            let wire = serde_json::to_vec(&Relayed::of(&e).expect("relayed")).expect("json");
            let back: Relayed = serde_json::from_slice(&wire).expect("parse");
            assert_eq!(back.into_event(), e);
        }
        assert_eq!(Relayed::of(&config_changed(1)), None);
    }

    #[tokio::test]
    async fn publishing_with_no_subscribers_is_fine() {
        assert_eq!(Bus::new(4).publish(config_changed(1)), 0);
    }
}
