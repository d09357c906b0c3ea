#!/usr/bin/env python3
"""Builds the labelled set of `birdhub bench quality` from recipe.toml (run by make-set.sh).

Writes into OUT (made by make-set.sh as $BIRDHUB_CACHE/quality/<hash>/):
  birds/<n>.wav    each bird recording at 48 kHz (32-bit float), cut the hub's way by
                   models/recordings.py and zero-padded to whole 3 s windows (a short tail the hub
                   drops is dropped here too);
  noise/<kind>.wav each non-bird sound alone, noise_minutes_each long, at noise_rms (16-bit);
  manifest.json    what the bench reads: per bird its species per window, its place and the spans
                   its power is measured over; per noise its kind; the mixes (bird x noise x SNR,
                   and where in the noise each one starts).
The bench mixes at run time: mix = bird + g * noise[offset:], with g such that the bird's power
over its labelled spans is snr_db above the noise's power over the same spans.

Non-bird sounds (all mono, 48 kHz, drawn from numpy's PCG64 seeded by the recipe's seed):
  speech  sentences spoken by espeak-ng in English, German, French, Spanish and Dutch voices at
          several speeds, with 0.2-1.5 s pauses;
  white   Gaussian white noise;
  pink    white noise shaped to 1/f in the frequency domain;
  brown   integrated white noise (1/f^2), high-passed at 20 Hz;
  wind    brown noise low-passed at 400 Hz plus pink noise low-passed at 2 kHz, both under a slow
          random gust envelope (0.05-0.5 Hz);
  rain    pink noise 12 dB down plus a Poisson train of drops (about 150 per second, exponential
          sizes) each a 4 ms decaying noise burst, high-passed at 800 Hz;
  tones   short pure tones (300-8000 Hz, log-uniform, 0.1-2 s), long tones (150-8000 Hz, 2-8 s)
          whose pitch wanders by 0.5 % (below 20 Hz), and 1 kHz beep trains, with 0-1 s gaps;
  clicks  random clicks (2-20 per second) and steady ticking, each a 2 ms decaying 2-6 kHz ring;
  engine  a harmonic series (30 harmonics, 1/k) on a 35-90 Hz fundamental with jitter and slow
          drift, with firing-rate amplitude modulation and low-passed noise;
  music   chords (triads and sevenths, 0.6-2.5 s) from `sox synth` with pluck, sine, triangle and
          sawtooth voices.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import tomllib
import xml.etree.ElementTree as ET
import zipfile

import numpy as np
from scipy.io import wavfile
from scipy.signal import butter, resample_poly, sosfilt

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "models"))
import recordings  # noqa: E402

SR = recordings.SR
WINDOW = recordings.WINDOW
# The files the set's hash covers; src/cli/bench_quality_set.rs hashes the same bytes the same way.
HASHED = ["benches/quality/recipe.toml", "benches/quality/make_set.py", "models/recordings.py", "models/SHA256SUMS"]
WHEELS = {"pykanto": recordings.PYKANTO[0], "opensoundscape": recordings.OSS[0]}

SENTENCES = [
    "Could you pass me the salt, please?",
    "The train to the city leaves at half past eight.",
    "I think it is going to rain again this afternoon.",
    "Have you seen where I put my keys?",
    "We should paint the fence before the summer.",
    "Turn left at the church and follow the road to the river.",
    "The meeting has been moved to Thursday morning.",
    "Dinner is ready, come and sit down.",
    "My brother is coming to visit next weekend.",
    "That is the best coffee I have had all week.",
    "Ich glaube, wir sollten jetzt nach Hause gehen.",
    "Der Bus kommt heute leider etwas später.",
    "Il fait beau aujourd'hui, allons au parc.",
    "Je ne trouve plus mon téléphone.",
    "Mañana vamos a visitar a mis abuelos.",
    "¿Dónde está la estación de tren?",
    "We gaan morgen met de fiets naar het strand.",
]
VOICES = {"en": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], "en-us": [0, 1, 2, 3, 9], "de": [10, 11],
          "fr": [12, 13], "es": [14, 15], "nl": [16]}


def set_hash():
    """sha256 over (path, length, bytes) of each HASHED file, first 16 hex digits."""
    h = hashlib.sha256()
    for rel in HASHED:
        with open(os.path.join(REPO, rel), "rb") as f:
            data = f.read()
        h.update(rel.encode() + b"\0" + len(data).to_bytes(8, "little") + data)
    return h.hexdigest()[:16]


def log(msg):
    print(f"[quality-set] {msg}", flush=True)


# ---- birds -------------------------------------------------------------------------------------

def members_of(z, member):
    if member.endswith("/"):
        return sorted(m for m in z.namelist() if m.startswith(member) and m.lower().endswith(".wav"))
    return [member]


def sv_spans(z, member, sr):
    """Labelled spans (seconds) of a Sonic Visualiser box layer beside a WAV. Its frames count the
    WAV's own samples: the files' sampleRate attribute says 44100 even for 32 kHz WAVs, whose boxes
    then end where the song ends in the audio, not at 32/44.1 of it."""
    xml = z.read(os.path.splitext(member)[0] + ".xml")
    root = ET.fromstring(xml)
    out = []
    for p in root.iter("point"):
        start = int(p.get("frame"))
        out.append((start / sr, (start + int(p.get("duration"))) / sr))
    if not out:
        raise RuntimeError(f"{member}: no labelled boxes")
    return out


def window_labels(n_windows, spans, min_overlap):
    """Per window: species whose span overlaps it by min(min_overlap, span length) or more."""
    out = []
    for w in range(n_windows):
        a, b = w * 3.0, w * 3.0 + 3.0
        got = sorted({sp for sp, s, e in spans if min(b, e) - max(a, s) >= min(min_overlap, e - s) - 1e-9})
        out.append(got)
    return out


def build_birds(recipe, wheels_dir, out):
    birds = []
    os.makedirs(os.path.join(out, "birds"), exist_ok=True)
    for src in recipe["birds"]:
        whl = WHEELS[src["wheel"]]
        with zipfile.ZipFile(os.path.join(wheels_dir, whl)) as z:
            for m in members_of(z, src["member"]):
                sr, x = recordings.decode(z.read(m))
                y = recordings.to_48k(sr, x)
                n = len(recordings.windows(y))
                scene = np.zeros(n * WINDOW, dtype=np.float32)
                keep = min(len(y), len(scene))
                scene[:keep] = y[:keep]
                kind = src["labels"]
                if kind == "whole_file":
                    spans = [(src["species"], 0.0, len(x) / sr)]
                elif kind == "sonic_visualiser":
                    spans = [(src["species"], s, e) for s, e in sv_spans(z, m, sr)]
                elif kind == "spans":
                    spans = [(s["species"], float(s["from"]), float(s["to"])) for s in src["spans"]]
                else:
                    raise RuntimeError(f"unknown labels kind {kind!r}")
                labels = window_labels(n, spans, recipe["min_overlap_s"])
                # Power is measured over the labelled spans, clipped to the scene.
                power_spans = sorted({(max(0, int(s * SR)), min(len(scene), int(e * SR))) for _, s, e in spans})
                power_spans = [[a, b] for a, b in power_spans if b > a]
                rel = f"birds/{len(birds):03d}.wav"
                wavfile.write(os.path.join(out, rel), SR, scene)
                birds.append({
                    "id": f"{src['group']}:{os.path.basename(m)}",
                    "group": src["group"],
                    "source": f"{whl}:{m}",
                    "file": rel,
                    "place": src["place"],
                    "power_spans": power_spans,
                    "windows": [{"start": w * WINDOW, "species": labels[w], "scored": bool(labels[w])}
                                for w in range(n)],
                })
                log(f"bird {birds[-1]['id']}: {n} windows, {sum(bool(l) for l in labels)} labelled")
    return birds


# ---- non-bird sound ----------------------------------------------------------------------------

def lowpass(x, hz, order=4):
    return sosfilt(butter(order, hz, "low", fs=SR, output="sos"), x)


def highpass(x, hz, order=4):
    return sosfilt(butter(order, hz, "high", fs=SR, output="sos"), x)


def pink(rng, n):
    spec = np.fft.rfft(rng.standard_normal(n))
    f = np.fft.rfftfreq(n, 1 / SR)
    f[0] = f[1]
    return np.fft.irfft(spec / np.sqrt(f), n)


def brown(rng, n):
    return highpass(np.cumsum(rng.standard_normal(n)), 20.0, 2)


def envelope(rng, n, lo_hz, hi_hz):
    """A slow positive random envelope with content between lo_hz and hi_hz."""
    steps = int(n / SR * hi_hz * 4) + 4
    knots = rng.standard_normal(steps)
    env = np.interp(np.linspace(0, steps - 1, n), np.arange(steps), knots)
    env = lowpass(env, hi_hz, 2) if hi_hz < SR / 4 else env
    env = env - lowpass(env, lo_hz, 1)
    return np.exp(1.2 * env / (np.std(env) + 1e-12))


def ring(rng, ms, hz_lo, hz_hi):
    t = np.arange(int(SR * ms / 1000)) / SR
    f = rng.uniform(hz_lo, hz_hi)
    return np.sin(2 * np.pi * f * t) * np.exp(-t / (ms / 4000))


def tones(rng, n):
    x = np.zeros(n)
    i = 0
    while i < n:
        r = rng.random()
        if r < 0.2:  # a beep train
            for _ in range(rng.integers(3, 10)):
                seg = int(0.2 * SR)
                t = np.arange(seg) / SR
                piece = np.sin(2 * np.pi * 1000 * t) * ramp(seg)
                x[i:i + seg] += piece[:max(0, min(seg, n - i))]
                i += 2 * seg
        else:
            # A short pure tone, or a long one whose pitch wanders by 0.5 % (a whine, a hum, a
            # test tone from a cheap oscillator).
            long = r >= 0.6
            seg = int(rng.uniform(2.0, 8.0) * SR) if long else int(rng.uniform(0.1, 2.0) * SR)
            f = np.exp(rng.uniform(np.log(150 if long else 300), np.log(8000)))
            wander = lowpass(rng.standard_normal(seg), 20, 2)
            wander = 0.005 * wander / np.std(wander) if long else 0.0
            phase = 2 * np.pi * np.cumsum(f * (1 + wander)) / SR
            piece = np.sin(phase) * ramp(seg)
            x[i:i + seg] += piece[:max(0, min(seg, n - i))]
            i += seg
        i += int(rng.uniform(0.0, 1.0) * SR)
    return x


def ramp(seg, ms=5):
    r = min(seg // 2, int(SR * ms / 1000))
    w = np.ones(seg)
    w[:r] = np.linspace(0, 1, r)
    w[seg - r:] = np.linspace(1, 0, r)
    return w


def clicks(rng, n):
    imp = np.zeros(n)
    i = 0
    while i < n:
        seg = int(rng.uniform(5, 20) * SR)
        if rng.random() < 0.5:  # random clicks
            rate = rng.uniform(2, 20)
            k = rng.poisson(rate * seg / SR)
            pos = i + rng.integers(0, seg, k)
        else:  # steady ticking
            period = rng.uniform(0.25, 1.0)
            pos = i + (np.arange(0, seg / SR, period) * SR).astype(int)
        pos = pos[pos < n]
        imp[pos] += rng.uniform(0.3, 1.0, len(pos)) * rng.choice([-1, 1], len(pos))
        i += seg
    return np.convolve(imp, ring(rng, 2, 2000, 6000))[:n]


def engine(rng, n):
    drift = envelope(rng, n, 0.01, 0.1)
    f0 = 35 + 55 * (drift - drift.min()) / (np.ptp(drift) + 1e-12)
    jitter = lowpass(rng.standard_normal(n), 30, 2)
    f0 = f0 * (1 + 0.01 * jitter / np.std(jitter))
    phase = 2 * np.pi * np.cumsum(f0) / SR
    x = sum(np.sin(k * phase + rng.uniform(0, 2 * np.pi)) / k for k in range(1, 31))
    firing = 1 + 0.3 * np.sin(phase / 2)
    rumble = lowpass(rng.standard_normal(n), 300)
    return x * firing + 0.4 * rumble / np.std(rumble)


def wind(rng, n):
    gust = envelope(rng, n, 0.05, 0.5)
    low = lowpass(brown(rng, n), 400)
    hiss = lowpass(pink(rng, n), 2000)
    return gust * (low / np.std(low) + 0.3 * hiss / np.std(hiss))


def rain(rng, n):
    bed = pink(rng, n)
    imp = np.zeros(n)
    k = rng.poisson(150 * n / SR)
    np.add.at(imp, rng.integers(0, n, k), rng.exponential(1.0, k))
    t = np.arange(int(0.004 * SR)) / SR
    drop = rng.standard_normal(len(t)) * np.exp(-t / 0.001)
    drops = highpass(np.convolve(imp, drop)[:n], 800)
    return 0.25 * bed / np.std(bed) + drops / np.std(drops)


def espeak(text, voice, speed, tmp):
    path = os.path.join(tmp, "say.wav")
    subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", path, text], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sr, x = recordings.decode(open(path, "rb").read())
    return recordings.to_48k(sr, x).astype(np.float64)


def speech(rng, n, tmp):
    parts, total = [], 0
    voices = sorted(VOICES)
    while total < n:
        voice = voices[rng.integers(len(voices))]
        text = SENTENCES[VOICES[voice][rng.integers(len(VOICES[voice]))]]
        y = espeak(text, voice, int(rng.integers(130, 200)), tmp)
        pause = np.zeros(int(rng.uniform(0.2, 1.5) * SR))
        parts += [y, pause]
        total += len(y) + len(pause)
    return np.concatenate(parts)[:n]


NOTES = {"major": [0, 4, 7], "minor": [0, 3, 7], "dom7": [0, 4, 7, 10], "maj7": [0, 4, 7, 11]}


def music(rng, n, tmp):
    parts, total = [], 0
    path = os.path.join(tmp, "chord.wav")
    while total < n:
        root = int(rng.integers(-21, 4))  # semitones from A4: C3 .. C5
        chord = sorted(NOTES)[rng.integers(len(NOTES))]
        shape = ["pluck", "sine", "triangle", "sawtooth"][rng.integers(4)]
        dur = round(float(rng.uniform(0.6, 2.5)), 2)
        voices = []
        for step in NOTES[chord]:
            voices += [shape, f"%{root + step}"]
        subprocess.run(["sox", "-n", "-r", str(SR), "-b", "16", "-c", str(len(NOTES[chord])), path,
                        "synth", str(dur), *voices, "fade", "0.01", str(dur), "0.2"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sr, y = recordings.decode(open(path, "rb").read())
        parts.append(y)
        total += len(y)
    return np.concatenate(parts)[:n]


def make_noise(kind, rng, n, tmp):
    if kind == "white":
        return rng.standard_normal(n)
    if kind == "pink":
        return pink(rng, n)
    if kind == "brown":
        return brown(rng, n)
    if kind == "wind":
        return wind(rng, n)
    if kind == "rain":
        return rain(rng, n)
    if kind == "tones":
        return tones(rng, n)
    if kind == "clicks":
        return clicks(rng, n)
    if kind == "engine":
        return engine(rng, n)
    if kind == "speech":
        return speech(rng, n, tmp)
    if kind == "music":
        return music(rng, n, tmp)
    raise RuntimeError(f"unknown noise kind {kind!r}")


def build_noises(recipe, rng, out):
    os.makedirs(os.path.join(out, "noise"), exist_ok=True)
    n = int(recipe["noise_minutes_each"] * 60 * SR)
    noises = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in recipe["noise_kinds"]:
            x = make_noise(kind, rng, n, tmp)
            rms = np.sqrt(np.mean(x ** 2))
            x = x * min(recipe["noise_rms"] / rms, 0.98 / np.max(np.abs(x)))
            rel = f"noise/{kind}.wav"
            wavfile.write(os.path.join(out, rel), SR, np.round(x * 32767).astype(np.int16))
            noises.append({"kind": kind, "file": rel, "seconds": n / SR})
            log(f"noise {kind}: {n / SR:.0f} s, rms {np.sqrt(np.mean(x ** 2)):.4f}")
    return noises


def tool_version(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()[0]
    except (OSError, subprocess.CalledProcessError):
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wheels", required=True, help="models/fetch.sh's wheel cache")
    ap.add_argument("--out", required=True)
    ap.add_argument("--print-hash", action="store_true", help="print the set's hash and stop")
    args = ap.parse_args()
    if args.print_hash:
        print(set_hash())
        return
    with open(os.path.join(HERE, "recipe.toml"), "rb") as f:
        recipe = tomllib.load(f)
    rng = np.random.Generator(np.random.PCG64(recipe["seed"]))
    birds = build_birds(recipe, args.wheels, args.out)
    noises = build_noises(recipe, rng, args.out)
    mixes = []
    for b, bird in enumerate(birds):
        length = len(bird["windows"]) * WINDOW
        for k, noise in enumerate(noises):
            for snr in recipe["snr_db"]:
                offset = int(rng.integers(0, int(noise["seconds"] * SR) - length))
                mixes.append({"bird": b, "noise": k, "snr_db": snr, "offset": offset})
    manifest = {
        "format": "birdhub-quality-set/1",
        "hash": set_hash(),
        "seed": recipe["seed"],
        "sample_rate": SR,
        "window": WINDOW,
        "snr_db": recipe["snr_db"],
        "noise_place": recipe["noise_place"],
        "tools": {"sox": tool_version(["sox", "--version"]),
                  "espeak-ng": tool_version(["espeak-ng", "--version"]),
                  "numpy": np.__version__},
        "birds": birds,
        "noises": noises,
        "mixes": mixes,
    }
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    log(f"{len(birds)} bird recordings, {len(noises)} non-bird sounds, {len(mixes)} mixes -> {args.out}")


if __name__ == "__main__":
    main()
