//! `inference.precision`: the quantised copies of the network that `models/fetch.sh` ships, and
//! what happens when the model directory lacks the one asked for.

use std::process::Command;

use birdhub::inference::{Classifier, ClassifierOptions, ModelDir, Precision, audio, predict};

const BIN: &str = env!("CARGO_BIN_EXE_birdhub");

fn model_dir() -> ModelDir {
    let dir = ModelDir::locate("").unwrap_or_else(|e| panic!("{e}"));
    dir.check().unwrap_or_else(|e| panic!("{e}"));
    dir
}

/// The best species and its confidence in the fixture's 3-6 s window, with `precision`.
fn best_in_second_window(precision: Precision) -> (Precision, String, f32) {
    let dir = model_dir();
    let classifier = Classifier::load(&dir, ClassifierOptions { threads: 2, spin: false, precision, sessions: 1 })
        .expect("load classifier");
    let bytes = std::fs::read(dir.file("fixtures/birds_10s.wav")).expect("fixture");
    let samples = audio::to_model_rate(audio::decode_wav(&bytes, 60.0).expect("decode")).expect("resample");
    let windows = audio::windows(&samples, 0);
    assert_eq!(windows[1].0, 3 * audio::SAMPLE_RATE as usize, "the second window starts at 3 s");
    let logits = classifier.logits(&[windows[1].1.as_slice()]).expect("logits").remove(0);
    let best = predict::top(&logits, classifier.labels(), 1.0, 0.0, 1).remove(0);
    (classifier.precision(), best.scientific_name, best.confidence)
}

#[test]
fn int8_names_the_tennessee_warbler_in_the_fixture() {
    let (loaded, name, confidence) = best_in_second_window(Precision::Int8);
    assert_eq!(loaded, Precision::Int8, "models/fetch.sh ships {}", Precision::Int8.file_name());
    assert_eq!(name, "Leiothlypis peregrina", "INT8 hears the Tennessee Warbler at 3-6 s ({confidence})");
    let (_, _, fp32) = best_in_second_window(Precision::Fp32);
    println!("3-6 s: int8 {confidence:.3}, fp32 {fp32:.3}");
    assert!(confidence >= 0.7, "above the default threshold, as FP32 ({fp32}): {confidence}");
}

#[test]
fn fp16_names_the_tennessee_warbler_in_the_fixture() {
    let (loaded, name, confidence) = best_in_second_window(Precision::Fp16);
    assert_eq!(loaded, Precision::Fp16, "models/fetch.sh ships {}", Precision::Fp16.file_name());
    assert_eq!(name, "Leiothlypis peregrina", "FP16 hears the Tennessee Warbler at 3-6 s ({confidence})");
    assert!(confidence >= 0.7, "{confidence}");
}

/// A model directory like the shipped one, but without the INT8 network.
fn directory_without_int8(into: &std::path::Path) -> std::path::PathBuf {
    let shipped = model_dir();
    let copy = into.join("model");
    std::fs::create_dir(&copy).expect("dir");
    for entry in std::fs::read_dir(&shipped.path).expect("read model dir") {
        let entry = entry.expect("entry");
        if entry.file_name() != Precision::Int8.file_name() {
            let target = std::fs::canonicalize(entry.path()).expect("canonical path");
            std::os::unix::fs::symlink(target, copy.join(entry.file_name())).expect("link");
        }
    }
    copy
}

#[test]
fn a_missing_precision_file_falls_back_to_fp32_with_a_warning() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let model = directory_without_int8(tmp.path());
    let config = tmp.path().join("birdhub.toml");
    std::fs::write(&config, "[inference]\nprecision = \"int8\"\n").expect("config");
    let fixture = model_dir().file("fixtures/birds_10s.wav");
    let mut cmd = Command::new(BIN);
    cmd.arg("classify").arg(&fixture).arg("--config").arg(&config).arg("--data-dir").arg(tmp.path().join("data"));
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("BIRDHUB_") || k == "RUST_LOG") {
        cmd.env_remove(k);
    }
    let out = cmd.env("BIRDHUB_INFERENCE__MODEL_DIR", &model).output().expect("run birdhub");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "no crash: {stderr}");
    assert!(stderr.contains("no int8 network; running fp32 instead"), "the person is told: {stderr}");
    assert!(stderr.contains("birdnet_net_int8.onnx"), "the missing file is named: {stderr}");
    assert!(stdout.contains("model birdnet-v2.4 (fp32)"), "{stdout}");
    assert!(stdout.contains("Tennessee Warbler (Leiothlypis peregrina)"), "FP32 still names the bird: {stdout}");
}

#[test]
fn an_unknown_precision_is_refused_with_the_choices() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let config = tmp.path().join("birdhub.toml");
    std::fs::write(&config, "[inference]\nprecision = \"int4\"\n").expect("config");
    let mut cmd = Command::new(BIN);
    cmd.args(["model", "status"]).arg("--config").arg(&config).arg("--data-dir").arg(tmp.path().join("data"));
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("BIRDHUB_") || k == "RUST_LOG") {
        cmd.env_remove(k);
    }
    let out = cmd.output().expect("run birdhub");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("int4") && stderr.contains("fp32") && stderr.contains("int8"), "{stderr}");
}
