#!/usr/bin/env python3
"""Convert the BirdNET V2.4 TFLite models to ONNX and describe the spectrogram front end.

Runs inside the conversion venv that models/fetch.sh creates (tensorflow-cpu + tf2onnx + onnx).

Outputs (all in --out):
  birdnet.onnx        full classifier, input "INPUT" [N,144000] f32 -> "Identity" [N,6522] logits
  birdnet_net.onnx    the same network minus the spectrogram front end:
                      input "spec" [N,2,96,511] f32 -> "Identity" [N,6522] logits
  meta_model.onnx     range meta-model (lat, lon, week) -> per-species occurrence
  frontend.json       exact description of the front end (see models/README.md)
  frontend_*.f32      little-endian float32 constants referenced by frontend.json

Why a custom handler: BirdNET's MEL_SPEC layers compute tf.signal.stft and then keep the
*real part* of the complex spectrum (a Cast complex64 -> float32).  tf2onnx only knows how to lower
RFFT2D when it is followed by ComplexAbs, so we register our own RFFT2D handler that lowers the
real part of the rFFT to a MatMul with a constant cosine matrix:  Re(rfft(x))[k] = sum_n x[n] cos(2 pi n k / L).
"""
import argparse
import hashlib
import json
import os
import sys

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf2onnx  # noqa: E402

OPSET = 17
BRANCHES = ("MEL_SPEC1", "MEL_SPEC2")


def log(msg):
    print(f"[convert] {msg}", flush=True)


# ---------------------------------------------------------------------------
# custom tf2onnx handler: RFFT2D whose only consumer keeps the real part
# ---------------------------------------------------------------------------
def _rfft_real_part_handler(ctx, node, name, args):
    """Lower TF RFFT2D (fft_length [1, L]) over the last axis to x @ C, C[n,k] = cos(2 pi n k / L).

    The input is [..., 1, L] (TFLite expands a 1-D rfft to 2-D), the output [..., 1, L/2+1] becomes
    float32; the following Cast(complex64 -> float32) turns into a no-op float -> float Cast.
    """
    fft_len = node.inputs[1].get_tensor_value(as_list=True)
    if len(fft_len) != 2 or fft_len[0] != 1:
        raise ValueError(f"unsupported RFFT2D fft_length {fft_len} on {node.name}")
    n = int(fft_len[1])
    k = n // 2 + 1
    nk = np.outer(np.arange(n, dtype=np.int64), np.arange(k, dtype=np.int64)) % n
    cos = np.cos(2.0 * np.pi * nk.astype(np.float64) / n).astype(np.float32)
    const = ctx.make_const(tf2onnx.utils.make_name(node.name + "_real_dft_cos"), cos)
    node.type = "MatMul"
    for key in list(node.attr.keys()):
        del node.attr[key]
    ctx.replace_inputs(node, [node.input[0], const.output[0]])
    ctx.set_dtype(node.output[0], TensorProto.FLOAT)
    return node


def _check_real_part_consumers(tflite_path):
    """Assert each RFFT2D result only flows through SQUEEZE into a CAST to float32 (= real part)."""
    it = tf.lite.Interpreter(model_path=tflite_path)
    it.allocate_tensors()
    ops = it._get_ops_details()
    consumers = {}
    for op in ops:
        for i in op["inputs"]:
            consumers.setdefault(i, []).append(op)
    n_rfft = 0
    for op in ops:
        if op["op_name"] != "RFFT2D":
            continue
        n_rfft += 1
        chain = [op]
        cur = op
        while True:
            cons = consumers.get(cur["outputs"][0], [])
            if len(cons) != 1:
                raise RuntimeError(f"RFFT2D output has {len(cons)} consumers, expected 1")
            cur = cons[0]
            chain.append(cur)
            if cur["op_name"] in ("SQUEEZE", "RESHAPE"):
                continue
            break
        if cur["op_name"] != "CAST":
            raise RuntimeError(f"RFFT2D consumer chain {[c['op_name'] for c in chain]} does not end in CAST")
    if n_rfft != 2:
        raise RuntimeError(f"expected 2 RFFT2D ops, found {n_rfft}")


# ---------------------------------------------------------------------------
# front end extraction
# ---------------------------------------------------------------------------
def _tensor_by_name(it, details, name):
    for d in details:
        if d["name"] == name:
            return np.array(it.get_tensor(d["index"]))
    raise KeyError(name)


def extract_frontend(tflite_path, out_dir):
    it = tf.lite.Interpreter(model_path=tflite_path)
    it.allocate_tensors()
    det = it.get_tensor_details()
    ops = it._get_ops_details()
    op_names = [o["op_name"] for o in ops]
    # Sanity: the graph starts with the min/max normalisation we describe.
    expect_prefix = ["REDUCE_MIN", "SUB", "REDUCE_MAX", "ADD", "DIV", "SUB", "MUL"]
    if op_names[: len(expect_prefix)] != expect_prefix:
        raise RuntimeError(f"unexpected front-end op prefix {op_names[:10]}")

    def t(name):
        return _tensor_by_name(it, det, name)

    eps = float(t("model/MEL_SPEC1/add/y"))
    sub = float(t("model/MEL_SPEC1/Sub_1/y"))
    mul = float(t("model/MEL_SPEC1/Mul/y"))
    rev_axis = t("model/MEL_SPEC1/ReverseV2/axis").tolist()
    perm = t("model/MEL_SPEC1/transpose/perm").tolist()
    if rev_axis != [2] or perm != [0, 2, 1]:
        raise RuntimeError(f"unexpected reverse axis {rev_axis} / transpose perm {perm}")
    n_in = 144000
    branches = []
    for idx, b in enumerate(BRANCHES):
        frame_len = int(t(f"model/{b}/stft/frame_length"))
        hop = int(t(f"model/{b}/stft/frame_step"))
        fft_len = t(f"model/{b}/stft/rfft1" if b == "MEL_SPEC1" else f"model/{b}/stft/rfft").tolist()
        fft = int(fft_len[-1])
        window = t(f"model/{b}/stft/hann_window/sub_2").astype(np.float32)
        mel = t(f"model/{b}/Tensordot/MatMul").astype(np.float32)  # [96, fft/2+1]  (FC weights: out x in)
        expo = float(t(f"model/{b}/truediv_1"))
        n_frames = (n_in - frame_len) // hop + 1
        n_bins = fft // 2 + 1
        n_mels = mel.shape[0]
        if mel.shape[1] != n_bins or len(window) != frame_len or fft != frame_len:
            raise RuntimeError(f"{b}: inconsistent shapes mel {mel.shape} window {len(window)} fft {fft}")
        k = np.arange(frame_len)
        hann = 0.5 - 0.5 * np.cos(2 * np.pi * k / frame_len)
        win_err = float(np.abs(window - hann).max())
        nz_cols = np.nonzero(np.any(mel != 0, axis=0))[0]
        ranges = []
        for row in mel:
            nz = np.nonzero(row)[0]
            ranges.append([int(nz.min()), int(nz.max()) + 1] if nz.size else [0, 0])
        win_file = f"frontend_window_{idx}.f32"
        mel_file = f"frontend_mel_{idx}.f32"
        window.astype("<f4").tofile(os.path.join(out_dir, win_file))
        mel.astype("<f4").tofile(os.path.join(out_dir, mel_file))
        branches.append({
            "index": idx,
            "tflite_layer": b,
            "frame_length": frame_len,
            "hop": hop,
            "fft_size": fft,
            "n_frames": n_frames,
            "frame_start": f"t * {hop}  (t = 0..{n_frames - 1}); frames never run past the input, no padding",
            "window": "hann_periodic",
            "window_formula": f"w[n] = 0.5 - 0.5*cos(2*pi*n/{frame_len}), n = 0..{frame_len - 1}",
            "window_file": win_file,
            "window_file_dtype": "float32 little-endian",
            "window_file_shape": [frame_len],
            "window_max_abs_diff_vs_formula": win_err,
            "spectrum": "real_part",
            "spectrum_formula": f"re[k] = sum_n frame[n]*w[n]*cos(2*pi*n*k/{fft})  == Re(rfft(frame*w))[k], k = 0..{n_bins - 1} (no scaling)",
            "n_bins": n_bins,
            "bins_used": [int(nz_cols.min()), int(nz_cols.max()) + 1],
            "bins_used_note": "half-open range of rfft bins with any non-zero mel weight; other bins are multiplied by 0",
            "n_mels": n_mels,
            "mel_file": mel_file,
            "mel_file_dtype": "float32 little-endian",
            "mel_file_shape": [n_mels, n_bins],
            "mel_formula": "m[j] = sum_k mel[j, k] * re[k]   (mel is row-major [n_mels, n_bins])",
            "mel_nonzero_ranges": ranges,
            "mel_nonzero_count": int(np.count_nonzero(mel)),
            "compression": "pow",
            "exponent": expo,
            "compression_formula": f"c[j] = (m[j] * m[j]) ** {expo!r}   (square first, so negative m is fine; 0 -> 0)",
            "reverse_mels": True,
            "output_formula": f"spec[{idx}, i, t] = c_t[{n_mels - 1} - i]   (mel axis reversed: row 0 = highest mel band)",
            "output_shape": [n_mels, n_frames],
        })
    if branches[0]["n_frames"] != branches[1]["n_frames"]:
        raise RuntimeError("branches disagree on frame count")
    bn_scale = t("model/BNORM_SPEC_NOQUANT/FusedBatchNormV31").tolist()
    bn_offset = t("model/BNORM_SPEC_NOQUANT/FusedBatchNormV3").tolist()
    spec = {
        "format": "birdhub-frontend/1",
        "model": "BirdNET_GLOBAL_6K_V2.4_Model_FP32",
        "sample_rate": 48000,
        "input_samples": n_in,
        "input": "one 3 s chunk, float32 mono, any amplitude scale (the front end min/max-normalises it)",
        "normalize": {
            "type": "minmax_to_pm1",
            "eps": eps,
            "sub": sub,
            "mul": mul,
            "formula": f"lo = min(x); hi = max(x - lo); y = ((x - lo) / (hi + {eps!r}) - {sub!r}) * {mul!r}",
            "note": "per chunk, over all 144000 samples; both branches read the same normalised y",
        },
        "branches": branches,
        "output": {
            "name": "spec",
            "shape": [2, branches[0]["n_mels"], branches[0]["n_frames"]],
            "batched_shape": [-1, 2, branches[0]["n_mels"], branches[0]["n_frames"]],
            "dtype": "float32",
            "layout": "NCHW, row-major: [batch][branch][mel (reversed)][frame]; branch 0 = MEL_SPEC1 (2048-pt), branch 1 = MEL_SPEC2 (1024-pt)",
        },
        "net_model": "birdnet_net.onnx",
        "net_input_name": "spec",
        "net_output_name": "Identity",
        "net_note": ("birdnet_net.onnx starts with the BNORM_SPEC_NOQUANT batch-norm (per-branch scale/offset, "
                     "kept inside the network), so feed it exactly the front-end output described here"),
        "bnorm_inside_net": {"scale": bn_scale, "offset": bn_offset},
    }
    with open(os.path.join(out_dir, "frontend.json"), "w") as f:
        json.dump(spec, f, indent=2)
        f.write("\n")
    log(f"frontend.json: {[(b['frame_length'], b['hop'], b['n_frames'], b['exponent']) for b in branches]}")
    return spec


# ---------------------------------------------------------------------------
# network-only model: cut the converted graph after the spectrogram layers
# ---------------------------------------------------------------------------
def make_net_model(full_path, net_path, spec):
    m = onnx.load(full_path)
    g = m.graph
    nodes = list(g.node)
    by_out = {o: n for n in nodes for o in n.output}
    consumers = {}
    for n in nodes:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    inits = {i.name: i for i in g.initializer}

    concat = [n for n in nodes if n.op_type == "Concat" and n.output[0] == "model/concatenate/concat"]
    if len(concat) != 1:
        raise RuntimeError("could not find the spectrogram concat node")
    concat = concat[0]
    axis = [a.i for a in concat.attribute if a.name == "axis"][0]
    # Walk forward: concat -> Mul(scale) -> Add(offset) -> Transpose -> Conv (layout chosen by tf2onnx).
    mul = consumers[concat.output[0]]
    if len(mul) != 1 or mul[0].op_type != "Mul":
        raise RuntimeError(f"unexpected consumer of concat: {[c.op_type for c in mul]}")
    mul = mul[0]
    add = consumers[mul.output[0]]
    if len(add) != 1 or add[0].op_type != "Add":
        raise RuntimeError("unexpected consumer of BN mul")
    add = add[0]
    tr = consumers[add.output[0]]
    if len(tr) != 1 or tr[0].op_type != "Transpose":
        raise RuntimeError("unexpected consumer of BN add")
    tr = tr[0]
    perm = [list(a.ints) for a in tr.attribute if a.name == "perm"][0]
    conv = consumers[tr.output[0]]
    if len(conv) != 1 or conv[0].op_type != "Conv":
        raise RuntimeError("expected the first Conv after the BN transpose")
    conv = conv[0]

    # Figure out the concat tensor's layout: its inputs are ExpandDims outputs whose layout tf2onnx
    # may have permuted. We only need: after `perm`, the tensor is NCHW = [N, 2, 96, T].
    if axis != perm[1]:
        raise RuntimeError(f"concat axis {axis} is not the channel axis after transpose {perm}")

    def const_value(name):
        if name in inits:
            return numpy_helper.to_array(inits[name])
        p = by_out.get(name)
        if p is not None and p.op_type == "Constant":
            return numpy_helper.to_array(p.attribute[0].t)
        raise RuntimeError(f"{name} is not a constant")

    scale = const_value([i for i in mul.input if i != concat.output[0]][0]).reshape(-1)
    offset = const_value([i for i in add.input if i != mul.output[0]][0]).reshape(-1)
    if scale.size != 2 or offset.size != 2:
        raise RuntimeError("BN constants are not per-branch")

    new_nodes = []
    scale_name, offset_name = "spec_bn_scale", "spec_bn_offset"
    new_inits = [
        numpy_helper.from_array(scale.astype(np.float32).reshape(1, 2, 1, 1), scale_name),
        numpy_helper.from_array(offset.astype(np.float32).reshape(1, 2, 1, 1), offset_name),
    ]
    new_nodes.append(helper.make_node("Mul", ["spec", scale_name], ["spec_bn_mul"], name="spec_bn_mul"))
    new_nodes.append(helper.make_node("Add", ["spec_bn_mul", offset_name], ["spec_bn"], name="spec_bn_add"))
    for i, name in enumerate(conv.input):
        if name == tr.output[0]:
            conv.input[i] = "spec_bn"

    # Keep only nodes needed for the outputs.
    out_names = [o.name for o in g.output]
    all_nodes = new_nodes + [n for n in nodes if n not in (concat, mul, add, tr)]
    producer = {o: n for n in all_nodes for o in n.output}
    needed, stack, seen = set(), list(out_names), set()
    while stack:
        t = stack.pop()
        if t in seen:
            continue
        seen.add(t)
        n = producer.get(t)
        if n is None:
            continue
        if id(n) in needed:
            continue
        needed.add(id(n))
        stack.extend(n.input)
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                raise RuntimeError("subgraphs not supported in cut")
    kept = [n for n in all_nodes if id(n) in needed]
    used = {i for n in kept for i in n.input}
    n_frames = spec["branches"][0]["n_frames"]
    n_mels = spec["branches"][0]["n_mels"]
    batch_dim = g.input[0].type.tensor_type.shape.dim[0].dim_param or "N"
    inp = helper.make_tensor_value_info("spec", TensorProto.FLOAT, [batch_dim, 2, n_mels, n_frames])
    graph = helper.make_graph(
        kept, "birdnet_net", [inp], list(g.output),
        initializer=[i for i in list(g.initializer) + new_inits if i.name in used],
    )
    net = helper.make_model(graph, opset_imports=list(m.opset_import), producer_name="birdhub-convert")
    net.ir_version = m.ir_version
    onnx.checker.check_model(net)
    onnx.save(net, net_path)
    log(f"birdnet_net.onnx: {len(kept)} nodes (full model {len(nodes)}), input spec [{batch_dim},2,{n_mels},{n_frames}]")


def _set_batch_param(path, name="batch"):
    """Give the dynamic batch dim of inputs/outputs a readable, shared name."""
    m = onnx.load(path)
    for vi in list(m.graph.input) + list(m.graph.output):
        d = vi.type.tensor_type.shape.dim
        if len(d) and not d[0].HasField("dim_value"):
            d[0].dim_param = name
    onnx.save(m, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--classifier", required=True)
    ap.add_argument("--meta", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    log(f"tensorflow {tf.__version__}, tf2onnx {tf2onnx.__version__}, onnx {onnx.__version__}, opset {OPSET}")

    _check_real_part_consumers(a.classifier)
    full = os.path.join(a.out, "birdnet.onnx")
    log("converting classifier (custom RFFT2D real-part handler -> cosine MatMul) ...")
    tf2onnx.convert.from_tflite(
        a.classifier, opset=OPSET,
        custom_op_handlers={"RFFT2D": (_rfft_real_part_handler, [])},
        output_path=full,
    )
    _set_batch_param(full)
    onnx.checker.check_model(onnx.load(full))
    log(f"wrote {full} ({os.path.getsize(full)} bytes)")

    spec = extract_frontend(a.classifier, a.out)
    make_net_model(full, os.path.join(a.out, "birdnet_net.onnx"), spec)
    _set_batch_param(os.path.join(a.out, "birdnet_net.onnx"))

    meta = os.path.join(a.out, "meta_model.onnx")
    log("converting range meta-model (stock tf2onnx) ...")
    tf2onnx.convert.from_tflite(a.meta, opset=OPSET, output_path=meta)
    _set_batch_param(meta)
    onnx.checker.check_model(onnx.load(meta))
    log(f"wrote {meta} ({os.path.getsize(meta)} bytes)")

    def sha(p):
        return hashlib.sha256(open(p, "rb").read()).hexdigest()
    info = {
        "tensorflow": tf.__version__, "tf2onnx": tf2onnx.__version__, "onnx": onnx.__version__,
        "opset": OPSET,
        "rfft_lowering": "real part of rFFT as MatMul with constant cos(2*pi*n*k/L) matrix",
        "classifier_tflite": {"file": os.path.basename(a.classifier), "sha256": sha(a.classifier)},
        "meta_tflite": {"file": os.path.basename(a.meta), "sha256": sha(a.meta)},
    }
    with open(os.path.join(a.out, "conversion.json"), "w") as f:
        json.dump(info, f, indent=2)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
