//! What happens to each captured chunk: the live session hears it first (everything, unfiltered),
//! then the schedule decides whether the satellite records now, the gate judges it, and what
//! passes is stored in the outbox and the sender is woken. `filterStats` are saved with each
//! chunk so they survive restarts. Until the system clock is synchronised nothing is recorded
//! (`clock_sync`).

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{
    chunk::CapturedChunk,
    gate::{FilterStats, Gate, Verdict},
    run::{Shared, filter_of},
};
use crate::domain::schedule;

pub async fn run(
    shared: Arc<Shared>,
    gate: Gate,
    mut stats: FilterStats,
    mut chunks: mpsc::Receiver<CapturedChunk>,
    shutdown: CancellationToken,
) {
    let gate = Arc::new(std::sync::Mutex::new(gate));
    loop {
        let chunk = tokio::select! {
            () = shutdown.cancelled() => return,
            c = chunks.recv() => match c { Some(c) => c, None => return },
        };
        let rms = chunk.rms();
        if let Ok(mut n) = shared.noise_floor.lock() {
            *n = Some(rms);
        }
        shared.live.relay(&shared, &chunk).await;
        if !shared.clock_synced.load(std::sync::atomic::Ordering::Relaxed) {
            continue; // stamped by a clock not yet synchronised (`clock_sync`): not recorded
        }
        let config = shared.config.borrow().clone();
        let on = schedule::active_at(
            &config.recording_profile.schedule,
            shared.position(),
            chunk.recorded_at,
            &chrono::Local,
        );
        if let Ok(mut s) = shared.scheduled_on.lock() {
            *s = on;
        }
        if !on {
            continue;
        }
        let filter = filter_of(&config);
        let g = gate.clone();
        let judged = tokio::task::spawn_blocking(move || {
            let verdict = g.lock().map(|mut g| g.judge(&chunk, &filter)).unwrap_or(Verdict::Send);
            (verdict, chunk)
        })
        .await;
        let Ok((verdict, chunk)) = judged else {
            tracing::error!("the gate panicked; chunk kept");
            continue;
        };
        stats.record(&verdict);
        let snapshot = stats;
        let send = verdict == Verdict::Send;
        let stored = shared
            .with_outbox(move |o| {
                let id = if send { Some(o.push(&chunk, chrono::Utc::now())?) } else { None };
                o.save_filter_stats(&snapshot)?;
                Ok(id)
            })
            .await;
        match stored {
            Ok(Some(id)) => {
                tracing::debug!(chunk = %id, rms, "stored");
                shared.wake.notify_one();
            }
            Ok(None) => tracing::debug!(?verdict, rms, "filtered out"),
            Err(e) => tracing::error!(error = %e, "could not store a chunk"),
        }
    }
}
