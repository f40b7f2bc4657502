#!/usr/bin/env bash
# Build Neutron with networking-generic-switch (NGS) into a virtualenv of its own in a cache directory outside the
# repository, for the test bed's network (the switch the machines' NICs are ports of: tests marked networks). A
# second run with the venv present and matching its pins does nothing.
#
# What is in it: neutron-server's WSGI application (Neutron 29 has no neutron-server script: gunicorn serves it, as
# the harness serves Keystone), ML2 with NGS's genericswitch mechanism driver (netmiko_ovs_linux drives the test
# bed's Open vSwitch over SSH), psycopg2-binary (its database is the test session's PostgreSQL).
#
# Why a venv apart although it resolves with the project's pins (installed here as constraints, so it runs the
# same oslo.*, SQLAlchemy and keystonemiddleware as the project's Keystone and Ironic): Neutron and NGS bring
# about 36 packages of their own (netmiko, paramiko, os-ken, ovsdbapp, pyroute2...) that neither the collection
# nor the other suites need, and the tests talk to Neutron over HTTP only. The project's .venv stays as it is.
#
# Layout: OUTDIR/bin/{python,gunicorn,neutron-db-manage}, OUTDIR/etc/neutron/api-paste.ini,
#         OUTDIR/requirements.txt (pip freeze)
# Usage:  scripts/build-neutron.sh [OUTDIR]
# Env:    NEUTRON_VERSION, NGS_VERSION (defaults below), BMT_CACHE_DIR (default ~/.cache/baremetal-tenancy),
#         PYTHON (python3)
set -euo pipefail

NEUTRON_VERSION="${NEUTRON_VERSION:-29.0.0}"
NGS_VERSION="${NGS_VERSION:-10.2.0}"
root="$(cd "$(dirname "$0")/.." && pwd)"
CONSTRAINTS="$root/requirements-test.txt"
CACHE="${BMT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baremetal-tenancy}"
OUT="${1:-$CACHE/neutron-$NEUTRON_VERSION}"
PYTHON="${PYTHON:-python3}"
# shellcheck source=scripts/venv-install.sh
source "$(dirname "$0")/venv-install.sh"
BUILD_LEVEL=1 # bump when the way of building below changes
# The project's pins are part of the stamp: a change of requirements-test.txt rebuilds the venv on them.
PIN="neutron $NEUTRON_VERSION networking-generic-switch $NGS_VERSION constraints $(sha256sum <"$CONSTRAINTS" | cut -c1-16) build $BUILD_LEVEL"

cached() {
  [ -x "$OUT/bin/gunicorn" ] && [ -x "$OUT/bin/neutron-db-manage" ] && grep -qxF "$PIN" "$OUT/.built" 2>/dev/null
}
if cached; then
  echo "neutron $NEUTRON_VERSION + networking-generic-switch $NGS_VERSION: cached in $OUT"
  exit 0
fi
# Two builds at once (two make targets, two sessions): the second waits for the first, then finds it cached.
mkdir -p "$(dirname "$OUT")"
exec 9>"$OUT.lock"
flock 9
if cached; then
  echo "neutron $NEUTRON_VERSION + networking-generic-switch $NGS_VERSION: cached in $OUT"
  exit 0
fi
echo "building neutron $NEUTRON_VERSION + networking-generic-switch $NGS_VERSION in $OUT (constraints: $CONSTRAINTS)"
started=$SECONDS
rm -rf "$OUT"
venv_create
venv_pip install -c "$CONSTRAINTS" \
  "neutron==$NEUTRON_VERSION" "networking-generic-switch==$NGS_VERSION" gunicorn psycopg2-binary
venv_pip check
venv_pip freeze >"$OUT/requirements.txt"
[ -f "$OUT/etc/neutron/api-paste.ini" ] || { echo "$OUT/etc/neutron/api-paste.ini: not installed by the wheel" >&2; exit 1; }
# Byte-compiled files are written at build time, so the server's first start does not.
"$OUT/bin/python" -m compileall -q "$OUT/lib" >/dev/null || true
echo "$PIN" >"$OUT/.built"
echo "built neutron $NEUTRON_VERSION + networking-generic-switch $NGS_VERSION in $OUT in $((SECONDS - started)) s"
