"""The ESI-Leap half of `make demo` (issue 37, ``--only esi``): the market of hosts, through the leasing service ESI runs.

Keystone, Ironic (on PostgreSQL) and four sushy-tools Redfish BMCs, with ESI-Leap's API and manager beside them
(tests/integration/harness/esi_leap.py: its own virtualenv, `make esi-leap`; the manager ticks every second), the
projects ``infra`` (the owner, ESI-Leap's owner role) and ``tenant-a``, ``tenant-b`` (ESI-Leap's lessee role), each
actor with its own project-scoped credentials:

1. the system administrator writes Ironic's owner/lessee policy (ironic_setup_tenancy.yml) and enrols the four
   servers from their BMCs for ``infra`` (ironic_enroll_hosts.yml: two ``baremetal-small``, two
   ``baremetal-large``);
2. the owner offers the four hosts (esi_offer_hosts.yml): the small ones to tenant-a only, the large ones to
   every project;
3. both tenants claim offers themselves at the same time (esi_claim_offer.yml: ESI-Leap's manager makes the
   project the node's lessee, then host_claim deploys a live ISO with cloud-init user-data): tenant-a the two small
   hosts, tenant-b the two large ones, one of them for three minutes only;
4. each tenant sees only its own hosts (ironic_show_claims.yml);
5. that short lease expires: ESI-Leap's manager ends it, removes the lessee and undeploys the host, back to
   ``available``;
6. the tenants end their other leases early (esi_end_leases.yml): ESI-Leap undeploys the hosts; the owner
   withdraws the offers (esi_offer_hosts.yml, ``state: absent``), and the pool is clean.

Its table gives per claim the node, whom its offer was for, the lease's end, the seconds from the claim of the
offer to the deployed host, and how the host came back and how many seconds that took (from the lease's end, or from
the tenant's request to end it, to the node available without a lessee).

:func:`run` starts the services (:class:`Services`, which stops what it started, also on failure), runs the
:class:`Market`'s steps in the order of :meth:`Market.steps` and returns the table of the claims.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import os
import time
from pathlib import Path

from harness import esi_leap as esi_harness
from harness import openstack as openstack_harness
from harness import sushy as sushy_harness
from harness.ansible import run_playbook

from .common import PLAYBOOKS, DemoError, Tables, enroll_vars, genisoimage_missing, live_iso, say

BMC_COUNT = 4
SHORT_LEASE = 180  # seconds: tenant-b's second lease, from its claim (claim and deployment took 60 s at load 17)
WAIT = 900


def play(env, name: str, cloud: str, workdir: Path, extra_vars: dict | None = None):
    """Run playbooks/<name> as ``cloud``; fail the half with its output if it fails. Returns (run, seconds)."""
    started = time.monotonic()
    run = run_playbook(
        PLAYBOOKS / name,
        {**os.environ, **env.ansible_env(cloud)},
        workdir / f"{name}-{cloud}",
        extra_vars=extra_vars,
        timeout=1800,
    )
    if not run.ok:
        raise DemoError(f"{name} as {cloud} failed:\n{run.explain()}")
    return run, time.monotonic() - started


def at_once(env, name: str, workdir: Path, extra_vars: dict[str, dict]) -> dict[str, tuple]:
    """Run playbooks/<name> as each tenant of ``extra_vars`` (tenant -> its variables) at the same time; returns
    tenant -> (run, seconds), once every run has ended."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(extra_vars)) as pool:
        futures = {tenant: pool.submit(play, env, name, tenant, workdir, v) for tenant, v in extra_vars.items()}
        return {tenant: future.result() for tenant, future in futures.items()}


@dataclasses.dataclass
class Services:
    """What the half starts: Keystone, Ironic, sushy-tools and ESI-Leap. :meth:`stop` stops whatever of it started."""

    env: object = None
    esi: object = None

    def start(self, workdir: Path) -> None:
        say("starting Keystone, Ironic (postgresql), sushy-tools and ESI-Leap on 127.0.0.1 ...")
        self.env = openstack_harness.start_openstack(
            workdir / "services", sushy_systems=sushy_harness.default_systems(BMC_COUNT), database="postgresql"
        )
        self.esi = esi_harness.start_esi_leap(self.env, workdir / "esi-leap")
        for service in [*self.env.services, self.esi.service]:
            say(f"  {service.summary()}")

    def stop(self) -> None:
        if self.esi is not None:
            self.esi.stop()
        if self.env is not None:
            say("stopping the services")
            self.env.stop()


def missing() -> str | None:
    """What the half needs and is not there (a message), else None."""
    return genisoimage_missing()


def run(args, workdir: Path) -> Tables:
    """Keystone + Ironic + sushy-tools + ESI-Leap; the market; the table of its claims."""
    if args.database != "postgresql":
        say("ESI-Leap runs on PostgreSQL: the ESI-Leap half uses it whatever --database says")
    services = Services()
    try:
        services.start(workdir)
        market = Market(services.env, workdir)
        for step in market.steps():
            step()
    finally:
        services.stop()
    return market.tables()


class Market:
    """The ESI-Leap market: each step runs the collection's playbooks as one actor (its project's credentials)."""

    def __init__(self, env, workdir: Path):
        self.env = env
        self.workdir = workdir
        self.admin = env.admin_conn.baremetal
        self.iso = env.ironic_server.http_url + "/" + live_iso(env.ironic_server.http_root)
        self.classes: dict[str, str] = {}  # node -> resource class
        self.offered_to: dict[str, str] = {}  # node -> whom its offer is for
        self.short_end_at = 0.0  # when b-batch-0's lease ends
        self.wanted: dict[str, list[dict]] = {}  # tenant -> its claims of offers
        self.leases: dict[str, dict] = {}  # claim -> its lease
        self.rows: dict[str, dict] = {}  # claim -> table row

    def steps(self) -> list:
        return [self.enrol, self.offer, self.claim, self.views, self.expire, self.end_leases, self.withdraw]

    def play(self, name: str, cloud: str, extra_vars: dict | None = None):
        return play(self.env, name, cloud, self.workdir, extra_vars)

    def enrol(self) -> None:
        """1. the system administrator: Ironic's policy, the servers of infra"""
        self.play("ironic_setup_tenancy.yml", "admin", {"ironic_tenancy_policy_file": str(self.env.policy_path)})
        self.env.settle_policy()
        _run, took = self.play("ironic_enroll_hosts.yml", "admin", enroll_vars(self.env.bmcs, "esi-"))
        self.classes = {n.name: n.resource_class for n in self.admin.nodes(details=True)}
        say(
            f"admin: wrote Ironic's owner/lessee policy and enrolled for infra in {took:.1f}s: "
            + ", ".join(f"{name} ({rc})" for name, rc in sorted(self.classes.items()))
        )

    def offer(self) -> None:
        """2. the owner offers them"""
        offers = [{"resource_class": "baremetal-small", "lessee": "tenant-a"}, {"resource_class": "baremetal-large"}]
        run, took = self.play("esi_offer_hosts.yml", "infra", {"offers": offers})
        offered_to = self.offered_to
        for item in run.result("Offer the hosts, or withdraw the offers")["results"]:
            for offer in item["offers"]:
                offered_to[offer["node"]] = item["item"].get("lessee") or "every project"
        if sorted(offered_to) != sorted(self.classes):
            raise DemoError(f"the owner offered {sorted(offered_to)}, not every host {sorted(self.classes)}")
        say(
            f"infra (owner): offered the four hosts through ESI-Leap in {took:.1f}s: "
            + ", ".join(f"{node} to {whom}" for node, whom in sorted(offered_to.items()))
        )

    def claim_spec(self, name: str, resource_class: str, **more) -> dict:
        user_data = f"#cloud-config\nhostname: {name}\n"
        image = {"url": self.iso, "format": "live-iso"}
        return {
            "name": name,
            "resource_class": resource_class,
            "image": image,
            "user_data": user_data,
            "online": True,
            **more,
        }

    def claim(self) -> None:
        """3. the tenants claim offers themselves, at the same time"""
        claim, workdir = self.claim_spec, self.workdir
        self.short_end_at = time.time() + SHORT_LEASE
        short_end = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.short_end_at))
        self.wanted = {
            "tenant-a": [claim("a-web-0", "baremetal-small"), claim("a-web-1", "baremetal-small")],
            "tenant-b": [claim("b-db-0", "baremetal-large"), claim("b-batch-0", "baremetal-large", end=short_end)],
        }
        say(
            "tenants: tenant-a claims two small offers, tenant-b two large ones (b-batch-0 until "
            f"{short_end}), each with its own credentials, at the same time ..."
        )
        runs = at_once(
            self.env,
            "esi_claim_offer.yml",
            workdir,
            {
                tenant: {
                    "offer_claims": claims,
                    "offer_claim_wait_timeout": WAIT,
                    "offer_claims_out": str(workdir / f"claims-{tenant}.json"),
                }
                for tenant, claims in self.wanted.items()
            },
        )
        for tenant, (_run, took) in runs.items():
            self._claimed(tenant, took)
        project_ids = {t: p.project_id for t, p in self.env.tenants.items()}
        for name, row in self.rows.items():
            node = self.admin.get_node(row["node"])
            if node.lessee != project_ids[row["tenant"]] or node.provision_state != "active":
                raise DemoError(f"{row['node']} ({name}): lessee {node.lessee}, {node.provision_state}")

    def _claimed(self, tenant: str, took: float) -> None:
        """Check a tenant's claims (deployed, lease active), note their leases and rows, say so."""
        leases = self.leases
        written = json.loads((self.workdir / f"claims-{tenant}.json").read_text())
        for claim_result, lease in zip(written["claims"], written["leases"]):
            if claim_result["provision_state"] != "active" or lease["status"] != "active":
                raise DemoError(f"{tenant}: {claim_result['name']} is {claim_result['provision_state']}, lease {lease}")
            leases[claim_result["name"]] = lease
            self.rows[claim_result["name"]] = {
                "tenant": tenant,
                "claim": claim_result["name"],
                "node": lease["node"],
                "offered_to": self.offered_to[lease["node"]],
                "end": lease["end"],
                "deployed_s": took,
            }
        say(
            f"{tenant}: ESI-Leap leased and host_claim deployed "
            + ", ".join(f"{c['name']} on {leases[c['name']]['node']}" for c in self.wanted[tenant])
            + f" in {took:.1f}s"
        )

    def views(self) -> None:
        """4. each tenant sees only its own hosts"""
        rows = self.rows
        for tenant in self.wanted:
            out = self.workdir / f"view-{tenant}.json"
            self.play("ironic_show_claims.yml", tenant, {"view_out": str(out)})
            view = json.loads(out.read_text())
            own = {c["name"] for c in self.wanted[tenant]}
            seen_claims, seen_nodes = {c["name"] for c in view["claims"]}, set(view["nodes"])
            if seen_claims != own or seen_nodes != {rows[n]["node"] for n in own}:
                raise DemoError(f"{tenant} sees claims {sorted(seen_claims)} and nodes {sorted(seen_nodes)}")
            say(
                f"{tenant}: sees claims {', '.join(sorted(seen_claims))} on {', '.join(sorted(seen_nodes))} - nothing else"
            )

    def expire(self) -> None:
        """5. the short lease expires: ESI-Leap takes the host back"""
        rows = self.rows
        short_node = rows["b-batch-0"]["node"]
        short_end = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.short_end_at))
        say(f"infra: waiting for ESI-Leap to end tenant-b's lease of {short_node} at {short_end} ...")
        node = back_in_pool(self.admin, short_node, self.short_end_at + WAIT)
        rows["b-batch-0"].update(back_s=time.time() - self.short_end_at, how="lease expired (from its end)")
        say(
            f"ESI-Leap: ended the lease of {short_node}; {short_node} has no lessee, is undeployed and "
            f"{node.provision_state} {rows['b-batch-0']['back_s']:.1f}s after the lease's end"
        )

    def end_leases(self) -> None:
        """6. the tenants end their other leases early"""
        runs = at_once(
            self.env,
            "esi_end_leases.yml",
            self.workdir,
            {
                tenant: {
                    "end_leases": [
                        {"lease": self.leases[c["name"]]["uuid"]} for c in claims if c["name"] != "b-batch-0"
                    ],
                    "end_lease_wait_timeout": WAIT,
                }
                for tenant, claims in self.wanted.items()
            },
        )
        for tenant, (_run, took) in runs.items():
            for claim_spec in self.wanted[tenant]:
                name = claim_spec["name"]
                if name == "b-batch-0":
                    continue
                started = time.monotonic()
                back_in_pool(self.admin, self.rows[name]["node"], time.time() + WAIT)
                self.rows[name].update(
                    back_s=took + time.monotonic() - started, how="lease ended early (from the request)"
                )
            say(f"{tenant}: ended its leases ({took:.1f}s); ESI-Leap undeployed the hosts and removed the lessee")

    def withdraw(self) -> None:
        """6b. the owner withdraws the offers; the pool is clean"""
        run, took = self.play(
            "esi_offer_hosts.yml", "infra", {"offers": [{"nodes": sorted(self.classes), "state": "absent"}]}
        )
        withdrawn = run.result("Offer the hosts, or withdraw the offers")["results"][0]["actions"]
        say(f"infra (owner): withdrew {len(withdrawn)} offers in {took:.1f}s")
        nodes = sorted(self.admin.nodes(details=True), key=lambda n: n.name)
        state = ", ".join(f"{n.name}: {n.provision_state}" for n in nodes)
        if any(n.lessee or n.provision_state != "available" or n.instance_info for n in nodes):
            raise DemoError(f"the pool is not clean: {state}")
        say(f"pool: {state}, no lessee, nothing of a tenant left")

    def tables(self) -> Tables:
        rows = sorted(self.rows.values(), key=lambda r: (r["tenant"], r["claim"]))
        headers = ["tenant", "claim", "node", "offered to", "lease end", "offer->deployed", "back", "how"]
        lines = [
            [r["tenant"], r["claim"], r["node"], r["offered_to"], r["end"] or "-", f"{r['deployed_s']:.1f}s"]
            + ([f"{r['back_s']:.1f}s", r["how"]] if "back_s" in r else ["-", "-"])
            for r in rows
        ]
        return [(headers, lines)]


def back_in_pool(admin, node_name: str, deadline: float):
    """Wait until ``node_name`` has no lessee and is ``available`` (ESI-Leap's lease end undeploys it)."""
    while True:
        node = admin.get_node(node_name)
        if not node.lessee and node.provision_state == "available":
            return node
        if time.time() > deadline:
            raise DemoError(f"{node_name} is still {node.provision_state} with lessee {node.lessee}")
        time.sleep(1)
