#!/usr/bin/env python
"""Benchmark: claim created -> claim bound, with the EDA binder and with the binder loop, side by side.

Starts its own control plane (``tests/integration/harness/kube.py``), installs the
CRDs of hostclaim_setup (the proposal's HostClaim, the collection's BareMetalHost),
creates ``BENCH_LATENCY_CLAIMS + 1`` available hosts per binder (their status written as an
operator would) and then, for each binder in turn:

- ``rulebook``: ``ansible-rulebook --rulebook baremetal.tenancy.binder`` (the
  event source and one ``host_bind`` pass per coalesced burst, each a new
  ``ansible-playbook``);
- ``worker``: ``ansible-rulebook --rulebook baremetal.tenancy.binder_worker``
  (the same source and coalescing; the passes run one after the other in one
  long-running ``host_bind_worker`` module started once);
- ``loop``: ``ansible-playbook baremetal.tenancy.metal3_bind_claims`` as a
  long-running loop (``reconcile_until_quiet=false``) at its default interval
  (``reconcile_interval`` 2 s between passes, one ansible-playbook process);

after a warm-up claim is bound, ``BENCH_LATENCY_CLAIMS`` (100) claims are created one
every ``BENCH_LATENCY_SPACING`` seconds (0.2) in 3 namespaces of the binder's own,
and the time from each claim's creation to the first time a reader sees it bound
(``AssociateBMH`` True and the binding label, read every 0.1 s) is recorded: p50,
p95 and max per binder, ``loop_to_rulebook_p95`` and ``loop_to_worker_p95``.
``BENCH_LATENCY_BINDERS`` (comma-separated) picks the binders.

Prints ONE JSON line (progress on stderr). Usage: ``.venv/bin/python bench/latency.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))
sys.path.insert(0, str(REPO / "bench"))

from bind import install_crds
from harness import kube
from harness.ansible import VENV_BIN, ansible_env
from kubernetes import client

CLAIMS = int(os.environ.get("BENCH_LATENCY_CLAIMS", "100"))
SPACING = float(os.environ.get("BENCH_LATENCY_SPACING", "0.2"))
INFRA = "lat-infra"
GROUP, VERSION = "metal3.io", "v1alpha1"
MERGE = "application/merge-patch+json"
POLL = 0.1
BINDERS = tuple(os.environ.get("BENCH_LATENCY_BINDERS", "rulebook,worker,loop").split(","))
RULEBOOKS = {"rulebook": "baremetal.tenancy.binder", "worker": "baremetal.tenancy.binder_worker"}


def progress(*words) -> None:
    print(time.strftime("%H:%M:%S"), *words, file=sys.stderr, flush=True)


def seed_hosts(api, count: int) -> None:
    custom = client.CustomObjectsApi(api)
    client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=INFRA)))

    def one(index):
        name = "lh%04d" % index
        body = {
            "apiVersion": "%s/%s" % (GROUP, VERSION),
            "kind": "BareMetalHost",
            "metadata": {
                "name": name,
                "namespace": INFRA,
                "labels": {"suite": "latency"},
                "annotations": {"baremetal.tenancy/host-claim-namespaces": '{"matches":"lat-.*"}'},
            },
            "spec": {"online": False, "bmc": {"address": "redfish://192.0.2.1/x/%d" % index, "credentialsName": "x"}},
        }
        custom.create_namespaced_custom_object(GROUP, VERSION, INFRA, "baremetalhosts", body)
        status = {"status": {"provisioning": {"state": "available"}, "operationalStatus": "OK", "poweredOn": False}}
        custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, INFRA, "baremetalhosts", name, status, _content_type=MERGE
        )

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(one, range(count)))


def namespaces_of(binder: str) -> list[str]:
    return ["lat-%s-%d" % (binder, n) for n in range(3)]


def create_claim(api, namespace: str, name: str) -> float:
    body = {
        "apiVersion": "%s/%s" % (GROUP, VERSION),
        "kind": "HostClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"online": False, "hostSelector": {"matchLabels": {"suite": "latency"}}},
    }
    created = time.monotonic()
    client.CustomObjectsApi(api).create_namespaced_custom_object(GROUP, VERSION, namespace, "hostclaims", body)
    return created


def bound_names(api, namespaces: list[str]) -> set[str]:
    custom = client.CustomObjectsApi(api)
    found = set()
    for namespace in namespaces:
        for claim in custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "hostclaims")["items"]:
            conditions = dict((c["type"], c) for c in (claim.get("status") or {}).get("conditions") or [])
            label = (claim["metadata"].get("labels") or {}).get("hostclaim.metal3.io/host")
            if label and (conditions.get("AssociateBMH") or {}).get("status") == "True":
                found.add(claim["metadata"]["name"])
    return found


def start_binder(binder: str, env: kube.KubeEnv, workdir: Path) -> subprocess.Popen:
    workdir.mkdir(parents=True, exist_ok=True)
    run_env = ansible_env(env.ansible_env("admin"), workdir)
    namespaces = namespaces_of(binder)
    if binder in RULEBOOKS:
        (workdir / "vars.yml").write_text(
            json.dumps({"binder_namespaces": namespaces, "binder_host_namespaces": [INFRA], "binder_resync": 0})
        )
        (workdir / "inventory.yml").write_text("all:\n  hosts:\n    localhost:\n      ansible_connection: local\n")
        argv = [
            str(VENV_BIN / "ansible-rulebook"),
            "--rulebook",
            RULEBOOKS[binder],
            "-i",
            str(workdir / "inventory.yml"),
            "--vars",
            str(workdir / "vars.yml"),
            "-v",
        ]
    else:
        extra = {
            "reconcile_namespaces": namespaces,
            "reconcile_host_namespaces": [INFRA],
            "reconcile_until_quiet": False,
            "reconcile_passes": 100000,
        }
        argv = [
            str(VENV_BIN / "ansible-playbook"),
            "-i",
            "localhost,",
            "baremetal.tenancy.metal3_bind_claims",
            "-e",
            json.dumps(extra),
        ]
    log = open(workdir / "binder.log", "w", encoding="utf-8")
    return subprocess.Popen(
        argv, env=run_env, cwd=str(workdir), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )


def stop(process: subprocess.Popen) -> None:
    """SIGTERM first: ansible-playbook then ends its worker, which runs the loop task in a session of its own
    (a SIGKILL of the group left the loop binder's worker binding on, 2026-11-27); SIGKILL after 20 s."""
    for sig, grace in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        if process.poll() is not None:
            return
        os.killpg(process.pid, sig)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            continue


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered) + 0.5) - 1))]


def measure(binder: str, env: kube.KubeEnv, workdir: Path) -> dict:
    namespaces = namespaces_of(binder)
    with env.api("admin") as api:
        core = client.CoreV1Api(api)
        for namespace in namespaces:
            core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    process = start_binder(binder, env, workdir / binder)
    try:
        with env.api("admin") as api:
            progress(binder, "warm-up claim")
            create_claim(api, namespaces[0], "warm-up")
            deadline = time.monotonic() + 300
            while "warm-up" not in bound_names(api, namespaces):
                assert process.poll() is None, (workdir / binder / "binder.log").read_text()[-4000:]
                assert time.monotonic() < deadline, "the warm-up claim was not bound"
                time.sleep(POLL)
            progress(binder, CLAIMS, "claims, one every", SPACING, "s")
            created: dict[str, float] = {}
            bound_at: dict[str, float] = {}
            start = time.monotonic()
            index = 0
            deadline = start + CLAIMS * SPACING + 600
            while len(bound_at) < CLAIMS:
                now = time.monotonic()
                if index < CLAIMS and now >= start + index * SPACING:
                    name = "c%03d" % index
                    created[name] = create_claim(api, namespaces[index % 3], name)
                    index += 1
                    continue
                seen = time.monotonic()
                for name in bound_names(api, namespaces):
                    if name in created and name not in bound_at:
                        bound_at[name] = seen
                assert time.monotonic() < deadline, "%d of %d bound" % (len(bound_at), CLAIMS)
                time.sleep(POLL if index >= CLAIMS else 0.01)
    finally:
        stop(process)
    latencies = [bound_at[name] - created[name] for name in created]
    log = (workdir / binder / "binder.log").read_text()
    result = {
        "p50_seconds": round(statistics.median(latencies), 3),
        "p95_seconds": round(percentile(latencies, 0.95), 3),
        "max_seconds": round(max(latencies), 3),
        "claims": len(latencies),
    }
    if binder in RULEBOOKS:
        result["passes"] = log.count("baremetal.tenancy.metal3_events - INFO - binder pass ")
    else:
        result["interval_seconds"] = 2
    progress(binder, json.dumps(result))
    return result


def main() -> None:
    workdir = Path(tempfile.mkdtemp(prefix="bmt-bench-latency-"))
    result: dict = {
        "bench": "latency",
        "claims": CLAIMS,
        "spacing_seconds": SPACING,
        "cpus": os.cpu_count(),
        "load_before": round(os.getloadavg()[0], 2),
    }
    env = kube.KubeEnv(workdir / "kube")
    try:
        env.start()
        with env.api("admin") as api:
            install_crds(api, "proposal")
            # Each binder binds its warm-up claim and CLAIMS claims on hosts nobody frees: as many per binder (with
            # two for three binders, the third found none and never bound its warm-up claim).
            progress("seeding", len(BINDERS) * (CLAIMS + 1), "hosts")
            seed_hosts(api, len(BINDERS) * (CLAIMS + 1))
        for binder in BINDERS:
            result[binder] = measure(binder, env, workdir)
        result["load_after"] = round(os.getloadavg()[0], 2)
        loop = (result.get("loop") or {}).get("p95_seconds")
        for binder in set(RULEBOOKS) & set(BINDERS):
            p95 = result[binder]["p95_seconds"]
            result["loop_to_%s_p95" % binder] = round(loop / p95, 2) if loop and p95 else None
    finally:
        env.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
