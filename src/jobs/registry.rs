//! Keeps this process listed in the service registry (SPEC 2.21, see
//! [`crate::usecases::service_registry`] for how it works across processes): its entry is written
//! to the shared table every 10 s, and within a second of an inference job finishing so worker
//! counts read elsewhere are fresh; expired entries of any process are deleted; the entry is
//! withdrawn on a clean stop. The cache keeps this process's entry under the same key too.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::{state::AppState, usecases::service_registry::REFRESH};

pub use crate::usecases::service_registry::resident_memory_bytes;

/// The quickest two refreshes follow each other when jobs finish back to back.
const MIN_GAP: Duration = Duration::from_secs(1);

pub async fn run(state: AppState, shutdown: CancellationToken) -> anyhow::Result<()> {
    let (registry, this) = (state.registry(), state.this_process());
    let mut tick = tokio::time::interval(REFRESH);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = tick.tick() => {}
            _ = state.workers.job_finished() => {}
        }
        let entry = this.entry().await;
        let now = state.clock.now();
        if let Err(e) = registry.publish(&entry, now).await {
            tracing::warn!(error = %e, "could not refresh the service registry entry");
        }
        if let Err(e) = registry.prune(now).await {
            tracing::warn!(error = %e, "could not prune the service registry");
        }
        state.cache.register(entry.service.as_str(), &entry.instance_id, &entry).await;
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = tokio::time::sleep(MIN_GAP) => {}
        }
    }
    if let Err(e) = registry.withdraw(this.service, &this.instance_id).await {
        tracing::debug!(error = %e, "could not withdraw the service registry entry");
    }
    Ok(())
}
