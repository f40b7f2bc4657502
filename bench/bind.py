#!/usr/bin/env python
"""Benchmark: one host_bind pass over pending claims from many namespaces, and N binders at once.

Sizes from the environment: ``BENCH_HOSTS`` (1,000), ``BENCH_CLAIMS`` (500), ``BENCH_NAMESPACES`` (10),
``BENCH_WORKERS`` (8, the binder's ``workers``), ``BENCH_BINDERS`` (4, binders at once),
``BENCH_OPERATOR_HOSTS`` (20; 0 leaves the real operator out), ``BENCH_DIALECTS`` (``proposal,bmo``),
``BENCH_REPEATS`` (1, rounds of the binders at once), ``BENCH_PASS_REPEATS`` (1, single passes each against its
floor: ``single_pass.ratios_to_floor`` and their median, the first pass's figures in the rest of ``single_pass``);
``BENCH_PROFILE`` (a file: the single pass's CPU per function in every thread, yappi, saved as pstats);
``BENCH_CLIENT`` (``light``: the binders, the pass's floor and the raw writes on the collection's own transport,
``metal3/transport.py``'s ``light_client``, as the modules run them; ``library``: on the kubernetes library's
``ApiClient``, as this bench did before 2026-11-30); ``BENCH_WATCH_CACHE`` (``0``: lists read from etcd, the test
bed's setting; ``1``: the API server of the hosts and claims keeps a watch cache, as real clusters do).
Issue 20's size: ``BENCH_HOSTS=10000 BENCH_CLAIMS=5000 BENCH_NAMESPACES=50 BENCH_BINDERS=8``.

Starts its own control plane (etcd + kube-apiserver + kube-controller-manager,
``tests/integration/harness/kube.py``), installs the CRDs of the
hostclaim_setup role, creates the hosts and claims (``SEED_PROCESSES`` processes
of ``SEED_THREADS`` threads each, raw requests: ``seed_requests_per_second``), and measures:

- one pass of the binder (the code host_bind runs, in a process of its own, so
  the figures are the pass and not Ansible's start-up): wall time, requests per
  verb, ``requests_per_bound_claim`` per verb (``{"patch": 3.0, "get": 0.0, ...}``
  on this world: a request a claim starts to cost shows under its verb),
  ``writes_per_bound_claim``, ``swept`` (hosts the pass released as bound to a
  claim that is gone: 0, the world has none), ``lists_per_pass`` (collections
  listed: hosts, claims, namespaces, Secrets; it does not grow with the claims)
  and ``list_requests_per_pass`` (pages of ``LIST_PAGE`` items: it grows with the
  objects listed, not per claim);
- the binder's memory: the peak resident set of that process
  (``ru_maxrss``), before the pass (interpreter, modules, client) and at its end;
- the same number of raw ``consumerRef`` merge patches (with a
  resourceVersion precondition, one at a time, same client stack, same process;
  timed on a sample of the hosts the pass leaves free, half before the pass and
  half after it, so a load that changes during the run weighs on both alike)
  and the ratio of the pass time to that time;
- the pass's floor (``bench/_bind_floor.py``): the same writes per bound claim the pass sent (the host's
  ``consumerRef``, the claim's commit, its status: three on this world), replayed raw with the same preconditions
  and the same ``workers`` on copies of the claims and the hosts the pass left free, right after the pass on the
  same apiserver: ``single_pass.floor`` (seconds, writes per claim, claims replayed) and
  ``single_pass.ratio_to_floor`` (the pass over its floor: what listing, planning and the binder's own work add to
  the writes it cannot avoid; goal 1.2 or less); ``single_pass.server_cpu_seconds`` and
  ``single_pass.floor.server_cpu_seconds``: the CPU seconds the API server, etcd and the controller manager used
  during the pass and during its floor (they share the two cores with the binder: a pass that makes the servers
  work harder per write shows there and not in its own ``cpu_seconds``); ``single_pass.reads_alone``: the pass's
  lists of every host, claim and namespace again on their own right after it, with the same three figures (the
  part of the pass its floor does not do);
- ``BENCH_BINDERS`` binders at once (as many processes, each running passes until
  one changes nothing, at most 10) over as many fresh claims, ``BENCH_REPEATS`` (1) times
  on the same hosts (before each round every host is freed and the previous claims are
  deleted, raw writes and not the release flow: no operator deprovisions here; the new
  claims have the same names in the same namespaces). Per round: total time, passes,
  conflicts retried, errors, peak resident set, and the invariants read back from the
  cluster: no claim bound to two hosts (``consumerRef``), no host bound to two claims
  (the host each claim's binder record names, read as every reader does), every record
  agreeing with the host's ``consumerRef``, ``min(claims, hosts)`` claims bound and the
  rest pending with a no-host reason (``pending_reasons``); ``invariants_held`` sums it
  up with 0 errors and every binder settled. ``binders_at_once`` has the rounds and a
  summary (seconds min/median/max, totals).

Issue 17's storm (8 binders, 400 claims from 8 tenants, 300 hosts, 3 times; the proposal's
dialect, no operator)::

    BENCH_HOSTS=300 BENCH_CLAIMS=400 BENCH_NAMESPACES=8 BENCH_BINDERS=8 BENCH_REPEATS=3 \
    BENCH_DIALECTS=proposal BENCH_OPERATOR_HOSTS=0 .venv/bin/python bench/bind.py

Both on each HostClaim dialect, with the same keys under ``dialects[]``
(``dialect``: ``proposal``, the CRD of hostclaim_setup and each host's sharing
annotation; ``bmo``, baremetal-operator v0.14's own HostClaim CRD and one
HostDeployPolicy), and ``bmo_to_proposal_pass_ratio``.

- with Metal3's real baremetal-operator (``make bmo``) on an apiserver of its
  own, Ironic and sushy-tools BMCs: ``BENCH_OPERATOR_HOSTS`` (20) hosts are
  registered and ``available``, as many claims (live ISO, ``online: true``)
  are pending; the time from the start of the pass that binds them to every
  host ``provisioned``, and how it splits per host between the operator
  (bound -> Ironic node leaves ``available``, Ironic ``active`` -> host
  ``provisioned``) and Ironic (deploy, ``available`` -> ``active``); host
  and node states are polled every 0.5 s, so each mark is good to 0.5 s.

Prints ONE JSON line (progress on stderr). Usage: ``.venv/bin/python bench/bind.py`` (``make bench``).
"""

from __future__ import annotations

import contextlib
import gc
import json
import multiprocessing
import os
import resource
import shutil
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))

import _bind_floor as bind_floor
import yaml
from harness import kube
from harness.ansible import collections_root
from kubernetes import client

HOSTS = int(os.environ.get("BENCH_HOSTS", "1000"))
CLAIMS = int(os.environ.get("BENCH_CLAIMS", "500"))
NAMESPACES = int(os.environ.get("BENCH_NAMESPACES", "10"))
WORKERS = int(os.environ.get("BENCH_WORKERS", "8"))
OPERATOR_HOSTS = int(os.environ.get("BENCH_OPERATOR_HOSTS", "20"))
#: the HostClaim dialects measured, in this order (BENCH_DIALECTS=proposal leaves baremetal-operator's out)
DIALECTS = tuple(os.environ.get("BENCH_DIALECTS", "proposal,bmo").split(","))
#: the client of the binders, the floor and the raw writes: ``light`` (the modules' transport) or ``library``
CLIENT = os.environ.get("BENCH_CLIENT", "light")
#: ``BENCH_WATCH_CACHE=1``: the API server of the hosts and claims keeps a watch cache, as real clusters' do (the
#: default ``0`` is the test bed's setting, lists read from etcd: 0.36-0.48 s of a pass's read of 1,000 hosts and 500
#: claims against 0.10-0.16 s with the cache, bench/README.md 2026-12-01)
WATCH_CACHE = os.environ.get("BENCH_WATCH_CACHE", "0") == "1"
#: binders at once
BINDERS = int(os.environ.get("BENCH_BINDERS", "4"))
#: rounds of BINDERS binders at once, each over fresh claims on the same hosts
REPEATS = int(os.environ.get("BENCH_REPEATS", "1"))
#: single passes, each against its floor, on the same control plane (the world reset and fresh claims between them)
PASS_REPEATS = int(os.environ.get("BENCH_PASS_REPEATS", "1"))
#: processes x threads creating and resetting the world
SEED_PROCESSES, SEED_THREADS = 2, 8
POLL = 0.5
OP_INFRA, OP_TENANT = "bench-bmo-infra", "bench-bmo"
INFRA = "bench-infra"
GROUP, VERSION = "metal3.io", "v1alpha1"
MERGE = "application/merge-patch+json"
CRD_FILES = ("hostclaim-crd.yaml", "baremetalhost-crd.yaml")


def metal3_modules():
    sys.path.insert(0, str(collections_root()))
    from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3 import client as m3client
    from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder import run as metal3

    return metal3, m3client


def install_crds(api, dialect: str) -> None:
    """The BareMetalHost CRD of hostclaim_setup and the HostClaim CRD of ``dialect``: the proposal's (the role's) or
    baremetal-operator's own (with its HostDeployPolicy, from the operator built by ``make bmo``)."""
    ext = client.ApiextensionsV1Api(api)
    names = CRD_FILES if dialect == "proposal" else CRD_FILES[1:]
    for name in names:
        ext.create_custom_resource_definition(
            yaml.safe_load((REPO / "roles" / "hostclaim_setup" / "files" / name).read_text())
        )
    plurals = ["hostclaims", "baremetalhosts"]
    if dialect == "bmo":
        from harness import baremetal_operator as bmo

        crds = [
            crd
            for crd in bmo.bmo_crds(bmo.require_bmo(), claim_dialect="bmo")
            if crd["metadata"]["name"] in ("hostclaims.metal3.io", "hostdeploypolicies.metal3.io")
        ]
        bmo.install_crds(api, crds)
        plurals.append("hostdeploypolicies")
    custom = client.CustomObjectsApi(api)
    deadline = time.monotonic() + 60
    for plural in plurals:
        while True:
            try:
                custom.list_cluster_custom_object(GROUP, VERSION, plural)
                break
            except client.exceptions.ApiException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)


def host_body(index: int, dialect: str) -> dict:
    """A host shared with ``bench.*`` namespaces (the proposal: its annotation; baremetal-operator's dialect: the
    HostDeployPolicy of its namespace)."""
    name = "h%05d" % index
    sharing = {} if dialect == "bmo" else {"baremetal.tenancy/host-claim-namespaces": '{"matches":"bench.*"}'}
    return {
        "apiVersion": "%s/%s" % (GROUP, VERSION),
        "kind": "BareMetalHost",
        "metadata": {
            "name": name,
            "namespace": INFRA,
            "labels": {"suite": "bench", "rack": "r%d" % (index % 20)},
            # the sharing policy, as host_share writes it (none on baremetal-operator's dialect)
            "annotations": sharing,
        },
        "spec": {
            "online": False,
            "bootMACAddress": "52:54:%02x:%02x:%02x:01" % (index // 65536, index // 256 % 256, index % 256),
            "bmc": {
                "address": "redfish://10.%d.%d.%d/redfish/v1/Systems/1"
                % (index // 65536, index // 256 % 256, index % 256),
                "credentialsName": "%s-bmc" % name,
            },
        },
    }


def host_status(index: int) -> dict:
    return {
        "status": {
            "provisioning": {"state": "available"},
            "operationalStatus": "OK",
            "poweredOn": False,
            "hardware": {
                "nics": [
                    {
                        "name": "eno1",
                        "mac": "52:54:%02x:%02x:%02x:01" % (index // 65536, index // 256 % 256, index % 256),
                        "ip": "192.%d.%d.%d" % (index // 62500, index // 250 % 250, index % 250 + 1),
                    }
                ]
            },
        }
    }


def claim_body(index: int, prefix: str, dialect: str) -> dict:
    namespace = "%s-%d" % (prefix, index % NAMESPACES)
    spec = {"online": False, "hostSelector": {"matchLabels": {"suite": "bench"}}}
    if dialect == "bmo":
        spec = {"poweredOn": False, "hostSelector": {"matchLabels": {"suite": "bench"}}}
    return {
        "apiVersion": "%s/%s" % (GROUP, VERSION),
        "kind": "HostClaim",
        "metadata": {"name": "c%05d" % index, "namespace": namespace},
        "spec": spec,
    }


def binder_client(kubeconfig: str):
    """The client ``KubeIO`` sends the binder's requests with (``BENCH_CLIENT``): the collection's light transport,
    as ``host_bind`` builds it from a kubeconfig (``connection.kube_api_client``), or the kubernetes library's
    ``ApiClient`` (whose configuration refreshes the token and looks up the proxy before every request)."""
    if CLIENT == "library":
        from kubernetes import config

        return config.new_client_from_config(config_file=kubeconfig)
    metal3_modules()
    from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3 import transport

    settings = transport.from_kubeconfig(kubeconfig, None)
    if settings is None:  # the harness writes a token and a CA file: the light transport reads that
        raise RuntimeError("the light transport cannot read %s (BENCH_CLIENT=library reads it)" % kubeconfig)
    return transport.light_client(settings)


@contextlib.contextmanager
def opened_client(kubeconfig: str):
    """``binder_client`` for a ``with`` block, its connections closed at the end."""
    api = binder_client(kubeconfig)
    try:
        yield api
    finally:
        if hasattr(api, "close"):
            api.close()
        else:
            api.rest_client.pool_manager.clear()


def raw_io(kubeconfig: str):
    """A ``KubeIO`` (raw JSON requests, the binder's client stack) as the cluster admin."""
    _metal3, m3client = metal3_modules()
    return m3client, m3client.KubeIO(binder_client(kubeconfig))


def seed_part(kubeconfig: str, job: str, items: list, dialect: str, prefix: str) -> int:
    """One seeding process: ``SEED_THREADS`` threads creating hosts (``job`` ``hosts``: create + status) or claims
    (``claims``), or resetting (``free``: clear hosts' consumerRef; ``drop``: delete claims, finalizers first)."""
    m3client, io = raw_io(kubeconfig)
    hosts = m3client.api_path(m3client.GROUP_VERSION, "baremetalhosts", INFRA)

    def one(item):
        if job == "hosts":
            io.request("create", "POST", hosts, "host", body=host_body(item, dialect))
            io.request(
                "patch", "PATCH", "%s/h%05d/status" % (hosts, item), "host", body=host_status(item), content_type=MERGE
            )
        elif job == "claims":
            body = claim_body(item, prefix, dialect)
            io.create_claim(body["metadata"]["namespace"], body)
        elif job == "free":
            io.patch_host(INFRA, item, {"spec": {"consumerRef": None}})
        elif job == "drop":
            namespace, name = item
            io.patch_claim(namespace, name, {"metadata": {"finalizers": None}})
            io.delete_claim(namespace, name)

    with ThreadPoolExecutor(SEED_THREADS) as pool:
        list(pool.map(one, items))
    return io.figures()["total"]


def in_parallel(kubeconfig: str, job: str, items: list, dialect: str = "proposal", prefix: str = "bench") -> int:
    """``seed_part`` over ``items`` in ``SEED_PROCESSES`` processes; the number of requests sent."""
    if not items:
        return 0
    context = multiprocessing.get_context("spawn")
    parts = [items[number::SEED_PROCESSES] for number in range(SEED_PROCESSES)]
    with context.Pool(SEED_PROCESSES) as pool:
        return sum(pool.starmap(seed_part, [(kubeconfig, job, part, dialect, prefix) for part in parts if part]))


def create_world(api, kubeconfig: str, prefix: str, with_hosts: bool, dialect: str = "proposal") -> int:
    """Hosts shared with ``bench.*`` namespaces (the proposal: each host's annotation; baremetal-operator's
    dialect: one HostDeployPolicy of the hosts' namespace) and pending claims in the dialect's shape; the number
    of requests sent."""
    core = client.CoreV1Api(api)
    custom = client.CustomObjectsApi(api)
    names = ["%s-%d" % (prefix, i) for i in range(NAMESPACES)]
    for name in names + ([INFRA] if with_hosts else []):
        try:
            core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
        except client.exceptions.ApiException as exc:
            if exc.status != 409:  # a later round of the binders at once: the tenants' namespaces are there
                raise
    if with_hosts and dialect == "bmo":
        custom.create_namespaced_custom_object(
            GROUP,
            VERSION,
            INFRA,
            "hostdeploypolicies",
            {
                "apiVersion": "%s/%s" % (GROUP, VERSION),
                "kind": "HostDeployPolicy",
                "metadata": {"name": "bench", "namespace": INFRA},
                "spec": {"hostClaimNamespaces": {"nameMatches": "bench.*"}},
            },
        )
    sent = len(names) + (1 if with_hosts else 0)
    if with_hosts:
        sent += in_parallel(kubeconfig, "hosts", list(range(HOSTS)), dialect, prefix)
    return sent + in_parallel(kubeconfig, "claims", list(range(CLAIMS)), dialect, prefix)


def raw_consumer_ref_writes(io, count: int, sample: int, prefix: str, give_back: bool = False) -> float:
    """The time of ``count`` merge patches of ``spec.consumerRef`` on free hosts, one at a time, with a precondition,
    estimated from ``sample`` of them (the hosts they take are left consumed by the claims ``raw/<prefix>-N``).

    ``give_back``: the hosts are freed again afterwards (raw patches, not timed). The writes sampled before the pass
    must be: no claim ``raw/<prefix>-N`` exists, so the pass would sweep every such host as bound to a deleted claim
    (one GET of the claim and one release patch each, counted as the pass's requests per bound claim)."""
    free = [h for h in io.list_hosts([INFRA]) if not h["spec"].get("consumerRef")][:sample]
    if not free:  # no host left free (as many claims as hosts, or more): nothing to compare with
        return 0.0
    started = time.monotonic()
    for number, host in enumerate(free):
        io.patch_host(
            INFRA,
            host["metadata"]["name"],
            {
                "metadata": {"resourceVersion": host["metadata"]["resourceVersion"]},
                "spec": {
                    "consumerRef": {
                        "apiVersion": "metal3.io/v1alpha1",
                        "kind": "HostClaim",
                        "namespace": "raw",
                        "name": "%s-%d" % (prefix, number),
                    }
                },
            },
        )
    elapsed = time.monotonic() - started
    if give_back:
        for host in free:
            io.patch_host(INFRA, host["metadata"]["name"], {"spec": {"consumerRef": None}})
    return elapsed / max(1, len(free)) * count


def reset(kubeconfig: str) -> int:
    """Free every host and delete every claim (finalizers dropped); the number of requests sent."""
    _m3client, io = raw_io(kubeconfig)
    hosts = [h["metadata"]["name"] for h in io.list_hosts([INFRA]) if h["spec"].get("consumerRef")]
    claims = [(c["metadata"]["namespace"], c["metadata"]["name"]) for c in io.list_claims()]
    return in_parallel(kubeconfig, "free", hosts) + in_parallel(kubeconfig, "drop", claims)


class GcClock:
    """The time this process spends in the cyclic garbage collector while entered, per generation (``gc.callbacks``):
    a pass decodes every host and claim it lists, and a collection walks every object still alive."""

    def __init__(self):
        self.seconds = [0.0, 0.0, 0.0]
        self.collections = [0, 0, 0]
        self._started = 0.0

    def _callback(self, phase, info):
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds[info["generation"]] += time.perf_counter() - self._started
            self.collections[info["generation"]] += 1

    def __enter__(self):
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc):
        gc.callbacks.remove(self._callback)

    def figures(self) -> dict:
        return {"seconds": round(sum(self.seconds), 3), "per_generation_seconds": [round(s, 3) for s in self.seconds],
                "collections": list(self.collections)}  # fmt: skip


def peak_rss_mib() -> float:
    """The peak resident set of this process so far (``ru_maxrss`` is in KiB on Linux)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def counting_io(m3client, api):
    """A ``KubeIO`` that also counts the collections listed (``list_pages`` calls), not only the pages, and records
    the host and claim patches it sends (``bind_floor.recording_io``: the writes the floor replays)."""

    class CountingIO(bind_floor.recording_io(m3client.KubeIO)):
        collections_listed = 0

        def list_pages(self, *args, **kwargs):
            with self._lock:
                self.collections_listed += 1
            return super().list_pages(*args, **kwargs)

    return CountingIO(api)


def reads_alone(io, pids: dict) -> dict:
    """The pass's main reads (every host, every claim, the namespaces) again on their own, right after the pass:
    their seconds, this process's CPU and the servers' of ``pids`` (what the floor, which only writes, never pays)."""
    with bind_floor.ServerClock(pids) as servers:
        started, cpu = time.monotonic(), time.process_time()
        listed = len(io.list_hosts()) + len(io.list_claims()) + len(io.list_namespaces())
        seconds, cpu = time.monotonic() - started, time.process_time() - cpu
    return {
        "seconds": round(seconds, 3),
        "cpu_seconds": round(cpu, 3),
        "server_cpu_seconds": servers.used,
        "objects": listed,
    }


def pass_process(kubeconfig: str, queue, pids: dict) -> None:
    """One binder pass in a process of its own (for its peak memory), then as many raw consumerRef writes; the CPU
    the servers of ``pids`` used during the pass and during its floor beside the pass's own."""
    metal3, m3client = metal3_modules()

    with opened_client(kubeconfig) as api:
        io = counting_io(m3client, api)
        binder = metal3.Binder(io, binder_id="bench-1", workers=WORKERS)
        # the raw writes are sampled on both sides of the pass (half of the hosts the pass leaves free before it,
        # the other half after it): a load that changes during the run weighs on both figures alike
        sample = min(CLAIMS, max(0, HOSTS - CLAIMS) // 2)
        # (the hosts taken before the pass are given back: the pass sees the bench's claims and free hosts only)
        raw_before = raw_consumer_ref_writes(m3client.KubeIO(api), CLAIMS, sample, "raw-before", give_back=True)
        before = peak_rss_mib()
        profile = os.environ.get("BENCH_PROFILE")
        if profile:  # the pass's CPU per function, every thread (yappi), saved as pstats
            import yappi

            yappi.set_clock_type("cpu")
            yappi.start()
        with GcClock() as collector, bind_floor.ServerClock(pids) as servers:
            started, cpu = time.monotonic(), time.process_time()
            report = binder.run()
            seconds, cpu = time.monotonic() - started, time.process_time() - cpu
        if profile:
            yappi.stop()
            yappi.get_func_stats().save(profile, type="pstat")
        peak = peak_rss_mib()
        bound = report["summary"]["bound"]
        reads = reads_alone(m3client.KubeIO(api), pids)
        # the floor: the pass's own writes per bound claim, sent raw with the same workers on copies of the claims
        # and the hosts the pass left free (given back after, untimed, before the raw writes below take them)
        floor = bind_floor.measure_floor(
            m3client.KubeIO(api), bind_floor.claim_sequences(io.records), INFRA, WORKERS, pids
        )
        floor["unreplayed_writes"] = io.other_writes
        raw_after = raw_consumer_ref_writes(m3client.KubeIO(api), CLAIMS, sample, "raw-after")
        raw = (raw_before + raw_after) / 2 * bound / max(1, CLAIMS)
    queue.put(
        {
            "seconds": seconds,
            "cpu_seconds": cpu,
            "server_cpu_seconds": servers.used,
            "gc": collector.figures(),
            "dialect": report["dialect"],
            "bound": bound,
            "swept": report["summary"]["swept"],
            "errors": len(report["errors"]),
            "requests": report["requests"],
            "collections_listed": io.collections_listed,
            "timings": report["timings"],
            "raw": raw,
            "floor": floor,
            "reads_alone": reads,
            "raw_sides": [raw_before * bound / max(1, CLAIMS), raw_after * bound / max(1, CLAIMS)],
            "rss_before_pass_mib": before,
            "peak_rss_mib": peak,
            "client": type(api).__name__,
        }
    )


def binder_process(kubeconfig: str, number: int, queue) -> None:
    """One binder: passes until one changes nothing (at most 10)."""
    metal3, m3client = metal3_modules()

    passes, conflicts, requests, errors, settled = 0, 0, 0, 0, False
    started = time.monotonic()
    with opened_client(kubeconfig) as api:
        for _dummy in range(10):
            io = m3client.KubeIO(api)
            report = metal3.Binder(io, binder_id="binder-%d" % number, host_namespaces=[INFRA], workers=WORKERS).run()
            passes += 1
            conflicts += report["requests"]["conflicts"]
            requests += report["requests"]["total"]
            errors += len(report["errors"])
            if report["settled"]:
                settled = True
                break
    queue.put(
        {
            "binder": number,
            "passes": passes,
            "settled": settled,
            "conflicts": conflicts,
            "requests": requests,
            "errors": errors,
            "seconds": round(time.monotonic() - started, 2),
            "peak_rss_mib": peak_rss_mib(),
        }
    )


def check_bindings(api) -> dict:
    """The bindings read back from the cluster, and the invariants of a settled storm (see the module docstring).

    ``claims_bound_twice``: claims that two hosts' ``consumerRef`` point at; ``hosts_bound_twice``: hosts that two
    claims' binder records name (``claim_view.bound_host``, what every reader uses); ``records_not_matching``:
    claims whose record names a host whose ``consumerRef`` is not that claim, and hosts pointing at no claim."""
    metal3_modules()  # the collection on sys.path
    from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import (
        bmo_controller as bmo_claim_status,
    )
    from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import bmo_upward
    from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import view as claim_view

    no_host_reasons = set(bmo_upward.NO_HOST_REASONS) | {bmo_claim_status.NO_HOST_REASON}
    custom = client.CustomObjectsApi(api)
    hosts = custom.list_namespaced_custom_object(GROUP, VERSION, INFRA, "baremetalhosts")["items"]
    refs = {
        h["metadata"]["name"]: (h["spec"]["consumerRef"]["namespace"], h["spec"]["consumerRef"]["name"])
        for h in hosts
        if h["spec"].get("consumerRef")
    }
    claims = custom.list_cluster_custom_object(GROUP, VERSION, "hostclaims")["items"]
    keys = {(c["metadata"]["namespace"], c["metadata"]["name"]) for c in claims}
    labelled = sum(1 for c in claims if (c["metadata"].get("labels") or {}).get("hostclaim.metal3.io/host"))
    recorded: dict[str, list] = {}
    pending, reasons, mismatched = 0, {}, sum(1 for ref in refs.values() if ref not in keys)
    for claim in claims:
        key = (claim["metadata"]["namespace"], claim["metadata"]["name"])
        host = claim_view.bound_host(claim)
        if host:
            recorded.setdefault(host, []).append(key)
            mismatched += refs.get(host) != key
            continue
        pending += 1
        reason = "no condition"
        for condition in (claim.get("status") or {}).get("conditions") or []:
            if condition.get("type") in (claim_view.ASSOCIATED, claim_view.BMO_ASSOCIATED):
                reason = "%s%s" % (condition.get("reason"), "" if condition.get("message") else " (no message)")
        reasons[reason] = reasons.get(reason, 0) + 1
    bound = sum(len(holders) for holders in recorded.values())
    claims_bound_twice = len(refs) - len(set(refs.values()))
    hosts_bound_twice = sum(1 for holders in recorded.values() if len(holders) > 1)
    expected = min(len(claims), len(hosts))
    return {
        "bound": bound,
        "pending": pending,
        "pending_reasons": reasons,
        "expected_bound": expected,
        "claims_bound_twice": claims_bound_twice,
        "hosts_bound_twice": hosts_bound_twice,
        "records_not_matching": mismatched,
        "labelled": labelled,
        "bindings_hold": (
            bound == expected
            and pending == len(claims) - expected
            and sum(reasons.get(reason, 0) for reason in no_host_reasons) == pending
            and not (claims_bound_twice or hosts_bound_twice or mismatched)
        ),
    }


def binders_at_once(env, kubeconfig: str, dialect: str, repeat: int) -> dict:
    """Round ``repeat`` of ``BINDERS`` binders at once: every host freed, the previous claims deleted, ``CLAIMS``
    fresh ones (the same names in the same namespaces), the binders started together; its figures."""
    context = multiprocessing.get_context("spawn")
    progress(dialect, "round", repeat + 1, "of", REPEATS, ": reset and", CLAIMS, "fresh claims")
    started = time.monotonic()
    reset(kubeconfig)
    with env.api("admin") as api:
        create_world(api, kubeconfig, "benchn", with_hosts=False, dialect=dialect)
    reset_seconds = time.monotonic() - started
    progress(dialect, BINDERS, "binders at once")
    queue = context.Queue()
    started = time.monotonic()
    processes = [context.Process(target=binder_process, args=(kubeconfig, n, queue)) for n in range(BINDERS)]
    for process in processes:
        process.start()
    binders = results(queue, processes)
    for process in processes:
        process.join(timeout=60)
    total = time.monotonic() - started
    with env.api("admin") as api:
        checked = check_bindings(api)
    binders.sort(key=lambda b: b["binder"])
    errors = sum(b["errors"] for b in binders)
    settled = all(b["settled"] for b in binders)
    figures = {
        "round": repeat + 1,
        "reset_seconds": round(reset_seconds, 1),
        "seconds": round(total, 3),
        # each binder's own passes, from after its imports (the wall time above includes their interpreters starting)
        "binder_seconds_max": max(b["seconds"] for b in binders),
        "passes": [b["passes"] for b in binders],
        "all_settled": settled,
        "conflicts_retried": sum(b["conflicts"] for b in binders),
        "errors": errors,
        "requests": sum(b["requests"] for b in binders),
        "peak_rss_mib": max(b["peak_rss_mib"] for b in binders),
    }
    holds = checked.pop("bindings_hold")
    figures.update(checked, invariants_held=holds and errors == 0 and settled)
    progress(dialect, "round", repeat + 1, "done", json.dumps(figures, sort_keys=True))
    return figures


def storm_summary(rounds: list[dict]) -> dict:
    """``binders_at_once``: the rounds and what they add up to."""
    seconds = [entry["seconds"] for entry in rounds]
    return {
        "binders": BINDERS,
        "claims": CLAIMS,
        "hosts": HOSTS,
        "namespaces": NAMESPACES,
        "repeats": len(rounds),
        "seconds": {"min": min(seconds), "median": statistics.median(seconds), "max": max(seconds)},
        "conflicts_retried": sum(entry["conflicts_retried"] for entry in rounds),
        "errors": sum(entry["errors"] for entry in rounds),
        "claims_bound_twice": sum(entry["claims_bound_twice"] for entry in rounds),
        "hosts_bound_twice": sum(entry["hosts_bound_twice"] for entry in rounds),
        "invariants_held": all(entry["invariants_held"] for entry in rounds),
        "rounds": rounds,
    }


# --- with the real baremetal-operator ---------------------------------------------------------------------------


class StatePoller(threading.Thread):
    """Records, per host, when each BareMetalHost state and each Ironic node state was first seen."""

    def __init__(self, api, stack):
        super().__init__(daemon=True)
        import requests

        self.custom = client.CustomObjectsApi(api)
        self.session = requests.Session()
        self.session.auth = ("metal3", stack.ironic_password)
        self.session.headers["X-OpenStack-Ironic-API-Version"] = "1.81"
        self.nodes_url = stack.ironic.url + "/v1/nodes?fields=name,provision_state"
        self.host_seen: dict[tuple[str, str], float] = {}
        self.node_seen: dict[tuple[str, str], float] = {}
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            now = time.monotonic()
            for host in self.custom.list_namespaced_custom_object(GROUP, VERSION, OP_INFRA, "baremetalhosts")["items"]:
                state = ((host.get("status") or {}).get("provisioning") or {}).get("state")
                self.host_seen.setdefault((host["metadata"]["name"], state), now)
            for node in self.session.get(self.nodes_url, timeout=10).json()["nodes"]:
                # BMO names a host's node <namespace>~<name>
                self.node_seen.setdefault((node["name"].split("~")[-1], node["provision_state"]), now)
            self.stopping.wait(POLL)

    def first(self, seen: dict, name: str, states) -> float | None:
        times = [seen[(name, state)] for state in states if (name, state) in seen]
        return min(times) if times else None


def operator_hosts(api, stack, accounts: list[dict]) -> list[str]:
    """``OPERATOR_HOSTS`` live-ISO hosts (inspection disabled, what it would find in the annotation), shared with
    the tenant namespace; returns their names once the operator has them ``available``."""
    from harness import baremetal_operator as bmo

    core = client.CoreV1Api(api)
    custom = client.CustomObjectsApi(api)
    for namespace in (OP_INFRA, OP_TENANT):
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    pool = bmo.BmcPool(stack, 0, accounts)
    names = ["op%02d" % number for number in range(OPERATOR_HOSTS)]
    for index, name in enumerate(names, start=1):
        slot = pool.slot(name)
        core.create_namespaced_secret(
            OP_INFRA,
            client.V1Secret(
                metadata=client.V1ObjectMeta(name=name + "-bmc"),
                string_data={"username": slot.username, "password": slot.password},
            ),
        )
        body = {
            "apiVersion": "%s/%s" % (GROUP, VERSION),
            "kind": "BareMetalHost",
            "metadata": {
                "name": name,
                "namespace": OP_INFRA,
                "labels": {"suite": "bench-bmo"},
                "annotations": {
                    "baremetal.tenancy/host-claim-namespaces": '{"matches":"bench-bmo"}',
                    "inspect.metal3.io/hardwaredetails": json.dumps(bmo.hardware_details(index)),
                },
            },
            "spec": {
                "online": False,
                "bootMACAddress": bmo.boot_mac(index),
                "bootMode": "UEFI",
                "automatedCleaningMode": "disabled",
                "inspectionMode": "disabled",
                "bmc": {
                    "address": slot.address,
                    "credentialsName": name + "-bmc",
                    "disableCertificateVerification": True,
                },
            },
        }
        custom.create_namespaced_custom_object(GROUP, VERSION, OP_INFRA, "baremetalhosts", body)
    bmo.wait_hosts(api, stack, OP_INFRA, names, lambda h: bmo.host_state(h) == "available", "available", timeout=600)
    return names


def operator_claims(custom, image: dict) -> None:
    """``OPERATOR_HOSTS`` HostClaims in ``OP_TENANT``, each online with the live ISO, for the operator's hosts."""
    for number in range(OPERATOR_HOSTS):
        claim = {
            "apiVersion": "%s/%s" % (GROUP, VERSION),
            "kind": "HostClaim",
            "metadata": {"name": "oc%02d" % number, "namespace": OP_TENANT},
            "spec": {"online": True, "image": image, "hostSelector": {"matchLabels": {"suite": "bench-bmo"}}},
        }
        while True:  # the CRD was created a moment ago
            try:
                custom.create_namespaced_custom_object(GROUP, VERSION, OP_TENANT, "hostclaims", claim)
                break
            except client.exceptions.ApiException as exc:
                if exc.status != 404:
                    raise
                time.sleep(0.2)


def operator_shares(poller, stack, names: list[str], started: float, bound_at: float, pass_seconds: float) -> dict:
    """From the poller's marks: the wall from the pass to every host provisioned, and the shares of the binder,
    the operator and Ironic."""
    provisioned = {name: poller.first(poller.host_seen, name, ["provisioned"]) for name in names}
    missing = sorted(name for name, at in provisioned.items() if at is None)
    if missing:
        raise RuntimeError("hosts not provisioned within 900 s: %s\n%s" % (missing, stack.logs()))
    operator, ironic, waits = [], [], []
    for name in names:
        left = poller.first(poller.node_seen, name, ["deploying", "wait call-back", "deploy wait", "active"])
        active = poller.first(poller.node_seen, name, ["active"])
        if active is None or left is None:
            raise RuntimeError("no Ironic node seen active for host %s: %s" % (name, sorted(poller.node_seen)))
        wait = provisioned[name] - bound_at
        deploy = max(0.0, active - left)
        waits.append(wait)
        ironic.append(deploy)
        operator.append(max(0.0, wait - deploy))
    total = max(provisioned.values()) - started
    return {
        "pass_to_all_provisioned_seconds": round(total, 1),
        "binder_share_of_wall": round(pass_seconds / total, 3),
        # of the hosts' bound -> provisioned time, summed over hosts (the two add up to 1)
        "operator_share_of_host_wait": round(sum(operator) / sum(waits), 3),
        "ironic_share_of_host_wait": round(sum(ironic) / sum(waits), 3),
        "per_host_bound_to_provisioned_seconds": {
            "median": round(statistics.median(waits), 1),
            "max": round(max(waits), 1),
        },
        "per_host_operator_seconds": {
            "median": round(statistics.median(operator), 1),
            "max": round(max(operator), 1),
        },
        "per_host_ironic_seconds": {
            "median": round(statistics.median(ironic), 1),
            "max": round(max(ironic), 1),
        },
    }


def real_operator(workdir: Path) -> dict:
    """The pass that binds ``OPERATOR_HOSTS`` claims, to every host provisioned by the real operator."""
    from harness import baremetal_operator as bmo
    from harness import sushy

    metal3, m3client = metal3_modules()
    accounts = bmo.pool_accounts(OPERATOR_HOSTS)
    systems = sushy.default_systems(OPERATOR_HOSTS)
    for number, system in enumerate(systems):
        system["name"] = "bench-%d" % number
        system["nics"] = [{"mac": "52:54:01:00:00:%02x" % number, "ip": "192.0.2.%d" % (100 + number)}]
    figures: dict = {"hosts": OPERATOR_HOSTS, "poll_seconds": POLL}
    env = kube.KubeEnv(workdir / "kube")
    stack = None
    try:
        env.start()
        started = time.monotonic()
        stack = bmo.start_metal3(
            env, workdir / "metal3", systems=systems, namespace=OP_INFRA, accounts=accounts, notify=0, postgresql=True
        )
        figures["stack_start_seconds"] = round(time.monotonic() - started, 1)
        with env.api("admin") as api:
            client.ApiextensionsV1Api(api).create_custom_resource_definition(
                yaml.safe_load((REPO / "roles" / "hostclaim_setup" / "files" / "hostclaim-crd.yaml").read_text())
            )
            started = time.monotonic()
            names = operator_hosts(api, stack, accounts)
            figures["created_to_available_seconds"] = round(time.monotonic() - started, 1)
            operator_claims(client.CustomObjectsApi(api), bmo.live_iso_image(stack.live_iso_url))
            poller = StatePoller(api, stack)
            poller.start()
            io = m3client.KubeIO(api)
            started = time.monotonic()
            report = metal3.Binder(io, binder_id="bench-op", host_namespaces=[OP_INFRA], workers=WORKERS).run()
            bound_at = time.monotonic()
            figures["pass_seconds"] = round(bound_at - started, 3)
            figures["bound"] = report["summary"]["bound"]
            deadline = time.monotonic() + 900
            while (
                any(poller.first(poller.host_seen, name, ["provisioned"]) is None for name in names)
                and time.monotonic() < deadline
            ):
                time.sleep(POLL)
            poller.stopping.set()
            poller.join(timeout=30)
        figures.update(operator_shares(poller, stack, names, started, bound_at, figures["pass_seconds"]))
        figures["bmo_concurrency"] = bmo.CONCURRENCY
    finally:
        if stack is not None:
            stack.stop()
        env.stop()
    return figures


def results(queue, processes: list, timeout: float = 1800) -> list:
    """One result per process from ``queue``; a process that died without one fails the bench at once (instead of
    a wait for the whole ``timeout``), naming its exit code."""
    import queue as queues

    found: list = []
    deadline = time.monotonic() + timeout
    while len(found) < len(processes):
        try:
            found.append(queue.get(timeout=2))
        except queues.Empty:
            failed = [process for process in processes if process.exitcode not in (None, 0)]
            if failed:
                raise RuntimeError(
                    "%s ended without a result (exit codes %s): see its traceback above"
                    % (", ".join(p.name for p in failed), ", ".join(str(p.exitcode) for p in failed))
                ) from None
            if time.monotonic() > deadline:
                missing = len(processes) - len(found)
                raise TimeoutError("no result from %d process(es) in %d s" % (missing, timeout)) from None
    return found


def requests_per_claim(counts: dict, bound: int) -> dict:
    """The pass's requests per bound claim, per verb and in all (``total``, ``writes``): the next request a claim
    starts to cost shows under its verb. On a world of claims without data: 3 ``patch`` (the host's consumerRef, the
    claim's commit, its status), no ``get``; ``list`` and ``watch`` do not grow with the claims."""
    verbs = ("list", "watch", "get", "create", "replace", "patch", "delete", "total", "writes")
    return dict((verb, round(counts.get(verb, 0) / max(1, bound), 3)) for verb in verbs)


def progress(*words) -> None:
    print(time.strftime("%H:%M:%S"), *words, file=sys.stderr, flush=True)


def one_pass(context, kubeconfig: str, pids: dict, dialect: str, repeat: int = 0) -> dict:
    """``pass_process``'s figures: one pass over the claims pending now and its floor, in a process of its own."""
    progress(dialect, "one pass" if not repeat else "pass %d of %d" % (repeat + 1, PASS_REPEATS))
    queue = context.Queue()
    process = context.Process(target=pass_process, args=(kubeconfig, queue, pids))
    process.start()
    single = results(queue, [process])[0]
    process.join(timeout=60)
    assert single["dialect"] == dialect, single["dialect"]
    return single


def ratio_to_floor(single: dict) -> float | None:
    """The pass's seconds over its floor's (``None``: no floor, nothing was bound)."""
    floor = single["floor"]["seconds"]
    return round(single["seconds"] / floor, 3) if floor else None


def measure(dialect: str, workdir: Path) -> dict:
    """One pass over the world and ``REPEATS`` rounds of ``BINDERS`` binders at once, on a control plane of its own
    serving ``dialect``."""
    result: dict = {"dialect": dialect}
    env = kube.KubeEnv(workdir, watch_cache=WATCH_CACHE)
    context = multiprocessing.get_context("spawn")
    try:
        env.start()
        kubeconfig = str(env.kubeconfig("admin"))
        with env.api("admin") as api:
            install_crds(api, dialect)
            progress(dialect, "seeding", HOSTS, "hosts and", CLAIMS, "claims")
            started = time.monotonic()
            sent = create_world(api, kubeconfig, "bench", with_hosts=True, dialect=dialect)
            elapsed = time.monotonic() - started
            result["setup_seconds"] = round(elapsed, 1)
            result["seed_requests_per_second"] = round(sent / elapsed)

        # one pass, in a process of its own; the servers on the same cores: their CPU during the pass and its floor
        pids = {"kube-apiserver": env.apiserver.pid, "etcd": env.etcd.pid}
        if env.controller_manager is not None:
            pids["kube-controller-manager"] = env.controller_manager.pid
        single = one_pass(context, kubeconfig, pids, dialect)
        # more passes against their floors: every host freed and CLAIMS fresh pending claims (the same names) first
        again = []
        for repeat in range(1, PASS_REPEATS):
            reset(kubeconfig)
            with env.api("admin") as api:
                create_world(api, kubeconfig, "bench", with_hosts=False, dialect=dialect)
            again.append(one_pass(context, kubeconfig, pids, dialect, repeat))
        counts, bound, raw = single["requests"], single["bound"], single["raw"]
        ratios = [ratio_to_floor(one) for one in [single, *again]]
        result["single_pass"] = {
            "seconds": round(single["seconds"], 3),
            # the binder process's CPU (every thread) during the pass: on 2 cores shared with the API server and
            # etcd, each CPU second of the client is a second the writes wait for (beside floor.cpu_seconds)
            "cpu_seconds": round(single["cpu_seconds"], 3),
            # of which in the cyclic garbage collector (its wall time, per generation, and the collections)
            "gc": single["gc"],
            # the API server's, etcd's and the controller manager's CPU seconds during the pass (the floor's beside
            # it: floor.server_cpu_seconds)
            "server_cpu_seconds": single["server_cpu_seconds"],
            "bound": bound,
            "errors": single["errors"],
            "requests": counts,
            "lists_per_pass": single["collections_listed"],
            "list_requests_per_pass": counts["list"],
            "swept": single["swept"],
            "requests_per_bound_claim": requests_per_claim(counts, bound),
            "non_list_requests_per_bound_claim": round((counts["total"] - counts["list"]) / max(1, bound), 3),
            "writes_per_bound_claim": round(counts["writes"] / max(1, bound), 3),
            "timings": single["timings"],
            "raw_consumer_ref_writes_seconds": round(raw, 3),
            "raw_before_and_after_pass_seconds": [round(value, 3) for value in single["raw_sides"]],
            "ratio_to_raw_writes": round(single["seconds"] / raw, 3) if raw else None,
            "floor": single["floor"],
            # the pass's lists of every host, claim and namespace again on their own after it (the part of the pass
            # the floor does not do): seconds, CPU, the servers' CPU
            "reads_alone": single["reads_alone"],
            "ratio_to_floor": ratios[0],
            # with BENCH_PASS_REPEATS: every pass's ratio to its floor, the first one's above, and their median
            "ratios_to_floor": ratios,
            "ratio_to_floor_median": statistics.median(ratios) if None not in ratios else None,
            "binder_rss_mib": {"before_pass": single["rss_before_pass_mib"], "peak": single["peak_rss_mib"]},
            "client": single["client"],
            "watch_cache": WATCH_CACHE,
        }
        progress(
            dialect,
            "pass",
            result["single_pass"]["seconds"],
            "s, raw",
            round(raw, 3),
            "s, per bound claim",
            json.dumps(result["single_pass"]["requests_per_bound_claim"], sort_keys=True),
        )

        # BINDERS binders at once, REPEATS rounds
        rounds = [binders_at_once(env, kubeconfig, dialect, repeat) for repeat in range(max(1, REPEATS))]
        result["binders_at_once"] = storm_summary(rounds)
        progress(dialect, "figures", json.dumps(result, sort_keys=True))
    finally:
        env.stop()
    return result


def main() -> None:
    workdir = Path(tempfile.mkdtemp(prefix="bmt-bench-bind-"))
    result: dict = {
        "bench": "bind",
        "hosts": HOSTS,
        "claims": CLAIMS,
        "namespaces": NAMESPACES,
        "workers": WORKERS,
        "binders": BINDERS,
        "repeats": REPEATS,
        "cpus": os.cpu_count(),
        "load_before": round(os.getloadavg()[0], 2),
    }
    try:
        # the same world and binder on both HostClaim dialects, one after the other, with the same JSON keys
        result["dialects"] = [measure(dialect, workdir / dialect) for dialect in DIALECTS]
        result["load_after"] = round(os.getloadavg()[0], 2)
        if len(result["dialects"]) == 2:
            proposal, bmo_dialect = (entry["single_pass"]["seconds"] for entry in result["dialects"])
            result["bmo_to_proposal_pass_ratio"] = round(bmo_dialect / proposal, 3) if proposal else None
        if OPERATOR_HOSTS:
            result["real_operator"] = real_operator(workdir / "operator")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
