"""Run Ansible the way a user does, against this checkout of the collection.

- ``collections_root()``: a temp tree ``ansible_collections/baremetal/tenancy``
  that links to the repository root, so ``ansible-playbook`` and
  ``ansible-inventory`` load this working copy (the ``ansible`` package's own
  collections, kubernetes.core and openstack.cloud among them, come from
  site-packages as usual).
- ``run_playbook(plays, env, workdir, ...) -> PlaybookRun``: write ``plays``
  (a list of plays, or a path) and run ``ansible-playbook`` on localhost, its
  modules with the Python of ``requirements.txt`` alone (``MODULE_PYTHON``).
  By default the ``ansible.posix.json`` callback is used
  and ``PlaybookRun.tasks`` maps each task name to its per-host result; with
  ``callback="default"`` the human output is kept (for ``-vvv`` scans).
- ``run_inventory(source, env, workdir, ...)``: ``ansible-inventory --list``.

Both set ``BMT_TEST_BED_CACHE`` (``scripts/test_bed_caches.py``): the modules' zipped source is compiled, the
collections' routing metadata parsed, and each module's payload gathered once per run instead of once per process.
In the integration suites (their ``conftest.py`` calls :func:`use_zygotes`; benches and demos do not, and run Ansible
as a user runs it), modules run in forks of one interpreter per session that has imported their costly libraries once
(``scripts/module_zygote.py``, :func:`module_interpreter`; ``BMT_MODULE_ZYGOTE=0`` turns it off); ``ansible_env(...,
zygote=False)`` runs them with the real interpreter in any case. There, ``run_playbook`` and ``run_inventory``
run ``ansible-playbook`` and ``ansible-inventory`` likewise, in forks of a server of the test venv that has imported
what Ansible's controller imports but Ansible itself (:func:`controller_command`; ``BMT_CONTROLLER_ZYGOTE=0`` turns
it off). Other tests that start ``ansible-playbook`` themselves (the killed playbooks of the fault suites, the
concurrency suites' parallel runs, AWX and EDA) run the real program.
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import json
import multiprocessing.util
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from . import procs

REPO_ROOT = Path(__file__).resolve().parents[3]
VENV_BIN = Path(sys.executable).parent
TEST_BED_CACHE = REPO_ROOT / ".tmp" / "test-bed-cache"
#: the Python modules run with: make's venv of requirements.txt alone (BMT_MODULE_PYTHON, the Makefile's
#: .venv-modules), as in an execution environment; the test venv's own when the suites run without make
MODULE_PYTHON = os.environ.get("BMT_MODULE_PYTHON") or sys.executable


#: The test bed's ansible.cfg (``ANSIBLE_CONFIG`` of every Ansible process the harness starts, unless the caller
#: gives one). ``internal_poll_interval``: how long the controller's main process sleeps between looks for task
#: results (no environment variable sets it). At ansible-core's default of 1 ms, a playbook waiting on a module
#: (a deployment, a bind pass) keeps its main process looking about 300 times a second: 3 % of a core here while
#: the module waits on a service, measured on a loaded machine (more on an idle one), and the suites spend most of
#: their time with a playbook waiting; at 50 ms, 0.13 %, for at most 50 ms more before each result is seen.
TEST_BED_CONFIG = """\
[defaults]
internal_poll_interval = 0.05
"""


_ZYGOTE_LOCK = threading.Lock()
#: set by :func:`use_zygotes`: until then this process runs Ansible as a user runs it
_ZYGOTES_WANTED = threading.Event()
#: the zygotes' server processes (modules, controller), as they started
_ZYGOTE: list[subprocess.Popen] = []


def use_zygotes() -> None:
    """Run this process's modules, playbooks and inventories through the zygotes from now on (the integration suites'
    ``conftest.py`` calls it). Not implied by anything else: a bench or a demo that imports the harness (and with it
    pytest) runs Ansible as a user runs it."""
    _ZYGOTES_WANTED.set()


def module_interpreter() -> str:
    """What runs the modules: after :func:`use_zygotes`, the client of this process's module zygote
    (``scripts/module_zygote.py``), started at the first call; :data:`MODULE_PYTHON` otherwise, with
    ``BMT_MODULE_ZYGOTE=0``, or when the zygote does not start."""
    with _ZYGOTE_LOCK:
        return _module_interpreter()


def start_module_zygote(
    workdir: Path,
    cache: Path = TEST_BED_CACHE,
    python: str = MODULE_PYTHON,
    timeout: float = 120,
    options: Sequence[str] = (),
) -> tuple[subprocess.Popen, Path] | None:
    """Start a zygote's server (``scripts/module_zygote.py``, run by ``python`` with ``options``: the modules' by
    default, the controller's with ``--preload-deps-of``; the test bed's caches under ``cache``) in ``workdir``, its
    log ``zygote.log`` there: the server and its client once it listens; ``None`` (the server killed) when it did not
    start within ``timeout`` seconds."""
    client = workdir / "python"
    log = open(workdir / "zygote.log", "wb")  # the server's log, open as long as it runs
    script = str(REPO_ROOT / "scripts" / "module_zygote.py")
    proc = subprocess.Popen(
        [python, script, "serve", str(workdir / "socket"), str(client), *options],
        env=dict(os.environ, BMT_TEST_BED_CACHE=str(cache)),
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + timeout
    while not client.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            return None
        time.sleep(0.05)
    return proc, client


def _zygote_client(variable: str, what: str, python: str, options: Sequence[str] = ()) -> str | None:
    """The client of a zygote of ``python`` started now (``None`` before :func:`use_zygotes`, with ``variable=0``, or
    when it does not start)."""
    if not _ZYGOTES_WANTED.is_set() or os.environ.get(variable, "1") == "0":
        return None
    workdir = Path(tempfile.mkdtemp(prefix="bmt-zygote-"))
    started = start_module_zygote(workdir, python=python, options=options)
    if started is None:
        print("%s zygote did not start (see %s): %s runs the real interpreter" % (what, workdir / "zygote.log", what))
        return None
    proc, client = started
    _removed_when_this_process_ends(workdir)  # after the server ends (atexit runs last registered first)
    atexit.register(proc.terminate)
    _ZYGOTE.append(proc)
    return str(client)


def module_zygote_of(python: str) -> str | None:
    """The client of a module zygote of ``python`` started now for this process, after :func:`use_zygotes` (``None``
    before, with ``BMT_MODULE_ZYGOTE=0``, or when it does not start): what a launcher outside pytest
    (``scripts/molecule-all.sh``) points its modules' interpreter at."""
    with _ZYGOTE_LOCK:
        return _zygote_client("BMT_MODULE_ZYGOTE", "module", python)


@functools.cache
def _module_interpreter() -> str:
    return _zygote_client("BMT_MODULE_ZYGOTE", "module", MODULE_PYTHON) or MODULE_PYTHON


#: what a controller zygote preloads: what these import, but Ansible's own modules (scripts/module_zygote.py)
CONTROLLER_PRELOAD = ("ansible.cli.playbook", "ansible.cli.inventory")
#: the options of a controller zygote's server (nothing to re-run in its forks)
CONTROLLER_OPTIONS = ("--preload-deps-of", ",".join(CONTROLLER_PRELOAD), "--reload", "")


def controller_command(program: str) -> list[str]:
    """The command that runs Ansible's ``program`` (``ansible-playbook``, ``ansible-inventory``) of the test venv:
    after :func:`use_zygotes`, through the client of this session's controller zygote, a server of the test venv's
    Python that has imported what Ansible's controller imports but Ansible itself (``scripts/module_zygote.py
    --preload-deps-of``; ``BMT_CONTROLLER_ZYGOTE=0`` turns it off); the program itself otherwise."""
    with _ZYGOTE_LOCK:
        client = _controller_client()
    return ([client] if client else []) + [str(VENV_BIN / program)]


@functools.cache
def _controller_client() -> str | None:
    return _zygote_client("BMT_CONTROLLER_ZYGOTE", "controller", sys.executable, CONTROLLER_OPTIONS)


def zygote_cpu_seconds() -> float:
    """CPU seconds of the zygotes' servers and of the processes they ran that have ended (their forks, reaped as
    they end): what those modules and controllers cost, which a process's ``RUSAGE_CHILDREN`` no longer holds (0
    before any starts)."""
    return sum(procs.cpu_seconds(proc.pid, reaped_children=True) for proc in _ZYGOTE)


def _removed_when_this_process_ends(path: Path) -> None:
    """Remove ``path`` (a link in it is removed, not followed) when this process ends: at exit, or with the finalizers
    of a multiprocessing child (the benches' spawned binders), which ends with ``os._exit`` and runs no ``atexit``;
    never from a forked child that inherited the registration."""
    owner = os.getpid()

    def remove() -> None:
        if os.getpid() == owner:
            shutil.rmtree(path, ignore_errors=True)

    atexit.register(remove)
    multiprocessing.util.Finalize(None, remove, exitpriority=0)


@functools.cache
def collections_root() -> Path:
    """A directory whose ansible_collections/baremetal/tenancy is this checkout (made once per process)."""
    root = Path(tempfile.mkdtemp(prefix="bmt-collections-"))
    _removed_when_this_process_ends(root)
    target = root / "ansible_collections" / "baremetal"
    target.mkdir(parents=True)
    (target / "tenancy").symlink_to(REPO_ROOT)
    return root


@functools.cache
def test_bed_config() -> Path:
    """The test bed's ansible.cfg (:data:`TEST_BED_CONFIG`), written once per run beside the collection tree."""
    path = collections_root() / "ansible.cfg"
    path.write_text(TEST_BED_CONFIG)
    return path


def ansible_env(env: Mapping[str, str], workdir: Path, *, zygote: bool = True) -> dict[str, str]:
    """``env`` plus the settings that make a run hermetic and quiet; ``zygote=False``: the modules run by the real
    interpreter (:data:`MODULE_PYTHON`), each a child of its ``ansible-playbook``, not a fork of the zygote."""
    local_tmp = Path(workdir) / "ansible-tmp"
    local_tmp.mkdir(parents=True, exist_ok=True)
    merged = dict(env)
    merged.update(
        {
            "ANSIBLE_COLLECTIONS_PATH": str(collections_root()),
            "ANSIBLE_PYTHON_INTERPRETER": module_interpreter() if zygote else MODULE_PYTHON,
            "ANSIBLE_LOCAL_TEMP": str(local_tmp),
            "ANSIBLE_REMOTE_TEMP": str(local_tmp),
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_FORCE_COLOR": "0",
            "ANSIBLE_LOCALHOST_WARNING": "False",
            "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False",
            "ANSIBLE_RETRY_FILES_ENABLED": "False",
            "ANSIBLE_DEPRECATION_WARNINGS": "False",
            "PATH": "%s:%s" % (VENV_BIN, env.get("PATH", os.environ.get("PATH", ""))),
        }
    )
    merged.setdefault("HOME", os.environ.get("HOME", "/root"))
    # A module's own temporary files (AnsiballZ's payload directory) in the run's directory, unless the caller gave
    # a TMPDIR: a module killed mid-way (the fault suites, a killed playbook's tree) left its payload in /tmp
    merged.setdefault("TMPDIR", str(local_tmp))
    merged.setdefault("ANSIBLE_CONFIG", str(test_bed_config()))
    # The modules' Python compiled and the collections' routing parsed once per run, not once per process
    # (scripts/test_bed_caches.py, installed into the venv by make venv): the same source and routing, only their
    # compile and parse skipped.
    merged.setdefault("BMT_TEST_BED_CACHE", str(TEST_BED_CACHE))
    return merged


@dataclasses.dataclass
class PlaybookRun:
    rc: int
    stdout: str
    stderr: str
    report: dict | None  # the json callback's document

    @property
    def ok(self) -> bool:
        return self.rc == 0

    @property
    def tasks(self) -> dict[str, dict]:
        """Task name -> the localhost result (last one wins for repeated names)."""
        out: dict[str, dict] = {}
        for play in (self.report or {}).get("plays", []):
            for task in play.get("tasks", []):
                hosts = task.get("hosts", {})
                if hosts:
                    out[task["task"]["name"]] = next(iter(hosts.values()))
        return out

    def result(self, name: str) -> dict:
        tasks = self.tasks
        assert name in tasks, "task %r not in run; tasks: %s\n%s\n%s" % (
            name,
            list(tasks),
            self.stdout[-3000:],
            self.stderr[-3000:],
        )
        return tasks[name]

    def host_results(self, name: str) -> dict[str, dict]:
        """Host name -> result of task ``name`` (its first run in the report, any play)."""
        for play in (self.report or {}).get("plays", []):
            for task in play.get("tasks", []):
                if task["task"]["name"] == name:
                    return task["hosts"]
        raise AssertionError("task %r not in the run\n%s" % (name, self.explain()))

    def failures(self) -> list[str]:
        """``task name: message`` of each failed task result in the report (items of a loop included)."""
        out = []
        for play in (self.report or {}).get("plays", []):
            for task in play.get("tasks", []):
                for result in task.get("hosts", {}).values():
                    failed = [r for r in result.get("results") or [] if isinstance(r, dict) and r.get("failed")]
                    for item in failed or ([result] if result.get("failed") else []):
                        out.append("%s: %s" % (task["task"]["name"], str(item.get("msg"))[:1500]))
        return out

    def explain(self) -> str:
        failed = "".join("FAILED %s\n" % line for line in self.failures())
        return "rc=%s\n%sSTDOUT:\n%s\nSTDERR:\n%s" % (self.rc, failed, self.stdout[-6000:], self.stderr[-3000:])


def _localhost_play(tasks: Sequence[dict], vars: Mapping[str, Any] | None = None, **play: Any) -> dict:
    base = {
        "name": "test",
        "hosts": "localhost",
        "connection": "local",
        "gather_facts": False,
        "vars": dict(vars or {}),
        "tasks": list(tasks),
    }
    base.update(play)
    return base


def localhost_play(tasks: Sequence[dict], vars: Mapping[str, Any] | None = None, **play: Any) -> list[dict]:
    """A one-play playbook running ``tasks`` on localhost."""
    return [_localhost_play(tasks, vars, **play)]


def run_playbook(
    plays: Sequence[dict] | str | Path,
    env: Mapping[str, str],
    workdir: Path,
    *,
    extra_vars: Mapping[str, Any] | None = None,
    verbosity: int = 0,
    check: bool = False,
    diff: bool = False,
    callback: str = "json",
    inventory: str | None = None,
    timeout: float = 900,
) -> PlaybookRun:
    """Run ``ansible-playbook`` once; never raises on a failed play (look at ``rc``)."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    if isinstance(plays, (str, Path)) and Path(plays).exists():
        path = Path(plays)
    else:
        fd, name = tempfile.mkstemp(prefix="play-", suffix=".yml", dir=workdir)
        os.close(fd)
        path = Path(name)
        path.write_text(yaml.safe_dump(list(plays), sort_keys=False))
    argv = [*controller_command("ansible-playbook"), "-i", inventory or "localhost,", str(path)]
    if extra_vars:
        argv += ["-e", json.dumps(dict(extra_vars))]
    if verbosity:
        argv.append("-" + "v" * verbosity)
    if check:
        argv.append("--check")
    if diff:
        argv.append("--diff")
    run_env = ansible_env(env, workdir)
    if callback == "json":
        run_env["ANSIBLE_STDOUT_CALLBACK"] = "ansible.posix.json"
        run_env["ANSIBLE_JSON_INDENT"] = "0"
    proc = subprocess.run(
        argv, env=run_env, capture_output=True, text=True, timeout=timeout, check=False, cwd=str(workdir)
    )
    report = None
    if callback == "json":
        try:
            report = json.loads(proc.stdout[proc.stdout.index("{") :])
        except ValueError:
            report = None
    return PlaybookRun(proc.returncode, proc.stdout, proc.stderr, report)


def run_inventory(
    source: str | Path, env: Mapping[str, str], workdir: Path, *, extra_args: Sequence[str] = (), timeout: float = 900
) -> subprocess.CompletedProcess:
    """``ansible-inventory -i source --list`` with the hermetic environment."""
    argv = [*controller_command("ansible-inventory"), "-i", str(source), "--list", *extra_args]
    return subprocess.run(
        argv,
        env=ansible_env(env, Path(workdir)),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=str(workdir),
    )
