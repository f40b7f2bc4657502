"""Test-bed machines: each emulated server gets a network namespace, NICs on a bridge and an sshd.

TEST FIXTURE ONLY: the machines are the hardware behind the sushy-tools BMCs
(:mod:`harness.sushy`); nothing in the collection knows about them. Needs
root (``ip netns``, bridges, mounts) and Debian's ``openssh-server``
(``scripts/install-system-packages.sh``).

:class:`TestBed` (one per test session or test):

- a Linux **bridge** ``bmtbr<k>`` with ``10.247.<k>.1/24`` on the host, ``k``
  the first index whose bridge name is free and whose subnet overlaps no
  address or route of the host (the bridge name is the lock between test
  sessions running at once); the bridge's alias names the owner PID and the
  test bed;
- :meth:`TestBed.address_systems` gives each NIC of sushy-tools system
  definitions an address on that subnet (written into the systems' ``nics``,
  so Redfish, inspection and the claim status report it) before the emulator
  starts; :meth:`TestBed.add_machines` then makes a :class:`Machine` per BMC;
- a **poller** thread reads each BMC's ``PowerState`` through the emulator's
  Redfish API (every ``poll_interval`` s) and boots or halts the machine to
  follow it: no SSH while the BMC says Off.

A :class:`Machine` is

- a network namespace ``bmt-<owner pid>-<k>-<name>`` with one veth per NIC of its
  BMC (the MAC Redfish reports, ``eth0``, ``eth1``... inside, the host end on
  the bridge), links down and no address while it is off. A test bed made with
  ``switch`` (a :class:`harness.switch.Switch`) plugs each NIC into a port of
  that switch instead (named as the host end would be, in the switch's
  quarantine VLAN until Neutron moves it): the host then reaches a machine only
  through a namespace on the machine's VLAN, ``Machine.ssh(..., via=<netns>)``;
- a **disk**: a directory tree ``<workdir>/<name>/disk`` with ``etc`` (a copy
  of the host's ``/etc`` with a fresh SSH host key, Ed25519, made at first boot),
  ``root``, ``home``, ``srv`` and ``opt``. At boot these are bound over the
  host's directories in the machine's own mount namespace, where the rest of
  the host's file system is read-only (see :mod:`harness.machine_boot`). So
  the machine runs the host's programs (``sshd``, ``python3`` for Ansible,
  ``useradd``) with its own users, keys, host name and files, and everything
  a tenant can change lands on the disk; :meth:`Machine.wipe` re-images it.
  (Why not ``sshd``'s ``ChrootDirectory``: a chroot needs a whole userland
  inside for a login to run anything, Ansible's Python included; and why not
  only per-machine ``authorized_keys`` files: users and host names would not
  be the machine's own, so a wipe could not be proved.)
- a **config drive**: :meth:`Machine.insert_config_drive` takes the three
  parts (``meta_data``, ``user_data``, ``network_data``) as Ironic holds them,
  plans what cloud-init would do (:mod:`harness.cloud_config`) and the machine
  applies it at its next boot, once per instance id (a running machine is
  rebooted, as a deployment does); the agent's ``write_image`` brings a new
  OS, so the config drive it hands over is applied even with the instance id
  of the last deployment. At each boot the machine also looks in its
  BMC's virtual media: a config drive image in the ``USBStick`` (where Ironic's
  ``ramdisk`` deploy through ``redfish-virtual-media`` inserts it;
  :mod:`harness.config_drive_iso`) is applied instead, as cloud-init finds a
  ``config-2`` volume.
- the **agent**: FakeIPA (Ironic's agent for the ``direct`` deploy, inspection
  and cleaning) reaches the machine through files in the test bed's bus
  directory (:attr:`TestBed.bus`, :mod:`harness.machine_bus`): its
  ``write_image`` step hands over the deployment's config drive, its
  ``erase_devices``/``erase_devices_metadata`` clean steps wipe the disk (or
  fail with :attr:`Machine.wipe_failure`), and while the agent ramdisk runs on
  the system the machine's own OS (its sshd) does not. The poller does what
  the agent asks.

:meth:`TestBed.stop` (also registered with :mod:`atexit`, so it runs after a
failed test or an interrupted session) halts every machine, deletes the
namespaces (their veths go with them) and the bridge. :func:`sweep_stale`
removes what an earlier session killed with SIGKILL left: namespaces and
bridges whose owner PID is gone (only names this module makes). Sweeps and
bridge creation hold :func:`host_lock`, one lock for every test bed of every
process on the host: two sweeps never interleave (one could delete by name a
bridge another process had just created after the other sweep removed the
stale one of that name), and a test can keep other sessions' sweeps off what
it means to sweep itself.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import dataclasses
import fcntl
import ipaddress
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from . import cloud_config, config_drive_iso, machine_boot, machine_bus, procs
from .sushy import Bmc

BOOT_SCRIPT = Path(__file__).resolve().parent / "machine_boot.py"
SUPERNET = "10.247"  # 10.247.<k>.0/24 per test bed
PREFIX = "bmt-"  # network namespaces: bmt-<owner pid>-<bridge index>-<machine>
BRIDGE_PREFIX = "bmtbr"
# flock()ed by host_lock(): shared by the test beds of every process on the host (root's /run/lock).
LOCK_PATH = Path("/run/lock/baremetal-tenancy-test-beds.lock")
FIRST_HOST = 10  # machines get .10 and up; .1 is the host's end of the bridge
SSHD_DROP_IN = (
    "# test bed: no PAM in a namespace (pam_loginuid needs a real login session); keys only.\n"
    "UsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPrintMotd no\n"
    "# one host key, Ed25519, made at first boot (machine_boot.py): an RSA key costs 0.5-1.5 s of CPU per machine\n"
    "HostKey /etc/ssh/ssh_host_ed25519_key\n"
)


# Inside a machine's network: sshd accepted a connection and sent its banner (a listening socket alone is not a
# server ready to log in: the first connection re-executes sshd).
SSH_BANNER_PROBE = "exec 3<>/dev/tcp/127.0.0.1/22 && read -r -t 30 banner <&3 && [[ $banner == SSH-* ]]"
# ssh's messages when the TCP connection was made but the server's greeting never came or broke off.
SSH_SERVER_NOT_READY = ("during banner exchange", "kex_exchange_identification", "Connection reset by peer")
SSH_ATTEMPTS = 3


class MachineError(RuntimeError):
    """A machine or the test bed could not be set up; the message says which and why."""


def ip(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(["ip", *argv], check=False, capture_output=True, text=True)
    if check and result.returncode != 0:
        raise MachineError(f"ip {' '.join(argv)}: {result.stderr.strip()}")
    return result


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def netns_list() -> list[str]:
    return [line.split()[0] for line in ip("netns", "list").stdout.splitlines() if line.strip()]


def bridges() -> dict[str, str]:
    """Bridge name -> alias (empty if none), of every bridge on the host."""
    out = ip("-j", "-d", "link", "show", "type", "bridge").stdout
    return {link["ifname"]: link.get("ifalias", "") for link in json.loads(out or "[]")}


def bridge_owner(alias: str) -> int | None:
    """The owner PID a test bed's bridge alias (``test-bed owner=<pid> bed=<token>``) names; None for another's."""
    if not alias.startswith("test-bed owner="):
        return None
    words = alias.removeprefix("test-bed owner=").split()
    return int(words[0]) if words and words[0].isdigit() else None


def bridge_is(name: str, alias: str) -> bool:
    """Whether the bridge ``name`` on the host is still the one whose alias was ``alias``. A bridge's name alone
    is no identity: once a test bed has deleted its bridge, another session may make one of the same name."""
    return bridges().get(name) == alias


def _kill_netns_processes(netns: str) -> None:
    """SIGKILL whatever still runs in ``netns`` (only a namespace this module made)."""
    for unused_attempt in range(20):
        pids = [int(p) for p in ip("netns", "pids", netns, check=False).stdout.split()]
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)


class _HostLock:
    """The state of :func:`host_lock` in this process: the open lock file and how deep the blocks holding it are."""

    def __init__(self):
        self.mutex = threading.RLock()
        self.file = None
        self.depth = 0

    @contextlib.contextmanager
    def held(self):
        with self.mutex:
            if self.depth == 0:
                self.file = open(LOCK_PATH, "a")  # open until the outermost block ends: closing it releases the flock
                fcntl.flock(self.file, fcntl.LOCK_EX)
            self.depth += 1
            try:
                yield
            finally:
                self.depth -= 1
                if self.depth == 0:
                    self.file.close()
                    self.file = None


_HOST_LOCK = _HostLock()


def host_lock():
    """Hold the host-wide lock of test beds (an exclusive ``flock`` on :data:`LOCK_PATH`; the sweeps and the
    bridge creation of every process take it) for a ``with`` block. Re-entrant within a process, whose other
    threads wait for it too."""
    return _HOST_LOCK.held()


def sweep_stale() -> list[str]:
    """Delete namespaces and bridges of test beds whose owner process is gone; returns their names.
    Under :func:`host_lock`: what it finds stale stays stale, and no other sweep removes it meanwhile."""
    removed = []
    with host_lock():
        for netns in netns_list():
            if not netns.startswith(PREFIX):
                continue
            owner = netns[len(PREFIX) :].split("-", 1)[0]
            if owner.isdigit() and not _pid_alive(int(owner)):
                _kill_netns_processes(netns)
                ip("netns", "delete", netns, check=False)
                removed.append(netns)
        for name, alias in bridges().items():
            owner = bridge_owner(alias)
            if name.startswith(BRIDGE_PREFIX) and owner is not None:
                if not _pid_alive(owner):
                    ip("link", "delete", name, check=False)
                    removed.append(name)
    return removed


def redfish_get(bmc: Bmc, path: str) -> dict:
    """GET a Redfish resource of ``bmc`` with its credentials."""
    req = urllib.request.Request(bmc.base_url + path)
    token = base64.b64encode(f"{bmc.username}:{bmc.password}".encode()).decode()
    req.add_header("Authorization", f"Basic {token}")
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def _host_networks() -> list[ipaddress.IPv4Network]:
    nets = []
    for line in ip("-4", "-o", "address").stdout.splitlines():
        nets.append(ipaddress.ip_interface(line.split()[3]).network)
    for line in ip("-4", "route", "show", "table", "all").stdout.splitlines():
        first = line.split()[0]
        if first in ("default", "broadcast", "local", "unreachable", "prohibit", "blackhole"):
            first = line.split()[1] if first != "default" else "0.0.0.0/0"
        try:
            net = ipaddress.ip_network(first, strict=False)
        except ValueError:
            continue
        if net.prefixlen > 0:
            nets.append(net)
    return nets


@dataclasses.dataclass
class Nic:
    mac: str
    ifname: str  # inside the machine
    host_ifname: str  # the veth end on the bridge (or the switch port, with a switch)
    address: str  # "10.247.k.n/24", the test bed's "DHCP" address

    @property
    def ip(self) -> str:
        return self.address.split("/")[0]


class Machine:
    """One server behind a BMC: see the module documentation."""

    def __init__(self, testbed: TestBed, bmc: Bmc, index: int, nics: list[Nic]):
        self.testbed = testbed
        self.bmc = bmc
        self.name = bmc.name
        self.index = index
        self.nics = nics
        self.netns = f"{testbed.netns_prefix}{bmc.name}"
        self.dir = testbed.workdir / bmc.name
        self.disk = self.dir / "disk"
        self.plan_path = self.dir / "config-drive.json"
        self.media_plan_path = self.dir / "virtual-media-config-drive.json"
        self.proc: procs.Proc | None = None
        self.netns_inode: int | None = None
        self.bus_dir = testbed.bus / machine_bus.system_key(bmc.uuid)
        self.lock = threading.RLock()
        self.boots = 0
        # What the agent did to this machine (harness.machine_bus): "config drive <instance id>", "wipe <step>".
        self.events: list[str] = []
        # A reason to refuse the agent's disk erasure with (a disk that cannot be wiped), or None.
        self.wipe_failure: str | None = None
        # The BMC's PowerState at the poller's last read (None before its first): for a failed wait's message.
        self.power_seen: str | None = None

    # -- what tests use --------------------------------------------------

    @property
    def ip(self) -> str:
        """The address of its first NIC (what the hardware reports)."""
        return self.nics[0].ip

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.alive()

    def insert_config_drive(
        self, meta_data: dict | None = None, user_data: str | None = None, network_data: dict | None = None
    ) -> cloud_config.Plan:
        """Give the machine this config drive (as a deployment writes it); applied at the next boot,
        once per instance id. A running machine reboots. Raises ConfigDriveError, nothing changed."""
        plan = cloud_config.plan(meta_data, user_data, network_data)
        with self.lock:
            self.plan_path.write_text(plan.to_json())
            if self.running:
                self._halt()
                self._boot()
        return plan

    def remove_config_drive(self) -> None:
        with self.lock:
            self.plan_path.unlink(missing_ok=True)

    def wipe(self) -> None:
        """Erase the disk (files, users, keys, host name, network configuration) and the config
        drive, as cleaning does. A running machine is halted first and boots again if its BMC says On."""
        with self.lock:
            was_running = self.running
            if was_running:
                self._halt()
            self.remove_config_drive()
            shutil.rmtree(self.disk, ignore_errors=True)
            self._install()
            if was_running:
                self._boot()

    def wait_running(self, running: bool = True, timeout: float = 60) -> None:
        """Wait until the machine has followed its BMC: sshd answering (``True``) or halted.
        sshd is probed from inside the machine's network (its addresses may be static ones)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                proc = self.proc
                if not running and not self.running:
                    return
            if running and proc is not None:
                if not proc.alive():
                    raise MachineError(f"machine {self.name}: its boot failed\n{proc.log_tail()}")
                if self.exec("bash", "-c", SSH_BANNER_PROBE).returncode == 0:
                    return
            time.sleep(0.2)
        state = "running" if running else "halted"
        tail = self.proc.log_tail() if self.proc is not None else "(never booted)"
        errors = [e for e in self.testbed.poll_errors if e.startswith(f"{self.name}:")]
        raise MachineError(
            f"machine {self.name}: not {state} after {timeout:.0f}s; its BMC's PowerState last read "
            f"{self.power_seen!r}, agent booted {machine_bus.agent_booted(self.bus_dir)}; poller errors {errors}\n{tail}"
        )

    def ssh_argv(
        self, user: str, key: str | os.PathLike, command: str, address: str | None = None, via: str | None = None
    ) -> list[str]:
        """``via``: a network namespace to run ``ssh`` in (a tenant's gateway on the switch) instead of the host's."""
        return [
            *(["ip", "netns", "exec", via] if via else []),
            "ssh",
            "-i",
            str(key),
            "-o",
            "BatchMode=yes",
            "-o",
            "IdentitiesOnly=yes",
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "LogLevel=ERROR",
            "-o",
            "ConnectTimeout=5",
            f"{user}@{address or self.ip}",
            command,
        ]

    def ssh(self, user: str, key: str | os.PathLike, command: str, address: str | None = None, via: str | None = None):
        """Run ``command`` on the machine over SSH as ``user`` with the private ``key`` (from network namespace
        ``via`` if given).

        A login whose TCP connection was made but whose server did not finish its greeting (sshd forks and
        re-executes itself per connection: on loaded cores the banner can take longer than ``ConnectTimeout``)
        is tried again, up to :data:`SSH_ATTEMPTS` times. A refused key or an unreachable address is not:
        tests assert those."""
        argv = self.ssh_argv(user, key, command, address, via)
        for unused_attempt in range(SSH_ATTEMPTS):
            result = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=60)
            if result.returncode != 255 or not any(m in result.stderr for m in SSH_SERVER_NOT_READY):
                break
        return result

    def describe(self) -> str:
        """What the machine was given and holds, for a failed test's message: the agent's events, the config
        drive it will apply (instance id, host name, users and their keys' comments), the instance id applied
        and the users with ``authorized_keys`` on its disk."""
        lines = [f"machine {self.name} ({self.ip}): boots {self.boots}, running {self.running}, events {self.events}"]
        try:
            plan = cloud_config.Plan.from_json(self.plan_path.read_text())
            users = {u.name: [k.split()[-1] for k in u.ssh_authorized_keys] for u in plan.users}
            lines.append(f"config drive: instance {plan.instance_id}, hostname {plan.hostname}, users {users}")
        except FileNotFoundError:
            lines.append("config drive: none")
        instance = self.disk / machine_boot.INSTANCE_FILE.lstrip("/")
        lines.append(f"applied instance: {instance.read_text().strip() if instance.exists() else None}")
        for keys in sorted(
            [*self.disk.glob("home/*/.ssh/authorized_keys"), *self.disk.glob("root/.ssh/authorized_keys")]
        ):
            comments = [line.split()[-1] for line in keys.read_text().splitlines() if line.strip()]
            lines.append(f"{keys.relative_to(self.disk)}: {comments}")
        return "\n".join(lines)

    def exec(self, *argv: str) -> subprocess.CompletedProcess:
        """Run a command in the machine's network namespace (not on its disk): for network checks."""
        return subprocess.run(
            ["ip", "netns", "exec", self.netns, *argv], check=False, capture_output=True, text=True, timeout=60
        )

    # -- hardware ----------------------------------------------------------

    def handle_agent_requests(self) -> None:
        """Do what the agent ramdisk asked (:mod:`harness.machine_bus`) and answer it."""
        for reply, request in machine_bus.requests(self.bus_dir):
            try:
                error = self._agent_request(request)
            except (OSError, ValueError, KeyError, MachineError) as exc:  # ConfigDriveError is a ValueError
                error = f"machine {self.name}: {exc}"
            machine_bus.answer(reply, error)

    def _agent_request(self, request: dict) -> str | None:
        op = request.get("op")
        if op == "wipe":
            if self.wipe_failure:
                self.events.append(f"wipe refused: {self.wipe_failure}")
                return self.wipe_failure
            self.wipe()
            self.events.append(f"wipe {request.get('step')}{self._switch_vlan()}")
            return None
        if op == "config_drive":
            if request.get("config_drive") is None:
                self.remove_config_drive()
                self.events.append("no config drive")
                return None
            drive = config_drive_iso.read(base64.b64decode(request["config_drive"]))
            # The image write brings a new OS: its cloud-init has not run, so the new config drive is applied
            # at first boot even with the instance id of the last deployment (Metal3 and Ironic give the node's
            # uuid, the same for every deployment of a host). What else is on the disk stays: the test bed
            # keeps the previous tenant's files, as data the image does not overwrite, until cleaning wipes them.
            (self.disk / machine_boot.INSTANCE_FILE.lstrip("/")).unlink(missing_ok=True)
            plan = self.insert_config_drive(drive["meta_data"], drive["user_data"], drive["network_data"])
            self.events.append(f"config drive {plan.instance_id}{self._switch_vlan()}")
            return None
        return f"machine {self.name}: unknown request {op!r}"

    def _switch_vlan(self) -> str:
        """On a switch, `` on VLAN <n>``: the access VLAN of the machine's first NIC's switch port as the agent
        acts on the machine (its provisioning or cleaning network's, if Ironic moved it there); else empty."""
        if self.testbed.switch is None:
            return ""
        return f" on VLAN {self.testbed.switch.port_vlan(self.nics[0].host_ifname)}"

    def _create(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.bus_dir.mkdir(parents=True, exist_ok=True)
        ip("netns", "add", self.netns)
        self.netns_inode = os.stat(f"/run/netns/{self.netns}").st_ino
        for nic in self.nics:
            if self.testbed.switch is not None:
                self.testbed.switch.plug_nic(nic.host_ifname, self.netns, nic.ifname, nic.mac)
                continue
            ip("link", "add", nic.host_ifname, "type", "veth", "peer", "name", nic.ifname, "netns", self.netns)
            ip("-n", self.netns, "link", "set", nic.ifname, "address", nic.mac)
            ip("link", "set", nic.host_ifname, "master", self.testbed.bridge, "up")
        self._install()

    def _install(self) -> None:
        """A fresh disk: the host's /etc without its SSH host keys, empty home directories."""
        if self.disk.exists():
            return
        tmp = self.disk.with_name("disk.new")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        subprocess.run(["cp", "-a", "/etc", str(tmp / "etc")], check=True)
        for key in (tmp / "etc" / "ssh").glob("ssh_host_*"):
            key.unlink()
        (tmp / "etc" / "ssh" / "sshd_config.d").mkdir(exist_ok=True)
        (tmp / "etc" / "ssh" / "sshd_config.d" / "test-bed.conf").write_text(SSHD_DROP_IN)
        (tmp / "etc" / "hostname").write_text("localhost\n")
        (tmp / "etc" / "hosts").write_text("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost\n")
        shutil.rmtree(tmp / "etc" / "cloud", ignore_errors=True)
        (tmp / "root").mkdir(mode=0o700)
        for name in ("home", "srv", "opt"):
            (tmp / name).mkdir(mode=0o755)
        tmp.rename(self.disk)

    def _virtual_media_plan(self) -> Path | None:
        """The config drive in the BMC's virtual USB stick (where Ironic's ``ramdisk`` deploy through
        ``redfish-virtual-media`` inserts it), planned, or ``None``. A medium that cannot be read is
        skipped (logged in ``virtual-media.log``), as firmware boots without an unreadable stick."""
        self.media_plan_path.unlink(missing_ok=True)
        try:
            collection = redfish_get(self.bmc, self.bmc.system_id + "/VirtualMedia")
        except (OSError, ValueError) as exc:
            self._media_log(f"cannot list virtual media: {exc!r}")
            return None
        for member in collection.get("Members", []):
            try:
                medium = redfish_get(self.bmc, member["@odata.id"])
                types = medium.get("MediaTypes") or []
                if not medium.get("Inserted") or not medium.get("Image") or not {"USBStick", "Floppy"} & set(types):
                    continue
                with urllib.request.urlopen(medium["Image"], timeout=30) as resp:
                    drive = config_drive_iso.read(resp.read())
                plan = cloud_config.plan(drive["meta_data"], drive["user_data"], drive["network_data"])
            except (OSError, ValueError, KeyError) as exc:  # ConfigDriveError is a ValueError
                self._media_log(f"{member.get('@odata.id')}: {exc!r}")
                continue
            self.media_plan_path.write_text(plan.to_json())
            self._media_log(f"{medium['Image']}: config drive of instance {plan.instance_id}")
            return self.media_plan_path
        return None

    def _media_log(self, line: str) -> None:
        with open(self.dir / "virtual-media.log", "a") as handle:
            handle.write(f"{time.strftime('%H:%M:%S')} boot {self.boots + 1}: {line}\n")

    def _boot(self) -> None:
        plan_path = self._virtual_media_plan() or self.plan_path
        boot = {
            "disk": str(self.disk),
            "plan": str(plan_path),
            "nics": [
                {"ifname": n.ifname, "mac": n.mac, "address": n.address, "gateway": self.testbed.gateway}
                for n in self.nics
            ],
        }
        boot_path = self.dir / "boot.json"
        boot_path.write_text(json.dumps(boot))
        argv = ["ip", "netns", "exec", self.netns, "unshare", "--mount", "--uts", "--pid", "--fork"]
        argv += ["--kill-child", "--mount-proc", sys.executable, str(BOOT_SCRIPT), str(boot_path)]
        self.boots += 1
        self.proc = procs.start_process(f"console-{self.boots}", argv, self.dir)

    def _halt(self) -> None:
        if self.proc is not None:
            self.proc.stop(timeout=5)
            self.proc = None
        _kill_netns_processes(self.netns)
        for nic in self.nics:
            ip("-n", self.netns, "address", "flush", "dev", nic.ifname, check=False)
            ip("-n", self.netns, "link", "set", nic.ifname, "down", check=False)

    def follow(self, power_on: bool) -> None:
        """Boot or halt to match the BMC's power state."""
        with self.lock:
            if power_on and self.proc is None:
                self._boot()
            elif not power_on and self.proc is not None:
                self._halt()

    def _destroy(self) -> None:
        with self.lock:
            self._halt()
            _kill_netns_processes(self.netns)
            ip("netns", "delete", self.netns, check=False)


class TestBed:
    """A bridge, its machines and the poller that keeps them in step with their BMCs."""

    __test__ = False  # not a pytest test class

    def __init__(self, workdir: str | os.PathLike, poll_interval: float = 0.5, switch=None):
        self.workdir = Path(workdir)
        # A harness.switch.Switch: the machines' NICs are its ports (in its quarantine VLAN) instead of the bridge's.
        self.switch = switch
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.owner = os.getpid()
        # The bridge's alias: its owner (for sweep_stale) and this test bed (for leftovers).
        self.alias = f"test-bed owner={self.owner} bed={secrets.token_hex(4)}"
        self.poll_interval = poll_interval
        self.machines: dict[str, Machine] = {}
        self.reserved: dict[str, str] = {}  # MAC -> "address/prefix"
        self.poll_errors: list[str] = []
        self.bus = self.workdir / "bus"  # shared with FakeIPA (harness.machine_bus)
        self.bus.mkdir(exist_ok=True)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._stopped = False
        with host_lock():
            sweep_stale()
            self.bridge, self.subnet = self._create_bridge()
        self.netns_prefix = f"{PREFIX}{self.owner}-{self.bridge[len(BRIDGE_PREFIX) :]}-"
        self.gateway = str(next(self.subnet.hosts()))
        self._hosts = (str(h) for i, h in enumerate(self.subnet.hosts()) if i + 1 >= FIRST_HOST)
        atexit.register(self.stop)

    def _create_bridge(self) -> tuple[str, ipaddress.IPv4Network]:
        taken = _host_networks()
        for k in range(256):
            subnet = ipaddress.ip_network(f"{SUPERNET}.{k}.0/24")
            name = f"{BRIDGE_PREFIX}{k}"
            if any(subnet.overlaps(n) for n in taken):
                continue
            if ip("link", "add", name, "type", "bridge", check=False).returncode != 0:
                continue  # another test bed holds it
            ip("link", "set", name, "alias", self.alias)
            ip("address", "add", f"{next(subnet.hosts())}/{subnet.prefixlen}", "dev", name)
            ip("link", "set", name, "up")
            return name, subnet
        raise MachineError(f"no free {SUPERNET}.<k>.0/24 subnet and bridge name for the test bed")

    def _address(self, mac: str) -> str:
        mac = mac.lower()
        if mac not in self.reserved:
            try:
                self.reserved[mac] = f"{next(self._hosts)}/{self.subnet.prefixlen}"
            except StopIteration:
                raise MachineError(f"test bed {self.bridge}: no address left in {self.subnet}") from None
        return self.reserved[mac]

    def address_systems(self, systems: list[dict]) -> list[dict]:
        """Give each NIC of these sushy-tools system definitions its test-bed address (in place)."""
        for system in systems:
            for nic in system.get("nics", []):
                nic["ip"] = self._address(nic["mac"]).split("/")[0]
        return systems

    def add_machines(self, bmcs: list[Bmc]) -> list[Machine]:
        """A machine per BMC (off until the poller sees its BMC On); starts the poller."""
        made = []
        for bmc in bmcs:
            if bmc.name in self.machines:
                raise MachineError(f"test bed {self.bridge}: a machine named {bmc.name} exists")
            index = len(self.machines)
            bridge_k = self.bridge[len(BRIDGE_PREFIX) :]
            nics = [
                Nic(mac.lower(), f"eth{j}", f"bmt{bridge_k}m{index}n{j}", self._address(mac))
                for j, mac in enumerate(bmc.macs)
            ]
            if not nics:
                raise MachineError(f"machine {bmc.name}: its BMC reports no NIC")
            machine = Machine(self, bmc, index, nics)
            self.machines[bmc.name] = machine
            machine._create()
            made.append(machine)
        if self._thread is None:
            self._thread = threading.Thread(target=self._poll, name=f"test-bed-{self.bridge}", daemon=True)
            self._thread.start()
        return made

    def machine(self, name: str) -> Machine:
        return self.machines[name]

    # -- power -------------------------------------------------------------

    @staticmethod
    def power_state(bmc: Bmc) -> str:
        """The BMC's ``PowerState`` (``On``/``Off``...) through Redfish."""
        return redfish_get(bmc, bmc.system_id)["PowerState"]

    def _poll(self) -> None:
        while not self._stop.is_set():
            for machine in list(self.machines.values()):
                if self._stop.is_set():
                    return
                try:
                    state = self.power_state(machine.bmc)
                except (OSError, urllib.error.URLError, ValueError, KeyError) as exc:
                    self.poll_errors.append(f"{machine.name}: {exc!r}")
                    del self.poll_errors[:-20]
                    continue
                machine.power_seen = state
                try:
                    machine.handle_agent_requests()
                    # While the agent ramdisk runs on the system, the machine's own OS does not.
                    machine.follow(state == "On" and not machine_bus.agent_booted(machine.bus_dir))
                except (MachineError, OSError) as exc:
                    self.poll_errors.append(f"{machine.name}: {exc!r}")
            self._stop.wait(self.poll_interval)

    # -- teardown ------------------------------------------------------------

    def stop(self) -> None:
        """Halt every machine, delete the namespaces and the bridge. Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        for machine in self.machines.values():
            machine._destroy()
        ip("link", "delete", self.bridge, check=False)
        atexit.unregister(self.stop)

    def leftovers(self) -> list[str]:
        """What of this test bed is still on the host (namespaces, bridge, processes): empty once stopped."""
        left = [n for n in netns_list() if n.startswith(self.netns_prefix)]
        if bridge_is(self.bridge, self.alias):
            left.append(self.bridge)
        inodes = {m.netns_inode for m in self.machines.values()}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if os.stat(entry / "ns" / "net").st_ino in inodes:
                        left.append(f"pid {entry.name}")
                except OSError:
                    continue
        return left
