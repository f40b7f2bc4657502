#!/usr/bin/env python
"""Benchmark: an Ironic claim (allocation + deploy, wait) three ways, and 20 claims at once.

Run standalone: ``.venv/bin/python bench/claim_ironic.py [--rounds N] [--storm-projects P --storm-claims N]``
(``--rounds 0`` leaves the one-claim comparisons out). It
starts its own Keystone + Ironic (on PostgreSQL, so that the concurrent part
measures Ironic and not sqlite's lock) with the harness, applies the
``ironic_tenancy`` policy, enrols fake-hardware nodes and prints ONE JSON
line.

Measured in the same run, alternating per round, median over the rounds,
each from "start" (a new connection, as every module run has) to the node
``active`` with the config drive:

- ``module_s``: ``baremetal.tenancy.host_claim`` (``backend: ironic``,
  ``wait: true``), its ``main()`` called in this process (no ansible-playbook
  start-up: the same Python work a module run does after its imports);
- ``floor_s``: the same steps as raw openstacksdk calls polling every 50 ms
  (POST allocation, GET until active, PATCH instance_info, PUT provision
  with the config drive, GET until active);
- ``sdk_wait_s``: the same steps with openstacksdk's ``wait=True``
  (``wait_for_allocation``, ``set_node_provision_state(..., wait=True)``),
  what openstack.cloud modules and metalsmith do: it polls every 2 s.

Also ``playbook_s`` (the module through ansible-playbook, start-up
included) and ``module_requests`` (Ironic API requests of one module claim).

Then ``concurrent``, the claim storm: ``--storm-projects`` tenant projects
(5) making ``--storm-claims`` claims (20) at once, spread evenly (issue 20:
``--storm-projects 10 --storm-claims 50``): one ansible-playbook run of
``playbooks/ironic_claim_hosts.yml`` per project, started together, each
claiming its share in parallel (async tasks), on as many ``fake-hardware``
nodes as claims, each leased to one project (enrolled side by side
beforehand). Reported: total time, errors (must be 0), distinct nodes (must
equal the claims: each node used once), and per claim:

- ``claim_to_active_s`` (p50, p95, max): from the start of the claim's module
  run to its return with the node ``active``. Both ends are Ansible's own
  marks: ``async_wrapper`` writes the job's status file when it starts the
  module and replaces it with the result when the module ends, so the first
  file's mtime (read while the job runs, the directory is polled every 50 ms)
  is the start and the last one's the end;
- where that time goes, from Ironic's own timestamps: the allocation's
  ``created_at`` (the API stored it), the conductor's log lines "Node ... has
  been successfully reserved for allocation ..." (the allocation worker is
  done) and "Node ... moved to provision state "deploying"" / "... "active""
  (the deploy worker started / finished; fake hardware deploys without a
  callback). ``allocation_in_ironic`` is created -> reserved,
  ``deploy_in_ironic`` deploying -> active: the time the claim waits on
  Ironic's conductor workers (their queue included). The rest is the
  module's: its start-up and Keystone login (start -> created), noticing the
  allocation and sending instance_info and the deploy request with the config
  drive (reserved -> deploying), noticing ``active`` and returning (active ->
  end). ``ironic_conductor_share`` is the conductor time summed over claims
  divided by the claims' module time summed; ``split_median_s`` gives each
  part's median. All the clocks are this machine's wall clock (Python's
  ``time.time()`` in Ansible, Ironic and its database layer);
- how often Ironic's allocation worker met another claim on a node it tried
  (``ironic_conflicts_retried``: "Node ... is currently locked" or "... is already
  associated, moving to the next one"; ``ironic_candidates_skipped``: a candidate
  found taken or no longer available before it was tried), from its debug lines
  (this bench sets ``ironic.conductor.allocations`` alone to DEBUG;
  ``ironic_allocations_logged`` counts the allocations it took up, as a check);
  ``allocations_recreated``: claims whose ``host_claim`` warned that Ironic left the
  allocation ``allocating`` and it was created again; ``nodes_with_two_allocations``
  (must be 0; with ``distinct_nodes`` equal to the claims, each node used once);
- as a second view, the CPU seconds that Ironic (API and conductor are one
  process here), Keystone and PostgreSQL used during the storm
  (``/proc/<pid>/stat`` of each service's process tree, reaped children
  included) against the machine's busy CPU seconds (``/proc/stat``), whose
  rest is Ansible, the modules and anything else running.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import contextlib
import datetime
import io
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))

from harness import openstack as H
from harness.ansible import collections_root, localhost_play, run_playbook

sys.path.insert(0, str(collections_root()))

from ansible.module_utils.testing import patch_module_args

from ansible_collections.baremetal.tenancy.plugins.module_utils.common import polling
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import client as ironic_io
from ansible_collections.baremetal.tenancy.plugins.modules import host_claim

MV = "1.78"
MD5 = "9f6c1a0f5e2b4c8d7a3e1f0b2c4d6e8f"
IMAGE_URL = "http://images.example.com/os.img"
USER_DATA = "#cloud-config\nhostname: bench\n"
#: the async job directory is polled this often for the claims' start marks
JOB_POLL = 0.05
#: Ironic's allocation worker, trying the next candidate (another allocation holds this one) / a candidate found
#: taken or gone before it was tried (debug lines of ``ironic.conductor.allocations``)
RETRY_LINE = re.compile(r"Node \S+ is (?:currently locked|already associated), moving to the next one")
SKIP_LINE = re.compile(r"Node \S+ is (?:already associated with instance \S+|no longer available), skipping")
#: one per allocation the worker took up: that the debug lines are there at all
CANDIDATES_LINE = re.compile(r"\d+ nodes are candidates for allocation")
#: Ironic's own default log levels (``ironic.conf.opts.update_opt_defaults``) plus its allocation worker's debug lines
LOG_LEVELS = (
    "amqp=WARNING,amqplib=WARNING,qpid.messaging=INFO,oslo.messaging=INFO,oslo_messaging=INFO,stevedore=INFO,"
    "iso8601=WARNING,requests=WARNING,urllib3.connectionpool=WARNING,keystonemiddleware.auth_token=INFO,"
    "keystoneauth.session=INFO,openstack=WARNING,oslo_policy=WARNING,oslo_concurrency.lockutils=WARNING,"
    "ironic.conductor.allocations=DEBUG"
)
LOG_LINE = re.compile(
    r"^(?P<at>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) \d+ \w+ \S+ .*?"
    r"(?:Node (?P<node>[0-9a-f-]{36}) moved to provision state \"(?P<state>[^\"]+)\""
    r"|Node (?P<reserved>[0-9a-f-]{36}) has been successfully reserved for allocation (?P<allocation>[0-9a-f-]{36}))"
)


def configdrive(name):
    return {"meta_data": {"hostname": name, "name": name}, "user_data": USER_DATA}


def instance_info():
    return {"image_source": IMAGE_URL, "image_checksum": MD5}


def poll(fetch, done, interval, timeout=120):
    deadline = time.monotonic() + timeout
    while True:
        value = fetch()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(str(value))
        time.sleep(interval)


def claim_floor(auth, name):
    """Raw openstacksdk, polling every 50 ms."""
    conn = H.connect(auth)
    api = conn.baremetal
    alloc = api.post("/allocations", json={"name": name, "resource_class": "rc-one"}, microversion=MV).json()
    alloc = poll(
        lambda: api.get("/allocations/%s" % alloc["uuid"], microversion=MV).json(),
        lambda a: a["state"] != "allocating",
        0.05,
    )
    assert alloc["state"] == "active", alloc
    node = alloc["node_uuid"]
    api.patch(
        "/nodes/%s" % node,
        json=[{"op": "add", "path": "/instance_info/%s" % k, "value": v} for k, v in instance_info().items()],
        microversion=MV,
    )
    api.put(
        "/nodes/%s/states/provision" % node,
        json={"target": "active", "configdrive": configdrive(name)},
        microversion=MV,
    )
    poll(
        lambda: api.get("/nodes/%s?fields=provision_state,target_provision_state" % node, microversion=MV).json(),
        lambda n: n["provision_state"] == "active" and not n["target_provision_state"],
        0.05,
    )
    return node


def claim_sdk_wait(auth, name):
    """openstacksdk's own wait=True (2 s polling)."""
    conn = H.connect(auth)
    alloc = conn.baremetal.create_allocation(name=name, resource_class="rc-one")
    alloc = conn.baremetal.wait_for_allocation(alloc, timeout=120)
    node = conn.baremetal.update_node(alloc.node_id, instance_info=instance_info())
    conn.baremetal.set_node_provision_state(node, "active", config_drive=configdrive(name), wait=True, timeout=120)
    return alloc.node_id


REQUESTS = {"count": 0}
_original_request = ironic_io.Ironic.request


def _counting_request(self, *args, **kwargs):
    REQUESTS["count"] += 1
    return _original_request(self, *args, **kwargs)


ironic_io.Ironic.request = _counting_request


def claim_module(auth, name):
    """host_claim's main(), in this process."""
    args = {
        "backend": "ironic",
        "auth": dict(auth),
        "auth_type": "password",
        "region_name": "RegionOne",
        "interface": "public",
        "name": name,
        "resource_class": "rc-one",
        "wait": True,
        "image": {"url": IMAGE_URL, "checksum": MD5},
        "user_data": USER_DATA,
    }
    out = io.StringIO()
    with patch_module_args(args), contextlib.redirect_stdout(out):
        try:
            host_claim.main()
        except SystemExit:
            pass
    result = json.loads(out.getvalue())
    if result.get("failed"):
        raise RuntimeError(result["msg"])
    assert result["claim"]["provision_state"] == "active"
    return result["claim"]["host"]


def release(admin, name):
    """Undeploy (which removes the allocation) and wait for available; not measured."""
    alloc = admin.baremetal.get_allocation(name)
    admin.baremetal.set_node_provision_state(alloc.node_id, "deleted")
    poll(
        lambda: admin.baremetal.get_node(alloc.node_id),
        lambda n: n.provision_state == "available" and not n.target_provision_state,
        0.05,
    )


def apply_policy(env, workdir):
    play = localhost_play(
        [],
        roles=[
            {
                "role": "baremetal.tenancy.ironic_tenancy",
                "vars": {"ironic_tenancy_cloud": "admin", "ironic_tenancy_policy_file": str(env.policy_path)},
            }
        ],
    )
    run = run_playbook(play, env.ansible_env("admin"), workdir)
    if not run.ok:
        raise RuntimeError(run.explain())


class JobWatcher(threading.Thread):
    """The start mark of each async job: the mtime of its status file when first seen (``async_wrapper`` writes it
    as it starts the module; the result replaces it when the module ends)."""

    def __init__(self, directories):
        super().__init__(daemon=True)
        self.directories = list(directories)
        self.started: dict[str, float] = {}
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.is_set():
            self.look()
            self.stopping.wait(JOB_POLL)

    def look(self):
        for directory in self.directories:
            try:
                entries = list(os.scandir(directory))
            except FileNotFoundError:
                continue
            for entry in entries:
                if entry.name.endswith(".tmp") or entry.path in self.started:
                    continue
                try:
                    self.started[entry.path] = entry.stat().st_mtime
                except FileNotFoundError:
                    continue

    def jobs(self):
        """``{claim name: (start, end, result)}`` of the finished jobs."""
        found = {}
        for path, start in self.started.items():
            try:
                result = json.loads(Path(path).read_text())
                end = os.stat(path).st_mtime
            except (OSError, ValueError):
                continue
            claim = result.get("claim") or {}
            if claim.get("name"):
                found[claim["name"]] = (start, end, result)
        return found


def ironic_marks(log_path: Path) -> dict:
    """From Ironic's log: ``{("state", node uuid, state): first time}`` and ``{("reserved", allocation uuid): time}``."""
    marks = {}
    for line in log_path.read_text(errors="replace").splitlines():
        match = LOG_LINE.match(line)
        if not match:
            continue
        at = datetime.datetime.strptime(match["at"], "%Y-%m-%d %H:%M:%S.%f").timestamp()
        key = ("state", match["node"], match["state"]) if match["node"] else ("reserved", match["allocation"])
        marks.setdefault(key, at)
    return marks


def allocation_retries(log_path: Path) -> tuple[int, int, int]:
    """``(allocations taken up, conflicts retried, candidates skipped)`` by Ironic's allocation worker, from its
    log."""
    text = log_path.read_text(errors="replace")
    return tuple(len(line.findall(text)) for line in (CANDIDATES_LINE, RETRY_LINE, SKIP_LINE))


def iso_time(value: str) -> float:
    """Epoch seconds of an API timestamp (ISO 8601, with or without zone: Ironic's are UTC)."""
    parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.timezone.utc)
    return parsed.timestamp()


def percentile(values, share):
    """The nearest-rank percentile (``share`` 0.95 for p95)."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, int(-(-share * len(ordered) // 1)) - 1))]


TICKS = os.sysconf("SC_CLK_TCK")


def tree_cpu(pid: int) -> float:
    """CPU seconds of a process, its living descendants and its reaped children (``/proc/<pid>/stat``)."""
    parents, stats = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path("/proc/%s/stat" % entry).read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents.setdefault(int(fields[1]), []).append(int(entry))
        stats[int(entry)] = [int(value) for value in fields[11:15]]  # utime stime cutime cstime
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        if current in stats:
            utime, stime, cutime, cstime = stats[current]
            total += utime + stime + (cutime + cstime if current == pid else 0)
        todo.extend(parents.get(current, ()))
    return total / TICKS


def machine_busy_cpu() -> float:
    """Busy CPU seconds of the machine since boot (``/proc/stat``: all but idle and iowait)."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / TICKS


def storm_split(jobs: dict, allocations: dict, marks: dict) -> tuple[dict, list]:
    """Per claim: module time and its parts (see the module docstring); problems where a mark is missing."""
    parts = {
        "module_start_to_allocation": [],
        "allocation_in_ironic": [],
        "allocation_to_deploy_request": [],
        "deploy_in_ironic": [],
        "active_to_module_return": [],
    }
    walls, conductor, problems = [], [], []
    for name, (start, end, _result) in sorted(jobs.items()):
        allocation = allocations.get(name)
        if allocation is None:
            problems.append("%s: no allocation" % name)
            continue
        node = allocation["node_uuid"]
        created = iso_time(allocation["created_at"])
        reserved = marks.get(("reserved", allocation["uuid"]))
        deploying = marks.get(("state", node, "deploying"))
        active = marks.get(("state", node, "active"))
        if None in (reserved, deploying, active):
            problems.append("%s: Ironic's log lacks a mark (%s %s %s)" % (name, reserved, deploying, active))
            continue
        points = [start, created, reserved, deploying, active, end]
        for key, first, second in zip(parts, points, points[1:]):
            parts[key].append(second - first)
        walls.append(end - start)
        conductor.append((reserved - created) + (active - deploying))
    split = {
        "claims_measured": len(walls),
        "split_median_s": dict((key, round(statistics.median(values), 3)) for key, values in parts.items() if values),
        "ironic_conductor_share": round(sum(conductor) / sum(walls), 3) if walls else None,
        "module_share": round(1 - sum(conductor) / sum(walls), 3) if walls else None,
        "out_of_order_marks": sum(1 for values in parts.values() for value in values if value < -0.01),
    }
    return split, problems


def shares(total: int, parts: int) -> list[int]:
    """``total`` spread over ``parts`` as evenly as can be."""
    return [total // parts + (1 if number < total % parts else 0) for number in range(parts)]


def tenant_claims(env, workdir: Path, per_tenant: dict, tenant: str):
    """One tenant's claims of the storm in one ansible-playbook run: (tenant, the run, the claims' file)."""
    out = workdir / ("many-%s.json" % tenant)
    run_env = dict(env.ansible_env(env.tenants[tenant].cloud_name("member")))
    run_env["ANSIBLE_ASYNC_DIR"] = str(workdir / "async" / tenant)
    result = run_playbook(
        REPO / "playbooks" / "ironic_claim_hosts.yml",
        run_env,
        workdir / tenant,
        extra_vars={
            "claims_out": str(out),
            "claim_wait_timeout": 900,
            "claims": [
                {
                    "name": "many-%s-%d" % (tenant, i),
                    "resource_class": "rc-many",
                    "image": {"url": IMAGE_URL, "checksum": MD5},
                    "user_data": USER_DATA,
                }
                for i in range(per_tenant[tenant])
            ],
        },
        timeout=1800,
    )
    return tenant, result, out


def storm_outcome(results, per_tenant: dict) -> tuple[int, list, list]:
    """The storm's runs: (errors, the claims' hosts, the failed runs' explanations)."""
    errors, hosts, failures = 0, [], []
    for tenant, result, out in results:
        if not result.ok:
            failed = sum(
                1 for r in (result.tasks.get("Wait for the claims", {}).get("results") or []) if r.get("failed")
            )
            errors += failed or per_tenant[tenant]
            failures.append(result.explain()[-1500:])
            continue
        for claim in json.loads(out.read_text()):
            if claim["provision_state"] != "active":
                errors += 1
            hosts.append(claim["host"])
    return errors, hosts, failures


def storm_allocations(env, names: set) -> dict:
    """Ironic's allocations of the storm's claims, by name."""
    return dict(
        (a["name"], a)
        for a in env.admin_conn.baremetal.get(
            "/allocations?fields=uuid,name,node_uuid,created_at,state", microversion=MV
        ).json()["allocations"]
        if a["name"] in names
    )


def storm(env, workdir: Path, tenants: list[str], per_tenant: dict) -> dict:
    """Every tenant's claims at once, one ansible-playbook run per tenant (see the module docstring)."""
    watcher = JobWatcher(workdir / "async" / tenant for tenant in tenants)
    watcher.start()
    services = {"ironic": env.ironic.pid, "keystone": env.keystone.pid}
    if env.postgres_server is not None:
        services["postgresql"] = env.postgres_server.service.pid
    retries = allocation_retries(env.ironic_server.proc.log_path)
    cpu_before = dict((name, tree_cpu(pid)) for name, pid in services.items())
    busy_before = machine_busy_cpu()
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(tenants)) as pool:
        results = list(pool.map(lambda tenant: tenant_claims(env, workdir, per_tenant, tenant), tenants))
    total = time.monotonic() - started
    cpu = dict((name, round(tree_cpu(pid) - cpu_before[name], 1)) for name, pid in services.items())
    busy = round(machine_busy_cpu() - busy_before, 1)
    watcher.stopping.set()
    watcher.join(timeout=5)
    watcher.look()

    retries = [after - before for after, before in zip(allocation_retries(env.ironic_server.proc.log_path), retries)]
    errors, hosts, failures = storm_outcome(results, per_tenant)
    jobs = watcher.jobs()
    names = set("many-%s-%d" % (tenant, i) for tenant in tenants for i in range(per_tenant[tenant]))
    allocations = storm_allocations(env, names)
    split, problems = storm_split(
        dict((n, j) for n, j in jobs.items() if n in names), allocations, ironic_marks(env.ironic_server.proc.log_path)
    )
    walls = [end - start for name, (start, end, _r) in jobs.items() if name in names]
    recreated = sum(
        1
        for name, (_start, _end, result) in jobs.items()
        if name in names and any("created again" in str(warning) for warning in result.get("warnings") or ())
    )
    per_node = collections.Counter(a["node_uuid"] for a in allocations.values() if a.get("node_uuid"))
    figures = {
        "projects": len(tenants),
        "claims": len(names),
        "nodes_enrolled": len(names),
        "total_s": round(total, 2),
        "errors": errors,
        "distinct_nodes": len(set(hosts)),
        "nodes_with_two_allocations": sum(1 for count in per_node.values() if count > 1),
        # None: Ironic's log has no allocation worker's debug line (its log levels were not taken)
        "ironic_allocations_logged": retries[0],
        "ironic_conflicts_retried": retries[1] if retries[0] else None,
        "ironic_candidates_skipped": retries[2] if retries[0] else None,
        "allocations_recreated": recreated,
        "claims_timed": len(walls),
        "claim_to_active_s": {
            "p50": round(statistics.median(walls), 2) if walls else None,
            "p95": round(percentile(walls, 0.95), 2) if walls else None,
            "max": round(max(walls), 2) if walls else None,
        },
        **split,
        "cpu_s": dict(cpu, machine_busy=busy, rest=round(busy - sum(cpu.values()), 1)),
        "ironic_cpu_share": round(cpu["ironic"] / busy, 3) if busy else None,
    }
    if problems or failures:
        print("storm problems: %s\n%s" % (problems[:10], "\n".join(failures[:2])), file=sys.stderr)
    return figures


def enrol(env, tenants: list[str], per_tenant: dict) -> float:
    """The fake nodes: ``one-0`` for the sequential claims and one per claim of the storm; returns the seconds."""
    first = env.tenants[tenants[0]]
    nodes = [("one-0", "rc-one", first.project_id)]
    nodes.extend(
        ("many-%s-%d" % (tenant, i), "rc-many", env.tenants[tenant].project_id)
        for tenant in tenants
        for i in range(per_tenant[tenant])
    )
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        list(
            pool.map(
                lambda node: H.enroll_fake_node(
                    H.connect(env.keystone_server.admin_auth("system")),
                    node[0],
                    node[1],
                    env.infra_project_id,
                    lessee=node[2],
                ),
                nodes,
            )
        )
    enrol_s = time.monotonic() - started
    print("enrolled %d nodes in %.1f s" % (len(nodes), enrol_s), file=sys.stderr)
    return enrol_s


def sequential(auth, admin, rounds: int) -> tuple[dict, int | None]:
    """The module, the floor and the SDK's wait in turns, after a warm-up of each: the seconds of each claim per
    method and the module's request count."""
    timings = {"module": [], "floor": [], "sdk_wait": []}
    methods = {"module": claim_module, "floor": claim_floor, "sdk_wait": claim_sdk_wait}
    module_requests = None
    # one warm-up of each (token caches, first deploy of the node)
    for label, method in methods.items():
        method(auth, "warm-%s" % label)
        release(admin, "warm-%s" % label)
    for r in range(rounds):
        for label, method in methods.items():
            name = "r%d-%s" % (r, label)
            before = REQUESTS["count"]
            started = time.monotonic()
            method(auth, name)
            timings[label].append(time.monotonic() - started)
            if label == "module":
                module_requests = REQUESTS["count"] - before
            release(admin, name)
    return timings, module_requests


def playbook_claim(env, first, admin, workdir: Path) -> float:
    """One claim through ansible-playbook (host_claim, wait); returns its seconds."""
    started = time.monotonic()
    run = run_playbook(
        localhost_play(
            [
                {
                    "name": "claim",
                    "baremetal.tenancy.host_claim": {
                        "backend": "ironic",
                        "name": "via-playbook",
                        "resource_class": "rc-one",
                        "wait": True,
                        "image": {"url": IMAGE_URL, "checksum": MD5},
                        "user_data": USER_DATA,
                    },
                }
            ]
        ),
        env.ansible_env(first.cloud_name("member")),
        workdir / "playbook",
    )
    playbook_s = time.monotonic() - started
    if not run.ok:
        raise RuntimeError(run.explain())
    release(admin, "via-playbook")
    return playbook_s


def rounded(value, digits=3):
    return round(value, digits) if value is not None else None


def report(args, load_before, timings, module_requests, playbook_s, concurrent_figures) -> dict:
    """The JSON line's figures."""
    med = {k: statistics.median(v) if v else None for k, v in timings.items()}
    return {
        "bench": "claim_ironic",
        "cpus": os.cpu_count(),
        "load_before": load_before,
        "load_after": round(os.getloadavg()[0], 2),
        "rounds": args.rounds,
        "module_s": rounded(med["module"]),
        "floor_s": rounded(med["floor"]),
        "sdk_wait_s": rounded(med["sdk_wait"]),
        "module_vs_floor": round(med["module"] / med["floor"], 2) if med["module"] else None,
        "sdk_wait_vs_module": round(med["sdk_wait"] / med["module"], 2) if med["module"] else None,
        "module_requests": module_requests,
        "playbook_s": rounded(playbook_s),
        "samples_s": {k: [round(x, 3) for x in v] for k, v in timings.items()},
        "concurrent": concurrent_figures,
        "poll": {
            "first_s": polling.FIRST,
            "fast_for_s": polling.FAST_SECONDS,
            "factor": polling.FACTOR,
            "max_s": polling.LONGEST,
        },
        "ironic_db": "postgresql",
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--storm-projects", type=int, default=int(os.environ.get("BENCH_STORM_PROJECTS", "5")))
    parser.add_argument("--storm-claims", type=int, default=int(os.environ.get("BENCH_STORM_CLAIMS", "20")))
    args = parser.parse_args(argv)
    tenants = ["b%d" % i for i in range(1, max(1, args.storm_projects) + 1)]
    per_tenant = dict(zip(tenants, shares(args.storm_claims, len(tenants))))
    workdir = Path(tempfile.mkdtemp(prefix="bench-claim-ironic-"))
    load_before = round(os.getloadavg()[0], 2)
    env = H.start_openstack(
        workdir / "services",
        tenants=tenants,
        sushy_systems=[],
        database="postgresql",
        ironic_config="[DEFAULT]\ndefault_log_levels = %s\n" % LOG_LEVELS,
    )
    try:
        apply_policy(env, workdir / "policy")
        admin = env.admin_conn
        first = env.tenants[tenants[0]]
        enrol_s = enrol(env, tenants, per_tenant)
        timings = {"module": [], "floor": [], "sdk_wait": []}
        module_requests = None
        playbook_s = None
        if args.rounds > 0:
            timings, module_requests = sequential(first.member, admin, args.rounds)
            playbook_s = playbook_claim(env, first, admin, workdir)

        print("storm: %d claims from %d projects" % (args.storm_claims, len(tenants)), file=sys.stderr)
        concurrent_figures = storm(env, workdir, tenants, per_tenant)
        concurrent_figures["enrol_s"] = round(enrol_s, 1)
        figures = report(args, load_before, timings, module_requests, playbook_s, concurrent_figures)
        print(json.dumps(figures, sort_keys=True))
    finally:
        env.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
