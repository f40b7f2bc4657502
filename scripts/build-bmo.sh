#!/usr/bin/env bash
# Build Metal3's baremetal-operator (BMO) and its Ironic provisioner plugin
# from the pinned source snapshot in ../shared/vendor/, into a cache directory
# outside the repository. A second run with the binaries present does nothing.
#
# The Go module proxy these machines reach refuses
# github.com/metal3-io/baremetal-operator and
# github.com/metal3-io/ironic-standalone-operator/api (403), so both come
# from the snapshots (checked against their sha256 below); every other module
# comes from the proxy. At this commit BMO loads `--provisioner ironic` as a
# Go plugin ($PROVISIONER_PLUGIN_DIR/ironic-provisioner.so).
#
# Two patches, each checked:
# - controller-runtime's webhook server listens on every interface unless
#   told a host, and BMO has no flag for it. Servers in this test bed listen
#   on 127.0.0.1 only, so the webhook server takes its host from
#   $BMO_WEBHOOK_HOST (unset: every interface, BMO's own behaviour).
# - The Ironic provisioner is linked into the binary instead of built as a
#   plugin: a Go plugin is built with -dynlink, so every package it imports
#   (controller-runtime, client-go, gophercloud...) is compiled a second time:
#   2 min 50 s on a 2-core machine without a Go build cache (the measure in
#   ../shared/vendor/README.md). The plugin's own main.go (the PluginName, HostConfigure and
#   NewProvisionerFactory it exports) is compiled into BMO's main package
#   unchanged, and `--provisioner ironic` gets those three functions from there
#   in the Plugin value that provisioner.Open would have built from the .so;
#   every other provisioner name still goes through provisioner.Open.
# Nothing else of BMO is changed.
#
# Usage: scripts/build-bmo.sh [OUTDIR]
# Env:   BMT_CACHE_DIR (default ~/.cache/baremetal-tenancy),
#        BMT_VENDOR_DIR (default <repo>/../shared/vendor)
set -euo pipefail

BMO_COMMIT=02aa5059e3482f9dc3b5115c3a45cec4b000ae16
BMO_TARBALL=baremetal-operator-02aa5059e.tar.gz
BMO_SHA256=ae6db5d1d40e41ee3866c88b17eac9fbed154877c78134e9191860240ddec22a
ISO_TARBALL=ironic-standalone-operator-v0.11.0.tar.gz
ISO_SHA256=196ed53a87743ab5e84c4cb3df9f4f929a46861c40db1499f399f79b3e1c1d52

root="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${BMT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baremetal-tenancy}"
OUT="${1:-$CACHE/bmo-${BMO_COMMIT:0:9}}"
VENDOR="${BMT_VENDOR_DIR:-$root/../shared/vendor}"
PATCH_LEVEL=2  # bump when a patch below changes
STAMP="$OUT/.built-${BMO_COMMIT:0:9}"

if [ -x "$OUT/bmo" ] && grep -qx "$BMO_COMMIT patch $PATCH_LEVEL" "$STAMP" 2>/dev/null; then
  echo "baremetal-operator ${BMO_COMMIT:0:9}: cached in $OUT"
  exit 0
fi

command -v go >/dev/null || { echo "go is required to build baremetal-operator" >&2; exit 1; }
command -v gcc >/dev/null || { echo "gcc is required: BMO loads its Ironic provisioner as a Go plugin (cgo)" >&2; exit 1; }

check() {  # check FILE SHA256
  [ -f "$VENDOR/$1" ] || { echo "$VENDOR/$1: source snapshot not found (set BMT_VENDOR_DIR)" >&2; exit 1; }
  echo "$2  $VENDOR/$1" | sha256sum --check --quiet - \
    || { echo "$VENDOR/$1: sha256 differs from the pinned snapshot" >&2; exit 1; }
}
check "$BMO_TARBALL" "$BMO_SHA256"
check "$ISO_TARBALL" "$ISO_SHA256"

work="$(mktemp -d "${TMPDIR:-/tmp}/bmt-bmo-build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
echo "building baremetal-operator ${BMO_COMMIT:0:9} in $work -> $OUT"
started=$SECONDS

tar -xzf "$VENDOR/$BMO_TARBALL" -C "$work"
tar -xzf "$VENDOR/$ISO_TARBALL" -C "$work"
cd "$work/baremetal-operator"
go mod edit -replace "github.com/metal3-io/ironic-standalone-operator/api=$work/ironic-standalone-operator/api"
grep -q '^			Port:    webhookPort,$' main.go \
  || { echo "main.go: the webhook server options are not where the patch expects them" >&2; exit 1; }
sed -i 's/^			Port:    webhookPort,$/			Host:    os.Getenv("BMO_WEBHOOK_HOST"),\n			Port:    webhookPort,/' main.go

open_call='		p, err := provisioner.Open(pluginPath, provisionerName)'
if ! grep -qxF "$open_call" main.go || ! grep -q '^type Plugin struct {$' pkg/provisioner/plugin.go \
  || ! grep -q '^package main$' pkg/provisioner/ironic/plugin/main.go; then
  echo "main.go or pkg/provisioner: the plugin loading is not where the patch expects it" >&2
  exit 1
fi
sed -i 's/provisioner\.Open(pluginPath, provisionerName)$/openProvisioner(pluginPath, provisionerName)/' main.go
cp pkg/provisioner/ironic/plugin/main.go ironic_provisioner_linked.go
cat > pkg/provisioner/linked.go <<'GO'
package provisioner

// Linked returns the Plugin value Open builds from a plugin's exported functions, for a provisioner linked into
// the binary (added by baremetal.tenancy's test-bed build).
func Linked(path, name string, factory func(PluginConfig) (Factory, error),
	hostConfigure func(HostConfigureInput) (HostRequirements, error)) *Plugin {
	return &Plugin{path: path, name: name, factory: factory, hostConfigure: hostConfigure}
}
GO
cat > open_provisioner_linked.go <<'GO'
package main

import "github.com/metal3-io/baremetal-operator/pkg/provisioner"

// openProvisioner: the Ironic provisioner linked in (ironic_provisioner_linked.go is its plugin's main.go), any
// other name opened as a plugin (added by baremetal.tenancy's test-bed build).
func openProvisioner(path, name string) (*provisioner.Plugin, error) {
	if name == PluginName() {
		return provisioner.Linked(path+" (linked in)", PluginName(), NewProvisionerFactory, HostConfigure), nil
	}
	return provisioner.Open(path, name)
}
GO
grep -q 'openProvisioner(pluginPath, provisionerName)' main.go || { echo "main.go: the provisioner patch did not apply" >&2; exit 1; }

export CGO_ENABLED=1
flags=(-trimpath -ldflags "-s -w")
mkdir -p "$OUT"
rm -f "$OUT/ironic-provisioner.so"
go build "${flags[@]}" -o "$OUT/bmo" .
# BMO's own CRDs and webhook manifests travel with the binary they belong to.
rm -rf "$OUT/config" && mkdir -p "$OUT/config"
cp -r config/base/crds/bases "$OUT/config/crds"
[ -d config/base/webhook ] && cp -r config/base/webhook "$OUT/config/webhook"
echo "$BMO_COMMIT patch $PATCH_LEVEL" > "$STAMP"
echo "built $OUT/bmo in $((SECONDS - started)) s"
