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

Then, on the same machine in the same run (``operator`` in the JSON; ``BENCH_LATENCY_OPERATOR_CLAIMS``, 20, 0 leaves
it out): **with Metal3's real baremetal-operator running and on its own HostClaim dialect** (BMO v0.14's CRDs and
webhooks, Ironic on PostgreSQL, sushy-tools BMCs: ``harness/baremetal_operator.py``, as the ``real_bmo`` suites run
it), ``BENCH_LATENCY_OPERATOR_CLAIMS + 1`` hosts registered by the operator until ``available`` (not written by the
bench), shared with the binder's namespaces by one ``HostDeployPolicy``, and the same measure for each binder of
``BENCH_LATENCY_OPERATOR_BINDERS`` (``worker``): claims in BMO's shape (``spec.poweredOn``), bound when a reader sees
``status.bareMetalHost`` and ``Associated`` True (what the binder writes on that dialect, as BMO's own controller
does). In turns with it, while the operator's stack runs (the same load on both), the same binder on the test bed's
world with as many claims (``<binder>_test_bed_same_claims``; ``<binder>_p95_ratio_to_test_bed``): what the operator
adds is its own writes on the hosts (the status of every host it reconciles, the ``consumerRef`` it answers), which
the event source sees as host events, and its CPU. Each measure carries ``apiserver``: what the API server did while
its claims were bound, read from its ``/metrics`` before and after (writes to hosts and claims per claim and their
mean seconds, the admission webhooks' calls per claim and their mean seconds), on either world.

Prints ONE JSON line (progress on stderr). Usage: ``.venv/bin/python bench/latency.py``.
"""

from __future__ import annotations

import json
import os
import re
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
OPERATOR_CLAIMS = int(os.environ.get("BENCH_LATENCY_OPERATOR_CLAIMS", "20"))
OPERATOR_BINDERS = tuple(b for b in os.environ.get("BENCH_LATENCY_OPERATOR_BINDERS", "worker").split(",") if b)
OP_INFRA = "lat-op-infra"
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
                "labels": {"pool": "latency"},  # as fixtures_bmo.create_hosts labels the operator's
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


def create_claim(api, namespace: str, name: str, dialect: str = "proposal") -> float:
    power = {"poweredOn": False} if dialect == "bmo" else {"online": False}
    body = {
        "apiVersion": "%s/%s" % (GROUP, VERSION),
        "kind": "HostClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": dict(power, hostSelector={"matchLabels": {"pool": "latency"}}),
    }
    created = time.monotonic()
    client.CustomObjectsApi(api).create_namespaced_custom_object(GROUP, VERSION, namespace, "hostclaims", body)
    return created


def is_bound(claim: dict, dialect: str) -> bool:
    """What a reader takes for bound: the proposal's ``AssociateBMH`` and binding label; on BMO's dialect
    ``status.bareMetalHost`` and ``Associated`` (the fields BMO's own controller writes)."""
    status = claim.get("status") or {}
    conditions = dict((c["type"], c) for c in status.get("conditions") or [])
    if dialect == "bmo":
        return bool(status.get("bareMetalHost")) and (conditions.get("Associated") or {}).get("status") == "True"
    label = (claim["metadata"].get("labels") or {}).get("hostclaim.metal3.io/host")
    return bool(label) and (conditions.get("AssociateBMH") or {}).get("status") == "True"


def bound_names(api, namespaces: list[str], dialect: str = "proposal") -> set[str]:
    custom = client.CustomObjectsApi(api)
    found = set()
    for namespace in namespaces:
        for claim in custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "hostclaims")["items"]:
            if is_bound(claim, dialect):
                found.add(claim["metadata"]["name"])
    return found


def start_binder(binder: str, env: kube.KubeEnv, workdir: Path, namespaces: list[str], infra: str) -> subprocess.Popen:
    workdir.mkdir(parents=True, exist_ok=True)
    run_env = ansible_env(env.ansible_env("admin"), workdir)
    if binder in RULEBOOKS:
        (workdir / "vars.yml").write_text(
            json.dumps({"binder_namespaces": namespaces, "binder_host_namespaces": [infra], "binder_resync": 0})
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
            "reconcile_host_namespaces": [infra],
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


def create_namespaces(api, namespaces: list[str]) -> None:
    core = client.CoreV1Api(api)
    for namespace in namespaces:
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))


def wait_warm_up(api, process, log: Path, namespaces: list[str], dialect: str) -> None:
    create_claim(api, namespaces[0], "warm-up", dialect)
    deadline = time.monotonic() + 300
    while "warm-up" not in bound_names(api, namespaces, dialect):
        assert process.poll() is None, log.read_text()[-4000:]
        assert time.monotonic() < deadline, "the warm-up claim was not bound"
        time.sleep(POLL)


def claims_to_bound(api, namespaces: list[str], count: int, dialect: str) -> list[float]:
    """``count`` claims, one every ``SPACING`` s over ``namespaces``; each one's seconds from creation to bound."""
    created: dict[str, float] = {}
    bound_at: dict[str, float] = {}
    start = time.monotonic()
    index = 0
    deadline = start + count * SPACING + 600
    while len(bound_at) < count:
        now = time.monotonic()
        if index < count and now >= start + index * SPACING:
            name = "c%03d" % index
            created[name] = create_claim(api, namespaces[index % 3], name, dialect)
            index += 1
            continue
        seen = time.monotonic()
        for name in bound_names(api, namespaces, dialect):
            if name in created and name not in bound_at:
                bound_at[name] = seen
        assert time.monotonic() < deadline, "%d of %d bound" % (len(bound_at), count)
        time.sleep(POLL if index >= count else 0.01)
    return [bound_at[name] - created[name] for name in created]


#: the API server's counters a measure reads before and after (``/metrics``): its requests by resource and verb
#: (count and seconds) and the admission webhooks' calls and seconds
_COUNTERS = (
    "apiserver_request_duration_seconds_count",
    "apiserver_request_duration_seconds_sum",
    "apiserver_admission_webhook_admission_duration_seconds_count",
    "apiserver_admission_webhook_admission_duration_seconds_sum",
)
_WRITES = ("PATCH", "PUT", "POST", "APPLY")


def apiserver_counters(api) -> dict:
    """The API server's request counters per ``(name, resource, verb)`` (``resource`` ``webhook`` for the admission
    webhooks, summed over their names)."""
    request = api.param_serialize("GET", "/metrics", auth_settings=["BearerToken"])
    text = api.call_api(*request).read().decode()
    found: dict = {}
    for line in text.splitlines():
        name = line.split("{", 1)[0]
        if name not in _COUNTERS:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line.split("{", 1)[1].rsplit("}", 1)[0]))
        key = (name, "webhook", "") if "webhook" in name else (name, labels.get("resource"), labels.get("verb"))
        found[key] = found.get(key, 0.0) + float(line.rsplit(" ", 1)[1])
    return found


def apiserver_work(before: dict, after: dict, claims: int) -> dict:
    """What the API server did between two readings: writes to hosts and claims, their mean seconds, and the
    admission webhooks' calls and mean seconds (per claim where it is a count)."""

    def delta(name, resource, verbs):
        return sum(after.get((name, resource, v), 0.0) - before.get((name, resource, v), 0.0) for v in verbs)

    work: dict = {}
    for resource in ("baremetalhosts", "hostclaims"):
        count = delta("apiserver_request_duration_seconds_count", resource, _WRITES)
        seconds = delta("apiserver_request_duration_seconds_sum", resource, _WRITES)
        work[resource + "_writes_per_claim"] = round(count / claims, 2)
        work[resource + "_write_mean_seconds"] = round(seconds / count, 4) if count else None
    calls = delta("apiserver_admission_webhook_admission_duration_seconds_count", "webhook", ("",))
    seconds = delta("apiserver_admission_webhook_admission_duration_seconds_sum", "webhook", ("",))
    work["webhook_calls_per_claim"] = round(calls / claims, 2)
    work["webhook_mean_seconds"] = round(seconds / calls, 4) if calls else None
    return work


def measure(
    binder: str,
    env: kube.KubeEnv,
    workdir: Path,
    count: int = CLAIMS,
    dialect: str = "proposal",
    infra: str = INFRA,
    tag: str = "",
) -> dict:
    """``binder`` started on ``env``, its warm-up claim bound, then ``count`` claims: latency percentiles.
    ``tag`` names the run's namespaces (``lat-<binder><tag>-N``), so a binder can be measured twice on one cluster."""
    namespaces = namespaces_of(binder + tag)
    with env.api("admin") as api:
        create_namespaces(api, namespaces)
    process = start_binder(binder, env, workdir / (binder + tag), namespaces, infra)
    try:
        with env.api("admin") as api:
            progress(binder, dialect, "warm-up claim")
            wait_warm_up(api, process, workdir / (binder + tag) / "binder.log", namespaces, dialect)
            progress(binder, dialect, count, "claims, one every", SPACING, "s")
            before = apiserver_counters(api)
            latencies = claims_to_bound(api, namespaces, count, dialect)
            work = apiserver_work(before, apiserver_counters(api), count)
    finally:
        stop(process)
    log = (workdir / (binder + tag) / "binder.log").read_text()
    result = {
        "p50_seconds": round(statistics.median(latencies), 3),
        "p95_seconds": round(percentile(latencies, 0.95), 3),
        "max_seconds": round(max(latencies), 3),
        "claims": len(latencies),
        "apiserver": work,
    }
    if binder in RULEBOOKS:
        result["passes"] = log.count("baremetal.tenancy.metal3_events - INFO - binder pass ")
    else:
        result["interval_seconds"] = 2
    progress(binder, json.dumps(result))
    return result


def operator_world(workdir: Path, test_bed: kube.KubeEnv) -> dict:
    """The same measure with the real baremetal-operator running, on its own HostClaim dialect, and, in turns with
    it while the operator's stack runs (the same load on both), on the test bed's world with as many claims."""
    from harness import baremetal_operator as bmo
    from harness import sushy

    hosts = len(OPERATOR_BINDERS) * (OPERATOR_CLAIMS + 1)
    systems = sushy.default_systems(hosts)
    for number, system in enumerate(systems):
        system["name"] = "lat-%d" % number
        system["nics"] = [{"mac": "52:54:02:00:00:%02x" % number, "ip": "192.0.2.%d" % (100 + number)}]
    figures: dict = {"claims": OPERATOR_CLAIMS, "hosts": hosts, "dialect": "bmo"}
    env = kube.KubeEnv(workdir / "kube")
    stack = None
    try:
        env.start()
        started = time.monotonic()
        stack = bmo.start_metal3(
            env, workdir / "metal3", systems=systems, namespace=OP_INFRA, claim_dialect="bmo", notify=0,
            postgresql=True,
        )  # fmt: skip
        figures["stack_start_seconds"] = round(time.monotonic() - started, 1)
        with env.api("admin") as api:
            started = time.monotonic()
            operator_hosts(api, stack, hosts)
            figures["created_to_available_seconds"] = round(time.monotonic() - started, 1)
        for binder in OPERATOR_BINDERS:
            beside = measure(binder, test_bed, workdir / "test-bed", OPERATOR_CLAIMS, tag="-same")
            figures[binder] = measure(binder, env, workdir / "op", OPERATOR_CLAIMS, "bmo", OP_INFRA)
            figures[binder + "_test_bed_same_claims"] = beside
            figures[binder + "_p95_ratio_to_test_bed"] = round(
                figures[binder]["p95_seconds"] / beside["p95_seconds"], 2
            )
    finally:
        if stack is not None:
            stack.stop()
        env.stop()
    return figures


def operator_hosts(api, stack, count: int) -> None:
    """``count`` hosts of the operator's (the live-ISO route, ``fixtures_bmo.create_hosts``), shared with the binders'
    namespaces by one HostDeployPolicy; returns once the operator has every one ``available``."""
    from fixtures_bmo import create_hosts

    client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=OP_INFRA)))
    policy = {
        "apiVersion": "%s/%s" % (GROUP, VERSION),
        "kind": "HostDeployPolicy",
        "metadata": {"name": "latency", "namespace": OP_INFRA},
        "spec": {"hostClaimNamespaces": {"names": [n for b in OPERATOR_BINDERS for n in namespaces_of(b)]}},
    }
    client.CustomObjectsApi(api).create_namespaced_custom_object(GROUP, VERSION, OP_INFRA, "hostdeploypolicies", policy)
    create_hosts(api, stack, OP_INFRA, dict(("lo%02d" % n, (n, "latency")) for n in range(count)), timeout=900)


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
            hosts = len(BINDERS) * (CLAIMS + 1) + (
                len(OPERATOR_BINDERS) * (OPERATOR_CLAIMS + 1) if OPERATOR_CLAIMS else 0
            )
            progress("seeding", hosts, "hosts")
            seed_hosts(api, hosts)
        for binder in BINDERS:
            result[binder] = measure(binder, env, workdir)
        if OPERATOR_CLAIMS and OPERATOR_BINDERS:
            progress("the real operator, BMO's dialect:", OPERATOR_CLAIMS, "claims")
            result["operator"] = operator_world(workdir / "operator", env)
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
