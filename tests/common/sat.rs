//! A satellite for tests: registration over HTTP and a real MQTT client (rumqttc).

use std::time::Duration;

use base64::Engine;
use rumqttc::{AsyncClient, ConnectionError, Event, MqttOptions, Packet, QoS};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{Api, TestHub};

/// What `POST /satellites` returned.
#[derive(Debug, Clone)]
pub struct Registered {
    pub id: String,
    pub tenant: String,
    pub password: String,
    pub api_key: String,
    pub prefix: String,
    pub client_id: String,
}

impl Registered {
    pub fn topic(&self, channel: &str) -> String {
        format!("{}{channel}", self.prefix)
    }
}

pub async fn register(api: &Api, body: Value) -> Registered {
    let (status, r) = api.post("/satellites", body).await;
    assert!(status == 201 || status == 200, "registration: {status} {r}");
    Registered {
        id: r["id"].as_str().expect("id").into(),
        tenant: r["tenantId"].as_str().expect("tenant").into(),
        password: r["mqtt"]["password"].as_str().expect("password").into(),
        api_key: r["apiKey"].as_str().expect("apiKey").into(),
        prefix: r["mqtt"]["topicPrefix"].as_str().expect("prefix").into(),
        client_id: r["mqtt"]["clientId"].as_str().expect("clientId").into(),
    }
}

/// What the client's event loop saw.
#[derive(Debug)]
pub enum Seen {
    Connected,
    Refused(String),
    Message { topic: String, payload: Vec<u8> },
    SubAck(Vec<bool>),
    Disconnected(String),
}

/// A connected MQTT client with its incoming events on a channel.
pub struct Client {
    pub client: AsyncClient,
    pub events: mpsc::UnboundedReceiver<Seen>,
}

impl Client {
    /// The next event (at most `secs` seconds).
    pub async fn next(&mut self, secs: u64) -> Option<Seen> {
        tokio::time::timeout(Duration::from_secs(secs), self.events.recv()).await.ok().flatten()
    }

    /// Waits for the next message on `topic`, skipping other events.
    pub async fn message_on(&mut self, topic: &str, secs: u64) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match tokio::time::timeout(left, self.events.recv()).await.ok().flatten()? {
                Seen::Message { topic: t, payload } if t == topic => return serde_json::from_slice(&payload).ok(),
                _ => {}
            }
        }
    }

    /// Subscribes and returns whether each filter was granted.
    pub async fn subscribe(&mut self, filter: &str) -> bool {
        self.client.subscribe(filter, QoS::AtLeastOnce).await.expect("subscribe");
        for _ in 0..50 {
            match self.next(5).await {
                Some(Seen::SubAck(granted)) => return granted.first().copied().unwrap_or(false),
                Some(_) => continue,
                None => break,
            }
        }
        panic!("no SUBACK for {filter}");
    }

    pub async fn publish(&self, topic: &str, payload: impl Into<Vec<u8>>) {
        self.client.publish(topic, QoS::AtLeastOnce, false, payload.into()).await.expect("publish");
    }
}

/// Connects with the given credentials; the first event tells whether the broker accepted.
pub async fn connect_as(port: u16, client_id: &str, user: &str, password: &str) -> Client {
    let mut options = MqttOptions::new(client_id, "127.0.0.1", port);
    options.set_credentials(user, password);
    options.set_keep_alive(Duration::from_secs(30));
    options.set_max_packet_size(8 << 20, 8 << 20);
    let (client, mut eventloop) = AsyncClient::new(options, 64);
    let (tx, events) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let seen = match eventloop.poll().await {
                Ok(Event::Incoming(Packet::ConnAck(_))) => Seen::Connected,
                Ok(Event::Incoming(Packet::Publish(p))) => {
                    Seen::Message { topic: p.topic, payload: p.payload.to_vec() }
                }
                Ok(Event::Incoming(Packet::SubAck(s))) => Seen::SubAck(
                    s.return_codes.iter().map(|c| !matches!(c, rumqttc::SubscribeReasonCode::Failure)).collect(),
                ),
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
    Client { client, events }
}

/// Connects as the registered satellite and waits for the CONNACK.
pub async fn connect(hub: &TestHub, r: &Registered) -> Client {
    let mut c = connect_as(hub.mqtt_port, &r.client_id, &r.id, &r.password).await;
    match c.next(10).await {
        Some(Seen::Connected) => c,
        other => panic!("satellite could not connect: {other:?}"),
    }
}

/// A 16-bit mono WAV of `seconds` of a quiet tone at `rate`.
pub fn tone_wav(rate: u32, seconds: f32) -> Vec<u8> {
    let n = (rate as f32 * seconds) as usize;
    let samples: Vec<f32> = (0..n).map(|i| (i as f32 * 0.05).sin() * 0.1).collect();
    birdhub::inference::audio::encode_wav_i16(&samples, rate)
}

/// An `audio` message (SPEC 2.1) for this satellite.
pub fn audio_message(r: &Registered, chunk_id: &str, wav: &[u8], rate: u32, duration_ms: i64) -> Vec<u8> {
    json!({
        "chunkId": chunk_id,
        "satelliteId": r.id,
        "tenantId": r.tenant,
        "recordedAt": "2026-05-15T06:30:00Z",
        "durationMs": duration_ms,
        "sampleRate": rate,
        "latitude": 40.8,
        "longitude": -77.9,
        "audio": base64::engine::general_purpose::STANDARD.encode(wav),
    })
    .to_string()
    .into_bytes()
}

/// 3 s of the fixture recording (3.0-6.0 s, where a Tennessee Warbler sings), as a 48 kHz WAV.
pub fn warbler_wav() -> Vec<u8> {
    use birdhub::inference::{ModelDir, audio};
    let dir = ModelDir::locate("").expect("model dir (run models/fetch.sh)");
    let bytes = std::fs::read(dir.file("fixtures/birds_10s.wav")).expect("fixture");
    let samples = audio::to_model_rate(audio::decode_wav(&bytes, 60.0).expect("decode")).expect("resample");
    audio::encode_wav_i16(&samples[144_000..288_000], 48_000)
}

/// An `audio` message of the warbler recording, recorded now (so it counts as today's).
pub fn warbler_message_now(r: &Registered) -> String {
    json!({
        "chunkId": uuid::Uuid::new_v4().to_string(),
        "satelliteId": r.id,
        "tenantId": r.tenant,
        "recordedAt": chrono::Utc::now().to_rfc3339(),
        "durationMs": 3000,
        "sampleRate": 48_000,
        "audio": base64::engine::general_purpose::STANDARD.encode(warbler_wav()),
    })
    .to_string()
}
