//! The general decoder against real FLAC, MP3 and Ogg Vorbis files that ffmpeg makes from a WAV
//! at test time, and the streaming resampler against the whole-clip one.

use std::{path::Path, process::Command};

use super::{
    decode::{AudioStream, decode_bytes, decode_file, has_audio_extension},
    resample::{StreamResampler, resample},
    *,
};

/// 10 s of a 1 kHz tone at half scale, 44.1 kHz stereo (both channels alike).
fn tone_wav(path: &Path) {
    let spec =
        hound::WavSpec { channels: 2, sample_rate: 44_100, bits_per_sample: 16, sample_format: SampleFormat::Int };
    let mut w = hound::WavWriter::create(path, spec).expect("wav");
    for i in 0..441_000 {
        let s = ((i as f32 * 1000.0 * std::f32::consts::TAU / 44_100.0).sin() * 16_000.0) as i16;
        w.write_sample(s).expect("sample");
        w.write_sample(s).expect("sample");
    }
    w.finalize().expect("finalize");
}

/// `ffmpeg -i wav out.EXT` with the codec ffmpeg picks for the extension.
fn convert(wav: &Path, out: &Path) {
    let status = Command::new("ffmpeg")
        .args(["-nostdin", "-loglevel", "error", "-y", "-i"])
        .arg(wav)
        .arg(out)
        .status()
        .expect("ffmpeg is installed");
    assert!(status.success(), "ffmpeg made {}", out.display());
}

/// Zero crossings per second: 2000 for a 1 kHz tone.
fn crossings_per_second(samples: &[f32], rate: u32) -> f64 {
    let n = samples.windows(2).filter(|w| (w[0] < 0.0) != (w[1] < 0.0)).count();
    n as f64 / (samples.len() as f64 / f64::from(rate))
}

#[test]
fn flac_mp3_and_ogg_decode_to_ten_seconds_of_the_same_tone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let wav = dir.path().join("tone.wav");
    tone_wav(&wav);
    for ext in ["wav", "flac", "mp3", "ogg"] {
        let path = dir.path().join(format!("tone.{ext}"));
        if ext != "wav" {
            convert(&wav, &path);
        }
        assert!(has_audio_extension(&path));
        let audio = decode_file(&path, 60.0).unwrap_or_else(|e| panic!("{ext}: {e}"));
        assert_eq!(audio.sample_rate, 44_100, "{ext}");
        let secs = audio.duration_secs();
        assert!((secs - 10.0).abs() < 0.1, "{ext}: {secs} s");
        let at48 = to_model_rate(audio).expect("resample");
        assert!((at48.len() as f64 / 48_000.0 - 10.0).abs() < 0.1, "{ext}: {} samples at 48 kHz", at48.len());
        let middle = &at48[48_000..432_000];
        let zc = crossings_per_second(middle, 48_000);
        assert!((zc - 2000.0).abs() < 20.0, "{ext}: {zc} crossings/s");
        let rms = (middle.iter().map(|s| s * s).sum::<f32>() / middle.len() as f32).sqrt();
        assert!((rms - 0.345).abs() < 0.03, "{ext}: rms {rms}");
    }
}

#[test]
fn the_real_fixture_decodes_from_every_format() {
    let Ok(model) = crate::inference::ModelDir::locate("") else { return };
    let fixture = model.file("fixtures/birds_10s.wav");
    let dir = tempfile::tempdir().expect("tempdir");
    let reference = decode_file(&fixture, 60.0).expect("wav");
    for ext in ["flac", "mp3", "ogg"] {
        let path = dir.path().join(format!("birds.{ext}"));
        convert(&fixture, &path);
        let audio = decode_file(&path, 60.0).unwrap_or_else(|e| panic!("{ext}: {e}"));
        assert_eq!(audio.sample_rate, reference.sample_rate, "{ext}");
        assert!((audio.duration_secs() - reference.duration_secs()).abs() < 0.1, "{ext}: {}", audio.duration_secs());
        assert!((audio.duration_secs() - 10.0).abs() < 0.2, "{ext}: {}", audio.duration_secs());
    }
}

#[test]
fn corrupt_and_truncated_files_are_errors_not_panics() {
    let garbage: Vec<u8> = (0..10_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    assert!(matches!(decode_bytes(garbage.clone(), Some("mp3"), 60.0), Err(AudioError::Undecodable(_))));
    assert!(matches!(decode_bytes(garbage, None, 60.0), Err(AudioError::Undecodable(_))));
    assert!(matches!(decode_bytes(b"fLaC".to_vec(), Some("flac"), 60.0), Err(AudioError::Undecodable(_))));

    let dir = tempfile::tempdir().expect("tempdir");
    let wav = dir.path().join("tone.wav");
    tone_wav(&wav);
    for ext in ["flac", "mp3", "ogg"] {
        let path = dir.path().join(format!("tone.{ext}"));
        convert(&wav, &path);
        let mut bytes = std::fs::read(&path).expect("read");
        // The second half cut off, and a stretch of the first half scrambled.
        bytes.truncate(bytes.len() / 2);
        let n = bytes.len();
        for (i, b) in bytes[n / 4..n / 4 + 2000].iter_mut().enumerate() {
            *b ^= (i * 37) as u8;
        }
        // Either some audio (decoders resync past damage) or a clear error; never a panic.
        match decode_bytes(bytes, Some(ext), 60.0) {
            Ok(audio) => assert!(audio.duration_secs() < 6.0, "{ext}"),
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
}

#[test]
fn a_recording_longer_than_the_cap_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let wav = dir.path().join("tone.wav");
    tone_wav(&wav);
    let flac = dir.path().join("tone.flac");
    convert(&wav, &flac);
    assert!(matches!(decode_file(&flac, 5.0), Err(AudioError::TooLong { .. })));
}

#[test]
fn streaming_blocks_give_the_same_samples_as_the_whole_clip() {
    let samples: Vec<f32> = (0..100_003).map(|i| ((i as f32) * 0.013).sin() * 0.4).collect();
    let whole = resample(Audio { samples: samples.clone(), sample_rate: 44_100 }, 48_000).expect("whole");
    let mut stream = StreamResampler::new(44_100, 48_000).expect("stream");
    let mut pieces = Vec::new();
    for block in samples.chunks(777) {
        pieces.extend(stream.push(block).expect("push"));
    }
    pieces.extend(stream.finish().expect("finish"));
    assert!(pieces.len().abs_diff(whole.len()) <= 1, "{} vs {}", pieces.len(), whole.len());
    assert_eq!(pieces.len(), (100_003usize * 48_000).div_ceil(44_100));
    let worst = pieces.iter().zip(&whole).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
    assert!(worst < 1e-4, "largest difference {worst}");

    let mut same = StreamResampler::new(48_000, 48_000).expect("passthrough");
    assert_eq!(same.push(&samples[..10]).expect("push"), samples[..10].to_vec());
    assert!(same.finish().expect("finish").is_empty());
}

#[test]
fn an_audio_stream_yields_blocks_at_the_native_rate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let wav = dir.path().join("tone.wav");
    tone_wav(&wav);
    let ogg = dir.path().join("tone.ogg");
    convert(&wav, &ogg);
    let mut stream = AudioStream::open_file(&ogg).expect("open");
    assert_eq!(stream.sample_rate(), 44_100);
    let (mut blocks, mut total) = (0, 0);
    while let Some(block) = stream.next_block().expect("block") {
        blocks += 1;
        total += block.len();
    }
    assert!(blocks > 10, "decoded packet by packet, not at once");
    assert!((total as f64 / 44_100.0 - 10.0).abs() < 0.1, "{total}");
}
