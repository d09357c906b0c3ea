//! Runs due scheduled exports (`usecases::scheduled_exports::run_due`) every [`EVERY`], on the
//! hub's clock. A schedule missed while the hub was down runs once at the first pass after a
//! start; claims keep two processes on one database from running it twice.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::{
    state::AppState,
    usecases::{exports, scheduled_exports},
};

/// Cron has minute resolution; a run starts at most this long after its time.
pub const EVERY: Duration = Duration::from_secs(15);

pub async fn run(state: AppState, shutdown: CancellationToken) -> anyhow::Result<()> {
    let mut tick = tokio::time::interval(EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = tick.tick() => {}
        }
        if let Err(e) = scheduled_exports::run_due(&env(&state), state.clock.stamp()).await {
            tracing::warn!(error = %e, "the scheduled exports could not run this pass");
        }
    }
}

/// What a render reads, from the hub's state.
pub fn env(state: &AppState) -> exports::Env {
    let links = state.links.get(&state.settings);
    exports::Env {
        store: state.store.clone(),
        names: state.names.clone(),
        share: exports::ShareLinks::from_links(links, state.settings.security.jwt_secret.expose()),
    }
}
