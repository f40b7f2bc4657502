#!/usr/bin/env python
# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Test bed: the modules' interpreter started once per pytest session, each module run in a fork of it.

A module's process spends most of its CPU importing the same libraries every time: an Ironic module about 1.0 s of
CPU on this machine kind, 0.9 s of it imports (openstacksdk, keystoneauth, requests); a Metal3 module 0.4 s;
``ping`` 0.2 s. The integration suites run modules about 2,400 times. Here one interpreter of the modules' venv
(``.venv-modules``) imports those libraries once (:data:`PRELOAD`) and waits on a Unix socket; in the integration
suites (unless ``BMT_MODULE_ZYGOTE=0``) the harness points ``ANSIBLE_PYTHON_INTERPRETER`` at a small client (written
by ``serve``), which Ansible runs as it would run Python::

    /bin/sh -c '<client> /.../AnsiballZ_host_claim.py && sleep 0'

The client hands its arguments, environment, working directory, umask and standard streams (the descriptors
themselves, ``SCM_RIGHTS``) to the server, which forks; the fork forks the module's process, which takes them on,
reloads the modules that read the environment or the working directory when imported (:data:`RELOAD`), and runs
the AnsiballZ script as ``__main__``, as ``python script`` would. The client waits and ends as the module's process
ended (its exit status, or the same signal). The module's code, its arguments and its output are the same; only
the imports of :data:`PRELOAD` are done once.

What a fork cannot be is a child of the client: the module's process is not under ``ansible-playbook`` in the
process tree. Signals the client can catch (TERM, INT, HUP, QUIT, USR1, USR2) are passed on to the module's
process group; when the client ends any other way (SIGKILL), the module's process sees its connection close and
kills its process group at once. Tests that kill a playbook's process tree and look at what the module did
(``fixtures_faults.KillablePlaybook``) run the real interpreter instead. A client in another network namespace
(a test-bed machine reached over SSH) or of another user runs the real interpreter too, and so does any client
whose server does not answer.

    python scripts/module_zygote.py serve SOCKET CLIENT [--preload M,M] [--reload M,M]   # the harness starts it
    python scripts/module_zygote.py serve SOCKET CLIENT --preload-deps-of M,M --reload ''   # Ansible's controller

The second form serves Ansible's controller (``ansible-playbook``, ``ansible-inventory``) from the test venv: it
preloads what importing ``ansible.cli.playbook`` imports but ``ansible`` itself (:func:`dependencies`): Jinja2,
PyYAML, cryptography, the standard library's share; about 0.3 s of CPU of the 0.6 s a controller spends importing.
Ansible's own modules are left to each run: ``ansible.constants`` and the plugin loaders read the configuration and
the environment when imported.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import runpy
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import traceback

#: imported by the server before it serves: what the modules import that costs most (openstacksdk with keystoneauth
#: and requests for Ironic; urllib3 and PyYAML for the collection's Metal3 modules; the kubernetes library for
#: kubernetes.core's; sushy for Redfish)
PRELOAD = ("openstack.connection", "urllib3", "yaml", "kubernetes.dynamic", "kubernetes.config", "sushy")
#: modules that read the environment or the working directory when imported, re-run in each module's process in
#: this order: openstacksdk's clouds.yaml search path (the working directory, $HOME), stevedore's cache directory
#: ($XDG_CACHE_HOME, $HOME), the kubernetes library's default kubeconfig ($KUBECONFIG), and the package that
#: imported that name
RELOAD = ("openstack.config.loader", "stevedore._cache", "kubernetes.config.kube_config", "kubernetes.config")
#: the signals a client passes on
FORWARDED = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")
#: the most a request may hold (arguments and environment)
MAX_REQUEST = 4 << 20

CLIENT = """\
#!{python} -SI
# The test bed's module interpreter client (scripts/module_zygote.py): hands this run to the server, or runs
# {python} itself when the server cannot take it.
import json, os, signal, socket, struct, sys

PYTHON = {python!r}
SOCKET = {socket!r}
NETNS = {netns!r}
UID = {uid!r}


def real():
    os.execv(PYTHON, [PYTHON] + sys.argv[1:])


def receive(sock, size):
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


try:
    if os.getuid() != UID or os.stat("/proc/self/ns/net").st_ino != NETNS:
        real()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(SOCKET)
except OSError:
    real()
try:
    cwd = os.getcwd()
except OSError:
    cwd = None
mask = os.umask(0)
os.umask(mask)
ignored = [name for name in {forwarded!r} if signal.getsignal(getattr(signal, name)) == signal.SIG_IGN]
request = json.dumps(
    {{"argv": sys.argv[1:], "env": dict(os.environ), "cwd": cwd, "umask": mask, "ignored": ignored}},
    ensure_ascii=True,
).encode()
try:
    socket.send_fds(sock, [struct.pack("!I", len(request)) + request], [0, 1, 2])
    pid = receive(sock, 4)
except OSError:
    pid = None
if pid is None:
    sock.close()
    real()


def forward(number, frame):
    try:
        sock.sendall(bytes([number]))
    except OSError:
        pass


for name in {forwarded!r}:
    if name not in ignored:
        signal.signal(getattr(signal, name), forward)
status = receive(sock, 4)
if status is None:
    os._exit(255)
status = struct.unpack("!i", status)[0]
if os.WIFSIGNALED(status):
    number = os.WTERMSIG(status)
    signal.signal(number, signal.SIG_DFL)
    os.kill(os.getpid(), number)
    os._exit(128 + number)
os._exit(os.waitstatus_to_exitcode(status))
"""


def _receive_request(conn: socket.socket) -> tuple[dict, list[int]]:
    msg, fds, _flags, _addr = socket.recv_fds(conn, 65536, 3)
    if len(msg) < 4:
        raise ValueError("short request")
    size = struct.unpack("!I", msg[:4])[0]
    if size > MAX_REQUEST:
        raise ValueError("request of %d bytes" % size)
    data = msg[4:]
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise ValueError("request cut short")
        data += chunk
    return json.loads(data), list(fds)


def _watch(conn: socket.socket) -> None:
    """In the module's process: pass on the client's signals; when the client is gone, kill the process group.

    This thread blocks the signals it passes on: the kernel gives a signal sent to the process to a thread that does
    not block it, and one taken by this thread would not wake the module's main thread from a blocking call (Python
    runs handlers there only once that call returns: a module sleeping through its SIGINT)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, [getattr(signal, name) for name in FORWARDED])
    while True:
        try:
            data = conn.recv(1)
        except OSError:
            data = b""
        if not data:
            os.killpg(os.getpid(), signal.SIGKILL)
            return
        for number in data:
            os.killpg(os.getpid(), number)


def _run_module(conn: socket.socket, request: dict, fds: list[int], reload: tuple[str, ...]) -> None:
    """The module's process: become what ``python <script>`` would have been, run the script, never return."""
    code = 1
    try:
        os.setpgid(0, 0)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        # the signals as the client's interpreter started with them: ignored where it had them ignored (a job
        # started with SIGINT ignored), else Python's defaults
        for name in FORWARDED:
            number = getattr(signal, name)
            if name in request.get("ignored", ()):
                signal.signal(number, signal.SIG_IGN)
            else:
                signal.signal(number, signal.default_int_handler if name == "SIGINT" else signal.SIG_DFL)
        if request.get("cwd"):
            try:
                os.chdir(request["cwd"])
            except OSError:
                pass
        os.umask(request["umask"])
        os.environ.clear()
        os.environ.update(request["env"])
        for name in reload:
            if name in sys.modules:
                importlib.reload(sys.modules[name])
        argv = request["argv"]
        sys.argv = list(argv)
        sys.path[0] = os.path.dirname(os.path.realpath(argv[0]))
        threading.Thread(target=_watch, args=(conn,), daemon=True).start()
        try:
            runpy.run_path(argv[0], run_name="__main__")
            code = 0
        except SystemExit as exc:
            if exc.code is None:
                code = 0
            elif isinstance(exc.code, int):
                code = exc.code
            else:
                print(exc.code, file=sys.stderr)
                code = 1
        except BaseException:  # what the interpreter would print for an uncaught exception
            traceback.print_exc()
            code = 1
        threading._shutdown()  # as at the interpreter's exit: wait for the threads the module left running
        import atexit

        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code & 0xFF)


def _handle(conn: socket.socket, reload: tuple[str, ...]) -> None:
    """The server's fork for one request: fork the module's process, tell the client its pid, then its status."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    try:
        request, fds = _receive_request(conn)
    except (OSError, ValueError):
        os._exit(1)
    pid = os.fork()
    if pid == 0:
        _run_module(conn, request, fds, reload)
    for fd in fds:
        os.close(fd)
    try:
        conn.sendall(struct.pack("!I", pid))
    except OSError:
        pass
    _dummy, status = os.waitpid(pid, 0)
    try:
        conn.sendall(struct.pack("!i", status))
    except OSError:
        pass
    os._exit(0)


def _reap(_number, _frame) -> None:
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def dependencies(modules: tuple[str, ...]) -> tuple[str, ...]:
    """The modules that importing ``modules`` imports, but those of their own top-level packages (which may read the
    environment or a configuration when imported) and the interpreter's private ones: asked of a fresh interpreter
    of this one, in the order they were imported."""
    own = {name.split(".")[0] for name in modules}
    code = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\nprint(*sys.modules)"
    done = subprocess.run([sys.executable, "-c", code, *modules], capture_output=True, text=True, check=True)
    return tuple(name for name in done.stdout.split() if name.split(".")[0] not in own and not name.startswith("_"))


def serve(path: str, client: str, preload: tuple[str, ...] = PRELOAD, reload: tuple[str, ...] = RELOAD) -> None:
    """Import ``preload`` (what cannot be imported by name is left out), write ``client`` and serve ``path`` until
    the process that started this one ends; each module's process re-runs the modules of ``reload`` it has."""
    parent = os.getppid()
    for name in preload:
        try:
            importlib.import_module(name)
        except Exception:  # an extension's submodule that is not importable by its name, or one that fails alone
            pass
    # what is loaded now stays out of the cyclic collector's passes, so that a fork's collections do not write to
    # (and so copy) every page of it
    gc.freeze()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if os.path.exists(path):
        os.unlink(path)
    old = os.umask(0o077)
    server.bind(path)
    os.umask(old)
    server.listen(128)
    text = CLIENT.format(
        python=sys.executable,
        socket=path,
        netns=os.stat("/proc/self/ns/net").st_ino,
        uid=os.getuid(),
        forwarded=FORWARDED,
    )
    partial = client + ".new"
    with open(partial, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(partial, 0o755)
    os.replace(partial, client)  # its existence says the server listens
    # each fork reaped as it ends, so that its CPU (and its module's) is the server's children's (cutime and cstime
    # in /proc/<server>/stat: what bench/test_bed.py reads)
    signal.signal(signal.SIGCHLD, _reap)
    while True:
        # the server ends with the process that started it (the pytest session): looked at every 5 s
        if not select.select([server], [], [], 5.0)[0]:
            if os.getppid() != parent:
                return
            continue
        try:
            conn, _addr = server.accept()
        except OSError:
            continue
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        if os.fork() == 0:
            server.close()
            _handle(conn, reload)
        conn.close()


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("command", choices=["serve"])
    parser.add_argument("socket")
    parser.add_argument("client")
    parser.add_argument("--preload", default=",".join(PRELOAD), help="modules to import first (comma-separated)")
    parser.add_argument("--reload", default=",".join(RELOAD), help="modules re-run in each module's process")
    parser.add_argument(
        "--preload-deps-of",
        default="",
        help="instead of --preload: what importing these modules imports, but their own packages (comma-separated)",
    )
    args = parser.parse_args()
    deps_of = tuple(filter(None, args.preload_deps_of.split(",")))
    serve(
        args.socket,
        args.client,
        dependencies(deps_of) if deps_of else tuple(filter(None, args.preload.split(","))),
        tuple(filter(None, args.reload.split(","))),
    )


if __name__ == "__main__":
    main()
