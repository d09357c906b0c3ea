//! Real satellite client libraries against the hub: Python paho-mqtt (3.1.1 and 5) and Debian's
//! mosquitto clients. A 3.1.1 client that publishes into another satellite's tree keeps its
//! connection and its message goes nowhere; an oversize message gets an error ack instead of a
//! reconnect loop, and the next chunk is stored.

mod common;

use common::{
    mosq,
    paho::{self, Protocol},
    sat::{self, Registered, Seen},
};
use serde_json::{Value, json};

/// Satellites A and B in one team, C in another.
struct World {
    hub: common::TestHub,
    owner: common::Api,
    stranger: common::Api,
    a: Registered,
    b: Registered,
    c: Registered,
}

async fn world() -> World {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let owner = hub.login(&owner.email).await;
    let stranger = hub.user("stranger@example.org", false).await;
    let stranger = hub.login(&stranger.email).await;
    let a = sat::register(&owner, json!({"name": "garden"})).await;
    let b = sat::register(&owner, json!({"name": "meadow"})).await;
    let c = sat::register(&stranger, json!({"name": "elsewhere"})).await;
    assert_ne!(a.tenant, c.tenant);
    World { hub, owner, stranger, a, b, c }
}

fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A valid 3 s chunk whose body names `r`, so only the ACL keeps it out of `r`'s data.
fn chunk_of(r: &Registered, chunk: &str) -> Vec<u8> {
    sat::audio_message(r, chunk, &sat::tone_wav(48_000, 3.0), 48_000, 3000)
}

fn heartbeat_of(r: &Registered) -> String {
    json!({"satelliteId": r.id, "tenantId": r.tenant, "uptimeSeconds": 5, "state": "recording",
           "timestamp": "2026-05-15T06:30:00Z"})
    .to_string()
}

/// A satellite's own client, subscribed to its whole tree.
async fn watch(hub: &common::TestHub, r: &Registered) -> sat::Client {
    let mut c = sat::connect(hub, r).await;
    assert!(c.subscribe(&format!("{}#", r.prefix)).await);
    c
}

/// The satellite asks for its config; nothing may reach it before that push. (The foreign
/// publishes were acknowledged before, so anything they routed would already be queued ahead.)
async fn assert_received_nothing(c: &mut sat::Client, r: &Registered) {
    c.publish(
        &r.topic("config-request"),
        json!({"satelliteId": r.id, "tenantId": r.tenant, "overrides": {}}).to_string(),
    )
    .await;
    loop {
        match c.next(15).await {
            Some(Seen::Message { topic, payload }) => {
                let body: Value = serde_json::from_slice(&payload).unwrap_or(Value::Null);
                if topic == r.topic("config") && body["satelliteId"] == r.id.as_str() {
                    return;
                }
                let shown: String = body.to_string().chars().take(200).collect();
                panic!("satellite {} received {topic}: {shown}", r.id);
            }
            Some(_) => continue,
            None => panic!("no config push for {}", r.id),
        }
    }
}

/// B and C were not touched: no chunk, no heartbeat, never seen; A's good chunk is the only one.
async fn assert_only_a_stored(w: &World, good: &str) {
    for (api, r) in [(&w.owner, &w.b), (&w.stranger, &w.c)] {
        let (status, v) = api.get(&format!("/satellites/{}", r.id)).await;
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["last_seen_at"], Value::Null, "a foreign heartbeat changed {}: {v}", r.id);
        assert_eq!(v["heartbeat_state"], Value::Null, "{v}");
    }
    let chunks: Vec<String> = w.hub.sql(|c| {
        let mut s = c.prepare("SELECT id FROM audio_chunks").expect("prepare");
        s.query_map([], |r| r.get::<_, birdhub::ids::ChunkId>(0).map(|id| id.to_string()))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows")
    });
    assert_eq!(chunks, [good], "only A's own chunk is stored");
}

#[tokio::test]
async fn a_paho_311_client_writing_into_other_satellites_trees_is_dropped_and_stays_connected() {
    let w = world().await;
    let (mut wb, mut wc) = (watch(&w.hub, &w.b).await, watch(&w.hub, &w.c).await);
    let dir = tempfile::tempdir().expect("tempdir");
    let (into_b, into_c, good) = (new_id(), new_id(), new_id());
    let file = |name: &str, body: Vec<u8>| paho::payload_file(dir.path(), name, &body);
    let steps = vec![
        json!({"subscribe": w.a.topic("ack")}),
        json!({"publish": w.b.topic("audio"), "payloadFile": file("b.json", chunk_of(&w.b, &into_b))}),
        json!({"publish": w.b.topic("heartbeat"), "payload": heartbeat_of(&w.b)}),
        json!({"publish": w.b.topic("config"), "payload": "{\"evil\": true}"}),
        json!({"publish": w.c.topic("audio"), "payloadFile": file("c.json", chunk_of(&w.c, &into_c))}),
        json!({"publish": w.c.topic("heartbeat"), "payload": heartbeat_of(&w.c)}),
        json!({"publish": w.a.topic("audio"), "payloadFile": file("a.json", chunk_of(&w.a, &good))}),
        json!({"expect": w.a.topic("ack"), "where": {"chunkId": good}}),
    ];
    let run = paho::run(&w.hub, &w.a, Protocol::V311, steps).await;
    assert!(run.ok(), "{run}");
    assert_eq!(run.connects(), 1, "paho never had to reconnect: {run}");
    assert_eq!(run.all("disconnected").len(), 1, "only its own final disconnect: {run}");
    assert_eq!(run.all("puback").len(), 6, "every publish got a well-formed PUBACK: {run}");
    assert_eq!(run.messages_on(&w.a.topic("ack")), [&json!({"chunkId": good, "status": "stored"})]);
    assert_only_a_stored(&w, &good).await;
    assert_received_nothing(&mut wb, &w.b).await;
    assert_received_nothing(&mut wc, &w.c).await;
}

#[tokio::test]
async fn mosquitto_pub_311_writing_into_other_satellites_trees_is_dropped() {
    let w = world().await;
    let (mut wb, mut wc) = (watch(&w.hub, &w.b).await, watch(&w.hub, &w.c).await);
    let port = w.hub.mqtt_port.to_string();
    let login = ["-h", "127.0.0.1", "-p", &port, "-V", "mqttv311", "-u", &w.a.id, "-P", &w.a.password];
    let mobile = format!("mobile-{}", w.a.id);
    let ack_topic = w.a.topic("ack");
    let mut acks = mosq::Sub::start(&[&login[..], &["-i", &mobile, "-t", &ack_topic, "-q", "1"]].concat()).await;

    let dir = tempfile::tempdir().expect("tempdir");
    let (into_b, into_c, good) = (new_id(), new_id(), new_id());
    let foreign: Vec<(String, Vec<u8>)> = vec![
        (w.b.topic("audio"), chunk_of(&w.b, &into_b)),
        (w.b.topic("heartbeat"), heartbeat_of(&w.b).into_bytes()),
        (w.b.topic("config"), b"{\"evil\": true}".to_vec()),
        (w.c.topic("audio"), chunk_of(&w.c, &into_c)),
        (w.c.topic("heartbeat"), heartbeat_of(&w.c).into_bytes()),
        (w.a.topic("audio"), chunk_of(&w.a, &good)),
    ];
    for (n, (topic, body)) in foreign.iter().enumerate() {
        let path = paho::payload_file(dir.path(), &format!("{n}.json"), body);
        let (ok, out) =
            mosq::publish(&[&login[..], &["-i", &w.a.client_id, "-q", "1", "-t", topic, "-f", &path]].concat()).await;
        assert!(ok, "{topic}: {out}");
        assert!(out.contains("received PUBACK"), "{topic}: the broker acknowledged it: {out}");
        assert!(!out.to_lowercase().contains("error"), "{topic}: {out}");
    }
    let ack = acks.next_json(20).await.unwrap_or_else(|| panic!("no ack: {:?}", acks.seen));
    assert_eq!(ack, json!({"chunkId": good, "status": "stored"}));
    acks.stop().await;
    assert_only_a_stored(&w, &good).await;
    assert_received_nothing(&mut wb, &w.b).await;
    assert_received_nothing(&mut wc, &w.c).await;
}

/// 40 s of 48 kHz 16-bit mono: 3.84 MB of WAV, about 5.1 MB as base64 in the message.
fn five_megabytes(r: &Registered, chunk: &str) -> Vec<u8> {
    let body = sat::audio_message(r, chunk, &sat::tone_wav(48_000, 40.0), 48_000, 40_000);
    assert!(body.len() > 5_000_000, "{} bytes", body.len());
    body
}

#[tokio::test]
async fn a_5_mb_message_from_paho_311_gets_an_error_ack_and_the_next_chunk_is_stored() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let a = sat::register(&api, json!({"name": "garden"})).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let (big, good) = (new_id(), new_id());
    let wav = sat::tone_wav(48_000, 3.0);
    let steps = vec![
        json!({"subscribe": a.topic("ack")}),
        json!({"publish": a.topic("audio"), "payloadFile": paho::payload_file(dir.path(), "big.json", &five_megabytes(&a, &big)),
               "timeout": 60}),
        json!({"expect": a.topic("ack"), "where": {"chunkId": big}}),
        json!({"publish": a.topic("audio"),
               "payloadFile": paho::payload_file(dir.path(), "good.json", &sat::audio_message(&a, &good, &wav, 48_000, 3000))}),
        json!({"expect": a.topic("ack"), "where": {"chunkId": good}}),
    ];
    let run = paho::run(&hub, &a, Protocol::V311, steps).await;
    assert!(run.ok(), "{run}");
    assert_eq!(run.connects(), 1, "no reconnect loop: {run}");
    let acks = run.messages_on(&a.topic("ack"));
    assert_eq!(acks.len(), 2, "{run}");
    assert_eq!((&acks[0]["chunkId"], &acks[0]["status"]), (&json!(big), &json!("error")));
    let why = acks[0]["error"].as_str().unwrap_or_default();
    assert!(why.contains("too large"), "{why}");
    assert_eq!(acks[1], &json!({"chunkId": good, "status": "stored"}));

    let audio = |id: String| {
        let url = format!("{}/api/audio/{id}", hub.base_url);
        let client = api.client.clone();
        async move { client.get(url).send().await.expect("GET audio") }
    };
    let stored = audio(good).await;
    assert_eq!(stored.status(), 200);
    assert_eq!(stored.bytes().await.expect("wav").as_ref(), wav.as_slice(), "the good chunk is stored");
    assert_eq!(audio(big).await.status(), 404, "the oversize one is not");
}

#[tokio::test]
async fn mqtt_5_clients_learn_the_packet_limit_and_get_the_same_error_ack() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let a = sat::register(&api, json!({"name": "garden"})).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let big = new_id();
    let steps = vec![
        json!({"subscribe": a.topic("ack")}),
        json!({"publish": a.topic("audio"), "payloadFile": paho::payload_file(dir.path(), "big.json", &five_megabytes(&a, &big)),
               "timeout": 60}),
        json!({"expect": a.topic("ack"), "where": {"chunkId": big, "status": "error"}}),
    ];
    let run = paho::run(&hub, &a, Protocol::V5, steps).await;
    assert!(run.ok(), "{run}");
    assert_eq!(run.connects(), 1, "{run}");
    let connected = run.all("connected");
    assert_eq!(
        connected[0]["maximumPacketSize"],
        json!(birdhub::mqtt::broker::MAX_PACKET_BYTES),
        "CONNACK carries the limit: {run}"
    );
}
