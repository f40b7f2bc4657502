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


def _expiry(deadline: procs.StartDeadline) -> float:
    """Seconds from the deadline's start until :meth:`~procs.StartDeadline.expired` first says so (polled as the
    waiters poll)."""
    while not deadline.expired():
        time.sleep(0.05)
    return time.monotonic() - deadline.started


def _process(code: str, tmp_path: Path) -> procs.Proc:
    return procs.start_process("probe", [sys.executable, "-c", code], tmp_path)


def test_without_a_process_a_start_deadline_is_its_time_out():
    assert 0.5 <= _expiry(procs.StartDeadline(0.5)) < 1.5


def test_a_start_that_keeps_working_outlasts_its_time_out_up_to_the_limit(monkeypatch, tmp_path):
    monkeypatch.setattr(procs, "STARVED_LIMIT", 2)
    busy = _process("while True: pass", tmp_path)  # a start that needs more CPU than it gets
    try:
        deadline = procs.StartDeadline(2.0, busy)
        assert 4.0 <= _expiry(deadline) < 5.0
        assert deadline.tree_cpu() > 0.1
        assert "CPU-s" in deadline.describe()
    finally:
        busy.stop()


def test_a_start_that_stopped_working_ends_a_reading_past_its_time_out(tmp_path):
    stuck = _process("import time; time.sleep(60)", tmp_path)  # a start waiting on something that never comes
    try:
        assert 2.0 <= _expiry(procs.StartDeadline(2.0, stuck)) < 3.5  # the limit would be 8 s
    finally:
        stuck.stop()


def test_a_start_whose_process_ended_is_given_its_time_out_only(tmp_path):
    ended = _process("pass", tmp_path)
    ended.popen.wait()
    assert 1.0 <= _expiry(procs.StartDeadline(1.0, ended)) < 2.0
