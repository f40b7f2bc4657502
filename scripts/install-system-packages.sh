#!/usr/bin/env bash
# Install the Debian packages the tests and the demo need, when missing.
# For ansible-test sanity (shellcheck), Ironic config drives (genisoimage),
# the Ironic database of the concurrency tests (postgresql), the sshd and
# sudo of the test-bed machines (openssh-server, whose service is never started:
# the harness runs an sshd per machine; sudo, as on Debian's cloud images), and
# the Java 17 runtime of ansible-rulebook's Drools engine
# (openjdk-17-jre-headless: the Event-Driven Ansible rulebooks in extensions/eda).
# With the argument `networks`, instead: the test bed's switch (tests marked networks, make neutron): Open vSwitch
# run in userspace (openvswitch-switch, openvswitch-common; its service is never started: the harness runs an
# ovsdb-server and an ovs-vswitchd per test session), ping, ethtool (TX checksum offload off on the machines'
# veths) and tcpdump (for looking at a failed run's traffic). Not part of make test yet.
set -euo pipefail
case "${1:-}" in
  "") PACKAGES=(shellcheck genisoimage postgresql openssh-server sudo openjdk-17-jre-headless) ;;
  networks) PACKAGES=(openvswitch-switch openvswitch-common iputils-ping ethtool tcpdump) ;;
  *) echo "usage: $0 [networks]" >&2; exit 2 ;;
esac
find_missing() {
  missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
}
find_missing
[ ${#missing[@]} -eq 0 ] && { echo "system packages${1:+ ($1)}: present"; exit 0; }
# Two installs at once (make test's early builds beside a session's preparation) would meet at apt's lock and fail:
# the second waits for the first, then installs what is still missing.
exec 9>"${TMPDIR:-/tmp}/bmt-system-packages.lock"
flock 9
find_missing
[ ${#missing[@]} -eq 0 ] && { echo "system packages${1:+ ($1)}: present"; exit 0; }
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
echo "installing system packages: ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
