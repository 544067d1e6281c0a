#!/bin/sh
# What the tests need from Debian, each as the command that shows it is there and the package
# that brings it; only the missing packages are installed (as root; otherwise the command to
# run is printed). Installing only what is missing matters: a machine whose Node.js comes from
# NodeSource has its own npm, which Debian's npm package conflicts with (apt refuses both).
#   chromium: browser tests. mosquitto: the MQTT tests' broker and mosquitto_passwd.
#   systemd: systemd-analyze verifies the units in deploy/. openssl: s_client tries TLS key
#   exchange groups Python cannot name. python3-venv: the install test
#   makes a venv of Debian's python3 (as on a Pi). poppler-utils: pdftoppm turns the match
#   protocol's PDF pages into PNGs. nodejs, npm: the Companion module's tests.
set -eu
missing=""
need() {  # need PACKAGE CHECK...: PACKAGE when CHECK fails
    package=$1; shift
    if ! "$@" >/dev/null 2>&1; then missing="$missing $package"; fi
}
need chromium test -x /usr/bin/chromium
need mosquitto test -x /usr/sbin/mosquitto
need systemd test -x /usr/bin/systemd-analyze
need openssl test -x /usr/bin/openssl
need python3-venv /usr/bin/python3 -c 'import ensurepip'
need poppler-utils test -x /usr/bin/pdftoppm
need nodejs sh -c 'command -v node'
need npm sh -c 'command -v npm'
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
    echo "installing from Debian:$missing"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
else
    echo "missing: sudo apt-get install$missing (browser and MQTT tests will fail without them)"
fi
