//! `birdhub satellite run`: capture -> gate -> outbox -> MQTT, and the device's side of the
//! protocol (config, heartbeat, telemetry, ack, update, log-request, live audio).

use tokio_util::sync::CancellationToken;

use super::settings::SatelliteSettings;

/// Runs the satellite until `shutdown` is cancelled (SIGTERM/SIGINT in the CLI).
pub async fn run(_settings: SatelliteSettings, _shutdown: CancellationToken) -> anyhow::Result<()> {
    todo!("runtime helper")
}
