"""The harness's process tree (tests/integration/harness/procs.py): read from each process's ``children`` files, it
finds what reading the parent of every process on the machine finds, setsid'd descendants included."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ansible_collections.baremetal.tenancy.tests.integration.harness import procs

# a shell with a child, a grandchild in a subshell and a child that left its session (as ansible's workers do)
TREE = "sleep 30 & (sleep 30; true) & setsid sleep 30 & wait"


def _started(expected: int) -> subprocess.Popen:
    proc = subprocess.Popen(["bash", "-c", TREE])
    deadline = time.monotonic() + 10
    while len(procs.process_tree_by_parents(proc.pid)) < expected:
        assert time.monotonic() < deadline, "the shell's children did not start"
        time.sleep(0.01)
    return proc


def _ended(proc: subprocess.Popen) -> None:
    for pid in reversed(procs.process_tree_by_parents(proc.pid)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    proc.wait(timeout=10)


def test_the_children_files_find_every_descendant():
    proc = _started(5)
    try:
        tree = procs.process_tree(proc.pid)
        assert tree[0] == proc.pid
        assert sorted(tree) == sorted(procs.process_tree_by_parents(proc.pid))
        assert len(tree) == 5
    finally:
        _ended(proc)


def test_an_ended_process_has_a_tree_of_itself():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert procs.process_tree(proc.pid) == [proc.pid]


def test_without_children_files_the_parents_are_read(monkeypatch):
    proc = _started(5)
    try:
        monkeypatch.setattr(procs, "_children", lambda pid: None)
        assert sorted(procs.process_tree(proc.pid)) == sorted(procs.process_tree_by_parents(proc.pid))
        assert len(procs.process_tree(proc.pid)) == 5
    finally:
        _ended(proc)


def test_an_ansible_modules_process_is_the_one_that_runs_its_payload_not_a_shell_naming_it(tmp_path):
    payload = tmp_path / "AnsiballZ_host_claim.py"
    payload.write_text("import time\ntime.sleep(30)\n")
    shell = subprocess.Popen(["/bin/sh", "-c", "sleep 30 && chmod u+x %s" % payload])
    module = subprocess.Popen([sys.executable, str(payload)])
    try:
        deadline = time.monotonic() + 10  # the interpreter may be a launcher that execs the real one
        while not procs.runs_ansible_module(module.pid, "host_claim"):
            assert time.monotonic() < deadline, Path("/proc/%d/cmdline" % module.pid).read_bytes()
            time.sleep(0.01)
        assert not procs.runs_ansible_module(shell.pid, "host_claim")
        assert not procs.runs_ansible_module(module.pid, "claim")  # the whole name
        assert not procs.runs_ansible_module(module.pid, "host_claim_info")
    finally:
        for proc in (shell, module):
            proc.kill()
            proc.wait()
    assert not procs.runs_ansible_module(module.pid, "host_claim")  # gone
