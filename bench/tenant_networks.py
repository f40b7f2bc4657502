#!/usr/bin/env python
"""Benchmark: the price of a tenant's private network, and ten tenants binding at once (issue 36, item 7).

Run standalone: ``.venv/bin/python bench/tenant_networks.py [--rounds N] [--tenants N]``. It starts its own stack
with the harness (root; ``make neutron``): Keystone, Ironic on PostgreSQL, a sushy-tools emulator, the userspace
switch (``harness/switch.py``), Neutron with networking-generic-switch (NGS, ``harness/neutron.py``) and the owner's
``ironic_tenancy`` role (the provisioning, cleaning and quarantine networks, Neutron's policy, Ironic's policy with
lessees' VIFs), and prints ONE JSON line; progress goes to stderr.

1. **Isolated against flat**, side by side, in turns, ``--rounds`` rounds (3): tenant ``t01`` claims one host
   through ``ansible-playbook`` (``host_claim``, ``backend: ironic``, the ramdisk deploy of the same ISO over
   ``redfish-virtual-media``, ``wait: true``):

   - ``isolated``: with option ``networks`` (its own network, made beforehand) on a node with Ironic's ``neutron``
     network interface: the module makes the port and attaches it, Ironic binds it when it deploys, NGS moves the
     node's switch port from quarantine to the tenant's VLAN over SSH;
   - ``flat``: without ``networks``, on a node with the ``noop`` network interface whose switch port the owner pinned
     to one VLAN shared by every host (what a flat provisioning network is).

   ``ready_s``: from the playbook's start until it has returned *and* the tenant's gateway (a namespace on the
   tenant's VLAN; on the flat VLAN for ``flat``) reaches the host by ping (polled every 0.2 s from the start). The
   test bed's host is a namespace that answers whenever its switch port is on the gateway's VLAN (no OS boots), so
   on the flat network it is reachable once the playbook returns, and on the tenant's network once NGS has moved
   its port. ``price_ratio`` is the isolated median over the flat median. Each claim is released (``host_release``,
   until the node is available and, isolated, its switch port in quarantine: ``release_s``).
2. **Ten tenants at once**: ``--tenants`` tenants (10), each with its own network and gateway, claim one host each
   with ``networks``, all started together (one ``ansible-playbook`` per tenant). Per claim ``ready_s`` (p50, p95,
   max) and errors (must be 0). NGS serialises the SSH sessions to one switch with its coordination backend
   (``[ngs_coordination] backend_url``, tooz's ``file://`` driver in the test bed, etcd in ESI; its lock per switch,
   ``ngs_max_connections`` = 1): the bindings queue for the switch. A watcher reads every port of
   the claims as the owner every 0.1 s and records when it was bound (``binding:host_id`` set, Ironic's request)
   and when it became ``ACTIVE`` (NGS has moved the switch port: it marks the port active in the same request).
   ``bind_to_active_s`` alone (the isolated rounds) against in the storm, and ``queue_s``: the storm's minus the
   alone median (the wait for the switch), p50 and max; ``active_gaps_s``: the median time between
   consecutive ports becoming active in the storm (one switch's throughput), to be read against
   ``watch_interval_median_s``, how often the watcher managed to read the ports during the storm.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import datetime
import json
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))

import _watch
from fixtures_networks import NetworksEnv
from fixtures_openstack import apply_tenancy_policy
from harness import ironic_networks, traffic
from harness import neutron as neutron_harness
from harness import openstack as H
from harness import sushy as sushy_harness
from harness import switch as switch_harness
from harness.ansible import localhost_play, run_playbook

CIDR = "10.240.0.0/24"
GATEWAY_IP = "10.240.0.1"
HOST_IP = "10.240.0.11"
FLAT_VLAN = 3000  # outside Neutron's range: the owner's flat network
WAIT = 900


def percentile(values, share):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))] if ordered else None


def task(module, **args):
    return {"name": module, f"baremetal.tenancy.{module}": args}


def claim_task(name, resource_class, iso, network=None):
    args = {
        "backend": "ironic",
        "name": name,
        "resource_class": resource_class,
        "image": {"url": iso, "format": "live-iso"},
        "wait": True,
        "wait_timeout": WAIT,
    }
    if network:
        args["networks"] = [{"network": network, "fixed_ip": HOST_IP}]
    return task("host_claim", **args)


class PortWatch(_watch.Watch):
    """The owner reads the claims' ports every 0.1 s: when each was bound and when it became ACTIVE."""

    def __init__(self, admin):
        super().__init__()
        self.admin = admin
        self.bound: dict[str, float] = {}
        self.active: dict[str, float] = {}
        self.polls: list[float] = []  # when each read ended: the resolution of the times above

    def read(self):
        now = time.monotonic()
        for port in self.admin.network.ports():
            name = port.name or ""
            if not name.startswith("bmt-"):
                continue
            if port.binding_host_id:
                self.bound.setdefault(name, now)
            if port.status == "ACTIVE":
                self.active.setdefault(name, now)
        self.polls.append(time.monotonic())

    def spans(self, names):
        return {n: self.active[n] - self.bound[n] for n in names if n in self.bound and n in self.active}


def timed_claim(env, tenant, play_task, gateway, host, workdir):
    """(ready_s, playbook_s, ok): the playbook's run while its gateway pings the host."""
    reached: list[float] = []
    stop = threading.Event()
    started = time.monotonic()

    def pinger():
        while not stop.is_set():
            if traffic.ping(gateway, host, count=1, deadline=1).ok:
                reached.append(time.monotonic())
                return
            stop.wait(0.2)

    thread = threading.Thread(target=pinger, daemon=True)
    thread.start()
    run = run_playbook(localhost_play([play_task]), env.ansible_env(tenant), workdir, timeout=WAIT + 60)
    ended = time.monotonic()
    if run.ok:
        thread.join(120)  # the host reachable within two minutes of the playbook's end
    stop.set()
    thread.join(5)
    ok = run.ok and bool(reached)
    if not run.ok:
        print(f"{tenant}: claim failed: {run.explain()[-2000:]}", file=sys.stderr)
    elif not reached:
        print(f"{tenant}: the host was not reachable from its gateway", file=sys.stderr)
    ready = max(ended, reached[0]) - started if ok else None
    return ready, ended - started, ok


def release(env, tenant, name, workdir):
    started = time.monotonic()
    run = run_playbook(
        localhost_play([task("host_release", backend="ironic", name=name, wait=True, wait_timeout=WAIT)]),
        env.ansible_env(tenant),
        workdir,
    )
    if not run.ok:
        raise SystemExit(f"{tenant}: release of {name} failed: {run.explain()}")
    return time.monotonic() - started


def tenant_network(conn, admin, name):
    network = conn.network.create_network(name=name)
    conn.network.create_subnet(
        network_id=network.id, ip_version=4, cidr=CIDR, gateway_ip=GATEWAY_IP, enable_dhcp=False, name="hosts"
    )
    return admin.network.get_network(network.id).provider_segmentation_id


@dataclasses.dataclass
class Bed:
    """The test bed beside the OpenStack services: the switch, Neutron (with the owner's role), the nodes' BMCs, a
    host per node on the switch and a gateway per tenant (and the flat VLAN's). :meth:`stop` stops what started."""

    switch: object = None
    neutron: object = None
    emulator: object = None
    owner: object = None  # the owner's connection (Neutron's admin)
    iso_url: str = ""
    hosts: dict = dataclasses.field(default_factory=dict)  # node -> its host on the switch
    gateways: dict = dataclasses.field(default_factory=dict)  # tenant (or "flat") -> its gateway

    def start(self, env, workdir: Path, tenants: list[str]) -> None:
        self.switch = switch = switch_harness.Switch(workdir / "switch").start()
        self.neutron = neutron = neutron_harness.start_neutron(
            workdir / "neutron", env.keystone_server, env.admin_conn, env.postgres_server, switch
        )
        role = ironic_networks.run_owner_role(
            env, neutron.policy_path, switch.quarantine_vlan, workdir / "neutron-policy", networks=False
        )
        assert role.ok, role.explain()
        networks_env = NetworksEnv(env, neutron, switch)
        self.owner = networks_env.admin()
        list(self.owner.network.networks(limit=1))  # Neutron re-reads its policy file
        owner_networks = ironic_networks.connect_ironic(env, networks_env, workdir / "owner-role")
        apply_tenancy_policy(env, workdir / "lessee-vifs", lessee_vifs=True)
        self._enroll(env, workdir, tenants, owner_networks)
        for t in tenants:
            conn = H.connect(env.tenants[t].credentials["member"])
            vlan = tenant_network(conn, self.owner, "private-" + t)
            self.gateways[t] = switch.add_gateway("bg-" + t, vlan, GATEWAY_IP + "/24")

    def _enroll(self, env, workdir: Path, tenants: list[str], owner_networks) -> None:
        """Two nodes for the rounds (isolated: neutron, flat: noop) and one per tenant for the storm, each with its
        host on the switch; the flat VLAN's gateway; the live ISO."""
        switch = self.switch
        names = ["bn-iso", "bn-flat"] + ["bn-%s" % t for t in tenants]
        systems = sushy_harness.default_systems(len(names))
        for index, (system, name) in enumerate(zip(systems, names)):
            system["name"] = name
            system["nics"] = [{"mac": f"52:54:07:00:{index // 256:02x}:{index % 256:02x}"}]
        self.emulator = emulator = sushy_harness.start_sushy(workdir / "sushy", systems)
        iso = ironic_networks.live_iso(env.ironic_server.http_root, workdir)
        self.iso_url = f"{env.ironic_server.http_url}/{iso}"
        project = {t: env.tenants[t].project_id for t in tenants}
        specs = [("bn-iso", "bench-iso", tenants[0], "neutron"), ("bn-flat", "bench-flat", tenants[0], "noop")]
        specs += [("bn-%s" % t, "bench-storm", t, "neutron") for t in tenants]
        for name, dummy_rc, dummy_t, interface in specs:
            if interface == "noop":
                self.hosts[name] = switch.add_gateway(name, FLAT_VLAN, HOST_IP.replace("240", "241") + "/24")
            else:
                self.hosts[name] = switch.add_host(name, HOST_IP + "/24")
        self.gateways["flat"] = switch.add_gateway("bg-flat", FLAT_VLAN, GATEWAY_IP.replace("240", "241") + "/24")
        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
            list(
                pool.map(
                    lambda spec: ironic_networks.enroll_switched_node(
                        H.connect(env.keystone_server.admin_auth("system")),
                        emulator.bmcs[names.index(spec[0])],
                        spec[0],
                        env.infra_project_id,
                        project[spec[2]],
                        spec[0],
                        owner_networks,
                        resource_class=spec[1],
                        network_interface=spec[3],
                    ),
                    specs,
                )
            )
        print(f"enrolled {len(specs)} nodes in {time.monotonic() - started:.1f} s", file=sys.stderr)

    def stop(self) -> None:
        if self.emulator is not None:
            self.emulator.stop()
        if self.neutron is not None:
            self.neutron.stop()
        if self.switch is not None:
            self.switch.stop()


def isolated_against_flat(env, bed: Bed, first: str, rounds: int, workdir: Path) -> dict[str, dict[str, list]]:
    """1. isolated against flat, in turns: per measure (ready, playbook, released) per side the seconds of each
    round after the warm-up."""
    sides = {
        "isolated": ("bench-iso", "private-" + first, bed.gateways[first], bed.hosts["bn-iso"]),
        "flat": ("bench-flat", None, bed.gateways["flat"], bed.hosts["bn-flat"]),
    }
    measures = {measure: {side: [] for side in sides} for measure in ("ready", "playbook", "released")}
    for r in range(rounds + 1):  # round 0 warms up (token caches, the first deployment of each node)
        for side, (rc, network, gateway, host) in sides.items():
            name = f"r{r}-{side}"
            seconds, play_s, ok = timed_claim(
                env, first, claim_task(name, rc, bed.iso_url, network), gateway, host, workdir / name
            )
            if not ok:
                raise SystemExit(f"round {r}, {side}: the claim did not complete")
            release_s = release(env, first, name, workdir / f"{name}-release")
            if side == "isolated" and bed.switch.port_vlan("bn-iso") != bed.switch.quarantine_vlan:
                raise SystemExit("the isolated host's switch port is not in quarantine after its release")
            print(f"round {r} {side}: ready {seconds:.1f} s, released {release_s:.1f} s", file=sys.stderr)
            if r:
                measures["ready"][side].append(seconds)
                measures["playbook"][side].append(play_s)
                measures["released"][side].append(release_s)
    return measures


def every_tenant_at_once(env, bed: Bed, tenants: list[str], workdir: Path) -> tuple[dict, float, float]:
    """2. every tenant at once: tenant -> (ready_s, playbook_s, ok), the storm's seconds and its start."""

    def storm_claim(t):
        name = f"storm-{t}"
        return timed_claim(
            env,
            t,
            claim_task(name, "bench-storm", bed.iso_url, "private-" + t),
            bed.gateways[t],
            bed.hosts["bn-" + t],
            workdir / name,
        )

    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(tenants)) as pool:
        storm = dict(zip(tenants, pool.map(storm_claim, tenants)))
    return storm, time.monotonic() - started, started


def storm_summary(watch: PortWatch, tenants: list[str], storm: dict, storm_s: float, storm_polls, alone) -> dict:
    """The result's ``storm``: the claims' readiness, the ports' bind-to-active spans and the switch's queue."""
    storm_ports = [f"bmt-storm-{t}-private-{t}" for t in tenants]
    spans = watch.spans(storm_ports)
    alone_median = statistics.median(alone) if alone else None
    queue = [span - alone_median for span in spans.values()] if alone_median is not None else []
    actives = sorted(watch.active[n] for n in storm_ports if n in watch.active)
    gaps = [b - a for a, b in zip(actives, actives[1:])]
    storm_ready = [s for s, dummy, ok in storm.values() if ok]
    return {
        "tenants": len(tenants),
        "total_s": round(storm_s, 1),
        "errors": sum(1 for dummy, dummy2, ok in storm.values() if not ok),
        "ready_s": {
            "p50": round(statistics.median(storm_ready), 1) if storm_ready else None,
            "p95": round(percentile(storm_ready, 0.95), 1) if storm_ready else None,
            "max": round(max(storm_ready), 1) if storm_ready else None,
        },
        "bind_to_active_s": {
            "p50": round(statistics.median(spans.values()), 2) if spans else None,
            "max": round(max(spans.values()), 2) if spans else None,
        },
        "queue_s": {
            "p50": round(statistics.median(queue), 2) if queue else None,
            "max": round(max(queue), 2) if queue else None,
        },
        "active_gaps_median_s": round(statistics.median(gaps), 2) if gaps else None,
        # the watcher's own pace during the storm (a read of every port takes longer under load)
        "watch_interval_median_s": round(statistics.median(storm_polls), 2) if storm_polls else None,
        "ports_seen_active": len(actives),
    }


def rounds_summary(measures: dict[str, dict[str, list]], alone) -> dict:
    """The result's keys of the isolated and flat rounds."""
    ready, playbook, released = measures["ready"], measures["playbook"], measures["released"]
    medians = {side: statistics.median(values) for side, values in ready.items()}
    return {
        "ready_s": {side: [round(v, 2) for v in values] for side, values in ready.items()},
        "ready_median_s": {side: round(v, 2) for side, v in medians.items()},
        "playbook_median_s": {side: round(statistics.median(v), 2) for side, v in playbook.items()},
        "price_ratio": round(medians["isolated"] / medians["flat"], 3),
        "price_s": round(medians["isolated"] - medians["flat"], 2),
        "release_median_s": {side: round(statistics.median(v), 2) for side, v in released.items()},
        "bind_to_active_alone_s": [round(v, 2) for v in alone],
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tenants", type=int, default=10)
    args = parser.parse_args(argv)
    # SIGTERM (and SIGINT, which a background job ignores) end the run through the finally below: the stack stops
    signal.signal(signal.SIGTERM, lambda *dummy: sys.exit(1))
    tenants = ["t%02d" % i for i in range(1, max(1, args.tenants) + 1)]
    workdir = Path(tempfile.mkdtemp(prefix="bench-tenant-networks-"))
    load_before = round(os.getloadavg()[0], 2)
    started_at = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    switch_harness.require_ovs()
    neutron_harness.require_neutron()
    env = H.start_openstack(workdir / "services", tenants=tenants, sushy_systems=[], database="postgresql")
    bed = Bed()
    try:
        bed.start(env, workdir, tenants)
        first = tenants[0]
        with PortWatch(bed.owner) as watch:
            measures = isolated_against_flat(env, bed, first, args.rounds, workdir)
            alone = list(
                watch.spans([f"bmt-r{r}-isolated-private-{first}" for r in range(1, args.rounds + 1)]).values()
            )
            storm, storm_s, started = every_tenant_at_once(env, bed, tenants, workdir)
            polls = [t for t in watch.polls if started <= t <= started + storm_s]
            storm_polls = [b - a for a, b in zip(polls, polls[1:])]
            time.sleep(0.5)
        result = {
            "bench": "tenant_networks",
            "started": started_at,
            "rounds": args.rounds,
            **rounds_summary(measures, alone),
            "storm": storm_summary(watch, tenants, storm, storm_s, storm_polls, alone),
            "load": {"start": load_before, "end": round(os.getloadavg()[0], 2)},
        }
        print(json.dumps(result, sort_keys=True))
    finally:
        bed.stop()
        env.stop()


if __name__ == "__main__":
    main()
