#!/usr/bin/env bash
# Builds the labelled set of `birdhub bench quality` once and prints its directory.
#
#   benches/quality/make-set.sh [--force]
#
# The set goes to ${BIRDHUB_CACHE:-$HOME/.cache/birdhub}/quality/<hash>/, where <hash> covers
# recipe.toml, make_set.py, models/recordings.py and models/SHA256SUMS; a set that is already
# there is reused. Needs models/fetch.sh to have run (its wheels and conversion venv), sox and
# espeak-ng (apt-get install sox espeak-ng).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
CACHE="${BIRDHUB_CACHE:-${HOME:-/tmp}/.cache/birdhub}"
FORCE=0
[[ "${1:-}" == "--force" ]] && FORCE=1

die() { printf '[quality-set] ERROR: %s\n' "$*" >&2; exit 1; }
for tool in sox espeak-ng; do
  command -v "$tool" >/dev/null || die "$tool not found (apt-get install sox espeak-ng)"
done
VENV="$CACHE/venv-convert-$(sha256sum "$REPO/models/requirements-convert.txt" | cut -c1-12)"
[[ -x "$VENV/bin/python" ]] || die "no conversion venv at $VENV: run models/fetch.sh first"
PY="$VENV/bin/python"
HASH="$("$PY" "$HERE/make_set.py" --wheels "$CACHE/wheels" --out /dev/null --print-hash)"
OUT="$CACHE/quality/$HASH"
if [[ $FORCE -eq 0 && -f "$OUT/manifest.json" ]]; then
  printf '[quality-set] reusing %s\n' "$OUT" >&2
  echo "$OUT"
  exit 0
fi
mkdir -p "$CACHE/quality"
rm -rf "$OUT.tmp"
mkdir -p "$OUT.tmp"
"$PY" -W ignore "$HERE/make_set.py" --wheels "$CACHE/wheels" --out "$OUT.tmp" >&2
rm -rf "$OUT"
mv "$OUT.tmp" "$OUT"
echo "$OUT"
