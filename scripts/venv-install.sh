# shellcheck shell=bash
# Sourced by build-neutron.sh and build-esi-leap.sh: a venv of a service's own at $OUT, and pip's subcommands on it
# through uv when uv is on the PATH (make puts the test venv's, at its pin, first), through the venv's pip otherwise.
# uv resolves, downloads and installs in parallel: alone on a fresh machine, ESI-Leap's venv took 14 s instead of pip's
# 28 s, Neutron's 22 s instead of 27 s, with the same versions of every package (2026-12-02).
# Needs: OUT, PYTHON.
UV="${UV:-$(command -v uv || true)}"

venv_create() {
  "$PYTHON" -m venv "$OUT"
  [ -n "$UV" ] || "$OUT/bin/python" -m pip install -q --upgrade pip
}

venv_pip() {  # venv_pip SUBCOMMAND ARGS...: install, check, freeze
  if [ -n "$UV" ]; then
    "$UV" pip "$1" -q --python "$OUT/bin/python" "${@:2}"
  else
    "$OUT/bin/python" -m pip "$1" -q "${@:2}"
  fi
}
