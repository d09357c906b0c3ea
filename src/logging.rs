//! Where the log goes. Under systemd, when stderr is the journal (`JOURNAL_STREAM` names the
//! stream stderr is), events go to journald in its native protocol with their fields kept:
//! `PRIORITY` from the level, `TARGET`, `CODE_FILE`/`CODE_LINE`, and each event field as an
//! upper-case journal field (`journalctl -u birdhub SATELLITE_ID=…`, `-o verbose` shows them
//! all). Anywhere else, or when the journal socket cannot be opened, lines go to stderr.

use std::os::unix::fs::MetadataExt;

use tracing_subscriber::{EnvFilter, layer::SubscriberExt, util::SubscriberInitExt};

/// Installs the process-wide subscriber; `RUST_LOG`, when set, wins over `filter`.
pub fn init(filter: &str) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(filter));
    if let Some(journal) = journal_layer() {
        let _ = tracing_subscriber::registry().with(filter).with(journal).try_init();
        return;
    }
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(ansi).with_writer(std::io::stderr).try_init();
}

/// The journald layer when stderr is connected to the journal.
fn journal_layer() -> Option<tracing_journald::Layer> {
    let stream = std::env::var("JOURNAL_STREAM").ok()?;
    if !stderr_is(&stream) {
        return None;
    }
    let layer = tracing_journald::layer().ok()?;
    // Field names stay as written (`satellite_id` -> SATELLITE_ID) so journalctl matches read naturally.
    Some(layer.with_syslog_identifier("birdhub".to_owned()).with_field_prefix(None))
}

/// Whether `JOURNAL_STREAM` (`<device>:<inode>`) is the file stderr is open on. A child process
/// started from a unit inherits the variable with a different stderr, and logs to that instead.
fn stderr_is(stream: &str) -> bool {
    let Some((dev, ino)) = stream.split_once(':') else { return false };
    let (Ok(dev), Ok(ino)) = (dev.parse::<u64>(), ino.parse::<u64>()) else { return false };
    match std::fs::metadata("/proc/self/fd/2") {
        Ok(meta) => meta.dev() == dev && meta.ino() == ino,
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_or_foreign_journal_stream_is_not_the_journal() {
        assert!(!stderr_is(""));
        assert!(!stderr_is("12"));
        assert!(!stderr_is("a:b"));
        assert!(!stderr_is("0:0"));
    }
}
