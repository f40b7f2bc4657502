#!/usr/bin/env python
"""Benchmark: an Ironic claim (allocation + deploy, wait) three ways, and 20 claims at once.

Run standalone: ``.venv/bin/python bench/claim_ironic.py [--rounds N]``. It
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

Then ``concurrent``: 5 tenant projects x 4 claims at once (5
ansible-playbook runs of ``playbooks/ironic_claim_hosts.yml``, each claiming
its 4 in parallel): total time, errors, distinct nodes.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import io
import json
import statistics
import sys
import tempfile
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
TENANTS = tuple("b%d" % i for i in range(1, 6))


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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="bench-claim-ironic-"))
    env = H.start_openstack(workdir / "services", tenants=TENANTS, sushy_systems=[], database="postgresql")
    try:
        apply_policy(env, workdir / "policy")
        admin = env.admin_conn
        first = env.tenants[TENANTS[0]]
        H.enroll_fake_node(admin, "one-0", "rc-one", env.infra_project_id, lessee=first.project_id)
        for tenant in TENANTS:
            for i in range(4):
                H.enroll_fake_node(
                    admin,
                    "many-%s-%d" % (tenant, i),
                    "rc-many",
                    env.infra_project_id,
                    lessee=env.tenants[tenant].project_id,
                )

        auth = first.member
        timings = {"module": [], "floor": [], "sdk_wait": []}
        methods = {"module": claim_module, "floor": claim_floor, "sdk_wait": claim_sdk_wait}
        # one warm-up of each (token caches, first deploy of the node)
        for label, method in methods.items():
            method(auth, "warm-%s" % label)
            release(admin, "warm-%s" % label)
        module_requests = None
        for r in range(args.rounds):
            for label, method in methods.items():
                name = "r%d-%s" % (r, label)
                before = REQUESTS["count"]
                started = time.monotonic()
                method(auth, name)
                timings[label].append(time.monotonic() - started)
                if label == "module":
                    module_requests = REQUESTS["count"] - before
                release(admin, name)

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

        def tenant_claims(tenant):
            out = workdir / ("many-%s.json" % tenant)
            result = run_playbook(
                REPO / "playbooks" / "ironic_claim_hosts.yml",
                env.ansible_env(env.tenants[tenant].cloud_name("member")),
                workdir / tenant,
                extra_vars={
                    "claims_out": str(out),
                    "claim_wait_timeout": 600,
                    "claims": [
                        {
                            "name": "many-%s-%d" % (tenant, i),
                            "resource_class": "rc-many",
                            "image": {"url": IMAGE_URL, "checksum": MD5},
                            "user_data": USER_DATA,
                        }
                        for i in range(4)
                    ],
                },
            )
            return result, out

        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(TENANTS)) as pool:
            results = list(pool.map(tenant_claims, TENANTS))
        concurrent_s = time.monotonic() - started
        errors, hosts = 0, []
        for result, out in results:
            if not result.ok:
                errors += (
                    sum(
                        1 for r in (result.tasks.get("Wait for the claims", {}).get("results") or []) if r.get("failed")
                    )
                    or 4
                )
                continue
            for claim in json.loads(out.read_text()):
                if claim["provision_state"] != "active":
                    errors += 1
                hosts.append(claim["host"])

        med = {k: statistics.median(v) for k, v in timings.items()}
        print(
            json.dumps(
                {
                    "bench": "claim_ironic",
                    "rounds": args.rounds,
                    "module_s": round(med["module"], 3),
                    "floor_s": round(med["floor"], 3),
                    "sdk_wait_s": round(med["sdk_wait"], 3),
                    "module_vs_floor": round(med["module"] / med["floor"], 2),
                    "sdk_wait_vs_module": round(med["sdk_wait"] / med["module"], 2),
                    "module_requests": module_requests,
                    "playbook_s": round(playbook_s, 3),
                    "samples_s": {k: [round(x, 3) for x in v] for k, v in timings.items()},
                    "concurrent": {
                        "tenants": len(TENANTS),
                        "claims": 4 * len(TENANTS),
                        "total_s": round(concurrent_s, 2),
                        "errors": errors,
                        "distinct_nodes": len(set(hosts)),
                    },
                    "poll": {
                        "first_s": polling.FIRST,
                        "fast_for_s": polling.FAST_SECONDS,
                        "factor": polling.FACTOR,
                        "max_s": polling.LONGEST,
                    },
                    "ironic_db": "postgresql",
                }
            )
        )
    finally:
        env.stop()


if __name__ == "__main__":
    main()
