//! Clock sanity over real MQTT (issue 37; docs/satellites.md "The satellite's clock"): a satellite
//! whose heartbeat is stamped 1970 shows its clock 56 years behind in the API and on its page,
//! its health says the clock is wrong and one alert reaches the team's channel; its chunk stamped
//! 1970-01-01T00:00:05Z is acked `stored` and filed near now, flagged, the stamp it carried kept.
//! Without a recent offset an implausible chunk is stamped from its arrival; a plausible one is
//! untouched. A clock that comes right again clears the health state. The reference satellite (a
//! real `birdhub satellite` process) records nothing until its clock sync probe says yes.

mod common;

use std::time::Duration;

use base64::Engine;
use birdhub::usecases::monitor;
use common::{
    TestHub,
    receiver::Receiver,
    sat,
    satellite::{saved_id, stat, station, wait_satellite},
};
use serde_json::{Value, json};

fn iso(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn time(v: &Value) -> chrono::DateTime<chrono::Utc> {
    v.as_str().and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("a time: {v}"))
}

async fn setup() -> (TestHub, common::Api, sat::Registered, sat::Client) {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    // New York: the machine's zone (UTC in CI) is neither the station's nor anything it checks.
    let r = sat::register(&api, json!({"name": "garden", "latitude": 40.7128, "longitude": -74.0060})).await;
    let mut c = sat::connect(&hub, &r).await;
    assert!(c.subscribe(&format!("{}#", r.prefix)).await);
    (hub, api, r, c)
}

async fn heartbeat(c: &sat::Client, r: &sat::Registered, timestamp: &str) {
    let hb = json!({"satelliteId": r.id, "tenantId": r.tenant, "uptimeSeconds": 30, "state": "recording",
                    "timestamp": timestamp, "outboxStats": {"rowCount": 1, "unackedCount": 1, "diskBytes": 1000}});
    c.publish(&r.topic("heartbeat"), hb.to_string()).await;
}

/// Polls the satellite until its clock was measured at a new time; returns it.
async fn measured(api: &common::Api, id: &str, before: &Value) -> Value {
    for _ in 0..200 {
        let (_, v) = api.get(&format!("/satellites/{id}")).await;
        if !v["clock_checked_at"].is_null() && &v["clock_checked_at"] != before {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the heartbeat was never measured");
}

/// Sends a 3 s chunk stamped `recorded_at` and returns its ack.
async fn send_chunk(c: &mut sat::Client, r: &sat::Registered, recorded_at: &str) -> (String, Value) {
    let chunk = uuid::Uuid::new_v4().to_string();
    let msg = json!({"chunkId": chunk, "satelliteId": r.id, "tenantId": r.tenant, "recordedAt": recorded_at,
                     "durationMs": 3000, "sampleRate": 48_000,
                     "audio": base64::engine::general_purpose::STANDARD.encode(sat::tone_wav(48_000, 3.0))});
    c.publish(&r.topic("audio"), msg.to_string()).await;
    let ack = c.message_on(&r.topic("ack"), 10).await.expect("an ack");
    (chunk, ack)
}

/// The chunk as the timeline lists it (a range around the hub's now).
async fn chunk_of(hub: &TestHub, api: &common::Api, id: &str) -> Value {
    let now = hub.state().clock.now();
    let (from, to) = (iso(now - chrono::Duration::days(30)), iso(now + chrono::Duration::hours(1)));
    let (status, t) = api.get(&format!("/sessions/timeline?from={from}&to={to}")).await;
    assert_eq!(status, 200, "{t}");
    t["chunks"].as_array().and_then(|cs| cs.iter().find(|c| c["id"] == id)).cloned().unwrap_or(Value::Null)
}

async fn page(hub: &TestHub, api: &common::Api, path: &str) -> String {
    let resp = api.client.get(format!("{}{path}", hub.base_url)).send().await.expect("page");
    assert_eq!(resp.status(), 200);
    resp.text().await.expect("body")
}

#[tokio::test]
async fn a_satellite_56_years_behind_is_shown_alerted_once_and_its_1970_chunk_is_filed_near_now() {
    let (hub, api, r, mut c) = setup().await;
    let s = hub.state();
    let rx = Receiver::start(None).await;
    let hook = api
        .create("/alert-rules/channels", json!({"type": "webhook", "name": "rx", "config": {"url": rx.url("/clock")}}))
        .await;
    let (_, rules) = api.get("/alert-rules/rules").await;
    let rule = rules["rules"]
        .as_array()
        .and_then(|rs| rs.iter().find(|x| x["systemKey"] == "satellite_clock"))
        .cloned()
        .expect("every team has the system rule satellite_clock");
    assert_eq!(rule["name"], "Wrong satellite clock");
    let path = format!("/alert-rules/rules/{}", rule["id"].as_str().expect("id"));
    let (status, wired) = api.put(&path, json!({"channelIds": [hook["id"]]})).await;
    assert_eq!(status, 200, "its channels can be chosen like the offline rule's: {wired}");

    heartbeat(&c, &r, "1970-01-01T00:00:00Z").await;
    let v = measured(&api, &r.id, &Value::Null).await;
    let years = v["clock_offset_ms"].as_i64().expect("an offset") as f64 / (365.25 * 86_400_000.0);
    assert!((-57.0..-56.0).contains(&years), "{v}");
    assert_eq!(
        (v["clock_wrong"].clone(), v["clock_text"].clone()),
        (json!(true), json!("Clock wrong: 56 years behind the hub"))
    );
    let html = page(&hub, &api, &format!("/satellites/{}", r.id)).await;
    assert!(html.contains("Clock wrong: 56 years behind the hub") && html.contains("clock wrong"), "the page says so");
    let list = page(&hub, &api, "/satellites").await;
    assert!(list.contains("Clock wrong: 56 years behind the hub"), "and so does its card");

    let check = || monitor::check(&s.store, &s.bus, &s.clock, &s.alerts);
    assert_eq!(check().await.expect("pass").clock_wrong, 1);
    heartbeat(&c, &r, "1970-01-01T00:00:30Z").await;
    measured(&api, &r.id, &v["clock_checked_at"]).await;
    assert_eq!(check().await.expect("pass").clock_wrong, 0, "one alert per episode, not per heartbeat or pass");
    let got = rx.wait_for(1, 10).await;
    assert_eq!(got.len(), 1);
    let body = got[0].json();
    assert_eq!(body["event"], "satellite_clock", "{body}");
    assert!(body["message"].as_str().is_some_and(|m| m.contains("56 years behind")), "{body}");
    let (_, alerts) = api.get("/alerts").await;
    assert_eq!(alerts["total"], 1, "{alerts}");
    assert_eq!(alerts["alerts"][0]["type"], "satellite_clock", "{alerts}");

    // A chunk stamped with the wrong clock: kept, filed at the corrected time, flagged.
    let (chunk, ack) = send_chunk(&mut c, &r, "1970-01-01T00:00:05Z").await;
    assert_eq!(ack, json!({"chunkId": chunk, "status": "stored"}), "the audio is kept");
    let got = chunk_of(&hub, &api, &chunk).await;
    assert_eq!(
        (got["clock_corrected"].clone(), got["reported_recorded_at"].clone()),
        (json!(true), json!("1970-01-01T00:00:05.000Z")),
        "{got}"
    );
    let off = (time(&got["recorded_at"]) - s.clock.now()).num_seconds().abs();
    assert!(off < 120, "filed near now, not in 1970: {got}");
    let (_, v) = api.get(&format!("/satellites/{}", r.id)).await;
    assert_eq!(v["clock_corrected_chunks"], 1, "{v}");
    let html = page(&hub, &api, &format!("/satellites/{}", r.id)).await;
    assert!(html.contains("1 chunk re-stamped by the hub"), "the page counts it");
}

#[tokio::test]
async fn without_a_recent_offset_an_implausible_chunk_is_stamped_from_its_arrival_and_a_normal_one_is_untouched() {
    let (hub, api, r, mut c) = setup().await;
    let s = hub.state();
    // An offset measured eleven minutes before the chunk is too old to correct it by.
    heartbeat(&c, &r, "1970-01-01T00:00:00Z").await;
    measured(&api, &r.id, &Value::Null).await;
    s.clock.advance(Duration::from_secs(11 * 60));

    let (old, ack) = send_chunk(&mut c, &r, "1970-01-01T00:00:05Z").await;
    assert_eq!(ack["status"], "stored", "{ack}");
    let got = chunk_of(&hub, &api, &old).await;
    assert_eq!(got["clock_corrected"], true, "{got}");
    let before_arrival = (s.clock.now() - time(&got["recorded_at"])).num_seconds();
    assert!((0..60).contains(&before_arrival), "stamped from its arrival (less its 3 s): {got}");

    let (future, _) = send_chunk(&mut c, &r, "2099-06-01T12:00:00Z").await;
    let got = chunk_of(&hub, &api, &future).await;
    assert_eq!(
        (got["clock_corrected"].clone(), got["reported_recorded_at"].clone()),
        (json!(true), json!("2099-06-01T12:00:00.000Z")),
        "{got}"
    );

    let sent = iso(s.clock.now() - chrono::Duration::seconds(3));
    let (normal, _) = send_chunk(&mut c, &r, &sent).await;
    let got = chunk_of(&hub, &api, &normal).await;
    assert_eq!((got["recorded_at"].clone(), got["clock_corrected"].clone()), (json!(sent), json!(false)), "{got}");
    assert!(got["reported_recorded_at"].is_null(), "{got}");
    let (_, v) = api.get(&format!("/satellites/{}", r.id)).await;
    assert_eq!(v["clock_corrected_chunks"], 2, "{v}");
}

#[tokio::test]
async fn a_clock_that_comes_right_again_clears_the_health_state() {
    let (hub, api, r, c) = setup().await;
    let s = hub.state();
    let check = || monitor::check(&s.store, &s.bus, &s.clock, &s.alerts);
    let ahead = iso(s.clock.now() + chrono::Duration::hours(3));
    heartbeat(&c, &r, &ahead).await;
    let v = measured(&api, &r.id, &Value::Null).await;
    assert_eq!(v["clock_text"], "Clock wrong: 3 h ahead of the hub", "{v}");
    assert_eq!(check().await.expect("pass").clock_wrong, 1);

    // NTP has caught up: the next heartbeat is stamped with the right time.
    heartbeat(&c, &r, &iso(s.clock.now())).await;
    let v = measured(&api, &r.id, &v["clock_checked_at"]).await;
    assert_eq!((v["clock_wrong"].clone(), v["clock_text"].clone()), (json!(false), json!("Clock right")), "{v}");
    let pass = check().await.expect("pass");
    assert_eq!((pass.clock_right, pass.clock_wrong), (1, 0));
    let html = page(&hub, &api, &format!("/satellites/{}", r.id)).await;
    assert!(html.contains("Clock right") && !html.contains("clock wrong"), "the page shows the clock right");

    // Wrong again within the rule's cooldown (30 min): a new episode, but no second alert.
    heartbeat(&c, &r, &ahead).await;
    measured(&api, &r.id, &v["clock_checked_at"]).await;
    assert_eq!(check().await.expect("pass").clock_wrong, 1);
    let (_, alerts) = api.get("/alerts").await;
    assert_eq!(alerts["total"], 1, "a flapping clock alerts once per cooldown: {alerts}");
}

/// The chunks the hub holds for a satellite.
fn hub_chunks(hub: &TestHub, id: &str) -> i64 {
    let id = id.to_owned();
    hub.sql(move |c| {
        c.query_row(
            "SELECT count(*) FROM audio_chunks WHERE satellite_pk = (SELECT pk FROM satellites WHERE id = ?1)",
            [id],
            |r| r.get(0),
        )
        .expect("count")
    })
}

/// Polls `what` for up to `secs` seconds.
async fn eventually(secs: u64, what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    while !ok() {
        assert!(tokio::time::Instant::now() < deadline, "{what} never happened");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_satellite_records_nothing_until_its_clock_is_synchronised() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = station(dir.path(), "garden", 1);
    let synced = dir.path().join("ntp-synchronized");
    std::fs::write(&synced, "no\n").expect("probe file");
    s.clock_sync_command = format!("cat {}", synced.display());
    s.register(&hub.base_url, &owner.email, &["--pace", "fast", "--lat", "52.52", "--lon", "13.405"]);
    s.id = saved_id(&s.config());
    // Heartbeats every 5 s (the minimum), so its filter counts reach the hub soon.
    let (status, body) =
        api.put(&format!("/satellites/{}/config", s.id), json!({"overrides": {"heartbeat_interval_sec": 5}})).await;
    assert_eq!(status, 200, "{body}");
    s.start();

    // Heartbeats go on while it waits: the hub sees it, and measures its clock.
    let v = wait_satellite(&api, &s.id, 60, "a heartbeat", |v| !v["clock_checked_at"].is_null()).await;
    assert_eq!(v["clock_wrong"], false, "{v}");
    let progress = s.data().join("capture").join("dir-progress.json");
    let log = || std::fs::read_to_string(s.log()).unwrap_or_default();
    eventually(60, "the first recording captured", || {
        std::fs::read_to_string(&progress).is_ok_and(|p| p.contains("garden-0.wav"))
    })
    .await;
    eventually(30, "the wait logged", || log().contains("waiting for the system clock to be synchronised")).await;
    assert_eq!(hub_chunks(&hub, &s.id), 0, "nothing recorded with an unsynchronised clock");

    // NTP answers: what is captured from now on is recorded and sent.
    std::fs::write(&synced, "yes\n").expect("probe file");
    eventually(30, "the sync noticed", || log().contains("recording starts")).await;
    s.drop_recording("garden-1.wav");
    eventually(60, "the second recording captured", || {
        std::fs::read_to_string(&progress).is_ok_and(|p| p.contains("garden-1.wav"))
    })
    .await;
    let v = wait_satellite(&api, &s.id, 90, "the second recording sent and stored", |v| {
        let sent = stat(v, "filter_stats", "totalSent");
        sent >= 4 && stat(v, "outbox_stats", "unackedCount") == 0 && hub_chunks(&hub, &s.id) == sent
    })
    .await;
    // The 10 s fixture makes four 3 s chunks (the last 1 s padded): those of the second file only.
    assert_eq!(stat(&v, "filter_stats", "totalProcessed"), 4, "the first file was never recorded: {v}");
    assert_eq!(hub_chunks(&hub, &s.id), 4);
    assert_eq!(log().matches("waiting for the system clock").count(), 1, "the wait is logged once");
}
