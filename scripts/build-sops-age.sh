#!/usr/bin/env bash
# Build the sops and age-keygen commands (for the GitOps suites: a tenant encrypts a Secret with its age key,
# kustomize-controller decrypts it) from their Go modules into a cache directory outside the repository.
# A second run with the build present does nothing.
#
# sops: github.com/getsops/sops/v3 (declares go 1.25.8, fits the Go 1.26 toolchain here); age-keygen:
# filippo.io/age at the version sops itself requires, so keys and encryption come from the same age code.
# Debian bookworm packages age but not sops; both are built here the same way.
#
# Layout: OUTDIR/bin/{sops,age-keygen}
# Usage:  scripts/build-sops-age.sh [OUTDIR]
# Env:    SOPS_VERSION (default below), BMT_CACHE_DIR (default ~/.cache/baremetal-tenancy)
set -euo pipefail

SOPS_VERSION="${SOPS_VERSION:-v3.13.3}"
AGE_VERSION="${AGE_VERSION:-v1.3.1}"
CACHE="${BMT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baremetal-tenancy}"
OUT="${1:-$CACHE/sops-$SOPS_VERSION-age-$AGE_VERSION}"
PIN="sops $SOPS_VERSION age $AGE_VERSION"

cached() {
  [ -x "$OUT/bin/sops" ] && [ -x "$OUT/bin/age-keygen" ] && grep -qxF "$PIN" "$OUT/.built" 2>/dev/null
}
if cached; then
  echo "sops $SOPS_VERSION and age-keygen $AGE_VERSION: cached in $OUT"
  exit 0
fi
# Two builds at once (make test's early build and the gitops session's): the second waits, then finds it cached.
mkdir -p "$(dirname "$OUT")"
exec 9>"$OUT.lock"
flock 9
if cached; then
  echo "sops $SOPS_VERSION and age-keygen $AGE_VERSION: cached in $OUT"
  exit 0
fi
command -v go >/dev/null || { echo "go is required to build sops and age-keygen" >&2; exit 1; }
mkdir -p "$OUT/bin"
export CGO_ENABLED=0 GOBIN="$OUT/bin"
started=$SECONDS
go install -trimpath -ldflags "-s -w" "filippo.io/age/cmd/age-keygen@$AGE_VERSION"
echo "built $OUT/bin/age-keygen in $((SECONDS - started)) s"
go install -trimpath -ldflags "-s -w" "github.com/getsops/sops/v3/cmd/sops@$SOPS_VERSION"
echo "$PIN" > "$OUT/.built"
echo "built sops and age-keygen in $((SECONDS - started)) s"
