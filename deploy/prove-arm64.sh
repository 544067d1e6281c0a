#!/usr/bin/env bash
# Proof on arm64 (issue 22 point 6, issue 39; not part of make test): build the offline
# bundle, install it with NO network into a Debian 12 arm64 root filesystem run under
# qemu-user-static, start `shotclock serve` there and get 200 from /api/health; then boot
# that root with its own systemd (prove-arm64-boot.sh: the units as on a Pi after power-on).
# As root, on an amd64 Debian machine that reaches the Debian archive and PyPI (for the
# root and the bundle only):
#   sudo deploy/prove-arm64.sh [--root DIR] [--bundle FILE] [--keep] [--no-boot]
#   --root DIR     the arm64 root (default /var/tmp/shotclock-arm64/root; made once by
#                  debootstrap --arch=arm64 --foreign bookworm + the second stage under qemu;
#                  then DIR-boot, once: the root plus mosquitto and chromium from Debian, as
#                  on a hall server and a Pi with the desktop; install-pi.sh runs in a
#                  throwaway copy of that)
#   --bundle FILE  use this bundle instead of running make bundle
#   --keep         keep the copy the install ran in (default: removed)
#   --no-boot      stop after the install (no systemd-nspawn boot)
# Prints the time of each step.
set -euo pipefail

BASE=/var/tmp/shotclock-arm64
ROOTFS="$BASE/root"
BUNDLE=""
KEEP=no
BOOT=yes
while [[ $# -gt 0 ]]; do
    case "$1" in
        --root)
            ROOTFS="$2"
            shift
            ;;
        --bundle)
            BUNDLE="$2"
            shift
            ;;
        --keep) KEEP=yes ;;
        --no-boot) BOOT=no ;;
        -h | --help)
            sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "prove-arm64.sh: unknown option $1" >&2
            exit 2
            ;;
    esac
    shift
done
[[ $EUID -eq 0 ]] || {
    echo "prove-arm64.sh: run as root (debootstrap, chroot, unshare)" >&2
    exit 1
}
REPO="$(cd "$(dirname "$0")/.." && pwd)"
START=$SECONDS
step() { echo "== [$((SECONDS - START)) s] $*"; }

step "tools: debootstrap, qemu-user-static, binfmt_misc"
if ! command -v debootstrap >/dev/null || [[ ! -e /usr/libexec/qemu-binfmt/aarch64-binfmt-P && ! -e /usr/bin/qemu-aarch64-static ]]; then
    apt-get install -y debootstrap qemu-user-static binfmt-support
fi
[[ -e /proc/sys/fs/binfmt_misc/register ]] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
[[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]] || update-binfmts --enable qemu-aarch64

if [[ ! -f $ROOTFS/.shotclock-root-complete ]]; then
    step "Debian 12 arm64 root in $ROOTFS (debootstrap, first stage)"
    rm -rf "$ROOTFS"
    mkdir -p "$ROOTFS"
    # minbase + python3, python3-venv and systemd as init: what Raspberry Pi OS Lite has
    # (python3-lgpio and python3-evdev are not in plain Debian: the install takes the serial
    # display without GPIO)
    debootstrap --arch=arm64 --foreign --variant=minbase \
        --include=python3,python3-venv,systemd,systemd-sysv,dbus,libpam-systemd \
        bookworm "$ROOTFS" http://deb.debian.org/debian
    step "second stage under qemu-aarch64"
    chroot "$ROOTFS" /debootstrap/debootstrap --second-stage
    touch "$ROOTFS/.shotclock-root-complete"
fi
BOOTROOT="$ROOTFS-boot"
if [[ ! -f $BOOTROOT/.shotclock-boot-complete ]]; then
    step "the root plus mosquitto and chromium from Debian, in $BOOTROOT (apt under qemu)"
    rm -rf "$BOOTROOT"
    cp -a "$ROOTFS" "$BOOTROOT"
    chroot "$BOOTROOT" /usr/bin/env DEBIAN_FRONTEND=noninteractive PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        sh -c 'apt-get update -q && apt-get install -y -q --no-install-recommends mosquitto mosquitto-clients chromium xvfb dbus-user-session'
    touch "$BOOTROOT/.shotclock-boot-complete"
fi

if [[ -z $BUNDLE ]]; then
    step "bundle (make bundle)"
    make -C "$REPO" bundle
    BUNDLE="$(find "$REPO/dist" -name 'shotclock-bundle-*.tar.gz' -printf '%T@ %p\n' | sort -n | tail -n 1 | cut -d' ' -f2)"
fi
echo "bundle: $BUNDLE ($(du -h "$BUNDLE" | cut -f1))"

step "a throwaway copy of the root"
WORK="$BASE/run-$$"
cp -a "$BOOTROOT" "$WORK"
cleanup() { [[ $KEEP == yes ]] || rm -rf "$WORK"; }
trap cleanup EXIT
cp "$BUNDLE" "$WORK/tmp/shotclock-bundle.tar.gz"

cat >"$WORK/tmp/prove-inside.sh" <<'INSIDE'
#!/bin/bash
# Runs in the arm64 root (under qemu), in a network namespace with only loopback.
set -euo pipefail
export PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8
t0=$SECONDS
echo "-- arm64 inside: $(uname -m), $(. /etc/os-release && echo "$PRETTY_NAME"), python $(python3 -V)"
python3 - <<'PY'
import socket
for where in (("deb.debian.org", 80), ("151.101.2.132", 80), ("1.1.1.1", 53)):
    try:
        socket.create_connection(where, timeout=3).close()
    except OSError as exc:
        print("-- no network:", where, exc)
    else:
        raise SystemExit(f"{where} is reachable: not an offline proof")
PY
cd /tmp
tar -xzf shotclock-bundle.tar.gz
./shotclock-bundle/install-pi.sh --offline /tmp/shotclock-bundle.tar.gz --display serial
echo "-- install took $((SECONDS - t0)) s"
# An upgrade at the venue is the same command again: it must succeed offline and change
# nothing it should keep.
cp /etc/shotclock/env /tmp/env.before
t2=$SECONDS
./shotclock-bundle/install-pi.sh --offline /tmp/shotclock-bundle.tar.gz --display serial >/tmp/upgrade.log 2>&1 ||
    { tail -n 20 /tmp/upgrade.log; exit 1; }
cmp /etc/shotclock/env /tmp/env.before
echo "-- the same install again (an upgrade) took $((SECONDS - t2)) s; settings kept"
# What systemd's StateDirectory= does; then the unit's command, as its user, with its env.
install -d -o shotclock -g shotclock -m 0750 /var/lib/shotclock
set -a
# shellcheck disable=SC1091
. /etc/shotclock/env
set +a
t1=$SECONDS
cd /var/lib/shotclock
runuser -u shotclock -- /opt/shotclock/venv/bin/shotclock serve >/tmp/serve.log 2>&1 &
serve=$!
python3 - <<'PY'
import json, time, urllib.request
deadline = time.monotonic() + 300
while True:
    try:
        with urllib.request.urlopen("http://127.0.0.1:8000/api/health", timeout=5) as r:
            body = json.load(r)
            print("-- GET /api/health:", r.status, "ok", body.get("ok"),
                  "faults", [f.get("code") for f in body.get("faults", [])])
            break
    except OSError:
        if time.monotonic() > deadline:
            raise SystemExit("no answer from /api/health in 300 s")
        time.sleep(1)
PY
echo "-- serve answered after $((SECONDS - t1)) s"
/opt/shotclock/venv/bin/shotclock doctor || true
kill "$serve"
wait "$serve" || true
tail -n 5 /tmp/serve.log
INSIDE
chmod +x "$WORK/tmp/prove-inside.sh"

step "offline install and serve in the arm64 root (no network: its own namespace, loopback only)"
unshare --net --mount --fork /bin/bash -c "
    set -e
    ip link set lo up
    mount -t proc proc '$WORK/proc'
    mount -t sysfs sys '$WORK/sys'
    chroot '$WORK' /tmp/prove-inside.sh
"
step "done: bundle installed offline on arm64, shotclock serve answered 200"
if [[ $BOOT == yes ]]; then
    "$REPO/deploy/prove-arm64-boot.sh" --root "$WORK"
    step "done: the root booted with its own systemd (prove-arm64-boot.sh)"
fi
