//! `GET /system/status` and `GET /workers` (SPEC 2.21, 4.12): from a `full` hub, from an `api` +
//! `dispatcher` pair sharing one data dir (the registry works across the two processes), expiry
//! of a registry entry, deduplication by IP, roles, and team-scoped worker counts.

mod common;

use std::time::Duration;

use birdhub::domain::Role;
use common::{TestHub, assert_error, sat, seed};
use serde_json::{Value, json};

/// Polls `GET path` with `api` until `ok` holds for the body (at most `secs`); returns the last body.
async fn until(api: &common::Api, path: &str, secs: u64, ok: impl Fn(&Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let (status, body) = api.get(path).await;
        assert_eq!(status, 200, "{path}: {body}");
        if ok(&body) || tokio::time::Instant::now() > deadline {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn services<'a>(status: &'a Value, service: &str) -> Vec<&'a Value> {
    status["services"].as_array().expect("services").iter().filter(|s| s["service"] == service).collect()
}

fn sum(workers: &Value, field: &str) -> u64 {
    workers["workers"].as_array().expect("workers").iter().filter_map(|w| w[field].as_u64()).sum()
}

#[tokio::test]
async fn a_full_hub_reports_its_services_infrastructure_and_data() {
    let hub = common::spawn_hub_with(common::with_model).await;
    let root = hub.user("root@example.org", true).await;
    let owner = hub.user("owner@example.org", false).await;
    hub.member_of("viewer@example.org", owner.tenant, Role::Viewer).await;
    let platform = hub.login(&root.email).await;
    let admin = hub.login(&owner.email).await;

    let (status, before) = platform.get("/system/status").await;
    assert_eq!(status, 200, "{before}");
    let clients_before = before["infrastructure"]["mqtt"]["connectedClients"].as_u64().expect("clients");

    // A real satellite connects and sends a real recording.
    let r = sat::register(&admin, json!({"name": "meadow"})).await;
    let mut c = sat::connect(&hub, &r).await;
    assert!(c.subscribe(&format!("{}#", r.prefix)).await);
    let chunk = uuid::Uuid::new_v4().to_string();
    c.publish(&r.topic("audio"), sat::audio_message(&r, &chunk, &sat::warbler_wav(), 48_000, 3000)).await;
    assert_eq!(c.message_on(&r.topic("ack"), 10).await.expect("ack")["status"], "stored");
    c.message_on(&r.topic("detection"), 60).await.expect("a detection");
    // And one heard today (the recording above is from May). "Today" is the hub zone's date and
    // a detection counts on its station's local day: this station is in Pennsylvania (the
    // recording's position), whose date differs from UTC's for hours every night. Noon of the
    // hub's date in New York is on both calendars, whenever the test runs.
    let sat_id = r.id.parse().expect("satellite id");
    let hub_today = chrono::Utc::now().with_timezone(&birdhub::time::hub_zone()).date_naive();
    let noon = hub_today.and_hms_opt(12, 0, 0).expect("noon");
    let noon = chrono::TimeZone::from_local_datetime(&chrono_tz::America::New_York, &noon).single().expect("one noon");
    let today = birdhub::time::Timestamp(noon.with_timezone(&chrono::Utc)).to_string();
    seed::heard(&hub, owner.tenant, sat_id, &today, seed::ROBIN, 0.9).await;

    let (status, s) = platform.get("/system/status").await;
    assert_eq!(status, 200, "{s}");
    let hubs = services(&s, "hub");
    assert_eq!(hubs.len(), 1, "{s}");
    let me = hubs[0];
    assert_eq!((me["status"].clone(), me["thisProcess"].clone()), (json!("ok"), json!(true)));
    assert_eq!(me["instanceId"], hub.state().instance_id.to_string());
    assert_eq!(me["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(me["ip"], "127.0.0.1", "the address the hub serves on");
    assert!(me["memoryBytes"].as_u64().is_some_and(|m| m > 1 << 20), "{me}");
    assert!(me["uptimeSeconds"].as_i64().is_some_and(|u| u >= 0));
    assert_eq!(me["key"], format!("birdhub:registry:hub:{}", hub.state().instance_id));
    let workers = me["details"]["workers"].as_array().expect("workers");
    assert!(!workers.is_empty());
    assert_eq!(workers.iter().filter_map(|w| w["jobsSucceeded"].as_u64()).sum::<u64>(), 1, "{me}");

    let infra = &s["infrastructure"];
    assert_eq!(infra["database"]["status"], "ok");
    assert!(infra["database"]["sizeBytes"].as_u64().is_some_and(|b| b > 0), "{infra}");
    assert!(infra["database"]["walBytes"].is_u64());
    assert!(infra["database"]["latencyMs"].as_f64().is_some_and(|l| l >= 0.0));
    assert_eq!(infra["database"]["journalMode"], "wal");
    assert!(infra["cache"]["entries"].as_u64().is_some_and(|n| n >= 1), "{infra}");
    assert_eq!(infra["mqtt"]["source"], "local");
    assert_eq!(infra["mqtt"]["connectedClients"], clients_before + 1, "the satellite is connected");
    assert!(infra["mqtt"]["messagesReceived"].as_u64().is_some_and(|n| n >= 1), "the audio: {infra}");
    assert!(infra["mqtt"]["messagesPerSecond"].as_f64().is_some_and(|r| r > 0.0), "{infra}");
    let storage = &infra["objectStorage"];
    assert_eq!(storage["status"], "ok");
    assert!(storage["freeBytes"].as_u64().is_some_and(|b| b > 0), "{storage}");
    assert!(storage["totalBytes"].as_u64() >= storage["freeBytes"].as_u64());
    assert_eq!(storage["audioChunks"], 2);
    assert!(storage["usedBytes"].as_u64().is_some_and(|b| b > 2 * 288_000), "two 3 s WAVs: {storage}");

    let data = &s["data"];
    assert_eq!((data["detections"]["total"].clone(), data["detections"]["today"].clone()), (json!(2), json!(1)));
    assert_eq!(data["queue"]["done"], 1, "{data}");
    assert_eq!((data["tenants"].clone(), data["users"].clone()), (json!(2), json!(3)), "{data}");
    assert_eq!(data["satellites"], 1);
    assert!(data["speciesImages"]["total"].is_u64());

    // The satellite leaves: the count falls back.
    c.client.disconnect().await.expect("disconnect");
    let after = until(&platform, "/system/status", 10, |s| {
        s["infrastructure"]["mqtt"]["connectedClients"].as_u64() == Some(clients_before)
    })
    .await;
    assert_eq!(after["infrastructure"]["mqtt"]["connectedClients"], clients_before);

    // Roles: a team admin may not read the status page; a viewer may not list workers.
    assert_error(&admin.get("/system/status").await, 403, "platform_admin_required");
    let viewer = hub.login("viewer@example.org").await;
    assert_eq!(viewer.get("/workers").await.0, 403);
    assert_eq!(hub.anon().get("/system/status").await.0, 401);
}

/// Writes a registry row for a process that is not really running, as another process would.
async fn ghost(hub: &TestHub, service: &str, instance: &str, ip: &str, worker: &str, succeeded: u64) {
    let now = hub.state().clock.now();
    let entry = json!({
        "service": service, "instanceId": instance, "version": "0.0.9",
        "startedAt": "2026-01-01T00:00:00.000Z", "memoryBytes": 1000, "ip": ip, "pid": 1,
        "details": {"workers": [{"id": worker, "status": "idle", "jobsProcessed": succeeded,
            "jobsSucceeded": succeeded, "jobsFailed": 0, "avgDurationMs": 12.5, "lastJobAt": null}]},
    });
    let row = birdhub::store::registry::Row {
        key: format!("birdhub:registry:{service}:{instance}"),
        service: service.into(),
        instance_id: instance.into(),
        info: entry.to_string(),
        seen_at: now.into(),
        expires_at: (now + chrono::Duration::seconds(30)).into(),
    };
    hub.state().store.call(move |c| birdhub::store::registry::upsert(c, &row)).await.expect("row");
}

#[tokio::test]
async fn an_entry_disappears_after_its_ttl_and_one_machine_is_listed_once() {
    let hub = common::spawn_hub().await;
    let root = hub.user("root@example.org", true).await;
    let platform = hub.login(&root.email).await;
    ghost(&hub, "dispatcher", "far-away", "10.0.0.9", "far-0", 7).await;
    // A dispatcher on the hub's own address, refreshed less recently than the hub: not listed twice.
    ghost(&hub, "dispatcher", "same-machine", "127.0.0.1", "old-0", 3).await;

    let (_, s) = platform.get("/system/status").await;
    let dispatchers = services(&s, "dispatcher");
    assert_eq!(dispatchers.len(), 2, "{s}");
    assert!(dispatchers.iter().all(|d| d["status"] == "ok"));
    let (_, w) = platform.get("/workers").await;
    let ids: Vec<&str> = w["workers"].as_array().expect("workers").iter().filter_map(|w| w["id"].as_str()).collect();
    assert!(ids.contains(&"far-0"), "{w}");
    assert!(!ids.contains(&"old-0"), "per IP only the freshest entry: {w}");
    let far = w["workers"].as_array().expect("workers").iter().find(|w| w["id"] == "far-0").expect("far");
    assert_eq!((far["ip"].clone(), far["jobsSucceeded"].clone()), (json!("10.0.0.9"), json!(7)));

    // 25 s without a refresh: listed as stale; past 30 s: gone, while the hub itself stays.
    hub.state().clock.advance(Duration::from_secs(25));
    let (_, s) = platform.get("/system/status").await;
    assert!(services(&s, "dispatcher").iter().all(|d| d["status"] == "stale"), "{s}");
    hub.state().clock.advance(Duration::from_secs(6));
    let (_, s) = platform.get("/system/status").await;
    assert!(services(&s, "dispatcher").is_empty(), "{s}");
    assert_eq!(services(&s, "hub").len(), 1);
    let (_, w) = platform.get("/workers").await;
    assert!(!w["workers"].to_string().contains("far-0"), "{w}");
    let left: i64 = hub.sql(|c| c.query_row("SELECT count(*) FROM service_registry", [], |r| r.get(0)).expect("n"));
    assert!(left <= 3, "expired rows are pruned by the next refresh at the latest");
}

#[tokio::test]
async fn an_api_process_sees_the_dispatchers_instance_and_workers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let shared = dir.path().to_owned();
    let dispatcher = common::spawn_hub_in(dir, |s| {
        common::with_model(s);
        s.mode = birdhub::config::Mode::Dispatcher;
    })
    .await;
    let upstream = format!("127.0.0.1:{}", dispatcher.mqtt_port);
    let api_hub = common::spawn_hub_in(tempfile::TempDir::new_in(&shared).expect("dir"), |s| {
        s.mode = birdhub::config::Mode::Api;
        s.data_dir = shared.clone();
        s.mqtt.upstream = upstream;
    })
    .await;
    let root = api_hub.user("root@example.org", true).await;
    let owner = api_hub.user("owner@example.org", false).await;
    let platform = api_hub.login(&root.email).await;
    let admin = api_hub.login(&owner.email).await;
    let dispatcher_id = dispatcher.state().instance_id.to_string();

    // The dispatcher's workers start once its model is loaded; its next refresh lists them.
    let s = until(&platform, "/system/status", 20, |s| {
        services(s, "dispatcher").iter().any(|d| d["details"]["workers"].as_array().is_some_and(|w| !w.is_empty()))
    })
    .await;
    let d = services(&s, "dispatcher");
    assert_eq!(d.len(), 1, "{s}");
    assert_eq!((d[0]["instanceId"].clone(), d[0]["thisProcess"].clone()), (json!(dispatcher_id), json!(false)));
    assert!(d[0]["details"]["workers"].as_array().is_some_and(|w| !w.is_empty()), "{s}");
    let api = services(&s, "api");
    assert_eq!((api.len(), api[0]["thisProcess"].clone()), (1, json!(true)));
    assert!(api[0]["details"]["workers"].is_null(), "the api process runs no workers");
    assert_eq!(s["infrastructure"]["mqtt"]["source"], "remote");
    assert_eq!(s["infrastructure"]["mqtt"]["instanceId"], dispatcher_id);

    // A chunk classified by the dispatcher shows in the api's /workers at once.
    let r = sat::register(&admin, json!({"name": "split"})).await;
    let mut c = sat::connect(&dispatcher, &r).await;
    assert!(c.subscribe(&format!("{}#", r.prefix)).await);
    let chunk = uuid::Uuid::new_v4().to_string();
    c.publish(&r.topic("audio"), sat::audio_message(&r, &chunk, &sat::warbler_wav(), 48_000, 3000)).await;
    c.message_on(&r.topic("detection"), 60).await.expect("a detection");
    let w = until(&platform, "/workers", 10, |w| sum(w, "jobsSucceeded") == 1).await;
    assert_eq!(sum(&w, "jobsSucceeded"), 1, "{w}");
    assert!(w["workers"].as_array().expect("workers").iter().all(|w| w["instanceId"] == dispatcher_id.as_str()));
    let (_, mine) = admin.get("/workers").await;
    assert_eq!(sum(&mine, "jobsSucceeded"), 1, "the team's own job: {mine}");
    let s = until(&platform, "/system/status", 15, |s| {
        s["infrastructure"]["mqtt"]["connectedClients"].as_u64().is_some_and(|n| n >= 2)
    })
    .await;
    assert!(
        s["infrastructure"]["mqtt"]["connectedClients"].as_u64().is_some_and(|n| n >= 2),
        "the satellite and the api's own client, as the dispatcher reports: {s}"
    );
    assert_eq!(s["data"]["detections"]["total"], 1);
}

#[tokio::test]
async fn a_team_admin_sees_only_the_teams_own_worker_counts() {
    let hub = common::spawn_hub_with(common::with_model).await;
    let root = hub.user("root@example.org", true).await;
    let a = hub.user("a@example.org", false).await;
    let b = hub.user("b@example.org", false).await;
    let (sat_a, sat_b) = (seed::satellite(&hub, a.tenant, "a").await, seed::satellite(&hub, b.tenant, "b").await);
    for at in ["2026-05-15T06:30:00Z", "2026-05-15T06:30:03Z"] {
        seed::chunk(&hub, a.tenant, sat_a, at).await;
    }
    seed::chunk(&hub, b.tenant, sat_b, "2026-05-15T06:30:00Z").await;
    hub.state().job_signal.notify();
    let platform = hub.login(&root.email).await;
    let all = until(&platform, "/workers", 60, |w| sum(w, "jobsProcessed") == 3).await;
    assert_eq!(sum(&all, "jobsProcessed"), 3, "the platform admin sees every job: {all}");

    let (_, wa) = hub.login(&a.email).await.get("/workers").await;
    let (_, wb) = hub.login(&b.email).await.get("/workers").await;
    assert_eq!((sum(&wa, "jobsProcessed"), sum(&wa, "jobsSucceeded")), (2, 2), "{wa}");
    assert_eq!((sum(&wb, "jobsProcessed"), sum(&wb, "jobsSucceeded")), (1, 1), "{wb}");
    assert_eq!((wa["queue"]["done"].clone(), wb["queue"]["done"].clone()), (json!(2), json!(1)));
    assert_eq!(wa["workers"].as_array().map(Vec::len), all["workers"].as_array().map(Vec::len), "same workers");
    let busy: Vec<&Value> =
        wa["workers"].as_array().expect("workers").iter().filter(|w| w["jobsProcessed"] != 0).collect();
    assert!(busy.iter().all(|w| w["avgDurationMs"].as_f64().is_some_and(|ms| ms > 0.0)), "{wa}");
    // The jobs list stays the team's own too.
    let (_, jobs) = hub.login(&b.email).await.get("/workers/jobs").await;
    assert_eq!(jobs["jobs"].as_array().map(Vec::len), Some(1));
}
