"""The boot of a test-bed machine: runs inside its namespaces, then becomes its sshd.

TEST FIXTURE ONLY. :mod:`harness.machines` starts this script as
``ip netns exec <ns> unshare --mount --uts --pid --fork --kill-child --mount-proc
python machine_boot.py <boot.json>``, so it is PID 1 of the machine's own PID
namespace, in its own network, mount and UTS (hostname) namespaces. Standard
library only. It:

1. mounts the machine's disk: the host's root file system becomes read-only in
   this mount namespace, and the disk's ``etc``, ``root``, ``home``, ``srv``
   and ``opt`` are bound over the host's; ``/run``, ``/tmp`` and ``/var/tmp``
   are fresh tmpfs (gone at power-off, as on a machine that reboots);
2. applies the config drive once per instance id (the ``plan`` file written
   by :mod:`harness.cloud_config`), as cloud-init does at first boot: host
   name, users, their ``authorized_keys`` and ``sudo`` rules, and the network configuration,
   which it keeps on the disk (``/etc/network/test-bed.json``) for later boots;
3. sets the host name (UTS namespace), brings the NICs up with the network
   configuration on the disk or else the test bed's "DHCP" address;
4. makes the SSH host key (Ed25519) on the disk the first time, and execs ``sshd -D -e``
   (its log is the machine's console log).

Power-off is the harness killing PID 1: the kernel then kills every process
of the machine, and its mounts vanish with the mount namespace.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

DISK_DIRS = ("etc", "root", "home", "srv", "opt")
TMPFS_DIRS = ("/run", "/tmp", "/var/tmp")
INSTANCE_FILE = "/etc/cloud/test-bed-instance-id"
NETWORK_FILE = "/etc/network/test-bed.json"


def run(*argv: str) -> None:
    subprocess.run(argv, check=True)


def mount_disk(disk: str) -> None:
    run("mount", "--make-rprivate", "/")
    for name in DISK_DIRS:
        run("mount", "--bind", os.path.join(disk, name), "/" + name)
    for path in TMPFS_DIRS:
        run("mount", "-t", "tmpfs", "-o", "mode=1777", "tmpfs", path)
    os.chmod("/run", 0o755)
    # Last: a bind mount takes the read-only flag of the mount it comes from.
    run("mount", "-o", "remount,bind,ro", "/")


def existing_groups(names: list[str]) -> list[str]:
    with open("/etc/group") as handle:
        known = {line.split(":", 1)[0] for line in handle}
    return [g for g in names if g in known]


def add_user(user: dict) -> None:
    name, home = user["name"], user["homedir"]
    exists = subprocess.run(["id", "-u", name], check=False, capture_output=True).returncode == 0
    if not exists:
        argv = ["useradd", "--create-home", "--home-dir", home, "--shell", user["shell"]]
        groups = existing_groups(user["groups"])
        if groups:
            argv += ["--groups", ",".join(groups)]
        if user["gecos"]:
            argv += ["--comment", user["gecos"]]
        run(*argv, name)
        # No password, not locked: a key is the way in (cloud-init's lock_passwd
        # with sshd's UsePAM, which this test bed's sshd does without).
        run("usermod", "--password", "*", name)
    if user["ssh_authorized_keys"]:
        ssh_dir = os.path.join(home, ".ssh")
        os.makedirs(ssh_dir, mode=0o700, exist_ok=True)
        keys = os.path.join(ssh_dir, "authorized_keys")
        with open(keys, "a") as handle:
            handle.write("".join(k + "\n" for k in user["ssh_authorized_keys"]))
        os.chmod(keys, 0o600)
        run("chown", "-R", f"{name}:", ssh_dir)


def apply_plan(plan: dict) -> None:
    """cloud-init's per-instance steps, once per instance id."""
    try:
        with open(INSTANCE_FILE) as handle:
            if handle.read().strip() == plan["instance_id"]:
                return
    except FileNotFoundError:
        pass
    if plan["hostname"]:
        with open("/etc/hostname", "w") as handle:
            handle.write(plan["hostname"] + "\n")
        with open("/etc/hosts", "w") as handle:
            handle.write(f"127.0.0.1\tlocalhost\n127.0.1.1\t{plan['hostname']}\n::1\tlocalhost ip6-localhost\n")
    for user in plan["users"]:
        add_user(user)
    rules = [f"{u['name']} {rule}\n" for u in plan["users"] for rule in u.get("sudo") or []]
    if rules:
        os.makedirs("/etc/sudoers.d", exist_ok=True)
        path = "/etc/sudoers.d/90-cloud-init-users"
        with open(path, "a") as handle:
            handle.write("".join(rules))
        os.chmod(path, 0o440)
    os.makedirs(os.path.dirname(NETWORK_FILE), exist_ok=True)
    with open(NETWORK_FILE, "w") as handle:
        json.dump(plan["interfaces"], handle)
    os.makedirs(os.path.dirname(INSTANCE_FILE), exist_ok=True)
    with open(INSTANCE_FILE, "w") as handle:
        handle.write(plan["instance_id"] + "\n")


def set_hostname() -> None:
    try:
        with open("/etc/hostname") as handle:
            name = handle.read().strip()
    except FileNotFoundError:
        name = ""
    run("hostname", name or "localhost")


def configure_network(nics: list[dict]) -> None:
    try:
        with open(NETWORK_FILE) as handle:
            config = {i["mac"]: i for i in json.load(handle)}
    except FileNotFoundError:
        config = {}
    run("ip", "link", "set", "lo", "up")
    for nic in nics:
        run("ip", "link", "set", nic["ifname"], "up")
        iface = config.get(nic["mac"])
        if iface is None or iface["dhcp"]:
            run("ip", "address", "add", nic["address"], "dev", nic["ifname"])
            if nic.get("gateway") and nic is nics[0]:
                run("ip", "route", "add", "default", "via", nic["gateway"])
        if iface is not None:
            for address in iface["addresses"]:
                run("ip", "address", "add", address, "dev", nic["ifname"])
            for route in iface["routes"]:
                run("ip", "route", "replace", route["to"], "via", route["via"], "dev", nic["ifname"])


def main() -> None:
    with open(sys.argv[1]) as handle:
        boot = json.load(handle)
    plan = None
    if boot.get("plan") and os.path.exists(boot["plan"]):
        with open(boot["plan"]) as handle:  # read before /tmp is the machine's own
            plan = json.load(handle)
    mount_disk(boot["disk"])
    if plan is not None:
        apply_plan(plan)
    set_hostname()
    configure_network(boot["nics"])
    if not os.path.exists("/etc/ssh/ssh_host_ed25519_key"):
        # only the Ed25519 key sshd is configured with (machines.SSHD_DROP_IN): cloud images make every kind
        # (ssh-keygen -A), but an RSA key alone takes 0.5-1.5 s of CPU, at each first boot of each machine
        run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", "/etc/ssh/ssh_host_ed25519_key")
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    sys.stdout.flush()
    os.execv("/usr/sbin/sshd", ["/usr/sbin/sshd", "-D", "-e"])


if __name__ == "__main__":
    main()
