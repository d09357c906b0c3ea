//! `birdhub serve --mqtt-bind 127.0.0.1:…` keeps the MQTT WebSocket on 127.0.0.1 too (issue 51,
//! defect 17): a hub told to listen on one address does not open port 8083 to the whole network.
//! The real binary, as an operator starts it; what it logs is what it bound.

mod common;

use std::{
    io::{BufRead, BufReader},
    process::{Command, Stdio},
    sync::mpsc,
    time::Duration,
};

use common::process::BIN;

#[test]
fn a_hub_bound_to_loopback_keeps_its_mqtt_websocket_on_loopback() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("empty.toml"), "").expect("config");
    let mut hub = Command::new(BIN)
        .args(["serve", "--config"])
        .arg(dir.path().join("empty.toml"))
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .args(["--http-bind", "127.0.0.1:0", "--mqtt-bind", "127.0.0.1:0"])
        .env("BIRDHUB_LOG_LEVEL", "info")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn hub");
    let (tx, rx) = mpsc::channel();
    for pipe in [
        hub.stdout.take().map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
        hub.stderr.take().map(|p| Box::new(p) as _),
    ]
    .into_iter()
    .flatten()
    {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
    }
    let mut seen = Vec::new();
    let listening = loop {
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(line) if line.contains("MQTT broker listening") => break Some(line),
            Ok(line) => seen.push(line),
            Err(_) => break None,
        }
    };
    let _ = hub.kill();
    let _ = hub.wait();
    let line = listening.unwrap_or_else(|| panic!("the broker never started:\n{}", seen.join("\n")));
    assert!(line.contains("127.0.0.1:8083"), "the WebSocket listens on 127.0.0.1 like the TCP listener: {line}");
    assert!(!line.contains("0.0.0.0"), "nothing listens on every address: {line}");
}
