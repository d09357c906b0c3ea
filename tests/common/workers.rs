//! Remote inference workers for tests: real `birdhub worker` processes, and a hand-driven MQTT 5
//! client that logs in with a worker key to behave slowly or badly.

use std::{
    path::Path,
    process::{Child, Command, Stdio},
    time::Duration,
};

use rumqttc::v5::{
    AsyncClient, ConnectionError, Event, MqttOptions,
    mqttbytes::{
        QoS,
        v5::{Packet, SubscribeReasonCode},
    },
};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{Api, process::BIN};

/// A minted key: its id and the `bhw.` key.
pub struct Key {
    pub id: String,
    pub key: String,
}

/// Mints a worker key through the API (the caller is a platform admin).
pub async fn mint(api: &Api, name: &str) -> Key {
    let (status, body) = api.post("/workers/keys", json!({ "name": name })).await;
    assert_eq!(status, 201, "{body}");
    Key { id: body["id"].as_str().expect("id").into(), key: body["key"].as_str().expect("key").into() }
}

/// The real model directory.
pub fn model_dir() -> std::path::PathBuf {
    let dir = birdhub::inference::ModelDir::locate("").expect("model (run models/fetch.sh)").path;
    std::fs::canonicalize(&dir).expect("model dir")
}

/// A worker process, killed when dropped (a failed test leaves none behind).
pub struct Worker(pub Child);

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Worker {
    /// Sends `signal` (`TERM`, `KILL`).
    pub fn signal(&mut self, signal: &str) {
        super::process::signal(&mut self.0, signal);
    }

    /// Waits (at most `secs`) for the process to exit; its status code.
    pub async fn exit_code(&mut self, secs: u64) -> Option<i32> {
        exit_code(&mut self.0, secs).await
    }
}

/// `birdhub worker` against the broker on `port`, one thread, logging to `log`.
pub fn spawn(port: u16, key: &Key, model: &Path, log: &Path) -> Worker {
    let out = std::fs::File::create(log).expect("log file");
    let err = out.try_clone().expect("log file");
    Command::new(BIN)
        .args(["worker", "--hub", &format!("127.0.0.1:{port}"), "--threads", "1", "--name", "test-machine"])
        .arg("--model-dir")
        .arg(model)
        .env("BIRDHUB_WORKER_KEY", &key.key)
        .env("BIRDHUB_LOG", "info,rumqttc=warn,ort=warn")
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .spawn()
        .map(Worker)
        .expect("spawn birdhub worker")
}

/// Waits (at most `secs`) for the process to exit; its status code.
pub async fn exit_code(child: &mut Child, secs: u64) -> Option<i32> {
    for _ in 0..secs * 10 {
        if let Some(status) = child.try_wait().expect("wait") {
            return status.code();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

/// What the hand-driven worker's connection saw.
#[derive(Debug)]
pub enum Seen {
    Connected,
    Refused(String),
    Message {
        topic: String,
        payload: Vec<u8>,
    },
    SubAck(bool),
    /// A PUBACK: whether the broker accepted the publish.
    PubAck(bool),
    Disconnected(String),
}

/// A worker key's MQTT 5 connection, driven by the test.
pub struct Fake {
    pub client: AsyncClient,
    pub events: mpsc::UnboundedReceiver<Seen>,
    pub id: String,
    pub root: String,
}

impl Fake {
    /// Logs in as the key's worker (the first event tells whether the broker accepted).
    pub async fn connect(port: u16, key: &Key) -> Fake {
        let (id, secret) = birdhub::inference::remote::parse_key(&key.key).expect("key");
        let cid = format!("worker-{id}");
        let mut options = MqttOptions::new(cid.clone(), "127.0.0.1", port);
        options.set_credentials(cid, secret);
        options.set_keep_alive(Duration::from_secs(30));
        options.set_max_packet_size(Some(40 << 20));
        let (client, mut eventloop) = AsyncClient::new(options, 64);
        let (tx, events) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            loop {
                let seen = match eventloop.poll().await {
                    Ok(Event::Incoming(Packet::ConnAck(_))) => Seen::Connected,
                    Ok(Event::Incoming(Packet::Publish(p))) => Seen::Message {
                        topic: String::from_utf8_lossy(&p.topic).into_owned(),
                        payload: p.payload.to_vec(),
                    },
                    Ok(Event::Incoming(Packet::SubAck(s))) => {
                        Seen::SubAck(s.return_codes.iter().all(|c| matches!(c, SubscribeReasonCode::Success(_))))
                    }
                    Ok(Event::Incoming(Packet::PubAck(a))) => Seen::PubAck(matches!(
                        a.reason,
                        rumqttc::v5::mqttbytes::v5::PubAckReason::Success
                            | rumqttc::v5::mqttbytes::v5::PubAckReason::NoMatchingSubscribers
                    )),
                    Ok(_) => continue,
                    Err(ConnectionError::ConnectionRefused(code)) => {
                        let _ = tx.send(Seen::Refused(format!("{code:?}")));
                        return;
                    }
                    Err(e) => {
                        let _ = tx.send(Seen::Disconnected(e.to_string()));
                        return;
                    }
                };
                if tx.send(seen).is_err() {
                    return;
                }
            }
        });
        Fake { client, events, id: id.to_string(), root: "birdhub".into() }
    }

    pub async fn next(&mut self, secs: u64) -> Option<Seen> {
        tokio::time::timeout(Duration::from_secs(secs), self.events.recv()).await.ok().flatten()
    }

    /// The worker's own topic of `kind`.
    pub fn topic(&self, kind: &str) -> String {
        format!("{}/_work/{}/{kind}", self.root, self.id)
    }

    /// Subscribes; whether the broker granted it.
    pub async fn subscribe(&mut self, filter: &str) -> bool {
        self.client.subscribe(filter, QoS::AtLeastOnce).await.expect("subscribe");
        loop {
            match self.next(10).await {
                Some(Seen::SubAck(ok)) => return ok,
                Some(_) => continue,
                None => panic!("no SUBACK for {filter}"),
            }
        }
    }

    /// Publishes with QoS 1; whether the broker accepted it (its PUBACK).
    pub async fn publish(&mut self, topic: &str, payload: Vec<u8>) -> bool {
        self.client.publish(topic, QoS::AtLeastOnce, false, payload).await.expect("publish");
        loop {
            match self.next(10).await {
                Some(Seen::PubAck(ok)) => return ok,
                Some(_) => continue,
                None => panic!("no PUBACK for {topic}"),
            }
        }
    }

    /// Sends a join as the real worker would (`labels`: the label set's fingerprint) and
    /// returns the hub's answer.
    pub async fn join(&mut self, labels: &str) -> Value {
        assert!(self.subscribe(&self.topic("control")).await, "a worker may read its own control topic");
        let hello = json!({
            "machine": "fake", "model": "birdnet-v2.4", "labels": labels, "precision": "fp32",
            "threads": 1, "batch": 8, "version": "test",
        });
        // A hub still loading its model directory answers "try again" (as the real worker does).
        for _ in 0..120 {
            assert!(self.publish(&self.topic("hello"), hello.to_string().into_bytes()).await);
            let answer = self.message_on(&self.topic("control"), 10).await.expect("an answer to the join");
            if answer["retry"] != true {
                return answer;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        panic!("the hub never took the join");
    }

    /// The next message on `topic`, as JSON.
    pub async fn message_on(&mut self, topic: &str, secs: u64) -> Option<Value> {
        let raw = self.raw_on(topic, secs).await?;
        serde_json::from_slice(&raw).ok()
    }

    /// The next message on `topic`, as bytes.
    pub async fn raw_on(&mut self, topic: &str, secs: u64) -> Option<Vec<u8>> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match tokio::time::timeout(left, self.events.recv()).await.ok().flatten()? {
                Seen::Message { topic: t, payload } if t == topic => return Some(payload),
                _ => {}
            }
        }
    }
}

/// The hub's label set fingerprint (what a worker with the same model sends).
pub fn labels() -> String {
    birdhub::inference::remote::labels_fingerprint(&model_dir()).expect("labels")
}
