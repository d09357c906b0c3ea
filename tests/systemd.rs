//! The hub under systemd: it says `READY=1` on `NOTIFY_SOCKET` once it listens, pings the
//! watchdog (`WATCHDOG_USEC`) while running and says `STOPPING=1` on SIGTERM; the unit scores
//! "OK" or better in `systemd-analyze security`.

mod common;

use std::{
    os::unix::{fs::MetadataExt, net::UnixDatagram},
    time::Duration,
};

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

/// Under a unit, stderr is the journal and `JOURNAL_STREAM` says so: the hub then writes its
/// events to journald's socket as structured entries. The socket is journald's fixed path, so the
/// test puts its own socket there in a private mount namespace (`unshare`, as root).
#[test]
fn under_systemd_the_log_goes_to_the_journal_as_structured_entries() {
    let dir = tempfile::tempdir().expect("dir");
    let run_systemd = dir.path().join("run-systemd");
    std::fs::create_dir_all(run_systemd.join("journal")).expect("journal dir");
    let socket = UnixDatagram::bind(run_systemd.join("journal/socket")).expect("bind the journal socket");
    socket.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
    let stderr_path = dir.path().join("stderr.log");
    let stderr = std::fs::File::create(&stderr_path).expect("stderr file");
    let stream = stderr.metadata().expect("stderr file metadata");
    let (dev, ino) = (stream.dev(), stream.ino());
    std::fs::write(dir.path().join("empty.toml"), "").expect("config");
    let model = birdhub::inference::ModelDir::locate("").expect("model (run models/fetch.sh)");
    let (http, mqtt) = (process::free_port(), process::free_port());
    let mut hub = std::process::Command::new("unshare")
        .args(["--mount", "sh", "-c", r#"mount --bind "$0" /run/systemd && exec "$@""#])
        .arg(&run_systemd)
        .arg(env!("CARGO_BIN_EXE_birdhub"))
        .args(["serve", "--config"])
        .arg(dir.path().join("empty.toml"))
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .args(["--http-bind", &format!("127.0.0.1:{http}"), "--mqtt-bind", &format!("127.0.0.1:{mqtt}")])
        .env("BIRDHUB_MQTT__WS_BIND", "127.0.0.1:0")
        .env("BIRDHUB_INFERENCE__MODEL_DIR", &model.path)
        .env("BIRDHUB_LOG_LEVEL", "info")
        .env("JOURNAL_STREAM", format!("{dev}:{ino}"))
        .stdout(std::process::Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("unshare (util-linux) and the hub");

    // A fresh hub logs its setup code as a warning with the code as a field.
    let mut entries: Vec<Vec<(String, String)>> = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let setup = loop {
        let n = socket.recv(&mut buf).expect("a journal entry from the hub within 60 s");
        let entry = journal_fields(&buf[..n]);
        entries.push(entry.clone());
        if entry.iter().any(|(k, _)| k == "SETUP_CODE") {
            break entry;
        }
    };
    process::signal(&mut hub, "TERM");
    let field = |name: &str| setup.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str()).unwrap_or_default();
    assert_eq!(field("PRIORITY"), "4", "a warning is priority 4: {setup:?}");
    assert_eq!(field("SYSLOG_IDENTIFIER"), "birdhub");
    assert!(field("MESSAGE").starts_with("no account yet"), "{setup:?}");
    assert_eq!(field("TARGET"), "birdhub::web::setup");
    assert_eq!(field("CODE_FILE"), "src/web/setup.rs");
    let on_disk = std::fs::read_to_string(dir.path().join("data/setup-code")).expect("setup-code file");
    assert_eq!(field("SETUP_CODE"), on_disk.trim(), "the field is the code the dashboard asks for");
    assert!(entries.len() >= 2, "start-up logs more than one entry: {entries:?}");
    // The journal has the log; stderr does not repeat it.
    let err = std::fs::read_to_string(&stderr_path).expect("stderr");
    assert!(!err.contains("no account yet"), "stderr holds no copy of the log: {err}");
}

/// The fields of one entry in journald's native protocol: `KEY=value\n`, or for any value
/// `KEY\n` + its length (u64, little-endian) + the value + `\n`.
fn journal_fields(mut data: &[u8]) -> Vec<(String, String)> {
    let mut fields = Vec::new();
    while let Some(end) = data.iter().position(|&b| b == b'\n' || b == b'=') {
        let key = String::from_utf8_lossy(&data[..end]).into_owned();
        if data[end] == b'=' {
            let rest = &data[end + 1..];
            let stop = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
            fields.push((key, String::from_utf8_lossy(&rest[..stop]).into_owned()));
            data = rest.get(stop + 1..).unwrap_or_default();
        } else {
            let len_bytes: [u8; 8] = data[end + 1..end + 9].try_into().expect("a length");
            let len = u64::from_le_bytes(len_bytes) as usize;
            let value = &data[end + 9..end + 9 + len];
            fields.push((key, String::from_utf8_lossy(value).into_owned()));
            data = data.get(end + 9 + len + 1..).unwrap_or_default();
        }
    }
    fields
}
