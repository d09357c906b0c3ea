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
fn satellite_run_help_names_the_satellites_own_config_file() {
    // Issue 51, 17: `--config` read as the hub's file under `birdhub satellite` too.
    let (out, stdout, _) = run(Command::new(BIN).args(["satellite", "run", "--help"]));
    assert!(out.status.success());
    let config =
        stdout.lines().skip_while(|l| !l.trim_start().starts_with("--config")).take(4).collect::<Vec<_>>().join(" ");
    assert!(config.contains("/etc/birdhub/satellite.toml"), "--config names the satellite's file: {config}");
}

#[test]
fn default_config_prints_a_parsable_documented_file() {
    let (out, stdout, _) = run(Command::new(BIN).arg("default-config"));
    assert!(out.status.success());
    let table: toml::Table = stdout.parse().expect("valid TOML");
    assert_eq!(table["http"]["bind"].as_str(), Some("0.0.0.0:8080"));
    assert_eq!(table["mode"].as_str(), Some("full"));
    assert_eq!(table["mqtt"]["bind"].as_str(), Some("0.0.0.0:1883"));
    assert!(stdout.contains("MFA_ENCRYPTION_KEY"), "the SPEC env names are documented");
}

#[tokio::test]
async fn serve_answers_health_and_stops_cleanly_on_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let bind = format!("127.0.0.1:{port}");
    let mut child = birdhub(dir.path(), &["serve", "--http-bind", &bind, "--mqtt-bind", "127.0.0.1:0"])
        .env("BIRDHUB_MQTT__WS_BIND", "127.0.0.1:0")
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

fn fixture() -> String {
    let dir = birdhub::inference::ModelDir::locate("").expect("model dir (run models/fetch.sh)");
    dir.file("fixtures/birds_10s.wav").display().to_string()
}

#[test]
fn classify_names_the_birds_in_a_real_recording() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (out, stdout, stderr) = run(&mut birdhub(dir.path(), &["classify", &fixture()]));
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("4 window(s)"), "{stdout}");
    assert!(stdout.contains("Tennessee Warbler (Leiothlypis peregrina)"), "{stdout}");
    assert!(stdout.contains("(nothing above 0.70)"), "windows without a confident bird say so: {stdout}");

    let (out, stdout, _) = run(&mut birdhub(dir.path(), &["classify", &fixture(), "--json", "--threshold", "0.3"]));
    assert!(out.status.success());
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("JSON report");
    let windows = report["windows"].as_array().expect("windows");
    assert_eq!(windows.len(), 4);
    assert_eq!(windows[1]["startSeconds"], 3.0);
    assert_eq!(windows[1]["detections"][0]["speciesCode"], "leiothlypis_peregrina");
    assert_eq!(report["sampleRate"], 32_000);
}

#[test]
fn classify_with_a_location_flags_and_drops_unexpected_species() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pennsylvania = ["--lat", "40.8", "--lon", "-77.9", "--date", "2026-05-15"];
    let cape_town = ["--lat", "-33.9", "--lon", "18.4", "--date", "2026-05-15"];
    let mut args = vec!["classify", fixture_leak()];
    args.extend(pennsylvania);
    let (out, stdout, stderr) = run(&mut birdhub(dir.path(), &args));
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("Tennessee Warbler") && !stdout.contains("not expected here"), "{stdout}");

    let mut args = vec!["classify", fixture_leak()];
    args.extend(cape_town);
    let (_, stdout, _) = run(&mut birdhub(dir.path(), &args));
    assert!(stdout.contains("Tennessee Warbler (Leiothlypis peregrina)  [not expected here this week]"), "{stdout}");
    args.push("--only-expected");
    let (_, stdout, _) = run(&mut birdhub(dir.path(), &args));
    assert!(!stdout.contains("Tennessee Warbler"), "{stdout}");
}

fn fixture_leak() -> &'static str {
    Box::leak(fixture().into_boxed_str())
}

#[test]
fn classify_refuses_a_broken_file_clearly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("broken.wav");
    std::fs::write(&bad, b"RIFF\x24\x00\x00\x00WAVEfmt garbage").expect("write");
    let (out, _, stderr) = run(&mut birdhub(dir.path(), &["classify", bad.to_str().expect("utf8")]));
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr.contains("not a readable WAV file"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn model_status_reports_the_installed_model() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (out, stdout, _) = run(&mut birdhub(dir.path(), &["model", "status"]));
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("model: ready"), "{stdout}");
    let (out, stdout, _) =
        run(birdhub(dir.path(), &["model", "status"]).env("BIRDHUB_INFERENCE__MODEL_DIR", "/nonexistent"));
    assert!(!out.status.success());
    assert!(stdout.contains("models/fetch.sh"), "{stdout}");
}

#[test]
fn admin_rebuild_stats_repairs_rollups_that_drifted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (out, _, stderr) =
        run(&mut birdhub(dir.path(), &["admin", "create-user", "--email", "ada@example.org", "--name", "Ada"]));
    assert!(out.status.success(), "{stderr}");
    let db = rusqlite::Connection::open(dir.path().join("data/birdhub.db")).expect("open");
    db.execute_batch(
        "INSERT INTO satellites (id, tenant_id, name, mqtt_password_hash)
             SELECT '00000000-0000-4000-8000-00000000000a', id, 'north', '!' FROM tenants;
         INSERT INTO audio_chunks (id, tenant_pk, satellite_pk, recorded_at, duration_ms, sample_rate, storage_key, size_bytes)
             SELECT unhex('0000000000004000800000000000000' || n), (SELECT pk FROM tenants WHERE id = tenant_id), pk,
                    1781092800000, 3000, 48000, 'k', 1
             FROM satellites, (SELECT 1 AS n UNION SELECT 2);
         INSERT INTO species_labels (species_code, scientific_name, common_name)
             VALUES ('turdus_migratorius', 'Turdus migratorius', 'American Robin');
         INSERT INTO detections (id, tenant_pk, satellite_pk, chunk_pk, model_id, species_pk, confidence, detected_at)
             SELECT unhex(replace(hex(id), '8000', '9000')), tenant_pk, satellite_pk, pk, 'm',
                    (SELECT pk FROM species_labels WHERE species_code = 'turdus_migratorius'), 0.9, 1781092800000
             FROM audio_chunks;
         UPDATE stats_pair_days SET n = 99;",
    )
    .expect("seed and damage");
    drop(db);
    let (out, stdout, stderr) = run(&mut birdhub(dir.path(), &["admin", "rebuild-stats"]));
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("stats_pair_days") && stdout.contains("(before: 2 rows differed"), "{stdout}");
    // The damaged row and the right one it stood in for; the other tables were right.
    assert!(stdout.contains("(before: 0 rows differed"), "{stdout}");
    assert!(stdout.contains("statistics rebuilt"), "{stdout}");
    let db = rusqlite::Connection::open(dir.path().join("data/birdhub.db")).expect("open");
    let (n, chunks): (i64, i64) = db
        .query_row("SELECT (SELECT sum(n) FROM stats_pair_days), (SELECT sum(n) FROM stats_chunks)", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .expect("read");
    assert_eq!((n, chunks), (2, 2));
}

/// What the package prints after installing: the address, then the setup code of a hub with no
/// account (waiting for the starting hub to write it), or "sign in" once an account exists.
#[test]
fn admin_welcome_prints_the_address_and_the_setup_code_until_an_account_exists() {
    let dir = tempfile::tempdir().expect("dir");
    let (_, out, _) = run(birdhub(dir.path(), &["admin", "welcome"]).env("BIRDHUB_HTTP__BIND", "0.0.0.0:8099"));
    assert!(out.contains(":8099/"), "the dashboard address with the configured port: {out}");
    assert!(out.contains("start the hub"), "no hub ran yet, so no code: {out}");

    // A hub that starts after the command does: --wait picks up the code it writes.
    let welcome =
        birdhub(dir.path(), &["admin", "welcome", "--wait", "60"]).stdout(Stdio::piped()).spawn().expect("welcome");
    let mut hub = common::process::serve(dir.path(), free_port(), free_port());
    let out = String::from_utf8_lossy(&welcome.wait_with_output().expect("welcome output").stdout).into_owned();
    let code = std::fs::read_to_string(dir.path().join("data/setup-code")).expect("the hub wrote its code");
    assert!(out.contains(&format!("setup code  {}", code.trim())), "{out}");
    common::process::signal(&mut hub, "TERM");

    common::process::create_user(dir.path(), "first@example.org");
    let (_, out, _) = run(&mut birdhub(dir.path(), &["admin", "welcome"]));
    assert!(out.contains("Sign in with your account.") && !out.contains("setup code"), "{out}");
}

/// The hub re-executes itself once with glibc's allocator tuned (same pid), so freed model
/// buffers go back to the kernel; a value the user set, or BIRDHUB_MALLOC=default, is left alone.
#[test]
fn the_hub_runs_with_the_tuned_allocator_unless_told_otherwise() {
    let environ = |extra: &[(&str, &str)]| {
        let dir = tempfile::tempdir().expect("dir");
        let mut cmd = birdhub(dir.path(), &["serve", "--http-bind", "127.0.0.1:0", "--mqtt-bind", "127.0.0.1:0"]);
        cmd.env("BIRDHUB_MQTT__WS_BIND", "127.0.0.1:0").env("BIRDHUB_INFERENCE__MODEL_DIR", dir.path().join("none"));
        let mut hub = cmd.envs(extra.iter().copied()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("hub");
        let deadline = Instant::now() + Duration::from_secs(30);
        let env = loop {
            let env = std::fs::read(format!("/proc/{}/environ", hub.id())).unwrap_or_default();
            let env = String::from_utf8_lossy(&env).split('\0').map(str::to_owned).collect::<Vec<_>>();
            if env.iter().any(|v| v.starts_with("BIRDHUB_MALLOC=")) || Instant::now() > deadline {
                break env;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        common::process::signal(&mut hub, "TERM");
        env
    };
    let tuned = environ(&[]);
    assert!(tuned.contains(&"MALLOC_MMAP_THRESHOLD_=4194304".to_owned()), "{tuned:?}");
    assert!(tuned.contains(&"MALLOC_TRIM_THRESHOLD_=4194304".to_owned()), "{tuned:?}");
    assert!(tuned.contains(&"MALLOC_ARENA_MAX=2".to_owned()) && tuned.contains(&"BIRDHUB_MALLOC=tuned".to_owned()));
    let own = environ(&[("MALLOC_ARENA_MAX", "4")]);
    assert!(own.contains(&"MALLOC_ARENA_MAX=4".to_owned()), "the user's value wins: {own:?}");
    let own_trim = environ(&[("MALLOC_TRIM_THRESHOLD_", "131072")]);
    assert!(own_trim.contains(&"MALLOC_TRIM_THRESHOLD_=131072".to_owned()), "the user's value wins: {own_trim:?}");
    let untouched = environ(&[("BIRDHUB_MALLOC", "default")]);
    assert!(
        !untouched.iter().any(|v| v.starts_with("MALLOC_MMAP_THRESHOLD_") || v.starts_with("MALLOC_TRIM_THRESHOLD_")),
        "{untouched:?}"
    );
}

#[test]
fn integrations_prints_the_read_only_login_the_hub_will_accept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (out, stdout, stderr) = run(&mut birdhub(dir.path(), &["integrations"]));
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("Home Assistant discovery: off") && stdout.contains("enabled = true"), "{stdout}");

    let (out, stdout, stderr) =
        run(birdhub(dir.path(), &["integrations"]).env("BIRDHUB_INTEGRATIONS__HOME_ASSISTANT__ENABLED", "true"));
    assert!(out.status.success(), "{stderr}");
    let secrets = std::fs::read_to_string(dir.path().join("data/secrets.toml")).expect("secrets.toml");
    let password = secrets
        .lines()
        .find_map(|l| l.strip_prefix("mqtt_readonly_password = "))
        .map(|v| v.trim_matches('"').to_owned())
        .expect("a generated read-only password");
    assert_eq!(password.len(), 64, "{secrets}");
    assert!(stdout.contains("username: homeassistant"), "{stdout}");
    assert!(stdout.contains(&format!("password: {password}")), "{stdout}");
    assert!(stdout.contains("may read: homeassistant/#  birdhub-feed/#"), "{stdout}");
    // The same password on a second run: it is kept, not regenerated.
    let (_, again, _) =
        run(birdhub(dir.path(), &["integrations"]).env("BIRDHUB_INTEGRATIONS__HOME_ASSISTANT__ENABLED", "true"));
    assert!(again.contains(&format!("password: {password}")), "{again}");
}
