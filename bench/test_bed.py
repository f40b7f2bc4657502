"""What the test bed's settings save each Ansible run (issue 35), side by side in one run.

The integration suites run ``ansible-playbook`` about 840 times and modules about 2,400 times; most of ``make
test``'s CPU is theirs. This bench runs one playbook of five tasks, each a module's whole start-up and one refused
connection (no service is needed): ``ping``; ``host_claim_info`` and ``host_claim`` on Metal3 and
``kubernetes.core.k8s_info`` against a kubeconfig whose API server does not listen; ``host_claim_info`` on Ironic
against a Keystone that does not listen. Five sides, taken in turns (``--rounds``, default 5), CPU seconds of the
whole process tree (``ansible-playbook``, its workers and modules) from ``getrusage``:

- ``plain``: as a user's run: no ``BMT_TEST_BED_CACHE``, no test-bed ansible.cfg, modules run by the test venv's
  Python;
- ``caches``: the test bed's caches on (``scripts/test_bed_caches.py``: modules' code, routing metadata, payloads;
  warmed by one run first, as a session's first runs warm them), modules still by the test venv's Python;
- ``harness``: what the harness sets: the caches, its ansible.cfg (``test_bed_waits.py`` measures what that saves
  while a module waits), and modules run by ``.venv-modules`` (``requirements.txt`` alone);
- ``zygote``: ``harness`` with the modules run in forks of one interpreter that imported their libraries once
  (``scripts/module_zygote.py``, as the harness runs them in the integration suites); its CPU is the process tree's plus the
  server's and its forks' (``/proc/<server>/stat``);
- ``zygotes``: ``zygote`` with ``ansible-playbook`` itself run in a fork of a second server, of the test venv, that
  imported what Ansible's controller imports but Ansible (``--preload-deps-of``, as the harness's ``run_playbook``
  runs it in the integration suites); both servers' CPU added.

Prints one JSON line: each side's median CPU seconds and wall seconds, the ratios to ``plain``, the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _playbook
import yaml
from harness import procs
from harness.ansible import CONTROLLER_OPTIONS, start_module_zygote

REPO = _playbook.REPO
MODULE_PYTHON = os.environ.get("BMT_MODULE_PYTHON") or str(REPO / ".venv-modules" / "bin" / "python")

KUBECONFIG = {
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
    "users": [{"name": "u", "user": {"token": "bench"}}],
    "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    "current-context": "c",
}


def playbook(kubeconfig: Path) -> list[dict]:
    auth = {"auth_url": "http://127.0.0.1:9/v3", "username": "u", "password": "bench", "project_name": "p"}
    metal3 = {"backend": "metal3", "namespace": "bench", "kubeconfig": str(kubeconfig)}
    tasks = [
        {"name": "ping", "ansible.builtin.ping": {}},
        {"name": "metal3 info", "baremetal.tenancy.host_claim_info": metal3},
        {"name": "metal3 claim", "baremetal.tenancy.host_claim": dict(metal3, name="bench")},
        {"name": "k8s_info", "kubernetes.core.k8s_info": {"kind": "Pod", "kubeconfig": str(kubeconfig)}},
        {"name": "ironic info", "baremetal.tenancy.host_claim_info": {"backend": "ironic", "auth": auth}},
    ]
    for task in tasks[1:]:
        task["ignore_errors"] = True
    return [{"hosts": "localhost", "gather_facts": False, "connection": "local", "tasks": tasks}]


def start_zygote(root: Path, name: str, python: str, options: tuple[str, ...] = ()) -> subprocess.Popen:
    """A zygote's server (a child of this process, as the harness starts it), its client in ``server.client``."""
    (root / name).mkdir()
    started = start_module_zygote(root / name, cache=root / "cache", python=python, options=options)
    if started is None:
        raise SystemExit("the %s zygote did not start (see %s)" % (name, root / name / "zygote.log"))
    server, client = started
    server.client = str(client)
    return server


def servers_cpu(zygotes: dict[str, subprocess.Popen]) -> float:
    """The servers' CPU with their reaped forks', once every fork has been reaped: a fork tells its client how the
    run ended before it ends, and a controller's CPU counts only once the server has reaped that fork (read at once,
    it went to the next side's run)."""
    deadline = time.monotonic() + 10
    while any(len(procs.process_tree(server.pid)) > 1 for server in zygotes.values()) and time.monotonic() < deadline:
        time.sleep(0.01)
    return sum(procs.cpu_seconds(server.pid, reaped_children=True) for server in zygotes.values())


def run(side: str, play: Path, workdir: Path, cache: Path, zygotes: dict[str, subprocess.Popen]) -> tuple[float, float]:
    """One ``ansible-playbook`` run as ``side``: (CPU seconds of its process tree and the servers', wall seconds)."""
    python = {"harness": MODULE_PYTHON}.get(side, zygotes["module"].client if "zygote" in side else sys.executable)
    launcher = (zygotes["controller"].client,) if side == "zygotes" else ()
    server_before = servers_cpu(zygotes)
    # plain: nothing of the test bed's; caches: its caches alone (not its ansible.cfg, test_bed_waits.py's subject)
    drop = {"plain": _playbook.TEST_BED, "caches": ("ANSIBLE_CONFIG",)}.get(side, ())
    cpu, wall, proc = _playbook.run(
        play, workdir, {"BMT_TEST_BED_CACHE": str(cache), "ANSIBLE_PYTHON_INTERPRETER": python}, drop, launcher
    )
    recap = [line for line in proc.stdout.splitlines() if line.startswith("localhost")]
    if proc.returncode or not recap or " ok=5 " not in recap[-1] or "ignored=4" not in recap[-1]:
        raise SystemExit("%s: unexpected run (rc %s)\n%s\n%s" % (side, proc.returncode, proc.stdout, proc.stderr))
    return cpu + servers_cpu(zygotes) - server_before, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if not Path(MODULE_PYTHON).exists():
        raise SystemExit("%s is missing: run make venv" % MODULE_PYTHON)
    sides = ("plain", "caches", "harness", "zygote", "zygotes")
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bmt-bench-test-bed-") as tmp:
        root = Path(tmp)
        kubeconfig = root / "kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(KUBECONFIG))
        play = root / "play.yml"
        play.write_text(yaml.safe_dump(playbook(kubeconfig), sort_keys=False))
        cache = root / "cache"
        zygotes = {
            "module": start_zygote(root, "module", MODULE_PYTHON),
            "controller": start_zygote(root, "controller", sys.executable, CONTROLLER_OPTIONS),
        }
        try:
            for side in sides[1:]:  # warm the caches, as a session's first runs do
                run(side, play, root / "warm", cache, zygotes)
            samples: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
            for index in range(args.rounds):
                for side in sides:
                    samples[side].append(run(side, play, root / ("%s-%d" % (side, index)), cache, zygotes))
                    print("round %d %s: %.2f s CPU" % (index + 1, side, samples[side][-1][0]), file=sys.stderr)
        finally:
            for server in zygotes.values():
                server.terminate()
                server.wait(timeout=30)
    cpu = {side: round(statistics.median(c for c, w in samples[side]), 3) for side in sides}
    wall = {side: round(statistics.median(w for c, w in samples[side]), 3) for side in sides}
    print(
        json.dumps(
            {
                "bench": "test_bed",
                "tasks": 5,
                "rounds": args.rounds,
                "cpu_s_median": cpu,
                "wall_s_median": wall,
                "cpu_ratio_to_plain": {side: round(cpu[side] / cpu["plain"], 3) for side in sides[1:]},
                "load": [round(load_start, 2), round(os.getloadavg()[0], 2)],
            }
        )
    )


if __name__ == "__main__":
    main()
