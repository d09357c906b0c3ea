#!/usr/bin/env python3
"""How far the INT8 and FP16 networks agree with FP32 on real recordings, and how fast they are.

Runs inside the conversion venv.  Every window of every recording in recordings.py (hub windows:
3 s, non-overlapping, tail >= 1 s zero-padded) goes through frontend_ref.py and then through
birdnet_net.onnx (FP32, the reference), birdnet_net_int8.onnx and birdnet_net_fp16.onnx.
Confidence = sigmoid(clamp(logit, -15, 15)) as in the hub.  Writes agreement.json with, per
precision: windows, top-1 agreement (all windows, and windows where FP32's best score >= 0.5),
mean top-5 overlap, largest |confidence difference| (all species, and FP32's top-1 species), ORT
ms/window at batch 1 and 8 with 1 and 2 intra-op threads, file size, and "eligible_default":
top-1 agrees on >= 99 % of the windows FP32 scores >= 0.5.  The same numbers are also given for
the held-out recordings alone (never seen by quantize.py's calibration) and, as a larger second
sample, for windows every 1 s (the hub's overlap = 2 s setting).
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import recordings  # noqa: E402
from frontend_ref import Frontend  # noqa: E402

FILES = {"fp32": "birdnet_net.onnx", "int8": "birdnet_net_int8.onnx", "fp16": "birdnet_net_fp16.onnx"}
INPUT = "spec"
CONFIDENT = 0.5
ELIGIBLE = 0.99
# birds_10s.wav 3.0-6.0 s: the Rust tests expect Tennessee Warbler there.
REF_WINDOW = ("opensoundscape/sample_data/birds_10s.wav", 3 * recordings.SR)


def log(msg):
    print(f"[agreement] {msg}", flush=True)


def session(path, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def confidence(logits):
    return 1.0 / (1.0 + np.exp(-np.clip(logits, -15.0, 15.0)))


def run_all(sess, spec, batch=8):
    return np.concatenate([sess.run(None, {INPUT: spec[i:i + batch]})[0] for i in range(0, len(spec), batch)])


def compare(ref, other, mask=None):
    """Agreement numbers of confidences `other` against `ref` ([N, classes]) on the windows in mask."""
    if mask is not None:
        ref, other = ref[mask], other[mask]
    n = len(ref)
    if n == 0:
        return {"windows": 0}
    top_r, top_o = ref.argmax(1), other.argmax(1)
    same = top_r == top_o
    conf = ref.max(1) >= CONFIDENT
    top5_r = np.argsort(-ref, axis=1)[:, :5]
    top5_o = np.argsort(-other, axis=1)[:, :5]
    overlap = [len(set(a) & set(b)) / 5 for a, b in zip(top5_r, top5_o)]
    rows = np.arange(n)
    return {
        "windows": int(n),
        "top1_equal": round(float(same.mean()), 4),
        "fp32_confident_windows": int(conf.sum()),
        "top1_equal_confident": int(same[conf].sum()),
        "top1_equal_confident_fraction": round(float(same[conf].mean()), 4) if conf.any() else None,
        "mean_top5_overlap": round(float(np.mean(overlap)), 4),
        "max_abs_conf_diff_all_species": round(float(np.abs(ref - other).max()), 4),
        "max_abs_conf_diff_fp32_top1": round(float(np.abs(ref[rows, top_r] - other[rows, top_r]).max()), 4),
    }


def timings(paths, spec, runs_b1, runs_b8):
    """Median ms per window; precisions interleaved round by round so a busy machine hits all alike."""
    out = {p: {} for p in paths}
    for threads in (1, 2):
        sessions = {p: session(path, threads) for p, path in paths.items()}
        for batch, runs in ((1, runs_b1), (8, runs_b8)):
            x = np.ascontiguousarray(np.resize(spec, (batch,) + spec.shape[1:]))
            samples = {p: [] for p in paths}
            for s in sessions.values():
                s.run(None, {INPUT: x})
            for _ in range(runs):
                for p, s in sessions.items():
                    t = time.perf_counter()
                    s.run(None, {INPUT: x})
                    samples[p].append((time.perf_counter() - t) * 1000 / batch)
            for p in paths:
                out[p][f"batch{batch}_threads{threads}"] = round(statistics.median(samples[p]), 2)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model-dir", required=True, help="dir with the three nets, frontend files, labels/en.txt")
    ap.add_argument("--int8", help="birdnet_net_int8.onnx if not in --model-dir")
    ap.add_argument("--fp16", help="birdnet_net_fp16.onnx if not in --model-dir")
    ap.add_argument("--wheels", required=True)
    ap.add_argument("--out", required=True, help="agreement.json to write")
    ap.add_argument("--runs", type=int, default=15, help="timed batch-1 runs per precision and thread count")
    args = ap.parse_args()
    t0 = time.time()
    paths = {p: os.path.join(args.model_dir, f) for p, f in FILES.items()}
    if args.int8:
        paths["int8"] = args.int8
    if args.fp16:
        paths["fp16"] = args.fp16
    with open(os.path.join(args.model_dir, "labels", "en.txt"), encoding="utf-8") as f:
        labels = f.read().splitlines()
    fe = Frontend(args.model_dir)

    recs = recordings.load_all(args.wheels)
    spec, index = recordings.spectrograms(fe, recs)
    held = np.array([recs[ri]["split"] == "held_out" for ri, _ in index])
    recs1 = recordings.load_all(args.wheels, step=recordings.SR)
    spec1, _ = recordings.spectrograms(fe, recs1)
    log(f"{len(spec)} windows ({int(held.sum())} held out) from {len(recs)} recordings, "
        f"{len(spec1)} at 1 s steps ({time.time() - t0:.0f} s)")

    conf, conf1 = {}, {}
    for p, path in paths.items():
        s = session(path, 2)
        conf[p] = confidence(run_all(s, spec))
        conf1[p] = confidence(run_all(s, spec1))
    speed = timings(paths, spec, args.runs, max(3, args.runs // 4))
    log(f"inference + timing done ({time.time() - t0:.0f} s)")

    ref_i = index.index((next(i for i, r in enumerate(recs) if r["name"] == REF_WINDOW[0]), REF_WINDOW[1]))
    precisions = {}
    for p, path in paths.items():
        main_cmp = compare(conf["fp32"], conf[p])
        frac = main_cmp["top1_equal_confident_fraction"]
        top = int(conf[p][ref_i].argmax())
        precisions[p] = {
            "file": os.path.basename(path),
            "size_bytes": os.path.getsize(path),
            **main_cmp,
            "eligible_default": bool(frac is not None and frac >= ELIGIBLE),
            "ms_per_window": speed[p],
            "speedup_vs_fp32": {k: round(speed["fp32"][k] / v, 2) for k, v in speed[p].items()},
            "held_out_only": compare(conf["fp32"], conf[p], held),
            "windows_every_1s": compare(conf1["fp32"], conf1[p]),
            "reference_window": {"recording": REF_WINDOW[0], "start_s": REF_WINDOW[1] / recordings.SR,
                                 "top1": labels[top], "confidence": round(float(conf[p][ref_i, top]), 4)},
        }
        c = precisions[p]
        log(f"{p}: top1 {c['top1_equal']:.3f}, confident {c['top1_equal_confident']}/"
            f"{c['fp32_confident_windows']}, top5 {c['mean_top5_overlap']:.3f}, "
            f"max|dconf| {c['max_abs_conf_diff_all_species']:.3f}, {speed[p]} ms/window")

    result = {
        "reference": "fp32 (birdnet_net.onnx)",
        "confidence": "sigmoid(clamp(logit, -15, 15))",
        "decision_rule": f"eligible_default: top-1 equals FP32's on >= {ELIGIBLE:.0%} of the windows "
                         f"where FP32's best confidence >= {CONFIDENT}",
        "windows": "hub default: 3 s, non-overlapping, last piece zero-padded if >= 1 s or the whole recording",
        "resampling": "scipy.signal.resample_poly (Kaiser 5.0 polyphase, float64); the hub uses rubato's FFT "
                      "resampler - both band-limited",
        "machine": {"cpu_count": os.cpu_count(), "onnxruntime": ort.__version__,
                    "load_average_1_5_15_min": [round(x, 2) for x in os.getloadavg()],
                    "note": "timings are medians with the precisions interleaved; other jobs may share the CPU"},
        "calibration_vs_evaluation": "quantize.py calibrates on the 'calibration' recordings only; "
                                     "held_out_only repeats the numbers without them",
        "precisions": precisions,
        "recordings": [{k: r[k] for k in ("name", "package", "version", "sample_rate", "duration_s", "split")}
                       | {"windows": len(r["windows"])} for r in recs],
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2, ensure_ascii=False)
        f.write("\n")
    log(f"done in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
