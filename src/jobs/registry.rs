//! Keeps this process listed in the service registry (SPEC 2.21): refreshed every 10 s,
//! so the 30 s TTL only lapses when the process is really gone.

use std::time::Duration;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::state::AppState;

const REFRESH: Duration = Duration::from_secs(10);

pub async fn run(state: AppState, shutdown: CancellationToken) -> anyhow::Result<()> {
    let service = match state.settings.mode {
        crate::config::Mode::Full => "hub",
        crate::config::Mode::Dispatcher => "dispatcher",
        crate::config::Mode::Api => "api",
    };
    let instance = state.instance_id.to_string();
    let mut tick = tokio::time::interval(REFRESH);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = tick.tick() => {}
        }
        let uptime = (chrono::Utc::now() - state.started_at).num_seconds();
        let info = json!({
            "version": env!("CARGO_PKG_VERSION"),
            "mode": service,
            "startedAt": crate::time::format(state.started_at),
            "uptimeSeconds": uptime,
            "memoryBytes": resident_memory_bytes(),
            "pid": std::process::id(),
        });
        state.cache.register(service, &instance, &info).await;
    }
}

/// Resident set size of this process from /proc (Linux), if readable.
pub fn resident_memory_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}
