//! Housekeeping every hour: telemetry older than its retention, rate-limit ledger rows older
//! than a day, audit log entries older than `retention.keep_audit_days` (365 by default),
//! inference jobs done more than 7 days ago and finished alert deliveries older than 30 days are
//! deleted. Free pages of the database beyond a reserve are then given back to the
//! filesystem (`store::system::give_back_free_pages`).

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::{state::AppState, store, time::Timestamp};

const EVERY: Duration = Duration::from_secs(3600);

pub async fn run(state: AppState, shutdown: CancellationToken) -> anyhow::Result<()> {
    let mut tick = tokio::time::interval(EVERY);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = tick.tick() => {}
        }
        let now = state.clock.now();
        let telemetry_before = Timestamp(now - chrono::Duration::days(store::telemetry::RETENTION_DAYS));
        let ledger_before = Timestamp(now - chrono::Duration::days(1));
        let audit_before = Timestamp(now - chrono::Duration::days(i64::from(state.settings.retention.keep_audit_days)));
        let jobs_before = Timestamp(now - chrono::Duration::days(store::jobs::DONE_RETENTION_DAYS));
        let deliveries_before = Timestamp(now - chrono::Duration::days(store::alert_deliveries::RETENTION_DAYS));
        let pruned = state
            .store
            .call(move |c| {
                Ok((
                    store::telemetry::prune(c, telemetry_before)?,
                    store::login_attempts::prune(c, ledger_before)?,
                    store::audit::prune(c, audit_before)?,
                    store::jobs::prune_done(c, jobs_before)?,
                    store::alert_deliveries::prune(c, deliveries_before)?,
                    store::system::give_back_free_pages(c)?,
                ))
            })
            .await;
        match pruned {
            Ok((t, l, a, j, d, pages)) if t + l + a + d > 0 || j + pages > 0 => {
                tracing::info!(telemetry = t, ledger = l, audit = a, jobs = j, deliveries = d, pages, "old rows pruned")
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "pruning failed"),
        }
    }
}
