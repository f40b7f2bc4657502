#!/usr/bin/env python
"""`make demo`: the collection's main job, on embedded defaults, in three parts ("halves").

Each half starts its services on 127.0.0.1 with the integration-test harness
(tests/integration/harness), runs the playbooks, roles and modules of this
collection with ansible-playbook the way their users would, each actor with
its own credentials, prints a line per step and a table, and stops what it
started (also when a step fails). ``--only ironic`` or ``--only metal3``
(``make demo DEMO_ONLY=metal3``) runs one half. Exit status 0 when every step
of every half run did what it should.

The Ironic half (scripts/demo/ironic.py): Keystone, Ironic and four sushy-tools Redfish BMCs, each with a
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
(scripts/demo/networks.py): the machines' NICs are ports of a switch (Open
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

The ESI-Leap market (scripts/demo/esi.py, ``--only esi``): the owner offers
four hosts through ESI-Leap, each tenant claims offers itself and deploys, one
lease expires and ESI-Leap takes its host back, the other leases are ended
early and the offers withdrawn.

The Metal3 half (scripts/demo/metal3.py): the HostClaim proposal on a real
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
   (scripts/demo/metal3_web.py). The half ends by asserting that every host
   is ``available`` and bound to nothing.

Its table gives per claim the seconds from the claim's change to the host's
``provisioned`` (and to the claim's Ready) and from the release to the host's
``available``, and per host the time it spent in each of the operator's states.

``--keep`` keeps the work directory with every playbook's files and the
services' logs.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

if not __package__:  # ``python scripts/demo``: import the package from its parent, not its modules from inside it
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from demo import esi, ironic, metal3
from demo.common import HALF, STARTED, DemoError, print_table, say

HALVES = {"ironic": ironic.run, "esi": esi.run, "metal3": metal3.run}
MISSING = {"ironic": ironic.missing, "esi": esi.missing, "metal3": metal3.missing}


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
    for half in halves:  # what a half needs and `make` builds or installs
        missing = MISSING[half]()
        if missing:
            print(missing, file=sys.stderr)
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


if __name__ == "__main__":
    sys.exit(main())
