#!/usr/bin/env bash
# Build etcd, kube-apiserver and kube-controller-manager from their Go modules
# at a pinned release, into a cache directory outside the repository.
# A second run with the binaries present does nothing.
#
# Usage: scripts/build-kube-binaries.sh [OUTDIR]
# Env:   KUBE_VERSION (default below), BMT_CACHE_DIR (default ~/.cache/baremetal-tenancy)
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.36.3}"
CACHE="${BMT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baremetal-tenancy}"
OUT="${1:-$CACHE/kube-$KUBE_VERSION/bin}"
BINARIES=(etcd kube-apiserver kube-controller-manager)

have_all() {
  for b in "${BINARIES[@]}"; do [ -x "$OUT/$b" ] || return 1; done
  [ -f "$OUT/.built-$KUBE_VERSION" ]
}

if have_all; then
  echo "kube binaries $KUBE_VERSION: cached in $OUT"
  exit 0
fi

command -v go >/dev/null || { echo "go is required to build the Kubernetes binaries" >&2; exit 1; }

minor="${KUBE_VERSION#v1.}"           # 36.3
staging="v0.${minor}"                 # v0.36.3
work="$(mktemp -d "${TMPDIR:-/tmp}/bmt-kube-build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
echo "building kube $KUBE_VERSION (staging $staging) in $work -> $OUT"

cd "$work"
# The k8s.io/kubernetes go.mod replaces its staging modules with local paths;
# a consumer has to pin each of them to the published version instead.
gomod_json="$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION")"
gomod_file="$(printf '%s' "$gomod_json" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
replaces="$(sed -n 's#^[[:space:]]*\(k8s\.io/[a-z0-9-]*\) => \./staging/src/k8s\.io/.*#\1#p' "$gomod_file")"
[ -n "$replaces" ] || { echo "no staging replaces found in $gomod_file" >&2; exit 1; }

{
  echo "module bmt-kube-build"
  echo
  echo "go $(go env GOVERSION | sed 's/^go//; s/^\([0-9]*\.[0-9]*\).*/\1/')"
  echo
  echo "require k8s.io/kubernetes $KUBE_VERSION"
  echo
  echo "replace ("
  for m in $replaces; do echo "	$m => $m $staging"; done
  echo ")"
} > go.mod

cat > tools.go <<'GO'
//go:build tools

package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
GO

go mod tidy

pkg="k8s.io/component-base/version"
ldflags="-s -w -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=${minor%%.*} -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
mkdir -p "$OUT"
export CGO_ENABLED=0
go build -trimpath -ldflags "-s -w" -o "$OUT/etcd" go.etcd.io/etcd/server/v3
go build -trimpath -ldflags "$ldflags" -o "$OUT/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
go build -trimpath -ldflags "$ldflags" -o "$OUT/kube-controller-manager" k8s.io/kubernetes/cmd/kube-controller-manager
touch "$OUT/.built-$KUBE_VERSION"
for b in "${BINARIES[@]}"; do echo "built $OUT/$b"; done
