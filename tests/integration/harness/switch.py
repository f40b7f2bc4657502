"""The test bed's switch: an Open vSwitch in userspace, in a network namespace of its own, managed over SSH.

TEST FIXTURE ONLY: the switch the machines' NICs are ports of, which Neutron's networking-generic-switch (NGS)
configures as it would a top-of-rack switch (:mod:`harness.neutron`). Needs root (``ip netns``) and Debian's
``openvswitch-switch`` and ``ethtool`` (``scripts/install-system-packages.sh networks``); the kernel's Open vSwitch
module is not used.

A :class:`Switch` is

- a network namespace ``bmt-<owner pid>-sw<n>`` (the prefix and owner PID of :mod:`harness.machines`, whose
  :func:`~harness.machines.sweep_stale` therefore removes what a session killed with SIGKILL left, the switch's
  processes with it) in which ``ovsdb-server`` and ``ovs-vswitchd`` run with their own database, run directory
  and logs (``OVS_RUNDIR``): two userspace switches in one namespace collide on their tap devices, one per
  namespace does not. The bridge :data:`BRIDGE` has ``datapath_type=netdev`` (the userspace datapath: the
  kernel module is never loaded) and learns as a plain switch (``NORMAL``);
- its **management access**: SSH as root with a per-switch key on a loopback port, what NGS's
  ``netmiko_ovs_linux`` logs in to and runs ``ovs-vsctl`` in. Each connection gets its own ``sshd -i`` started
  inside the switch's namespace (as systemd's socket-activated ``ssh.socket`` does), its configuration sending
  the session's ``ovs-vsctl`` to this switch's database (``SetEnv OVS_RUNDIR``); the listening socket is a
  thread of the test process, so it goes with it;
- **ports**: :meth:`Switch.add_host` makes an :class:`Endpoint`, a network namespace
  ``bmt-<owner pid>-sw<n>-<name>`` with an ``eth0`` whose veth peer is a switch port of the given name (the
  ``port_id`` of a ``local_link_information``), in the switch's :attr:`~Switch.quarantine_vlan` until NGS moves
  it (the owner's switch configuration for unused ports); :meth:`Switch.add_gateway` makes one whose port the
  owner pinned to a VLAN (an access port for what the owner routes for a tenant). TX checksum offload is off on
  ``eth0``: with it on, frames leave the veth with partial checksums that the userspace datapath passes on
  unfinished, and every TCP connection through the switch hangs while ICMP works. :meth:`Switch.plug_nic` plugs
  a NIC of a namespace made elsewhere (a test-bed machine's, :class:`harness.machines.TestBed` with ``switch``)
  into a new port in quarantine the same way.

:meth:`Switch.stop` (also registered with :mod:`atexit`) stops the services and the SSH sessions and deletes the
namespaces (their veths go with them). :mod:`harness.traffic` proves what reaches what.
"""

from __future__ import annotations

import atexit
import dataclasses
import itertools
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

from . import machines, procs

BRIDGE = "bmtsw"  # the OVS bridge; its name is local to the switch's namespace
SCHEMA = Path("/usr/share/openvswitch/vswitch.ovsschema")
QUARANTINE_VLAN = 999  # where unused and released ports wait (NGS's ngs_port_default_vlan)
_SWITCHES = itertools.count()
# SSH for NGS: keys only, root, no PAM (no login session in a namespace), the session's ovs-vsctl on this switch.
_SSHD_CONFIG = """\
HostKey {dir}/ssh_host_ed25519_key
AuthorizedKeysFile {dir}/authorized_keys
AllowUsers root
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
# The key and its directory are pytest's, under /tmp (a world-writable parent, which StrictModes refuses).
StrictModes no
PrintMotd no
PrintLastLog no
PidFile none
SetEnv OVS_RUNDIR={rundir}
LogLevel INFO
"""


class SwitchError(RuntimeError):
    """The switch or a port could not be set up or read; the message says which and why."""


def _run(argv: list[str], what: str, env: dict | None = None, timeout: float = 30) -> str:
    result = subprocess.run(argv, capture_output=True, text=True, check=False, env=env, timeout=timeout)
    if result.returncode != 0:
        raise SwitchError(f"{what}: {' '.join(argv)}: exit {result.returncode}: {result.stderr.strip()}")
    return result.stdout


def require_ovs() -> None:
    """Fail with the way out when Open vSwitch or ethtool is not installed."""
    missing = [p for p in ("/usr/sbin/ovs-vswitchd", "/usr/sbin/ovsdb-server", "/sbin/ethtool") if not Path(p).exists()]
    if missing or not SCHEMA.exists():
        raise SwitchError(f"missing {missing or [str(SCHEMA)]}: run scripts/install-system-packages.sh networks")


def new_key(path: Path) -> Path:
    """A new ed25519 key pair at ``path`` (and ``path.pub``); returns ``path``."""
    _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"{path.name}@test", "-f", str(path)], "ssh-keygen")
    return path


def ssh_login_works(switch: Switch, key: Path) -> bool:
    """Whether ``key`` logs in to the switch's management SSH as root and runs ``ovs-vsctl`` there."""
    argv = ["ssh", "-i", str(key), "-p", str(switch.ssh_port), "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes"]
    argv += ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"]
    result = subprocess.run(
        [*argv, f"root@{procs.LOOPBACK}", "ovs-vsctl", "br-exists", BRIDGE],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    return result.returncode == 0


@dataclasses.dataclass
class Endpoint:
    """A network namespace whose ``eth0`` is plugged into a switch port: a machine's NIC or a gateway."""

    name: str
    port: str  # the switch port (the veth's other end, in the switch's namespace)
    netns: str
    address: str  # "a.b.c.d/prefix" on eth0
    mac: str

    @property
    def ip(self) -> str:
        return self.address.split("/")[0]

    def exec(self, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
        """Run a command in the endpoint's network namespace."""
        return subprocess.run(
            ["ip", "netns", "exec", self.netns, *argv], capture_output=True, text=True, check=False, timeout=timeout
        )


class Switch:
    """An Open vSwitch in userspace with SSH management and its ports: see the module documentation."""

    def __init__(self, workdir: str | os.PathLike, quarantine_vlan: int = QUARANTINE_VLAN):
        require_ovs()
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.owner = os.getpid()
        self.quarantine_vlan = quarantine_vlan
        self.name = f"sw{next(_SWITCHES)}"
        self.netns = f"{machines.PREFIX}{self.owner}-{self.name}"
        self.rundir = self.workdir / "run"
        self.env = {**os.environ, "OVS_RUNDIR": str(self.rundir), "OVS_DBDIR": str(self.rundir)}
        self.endpoints: dict[str, Endpoint] = {}
        self._ports: set[str] = set()  # ports of other namespaces' NICs (plug_nic)
        self.procs: list[procs.Proc] = []
        self.ssh_port: int | None = None
        self.ssh_key: Path | None = None  # NGS's private key (root on the switch)
        self.seconds = 0.0  # start-up time
        self._listener: socket.socket | None = None
        self._sessions: list[subprocess.Popen] = []
        self._lock = threading.Lock()
        self._stopped = False
        self._fault: str | None = None  # ssh_fault()
        self._held: list[socket.socket] = []  # connections a hanging switch holds
        self._addresses = itertools.count(10)
        self._jumps = itertools.count()

    # -- start ---------------------------------------------------------------

    def start(self) -> Switch:
        """Create the namespace, start ovsdb-server, ovs-vswitchd and the SSH listener, make the bridge."""
        started = time.monotonic()
        atexit.register(self.stop)
        with machines.host_lock():
            machines.sweep_stale()
            machines.ip("netns", "add", self.netns)
        machines.ip("-n", self.netns, "link", "set", "lo", "up")
        self.rundir.mkdir(parents=True, exist_ok=True)
        _run(["ovsdb-tool", "create", str(self.rundir / "conf.db"), str(SCHEMA)], "ovsdb-tool create")
        in_ns = ["ip", "netns", "exec", self.netns]
        server = procs.start_process(
            "ovsdb-server",
            [
                *in_ns,
                "ovsdb-server",
                str(self.rundir / "conf.db"),
                f"--remote=punix:{self.db_socket}",
                f"--unixctl={self.rundir / 'ovsdb-server.ctl'}",
                f"--log-file={self.workdir / 'ovsdb-server.log'}",
            ],
            self.workdir,
            env=self.env,
        )
        self.procs.append(server)
        self._wait_socket(self.db_socket, server)
        self.vsctl("--no-wait", "init")
        vswitchd = procs.start_process(
            "ovs-vswitchd",
            [
                *in_ns,
                "ovs-vswitchd",
                f"unix:{self.db_socket}",
                f"--unixctl={self.rundir / 'ovs-vswitchd.ctl'}",
                f"--log-file={self.workdir / 'ovs-vswitchd.log'}",
            ],
            self.workdir,
            env=self.env,
        )
        self.procs.append(vswitchd)
        # The first change waits for ovs-vswitchd to apply it: the bridge exists once this returns.
        self.vsctl("add-br", BRIDGE, "--", "set", "bridge", BRIDGE, "datapath_type=netdev", timeout=30)
        machines.ip("-n", self.netns, "link", "set", BRIDGE, "up")
        self._start_ssh()
        self.seconds = time.monotonic() - started
        return self

    @property
    def db_socket(self) -> Path:
        return self.rundir / "db.sock"

    def _wait_socket(self, path: Path, proc: procs.Proc, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while not path.exists():
            if not proc.alive() or time.monotonic() > deadline:
                raise SwitchError(f"{proc.name}: no socket {path} after {timeout:.0f}s\n{proc.log_tail()}")
            time.sleep(0.05)

    def _start_ssh(self) -> None:
        sshdir = self.workdir / "ssh"
        sshdir.mkdir(exist_ok=True)
        _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(sshdir / "ssh_host_ed25519_key")], "host key")
        self.ssh_key = new_key(sshdir / "ngs_key")
        (sshdir / "authorized_keys").write_text(self.ssh_key.with_suffix(".pub").read_text())
        (sshdir / "sshd_config").write_text(_SSHD_CONFIG.format(dir=sshdir, rundir=self.rundir))
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation directory
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind((procs.LOOPBACK, 0))
        self._listener.listen(16)
        self.ssh_port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, name=f"switch-{self.name}-ssh", daemon=True).start()

    def _accept(self) -> None:
        argv = [
            "ip",
            "netns",
            "exec",
            self.netns,
            "/usr/sbin/sshd",
            "-i",
            "-e",
            "-f",
            str(self.workdir / "ssh" / "sshd_config"),
        ]
        while True:
            try:
                conn, unused_peer = self._listener.accept()
            except OSError:  # closed by stop()
                return
            with self._lock:
                if self._fault == "hang":
                    self._held.append(conn)
                    continue
            if self._fault == "refuse":
                conn.close()
                continue
            with conn, self._lock, open(self.workdir / "sshd.log", "ab") as log:
                if self._stopped:
                    return
                self._sessions = [s for s in self._sessions if s.poll() is None]
                self._sessions.append(
                    subprocess.Popen(argv, stdin=conn, stdout=conn, stderr=log, env=self.env, start_new_session=True)
                )

    def ssh_fault(self, mode: str | None) -> None:
        """Make the switch's management SSH fail until ``mode`` is ``None`` again: ``refuse`` closes each new
        connection at once (before the SSH banner, as a switch whose SSH service is down behind its listener),
        ``hang`` accepts it and never answers (a switch too busy to talk); held connections close when it ends.
        Sessions already open carry on."""
        if mode not in (None, "refuse", "hang"):
            raise ValueError(f"switch {self.name}: no SSH fault {mode!r}")
        with self._lock:
            self._fault = mode
            held, self._held = (self._held, []) if mode != "hang" else ([], self._held)
        for conn in held:
            conn.close()

    # -- configuration (the owner's, beside what NGS does) ---------------------

    def vsctl(self, *args: str, timeout: float = 10) -> str:
        """``ovs-vsctl`` on this switch's database; returns its output."""
        argv = ["ovs-vsctl", f"--db=unix:{self.db_socket}", f"--timeout={int(timeout)}", *args]
        return _run(argv, f"switch {self.name}", env=self.env, timeout=timeout + 5).strip()

    def port_vlan(self, port: str) -> int | None:
        """The port's access VLAN (``tag``), ``None`` when it has none (a trunk of every VLAN)."""
        tag = self.vsctl("get", "port", port, "tag")
        return None if tag in ("[]", "") else int(tag)

    def wait_port_vlan(self, port: str, vlan: int | None, timeout: float = 60) -> None:
        """Poll until the port's access VLAN is ``vlan`` (NGS changes it over SSH)."""
        deadline = time.monotonic() + timeout
        while True:
            seen = self.port_vlan(port)
            if seen == vlan:
                return
            if time.monotonic() > deadline:
                raise SwitchError(f"switch {self.name} port {port}: VLAN {seen}, not {vlan} after {timeout:.0f}s")
            time.sleep(0.2)

    # -- ports -------------------------------------------------------------------

    def add_host(self, name: str, address: str | None = None) -> Endpoint:
        """A namespace plugged into a new port ``name`` (at most 15 characters), in the quarantine VLAN."""
        return self._plug(name, address, self.quarantine_vlan)

    def add_gateway(self, name: str, vlan: int, address: str | None = None) -> Endpoint:
        """A namespace plugged into a new port ``name`` that the owner pins to ``vlan``: a tenant's gateway."""
        return self._plug(name, address, vlan)

    def add_jump_host(self, gateway: Endpoint, authorized_key: str) -> str:
        """Make ``gateway`` a tenant's jump host: a veth between the host (the test controller) and the gateway's
        namespace on a link-local /30 of its own, and an ``sshd`` in the namespace on its end that lets in root
        with ``authorized_key``. Returns that address (``ProxyJump root@<address>``). Through it the controller
        reaches the tenant's network the way the tenant does, while itself staying on no tenant VLAN."""
        index = next(self._jumps)
        if index >= 4:
            raise SwitchError(f"switch {self.name}: four jump hosts at most (a /28 of link-local addresses each)")
        workdir = self.workdir / f"jump-{gateway.name}"
        workdir.mkdir(parents=True, exist_ok=True)
        # a /30 per jump host and per test process: sessions side by side do not collide
        block = (self.owner * 16 + index * 4) % 65536
        host_ip, jump_ip = (f"169.254.{block // 256}.{block % 256 + n}" for n in (1, 2))
        link = f"bj{self.owner % 100000}{index}"
        machines.ip("link", "add", link, "type", "veth", "peer", "name", "jump0", "netns", gateway.netns)
        machines.ip("address", "add", f"{host_ip}/30", "dev", link)
        machines.ip("link", "set", link, "up")
        machines.ip("-n", gateway.netns, "address", "add", f"{jump_ip}/30", "dev", "jump0")
        machines.ip("-n", gateway.netns, "link", "set", "jump0", "up")
        _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(workdir / "ssh_host_ed25519_key")], "host key")
        (workdir / "authorized_keys").write_text(authorized_key.strip() + "\n")
        config = _SSHD_CONFIG.format(dir=workdir, rundir=self.rundir) + f"ListenAddress {jump_ip}\n"
        (workdir / "sshd_config").write_text(config)
        argv = ["ip", "netns", "exec", gateway.netns, "/usr/sbin/sshd", "-D", "-e", "-f", str(workdir / "sshd_config")]
        proc = procs.start_process(f"jump-{gateway.name}", argv, workdir)
        self.procs.append(proc)
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection((jump_ip, 22), timeout=1).close()
                return jump_ip
            except OSError as exc:
                if not proc.alive() or time.monotonic() > deadline:
                    raise SwitchError(
                        f"jump host {gateway.name}: sshd not up on {jump_ip} ({exc})\n{proc.log_tail()}"
                    ) from exc
                time.sleep(0.1)

    def plug_nic(self, port: str, netns: str, ifname: str, mac: str) -> None:
        """Another namespace's NIC (a test-bed machine's, :mod:`harness.machines`) on a new port ``port``, in the
        quarantine VLAN: the veth's other end is ``ifname`` in ``netns`` with ``mac``, TX checksum offload off
        (see above). The pair goes when either namespace is deleted."""
        self._check_port_name(port)
        self._ports.add(port)
        machines.ip("-n", self.netns, "link", "add", port, "type", "veth", "peer", "name", ifname, "netns", netns)
        machines.ip("-n", netns, "link", "set", ifname, "address", mac)
        _run(["ip", "netns", "exec", netns, "ethtool", "-K", ifname, "tx", "off"], f"NIC {ifname}: TX offload off")
        machines.ip("-n", self.netns, "link", "set", port, "up")
        tag = f"tag={self.quarantine_vlan}"
        self.vsctl("add-port", BRIDGE, port, "--", "set", "port", port, "vlan_mode=access", tag)

    def _check_port_name(self, name: str) -> None:
        if len(name) > 15 or not name.replace("-", "").isalnum():
            raise SwitchError(f"switch port name {name!r}: letters, digits and '-', at most 15 characters")
        if name in self.endpoints or name in self._ports or name == BRIDGE:
            raise SwitchError(f"switch {self.name}: a port named {name} exists")

    def _plug(self, name: str, address: str | None, vlan: int) -> Endpoint:
        self._check_port_name(name)
        netns = f"{self.netns}-{name}"
        address = address or f"10.251.0.{next(self._addresses)}/24"
        machines.ip("netns", "add", netns)
        endpoint = Endpoint(name, name, netns, address, "")
        self.endpoints[name] = endpoint
        machines.ip("-n", self.netns, "link", "add", name, "type", "veth", "peer", "name", "eth0", "netns", netns)
        for argv in (
            ("link", "set", "lo", "up"),
            ("address", "add", address, "dev", "eth0"),
            ("link", "set", "eth0", "up"),
        ):
            machines.ip("-n", netns, *argv)
        _run(["ip", "netns", "exec", netns, "ethtool", "-K", "eth0", "tx", "off"], f"endpoint {name}: TX offload off")
        machines.ip("-n", self.netns, "link", "set", name, "up")
        self.vsctl("add-port", BRIDGE, name, "--", "set", "port", name, "vlan_mode=access", f"tag={vlan}")
        endpoint.mac = machines.ip("-n", netns, "-br", "link", "show", "eth0").stdout.split()[2]
        return endpoint

    # -- stop ----------------------------------------------------------------------

    def stop(self) -> None:
        """Stop the SSH sessions and the services, delete the namespaces. Idempotent."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            sessions = list(self._sessions)
            held, self._held = self._held, []
        for conn in held:
            conn.close()
        if self._listener is not None:
            self._listener.close()
        for session in sessions:
            if session.poll() is None:
                session.kill()
            session.wait(10)
        for proc in reversed(self.procs):
            proc.stop(timeout=5)
        for endpoint in self.endpoints.values():
            machines._kill_netns_processes(endpoint.netns)
            machines.ip("netns", "delete", endpoint.netns, check=False)
        machines._kill_netns_processes(self.netns)
        machines.ip("netns", "delete", self.netns, check=False)
        atexit.unregister(self.stop)

    def leftovers(self) -> list[str]:
        """What of this switch is still on the host (namespaces, processes): empty once stopped."""
        left = [n for n in machines.netns_list() if n == self.netns or n.startswith(self.netns + "-")]
        left += [f"pid {p.pid} ({p.name})" for p in self.procs if p.alive()]
        left += [f"pid {s.pid} (sshd -i)" for s in self._sessions if s.poll() is None]
        return left
