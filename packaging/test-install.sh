#!/usr/bin/env bash
# Install test of a birdhub .deb in a Debian bookworm root made with mmdebstrap.
#
#   packaging/test-install.sh DEB
#
# amd64 (on an amd64 machine): the root is booted with systemd-nspawn, so the package meets real
# systemd: dpkg -i starts the hardened unit (Type=notify, watchdog, journald), then the test
# checks the hub, classifies the recording fixture with the installed model and library,
# upgrades, removes and purges (keeping the data, then deleting it when asked).
# arm64 (on an amd64 machine): the root runs under qemu-user (binfmt_misc); systemd cannot boot
# there, so dpkg -i runs in a chroot without starting units, then the hub is started by hand
# from the installed paths and the fixture is classified.
# Root filesystems are cached under ${BIRDHUB_CACHE:-$HOME/.cache/birdhub}/rootfs.
set -euo pipefail

DEB="$(realpath "${1:?usage: test-install.sh DEB}")"
ARCH="$(dpkg-deb -f "$DEB" Architecture)"
HOST_ARCH="$(dpkg --print-architecture)"
CACHE="${BIRDHUB_CACHE:-$HOME/.cache/birdhub}"
SUDO=""; [[ "$(id -u)" -eq 0 ]] || SUDO="sudo"
say() { printf '[install %s] %s\n' "$ARCH" "$*"; }
fail() { printf '[install %s] FAIL: %s\n' "$ARCH" "$*" >&2; exit 1; }
ok() { printf '[install %s] ok - %s\n' "$ARCH" "$*"; }

need=(mmdebstrap systemd-container)
[[ "$ARCH" == "$HOST_ARCH" ]] || need+=(qemu-user-static binfmt-support)
missing=(); for p in "${need[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  say "installing ${missing[*]}"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if [[ "$ARCH" != "$HOST_ARCH" ]]; then
  [[ -e /proc/sys/fs/binfmt_misc/register ]] || $SUDO mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
  $SUDO update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true
  grep -q enabled /proc/sys/fs/binfmt_misc/qemu-aarch64 2>/dev/null || fail "qemu-aarch64 binfmt is not available"
fi

# ---- the root filesystem (cached) ---------------------------------------------------------------
TAR="$CACHE/rootfs/bookworm-$ARCH.tar"
if [[ ! -s "$TAR" ]]; then
  say "making a Debian bookworm $ARCH root with mmdebstrap (once; cached at $TAR)"
  mkdir -p "$(dirname "$TAR")"
  $SUDO mmdebstrap --quiet --variant=minbase --architectures="$ARCH" \
    --include=systemd,systemd-sysv,dbus,adduser,curl,ca-certificates,libstdc++6 \
    bookworm "${TAR%.tar}.partial.tar" http://deb.debian.org/debian
  mv "${TAR%.tar}.partial.tar" "$TAR"
fi
ROOT="$(mktemp -d /var/tmp/birdhub-install.XXXXXX)"
PID=""
cleanup() {
  if [[ -n "$PID" ]]; then
    $SUDO nsenter -t "$PID" -a systemctl poweroff >/dev/null 2>&1 || $SUDO kill "$PID" 2>/dev/null || true
    for _ in $(seq 50); do [[ -d "/proc/$PID" ]] || break; sleep 0.2; done
  fi
  $SUDO rm -rf "$ROOT" "$ROOT.console" "$ROOT.hub.log"
}
trap cleanup EXIT
$SUDO tar -xf "$TAR" -C "$ROOT"
$SUDO cp "$DEB" "$ROOT/root/birdhub.deb"
echo "birdhub-test" | $SUDO tee "$ROOT/etc/hostname" >/dev/null
FIXTURE=/usr/share/birdhub/models/birdnet-v2.4/fixtures/birds_10s.wav

if [[ "$ARCH" == "$HOST_ARCH" ]]; then
  # ---- boot it --------------------------------------------------------------------------------
  $SUDO systemd-nspawn -b -q --register=no --keep-unit --private-network -D "$ROOT" \
    --machine=birdhub-test >"$ROOT.console" 2>&1 &
  NSPAWN=$!
  for _ in $(seq 100); do
    PID="$(pgrep -P "$NSPAWN" -x systemd || true)"; [[ -n "$PID" ]] && break; sleep 0.2
  done
  [[ -n "$PID" ]] || { cat "$ROOT.console" >&2; fail "the container did not boot"; }
  ct() { $SUDO nsenter -t "$PID" -a env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
           DEBIAN_FRONTEND=noninteractive "$@"; }
  state=""
  for _ in $(seq 120); do
    state="$(ct systemctl is-system-running 2>/dev/null || true)"
    [[ "$state" == running || "$state" == degraded ]] && break; sleep 0.5
  done
  [[ "$state" == running || "$state" == degraded ]] || fail "the container's systemd did not finish booting ($state)"
  say "container booted: $state"

  # ---- install --------------------------------------------------------------------------------
  out="$(ct dpkg -i /root/birdhub.deb 2>&1)" || { echo "$out" >&2; fail "dpkg -i"; }
  echo "$out" | sed 's/^/    | /'
  echo "$out" | grep -q "is installed and running" || fail "postinst says the hub runs"
  code="$(ct cat /var/lib/birdhub/setup-code)"
  echo "$out" | grep -q "setup code  $code" || fail "postinst prints the setup code ($code)"
  echo "$out" | grep -q "Dashboard:  http://birdhub-test.local:8080/" || fail "postinst prints the dashboard URL"
  ok "dpkg -i: installed, started, printed the URL and the one-time setup code"
  [[ "$(ct systemctl is-active birdhub)" == active ]] || fail "birdhub.service is active"
  [[ "$(ct systemctl is-enabled birdhub)" == enabled ]] || fail "birdhub.service is enabled"
  [[ "$(ct systemctl show -p Type --value birdhub)" == notify ]] || fail "Type=notify"
  [[ "$(ct systemctl show -p WatchdogUSec --value birdhub)" == 1min ]] || fail "WatchdogSec=60s"
  ok "birdhub.service: active (it said READY=1), enabled, Type=notify, watchdog 1min"
  [[ "$(ct stat -c '%a %U:%G' /var/lib/birdhub)" == "750 birdhub:birdhub" ]] || fail "/var/lib/birdhub 0750 birdhub"
  [[ "$(ct stat -c '%a %U:%G' /etc/birdhub/birdhub.toml)" == "640 root:birdhub" ]] || fail "config 0640 root:birdhub"
  [[ "$(ct stat -c '%a' /var/lib/birdhub/secrets.toml)" == 600 ]] || fail "secrets 0600"
  ok "/var/lib/birdhub 0750 birdhub:birdhub, config 0640 root:birdhub, secrets 0600"
  ct curl -fsS http://127.0.0.1:8080/api/health | grep -q '"status":"ok"' || fail "GET /api/health"
  ct curl -fsS http://127.0.0.1:8080/ | grep -q "Create the first account" || fail "the first-run page"
  ok "the hub answers /api/health and shows the first-run page"
  # journald files entries asynchronously: on a loaded machine the startup entries can reach the
  # journal after the hub already answers, so give it a few seconds before judging.
  for _ in $(seq 40); do
    journal="$(ct journalctl -u birdhub -o verbose --no-pager)"
    echo "$journal" | grep -qx "    SETUP_CODE=$code" && break; sleep 0.5
  done
  for field in "SETUP_CODE=$code" "SYSLOG_IDENTIFIER=birdhub" "PRIORITY=4" "_TRANSPORT=journal" \
    "TARGET=birdhub::web::setup" "CODE_FILE=src/web/setup.rs"; do
    echo "$journal" | grep -qx "    $field" || fail "the journal holds structured entries ($field)"
  done
  ! ct journalctl -u birdhub --no-pager | grep -q "BFCArena" || fail "ONNX Runtime's info chatter stays out of the journal"
  ok "journald holds structured entries (PRIORITY, TARGET, SETUP_CODE=…)"
  sec="$(ct systemd-analyze security --no-pager birdhub.service | grep 'Overall exposure level')"
  echo "$sec" | grep -Eq ' (OK|SAFE)' || fail "systemd-analyze security: $sec"
  ok "systemd-analyze security birdhub.service:${sec#*:}"
  classified="$(ct /usr/bin/birdhub classify "$FIXTURE" 2>&1)" || { echo "$classified" >&2; fail "birdhub classify"; }
  echo "$classified" | sed 's/^/    | /'
  echo "$classified" | grep -q "Tennessee Warbler" || fail "the fixture names a Tennessee Warbler"
  ok "birdhub classify names the fixture's Tennessee Warbler with the installed model and library"
  classified="$(ct env BIRDHUB_INFERENCE__PRECISION=int8 /usr/bin/birdhub classify "$FIXTURE" 2>&1)" \
    || { echo "$classified" >&2; fail "birdhub classify with int8"; }
  echo "$classified" | grep -q "(int8).*" && echo "$classified" | grep -q "Tennessee Warbler" \
    || fail "the packaged int8 network names the Tennessee Warbler: $classified"
  ok "inference.precision=int8: the packaged INT8 network names the Tennessee Warbler"
  status="$(ct runuser -u birdhub -- /usr/bin/birdhub model status)" || fail "birdhub model status: $status"
  echo "$status" | grep -q "runtime: /usr/lib/birdhub/libonnxruntime.so" \
    || fail "model status points at /usr/lib/birdhub/libonnxruntime.so: $status"
  echo "$status" | grep -q "shipped: fp32 fp16 int8" || fail "the package ships every precision: $status"
  ok "birdhub model status: the packaged model (fp32, fp16, int8) and /usr/lib/birdhub/libonnxruntime.so"

  # ---- upgrade ct place (same package again: prerm upgrade, migrate, start) ------------------
  out="$(ct dpkg -i /root/birdhub.deb 2>&1)" || { echo "$out" >&2; fail "reinstall"; }
  [[ "$(ct systemctl is-active birdhub)" == active ]] || fail "active after the upgrade"
  [[ "$(ct cat /var/lib/birdhub/setup-code)" != "" ]] || fail "data kept over the upgrade"
  ct test -f /var/lib/birdhub/birdhub.db || fail "the database survives the upgrade"
  ok "upgrade: stopped, migrated, started again; data kept"

  # ---- remove, purge keeping the data, purge deleting it ------------------------------------
  ct dpkg -r birdhub >/dev/null 2>&1 || fail "dpkg -r"
  ct test ! -e /usr/bin/birdhub || fail "remove deletes the binary"
  [[ "$(ct systemctl is-active birdhub || true)" != active ]] || fail "remove stops the hub"
  ct test -f /etc/birdhub/birdhub.toml || fail "remove keeps the conffile"
  ct test -f /var/lib/birdhub/birdhub.db || fail "remove keeps the data"
  ok "dpkg -r: hub stopped, binary gone, config and data kept"
  out="$(ct dpkg --purge birdhub 2>&1)" || { echo "$out" >&2; fail "dpkg --purge"; }
  ct test ! -e /etc/birdhub || fail "purge deletes the config"
  ct test -f /var/lib/birdhub/birdhub.db || fail "purge without consent keeps the data"
  echo "$out" | grep -q "kept your data" || fail "purge says it kept the data"
  ok "dpkg --purge (no answer): config gone, data kept and said so"
  ct dpkg -i /root/birdhub.deb >/dev/null 2>&1 || fail "install over kept data"
  ct test ! -e /var/lib/birdhub/setup-code -o -s /var/lib/birdhub/setup-code || fail "setup code"
  echo "birdhub birdhub/purge-data boolean true" | ct debconf-set-selections
  ct dpkg --purge birdhub >/dev/null 2>&1 || fail "purge with the debconf answer"
  ct test ! -e /var/lib/birdhub || fail "purge with birdhub/purge-data=true deletes /var/lib/birdhub"
  ct dpkg -i /root/birdhub.deb >/dev/null 2>&1 || fail "fresh install"
  ct env BIRDHUB_PURGE_DATA=yes dpkg --purge birdhub >/dev/null 2>&1 || fail "purge with BIRDHUB_PURGE_DATA=yes"
  ct test ! -e /var/lib/birdhub || fail "BIRDHUB_PURGE_DATA=yes deletes /var/lib/birdhub"
  ! ct getent passwd birdhub >/dev/null || fail "the user goes with the data"
  ok "purge deletes the data only when asked (debconf birdhub/purge-data, or BIRDHUB_PURGE_DATA=yes)"
else
  # ---- foreign architecture: chroot under qemu-user -----------------------------------------
  ct() { $SUDO chroot "$ROOT" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
           DEBIAN_FRONTEND=noninteractive "$@"; }
  $SUDO mount --bind /proc "$ROOT/proc"
  trap '$SUDO umount "$ROOT/proc" 2>/dev/null || true; cleanup' EXIT
  [[ "$(ct uname -m)" == aarch64 ]] || fail "the chroot runs aarch64 code"
  out="$(ct dpkg -i /root/birdhub.deb 2>&1)" || { echo "$out" >&2; fail "dpkg -i"; }
  echo "$out" | sed 's/^/    | /'
  echo "$out" | grep -q "sudo systemctl enable --now birdhub" || fail "postinst says how to start without systemd"
  ok "dpkg -i under qemu-user: user, data dir and schema made (no systemd in a chroot to start it)"
  libs="$(ct ldd /usr/bin/birdhub /usr/lib/birdhub/libonnxruntime.so 2>&1)" || fail "ldd: $libs"
  ! echo "$libs" | grep -q "not found" || { echo "$libs" >&2; fail "a library is missing in bookworm arm64"; }
  ok "every library of the binary and ONNX Runtime resolves in the bookworm arm64 root (ldd)"
  ct test -f /var/lib/birdhub/birdhub.db || fail "postinst migrated the database"
  # The hub as the unit would run it (user, config, data dir), on ports of its own.
  $SUDO chroot "$ROOT" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin STATE_DIRECTORY=/var/lib/birdhub BIRDHUB_MQTT__WS_BIND=127.0.0.1:0 \
    runuser -u birdhub -- /usr/bin/birdhub serve --http-bind 127.0.0.1:18080 --mqtt-bind 127.0.0.1:18830 \
    >"$ROOT.hub.log" 2>&1 &
  HUB=$!
  up=no
  for _ in $(seq 240); do
    if curl -fsS http://127.0.0.1:18080/api/health 2>/dev/null | grep -q '"status":"ok"'; then up=yes; break; fi
    sleep 0.5
  done
  $SUDO kill -TERM "$HUB" 2>/dev/null || true; wait "$HUB" 2>/dev/null || true
  [[ "$up" == yes ]] || { tail -20 "$ROOT.hub.log" >&2; fail "the aarch64 hub answers /api/health"; }
  ok "the aarch64 hub starts from the installed paths (as birdhub, /etc/birdhub/birdhub.toml) and answers"
  classified="$(ct /usr/bin/birdhub classify "$FIXTURE" 2>&1)" || { echo "$classified" >&2; fail "birdhub classify"; }
  echo "$classified" | sed 's/^/    | /'
  echo "$classified" | grep -q "Tennessee Warbler" || fail "the fixture names a Tennessee Warbler"
  ok "birdhub classify (aarch64 binary and ONNX Runtime under qemu) names the Tennessee Warbler"
  ct dpkg --purge birdhub >/dev/null 2>&1 || fail "dpkg --purge"
  ct test ! -e /usr/bin/birdhub || fail "purge removes the binary"
  ok "dpkg --purge"
fi
say "all install checks passed"
