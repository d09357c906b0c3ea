//! Every 60 s: the absence and trend rules of every team (`usecases::alert_watch::watch`). Detection
//! rules run with the detections themselves, in the inference workers' transaction.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::{state::AppState, usecases::alert_watch};

pub const EVERY: Duration = Duration::from_secs(60);

pub async fn run(state: AppState, shutdown: CancellationToken) -> anyhow::Result<()> {
    let mut tick = tokio::time::interval(EVERY);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = tick.tick() => {}
        }
        if let Err(e) = alert_watch::watch(&state.store, &state.bus, &state.alerts, state.clock.stamp()).await {
            tracing::warn!(error = %e, "the absence and trend rules could not run this pass");
        }
    }
}
