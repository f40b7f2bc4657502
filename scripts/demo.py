#!/usr/bin/env python
"""`make demo`: the collection's main job, on embedded defaults, in three parts ("halves").

Each half starts its services on 127.0.0.1 with the integration-test harness
(tests/integration/harness), runs the playbooks, roles and modules of this
collection with ansible-playbook the way their users would, each actor with
its own credentials, prints a line per step and a table, and stops what it
started (also when a step fails). ``--only ironic`` or ``--only metal3``
(``make demo DEMO_ONLY=metal3``) runs one half. Exit status 0 when every step
of every half run did what it should.

The Ironic half: Keystone, Ironic and four sushy-tools Redfish BMCs, each with a
test-bed machine behind it (tests/integration/harness/machines.py: a network
namespace with sshd that follows its BMC's power and applies the config drive
Ironic puts in the BMC's virtual USB stick; needs root, else the half runs
without machines and tenant-a claims with ironic_claim_hosts.yml instead of 2b).

1. the owner (a system administrator) creates two tenant projects with a user
   each and writes the owner/lessee policy file (ironic_setup_tenancy.yml),
   enrols the servers from their BMCs (ironic_enroll_hosts.yml: redfish
   hardware type, resource class from the hardware), then leases nodes to them
   (ironic_lease_hosts.yml), one of tenant-b's leases for an hour only, and
   records the nodes' addresses (node extra.addresses, where the claimed_hosts
   inventory reads them; the owner's IPAM in real life) - on the flat network;
2. both tenants claim and deploy their hosts at the same time, with their own
   project-scoped credentials (a live ISO over virtual media, cloud-init
   user-data): tenant-b with ironic_claim_hosts.yml, and
2b. tenant-a with examples/deploy_web.yml: its SSH key in the user-data, then,
   through the claimed_hosts inventory, a small web service installed over SSH
   on both hosts, each checking that the other answers;
3. each tenant's view shows only its own hosts (ironic_show_claims.yml);
4. the owner moves the end of that lease to a few seconds later; when it has
   passed, the owner's expiry run (ironic_expire_leases.yml) undeploys the host,
   clears its lessee and returns it to the pool;
5. the tenants release everything (ironic_release_hosts.yml) and the owner
   ends the remaining leases.

As root on PostgreSQL (the default), the hosts are on private networks
(scripts/demo_networks.py): the machines' NICs are ports of a switch (Open
vSwitch in userspace, in a network namespace) that Neutron with
networking-generic-switch configures over SSH. The owner's tenancy run also
makes the provisioning, cleaning and quarantine networks and Neutron's policy,
and the servers are enrolled with the neutron network interface and each NIC's
switch port; each tenant makes its network (ironic_tenant_networks.yml, both
on the same subnet with address ranges of their own) and the owner gives each a
gateway on its VLAN, tenant-a's also its jump host. The claims name the
network; deploy_web reaches tenant-a's hosts through the jump host at the
addresses of tenant-a's own ports (the tenant-network example inventory). The
demo then proves by traffic that each tenant's gateway reaches its own hosts
and not the other's, and that tenant-a's host cannot ping tenant-b's; after
the lease end and the releases each host's switch port is back in the
quarantine VLAN. The table gives each host's network and address.

Ironic's database is a private PostgreSQL cluster (Debian's package, which
`make system` installs) by default. With sqlite, four deployments at once on
a two-core machine break too often: in 3 of 4 measured runs a claim failed,
its allocation answering "database is locked" or left "allocating" for good
by a conductor worker that met the lock (sqlite was in WAL mode with a 30 s
busy timeout). ``--database sqlite`` runs the Ironic half on sqlite anyway.

The ESI-Leap market (scripts/demo_esi.py, ``--only esi``): the owner offers
four hosts through ESI-Leap, each tenant claims offers itself and deploys, one
lease expires and ESI-Leap takes its host back, the other leases are ended
early and the offers withdrawn.

The Metal3 half (scripts/demo_metal3.py): the HostClaim proposal on a real
kube-apiserver with Metal3's real baremetal-operator (``make bmo``), its
Ironic and three sushy-tools BMCs; every actor uses its own kubeconfig
(owner = cluster admin, binder, alice, bob):

1. the owner installs HostClaim support (role hostclaim_setup), enrols three
   servers as BareMetalHosts of their BMCs (host_register with
   redfish-virtualmedia+http:// addresses, then a patch for the live-ISO
   route: inspection disabled, no automated cleaning) and waits
   until the operator has registered them, onboards the namespaces p-alice
   and bob (metal3_onboard_tenants.yml: role tenant_namespace) and shares the
   hosts with the namespaces matching ``p-.*`` (role host_pool);
2. alice (p-alice, two claims) and bob (bob, one) claim hosts by selector
   (metal3_claim_hosts.yml);
3. the binder binds (metal3_bind_claims.yml): alice's claims get hosts, bob's
   stays pending; from then on metal3_bind_claims.yml runs in the background;
4. alice gives her claims a live ISO, user-data Secrets and ``online: true``
   (metal3_claim_hosts.yml, waiting until they are ready): the operator
   provisions and powers the hosts;
5. each tenant lists its hosts with the claimed_hosts inventory plugin and
   runs a play against them (ansible_connection=local): two hosts for alice,
   none for bob;
6. alice reboots a host through the claim's host.metal3.io/reboot annotation
   (host_claim); the operator power-cycles it and clears the annotation;
7. alice releases her claims (metal3_release_hosts.yml): the hosts are
   deprovisioned and return to ``available``;
8. bob's claim is still pending with every host free; its reason is printed
   and bob withdraws it;
9. (root only) alice's inventory-driven deployment over SSH: a second
   operator in the cluster whose two hosts are test-bed machines (the agent
   route: FakeIPA writes the config drive and wipes the disks), shared by the
   owner with ``p-.*`` (role host_pool); alice runs examples/deploy_web.yml
   with her kubeconfig, her SSH key and the claimed_hosts inventory (claims,
   deployment with her key, a web service on both hosts, each fetching the
   other's page), then releases them: cleaning wipes both machines
   (scripts/demo_metal3_web.py). The half ends by asserting that every host
   is ``available`` and bound to nothing.

Its table gives per claim the seconds from the claim's change to the host's
``provisioned`` (and to the claim's Ready) and from the release to the host's
``available``, and per host the time it spent in each of the operator's states.

``--keep`` keeps the work directory with every playbook's files and the
services' logs.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request
from pathlib import Path

import demo_networks
import yaml
from demo_common import HALF, PLAYBOOKS, REPO, STARTED, DemoError, enroll_vars, live_iso, print_table, say
from demo_esi import esi_half
from demo_metal3 import metal3_half
from harness import baremetal_operator as bmo_harness
from harness import ironic_networks
from harness import kube as kube_harness
from harness import machines as machines_harness
from harness import openstack as openstack_harness
from harness import sushy as sushy_harness
from harness.ansible import run_playbook
from harness.cloud_config import DEFAULT_USER

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


def stop_on_signal(signum, _frame) -> None:
    raise SystemExit(128 + signum)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs) afterwards")
    parser.add_argument(
        "--database",
        choices=["postgresql", "sqlite"],
        default="postgresql",
        help="Ironic's database in the Ironic half (default: postgresql)",
    )
    parser.add_argument(
        "--only",
        choices=list(HALVES),
        help="run one part only (default: the Ironic half, the ESI-Leap market, then the Metal3 half)",
    )
    args = parser.parse_args(argv)
    # A TERM (a CI timeout, kill) or HUP ends the demo through the halves' cleanup, as an interrupt does.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop_on_signal)
    halves = [args.only] if args.only else list(HALVES)
    if {"ironic", "esi"} & set(halves) and shutil.which("genisoimage") is None:
        print("genisoimage is missing: run `make system` (scripts/install-system-packages.sh)", file=sys.stderr)
        return 2
    if "metal3" in halves:
        try:
            kube_harness.require_binaries()
            bmo_harness.require_bmo()
        except (kube_harness.KubeBinariesMissing, bmo_harness.BmoMissing) as exc:
            print(f"{exc}", file=sys.stderr)
            return 2
    workdir = Path(tempfile.mkdtemp(prefix="baremetal-tenancy-demo-"))
    say(f"work directory {workdir}")
    outcomes = {}
    try:
        for half in halves:
            started = time.monotonic()
            HALF[0] = half
            try:
                tables = HALVES[half](args, workdir / half)
                outcomes[half] = (True, time.monotonic() - started)
                for headers, lines in tables:
                    print_table(headers, lines)
            except DemoError as exc:
                outcomes[half] = (False, time.monotonic() - started)
                say(f"FAILED: {exc}")
            except Exception:  # a service that did not start, an API error: report it, go on with the next half
                outcomes[half] = (False, time.monotonic() - started)
                say(f"FAILED:\n{traceback.format_exc()}")
            HALF[0] = ""
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    say(
        "demo finished in %.0fs: " % (time.monotonic() - STARTED)
        + ", ".join(
            f"{half} half {'passed' if ok else 'FAILED'} in {took:.0f}s" for half, (ok, took) in outcomes.items()
        )
    )
    return 0 if all(ok for ok, _took in outcomes.values()) else 1


# --------------------------------------------------------------------------
# The Ironic half
# --------------------------------------------------------------------------


def ironic_half(args, workdir: Path) -> list[tuple[list[str], list[list[str]]]]:
    """Keystone + Ironic + sushy-tools (+ test-bed machines); the Ironic story; the table of its claims."""
    env = bed = fabric = None
    systems = sushy_harness.default_systems(BMC_COUNT)
    try:
        if os.geteuid() != 0:
            say("not root: no test-bed machines and no switch (flat network; tenant-a claims without deploy_web)")
        elif args.database != "postgresql":
            say("Ironic on sqlite: no Neutron (it needs PostgreSQL), the machines share one flat network")
        else:
            say("starting the switch ...")
            fabric = demo_networks.start_switch(workdir)
        if os.geteuid() == 0:
            bed = machines_harness.TestBed(workdir / "machines", switch=fabric.switch if fabric else None)
            bed.address_systems(systems)
        say(f"starting Keystone, Ironic ({args.database}) and sushy-tools on 127.0.0.1 ...")
        env = openstack_harness.start_openstack(
            workdir / "services",
            tenants=(),
            sushy_systems=systems,
            database=args.database,
            ironic_config=ironic_networks.IRONIC_NEUTRON_CONFIG if fabric else None,
        )
        for service in env.services:
            say(f"  {service.summary()}")
        if fabric is not None:
            demo_networks.start_neutron(fabric, env, workdir)
        if bed is not None:
            machines = bed.add_machines(env.bmcs)
            where = f"on ports of switch {fabric.switch.name} (quarantine VLAN {fabric.switch.quarantine_vlan})"
            say(
                "  test-bed machines "
                + (where if fabric else f"on {bed.bridge} ({bed.subnet})")
                + ": "
                + ", ".join(m.name if fabric else f"{m.name} {m.ip}" for m in machines)
            )
        rows = run_ironic(env, workdir, bed, fabric)
    finally:
        if bed is not None:
            bed.stop()
        if fabric is not None and fabric.neutron is not None:
            fabric.neutron.stop()
        if env is not None:
            say("stopping the services")
            env.stop()
        if fabric is not None:
            fabric.switch.stop()
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
        inventory = demo_networks.deploy_web_inventory(
            fabric, REPO / "examples" / "inventory" / "deploy_web.ironic.tenant_network.claimed_hosts.yml", keys
        )
        extra_vars["deploy_web_networks"] = [{"network": demo_networks.network_name("tenant-a")}]
        # the jump host's ssh reads the same configuration (ssh passes -F on to ProxyJump's ssh)
        extra_vars["ansible_ssh_extra_args"] = f"-F {demo_networks.ssh_config(keys)}"
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


def run_ironic(env, workdir: Path, bed=None, fabric=None) -> list[dict]:
    clouds = env.clouds_yaml
    iso = env.ironic_server.http_url + "/" + live_iso(env.ironic_server.http_root)

    # 1. the owner: tenancy (and the networks), then the servers
    passwords = {user: secrets.token_urlsafe(16) for user in TENANTS.values()}
    run, took = play(
        "ironic_setup_tenancy.yml",
        "admin",
        clouds,
        workdir,
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
            **(demo_networks.owner_role_vars(fabric) if fabric else {}),
        },
    )
    env.settle_policy()
    tenant_clouds(env, clouds, passwords)
    say(
        f"owner: created projects {', '.join(TENANTS)} with users {', '.join(TENANTS.values())} (role member) "
        f"and wrote the owner/lessee policy in {took:.1f}s"
    )
    if fabric is not None:
        demo_networks.settle_policy(env)
        say(
            "owner: made the provisioning, cleaning and quarantine networks ("
            + ", ".join(ironic_networks.OWNER_NETWORKS.values())
            + "), gave Ironic's service user the role service and wrote Neutron's policy: tenants make networks "
            "and ports, never bind a port; lessees attach their ports to their nodes"
        )

    run, took = play(
        "ironic_enroll_hosts.yml",
        "admin",
        clouds,
        workdir,
        enroll_vars(
            env.bmcs,
            "node-",
            {"network_interface": "neutron"} if fabric else None,
            (lambda bmc: demo_networks.nics(bed.machine(bmc.name))) if fabric else None,
        ),
    )
    enrolled = result(run, "Register the hosts from their BMCs")["hosts"]
    classes = {n.name: n.resource_class for n in env.admin_conn.baremetal.nodes(details=True)}
    say(
        f"owner: enrolled {len(enrolled)} nodes from their BMCs in {took:.1f}s: "
        + ", ".join(f"{h['name']} ({classes.get(h['name'])})" for h in enrolled)
        + (" - network interface neutron, each NIC's switch port from the owner's cabling records" if fabric else "")
    )

    hour_end_s = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + SHORT_LEASE))
    run, took = play(
        "ironic_lease_hosts.yml",
        "admin",
        clouds,
        workdir,
        {
            "leases": [
                {"project": "tenant-a", "resource_class": "baremetal-small", "count": 2},
                {"project": "tenant-b", "resource_class": "baremetal-large", "count": 1},
                {"project": "tenant-b", "resource_class": "baremetal-large", "count": 1, "end": hour_end_s},
            ]
        },
    )
    leases = {}
    for item in result(run, "Lease the hosts, or end the leases")["results"]:
        for lease in item["leases"]:
            if lease["id"] in [a["lease"] for a in item["actions"]] or not item["actions"]:
                leases[lease["node"]] = (item["item"]["project"], lease["end"])
    short_node = next(node for node, (_project, end) in leases.items() if end)
    say(
        f"owner: leased in {took:.1f}s: "
        + ", ".join(
            f"{node} -> {project}" + (f" until {end}" if end else "") for node, (project, end) in sorted(leases.items())
        )
    )

    # 2. the tenants, at the same time, with their own credentials
    claims = {
        "tenant-a": [
            {
                "name": f"a-web-{i}",
                "resource_class": "baremetal-small",
                "online": True,
                "image": {"url": iso, "format": "live-iso"},
                "user_data": "#cloud-config\nhostname: a-web-%d\npackages: [nginx]\n" % i,
            }
            for i in range(2)
        ],
        "tenant-b": [
            {
                "name": "b-db-0",
                "resource_class": "baremetal-large",
                "online": True,
                "image": {"url": iso, "format": "live-iso"},
                "user_data": "#cloud-config\nhostname: b-db-0\n",
            },
            {
                "name": "b-batch-0",
                "resource_class": "baremetal-large",
                "online": True,
                "image": {"url": iso, "format": "live-iso"},
                "user_data": "#cloud-config\nhostname: b-batch-0\n",
            },
        ],
    }
    if fabric is not None:
        # each tenant's own private network; the claims put the hosts on it
        for project, user in TENANTS.items():
            run, took = play(
                "ironic_tenant_networks.yml", user, clouds, workdir, demo_networks.tenant_networks_vars(project)
            )
            for claim in claims[project]:
                claim["networks"] = [{"network": demo_networks.network_name(project)}]
            say(
                f"{project}: made its network {demo_networks.network_name(project)} with subnet "
                f"{demo_networks.SUBNET} (addresses {'-'.join(demo_networks.POOLS[project])}) in {took:.1f}s"
            )
    keys = alice_keys(workdir) if bed is not None else None
    if fabric is not None:
        demo_networks.give_gateways(fabric, env, TENANTS, (keys / "id.pub").read_text())
    web_claimers = [p for p in TENANTS if not (p == "tenant-a" and bed is not None)]
    if bed is not None:
        if fabric is None:
            addresses = record_addresses(env, bed)
            say("owner: recorded the nodes' addresses: " + ", ".join(f"{n} {a}" for n, a in sorted(addresses.items())))
        say(
            "tenants: tenant-b (bob) claims and deploys its hosts; at the same time tenant-a (alice) runs "
            "examples/deploy_web.yml (claims two hosts with its SSH key, then a web service on them over SSH) ..."
        )
    else:
        say("tenants: tenant-a (alice) and tenant-b (bob) claim and deploy their hosts at the same time ...")
    rows = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {
            project: pool.submit(
                play,
                "ironic_claim_hosts.yml",
                TENANTS[project],
                clouds,
                workdir,
                {"claims": claims[project], "claim_wait_timeout": 600},
            )
            for project in TENANTS
            if not (project == "tenant-a" and bed is not None)
        }
        if bed is not None:
            futures["tenant-a"] = pool.submit(
                deploy_web, env, clouds, workdir, {"url": iso, "format": "live-iso"}, keys, fabric
            )
        for project, future in futures.items():
            run, took = future.result()
            task = (
                "Wait for the claims" if project in web_claimers else "Wait until the hosts are deployed and powered on"
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
                if fabric is not None:
                    rows[claim["name"]]["network"] = demo_networks.network_name(project)
                    rows[claim["name"]]["address"] = demo_networks.address(claim, project)
            say(
                f"{project}: claimed and deployed "
                + ", ".join(f"{c['name']} on {rows[c['name']]['host']}" for c in claims[project])
                + f" in {took:.1f}s"
                + (" (deploy_web.yml, the web service included)" if project not in web_claimers else "")
            )
    if fabric is not None:
        gateway = fabric.gateways["tenant-a"]
        answers = {name: demo_networks.page(gateway, rows[name]["address"]) for name in ("a-web-0", "a-web-1")}
        for name, answer in answers.items():
            if answer != f"deploy_web on {name}":
                raise DemoError(f"{name} at {rows[name]['address']} answers {answer!r} on tenant-a's network")
        say(
            "tenant-a: deploy_web ran over SSH through its jump host and the claimed_hosts inventory (addresses "
            "from its own ports); each host reached the other, and from tenant-a's gateway "
            + ", ".join(f"{rows[n]['address']}:8080 answers {a!r}" for n, a in answers.items())
        )
        hosts = {name: (row["tenant"], row["address"]) for name, row in rows.items()}
        for line in demo_networks.prove_isolation(fabric, hosts, keys, DEFAULT_USER):
            say(f"isolation: {line}")
    elif bed is not None:
        answers = {}
        for name in ("a-web-0", "a-web-1"):
            answers[name] = page(addresses[rows[name]["host"]])
            if answers[name] != f"deploy_web on {name}":
                raise DemoError(f"{name} at {addresses[rows[name]['host']]} answers {answers[name]!r}")
        say(
            "tenant-a: deploy_web ran over SSH through the claimed_hosts inventory; each host reached the other, and "
            + ", ".join(f"{addresses[rows[n]['host']]}:8080 answers {a!r}" for n, a in answers.items())
        )

    # 3. each tenant sees only its own hosts
    views = {}
    for project, user in TENANTS.items():
        out = workdir / f"view-{project}.json"
        play("ironic_show_claims.yml", user, clouds, workdir, {"view_out": str(out)})
        views[project] = json.loads(out.read_text())
        own_nodes = {node for node, (owner, _end) in leases.items() if owner == project}
        own_claims = {c["name"] for c in claims[project]}
        seen_claims = {c["name"] for c in views[project]["claims"]}
        seen_nodes = set(views[project]["nodes"])
        if seen_claims != own_claims or not seen_nodes <= own_nodes:
            raise DemoError(
                f"{project} sees claims {sorted(seen_claims)} and nodes {sorted(seen_nodes)}; "
                f"it should see only {sorted(own_claims)} on {sorted(own_nodes)}"
            )
        say(
            f"{project}: sees claims {', '.join(sorted(seen_claims))} and nodes {', '.join(sorted(seen_nodes))} "
            f"- nothing of the other tenant"
        )

    # 4. the owner shortens tenant-b's second lease; it expires and its host returns
    short_end = time.time() + EXPIRE_IN
    short_end_s = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(short_end))
    run, took = play(
        "ironic_lease_hosts.yml",
        "admin",
        clouds,
        workdir,
        {"leases": [{"project": "tenant-b", "nodes": [short_node], "end": short_end_s}]},
    )
    moved = result(run, "Lease the hosts, or end the leases")["results"][0]["actions"]
    if [a["action"] for a in moved] != ["updated"]:
        raise DemoError(f"moving the end of the lease of {short_node} did {moved}")
    wait = short_end - time.time() + 1
    say(f"owner: tenant-b's lease of {short_node} now ends at {short_end_s}; waiting {max(wait, 0):.0f}s ...")
    if wait > 0:
        time.sleep(wait)
    run, took = play("ironic_expire_leases.yml", "admin", clouds, workdir)
    actions = result(run, "End expired leases and start due ones")["actions"]
    ended = [a for a in actions if a["action"] == "ended"]
    if [a["node"] for a in ended] != [short_node]:
        raise DemoError(f"expiry ended {ended}, expected the lease of {short_node}")
    node = env.admin_conn.baremetal.get_node(short_node)
    if node.provision_state != "available" or node.lessee or node.instance_info:
        raise DemoError(f"{short_node} did not return to the pool: {node.provision_state}, lessee {node.lessee}")
    for row in rows.values():
        if row["host"] == short_node:
            row["state"] = "lease ended"
            row["released_s"] = took
    say(
        f"owner: lease of {short_node} expired: undeployed, lessee and instance_info cleared, "
        f"back to available in {took:.1f}s"
    )
    if fabric is not None:
        demo_networks.assert_quarantined(fabric, [node_machine(env, bed, short_node)])
        say(f"owner: {short_node}'s switch port is back in quarantine (VLAN {fabric.switch.quarantine_vlan})")

    # 5. release everything
    say("tenants: release their hosts ...")
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {
            project: pool.submit(
                play,
                "ironic_release_hosts.yml",
                TENANTS[project],
                clouds,
                workdir,
                {"release_all": True, "release_wait_timeout": 600},
            )
            for project in TENANTS
        }
        for project, future in futures.items():
            run, took = future.result()
            released = [r for r in result(run, "Wait for the releases")["results"] if r["released"]]
            for item in released:
                rows[item["item"]["item"]]["state"] = "released"
                rows[item["item"]["item"]]["released_s"] = took
            say(f"{project}: released {', '.join(r['item']['item'] for r in released) or 'nothing'} in {took:.1f}s")
    run, took = play(
        "ironic_lease_hosts.yml",
        "admin",
        clouds,
        workdir,
        {"leases": [{"project": project, "state": "absent"} for project in TENANTS], "lease_wait": True},
    )
    say(f"owner: ended the remaining leases in {took:.1f}s")
    nodes = list(env.admin_conn.baremetal.nodes(details=True))
    pool_state = ", ".join(
        f"{n.name}: {n.provision_state}{' (lessee ' + n.lessee + ')' if n.lessee else ''}"
        for n in sorted(nodes, key=lambda n: n.name)
    )
    if any(n.lessee or n.provision_state != "available" or n.allocation_id for n in nodes):
        raise DemoError(f"the pool is not clean: {pool_state}")
    say(f"pool: {pool_state}")
    if fabric is not None:
        demo_networks.assert_quarantined(fabric, [node_machine(env, bed, n.name) for n in nodes])
        say(
            f"switch: every host's port is in quarantine (VLAN {fabric.switch.quarantine_vlan}), on no tenant's network"
        )
    return sorted(rows.values(), key=lambda r: (r["tenant"], r["claim"]))


HALVES = {"ironic": ironic_half, "esi": esi_half, "metal3": metal3_half}


if __name__ == "__main__":
    sys.exit(main())
