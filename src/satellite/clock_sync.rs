//! The satellite records nothing before its system clock is synchronised (issue 37). A Pi has no
//! real-time clock: until NTP answers after boot its clock reads 1970 or the last shutdown, and
//! a chunk stamped then would be filed in the wrong year. So the pipeline drops captured audio
//! until the probe says the clock is synchronised (the wait is logged once; heartbeats and
//! telemetry go on, so the hub sees the device and its clock offset meanwhile).
//!
//! The probe is `timedatectl show -p NTPSynchronized --value` (`yes`/`no`), or the shell command
//! of the setting `clock_sync_command` (machines with another time daemon), or of the variable
//! `BIRDHUB_CLOCK_SYNC_COMMAND` (tests). A probe that
//! cannot answer (no systemd, no `timedatectl`) does not hold the satellite back: it says so in
//! the log and records with the system clock as it is. `require_clock_sync = false` skips the
//! check (a desktop test box without NTP, whose clock is right anyway).

use std::{future::Future, time::Duration};

use tokio_util::sync::CancellationToken;

/// How often an unsynchronised clock is asked again.
pub const PROBE_EVERY: Duration = Duration::from_secs(5);
/// The probe when `clock_sync_command` is empty.
pub const DEFAULT_COMMAND: &str = "timedatectl show -p NTPSynchronized --value";
/// Overrides `clock_sync_command` when set and not empty (tests, a one-off run).
pub const COMMAND_ENV: &str = "BIRDHUB_CLOCK_SYNC_COMMAND";

/// The probe command in force: [`COMMAND_ENV`], else the setting, else [`DEFAULT_COMMAND`].
pub fn command(setting: &str) -> String {
    match std::env::var(COMMAND_ENV) {
        Ok(c) if !c.trim().is_empty() => c,
        _ if !setting.trim().is_empty() => setting.to_owned(),
        _ => DEFAULT_COMMAND.to_owned(),
    }
}

/// What the probe said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyncState {
    Synced,
    NotSynced,
    /// The probe could not tell (why, for the log).
    Unknown(String),
}

/// How the wait ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Waited {
    /// The clock is synchronised; `probes` is how many answers it took.
    Synced { probes: u32 },
    /// The probe could not tell: recording goes ahead with the system clock.
    Unknown,
    /// The satellite is stopping.
    Stopped,
}

/// Reads a probe command's answer: `yes` (or `true`, `1`) is synchronised, `no` is not.
pub fn parse(status_ok: bool, stdout: &str) -> SyncState {
    match (status_ok, stdout.trim().to_ascii_lowercase().as_str()) {
        (true, "yes" | "true" | "1") => SyncState::Synced,
        (true, "no" | "false" | "0") => SyncState::NotSynced,
        (ok, other) => SyncState::Unknown(format!(
            "the clock sync probe answered {other:?}{}",
            if ok { "" } else { " and failed" }
        )),
    }
}

/// Runs the probe command (through `sh -c`) once.
pub async fn run_command(command: &str) -> SyncState {
    let command = if command.trim().is_empty() { DEFAULT_COMMAND } else { command };
    let out = tokio::process::Command::new("sh").arg("-c").arg(command).kill_on_drop(true).output();
    match tokio::time::timeout(Duration::from_secs(10), out).await {
        Ok(Ok(o)) => parse(o.status.success(), &String::from_utf8_lossy(&o.stdout)),
        Ok(Err(e)) => SyncState::Unknown(format!("could not run {command:?}: {e}")),
        Err(_) => SyncState::Unknown(format!("{command:?} did not answer within 10 s")),
    }
}

/// Asks `probe` every `every` until the clock is synchronised, the probe cannot tell, or
/// `shutdown`. Logs once when it starts waiting and once when the wait ends.
pub async fn wait_for_sync<F, Fut>(mut probe: F, every: Duration, shutdown: &CancellationToken) -> Waited
where
    F: FnMut() -> Fut,
    Fut: Future<Output = SyncState>,
{
    let mut probes = 0;
    let mut waiting = false;
    loop {
        probes += 1;
        match probe().await {
            SyncState::Synced => {
                if waiting {
                    tracing::info!(probes, "the system clock is synchronised; recording starts");
                }
                return Waited::Synced { probes };
            }
            SyncState::Unknown(why) => {
                tracing::warn!(reason = %why, "cannot tell whether the system clock is synchronised; recording with \
                    the clock as it is (set require_clock_sync = false to skip this check)");
                return Waited::Unknown;
            }
            SyncState::NotSynced if !waiting => {
                waiting = true;
                tracing::warn!(
                    "waiting for the system clock to be synchronised (NTP) before recording; heartbeats \
                    go on. On a machine without time synchronisation set require_clock_sync = false"
                );
            }
            SyncState::NotSynced => {}
        }
        tokio::select! {
            () = shutdown.cancelled() => return Waited::Stopped,
            () = tokio::time::sleep(every) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{
        Arc,
        atomic::{AtomicU32, Ordering},
    };

    use super::*;

    #[test]
    fn the_probe_answer_reads_as_timedatectl_writes_it() {
        assert_eq!(parse(true, "yes\n"), SyncState::Synced);
        assert_eq!(parse(true, "no\n"), SyncState::NotSynced);
        assert!(matches!(parse(false, ""), SyncState::Unknown(_)));
        assert!(matches!(parse(true, "maybe"), SyncState::Unknown(_)));
    }

    #[tokio::test(start_paused = true)]
    async fn recording_waits_until_the_probe_says_synchronised() {
        let asked = Arc::new(AtomicU32::new(0));
        let a = asked.clone();
        let probe = move || {
            let n = a.fetch_add(1, Ordering::SeqCst);
            async move { if n < 3 { SyncState::NotSynced } else { SyncState::Synced } }
        };
        let started = tokio::time::Instant::now();
        let waited = wait_for_sync(probe, PROBE_EVERY, &CancellationToken::new()).await;
        assert_eq!(waited, Waited::Synced { probes: 4 });
        assert_eq!(started.elapsed(), PROBE_EVERY * 3, "asked again every 5 s, no sooner");
        assert_eq!(asked.load(Ordering::SeqCst), 4);
    }

    #[tokio::test(start_paused = true)]
    async fn a_probe_that_cannot_tell_does_not_hold_recording_back_and_a_stop_ends_the_wait() {
        let unknown = wait_for_sync(
            || async { SyncState::Unknown("no timedatectl".into()) },
            PROBE_EVERY,
            &CancellationToken::new(),
        )
        .await;
        assert_eq!(unknown, Waited::Unknown);
        let stop = CancellationToken::new();
        let s = stop.clone();
        let wait = tokio::spawn(async move { wait_for_sync(|| async { SyncState::NotSynced }, PROBE_EVERY, &s).await });
        tokio::time::sleep(PROBE_EVERY * 10).await;
        stop.cancel();
        assert_eq!(wait.await.expect("joined"), Waited::Stopped, "still waiting after 50 s, until the stop");
    }

    #[tokio::test]
    async fn the_probe_command_is_a_shell_command() {
        assert_eq!(run_command("echo yes").await, SyncState::Synced);
        assert_eq!(run_command("printf 'no\\n'").await, SyncState::NotSynced);
        assert!(matches!(run_command("exit 3").await, SyncState::Unknown(_)));
        assert!(matches!(run_command("/nonexistent/timedatectl show").await, SyncState::Unknown(_)));
    }
}
