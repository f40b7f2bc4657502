#!/usr/bin/env python
"""Benchmark: the collection's binder against baremetal-operator v0.14's own HostClaim controller (``--hostclaims``).

Both sides on baremetal-operator's HostClaim dialect (its CRDs, its webhooks), on one apiserver, one after the
other in the same run: the same ``BENCH_BMO_CLAIMS`` (20) claims (``poweredOn``, the live ISO
``bmo.live_iso_image(stack.live_iso_url)``, a ``hostSelector``) in a tenant namespace and the same HostDeployPolicy
(``nameMatches`` the tenant namespace) over as many ``available`` hosts of the real operator (Ironic on PostgreSQL,
sushy-tools BMCs, inspection and cleaning off: the live-ISO route).

Each side has a Metal3 stack of its own (``harness.baremetal_operator.start_metal3``, ``claim_dialect="bmo"``):
upstream's with ``hostclaims_controller=True``, the collection's without (upstream's controller reconciles every
HostClaim it watches and ``host_bind`` refuses claims whose status upstream wrote, and upstream leaves released
hosts provisioned: so the two never share claims or hosts). The upstream stack runs first and is stopped before the
collection's starts (``BENCH_BMO_ORDER=collection,upstream`` the other way round): the same apiserver, Ironic, BMO
binary and machine, never at once.

- **upstream**: the claims are created; its controller (one worker: controller-runtime's default, no
  ``MaxConcurrentReconciles``) associates one claim per reconcile (lists the HostDeployPolicies and the hosts from its
  cache, ``Update`` of the chosen host's ``consumerRef``, the claim's status patched). Its update step is a stub: it
  passes nothing down (no image, no power: ``hosts_given_image_or_power_by_upstream``, each host read once its claim
  is associated) and the hosts would stay ``available``. So that claim -> ``provisioned`` can be compared, the bench
  plays the owner by hand (as tests/integration/bmo/test_bmo_hostclaim_upstream.py does) as fast as a watcher could:
  each host, as soon as its claim is seen associated, is patched with the claim's image and ``online: true``, and
  the operator provisions it (``BENCH_BMO_OWNER=after``: once every claim is associated).
- **collection**: the claims are created, then one ``host_bind`` pass (the binder's Python, ``metal3.Binder(io, ...,
  dialect="bmo")`` as bench/bind.py calls it, not through ``ansible-playbook``: the pass's own time, not Ansible's
  start-up; started right after the last claim, as a binder worker woken by the claims would be) binds them and
  writes BMO's own status (``status.bareMetalHost``, condition ``Associated``) and the hosts' image and power; the
  operator provisions them.

Figures per side: claims created -> every claim associated (``status.bareMetalHost`` seen by a watch on the claims),
per claim (its creation -> its association) p50/p95/max; claim -> host ``provisioned`` (hosts and Ironic nodes
polled every ``POLL`` s, bench/bind.py's ``StatePoller`` on the side's namespace) per claim and for all; where the
time goes: upstream's associations over time (the gaps between successive ones by the watch and by BMO's own log
clock, each association's choice of a host, conflicts and requeues counted in BMO's log, the writes through BMO's
validating webhooks meanwhile, BMO's CPU during the association); the collection's pass (read, plan, apply; its CPU;
its requests and conflicts; ``patches_sent``: its patches by target and fields) against the operator's provisioning
(bench/bind.py's ``operator_shares``); on both sides, per host from the write that gave it its image to
``provisioned``, Ironic's deploy against the operator's rest (``host_shares``).

Sizes: ``BENCH_BMO_CLAIMS`` claims and as many hosts per side (each stack gets as many sushy-tools systems);
``BENCH_BMO_OWNER`` (``each``) above. Ironic creates its virtual-media directory (``httpboot/redfish``) at the first
deploy with a plain mkdir, and several deploys at once race for it (the losers end ``deploy failed``, ``File
exists``): each stack gets it made before its hosts.

``BENCH_BMO_KEEP_LOGS`` (a directory): BMO's log of each side is copied there. Prints ONE JSON line (progress on
stderr). Usage: ``.venv/bin/python bench/bmo_controller.py`` (after ``make bmo``).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))
sys.path.insert(0, str(REPO / "bench"))

import _bind_floor as bind_floor
import bind
from harness import kube
from kubernetes import client, watch

CLAIMS = int(os.environ.get("BENCH_BMO_CLAIMS", "20"))
#: when the owner patches upstream's hosts: ``each`` as soon as its claim is associated (as the binder writes each
#: host in its pass), ``after`` once every claim is (upstream's associations alone, no host events between them)
OWNER = os.environ.get("BENCH_BMO_OWNER", "each")
GROUP, VERSION = bind.GROUP, bind.VERSION
POLL = 0.2
#: the sides in the order run (``BENCH_BMO_ORDER``, default upstream's first)
SIDES = tuple(os.environ.get("BENCH_BMO_ORDER", "upstream,collection").split(","))
progress = bind.progress


def namespaces(side: str) -> tuple[str, str]:
    """The side's hosts' namespace and its tenant namespace."""
    return "bbc-%s-infra" % side[:3], "bbc-%s" % side[:3]


def summary(values: list[float]) -> dict:
    """p50 / p95 / max of ``values`` (seconds), rounded."""
    if not values:
        return {}
    ordered = sorted(values)
    p95 = statistics.quantiles(ordered, n=20, method="inclusive")[18] if len(ordered) > 1 else ordered[0]
    return {"p50": round(statistics.median(ordered), 2), "p95": round(p95, 2), "max": round(ordered[-1], 2)}


def association_figures(claims, created: dict, first: float, associated_at: float) -> dict:
    """The figures both sides report of the claims' association (the watch's marks)."""
    order = sorted(claims.associated.values())
    return {
        "claims": CLAIMS,
        "create_seconds": round(max(created.values()) - first, 2),
        "created_to_all_associated_seconds": round(associated_at - first, 2),
        "last_created_to_all_associated_seconds": round(associated_at - max(created.values()), 2),
        "claim_to_associated_seconds": summary([claims.associated[c] - created[c] for c in created]),
        "distinct_hosts": len(set(claims.host_of.values())),
        "association_gaps_seconds": summary([b - a for a, b in zip(order, order[1:])]),
        "watch_events_per_claim": round(sum(claims.events.values()) / CLAIMS, 2),
    }


def cpu_seconds(pid: int) -> float:
    """user + system CPU seconds of process ``pid`` (its ``/proc`` stat)."""
    fields = Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class SidePoller(bind.StatePoller):
    """bench/bind.py's ``StatePoller`` (each host's and Ironic node's states, first seen) on ``namespace``."""

    def __init__(self, api, stack, namespace: str):
        super().__init__(api, stack)
        self.namespace = namespace

    def run(self) -> None:
        while not self.stopping.is_set():
            now = time.monotonic()
            try:
                hosts = self.custom.list_namespaced_custom_object(GROUP, VERSION, self.namespace, "baremetalhosts")
                for host in hosts["items"]:
                    state = ((host.get("status") or {}).get("provisioning") or {}).get("state")
                    self.host_seen.setdefault((host["metadata"]["name"], state), now)
                for node in self.session.get(self.nodes_url, timeout=10).json()["nodes"]:
                    self.node_seen.setdefault((node["name"].split("~")[-1], node["provision_state"]), now)
            except Exception as exc:  # a slow answer under load: the next poll reads again
                if not self.stopping.is_set():
                    progress("poll failed:", exc)
            self.stopping.wait(POLL)


class ClaimWatch(threading.Thread):
    """A watch on the tenant namespace's HostClaims: when each claim was first seen with ``status.bareMetalHost``
    (and which host), and how many changes of each claim the watch saw."""

    def __init__(self, api, namespace: str):
        super().__init__(daemon=True)
        self.custom = client.CustomObjectsApi(api)
        self.namespace = namespace
        self.associated: dict[str, float] = {}
        self.host_of: dict[str, str] = {}
        self.events: dict[str, int] = {}
        self.watcher = watch.Watch()
        self.ready = threading.Event()
        self.lock = threading.Lock()
        self.stopped = False

    def run(self) -> None:
        version = self.custom.list_namespaced_custom_object(GROUP, VERSION, self.namespace, "hostclaims")["metadata"][
            "resourceVersion"
        ]
        self.ready.set()
        while not self.stopped:
            try:
                for event in self.watcher.stream(
                    self.custom.list_namespaced_custom_object,
                    GROUP,
                    VERSION,
                    self.namespace,
                    "hostclaims",
                    resource_version=version,
                    timeout_seconds=3600,
                ):
                    now = time.monotonic()
                    claim = event["object"]
                    name = claim["metadata"]["name"]
                    version = claim["metadata"]["resourceVersion"]
                    host = ((claim.get("status") or {}).get("bareMetalHost") or {}).get("name")
                    with self.lock:
                        self.events[name] = self.events.get(name, 0) + 1
                        if host and name not in self.associated:
                            self.associated[name] = now
                            self.host_of[name] = host
            except Exception as exc:  # a watch broken under load: watched again from the last version seen
                if not self.stopped:
                    progress("claim watch:", exc)
                    time.sleep(0.2)

    def count(self) -> int:
        with self.lock:
            return len(self.associated)

    def stop(self) -> None:
        self.stopped = True
        self.watcher.stop()


#: the side's poller and claim watch, stopped before its stack
RUNNING: list = []


def watchers(api, stack, infra: str, tenant: str) -> tuple[SidePoller, ClaimWatch]:
    """The side's poller (hosts, Ironic nodes) and claim watch, started (and stopped by ``run_side``)."""
    poller = SidePoller(api, stack, infra)
    claims = ClaimWatch(api, tenant)
    RUNNING.extend((poller, claims))
    poller.start()
    claims.start()
    claims.ready.wait(30)
    return poller, claims


def stop_watchers() -> None:
    for thread in RUNNING:
        if isinstance(thread, SidePoller):
            thread.stopping.set()
        else:
            thread.stop()
    for thread in RUNNING:
        thread.join(timeout=30)
    RUNNING.clear()


def host_names(count: int) -> list[str]:
    return ["bh%02d" % number for number in range(count)]


def world(api, stack, side: str) -> list[str]:
    """The side's hosts (``available``, live-ISO route, label ``pool: bench``) and its HostDeployPolicy."""
    from fixtures_bmo import create_hosts

    infra, tenant = namespaces(side)
    names = host_names(CLAIMS)
    create_hosts(api, stack, infra, dict((name, (index, "bench")) for index, name in enumerate(names)), timeout=900)
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        GROUP,
        VERSION,
        infra,
        "hostdeploypolicies",
        {
            "apiVersion": "%s/%s" % (GROUP, VERSION),
            "kind": "HostDeployPolicy",
            "metadata": {"name": "bench", "namespace": infra},
            "spec": {"hostClaimNamespaces": {"nameMatches": tenant}},
        },
    )
    return names


def claim_body(number: int, tenant: str, image: dict) -> dict:
    return {
        "apiVersion": "%s/%s" % (GROUP, VERSION),
        "kind": "HostClaim",
        "metadata": {"name": "c%02d" % number, "namespace": tenant},
        "spec": {"poweredOn": True, "image": image, "hostSelector": {"matchLabels": {"pool": "bench"}}},
    }


def create_claims(custom, tenant: str, image: dict) -> dict[str, float]:
    """The claims, one after the other as a tenant's kubectl would send them; when each was created."""
    created: dict[str, float] = {}
    for number in range(CLAIMS):
        body = claim_body(number, tenant, image)
        custom.create_namespaced_custom_object(GROUP, VERSION, tenant, "hostclaims", body)
        created[body["metadata"]["name"]] = time.monotonic()
    return created


def wait_until(what: str, done, timeout: float, stack) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise RuntimeError("not %s within %d s\n%s" % (what, timeout, stack.logs()))
        time.sleep(0.05)


def log_counts(stack, start: int) -> dict:
    """What BMO's HostClaim controller logged from byte ``start`` of its log (``--dev``: time, level, logger, message,
    fields, tab-separated): reconciles that tried to associate, associations, conflicts on the host's update, no-host
    requeues, reconcile errors; and from BMO's own clock, the gaps between successive associations and each
    association's own time (its "Associating host" -> "Associating hostClaim with host": the policies and hosts
    listed from its cache, one picked)."""
    import datetime

    with open(stack.proc.log_path, "rb") as log:
        log.seek(start)
        lines = log.read().decode(errors="replace").splitlines()
    claim_lines = [line.split("\t") for line in lines if "HostClaim" in line or "hostclaim" in line]
    webhook = [line.split("\t")[2:4] for line in lines if "\twebhooks." in line]
    begun: dict[str, float] = {}
    choose, done = [], []
    counts = dict.fromkeys(
        ("associate_attempts", "associated", "host_update_errors", "no_host_requeues", "reconciler_errors"), 0
    )
    messages = {
        "Associating host": "associate_attempts",
        "Associating hostClaim with host": "associated",
        "Error while updating the consumerRef on BMH": "host_update_errors",
        "No available host found. Requeuing.": "no_host_requeues",
        "Reconciler error": "reconciler_errors",
    }
    for fields in claim_lines:
        if len(fields) < 4 or fields[3] not in messages:
            continue
        counts[messages[fields[3]]] += 1
        try:
            at = datetime.datetime.fromisoformat(fields[0].replace("Z", "+00:00")).timestamp()
            claim = json.loads(fields[4]).get("hostclaim") if len(fields) > 4 else None
        except ValueError:
            continue
        if fields[3] == "Associating host":
            begun[str(claim)] = at
        elif fields[3] == "Associating hostClaim with host":
            done.append(at)
            if str(claim) in begun:
                choose.append(at - begun[str(claim)])
    done.sort()
    # writes through BMO's own validating webhooks in that time (BMO serves them: each is a round trip to it)
    counts["webhook_host_updates"] = sum(
        1 for logger, message in webhook if logger.endswith("BareMetalHost") and message == "validate update"
    )
    counts["webhook_claim_updates"] = sum(
        1 for logger, message in webhook if logger.endswith("HostClaim") and message == "validate update"
    )
    counts["association_gaps_seconds"] = summary([b - a for a, b in zip(done, done[1:])])
    counts["choose_seconds"] = summary(choose)
    return counts


def provisioned_figures(poller, names_by_claim: dict[str, str], created: dict[str, float], first: float) -> dict:
    """Claim -> its host ``provisioned``: per claim (from its creation) and for all (from the first creation)."""
    at = {claim: poller.first(poller.host_seen, host, ["provisioned"]) for claim, host in names_by_claim.items()}
    missing = sorted(claim for claim, seen in at.items() if seen is None)
    if missing:
        raise RuntimeError("claims whose host was not seen provisioned: %s" % missing)
    return {
        "claim_to_provisioned_seconds": summary([at[claim] - created[claim] for claim in at]),
        "created_to_all_provisioned_seconds": round(max(at.values()) - first, 2),
    }


def wait_provisioned(poller, hosts: list[str], stack, timeout: float = 900) -> None:
    """Until every host is seen ``provisioned``; a node seen ``deploy failed`` fails the bench at once."""

    def done() -> bool:
        failed = sorted(name for name in hosts if (name, "deploy failed") in poller.node_seen)
        if failed:
            raise RuntimeError("deploy failed on %s\n%s" % (failed, stack.logs()))
        return all(poller.first(poller.host_seen, name, ["provisioned"]) is not None for name in hosts)

    wait_until("every host provisioned", done, timeout, stack)


def host_shares(poller, started: dict[str, float]) -> dict:
    """Per host, from the write that gave it its image and power (``started``: host -> time) to ``provisioned``: the
    whole, Ironic's deploy (its node leaves ``available`` -> ``active``) and the operator's rest."""
    whole, ironic = [], []
    for host, at in started.items():
        done = poller.first(poller.host_seen, host, ["provisioned"])
        left = poller.first(poller.node_seen, host, ["deploying", "wait call-back", "deploy wait", "active"])
        active = poller.first(poller.node_seen, host, ["active"])
        if None in (done, left, active):
            raise RuntimeError("host %s: no provisioned/active mark: %s" % (host, sorted(poller.node_seen)))
        whole.append(done - at)
        ironic.append(max(0.0, active - left))
    operator = [max(0.0, w - i) for w, i in zip(whole, ironic)]
    return {
        "per_host_to_provisioned_seconds": summary(whole),
        "per_host_ironic_deploy_seconds": summary(ironic),
        "per_host_operator_seconds": summary(operator),
        "operator_share": round(sum(operator) / sum(whole), 3),
        "ironic_share": round(sum(ironic) / sum(whole), 3),
    }


def side_upstream(api, stack, image: dict) -> dict:
    infra, tenant = namespaces("upstream")
    custom = client.CustomObjectsApi(api)
    names = world(api, stack, "upstream")
    poller, claims = watchers(api, stack, infra, tenant)
    log_start = stack.proc.log_path.stat().st_size
    cpu_before = cpu_seconds(stack.proc.pid)
    # the owner by hand (upstream's update step is a stub: it passes nothing down), as fast as a watcher could:
    # each host, once its claim is associated, read (did upstream give it anything?) and patched with the claim's
    # image and power (as tests/integration/bmo/test_bmo_hostclaim_upstream.py does)
    patched: dict[str, float] = {}
    passed_down: list[str] = []
    owner_stop = threading.Event()

    def owner() -> None:
        while OWNER == "after" and claims.count() < CLAIMS and not owner_stop.is_set():
            owner_stop.wait(0.02)
        while not owner_stop.is_set() and len(patched) < CLAIMS:
            with claims.lock:
                todo = [host for host in claims.host_of.values() if host not in patched]
            for host in todo:
                spec = custom.get_namespaced_custom_object(GROUP, VERSION, infra, "baremetalhosts", host)["spec"]
                if spec.get("image") or spec.get("online"):
                    passed_down.append(host)
                custom.patch_namespaced_custom_object(
                    GROUP, VERSION, infra, "baremetalhosts", host, {"spec": {"image": image, "online": True}}
                )
                patched[host] = time.monotonic()
            owner_stop.wait(0.02)

    owner_thread = threading.Thread(target=owner, daemon=True)
    owner_thread.start()
    progress("upstream: creating", CLAIMS, "claims")
    first = time.monotonic()
    try:
        created = create_claims(custom, tenant, image)
        wait_until("every claim associated by upstream", lambda: claims.count() == CLAIMS, 600, stack)
        associated_at = max(claims.associated.values())
        cpu_association = cpu_seconds(stack.proc.pid) - cpu_before
        counts = log_counts(stack, log_start)
        progress("upstream: all associated in", round(associated_at - first, 2), "s")
        wait_until("the owner's patches", lambda: len(patched) == CLAIMS, 120, stack)
        wait_provisioned(poller, names, stack)
    finally:
        owner_stop.set()
    order = sorted(claims.associated.values())
    figures = association_figures(claims, created, first, associated_at)
    figures.update(
        {
            "associations_per_second": round((CLAIMS - 1) / (order[-1] - order[0]), 2) if len(order) > 1 else None,
            "bmo_cpu_seconds_association": round(cpu_association, 2),
            "bmo_log": counts,
            "owner_patches": OWNER,
            "hosts_given_image_or_power_by_upstream": len(passed_down),
            "owner_patch_after_association_seconds": summary(
                [patched[claims.host_of[c]] - claims.associated[c] for c in claims.host_of]
            ),
        }
    )
    figures.update(provisioned_figures(poller, claims.host_of, created, first))
    figures["operator_after_owner_patch"] = host_shares(poller, patched)
    return figures


def patch_shapes(records: list[tuple]) -> dict:
    """The pass's successful patches by target (``host``, ``claim``, ``claim_status``) and, for each, how many had
    which top-level fields (``spec.consumerRef+image+online``, ``metadata.labels``...)."""
    shapes: dict[str, dict[str, int]] = {}
    for _order, kind, _namespace, _name, status, text in records:
        body = json.loads(text)
        target = kind + ("_status" if status else "")
        fields = "+".join(
            "%s.%s" % (top, key) if isinstance(value, dict) else top
            for top, value in sorted((body or {}).items())
            for key in (sorted(value) if isinstance(value, dict) else [None])
        )
        counts = shapes.setdefault(target, {})
        counts[fields] = counts.get(fields, 0) + 1
    return shapes


def side_collection(api, stack, image: dict) -> dict:
    metal3, m3client = bind.metal3_modules()
    infra, tenant = namespaces("collection")
    custom = client.CustomObjectsApi(api)
    names = world(api, stack, "collection")
    poller, claims = watchers(api, stack, infra, tenant)
    io = bind_floor.recording_io(m3client.KubeIO)(api)  # records each host and claim patch the pass sends
    progress("collection: creating", CLAIMS, "claims")
    first = time.monotonic()
    created = create_claims(custom, tenant, image)
    started = time.monotonic()
    cpu_before = time.process_time()
    report = metal3.Binder(
        io, binder_id="bench-bmo", namespaces=[tenant], host_namespaces=[infra], workers=bind.WORKERS, dialect="bmo"
    ).run()
    bound_at = time.monotonic()
    pass_cpu = time.process_time() - cpu_before
    wait_until("every claim's association seen", lambda: claims.count() == CLAIMS, 60, stack)
    associated_at = max(claims.associated.values())
    progress("collection: pass", round(bound_at - started, 2), "s, bound", report["summary"].get("bound"))
    wait_provisioned(poller, names, stack)
    figures = association_figures(claims, created, first, associated_at)
    figures.update(
        {
            "pass_seconds": round(bound_at - started, 3),
            "pass_timings": report.get("timings"),
            "pass_cpu_seconds": round(pass_cpu, 2),
            "bound": report["summary"].get("bound"),
            "errors": len(report.get("errors") or []),
            "requests": io.figures(),
            "patches_sent": patch_shapes(io.records),
        }
    )
    figures.update(provisioned_figures(poller, claims.host_of, created, first))
    figures["operator"] = bind.operator_shares(poller, stack, names, started, bound_at, bound_at - started)
    # per host from the pass's write of its image and power (its claim's association, seen by the watch: the binder
    # writes the host before the claim's status) to provisioned, as upstream's side from the owner's patch
    figures["operator_after_binder_write"] = host_shares(
        poller, dict((claims.host_of[c], claims.associated[c]) for c in claims.host_of)
    )
    return figures


def run_side(env, workdir: Path, side: str) -> dict:
    from harness import baremetal_operator as bmo
    from harness import sushy

    infra, tenant = namespaces(side)
    with env.api("admin") as api:
        for name in (infra, tenant):
            client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    upstream = side == "upstream"
    started = time.monotonic()
    stack = bmo.start_metal3(
        env,
        workdir / side,
        systems=sushy.default_systems(CLAIMS),
        # upstream's controller watches the claims' namespace too; the collection's operator only the hosts'
        namespace=",".join((infra, tenant) if upstream else (infra,)),
        claim_dialect="bmo",
        hostclaims_controller=upstream,
        notify=0,
        postgresql=True,
    )
    try:
        # Ironic makes its virtual-media directory at the first deploy, with a plain mkdir: several deploys at once
        # race for it and the losers fail ("[Errno 17] File exists: .../httpboot/redfish"); made beforehand here
        (stack.ironic.http_root / "redfish").mkdir(exist_ok=True)
        progress(side, "stack up in", round(time.monotonic() - started, 1), "s")
        with env.api("admin") as api:
            image = bmo.live_iso_image(stack.live_iso_url)
            figures = (side_upstream if upstream else side_collection)(api, stack, image)
        figures["stack_start_seconds"] = round(time.monotonic() - started, 1)
        figures["loadavg_at_end"] = round(os.getloadavg()[0], 2)
        progress(side, json.dumps(figures, sort_keys=True))
        return figures
    finally:
        stop_watchers()
        keep = os.environ.get("BENCH_BMO_KEEP_LOGS")
        if keep:  # BMO's log of each side, for a look at its reconciles
            shutil.copy(stack.proc.log_path, Path(keep) / ("bmo-%s.log" % side))
        stack.stop()


def main() -> None:
    workdir = Path(tempfile.mkdtemp(prefix="bmt-bench-bmo-controller-"))
    result: dict = {
        "bench": "bmo_controller",
        "claims": CLAIMS,
        "hosts_per_side": CLAIMS,
        "cpus": os.cpu_count(),
        "bmo_concurrency": None,
        "poll_seconds": POLL,
        "loadavg_before": Path("/proc/loadavg").read_text().split()[:3],
        "order": list(SIDES),
        "collection_called_as": "metal3.Binder(...).run() in process (bench/bind.py's way), not ansible-playbook",
    }
    env = kube.KubeEnv(workdir / "kube")
    try:
        env.start()
        from harness import baremetal_operator as bmo

        result["bmo_concurrency"] = bmo.CONCURRENCY
        for side in SIDES:
            result[side] = run_side(env, workdir, side)
        up, col = result["upstream"], result["collection"]
        result["upstream_to_collection"] = {
            key: round(up[key] / col[key], 2) if col[key] else None
            for key in ("created_to_all_associated_seconds", "created_to_all_provisioned_seconds")
        }
        result["loadavg_after"] = Path("/proc/loadavg").read_text().split()[:3]
    finally:
        env.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
