#!/usr/bin/env bash
# Boot proof on arm64 (issue 39; called by prove-arm64.sh, not part of make test): boots an
# arm64 root where the offline bundle was installed with its own systemd (systemd-nspawn -b
# through qemu-user-static, no network: loopback only), as a Pi at a venue after power-on,
# and shows from outside the container:
#   start     shotclock.service active as its user, READY sent (seconds from boot)
#   answers   /api/health from the service
#   restarts  systemctl kill -s KILL: back, no acknowledged event lost; SIGSTOP: the
#             watchdog restarts it; the store's file system read-only: exit 73, no restart
#   devices   a fake serial display (the emulator's pty at /dev/shotclock-display, group
#             dialout as the udev rule makes it) and a fake /dev/video0, from the unit itself
#   hall      Mosquitto with the generated accounts and the hall's TLS, shotclock-hall.service,
#             the table mirrored to the hall over the broker
#   doctor    shotclock doctor as the service's user (its output kept)
#   kiosk     shotclock-kiosk.service started: what a container lacks for it
# As root, on the machine that made the root (binfmt qemu-aarch64 with the F flag):
#   sudo deploy/prove-arm64-boot.sh --root DIR [--out DIR]
#   --root DIR   an arm64 Debian root with systemd, mosquitto and chromium in which
#                install-pi.sh --offline --display serial has run (prove-arm64.sh makes it)
#   --out DIR    where the journal, doctor's output and the figures are kept
#                (default /var/tmp/shotclock-arm64/boot-<date>)
set -Eeuo pipefail

ROOTFS=""
OUT="/var/tmp/shotclock-arm64/boot-$(date +%Y%m%d-%H%M%S)"
while [[ $# -gt 0 ]]; do
    case "$1" in
        --root)
            ROOTFS="$2"
            shift
            ;;
        --out)
            OUT="$2"
            shift
            ;;
        -h | --help)
            sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "prove-arm64-boot.sh: unknown option $1" >&2
            exit 2
            ;;
    esac
    shift
done
[[ $EUID -eq 0 ]] || {
    echo "prove-arm64-boot.sh: run as root (chroot, systemd-nspawn)" >&2
    exit 1
}
[[ -n $ROOTFS && -x $ROOTFS/opt/shotclock/venv/bin/shotclock ]] || {
    echo "prove-arm64-boot.sh: --root must be a root with the bundle installed" >&2
    exit 2
}
command -v systemd-nspawn >/dev/null || apt-get install -y systemd-container
mkdir -p "$OUT"
START=$SECONDS
step() { echo "== [$((SECONDS - START)) s] $*"; }
SRC="$ROOTFS/tmp/shotclock-bundle/deploy" # the bundle's deploy/ (prove-arm64.sh unpacked it)
[[ -d $SRC ]] || SRC="$(cd "$(dirname "$0")" && pwd)"
# in the root, with no network at all
offline() {
    # shellcheck disable=SC2016 # $0 and $@ are the inner shell's
    unshare --net --mount --fork /bin/sh -c 'mount -t proc proc "$0/proc" && exec chroot "$0" "$@"' \
        "$ROOTFS" /usr/bin/env PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"
}

step "set up in the root, offline: the hall's broker and service, the table on the broker, stand-ins for the devices"
offline python3 /tmp/shotclock-bundle/deploy/mosquitto/accounts.py --hall main --tables 1 \
    --reader obs --broker localhost --out /etc/mosquitto/shotclock
offline /opt/shotclock/venv/bin/shotclock tls init --out /etc/mosquitto/shotclock \
    --device broker=localhost,127.0.0.1 >/dev/null
offline chown -R mosquitto: /etc/mosquitto/shotclock
install -m 644 "$SRC/mosquitto/shotclock.conf" "$ROOTFS/etc/mosquitto/conf.d/shotclock.conf"
install -m 644 "$SRC/mosquitto/shotclock-tls.cnf" "$ROOTFS/etc/mosquitto/shotclock-tls.cnf"
install -D -m 644 "$SRC/mosquitto/mosquitto-tls.conf" \
    "$ROOTFS/etc/systemd/system/mosquitto.service.d/shotclock-tls.conf"
install -D -m 644 "$ROOTFS/etc/mosquitto/shotclock/ca.crt" "$ROOTFS/etc/shotclock/tls/ca.crt"
TOKEN="$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')"
# (run again on the same root: the lines of a previous run replaced)
sed -i '/^SHOTCLOCK_\(DEFAULT_TABLE\|MQTT_URL\|MQTT_CA\)=/d' "$ROOTFS/etc/shotclock/env"
{
    grep -v '^#' "$ROOTFS/etc/mosquitto/shotclock/env/shotclock-main-table-1.env"
    echo "SHOTCLOCK_MQTT_CA=/etc/shotclock/tls/ca.crt"
} >>"$ROOTFS/etc/shotclock/env"
{
    grep -v '^#' "$ROOTFS/etc/mosquitto/shotclock/env/shotclock-hall-main.env"
    echo "SHOTCLOCK_MQTT_CA=/etc/shotclock/tls/ca.crt"
    echo "SHOTCLOCK_HALL_DB=/var/lib/shotclock/hall.db"
    echo "SHOTCLOCK_HOST=127.0.0.1"
    echo "SHOTCLOCK_PORT=8001"
    echo "SHOTCLOCK_REFEREE_TOKEN=$TOKEN"
} >"$ROOTFS/etc/shotclock/hall.env"
chmod 640 "$ROOTFS/etc/shotclock/hall.env"
offline chgrp shotclock /etc/shotclock/hall.env
install -m 644 "$SRC/mosquitto/shotclock-hall.service" "$ROOTFS/etc/systemd/system/"
install -m 644 "$SRC/shotclock-kiosk.service" "$ROOTFS/etc/systemd/system/"
offline systemctl enable shotclock-hall.service mosquitto.service >/dev/null 2>&1
# The Pico on USB: the display emulator's pty at the udev rule's name, with the group and
# mode the rule gives the real one (root:dialout 0660).
cat >"$ROOTFS/etc/systemd/system/proof-display.service" <<'EOF'
[Unit]
Description=Stand-in for the Pico display controller: an emulator on a pty at /dev/shotclock-display
Before=shotclock.service
[Service]
ExecStart=/opt/shotclock/venv/bin/shotclock-display-emulator --link /dev/shotclock-display --quiet
ExecStartPost=/bin/sh -c 'until [ -e /dev/shotclock-display ]; do sleep 0.1; done; t=$(readlink -f /dev/shotclock-display); chgrp dialout "$t"; chmod 0660 "$t"'
[Install]
WantedBy=multi-user.target
EOF
# The camera: a video4linux node (major 81) with the group and mode of a real one, and one
# the service's groups do not reach; no driver is behind them (opening says so).
cat >"$ROOTFS/etc/systemd/system/proof-video.service" <<'EOF'
[Unit]
Description=Stand-in for the camera: /dev/video0 (root:video 0660) and /dev/video9 (root:root 0660)
Before=shotclock.service
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c 'mknod -m 0660 /dev/video0 c 81 0 && chgrp video /dev/video0 && mknod -m 0660 /dev/video9 c 81 9'
[Install]
WantedBy=multi-user.target
EOF
# Each start of the service says what the unit's own process can open (a drop-in: the unit's
# settings are as shipped; this line runs under them).
install -d "$ROOTFS/etc/systemd/system/shotclock.service.d"
cat >"$ROOTFS/etc/systemd/system/shotclock.service.d/proof.conf" <<'EOF'
[Service]
ExecStartPre=-/bin/sh -c '{ id; for d in /dev/shotclock-display /dev/video0 /dev/video9; do true <"$d" && echo "$d opened"; done; } 2>&1 | sed "s/^/proof: /"'
EOF
offline systemctl enable proof-display.service proof-video.service >/dev/null 2>&1
# The kiosk's desktop user (uid 1000, as on Raspberry Pi OS)
offline id pi >/dev/null 2>&1 || offline useradd -m -u 1000 -s /bin/bash pi
rm -f "$ROOTFS/etc/machine-id"
systemd-machine-id-setup --root="$ROOTFS" >/dev/null
echo table-1 >"$ROOTFS/etc/hostname"
# debootstrap's minbase has no /etc/hosts (Raspberry Pi OS has this one): without it
# "localhost" does not resolve (nsswitch: files dns, and no network for dns)
[[ -s $ROOTFS/etc/hosts ]] || printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\ttable-1\n' >"$ROOTFS/etc/hosts"

step "boot: systemd-nspawn -b, no network (its own namespace, loopback only), arm64 under qemu"
BOOTED_AT=$SECONDS
systemd-nspawn -D "$ROOTFS" --private-network --register=no --keep-unit -M shotclock-arm64 \
    --console=passive -b -- systemd.firstboot=off >"$OUT/nspawn.log" 2>&1 &
NSPAWN=$!
cleanup() {
    if kill -0 "$NSPAWN" 2>/dev/null; then
        inside systemctl poweroff >/dev/null 2>&1 || kill "$NSPAWN" 2>/dev/null || true
        for _ in $(seq 150); do kill -0 "$NSPAWN" 2>/dev/null || break; sleep 0.2; done
        kill "$NSPAWN" 2>/dev/null || true
    fi
}
trap cleanup EXIT
# A step that fails for good: say where, with the journal's last lines (the main shell only,
# on stderr: never into a $(...) that a check reads)
on_error() {
    [[ $BASHPID == "$$" ]] || return 0
    echo "!! failed at line $1; the journal's last lines:" >&2
    inside journalctl -b -n 25 --no-pager -o cat >&2 2>/dev/null || true
    inside journalctl -b --no-pager >"$OUT/journal.txt" 2>&1 || true
}
trap 'on_error $LINENO' ERR
LEADER=""
for _ in $(seq 150); do
    LEADER="$(ps --ppid "$NSPAWN" -o pid= | head -n 1 | tr -d ' ' || true)"
    [[ -n $LEADER ]] && break
    sleep 0.2
done
[[ -n $LEADER ]] || {
    cat "$OUT/nspawn.log"
    exit 1
}
inside() { nsenter -t "$LEADER" -a -r -w /usr/bin/env PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"; }
# this machine's tools, in the container's network namespace (its loopback)
net() { nsenter -t "$LEADER" -n "$@"; }
prop() { inside systemctl show -p "$2" --value "$1"; }
said() { # said UNIT PATTERN: the first journal line of UNIT in this boot matching PATTERN
    { inside journalctl -u "$1" -b --no-pager -o cat || true; } | grep -m1 -i -E "$2" || echo "(nothing matching '$2')"
}
health() { net curl -s -m 10 "http://127.0.0.1:${2:-8000}/api/health" 2>/dev/null; }
events() { # events of table 1 at PORT: count and last seq (asked again for up to 60 s)
    local t0=$SECONDS got
    while true; do
        got="$(net curl -s -m 20 "http://127.0.0.1:${1:-8000}/api/tables/1/events?limit=1000" |
            python3 -c 'import json,sys; e=json.load(sys.stdin); print(len(e), e[-1]["seq"] if e else 0)' 2>/dev/null)" &&
            break
        [[ $((SECONDS - t0)) -lt 60 ]] || {
            echo "-1 -1"
            return 0
        }
        sleep 1
    done
    echo "$got"
}
wait_for() { # wait_for SECONDS WHAT COMMAND...: until COMMAND succeeds
    local limit=$1 what=$2 t0=$SECONDS
    shift 2
    until "$@" >/dev/null 2>&1; do
        if [[ $((SECONDS - t0)) -ge $limit ]]; then
            echo "!! no $what in $limit s" >&2
            return 1
        fi
        sleep 0.5
    done
}
running() { [[ "$(inside systemctl is-system-running 2>/dev/null)" =~ ^(running|degraded)$ ]]; }
wait_for 900 "boot" running
step "booted in $((SECONDS - BOOTED_AT)) s: $(inside systemctl is-system-running || true); network interfaces: $(inside ls /sys/class/net | tr '\n' ' ')"
for unit in $(inside systemctl --failed --no-legend --plain --no-pager | awk '{print $1}'); do
    echo "   failed: $unit: $({ inside journalctl -u "$unit" -b --no-pager -o cat || true; } | { grep -v -E '^(Starting|Failed to start|.*: Failed with result|.*: Main process exited)' || true; } | tail -n 1 | cut -c1-160)"
done

step "start: shotclock.service"
active() { [[ "$(prop "$1" ActiveState)" == active ]]; }
wait_for 600 "active shotclock.service" active shotclock.service
userspace=$(inside systemctl show -p UserspaceTimestampMonotonic --value)
main_start=$(prop shotclock.service ExecMainStartTimestampMonotonic)
ready=$(prop shotclock.service ActiveEnterTimestampMonotonic)
pid=$(prop shotclock.service MainPID)
echo "-- active ($(prop shotclock.service SubState)) as $(inside ps -o user= -p "$pid") (pid $pid," \
    "groups $(inside ps -o supgrp= -p "$pid")); Type=$(prop shotclock.service Type): READY=1 received"
awk -v u="$userspace" -v s="$main_start" -v r="$ready" 'BEGIN {
    printf "-- boot (systemd started) to READY: %.1f s; the service'"'"'s own start to READY: %.1f s\n", (r-u)/1e6, (r-s)/1e6 }'
echo "-- watchdog: WatchdogUSec=$(prop shotclock.service WatchdogUSec), last ping $(prop shotclock.service WatchdogTimestamp)"
echo "-- order: $(inside systemd-analyze critical-chain shotclock.service --no-pager 2>/dev/null | sed -n '3,6p' | tr -s ' \n' ' ')"

step "answers: /api/health from the service (this machine's curl in the container's network namespace)"
wait_for 120 "health" health
health | python3 -c 'import json,sys; h=json.load(sys.stdin); hw=h.get("components",{}).get("hardware",{})
print("-- ok", h["ok"], "tables", h["tables"], "faults", [f["code"] for f in h.get("faults", [])])
print("-- hardware:", json.dumps(hw)[:300])' || echo "!! no answer from /api/health now"

step "devices: what the unit's own process could open (ExecStartPre of the drop-in)"
inside journalctl -u shotclock.service -b --no-pager -o cat | grep '^proof: ' | sort -u | head -n 6 || true

cycle() { # one start + shot on table 1: two events (clock.started, clock.stopped)
    for command in start shot; do
        net curl -s -m 20 -o /dev/null -w '%{http_code}\n' -X POST -H 'content-type: application/json' \
            -d "{\"command\":\"$command\"}" http://127.0.0.1:8000/api/tables/1/commands
    done
}
restarted_since() { [[ "$(prop shotclock.service NRestarts)" -gt $1 ]] && active shotclock.service && health; }

step "restarts: systemctl kill -s KILL shotclock while commands are being sent"
for _ in 1 2 3; do cycle >/dev/null; done
read -r before_count before_seq < <(events)
# a writer sending start/shot as fast as answered, counting what was acknowledged (200)
net python3 - "$OUT/acked.txt" <<'PY' &
import json, sys, time, urllib.request, urllib.error
acked, errors, began = 0, 0, time.monotonic()
def send(command):
    req = urllib.request.Request("http://127.0.0.1:8000/api/tables/1/commands", method="POST",
                                 data=json.dumps({"command": command}).encode(),
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=20) as r:
        return r.status
back = False
while time.monotonic() - began < 240:
    for command in ("start", "shot"):
        try:
            if send(command) == 200:
                acked += 1
                back = back or errors > 0
        except (OSError, urllib.error.URLError):
            errors += 1
            time.sleep(0.2)
    if back and acked >= 6:
        break
open(sys.argv[1], "w").write(f"{acked} {errors}\n")
PY
WRITER=$!
sleep 3
restarts=$(prop shotclock.service NRestarts)
t0=$SECONDS
inside systemctl kill -s KILL shotclock.service
wait_for 600 "restart after SIGKILL" restarted_since "$restarts"
echo "-- killed with SIGKILL: answering again after $((SECONDS - t0)) s (NRestarts $(prop shotclock.service NRestarts); $(said shotclock.service 'code=killed, status=9/KILL'))"
wait "$WRITER" || true
read -r acked errors <"$OUT/acked.txt"
read -r after_count after_seq < <(events)
echo "-- events before: $before_count (last seq $before_seq); acknowledged while killed and restarted: $acked ($errors refused connections); after: $after_count (last seq $after_seq)"
if [[ $after_count -ge $((before_count + acked)) && $after_count -le $((before_count + acked + 1)) ]]; then
    extra=$((after_count - before_count - acked))
    echo "-- no acknowledged event lost (stored - acknowledged = $extra$([[ $extra == 1 ]] && echo ': a command stored whose answer died with the process'))"
else
    echo "!! events lost or unexplained: $after_count stored, $((before_count + acked)) expected"
fi

step "restarts: a stalled loop (SIGSTOP) is restarted by the watchdog"
restarts=$(prop shotclock.service NRestarts)
t0=$SECONDS
inside systemctl kill -s STOP shotclock.service
wait_for 600 "watchdog restart" restarted_since "$restarts"
echo "-- stopped with SIGSTOP: answering again after $((SECONDS - t0)) s (NRestarts $(prop shotclock.service NRestarts)); $(said shotclock.service 'watchdog timeout'); $(said shotclock.service 'status=6/ABRT')"

step "restarts: the store's file system read-only (as the kernel remounts a failing card): exit 73, no restart"
inside mount --bind /var/lib/shotclock /var/lib/shotclock
inside mount -o remount,bind,ro /var/lib/shotclock
inside systemctl restart --no-block shotclock.service
failed() { [[ "$(prop shotclock.service ActiveState)" == failed ]]; }
wait_for 600 "failed shotclock.service" failed || true
t0=$SECONDS
sleep 10 # ten times RestartSec=1: a restart would have happened
echo "-- $((SECONDS - t0)) s after it ended: $(prop shotclock.service ActiveState), exit status $(prop shotclock.service ExecMainStatus), result $(prop shotclock.service Result), automatic restarts since the manual one: $(prop shotclock.service NRestarts)"
echo "-- $(said shotclock.service 'cannot be written' | cut -c1-220)"
inside umount -l /var/lib/shotclock
inside systemctl reset-failed shotclock.service
inside systemctl start --no-block shotclock.service
wait_for 600 "shotclock.service back" active shotclock.service
wait_for 120 "health" health

step "hall: Mosquitto with the generated accounts and TLS, shotclock-hall.service, the table mirrored"
echo "-- mosquitto $(prop mosquitto.service ActiveState) ($(prop mosquitto.service Environment)); shotclock-hall $(prop shotclock-hall.service ActiveState) as $(inside ps -o user= -p "$(prop shotclock-hall.service MainPID)")"
mirrored() { [[ "$(events 8000)" == "$(events 8001)" ]]; }
wait_for 300 "mirror" mirrored || true
echo "-- table's store: $(events 8000) (count, last seq); the hall's mirror: $(events 8001)"
health 8000 | python3 -c 'import json,sys; print("-- table mqtt:", json.dumps(json.load(sys.stdin)["components"].get("mqtt"))[:240])' ||
    echo "!! no answer from /api/health now"
for args in "-tls1_2 -cipher ECDHE-ECDSA-AES128-SHA256" "-tls1_3 -groups P-384" "-tls1_3 -groups X25519"; do
    # shellcheck disable=SC2086 # the options are words
    got="$(net openssl s_client -connect 127.0.0.1:8883 -CAfile "$ROOTFS/etc/shotclock/tls/ca.crt" $args </dev/null 2>/dev/null | grep -E -m1 'Cipher is' || true)"
    echo "-- broker, a client offering only $args: ${got:-refused}"
done

step "doctor: as the service's user"
inside runuser -u shotclock -- /opt/shotclock/venv/bin/shotclock doctor >"$OUT/doctor-as-readme-says.txt" 2>&1 || true
inside systemd-run --quiet --wait --pipe -p User=shotclock -p EnvironmentFile=/etc/shotclock/env \
    -p "SupplementaryGroups=gpio dialout input video" /opt/shotclock/venv/bin/shotclock doctor \
    >"$OUT/doctor-with-the-units-settings.txt" 2>&1 || true
echo "-- runuser -u shotclock -- shotclock doctor ($OUT/doctor-as-readme-says.txt):"
sed 's/^/   /' "$OUT/doctor-as-readme-says.txt" | head -n 40
echo "-- with the unit's environment file and groups ($OUT/doctor-with-the-units-settings.txt):"
sed 's/^/   /' "$OUT/doctor-with-the-units-settings.txt" | head -n 40

kiosk_tried() { # the kiosk unit started and either up, or failed once (restarted or not)
    [[ "$(prop shotclock-kiosk.service ActiveState)" == active || "$(prop shotclock-kiosk.service NRestarts)" -ge 1 ||
        "$(prop shotclock-kiosk.service Result)" != success ]]
}
kiosk_ended() { # the browser's page connected, or the unit failed once
    clients || [[ "$(prop shotclock-kiosk.service NRestarts)" -ge 1 || "$(prop shotclock-kiosk.service Result)" != success ]]
}
kiosk_try() { # kiosk_try LIMIT [page]: start the unit; what became of it (page: once it
    # runs, wait for its page or its end too)
    local t0=$SECONDS since
    since="$(inside date +%s)"
    inside systemctl reset-failed shotclock-kiosk.service 2>/dev/null || true
    inside systemctl start --no-block shotclock-kiosk.service
    wait_for "$1" "an end of the kiosk's start" kiosk_tried || true
    [[ ${2:-} != page ]] || wait_for "$1" "the kiosk's page or its end" kiosk_ended || true
    echo "-- after $((SECONDS - t0)) s: $(prop shotclock-kiosk.service ActiveState)/$(prop shotclock-kiosk.service SubState), result $(prop shotclock-kiosk.service Result), page connected: $(clients && echo yes || echo no)"
    { inside journalctl -u shotclock-kiosk.service --since="@$since" --no-pager -o cat || true; } |
        { grep -v -E 'dbus|UPower|^Starting|^Stopped|Scheduled restart' || true; } | head -n 5 | cut -c1-220 | sed 's/^/   /'
    inside systemctl stop shotclock-kiosk.service
}
clients() { [[ "$(health | python3 -c 'import json,sys; print(json.load(sys.stdin)["clients"])' 2>/dev/null || echo 0)" -ge 1 ]]; }

step "kiosk: shotclock-kiosk.service as shipped, in a container with no desktop session"
kiosk_try 200
step "kiosk: again with PrivateUsers=no (a proof drop-in: see above), still no desktop session"
printf '[Service]\nPrivateUsers=no\n' >"$OUT/kiosk-proof.conf"
inside mkdir -p /etc/systemd/system/shotclock-kiosk.service.d
inside sh -c 'cat > /etc/systemd/system/shotclock-kiosk.service.d/proof.conf' <"$OUT/kiosk-proof.conf"
inside systemctl daemon-reload
kiosk_try 200
step "kiosk: and with an X server (Xvfb) standing in for the session"
# what systemd-tmpfiles makes at boot (it failed to start here, see above)
inside install -d -m 1777 /tmp/.X11-unix
inside systemd-run --quiet --unit=proof-x -p User=pi /usr/bin/Xvfb :0 -screen 0 1280x720x24 -nolisten tcp
x_up() { inside test -S /tmp/.X11-unix/X0; }
wait_for 120 "Xvfb" x_up || true
kiosk_try 300 page
inside systemctl stop proof-x.service || true
inside rm -f /etc/systemd/system/shotclock-kiosk.service.d/proof.conf

inside journalctl -b --no-pager >"$OUT/journal.txt" 2>&1 || true
step "done (journal, doctor's output: $OUT)"
