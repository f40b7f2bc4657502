"""What the suites' waiting costs (issue 35), side by side in one run: a playbook waiting on its module, and the
fault suites' look for a module's process.

- **A playbook waiting.** Most of the suites' time is spent with an ``ansible-playbook`` waiting on a module (a
  deployment, a bind pass, a lease). Its main process looks for the task's result every
  ``internal_poll_interval`` seconds (ansible-core's default 1 ms; no environment variable sets it); the harness's
  ansible.cfg sets 50 ms (``tests/integration/harness/ansible.py``). Two sides in turns (``--rounds``, default 3):
  ``default`` (as a user runs it) and ``harness`` (its ``ANSIBLE_CONFIG``), each one playbook whose one task runs
  ``sleep`` for ``--seconds`` (default 10); CPU seconds of the whole process tree from ``getrusage``.
- **A process tree read.** The fault suites look for a module's process every 20 ms while it runs
  (``tests/integration/harness/procs.py``): the tree of the running playbook read from each process's ``children``
  files, against the parent of every process on the machine read (as before); ``--reads`` reads (default 200) of
  the tree of a shell with three children, each way in turns.

Prints one JSON line: each side's median CPU seconds and the ratio, the CPU per waited second, the milliseconds of
CPU per tree read each way, how many processes the machine had, the machine's load.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _playbook
import yaml
from harness import procs


def waiting_playbook(side: str, play: Path, workdir: Path) -> float:
    """CPU seconds of one ``ansible-playbook`` run of ``play`` as ``side`` (``default``: without the harness's
    ansible.cfg)."""
    cpu, dummy, proc = _playbook.run(play, workdir, drop=("ANSIBLE_CONFIG",) if side == "default" else ())
    if proc.returncode or "ok=1 " not in proc.stdout:
        raise SystemExit("%s: unexpected run (rc %s)\n%s\n%s" % (side, proc.returncode, proc.stdout, proc.stderr))
    return cpu


def tree_reads(reads: int) -> dict:
    """Milliseconds of CPU per read of a small tree, from the children files and from every process's parent."""
    shell = subprocess.Popen(["bash", "-c", "sleep 60 & sleep 60 & setsid sleep 60 & wait"], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while len(procs.process_tree(shell.pid)) < 4:
            assert time.monotonic() < deadline, "the shell's children did not start"
            time.sleep(0.01)
        ways = {"children_files": procs.process_tree, "every_parent": procs.process_tree_by_parents}
        spent = {way: 0.0 for way in ways}
        for dummy in range(reads):
            for way, read in ways.items():
                started = time.process_time()
                assert len(read(shell.pid)) == 4
                spent[way] += time.process_time() - started
        return {way: round(spent[way] / reads * 1000, 3) for way in ways}
    finally:
        for pid in reversed(procs.process_tree(shell.pid)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shell.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--reads", type=int, default=200)
    args = parser.parse_args()
    sides = ("default", "harness")
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bmt-bench-waits-") as tmp:
        root = Path(tmp)
        play = root / "play.yml"
        task = {"name": "wait", "ansible.builtin.command": "sleep %d" % args.seconds, "changed_when": False}
        play.write_text(
            yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "connection": "local", "tasks": [task]}])
        )
        samples: dict[str, list[float]] = {side: [] for side in sides}
        for index in range(args.rounds):
            for side in sides:
                samples[side].append(waiting_playbook(side, play, root / ("%s-%d" % (side, index))))
                print("round %d %s: %.2f s CPU" % (index + 1, side, samples[side][-1]), file=sys.stderr)
    cpu = {side: round(statistics.median(samples[side]), 3) for side in sides}
    reads = tree_reads(args.reads)
    print(
        json.dumps(
            {
                "bench": "test_bed_waits",
                "rounds": args.rounds,
                "waited_s": args.seconds,
                "playbook_cpu_s_median": cpu,
                "playbook_cpu_ratio": round(cpu["harness"] / cpu["default"], 3),
                "cpu_s_saved_per_waited_s": round((cpu["default"] - cpu["harness"]) / args.seconds, 4),
                "tree_read_cpu_ms": reads,
                "tree_read_ratio": round(reads["children_files"] / reads["every_parent"], 4),
                "processes": sum(1 for entry in os.listdir("/proc") if entry.isdigit()),
                "load": [round(load_start, 2), round(os.getloadavg()[0], 2)],
            }
        )
    )


if __name__ == "__main__":
    main()
