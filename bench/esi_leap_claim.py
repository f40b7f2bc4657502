#!/usr/bin/env python
"""Benchmark: a tenant claiming an ESI-Leap offer until its host is deployed, against the owner-assigned lease of
today (issue 37, item 6).

Run standalone: ``.venv/bin/python bench/esi_leap_claim.py [--rounds N] [--tick S]``. It starts its own stack with
the harness (``make esi-leap``): Keystone, Ironic on PostgreSQL, ESI-Leap's API and manager (``harness/esi_leap.py``;
``--tick``, the manager's seconds between passes: 1 as in the test bed, ESI-Leap's own is 60), the
``ironic_tenancy`` policy, and ``fake-hardware`` nodes of the owner project ``infra`` (the deployment itself is
instant: what is measured is the leasing and the modules). Prints ONE JSON line; progress goes to stderr.

Two sides in turns, ``--rounds`` rounds (3) after a warm-up round, each on a node of its own, as ``ansible-playbook``
runs with each project's own credentials:

- ``esi_leap``: the owner has offered the node to tenant-a (``host_offer``, not timed); tenant-a runs one playbook:
  ``host_offer_claim`` (``wait: true``: until ESI-Leap's manager has made it the node's ``lessee``), then
  ``host_claim`` of the node (``candidate_nodes``, an image, ``wait: true``);
- ``owner_assigned``: the owner runs ``host_lease`` (``lease_provider: ironic``: the node's own fields, what the
  collection does where no ESI-Leap runs), then tenant-a runs the same ``host_claim``.

Per round, from the side's first playbook's start: ``lessee_s`` (a watcher reads the node as the owner every 50 ms:
when its ``lessee`` became tenant-a), ``deployed_s`` (when it was ``active``), ``total_s`` (the last playbook's
end). For ``esi_leap`` also ``manager_s``: from the lease's creation in ESI-Leap (its ``created_at``) to the
``lessee`` written by the manager, ESI-Leap's own share of the claim (``manager_share``: over ``total_s``). After
each round the tenant releases, the lease ends and the offer goes (not timed). ``ratio``: the medians' ``total_s``,
ESI-Leap over owner-assigned.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))

import _watch
from fixtures_openstack import apply_tenancy_policy
from harness import openstack as H
from harness.ansible import localhost_play, run_playbook
from harness.esi_leap import SERVICE_TYPE, start_esi_leap
from harness.keystone import REGION

TENANT = "tenant-a"
IMAGE = {"url": "http://images.example.com/os.img", "checksum": "9f6c1a0f5e2b4c8d7a3e1f0b2c4d6e8f"}
WAIT = 300


def task(module, **args):
    return {"name": module, f"baremetal.tenancy.{module}": args, "register": "out"}


def play(env, cloud, tasks, workdir):
    run = run_playbook(localhost_play(tasks), env.ansible_env(cloud), workdir, timeout=WAIT + 120)
    if not run.ok:
        raise SystemExit(f"{cloud}: {run.explain()[-3000:]}")
    return run


def claim(node):
    return task(
        "host_claim",
        backend="ironic",
        name=f"claim-{node}",
        resource_class="bench-esi",
        candidate_nodes=[node],
        image=IMAGE,
        wait=True,
        wait_timeout=WAIT,
    )


class NodeWatch(_watch.Watch):
    """The owner reads one node every 50 ms: when tenant-a became its lessee and when it was active."""

    interval = 0.05

    def __init__(self, admin, node_id, project):
        super().__init__()
        self.admin, self.node_id, self.project = admin, node_id, project
        self.lessee_at = self.active_at = None

    def read(self):
        node = self.admin.baremetal.get_node(self.node_id, fields=["lessee", "provision_state"])
        now = time.time()
        if self.lessee_at is None and node.lessee == self.project:
            self.lessee_at = now
        if self.active_at is None and node.provision_state == "active":
            self.active_at = now


def utc(text):
    """ESI-Leap's times (its database's naive UTC) as epoch seconds."""
    return datetime.datetime.fromisoformat(text).replace(tzinfo=datetime.timezone.utc).timestamp()


def lease_record(env, uuid):
    """The lease as ESI-Leap's API shows it to the tenant (its ``start_time`` and ``fulfill_time``)."""
    from keystoneauth1 import adapter, session
    from keystoneauth1.identity import v3

    sess = session.Session(auth=v3.Password(**env.tenants[TENANT].credentials["member"]))
    api = adapter.Adapter(sess, service_type=SERVICE_TYPE, interface="public", region_name=REGION)
    return api.get("/v1/leases/%s" % uuid).json()


def esi_round(env, node, workdir):
    owner_cloud = "infra"
    play(env, owner_cloud, [task("host_offer", nodes=[node.name], lessee=TENANT)], workdir / "offer")
    with NodeWatch(env.admin_conn, node.id, env.tenants[TENANT].project_id) as watch:
        started = time.time()
        run = play(
            env,
            TENANT,
            [task("host_offer_claim", node=node.name, wait=True, wait_timeout=WAIT), claim(node.name)],
            workdir / "claim",
        )
        ended = time.time()
    record = lease_record(env, run.result("host_offer_claim")["lease"]["uuid"])
    figures = {
        "lessee_s": watch.lessee_at - started,
        "deployed_s": watch.active_at - started,
        "total_s": ended - started,
        # the lease starts when the claim makes it (no start given); the manager fulfils it at a later pass
        "manager_s": watch.lessee_at - utc(record["start_time"]),
        "fulfilled_s": utc(record["fulfill_time"]) - utc(record["start_time"]),
    }
    play(env, TENANT, [task("host_release", backend="ironic", name=f"claim-{node.name}")], workdir / "release")
    play(env, TENANT, [task("host_offer_claim", state="absent", node=node.name)], workdir / "end")
    play(env, owner_cloud, [task("host_offer", state="absent", nodes=[node.name])], workdir / "withdraw")
    return figures


def owner_round(env, node, workdir):
    with NodeWatch(env.admin_conn, node.id, env.tenants[TENANT].project_id) as watch:
        started = time.time()
        project = env.tenants[TENANT].project_id  # the owner's member resolves no project names (verify_projects)
        lease = task("host_lease", nodes=[node.name], project=project, lease_provider="ironic", verify_projects=False)
        play(env, "infra", [lease], workdir / "lease")
        play(env, TENANT, [claim(node.name)], workdir / "claim")
        ended = time.time()
    figures = {
        "lessee_s": watch.lessee_at - started,
        "deployed_s": watch.active_at - started,
        "total_s": ended - started,
    }
    play(env, TENANT, [task("host_release", backend="ironic", name=f"claim-{node.name}")], workdir / "release")
    end = task("host_lease", state="absent", nodes=[node.name], lease_provider="ironic", verify_projects=False)
    play(env, "infra", [end], workdir / "end")
    return figures


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tick", type=float, default=1.0)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *dummy: sys.exit(1))  # ends through the finally below: the stack stops
    workdir = Path(tempfile.mkdtemp(prefix="bench-esi-leap-"))
    load_before = round(os.getloadavg()[0], 2)
    started_at = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    env = H.start_openstack(workdir / "services", tenants=[TENANT], sushy_systems=[], database="postgresql")
    esi = None
    try:
        apply_tenancy_policy(env, workdir / "policy")
        esi = start_esi_leap(env, workdir / "esi-leap", tick=args.tick)
        admin = env.admin_conn
        sides = {"esi_leap": esi_round, "owner_assigned": owner_round}
        nodes = {
            side: [
                H.enroll_fake_node(admin, f"bx-{side[:3]}-{r}", "bench-esi", env.infra_project_id)
                for r in range(args.rounds + 1)
            ]
            for side in sides
        }
        figures = {side: [] for side in sides}
        for r in range(args.rounds + 1):  # round 0 warms up
            for side, run_round in sides.items():
                got = run_round(env, nodes[side][r], workdir / f"r{r}-{side}")
                print(f"round {r} {side}: " + ", ".join(f"{k} {v:.2f}" for k, v in got.items()), file=sys.stderr)
                if r:
                    figures[side].append(got)
        medians = {
            side: {key: round(statistics.median(f[key] for f in values), 2) for key in values[0]}
            for side, values in figures.items()
        }
        result = {
            "bench": "esi_leap_claim",
            "started": started_at,
            "rounds": args.rounds,
            "manager_tick_s": args.tick,
            "median_s": medians,
            "rounds_s": {
                side: [{k: round(v, 2) for k, v in f.items()} for f in values] for side, values in figures.items()
            },
            "manager_share": round(medians["esi_leap"]["manager_s"] / medians["esi_leap"]["total_s"], 3),
            "ratio": round(medians["esi_leap"]["total_s"] / medians["owner_assigned"]["total_s"], 3),
            "load": {"start": load_before, "end": round(os.getloadavg()[0], 2)},
        }
        print(json.dumps(result, sort_keys=True))
    finally:
        if esi is not None:
            esi.stop()
        env.stop()


if __name__ == "__main__":
    main()
