use super::*;

fn wav(spec: hound::WavSpec, write: impl FnOnce(&mut hound::WavWriter<&mut Cursor<Vec<u8>>>)) -> Vec<u8> {
    let mut cursor = Cursor::new(Vec::new());
    let mut w = hound::WavWriter::new(&mut cursor, spec).expect("writer");
    write(&mut w);
    w.finalize().expect("finalize");
    cursor.into_inner()
}

fn spec(channels: u16, rate: u32, bits: u16, format: SampleFormat) -> hound::WavSpec {
    hound::WavSpec { channels, sample_rate: rate, bits_per_sample: bits, sample_format: format }
}

#[test]
fn decodes_every_supported_sample_format_to_the_same_signal() {
    let n = 4800;
    let signal: Vec<f32> = (0..n).map(|i| (i as f32 * 0.05).sin() * 0.5).collect();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "i16",
            wav(spec(1, 48_000, 16, SampleFormat::Int), |w| {
                signal.iter().for_each(|s| w.write_sample((s * 32768.0) as i16).expect("w"))
            }),
        ),
        (
            "i24",
            wav(spec(1, 48_000, 24, SampleFormat::Int), |w| {
                signal.iter().for_each(|s| w.write_sample((s * 8_388_608.0) as i32).expect("w"))
            }),
        ),
        (
            "i32",
            wav(spec(1, 48_000, 32, SampleFormat::Int), |w| {
                signal.iter().for_each(|s| w.write_sample((f64::from(*s) * 2_147_483_648.0) as i32).expect("w"))
            }),
        ),
        (
            "f32",
            wav(spec(1, 48_000, 32, SampleFormat::Float), |w| {
                signal.iter().for_each(|s| w.write_sample(*s).expect("w"))
            }),
        ),
        (
            "stereo",
            wav(spec(2, 48_000, 16, SampleFormat::Int), |w| {
                // left carries 2x the signal, right carries 0: the mono mix is the signal.
                signal.iter().for_each(|s| {
                    w.write_sample((s * 2.0 * 32767.0) as i16).expect("w");
                    w.write_sample(0i16).expect("w");
                })
            }),
        ),
    ];
    for (name, bytes) in cases {
        let audio = decode_wav(&bytes, 60.0).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(audio.sample_rate, 48_000, "{name}");
        assert_eq!(audio.samples.len(), n, "{name}");
        let worst = audio.samples.iter().zip(&signal).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        assert!(worst < 1e-3, "{name}: off by {worst}");
    }
}

#[test]
fn malformed_wavs_are_clear_errors_never_panics() {
    let good = wav(spec(1, 48_000, 16, SampleFormat::Int), |w| {
        (0..48_000).for_each(|i| w.write_sample((i % 100) as i16).expect("w"))
    });
    let mut truncated = good.clone();
    truncated.truncate(good.len() / 2 + 1); // cuts a sample in half
    let mut bad_rate = good.clone();
    bad_rate[24..28].copy_from_slice(&7u32.to_le_bytes());
    let empty_data = wav(spec(1, 48_000, 16, SampleFormat::Int), |_| {});
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("nothing", vec![]),
        ("text", b"this is not audio at all".to_vec()),
        ("riff only", b"RIFF\x10\x00\x00\x00WAVE".to_vec()),
        ("header only", good[..44].to_vec()),
        ("truncated", truncated),
        ("bad rate", bad_rate),
        ("no samples", empty_data),
        ("random", (0..5000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect()),
    ];
    for (name, bytes) in cases {
        assert!(decode_wav(&bytes, 60.0).is_err(), "{name} must be refused");
    }
    let long = decode_wav(&good, 0.5).expect_err("too long");
    assert!(matches!(long, AudioError::TooLong { .. }));
}

#[test]
fn arbitrary_bytes_never_panic() {
    // A cheap deterministic fuzz over mutations of a valid file.
    let good =
        wav(spec(2, 44_100, 24, SampleFormat::Int), |w| (0..2000).for_each(|i| w.write_sample(i * 1000).expect("w")));
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..2000 {
        let mut bytes = good.clone();
        for _ in 0..4 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let at = (seed as usize) % bytes.len();
            bytes[at] = (seed >> 32) as u8;
        }
        seed ^= seed << 13;
        bytes.truncate(((seed >> 40) as usize) % (bytes.len() + 1));
        let _ = decode_wav(&bytes, 60.0);
    }
}

#[test]
fn resampling_preserves_a_tone() {
    let rate = 44_100;
    let tone: Vec<f32> =
        (0..rate).map(|i| (2.0 * std::f32::consts::PI * 1000.0 * i as f32 / rate as f32).sin()).collect();
    let out = to_model_rate(Audio { samples: tone, sample_rate: rate }).expect("resample");
    assert!((out.len() as i64 - 48_000).abs() <= 2, "one second stays one second: {}", out.len());
    // Count zero crossings in the middle: a 1 kHz tone crosses 2000 times a second.
    let mid = &out[4_800..43_200];
    let crossings = mid.windows(2).filter(|w| (w[0] < 0.0) != (w[1] < 0.0)).count();
    assert!((1590..=1610).contains(&crossings), "{crossings} crossings in 0.8 s");
}

#[test]
fn short_chunks_are_padded_and_long_ones_windowed() {
    let two_seconds = vec![0.25f32; 96_000];
    let w = windows(&two_seconds, 0);
    assert_eq!(w.len(), 1, "a 2 s chunk is one padded window");
    assert_eq!(w[0].1.len(), WINDOW);
    assert_eq!(w[0].1[95_999], 0.25);
    assert!(w[0].1[96_000..].iter().all(|s| *s == 0.0), "padding is silence");

    let ten_seconds = vec![0.1f32; 480_000];
    let starts: Vec<usize> = windows(&ten_seconds, 0).iter().map(|(s, _)| *s).collect();
    assert_eq!(starts, [0, 144_000, 288_000, 432_000], "the 1 s tail is kept (padded)");
    let nine_and_a_half = vec![0.1f32; 456_000];
    assert_eq!(windows(&nine_and_a_half, 0).len(), 3, "a 0.5 s tail is dropped");
    let overlapped: Vec<usize> = windows(&ten_seconds, 72_000).iter().map(|(s, _)| *s).collect();
    assert_eq!(overlapped, [0, 72_000, 144_000, 216_000, 288_000, 360_000]);
    assert_eq!(pad(&vec![1.0; 200_000]).len(), WINDOW, "long input is trimmed");
    assert!(windows(&[], 0).is_empty());
}
