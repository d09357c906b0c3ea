//! Integrations with the rest of a smart home (docs/home-assistant.md, docs/mqtt-feed.md).
//!
//! - [`feed`]: the documented MQTT feed under `integrations.feed.root`: detections, alerts and
//!   the retained states of the hub and each satellite.
//! - [`discovery`]: Home Assistant MQTT discovery configs built on that feed.
//! - [`bridge`]: the hub as a client of another broker, which gets the same messages.
//! - [`run`]: the task that follows the event bus and keeps all of it current.
//!
//! Only one team is published (`integrations.team`), resolved once at start and kept by id. Readers log in to the embedded broker as
//! the read-only `homeassistant` user ([`crate::mqtt::auth::ReadOnlyLogin`]).

pub mod bridge;
pub mod discovery;
pub mod feed;
mod publisher;

pub use publisher::{AtStart, run, team_at_start};
