//! The hub under systemd: it says `READY=1` on `NOTIFY_SOCKET` once it listens, pings the
//! watchdog (`WATCHDOG_USEC`) while running and says `STOPPING=1` on SIGTERM; the unit scores
//! "OK" or better in `systemd-analyze security`.

mod common;

use std::{os::unix::net::UnixDatagram, time::Duration};

use common::process;

#[test]
fn the_hub_tells_systemd_it_is_ready_pings_the_watchdog_and_says_when_it_stops() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("notify.sock");
    let socket = UnixDatagram::bind(&path).expect("bind the notify socket");
    socket.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
    let (http, mqtt) = (process::free_port(), process::free_port());
    let notify = path.display().to_string();
    let mut hub =
        process::serve_with_env(dir.path(), http, mqtt, &[("NOTIFY_SOCKET", &notify), ("WATCHDOG_USEC", "400000")]);
    let mut seen: Vec<String> = Vec::new();
    let mut buf = [0u8; 512];
    while seen.iter().filter(|m| m.as_str() == "WATCHDOG=1").count() < 3 {
        let n = socket.recv(&mut buf).expect("a message from the hub within 60 s");
        seen.push(String::from_utf8_lossy(&buf[..n]).into_owned());
    }
    let ready = seen.iter().position(|m| m.lines().any(|l| l == "READY=1")).expect("READY=1");
    assert!(seen[ready].contains(&format!("STATUS=serving HTTP on 127.0.0.1:{http}")), "{seen:?}");
    let first_ping = seen.iter().position(|m| m == "WATCHDOG=1").expect("a ping");
    assert!(ready < first_ping, "ready before the first ping: {seen:?}");
    // The health endpoint answers by the time it said READY.
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", http)).expect("the hub listens once ready");
    std::io::Write::write_all(&mut conn, b"GET /api/health HTTP/1.0\r\nHost: hub\r\n\r\n").expect("request");
    let mut answer = String::new();
    std::io::Read::read_to_string(&mut conn, &mut answer).expect("answer");
    assert!(answer.starts_with("HTTP/1.0 200") || answer.starts_with("HTTP/1.1 200"), "{answer}");

    process::signal(&mut hub, "TERM");
    let mut stopping = false;
    socket.set_read_timeout(Some(Duration::from_millis(500))).expect("timeout");
    while let Ok(n) = socket.recv(&mut buf) {
        stopping |= &buf[..n] == b"STOPPING=1";
    }
    assert!(stopping, "STOPPING=1 on SIGTERM");
}

#[test]
fn the_unit_scores_ok_or_better_in_systemd_analyze_security() {
    let unit = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("systemd/birdhub.service");
    let out = std::process::Command::new("systemd-analyze")
        .args(["security", "--offline=true", "--no-pager"])
        .arg(&unit)
        .output()
        .expect("systemd-analyze (package systemd)");
    let text = String::from_utf8_lossy(&out.stdout);
    let overall = text.lines().find(|l| l.contains("Overall exposure level")).expect("an overall score");
    println!("{overall}");
    let score: f64 = overall
        .split(':')
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .expect("a number");
    assert!(score < 5.0 && (overall.contains("OK") || overall.contains("SAFE")), "{overall}");
}
