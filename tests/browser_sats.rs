//! The Satellites pages as a hobbyist meets them (issue 36), in a real headless chromium with
//! real MQTT satellites:
//! - 7: the list and the satellite page follow the WebSocket: a satellite going offline, coming
//!   back and its heartbeats redraw them without a reload;
//! - 19: "Request update" never offers the installed version ("up to date"), asks first, and a
//!   failed update reported in a heartbeat shows on the page with the command's lines;
//! - 23: "Register a satellite" prints the lines that write `satellite.toml`; that file, as the
//!   page shows it, runs `birdhub satellite run`, which connects and comes online on the list;
//! - 25: the outbox legend reads in MB, a single storage sample is not "no samples", and the
//!   Search box keeps its distance from the State select at 360, 390 and 1280 px;
//! - 14: the schedule's times follow the 12-hour preference; no raw ISO time anywhere;
//! - 4: every page here fits 360 and 390 px without sideways scroll.

mod common;

use std::{
    process::{Command, Stdio},
    time::Duration,
};

use birdhub::usecases::monitor;
use common::{PASSWORD, browser::Browser, process::BIN, sat};
use serde_json::{Value, json};

fn beat(r: &sat::Registered, version: &str, update: Value) -> String {
    json!({
        "satelliteId": r.id, "tenantId": r.tenant, "uptimeSeconds": 600, "state": "recording",
        "version": version, "stream": "satellite", "timestamp": chrono::Utc::now().to_rfc3339(),
        "outboxStats": {"totalBytes": 14_000_000, "ackedBytes": 12_500_000, "unackedBytes": 1_500_000,
                        "rowCount": 40, "unackedCount": 4, "diskBytes": 14_000_000},
        "filterStats": {"totalProcessed": 50, "totalSent": 40, "rejectedSilence": 10},
        "update": update,
    })
    .to_string()
}

fn telemetry(r: &sat::Registered) -> String {
    json!({"satelliteId": r.id, "tenantId": r.tenant, "timestamp": chrono::Utc::now().to_rfc3339(),
           "storageFreeBytes": 79_000_000_000_u64, "cpuTemp": 41.5, "uptimeSeconds": 900})
    .to_string()
}

async fn wait_api(api: &common::Api, id: &str, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..150 {
        let (_, v) = api.get(&format!("/satellites/{id}")).await;
        if ok(&v) {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("{what} never happened");
}

/// The page fits 360, 390 and 1280 px without sideways scroll.
async fn fits(b: &Browser, what: &str) {
    for width in [360, 390, 1280] {
        b.client.set_window_size(width, 800).await.expect("resize");
        let ok = b.wait_until("return document.documentElement.scrollWidth <= window.innerWidth;", 3).await;
        let got = b.js("return [document.documentElement.scrollWidth, window.innerWidth];").await;
        assert!(ok, "{what} scrolls sideways at {width} px: {got}");
    }
    b.client.set_window_size(1280, 900).await.expect("resize");
}

/// No text on the page is a raw ISO timestamp.
async fn no_iso_text(b: &Browser, what: &str) {
    let found = b
        .js(r"const m = document.body.innerText.match(/\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2})?(\.\d+)?(Z|[+-]\d{2}:\d{2})/); return m ? m[0] : null;")
        .await;
    assert_eq!(found, Value::Null, "{what} shows a raw timestamp");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn satellites_pages_follow_the_devices_offer_only_newer_updates_and_set_up_a_pi() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.com", false).await;
    let api = hub.login(&owner.email).await;
    assert_eq!(api.put("/auth/me/preferences", json!({"timeFormat": "12h"})).await.0, 200);
    let garden = sat::register(&api, json!({"name": "Garden Pi", "latitude": 51.5, "longitude": -0.12})).await;
    let orchard = sat::register(&api, json!({"name": "Orchard Pi"})).await;
    let mut g = sat::connect(&hub, &garden).await;
    assert!(g.subscribe(&garden.topic("update")).await, "own update channel");
    let o = sat::connect(&hub, &orchard).await;
    g.publish(&garden.topic("heartbeat"), beat(&garden, "0.1.0", Value::Null)).await;
    g.publish(&garden.topic("telemetry"), telemetry(&garden)).await;
    o.publish(&orchard.topic("heartbeat"), beat(&orchard, "0.2.0", Value::Null)).await;
    wait_api(&api, &garden.id, "Garden's heartbeat", |v| v["version"] == "0.1.0").await;
    wait_api(&api, &orchard.id, "Orchard's heartbeat", |v| v["version"] == "0.2.0").await;

    let b = Browser::start(hub.http_addr.port(), "sats").await;
    b.sign_in(&owner.email, PASSWORD, None).await;

    // The list: the outbox in MB, one storage sample shown as such, filters apart at every width.
    b.goto("/satellites").await;
    let card = format!("article.sat-card[data-id='{}']", garden.id);
    let text = b.text(&card).await;
    assert!(text.contains("online"), "{text}");
    assert!(text.contains("12.5 MB") && text.contains("1.5 MB"), "the outbox legend in MB: {text}");
    assert!(!text.contains("12500000") && !text.contains("1500000"), "no raw byte counts: {text}");
    assert!(text.contains("79.0 GB free") && !text.contains("no samples in 24 h"), "{text}");
    for width in [360, 390, 1280] {
        b.client.set_window_size(width, 800).await.expect("resize");
        let apart = b
            .wait_until(
                "const i = document.querySelector('.sat-filters input[name=search]').getBoundingClientRect();
                 const s = document.querySelector('.sat-filters select[name=status]').getBoundingClientRect();
                 return i.right + 8 <= s.left || s.right + 8 <= i.left || i.bottom + 8 <= s.top || s.bottom + 8 <= i.top;",
                3,
            )
            .await;
        assert!(apart, "the Search box touches the State select at {width} px");
    }
    fits(&b, "/satellites").await;
    no_iso_text(&b, "/satellites").await;
    b.shot("list").await;

    // 7: offline and back, without a reload (a reload would drop the marker).
    assert!(b.wait_until("return document.documentElement.dataset.satsLive === 'on';", 10).await, "the socket opens");
    b.js("window.__stay = 1; return null;").await;
    let s = hub.state();
    s.clock.advance(Duration::from_secs(6 * 60));
    assert!(monitor::check(&s.store, &s.bus, &s.clock, &s.alerts).await.expect("pass").went_offline >= 1);
    let offline = format!("return !!document.querySelector(\"{card} .sat-state.offline\") && window.__stay === 1;");
    assert!(b.wait_until(&offline, 10).await, "Garden Pi shows offline without a reload: {}", b.text(&card).await);
    g.publish(&garden.topic("heartbeat"), beat(&garden, "0.1.0", Value::Null)).await;
    let online = format!("return !!document.querySelector(\"{card} .sat-state.online\") && window.__stay === 1;");
    assert!(b.wait_until(&online, 10).await, "Garden Pi is back online without a reload: {}", b.text(&card).await);
    assert!(b.text("#sat-count").await.starts_with("1 of 2"), "the count follows: {}", b.text("#sat-count").await);
    b.assert_no_js_errors().await;

    // 19: the satellite that runs the newest release is up to date: nothing to request.
    b.goto(&format!("/satellites/{}", orchard.id)).await;
    assert!(b.text("#update-row").await.contains("up to date"), "{}", b.text("#update-row").await);
    assert!(!b.has("#act-update").await, "no update to the installed version is offered");

    // The older one is offered the newer release, asked first, and a failure shows live.
    b.goto(&format!("/satellites/{}", garden.id)).await;
    assert!(b.wait_until("return document.documentElement.dataset.satsLive === 'on';", 10).await);
    assert_eq!(b.text("#act-update").await, "Request update to 0.2.0");
    // 14: the schedule in the 12-hour format the person chose.
    let sun = b.text(".sun").await;
    assert!(sun.contains("AM") && sun.contains("PM"), "sunrise and sunset in 12-hour time: {sun}");
    no_iso_text(&b, "the satellite page").await;
    b.js("window.confirm = () => false; return null;").await;
    b.click("#act-update").await;
    assert_eq!(api.get(&format!("/satellites/{}", garden.id)).await.1["update_status"], Value::Null, "declined");
    b.js("window.__asked = ''; window.confirm = (m) => { window.__asked = m; return true; }; return null;").await;
    b.click("#act-update").await;
    let msg = g.message_on(&garden.topic("update"), 10).await.expect("the update message");
    assert_eq!(msg["targetVersion"], "0.2.0");
    let asked = b.js("return window.__asked;").await;
    let asked = asked.as_str().unwrap_or_default();
    assert!(asked.contains("Garden Pi") && asked.contains("0.1.0") && asked.contains("0.2.0"), "{asked}");
    assert!(
        b.wait_until("return document.getElementById('update-row').textContent.includes('updating to 0.2.0');", 10)
            .await
    );
    let report = json!({"targetVersion": "0.2.0", "status": "failed", "exitCode": 100,
        "message": "the update command failed (exit status: 100)\nE: Unable to locate package birdhub"});
    b.js("window.__stay = 2; return null;").await;
    g.publish(&garden.topic("heartbeat"), beat(&garden, "0.1.0", report)).await;
    let v = wait_api(&api, &garden.id, "the failed update's report", |v| v["update_status"] == "failed").await;
    assert!(v["update_error"].as_str().unwrap_or_default().contains("Unable to locate"), "{v}");
    assert!(
        b.wait_until(
            "const t = document.getElementById('update-row').textContent;
             return t.includes('The update to 0.2.0 failed') && t.includes('Unable to locate package birdhub') && window.__stay === 2;",
            10
        )
        .await,
        "the failure shows without a reload: {}",
        b.text("#update-row").await
    );
    assert!(b.text("#sat-version").await.contains("update failed"));
    fits(&b, "the satellite page").await;
    b.shot("detail-failed").await;

    // 23: register in the browser, run what the page prints on a "Pi".
    b.goto("/satellites").await;
    b.click("#register").await;
    b.fill("#sat-name", "Hedge Pi").await;
    b.fill("#sat-lat", "52.37").await;
    b.fill("#sat-lon", "4.89").await;
    b.click("#register-submit").await;
    b.find("#register-result:not([hidden])").await;
    let setup = b.text("#reg-setup").await;
    assert!(setup.contains("/etc/birdhub/satellite.toml") && setup.contains("systemctl"), "{setup}");
    assert!(!setup.contains("device_id"), "the page has no device id to give: {setup}");
    fits(&b, "the registration's result").await;
    b.shot("registered").await;
    let toml_text: String = setup
        .lines()
        .skip_while(|l| !l.ends_with("<<'EOF'"))
        .skip(1)
        .take_while(|l| *l != "EOF")
        .map(|l| format!("{l}\n"))
        .collect();
    let parsed: toml::Table =
        toml_text.parse().unwrap_or_else(|e| panic!("the page's satellite.toml: {e}\n{toml_text}"));
    let hedge = parsed["satellite_id"].as_str().expect("satellite_id").to_owned();
    assert_eq!(parsed["mqtt_password"].as_str(), Some(b.text("#reg-password").await.as_str()));
    let dir = tempfile::tempdir().expect("tempdir");
    let recordings = dir.path().join("recordings");
    std::fs::create_dir_all(&recordings).expect("recordings");
    // What the page says to change on a Pi without a USB microphone: the source.
    let config = toml_text.replace("source = \"alsa:default\"", &format!("source = \"dir:{}\"", recordings.display()));
    assert_ne!(config, toml_text, "the page names the source");
    let path = dir.path().join("satellite.toml");
    std::fs::write(&path, &config).expect("write config");

    b.goto("/satellites").await;
    let hedge_card = format!("article.sat-card[data-id='{hedge}']");
    assert!(b.text(&hedge_card).await.contains("never"), "not heard from yet");
    assert!(b.wait_until("return document.documentElement.dataset.satsLive === 'on';", 10).await);
    b.js("window.__stay = 3; return null;").await;
    let log = std::fs::File::create(dir.path().join("satellite.log")).expect("log");
    let mut child = Command::new(BIN)
        .args(["satellite", "run", "--config"])
        .arg(&path)
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .env("RUST_LOG", "info,rumqttc=warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .spawn()
        .expect("spawn satellite");
    let came = b
        .wait_until(
            &format!("return !!document.querySelector(\"{hedge_card} .sat-state.online\") && window.__stay === 3;"),
            30,
        )
        .await;
    let _ = child.kill();
    let _ = child.wait();
    let log = std::fs::read_to_string(dir.path().join("satellite.log")).unwrap_or_default();
    assert!(came, "the satellite set up from the page comes online on the list: {log}");
    let v = wait_api(&api, &hedge, "Hedge's heartbeat", |v| v["heartbeat_state"] == "recording").await;
    assert_eq!((v["latitude"].clone(), v["longitude"].clone()), (json!(52.37), json!(4.89)));
    b.assert_no_js_errors().await;
    b.close().await;
}
