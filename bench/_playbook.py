"""One ``ansible-playbook`` run on localhost for the test-bed benches (``test_bed.py``, ``test_bed_waits.py``): the
harness's environment (``harness.ansible.ansible_env``) with the changes a side asks for, and the CPU seconds of the
whole process tree (``getrusage`` of the ended children: the playbook, its workers and modules) and the wall
seconds."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))

from harness.ansible import VENV_BIN, ansible_env

#: what the harness sets that a user's run does not have: the test bed's caches and its ansible.cfg
TEST_BED = ("BMT_TEST_BED_CACHE", "ANSIBLE_CONFIG")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(
    play: Path,
    workdir: Path,
    set_env: Mapping[str, str] | None = None,
    drop: tuple[str, ...] = (),
    launcher: tuple[str, ...] = (),
) -> tuple[float, float, subprocess.CompletedProcess]:
    """Run ``play`` with the harness's environment, ``set_env`` added and ``drop`` removed, ``ansible-playbook``
    run by ``launcher`` when given (a zygote's client): (CPU, wall, process)."""
    env = ansible_env({"PATH": os.environ.get("PATH", "")}, workdir)
    env.update(set_env or {})  # after: ansible_env sets the modules' interpreter, which a side may change
    for name in drop:
        env.pop(name, None)
    before, started = children_cpu(), time.monotonic()
    proc = subprocess.run(
        [*launcher, str(VENV_BIN / "ansible-playbook"), "-i", "localhost,", str(play)],
        env=env,
        cwd=str(workdir),
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    return children_cpu() - before, time.monotonic() - started, proc
