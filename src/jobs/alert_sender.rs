//! Sends the alert outbox (issue 12): wakes when an alert is raised, when a send finishes (its
//! channel may have more waiting) and at least every second,
//! claims the deliveries whose time has come and sends each on its own task, at most
//! [`PARALLEL`] at once and [`PER_CHANNEL`](crate::usecases::alert_delivery::PER_CHANNEL) per
//! channel, so a slow receiver delays only itself and never ingest. Pending rows survive a
//! restart: the next start sends them where the last one stopped.

use std::{sync::Arc, time::Duration};

use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::{events::Event, state::AppState, store, usecases::alert_delivery::PER_CHANNEL};

/// Deliveries in flight at once, across all channels.
pub const PARALLEL: usize = 16;
const POLL: Duration = Duration::from_secs(1);

pub async fn run(state: AppState, shutdown: CancellationToken) -> anyhow::Result<()> {
    let mut events = state.bus.subscribe("alert-sender");
    let slots = Arc::new(Semaphore::new(PARALLEL));
    // An interval, not a sleep per turn: a stream of other bus events must not starve the retries.
    let mut tick = tokio::time::interval(POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    // A finished attempt frees a slot of its channel: look for that channel's next one at once.
    let freed = Arc::new(Notify::new());
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = tick.tick() => {}
            _ = freed.notified() => {}
            e = events.recv() => match e {
                Some(Event::AlertRaised { .. }) => {}
                Some(_) => continue,
                None => return Ok(()),
            },
        }
        let now = state.clock.stamp();
        let due = match state.store.call(move |c| store::alert_deliveries::due(c, now, 64, PER_CHANNEL)).await {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(error = %e, "could not read the alert outbox");
                continue;
            }
        };
        for pending in due {
            if !state.outbound.claim(&pending) {
                continue;
            }
            let Ok(permit) = slots.clone().acquire_owned().await else { return Ok(()) };
            let (outbound, freed) = (state.outbound.clone(), freed.clone());
            tokio::spawn(async move {
                let id = pending.id.clone();
                if let Err(e) = outbound.attempt(pending).await {
                    tracing::warn!(delivery = %id, error = %e, "could not record a delivery attempt");
                }
                drop(permit);
                freed.notify_one();
            });
        }
    }
}
