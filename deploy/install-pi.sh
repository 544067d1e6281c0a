#!/usr/bin/env bash
# Install the shot clock on Raspberry Pi OS (Bookworm): run from a checkout as root.
#   sudo deploy/install-pi.sh            # the service (shotclock serve)
#   sudo deploy/install-pi.sh --bridge   # a table bridge for a remote service
set -euo pipefail

MODE=service
[[ "${1:-}" == "--bridge" ]] && MODE=bridge
SRC="$(cd "$(dirname "$0")/.." && pwd)"
PREFIX=/opt/shotclock
ETC=/etc/shotclock

if [[ $EUID -ne 0 ]]; then
    echo "install-pi.sh: run as root (sudo)" >&2
    exit 1
fi

# python3-lgpio from Debian: gpiozero's only working pin library on a Pi 5, and prebuilt.
apt-get update
apt-get install -y python3-venv python3-lgpio

if ! id shotclock >/dev/null 2>&1; then
    useradd --system --home-dir /var/lib/shotclock --shell /usr/sbin/nologin shotclock
fi
usermod -a -G gpio,dialout shotclock

# --system-site-packages: the venv sees Debian's lgpio instead of building it with pip.
python3 -m venv --system-site-packages "$PREFIX/venv"
"$PREFIX/venv/bin/pip" install --upgrade pip
"$PREFIX/venv/bin/pip" install "$SRC[hardware]"

install -d -m 0755 "$ETC"
if [[ ! -f "$ETC/shotclock.toml" ]]; then
    install -m 0644 "$SRC/deploy/shotclock.toml.example" "$ETC/shotclock.toml"
fi
if [[ ! -f "$ETC/env" ]]; then
    cat > "$ETC/env" <<ENV
SHOTCLOCK_HARDWARE_CONFIG=$ETC/shotclock.toml
GPIOZERO_PIN_FACTORY=lgpio
# bridge mode (shotclock-bridge): the service to follow; the table is table_id in shotclock.toml
#SHOTCLOCK_SERVER=ws://hall:8000
#SHOTCLOCK_REFEREE_TOKEN=
ENV
    chmod 0640 "$ETC/env"
    chgrp shotclock "$ETC/env"
fi

install -m 0644 "$SRC/deploy/99-shotclock-display.rules" /etc/udev/rules.d/
udevadm control --reload
udevadm trigger --subsystem-match=tty

install -m 0644 "$SRC/deploy/shotclock.service" /etc/systemd/system/
install -m 0644 "$SRC/deploy/shotclock-bridge.service" /etc/systemd/system/
systemctl daemon-reload
UNIT=shotclock.service
[[ $MODE == bridge ]] && UNIT=shotclock-bridge.service
systemctl enable --now "$UNIT"
echo "installed; edit $ETC/shotclock.toml and $ETC/env, then: systemctl restart $UNIT"
