//! `birdhub classify` on FLAC, MP3 and Ogg Vorbis versions of the real fixture (made with ffmpeg
//! at test time, ffmpeg's default encoder settings) names the same top species in every 3 s
//! window as on the WAV; a corrupt file is a clear error.

use std::{
    path::Path,
    process::{Command, Output},
};

const BIN: &str = env!("CARGO_BIN_EXE_birdhub");

/// `birdhub classify FILE --json` with an empty config, isolated from the machine's config.
fn classify(work: &Path, file: &Path) -> Output {
    let config = work.join("empty.toml");
    std::fs::write(&config, "").expect("config");
    let mut cmd = Command::new(BIN);
    cmd.arg("classify")
        .arg(file)
        .arg("--json")
        .args(["--threshold", "0.3"])
        .arg("--config")
        .arg(&config)
        .arg("--data-dir")
        .arg(work.join("data"));
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("BIRDHUB_") || k == "RUST_LOG") {
        cmd.env_remove(k);
    }
    cmd.output().expect("run birdhub")
}

fn fixture() -> std::path::PathBuf {
    let dir = birdhub::inference::ModelDir::locate("").expect("model dir (run models/fetch.sh)");
    dir.file("fixtures/birds_10s.wav")
}

fn convert(wav: &Path, out: &Path) {
    let status = Command::new("ffmpeg")
        .args(["-nostdin", "-loglevel", "error", "-y", "-i"])
        .arg(wav)
        .arg(out)
        .status()
        .expect("ffmpeg is installed");
    assert!(status.success(), "ffmpeg made {}", out.display());
}

/// The report's duration and each window's top species (None when nothing passed the threshold).
fn summary(out: &Output) -> (f64, Vec<Option<String>>) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    let windows = report["windows"].as_array().expect("windows");
    let tops: Vec<Option<String>> =
        windows.iter().map(|w| w["detections"][0]["scientificName"].as_str().map(str::to_owned)).collect();
    (report["durationSeconds"].as_f64().expect("duration"), tops)
}

#[test]
fn flac_mp3_and_ogg_name_the_same_birds_as_the_wav() {
    let work = tempfile::tempdir().expect("tempdir");
    let wav = fixture();
    let (wav_secs, wav_tops) = summary(&classify(work.path(), &wav));
    assert!(wav_tops.iter().flatten().count() >= 3, "the fixture has birds in three windows: {wav_tops:?}");
    for ext in ["flac", "mp3", "ogg"] {
        let file = work.path().join(format!("birds.{ext}"));
        convert(&wav, &file);
        let (secs, tops) = summary(&classify(work.path(), &file));
        assert!((secs - wav_secs).abs() < 0.1, "{ext}: {secs} s vs {wav_secs} s");
        assert_eq!(tops, wav_tops, "{ext}: every window's top species");
    }
}

#[test]
fn a_corrupt_file_is_a_clear_error_with_a_failing_exit_code() {
    let work = tempfile::tempdir().expect("tempdir");
    let bad = work.path().join("broken.mp3");
    let garbage: Vec<u8> = (0..20_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8).collect();
    std::fs::write(&bad, garbage).expect("write");
    let out = classify(work.path(), &bad);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("broken.mp3"), "names the file: {stderr}");
    assert!(stderr.contains("not a readable audio file"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    // A real FLAC cut short after its header still decodes what is there or fails cleanly.
    let flac = work.path().join("birds.flac");
    convert(&fixture(), &flac);
    let bytes = std::fs::read(&flac).expect("read");
    let cut = work.path().join("cut.flac");
    std::fs::write(&cut, &bytes[..200]).expect("write");
    let out = classify(work.path(), &cut);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(1), "{stderr}");
}
