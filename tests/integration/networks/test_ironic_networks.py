"""Ironic's ``neutron`` network interface on the test bed's switch (issue 36): a lessee's deployment moves its
node's switch port into the lessee's VLAN, the undeployment back to quarantine, proved by traffic.

Against the session's Keystone and Ironic (``openstack_env``: the ``neutron`` network interface enabled, a
``[neutron]`` section), Neutron + networking-generic-switch + the userspace switch (``networks_env``), the owner's
provisioning and cleaning networks on VLANs of their own (``ironic_on_switch``) and a sushy-tools emulator of this
module's own (two BMCs whose MACs no other suite uses: Ironic refuses a MAC twice).

- the owner enrols two ``redfish`` nodes (``network_interface=neutron``, ``ramdisk`` deploy over
  ``redfish-virtual-media``), leased to tenant-a and tenant-b, each with an Ironic port whose
  ``local_link_connection`` names its switch port. A namespace on that switch port stands for the node's NIC
  (addressed like the lessee's Neutron port: no DHCP), and the owner gives each tenant an access port on the
  tenant's VLAN, its gateway (the only way in from outside: the test never sits on a tenant VLAN itself);
- with the ``ironic_tenancy`` role's default policy a lessee cannot attach a VIF (the role keeps VIFs to the
  owner); the owner lets lessees attach and detach VIFs with the role's ``ironic_tenancy_lessee_vifs``;
- each lessee (role ``member``) makes its network, subnet and port, attaches the port to its node through Ironic's
  API and deploys. Ironic binds the port (host: the node; ``local_link_information``: the Ironic port's
  ``local_link_connection``) and NGS moves the switch port to the tenant's VLAN: each tenant's gateway reaches its
  node by ping and TCP; the other tenant's node and gateway reach neither;
- tenant-a undeploys: the switch port is back in quarantine and the Neutron port unbound; tenant-a's gateway no
  longer reaches the node while tenant-b's still reaches tenant-b's (the positive control of the moment); the
  VIF is no longer attached (the undeployment detached it), the tenant's port remains, unbound.

The owner's Neutron policy (the ``ironic_tenancy`` role's ``ironic_tenancy_neutron_service_reads_networks``) lets
requests Ironic makes on a caller's behalf read the owner's networks: without it the lessee's undeployment fails ("provisioning_network ... was not
found", node in ``error``), because Ironic looks the node's provisioning network up with the caller's token.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import time

import openstack
import pytest
from fixtures_networks import note
from fixtures_openstack import apply_tenancy_policy
from harness import ironic_networks, procs, traffic
from harness import sushy as sushy_harness
from harness.openstack import connect, wait_for_node

pytestmark = pytest.mark.networks

CIDR = "10.252.0.0/24"
WAIT = 300  # seconds for a deployment or an undeployment (NGS serialises the switch's changes)


@dataclasses.dataclass(frozen=True)
class Spec:
    node: str
    switch_port: str  # the node's NIC's switch port (its Ironic port's local_link_connection port_id)
    gateway_port: str  # the tenant's access port, pinned by the owner to the tenant's VLAN
    gateway_ip: str
    pool: tuple[str, str]


SPECS = {
    "tenant-a": Spec("switched-a", "ir-na", "ir-gw-a", "10.252.0.1", ("10.252.0.10", "10.252.0.99")),
    "tenant-b": Spec("switched-b", "ir-nb", "ir-gw-b", "10.252.0.2", ("10.252.0.100", "10.252.0.199")),
}


@dataclasses.dataclass
class Tenant:
    spec: Spec
    conn: object  # the lessee's member: Ironic and Neutron
    network: object
    port: object  # its Neutron port, the node's VIF
    vlan: int
    node: object
    host: object  # harness.switch.Endpoint on the node's switch port
    gateway: object  # harness.switch.Endpoint on the tenant's access port


@dataclasses.dataclass
class Switched:
    tenants: dict[str, Tenant]
    boot_iso: str  # the URL the lessees deploy


def _systems() -> list[dict]:
    systems = sushy_harness.default_systems(len(SPECS))
    for index, (system, spec) in enumerate(zip(systems, SPECS.values())):
        system["name"] = spec.node
        system["nics"] = [{"mac": f"52:54:06:00:00:{index:02x}"}]
    return systems


@pytest.fixture(scope="module")
def switched(openstack_env, networks_env, ironic_on_switch, ironic_tenancy_policy, tmp_path_factory):
    """Each tenant's network, subnet and Neutron port (its own member's), its node (the owner's, leased to it) and
    the namespaces on the node's switch port and on the tenant's gateway port, both answering TCP."""
    workdir = tmp_path_factory.mktemp("ironic-switched")
    emulator = sushy_harness.start_sushy(workdir / "sushy", _systems())
    procs.record_service(dataclasses.replace(emulator.service, name="sushy-tools (switched nodes)"))
    admin, owner, switch = openstack_env.admin_conn, networks_env.admin(), networks_env.switch
    tenants: dict[str, Tenant] = {}
    listeners = []
    try:
        iso = ironic_networks.live_iso(openstack_env.ironic_server.http_root, workdir)
        for bmc, (name, spec) in zip(emulator.bmcs, SPECS.items()):
            conn = networks_env.tenant(name)
            network = conn.network.create_network(name=f"switched-{name}")
            conn.network.create_subnet(
                network_id=network.id,
                ip_version=4,
                cidr=CIDR,
                gateway_ip=spec.gateway_ip,
                allocation_pools=[{"start": spec.pool[0], "end": spec.pool[1]}],
                enable_dhcp=False,
            )
            port = conn.network.create_port(network_id=network.id, name=f"nic-{spec.node}")
            vlan = owner.network.get_network(network.id).provider_segmentation_id
            host = switch.add_host(spec.switch_port, port.fixed_ips[0]["ip_address"] + "/24")
            gateway = switch.add_gateway(spec.gateway_port, vlan, spec.gateway_ip + "/24")
            listeners += [traffic.serve_tcp(host, workdir), traffic.serve_tcp(gateway, workdir)]
            lessee = openstack_env.tenants[name].project_id
            node = ironic_networks.enroll_switched_node(
                admin, bmc, spec.node, openstack_env.infra_project_id, lessee, spec.switch_port, ironic_on_switch
            )
            tenants[name] = Tenant(spec, conn, network, port, vlan, node, host, gateway)
        yield Switched(tenants, f"{openstack_env.ironic_server.http_url}/{iso}")
    finally:
        errors = []
        for tenant in tenants.values():
            try:
                ironic_networks.release_node(admin, tenant.node, WAIT)
            except Exception as exc:  # release the others, stop the rest, then fail
                errors.append(exc)
        for listener in listeners:
            listener.stop()
        emulator.stop()
        if errors:
            raise errors[0]


@pytest.fixture(scope="module")
def deployed(openstack_env, switched, tmp_path_factory):
    """The owner lets lessees attach VIFs; each lessee attaches its port to its node and deploys, both at once.
    Returns the seconds each took (attach to ``active``); the role's default policy is back afterwards."""
    workdir = tmp_path_factory.mktemp("ironic-switched-policy")
    apply_tenancy_policy(openstack_env, workdir / "lessee-vifs", lessee_vifs=True)

    def deploy(tenant: Tenant) -> float:
        admin = connect(openstack_env.keystone_server.admin_auth("system"))  # one per thread
        started = time.monotonic()
        tenant.conn.baremetal.attach_vif_to_node(tenant.node, tenant.port.id)
        patch = [{"op": "add", "path": "/instance_info/boot_iso", "value": switched.boot_iso}]
        tenant.conn.baremetal.patch_node(tenant.node, patch)
        tenant.conn.baremetal.set_node_provision_state(tenant.node, "active")
        wait_for_node(admin, tenant.node.id, timeout=WAIT, provision_state="active")
        return time.monotonic() - started

    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(switched.tenants)) as pool:
            futures = {name: pool.submit(deploy, tenant) for name, tenant in switched.tenants.items()}
            seconds = {name: future.result() for name, future in futures.items()}
        note("lessee VIF attach + ramdisk deploy (two at once): " + ", ".join(f"{s:.1f}s" for s in seconds.values()))
        yield seconds
    finally:
        apply_tenancy_policy(openstack_env, workdir / "default")


# --- before any deployment -------------------------------------------------------------------


def test_the_roles_default_policy_keeps_vifs_to_the_owner(openstack_env, switched):
    """With what the ironic_tenancy role writes by default, the lessee's attach is refused and nothing is
    attached: VIFs are the owner's unless the owner adds a rule."""
    tenant = switched.tenants["tenant-a"]
    with pytest.raises(openstack.exceptions.HttpException) as refused:
        tenant.conn.baremetal.attach_vif_to_node(tenant.node, tenant.port.id)
    assert refused.value.status_code == 403, refused.value
    assert openstack_env.admin_conn.baremetal.list_node_vifs(tenant.node) == []


def test_the_owners_networks_are_the_nodes_and_hidden_from_tenants(openstack_env, switched, ironic_on_switch):
    """Ironic resolves the node's provisioning and cleaning networks in Neutron (its network interface validates;
    a network Neutron does not have fails it), and no tenant sees them."""
    admin = openstack_env.admin_conn
    node = switched.tenants["tenant-b"].node
    assert admin.baremetal.validate_node(node, required=None)["network"].result is True
    bogus = [{"op": "replace", "path": "/driver_info/provisioning_network", "value": "bmt-no-such-network"}]
    admin.baremetal.patch_node(node, bogus)
    try:
        result = admin.baremetal.validate_node(node, required=None)["network"]
        assert result.result is False and "bmt-no-such-network" in (result.reason or ""), result
    finally:
        admin.baremetal.patch_node(node, [{**bogus[0], "value": ironic_on_switch.provisioning.id}])
    for tenant in switched.tenants.values():
        seen = {network.id for network in tenant.conn.network.networks()}
        assert tenant.network.id in seen
        assert not seen & {ironic_on_switch.provisioning.id, ironic_on_switch.cleaning.id}, seen


# --- deployed ------------------------------------------------------------------------------------


def test_a_lessees_deployment_binds_its_port_to_its_nodes_switch_port(
    networks_env, switched, deployed, ironic_on_switch
):
    switch, owner = networks_env.switch, networks_env.admin()
    vlans = {tenant.vlan for tenant in switched.tenants.values()}
    others = {switch.quarantine_vlan, *ironic_on_switch.vlans}
    assert len(vlans) == len(switched.tenants) and len(others) == 3 and not vlans & others, (vlans, others)
    for tenant in switched.tenants.values():
        switch.wait_port_vlan(tenant.spec.switch_port, tenant.vlan)
        port = owner.network.get_port(tenant.port.id)
        assert port.binding_host_id == tenant.node.id, port
        assert port.binding_vnic_type == "baremetal", port
        assert port.binding_vif_type == "other", port
        link = ironic_networks.local_link_connection(tenant.spec.switch_port)
        assert port.binding_profile.get("local_link_information") == [link], port.binding_profile
        assert tenant.conn.baremetal.list_node_vifs(tenant.node) == [tenant.port.id]


def test_each_tenants_gateway_reaches_its_node_and_nothing_else(switched, deployed):
    a, b = switched.tenants["tenant-a"], switched.tenants["tenant-b"]
    for tenant in (a, b):
        traffic.wait_reaches(tenant.gateway, tenant.host)
        traffic.wait_reaches(tenant.host, tenant.gateway)
    for source, target in ((a.host, b.host), (b.host, a.host), (a.gateway, b.host), (b.gateway, a.host)):
        traffic.assert_isolated(source, target)
    # Negative control of the check: it fails between a tenant's gateway and its own node.
    with pytest.raises(AssertionError, match="reaches"):
        traffic.assert_isolated(a.gateway, a.host)


def test_the_lessees_undeployment_puts_the_switch_port_back_in_quarantine(
    openstack_env, networks_env, switched, deployed
):
    a, b = switched.tenants["tenant-a"], switched.tenants["tenant-b"]
    switch, owner, admin = networks_env.switch, networks_env.admin(), openstack_env.admin_conn
    traffic.wait_reaches(a.gateway, a.host)
    started = time.monotonic()
    a.conn.baremetal.set_node_provision_state(a.node, "deleted")
    wait_for_node(admin, a.node.id, timeout=WAIT, provision_state="available")
    switch.wait_port_vlan(a.spec.switch_port, switch.quarantine_vlan)
    note(f"lessee undeploy until the switch port is in quarantine: {time.monotonic() - started:.1f}s")
    port = owner.network.get_port(a.port.id)
    assert (port.binding_host_id, port.binding_vif_type) == ("", "unbound"), port
    assert switch.port_vlan(b.spec.switch_port) == b.vlan
    traffic.wait_reaches(b.gateway, b.host)  # positive control, same moment
    traffic.assert_isolated(a.gateway, a.host)
    traffic.assert_isolated(a.host, a.gateway)
    # The undeployment also detached the VIF: nothing of the tenant's stays on the node for the next one.
    assert a.conn.baremetal.list_node_vifs(a.node) == []
    assert a.conn.network.get_port(a.port.id).id == a.port.id  # the tenant's port itself stays, unbound
