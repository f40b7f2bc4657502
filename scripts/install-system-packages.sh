#!/usr/bin/env bash
# Install the Debian packages the tests and the demo need, when missing.
# For ansible-test sanity (shellcheck), Ironic config drives (genisoimage),
# the Ironic database of the concurrency tests (postgresql), the sshd and
# sudo of the test-bed machines (openssh-server, whose service is never started:
# the harness runs an sshd per machine; sudo, as on Debian's cloud images), and
# the Java 17 runtime of ansible-rulebook's Drools engine
# (openjdk-17-jre-headless: the Event-Driven Ansible rulebooks in extensions/eda).
set -euo pipefail
PACKAGES=(shellcheck genisoimage postgresql openssh-server sudo openjdk-17-jre-headless)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && { echo "system packages: present"; exit 0; }
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
echo "installing system packages: ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
