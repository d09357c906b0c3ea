//! The satellite's answer to `log-request`: the last lines of its own log file when one is
//! configured (`log_file`, which `run --log-file` also writes), else
//! `journalctl -u <unit> -n <tail>`. At most [`MAX_LOG_BYTES`](super::remote::MAX_LOG_BYTES) go
//! back; the oldest lines are dropped first and the answer says `truncated`.

use std::{io::SeekFrom, process::Stdio, time::Duration};

use tokio::io::{AsyncReadExt, AsyncSeekExt};

use super::{remote::MAX_LOG_BYTES, settings::SatelliteSettings};

/// The last `tail` lines and whether anything was cut to fit.
pub async fn tail(s: &SatelliteSettings, tail: u32) -> std::io::Result<(String, bool)> {
    let text = match &s.log_file {
        Some(path) => {
            let mut f = tokio::fs::File::open(path).await?;
            let len = f.metadata().await?.len();
            // Enough bytes for the lines asked for in any sane log; the cap trims the rest.
            let window = (MAX_LOG_BYTES as u64 * 2).min(len);
            f.seek(SeekFrom::Start(len - window)).await?;
            let mut buf = Vec::with_capacity(window as usize);
            f.read_to_end(&mut buf).await?;
            String::from_utf8_lossy(&buf).into_owned()
        }
        None => {
            let mut cmd = tokio::process::Command::new("journalctl");
            cmd.args(["-u", &s.unit, "-n", &tail.to_string(), "--no-pager", "-o", "short-iso"])
                .stdin(Stdio::null())
                .kill_on_drop(true);
            let out = tokio::time::timeout(Duration::from_secs(10), cmd.output())
                .await
                .map_err(|_| std::io::Error::other("journalctl took longer than 10 s"))??;
            if !out.status.success() {
                return Err(std::io::Error::other(format!(
                    "journalctl failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
            String::from_utf8_lossy(&out.stdout).into_owned()
        }
    };
    Ok(last_lines(&text, tail as usize, MAX_LOG_BYTES))
}

/// The last `n` lines of `text`, dropping the oldest until it fits in `max_bytes`.
pub fn last_lines(text: &str, n: usize, max_bytes: usize) -> (String, bool) {
    let lines: Vec<&str> = text.lines().collect();
    let mut start = lines.len().saturating_sub(n);
    let mut truncated = false;
    let mut size: usize = lines[start..].iter().map(|l| l.len() + 1).sum();
    while size > max_bytes && start < lines.len() {
        size -= lines[start].len() + 1;
        start += 1;
        truncated = true;
    }
    (lines[start..].join("\n"), truncated)
}

#[cfg(test)]
mod tests {
    use super::last_lines;

    #[test]
    fn keeps_the_newest_lines_within_the_cap() {
        let text = "one\ntwo\nthree\nfour\n";
        assert_eq!(last_lines(text, 2, 100), ("three\nfour".into(), false));
        assert_eq!(last_lines(text, 10, 100), ("one\ntwo\nthree\nfour".into(), false));
        assert_eq!(last_lines(text, 4, 11), ("three\nfour".into(), true), "the oldest go first");
        assert_eq!(last_lines("", 5, 10), (String::new(), false));
    }
}
