#!/usr/bin/env bash
# Build birdhub_<version>_<arch>.deb: the binary, the BirdNET model directory, ONNX Runtime, the
# systemd units, the conffile, the docs and the licences.
#
#   packaging/build-deb.sh [--arch amd64|arm64] [--out DIR]
#
# arm64 is cross-built on an x86_64 Debian machine: the script installs its own toolchain when it is
# missing (the Rust target aarch64-unknown-linux-gnu and Debian's gcc-aarch64-linux-gnu and
# libc6-dev-arm64-cross) and fetches the aarch64 ONNX Runtime with the model (models/fetch.sh
# --platform aarch64). Build artefacts go to ${CARGO_TARGET_DIR:-$HOME/.cache/birdhub/target}.
# Prints the path of the .deb on its last line.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ARCH=""
OUT="$ROOT/dist"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --arch) ARCH="$2"; shift 2 ;;
    --arch=*) ARCH="${1#*=}"; shift ;;
    --out) OUT="$2"; shift 2 ;;
    --out=*) OUT="${1#*=}"; shift ;;
    -h|--help) sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-deb.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done
[[ -n "$ARCH" ]] || ARCH="$(dpkg --print-architecture)"
case "$ARCH" in
  amd64) TRIPLE=x86_64-unknown-linux-gnu; PLATFORM=x86_64 ;;
  arm64) TRIPLE=aarch64-unknown-linux-gnu; PLATFORM=aarch64 ;;
  *) echo "build-deb.sh: --arch must be amd64 or arm64 (got '$ARCH')" >&2; exit 2 ;;
esac
say() { printf '[deb %s] %s\n' "$ARCH" "$*" >&2; }
die() { printf '[deb %s] ERROR: %s\n' "$ARCH" "$*" >&2; exit 1; }
SUDO=""; [[ "$(id -u)" -eq 0 ]] || SUDO="sudo"

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/birdhub/target}"
export CARGO_TERM_COLOR=never
HOST_ARCH="$(dpkg --print-architecture)"
WORK="$CARGO_TARGET_DIR/deb/$ARCH"
mkdir -p "$WORK" "$OUT"

# ---- 1. toolchain ------------------------------------------------------------------------------
apt_missing=()
need_pkg() { dpkg -s "$1" >/dev/null 2>&1 || apt_missing+=("$1"); }
need_pkg binutils            # objdump: the dependency check below
if [[ "$ARCH" != "$HOST_ARCH" ]]; then
  [[ "$HOST_ARCH" == amd64 && "$ARCH" == arm64 ]] || die "cross-building $ARCH on $HOST_ARCH is not supported"
  need_pkg gcc-aarch64-linux-gnu
  need_pkg libc6-dev-arm64-cross
  need_pkg binutils-aarch64-linux-gnu
fi
if ((${#apt_missing[@]})); then
  say "installing ${apt_missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${apt_missing[@]}" >/dev/null
fi
CARGO_ARGS=(build --release --locked)
BIN="$CARGO_TARGET_DIR/release/birdhub"
OBJDUMP=objdump
if [[ "$ARCH" != "$HOST_ARCH" ]]; then
  rustup target list --installed | grep -qx "$TRIPLE" || { say "adding the Rust target $TRIPLE"; rustup target add "$TRIPLE"; }
  export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
  export CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc
  export AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar
  CARGO_ARGS+=(--target "$TRIPLE")
  BIN="$CARGO_TARGET_DIR/$TRIPLE/release/birdhub"
  OBJDUMP=aarch64-linux-gnu-objdump
fi

# ---- 2. the binary and the model ---------------------------------------------------------------
say "cargo ${CARGO_ARGS[*]}"
(cd "$ROOT" && cargo "${CARGO_ARGS[@]}" >&2)
MODELS="$WORK/models/birdnet-v2.4"
say "model directory for $PLATFORM (models/fetch.sh; cached)"
bash "$ROOT/models/fetch.sh" --platform "$PLATFORM" --dest "$MODELS" >&2

# ---- 3. the tree -------------------------------------------------------------------------------
VERSION="$(cd "$ROOT" && cargo metadata --no-deps --format-version 1 --offline 2>/dev/null \
  | python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"]=="birdhub"))')"
TREE="$WORK/tree"
rm -rf "$TREE"
install -d -m 0755 "$TREE/DEBIAN" "$TREE/usr/bin" "$TREE/usr/lib/birdhub" "$TREE/etc/birdhub" \
  "$TREE/lib/systemd/system" "$TREE/usr/share/doc/birdhub" "$TREE/usr/share/birdhub/models"
install -m 0755 "$BIN" "$TREE/usr/bin/birdhub"
install -m 0644 "$MODELS/libonnxruntime.so" "$TREE/usr/lib/birdhub/libonnxruntime.so"
# What the hub reads, the licence and provenance, and the recording fixture for `birdhub classify`.
# Left out: the full-graph birdnet.onnx and the parity fixtures (used only by models/parity.py).
(cd "$MODELS" && find . -type f ! -name libonnxruntime.so ! -name birdnet.onnx ! -path './fixtures/parity_*' \
  | sort | while read -r f; do install -D -m 0644 "$f" "$TREE/usr/share/birdhub/models/birdnet-v2.4/${f#./}"; done)
for unit in birdhub.service birdhub-satellite.service birdhub-satellite@.service; do
  install -m 0644 "$ROOT/systemd/$unit" "$TREE/lib/systemd/system/$unit"
done
install -m 0640 "$ROOT/debian/birdhub.toml" "$TREE/etc/birdhub/birdhub.toml"
DOC="$TREE/usr/share/doc/birdhub"
install -m 0644 "$ROOT/README.md" "$DOC/README.md"
if [[ -d "$ROOT/docs" ]]; then
  install -d -m 0755 "$DOC/docs"
  find "$ROOT/docs" -maxdepth 1 -name '*.md' -exec install -m 0644 {} "$DOC/docs/" \;
fi
install -m 0644 "$ROOT/debian/copyright" "$DOC/copyright"
install -m 0644 "$MODELS/LICENSE.CC-BY-NC-SA-4.0.txt" "$DOC/LICENSE.BirdNET-model.CC-BY-NC-SA-4.0.txt"
install -m 0644 "$MODELS/ATTRIBUTION.md" "$DOC/ATTRIBUTION.BirdNET-model.md"
install -m 0644 "$ROOT/assets/vendor/"*LICENSE* "$DOC/" 2>/dev/null || true
# The Rust crates compiled into the binary, with their licences.
(cd "$ROOT" && cargo tree --locked --offline -e normal --target "$TRIPLE" --prefix none \
  --format '{p} {l}' 2>/dev/null | sed 's/ (\*)$//; s/ (proc-macro)//' | sort -u) > "$DOC/rust-crates.txt"
[[ -s "$DOC/rust-crates.txt" ]] || die "cargo tree listed no crates"
gzip -9n -c "$ROOT/packaging/changelog" > "$DOC/changelog.Debian.gz"

# ---- 4. dependencies: every NEEDED library of the ELF files maps to a bookworm package -----------
declare -A PKG=(
  [libc.so.6]=libc6 [libm.so.6]=libc6 [libdl.so.2]=libc6 [libpthread.so.0]=libc6 [librt.so.1]=libc6
  [ld-linux-aarch64.so.1]=libc6 [ld-linux-x86-64.so.2]=libc6
  [libgcc_s.so.1]=libgcc-s1 [libstdc++.so.6]=libstdc++6
)
needed=$( { $OBJDUMP -p "$TREE/usr/bin/birdhub"; $OBJDUMP -p "$TREE/usr/lib/birdhub/libonnxruntime.so"; } \
  | awk '$1 == "NEEDED" { print $2 }' | sort -u)
deps=()
for so in $needed; do
  [[ -n "${PKG[$so]:-}" ]] || die "no known bookworm package provides $so (needed by the binary or ONNX Runtime)"
  deps+=("${PKG[$so]}")
done
# The newest glibc symbol version either file uses is the libc6 it needs.
glibc=$( { $OBJDUMP -T "$TREE/usr/bin/birdhub"; $OBJDUMP -T "$TREE/usr/lib/birdhub/libonnxruntime.so"; } \
  | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1)
DEPENDS="libc6 (>= $glibc)"
for d in $(printf '%s\n' "${deps[@]}" | sort -u); do
  [[ "$d" == libc6 ]] || DEPENDS="$DEPENDS, $d"
done
DEPENDS="$DEPENDS, adduser, init-system-helpers (>= 1.52), debconf (>= 0.5) | debconf-2.0"

# ---- 5. control files --------------------------------------------------------------------------
for f in postinst prerm postrm templates; do
  install -m 0755 "$ROOT/debian/$f" "$TREE/DEBIAN/$f"
done
chmod 0644 "$TREE/DEBIAN/templates"
echo "/etc/birdhub/birdhub.toml" > "$TREE/DEBIAN/conffiles"
SIZE=$(du -sk --exclude=DEBIAN "$TREE" | cut -f1)
cat > "$TREE/DEBIAN/control" <<CONTROL
Package: birdhub
Version: $VERSION
Architecture: $ARCH
Maintainer: birdhub developers <birdhub@localhost>
Installed-Size: $SIZE
Depends: $DEPENDS
Recommends: alsa-utils, ffmpeg, avahi-daemon
Section: net
Priority: optional
Description: hub of a bird-sound network, with the BirdNET classifier
 birdhub turns a Raspberry Pi into the hub of a bird-sound network: recording
 satellites stream audio over MQTT, the hub identifies the birds in-process
 with the BirdNET V2.4 model (included, CC BY-NC-SA 4.0: non-commercial use)
 and serves a dashboard, an HTTP API and a WebSocket stream on the LAN.
CONTROL
(cd "$TREE" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum > DEBIAN/md5sums)
chmod 0644 "$TREE/DEBIAN/md5sums" "$TREE/DEBIAN/control" "$TREE/DEBIAN/conffiles"

DEB="$OUT/birdhub_${VERSION}_${ARCH}.deb"
say "packing $DEB (Depends: $DEPENDS)"
dpkg-deb --root-owner-group -Zxz --build "$TREE" "$DEB" >&2
say "$(du -h "$DEB" | cut -f1) packed, $SIZE KiB installed"
echo "$DEB"
