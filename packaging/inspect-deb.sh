#!/usr/bin/env bash
# Inspect a birdhub .deb without installing it: the architecture of its ELF files, the files it
# must carry, its maintainer scripts, and that every library the binary and ONNX Runtime load is
# provided by a package its Depends names (checked against Debian bookworm's package lists).
#
#   packaging/inspect-deb.sh DEB
set -euo pipefail

DEB="$(realpath "${1:?usage: inspect-deb.sh DEB}")"
ARCH="$(dpkg-deb -f "$DEB" Architecture)"
fail() { printf '[inspect %s] FAIL: %s\n' "$ARCH" "$*" >&2; exit 1; }
ok() { printf '[inspect %s] ok - %s\n' "$ARCH" "$*"; }
case "$ARCH" in
  amd64) MACHINE="Advanced Micro Devices X86-64"; OBJDUMP=objdump ;;
  arm64) MACHINE="AArch64"; OBJDUMP=aarch64-linux-gnu-objdump ;;
  *) fail "unexpected architecture $ARCH" ;;
esac
command -v "$OBJDUMP" >/dev/null || OBJDUMP=objdump
X="$(mktemp -d)"; trap 'rm -rf "$X"' EXIT
dpkg-deb -x "$DEB" "$X/root"
dpkg-deb -e "$DEB" "$X/control"

for elf in usr/bin/birdhub usr/lib/birdhub/libonnxruntime.so; do
  [[ -f "$X/root/$elf" ]] || fail "missing /$elf"
  m="$(readelf -h "$X/root/$elf" | awk -F: '/Machine:/ { gsub(/^ +/, "", $2); print $2 }')"
  [[ "$m" == "$MACHINE" ]] || fail "/$elf is for '$m', not $ARCH"
done
ok "ELF machine of /usr/bin/birdhub and /usr/lib/birdhub/libonnxruntime.so: $MACHINE"

M=usr/share/birdhub/models/birdnet-v2.4
for f in $M/birdnet_net.onnx $M/birdnet_net_int8.onnx $M/birdnet_net_fp16.onnx $M/agreement.json $M/meta_model.onnx $M/frontend.json $M/labels/en.txt $M/labels/de.txt \
  $M/LICENSE $M/LICENSE.CC-BY-NC-SA-4.0.txt $M/ATTRIBUTION.md $M/fixtures/birds_10s.wav \
  $M/onnxruntime-LICENSE.txt lib/systemd/system/birdhub.service lib/systemd/system/birdhub-satellite.service \
  lib/systemd/system/birdhub-satellite@.service etc/birdhub/birdhub.toml usr/share/doc/birdhub/README.md \
  usr/share/doc/birdhub/copyright usr/share/doc/birdhub/rust-crates.txt; do
  [[ -s "$X/root/$f" ]] || fail "missing /$f"
done
[[ ! -e "$X/root/$M/libonnxruntime.so" ]] || fail "ONNX Runtime belongs in /usr/lib/birdhub, not the model dir"
grep -q "CC-BY-NC-SA-4.0" "$X/root/usr/share/doc/birdhub/copyright" || fail "copyright names the model licence"
ok "files: binary, model ($(du -sh "$X/root/$M" | cut -f1)), ONNX Runtime, units, conffile, docs, licences"

for s in postinst prerm postrm templates conffiles md5sums; do [[ -f "$X/control/$s" ]] || fail "no $s"; done
grep -qx /etc/birdhub/birdhub.toml "$X/control/conffiles" || fail "the config is a conffile"
(cd "$X/root" && md5sum --quiet -c "$X/control/md5sums") || fail "md5sums"
ok "maintainer scripts, debconf template, conffile, md5sums"

depends="$(dpkg-deb -f "$DEB" Depends)"
needed="$( { $OBJDUMP -p "$X/root/usr/bin/birdhub"; $OBJDUMP -p "$X/root/usr/lib/birdhub/libonnxruntime.so"; } \
  | awk '$1 == "NEEDED" { print $2 }' | sort -u | tr '\n' ' ')"
ok "NEEDED: $needed"
ok "Depends: $depends"
# Bookworm's package lists for the architecture: every package in Depends exists there, and the
# libraries are in the packages named (checked for real by the install test's dpkg -i and ldd).
LISTS="${BIRDHUB_CACHE:-$HOME/.cache/birdhub}/bookworm-Packages-$ARCH"
if [[ ! -s "$LISTS" ]]; then
  curl -fsS "http://deb.debian.org/debian/dists/bookworm/main/binary-$ARCH/Packages.xz" | xz -d > "$LISTS.tmp"
  mv "$LISTS.tmp" "$LISTS"
fi
for alt in $(echo "$depends" | tr ',' '\n' | sed 's/([^)]*)//g; s/ //g'); do
  found=no
  for p in ${alt//|/ }; do
    if grep -qx "Package: $p" "$LISTS" || grep -q "^Provides:.*\b$p\b" "$LISTS"; then found=yes; fi
  done
  [[ "$found" == yes ]] || fail "no package in bookworm $ARCH satisfies $alt"
done
glibc_need="$(echo "$depends" | sed -n 's/.*libc6 (>= \([0-9.]*\)).*/\1/p')"
glibc_have="$(awk '/^Package: libc6$/ { p = 1 } p && /^Version:/ { print $2; exit }' "$LISTS")"
dpkg --compare-versions "$glibc_have" ge "$glibc_need" || fail "bookworm $ARCH has libc6 $glibc_have < $glibc_need"
ok "every dependency exists in Debian bookworm $ARCH (libc6 $glibc_have >= $glibc_need)"
