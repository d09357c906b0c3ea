//! Chunks of the model's fixture recording sent by a test satellite, and the satellite's filter
//! counters (the detection controls' and remote workers' tests).

use std::time::Duration;

use serde_json::{Value, json};

use super::{api::Api, sat};

/// `secs` seconds of the fixture recording from `from` seconds on, at 48 kHz.
pub fn cut(from: f32, secs: f32) -> Vec<f32> {
    use birdhub::inference::{ModelDir, audio};
    let dir = ModelDir::locate("").expect("model dir (run models/fetch.sh)");
    let bytes = std::fs::read(dir.file("fixtures/birds_10s.wav")).expect("fixture");
    let samples = audio::to_model_rate(audio::decode_wav(&bytes, 60.0).expect("decode")).expect("resample");
    let at = |s: f32| (s * 48_000.0) as usize;
    samples[at(from)..at(from + secs)].to_vec()
}

pub fn wav(samples: &[f32]) -> Vec<u8> {
    birdhub::inference::audio::encode_wav_i16(samples, 48_000)
}

/// The chunk's `audio` message, recorded `offset_s` seconds after a fixed May morning.
pub fn chunk(r: &sat::Registered, samples: &[f32], offset_s: i64) -> (String, String) {
    use base64::Engine;
    let id = uuid::Uuid::new_v4().to_string();
    let at = chrono::DateTime::parse_from_rfc3339("2026-05-15T06:30:00Z").expect("time")
        + chrono::Duration::seconds(offset_s);
    let msg = json!({
        "chunkId": id, "satelliteId": r.id, "tenantId": r.tenant,
        "recordedAt": at.to_rfc3339(), "durationMs": 3000, "sampleRate": 48_000,
        "latitude": 40.8, "longitude": -77.9,
        "audio": base64::engine::general_purpose::STANDARD.encode(wav(samples)),
    });
    (id, msg.to_string())
}

pub async fn send(c: &mut sat::Client, r: &sat::Registered, samples: &[f32], offset_s: i64) -> String {
    let (id, msg) = chunk(r, samples, offset_s);
    c.publish(&r.topic("audio"), msg).await;
    loop {
        let ack = c.message_on(&r.topic("ack"), 10).await.expect("ack");
        if ack["chunkId"] == id.as_str() {
            assert_eq!(ack["status"], "stored", "{ack}");
            return id;
        }
    }
}

pub async fn counters(api: &Api, sat: &str) -> Value {
    let (status, body) = api.get(&format!("/satellites/{sat}")).await;
    assert_eq!(status, 200, "{body}");
    body["hub_filter_stats"].clone()
}

/// Polls the satellite's filter counters until `name` reaches `n` (one minute at most).
pub async fn wait_counter(api: &Api, sat: &str, name: &str, n: u64) -> Value {
    for _ in 0..600 {
        let c = counters(api, sat).await;
        if c[name].as_u64().unwrap_or(0) >= n {
            return c;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{name} never reached {n}: {}", counters(api, sat).await);
}
