"""The test bed's network: tenants' networks are VLANs on a real switch, proved by traffic.

Against real Keystone (the shared ``openstack_env``), Neutron on PostgreSQL with networking-generic-switch (NGS),
and an Open vSwitch in userspace that NGS configures over SSH (``fixtures_networks``). Hosts are network
namespaces whose ``eth0`` is a switch port, addressed like the Neutron port bound to it, in one IP subnet: only
the switch's VLANs keep tenants apart.

- tenant-a (a Keystone member of its project) makes a network, a subnet and two ports; tenant-b one of each;
- the owner (``admin``) binds each port to its host's switch port (``binding:host_id`` and ``binding:profile``
  ``local_link_information``, VNIC type ``baremetal``), as Ironic's ``neutron`` network interface will: NGS moves
  the switch port into the network's VLAN;
- tenant-a's hosts reach each other by ping and TCP; tenant-b's host reaches neither (every ping lost, no TCP),
  each such check right after a positive control of the same moment; a host whose port was never bound waits in
  the quarantine VLAN and reaches nobody; the owner's gateway for tenant-a reaches tenant-a only; unbinding a
  port puts its switch port back in quarantine (and binding it again brings it back);
- a tenant can neither write a binding (the owner's policy file for Neutron) nor put a port on another tenant's
  network.
"""

from __future__ import annotations

import dataclasses
import time

import openstack
import pytest
from harness import switch as switch_harness
from harness import traffic

pytestmark = pytest.mark.networks

CIDR = "10.251.0.0/24"
# Both tenants' subnets are the same IP subnet (overlapping is allowed), with pools apart so no two hosts share an
# address: what keeps them apart is the switch alone.
POOLS = {"tenant-a": ("10.251.0.10", "10.251.0.99"), "tenant-b": ("10.251.0.100", "10.251.0.199")}
GATEWAY = "10.251.0.1/24"  # the owner's gateway for tenant-a (its subnet's gateway_ip)
QUARANTINED = "10.251.0.250/24"  # a host whose port is never bound


@dataclasses.dataclass
class TenantNetwork:
    network: object
    subnet: object
    ports: dict  # host name -> Neutron port
    vlan: int  # its segment, as the owner sees it


@dataclasses.dataclass
class Plugged:
    hosts: dict  # name -> harness.switch.Endpoint
    bind_seconds: list


def _status(call) -> int:
    """The HTTP status of an openstacksdk call that is expected to fail (200 if it did not)."""
    try:
        call()
    except openstack.exceptions.HttpException as exc:
        return exc.status_code
    return 200


@pytest.fixture(scope="module")
def tenant_networks(networks_env):
    """Each tenant's network, subnet and ports, made with its member's own credentials."""
    admin = networks_env.admin()
    made = {}
    for tenant, hosts in (("tenant-a", ("a1", "a2")), ("tenant-b", ("b1",))):
        conn = networks_env.tenant(tenant)
        network = conn.network.create_network(name=f"net-{tenant}")
        start, end = POOLS[tenant]
        subnet = conn.network.create_subnet(
            network_id=network.id,
            name=f"subnet-{tenant}",
            ip_version=4,
            cidr=CIDR,
            allocation_pools=[{"start": start, "end": end}],
            enable_dhcp=False,
        )
        ports = {host: conn.network.create_port(network_id=network.id, name=f"port-{host}") for host in hosts}
        vlan = admin.network.get_network(network.id).provider_segmentation_id
        made[tenant] = TenantNetwork(network, subnet, ports, vlan)
    return made


@pytest.fixture(scope="module")
def plugged(networks_env, tenant_networks, tmp_path_factory):
    """A host per port (plus one never bound), each listening for TCP; the owner binds the ports."""
    switch = networks_env.switch
    workdir = tmp_path_factory.mktemp("hosts")
    hosts = {}
    for tenant in tenant_networks.values():
        for name, port in tenant.ports.items():
            hosts[name] = switch.add_host(name, port.fixed_ips[0]["ip_address"] + "/24")
    hosts["q1"] = switch.add_host("q1", QUARANTINED)
    listeners = [traffic.serve_tcp(host, workdir) for host in hosts.values()]
    admin = networks_env.admin()
    seconds = []
    for tenant in tenant_networks.values():
        for name, port in tenant.ports.items():
            started = time.monotonic()
            networks_env.bind(admin, port, hosts[name].port, host=f"node-{name}")
            switch.wait_port_vlan(hosts[name].port, tenant.vlan)
            seconds.append(time.monotonic() - started)
    try:
        yield Plugged(hosts, seconds)
    finally:
        for listener in listeners:
            listener.stop()


# --- what a tenant may do ------------------------------------------------------------------


def test_a_tenant_makes_its_network_subnet_and_ports_on_a_vlan_of_its_own(networks_env, tenant_networks):
    low, high = 100, 199
    for name, made in tenant_networks.items():
        project = networks_env.openstack.tenants[name].project_id
        assert made.network.project_id == project
        assert made.subnet.cidr == CIDR
        assert all(port.project_id == project for port in made.ports.values())
        assert low <= made.vlan <= high, made.vlan
    assert tenant_networks["tenant-a"].vlan != tenant_networks["tenant-b"].vlan
    seen_by_b = {n.id for n in networks_env.tenant("tenant-b").network.networks()}
    assert tenant_networks["tenant-b"].network.id in seen_by_b
    assert tenant_networks["tenant-a"].network.id not in seen_by_b


def test_a_tenant_cannot_write_a_ports_binding(networks_env, tenant_networks):
    """binding:host_id and binding:profile are the owner's (and services'): refused to the port's own tenant, on
    update and on create; the owner's same write is accepted (the policy file, not an absent field, refuses)."""
    conn = networks_env.tenant("tenant-a")
    network = tenant_networks["tenant-a"].network
    port = conn.network.create_port(network_id=network.id, name="port-policy")
    profile = {"local_link_information": [{"switch_info": "bmt-switch", "port_id": "a1"}]}
    try:
        assert _status(lambda: conn.network.update_port(port, binding_profile=profile)) == 403
        assert _status(lambda: conn.network.update_port(port, binding_host_id="node-x")) == 403
        assert _status(lambda: conn.network.create_port(network_id=network.id, binding_profile=profile)) == 403
        assert _status(lambda: conn.network.create_port(network_id=network.id, binding_host_id="node-x")) == 403
        admin = networks_env.admin()
        unchanged = admin.network.get_port(port.id)
        assert (unchanged.binding_host_id, unchanged.binding_profile) == ("", {})
        # Positive control: the owner writes the same fields (no link information: no switch port moves).
        written = admin.network.update_port(port, binding_host_id="node-x", binding_profile={"owner-note": "x"})
        assert (written.binding_host_id, written.binding_profile) == ("node-x", {"owner-note": "x"})
    finally:
        networks_env.admin().network.delete_port(port.id)


def test_a_tenant_cannot_put_a_port_on_another_tenants_network(networks_env, tenant_networks):
    other = tenant_networks["tenant-a"].network
    conn = networks_env.tenant("tenant-b")
    assert _status(lambda: conn.network.create_port(network_id=other.id, name="intruder")) in (403, 404)
    ports = networks_env.admin().network.ports(network_id=other.id)
    assert {p.name for p in ports} <= {"port-a1", "port-a2", "port-policy"}, [p.name for p in ports]


# --- what reaches what ------------------------------------------------------------------------


def test_bound_ports_of_one_tenant_reach_each_other(networks_env, tenant_networks, plugged):
    hosts, switch = plugged.hosts, networks_env.switch
    for name, tenant in (("a1", "tenant-a"), ("a2", "tenant-a"), ("b1", "tenant-b")):
        assert switch.port_vlan(hosts[name].port) == tenant_networks[tenant].vlan, name
    traffic.wait_reaches(hosts["a1"], hosts["a2"])
    traffic.wait_reaches(hosts["a2"], hosts["a1"])


def test_the_traffic_checks_fail_where_they_should(plugged):
    """Negative control of the checks below: the isolation check fails between hosts of one tenant, and the
    reachability check fails (at its deadline) towards another tenant's host."""
    hosts = plugged.hosts
    with pytest.raises(AssertionError, match="a1 reaches a2"):
        traffic.assert_isolated(hosts["a1"], hosts["a2"])
    with pytest.raises(AssertionError, match="a1 does not reach b1"):
        traffic.wait_reaches(hosts["a1"], hosts["b1"], timeout=3)


def test_a_port_on_another_tenants_network_reaches_neither(plugged):
    hosts = plugged.hosts
    traffic.wait_reaches(hosts["a1"], hosts["a2"])  # positive control, same moment
    for source, target in (("b1", "a1"), ("b1", "a2"), ("a1", "b1"), ("a2", "b1")):
        traffic.assert_isolated(hosts[source], hosts[target])


def test_an_unbound_port_sits_in_quarantine_and_reaches_nobody(networks_env, plugged):
    hosts = plugged.hosts
    assert networks_env.switch.port_vlan(hosts["q1"].port) == networks_env.switch.quarantine_vlan
    traffic.wait_reaches(hosts["a1"], hosts["a2"])
    for other in ("a1", "a2", "b1"):
        traffic.assert_isolated(hosts["q1"], hosts[other])
        traffic.assert_isolated(hosts[other], hosts["q1"])


def test_the_owners_gateway_for_a_tenant_reaches_that_tenants_hosts_only(
    networks_env, tenant_networks, plugged, tmp_path
):
    hosts = plugged.hosts
    gateway = networks_env.switch.add_gateway("gw-a", tenant_networks["tenant-a"].vlan, GATEWAY)
    listener = traffic.serve_tcp(gateway, tmp_path)
    try:
        traffic.wait_reaches(gateway, hosts["a1"])
        traffic.wait_reaches(hosts["a2"], gateway)
        for other in ("b1", "q1"):
            traffic.assert_isolated(gateway, hosts[other])
            traffic.assert_isolated(hosts[other], gateway)
    finally:
        listener.stop()


def test_unbinding_moves_the_switch_port_back_to_quarantine(networks_env, tenant_networks, plugged):
    hosts, switch, admin = plugged.hosts, networks_env.switch, networks_env.admin()
    port, vlan = tenant_networks["tenant-a"].ports["a2"], tenant_networks["tenant-a"].vlan
    traffic.wait_reaches(hosts["a1"], hosts["a2"])
    networks_env.unbind(admin, port)
    switch.wait_port_vlan(hosts["a2"].port, switch.quarantine_vlan)
    assert admin.network.get_port(port.id).binding_vif_type == "unbound"
    for source, target in (("a1", "a2"), ("a2", "a1"), ("a2", "b1")):
        traffic.assert_isolated(hosts[source], hosts[target])
    # Bound again, it is back with its tenant: the isolation above was the unbinding's.
    networks_env.bind(admin, port, hosts["a2"].port, host="node-a2")
    switch.wait_port_vlan(hosts["a2"].port, vlan)
    traffic.wait_reaches(hosts["a1"], hosts["a2"])


def test_the_switch_is_managed_only_with_its_key(networks_env):
    """The switch's SSH access takes NGS's key and no other (a key of a fresh pair is refused)."""
    switch = networks_env.switch
    assert switch_harness.ssh_login_works(switch, switch.ssh_key)
    assert not switch_harness.ssh_login_works(switch, switch_harness.new_key(switch.workdir / "stranger"))
