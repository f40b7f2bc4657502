"""The owner's side of tenant networks (issue 36, item 2): the ``ironic_tenancy`` role's Neutron pieces.

Against the session's Keystone and Ironic, Neutron + networking-generic-switch and the userspace switch
(``networks_env``). The fixture ``ironic_on_switch`` ran the role as an owner would (ansible-playbook, the owner's
system-scoped cloud for Keystone and its project-scoped cloud for Neutron); every other switch suite relies on that
run, and here:

- the role made the provisioning, cleaning and quarantine networks (VLAN networks of the switch's physical network,
  not shared; the quarantine network holds the switch's quarantine VLAN, so Neutron never gives it to a tenant),
  gave Ironic's service user the role ``service`` on project ``service``, and wrote the Neutron policy file; a
  second run changes nothing, and a check-mode run changes nothing either;
- with that policy a tenant's member makes its network and port, but cannot bind the port (``binding:host_id``)
  nor write its ``binding:profile`` (the switch port), on create or on update; cannot create a port on any of the
  owner's networks nor see them; cannot make a network on a VLAN of its choosing (the quarantine VLAN, the
  provisioning network's): each refusal beside the owner's same request accepted (the positive control);
- ``host_register`` records each NIC's switch port (``local_link_connection``) from the owner's ``hosts[].nics``
  and sets the ``neutron`` network interface; sushy-tools reports no network adapters, so nothing comes from the
  BMC there (the LLDP reading of Redfish Port resources is unit-tested); check mode, rerun and a changed port.
"""

from __future__ import annotations

import dataclasses
import json

import openstack
import pytest
import yaml
from harness import ironic_networks, procs
from harness import neutron as neutron_harness
from harness import sushy as sushy_harness
from harness.ansible import localhost_play, run_playbook
from harness.openstack import IRONIC_SERVICE_USER

pytestmark = pytest.mark.networks

CIDR = "10.253.0.0/24"
ROLE_TASK = "baremetal.tenancy.ironic_tenancy : %s"


def _status(call) -> int:
    try:
        call()
    except openstack.exceptions.HttpException as exc:
        return exc.status_code
    raise AssertionError("the request was accepted")


@pytest.fixture(scope="module")
def tenant_port(networks_env):
    """tenant-a's own network, subnet and port (its member's)."""
    conn = networks_env.tenant("tenant-a")
    network = conn.network.create_network(name="owner-suite-a")
    conn.network.create_subnet(network_id=network.id, ip_version=4, cidr=CIDR, enable_dhcp=False)
    port = conn.network.create_port(network_id=network.id, name="owner-suite-port")
    try:
        yield conn, network, port
    finally:
        admin = networks_env.admin()
        for made in admin.network.ports(network_id=network.id):
            admin.network.delete_port(made)
        admin.network.delete_network(network)


def test_the_role_made_the_owners_networks(networks_env, ironic_on_switch):
    physnet, quarantine = neutron_harness.PHYSNET, networks_env.switch.quarantine_vlan
    low, high = neutron_harness.VLAN_RANGE
    for purpose, name in ironic_networks.OWNER_NETWORKS.items():
        network = getattr(ironic_on_switch, purpose)
        assert network.name == name
        assert (network.provider_network_type, network.provider_physical_network) == ("vlan", physnet), network
        assert network.is_shared is False, network
    assert ironic_on_switch.quarantine.provider_segmentation_id == quarantine
    for vlan in ironic_on_switch.vlans:
        assert low <= vlan <= high and vlan != quarantine, ironic_on_switch.vlans
    assert len(ironic_on_switch.vlans) == 2
    ids = ironic_on_switch.run.result(ROLE_TASK % "Record the owner's networks' IDs")["ansible_facts"][
        "ironic_tenancy_network_ids"
    ]
    assert ids == {purpose: getattr(ironic_on_switch, purpose).id for purpose in ironic_networks.OWNER_NETWORKS}


def test_the_role_gave_ironics_user_the_service_role(openstack_env, ironic_on_switch):
    identity = openstack_env.admin_conn.identity
    project = identity.find_project(neutron_harness.SERVICE_PROJECT, domain_id="default", ignore_missing=False)
    user = identity.find_user(IRONIC_SERVICE_USER, domain_id="default", ignore_missing=False)
    role = identity.find_role("service", ignore_missing=False)
    roles = {a.role["id"] for a in identity.role_assignments(user_id=user.id, scope_project_id=project.id)}
    assert role.id in roles, roles


def test_the_role_wrote_the_neutron_policy(networks_env, ironic_on_switch):
    rules = yaml.safe_load(networks_env.neutron.policy_path.read_text())
    for name in ("create_port:binding:host_id", "update_port:binding:profile", "create_port:binding:profile"):
        assert rules[name] == "rule:admin_only or rule:service_api", name
    assert rules["context_with_global_access"] == "service_roles:service"
    assert "service_roles:service" in rules["get_network"]
    assert "service_roles:service" in rules["get_port"]


def test_a_second_run_and_a_check_mode_run_change_nothing(openstack_env, networks_env, ironic_on_switch, tmp_path):
    before = {network.id for network in networks_env.admin().network.networks()}
    policy = networks_env.neutron.policy_path
    args = (openstack_env, policy, networks_env.switch.quarantine_vlan)
    for name, options in (("again", {}), ("check", {"check": True, "diff": True})):
        run = ironic_networks.run_owner_role(*args, tmp_path / name, **options)
        assert run.ok, run.explain()
        assert run.report["stats"]["localhost"]["changed"] == 0, (name, run.explain())
    assert {network.id for network in networks_env.admin().network.networks()} == before


def test_a_tenant_cannot_bind_its_port_nor_write_its_binding_profile(networks_env, tenant_port):
    conn, network, port = tenant_port
    profile = {"local_link_information": neutron_harness.local_link_information("ir-na")}
    assert _status(lambda: conn.network.update_port(port.id, binding_profile=profile)) == 403
    assert _status(lambda: conn.network.update_port(port.id, binding_profile={"anything": "x"})) == 403
    assert _status(lambda: conn.network.update_port(port.id, binding_host_id="node-x")) == 403
    assert _status(lambda: conn.network.create_port(network_id=network.id, binding_profile=profile)) == 403
    assert _status(lambda: conn.network.create_port(network_id=network.id, binding_host_id="node-x")) == 403
    unchanged = networks_env.admin().network.get_port(port.id)
    assert (unchanged.binding_host_id, unchanged.binding_profile) == ("", {}), unchanged
    # Positive control: the tenant's own write without binding fields goes through.
    assert conn.network.update_port(port.id, description="mine").description == "mine"


def test_a_tenant_cannot_use_or_see_the_owners_networks(networks_env, ironic_on_switch, tenant_port):
    conn = tenant_port[0]
    seen = {network.id for network in conn.network.networks()}
    assert tenant_port[1].id in seen
    assert not seen & ironic_on_switch.ids, seen
    owner = networks_env.admin()
    for purpose in ironic_networks.OWNER_NETWORKS:
        network = getattr(ironic_on_switch, purpose)
        assert _status(lambda net=network: conn.network.create_port(network_id=net.id, name="intruder")) in (403, 404)
        assert "intruder" not in {p.name for p in owner.network.ports(network_id=network.id)}, purpose
    # Positive control: the owner puts a port on its network.
    mine = owner.network.create_port(network_id=ironic_on_switch.quarantine.id, name="owner-probe")
    owner.network.delete_port(mine)


def test_a_tenant_cannot_choose_its_networks_vlan(networks_env, ironic_on_switch):
    """Provider attributes stay the owner's: a tenant cannot make a network on the quarantine VLAN, nor on the
    provisioning network's, nor on a VLAN of the tenants' range (what would put its hosts beside another's)."""
    conn = networks_env.tenant("tenant-b")
    for vlan in (networks_env.switch.quarantine_vlan, ironic_on_switch.provisioning.provider_segmentation_id, 150):
        request = {
            "name": f"vlan-{vlan}",
            "provider_network_type": "vlan",
            "provider_physical_network": neutron_harness.PHYSNET,
            "provider_segmentation_id": vlan,
        }
        assert _status(lambda body=request: conn.network.create_network(**body)) == 403, vlan
    assert not [n for n in networks_env.admin().network.networks() if n.name.startswith("vlan-")]


# --- host_register records each NIC's switch port ------------------------------------------------------------

REGISTER_MACS = ("52:54:07:00:00:01", "52:54:07:00:00:02")


@pytest.fixture(scope="module")
def register_bmcs(tmp_path_factory):
    """Two BMCs of an emulator of this module's own (MACs no other suite uses: Ironic refuses a MAC twice)."""
    systems = sushy_harness.default_systems(len(REGISTER_MACS))
    for index, (system, mac) in enumerate(zip(systems, REGISTER_MACS)):
        system["name"] = f"reg-net-{index}"
        system["nics"] = [{"mac": mac}]
    emulator = sushy_harness.start_sushy(tmp_path_factory.mktemp("register-sushy"), systems)
    procs.record_service(dataclasses.replace(emulator.service, name="sushy-tools (host_register on the switch)"))
    try:
        yield emulator.bmcs
    finally:
        emulator.stop()


def _register_args(bmcs, port_id: str) -> dict:
    link = dict(neutron_harness.local_link_information(port_id)[0])
    hosts = [{"address": bmc.address, "username": bmc.username, "password": bmc.password} for bmc in bmcs]
    hosts[0]["name"], hosts[1]["name"] = "reg-net-0", "reg-net-1"
    hosts[0]["nics"] = [dict(link, mac=bmcs[0].macs[0].upper())]  # as an owner may write it: the module normalises
    return {
        "backend": "ironic",
        "cloud": "admin",
        "owner": "infra",
        "hosts": hosts,
        "interfaces": {"network_interface": "neutron"},
        "automated_cleaning": False,
        "wait_timeout": 300,
    }


def _register(openstack_env, args, workdir, **options):
    play = localhost_play([{"name": "register", "baremetal.tenancy.host_register": args, "register": "reg"}])
    return run_playbook(play, openstack_env.ansible_env("admin"), workdir, **options)


def _ports(admin, node) -> dict:
    return {p.address: p.local_link_connection for p in admin.baremetal.ports(node_uuid=node.id, details=True)}


def test_host_register_records_each_nics_switch_port(
    openstack_env, networks_env, ironic_on_switch, register_bmcs, tmp_path
):
    """The owner's switch port for the first NIC lands in its Ironic port's local_link_connection; the second host
    has none (sushy-tools reports no network adapters, hence no LLDP: nothing comes from the BMC); both nodes get
    the neutron network interface. Check mode writes nothing, a rerun changes nothing, a changed port ID is written
    (the available node goes through maintenance and comes back out of it)."""
    admin = openstack_env.admin_conn
    args = _register_args(register_bmcs, "reg-pa")
    link = dict(neutron_harness.local_link_information("reg-pa")[0])
    mac0 = register_bmcs[0].macs[0]
    networks = ironic_on_switch.driver_info
    try:
        check = _register(openstack_env, args, tmp_path / "check", check=True, diff=True)
        assert check.ok, check.explain()
        assert check.result("register")["changed"] is True
        assert admin.baremetal.find_node("reg-net-0") is None

        first = _register(openstack_env, args, tmp_path / "first")
        assert first.ok, first.explain()
        hosts = first.result("register")["hosts"]
        assert [h["status"] for h in hosts] == ["registered", "registered"], hosts
        assert hosts[0]["switch_ports"] == [dict(link, mac=mac0, source="owner")]
        assert hosts[1]["switch_ports"] == []  # sushy-tools: no NetworkAdapters, no LLDP
        nodes = [admin.baremetal.get_node(name) for name in ("reg-net-0", "reg-net-1")]
        for node in nodes:
            assert (node.network_interface, node.provision_state) == ("neutron", "available"), node.last_error
        assert _ports(admin, nodes[0]) == {mac0: link}
        assert _ports(admin, nodes[1]) == {register_bmcs[1].macs[0]: {}}

        again = _register(openstack_env, args, tmp_path / "again")
        assert again.ok and again.result("register")["changed"] is False, again.explain()

        # Ironic validates a neutron node's networks when one of its ports changes: the owner names them, as
        # [neutron] provisioning_network / cleaning_network would (host_register keeps driver_info keys it does not set).
        for node in nodes:
            admin.baremetal.patch_node(
                node, [{"op": "add", "path": f"/driver_info/{k}", "value": v} for k, v in networks.items()]
            )
        moved = _register_args(register_bmcs, "reg-pa2")
        changed = _register(openstack_env, moved, tmp_path / "moved", diff=True)
        assert changed.ok, changed.explain()
        entry = changed.result("register")
        assert [h["status"] for h in entry["hosts"]] == ["updated", "unchanged"], entry["hosts"]
        diff = entry["diff"]
        assert diff["before"]["reg-net-0"]["switch_ports"][mac0]["port_id"] == "reg-pa"
        assert diff["after"]["reg-net-0"]["switch_ports"][mac0]["port_id"] == "reg-pa2"
        node = admin.baremetal.get_node("reg-net-0")
        assert (node.provision_state, node.is_maintenance) == ("available", False)
        assert _ports(admin, node)[mac0]["port_id"] == "reg-pa2"
        assert "reg-pa" not in json.dumps(entry.get("warnings") or [])
    finally:
        for name in ("reg-net-0", "reg-net-1"):
            node = admin.baremetal.find_node(name)
            if node is not None:
                admin.baremetal.set_node_maintenance(node, "the suite is done")
                admin.baremetal.delete_node(node)
