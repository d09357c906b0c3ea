//! Downloads species pictures (SPEC 4.9): wakes when a request queues species, when a download
//! finishes (a slot is free) and every few seconds for retries whose time has come; runs at most
//! [`PARALLEL`] downloads at once, each on its own task, so a slow source holds only those slots.
//! Queued species live in SQLite: a restart picks up where the last run stopped, and a claim left
//! by a crash is taken again when its lease runs out. Without a source it only waits for the stop.

use std::{sync::Arc, time::Duration};

use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::{state::AppState, usecases::species_images::download};

/// Downloads in flight at once: a Pi's uplink is shared with the satellites' audio.
pub const PARALLEL: usize = 2;
const POLL: Duration = Duration::from_secs(2);

pub async fn run(state: AppState, shutdown: CancellationToken) -> anyhow::Result<()> {
    if !state.images.enabled() {
        shutdown.cancelled().await;
        return Ok(());
    }
    let slots = Arc::new(Semaphore::new(PARALLEL));
    let freed = Arc::new(Notify::new());
    let mut tick = tokio::time::interval(POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = tick.tick() => {}
            _ = freed.notified() => {}
            _ = state.images.woken() => {}
        }
        let free = slots.available_permits();
        if free == 0 {
            continue;
        }
        let due = match download::due(&state.store, &state.clock, free).await {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(error = %e, "could not read the species image queue");
                continue;
            }
        };
        for d in due {
            let Ok(permit) = slots.clone().try_acquire_owned() else { break };
            let (st, freed) = (state.clone(), freed.clone());
            tokio::spawn(async move {
                let code = d.species_code.clone();
                if let Err(e) = download::download(&st.store, &st.objects, &st.clock, &st.images, d).await {
                    tracing::warn!(species = %code, error = %e, "could not record a species image download");
                }
                drop(permit);
                freed.notify_one();
            });
        }
    }
}
