//! systemd's service protocol (`sd_notify`), written here on a Unix datagram socket: `READY=1`
//! once the hub listens, `STOPPING=1` on the way out, and `WATCHDOG=1` pings at half the unit's
//! `WatchdogSec` while the database still answers, so a wedged hub is restarted. Without
//! `NOTIFY_SOCKET` (not under systemd, or `Type=simple`) every call does nothing.

use std::{os::unix::net::UnixDatagram, time::Duration};

use tokio_util::sync::CancellationToken;

use crate::store::Store;

/// Sends `state` (`READY=1`, `WATCHDOG=1` ...) to systemd; false when there is no socket or the
/// send failed.
pub fn notify(state: &str) -> bool {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else { return false };
    let Ok(socket) = UnixDatagram::unbound() else { return false };
    let bytes = path.as_encoded_bytes();
    let sent = if let Some(name) = bytes.strip_prefix(b"@") {
        // An abstract socket (systemd's usual choice).
        use std::os::linux::net::SocketAddrExt;
        std::os::unix::net::SocketAddr::from_abstract_name(name)
            .and_then(|addr| socket.send_to_addr(state.as_bytes(), &addr))
    } else {
        socket.send_to(state.as_bytes(), std::path::Path::new(&path))
    };
    sent.is_ok()
}

/// The watchdog interval systemd asked for (`WATCHDOG_USEC`, for this process per `WATCHDOG_PID`).
pub fn watchdog_interval() -> Option<Duration> {
    if let Some(pid) = std::env::var("WATCHDOG_PID").ok().and_then(|p| p.parse::<u32>().ok())
        && pid != std::process::id()
    {
        return None;
    }
    let usec: u64 = std::env::var("WATCHDOG_USEC").ok()?.parse().ok()?;
    (usec > 0).then(|| Duration::from_micros(usec))
}

/// Pings the watchdog at half its interval while a `SELECT 1` answers within the interval.
pub async fn watchdog(store: Store, every: Duration, shutdown: CancellationToken) -> anyhow::Result<()> {
    let mut tick = tokio::time::interval(every / 2);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = tick.tick() => {}
        }
        let probe = store.call(|c| Ok(c.query_row("SELECT 1", [], |r| r.get::<_, i64>(0))?));
        match tokio::time::timeout(every, probe).await {
            Ok(Ok(1)) => {
                notify("WATCHDOG=1");
            }
            Ok(other) => tracing::error!(result = ?other.map(|_| ()), "the database did not answer the watchdog probe"),
            Err(_) => tracing::error!("the database probe hung; systemd's watchdog will restart the hub"),
        }
    }
}
