#!/usr/bin/env python
"""Benchmark: the same Ironic claims and deployments by metalsmith and by the collection (issue 41, item 3).

Run standalone: ``.venv/bin/python bench/metalsmith.py [--rounds N] [--tenants N] [--inventory-rounds N]``. It
creates (or reuses) its own venv ``.tmp/bench-metalsmith-venv`` with ``metalsmith==2.5.0``, python-openstackclient
and python-ironicclient (``uv venv`` and ``uv pip install``: the test venv is untouched; then compiled to bytecode, as
pip does on install: uv does not by default and this machine sets ``PYTHONDONTWRITEBYTECODE``, so each metalsmith
or openstack process would compile its imports again, 2-3 s), starts Keystone + Ironic on
PostgreSQL with the harness, applies the ``ironic_tenancy`` policy, enrols ``fake-hardware`` nodes (owned by the
project ``infra``, each leased to one of ``--tenants`` projects ``m01``, ``m02``...; the deployment itself is instant:
what is measured is the tools) and prints ONE JSON line; progress goes to stderr.

metalsmith is run as a user of the seed runs it: its CLI, one process per command, with ``--os-cloud`` naming a cloud
of the harness's ``clouds.yaml`` (``OS_CLIENT_CONFIG_FILE``): ``metalsmith --os-cloud C deploy --resource-class R
--image URL --image-checksum SHA256 --candidate NODE --hostname NAME --ssh-public-key FILE --wait 600`` and
``metalsmith --os-cloud C undeploy NAME --wait 600``. The CLI rather than ``metalsmith.Provisioner``: it is the tool
the seed gives its users, and it pays a process start per command as ``ansible-playbook`` does (the Python API makes
the same calls: ``_cmd.py`` is ``reserve_node`` + ``provision_node`` + ``wait_for_provisioning``). Both commands run
with ``-q``: after a deployment, every other output format (table, value, json) reads the instance's IP addresses
from Neutron (``Instance.ip_addresses``: ``network.ports(binding:host_id=...)``), and with no Neutron in the catalog
(a standalone Ironic, as here) the deploy that succeeded exits 1 ("Service 'network' is disabled ...").

First ``tenant_refused``: metalsmith deploying as the tenant's ``member`` and as its ``manager`` (project-scoped,
not admin) on a node leased to it. With the collection's policy Ironic refuses it: metalsmith writes the node's
``extra`` (its port bookkeeping ``metalsmith_created_ports`` / ``metalsmith_attached_ports``, empty lists without
``--network``) in the same PATCH as ``instance_info`` (``Provisioner.provision_node``:
``update_node(node, instance_info=..., extra=...)``), and the policy keeps ``baremetal:node:update_extra`` to the
node's owner. Recorded: the exit code, the rule Ironic names in its 403, the paths of the refused PATCH (from
metalsmith's ``--debug`` log) and whether metalsmith cleaned up (allocation deleted, node ``available``). So the
metalsmith side below runs as **the owner** (``infra``'s ``member``: project-scoped, not admin, the only non-admin
identity the policy lets write ``extra``), each deployment picking the tenant's node with ``--candidate``; the
collection's side runs as the tenant (``member``), as a tenant would.

The collection's side runs ``ansible-playbook`` as a user runs it: ansible-core's defaults (no ``ansible.cfg``, no
test-bed caches: ``BMT_TEST_BED_CACHE`` empty), one playbook of one task, the module with the test venv's Python
(``--test-bed``: as the integration suites run it instead, with the harness's caches, ``ansible.cfg`` and
zygotes). One ``host_claim`` task per playbook, as claim_ironic.py's ``playbook_s``, rather than
``playbooks/ironic_claim_hosts.yml``: that playbook runs its claims as async tasks that ``async_status`` looks at
every 2 s, made for many claims per tenant; here each tenant claims one host, and metalsmith deploys one node per
command. Measured:

- ``one_at_a_time``: tenant ``m01``'s node, both sides in turns (the order flipped each round), ``--rounds`` rounds
  (3) after a warm-up round, medians: ``claim_s`` from the process start to its end with the node ``active`` (the
  collection's ``host_claim`` with ``candidate_nodes``, the image, a cloud-init user-data with an SSH key and
  ``wait: true``; metalsmith ``deploy`` with the same image and SSH key, ``--candidate``), split by Ironic's
  timestamps into ``start_to_allocation_s`` (process start to the allocation's ``created_at``: start-up, Keystone
  login, the tool's reads before it), ``allocation_to_active_s`` (to the node's ``provision_updated_at`` as it became
  ``active``: Ironic's work and the tool's waits and requests in between) and ``active_to_end_s`` (noticing
  ``active`` and exiting), and for the collection ``start_to_module_s`` (to the mtime of the module's
  ``AnsiballZ_host_claim.py``, kept with ``ANSIBLE_KEEP_REMOTE_FILES``: Ansible's start-up and the module's payload
  built); ``claim_cpu_s``, the CPU seconds of the claim's whole process tree (``getrusage`` of the ended
  children); ``release_s`` until the node is ``available`` with no allocation (``host_release`` ``wait: true``;
  metalsmith ``undeploy --wait``). Also ``startup_s``, each tool's floor in the same turns:
  ``ansible-playbook`` of one ``debug`` task, and the metalsmith venv's Python importing ``metalsmith._cmd`` (the
  CLI's imports, no request);
- ``concurrent``: every tenant at once, one process per tenant (one claim each on its own node leased to it: two
  nodes per tenant, one per side), each side's storm alone (the collection's first), the nodes checked ``active``
  after it: ``total_s`` (first start to last end), ``claim_s`` p50 / p95 / max per claim (its process's start to
  end), ``cpu_s`` (of all its processes), ``errors`` (a process failed, or its node not ``active``: must be 0),
  ``distinct_nodes``. The collection's ten playbooks log in as ten tenants' members, metalsmith's ten processes all
  as the owner's member;
- ``inventory``: after the storms, tenant ``m01``'s claimed nodes (its collection claim, and the node the owner
  deployed for it with metalsmith), read as the tenant in turns, ``--inventory-rounds`` (3) after a warm-up,
  medians: the collection's ``claimed_hosts`` inventory (``ansible-inventory -i m01.claimed_hosts.yml --list``,
  ``backend: ironic``, the host variables a user asks for: name, node UUID, allocation UUID, provision state, power
  state, ready) against ``openstack baremetal node list --associated --fields uuid name instance_uuid
  provision_state power_state -f json`` and the same with ``--long`` (the bench venv's ``openstack``); and which
  nodes each lists (names): the inventory the project's claims (allocations it owns), the node list every node with
  an instance the project sees (so also the one its owner deployed for it).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))

from _tool_venv import children_cpu, log, make_venv, run_and_print
from fixtures_openstack import apply_tenancy_policy
from harness import openstack as H
from harness.ansible import VENV_BIN, localhost_play, run_inventory, run_playbook, use_zygotes

VENV = REPO / ".tmp" / "bench-metalsmith-venv"
PACKAGES = ("metalsmith==2.5.0", "python-openstackclient", "python-ironicclient")
OWNER = "infra"
IMAGE_URL = "http://images.example.com/os.img"
IMAGE_SHA256 = hashlib.sha256(b"bench-metalsmith image").hexdigest()
SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBenchMetalsmithKeyForTheConfigDrive0000000 bench@example.com"
USER_DATA = "#cloud-config\nssh_authorized_keys:\n  - %s\n" % SSH_KEY
RC = "rc-ms"
MV = "1.78"
WAIT = 600
REFUSED = re.compile(r"Access was denied to the following resource: (baremetal:[\w:]+)")
PATCH = re.compile(r"-X PATCH \S+ .*? -d '(\[.*\])'")
INVENTORY_VARIABLES = ["name", "host", "node_uuid", "allocation_uuid", "provision_state", "power_state", "ready"]
NODE_FIELDS = ["uuid", "name", "instance_uuid", "provision_state", "power_state"]


class Bench:
    """The services, the work directory and how each side is run."""

    def __init__(self, env, workdir: Path, test_bed: bool):
        self.env, self.workdir, self.test_bed = env, workdir, test_bed
        self.key_file = workdir / "id_bench.pub"
        self.key_file.write_text(SSH_KEY + "\n")
        self.user_cfg = workdir / "user-ansible.cfg"
        self.user_cfg.write_text("")

    def ansible_env(self, cloud: str) -> dict:
        """As a user runs Ansible (ansible-core's defaults, no test-bed caches) unless ``--test-bed``."""
        run_env = dict(self.env.ansible_env(cloud))
        if not self.test_bed:
            run_env.update({"BMT_TEST_BED_CACHE": "", "ANSIBLE_CONFIG": str(self.user_cfg)})
        return run_env

    def tool_env(self, cloud: str) -> dict:
        """The environment of a metalsmith / openstack process: the harness's clouds.yaml, the cloud named too."""
        return dict(os.environ, OS_CLIENT_CONFIG_FILE=str(self.env.clouds_yaml), OS_CLOUD=cloud)

    def playbook(self, cloud: str, tasks: list, name: str, keep: bool = False) -> tuple[float, object]:
        """One ``ansible-playbook`` run; ``keep``: its module files are left in its directory (their mtime is when
        Ansible had built the module's payload and was starting it)."""
        run_env = self.ansible_env(cloud)
        if keep:
            run_env["ANSIBLE_KEEP_REMOTE_FILES"] = "1"
        started = time.monotonic()
        run = run_playbook(localhost_play(tasks), run_env, self.workdir / name, timeout=WAIT + 120)
        return time.monotonic() - started, run

    def tool(self, command: str, cloud: str, args: list, name: str) -> tuple[float, subprocess.CompletedProcess]:
        """One ``metalsmith`` or ``openstack`` process of the bench venv, ``--os-cloud cloud``; its stderr kept."""
        argv = [str(VENV / "bin" / command), "--os-cloud", cloud, *args]
        started = time.monotonic()
        proc = subprocess.run(
            argv, env=self.tool_env(cloud), capture_output=True, text=True, timeout=WAIT + 120, check=False
        )
        seconds = time.monotonic() - started
        (self.workdir / "logs").mkdir(exist_ok=True)
        (self.workdir / "logs" / ("%s.err" % name)).write_text(proc.stderr)
        return seconds, proc


def host_claim(name: str, node: str) -> dict:
    image = {"url": IMAGE_URL, "checksum": IMAGE_SHA256, "checksum_type": "sha256"}
    args = dict(backend="ironic", name=name, resource_class=RC, candidate_nodes=[node], image=image)
    args.update(user_data=USER_DATA, wait=True, wait_timeout=WAIT)
    return {"name": "claim", "baremetal.tenancy.host_claim": args}


def host_release(name: str) -> dict:
    args = dict(backend="ironic", name=name, wait=True, wait_timeout=WAIT)
    return {"name": "release", "baremetal.tenancy.host_release": args}


def deploy_args(bench: Bench, name: str, node: str) -> list:
    return [
        "deploy",
        "--resource-class",
        RC,
        "--image",
        IMAGE_URL,
        "--image-checksum",
        IMAGE_SHA256,
        "--candidate",
        node,
        "--hostname",
        name,
        "--ssh-public-key",
        str(bench.key_file),
        "--wait",
        str(WAIT),
    ]


def collection_claim(bench: Bench, tenant: str, name: str, node: str) -> float:
    seconds, run = bench.playbook(tenant, [host_claim(name, node)], "claim-%s" % name, keep=True)
    if not run.ok:
        raise RuntimeError("host_claim %s: %s" % (name, run.explain()[-3000:]))
    return seconds


def collection_release(bench: Bench, tenant: str, name: str) -> float:
    seconds, run = bench.playbook(tenant, [host_release(name)], "release-%s" % name)
    if not run.ok:
        raise RuntimeError("host_release %s: %s" % (name, run.explain()[-3000:]))
    return seconds


def metalsmith_claim(bench: Bench, cloud: str, name: str, node: str) -> float:
    seconds, proc = bench.tool("metalsmith", cloud, ["-q", *deploy_args(bench, name, node)], "deploy-%s" % name)
    if proc.returncode:
        raise RuntimeError("metalsmith deploy %s: %s" % (name, proc.stderr[-3000:]))
    return seconds


def metalsmith_release(bench: Bench, cloud: str, name: str) -> float:
    seconds, proc = bench.tool("metalsmith", cloud, ["-q", "undeploy", name, "--wait", str(WAIT)], "undeploy-%s" % name)
    if proc.returncode:
        raise RuntimeError("metalsmith undeploy %s: %s" % (name, proc.stderr[-3000:]))
    return seconds


def node_state(bench: Bench, node: str) -> dict:
    found = bench.env.admin_conn.baremetal.get_node(node)
    return {
        "provision_state": found.provision_state,
        "target": found.target_provision_state,
        "allocation": found.allocation_id,
        "instance_uuid": found.instance_id,
    }


def expect(bench: Bench, node: str, state: str) -> None:
    """The node settled in ``state`` (``available``: with no allocation left)."""
    found = node_state(bench, node)
    if found["provision_state"] != state or found["target"] or (state == "available" and found["allocation"]):
        raise RuntimeError("node %s not %s: %s" % (node, state, found))


def tenant_refused(bench: Bench, tenant: str, node: str) -> dict:
    """metalsmith deploying as the tenant's member and manager, ``--debug``: what Ironic refused, and the node after."""
    out = {}
    for role in ("member", "manager"):
        cloud = bench.env.tenants[tenant].cloud_name(role)
        name = "refused-%s" % role
        seconds, proc = bench.tool("metalsmith", cloud, ["--debug", *deploy_args(bench, name, node)], name)
        refused = REFUSED.findall(proc.stderr)
        patches = [json.loads(body) for body in PATCH.findall(proc.stderr)]
        out[role] = {
            "rc": proc.returncode,
            "seconds": round(seconds, 2),
            "refused_rules": sorted(set(refused)),
            "first_patch_paths": [op["path"] for op in patches[0]] if patches else None,
            "node_after": node_state(bench, node),
        }
        log("metalsmith as %s's %s: rc %s, refused %s" % (tenant, role, proc.returncode, out[role]["refused_rules"]))
    return out


def startup_floors(bench: Bench, tenant: str) -> dict:
    """Each tool's process floor: a one-``debug``-task playbook; the metalsmith CLI's imports."""
    ansible_s, run = bench.playbook(tenant, [{"name": "noop", "ansible.builtin.debug": {"msg": "x"}}], "noop")
    if not run.ok:
        raise RuntimeError(run.explain())
    started = time.monotonic()
    subprocess.run([str(VENV / "bin" / "python"), "-c", "import metalsmith._cmd"], check=True)
    return {"ansible_playbook": ansible_s, "metalsmith_import": time.monotonic() - started}


def iso_time(value: str) -> float:
    """Epoch seconds of an API timestamp (ISO 8601, with or without zone: Ironic's are UTC)."""
    parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=datetime.timezone.utc)).timestamp()


def claim_split(bench: Bench, node: str, start: float, end: float) -> dict:
    """Where a claim's time went, from Ironic's timestamps (this machine's clock): the process start to the
    allocation's ``created_at``, to the node's ``provision_updated_at`` (``active``), to the process end."""
    api = bench.env.admin_conn.baremetal
    found = api.get("/nodes/%s?fields=allocation_uuid,provision_updated_at" % node, microversion=MV).json()
    created = iso_time(api.get("/allocations/%s" % found["allocation_uuid"], microversion=MV).json()["created_at"])
    active = iso_time(found["provision_updated_at"])
    return {
        "start_to_allocation_s": created - start,
        "allocation_to_active_s": active - created,
        "active_to_end_s": end - active,
    }


def one_round(bench: Bench, tenant: str, node: str, label: str, flip: bool) -> dict:
    """One claim and release a side, the sides in turns; the nodes checked between."""
    got = {}
    sides = ["collection", "metalsmith"]
    for side in reversed(sides) if flip else sides:
        name = "%s-%s" % (label, side)
        start, cpu = time.time(), children_cpu()
        if side == "collection":
            claim = collection_claim(bench, tenant, name, node)
        else:
            claim = metalsmith_claim(bench, OWNER, name, node)
        split = claim_split(bench, node, start, time.time())
        split["claim_cpu_s"] = children_cpu() - cpu
        if side == "collection":
            payload = next((bench.workdir / ("claim-%s" % name)).rglob("AnsiballZ_host_claim.py"))
            split["start_to_module_s"] = payload.stat().st_mtime - start
        expect(bench, node, "active")
        if side == "collection":
            release = collection_release(bench, tenant, name)
        else:
            release = metalsmith_release(bench, OWNER, name)
        expect(bench, node, "available")
        got[side] = {"claim_s": claim, "release_s": release, **split}
    floors = startup_floors(bench, tenant)
    log("%s: %s, startup %s" % (label, rounded(got), rounded(floors)))
    return {"sides": got, "startup": floors}


def one_at_a_time(bench: Bench, tenant: str, node: str, rounds: int) -> dict:
    samples = []
    for number in range(rounds + 1):  # round 0 warms up
        got = one_round(bench, tenant, node, "r%d" % number, flip=bool(number % 2))
        if number:
            samples.append(got)
    medians = {
        side: {key: statistics.median(s["sides"][side][key] for s in samples) for key in samples[0]["sides"][side]}
        for side in ("collection", "metalsmith")
    }
    startup = {key: statistics.median(s["startup"][key] for s in samples) for key in samples[0]["startup"]}
    coll, ms = medians["collection"], medians["metalsmith"]
    return {
        "median_s": rounded(medians),
        "startup_s": rounded(startup),
        "claim_ratio": round(coll["claim_s"] / ms["claim_s"], 2),
        "release_ratio": round(coll["release_s"] / ms["release_s"], 2),
        "rounds_s": [rounded(s["sides"]) for s in samples],
        "metalsmith_as": "%s-member (the nodes' owner)" % OWNER,
        "collection_as": "%s-member (the lessee)" % tenant,
    }


def percentile(values, share):
    """The nearest-rank percentile (``share`` 0.95 for p95)."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, int(-(-share * len(ordered) // 1)) - 1))]


def storm(bench: Bench, side: str, nodes: dict) -> dict:
    """Every tenant's claim at once, one process each; ``nodes``: tenant -> its node for this side."""

    def one(tenant):
        name = "storm-%s-%s" % (side[:4], tenant)
        started = time.monotonic()
        try:
            if side == "collection":
                collection_claim(bench, tenant, name, nodes[tenant])
            else:
                metalsmith_claim(bench, OWNER, name, nodes[tenant])
            error = None
        except Exception as exc:  # counted, the others go on
            error = str(exc)[-500:]
        return tenant, started, time.monotonic(), error

    started, cpu = time.monotonic(), children_cpu()
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(nodes)) as pool:
        results = list(pool.map(one, sorted(nodes)))
    total, cpu = time.monotonic() - started, children_cpu() - cpu
    walls = [end - start for _tenant, start, end, _error in results]
    states = {tenant: node_state(bench, node) for tenant, node in nodes.items()}
    errors = [(tenant, error) for tenant, _s, _e, error in results if error]
    errors += [(t, "not active: %s" % s) for t, s in states.items() if s["provision_state"] != "active" or s["target"]]
    for tenant, error in errors[:3]:
        log("storm %s %s: %s" % (side, tenant, error))
    active = [nodes[t] for t, s in states.items() if s["provision_state"] == "active" and s["instance_uuid"]]
    return {
        "claims": len(nodes),
        "total_s": round(total, 2),
        "claim_s": {
            "p50": round(statistics.median(walls), 2),
            "p95": round(percentile(walls, 0.95), 2),
            "max": round(max(walls), 2),
        },
        "cpu_s": round(cpu, 1),
        "errors": len(errors),
        "distinct_nodes": len(set(active)),
        "load_at_end": round(os.getloadavg()[0], 2),
    }


def inventory_source(bench: Bench) -> Path:
    source = bench.workdir / "m01.claimed_hosts.yml"
    source.write_text(
        json.dumps(
            {
                "plugin": "baremetal.tenancy.claimed_hosts",
                "backend": "ironic",
                "host_variables": INVENTORY_VARIABLES,
            }
        )
    )
    return source


def read_inventory(bench: Bench, tenant: str, source: Path) -> tuple[float, list]:
    started = time.monotonic()
    proc = run_inventory(source, bench.ansible_env(tenant), bench.workdir / "inventory")
    seconds = time.monotonic() - started
    if proc.returncode:
        raise RuntimeError("ansible-inventory: %s" % proc.stderr[-3000:])
    hostvars = json.loads(proc.stdout)["_meta"]["hostvars"]
    # values read from an API are unsafe: ansible-inventory writes them as {"__ansible_unsafe": value}
    names = [v.get("tenancy_host") for v in hostvars.values()]
    return seconds, sorted(name.get("__ansible_unsafe") if isinstance(name, dict) else name for name in names)


def read_node_list(bench: Bench, tenant: str, long: bool) -> tuple[float, list]:
    columns = ["--long"] if long else ["--fields", *NODE_FIELDS]
    args = ["baremetal", "node", "list", "--associated", *columns, "-f", "json"]
    seconds, proc = bench.tool("openstack", tenant, args, "node-list")
    if proc.returncode:
        raise RuntimeError("openstack baremetal node list: %s" % proc.stderr[-3000:])
    rows = json.loads(proc.stdout)
    return seconds, sorted(row.get("Name") or row.get("name") for row in rows)


def inventory(bench: Bench, tenant: str, rounds: int) -> dict:
    """The tenant's claimed nodes: the claimed_hosts inventory against ``openstack baremetal node list``."""
    source = inventory_source(bench)
    sides = {
        "claimed_hosts_inventory": lambda: read_inventory(bench, tenant, source),
        "node_list_fields": lambda: read_node_list(bench, tenant, long=False),
        "node_list_long": lambda: read_node_list(bench, tenant, long=True),
    }
    samples = {side: [] for side in sides}
    listed = {}
    for number in range(rounds + 1):
        order = list(sides) if number % 2 == 0 else list(reversed(sides))
        for side in order:
            seconds, nodes = sides[side]()
            listed[side] = nodes
            if number:
                samples[side].append(seconds)
    medians = {side: statistics.median(values) for side, values in samples.items()}
    return {
        "median_s": rounded(medians),
        "rounds_s": rounded(samples),
        "inventory_over_node_list_fields": round(medians["claimed_hosts_inventory"] / medians["node_list_fields"], 2),
        "nodes_listed": listed,
        "inventory_host_variables": INVENTORY_VARIABLES,
        "node_list_fields": NODE_FIELDS,
    }


def rounded(value, digits=3):
    if isinstance(value, dict):
        return {key: rounded(item, digits) for key, item in value.items()}
    if isinstance(value, list):
        return [rounded(item, digits) for item in value]
    return round(value, digits) if isinstance(value, float) else value


def enrol(env, tenants: list) -> dict:
    """``solo`` (the one-at-a-time node) leased to the first tenant; per tenant a storm node per side."""
    plan = [("ms-solo", tenants[0])]
    plan += [("ms-%s-%s" % (tenant, side), tenant) for tenant in tenants for side in ("coll", "meta")]

    def one(item):
        conn = H.connect(env.keystone_server.admin_auth("system"))
        return H.enroll_fake_node(conn, item[0], RC, env.infra_project_id, lessee=env.tenants[item[1]].project_id)

    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(one, plan))
    return dict(plan)


def run(args, workdir: Path) -> dict:
    tenants = ["m%02d" % number for number in range(1, args.tenants + 1)]
    versions = make_venv(
        VENV, PACKAGES, ["metalsmith", "openstacksdk", "python-openstackclient", "python-ironicclient"]
    )
    env = H.start_openstack(workdir / "services", tenants=tenants, sushy_systems=[], database="postgresql")
    try:
        apply_tenancy_policy(env, workdir / "policy")
        bench = Bench(env, workdir, args.test_bed)
        if args.test_bed:
            use_zygotes()
        started = time.monotonic()
        enrol(env, tenants)
        log("enrolled %d nodes in %.1f s" % (1 + 2 * len(tenants), time.monotonic() - started))
        first = tenants[0]
        result = {"versions": versions, "tenant_refused": tenant_refused(bench, first, "ms-solo")}
        expect(bench, "ms-solo", "available")
        result["one_at_a_time"] = one_at_a_time(bench, first, "ms-solo", args.rounds)
        result["concurrent"] = {
            side: storm(bench, side, {t: "ms-%s-%s" % (t, side[:4]) for t in tenants})
            for side in ("collection", "metalsmith")
        }
        log("storms: %s" % json.dumps(result["concurrent"]))
        result["inventory"] = inventory(bench, first, args.inventory_rounds)
        return result
    finally:
        env.stop()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tenants", type=int, default=10)
    parser.add_argument("--inventory-rounds", type=int, default=3)
    parser.add_argument(
        "--test-bed", action="store_true", help="Ansible as the integration suites run it: caches, ansible.cfg, zygotes"
    )
    args = parser.parse_args(argv)
    details = {
        "rounds": args.rounds,
        "tenants": args.tenants,
        "ansible": "test bed (caches, ansible.cfg, zygotes)" if args.test_bed else "as a user runs it",
        "ansible_playbook": str(VENV_BIN / "ansible-playbook"),
    }
    run_and_print("metalsmith", run, args, details)


if __name__ == "__main__":
    main()
