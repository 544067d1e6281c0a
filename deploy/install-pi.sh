#!/usr/bin/env bash
# Install or upgrade the shot clock on a Raspberry Pi (Pi 3, 4, 5, Zero 2 W) or, for the hall
# server, any Debian machine. As root:
#   sudo deploy/install-pi.sh [OPTIONS]                  from a checkout, with the network
#   sudo ./install-pi.sh --offline BUNDLE [OPTIONS]      from an offline bundle (make bundle),
#                                                        with no network at all
# What to install (one):
#   (nothing)               a table: shotclock serve + this Pi's hardware
#   --bridge                a table driven by the hall's service (shotclock-bridge)
#   --hall-server           the hall server: on the LAN, with a token, no hardware
# Options:
#   --display gpio|serial   the digits: a TM1637 on the GPIO header (gpio, the default) or a
#                           Pico display controller over USB (serial)
#   --uart                  the Pico on the Pi's UART (GPIO14/15, /dev/serial0): --display serial
#   --camera                the overhead camera (OpenCV, numpy; Debian's on 32-bit OS)
#   --hall URL              publish this table on the hall's broker (mqtt://[user:pass@]host/<hall>)
#   --offline BUNDLE        install from BUNDLE (its .tar.gz or unpacked directory): no apt-get
#                           update, no download; an upgrade is the same command with a newer one
#   --dry-run               say what this machine is and what would be installed; change nothing
# Safe to run again (an upgrade): existing /etc/shotclock files are kept, the options given
# are applied to them again.
set -euo pipefail

# DESTDIR: tests run the script into a scratch root with apt-get, pip, systemctl ... stubbed
# on PATH (tests/hardware/test_install_script.py). Empty on a real machine.
ROOT="${DESTDIR:-}"
PREFIX="$ROOT/opt/shotclock"
ETC="$ROOT/etc/shotclock"

usage() { sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; }
die() {
    echo "install-pi.sh: $*" >&2
    exit 1
}

MODE=service
DISPLAY_KIND=""
UART=no
CAMERA=no
HALL_URL=""
OFFLINE=""
DRY_RUN=no
while [[ $# -gt 0 ]]; do
    case "$1" in
        --bridge) MODE=bridge ;;
        --hall-server) MODE=hall ;;
        --hall)
            [[ $# -ge 2 && $2 != --* ]] ||
                die "--hall takes the hall's broker (mqtt://host/<hall>); the hall server itself is --hall-server"
            HALL_URL="$2"
            shift
            ;;
        --display)
            [[ $# -ge 2 ]] || die "--display takes gpio or serial"
            DISPLAY_KIND="$2"
            shift
            ;;
        --display=*) DISPLAY_KIND="${1#--display=}" ;;
        --uart) UART=yes ;;
        --camera) CAMERA=yes ;;
        --offline)
            [[ $# -ge 2 ]] || die "--offline takes the bundle (.tar.gz or its directory)"
            OFFLINE="$2"
            shift
            ;;
        --dry-run) DRY_RUN=yes ;;
        -h | --help)
            usage
            exit 0
            ;;
        *) die "unknown option $1 (see --help)" ;;
    esac
    shift
done

# -- the options against each other --------------------------------------------------------
[[ $UART == yes && -z $DISPLAY_KIND ]] && DISPLAY_KIND=serial
case "$DISPLAY_KIND" in
    "" | gpio | serial) ;;
    *) die "--display $DISPLAY_KIND: gpio (TM1637 on the header) or serial (a Pico controller)" ;;
esac
[[ $UART == yes && $DISPLAY_KIND != serial ]] && die "--uart is a serial display: drop --display gpio"
if [[ $MODE == hall ]]; then
    [[ -z $DISPLAY_KIND && $UART == no && $CAMERA == no ]] ||
        die "--hall-server has no table hardware: drop --display, --uart and --camera"
    [[ -z $HALL_URL ]] || die "--hall URL is for a table; the hall server's broker is set in hall.env"
fi
[[ $MODE == bridge && -n $HALL_URL ]] &&
    die "--hall URL publishes a table that runs its own clock; a bridge follows the hall's service (SHOTCLOCK_SERVER)"
[[ -z $HALL_URL || $HALL_URL == mqtt://* || $HALL_URL == mqtts://* ]] ||
    die "--hall $HALL_URL: expected mqtt://[user:pass@]host[:port]/<hall> (or mqtts://)"

if [[ -z $ROOT && $EUID -ne 0 && $DRY_RUN == no ]]; then
    die "run as root (sudo)"
fi

# -- the bundle ----------------------------------------------------------------------------
# SRC: where deploy/, requirements.lock (and, in a bundle, wheels/ and firmware/) are.
HERE="$(cd "$(dirname "$0")" && pwd)"
if [[ -f $HERE/MANIFEST.json ]]; then SRC="$HERE"; else SRC="$(cd "$HERE/.." && pwd)"; fi
UNPACKED=""
cleanup() { [[ -z $UNPACKED ]] || rm -rf "$UNPACKED"; }
trap cleanup EXIT
if [[ -n $OFFLINE ]]; then
    if [[ -f $OFFLINE ]]; then
        UNPACKED="$(mktemp -d)"
        tar -xzf "$OFFLINE" -C "$UNPACKED" || die "$OFFLINE is not a bundle made by make bundle"
        SRC="$(find "$UNPACKED" -mindepth 1 -maxdepth 1 -type d | head -n 1)"
    elif [[ -d $OFFLINE ]]; then
        SRC="$(cd "$OFFLINE" && pwd)"
    else
        die "--offline $OFFLINE: no such file or directory"
    fi
    [[ -f $SRC/MANIFEST.json && -d $SRC/wheels ]] || die "$OFFLINE is not a bundle made by make bundle"
fi

# -- this machine --------------------------------------------------------------------------
ARCH="$(dpkg --print-architecture)"
CPU="$(uname -m)"
OS_ID=unknown
OS_VERSION=unknown
OS_NAME=unknown
if [[ -r $ROOT/etc/os-release ]]; then
    # shellcheck disable=SC1091
    OS_ID="$(. "$ROOT/etc/os-release" && echo "${ID:-unknown}")"
    # shellcheck disable=SC1091
    OS_VERSION="$(. "$ROOT/etc/os-release" && echo "${VERSION_ID:-unknown}")"
    # shellcheck disable=SC1091
    OS_NAME="$(. "$ROOT/etc/os-release" && echo "${PRETTY_NAME:-unknown}")"
fi
MODEL=""
[[ -r $ROOT/proc/device-tree/model ]] && MODEL="$(tr -d '\0' <"$ROOT/proc/device-tree/model")"
PYTHON_VERSION="$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
RASPBERRY_PI_OS=no
[[ -f $ROOT/etc/rpi-issue || -f $ROOT/etc/apt/sources.list.d/raspi.list || -f $ROOT/etc/apt/sources.list.d/raspi.sources ]] &&
    RASPBERRY_PI_OS=yes
TARGET="$OS_ID$OS_VERSION-$ARCH"
echo "== this machine: ${MODEL:-not a Raspberry Pi (no device-tree model)}; $OS_NAME ($TARGET," \
    "Raspberry Pi OS: $RASPBERRY_PI_OS); CPU $CPU; Python $PYTHON_VERSION"

case "$ARCH" in
    arm64 | amd64) ;;
    armhf)
        # The Pi Zero (first model) and Pi 1 are ARMv6: no wheel of any compiled dependency.
        [[ $CPU == armv6* ]] &&
            die "an ARMv6 Pi (${MODEL:-Zero or 1}) cannot run the service: no Python wheels exist for it; use a Pi Zero 2 W, 3, 4 or 5"
        ;;
    *) die "architecture $ARCH is not supported (arm64, armhf on ARMv7+, or amd64 for the hall server)" ;;
esac
if [[ $MODE != hall && $ARCH == amd64 ]]; then
    [[ ${DISPLAY_KIND:-gpio} == serial ]] ||
        die "this is not a Raspberry Pi ($ARCH): a table here needs --display serial (a Pico over USB), or install the hall server (--hall-server)"
fi

# -- what to install -----------------------------------------------------------------------
# Debian packages: python3-venv; for a table gpiozero's pin library python3-lgpio
# (Raspberry Pi OS's archive; on the Pi 5 the only one that works) and python3-evdev (USB
# pedals: no wheel exists on PyPI). On 32-bit OS PyPI has no numpy or OpenCV wheels:
# the camera uses Debian's. The venv sees them (--system-site-packages).
DEBS=(python3-venv)
FROM_DEBIAN=() # locked Python packages that Debian provides here instead of a wheel
if [[ $MODE != hall ]]; then
    DEBS+=(python3-evdev)
    FROM_DEBIAN+=(evdev)
    [[ $ARCH == amd64 ]] || DEBS+=(python3-lgpio)
fi
if [[ $CAMERA == yes && $ARCH == armhf ]]; then
    DEBS+=(python3-numpy python3-opencv)
    FROM_DEBIAN+=(numpy opencv-python-headless)
fi
EXTRAS=mqtt
[[ $MODE == hall ]] || EXTRAS="hardware,mqtt"
[[ $CAMERA == yes && $ARCH != armhf ]] && EXTRAS="$EXTRAS,camera"

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
# offline only what is installed counts: nothing can be fetched
available() { installed "$1" || { [[ -z $OFFLINE ]] && apt-cache show "$1" >/dev/null 2>&1; }; }
SOURCE=online
[[ -z $OFFLINE ]] || SOURCE="offline from $SRC"

echo "== plan: $MODE, display ${DISPLAY_KIND:-as configured}, camera $CAMERA, packages ${DEBS[*]}," \
    "Python extras [$EXTRAS], $SOURCE"
if [[ -n $OFFLINE ]]; then
    WHEELS="$SRC/wheels/$TARGET"
    [[ -d $WHEELS ]] || die "the bundle has no wheels for $TARGET ($OS_NAME, $ARCH): it has $(ls "$SRC/wheels")"
    want="$(cat "$WHEELS/python-version")"
    [[ $want == "$PYTHON_VERSION" ]] ||
        die "the bundle's $TARGET wheels are for Python $want, this machine has $PYTHON_VERSION"
    if [[ -s $WHEELS/missing.txt ]]; then
        # 32-bit OS: wheels PyPI does not have for this platform.
        die "the bundle has no $TARGET wheels for: $(tr '\n' ' ' <"$WHEELS/missing.txt")- install online once (Raspberry Pi OS's pip uses piwheels.org), or use 64-bit Raspberry Pi OS"
    fi
fi
[[ $DRY_RUN == yes ]] && exit 0

echo "== packages"
if [[ -z $OFFLINE ]]; then
    apt-get update
fi
NO_GPIO=no
if [[ " ${DEBS[*]} " == *" python3-lgpio "* ]] && ! available python3-lgpio; then
    # Plain Debian or Ubuntu for the Pi: python3-lgpio is Raspberry Pi OS's.
    if [[ ${DISPLAY_KIND:-gpio} == gpio ]]; then
        die "python3-lgpio is not available on $OS_NAME${OFFLINE:+ (not installed, and offline)}: gpiozero cannot drive the GPIO header without it. Install Raspberry Pi OS, or use a Pico display (--display serial) with the buttons and buzzer off"
    fi
    echo "WARNING: no python3-lgpio on $OS_NAME: the GPIO buttons and buzzer are turned off;" \
        "the referee uses the console or a USB pedal" >&2
    NO_GPIO=yes
    mapfile -t DEBS < <(printf '%s\n' "${DEBS[@]}" | grep -vx python3-lgpio)
fi
if [[ -n $OFFLINE ]]; then
    missing=()
    for deb in "${DEBS[@]}"; do installed "$deb" || missing+=("$deb"); done
    # The bundle may carry .debs fetched for this target (make bundle DEBS=...).
    if [[ ${#missing[@]} -gt 0 && -d $SRC/debs/$TARGET ]]; then
        apt-get install -y --no-download "$SRC/debs/$TARGET/"*.deb
        missing=()
        for deb in "${DEBS[@]}"; do installed "$deb" || missing+=("$deb"); done
    fi
    for deb in "${missing[@]}"; do
        case "$deb" in
            python3-venv) ;; # the venv is made without ensurepip, pip comes from the bundle
            python3-evdev)
                echo "WARNING: python3-evdev is not installed: no USB pedal until" \
                    "'apt-get install python3-evdev' (on a network)" >&2
                ;;
            *) die "offline, and $deb is not installed: install it where there is a network (apt-get install ${missing[*]}), then run this again" ;;
        esac
    done
else
    apt-get install -y "${DEBS[@]}"
fi

echo "== user shotclock"
if ! id shotclock >/dev/null 2>&1; then
    useradd --system --home-dir /var/lib/shotclock --no-create-home \
        --shell /usr/sbin/nologin shotclock
fi
# gpio: /dev/gpiochip*; dialout: the serial port; input: a USB pedal; video: the camera
# (/dev/video*). The units name all four (SupplementaryGroups=), so they must exist even
# where nothing uses them (a hall server that is not a Pi).
for group in gpio dialout input video; do
    getent group "$group" >/dev/null || groupadd --system "$group"
    usermod -a -G "$group" shotclock
done

echo "== $PREFIX/venv"
# The locked versions, less what Debian provides here (its version is the one that works
# with its libraries and needs no compiler).
LOCK="$(mktemp)"
trap 'cleanup; rm -f "$LOCK"' EXIT
if [[ ${#FROM_DEBIAN[@]} -gt 0 ]]; then
    grep -v -E "^($(
        IFS='|'
        echo "${FROM_DEBIAN[*]}"
    ))==" "$SRC/requirements.lock" >"$LOCK"
else
    cp "$SRC/requirements.lock" "$LOCK"
fi
VENV="$PREFIX/venv"
PIP=("$VENV/bin/python" -m pip)
if [[ -n $OFFLINE ]]; then
    if [[ ! -x $VENV/bin/python ]]; then
        if python3 -c 'import ensurepip' >/dev/null 2>&1; then
            python3 -m venv --system-site-packages "$VENV"
        else
            python3 -m venv --system-site-packages --without-pip "$VENV"
        fi
    fi
    if ! "${PIP[@]}" --version >/dev/null 2>&1; then
        # pip from its own wheel (a wheel is an importable zip): no python3-venv needed
        pip_wheel="$(find "$WHEELS" -name 'pip-*.whl' | head -n 1)"
        "$VENV/bin/python" "$pip_wheel/pip" install --quiet --no-index "$pip_wheel"
    fi
    OFFLINE_PIP=(--no-index --find-links "$WHEELS")
    requirements=(-r "$WHEELS/requirements.txt")
    [[ $CAMERA == yes && -f $WHEELS/requirements-camera.txt ]] && requirements+=(-r "$WHEELS/requirements-camera.txt")
    "${PIP[@]}" install --quiet "${OFFLINE_PIP[@]}" -c "$LOCK" "${requirements[@]}"
    project="$(find "$WHEELS" -name 'shotclock-*.whl' | head -n 1)"
    "${PIP[@]}" install --quiet "${OFFLINE_PIP[@]}" --no-deps --force-reinstall "$project"
else
    [[ -x $VENV/bin/python ]] || python3 -m venv --system-site-packages "$VENV"
    "${PIP[@]}" install --quiet -c "$LOCK" "${SRC}[$EXTRAS]"
fi

# What shotclock doctor compares the installed versions with.
install -m 0644 "$LOCK" "$PREFIX/requirements.lock"

echo "== $ETC"
install -d -m 0755 "$ETC"
# set_key FILE KEY VALUE: KEY=VALUE in an env file (replaced, or added once).
set_env() {
    if grep -q "^#\{0,1\}$2=" "$1"; then
        sed -i "s|^#\{0,1\}$2=.*|$2=$3|" "$1"
    else
        echo "$2=$3" >>"$1"
    fi
}
if [[ ! -f $ETC/shotclock.toml ]]; then
    install -m 0644 "$SRC/deploy/shotclock.toml.example" "$ETC/shotclock.toml"
fi
if [[ $MODE != hall ]]; then
    TOML="$ETC/shotclock.toml"
    [[ -z $DISPLAY_KIND ]] || sed -i "s|^kind = \"[a-z]*\"|kind = \"$DISPLAY_KIND\"|" "$TOML"
    [[ $UART == no ]] || sed -i 's|^port = "/dev/[A-Za-z0-9-]*"|port = "/dev/serial0"|' "$TOML"
    if [[ $NO_GPIO == yes ]]; then
        # The first `enabled` is [buttons]'; the buzzer's pin is commented out.
        sed -i '0,/^enabled = true/s//enabled = false/' "$TOML"
        sed -i 's|^pin = \([0-9]*\)|#pin = \1|' "$TOML"
    fi
fi
if [[ ! -f $ETC/env ]]; then
    if [[ $MODE == hall ]]; then
        # A fresh random token: the hall listens on the LAN and needs one.
        token="$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')"
        sed "s|^SHOTCLOCK_REFEREE_TOKEN=.*|SHOTCLOCK_REFEREE_TOKEN=$token|" \
            "$SRC/deploy/hall-server.env.example" >"$ETC/env"
        echo "referee token (for the consoles and every table's bridge): $token"
    else
        install -m 0640 "$SRC/deploy/shotclock.env" "$ETC/env"
    fi
    chmod 0640 "$ETC/env"
    chgrp shotclock "$ETC/env"
fi
if [[ -n $HALL_URL ]]; then
    set_env "$ETC/env" SHOTCLOCK_MQTT_URL "$HALL_URL"
fi
if [[ $CAMERA == yes ]] && ! grep -q '^SHOTCLOCK_CAMERA=' "$ETC/env"; then
    set_env "$ETC/env" SHOTCLOCK_CAMERA /dev/video0
fi

if [[ $UART == yes ]]; then
    echo "== UART on GPIO14/15 (/dev/serial0)"
    BOOT="$ROOT/boot/firmware" # Bookworm; older releases used /boot
    [[ -d $BOOT ]] || BOOT="$ROOT/boot"
    config="$BOOT/config.txt"
    add_line() { grep -qxF "$1" "$config" 2>/dev/null || echo "$1" >>"$config"; }
    # The UART for the controller, not a login console on it.
    if command -v raspi-config >/dev/null; then
        raspi-config nonint do_serial_cons 1
        raspi-config nonint do_serial_hw 0
    elif [[ -f $BOOT/cmdline.txt ]]; then
        sed -i 's/console=serial0,[0-9]* //' "$BOOT/cmdline.txt"
    fi
    add_line "enable_uart=1"
    if [[ $MODEL == *"Raspberry Pi 5"* ]]; then
        # The Pi 5's GPIO14/15 UART is uart0 (the 3-pin header is a separate debug UART).
        # Unverified on hardware here: deploy/README.md says how to check /dev/serial0.
        add_line "dtparam=uart0=on"
    fi
    echo "UART enabled for ${MODEL:-this Pi}: reboot before starting the service"
fi

if [[ $MODE != hall ]]; then
    echo "== udev rule /etc/udev/rules.d/99-shotclock-display.rules"
    install -D -m 0644 "$SRC/deploy/99-shotclock-display.rules" "$ROOT/etc/udev/rules.d/99-shotclock-display.rules"
    if ! { udevadm control --reload && udevadm trigger --subsystem-match=tty; }; then
        echo "WARNING: udev did not reload (no udevd here?): the rule applies from the next boot" >&2
    fi
fi

if [[ -n $OFFLINE && -d $SRC/firmware ]]; then
    echo "== $PREFIX/firmware (the Pico's, compiled: copy with mpremote, deploy/README.md)"
    install -d -m 0755 "$PREFIX/firmware"
    install -m 0644 "$SRC/firmware/"* "$PREFIX/firmware/"
fi

echo "== systemd units"
install -D -m 0644 "$SRC/deploy/shotclock.service" "$ROOT/etc/systemd/system/shotclock.service"
install -D -m 0644 "$SRC/deploy/shotclock-bridge.service" "$ROOT/etc/systemd/system/shotclock-bridge.service"
UNIT=shotclock.service
[[ $MODE == bridge ]] && UNIT=shotclock-bridge.service
if ! command -v systemctl >/dev/null; then
    # a container or a minimal root without systemd: the unit is there for a boot with it
    echo "WARNING: no systemd here: $UNIT is installed, not enabled; run" \
        "$VENV/bin/shotclock serve with $ETC/env's settings yourself" >&2
elif [[ -d $ROOT/run/systemd/system ]]; then
    systemctl daemon-reload
    systemctl enable "$UNIT"
    systemctl restart "$UNIT" # an upgrade: the new version runs now
else
    # a chroot or a container: enabled for the next boot
    systemctl enable "$UNIT"
    echo "systemd is not running here: $UNIT is enabled, not started"
fi

echo "installed ($MODE${OFFLINE:+, offline}). Next: edit $ETC/shotclock.toml and $ETC/env, then"
echo "  sudo systemctl restart $UNIT && journalctl -u $UNIT -f; shotclock doctor checks it all:"
echo "  sudo -u shotclock $VENV/bin/shotclock doctor"
