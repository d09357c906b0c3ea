//! The world of tests/birdweather.rs: a hub whose BirdWeather is the local fake, a team with an
//! admin and a member, a satellite in Berlin, chunks of the project's real recording, and the
//! checks of a FLAC soundscape.

use birdhub::{
    config::Settings,
    domain::Role,
    ids::{ChunkId, DetectionId, SatelliteId, TenantId},
    store,
};
use serde_json::{Value, json};

use crate::common::{self, TestHub, seed};

pub const TOKEN: &str = "bwStationTok3nS3cretXyZ9";
/// The sample count of the 3 s chunks below, at 48 kHz.
pub const SAMPLES: u64 = 144_000;
pub const DOG: seed::Species = ("dog", "Dog", "Dog");

/// Short waits, no rate cap: tests poll, they never sleep for the back-off.
pub fn fast(base: &str) -> impl FnOnce(&mut Settings) + use<> {
    let base = base.to_owned();
    move |s: &mut Settings| {
        s.birdweather.base_url = base;
        s.birdweather.min_interval_secs = 0;
        s.birdweather.retry_initial_secs = 1;
        s.birdweather.retry_max_secs = 2;
        s.birdweather.pause_after_failures = 3;
        s.birdweather.pause_secs = 1;
        s.birdweather.timeout_secs = 2;
    }
}

pub struct World {
    pub hub: TestHub,
    pub team: TenantId,
    pub sat: SatelliteId,
    pub admin: common::Api,
    pub member: common::Api,
}

pub async fn world_with(adjust: impl FnOnce(&mut Settings)) -> World {
    let hub = common::spawn_hub_with(adjust).await;
    let owner = hub.user("owner@example.org", false).await;
    hub.member_of("mia@example.org", owner.tenant, Role::Member).await;
    let sat = seed::satellite(&hub, owner.tenant, "garden").await;
    let admin = hub.login("owner@example.org").await;
    let (code, body) = admin.put(&format!("/satellites/{sat}/time-zone"), json!({"timeZone": "Europe/Berlin"})).await;
    assert_eq!(code, 200, "{body}");
    World { member: hub.login("mia@example.org").await, team: owner.tenant, sat, admin, hub }
}

impl World {
    pub fn path(&self) -> String {
        format!("/satellites/{}/birdweather", self.sat)
    }

    pub async fn share(&self) -> Value {
        let (code, body) = self.admin.put(&self.path(), json!({"token": TOKEN, "enabled": true})).await;
        assert_eq!(code, 200, "{body}");
        body
    }

    /// A 3 s chunk of the project's real recording stored under `key` (the hub's own key
    /// when `None`), with one detection.
    pub async fn heard(
        &self,
        at: &str,
        species: seed::Species,
        confidence: f32,
        key: Option<&str>,
    ) -> (ChunkId, DetectionId) {
        let chunk = real_chunk(&self.hub, self.team, self.sat, at, key).await;
        let d = seed::detection(&self.hub, self.team, self.sat, chunk, at, species, confidence).await;
        (chunk, d)
    }

    /// The team admin's vote, which decides (tests/detections_verify.rs).
    pub async fn decide(&self, d: DetectionId, vote: &str) {
        let (code, body) = self.admin.post(&format!("/detections/{d}/verify"), json!({"vote": vote})).await;
        assert_eq!(code, 200, "{body}");
    }

    pub async fn status(&self) -> Value {
        let (code, body) = self.member.get(&self.path()).await;
        assert_eq!(code, 200, "{body}");
        body
    }

    /// Polls the status until `done` holds (at most 30 s).
    pub async fn status_until(&self, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        for _ in 0..300 {
            let s = self.status().await;
            if done(&s) {
                return s;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        panic!("BirdWeather status never showed {what}: {}", self.status().await);
    }

    /// Outbox rows: (detection, status, attempts, reason).
    pub fn outbox(&self) -> Vec<(DetectionId, String, i64, Option<String>)> {
        self.hub.sql(|c| {
            let mut stmt = c
                .prepare(
                    "SELECT d.id, o.status, o.attempts, o.reason FROM birdweather_outbox o
                     JOIN detections d ON d.pk = o.detection_pk ORDER BY o.pk",
                )
                .expect("prepare");
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .expect("query")
                .collect::<Result<_, _>>()
                .expect("rows")
        })
    }
}

pub async fn real_chunk(hub: &TestHub, team: TenantId, sat: SatelliteId, at: &str, key: Option<&str>) -> ChunkId {
    let audio = birdhub::inference::audio::decode::decode_file(&common::satellite::fixture(), 60.0).expect("fixture");
    // Satellites send 48 kHz chunks; the recording is at its own rate.
    let audio = birdhub::inference::audio::resample::resample(audio, 48_000).expect("48 kHz");
    let samples = &audio[96_000..96_000 + SAMPLES as usize];
    let wav = birdhub::inference::audio::encode_wav_i16(samples, 48_000);
    let id = ChunkId::new();
    let key = key.map_or_else(|| format!("audio/{team}/{id}.wav"), |k| k.replace("{id}", &id.to_string()));
    hub.state().objects.put(&key, wav.clone()).await.expect("wav");
    let new = store::chunks::NewChunk {
        id,
        tenant_id: team,
        satellite_id: sat,
        recorded_at: at.parse().expect("time"),
        duration_ms: 3000,
        sample_rate: 48_000,
        latitude: Some(52.52),
        longitude: Some(13.405),
        storage_key: key,
        size_bytes: wav.len() as i64,
    };
    let now = hub.state().clock.stamp();
    // A key under `imports/` stands for a clip `birdhub import` copied: marked as the importer marks it.
    let imported = new.storage_key.starts_with("imports/");
    assert!(hub.state().store.call(move |c| store::chunks::insert_with_job(c, &new, now)).await.expect("chunk"));
    if imported {
        hub.sql(|c| c.execute("UPDATE audio_chunks SET imported = 1 WHERE id = ?1", [id])).expect("mark imported");
    }
    id
}

/// How many 16-bit samples ffmpeg decodes from `flac`, checking every CRC and failing on any error.
pub fn ffmpeg_samples(flac: &[u8]) -> u64 {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("soundscape.flac");
    std::fs::write(&path, flac).expect("write");
    let out = std::process::Command::new("ffmpeg")
        .args(["-v", "error", "-err_detect", "crccheck+bitstream+explode", "-i"])
        .arg(&path)
        .args(["-f", "s16le", "-"])
        .output()
        .expect("ffmpeg runs");
    assert!(out.status.success() && out.stderr.is_empty(), "ffmpeg: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout.len() as u64 / 2
}

/// What STREAMINFO says: (rate, channels, bits, total samples).
pub fn stream_info(flac: &[u8]) -> (u32, u8, u8, u64) {
    birdhub::birdweather::flac::stream_info(flac).expect("a FLAC stream with STREAMINFO")
}
