#!/usr/bin/env python3
"""Pure-numpy reference implementation of the BirdNET V2.4 spectrogram front end.

It reads only DEST/frontend.json and the .f32 constant files it names, so it documents exactly what
a reimplementation (e.g. the Rust hub) must compute.  Output: float32 [2, 96, 511] per 3 s chunk
(or [N, 2, 96, 511] for a batch), the input of birdnet_net.onnx ("spec").

Usage as a library:
    fe = Frontend("models/birdnet-v2.4")
    spec = fe(chunk)            # chunk: float32 [144000] or [N, 144000]
"""
import json
import os
import sys

import numpy as np


class Frontend:
    def __init__(self, model_dir):
        with open(os.path.join(model_dir, "frontend.json")) as f:
            self.spec = json.load(f)
        self.branches = []
        for b in self.spec["branches"]:
            window = np.fromfile(os.path.join(model_dir, b["window_file"]), dtype="<f4")
            mel = np.fromfile(os.path.join(model_dir, b["mel_file"]), dtype="<f4").reshape(b["mel_file_shape"])
            assert window.shape == (b["frame_length"],)
            lo, hi = b["bins_used"]
            self.branches.append(dict(b, window_arr=window.astype(np.float64),
                                      mel_arr=mel[:, lo:hi].astype(np.float64), lo=lo, hi=hi))

    def normalize(self, x):
        n = self.spec["normalize"]
        x = x.astype(np.float64)
        lo = x.min(axis=-1, keepdims=True)
        d = x - lo
        hi = d.max(axis=-1, keepdims=True)
        return (d / (hi + n["eps"]) - n["sub"]) * n["mul"]

    def branch(self, y, b):
        """y: normalised [N, 144000] float64 -> [N, n_mels, n_frames]."""
        L, hop, T = b["frame_length"], b["hop"], b["n_frames"]
        idx = np.arange(T)[:, None] * hop + np.arange(L)[None, :]   # [T, L] sample index of each frame
        frames = y[:, idx] * b["window_arr"]                          # [N, T, L]
        re = np.fft.rfft(frames, n=b["fft_size"], axis=-1).real      # [N, T, L/2+1]  real part only
        re = re[..., b["lo"]:b["hi"]]                                  # bins with non-zero mel weight
        m = re @ b["mel_arr"].T                                        # [N, T, n_mels]
        c = (m * m) ** b["exponent"]                                  # square, then pow compression
        c = c[..., ::-1]                                               # reverse mel axis
        return np.transpose(c, (0, 2, 1))                              # [N, n_mels, T]

    def __call__(self, x):
        x = np.asarray(x, dtype=np.float32)
        single = x.ndim == 1
        if single:
            x = x[None, :]
        if x.shape[-1] != self.spec["input_samples"]:
            raise ValueError(f"expected {self.spec['input_samples']} samples, got {x.shape[-1]}")
        y = self.normalize(x)
        out = np.stack([self.branch(y, b) for b in self.branches], axis=1).astype(np.float32)
        return out[0] if single else out


if __name__ == "__main__":
    # Tiny CLI: frontend_ref.py MODEL_DIR IN.f32 OUT.f32  (raw little-endian float32 chunk(s))
    if len(sys.argv) != 4:
        print(__doc__)
        sys.exit(2)
    fe = Frontend(sys.argv[1])
    x = np.fromfile(sys.argv[2], dtype="<f4").reshape(-1, fe.spec["input_samples"])
    fe(x).astype("<f4").tofile(sys.argv[3])
