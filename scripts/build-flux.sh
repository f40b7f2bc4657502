#!/usr/bin/env bash
# Build Flux's source-controller, kustomize-controller and helm-controller,
# with their CRDs, into a cache directory outside the repository. A second run
# with the build present and matching its pins does nothing.
#
# source-controller and kustomize-controller come from their Go modules (the
# module proxy serves them): the module's source is copied out of the module
# cache and built as the main module. Each repository keeps its API types in
# a nested module (`api/`) that its go.mod replaces with `./api`; a module zip
# holds no nested module, so that replace is dropped and the api module comes
# from the proxy at the version the go.mod requires.
#
# helm-controller comes from the pinned source snapshot in ../shared/vendor/
# (the proxy refuses github.com/fluxcd/helm-controller), with its one refused
# dependency, github.com/fluxcd/pkg/chartutil, from the snapshot beside it;
# both are checked against their sha256 below.
#
# Version: v1.10.x of source- and kustomize-controller declare `go 1.27.0`
# (and so do dependencies such as fluxcd/cli-utils v1.4.0); the toolchain
# here is Go 1.26, which refuses them, and no other toolchain can be fetched.
# v1.9.6 is the newest release that declares `go 1.26.0`; it serves the same
# source.toolkit.fluxcd.io/v1 API that the helm-controller snapshot uses
# (source-controller/api v1.9.0). FLUX_VERSION=v1.10.1 builds the newer pin
# once a Go 1.27 toolchain is installed.
#
# One dependency of source-controller v1.9.6, github.com/fluxcd/pkg/artifact
# v0.18.3, is refused by the proxy (403, as is v0.18.2); it is
# replaced by v0.18.1, the newest patch release of the same minor that the proxy
# serves (REPLACES below, per FLUX_VERSION).
#
# Layout: OUTDIR/bin/{source,kustomize,helm}-controller, OUTDIR/crds/*.yaml
#
# Usage: scripts/build-flux.sh [OUTDIR]
# Env:   FLUX_VERSION (source- and kustomize-controller, default below),
#        BMT_CACHE_DIR (default ~/.cache/baremetal-tenancy),
#        BMT_VENDOR_DIR (default <repo>/../shared/vendor)
set -euo pipefail

FLUX_VERSION="${FLUX_VERSION:-v1.9.6}"
HC_COMMIT=0f61a8607a62be64638f2f912d9487e653960a6e
HC_TARBALL=fluxcd-helm-controller-0f61a8607.tar.gz
HC_SHA256=e09c23b1b53f6f9660b577d2d58302fbc7c8e5a7f2aaac464843ba5eb4d2cab8
CHARTUTIL_TARBALL=fluxcd-pkg-chartutil-v1.27.0.tar.gz
CHARTUTIL_SHA256=05e1b7e52bb55531e264c00d7bd336891f1f4169bd7857ef7924a66efbb3ad1d

case "$FLUX_VERSION" in
  v1.9.6) REPLACES=(github.com/fluxcd/pkg/artifact=github.com/fluxcd/pkg/artifact@v0.18.1) ;;
  *) REPLACES=() ;;
esac

root="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${BMT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baremetal-tenancy}"
OUT="${1:-$CACHE/flux-$FLUX_VERSION-hc${HC_COMMIT:0:9}}"
VENDOR="${BMT_VENDOR_DIR:-$root/../shared/vendor}"
BUILD_LEVEL=1  # bump when the way of building below changes
STAMP="$OUT/.built"
PIN="source-controller $FLUX_VERSION kustomize-controller $FLUX_VERSION helm-controller $HC_COMMIT build $BUILD_LEVEL ${REPLACES[*]}"
CONTROLLERS=(source-controller kustomize-controller helm-controller)

have_all() {
  for c in "${CONTROLLERS[@]}"; do [ -x "$OUT/bin/$c" ] || return 1; done
  grep -qxF "$PIN" "$STAMP" 2>/dev/null
}

if have_all; then
  echo "flux controllers ($FLUX_VERSION, helm-controller ${HC_COMMIT:0:9}): cached in $OUT"
  exit 0
fi
# Two builds at once (make test's early build and the gitops session's): the second waits, then finds it cached.
mkdir -p "$(dirname "$OUT")"
exec 9>"$OUT.lock"
flock 9
if have_all; then
  echo "flux controllers ($FLUX_VERSION, helm-controller ${HC_COMMIT:0:9}): cached in $OUT"
  exit 0
fi

command -v go >/dev/null || { echo "go is required to build the Flux controllers" >&2; exit 1; }

check() {  # check FILE SHA256
  [ -f "$VENDOR/$1" ] || { echo "$VENDOR/$1: source snapshot not found (set BMT_VENDOR_DIR)" >&2; exit 1; }
  echo "$2  $VENDOR/$1" | sha256sum --check --quiet - \
    || { echo "$VENDOR/$1: sha256 differs from the pinned snapshot" >&2; exit 1; }
}
check "$HC_TARBALL" "$HC_SHA256"
check "$CHARTUTIL_TARBALL" "$CHARTUTIL_SHA256"

work="$(mktemp -d "${TMPDIR:-/tmp}/bmt-flux-build.XXXXXX")"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
echo "building flux controllers ($FLUX_VERSION, helm-controller ${HC_COMMIT:0:9}) in $work -> $OUT"
go_version="$(go env GOVERSION | sed 's/^go//')"

export CGO_ENABLED=0
flags=(-mod=mod -trimpath -ldflags "-s -w")
rm -rf "$OUT/crds" && mkdir -p "$OUT/bin" "$OUT/crds"

from_module() {  # from_module NAME: copy github.com/fluxcd/NAME@FLUX_VERSION to $work/NAME
  local mod="github.com/fluxcd/$1" gomod dir need
  gomod="$(go mod download -json "$mod@$FLUX_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
  need="$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$gomod")"
  if [ "$(printf '%s\n%s\n' "$need" "$go_version" | sort -V | head -1)" != "$need" ]; then
    echo "$mod@$FLUX_VERSION needs go >= $need; this toolchain is go $go_version (set FLUX_VERSION to a release that fits)" >&2
    exit 1
  fi
  dir="$(go mod download -json "$mod@$FLUX_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [ -d "$dir" ] || { echo "$mod@$FLUX_VERSION: not in the module cache after download" >&2; exit 1; }
  cp -r "$dir" "$work/$1" && chmod -R u+w "$work/$1"
  (cd "$work/$1" && go mod edit -dropreplace "$mod/api")
  for r in "${REPLACES[@]}"; do
    if grep -q "^[[:space:]]*${r%%=*} " "$work/$1/go.mod"; then (cd "$work/$1" && go mod edit -replace "$r"); fi
  done
}

build() {  # build NAME: in $work/NAME, binary and CRDs into $OUT
  local t0=$SECONDS
  (cd "$work/$1" && go build "${flags[@]}" -o "$OUT/bin/$1" .)
  cp "$work/$1"/config/crd/bases/*.yaml "$OUT/crds/"
  echo "built $OUT/bin/$1 in $((SECONDS - t0)) s"
}

started=$SECONDS
for c in source-controller kustomize-controller; do
  from_module "$c"
  build "$c"
done

tar -xzf "$VENDOR/$HC_TARBALL" -C "$work"
tar -xzf "$VENDOR/$CHARTUTIL_TARBALL" -C "$work"
(cd "$work/helm-controller" && go mod edit -replace "github.com/fluxcd/pkg/chartutil=$work/fluxcd-pkg/chartutil")
build helm-controller

echo "$PIN" > "$STAMP"
echo "built the flux controllers in $((SECONDS - started)) s"
