#!/usr/bin/env python3
"""Smaller / faster variants of birdnet_net.onnx: INT8 (static, calibrated on real audio) and FP16.

Runs inside the conversion venv (onnx, onnxruntime 1.31.1, scipy).  Writes into --out:
  birdnet_net_int8.onnx  ONNX Runtime static quantisation, QDQ format: weights int8 per output
                         channel (symmetric), activations uint8 per tensor, ranges calibrated
                         (percentile 99.999 of |x|-histograms) on spectrograms of real recordings
                         (the "calibration" split of recordings.py, windows every 1 s).  The
                         spectrogram stem (input batch-norm, first conv, its ReLU and pools) and
                         the post-network head (post batch-norm, 1x1 conv, ReLUs, global pool) stay
                         float; the final dense layer is quantised.
  birdnet_net_fp16.onnx  float16 weights and compute, float32 input/output
                         (onnxruntime.transformers.float16, keep_io_types=True).
  quantize.json          options, tool versions, calibration windows.
Both keep birdnet_net.onnx's input ("spec" f32 [batch,2,96,511]) and output ("Identity" f32
[batch,6522] logits) and a dynamic batch; that is checked here with batch 1 and 3.

Why the stem and head stay float: a per-tensor 8-bit range on the first ReLU's output and on the
last ReLU's output (both with rare, very large values) loses most of their information (SQNR ~2 dB
measured with onnxruntime.quantization.qdq_loss_debug); they are a few percent of the compute.
Why uint8 activations: ONNX Runtime's x86 int8 kernels (VNNI / AVX2) are built for u8 x s8; s8 x s8
ran about as slow as float32 here.  The original model marks these layers *_NOQUANT as well.

Two onnxruntime 1.31 quantiser bugs are worked around by renaming every initializer to "const/<name>"
first: it names a tensor's new scale "<tensor>_scale" and then finds the *existing* initializer
"spec_bn_scale" instead, and it names a duplicated shared bias "<bias>2", which collides with a
tf2onnx activation name.
"""
import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType,
                                      quantize_static)
from onnxruntime.quantization.shape_inference import quant_pre_process
from onnxruntime.transformers.float16 import convert_float_to_float16

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import recordings  # noqa: E402
from frontend_ref import Frontend  # noqa: E402

INPUT, OUTPUT = "spec", "Identity"
CALIB_STEP = recordings.SR  # 1 s: windows overlap by 2 s, three times the calibration data of 3 s steps
PERCENTILE = 99.999
# Node names (from tf2onnx) that stay float; see the module docstring.
# Stem: input batch-norm (spec_bn_*), first conv (ACT_0), pools, concat; head: post batch-norm
# (BNORM_POST_NOQUANT, ACT_POST), 1x1 conv (POST_ACT_1), global pool; "Relu__" = the three ReLUs.
FLOAT_PREFIXES = ("spec_bn", "model/ACT_0/", "model/POOL_0_AVG/", "model/POOL_0_MAX/", "model/POOL_0_CONCAT/",
                  "model/BNORM_POST_NOQUANT/", "model/ACT_POST/", "Relu__", "model/POST_ACT_1/",
                  "model/GLOBAL_AVG_POOL/")


def log(msg):
    print(f"[quantize] {msg}", flush=True)


def prepare(src, dst):
    """ORT's recommended pre-processing (shape inference + graph optimisation), then the renames."""
    quant_pre_process(src, dst, skip_symbolic_shape=True)  # symbolic inference needs sympy; shapes are static
    m = onnx.load(dst)
    g = m.graph
    ren = {i.name: "const/" + i.name for i in g.initializer}
    for i in g.initializer:
        i.name = ren[i.name]
    for n in g.node:
        for k, x in enumerate(n.input):
            if x in ren:
                n.input[k] = ren[x]
    onnx.save(m, dst)
    return m


def float_nodes(model):
    keep = [n.name for n in model.graph.node if n.name.startswith(FLOAT_PREFIXES)]
    missing = [p for p in FLOAT_PREFIXES if not any(k.startswith(p) for k in keep)]
    if missing:  # the converter's node names changed: refuse to quantise the stem/head silently
        raise SystemExit(f"[quantize] ERROR: no node matches {missing}; update FLOAT_PREFIXES")
    return keep


class SpecReader(CalibrationDataReader):
    def __init__(self, specs):
        self.specs = specs
        self.i = 0

    def get_next(self):
        if self.i >= len(self.specs):
            return None
        self.i += 1
        return {INPUT: self.specs[self.i - 1:self.i]}

    def rewind(self):
        self.i = 0


def check(path, ref_path, spec):
    """Same I/O names, f32 I/O, dynamic batch (1 and 3) and finite logits."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    ref = ort.InferenceSession(ref_path, so, providers=["CPUExecutionProvider"])
    for a, b in ((s.get_inputs(), ref.get_inputs()), (s.get_outputs(), ref.get_outputs())):
        if [(x.name, x.type, x.shape) for x in a] != [(x.name, x.type, x.shape) for x in b]:
            raise SystemExit(f"{path}: I/O differs from {ref_path}: {[(x.name, x.type, x.shape) for x in a]}")
    one = np.concatenate([s.run(None, {INPUT: spec[i:i + 1]})[0] for i in range(3)])
    three = s.run(None, {INPUT: spec[:3]})[0]
    if one.shape != (3, 6522) or not np.all(np.isfinite(three)):
        raise SystemExit(f"{path}: bad output {three.shape}")
    return float(np.abs(one - three).max())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model-dir", required=True, help="dir with birdnet_net.onnx and the frontend files")
    ap.add_argument("--wheels", required=True, help="dir holding the wheels named in recordings.py")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    net = os.path.join(args.model_dir, "birdnet_net.onnx")
    t0 = time.time()

    recs = [r for r in recordings.load_all(args.wheels, step=CALIB_STEP) if r["split"] == "calibration"]
    spec, _ = recordings.spectrograms(Frontend(args.model_dir), recs)
    log(f"calibration: {len(spec)} windows (1 s step) from {len(recs)} recordings ({time.time() - t0:.0f} s)")

    int8 = os.path.join(args.out, "birdnet_net_int8.onnx")
    with tempfile.TemporaryDirectory() as tmp:
        pre = os.path.join(tmp, "pre.onnx")
        model = prepare(net, pre)
        excluded = float_nodes(model)
        quantize_static(pre, int8, SpecReader(spec), quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                        calibrate_method=CalibrationMethod.Percentile, nodes_to_exclude=excluded,
                        extra_options={"CalibPercentile": PERCENTILE})
    log(f"int8: {os.path.getsize(int8) / 1e6:.1f} MB, {len(excluded)} nodes kept float ({time.time() - t0:.0f} s)")

    fp16 = os.path.join(args.out, "birdnet_net_fp16.onnx")
    onnx.save(convert_float_to_float16(onnx.load(net), keep_io_types=True), fp16)
    log(f"fp16: {os.path.getsize(fp16) / 1e6:.1f} MB")

    batch_diff = {os.path.basename(p): check(p, net, spec) for p in (int8, fp16)}
    log(f"I/O names and dynamic batch ok; max |batch 3 - batch 1| logit: {batch_diff}")

    info = {
        "source": "birdnet_net.onnx",
        "onnx": onnx.__version__,
        "onnxruntime": ort.__version__,
        "int8": {
            "file": "birdnet_net_int8.onnx",
            "method": "onnxruntime.quantization.quantize_static",
            "format": "QDQ",
            "weights": "int8, per output channel, symmetric",
            "activations": "uint8, per tensor, asymmetric",
            "calibration_method": f"Percentile {PERCENTILE}",
            "pre_processing": "quant_pre_process (skip_symbolic_shape), initializers renamed const/<name>",
            "nodes_kept_float": excluded,
        },
        "fp16": {
            "file": "birdnet_net_fp16.onnx",
            "method": "onnxruntime.transformers.float16.convert_float_to_float16(keep_io_types=True)",
        },
        "calibration": {
            "windows": int(len(spec)),
            "step_s": CALIB_STEP / recordings.SR,
            "recordings": [{"name": r["name"], "package": f"{r['package']}=={r['version']}",
                            "windows": len(r["windows"])} for r in recs],
        },
        "batch_consistency_max_abs_logit_diff": batch_diff,
    }
    with open(os.path.join(args.out, "quantize.json"), "w") as f:
        json.dump(info, f, indent=2)
        f.write("\n")
    log(f"done in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
