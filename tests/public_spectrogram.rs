//! Issue 48, finding 4 (public side): a stranger with a share link asks for the spectrogram of a
//! detection whose stored "clip" is a 300 MB file that is not audio, four and more times at once.
//! The hub used to read the whole file into memory for every request (830 MB for four) and answer
//! 422 each time. Now it reads at most the start of it, remembers that it does not decode, and
//! answers the next requests without reading it again.
//!
//! One test in its own binary: the memory measured is this process's (the hub runs in it).

mod common;

use common::seed;
use futures_util::future::join_all;

/// A field of `/proc/self/status` in bytes.
fn status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find(|l| l.starts_with(field)).unwrap_or_else(|| panic!("no {field}"));
    let kib: u64 = line.split_whitespace().nth(1).expect("a number").parse().expect("kB");
    kib * 1024
}

const MB: u64 = 1_048_576;

#[tokio::test]
async fn a_huge_undecodable_clip_is_refused_without_being_read_whole_or_twice() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let sat = seed::satellite(&hub, owner.tenant, "garden").await;
    let (chunk, detection) = seed::heard(&hub, owner.tenant, sat, "2026-05-01T05:00:00.000Z", seed::ROBIN, 0.8).await;
    // An old import's row: its file is 300 MB and not audio.
    let key = format!("audio/{}/{chunk}.wav", owner.tenant);
    let path = hub.state().objects.path_of(&key).expect("path");
    std::fs::File::create(&path).expect("file").set_len(300 * MB).expect("300 MB");

    let api = hub.login(&owner.email).await;
    let (status, made) = api.get(&format!("/detections/{detection}/share")).await;
    assert_eq!(status, 200, "{made}");
    let url = hub.api(&format!("/share/spectrogram/{detection}/{}", made["token"].as_str().expect("token")));

    // The peak resident memory from here on (writing 5 resets the high-water mark).
    std::fs::write("/proc/self/clear_refs", "5").expect("reset the peak");
    let before = status_bytes("VmRSS:");
    let client = reqwest::Client::new();
    let started = std::time::Instant::now();
    let round = || join_all((0..6).map(|_| client.get(&url).send()));
    for answer in round().await {
        let answer = answer.expect("request");
        assert_eq!(answer.status(), 422);
        let body: serde_json::Value = answer.json().await.expect("json");
        assert_eq!(body["code"], "unreadable_audio", "{body}");
    }
    let grew = status_bytes("VmHWM:").saturating_sub(before);
    println!("six parallel requests: {:?}, peak RSS grew {} MB", started.elapsed(), grew / MB);
    assert!(grew < 100 * MB, "the peak memory grew {} MB", grew / MB);

    // The file is now a valid recording: an answer that still says 422 never read it again.
    std::fs::write(&path, common::sat::tone_wav(48_000, 3.0)).expect("replace");
    for answer in round().await {
        assert_eq!(answer.expect("request").status(), 422, "remembered as undecodable, not read again");
    }
}
