//! Debian's mosquitto clients (installed by `.ci/run`): `mosquitto_pub` runs, and a
//! `mosquitto_sub` that is known to be subscribed (its debug output shows the SUBACK) before the
//! test goes on, so no test waits a fixed time for it.

use std::{process::Stdio, time::Duration};

use tokio::{
    io::{AsyncBufReadExt, BufReader, Lines},
    process::{Child, ChildStdout, Command},
};

/// The path of a mosquitto tool; panics with the fix when it is missing.
pub fn tool(name: &str) -> String {
    let found = std::process::Command::new("which").arg(name).output().map(|o| o.status.success()).unwrap_or(false);
    assert!(found, "{name} is missing: `apt-get install mosquitto-clients` (.ci/run does this)");
    name.to_owned()
}

/// A running `mosquitto_sub -d`.
pub struct Sub {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
    /// Everything it printed so far (for failure messages).
    pub seen: Vec<String>,
}

impl Sub {
    /// Starts `mosquitto_sub -d ARGS` and returns once the broker has answered the SUBSCRIBE.
    pub async fn start(args: &[&str]) -> Sub {
        // Line-buffered: piped stdout is block-buffered, and the SUBACK line would sit in it.
        let mut child = Command::new("stdbuf")
            .args(["-oL", &tool("mosquitto_sub"), "-d"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("mosquitto_sub");
        let stdout = child.stdout.take().expect("stdout");
        let mut sub = Sub { child, lines: BufReader::new(stdout).lines(), seen: Vec::new() };
        sub.line_until(|l| l.contains("received SUBACK"), 20).await.unwrap_or_else(|| {
            panic!("mosquitto_sub never got a SUBACK: {:?}", sub.seen);
        });
        sub
    }

    /// Reads lines until one satisfies `ok` (at most `secs` seconds).
    async fn line_until(&mut self, ok: impl Fn(&str) -> bool, secs: u64) -> Option<String> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let line = tokio::time::timeout(left, self.lines.next_line()).await.ok()?.ok()??;
            self.seen.push(line.clone());
            if ok(&line) {
                return Some(line);
            }
        }
    }

    /// The next message payload that is JSON (debug lines are skipped).
    pub async fn next_json(&mut self, secs: u64) -> Option<serde_json::Value> {
        let line = self.line_until(|l| l.starts_with('{'), secs).await?;
        serde_json::from_str(&line).ok()
    }

    /// The next message printed by `-v` (`topic payload`) on a topic starting with `prefix`.
    pub async fn next_message(&mut self, prefix: &str, secs: u64) -> Option<(String, String)> {
        let line = self.line_until(|l| l.starts_with(prefix), secs).await?;
        let (topic, payload) = line.split_once(' ').unwrap_or((&line, ""));
        Some((topic.to_owned(), payload.to_owned()))
    }

    /// Waits for the process to end (at most `secs` seconds), keeping what it printed; its exit
    /// status, or `None` if it was still running.
    pub async fn wait_exit(&mut self, secs: u64) -> Option<std::process::ExitStatus> {
        let _ = self.line_until(|_| false, secs).await; // to the end of its output
        tokio::time::timeout(Duration::from_secs(secs), self.child.wait()).await.ok()?.ok()
    }

    /// Stops the subscriber.
    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

/// Runs `mosquitto_pub -d ARGS`; returns (exit success, stdout + stderr).
pub async fn publish(args: &[&str]) -> (bool, String) {
    let out = Command::new(tool("mosquitto_pub")).arg("-d").args(args).output().await.expect("mosquitto_pub");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}
