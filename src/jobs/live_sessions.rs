//! Keeps live-audio sessions honest (`usecases::satellite_live`): every [`EVERY`] of real time it
//! ends the sessions that no watcher kept alive for `live_audio.timeout_ms` (60 s) of
//! hub-clock time and repeats
//! `live-start` for the running ones every 20 s; and it ends the session of a satellite that was
//! deleted (reason `satellite_deleted`).

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::{events::Event, state::AppState, usecases::satellite_live};

/// How often the sessions are checked (real time; the timeout itself reads the hub clock).
pub const EVERY: Duration = Duration::from_secs(1);

pub async fn run(state: AppState, shutdown: CancellationToken) -> anyhow::Result<()> {
    let mut events = state.bus.subscribe("live-sessions");
    let mut tick = tokio::time::interval(EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = tick.tick() => satellite_live::sweep(state.live_ctx()).await,
            event = events.recv() => match event {
                None => return Ok(()),
                Some(Event::SatelliteRevoked { tenant_id, satellite_id }) => {
                    satellite_live::end_if_deleted(state.live_ctx(), tenant_id, satellite_id).await;
                }
                Some(_) => {}
            },
        }
    }
}
