#!/usr/bin/env bash
# Proof of the kiosk unit's hardening (issue 35 point 8; not part of make test). Boots a
# Debian 12 amd64 root with its own systemd (systemd-nspawn -b) that has Chromium, an X
# server (Xvfb) and a Wayland compositor (weston, headless) standing in for the desktop
# session, and starts deploy/shotclock-kiosk.service as shipped against a real
# `shotclock serve` of this checkout (plain HTTP, and HTTPS with a hall CA of
# `shotclock tls init`). The page's WebSocket reaching the service (its /api/health
# "clients") is the proof that Chromium runs, its sandbox included. Then each setting the
# unit leaves out is added alone (a drop-in): each must break Chromium.
# Native amd64, not the arm64 root of prove-arm64.sh: qemu-user refuses seccomp filters,
# so Chromium's sandbox cannot start under it at all. As root, with the Debian archive:
#   sudo deploy/prove-kiosk.sh [--root DIR]
#   --root DIR   the amd64 root (default /var/tmp/shotclock-kiosk/root; made once, then
#                booted read-only with a throwaway overlay: each run starts clean)
# The container shares this machine's network (the services listen on its loopback).
set -euo pipefail

ROOTFS=/var/tmp/shotclock-kiosk/root
while [[ $# -gt 0 ]]; do
    case "$1" in
        --root)
            ROOTFS="$2"
            shift
            ;;
        -h | --help)
            sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "prove-kiosk.sh: unknown option $1" >&2
            exit 2
            ;;
    esac
    shift
done
[[ $EUID -eq 0 ]] || {
    echo "prove-kiosk.sh: run as root (debootstrap, systemd-nspawn)" >&2
    exit 1
}
REPO="$(cd "$(dirname "$0")/.." && pwd)"
PY="$REPO/.venv/bin/python"
[[ -x $PY ]] || PY=python3
START=$SECONDS
step() { echo "== [$((SECONDS - START)) s] $*"; }

step "tools: systemd-nspawn, debootstrap"
command -v systemd-nspawn >/dev/null || apt-get install -y systemd-container
command -v debootstrap >/dev/null || apt-get install -y debootstrap

if [[ ! -f $ROOTFS/.shotclock-kiosk-root-complete ]]; then
    step "Debian 12 amd64 root with systemd, Chromium, Xvfb, weston in $ROOTFS"
    rm -rf "$ROOTFS"
    mkdir -p "$ROOTFS"
    debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,libpam-systemd,ca-certificates \
        bookworm "$ROOTFS" http://deb.debian.org/debian
    # apt resolves what debootstrap's --include cannot order (dconf needs a session bus)
    chroot "$ROOTFS" /usr/bin/env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        --no-install-recommends chromium xvfb weston libnss3-tools dbus-user-session
    # the desktop user of Raspberry Pi OS (uid 1000, its session running: lingering)
    chroot "$ROOTFS" useradd -m -u 1000 -s /bin/bash pi
    mkdir -p "$ROOTFS/var/lib/systemd/linger"
    touch "$ROOTFS/var/lib/systemd/linger/pi"
    systemd-machine-id-setup --root="$ROOTFS"
    echo kiosk >"$ROOTFS/etc/hostname"
    cat >"$ROOTFS/etc/systemd/system/kiosk-x.service" <<'EOF'
[Unit]
Description=Stand-in for an X desktop session: Xvfb on :0
[Service]
User=pi
ExecStart=/usr/bin/Xvfb :0 -screen 0 1280x720x24 -nolisten tcp
EOF
    cat >"$ROOTFS/etc/systemd/system/kiosk-wayland.service" <<'EOF'
[Unit]
Description=Stand-in for a Wayland desktop session: weston, headless, on wayland-1
[Service]
User=pi
Environment=XDG_RUNTIME_DIR=/run/user/1000
ExecStart=/usr/bin/weston --backend=headless-backend.so --socket=wayland-1 --use-pixman --idle-time=0
EOF
    touch "$ROOTFS/.shotclock-kiosk-root-complete"
fi
# shellcheck disable=SC2016 # dpkg-query expands ${Version}
echo "chromium in the root: $(chroot "$ROOTFS" dpkg-query -W -f='${Version}' chromium)"

WORK="$(mktemp -d /var/tmp/shotclock-kiosk-run.XXXXXX)"
PIDS=()
NSPAWN=""
LEADER=""
cleanup() {
    if [[ -n $NSPAWN ]] && kill -0 "$NSPAWN" 2>/dev/null; then
        [[ -z $LEADER ]] || inside systemctl poweroff >/dev/null 2>&1 || true
        for _ in $(seq 150); do kill -0 "$NSPAWN" 2>/dev/null || break; sleep 0.2; done
        kill "$NSPAWN" 2>/dev/null || true # twice: at once
        sleep 1
        kill "$NSPAWN" 2>/dev/null || true
    fi
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

step "the services the kiosk shows: shotclock serve over HTTP and over HTTPS (hall CA)"
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
HTTP_PORT=$(free_port)
HTTPS_PORT=$(free_port)
(cd "$REPO" && "$PY" -m clock_service tls init --out "$WORK/tls" --device kiosk=127.0.0.1 >/dev/null 2>&1)
(cd "$REPO" && SHOTCLOCK_DISPLAY=none exec "$PY" -m clock_service serve --port "$HTTP_PORT" \
    --db "$WORK/http.db" >"$WORK/http.log" 2>&1) &
PIDS+=($!)
(cd "$REPO" && SHOTCLOCK_DISPLAY=none exec "$PY" -m clock_service serve --port "$HTTPS_PORT" \
    --db "$WORK/https.db" --tls-cert "$WORK/tls/kiosk.crt" --tls-key "$WORK/tls/kiosk.key" \
    >"$WORK/https.log" 2>&1) &
PIDS+=($!)
clients() { # clients of the service at URL (its /api/health), or -1
    curl -s -m 5 --cacert "$WORK/tls/ca.crt" "$1/api/health" |
        "$PY" -c 'import json,sys; print(json.load(sys.stdin)["clients"])' 2>/dev/null || echo -1
}
for url in "http://127.0.0.1:$HTTP_PORT" "https://127.0.0.1:$HTTPS_PORT"; do
    for _ in $(seq 120); do [[ $(clients "$url") -ge 0 ]] && break; sleep 0.5; done
done

step "boot the root: systemd-nspawn -b (read-only root, throwaway overlay)"
systemd-nspawn -D "$ROOTFS" --volatile=overlay --register=no --keep-unit -M shotclock-kiosk \
    --console=passive -b -- systemd.firstboot=off >"$WORK/boot.log" 2>&1 &
NSPAWN=$!
for _ in $(seq 100); do
    LEADER="$(ps --ppid "$NSPAWN" -o pid= | head -n 1 | tr -d ' ' || true)"
    [[ -n $LEADER ]] && break
    sleep 0.2
done
[[ -n $LEADER ]] || {
    cat "$WORK/boot.log"
    exit 1
}
inside() { nsenter -t "$LEADER" -a -r -w /usr/bin/env PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }
put() { inside sh -c "mkdir -p \"\$(dirname '$2')\" && cat > '$2'" <"$1"; } # put FILE PATH
for _ in $(seq 300); do
    state="$(inside systemctl is-system-running 2>/dev/null || true)"
    [[ $state == running || $state == degraded ]] && break
    sleep 0.2
done
step "booted: $state"

put "$REPO/deploy/shotclock-kiosk.service" /etc/systemd/system/shotclock-kiosk.service
put "$WORK/tls/ca.crt" /etc/shotclock/tls/ca.crt
printf '[Service]\n' >"$WORK/none.conf"

# try NAME URL SESSION DROPIN: start the unit with this drop-in; did the page connect?
try() {
    local name=$1 url=$2 session=$3 dropin=$4 ok=no t0 n restarts since
    if [[ $session == x11 ]]; then
        inside systemctl stop kiosk-wayland
        inside systemctl start kiosk-x
        printf 'SHOTCLOCK_KIOSK_URL=%s/display?table=1&kiosk=1\nWAYLAND_DISPLAY=\n' "$url" >"$WORK/kiosk.env"
    else
        inside systemctl stop kiosk-x
        inside systemctl start kiosk-wayland
        printf 'SHOTCLOCK_KIOSK_URL=%s/display?table=1&kiosk=1\nXDG_SESSION_TYPE=wayland\n' "$url" >"$WORK/kiosk.env"
    fi
    put "$WORK/kiosk.env" /etc/shotclock/kiosk.env
    put "$dropin" /etc/systemd/system/shotclock-kiosk.service.d/proof.conf
    inside systemctl daemon-reload
    inside systemctl stop shotclock-kiosk
    for _ in $(seq 100); do [[ $(clients "$url") == 0 ]] && break; sleep 0.2; done
    since="$(inside date +%s)"
    t0=$SECONDS
    inside systemctl reset-failed shotclock-kiosk 2>/dev/null || true
    inside systemctl start --no-block shotclock-kiosk
    for _ in $(seq 200); do
        n=$(clients "$url")
        if [[ $n -ge 1 ]]; then
            ok=yes
            break
        fi
        [[ $((SECONDS - t0)) -ge 45 ]] && break
        sleep 0.2
    done
    restarts="$(inside systemctl show -p NRestarts --value shotclock-kiosk)"
    echo "-- $name: page connected: $ok ($((SECONDS - t0)) s; unit $(inside systemctl is-active shotclock-kiosk || true), $restarts restarts)"
    if [[ $ok == no ]]; then
        inside journalctl -u shotclock-kiosk --since="@$since" --no-pager -o cat |
            grep -E 'FATAL|Check failed|No usable sandbox|OOM|net_error|Missing X|Failed to|error' |
            grep -v -E 'dbus|UPower|cpufreq|gpu/ipc' | head -n 2 | cut -c1-220 | sed 's/^/     /' || true
    fi
    [[ $ok == yes ]]
}
dropin() { # dropin FILE SETTING...
    local file=$1
    shift
    {
        echo "[Service]"
        printf '%s\n' "$@"
    } >"$file"
}
HTTP="http://127.0.0.1:$HTTP_PORT"
HTTPS="https://127.0.0.1:$HTTPS_PORT"

step "the unit as shipped"
try "X session (Xvfb), HTTP" "$HTTP" x11 "$WORK/none.conf" || echo "!! the unit as shipped failed"
try "Wayland session (weston), HTTPS with the hall CA" "$HTTPS" wayland "$WORK/none.conf" ||
    echo "!! the unit as shipped failed"
MAIN="$(inside systemctl show -p MainPID --value shotclock-kiosk)"
echo "   browser (pid $MAIN): $(inside grep -E '^(NoNewPrivs|Seccomp|CapEff|CapBnd):' "/proc/$MAIN/status" | tr -s '\t\n' '  ')"
for pid in $(inside pgrep -f -- '--type=renderer' | head -n 2); do
    echo "   renderer $pid: $(inside grep '^Seccomp:' "/proc/$pid/status" | tr -s '\t' ' '), user namespace" \
        "$(inside readlink "/proc/$pid/ns/user") (the browser's: $(inside readlink "/proc/$MAIN/ns/user"))"
done
echo "   what it sees: /home $(inside nsenter -t "$MAIN" -m ls -A /home | wc -l) entries;" \
    "/run/user: $(inside nsenter -t "$MAIN" -m ls /run/user | tr '\n' ' ');" \
    "writes to /etc: $(inside nsenter -t "$MAIN" -m touch /etc/probe 2>&1 | sed 's/.*: //' || true)"
mv_ca() { inside mv "$1" "$2"; }
mv_ca /etc/shotclock/tls/ca.crt /etc/shotclock/tls/ca.crt.away
try "the same without the hall CA (must fail: the certificate is not trusted)" "$HTTPS" wayland \
    "$WORK/none.conf" && echo "   UNEXPECTED: connected without the CA" || true
mv_ca /etc/shotclock/tls/ca.crt.away /etc/shotclock/tls/ca.crt

step "each setting the unit leaves out, added alone: each must break Chromium"
broke=0
total=0
# (an empty SystemCallFilter= first: the unit's own list is a deny list, to which a
# drop-in's allow list would only give back system calls)
for setting in "MemoryDenyWriteExecute=yes" "RestrictNamespaces=yes" \
    "SystemCallFilter=|SystemCallFilter=@system-service" "SystemCallFilter=~@privileged" \
    "ProcSubset=pid" "SystemCallFilter=~chroot"; do
    IFS='|' read -r -a lines <<<"$setting"
    dropin "$WORK/try.conf" "${lines[@]}"
    setting="${setting//|/ then }"
    total=$((total + 1))
    if try "+ $setting" "$HTTP" x11 "$WORK/try.conf"; then
        echo "   UNEXPECTED: Chromium works with $setting"
    else
        broke=$((broke + 1))
    fi
done
echo "-- $broke of $total left-out settings break Chromium"

step "what this container does not enforce (cgroup v1 host: no BPF device or IP filters)"
probe_ip="$(hostname -I | awk '{print $1}')"
PROBE_PORT=$(free_port)
"$PY" -m http.server "$PROBE_PORT" --bind 0.0.0.0 --directory "$WORK/tls" >/dev/null 2>&1 &
PIDS+=($!)
sleep 1
if inside systemd-run -q --wait --pipe -p DevicePolicy=strict sh -c 'head -c 1 /dev/zero >/dev/null' 2>/dev/null; then
    echo "-- DevicePolicy=strict: /dev/zero still readable: DevicePolicy/DeviceAllow not enforced here"
else
    echo "-- DevicePolicy enforced"
fi
if inside systemd-run -q --wait --pipe -p IPAddressDeny=any -p IPAddressAllow=localhost \
    bash -c "exec 3<>/dev/tcp/$probe_ip/$PROBE_PORT" 2>/dev/null; then
    echo "-- IPAddressDeny=any: connected to $probe_ip:$PROBE_PORT all the same: IPAddressDeny/Allow not enforced here"
else
    echo "-- IPAddressDeny enforced"
fi

step "systemd-analyze security of every unit"
for unit in shotclock.service shotclock-bridge.service mosquitto/shotclock-hall.service shotclock-kiosk.service; do
    echo "-- $(systemd-analyze security --offline=true "$REPO/deploy/$unit" 2>/dev/null | tail -n 1)"
done
step "done"
