//! Runs the audio retention sweep ([`crate::usecases::audio_retention`]) at start, every
//! 10 minutes, and whenever ingest finds the disk under its minimum.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::state::AppState;

/// How often the sweep runs without being asked.
pub const EVERY: Duration = Duration::from_secs(600);

pub async fn run(state: AppState, shutdown: CancellationToken) -> anyhow::Result<()> {
    let mut tick = tokio::time::interval(EVERY);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = tick.tick() => {}
            _ = state.disk.woken() => {}
        }
        match state.disk.sweep(&state.store, &state.objects, &state.clock).await {
            Ok(s) if s.finished + s.expired_by_age + s.deleted_for_space > 0 || s.still_short => tracing::info!(
                finished = s.finished,
                expired_by_age = s.expired_by_age,
                deleted_for_space = s.deleted_for_space,
                bytes = s.bytes,
                still_short = s.still_short,
                "audio retention swept"
            ),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "audio retention sweep failed"),
        }
    }
}
