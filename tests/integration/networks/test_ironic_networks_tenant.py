"""The tenant side of private networks on Ironic (issue 36, item 3, and its isolation proofs), driven through the
collection as a tenant runs it: ``tenant_network``, ``host_claim`` with ``networks``, the ``claimed_hosts``
inventory with ``network`` and ``jump_host``, and ``host_release``, each through ``ansible-playbook`` /
``ansible-inventory`` with the tenant's own credentials (role ``member``).

Against the session's Keystone and Ironic, Neutron + networking-generic-switch + the userspace switch
(``networks_env``), the owner's provisioning and cleaning networks (``ironic_on_switch``) and a sushy-tools emulator
of this module's own. The owner enrols two ``neutron``-interface nodes of a resource class no other suite uses,
leased to tenant-a and tenant-b, lets lessees attach and detach VIFs (the role's ``ironic_tenancy_lessee_vifs``), and gives each tenant a
gateway on its VLAN once the tenant has made its network. A namespace on each node's switch port, with the address
the tenant asks for, stands for the node's NIC.

- each tenant makes its network and subnet (check mode changes nothing, a rerun changes nothing);
- tenant-b naming tenant-a's network in a claim is refused before anything changes, and Neutron and Ironic refuse
  tenant-b's direct attempts (a port on tenant-a's network, a VIF on tenant-a's node);
- each tenant claims, attaches and deploys; its switch port is on its VLAN, its gateway reaches its host by ping and
  TCP, nothing of the other tenant's;
- the inventory's ``ansible_host`` is the tenant's port's address (an address the owner records on the node is not
  used), with ``ProxyJump`` to the gateway;
- tenant-a releases: VIF detached, port deleted, switch port back in quarantine when the node is available again,
  the gateway no longer reaches the host while tenant-b's still reaches tenant-b's;
- no module result and no inventory output carries the switch's name, address, port names or binding.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import time

import openstack
import pytest
import yaml
from fixtures_inventory import inventory as read_inventory
from fixtures_networks import note
from fixtures_openstack import apply_tenancy_policy
from harness import ironic_networks, procs, traffic
from harness import neutron as neutron_harness
from harness import sushy as sushy_harness
from harness.ansible import localhost_play, run_inventory, run_playbook

pytestmark = pytest.mark.networks

CIDR = "10.253.0.0/24"
WAIT = 300
RC = "baremetal-tenantnet"


@dataclasses.dataclass(frozen=True)
class Spec:
    node: str
    switch_port: str
    gateway_port: str
    gateway_ip: str
    host_ip: str
    network: str


SPECS = {
    "tenant-a": Spec("tenantnet-a", "tn-na", "tn-gw-a", "10.253.0.1", "10.253.0.11", "private-a"),
    "tenant-b": Spec("tenantnet-b", "tn-nb", "tn-gw-b", "10.253.0.2", "10.253.0.12", "private-b"),
}


@dataclasses.dataclass
class Tenant:
    name: str
    spec: Spec
    conn: object
    node: object
    host: object  # harness.switch.Endpoint on the node's switch port
    network: dict | None = None  # the tenant_network result
    vlan: int | None = None
    gateway: object | None = None


@dataclasses.dataclass
class Bed:
    tenants: dict[str, Tenant]
    boot_iso: str
    workdir: object
    outputs: list  # every module result and inventory output a tenant got, scanned at the end


def _systems() -> list[dict]:
    systems = sushy_harness.default_systems(len(SPECS))
    for index, (system, spec) in enumerate(zip(systems, SPECS.values())):
        system["name"] = spec.node
        system["nics"] = [{"mac": f"52:54:06:00:02:{index:02x}"}]
    return systems


def _play(openstack_env, bed: Bed, tenant: str, tasks: list, tag: str, **kwargs):
    run = run_playbook(localhost_play(tasks), openstack_env.ansible_env(tenant), bed.workdir / tag, **kwargs)
    bed.outputs.append(run.stdout)
    return run


def _task(module: str, **args) -> dict:
    return {"name": module, f"baremetal.tenancy.{module}": args, "register": "out"}


def _network_task(spec: Spec) -> dict:
    subnet = {"name": "hosts", "cidr": CIDR, "gateway_ip": spec.gateway_ip}
    return _task("tenant_network", name=spec.network, subnets=[subnet])


def _claim_task(bed: Bed, tenant: Tenant, network: str | None = None) -> dict:
    return _task(
        "host_claim",
        backend="ironic",
        name=f"net-{tenant.name}",
        resource_class=RC,
        networks=[{"network": network or tenant.spec.network, "fixed_ip": tenant.spec.host_ip}],
        image={"url": bed.boot_iso, "format": "live-iso"},
        wait=True,
        wait_timeout=WAIT,
    )


@pytest.fixture(scope="module")
def bed(openstack_env, networks_env, ironic_on_switch, ironic_tenancy_policy, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("tenant-networks")
    emulator = sushy_harness.start_sushy(workdir / "sushy", _systems())
    procs.record_service(dataclasses.replace(emulator.service, name="sushy-tools (tenant networks)"))
    admin, switch = openstack_env.admin_conn, networks_env.switch
    tenants: dict[str, Tenant] = {}
    listeners = []
    apply_tenancy_policy(openstack_env, workdir / "lessee-vifs", lessee_vifs=True)
    try:
        iso = ironic_networks.live_iso(openstack_env.ironic_server.http_root, workdir)
        for bmc, (name, spec) in zip(emulator.bmcs, SPECS.items()):
            host = switch.add_host(spec.switch_port, spec.host_ip + "/24")
            listeners.append(traffic.serve_tcp(host, workdir))
            lessee = openstack_env.tenants[name].project_id
            node = ironic_networks.enroll_switched_node(
                admin,
                bmc,
                spec.node,
                openstack_env.infra_project_id,
                lessee,
                spec.switch_port,
                ironic_on_switch,
                resource_class=RC,
            )
            tenants[name] = Tenant(name, spec, networks_env.tenant(name), node, host)
        yield Bed(tenants, f"{openstack_env.ironic_server.http_url}/{iso}", workdir, [])
    finally:
        errors = []
        for tenant in tenants.values():
            try:
                ironic_networks.release_node(admin, tenant.node, WAIT)
            except Exception as exc:  # release the others, then fail
                errors.append(exc)
        for listener in listeners:
            listener.stop()
        emulator.stop()
        apply_tenancy_policy(openstack_env, workdir / "default")
        if errors:
            raise errors[0]


def test_each_tenant_makes_its_network_check_mode_first_then_idempotent(openstack_env, networks_env, bed):
    owner, switch = networks_env.admin(), networks_env.switch
    for tenant in bed.tenants.values():
        task = _network_task(tenant.spec)
        checked = _play(openstack_env, bed, tenant.name, [task], f"net-check-{tenant.name}", check=True, diff=True)
        assert checked.ok, checked.explain()
        result = checked.result("tenant_network")
        assert result["changed"] is True and result["network"]["id"] is None, result
        assert result["diff"]["after"]["subnets"][0]["cidr"] == CIDR, result
        assert not list(tenant.conn.network.networks(name=tenant.spec.network)), "check mode created the network"
        made = _play(openstack_env, bed, tenant.name, [task], f"net-make-{tenant.name}")
        assert made.ok, made.explain()
        network = made.result("tenant_network")["network"]
        assert made.result("tenant_network")["changed"] is True
        assert network["project_id"] == openstack_env.tenants[tenant.name].project_id, network
        assert [(s["name"], s["cidr"], s["gateway_ip"], s["enable_dhcp"]) for s in network["subnets"]] == [
            ("hosts", CIDR, tenant.spec.gateway_ip, False)
        ], network
        again = _play(openstack_env, bed, tenant.name, [task], f"net-again-{tenant.name}")
        assert again.ok and again.result("tenant_network")["changed"] is False, again.explain()
        tenant.network = network
        tenant.vlan = owner.network.get_network(network["id"]).provider_segmentation_id
        tenant.gateway = switch.add_gateway(tenant.spec.gateway_port, tenant.vlan, tenant.spec.gateway_ip + "/24")
    vlans = {tenant.vlan for tenant in bed.tenants.values()}
    assert len(vlans) == 2 and switch.quarantine_vlan not in vlans, vlans
    # A subnet's CIDR cannot change: one clear error, nothing changed.
    a = bed.tenants["tenant-a"]
    moved = _task("tenant_network", name=a.spec.network, subnets=[{"name": "hosts", "cidr": "10.254.0.0/24"}])
    refused = _play(openstack_env, bed, a.name, [moved], "net-cidr")
    assert not refused.ok and "cidr cannot change" in refused.result("tenant_network")["msg"], refused.explain()
    assert [s.cidr for s in a.conn.network.subnets(network_id=a.network["id"])] == [CIDR]


def test_another_tenants_network_and_node_are_refused(openstack_env, bed):
    a, b = bed.tenants["tenant-a"], bed.tenants["tenant-b"]
    # Through the collection: tenant-b names tenant-a's network (by ID); nothing is allocated, no port made.
    run = _play(openstack_env, bed, b.name, [_claim_task(bed, b, network=a.network["id"])], "claim-foreign")
    assert not run.ok, run.explain()
    message = run.result("host_claim")["msg"]
    assert a.network["id"] in message and "does not exist or is not project" in message, message
    assert not list(b.conn.baremetal.allocations()), "a refused claim allocated a node"
    assert not list(b.conn.network.ports(network_id=b.network["id"])), "a refused claim made a port"
    # Directly on the services, with tenant-b's own token.
    with pytest.raises(openstack.exceptions.HttpException) as port_refused:
        b.conn.network.create_port(network_id=a.network["id"], name="intruder")
    assert port_refused.value.status_code in (403, 404), port_refused.value
    own = b.conn.network.create_port(network_id=b.network["id"], name="probe")
    try:
        with pytest.raises(openstack.exceptions.HttpException) as vif_refused:
            b.conn.baremetal.attach_vif_to_node(a.node, own.id)
        assert vif_refused.value.status_code in (403, 404), vif_refused.value
        assert openstack_env.admin_conn.baremetal.list_node_vifs(a.node) == []
        # Nor may tenant-b bind its own port to a switch port (the binding is the owner's and Ironic's).
        with pytest.raises(openstack.exceptions.HttpException) as bind_refused:
            b.conn.network.update_port(
                own,
                binding_host_id=a.node.id,
                binding_profile={"local_link_information": neutron_harness.local_link_information(a.spec.switch_port)},
            )
        assert bind_refused.value.status_code == 403, bind_refused.value
    finally:
        b.conn.network.delete_port(own)


def test_claims_deploy_each_tenants_host_onto_its_vlan(openstack_env, networks_env, bed):
    switch, owner = networks_env.switch, networks_env.admin()

    def claim(tenant: Tenant):
        started = time.monotonic()
        run = _play(openstack_env, bed, tenant.name, [_claim_task(bed, tenant)], f"claim-{tenant.name}")
        return run, time.monotonic() - started

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        runs = dict(zip(bed.tenants, pool.map(claim, bed.tenants.values())))
    note(
        "host_claim with networks (port, VIF, deploy), two at once: "
        + ", ".join(f"{s:.1f}s" for dummy, s in runs.values())
    )
    for name, (run, _seconds) in runs.items():
        tenant = bed.tenants[name]
        assert run.ok, run.explain()
        claim_result = run.result("host_claim")["claim"]
        assert claim_result["ready"] is True and claim_result["provision_state"] == "active", claim_result
        assert claim_result["networks"] == [
            {
                "network": tenant.spec.network,
                "network_id": tenant.network["id"],
                "addresses": [tenant.spec.host_ip],
                "mac_address": claim_result["networks"][0]["mac_address"],
            }
        ], claim_result
        switch.wait_port_vlan(tenant.spec.switch_port, tenant.vlan)
        (port,) = tenant.conn.network.ports(network_id=tenant.network["id"], device_id=tenant.node.id)
        assert port.name == f"bmt-net-{name}-{tenant.spec.network}", port
        bound = owner.network.get_port(port.id)
        assert bound.binding_host_id == tenant.node.id and bound.binding_vif_type == "other", bound
        assert tenant.conn.baremetal.list_node_vifs(tenant.node) == [port.id]
    # A rerun changes nothing.
    a = bed.tenants["tenant-a"]
    again = _play(openstack_env, bed, a.name, [_claim_task(bed, a)], "claim-again")
    assert again.ok and again.result("host_claim")["changed"] is False, again.explain()
    # Traffic: each gateway reaches its host, nothing crosses.
    b = bed.tenants["tenant-b"]
    for tenant in (a, b):
        traffic.wait_reaches(tenant.gateway, tenant.host)
    for source, target in ((a.gateway, b.host), (b.gateway, a.host), (a.host, b.host), (b.host, a.gateway)):
        traffic.assert_isolated(source, target)


def _inventory(openstack_env, bed: Bed, tenant: Tenant, **options) -> dict:
    """``ansible-inventory --list`` as ``tenant`` (every value from the APIs checked unsafe, then unwrapped)."""
    source = bed.workdir / f"{tenant.name}-{len(bed.outputs)}.claimed_hosts.yml"
    source.write_text(yaml.safe_dump({"plugin": "baremetal.tenancy.claimed_hosts", "backend": "ironic", **options}))
    data, text = read_inventory(source, openstack_env.ansible_env(tenant.name), bed.workdir)
    bed.outputs.append(text)
    return data


def test_the_inventory_takes_ansible_host_from_the_tenants_port_and_jumps_through_its_gateway(openstack_env, bed):
    a, b = bed.tenants["tenant-a"], bed.tenants["tenant-b"]
    admin = openstack_env.admin_conn
    # The owner records an address on the node: with option network it is not what the tenant connects to.
    admin.baremetal.patch_node(a.node, [{"op": "add", "path": "/extra/addresses", "value": ["192.0.2.99"]}])
    try:
        jump = f"root@{a.spec.gateway_ip}"
        data = _inventory(openstack_env, bed, a, network=a.spec.network, jump_host=jump)
        hostvars = data["_meta"]["hostvars"]
        assert list(hostvars) == ["net-tenant-a"], hostvars
        host = hostvars["net-tenant-a"]
        assert host["ansible_host"] == a.spec.host_ip, host
        assert host["ansible_ssh_common_args"] == f"-o ProxyJump={jump}", host
        plain = _inventory(openstack_env, bed, a)["_meta"]["hostvars"]["net-tenant-a"]
        assert plain["ansible_host"] == "192.0.2.99"  # the control: without the option, the owner's record
        # tenant-b's inventory on its own network: its host only, its own address.
        other = _inventory(openstack_env, bed, b, network=b.spec.network)["_meta"]["hostvars"]
        assert {name: v["ansible_host"] for name, v in other.items()} == {"net-tenant-b": b.spec.host_ip}
        # tenant-b naming tenant-a's network: one clear error.
        source = bed.workdir / "foreign.claimed_hosts.yml"
        source.write_text(
            yaml.safe_dump(
                {"plugin": "baremetal.tenancy.claimed_hosts", "backend": "ironic", "network": a.network["id"]}
            )
        )
        proc = run_inventory(source, openstack_env.ansible_env(b.name), bed.workdir)
        bed.outputs.append(proc.stdout + proc.stderr)
        assert "does not exist or is not project" in proc.stderr, proc.stderr
    finally:
        admin.baremetal.patch_node(a.node, [{"op": "remove", "path": "/extra/addresses"}])
    # What the inventory says is reachable is reachable from the gateway it names.
    traffic.wait_reaches(a.gateway, a.host)


def test_release_detaches_the_host_and_quarantines_its_switch_port(openstack_env, networks_env, bed):
    a, b = bed.tenants["tenant-a"], bed.tenants["tenant-b"]
    switch, admin = networks_env.switch, openstack_env.admin_conn
    (port,) = a.conn.network.ports(network_id=a.network["id"], device_id=a.node.id)
    traffic.wait_reaches(a.gateway, a.host)
    started = time.monotonic()
    release = _task("host_release", backend="ironic", name="net-tenant-a", wait=True, wait_timeout=WAIT)
    run = _play(openstack_env, bed, a.name, [release], "release-a")
    assert run.ok, run.explain()
    note(f"host_release with a network until available: {time.monotonic() - started:.1f}s")
    node = admin.baremetal.get_node(a.node.id)
    assert node.provision_state == "available" and node.instance_id is None, node
    # At the moment the node is available again (offerable), its switch port is in quarantine.
    assert switch.port_vlan(a.spec.switch_port) == switch.quarantine_vlan
    assert admin.baremetal.list_node_vifs(a.node) == []
    assert a.conn.network.find_port(port.id) is None, "the tenant's port was not deleted"
    traffic.wait_reaches(b.gateway, b.host)  # positive control, same moment
    traffic.assert_isolated(a.gateway, a.host)
    traffic.assert_isolated(a.host, a.gateway)
    # A rerun has nothing to release.
    again = _play(openstack_env, bed, a.name, [release], "release-again")
    assert again.ok and again.result("host_release")["changed"] is False, again.explain()


def test_nothing_of_the_switch_reaches_a_tenant(networks_env, bed):
    switch = networks_env.switch
    secrets = {
        neutron_harness.SWITCH_INFO,
        neutron_harness.SWITCH_ID,
        f":{switch.ssh_port}",
        "local_link",
        "binding:profile",
        "binding_profile",
        "segmentation",
        *(tenant.spec.switch_port for tenant in bed.tenants.values()),
    }
    assert len(bed.outputs) >= 10
    for output in bed.outputs:
        leaked = sorted(word for word in secrets if word in output)
        assert not leaked, (leaked, output[-2000:])
