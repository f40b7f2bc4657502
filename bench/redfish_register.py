"""Benchmark: host_register of 20 emulated BMCs onto Ironic, serial vs parallel.

Starts its own Keystone + Ironic (sqlite) + sushy-tools via the test harness,
then runs ``baremetal.tenancy.host_register`` through ansible-playbook three
ways on fresh node sets: ``workers=1``, ``workers=4``, and a rerun that must
change nothing. Prints ONE JSON line: seconds per run, per node, the speed-up
of the parallel run, and how many "database is locked" answers Ironic gave
(the module retries them).

    .venv/bin/python bench/redfish_register.py          # 20 nodes
    BENCH_SCALE=1 .venv/bin/python bench/redfish_register.py  # 5 nodes, a quick look
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "integration"))

from harness import openstack as openstack_harness
from harness import sushy as sushy_harness
from harness.ansible import localhost_play, run_playbook

SCALE = int(os.environ.get("BENCH_SCALE", "4"))  # 4 -> 20 nodes (8 + 7 + 5)
COUNT = {"small": 2 * SCALE, "medium": 2 * SCALE - 1, "large": SCALE + 1}
RULES = [
    {
        "name": "large",
        "when": "MemorySummary.TotalSystemMemoryGiB >= `256` && ProcessorSummary.Count >= `64`",
        "resource_class": "baremetal-large",
        "traits": ["CUSTOM_LARGE"],
        "stop": True,
    },
    {"name": "medium", "when": "MemorySummary.TotalSystemMemoryGiB >= `128`", "resource_class": "baremetal-medium"},
    {"name": "default", "resource_class": "baremetal-small"},
]


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-redfish-"))
    env = openstack_harness.start_openstack(work / "openstack", sushy_systems=[])
    emulators = []
    try:
        figures = {}
        for label, workers, first in (("serial", 1, 300), ("parallel", 4, 400)):
            em = sushy_harness.start_sushy(
                work / ("sushy-" + label), sushy_harness.profile_systems(COUNT, prefix=label, first_index=first)
            )
            emulators.append(em)
            hosts = [
                {"address": b.address, "username": b.username, "password": b.password, "name": b.name} for b in em.bmcs
            ]
            args = {
                "backend": "ironic",
                "cloud": "admin",
                "owner": "infra",
                "hosts": hosts,
                "rules": RULES,
                "workers": workers,
            }
            started = time.monotonic()
            run = run_playbook(
                localhost_play([{"name": "register", "baremetal.tenancy.host_register": args}]),
                env.ansible_env("admin"),
                work / ("run-" + label),
                timeout=3600,
            )
            figures[label] = time.monotonic() - started
            result = run.result("register")
            assert run.ok and not result["failed_hosts"], result.get("failed_hosts") or run.explain()
            if label == "parallel":
                started = time.monotonic()
                again = run_playbook(
                    localhost_play([{"name": "register", "baremetal.tenancy.host_register": args}]),
                    env.ansible_env("admin"),
                    work / "run-rerun",
                    timeout=3600,
                )
                figures["rerun"] = time.monotonic() - started
                assert again.ok and again.result("register")["changed"] is False
        locked = env.ironic_server.proc.log_path.read_text(errors="replace").count("database is locked")
        nodes = sum(COUNT.values())
        print(
            json.dumps(
                {
                    "bench": "host_register_ironic",
                    "nodes": nodes,
                    "serial_s": round(figures["serial"], 1),
                    "parallel4_s": round(figures["parallel"], 1),
                    "rerun_s": round(figures["rerun"], 1),
                    "serial_s_per_node": round(figures["serial"] / nodes, 2),
                    "parallel4_s_per_node": round(figures["parallel"] / nodes, 2),
                    "speedup_parallel_vs_serial": round(figures["serial"] / figures["parallel"], 2),
                    "ironic_db_locked_answers": locked,
                }
            )
        )
    finally:
        for em in emulators:
            em.stop()
        env.stop()


if __name__ == "__main__":
    main()
