//! BirdWeather sharing (issue 38, docs/birdweather.md) against a local BirdWeather over real
//! HTTP: a detection people confirm goes as a FLAC soundscape (the real sample count in
//! STREAMINFO) and then as a detection naming BirdWeather's id of it; what must not go does not;
//! failures are retried with back-off or are final; a hub catches up after BirdWeather was down,
//! across a restart; the token is never answered and is sealed at rest; the token test only reads.

mod common;

#[path = "birdweather/fake.rs"]
mod fake;

#[path = "birdweather/world.rs"]
mod world;

use birdhub::{ids::DetectionId, store};
use common::{assert_error, seed};
use fake::{BirdWeather, Call};
use serde_json::{Value, json};
use world::{DOG, SAMPLES, TOKEN, World, fast, ffmpeg_samples, stream_info, world_with};

#[tokio::test]
async fn a_confirmed_detection_goes_as_a_flac_soundscape_then_the_detection() {
    let bw = BirdWeather::start().await;
    let w = world_with(fast(&bw.base)).await;
    let shared = w.share().await;
    assert_eq!(shared["tokenSet"], true);
    assert_eq!(shared["minConfidence"], 0.7, "BirdNET-Go's default");
    let (_, d) = w.heard("2026-05-01T04:12:03.000Z", seed::BLACKBIRD, 0.91, None).await;
    assert!(bw.seen().is_empty(), "nothing goes before people confirm");

    w.decide(d, "confirm").await;
    let seen = bw.wait_for(2, 30).await;
    assert_eq!(seen.len(), 2, "{seen:?}");
    let (sound, det) = (&seen[0], &seen[1]);

    assert!(sound.is_soundscape() && sound.method == "POST", "{sound:?}");
    assert_eq!(sound.path, format!("/api/v1/stations/{TOKEN}/soundscapes"));
    assert_eq!(sound.header("content-type"), Some("audio/flac"));
    assert_eq!(sound.header("content-encoding"), None, "FLAC is never gzipped");
    // The chunk's start in the station's zone, with its offset, percent-encoded.
    assert_eq!(sound.param("timestamp").as_deref(), Some("2026-05-01T06:12:03.000+02:00"));
    assert!(sound.query.contains("%2B02%3A00"), "the + is encoded: {}", sound.query);
    assert_eq!(&sound.body[..4], b"fLaC");
    assert_eq!(stream_info(&sound.body), (48_000, 1, 16, SAMPLES), "the chunk's real sample count");
    assert_eq!(ffmpeg_samples(&sound.body), SAMPLES, "a FLAC decoder with CRC checks reads every sample");

    let given: Value = serde_json::from_str(&sound.answer).expect("answer");
    let id = given["soundscape"]["id"].as_i64().expect("an id");
    assert!(det.is_detection() && det.method == "POST", "{det:?}");
    assert_eq!(det.path, format!("/api/v1/stations/{TOKEN}/detections"));
    let body = det.json();
    assert_eq!(body["soundscapeId"], id, "the id BirdWeather gave the soundscape");
    assert_eq!(body["timestamp"], "2026-05-01T06:12:03.000+02:00");
    assert_eq!(body["commonName"], "Eurasian Blackbird");
    assert_eq!(body["scientificName"], "Turdus merula");
    assert_eq!(body["algorithm"], "2p4");
    assert_eq!(body["confidence"], 0.91);
    assert_eq!((body["soundscapeStartTime"].as_f64(), body["soundscapeEndTime"].as_f64()), (Some(0.0), Some(3.0)));
    assert_eq!((body["lat"].as_str(), body["lon"].as_str()), (Some("52.5200"), Some("13.4050")));

    let s = w.status_until("one sent", |s| s["status"]["sent"] == 1).await;
    assert!(s["status"]["lastSuccessAt"].is_string(), "{s}");
    assert_eq!(s["status"]["recent"][0]["status"], "sent");

    // Un-confirmed and confirmed again: still sent once.
    w.decide(d, "reject").await;
    w.decide(d, "confirm").await;
    let rows = w.outbox();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].1, "sent");
}

#[tokio::test]
async fn only_confirmed_birds_at_the_minimum_with_their_audio_go() {
    let bw = BirdWeather::start().await;
    let w = world_with(fast(&bw.base)).await;
    w.share().await;
    let (_, unconfirmed) = w.heard("2026-05-01T04:00:00.000Z", seed::BLACKBIRD, 0.95, None).await;
    let (_, rejected) = w.heard("2026-05-01T04:01:00.000Z", seed::BLACKBIRD, 0.95, None).await;
    let (_, weak) = w.heard("2026-05-01T04:02:00.000Z", seed::BLACKBIRD, 0.55, None).await;
    let (voice_chunk, private) = w.heard("2026-05-01T04:03:00.000Z", seed::BLACKBIRD, 0.95, None).await;
    let (_, dog) = w.heard("2026-05-01T04:04:00.000Z", DOG, 0.95, None).await;
    let (_, imported) =
        w.heard("2026-05-01T04:05:00.000Z", seed::BLACKBIRD, 0.95, Some("imports/birdnet-pi/{id}.mp3")).await;
    // The privacy filter heard a voice in this chunk: its audio is marked deleted (store::held).
    w.hub.state().store.call(move |c| store::held::drop_audio(c, voice_chunk)).await.expect("dropped");

    w.decide(rejected, "reject").await;
    for d in [weak, private, dog, imported] {
        w.decide(d, "confirm").await;
    }
    let (_, good) = w.heard("2026-05-01T04:06:00.000Z", seed::BLACKBIRD, 0.95, None).await;
    w.decide(good, "confirm").await;

    let seen = bw.wait_for(2, 30).await;
    assert_eq!(seen.len(), 2, "only the good one: {seen:?}");
    assert_eq!(seen[1].json()["timestamp"], "2026-05-01T06:06:00.000+02:00");
    let s =
        w.status_until("one sent, three skipped", |s| s["status"]["sent"] == 1 && s["status"]["skipped"] == 3).await;
    assert_eq!(s["status"]["queued"], 0);

    let rows = w.outbox();
    let reason =
        |d: DetectionId| rows.iter().find(|r| r.0 == d).map(|r| (r.1.clone(), r.3.clone().unwrap_or_default()));
    assert_eq!(reason(unconfirmed), None, "never queued");
    assert_eq!(reason(rejected), None, "never queued");
    assert_eq!(reason(weak), None, "below 0.7: never queued");
    assert_eq!(reason(private), Some(("skipped".into(), "the privacy filter removed its audio".into())));
    assert_eq!(reason(dog), Some(("skipped".into(), "it is not a bird".into())));
    assert_eq!(reason(imported), Some(("skipped".into(), "imported history is not shared".into())));
    let words: Vec<&str> =
        s["status"]["recent"].as_array().expect("recent").iter().filter_map(|r| r["reason"].as_str()).collect();
    assert!(words.contains(&"it is not a bird"), "{s}");

    // A lower minimum lets a weaker one go.
    let (code, body) = w.admin.put(&w.path(), json!({"minConfidence": 0.5})).await;
    assert_eq!((code.as_u16(), body["minConfidence"].as_f64()), (200, Some(0.5)), "{body}");
    let (_, weaker) = w.heard("2026-05-01T04:07:00.000Z", seed::WREN, 0.55, None).await;
    w.decide(weaker, "confirm").await;
    assert_eq!(bw.wait_for(4, 30).await.len(), 4);
}

#[tokio::test]
async fn a_415_and_5xx_are_retried_and_the_soundscape_is_not_sent_twice() {
    let bw = BirdWeather::start().await;
    bw.script(Call::Soundscape, &[(415, fake::WAV_DISCONTINUED), (503, "<html>Service Unavailable</html>")]);
    bw.script(Call::Detection, &[(502, "bad gateway")]);
    let w = world_with(fast(&bw.base)).await;
    w.share().await;
    let (_, d) = w.heard("2026-05-01T04:12:03.000Z", seed::BLACKBIRD, 0.91, None).await;
    w.decide(d, "confirm").await;

    let s = w.status_until("sent after retries", |s| s["status"]["sent"] == 1).await;
    let seen = bw.seen();
    let statuses: Vec<(bool, u16)> = seen.iter().map(|r| (r.is_soundscape(), r.status)).collect();
    assert_eq!(statuses, [(true, 415), (true, 503), (true, 201), (false, 502), (false, 201)], "{seen:?}");
    let given: Value = serde_json::from_str(&seen[2].answer).expect("answer");
    let first_id = given["soundscape"]["id"].as_i64().expect("an id");
    assert_eq!(seen[3].json()["soundscapeId"], first_id, "the detection refers to the one soundscape that was taken");
    assert_eq!(seen[4].json()["soundscapeId"], first_id, "and a retried detection does not upload it again");
    let rows = w.outbox();
    assert_eq!((rows[0].1.as_str(), rows[0].2), ("sent", 4), "four attempts: {rows:?}");
    assert!(s["status"]["lastError"].as_str().is_some_and(|e| e.contains("HTTP 502")), "{s}");
}

#[tokio::test]
async fn a_422_is_final_and_the_status_says_so() {
    let bw = BirdWeather::start().await;
    bw.script(Call::Detection, &[(422, fake::UNKNOWN_SPECIES)]);
    let w = world_with(fast(&bw.base)).await;
    w.share().await;
    let (_, d) = w.heard("2026-05-01T04:12:03.000Z", seed::BLACKBIRD, 0.91, None).await;
    w.decide(d, "confirm").await;
    let s = w.status_until("the species refused", |s| s["status"]["skipped"] == 1).await;
    let recent = &s["status"]["recent"][0];
    assert_eq!(recent["status"], "skipped");
    assert!(recent["reason"].as_str().is_some_and(|r| r.contains("does not accept this species")), "{s}");
    assert_eq!(recent["httpStatus"], 422);
    assert_eq!(recent["commonName"], "Eurasian Blackbird");
    let rows = w.outbox();
    assert_eq!((rows[0].1.as_str(), rows[0].2), ("skipped", 1), "one attempt, never again: {rows:?}");
    assert_eq!(bw.seen().len(), 2);
    assert_eq!(s["status"]["queued"], 0);
}

#[tokio::test]
async fn a_hub_catches_up_after_birdweather_was_down_across_a_restart() {
    // An address where nothing listens yet.
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").to_string()
    };
    let base = format!("http://{addr}/api/v1");
    let w = world_with(fast(&base)).await;
    w.share().await;
    let (_, a) = w.heard("2026-05-01T04:12:03.000Z", seed::BLACKBIRD, 0.91, None).await;
    let (_, b) = w.heard("2026-05-01T04:13:03.000Z", seed::WREN, 0.88, None).await;
    w.decide(a, "confirm").await;
    w.decide(b, "confirm").await;
    let s = w
        .status_until("a failed attempt", |s| {
            s["status"]["lastError"].as_str().is_some_and(|e| e.contains("could not connect to BirdWeather"))
        })
        .await;
    assert_eq!(s["status"]["sent"], 0);
    assert!(w.outbox().iter().all(|r| r.1 == "queued"), "kept, not given up");

    // The hub stops while BirdWeather is down; BirdWeather comes back; the hub starts again.
    let World { hub, sat, .. } = w;
    let dir = hub.stop_keeping_data().await;
    let bw = BirdWeather::start_on(&addr).await;
    let hub = common::spawn_hub_in(dir, fast(&base)).await;
    let seen = bw.wait_for(4, 40).await;
    let admin = hub.login("owner@example.org").await;
    for _ in 0..300 {
        let (_, s) = admin.get(&format!("/satellites/{sat}/birdweather")).await;
        if s["status"]["sent"] == 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let (_, s) = admin.get(&format!("/satellites/{sat}/birdweather")).await;
    assert_eq!(s["status"]["sent"], 2, "{s}");
    let seen = bw.wait_for(seen.len() + 1, 1).await;
    let names: Vec<String> = seen
        .iter()
        .filter(|r| r.is_detection())
        .map(|r| r.json()["commonName"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(names.len(), 2, "each detection once: {names:?}");
    assert!(names.contains(&"Eurasian Blackbird".to_owned()) && names.contains(&"House Wren".to_owned()));
    assert_eq!(seen.iter().filter(|r| r.is_soundscape()).count(), 2, "each soundscape once");
}

#[tokio::test]
async fn the_token_is_never_answered_and_is_sealed_at_rest() {
    let bw = BirdWeather::start().await;
    let w = world_with(fast(&bw.base)).await;
    let sat = w.sat;
    let mut answers: Vec<String> = Vec::new();

    // Before a token: nothing set; a first change needs one.
    let s = w.status().await;
    assert_eq!((s["tokenSet"].as_bool(), s["enabled"].as_bool()), (Some(false), Some(false)));
    assert_error(&w.admin.put(&w.path(), json!({"enabled": true})).await, 422, "token_required");
    let bad = w.admin.put(&w.path(), json!({"token": format!("{TOKEN}/../x")})).await;
    answers.push(bad.1.to_string());
    assert_error(&bad, 422, "invalid_token");
    let bad = w.admin.put(&w.path(), json!({"token": TOKEN, "minConfidence": 7})).await;
    answers.push(bad.1.to_string());
    assert_error(&bad, 422, "invalid_min_confidence");

    // Only the team's admins change or test it; members read it; other teams do not see it.
    assert_error(&w.member.put(&w.path(), json!({"token": TOKEN})).await, 403, "admin_required");
    let shared = w.share().await;
    assert_eq!(shared["tokenLast4"], "XyZ9");
    answers.push(shared.to_string());
    assert_error(&w.member.post(&format!("{}/test", w.path()), json!({})).await, 403, "admin_required");
    assert_error(&w.member.delete(&w.path()).await, 403, "admin_required");
    let stranger = w.hub.user("stranger@example.org", false).await;
    let other = w.hub.login(&stranger.email).await;
    assert_error(&other.get(&w.path()).await, 404, "satellite_not_found");
    assert_error(&other.put(&w.path(), json!({"token": "zzzzzzzz"})).await, 404, "satellite_not_found");

    answers.push(w.status().await.to_string());
    answers.push(w.admin.get(&w.path()).await.1.to_string());
    answers.push(w.admin.get("/satellites").await.1.to_string());
    answers.push(w.admin.get(&format!("/satellites/{sat}")).await.1.to_string());
    answers.push(w.admin.post(&format!("{}/test", w.path()), json!({})).await.1.to_string());
    bw.script(Call::Stats, &[(403, &format!(r#"{{"success":false,"message":"bad token {TOKEN}"}}"#))]);
    answers.push(w.admin.post(&format!("{}/test", w.path()), json!({})).await.1.to_string());
    let page = w.admin.client.get(format!("{}/satellites/{sat}", w.hub.base_url)).send().await.expect("page");
    assert_eq!(page.status(), 200);
    let html = page.text().await.expect("html");
    assert!(html.contains("id=\"sat-birdweather\"") && html.contains("…XyZ9"), "the card names only the last 4");
    answers.push(html);
    for a in &answers {
        assert!(!a.contains(TOKEN), "the token leaked: {a}");
    }

    // Sealed in the database: the file (and its write-ahead log) never holds it in clear.
    let sealed: String =
        w.hub.sql(|c| c.query_row("SELECT token_sealed FROM birdweather_stations", [], |r| r.get(0)).expect("station"));
    assert!(sealed.starts_with("v1:") && !sealed.contains(TOKEN));
    for file in ["birdhub.db", "birdhub.db-wal"] {
        let bytes = std::fs::read(w.hub.data_dir.join(file)).unwrap_or_default();
        assert!(!bytes.windows(TOKEN.len()).any(|win| win == TOKEN.as_bytes()), "{file} holds the token in clear");
    }

    // Stop sharing: the token is forgotten.
    let (code, _) = w.admin.delete(&w.path()).await;
    assert_eq!(code, 204);
    assert_eq!(w.status().await["tokenSet"], false);
    assert_error(&w.admin.delete(&w.path()).await, 404, "birdweather_not_configured");
}

#[tokio::test]
async fn the_token_test_only_reads_the_station() {
    let bw = BirdWeather::start().await;
    let w = world_with(fast(&bw.base)).await;
    assert_error(&w.admin.post(&format!("{}/test", w.path()), json!({})).await, 404, "birdweather_not_configured");
    w.share().await;
    let test = format!("{}/test", w.path());

    let (code, r) = w.admin.post(&test, json!({})).await;
    assert_eq!(code, 200, "{r}");
    assert_eq!((r["ok"].as_bool(), r["detections"].as_i64(), r["species"].as_i64()), (Some(true), Some(12), Some(4)));
    assert_eq!(r["summary"], "BirdWeather knows this station: 12 detections of 4 species today.");

    bw.script(Call::Stats, &[(401, r#"{"success":false}"#), (404, "{}")]);
    let (_, r) = w.admin.post(&test, json!({})).await;
    assert_eq!(r["ok"], false);
    assert!(r["summary"].as_str().is_some_and(|s| s.starts_with("BirdWeather refused the token")), "{r}");
    let (_, r) = w.admin.post(&test, json!({})).await;
    assert!(r["summary"].as_str().is_some_and(|s| s.contains("does not know this station")), "{r}");

    let seen = bw.seen();
    assert_eq!(seen.len(), 3);
    for r in &seen {
        assert_eq!((r.method.as_str(), r.path.as_str()), ("GET", format!("/api/v1/stations/{TOKEN}/stats").as_str()));
        assert_eq!(r.query, "period=day");
        assert!(r.body.is_empty(), "nothing is posted");
    }
}

/// Every piece of `token` 8 characters long, in lower case.
fn token_pieces(token: &str) -> Vec<String> {
    let lower = token.to_lowercase();
    (0..=lower.len() - 8).map(|i| lower[i..i + 8].to_owned()).collect()
}

#[tokio::test]
async fn what_birdweather_writes_back_never_reaches_the_test_answer_or_last_error() {
    let bw = BirdWeather::start().await;
    // Echoes of the token as a careless BirdWeather (or a proxy before it) might write them.
    let upper = format!(r#"{{"success":false,"message":"station {} not found"}}"#, TOKEN.to_uppercase());
    let cut = format!(r#"{{"success":false,"errors":{{"token":["{}… is invalid"]}}}}"#, &TOKEN[..15]);
    let plain = format!("Internal error for /stations/{}/soundscapes", TOKEN.to_lowercase());
    let hostile = [(400, upper.as_str()), (422, cut.as_str()), (500, plain.as_str())];
    bw.script(Call::Stats, &hostile);
    bw.script(Call::Soundscape, &[(500, upper.as_str()), (500, plain.as_str()), (422, cut.as_str())]);
    let w = world_with(fast(&bw.base)).await;
    w.share().await;
    let viewer = w.hub.member_of("vic@example.org", w.team, birdhub::domain::Role::Viewer).await;
    let viewer = w.hub.login(&viewer.email).await;

    let mut answers = Vec::new();
    for _ in &hostile {
        let (code, r) = w.admin.post(&format!("{}/test", w.path()), json!({})).await;
        assert_eq!((code.as_u16(), r["ok"].as_bool()), (200, Some(false)), "{r}");
        answers.push(r.to_string());
    }
    let (_, d) = w.heard("2026-05-01T04:12:03.000Z", seed::BLACKBIRD, 0.91, None).await;
    w.decide(d, "confirm").await;
    for _ in 0..300 {
        let (code, s) = viewer.get(&w.path()).await;
        assert_eq!(code, 200, "a viewer reads the status: {s}");
        answers.push(s.to_string());
        if s["status"]["lastError"].as_str().is_some_and(|e| e.contains("HTTP 422")) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let last = answers.last().cloned().unwrap_or_default();
    assert!(last.contains("HTTP 422"), "the third answer was final: {last}");
    assert!(answers.iter().any(|a| a.contains("HTTP 500")), "the 500s were seen as they happened");
    assert_eq!(bw.seen().iter().filter(|r| r.is_soundscape()).count(), 3);
    for a in &answers {
        let lower = a.to_lowercase();
        for piece in token_pieces(TOKEN) {
            assert!(!lower.contains(&piece), "a piece of the token ({piece}) reached an answer: {a}");
        }
    }
}
