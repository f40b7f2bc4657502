"""Ironic claims and leases killed mid-way: the rerun converges.

On the session's Keystone + Ironic (``openstack_env``, the ``ironic_tenancy`` policy so that a
lessee with ``member`` deploys; ``fake-hardware`` nodes), Ironic reached through the harness's
:class:`harness.fault_proxy.FaultProxy` holding each request a quarter of a second (so that the
phases last long enough to be hit):

- ``host_claim`` (backend ironic, image, user-data, ``online: false``, ``wait: true``) run by
  the tenant is killed with SIGKILL (its process group), the rounds aiming in turn at: anywhere
  in the module's run (a random delay up to a full run's time), and its allocation, deployment
  and power writes (a random moment of the half second after the proxy saw the module send that
  write: while the proxy holds it, or right after). Aiming at the writes seen rather than at
  delays measured once hits each phase however loaded the cores are. The phase hit is the last
  write the proxy saw the module send; without any, Ironic's state right after the kill (as the
  admin). The same task run again must succeed and leave exactly one allocation of the claim's
  name on a node that is ``active``, powered off, with the claim's image; a third run changes
  nothing. The claim is then released (no kill) and the node is ``available`` with nothing of
  the tenant left on it. Both the allocation and the deployment phases must have been hit.
- ``host_lease`` ending the leases of several nodes that the tenant deployed (``state:
  absent``) is killed likewise, after its first write (rounds go on until three kills landed);
  the rerun must end every lease (node ``available``, no ``lessee``, no ``instance_info``, no
  allocation, no lease record), and a further run changes nothing.
"""

from __future__ import annotations

import collections
import json
import random
import time

import pytest
from fixtures_faults import KillablePlaybook, has_traceback
from harness.ansible import localhost_play, run_playbook
from harness.fault_proxy import FaultProxy

pytestmark = pytest.mark.faults

MD5 = "9f6c1a0f5e2b4c8d7a3e1f0b2c4d6e8f"
IMAGE = {"url": "http://images.example.com/os.qcow2", "checksum": MD5, "checksum_type": "md5", "format": "qcow2"}
USER_DATA = "#cloud-config\nhostname: killed\n"
RC = "rc-kill"
LEASE_RC = "rc-kill-lease"
LEASES_KEY = "baremetal_tenancy_leases"
CLAIM_KILLS = 8
#: what the rounds of host_claim kills aim at, in turn
CLAIM_TARGETS = ("anywhere", "allocation", "deployment", "power")
LEASE_NODES = 3
LEASE_KILLS = 3
#: seconds the proxy holds each request to Ironic
SLOW = 0.25


def allocations_named(conn, name):
    return [a for a in conn.baremetal.allocations() if a.name == name]


def claim_task(name: str, **extra) -> dict:
    args = {
        "backend": "ironic",
        "name": name,
        "resource_class": RC,
        "image": IMAGE,
        "user_data": USER_DATA,
        "online": False,
        "wait": True,
        "wait_timeout": 300,
    }
    args.update(extra)
    return {"name": "claim", "baremetal.tenancy.host_claim": args}


def run_result(plays_task: dict, env: dict, workdir) -> dict:
    run = run_playbook(localhost_play([plays_task]), env, workdir)
    assert not has_traceback(run.stdout, run.stderr), run.explain()
    assert run.ok, run.explain()
    return run.result(plays_task["name"])


def claim_phase(conn, name: str, node_ids) -> str:
    """Where a killed host_claim stopped, as Ironic shows it."""
    allocations = allocations_named(conn, name)
    if not allocations:
        return "before allocation"
    allocation = allocations[0]
    if not allocation.node_id:
        return "allocation"
    node = conn.baremetal.get_node(allocation.node_id)
    if node.provision_state == "available" and not node.target_provision_state:
        return "allocation"
    if node.provision_state != "active" or node.target_provision_state:
        return "deployment"
    if node.power_state != "power off" or node.target_power_state:
        return "power"
    return "done"


def request_phase(requests: list[str]) -> str | None:
    """The phase of the last write the killed module sent to Ironic (the proxy saw it), ``None`` before any."""
    for request in reversed(requests):
        method, path = request.split(" ", 1)
        if method == "GET":
            continue
        if path.endswith("/states/power"):
            return "power"
        if path.startswith("/v1/allocations") or path.startswith("/allocations"):
            return "allocation"
        return "deployment"
    return None


def wait_first_write(run: KillablePlaybook, proxy: FaultProxy, seen: int, module: str = "host_claim") -> None:
    """Wait until the module's first write reached the proxy (requests after ``seen``) or the module ended."""
    while run.module_running(module) and not request_phase(proxy.requests[seen:]):
        time.sleep(0.05)


def wait_write(run: KillablePlaybook, proxy: FaultProxy, seen: int, phase: str, module: str = "host_claim") -> None:
    """Wait until the proxy saw the module send a write of ``phase`` (requests after ``seen``) or the module ended."""
    while run.module_running(module) and not any(request_phase([r]) == phase for r in proxy.requests[seen:]):
        time.sleep(0.02)


@pytest.fixture(scope="module")
def kill_nodes(openstack_env, enroll_node, ironic_tenancy_policy, tmp_path_factory):
    """The nodes, and a clouds.yaml whose Ironic is reached through a proxy that holds each request
    :data:`SLOW` seconds: fake-hardware deploys in well under a second, and without it nearly every kill
    lands before the allocation or after the power change."""
    a = openstack_env.tenants["tenant-a"].project_id
    for index in range(2):
        enroll_node("kill-c%d" % index, resource_class=RC, lessee=a)
    for index in range(LEASE_NODES):
        enroll_node("kill-l%d" % index, resource_class=LEASE_RC)
    proxy = FaultProxy("127.0.0.1", openstack_env.ironic.port, mode="delay", delay=SLOW)
    clouds = openstack_env.write_clouds_yaml(
        tmp_path_factory.mktemp("kill-clouds") / "clouds.yaml", baremetal_endpoint_override=proxy.url()
    )
    yield openstack_env, clouds, proxy
    proxy.stop()


def test_host_claim_killed_mid_way_converges_on_rerun(kill_nodes, tmp_path):
    env, clouds, proxy = kill_nodes
    admin = env.admin_conn
    tenant = env.ansible_env("tenant-a", clouds)
    rng = random.Random(1702)
    # the module's own time for a full claim, measured once (the rounds aiming anywhere)
    warm = KillablePlaybook(localhost_play([claim_task("kill-warm")]), tenant, tmp_path / "warm")
    assert warm.wait_module("host_claim")
    started = time.monotonic()
    assert warm.wait() == 0, warm.output[-4000:]
    full_seconds = time.monotonic() - started
    run_result(claim_task("kill-warm", state="absent"), tenant, tmp_path / "warm-release")
    hits = collections.Counter()
    aimed = collections.Counter()  # (target, phase hit or "ended first")
    kills = 0
    for round_number in range(CLAIM_KILLS * 3):
        if kills >= CLAIM_KILLS:
            break
        target = CLAIM_TARGETS[round_number % len(CLAIM_TARGETS)]
        name = "kill-%02d" % round_number
        workdir = tmp_path / name
        seen = len(proxy.requests)
        killed = KillablePlaybook(localhost_play([claim_task(name)]), tenant, workdir / "killed")
        if killed.wait_module("host_claim"):
            if target == "anywhere":
                time.sleep(rng.uniform(0, full_seconds))
            else:
                wait_write(killed, proxy, seen, target)
                time.sleep(rng.uniform(0, 2 * SLOW))
        if not killed.kill():
            aimed[(target, "ended first")] += 1
            continue
        kills += 1
        phase = request_phase(proxy.requests[seen:]) or claim_phase(admin, name, None)
        hits[phase] += 1
        aimed[(target, phase)] += 1
        rerun = run_result(claim_task(name), tenant, workdir / "rerun")
        claim = rerun["claim"]
        allocations = allocations_named(admin, name)
        assert len(allocations) == 1, (phase, allocations)
        node = admin.baremetal.get_node(allocations[0].node_id)
        assert (node.provision_state, node.power_state, node.target_provision_state) == ("active", "power off", None), (
            phase,
            node,
        )
        assert node.instance_info.get("image_source") == IMAGE["url"], (phase, node.instance_info)
        assert claim["provision_state"] == "active"
        again = run_result(claim_task(name), tenant, workdir / "again")
        assert again["changed"] is False, (phase, again)
        released = run_result(claim_task(name, state="absent"), tenant, workdir / "release")
        assert released["changed"] is True
        node = admin.baremetal.get_node(node.id)
        assert node.provision_state == "available" and node.instance_info == {} and node.allocation_id is None, node
        assert not allocations_named(admin, name)
    print("\nhost_claim kills: %d; phases hit: %s; by aim: %s" % (kills, dict(hits), dict(aimed)))
    assert kills >= CLAIM_KILLS
    assert hits["allocation"] and hits["deployment"], (hits, aimed)


def lease_task(project: str, state: str = "present") -> dict:
    args = {"project": project, "nodes": ["kill-l%d" % i for i in range(LEASE_NODES)], "state": state}
    if state == "absent":
        args.update(wait=True, wait_timeout=300)
    return {"name": "lease", "baremetal.tenancy.host_lease": args}


# Found 2026-11-27 (xfail until fixed the same day): a run killed between the patch that ends a deployed node's
# lessee and the undeployment left the node active with nobody's lease, and the rerun saw nothing to end. The patch
# now marks instance_info (leases.ENDED_KEY) and the next run undeploys such a node.
def test_host_lease_killed_while_ending_leases_converges_on_rerun(kill_nodes, tmp_path):
    env, clouds, proxy = kill_nodes
    admin = env.admin_conn
    a = env.tenants["tenant-a"].project_id
    owner = env.ansible_env("admin", clouds)
    tenant = env.ansible_env("tenant-a", clouds)
    rng = random.Random(1703)
    names = ["kill-l%d" % i for i in range(LEASE_NODES)]
    ended_seconds = None
    stages = collections.Counter()
    for round_number in range(LEASE_KILLS * 3 + 1):
        if sum(stages.values()) >= LEASE_KILLS:
            break
        workdir = tmp_path / ("round-%d" % round_number)
        run_result(lease_task(a), owner, workdir / "lease")
        claims = [
            dict(claim_task("kill-lease-%d" % index, resource_class=LEASE_RC, online=True), name="claim %d" % index)
            for index in range(LEASE_NODES)
        ]
        run = run_playbook(localhost_play(claims), tenant, workdir / "claims")
        assert run.ok, run.explain()
        seen = len(proxy.requests)
        if ended_seconds is None:
            # the first round measures an undisturbed end of the leases, from the module's first write to its end
            ending = KillablePlaybook(localhost_play([lease_task(a, "absent")]), owner, workdir / "end")
            assert ending.wait_module("host_lease")
            wait_first_write(ending, proxy, seen, "host_lease")
            started = time.monotonic()
            assert ending.wait() == 0, ending.output[-4000:]
            ended_seconds = time.monotonic() - started
        else:
            killed = KillablePlaybook(localhost_play([lease_task(a, "absent")]), owner, workdir / "killed")
            if killed.wait_module("host_lease"):
                wait_first_write(killed, proxy, seen, "host_lease")
                time.sleep(rng.uniform(0, ended_seconds * 0.7))
            if killed.kill():
                nodes = [admin.baremetal.get_node(name) for name in names]
                stages["nodes still leased %d of %d" % (sum(1 for n in nodes if n.lessee), len(nodes))] += 1
            rerun = run_result(lease_task(a, "absent"), owner, workdir / "rerun")
            assert not rerun.get("failed"), rerun
        for name in names:
            node = admin.baremetal.get_node(name)
            assert node.provision_state == "available" and not node.target_provision_state, node
            assert node.lessee is None and node.instance_info == {} and node.allocation_id is None, node
            assert LEASES_KEY not in (node.properties or {}), node.properties
        assert not [al.name for al in admin.baremetal.allocations() if (al.name or "").startswith("kill-lease-")]
        again = run_result(lease_task(a, "absent"), owner, workdir / "again")
        assert again["changed"] is False, json.dumps(again)[:2000]
    print("\nhost_lease kills while ending %d leases: %s" % (LEASE_NODES, dict(stages)))
    assert sum(stages.values()) >= 1
