//! Every 60 s (SPEC 8): marks silent satellites offline and heard-from ones online again
//! (`usecases::monitor`), announcing each change once on the bus.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::{state::AppState, usecases::monitor};

pub const EVERY: Duration = Duration::from_secs(60);

pub async fn run(state: AppState, shutdown: CancellationToken) -> anyhow::Result<()> {
    let mut tick = tokio::time::interval(EVERY);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = tick.tick() => {}
        }
        if let Err(e) = monitor::check(&state.store, &state.bus, &state.clock, &state.alerts).await {
            tracing::warn!(error = %e, "the satellite monitor could not run this pass");
        }
    }
}
