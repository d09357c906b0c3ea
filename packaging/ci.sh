#!/usr/bin/env bash
# The packages in CI: build the amd64 and arm64 .debs, inspect both, and install-test both
# (amd64 in a booted systemd-nspawn container, arm64 in a chroot under qemu-user).
#
#   packaging/ci.sh [amd64] [arm64]     (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${CARGO_TARGET_DIR:-$HOME/.cache/birdhub/target}/dist"
arches=("$@"); ((${#arches[@]})) || arches=(amd64 arm64)
for arch in "${arches[@]}"; do
  t0=$(date +%s)
  deb="$(bash packaging/build-deb.sh --arch "$arch" --out "$OUT" | tail -1)"
  t1=$(date +%s)
  bash packaging/inspect-deb.sh "$deb"
  bash packaging/test-install.sh "$deb"
  echo "packaging: $arch: built in $((t1 - t0)) s ($(du -h "$deb" | cut -f1)), checked in $(( $(date +%s) - t1 )) s"
done
