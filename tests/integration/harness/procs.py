"""Generic process helpers for the integration harness.

Small, dependency-free API (stdlib only) shared by every service module:

- ``free_port() -> int``: a currently unused TCP port on 127.0.0.1.
- ``start_process(name, argv, workdir, env=None) -> Proc``: start ``argv`` in
  its own session with stdout+stderr appended to ``<workdir>/<name>.log``.
- ``Proc``: ``.name``, ``.pid``, ``.log_path``, ``.alive()``, ``.log_tail()``,
  ``.stop(timeout=10)`` (SIGTERM to the process group, then SIGKILL),
  ``.restart()`` (stop, then the same command again, as a service manager restarts it;
  the caller waits for it to be ready).
- ``wait_http(url, timeout, proc=None, ok_statuses=range(200, 500))``: poll a
  URL until it answers with one of ``ok_statuses``.
- ``wait_tcp(host, port, timeout, proc=None)``: poll until a TCP connect works.
- ``StartDeadline(timeout, proc=None)``: when those waits (and the services' own) give up: the time-out, extended
  while ``proc``'s processes keep using CPU on a loaded machine.
- ``Service``: a record of a started service (name, version, url, port, pid).
- ``ServiceStartError``: raised by the waiters; its message carries the log tail.
- ``record_service(service)`` / ``recorded_services()``: a process-wide list of
  the services this test session started; the pytest plugin
  (``fixtures_openstack.pytest_terminal_summary``) prints it once at the end,
  so other fixture modules should record their services here, not print them.

Only processes started here are ever signalled, by their own PID/process group.
"""

from __future__ import annotations

import dataclasses
import os
import random
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Container, Mapping, Sequence
from pathlib import Path

LOOPBACK = "127.0.0.1"


class ServiceStartError(RuntimeError):
    """A service did not become ready; the message includes its log tail."""


#: where free_port looks: below Linux's ephemeral range (32768-60999 by default), which the kernel hands to every
#: outgoing connection. A port picked inside it (bind to port 0, then closed) could be taken by any client socket
#: before the service binds it: with six sessions starting services at once, Ironic's image server once found its
#: port so taken ("Address already in use") and the session's BMO stack failed to start.
PORT_RANGE = (20000, 32000)
_GIVEN: set[int] = set()


def free_port() -> int:
    """Return a TCP port that is free on 127.0.0.1 right now and was not given before in this process.

    Picked at random in :data:`PORT_RANGE`, outside the kernel's ephemeral range: no outgoing connection takes it
    before the service binds it; another test process picking the same port in that moment is a chance of about one
    in ten thousand per pick (ports in use fail the bind check and are skipped).
    """
    low, high = PORT_RANGE
    span = high - low
    start = random.SystemRandom().randrange(span)
    for offset in range(span):
        port = low + (start + offset) % span
        if port in _GIVEN:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((LOOPBACK, port))
            except OSError:
                continue
        _GIVEN.add(port)
        return port
    raise ServiceStartError("no free TCP port in %d-%d on %s" % (low, high, LOOPBACK))


@dataclasses.dataclass
class Service:
    """What a started service looks like to tests and to the summary printout."""

    name: str
    version: str
    url: str
    port: int
    pid: int | None = None

    def summary(self) -> str:
        return f"{self.name} {self.version} at {self.url} (port {self.port}, pid {self.pid})"


_RECORDED: list[Service] = []


def record_service(service: Service) -> Service:
    """Remember ``service`` for the end-of-session summary; returns it."""
    _RECORDED.append(service)
    return service


def recorded_services() -> list[Service]:
    return list(_RECORDED)


class Proc:
    """A process started by :func:`start_process`."""

    def __init__(self, name: str, popen: subprocess.Popen, log_path: Path, command: tuple | None = None):
        self.name = name
        self.popen = popen
        self.pid = popen.pid
        self.log_path = log_path
        self._command = command  # (argv, workdir, env) it was started with

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        """The last ``lines`` lines of the process log (for error messages)."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError as exc:
            return f"<cannot read {self.log_path}: {exc}>"
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM the process group we created, wait, then SIGKILL it."""
        if self.popen.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self.popen.wait(timeout)
        # Workers left behind in the group (e.g. gunicorn children) get SIGKILL.
        # The group id cannot be reused while any of them is alive.
        self._signal(signal.SIGKILL)

    def restart(self, timeout: float = 10.0) -> None:
        """Stop the process (SIGTERM, as :meth:`stop`), then start the same command in place (same argv,
        directory and environment; its log appended to): this object then stands for the new process."""
        self.stop(timeout)
        argv, workdir, env = self._command
        self.popen = _spawn(argv, workdir, env, self.log_path)
        self.pid = self.popen.pid

    def _signal(self, sig: int) -> None:
        # The child was started with start_new_session=True, so its process
        # group id is its own pid: this reaches only what we started.
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def __repr__(self) -> str:
        return f"Proc({self.name!r}, pid={self.pid}, log={str(self.log_path)!r})"


def _children(pid: int) -> list[int] | None:
    """The children of ``pid``, from the ``children`` file of each of its threads (``None``: the kernel has no such
    file). A child forked or reaped while the file is read may be missed: the callers poll, or stop the processes
    found before they look again."""
    try:
        threads = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return []
    found = []
    for thread in threads:
        try:
            found.extend(int(child) for child in Path("/proc/%d/task/%s/children" % (pid, thread)).read_text().split())
        except FileNotFoundError:
            if not os.path.exists("/proc/%d/task/%s" % (pid, thread)):
                continue  # the thread ended
            return None
        except OSError:
            continue
    return found


def process_tree(pid: int) -> list[int]:
    """``pid`` and all its descendants, read from /proc (``pid`` first). Processes that left their parent's
    process group or session (``setsid``: ansible's workers, ansible-runner's jobs) are in it too.

    Each process's ``children`` files are read, a few files per process of the tree: the fault suites look for a
    module's process every 20 ms while it runs, and reading the parent of every process on the machine instead
    (about 300 to 600) took 6 to 12 ms of CPU each time, a third of a core while a module ran. Without those files
    (a kernel built without ``CONFIG_PROC_CHILDREN``), the parent of every process is read."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        children = _children(current)
        if children is None:
            return process_tree_by_parents(pid)
        found.append(current)
        todo.extend(children)
    return found


def cpu_seconds(pid: int, reaped_children: bool = False) -> float:
    """User + system CPU seconds of process ``pid`` (``/proc/<pid>/stat``), with ``reaped_children`` those of the
    children it has waited for too; 0 when there is no such process."""
    try:
        fields = Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(value) for value in fields[11 : 15 if reaped_children else 13]) / os.sysconf("SC_CLK_TCK")


def runs_ansible_module(pid: int, module: str) -> bool:
    """Whether process ``pid`` is an Ansible module's own process: the script its interpreter runs (its first
    argument) is the module's ``AnsiballZ_<module>.py`` (``python .../AnsiballZ_host_claim.py``). A shell whose
    command names that file (``/bin/sh -c 'chmod u+x .../AnsiballZ_host_claim.py && sleep 0'``) is not."""
    try:
        argv = Path("/proc/%d/cmdline" % pid).read_bytes().split(b"\0")
    except OSError:
        return False
    return len(argv) > 1 and argv[1].endswith(("/AnsiballZ_%s.py" % module).encode())


def process_tree_by_parents(pid: int) -> list[int]:
    """:func:`process_tree` from the parent of every process on the machine (where a kernel has no children
    files; and the way to check them)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path("/proc/%s/stat" % entry).read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def start_process(
    name: str,
    argv: Sequence[str],
    workdir: str | os.PathLike,
    env: Mapping[str, str] | None = None,
) -> Proc:
    """Start ``argv`` in ``workdir`` with output to ``<workdir>/<name>.log``.

    ``env`` entries are added to (and override) the current environment.
    The process gets its own session so :meth:`Proc.stop` can signal its whole
    group without touching anything else.
    """
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    log_path = workdir / f"{name}.log"
    full_env = dict(os.environ)
    full_env.update(env or {})
    popen = _spawn(argv, workdir, full_env, log_path)
    return Proc(name, popen, log_path, (list(argv), workdir, full_env))


def _spawn(argv: Sequence[str], workdir: Path, env: Mapping[str, str], log_path: Path) -> subprocess.Popen:
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            list(argv),
            cwd=workdir,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


#: a start may take this many times its time-out while its processes keep working (:class:`StartDeadline`)
STARVED_LIMIT = 4
#: the CPU share (core-seconds a second) a process tree must keep using past its time-out to count as working: above
#: an idle Ironic's 10-15 ms a second (its periodic tasks), below the 50 ms a second one process gets at load 40 on
#: two cores
WORKING_SHARE = 0.02


class StartDeadline:
    """When a wait for a starting process ``proc`` gives up: ``timeout`` seconds, and past them for as long as the
    process and its children keep using CPU, up to :data:`STARVED_LIMIT` times the time-out.

    At CI's load (eight sessions, the checks and molecule on two cores) a start gets a small share of a core: an
    Ironic, which needs about 10 CPU-s before it answers, once had not answered after 120 s and was working all
    along. Past the time-out, the process tree's CPU is read every quarter of the time-out; the wait ends once a
    quarter passed in which it used less than :data:`WORKING_SHARE` of a core, as a process stuck waiting on
    something does. Without ``proc``, or once it has exited, the time-out is plain wall time.
    """

    def __init__(self, timeout: float, proc: Proc | None = None):
        self.timeout = timeout
        self.proc = proc
        self.started = time.monotonic()
        self._window = timeout / 4
        self._next_reading = self.started + timeout - self._window  # a first reading one window before the time-out
        self._cpu: float | None = None

    def expired(self) -> bool:
        now = time.monotonic()
        if self.proc is None or not self.proc.alive():
            return now > self.started + self.timeout
        if now > self.started + STARVED_LIMIT * self.timeout:
            return True
        if now < self._next_reading:
            return False
        previous, self._cpu = self._cpu, self.tree_cpu()
        self._next_reading = now + self._window
        return previous is not None and self._cpu - previous < WORKING_SHARE * self._window

    def tree_cpu(self) -> float:
        """CPU seconds of ``proc`` and its descendants (with the children each reaped)."""
        return sum(cpu_seconds(pid, reaped_children=True) for pid in process_tree(self.proc.pid)) if self.proc else 0

    def describe(self) -> str:
        """How long the wait took and, with a process, the CPU it got and the machine's load."""
        text = f"{time.monotonic() - self.started:.0f}s"
        if self.proc is not None:
            load = Path("/proc/loadavg").read_text().split()[0]
            text += f" (its processes used {self.tree_cpu():.1f} CPU-s; load {load})"
        return text


def _fail(what: str, deadline: StartDeadline, detail: str) -> ServiceStartError:
    proc = deadline.proc
    msg = f"{what} not ready after {deadline.describe()}: {detail}"
    if proc is not None:
        state = "running" if proc.alive() else f"exited with {proc.popen.returncode}"
        msg += f"\n--- {proc.name} (pid {proc.pid}, {state}) log {proc.log_path} ---\n{proc.log_tail()}"
    return ServiceStartError(msg)


def wait_http(
    url: str,
    timeout: float,
    proc: Proc | None = None,
    ok_statuses: Container[int] = range(200, 500),
) -> int:
    """Poll ``url`` (GET) until its status is in ``ok_statuses``; return it.

    Raises :class:`ServiceStartError` when the :class:`StartDeadline` of ``timeout`` and ``proc`` expires, or early
    if ``proc`` exits.
    """
    deadline = StartDeadline(timeout, proc)
    last = "no attempt"
    while True:
        if proc is not None and not proc.alive():
            raise _fail(url, deadline, "process exited")
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                status = resp.status
        except urllib.error.HTTPError as exc:
            status = exc.code
        except (OSError, urllib.error.URLError) as exc:
            status, last = None, repr(exc)
        if status is not None:
            if status in ok_statuses:
                return status
            last = f"HTTP {status}"
        if deadline.expired():
            raise _fail(url, deadline, last)
        time.sleep(0.2)


def wait_tcp(host: str, port: int, timeout: float, proc: Proc | None = None) -> None:
    """Poll until a TCP connection to ``host:port`` succeeds (within the :class:`StartDeadline` of ``timeout`` and
    ``proc``)."""
    deadline = StartDeadline(timeout, proc)
    last = "no attempt"
    while True:
        if proc is not None and not proc.alive():
            raise _fail(f"{host}:{port}", deadline, "process exited")
        try:
            with socket.create_connection((host, port), timeout=2):
                return
        except OSError as exc:
            last = repr(exc)
        if deadline.expired():
            raise _fail(f"{host}:{port}", deadline, last)
        time.sleep(0.2)
