#!/usr/bin/env bash
# Build ESI-Leap (the lease service: offers, leases, and a manager that writes the node's lessee in Ironic) into a
# virtualenv of its own in a cache directory outside the repository. A second run with the venv present and
# matching its pins does nothing.
#
# Why its own venv: esi-leap 1.0.0 requires SQLAlchemy < 2 and openstacksdk < 1.3 (pip resolves SQLAlchemy 1.4,
# oslo.db 17, openstacksdk 1.2), the project's pins are SQLAlchemy 2.1 and openstacksdk 4.14. ESI-Leap talks to
# Keystone and Ironic over HTTP only, so a server in a venv apart changes nothing the tests see. The tests talk
# REST to it; its clients (python-esileapclient, esisdk) install with the project's pins and are not needed here.
# psycopg2-binary: its database is the test session's PostgreSQL.
#
# Layout: OUTDIR/bin/{python,esi-leap-api,esi-leap-manager,esi-leap-dbsync}, OUTDIR/requirements.txt (pip freeze)
# Usage:  scripts/build-esi-leap.sh [OUTDIR]
# Env:    ESI_LEAP_VERSION (default below), BMT_CACHE_DIR (default ~/.cache/baremetal-tenancy), PYTHON (python3)
set -euo pipefail

ESI_LEAP_VERSION="${ESI_LEAP_VERSION:-1.0.0}"
PSYCOPG2_VERSION=2.9.13
CACHE="${BMT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baremetal-tenancy}"
OUT="${1:-$CACHE/esi-leap-$ESI_LEAP_VERSION}"
PYTHON="${PYTHON:-python3}"
# shellcheck source=scripts/venv-install.sh
source "$(dirname "$0")/venv-install.sh"
BUILD_LEVEL=1  # bump when the way of building below changes
PIN="esi-leap $ESI_LEAP_VERSION psycopg2-binary $PSYCOPG2_VERSION build $BUILD_LEVEL"

cached() {
  [ -x "$OUT/bin/esi-leap-api" ] && [ -x "$OUT/bin/esi-leap-manager" ] && grep -qxF "$PIN" "$OUT/.built" 2>/dev/null
}
if cached; then
  echo "esi-leap $ESI_LEAP_VERSION: cached in $OUT"
  exit 0
fi
# Two builds at once (two make targets, two sessions): the second waits for the first, then finds it cached.
mkdir -p "$(dirname "$OUT")"
exec 9>"$OUT.lock"
flock 9
if cached; then
  echo "esi-leap $ESI_LEAP_VERSION: cached in $OUT"
  exit 0
fi
echo "building esi-leap $ESI_LEAP_VERSION in $OUT (a venv of its own: its pins conflict with the project's)"
started=$SECONDS
rm -rf "$OUT"
venv_create
venv_pip install "esi-leap==$ESI_LEAP_VERSION" "psycopg2-binary==$PSYCOPG2_VERSION"
venv_pip check
venv_pip freeze >"$OUT/requirements.txt"
# Byte-compiled files are written at build time, so the services' first start does not.
"$OUT/bin/python" -m compileall -q "$OUT/lib" >/dev/null || true
echo "$PIN" >"$OUT/.built"
echo "built esi-leap $ESI_LEAP_VERSION in $OUT in $((SECONDS - started)) s"
