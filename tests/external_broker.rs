//! `mqtt.external`: satellites, workers and the hub all on a real mosquitto 2 (Debian's, with the
//! dynamic-security plugin), whose logins the hub makes and deletes as satellites and worker keys
//! come and go.

mod common;

use common::{
    TestHub,
    mosq::{self, Sub},
    mosquitto_broker::Mosquitto,
    sat::{self, Registered, Seen},
};
use serde_json::json;

/// A hub on `broker` instead of the embedded one.
async fn hub_on(broker: &Mosquitto) -> TestHub {
    common::spawn_hub_with(|s| broker.configure(s)).await
}

/// Waits until the client's connection ends; what it ended with.
async fn ended(c: &mut sat::Client) -> Option<String> {
    for _ in 0..100 {
        match c.next(20).await? {
            Seen::Disconnected(why) | Seen::Refused(why) => return Some(why),
            _ => continue,
        }
    }
    None
}

/// Whether a fresh connection with these credentials is accepted.
async fn accepted(broker: &Mosquitto, client_id: &str, user: &str, password: &str) -> bool {
    let mut c = sat::connect_as(broker.port, client_id, user, password).await;
    match c.next(10).await {
        Some(Seen::Connected) => true,
        Some(Seen::Refused(_)) | Some(Seen::Disconnected(_)) => false,
        other => panic!("no answer to CONNECT: {other:?}"),
    }
}

async fn connected(broker: &Mosquitto, r: &Registered) -> sat::Client {
    let mut c = sat::connect_as(broker.port, &r.client_id, &r.id, &r.password).await;
    match c.next(10).await {
        Some(Seen::Connected) => c,
        other => panic!("the satellite could not log in to mosquitto: {other:?}\n{}", broker.log()),
    }
}

/// `mosquitto_pub`/`mosquitto_sub` login arguments for a satellite, MQTT 5.
fn v5_login<'a>(port: &'a str, r: &'a Registered) -> Vec<&'a str> {
    vec!["-h", "127.0.0.1", "-p", port, "-V", "mqttv5", "-u", &r.id, "-P", &r.password, "-i", &r.client_id]
}

#[tokio::test]
async fn a_satellite_registered_through_the_api_sends_audio_through_mosquitto_and_gets_its_ack() {
    let broker = Mosquitto::start().await;
    let hub = hub_on(&broker).await;
    assert!(hub.hub().mqtt_addr.is_none(), "no embedded broker runs");
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let (status, body) = api.post("/satellites", json!({"name": "garden"})).await;
    assert_eq!(status, 201, "{body}");
    // mosquitto on this machine: its port under the hub's LAN name.
    let url = body["mqtt"]["brokerUrl"].as_str().expect("brokerUrl");
    assert!(url.ends_with(&format!(".local:{}", broker.port)), "satellites are sent to mosquitto: {url}");
    let r = sat::register(&api, json!({"name": "porch"})).await;

    let mut c = connected(&broker, &r).await;
    assert!(c.subscribe(&r.topic("ack")).await, "its own ack topic");
    let chunk = uuid::Uuid::new_v4().to_string();
    c.publish(&r.topic("audio"), sat::audio_message(&r, &chunk, &sat::tone_wav(48_000, 3.0), 48_000, 3000)).await;
    let ack = c.message_on(&r.topic("ack"), 30).await.unwrap_or_else(|| panic!("no ack\n{}", broker.log()));
    assert_eq!(ack, json!({"chunkId": chunk, "status": "stored"}));
    // A config request is answered on the satellite's config topic, through mosquitto.
    assert!(c.subscribe(&r.topic("config")).await);
    let request = json!({"satelliteId": r.id, "tenantId": r.tenant, "overrides": {}}).to_string();
    c.publish(&r.topic("config-request"), request).await;
    let config = c.message_on(&r.topic("config"), 30).await.expect("config pushed");
    assert_eq!(config["satelliteId"], json!(r.id));
}

#[tokio::test]
async fn a_satellite_can_neither_publish_nor_subscribe_in_another_tree_on_mosquitto() {
    let broker = Mosquitto::start().await;
    let hub = hub_on(&broker).await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let (me, neighbour) =
        (sat::register(&api, json!({"name": "me"})).await, sat::register(&api, json!({"name": "neighbour"})).await);
    let port = broker.port.to_string();

    // MQTT 5: the publish is refused with "not authorized".
    let mut args = v5_login(&port, &me);
    let foreign = neighbour.topic("heartbeat");
    args.extend(["-q", "1", "-t", &foreign, "-m", "{}"]);
    let (_, said) = mosq::publish(&args).await;
    assert!(said.contains("RC:135") || said.contains("Not authorized"), "{said}");
    // ... and so is a subscription to the neighbour's tree, to the team's, and to everything.
    for filter in [neighbour.topic("ack"), format!("birdhub/{}/+/ack", me.tenant), "#".into(), "birdhub/#".into()] {
        let mut args = v5_login(&port, &me);
        args.extend(["-t", &filter, "-C", "1", "-W", "3"]);
        let out = tokio::process::Command::new(mosq::tool("mosquitto_sub")).args(&args).output().await.expect("sub");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(said.contains("All subscription requests were denied"), "{filter}: {said}");
    }
    // Its own tree is open to it; its login works with its own client id only.
    let mut own = v5_login(&port, &me);
    let tree = me.topic("#");
    own.extend(["-t", &tree, "-W", "30"]);
    Sub::start(&own).await.stop().await;
    assert!(!accepted(&broker, &neighbour.client_id, &me.id, &me.password).await, "another client id");
    assert!(!accepted(&broker, &me.client_id, &me.id, "0".repeat(64).as_str()).await, "a wrong password");
}

#[tokio::test]
async fn re_registering_or_deleting_a_satellite_drops_it_from_mosquitto() {
    let broker = Mosquitto::start().await;
    let hub = hub_on(&broker).await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let old = sat::register(&api, json!({"name": "shed", "deviceId": "pi-shed"})).await;
    let mut session = connected(&broker, &old).await;

    // New credentials: the old session is dropped and the old password refused.
    let new = sat::register(&api, json!({"name": "shed", "deviceId": "pi-shed"})).await;
    assert_eq!(new.id, old.id);
    assert!(ended(&mut session).await.is_some(), "the old session is dropped");
    assert!(!accepted(&broker, &old.client_id, &old.id, &old.password).await, "the old password is refused");
    let mut session = connected(&broker, &new).await;

    // Deleted: the session is dropped, the login refused, and mosquitto no longer knows it.
    let (status, body) = api.delete(&format!("/satellites/{}", new.id)).await;
    assert_eq!(status, 204, "{body}");
    assert!(ended(&mut session).await.is_some(), "the deleted satellite is disconnected");
    assert!(!accepted(&broker, &new.client_id, &new.id, &new.password).await, "its login is refused");
    assert!(!broker.clients().contains(&new.id), "its login is deleted: {:?}", broker.clients());
}

#[tokio::test]
async fn a_worker_key_logs_in_to_mosquitto_joins_through_the_hub_and_is_dropped_when_revoked() {
    let broker = Mosquitto::start().await;
    let hub = hub_on(&broker).await;
    let admin = hub.user("admin@example.org", true).await;
    let api = hub.login(&admin.email).await;
    let (status, body) = api.post("/workers/keys", json!({"name": "desk"})).await;
    assert_eq!(status, 201, "{body}");
    let (id, secret) = birdhub::inference::remote::parse_key(body["key"].as_str().expect("key")).expect("a key");
    let name = format!("worker-{id}");

    let mut worker = sat::connect_as(broker.port, &name, &name, &secret).await;
    assert!(matches!(worker.next(10).await, Some(Seen::Connected)), "the key's login works\n{}", broker.log());
    let control = format!("birdhub/_work/{id}/control");
    assert!(worker.subscribe(&control).await, "its control topic");
    assert!(worker.subscribe("$share/birdhub-workers/birdhub/_work/jobs").await, "the hub's job group");
    for denied in ["$share/mine/birdhub/_work/jobs", "birdhub/_work/jobs", "birdhub/#", "birdhub/_work/+/control"] {
        assert!(!worker.subscribe(denied).await, "{denied}");
    }
    // A status from a worker the hub does not count as joined (as after a hub restart, which
    // mosquitto does not tell it about) is answered: join again.
    worker.publish(&format!("birdhub/_work/{id}/status"), br#"{"jobs":0}"#.to_vec()).await;
    let answer = worker.message_on(&control, 30).await.expect("the hub asks it to join");
    assert_eq!((&answer["accepted"], &answer["retry"]), (&json!(false), &json!(true)), "{answer}");
    // Its hello reaches the hub, which answers on its control topic (an unreadable one: refused).
    worker.publish(&format!("birdhub/_work/{id}/hello"), b"{}".to_vec()).await;
    let answer = worker.message_on(&control, 30).await.expect("the hub answers the join");
    assert_eq!((&answer["accepted"], &answer["retry"]), (&json!(false), &json!(false)), "{answer}");

    let (status, body) = api.delete(&format!("/workers/keys/{id}")).await;
    assert_eq!(status, 204, "{body}");
    assert!(ended(&mut worker).await.is_some(), "the revoked worker is disconnected");
    assert!(!accepted(&broker, &name, &name, &secret).await, "and refused from then on");
}

#[tokio::test]
async fn at_start_the_hub_deletes_its_logins_that_the_database_no_longer_knows() {
    let broker = Mosquitto::start().await;
    let stale = uuid::Uuid::new_v4().to_string();
    let role = format!("birdhub-sat-{stale}");
    for args in [
        vec!["createRole", role.as_str()],
        vec!["createClient", stale.as_str(), "-p", "pw"],
        vec!["addClientRole", stale.as_str(), role.as_str()],
        vec!["createClient", "homeassistant", "-p", "pw"],
    ] {
        let (ok, out) = broker.ctrl(&args);
        assert!(ok, "{args:?}: {out}");
    }
    let hub = hub_on(&broker).await;
    let clients = broker.clients();
    assert!(!clients.contains(&stale), "the stale satellite login is deleted: {clients:?}");
    assert!(clients.contains(&"homeassistant".to_owned()), "another program's login is left alone: {clients:?}");
    drop(hub);
}

#[tokio::test]
async fn the_hub_reconnects_by_itself_when_mosquitto_restarts() {
    let mut broker = Mosquitto::start().await;
    let hub = hub_on(&broker).await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let r = sat::register(&api, json!({"name": "orchard"})).await;
    broker.restart().await;

    // The logins survive in mosquitto's saved state; the hub comes back on its own and answers.
    let chunk = uuid::Uuid::new_v4().to_string();
    let audio = sat::audio_message(&r, &chunk, &sat::tone_wav(48_000, 3.0), 48_000, 3000);
    for _ in 0..30 {
        let mut c = connected(&broker, &r).await;
        assert!(c.subscribe(&r.topic("ack")).await);
        c.publish(&r.topic("audio"), audio.clone()).await;
        if let Some(ack) = c.message_on(&r.topic("ack"), 2).await {
            assert_eq!(ack, json!({"chunkId": chunk, "status": "stored"}));
            return;
        }
    }
    panic!("the hub never answered after mosquitto restarted\n{}", broker.log());
}

#[tokio::test]
async fn the_command_line_mints_and_revokes_worker_logins_on_mosquitto() {
    let broker = Mosquitto::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("empty.toml"), "").expect("config");
    let cli = |args: &[&str]| {
        std::process::Command::new(common::process::BIN)
            .args(["admin", "worker-key"])
            .args(args)
            .arg("--config")
            .arg(dir.path().join("empty.toml"))
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .env("BIRDHUB_MQTT__EXTERNAL", broker.address())
            .env("BIRDHUB_MQTT__EXTERNAL_USERNAME", common::mosquitto_broker::ADMIN)
            .env("BIRDHUB_MQTT__EXTERNAL_PASSWORD", common::mosquitto_broker::ADMIN_PASSWORD)
            .env("BIRDHUB_LOG_LEVEL", "warn")
            .output()
            .expect("birdhub admin worker-key")
    };
    let made = cli(&["create", "--name", "desk"]);
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let said = String::from_utf8_lossy(&made.stdout);
    let key = said.split_whitespace().find(|w| w.starts_with("bhw.")).expect("the key is printed");
    let (id, _) = birdhub::inference::remote::parse_key(key).expect("a key");
    let login = format!("worker-{id}");
    assert!(broker.clients().contains(&login), "the login is made on mosquitto: {:?}", broker.clients());

    let revoked = cli(&["revoke", &id.to_string()]);
    assert!(revoked.status.success(), "{}", String::from_utf8_lossy(&revoked.stderr));
    assert!(!broker.clients().contains(&login), "and deleted there: {:?}", broker.clients());
}

#[tokio::test]
async fn what_a_satellite_sends_while_the_hub_restarts_waits_for_it_on_mosquitto() {
    let broker = Mosquitto::start().await;
    let hub = hub_on(&broker).await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let r = sat::register(&api, json!({"name": "meadow"})).await;
    let mut c = connected(&broker, &r).await;
    assert!(c.subscribe(&r.topic("ack")).await);
    let data = hub.stop_keeping_data().await;

    let chunk = uuid::Uuid::new_v4().to_string();
    c.publish(&r.topic("audio"), sat::audio_message(&r, &chunk, &sat::tone_wav(48_000, 3.0), 48_000, 3000)).await;
    let _hub = common::spawn_hub_in(data, |s| broker.configure(s)).await;
    let ack = c.message_on(&r.topic("ack"), 30).await.unwrap_or_else(|| panic!("no ack\n{}", broker.log()));
    assert_eq!(ack, json!({"chunkId": chunk, "status": "stored"}), "the chunk was kept for the hub and stored");
}

#[tokio::test]
async fn in_split_mode_the_api_process_makes_the_logins_and_the_dispatcher_answers_through_mosquitto() {
    let broker = Mosquitto::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let shared = dir.path().to_owned();
    let _dispatcher = common::spawn_hub_in(dir, |s| {
        s.mode = birdhub::config::Mode::Dispatcher;
        broker.configure(s);
    })
    .await;
    let api_hub = common::spawn_hub_in(tempfile::TempDir::new_in(&shared).expect("dir"), |s| {
        s.mode = birdhub::config::Mode::Api;
        s.data_dir = shared.clone();
        broker.configure(s);
    })
    .await;
    let owner = api_hub.user("owner@example.org", false).await;
    let api = api_hub.login(&owner.email).await;
    let r = sat::register(&api, json!({"name": "split"})).await;

    let mut c = connected(&broker, &r).await;
    assert!(c.subscribe(&r.topic("ack")).await);
    let chunk = uuid::Uuid::new_v4().to_string();
    c.publish(&r.topic("audio"), sat::audio_message(&r, &chunk, &sat::tone_wav(48_000, 3.0), 48_000, 3000)).await;
    let ack = c.message_on(&r.topic("ack"), 30).await.unwrap_or_else(|| panic!("no ack\n{}", broker.log()));
    assert_eq!(ack, json!({"chunkId": chunk, "status": "stored"}));

    let (status, body) = api.delete(&format!("/satellites/{}", r.id)).await;
    assert_eq!(status, 204, "{body}");
    assert!(ended(&mut c).await.is_some(), "the api process deleted its login, which disconnected it");
}
