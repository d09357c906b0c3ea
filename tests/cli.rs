//! The real `birdhub` binary, as a user or systemd runs it.

mod common;

use std::{
    net::TcpListener,
    path::Path,
    process::{Command, Output, Stdio},
    time::{Duration, Instant},
};

const BIN: &str = env!("CARGO_BIN_EXE_birdhub");

/// `birdhub ARGS` with an empty config file and the given data dir, isolated from the machine's config.
fn birdhub(data: &Path, args: &[&str]) -> Command {
    let config = data.join("empty.toml");
    if !config.exists() {
        std::fs::create_dir_all(data).expect("data dir");
        std::fs::write(&config, "").expect("config");
    }
    let mut cmd = Command::new(BIN);
    cmd.args(args).arg("--config").arg(&config).arg("--data-dir").arg(data.join("data"));
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("BIRDHUB_") || k == "RUST_LOG") {
        cmd.env_remove(k);
    }
    cmd
}

fn run(cmd: &mut Command) -> (Output, String, String) {
    let out = cmd.output().expect("run birdhub");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stdout, stderr)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

#[test]
fn default_config_prints_a_parsable_documented_file() {
    let (out, stdout, _) = run(Command::new(BIN).arg("default-config"));
    assert!(out.status.success());
    let table: toml::Table = stdout.parse().expect("valid TOML");
    assert_eq!(table["http"]["bind"].as_str(), Some("0.0.0.0:8080"));
    assert_eq!(table["mode"].as_str(), Some("full"));
    assert!(stdout.contains("MFA_ENCRYPTION_KEY"), "the SPEC env names are documented");
}

#[tokio::test]
async fn serve_answers_health_and_stops_cleanly_on_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let bind = format!("127.0.0.1:{port}");
    let mut child = birdhub(dir.path(), &["serve", "--http-bind", &bind, "--mqtt-bind", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    common::wait_healthy(&format!("http://{bind}/api/health")).await;

    let url = format!("http://{bind}/api/health");
    let (out, stdout, _) = run(&mut birdhub(dir.path(), &["healthcheck", "--url", &url]));
    assert!(out.status.success(), "healthcheck passes against a live hub");
    assert!(stdout.contains("\"status\":\"ok\""));

    let kill = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill");
    assert!(kill.success());
    // Guard against a hang only; the clean exit is what is asserted.
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        assert!(Instant::now() < deadline, "hub did not exit after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().expect("stderr"), &mut stderr).expect("read");
    assert!(status.success(), "exit status {status:?}, log:\n{stderr}");
    assert!(stderr.contains("birdhub stopped"), "log says it stopped:\n{stderr}");
    assert!(!stderr.contains("ERROR"), "a clean stop logs no error:\n{stderr}");
    assert!(dir.path().join("data/birdhub.db").exists());
    assert!(dir.path().join("data/secrets.toml").exists());

    let (out, _, _) = run(&mut birdhub(dir.path(), &["healthcheck", "--url", &url]));
    assert!(!out.status.success(), "healthcheck fails once the hub is gone");
}

#[test]
fn migrate_applies_once_then_reports_up_to_date() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (out, stdout, _) = run(&mut birdhub(dir.path(), &["migrate"]));
    assert!(out.status.success());
    assert!(stdout.contains("migrated from schema version 0"), "{stdout}");
    let (out, stdout, _) = run(&mut birdhub(dir.path(), &["migrate"]));
    assert!(out.status.success());
    assert!(stdout.contains("up to date"), "{stdout}");
}

#[test]
fn a_database_from_a_newer_birdhub_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert!(run(&mut birdhub(dir.path(), &["migrate"])).0.status.success());
    let db = rusqlite::Connection::open(dir.path().join("data/birdhub.db")).expect("open");
    db.pragma_update(None, "user_version", 9999).expect("bump");
    drop(db);
    let (out, _, stderr) = run(&mut birdhub(dir.path(), &["migrate"]));
    assert!(!out.status.success());
    assert!(stderr.contains("newer than this birdhub"), "{stderr}");
}

#[test]
fn a_bad_setting_fails_fast_naming_the_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (out, _, stderr) = run(birdhub(dir.path(), &["serve"]).env("BIRDHUB_HTTP__BIND", "not-an-address"));
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr.contains("http.bind"), "{stderr}");
}

#[test]
fn admin_create_user_generates_a_password_and_refuses_duplicates() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (out, stdout, stderr) =
        run(&mut birdhub(dir.path(), &["admin", "create-user", "--email", "ada@example.org", "--name", "Ada"]));
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("(platform admin)"), "the first account administers the hub: {stdout}");
    let password = stdout
        .lines()
        .find_map(|l| l.strip_prefix("password:"))
        .and_then(|rest| rest.split_whitespace().next())
        .expect("a generated password is printed");

    let db = rusqlite::Connection::open(dir.path().join("data/birdhub.db")).expect("open");
    let (hash, admin, role): (String, bool, String) = db
        .query_row(
            "SELECT u.password_hash, u.is_platform_admin, m.role FROM users u JOIN memberships m ON m.user_id = u.id
             WHERE u.email = 'ada@example.org'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("user row");
    assert!(birdhub::auth::password::verify(password, &hash), "the printed password is the stored one");
    assert!(admin);
    assert_eq!(role, "admin");

    let (out, _, stderr) = run(&mut birdhub(
        dir.path(),
        &["admin", "create-user", "--email", "ADA@example.org", "--name", "Ada 2", "--password", "long enough pw"],
    ));
    assert!(!out.status.success());
    assert!(stderr.contains("already exists"), "{stderr}");

    let (out, stdout, _) = run(&mut birdhub(
        dir.path(),
        &["admin", "create-user", "--email", "bob@example.org", "--name", "Bob", "--password", "long enough pw"],
    ));
    assert!(out.status.success());
    assert!(!stdout.contains("platform admin"), "later accounts are not admins unless asked: {stdout}");
    assert!(!stdout.contains("password:"), "a given password is not echoed");

    let (out, _, stderr) = run(&mut birdhub(
        dir.path(),
        &["admin", "create-user", "--email", "c@example.org", "--name", "C", "--password", "short"],
    ));
    assert!(!out.status.success());
    assert!(stderr.contains("at least 10"), "{stderr}");
    let (out, _, stderr) = run(&mut birdhub(dir.path(), &["admin", "create-user", "--email", "nope", "--name", "C"]));
    assert!(!out.status.success());
    assert!(stderr.contains("not an email"), "{stderr}");
}
