#!/usr/bin/env bash
# Install the shot clock on Raspberry Pi OS Bookworm (Pi 4 or Pi 5), from a checkout, as root:
#   sudo deploy/install-pi.sh           a table: shotclock serve + this Pi's hardware
#   sudo deploy/install-pi.sh --bridge  a table driven by the hall's service (shotclock-bridge)
#   sudo deploy/install-pi.sh --hall    the hall server: on the LAN, with a token, no hardware
#   add --uart when the display controller is on the Pi's UART (GPIO14/15, /dev/serial0)
# Safe to run again (an upgrade): existing /etc/shotclock files are kept.
set -euo pipefail

MODE=service
UART=no
for arg in "$@"; do
    case "$arg" in
        --bridge) MODE=bridge ;;
        --hall) MODE=hall ;;
        --uart) UART=yes ;;
        -h | --help)
            sed -n '2,7p' "$0"
            exit 0
            ;;
        *)
            echo "install-pi.sh: unknown option $arg (see --help)" >&2
            exit 2
            ;;
    esac
done

SRC="$(cd "$(dirname "$0")/.." && pwd)"
PREFIX=/opt/shotclock
ETC=/etc/shotclock
BOOT=/boot/firmware # Bookworm; older releases used /boot
[[ -d $BOOT ]] || BOOT=/boot

if [[ $EUID -ne 0 ]]; then
    echo "install-pi.sh: run as root (sudo)" >&2
    exit 1
fi

echo "== packages"
# python3-lgpio: gpiozero's pin library that works on the Pi 4 and the only one on the Pi 5,
# prebuilt; python3-evdev: USB pedals. The venv sees both (--system-site-packages).
PACKAGES=(python3-venv)
[[ $MODE == hall ]] || PACKAGES+=(python3-lgpio python3-evdev)
apt-get update
apt-get install -y "${PACKAGES[@]}"

echo "== user shotclock"
if ! id shotclock >/dev/null 2>&1; then
    useradd --system --home-dir /var/lib/shotclock --no-create-home \
        --shell /usr/sbin/nologin shotclock
fi
# gpio: /dev/gpiochip*; dialout: the serial port; input: a USB pedal. The units name all
# three (SupplementaryGroups=), so they must exist even where nothing uses them (a hall
# server that is not a Pi).
for group in gpio dialout input; do
    getent group "$group" >/dev/null || groupadd --system "$group"
    usermod -a -G "$group" shotclock
done

echo "== $PREFIX/venv"
python3 -m venv --system-site-packages "$PREFIX/venv"
# mqtt: paho-mqtt (pure Python, small), for a hall on a broker (deploy/README.md, "A hall
# on MQTT"): used only when SHOTCLOCK_MQTT_URL is set.
if [[ $MODE == hall ]]; then
    "$PREFIX/venv/bin/pip" install --quiet -c "$SRC/requirements.lock" "${SRC}[mqtt]"
else
    "$PREFIX/venv/bin/pip" install --quiet -c "$SRC/requirements.lock" "${SRC}[hardware,mqtt]"
fi

echo "== $ETC"
install -d -m 0755 "$ETC"
if [[ ! -f $ETC/shotclock.toml ]]; then
    install -m 0644 "$SRC/deploy/shotclock.toml.example" "$ETC/shotclock.toml"
    if [[ $UART == yes ]]; then
        sed -i 's|^port = "/dev/shotclock-display"|port = "/dev/serial0"|' "$ETC/shotclock.toml"
        sed -i 's|^kind = "gpio"|kind = "serial"|' "$ETC/shotclock.toml"
    fi
fi
if [[ ! -f $ETC/env ]]; then
    if [[ $MODE == hall ]]; then
        # A fresh random token: the hall listens on the LAN and needs one.
        token="$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
        sed "s|^SHOTCLOCK_REFEREE_TOKEN=.*|SHOTCLOCK_REFEREE_TOKEN=$token|" \
            "$SRC/deploy/hall-server.env.example" >"$ETC/env"
        echo "referee token (for the consoles and every table's bridge): $token"
    else
        install -m 0640 "$SRC/deploy/shotclock.env" "$ETC/env"
    fi
    chmod 0640 "$ETC/env"
    chgrp shotclock "$ETC/env"
fi

if [[ $UART == yes ]]; then
    echo "== UART on GPIO14/15 (/dev/serial0)"
    model="$(tr -d '\0' </proc/device-tree/model 2>/dev/null || true)"
    config="$BOOT/config.txt"
    add_line() { grep -qxF "$1" "$config" || echo "$1" >>"$config"; }
    # The UART for the controller, not a login console on it.
    if command -v raspi-config >/dev/null; then
        raspi-config nonint do_serial_cons 1
        raspi-config nonint do_serial_hw 0
    else
        sed -i 's/console=serial0,[0-9]* //' "$BOOT/cmdline.txt"
    fi
    add_line "enable_uart=1"
    if [[ $model == *"Raspberry Pi 5"* ]]; then
        # The Pi 5's GPIO14/15 UART is uart0 (the 3-pin header is a separate debug UART).
        add_line "dtparam=uart0=on"
    fi
    echo "UART enabled for ${model:-this Pi}: reboot before starting the service"
fi

if [[ $MODE != hall ]]; then
    echo "== udev rule /etc/udev/rules.d/99-shotclock-display.rules"
    install -m 0644 "$SRC/deploy/99-shotclock-display.rules" /etc/udev/rules.d/
    udevadm control --reload
    udevadm trigger --subsystem-match=tty
fi

echo "== systemd units"
install -m 0644 "$SRC/deploy/shotclock.service" /etc/systemd/system/
install -m 0644 "$SRC/deploy/shotclock-bridge.service" /etc/systemd/system/
systemctl daemon-reload
UNIT=shotclock.service
[[ $MODE == bridge ]] && UNIT=shotclock-bridge.service
systemctl enable --now "$UNIT"

echo "installed ($MODE). Next: edit $ETC/shotclock.toml and $ETC/env, then"
echo "  sudo systemctl restart $UNIT && journalctl -u $UNIT -f"
