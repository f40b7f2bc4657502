"""The test bed's module zygote (scripts/module_zygote.py): a script run through its client behaves as under the real
interpreter (arguments, environment, working directory, umask, standard streams, exit status, uncaught exceptions,
signals), runs in a fork of the server (not in the client's process), sees the client's environment in the modules
the server reloads, dies when its client is killed, and runs under the real interpreter when the server cannot take
it. Each case starts a real server on a socket of its own."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "module_zygote.py"

# what a module would show of its process: prints JSON of its arguments, the variable ZY, its working directory,
# umask, pid, the first line of its standard input, and what the module ``envsnap`` read at import; then ends as
# its first argument says
PROBE = """
import json, os, signal, sys, time
mask = os.umask(0)
os.umask(mask)
snap = None
if "envsnap" in sys.modules:
    snap = sys.modules["envsnap"].AT_IMPORT
how = sys.argv[1]
if how == "sleep":
    try:
        open(sys.argv[2], "w").write(str(os.getpid()))
        time.sleep(60)
    except KeyboardInterrupt:
        print("interrupted")
        sys.exit(4)
line = sys.stdin.readline().strip()
print(json.dumps({"argv": sys.argv[1:], "zy": os.environ.get("ZY"), "cwd": os.getcwd(), "umask": mask,
                  "pid": os.getpid(), "stdin": line, "snap": snap, "path0": sys.path[0],
                  "pkgx": "pkgx" in sys.modules}))
sys.stdout.flush()
if how == "exit":
    sys.exit(int(sys.argv[2]))
if how == "message":
    sys.exit("a message")
if how == "raise":
    raise RuntimeError("boom")
"""


@contextlib.contextmanager
def serving(tmp_path: Path, *options: str):
    """A running server with ``options``, the modules ``envsnap`` (reads ZY when imported) and ``pkgx`` (imports
    envsnap) on its path, ZY=server; its client."""
    (tmp_path / "lib" / "pkgx").mkdir(parents=True, exist_ok=True)
    (tmp_path / "lib" / "envsnap.py").write_text("import os\nAT_IMPORT = os.environ.get('ZY')\n")
    (tmp_path / "lib" / "pkgx" / "__init__.py").write_text("import envsnap\n")
    client = tmp_path / "python"
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "lib"), ZY="server")
    argv = [sys.executable, str(SCRIPT), "serve", str(tmp_path / "socket"), str(client), *options]
    proc = subprocess.Popen(argv, env=env)
    deadline = time.monotonic() + 60
    while not client.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    (tmp_path / "probe.py").write_text(PROBE)
    try:
        yield client, tmp_path
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture
def zygote(tmp_path):
    """A running server preloading and reloading ``envsnap``; its client."""
    with serving(tmp_path, "--preload", "envsnap", "--reload", "envsnap") as served:
        yield served


def test_a_controller_zygote_preloads_what_a_package_imports_but_the_package(tmp_path):
    """``--preload-deps-of pkgx`` (as the harness serves Ansible's controller: ``ansible`` itself is imported by each
    run, as its modules read the configuration when imported): envsnap preloaded under the server's environment and
    not reloaded, pkgx left to the script."""
    with serving(tmp_path, "--preload-deps-of", "pkgx", "--reload", "") as (client, path):
        proc, seen = run_print(client, path)
    assert proc.returncode == 0
    assert seen["snap"] == "server"
    assert seen["pkgx"] is False


def run(client: Path, tmp_path: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    env = dict(os.environ, ZY="client")
    return subprocess.run(
        [str(client), str(tmp_path / "probe.py"), *args],
        input="hello\n",
        capture_output=True,
        text=True,
        env=env,
        cwd=str(tmp_path / "lib"),
        timeout=60,
        check=False,
        **kwargs,
    )


def run_print(client: Path, tmp_path: Path) -> tuple[subprocess.Popen, dict]:
    """The probe printing what it sees, under ZY=client; the client's process and what the probe saw."""
    proc = subprocess.Popen(
        [str(client), str(tmp_path / "probe.py"), "print"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, ZY="client"),
    )
    out, _err = proc.communicate("x\n", timeout=60)
    return proc, json.loads(out)


def test_a_script_sees_what_the_real_interpreter_would_give_it(zygote):
    client, tmp_path = zygote
    old = os.umask(0o027)
    try:
        done = run(client, tmp_path, "print", "two words")
    finally:
        os.umask(old)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["argv"] == ["print", "two words"]
    assert seen["zy"] == "client"
    assert seen["cwd"] == str(tmp_path / "lib")
    assert seen["umask"] == 0o027
    assert seen["stdin"] == "hello"
    assert seen["path0"] == str(tmp_path)
    assert seen["snap"] == "client"


def test_the_module_runs_in_a_fork_and_reloads_what_read_the_environment(zygote):
    client, tmp_path = zygote
    proc, seen = run_print(client, tmp_path)
    assert seen["pid"] != proc.pid
    assert seen["snap"] == "client"  # imported by the server under ZY=server, reloaded in the fork


@pytest.mark.parametrize(
    "args, code, stderr",
    [
        (("exit", "3"), 3, ""),
        (("message",), 1, "a message"),
        (("raise",), 1, "RuntimeError: boom"),
        (("print",), 0, ""),
    ],
)
def test_exit_status_and_uncaught_exceptions(zygote, args, code, stderr):
    client, tmp_path = zygote
    done = run(client, tmp_path, *args)
    assert done.returncode == code
    assert stderr in done.stderr
    assert json.loads(done.stdout)["argv"] == list(args)


def _wait_pid_file(path: Path) -> int:
    deadline = time.monotonic() + 30
    while not path.exists() or not path.read_text():
        assert time.monotonic() < deadline, "the script did not start"
        time.sleep(0.02)
    return int(path.read_text())


def _gone(pid: int, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


def _start_sleeper(client: Path, tmp_path: Path, sigint=signal.SIG_DFL) -> tuple[subprocess.Popen, int]:
    """The probe sleeping, its client started with SIGINT as ``sigint`` (a test runner may run with it ignored)."""
    pid_file = tmp_path / "pid"
    # a launcher sets the disposition and execs the client, which keeps it
    launcher = (
        "import os, signal, sys; signal.signal(signal.SIGINT, signal.%s); os.execv(sys.argv[1], sys.argv[1:])"
        % ("SIG_IGN" if sigint == signal.SIG_IGN else "SIG_DFL")
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", launcher, str(client), str(tmp_path / "probe.py"), "sleep", str(pid_file)],
        stdout=subprocess.PIPE,
        text=True,
    )
    return proc, _wait_pid_file(pid_file)


def test_a_signal_the_client_started_with_ignored_is_ignored_by_the_module(zygote):
    client, tmp_path = zygote
    proc, pid = _start_sleeper(client, tmp_path, sigint=signal.SIG_IGN)
    proc.send_signal(signal.SIGINT)
    time.sleep(1)
    assert proc.poll() is None and not _gone(pid, timeout=0.5)  # as a real interpreter started so would
    proc.terminate()
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGTERM and _gone(pid)


@pytest.mark.parametrize(
    "number, code, out", [(signal.SIGTERM, -signal.SIGTERM, ""), (signal.SIGINT, 4, "interrupted")]
)
def test_signals_reach_the_module_and_its_end_is_the_clients(zygote, number, code, out):
    client, tmp_path = zygote
    proc, pid = _start_sleeper(client, tmp_path)
    assert pid != proc.pid
    proc.send_signal(number)
    stdout, _err = proc.communicate(timeout=30)
    assert proc.returncode == code
    assert stdout.strip() == out
    assert _gone(pid)


def test_only_the_modules_own_threads_take_its_signals(zygote):
    """The thread that passes the client's signals on blocks them: a signal the kernel gave it would not wake the
    module's main thread from a blocking call (Python runs handlers there only once the call returns)."""
    client, tmp_path = zygote
    proc, pid = _start_sleeper(client, tmp_path)
    try:
        masks = {}
        for task in Path("/proc/%d/task" % pid).iterdir():
            status = (task / "status").read_text()
            masks[int(task.name)] = int(status.split("SigBlk:")[1].split()[0], 16)
        assert len(masks) == 2, masks  # the module's main thread and the zygote's watcher
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            bit = 1 << (number - 1)
            assert not masks[pid] & bit, (number, masks)
            assert all(mask & bit for tid, mask in masks.items() if tid != pid), (number, masks)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert _gone(pid)


def test_a_killed_client_takes_the_module_with_it(zygote):
    client, tmp_path = zygote
    proc, pid = _start_sleeper(client, tmp_path)
    os.kill(pid, 0)  # running
    proc.kill()
    proc.wait(timeout=30)
    assert _gone(pid), "the module's process outlived its killed client"


def test_without_its_server_the_client_runs_the_real_interpreter(zygote):
    client, tmp_path = zygote
    os.unlink(tmp_path / "socket")  # the server no longer answers here
    proc, seen = run_print(client, tmp_path)
    assert proc.returncode == 0
    assert seen["pid"] == proc.pid  # the client exec'd the interpreter
    assert seen["snap"] is None  # nothing preloaded
    assert seen["zy"] == "client"


def test_many_clients_at_once(zygote):
    client, tmp_path = zygote
    procs = [
        subprocess.Popen(
            [str(client), str(tmp_path / "probe.py"), "exit", str(n)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(12)
    ]
    for n, proc in enumerate(procs):
        out, _err = proc.communicate("line %d\n" % n, timeout=60)
        assert proc.returncode == n
        assert json.loads(out)["stdin"] == "line %d" % n
