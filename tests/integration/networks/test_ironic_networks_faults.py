"""Faults on the way to a tenant's network (issue 36, item 5): the switch's SSH refusing or hanging while
networking-generic-switch moves the host's switch port, and Neutron restarted while Ironic binds the host's port.

Against the session's Keystone, Ironic, Neutron + networking-generic-switch and the userspace switch
(``networks_env``, ``ironic_on_switch``) and a sushy-tools emulator of this module's own: one ``neutron``-interface
node leased to tenant-a, which makes its network with ``tenant_network`` and claims the node onto it with
``host_claim`` (``ansible-playbook``, the tenant's own credentials; the network from the ready playbook
``ironic_tenant_networks.yml``), as ``test_ironic_networks_tenant`` does. A
namespace on the node's switch port stands for its NIC; tenant-a's gateway on its VLAN is what reaches it.

Each fault, the same proof:

- the claim fails with one clear error (one failed task, no traceback) naming the tenant's network;
- the host is not handed over: its switch port stays in quarantine and the tenant's gateway does not reach it;
- no result names the switch, its SSH port or a switch port (scanned as for BMC data);
- once the fault is over, the same task again converges (the switch port on the tenant's VLAN, the host reached
  from the gateway) and once more changes nothing; ``host_release`` then puts the port back in quarantine.

And two ways a host could land on another's network, closed:

- a node that carries a VIF which is not the claim's (another tenant's port an earlier lease left attached: Ironic
  binds every VIF of a node it deploys) is not deployed: one error naming the node and the network, the allocation
  undone, nothing of the claim left;
- the owner ending the lease of a deployed host (``host_lease state=absent``) detaches its VIFs before it
  undeploys: the switch port is back in quarantine, the tenant's gateway no longer reaches the host, and no VIF of
  the tenant stays on the node for the next lessee's deployment to bind.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time

import pytest
from fixtures_networks import note
from fixtures_openstack import apply_tenancy_policy
from harness import ironic_networks, procs, traffic
from harness import sushy as sushy_harness
from harness.ansible import REPO_ROOT, localhost_play, run_playbook

pytestmark = pytest.mark.networks

CIDR = "10.250.0.0/24"
GATEWAY_IP = "10.250.0.1"
HOST_IP = "10.250.0.11"
NETWORK = "faults-a"
NODE = "netfault-a"
SWITCH_PORT = "nf-na"
GATEWAY_PORT = "nf-gw-a"
RC = "baremetal-netfaults"
TENANT = "tenant-a"
PLAYBOOKS = REPO_ROOT / "playbooks"
WAIT = 300


@dataclasses.dataclass
class Bed:
    node: object
    host: object  # harness.switch.Endpoint on the node's switch port
    iso: str
    workdir: object
    network: dict | None = None
    vlan: int | None = None
    gateway: object | None = None
    outputs: list = dataclasses.field(default_factory=list)


def _play(openstack_env, bed: Bed, tasks: list, tag: str):
    run = run_playbook(localhost_play(tasks), openstack_env.ansible_env(TENANT), bed.workdir / tag)
    bed.outputs.append(run.stdout)
    return run


def _task(module: str, **args) -> dict:
    return {"name": module, f"baremetal.tenancy.{module}": args, "register": "out"}


def _claim(bed: Bed, name: str) -> dict:
    return _task(
        "host_claim",
        backend="ironic",
        name=name,
        resource_class=RC,
        networks=[{"network": NETWORK, "fixed_ip": HOST_IP}],
        image={"url": bed.iso, "format": "live-iso"},
        wait=True,
        wait_timeout=WAIT,
    )


@pytest.fixture(scope="module")
def bed(openstack_env, networks_env, ironic_on_switch, ironic_tenancy_policy, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("network-faults")
    systems = sushy_harness.default_systems(1)
    systems[0]["name"] = NODE
    systems[0]["nics"] = [{"mac": "52:54:06:00:05:00"}]
    emulator = sushy_harness.start_sushy(workdir / "sushy", systems)
    procs.record_service(dataclasses.replace(emulator.service, name="sushy-tools (network faults)"))
    admin, switch = openstack_env.admin_conn, networks_env.switch
    apply_tenancy_policy(openstack_env, workdir / "lessee-vifs", lessee_vifs=True)
    node = listener = None
    try:
        iso = ironic_networks.live_iso(openstack_env.ironic_server.http_root, workdir)
        host = switch.add_host(SWITCH_PORT, HOST_IP + "/24")
        listener = traffic.serve_tcp(host, workdir)
        node = ironic_networks.enroll_switched_node(
            admin,
            emulator.bmcs[0],
            NODE,
            openstack_env.infra_project_id,
            openstack_env.tenants[TENANT].project_id,
            SWITCH_PORT,
            ironic_on_switch,
            resource_class=RC,
        )
        bed = Bed(node, host, f"{openstack_env.ironic_server.http_url}/{iso}", workdir)
        # the tenant's network from the ready playbook, as a tenant makes it
        subnet = {"name": "hosts", "cidr": CIDR, "gateway_ip": GATEWAY_IP}
        out = workdir / "networks.json"
        made = run_playbook(
            PLAYBOOKS / "ironic_tenant_networks.yml",
            openstack_env.ansible_env(TENANT),
            workdir / "network",
            extra_vars={"networks": [{"name": NETWORK, "subnets": [subnet]}], "networks_out": str(out)},
        )
        bed.outputs.append(made.stdout)
        assert made.ok, made.explain()
        (bed.network,) = json.loads(out.read_text())
        assert bed.network["name"] == NETWORK and bed.network["subnets"][0]["cidr"] == CIDR, bed.network
        bed.vlan = networks_env.admin().network.get_network(bed.network["id"]).provider_segmentation_id
        bed.gateway = switch.add_gateway(GATEWAY_PORT, bed.vlan, GATEWAY_IP + "/24")
        yield bed
        _scan(bed, networks_env)
    finally:
        switch.ssh_fault(None)
        try:
            if node is not None:
                ironic_networks.release_node(admin, node, WAIT)
        finally:
            if listener is not None:
                listener.stop()
            emulator.stop()
            apply_tenancy_policy(openstack_env, workdir / "default")


def _scan(bed: Bed, networks_env) -> None:
    """No output the tenant got names the switch's address or SSH port, a switch port or a binding."""
    switch = networks_env.switch
    secrets = [f":{switch.ssh_port}", SWITCH_PORT, GATEWAY_PORT, "local_link", "binding:", "switch_info", "bmtsw"]
    for output in bed.outputs:
        for secret in secrets:
            assert secret not in output, f"{secret!r} reached the tenant:\n{output[-3000:]}"


def _failed_once(run, name: str) -> str:
    """The run's one failed task's message: no traceback, the network named."""
    assert not run.ok, run.explain()
    assert json.loads(run.stdout)["stats"]["localhost"]["failures"] == 1, run.stdout[-6000:]
    assert "Traceback" not in run.stdout, run.stdout[-6000:]
    message = run.result("host_claim")["msg"]
    assert NETWORK in message, message
    return message


def _not_handed_over(networks_env, bed: Bed) -> None:
    switch = networks_env.switch
    assert switch.port_vlan(SWITCH_PORT) == switch.quarantine_vlan
    traffic.assert_isolated(bed.gateway, bed.host)


def _converges(openstack_env, networks_env, bed: Bed, name: str) -> None:
    started = time.monotonic()
    rerun = _play(openstack_env, bed, [_claim(bed, name)], f"{name}-rerun")
    assert rerun.ok, rerun.explain()
    claim = rerun.result("host_claim")["claim"]
    assert claim["ready"] is True and claim["provision_state"] == "active", claim
    networks_env.switch.wait_port_vlan(SWITCH_PORT, bed.vlan)
    traffic.wait_reaches(bed.gateway, bed.host)
    note(f"{name}: the rerun after the fault until reachable {time.monotonic() - started:.1f}s")
    again = _play(openstack_env, bed, [_claim(bed, name)], f"{name}-again")
    assert again.ok and again.result("host_claim")["changed"] is False, again.explain()
    release = _task("host_release", backend="ironic", name=name, wait=True, wait_timeout=WAIT)
    released = _play(openstack_env, bed, [release], f"{name}-release")
    assert released.ok, released.explain()
    assert networks_env.switch.port_vlan(SWITCH_PORT) == networks_env.switch.quarantine_vlan
    assert openstack_env.admin_conn.baremetal.get_node(bed.node.id).provision_state == "available"


def _diagnose(openstack_env, networks_env, bed: Bed) -> str:
    admin = networks_env.admin()
    node = openstack_env.admin_conn.baremetal.get_node(bed.node.id)
    ports = [
        {k: p[k] for k in ("name", "status", "binding_host_id", "binding_vif_type")}
        for p in admin.network.ports(network_id=bed.network["id"])
    ]
    return json.dumps(
        {
            "node": [node.provision_state, node.target_provision_state, node.last_error],
            "ports": ports,
            "vlan": networks_env.switch.port_vlan(SWITCH_PORT),
        },
        default=str,
    )


@pytest.mark.parametrize("fault", ["refuse", "hang"])
def test_the_switch_refusing_or_hanging_leaves_the_host_in_quarantine(openstack_env, networks_env, bed, fault):
    name = f"nf-{fault}"
    networks_env.switch.ssh_fault(fault)
    try:
        started = time.monotonic()
        run = _play(openstack_env, bed, [_claim(bed, name)], name)
        print(f"\n{fault}: {time.monotonic() - started:.1f}s {_diagnose(openstack_env, networks_env, bed)}")
        message = _failed_once(run, name)
        print(f"{fault}: {message}")
        note(f"switch SSH {fault}: the claim failed in {time.monotonic() - started:.1f}s: {message}")
        _not_handed_over(networks_env, bed)
    finally:
        networks_env.switch.ssh_fault(None)
    _converges(openstack_env, networks_env, bed, name)


def test_a_node_carrying_another_attachment_is_not_deployed_onto_the_network(openstack_env, networks_env, bed):
    name = "nf-foreign"
    admin = openstack_env.admin_conn
    tenant_b = networks_env.tenant("tenant-b")
    network = tenant_b.network.create_network(name="faults-b")
    foreign = tenant_b.network.create_port(network_id=network.id, name="left-by-an-earlier-lease")
    try:
        admin.baremetal.attach_vif_to_node(bed.node, foreign.id)  # as an earlier lease could have left it
        run = _play(openstack_env, bed, [_claim(bed, name)], name)
        message = _failed_once(run, name)
        assert f"node {NODE}: carries 1 network attachment(s) that are not this claim's" in message, message
        assert foreign.id not in message and "faults-b" not in message, message
        assert admin.baremetal.list_node_vifs(bed.node) == [foreign.id]
        tenant = networks_env.tenant(TENANT)
        assert not list(tenant.baremetal.allocations()), "the refused claim kept its allocation"
        assert not list(tenant.network.ports(network_id=bed.network["id"])), "the refused claim left a port"
        assert admin.baremetal.get_node(bed.node.id).provision_state == "available"
        _not_handed_over(networks_env, bed)
    finally:
        admin.baremetal.detach_vif_from_node(bed.node, foreign.id)
        tenant_b.network.delete_port(foreign)
        tenant_b.network.delete_network(network)


def test_neutron_restarted_while_the_port_binds(openstack_env, networks_env, bed):
    name = "nf-neutron"
    admin = networks_env.admin()
    restarted = threading.Event()

    def restart_when_bound():
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            ports = admin.network.ports(network_id=bed.network["id"], name=f"bmt-{name}-{NETWORK}")
            bound = [p for p in ports if p.binding_host_id]
            if bound:
                networks_env.neutron.restart()
                restarted.set()
                return
            time.sleep(0.05)

    watcher = threading.Thread(target=restart_when_bound, daemon=True)
    watcher.start()
    started = time.monotonic()
    run = _play(openstack_env, bed, [_claim(bed, name)], name)
    watcher.join(WAIT)
    assert restarted.is_set(), "the port was never bound"
    print(f"\nneutron: {time.monotonic() - started:.1f}s {_diagnose(openstack_env, networks_env, bed)}")
    if not run.ok:
        message = _failed_once(run, name)
        print(f"neutron: {message}")
        note(f"Neutron restarted while the port bound: the claim failed in {time.monotonic() - started:.1f}s")
    else:
        note(f"Neutron restarted while the port bound: the claim completed in {time.monotonic() - started:.1f}s")
    _converges(openstack_env, networks_env, bed, name)


def test_the_owner_ending_the_lease_detaches_the_tenants_networks(openstack_env, networks_env, bed):
    """Last in the module: the node has no lessee afterwards. Ironic's undeployment of a deployed node detaches its
    VIFs itself (Ironic 39's tear-down); a node the tenant attached its port to and never deployed keeps it, and the
    next lessee's deployment would bind it: the case here."""
    name = "nf-lease-end"
    admin, switch = openstack_env.admin_conn, networks_env.switch
    # the ready playbook, without an image: the node allocated and attached to the network, not deployed
    claim = {"name": name, "resource_class": RC, "networks": [{"network": NETWORK, "fixed_ip": HOST_IP}]}
    claimed = run_playbook(
        PLAYBOOKS / "ironic_claim_hosts.yml",
        openstack_env.ansible_env(TENANT),
        bed.workdir / name,
        extra_vars={"claims": [claim], "claim_wait_timeout": WAIT},
    )
    bed.outputs.append(claimed.stdout)
    assert claimed.ok, claimed.explain()
    (vif,) = admin.baremetal.list_node_vifs(bed.node)
    assert admin.baremetal.get_node(bed.node.id).provision_state == "available"
    end = {
        "name": "host_lease",
        "baremetal.tenancy.host_lease": {
            # a lease in node fields: the networks session also runs ESI-Leap (test_esi_leap_networks.py), whose
            # `lease` service in the catalog would make the default provider (auto) look for ESI-Leap's leases
            "lease_provider": "ironic",
            "state": "absent",
            "nodes": [NODE],
            "project": TENANT,
            "wait": True,
            "wait_timeout": WAIT,
        },
    }
    ended = run_playbook(localhost_play([end]), openstack_env.ansible_env("admin"), bed.workdir / "lease-end")
    assert ended.ok, ended.explain()
    node = admin.baremetal.get_node(bed.node.id)
    assert node.lessee is None and node.instance_id is None and node.allocation_id is None, node
    assert admin.baremetal.list_node_vifs(bed.node) == [], "the ended lessee's VIF is still attached"
    assert switch.port_vlan(SWITCH_PORT) == switch.quarantine_vlan
    port = networks_env.admin().network.get_port(vif)
    assert not port.binding_host_id, port  # never bound, and nothing binds it any more
