"""The Ironic half of `make demo`: Keystone, Ironic and sushy-tools (with, as root, test-bed machines and, on
PostgreSQL, a switch and Neutron); the story is in the docstring of scripts/demo/__main__.py.

:func:`run` starts the services (:class:`Services`, which stops what it started, also on failure), runs the
:class:`Story`'s steps in the order of :meth:`Story.steps` and returns the table of the claims.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import os
import secrets
import subprocess
import time
import urllib.request
from pathlib import Path

import yaml
from harness import ironic_networks
from harness import machines as machines_harness
from harness import openstack as openstack_harness
from harness import sushy as sushy_harness
from harness.ansible import run_playbook
from harness.cloud_config import DEFAULT_USER

from . import networks
from .common import PLAYBOOKS, REPO, DemoError, Tables, enroll_vars, genisoimage_missing, live_iso, say

TENANTS = {"tenant-a": "alice", "tenant-b": "bob"}
BMC_COUNT = 4  # bmc-0..3: 32 GiB (small) and 64 GiB (large) systems alternate
SHORT_LEASE = 3600  # seconds: tenant-b's second lease, moved to end soon once its host is deployed
# Seconds from the owner's change of that lease's end to the end: the change's playbook must reach Ironic
# before then (13 s at load ~20).
EXPIRE_IN = 30


def play(name: str, cloud: str, clouds_yaml: Path, workdir: Path, extra_vars: dict | None = None):
    """Run playbooks/<name> as ``cloud``; fail the demo with its output if it fails."""
    started = time.monotonic()
    env = dict(os.environ)
    env.update({"OS_CLIENT_CONFIG_FILE": str(clouds_yaml), "OS_CLOUD": cloud})
    run = run_playbook(PLAYBOOKS / name, env, workdir / f"{name}-{cloud}", extra_vars=extra_vars, timeout=1800)
    if not run.ok:
        raise DemoError(f"{name} as {cloud} failed:\n{run.explain()}")
    return run, time.monotonic() - started


def result(run, task: str) -> dict:
    return run.result(task)


def tenant_clouds(env, clouds_yaml: Path, passwords: dict) -> None:
    """Add the tenants' users (created by the role) to clouds.yaml."""
    data = yaml.safe_load(clouds_yaml.read_text())
    for project, user in TENANTS.items():
        data["clouds"][user] = {
            "auth_type": "password",
            "region_name": "RegionOne",
            "identity_api_version": 3,
            "interface": "public",
            "auth": {
                "auth_url": env.keystone.url,
                "username": user,
                "password": passwords[user],
                "user_domain_name": "Default",
                "project_name": project,
                "project_domain_name": "Default",
            },
        }
    clouds_yaml.write_text(yaml.safe_dump(data, sort_keys=False))
    clouds_yaml.chmod(0o600)


@dataclasses.dataclass
class Services:
    """What the half starts: the switch and Neutron (as root on PostgreSQL), the test-bed machines (as root),
    Keystone, Ironic and sushy-tools. :meth:`stop` stops whatever of it started."""

    env: object = None
    bed: object = None
    fabric: networks.Fabric | None = None

    def start(self, args, workdir: Path) -> None:
        systems = sushy_harness.default_systems(BMC_COUNT)
        if os.geteuid() != 0:
            say("not root: no test-bed machines and no switch (flat network; tenant-a claims without deploy_web)")
        elif args.database != "postgresql":
            say("Ironic on sqlite: no Neutron (it needs PostgreSQL), the machines share one flat network")
        else:
            say("starting the switch ...")
            self.fabric = networks.start_switch(workdir)
        if os.geteuid() == 0:
            self.bed = machines_harness.TestBed(
                workdir / "machines", switch=self.fabric.switch if self.fabric else None
            )
            self.bed.address_systems(systems)
        say(f"starting Keystone, Ironic ({args.database}) and sushy-tools on 127.0.0.1 ...")
        self.env = openstack_harness.start_openstack(
            workdir / "services",
            tenants=(),
            sushy_systems=systems,
            database=args.database,
            ironic_config=ironic_networks.IRONIC_NEUTRON_CONFIG if self.fabric else None,
        )
        for service in self.env.services:
            say(f"  {service.summary()}")
        if self.fabric is not None:
            networks.start_neutron(self.fabric, self.env, workdir)
        if self.bed is not None:
            self._add_machines()

    def _add_machines(self) -> None:
        fabric, bed = self.fabric, self.bed
        machines = bed.add_machines(self.env.bmcs)
        if fabric:
            where = f"on ports of switch {fabric.switch.name} (quarantine VLAN {fabric.switch.quarantine_vlan})"
        else:
            where = f"on {bed.bridge} ({bed.subnet})"
        say(
            "  test-bed machines "
            + where
            + ": "
            + ", ".join(m.name if fabric else f"{m.name} {m.ip}" for m in machines)
        )

    def stop(self) -> None:
        if self.bed is not None:
            self.bed.stop()
        if self.fabric is not None and self.fabric.neutron is not None:
            self.fabric.neutron.stop()
        if self.env is not None:
            say("stopping the services")
            self.env.stop()
        if self.fabric is not None:
            self.fabric.switch.stop()


def missing() -> str | None:
    """What the half needs and is not there (a message), else None."""
    return genisoimage_missing()


def run(args, workdir: Path) -> Tables:
    """Keystone + Ironic + sushy-tools (+ test-bed machines); the Ironic story; the table of its claims."""
    services = Services()
    try:
        services.start(args, workdir)
        story = Story(services.env, workdir, services.bed, services.fabric)
        for step in story.steps():
            step()
    finally:
        services.stop()
    return story.tables()


def claim_specs(iso: str) -> dict[str, list[dict]]:
    """Each tenant's claims: tenant-a two small web hosts, tenant-b two large ones, all a live ISO."""

    def spec(name: str, resource_class: str, user_data: str) -> dict:
        return {
            "name": name,
            "resource_class": resource_class,
            "online": True,
            "image": {"url": iso, "format": "live-iso"},
            "user_data": user_data,
        }

    return {
        "tenant-a": [
            spec(f"a-web-{i}", "baremetal-small", "#cloud-config\nhostname: a-web-%d\npackages: [nginx]\n" % i)
            for i in range(2)
        ],
        "tenant-b": [
            spec("b-db-0", "baremetal-large", "#cloud-config\nhostname: b-db-0\n"),
            spec("b-batch-0", "baremetal-large", "#cloud-config\nhostname: b-batch-0\n"),
        ],
    }


class Story:
    """The Ironic story: each step runs the collection's playbooks with one actor's credentials (clouds.yaml)."""

    def __init__(self, env, workdir: Path, bed=None, fabric=None):
        self.env = env
        self.workdir = workdir
        self.bed = bed
        self.fabric = fabric
        self.clouds = env.clouds_yaml
        self.iso = env.ironic_server.http_url + "/" + live_iso(env.ironic_server.http_root)
        self.claims = claim_specs(self.iso)  # tenant -> its claims
        self.leases: dict[str, tuple[str, str | None]] = {}  # node -> (tenant, end)
        self.short_node = ""  # the node of tenant-b's lease that is made to end
        self.keys: Path | None = None  # alice's SSH keys (with test-bed machines)
        self.addresses: dict[str, str] = {}  # node -> address (machines on a flat network)
        self.rows: dict[str, dict] = {}  # claim -> table row

    def steps(self) -> list:
        return [
            self.tenancy,
            self.enrol,
            self.lease,
            self.tenant_networks,
            self.prepare_claims,
            self.claim,
            self.check_web,
            self.views,
            self.expire,
            self.release,
            self.end_leases,
        ]

    def play(self, name: str, cloud: str, extra_vars: dict | None = None):
        return play(name, cloud, self.clouds, self.workdir, extra_vars)

    # -- 1. the owner: tenancy (and the networks), then the servers ---------------

    def tenancy(self) -> None:
        env = self.env
        passwords = {user: secrets.token_urlsafe(16) for user in TENANTS.values()}
        _run, took = self.play(
            "ironic_setup_tenancy.yml",
            "admin",
            {
                "ironic_tenancy_projects": [
                    {
                        "name": project,
                        "description": f"demo {project}",
                        "users": [{"name": user, "password": passwords[user]}],
                    }
                    for project, user in TENANTS.items()
                ],
                "ironic_tenancy_policy_file": str(env.policy_path),
                **(networks.owner_role_vars(self.fabric) if self.fabric else {}),
            },
        )
        env.settle_policy()
        tenant_clouds(env, self.clouds, passwords)
        say(
            f"owner: created projects {', '.join(TENANTS)} with users {', '.join(TENANTS.values())} (role member) "
            f"and wrote the owner/lessee policy in {took:.1f}s"
        )
        if self.fabric is not None:
            networks.settle_policy(env)
            say(
                "owner: made the provisioning, cleaning and quarantine networks ("
                + ", ".join(ironic_networks.OWNER_NETWORKS.values())
                + "), gave Ironic's service user the role service and wrote Neutron's policy: tenants make networks "
                "and ports, never bind a port; lessees attach their ports to their nodes"
            )

    def enrol(self) -> None:
        fabric, bed = self.fabric, self.bed
        run, took = self.play(
            "ironic_enroll_hosts.yml",
            "admin",
            enroll_vars(
                self.env.bmcs,
                "node-",
                {"network_interface": "neutron"} if fabric else None,
                (lambda bmc: networks.nics(bed.machine(bmc.name))) if fabric else None,
            ),
        )
        enrolled = result(run, "Register the hosts from their BMCs")["hosts"]
        classes = {n.name: n.resource_class for n in self.env.admin_conn.baremetal.nodes(details=True)}
        say(
            f"owner: enrolled {len(enrolled)} nodes from their BMCs in {took:.1f}s: "
            + ", ".join(f"{h['name']} ({classes.get(h['name'])})" for h in enrolled)
            + (
                " - network interface neutron, each NIC's switch port from the owner's cabling records"
                if fabric
                else ""
            )
        )

    def lease(self) -> None:
        hour_end_s = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + SHORT_LEASE))
        run, took = self.play(
            "ironic_lease_hosts.yml",
            "admin",
            {
                "leases": [
                    {"project": "tenant-a", "resource_class": "baremetal-small", "count": 2},
                    {"project": "tenant-b", "resource_class": "baremetal-large", "count": 1},
                    {"project": "tenant-b", "resource_class": "baremetal-large", "count": 1, "end": hour_end_s},
                ]
            },
        )
        leases = self.leases
        for item in result(run, "Lease the hosts, or end the leases")["results"]:
            for lease in item["leases"]:
                if lease["id"] in [a["lease"] for a in item["actions"]] or not item["actions"]:
                    leases[lease["node"]] = (item["item"]["project"], lease["end"])
        self.short_node = next(node for node, (_project, end) in leases.items() if end)
        say(
            f"owner: leased in {took:.1f}s: "
            + ", ".join(
                f"{node} -> {project}" + (f" until {end}" if end else "")
                for node, (project, end) in sorted(leases.items())
            )
        )

    # -- 2. the tenants, at the same time, with their own credentials -------------

    def tenant_networks(self) -> None:
        """Each tenant's own private network (with the switch); the claims put the hosts on it."""
        if self.fabric is None:
            return
        for project, user in TENANTS.items():
            _run, took = self.play("ironic_tenant_networks.yml", user, networks.tenant_networks_vars(project))
            for claim in self.claims[project]:
                claim["networks"] = [{"network": networks.network_name(project)}]
            say(
                f"{project}: made its network {networks.network_name(project)} with subnet "
                f"{networks.SUBNET} (addresses {'-'.join(networks.POOLS[project])}) in {took:.1f}s"
            )

    def prepare_claims(self) -> None:
        """alice's SSH keys, the tenants' gateways or the nodes' addresses, and what the tenants are about to do."""
        bed, fabric = self.bed, self.fabric
        self.keys = alice_keys(self.workdir) if bed is not None else None
        if fabric is not None:
            networks.give_gateways(fabric, self.env, TENANTS, (self.keys / "id.pub").read_text())
        if bed is not None:
            if fabric is None:
                self.addresses = record_addresses(self.env, bed)
                say(
                    "owner: recorded the nodes' addresses: "
                    + ", ".join(f"{n} {a}" for n, a in sorted(self.addresses.items()))
                )
            say(
                "tenants: tenant-b (bob) claims and deploys its hosts; at the same time tenant-a (alice) runs "
                "examples/deploy_web.yml (claims two hosts with its SSH key, then a web service on them over SSH) ..."
            )
        else:
            say("tenants: tenant-a (alice) and tenant-b (bob) claim and deploy their hosts at the same time ...")

    def web_claimer(self, project: str) -> bool:
        """Whether ``project`` claims with deploy_web.yml (tenant-a, with test-bed machines)."""
        return project == "tenant-a" and self.bed is not None

    def claim(self) -> None:
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            futures = {
                project: pool.submit(
                    play,
                    "ironic_claim_hosts.yml",
                    TENANTS[project],
                    self.clouds,
                    self.workdir,
                    {"claims": self.claims[project], "claim_wait_timeout": 600},
                )
                for project in TENANTS
                if not self.web_claimer(project)
            }
            if self.bed is not None:
                futures["tenant-a"] = pool.submit(
                    deploy_web,
                    self.env,
                    self.clouds,
                    self.workdir,
                    {"url": self.iso, "format": "live-iso"},
                    self.keys,
                    self.fabric,
                )
            for project, future in futures.items():
                run, took = future.result()
                self._claimed(project, run, took)

    def _claimed(self, project: str, run, took: float) -> None:
        """Check a tenant's claims (all ready and active), note their rows, say so."""
        rows = self.rows
        task = (
            "Wait until the hosts are deployed and powered on" if self.web_claimer(project) else "Wait for the claims"
        )
        for item in result(run, task)["results"]:
            claim = item["claim"]
            if not claim["ready"] or claim["provision_state"] != "active":
                raise DemoError(f"{project}: claim {claim['name']} is not ready: {claim['conditions']}")
            rows[claim["name"]] = {
                "tenant": project,
                "claim": claim["name"],
                "host": claim["host"],
                "deployed_s": took,
                "state": claim["provision_state"],
            }
            if self.fabric is not None:
                rows[claim["name"]]["network"] = networks.network_name(project)
                rows[claim["name"]]["address"] = networks.address(claim, project)
        say(
            f"{project}: claimed and deployed "
            + ", ".join(f"{c['name']} on {rows[c['name']]['host']}" for c in self.claims[project])
            + f" in {took:.1f}s"
            + (" (deploy_web.yml, the web service included)" if self.web_claimer(project) else "")
        )

    def check_web(self) -> None:
        """tenant-a's web service answers on both hosts; with the switch, the tenants' networks are apart."""
        rows = self.rows
        if self.fabric is not None:
            gateway = self.fabric.gateways["tenant-a"]
            answers = {name: networks.page(gateway, rows[name]["address"]) for name in ("a-web-0", "a-web-1")}
            for name, answer in answers.items():
                if answer != f"deploy_web on {name}":
                    raise DemoError(f"{name} at {rows[name]['address']} answers {answer!r} on tenant-a's network")
            say(
                "tenant-a: deploy_web ran over SSH through its jump host and the claimed_hosts inventory (addresses "
                "from its own ports); each host reached the other, and from tenant-a's gateway "
                + ", ".join(f"{rows[n]['address']}:8080 answers {a!r}" for n, a in answers.items())
            )
            hosts = {name: (row["tenant"], row["address"]) for name, row in rows.items()}
            for line in networks.prove_isolation(self.fabric, hosts, self.keys, DEFAULT_USER):
                say(f"isolation: {line}")
        elif self.bed is not None:
            addresses = self.addresses
            answers = {}
            for name in ("a-web-0", "a-web-1"):
                answers[name] = page(addresses[rows[name]["host"]])
                if answers[name] != f"deploy_web on {name}":
                    raise DemoError(f"{name} at {addresses[rows[name]['host']]} answers {answers[name]!r}")
            say(
                "tenant-a: deploy_web ran over SSH through the claimed_hosts inventory; each host reached the other, and "
                + ", ".join(f"{addresses[rows[n]['host']]}:8080 answers {a!r}" for n, a in answers.items())
            )

    # -- 3. each tenant sees only its own hosts -------------------------------------

    def views(self) -> None:
        for project, user in TENANTS.items():
            out = self.workdir / f"view-{project}.json"
            self.play("ironic_show_claims.yml", user, {"view_out": str(out)})
            view = json.loads(out.read_text())
            own_nodes = {node for node, (owner, _end) in self.leases.items() if owner == project}
            own_claims = {c["name"] for c in self.claims[project]}
            seen_claims = {c["name"] for c in view["claims"]}
            seen_nodes = set(view["nodes"])
            if seen_claims != own_claims or not seen_nodes <= own_nodes:
                raise DemoError(
                    f"{project} sees claims {sorted(seen_claims)} and nodes {sorted(seen_nodes)}; "
                    f"it should see only {sorted(own_claims)} on {sorted(own_nodes)}"
                )
            say(
                f"{project}: sees claims {', '.join(sorted(seen_claims))} and nodes {', '.join(sorted(seen_nodes))} "
                f"- nothing of the other tenant"
            )

    # -- 4. the owner shortens tenant-b's second lease; it expires and its host returns

    def expire(self) -> None:
        short_node = self.short_node
        short_end = time.time() + EXPIRE_IN
        short_end_s = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(short_end))
        run, took = self.play(
            "ironic_lease_hosts.yml",
            "admin",
            {"leases": [{"project": "tenant-b", "nodes": [short_node], "end": short_end_s}]},
        )
        moved = result(run, "Lease the hosts, or end the leases")["results"][0]["actions"]
        if [a["action"] for a in moved] != ["updated"]:
            raise DemoError(f"moving the end of the lease of {short_node} did {moved}")
        wait = short_end - time.time() + 1
        say(f"owner: tenant-b's lease of {short_node} now ends at {short_end_s}; waiting {max(wait, 0):.0f}s ...")
        if wait > 0:
            time.sleep(wait)
        run, took = self.play("ironic_expire_leases.yml", "admin")
        actions = result(run, "End expired leases and start due ones")["actions"]
        ended = [a for a in actions if a["action"] == "ended"]
        if [a["node"] for a in ended] != [short_node]:
            raise DemoError(f"expiry ended {ended}, expected the lease of {short_node}")
        node = self.env.admin_conn.baremetal.get_node(short_node)
        if node.provision_state != "available" or node.lessee or node.instance_info:
            raise DemoError(f"{short_node} did not return to the pool: {node.provision_state}, lessee {node.lessee}")
        for row in self.rows.values():
            if row["host"] == short_node:
                row["state"] = "lease ended"
                row["released_s"] = took
        say(
            f"owner: lease of {short_node} expired: undeployed, lessee and instance_info cleared, "
            f"back to available in {took:.1f}s"
        )
        if self.fabric is not None:
            networks.assert_quarantined(self.fabric, [node_machine(self.env, self.bed, short_node)])
            say(f"owner: {short_node}'s switch port is back in quarantine (VLAN {self.fabric.switch.quarantine_vlan})")

    # -- 5. release everything ------------------------------------------------------

    def release(self) -> None:
        say("tenants: release their hosts ...")
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            futures = {
                project: pool.submit(
                    play,
                    "ironic_release_hosts.yml",
                    TENANTS[project],
                    self.clouds,
                    self.workdir,
                    {"release_all": True, "release_wait_timeout": 600},
                )
                for project in TENANTS
            }
            for project, future in futures.items():
                run, took = future.result()
                released = [r for r in result(run, "Wait for the releases")["results"] if r["released"]]
                for item in released:
                    self.rows[item["item"]["item"]]["state"] = "released"
                    self.rows[item["item"]["item"]]["released_s"] = took
                say(f"{project}: released {', '.join(r['item']['item'] for r in released) or 'nothing'} in {took:.1f}s")

    def end_leases(self) -> None:
        """The owner ends the remaining leases; the pool is clean (and every port in quarantine)."""
        _run, took = self.play(
            "ironic_lease_hosts.yml",
            "admin",
            {"leases": [{"project": project, "state": "absent"} for project in TENANTS], "lease_wait": True},
        )
        say(f"owner: ended the remaining leases in {took:.1f}s")
        nodes = list(self.env.admin_conn.baremetal.nodes(details=True))
        pool_state = ", ".join(
            f"{n.name}: {n.provision_state}{' (lessee ' + n.lessee + ')' if n.lessee else ''}"
            for n in sorted(nodes, key=lambda n: n.name)
        )
        if any(n.lessee or n.provision_state != "available" or n.allocation_id for n in nodes):
            raise DemoError(f"the pool is not clean: {pool_state}")
        say(f"pool: {pool_state}")
        if self.fabric is not None:
            networks.assert_quarantined(self.fabric, [node_machine(self.env, self.bed, n.name) for n in nodes])
            say(
                f"switch: every host's port is in quarantine (VLAN {self.fabric.switch.quarantine_vlan}), on no tenant's network"
            )

    def tables(self) -> Tables:
        fabric = self.fabric
        rows = sorted(self.rows.values(), key=lambda r: (r["tenant"], r["claim"]))
        headers = [
            "tenant",
            "claim",
            "host",
            *(["network", "address"] if fabric else []),
            "state",
            "claim+deploy",
            "return",
        ]
        lines = [
            [
                r["tenant"],
                r["claim"],
                r["host"],
                *([r["network"], r["address"]] if fabric else []),
                r["state"],
                f"{r['deployed_s']:.1f}s",
                f"{r['released_s']:.1f}s" if "released_s" in r else "-",
            ]
            for r in rows
        ]
        return [(headers, lines)]


def alice_keys(workdir: Path) -> Path:
    """alice's SSH key pair (``id``, ``id.pub``) in a directory of its own, which also holds her known hosts."""
    keys = workdir / "alice-ssh"
    keys.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "alice@demo", "-f", str(keys / "id")], check=True
    )
    return keys


def deploy_web(env, clouds_yaml: Path, workdir: Path, image: dict, keys: Path, fabric=None):
    """tenant-a (alice) runs examples/deploy_web.yml with the claimed_hosts inventory: claims a-web-0 and
    a-web-1 with alice's SSH key, then deploys the web service on them over SSH. With ``fabric``, on tenant-a's
    private network, through its jump host (the example inventory for tenant networks)."""
    started = time.monotonic()
    env_vars = dict(os.environ)
    env_vars.update({"OS_CLIENT_CONFIG_FILE": str(clouds_yaml), "OS_CLOUD": TENANTS["tenant-a"]})
    extra_vars = {
        "backend": "ironic",
        "deploy_web_prefix": "a-",
        "deploy_web_image": image,
        "deploy_web_resource_class": "baremetal-small",
        "deploy_web_public_key_file": str(keys / "id.pub"),
        "deploy_web_known_hosts": str(keys / "known_hosts"),
        "deploy_web_wait_timeout": 600,
        "ansible_ssh_private_key_file": str(keys / "id"),
        # run_playbook points Ansible's remote temp at the controller's work directory; hosts use their own
        "ansible_remote_tmp": "~/.ansible/tmp",
    }
    inventory = REPO / "examples" / "inventory" / "deploy_web.ironic.claimed_hosts.yml"
    if fabric is not None:
        inventory = networks.deploy_web_inventory(
            fabric, REPO / "examples" / "inventory" / "deploy_web.ironic.tenant_network.claimed_hosts.yml", keys
        )
        extra_vars["deploy_web_networks"] = [{"network": networks.network_name("tenant-a")}]
        # the jump host's ssh reads the same configuration (ssh passes -F on to ProxyJump's ssh)
        extra_vars["ansible_ssh_extra_args"] = f"-F {networks.ssh_config(keys)}"
    run = run_playbook(
        REPO / "examples" / "deploy_web.yml",
        env_vars,
        workdir / "deploy_web-alice",
        inventory=str(inventory),
        extra_vars=extra_vars,
        timeout=1800,
    )
    if not run.ok:
        raise DemoError(f"deploy_web.yml as alice failed:\n{run.explain()}")
    stats = (run.report or {}).get("stats", {})
    web_hosts = sorted(h for h in stats if h != "localhost")
    if web_hosts != ["a-web-0", "a-web-1"] or any(
        stats[h].get("failures") or stats[h].get("unreachable") for h in stats
    ):
        raise DemoError(f"deploy_web.yml ran on {web_hosts}: {stats}")
    return run, time.monotonic() - started


def record_addresses(env, bed) -> dict[str, str]:
    """The owner records each node's address where the claimed_hosts inventory reads it (node extra.addresses)."""
    addresses = {}
    for i, bmc in enumerate(env.bmcs):
        address = bed.machine(bmc.name).ip
        env.admin_conn.baremetal.patch_node(
            f"node-{i}",
            [{"op": "add", "path": "/extra/addresses", "value": [{"type": "InternalIP", "address": address}]}],
        )
        addresses[f"node-{i}"] = address
    return addresses


def node_machine(env, bed, node: str):
    """The test-bed machine behind node ``node-<i>`` (the machine of BMC ``i``)."""
    return bed.machine(env.bmcs[int(node.rsplit("-", 1)[1])].name)


def page(address: str) -> str:
    with urllib.request.urlopen(f"http://{address}:8080/", timeout=10) as resp:
        return resp.read().decode().strip()
