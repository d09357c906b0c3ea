//! Listening, looking and sharing over real HTTP: WAV streaming with byte ranges, the spectrogram
//! PNG, and share links (valid, forged, altered, expired).

mod common;

use common::{assert_error, seed};
use reqwest::header;

struct World {
    hub: common::TestHub,
    token: String,
    chunk: String,
    detection: String,
}

async fn world() -> World {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let sat = seed::satellite(&hub, owner.tenant, "garden").await;
    let (chunk, detection) = seed::heard(&hub, owner.tenant, sat, "2026-05-01T05:00:00.000Z", seed::ROBIN, 0.8).await;
    let token = hub.token(&owner.email).await;
    World { token, chunk: chunk.to_string(), detection: detection.to_string(), hub }
}

impl World {
    async fn get(&self, path: &str, range: Option<&str>) -> reqwest::Response {
        let mut req = reqwest::Client::new().get(self.hub.api(path)).bearer_auth(&self.token);
        if let Some(r) = range {
            req = req.header(header::RANGE, r);
        }
        req.send().await.expect("request")
    }
}

#[tokio::test]
async fn audio_streams_whole_and_in_byte_ranges() {
    let w = world().await;
    let wav = common::sat::tone_wav(48_000, 3.0);
    let resp = w.get(&format!("/audio/{}", w.chunk), None).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()[header::CONTENT_TYPE], "audio/wav");
    assert_eq!(resp.headers()[header::CONTENT_LENGTH], wav.len().to_string().as_str());
    assert_eq!(resp.headers()[header::ACCEPT_RANGES], "bytes");
    assert_eq!(resp.bytes().await.expect("body").to_vec(), wav);

    let resp = w.get(&format!("/audio/{}", w.chunk), Some("bytes=44-1043")).await;
    assert_eq!(resp.status(), 206);
    assert_eq!(resp.headers()[header::CONTENT_RANGE], format!("bytes 44-1043/{}", wav.len()).as_str());
    assert_eq!(resp.bytes().await.expect("body").to_vec(), wav[44..1044]);
    let resp = w.get(&format!("/audio/{}", w.chunk), Some("bytes=-100")).await;
    assert_eq!(resp.status(), 206, "a suffix range (browsers ask for the tail)");
    assert_eq!(resp.bytes().await.expect("body").to_vec(), wav[wav.len() - 100..]);
    let resp = w.get(&format!("/audio/{}", w.chunk), Some("bytes=999999-")).await;
    assert_eq!(resp.status(), 416);

    // A browser asks for gzip; the audio must still come with its length, uncompressed.
    let resp = reqwest::Client::new()
        .get(w.hub.api(&format!("/audio/{}", w.chunk)))
        .bearer_auth(&w.token)
        .header(header::ACCEPT_ENCODING, "gzip")
        .send()
        .await
        .expect("request");
    assert!(resp.headers().get(header::CONTENT_ENCODING).is_none());
    assert_eq!(resp.headers()[header::CONTENT_LENGTH], wav.len().to_string().as_str());

    let unknown = w.get(&format!("/audio/{}", uuid::Uuid::new_v4()), None).await;
    assert_eq!(unknown.status(), 404);
    let stranger = w.hub.user("stranger@example.org", false).await;
    let theirs = common::Api::with_bearer(&w.hub.base_url, &w.hub.token(&stranger.email).await);
    assert_error(&theirs.get(&format!("/audio/{}", w.chunk)).await, 404, "chunk_not_found");
    assert_error(&w.hub.anon().get(&format!("/audio/{}", w.chunk)).await, 401, "unauthenticated");
}

/// The response's `X-Spectrogram-*` header `name` as a number.
fn mapping_header(resp: &reqwest::Response, name: &str) -> f64 {
    let value = resp.headers().get(format!("x-spectrogram-{name}")).unwrap_or_else(|| panic!("header {name}"));
    value.to_str().expect("ascii").parse().expect("a number")
}

/// Width, height and the row (0 = top) with the highest mean luminance; the middle one when a
/// flat peak (8-bit levels in a zoomed-in band) ties several.
fn brightest_row(png_bytes: &[u8]) -> (u32, u32, usize) {
    let mut reader = png::Decoder::new(std::io::Cursor::new(png_bytes)).read_info().expect("a valid PNG");
    let mut buffer = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut buffer).expect("a frame");
    let row_luma = |row: &[u8]| row.chunks(3).map(|p| 0.2126 * f64::from(p[0]) + 0.7152 * f64::from(p[1])).sum::<f64>();
    let rows: Vec<f64> = buffer[..info.buffer_size()].chunks(info.line_size).map(row_luma).collect();
    let peak = rows.iter().copied().fold(0.0, f64::max);
    let tied: Vec<usize> = (0..rows.len()).filter(|&r| rows[r] >= peak * 0.999).collect();
    (info.width, info.height, tied[tied.len() / 2])
}

#[tokio::test]
async fn the_spectrogram_is_a_png_made_once_and_kept() {
    let w = world().await;
    let resp = w.get(&format!("/detections/{}/spectrogram.png", w.detection), None).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()[header::CONTENT_TYPE], "image/png");
    let seconds_per_pixel = mapping_header(&resp, "seconds-per-pixel");
    let (min_hz, max_hz) = (mapping_header(&resp, "min-hz"), mapping_header(&resp, "max-hz"));
    let hz_per_pixel = mapping_header(&resp, "hz-per-pixel");
    assert_eq!((min_hz, max_hz, hz_per_pixel), (0.0, 12_000.0, 12_000.0 / 256.0));
    assert_eq!(mapping_header(&resp, "duration-seconds"), 3.0);
    assert!((seconds_per_pixel - 128.0 / 48_000.0).abs() < 1e-9, "a quarter of a 10.7 ms window");
    let png = resp.bytes().await.expect("png").to_vec();
    let (width, height, row) = brightest_row(&png);
    assert_eq!((width, height), (1_125, 256), "3 s at 48 kHz, 128 samples a column");
    // The seeded chunk is a 382 Hz tone (0.05 rad a sample at 48 kHz): the mapping must find it.
    let tone_hz = 0.05 * 48_000.0 / (2.0 * std::f64::consts::PI);
    let tone_row = ((max_hz - tone_hz) / hz_per_pixel).floor();
    assert!((row as f64 - tone_row).abs() <= 1.0, "brightest row {row}, the headers say {tone_row}");

    let cached = w.hub.data_dir.join("objects/spectrograms/v2").join(format!("{}_0-12000Hz.png", w.chunk));
    assert_eq!(std::fs::read(&cached).expect("kept in the object store"), png);
    let again = w.get(&format!("/detections/{}/spectrogram.png", w.detection), None).await;
    assert_eq!(mapping_header(&again, "seconds-per-pixel"), seconds_per_pixel, "a kept picture has its mapping too");
    assert_eq!(again.bytes().await.expect("png").to_vec(), png);
    let unknown = w.get(&format!("/detections/{}/spectrogram.png", uuid::Uuid::new_v4()), None).await;
    assert_eq!(unknown.status(), 404);
}

#[tokio::test]
async fn the_spectrogram_draws_a_chosen_frequency_band() {
    let w = world().await;
    let resp = w.get(&format!("/detections/{}/spectrogram.png?minHz=200&maxHz=600", w.detection), None).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()[header::CONTENT_TYPE], "image/png");
    let (min_hz, max_hz) = (mapping_header(&resp, "min-hz"), mapping_header(&resp, "max-hz"));
    let hz_per_pixel = mapping_header(&resp, "hz-per-pixel");
    assert_eq!((min_hz, max_hz, hz_per_pixel), (200.0, 600.0, 400.0 / 256.0));
    let png = resp.bytes().await.expect("png").to_vec();
    let (width, height, row) = brightest_row(&png);
    assert_eq!((width, height), (1_125, 256));
    let tone_hz = 0.05 * 48_000.0 / (2.0 * std::f64::consts::PI);
    let tone_row = ((max_hz - tone_hz) / hz_per_pixel).floor();
    assert!((row as f64 - tone_row).abs() <= 1.0, "brightest row {row}, the headers say {tone_row}");
    let kept = std::fs::read_dir(w.hub.data_dir.join("objects/spectrograms/v2")).map(|d| d.count()).unwrap_or(0);
    assert_eq!(kept, 0, "chosen bands are drawn per request, not kept");

    let api = common::Api::with_bearer(&w.hub.base_url, &w.token);
    for bad in ["minHz=6000&maxHz=5000", "minHz=5000&maxHz=5000", "maxHz=24001", "minHz=-1", "minHz=12000", "maxHz=NaN"]
    {
        let got = api.get(&format!("/detections/{}/spectrogram.png?{bad}", w.detection)).await;
        assert_error(&got, 422, "invalid_frequency_range");
    }
    assert_error(
        &api.get(&format!("/detections/{}/spectrogram.png?minHz=low", w.detection)).await,
        400,
        "invalid_query",
    );
    let top = w.get(&format!("/detections/{}/spectrogram.png?minHz=12000&maxHz=24000", w.detection), None).await;
    assert_eq!(top.status(), 200, "up to Nyquist is allowed");
}

#[tokio::test]
async fn share_links_work_without_an_account_until_they_expire() {
    let w = world().await;
    let api = common::Api::with_bearer(&w.hub.base_url, &w.token);
    let (code, share) = api.get(&format!("/detections/{}/share", w.detection)).await;
    assert_eq!(code, 200, "{share}");
    let token = share["token"].as_str().expect("token").to_owned();
    assert!(share["url"].as_str().expect("url").ends_with(&format!("/api/share/detection/{}/{token}", w.detection)));
    let expires: chrono::DateTime<chrono::Utc> = share["expiresAt"].as_str().expect("expiry").parse().expect("time");
    let days = (expires - w.hub.state().clock.now()).num_hours() as f64 / 24.0;
    assert!((29.9..=30.1).contains(&days), "30 days, got {days}");

    let anon = w.hub.anon();
    let (code, shared) = anon.get(&format!("/share/detection/{}/{token}", w.detection)).await;
    assert_eq!(code, 200, "{shared}");
    assert_eq!(shared["common_name"], "American Robin");
    assert!(shared.get("tenant_id").is_none() && shared.get("storage_key").is_none(), "{shared}");
    let audio = reqwest::get(w.hub.api(&format!("/share/audio/{}/{token}", w.detection))).await.expect("audio");
    assert_eq!(audio.status(), 200);
    assert_eq!(audio.bytes().await.expect("wav").to_vec(), common::sat::tone_wav(48_000, 3.0));

    // Forged, altered, or for another detection: 404 like an unknown detection.
    let (link, tag) = token.split_once('.').expect("dot");
    let forged = format!("{link}.{}", "0".repeat(tag.len()));
    let moved = format!("{}.{tag}", uuid::Uuid::new_v4().simple());
    for bad in [forged.as_str(), moved.as_str(), "nonsense"] {
        assert_error(&anon.get(&format!("/share/detection/{}/{bad}", w.detection)).await, 404, "share_not_found");
        assert_error(&anon.get(&format!("/share/audio/{}/{bad}", w.detection)).await, 404, "share_not_found");
    }
    let other = uuid::Uuid::new_v4();
    assert_error(&anon.get(&format!("/share/detection/{other}/{token}")).await, 404, "share_not_found");

    // Thirty days and a second later the link is dead.
    w.hub.state().clock.advance(std::time::Duration::from_secs(30 * 86_400 + 1));
    assert_error(&anon.get(&format!("/share/detection/{}/{token}", w.detection)).await, 404, "share_not_found");
    assert_error(&anon.get(&format!("/share/audio/{}/{token}", w.detection)).await, 404, "share_not_found");
}
