//! The real BirdNET 2.4 model on real audio (the model directory comes from `models/fetch.sh`).

use std::sync::OnceLock;

use birdhub::inference::{
    Classifier, ClassifierOptions, ModelDir, Precision, RangeFilter,
    audio::{self, Audio, WINDOW},
    frontend::read_f32,
    labels::{self, Labels},
    predict,
};
use chrono::NaiveDate;

fn model_dir() -> ModelDir {
    let dir = ModelDir::locate("").unwrap_or_else(|e| panic!("{e}"));
    dir.check().unwrap_or_else(|e| panic!("{e}"));
    dir
}

fn classifier() -> &'static Classifier {
    static C: OnceLock<Classifier> = OnceLock::new();
    C.get_or_init(|| {
        Classifier::load(
            &model_dir(),
            ClassifierOptions { threads: 2, spin: true, precision: Precision::Fp32, sessions: 1 },
        )
        .expect("load classifier")
    })
}

fn birds_10s() -> Audio {
    let bytes = std::fs::read(model_dir().file("fixtures/birds_10s.wav")).expect("fixture");
    audio::decode_wav(&bytes, 600.0).expect("decode")
}

/// (scientific name, confidence) of the best species per 3 s window.
fn top1_per_window(samples_48k: &[f32]) -> Vec<(String, f32)> {
    let c = classifier();
    let windows = audio::windows(samples_48k, 0);
    let refs: Vec<&[f32]> = windows.iter().map(|(_, w)| w.as_slice()).collect();
    c.logits(&refs)
        .expect("logits")
        .iter()
        .map(|l| {
            let best = predict::top(l, c.labels(), 1.0, 0.0, 1).remove(0);
            (best.scientific_name, best.confidence)
        })
        .collect()
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

fn top5(logits: &[f32]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..logits.len()).collect();
    idx.sort_by(|a, b| logits[*b].total_cmp(&logits[*a]));
    idx.truncate(5);
    idx
}

#[test]
fn native_front_end_matches_the_reference_spectrogram() {
    let dir = model_dir();
    let input = read_f32(&dir.file("fixtures/parity_input.f32"), WINDOW).expect("input");
    let reference = read_f32(&dir.file("fixtures/parity_frontend.f32"), 2 * 96 * 511).expect("reference");
    let ours = classifier().spectrogram(&input);
    let diff = max_abs_diff(&ours, &reference);
    println!("front end max |diff| vs reference: {diff:e}");
    assert!(diff < 1e-3, "front end differs by {diff}");
}

#[test]
fn logits_agree_with_tflite_on_the_fixed_input() {
    let dir = model_dir();
    let input = read_f32(&dir.file("fixtures/parity_input.f32"), WINDOW).expect("input");
    let tflite = read_f32(&dir.file("fixtures/parity_logits_tflite.f32"), 6522).expect("tflite logits");
    let ours = classifier().logits(&[&input]).expect("logits").remove(0);
    let diff = max_abs_diff(&ours, &tflite);
    println!("logits max |diff| vs TFLite: {diff:e}");
    assert!(diff < 0.05, "logits differ from TFLite by {diff}");
    assert_eq!(top5(&ours), top5(&tflite), "same top-5 species in the same order");
}

#[test]
fn names_plausible_species_in_the_real_recording() {
    let recording = birds_10s();
    assert_eq!(recording.sample_rate, 32_000, "the fixture exercises resampling");
    let top = top1_per_window(&audio::to_model_rate(recording).expect("resample"));
    println!("{top:?}");
    assert_eq!(top.len(), 4, "10 s is three full windows and a 1 s tail");
    // A Pennsylvania recording full of wood-warbler song: Tennessee Warbler is clearly heard.
    assert!(
        top.iter().any(|(name, conf)| name == "Leiothlypis peregrina" && *conf >= 0.7),
        "Tennessee Warbler detected above the default threshold: {top:?}"
    );
    let warblers = ["Leiothlypis", "Setophaga", "Mniotilta", "Parkesia", "Seiurus", "Geothlypis", "Vermivora"];
    let plausible = top.iter().filter(|(n, _)| warblers.iter().any(|g| n.starts_with(g))).count();
    assert!(plausible >= 3, "mostly New World warblers: {top:?}");
}

#[test]
fn a_44_1_khz_recording_gives_the_same_top_species_as_48_khz() {
    let recording = birds_10s();
    let at_48k = audio::to_model_rate(recording.clone()).expect("48k");
    // Make a real 44.1 kHz WAV of the same audio, then run it through the whole decode path.
    let at_44k = {
        let mut r = rubato_to(recording, 44_100);
        r.iter_mut().for_each(|s| *s = s.clamp(-1.0, 1.0));
        audio::encode_wav_i16(&r, 44_100)
    };
    let decoded = audio::decode_wav(&at_44k, 600.0).expect("decode 44.1k");
    assert_eq!(decoded.sample_rate, 44_100);
    let from_44k = audio::to_model_rate(decoded).expect("resample 44.1k");
    let a: Vec<String> = top1_per_window(&at_48k).into_iter().map(|t| t.0).collect();
    let b: Vec<String> = top1_per_window(&from_44k).into_iter().map(|t| t.0).collect();
    assert_eq!(a, b);
}

fn rubato_to(audio: Audio, rate: u32) -> Vec<f32> {
    use rubato::{Fft, FixedSync, Resampler, audioadapter_buffers::direct::SequentialSliceOfVecs};
    let len = audio.samples.len();
    let mut r =
        Fft::<f32>::new(audio.sample_rate as usize, rate as usize, 1024, 1, FixedSync::Input).expect("resampler");
    let ch = [audio.samples];
    let input = SequentialSliceOfVecs::new(&ch, 1, len).expect("adapter");
    r.process_all(&input, len, None).expect("resample").take_data()
}

#[test]
fn a_short_chunk_is_padded_and_still_classified() {
    let at_48k = audio::to_model_rate(birds_10s()).expect("resample");
    let two_seconds = &at_48k[144_000..240_000];
    let windows = audio::windows(two_seconds, 0);
    assert_eq!(windows.len(), 1);
    let logits = classifier().logits(&[&windows[0].1]).expect("logits").remove(0);
    let best = predict::top(&logits, classifier().labels(), 1.0, 0.0, 1).remove(0);
    assert_eq!(best.scientific_name, "Leiothlypis peregrina", "the song in those 2 s is still recognised");
    assert!(classifier().logits(&[&two_seconds[..1000]]).is_err(), "unpadded windows are refused, not misread");
}

#[test]
fn sessions_per_worker_answer_as_one_session_does_from_threads_at_once() {
    // The hub's shape: one single-thread session per inference worker, sharing the weights.
    let at_48k = audio::to_model_rate(birds_10s()).expect("resample");
    let windows = audio::windows(&at_48k, 0);
    let refs: Vec<&[f32]> = windows.iter().map(|(_, w)| w.as_slice()).collect();
    let expected = classifier().logits(&refs).expect("one session");
    let options = ClassifierOptions { threads: 1, spin: false, precision: Precision::Fp32, sessions: 2 };
    let pair = Classifier::load(&model_dir(), options).expect("two sessions");
    std::thread::scope(|s| {
        let runs: Vec<_> = (0..4).map(|_| s.spawn(|| pair.logits(&refs).expect("logits"))).collect();
        for run in runs {
            let got = run.join().expect("thread");
            for (a, b) in got.iter().zip(&expected) {
                assert!(max_abs_diff(a, b) < 1e-3, "a session disagrees by {}", max_abs_diff(a, b));
            }
        }
    });
    pair.release_batch_memory().expect("release");
    assert_eq!(pair.exclusive_released(|| 7).expect("exclusive"), 7);
}

#[test]
fn batches_give_the_same_answers_as_single_windows() {
    let at_48k = audio::to_model_rate(birds_10s()).expect("resample");
    let windows = audio::windows(&at_48k, 0);
    let refs: Vec<&[f32]> = windows.iter().map(|(_, w)| w.as_slice()).collect();
    let batched = classifier().logits(&refs).expect("batch");
    for (w, b) in refs.iter().zip(&batched) {
        let single = classifier().logits(&[w]).expect("single").remove(0);
        assert!(max_abs_diff(&single, b) < 1e-3);
    }
}

#[test]
fn the_range_model_knows_where_and_when_a_species_lives() {
    let dir = model_dir();
    let filter = RangeFilter::load(&dir, 0.03).expect("meta model");
    let labels = Labels::load(&dir.file("labels/en.txt")).expect("labels");
    let idx = |code: &str| labels.index_of(code).unwrap_or_else(|| panic!("{code} in labels"));
    let may = NaiveDate::from_ymd_opt(2026, 5, 15).expect("date");
    let (ithaca, cape_town) = ((42.48, -76.45), (-33.92, 18.42));

    assert!(
        filter.expected(ithaca.0, ithaca.1, may, idx("turdus_migratorius")).expect("run"),
        "American Robin in New York"
    );
    assert!(
        filter.expected(ithaca.0, ithaca.1, may, idx("leiothlypis_peregrina")).expect("run"),
        "Tennessee Warbler migrates through in May"
    );
    assert!(
        !filter.expected(ithaca.0, ithaca.1, may, idx("turdus_merula")).expect("run"),
        "no Eurasian Blackbird in New York"
    );
    assert!(
        !filter.expected(cape_town.0, cape_town.1, may, idx("leiothlypis_peregrina")).expect("run"),
        "no Tennessee Warbler in Cape Town"
    );
    assert_eq!(filter.cached(), 2, "one model run per place and week");
    assert!(filter.scores(95.0, 0.0, 20).is_err(), "impossible coordinates are refused");
}

#[test]
fn every_shipped_language_parses_and_lines_up_with_english() {
    let dir = model_dir();
    let english = Labels::load(&dir.file("labels/en.txt")).expect("english");
    assert_eq!(english.len(), 6522);
    let langs = labels::languages(&dir.path);
    assert!(langs.len() >= 30, "translations shipped: {langs:?}");
    for lang in &langs {
        let path = dir.file(&format!("labels/{lang}.txt"));
        let translated = Labels::load(&path).unwrap_or_else(|e| panic!("{lang}: {e}"));
        english.check_translation(&translated, lang).unwrap_or_else(|e| panic!("{e}"));
    }
    let german = Labels::load(&dir.file("labels/de.txt")).expect("de");
    let robin = english.index_of("erithacus_rubecula").expect("robin");
    assert_eq!(german.get(robin).map(|l| l.common.as_str()), Some("Rotkehlchen"));
}

#[test]
fn a_missing_model_says_how_to_fetch_it() {
    let err = ModelDir::locate("/nonexistent/birdnet").expect_err("missing").to_string();
    assert!(err.contains("models/fetch.sh"), "{err}");
    let empty = tempfile::tempdir().expect("tempdir");
    let dir = ModelDir { path: empty.path().into() };
    let err = dir.check().expect_err("empty dir").to_string();
    assert!(err.contains("birdnet_net.onnx") && err.contains("fetch"), "{err}");
}
