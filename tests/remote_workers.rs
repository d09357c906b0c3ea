//! Remote inference workers (issue 49) on the embedded broker, with real `birdhub worker`
//! processes and the real model: a coordinator (`inference.workers = 0`) runs the whole pipeline
//! through one; a worker killed or a hub restarted while jobs are out loses and doubles nothing;
//! a late result is dropped; a revoked worker is dropped; a worker with another label set is
//! refused at join; and a worker key cannot take or forge what is not its own. Every scenario
//! runs twice: on the embedded broker, and on a real mosquitto with dynamic security
//! (`mqtt.external`).

mod common;

use std::time::Duration;

use birdhub::config::WorkerCount;
use common::{
    Api, TestHub,
    chunks::{cut, send, wait_counter},
    mosquitto_broker::Mosquitto,
    process,
    receiver::Receiver,
    sat,
    workers::{self, Fake},
};
use serde_json::{Value, json};

const WARBLER: &str = "leiothlypis_peregrina";

/// A coordinator: the model directory (for labels and the range model), no model threads, and
/// a lease short enough for the fault tests to finish soon, long enough for an unoptimised test
/// build's worker to answer a batch on a busy machine.
fn coordinator(s: &mut birdhub::config::Settings) {
    common::with_model(s);
    s.inference.workers = WorkerCount::Threads(0);
    s.inference.lease_seconds = 20;
}

/// Which broker the satellites, workers and hub meet on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum On {
    Embedded,
    Mosquitto,
}

/// A hub, the broker port clients use, and the mosquitto it runs on (if any).
struct Rig {
    hub: TestHub,
    port: u16,
    broker: Option<Mosquitto>,
}

impl std::ops::Deref for Rig {
    type Target = TestHub;
    fn deref(&self) -> &TestHub {
        &self.hub
    }
}

async fn rig(on: On, adjust: impl FnOnce(&mut birdhub::config::Settings)) -> Rig {
    match on {
        On::Embedded => {
            let hub = common::spawn_hub_with(adjust).await;
            Rig { port: hub.mqtt_port, hub, broker: None }
        }
        On::Mosquitto => {
            let broker = Mosquitto::start().await;
            let hub = common::spawn_hub_with(|s| {
                adjust(s);
                broker.configure(s);
            })
            .await;
            Rig { port: broker.port, hub, broker: Some(broker) }
        }
    }
}

/// Every scenario, once per broker.
macro_rules! on_both_brokers {
    ($($scenario:ident),* $(,)?) => {
        $(
            mod $scenario {
                #[tokio::test]
                async fn embedded() {
                    super::$scenario(super::On::Embedded).await
                }
                #[tokio::test]
                async fn mosquitto() {
                    super::$scenario(super::On::Mosquitto).await
                }
            }
        )*
    };
}

on_both_brokers!(
    a_coordinator_and_one_remote_worker_run_the_whole_pipeline,
    a_worker_killed_while_holding_jobs_loses_and_doubles_nothing,
    a_hub_restarted_while_workers_hold_jobs_finishes_each_once,
    a_result_after_the_lease_is_dropped_and_the_job_done_once_elsewhere,
    a_revoked_worker_is_disconnected_refused_and_stops,
    a_worker_with_another_label_set_is_refused_at_join_with_both_named,
    a_worker_key_can_neither_take_nor_forge_what_is_not_its_own,
    a_worker_gets_its_first_offer_once_subscribed_not_a_lease_later,
);

async fn admin(hub: &TestHub) -> Api {
    let admin = hub.user("admin@example.org", true).await;
    hub.login(&admin.email).await
}

/// Waits until the hub lists the worker as joined.
async fn wait_joined(hub: &TestHub, id: &str, secs: u64) {
    for _ in 0..secs * 10 {
        if hub.state().remote.snapshot().iter().any(|w| w.id.to_string() == id && w.connected) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("worker {id} never joined: {:?}", hub.state().remote.snapshot());
}

/// Per chunk, how many detections it has, and how many jobs are done.
fn tally(hub: &TestHub) -> (Vec<i64>, i64) {
    hub.sql(|c| {
        let mut stmt = c
            .prepare(
                "SELECT (SELECT count(*) FROM detections d JOIN audio_chunks a ON a.pk = d.chunk_pk
                         WHERE a.id = j.chunk_id)
                 FROM inference_jobs j ORDER BY j.created_at",
            )
            .expect("prepare");
        let per: Vec<i64> = stmt.query_map([], |r| r.get(0)).expect("query").map(|r| r.expect("row")).collect();
        let done =
            c.query_row("SELECT count(*) FROM inference_jobs WHERE status = 'done'", [], |r| r.get(0)).expect("count");
        (per, done)
    })
}

async fn wait_done(hub: &TestHub, n: i64, secs: u64) {
    for _ in 0..secs * 10 {
        if tally(hub).1 >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("only {} of {n} jobs done: {:?}", tally(hub).1, hub.state().remote.snapshot());
}

/// A team whose satellite sends chunks; second looks off where a test counts detections.
async fn team(hub: &Rig, second_look: bool) -> (Api, sat::Registered, sat::Client) {
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let r = sat::register(&api, json!({"name": "hemlock ridge"})).await;
    let mut c = sat::connect_as(hub.port, &r.client_id, &r.id, &r.password).await;
    assert!(matches!(c.next(10).await, Some(sat::Seen::Connected)), "the satellite connects");
    assert!(c.subscribe(&format!("{}#", r.prefix)).await);
    if !second_look {
        let (status, body) =
            api.put("/settings/tenant", json!({"second_look_enabled": false, "not_expected_action": "flag"})).await;
        assert_eq!(status, 200, "{body}");
    }
    (api, r, c)
}

async fn a_coordinator_and_one_remote_worker_run_the_whole_pipeline(on: On) {
    let hub = rig(on, coordinator).await;
    let platform = admin(&hub).await;
    let key = workers::mint(&platform, "study desktop").await;
    let logs = tempfile::tempdir().expect("tmp");
    let mut worker = workers::spawn(hub.port, &key, &workers::model_dir(), &logs.path().join("w.log"));
    wait_joined(&hub, &key.id, 60).await;

    let (api, r, mut c) = team(&hub, true).await;
    let rx = Receiver::start(Some("k")).await;
    let hook = api
        .create(
            "/alert-rules/channels",
            json!({"type": "webhook", "name": "Hook", "config": {"url": rx.url("/hook"), "secret": "k"}}),
        )
        .await;
    api.create("/alert-rules/rules", json!({"name": "Any bird", "trigger": "detection", "channelIds": [hook["id"]]}))
        .await;
    let token = hub.token("owner@example.org").await;
    let url = format!("ws://{}/api/ws/events?tenantId={}&token={token}", hub.http_addr, r.tenant);
    let (mut ws, _) = tokio_tungstenite::connect_async(url.as_str()).await.expect("websocket");
    let (status, body) = api
        .put(
            "/settings/tenant",
            json!({"min_confidence": 0.4, "second_look_min_confidence": 0.6, "not_expected_action": "flag"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");

    // The detection controls' scenario, with the network on another process: 0-3 s holds a
    // Bay-breasted Warbler that no second look confirms, 3-6 s a Tennessee Warbler that one does.
    send(&mut c, &r, &cut(0.0, 3.0), 0).await;
    send(&mut c, &r, &cut(3.0, 3.0), 3).await;
    let got = wait_counter(&api, &r.id, "secondLookConfirmed", 1).await;
    let got =
        if got["secondLookDiscarded"] == 0 { wait_counter(&api, &r.id, "secondLookDiscarded", 1).await } else { got };
    assert_eq!((got["secondLookConfirmed"].clone(), got["secondLookDiscarded"].clone()), (json!(1), json!(1)), "{got}");
    let d = c.message_on(&r.topic("detection"), 30).await.expect("the confirmed warbler on MQTT");
    assert_eq!(d["speciesCode"], WARBLER, "{d}");
    let frame = loop {
        use futures_util::StreamExt;
        let m = tokio::time::timeout(Duration::from_secs(30), ws.next()).await.expect("a frame").expect("open");
        let v: Value = serde_json::from_str(m.expect("frame").to_text().unwrap_or("{}")).unwrap_or_default();
        if v["type"] == "detection" {
            break v;
        }
    };
    assert_eq!(frame["data"]["speciesCode"], WARBLER);
    let hooks = rx.wait_for(1, 30).await;
    let body = String::from_utf8_lossy(&hooks[0].body);
    assert!(body.contains("Tennessee Warbler"), "the alert went out: {body}");

    // The dashboard's view of the worker.
    let (status, listed) = platform.get("/workers").await;
    assert_eq!(status, 200, "{listed}");
    let remote = &listed["remote"][0];
    assert_eq!(remote["name"], "study desktop", "{listed}");
    assert_eq!((remote["machine"].clone(), remote["model"].clone()), (json!("test-machine"), json!("birdnet-v2.4")));
    assert_eq!((remote["precision"].clone(), remote["threads"].clone()), (json!("fp32"), json!(1)));
    assert_eq!(remote["connected"], true);
    assert!(remote["jobsDone"].as_u64().is_some_and(|n| n >= 2), "{remote}");
    assert!(remote["jobsPerMinute"].as_u64().is_some_and(|n| n >= 2), "{remote}");
    let (_, team_view) = api.get("/workers").await;
    assert_eq!(team_view["remote"], json!([]), "a team admin does not see the hub's machines");
    let (status, _) = api.get("/workers/keys").await;
    assert_eq!(status, 403, "only a platform admin handles worker keys");

    // SIGTERM: the worker leaves cleanly.
    worker.signal("TERM");
    assert_eq!(worker.exit_code(20).await, Some(0));
}

async fn a_worker_killed_while_holding_jobs_loses_and_doubles_nothing(on: On) {
    let hub = rig(on, coordinator).await;
    let platform = admin(&hub).await;
    let (first, second) = (workers::mint(&platform, "first").await, workers::mint(&platform, "second").await);
    let logs = tempfile::tempdir().expect("tmp");
    let (_api, r, mut c) = team(&hub, false).await;
    let warbler = cut(3.0, 3.0);
    let chunks = 24;
    for i in 0..chunks {
        send(&mut c, &r, &warbler, i * 3).await;
    }
    let mut a = workers::spawn(hub.port, &first, &workers::model_dir(), &logs.path().join("a.log"));
    wait_joined(&hub, &first.id, 60).await;
    // Kill it once it is working through the queue: it holds offers while jobs remain.
    for _ in 0..600 {
        if tally(&hub).1 >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let done_before = tally(&hub).1;
    assert!(done_before < chunks, "the queue was not drained before the kill");
    a.signal("KILL");
    let mut b = workers::spawn(hub.port, &second, &workers::model_dir(), &logs.path().join("b.log"));
    wait_done(&hub, chunks, 120).await;
    let (per_chunk, done) = tally(&hub);
    assert_eq!(done, chunks);
    assert_eq!(per_chunk, vec![1; chunks as usize], "every chunk has its one warbler, none twice");
    let held_by_b = hub.state().remote.snapshot().iter().find(|w| w.id.to_string() == second.id).map(|w| w.jobs_done);
    assert!(held_by_b.is_some_and(|n| n >= (chunks - done_before) as u64), "{held_by_b:?}");
    b.signal("TERM");
    assert_eq!(b.exit_code(20).await, Some(0));
}

async fn a_hub_restarted_while_workers_hold_jobs_finishes_each_once(on: On) {
    // The embedded broker comes back on the same port, as an installed hub's does.
    let fixed = process::free_port();
    let on_port = move |s: &mut birdhub::config::Settings| {
        coordinator(s);
        s.mqtt.bind = format!("127.0.0.1:{fixed}").parse().expect("addr");
    };
    let hub = rig(on, on_port).await;
    let port = hub.port;
    let platform = admin(&hub).await;
    let (one, two) = (workers::mint(&platform, "one").await, workers::mint(&platform, "two").await);
    let logs = tempfile::tempdir().expect("tmp");
    let (_api, r, mut c) = team(&hub, false).await;
    let warbler = cut(3.0, 3.0);
    let chunks = 24;
    for i in 0..chunks {
        send(&mut c, &r, &warbler, i * 3).await;
    }
    drop(c);
    let mut w1 = workers::spawn(port, &one, &workers::model_dir(), &logs.path().join("1.log"));
    let mut w2 = workers::spawn(port, &two, &workers::model_dir(), &logs.path().join("2.log"));
    wait_joined(&hub, &one.id, 60).await;
    wait_joined(&hub, &two.id, 60).await;
    for _ in 0..600 {
        if tally(&hub).1 >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(tally(&hub).1 < chunks, "the queue was not drained before the restart");
    let Rig { hub, port, broker } = hub;
    let dir = hub.stop_keeping_data().await;
    let hub = common::spawn_hub_in(dir, |s| {
        on_port(s);
        if let Some(b) = &broker {
            b.configure(s);
        }
    })
    .await;
    let hub = Rig { hub, port, broker };
    // The workers find the hub again on their own and finish the queue.
    wait_done(&hub, chunks, 180).await;
    let (per_chunk, done) = tally(&hub);
    assert_eq!(done, chunks);
    assert_eq!(per_chunk, vec![1; chunks as usize], "every chunk has its one warbler, none twice");
    for w in [&mut w1, &mut w2] {
        w.signal("TERM");
        assert_eq!(w.exit_code(20).await, Some(0));
    }
}

async fn a_result_after_the_lease_is_dropped_and_the_job_done_once_elsewhere(on: On) {
    let hub = rig(on, |s| {
        coordinator(s);
        s.inference.lease_seconds = 8;
    })
    .await;
    let platform = admin(&hub).await;
    let (slow_key, real_key) = (workers::mint(&platform, "slow").await, workers::mint(&platform, "real").await);
    let mut slow = Fake::connect(hub.port, &slow_key).await;
    assert!(matches!(slow.next(10).await, Some(workers::Seen::Connected)));
    let answer = slow.join(&workers::labels()).await;
    assert_eq!(answer["accepted"], true, "{answer}");
    let jobs = answer["jobs"].as_str().expect("jobs").to_owned();
    assert!(slow.subscribe(&jobs).await);

    let (_api, r, mut c) = team(&hub, false).await;
    send(&mut c, &r, &cut(3.0, 3.0), 0).await;
    let offer = slow.raw_on("birdhub/_work/jobs", 30).await.expect("the slow worker gets the offer");
    let job = birdhub::inference::remote::wire::decode_job(&offer).expect("a job");
    slow.client.unsubscribe(jobs).await.expect("unsubscribe");
    // Past the lease the job goes back to the queue; a real worker does it.
    let logs = tempfile::tempdir().expect("tmp");
    let mut real = workers::spawn(hub.port, &real_key, &workers::model_dir(), &logs.path().join("r.log"));
    wait_done(&hub, 1, 90).await;
    let late_before = hub.state().remote.traffic().late_or_unknown;
    // The slow worker's answer comes now: well-formed, with the token it was given, and too late.
    let scores = vec![vec![5.0f32; 6522]; job.windows.len()];
    assert!(
        slow.publish(&slow.topic("result"), birdhub::inference::remote::wire::encode_result(&job.token, &scores, 1.0))
            .await
    );
    for _ in 0..50 {
        if hub.state().remote.traffic().late_or_unknown > late_before {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(hub.state().remote.traffic().late_or_unknown, late_before + 1, "the late result was dropped");
    let (per_chunk, done) = tally(&hub);
    assert_eq!((per_chunk, done), (vec![1], 1), "the job was done once, by the real worker");
    real.signal("TERM");
    assert_eq!(real.exit_code(20).await, Some(0));
}

async fn a_revoked_worker_is_disconnected_refused_and_stops(on: On) {
    let hub = rig(on, coordinator).await;
    let platform = admin(&hub).await;
    let (fake_key, real_key) = (workers::mint(&platform, "fake").await, workers::mint(&platform, "real").await);
    let mut fake = Fake::connect(hub.port, &fake_key).await;
    assert!(matches!(fake.next(10).await, Some(workers::Seen::Connected)));
    assert_eq!(fake.join(&workers::labels()).await["accepted"], true);
    let logs = tempfile::tempdir().expect("tmp");
    let mut real = workers::spawn(hub.port, &real_key, &workers::model_dir(), &logs.path().join("r.log"));
    wait_joined(&hub, &real_key.id, 60).await;

    for key in [&fake_key, &real_key] {
        let (status, _) = platform.delete(&format!("/workers/keys/{}", key.id)).await;
        assert_eq!(status, 204);
    }
    let dropped = loop {
        match fake.next(10).await {
            Some(workers::Seen::Disconnected(why)) => break why,
            Some(_) => continue,
            None => panic!("the revoked worker stayed connected"),
        }
    };
    assert!(!dropped.is_empty());
    assert!(!hub.state().remote.is_joined(fake_key.id.parse().expect("id")), "nothing it sends is read");
    let mut again = Fake::connect(hub.port, &fake_key).await;
    assert!(matches!(again.next(10).await, Some(workers::Seen::Refused(_))), "its key no longer logs in");
    // The real worker is dropped too, finds its key refused, and stops with status 2.
    assert_eq!(real.exit_code(60).await, Some(2));
    let (_, keys) = platform.get("/workers/keys").await;
    let keys = keys["keys"].as_array().expect("keys");
    assert!(keys.iter().all(|k| k["revokedAt"].is_string() && k["connected"] == false), "{keys:?}");
    assert!(keys.iter().all(|k| k.get("key").is_none() && !k.to_string().contains("bhw.")), "no secret is listed");
    let (status, body) = platform.delete(&format!("/workers/keys/{}", uuid::Uuid::new_v4())).await;
    assert_eq!((status.as_u16(), body["code"].clone()), (404, json!("worker_key_not_found")));
}

async fn a_worker_with_another_label_set_is_refused_at_join_with_both_named(on: On) {
    let hub = rig(on, coordinator).await;
    let platform = admin(&hub).await;
    let key = workers::mint(&platform, "old model").await;
    // The same model files with one label renamed: another label set.
    let model = workers::model_dir();
    let other = tempfile::tempdir().expect("tmp");
    for entry in std::fs::read_dir(&model).expect("model dir") {
        let entry = entry.expect("entry");
        if entry.file_name() != "labels" {
            std::os::unix::fs::symlink(entry.path(), other.path().join(entry.file_name())).expect("link");
        }
    }
    std::fs::create_dir(other.path().join("labels")).expect("labels");
    let en = std::fs::read_to_string(model.join("labels/en.txt")).expect("labels");
    std::fs::write(other.path().join("labels/en.txt"), en.replacen("Tennessee Warbler", "Tennessee Singer", 1))
        .expect("write");

    let log = other.path().join("w.log");
    let mut worker = workers::spawn(hub.port, &key, other.path(), &log);
    assert_eq!(worker.exit_code(60).await, Some(2), "{}", std::fs::read_to_string(&log).unwrap_or_default());
    let said = std::fs::read_to_string(&log).expect("log");
    let mine = birdhub::inference::remote::labels_fingerprint(other.path()).expect("fingerprint");
    let hubs = workers::labels();
    assert!(said.contains(&mine[..12]) && said.contains(&hubs[..12]), "both label sets are named: {said}");
    assert!(!hub.state().remote.is_joined(key.id.parse().expect("id")));
}

async fn a_worker_key_can_neither_take_nor_forge_what_is_not_its_own(on: On) {
    let hub = rig(on, coordinator).await;
    let platform = admin(&hub).await;
    let (key, other) = (workers::mint(&platform, "evil").await, workers::mint(&platform, "honest").await);
    let (_api, r, _c) = team(&hub, false).await;
    let mut evil = Fake::connect(hub.port, &key).await;
    assert!(matches!(evil.next(10).await, Some(workers::Seen::Connected)));
    let shared = "$share/birdhub-workers/birdhub/_work/jobs";
    // The embedded broker gives the job group only after the hub accepted the join; mosquitto's
    // role allows it from the login on (docs/security.md, "With an existing mosquitto").
    assert_eq!(evil.subscribe(shared).await, on == On::Mosquitto, "the job group before the join");
    if on == On::Mosquitto {
        evil.client.unsubscribe(shared).await.expect("unsubscribe");
    }
    for filter in [
        "birdhub/_work/jobs",
        "$share/evil/birdhub/_work/jobs",
        "#",
        "birdhub/#",
        &format!("{}#", r.prefix),
        &format!("birdhub/_work/{}/control", other.id),
    ] {
        assert!(!evil.subscribe(filter).await, "{filter} was granted");
    }
    let forged =
        birdhub::inference::remote::wire::encode_result("0123456789abcdef0123456789abcdef", &[vec![9.0f32; 6522]], 1.0);
    for topic in [
        format!("birdhub/_work/{}/result", other.id),
        r.topic("audio"),
        r.topic("detection"),
        "birdhub/_work/jobs".to_owned(),
    ] {
        assert!(!evil.publish(&topic, forged.clone()).await, "publishing on {topic} was accepted");
    }
    assert_eq!(evil.join(&workers::labels()).await["accepted"], true);
    assert!(evil.subscribe(shared).await, "the job subscription, once joined");
    // A result for a job it never held: the broker takes it (its own topic), the hub drops it.
    let before = hub.state().remote.traffic();
    assert!(evil.publish(&evil.topic("result"), forged).await);
    let junk = b"BHR1\xff\xff\xff\xff".to_vec();
    assert!(evil.publish(&evil.topic("result"), junk).await);
    for _ in 0..50 {
        let t = hub.state().remote.traffic();
        if t.late_or_unknown > before.late_or_unknown && t.refused > before.refused {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let after = hub.state().remote.traffic();
    assert_eq!(after.late_or_unknown, before.late_or_unknown + 1, "the forged result was dropped");
    assert_eq!(after.refused, before.refused + 1, "the unreadable one refused");
    assert_eq!(hub.sql(|c| c.query_row("SELECT count(*) FROM detections", [], |r| r.get::<_, i64>(0)).expect("n")), 0);
}

/// The hub offers nothing to a joined worker until it says its jobs subscription is in place.
/// Before, the offers for a waiting queue went out the moment the join was accepted, reached a
/// group the worker had not joined yet, and waited out their whole lease (a drain stalled 30 s).
async fn a_worker_gets_its_first_offer_once_subscribed_not_a_lease_later(on: On) {
    let hub = rig(on, |s| {
        coordinator(s);
        s.inference.lease_seconds = 120;
    })
    .await;
    let platform = admin(&hub).await;
    let key = workers::mint(&platform, "careful").await;
    let (_api, r, mut c) = team(&hub, false).await;
    for i in 0..3 {
        send(&mut c, &r, &cut(3.0, 3.0), i * 3).await;
    }
    let mut worker = Fake::connect(hub.port, &key).await;
    assert!(matches!(worker.next(10).await, Some(workers::Seen::Connected)));
    let answer = worker.join(&workers::labels()).await;
    assert_eq!(answer["accepted"], true, "{answer}");
    // A worker on a slow link: its subscription takes a moment to reach the broker.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(hub.state().remote.traffic().offers, 0, "an offer went out before the worker could receive it");
    let jobs = answer["jobs"].as_str().expect("jobs").to_owned();
    assert!(worker.subscribe(&jobs).await);
    let ready = json!({"jobs": 0, "ready": true}).to_string().into_bytes();
    assert!(worker.publish(&worker.topic("status"), ready).await);
    let offer = worker.raw_on("birdhub/_work/jobs", 15).await.expect("the queued chunks are offered once subscribed");
    let job = birdhub::inference::remote::wire::decode_job(&offer).expect("a job");
    let scores = vec![vec![-8.0f32; 6522]; job.windows.len()];
    let result = birdhub::inference::remote::wire::encode_result(&job.token, &scores, 1.0);
    assert!(worker.publish(&worker.topic("result"), result).await);
    wait_done(&hub, job.windows.len() as i64, 30).await;
}
