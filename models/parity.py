#!/usr/bin/env python3
"""Parity check: TFLite (reference) vs the converted ONNX models, plus fixtures for the Rust tests.

Runs inside the conversion venv (tensorflow-cpu, onnxruntime, scipy).  Compares on the same inputs:
  A. TFLite classifier                              (reference)
  B. birdnet.onnx in onnxruntime                    (full model, batch 1, batch 4 and one batch of all)
  C. frontend_ref.py (numpy) + birdnet_net.onnx     (the path the Rust hub uses)
  D. TFLite's own spectrogram tensor + birdnet_net.onnx   (isolates the network conversion)
  E. frontend_ref.py vs TFLite's spectrogram tensor (isolates the front end)
  F. meta_model.onnx vs the TFLite range meta-model
Inputs: 3 s windows of fixtures/birds_10s.wav, resampled 32 kHz -> 48 kHz with
scipy.signal.resample_poly(x, 3, 2) (default Kaiser(5.0) polyphase filter, float64), int16 / 32768 scaling,
plus one deterministic synthetic chunk.  Fails (exit 1) if any max |logit diff| > 0.05 or any top-1 differs.
"""
import argparse
import ctypes
import json
import os
import platform
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
import scipy  # noqa: E402
from scipy.io import wavfile  # noqa: E402
from scipy.signal import resample_poly  # noqa: E402
import tensorflow as tf  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from frontend_ref import Frontend  # noqa: E402

SR = 48000
CHUNK = 144000
WINDOW_STARTS_S = [0.0, 1.5, 3.0, 4.5, 6.0, 7.0]
LOGIT_TOL = 0.05
META_TOL = 1e-3
SYNTH_SEED = 20240521


def log(msg):
    print(f"[parity] {msg}", flush=True)


def load_wav_48k(path):
    sr, data = wavfile.read(path)
    if data.dtype != np.int16:
        raise RuntimeError(f"{path}: expected 16-bit PCM, got {data.dtype}")
    x = data.astype(np.float64) / 32768.0
    if x.ndim == 2:
        x = x.mean(axis=1)
    g = np.gcd(sr, SR)
    up, down = SR // g, sr // g
    y = resample_poly(x, up, down) if (up, down) != (1, 1) else x
    return sr, up, down, y.astype(np.float32)


def synthetic_chunk():
    """Deterministic: a 1->8 kHz linear chirp + 2.5 kHz tone bursts + PCG64 Gaussian noise."""
    t = np.arange(CHUNK, dtype=np.float64) / SR
    f0, f1, dur = 1000.0, 8000.0, CHUNK / SR
    chirp = 0.25 * np.sin(2 * np.pi * (f0 * t + (f1 - f0) / (2 * dur) * t * t))
    bursts = 0.2 * np.sin(2 * np.pi * 2500.0 * t) * (np.floor(t * 4) % 2)
    noise = 0.02 * np.random.default_rng(SYNTH_SEED).standard_normal(CHUNK)
    return (chirp + bursts + noise).astype(np.float32)


class TfliteRunner:
    def __init__(self, path, keep=None):
        self.path = path
        self.keep = keep

    def run(self, x):
        it = tf.lite.Interpreter(model_path=self.path, num_threads=1,
                                 experimental_preserve_all_tensors=self.keep is not None)
        inp = it.get_input_details()[0]
        it.resize_tensor_input(inp["index"], list(x.shape))
        it.allocate_tensors()
        it.set_tensor(inp["index"], x)
        it.invoke()
        out = np.array(it.get_tensor(it.get_output_details()[0]["index"]))
        kept = None
        if self.keep is not None:
            idx = [d["index"] for d in it.get_tensor_details() if d["name"] == self.keep][0]
            kept = np.array(it.get_tensor(idx))
        return out, kept


def ort_session(path, threads=1):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def cmp(ref, got):
    d = np.abs(ref.astype(np.float64) - got.astype(np.float64))
    top5_ref = np.argsort(-ref, axis=-1)[:, :5]
    top5_got = np.argsort(-got, axis=-1)[:, :5]
    return {
        "max_abs_diff": float(d.max()),
        "mean_abs_diff": float(d.mean()),
        "top1_agree": bool(np.all(top5_ref[:, 0] == top5_got[:, 0])),
        "top5_identical_windows": int(sum(np.array_equal(a, b) for a, b in zip(top5_ref, top5_got))),
        "top5_set_identical_windows": int(sum(set(a) == set(b) for a, b in zip(top5_ref, top5_got))),
        "windows": int(ref.shape[0]),
    }


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-np.clip(x, -30, 30)))


def ort_lib_version(lib_path):
    """Ask the shared library itself for its version and highest supported C API version."""
    try:
        lib = ctypes.CDLL(lib_path)
    except OSError as e:
        return None, None, f"not loadable on this host ({e.__class__.__name__})"

    class ApiBase(ctypes.Structure):
        _fields_ = [("GetApi", ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_uint32)),
                    ("GetVersionString", ctypes.CFUNCTYPE(ctypes.c_char_p))]
    lib.OrtGetApiBase.restype = ctypes.POINTER(ApiBase)
    base = lib.OrtGetApiBase().contents
    ver = base.GetVersionString().decode()
    # ORT's C API version equals the minor version (1.31.x -> 31); confirm the library serves it.
    minor = int(ver.split(".")[1])
    api = minor if base.GetApi(minor) else None
    return ver, api, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dest", required=True)
    ap.add_argument("--classifier", required=True, help="BirdNET_GLOBAL_6K_V2.4_Model_FP32.tflite")
    ap.add_argument("--meta", required=True, help="BirdNET_GLOBAL_6K_V2.4_MData_Model_V2_FP16.tflite")
    ap.add_argument("--bench-iters", type=int, default=10)
    a = ap.parse_args()
    dest = a.dest
    fx = os.path.join(dest, "fixtures")
    os.makedirs(fx, exist_ok=True)
    failures = []

    labels = [l.rstrip("\n") for l in open(os.path.join(dest, "labels", "en.txt"), encoding="utf-8")]

    # ---- inputs -------------------------------------------------------------------------
    wav_path = os.path.join(fx, "birds_10s.wav")
    sr, up, down, audio = load_wav_48k(wav_path)
    log(f"birds_10s.wav: {sr} Hz -> 48000 Hz via resample_poly(up={up}, down={down}), {len(audio)} samples")
    wins, names = [], []
    for s in WINDOW_STARTS_S:
        i0 = int(round(s * SR))
        w = audio[i0:i0 + CHUNK]
        if len(w) < CHUNK:
            w = np.concatenate([w, np.zeros(CHUNK - len(w), np.float32)])
        wins.append(w)
        names.append(f"birds_10s.wav@{s:.1f}s")
    wins.append(synthetic_chunk())
    names.append(f"synthetic(chirp+tone+noise, seed {SYNTH_SEED})")
    X = np.stack(wins).astype(np.float32)
    n_audio = len(WINDOW_STARTS_S)

    # ---- A: TFLite reference ------------------------------------------------------------
    t0 = time.time()
    ref, tfl_spec = TfliteRunner(a.classifier, keep="model/concatenate/concat").run(X)
    tfl_spec = np.transpose(tfl_spec, (0, 3, 1, 2))  # NHWC [N,96,511,2] -> [N,2,96,511]
    log(f"TFLite reference on {len(X)} windows ({time.time() - t0:.1f}s)")

    # ---- B: full ONNX --------------------------------------------------------------------
    full = ort_session(os.path.join(dest, "birdnet.onnx"))
    out_b1 = np.concatenate([full.run(None, {"INPUT": X[i:i + 1]})[0] for i in range(len(X))])
    out_b4 = full.run(None, {"INPUT": X[:4]})[0]
    out_ball = full.run(None, {"INPUT": X})[0]
    res_full = cmp(ref, out_b1)
    res_full["batch4_vs_batch1_max_abs_diff"] = float(np.abs(out_b4 - out_b1[:4]).max())
    res_full[f"batch{len(X)}_vs_batch1_max_abs_diff"] = float(np.abs(out_ball - out_b1).max())
    log(f"birdnet.onnx vs TFLite: max|d|={res_full['max_abs_diff']:.5f} top1={res_full['top1_agree']} "
        f"top5 identical {res_full['top5_identical_windows']}/{len(X)}; batch4 vs batch1 "
        f"{res_full['batch4_vs_batch1_max_abs_diff']:.2e}")

    # ---- C/D/E: front end + network-only model ----------------------------------------------
    fe = Frontend(dest)
    t0 = time.time()
    spec = fe(X)
    fe_ms = (time.time() - t0) * 1000 / len(X)
    sd = np.abs(spec.astype(np.float64) - tfl_spec)
    res_fe = {
        "max_abs_diff": float(sd.max()),
        "max_rel_diff": float((sd / (np.abs(tfl_spec) + 1e-3)).max()),
        "mean_abs_diff": float(sd.mean()),
        "value_range": [float(tfl_spec.min()), float(tfl_spec.max())],
        "numpy_ms_per_chunk": round(fe_ms, 2),
    }
    log(f"frontend_ref vs TFLite spectrogram: max|d|={res_fe['max_abs_diff']:.2e} "
        f"(values {res_fe['value_range'][0]:.3f}..{res_fe['value_range'][1]:.3f})")
    net = ort_session(os.path.join(dest, "birdnet_net.onnx"))
    out_c = np.concatenate([net.run(None, {"spec": spec[i:i + 1]})[0] for i in range(len(X))])
    out_c4 = net.run(None, {"spec": spec[:4]})[0]
    res_net = cmp(ref, out_c)
    res_net["batch4_vs_batch1_max_abs_diff"] = float(np.abs(out_c4 - out_c[:4]).max())
    out_d = net.run(None, {"spec": tfl_spec.astype(np.float32)})[0]
    res_net_tflspec = cmp(ref, out_d)
    log(f"frontend_ref + birdnet_net.onnx vs TFLite: max|d|={res_net['max_abs_diff']:.5f} "
        f"top1={res_net['top1_agree']} top5 identical {res_net['top5_identical_windows']}/{len(X)}")
    log(f"TFLite spectrogram + birdnet_net.onnx vs TFLite: max|d|={res_net_tflspec['max_abs_diff']:.5f}")

    for label, r in (("birdnet.onnx", res_full), ("frontend_ref+birdnet_net.onnx", res_net),
                     ("tflite_spec+birdnet_net.onnx", res_net_tflspec)):
        if r["max_abs_diff"] > LOGIT_TOL:
            failures.append(f"{label}: max abs logit diff {r['max_abs_diff']:.4f} > {LOGIT_TOL}")
        if not r["top1_agree"]:
            failures.append(f"{label}: top-1 differs")
    if res_full["batch4_vs_batch1_max_abs_diff"] > 1e-3 or res_net["batch4_vs_batch1_max_abs_diff"] > 1e-3:
        failures.append("batch 4 result differs from batch 1")

    # ---- F: meta model ---------------------------------------------------------------------
    meta_in = np.array([
        [42.48, -76.45, 20.0],   # Ithaca NY, late May
        [50.83, 12.92, 20.0],    # Chemnitz, late May
        [50.83, 12.92, 2.0],     # Chemnitz, January
        [-33.92, 18.42, 40.0],   # Cape Town, October
        [35.68, 139.69, -1.0],   # Tokyo, year-round
    ], dtype=np.float32)
    meta_ref, _ = TfliteRunner(a.meta).run(meta_in)
    ms = ort_session(os.path.join(dest, "meta_model.onnx"))
    meta_inp = ms.get_inputs()[0].name
    meta_out = ms.run(None, {meta_inp: meta_in})[0]
    meta_d = float(np.abs(meta_ref.astype(np.float64) - meta_out).max())
    res_meta = {
        "max_abs_diff": meta_d,
        "points_lat_lon_week": meta_in.tolist(),
        "input_name": meta_inp,
        "output_name": ms.get_outputs()[0].name,
        "output_range": [float(meta_ref.min()), float(meta_ref.max())],
        "species_above_0.03": [int((r >= 0.03).sum()) for r in meta_ref],
    }
    log(f"meta_model.onnx vs TFLite: max|d|={meta_d:.2e}; species >= 0.03 per point {res_meta['species_above_0.03']}")
    if meta_d > META_TOL:
        failures.append(f"meta model: max abs diff {meta_d:.2e} > {META_TOL}")

    # ---- species found ---------------------------------------------------------------------
    top = []
    probs = sigmoid(ref.astype(np.float64))
    log("top species (sigmoid of TFLite logits; ONNX agrees, see top1_agree):")
    for i, nm in enumerate(names):
        order = np.argsort(-probs[i])[:5]
        entries = []
        for j in order:
            sci, _, com = labels[j].partition("_")
            entries.append({"index": int(j), "scientific": sci, "common": com,
                            "prob": round(float(probs[i, j]), 4), "logit": round(float(ref[i, j]), 4)})
        top.append({"window": nm, "top5": entries})
        log(f"  {nm}: " + "; ".join(f"{e['common']} ({e['scientific']}) {e['prob']:.3f}" for e in entries[:3]))

    # ---- speed (single thread, this machine) -----------------------------------------------------
    def bench(fn, iters):
        fn()
        t = time.perf_counter()
        for _ in range(iters):
            fn()
        return (time.perf_counter() - t) * 1000 / iters
    x1 = X[:1]
    s1 = spec[:1]
    speed = {
        "threads": 1,
        "birdnet_onnx_ms_per_chunk": round(bench(lambda: full.run(None, {"INPUT": x1}), a.bench_iters), 1),
        "birdnet_net_onnx_ms_per_chunk": round(bench(lambda: net.run(None, {"spec": s1}), a.bench_iters), 1),
        "frontend_ref_numpy_ms_per_chunk": res_fe["numpy_ms_per_chunk"],
        "machine": platform.machine(),
    }
    log(f"speed (1 thread): birdnet.onnx {speed['birdnet_onnx_ms_per_chunk']} ms/chunk, "
        f"birdnet_net.onnx {speed['birdnet_net_onnx_ms_per_chunk']} ms/chunk")

    # ---- fixtures for the Rust tests ------------------------------------------------------------
    X[0].astype("<f4").tofile(os.path.join(fx, "parity_input.f32"))
    ref[0].astype("<f4").tofile(os.path.join(fx, "parity_logits_tflite.f32"))
    spec[0].astype("<f4").tofile(os.path.join(fx, "parity_frontend.f32"))
    fixtures = {
        "parity_input.f32": {"shape": [CHUNK], "what": f"{names[0]} resampled to 48 kHz (float32 LE)"},
        "parity_logits_tflite.f32": {"shape": [int(ref.shape[1])], "what": "TFLite logits for parity_input.f32"},
        "parity_frontend.f32": {"shape": list(spec.shape[1:]),
                                "what": "frontend_ref output for parity_input.f32: branch 0 [96x511] then branch 1 [96x511], row-major"},
        "parity_frontend_vs_tflite_max_abs_diff": float(np.abs(spec[0] - tfl_spec[0]).max()),
        "parity_logits_onnx_full_max_abs_diff": float(np.abs(out_b1[0] - ref[0]).max()),
        "parity_logits_onnx_net_max_abs_diff": float(np.abs(out_c[0] - ref[0]).max()),
    }

    lib = os.path.join(dest, "libonnxruntime.so")
    lib_ver, lib_api, lib_err = ort_lib_version(lib) if os.path.exists(lib) else (None, None, "missing")
    result = {
        "ok": not failures,
        "failures": failures,
        "tolerance": {"max_abs_logit_diff": LOGIT_TOL, "top1": "must agree on every window", "meta_max_abs_diff": META_TOL},
        "inputs": {
            "windows": names,
            "audio": "fixtures/birds_10s.wav (opensoundscape sample), int16/32768, mono",
            "resampling": f"scipy.signal.resample_poly(x, up={up}, down={down}) (default window ('kaiser', 5.0)), float64, scipy {scipy.__version__}",
            "window_length_samples": CHUNK,
        },
        "versions": {"tensorflow": tf.__version__, "onnxruntime_python": ort.__version__, "numpy": np.__version__},
        "libonnxruntime_so": {"version": lib_ver, "max_api_version": lib_api, "note": lib_err},
        "full_model_vs_tflite": res_full,
        "frontend_ref_vs_tflite_spectrogram": res_fe,
        "frontend_ref_plus_net_vs_tflite": res_net,
        "tflite_spectrogram_plus_net_vs_tflite": res_net_tflspec,
        "meta_model_vs_tflite": res_meta,
        "top_species": top,
        "speed": speed,
        "fixtures": fixtures,
    }
    with open(os.path.join(dest, "parity.json"), "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    if failures:
        for m in failures:
            log(f"FAIL: {m}")
        return 1
    log("PASS: all parity checks within tolerance")
    return 0


if __name__ == "__main__":
    sys.exit(main())
