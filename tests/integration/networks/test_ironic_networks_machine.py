"""A test-bed machine whose NIC is a port of the switch (issue 36): reached over SSH through its tenant's gateway only.

The machine (:mod:`harness.machines`, a test bed made with ``switch``: its NIC is not on the test bed's bridge but
a switch port, in quarantine) follows its BMC's power and applies the config drive Ironic's ``ramdisk`` deploy puts
in the BMC's virtual USB stick. The owner enrols it as a ``neutron``-interface node leased to tenant-a
(:mod:`harness.ironic_networks`) and gives tenant-a and tenant-b a gateway each on their own VLAN, in the machine's
subnet; tenant-a (role ``member``) makes its network and a port with the machine's address, attaches it, deploys
with its SSH key in the config drive:

- the switch port moves to tenant-a's VLAN and tenant-a logs in from its gateway; neither tenant-b's gateway nor
  the test controller itself (not on any tenant VLAN) reaches the machine, at the same moment;
- tenant-a undeploys: the machine is off, its switch port back in quarantine, and the gateway no longer reaches
  the address;
- tenant-a runs ``examples/deploy_web.yml`` with its private network (``deploy_web_networks``) and the inventory
  ``examples/inventory/deploy_web.ironic.tenant_network.claimed_hosts.yml``: the claim puts the machine on tenant-a's
  VLAN, the inventory takes its address from tenant-a's port and reaches it through tenant-a's gateway
  (``ProxyJump``; the gateway's SSH is the one thing of tenant-a's the controller reaches), and the play installs
  and starts the web service over that path; the controller itself and tenant-b's gateway still do not reach the
  machine; ``host_release`` puts its switch port back in quarantine.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import time

import pytest
import yaml
from fixtures_networks import note
from fixtures_openstack import apply_tenancy_policy
from harness import cloud_config, ironic_networks, procs, traffic
from harness import machines as machines_harness
from harness import sushy as sushy_harness
from harness.ansible import REPO_ROOT, localhost_play, run_playbook
from harness.openstack import wait_for_node
from harness.switch import Endpoint

pytestmark = pytest.mark.networks

NODE = "switched-machine"
WAIT = 300
USER = "tenant"
NETWORK = "machine-tenant-a"
EXAMPLE = REPO_ROOT / "examples" / "deploy_web.yml"
EXAMPLE_INVENTORY = REPO_ROOT / "examples" / "inventory" / "deploy_web.ironic.tenant_network.claimed_hosts.yml"


@dataclasses.dataclass
class Bed:
    machine: machines_harness.Machine
    node: object
    conn: object  # tenant-a's member
    port: object  # tenant-a's Neutron port, the node's VIF
    vlan: int
    gateways: dict  # tenant -> harness.switch.Endpoint
    boot_iso: str
    key: str
    pub: str


def _keypair(directory) -> tuple[str, str]:
    path = directory / "id_tenant"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "tenant@test", "-f", str(path)], check=True)
    return str(path), path.with_suffix(".pub").read_text().strip()


def _endpoint(machine) -> Endpoint:
    """The machine's NIC as a traffic endpoint (its namespace and address), for ping."""
    nic = machine.nics[0]
    return Endpoint(machine.name, nic.host_ifname, machine.netns, nic.address, nic.mac)


def _ssh_until(bed: Bed, via: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """SSH ``hostname`` from namespace ``via`` until it answers (the machine boots sshd) or ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        result = bed.machine.ssh(USER, bed.key, "hostname", via=via)
        if result.returncode == 0 or time.monotonic() > deadline:
            return result
        time.sleep(0.5)


@pytest.fixture(scope="module")
def bed(openstack_env, networks_env, ironic_on_switch, ironic_tenancy_policy, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("switched-machine")
    admin, owner, switch = openstack_env.admin_conn, networks_env.admin(), networks_env.switch
    testbed = machines_harness.TestBed(workdir / "bed", switch=switch)
    emulator = node = None
    try:
        systems = sushy_harness.default_systems(1)
        systems[0].update(name=NODE, nics=[{"mac": "52:54:06:00:01:00"}])
        testbed.address_systems(systems)
        emulator = sushy_harness.start_sushy(workdir / "sushy", systems)
        procs.record_service(dataclasses.replace(emulator.service, name="sushy-tools (switched machine)"))
        machine = testbed.add_machines(emulator.bmcs)[0]
        subnet = testbed.subnet
        hosts = list(subnet.hosts())
        gateways, vlans, port, conn = {}, {}, None, None
        for index, tenant in enumerate(("tenant-a", "tenant-b")):
            tenant_conn = networks_env.tenant(tenant)
            network = tenant_conn.network.create_network(name=f"machine-{tenant}")  # NETWORK for tenant-a
            gateway_ip = str(hosts[1 + index])  # .2 and .3: .1 is the test bed's bridge, unused here
            tenant_conn.network.create_subnet(
                network_id=network.id, ip_version=4, cidr=str(subnet), gateway_ip=gateway_ip, enable_dhcp=False
            )
            vlans[tenant] = owner.network.get_network(network.id).provider_segmentation_id
            gateways[tenant] = switch.add_gateway(f"ir-gw-m{tenant[-1]}", vlans[tenant], f"{gateway_ip}/24")
            if tenant == "tenant-a":
                conn = tenant_conn
                port = conn.network.create_port(
                    network_id=network.id, name=f"nic-{NODE}", fixed_ips=[{"ip_address": machine.ip}]
                )
        node = ironic_networks.enroll_switched_node(
            admin,
            emulator.bmcs[0],
            NODE,
            openstack_env.infra_project_id,
            openstack_env.tenants["tenant-a"].project_id,
            machine.nics[0].host_ifname,
            ironic_on_switch,
        )
        iso = ironic_networks.live_iso(openstack_env.ironic_server.http_root, workdir)
        key, pub = _keypair(workdir)
        yield Bed(
            machine,
            node,
            conn,
            port,
            vlans["tenant-a"],
            gateways,
            f"{openstack_env.ironic_server.http_url}/{iso}",
            key,
            pub,
        )
    finally:
        try:
            if node is not None:
                ironic_networks.release_node(admin, node, WAIT)
        finally:
            if emulator is not None:
                emulator.stop()
            testbed.stop()
    assert not testbed.leftovers(), testbed.leftovers()


def test_the_machine_is_reached_through_its_tenants_gateway_only(openstack_env, networks_env, bed, tmp_path):
    switch, admin = networks_env.switch, openstack_env.admin_conn
    machine, gateway_a, gateway_b = bed.machine, bed.gateways["tenant-a"], bed.gateways["tenant-b"]
    port_name = machine.nics[0].host_ifname
    assert switch.port_vlan(port_name) == switch.quarantine_vlan
    apply_tenancy_policy(openstack_env, tmp_path / "lessee-vifs", lessee_vifs=True)
    try:
        started = time.monotonic()
        bed.conn.baremetal.attach_vif_to_node(bed.node, bed.port.id)
        patch = [{"op": "add", "path": "/instance_info/boot_iso", "value": bed.boot_iso}]
        bed.conn.baremetal.patch_node(bed.node, patch)
        user_data = "#cloud-config\n" + json.dumps({"users": [{"name": USER, "ssh_authorized_keys": [bed.pub]}]})
        drive = {"meta_data": {"hostname": NODE}, "user_data": user_data}
        bed.conn.baremetal.set_node_provision_state(bed.node, "active", config_drive=drive)
        wait_for_node(admin, bed.node.id, timeout=WAIT, provision_state="active")
        switch.wait_port_vlan(port_name, bed.vlan)
        machine.wait_running(True)
        reached = _ssh_until(bed, gateway_a.netns)
        assert reached.returncode == 0 and reached.stdout.strip() == NODE, (reached, machine.describe())
        note(
            f"switched machine: lessee attach + deploy until SSH through its gateway: {time.monotonic() - started:.1f}s"
        )
        # Same moment: tenant-b's gateway, on its own VLAN in the same subnet, and the controller (on no tenant
        # VLAN) do not reach it; the gateway still does.
        for via in (gateway_b.netns, None):
            refused = machine.ssh(USER, bed.key, "hostname", via=via)
            assert refused.returncode == 255, (via, refused)
        traffic.assert_isolated(gateway_b, _endpoint(machine))
        assert machine.ssh(USER, bed.key, "hostname", via=gateway_a.netns).returncode == 0

        started = time.monotonic()
        bed.conn.baremetal.set_node_provision_state(bed.node, "deleted")
        wait_for_node(admin, bed.node.id, timeout=WAIT, provision_state="available")
        switch.wait_port_vlan(port_name, switch.quarantine_vlan)
        machine.wait_running(False)
        note(f"switched machine: lessee undeploy until quarantine and off: {time.monotonic() - started:.1f}s")
        assert machine.ssh(USER, bed.key, "hostname", via=gateway_a.netns).returncode == 255
        assert bed.conn.baremetal.list_node_vifs(bed.node) == []
    finally:
        apply_tenancy_policy(openstack_env, tmp_path / "default")


def test_deploy_web_on_the_tenants_network_through_its_gateway(openstack_env, networks_env, bed, tmp_path):
    switch, machine = networks_env.switch, bed.machine
    gateway, conn = bed.gateways["tenant-a"], bed.conn
    network = conn.network.find_network(NETWORK, ignore_missing=False)
    (subnet,) = conn.network.subnets(network_id=network.id)
    # The machine's address is its own (no DHCP in the test bed): the subnet gives exactly that one, to the port
    # deploy_web's claim makes (the earlier test's port held it).
    if conn.network.find_port(bed.port.id) is not None:
        conn.network.delete_port(bed.port)
    conn.network.update_subnet(subnet, allocation_pools=[{"start": machine.ip, "end": machine.ip}])
    # The earlier test's deployment is on the disk, under the same instance ID (Ironic's config drive names the
    # node's UUID), so the machine would apply this config drive's keys as cloud-init does: not at all. This node
    # is not cleaned (no agent): erase the disk as cleaning would.
    machine.wipe()
    jump = switch.add_jump_host(gateway, bed.pub)
    ssh_config = tmp_path / "ssh_config"
    ssh_config.write_text(
        f"Host *\n  IdentityFile {bed.key}\n  IdentitiesOnly yes\n  StrictHostKeyChecking no\n"
        "  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n"
    )
    source = tmp_path / "web.claimed_hosts.yml"
    inventory = yaml.safe_load(EXAMPLE_INVENTORY.read_text())
    inventory.update(network=NETWORK, jump_host=f"root@{jump}")
    source.write_text(yaml.safe_dump(inventory))
    (tmp_path / "id_tenant.pub").write_text(bed.pub + "\n")
    extra = {
        "backend": "ironic",
        "deploy_web_prefix": "net-",
        "deploy_web_count": 1,
        "deploy_web_image": {"url": bed.boot_iso, "format": "live-iso"},
        "deploy_web_resource_class": "baremetal-switched",
        "deploy_web_networks": [{"network": NETWORK}],
        "deploy_web_public_key_file": str(tmp_path / "id_tenant.pub"),
        "deploy_web_wait_timeout": WAIT,
        "ansible_ssh_private_key_file": bed.key,
        # the jump host's SSH reads the same configuration (ssh passes -F on to ProxyJump's ssh)
        "ansible_ssh_extra_args": f"-F {ssh_config}",
        "ansible_remote_tmp": "~/.ansible/tmp",
    }
    apply_tenancy_policy(openstack_env, tmp_path / "lessee-vifs", lessee_vifs=True)
    try:
        started = time.monotonic()
        web = run_playbook(
            EXAMPLE,
            openstack_env.ansible_env("tenant-a"),
            tmp_path / "web",
            extra_vars=extra,
            inventory=str(source),
            callback="default",
            timeout=2 * WAIT,
        )
        assert web.ok, web.explain() + "\n" + machine.describe()
        note(f"deploy_web on tenant-a's network through its gateway: {time.monotonic() - started:.1f}s")
        recap = web.stdout[web.stdout.index("PLAY RECAP") :]
        assert any(line.startswith("net-web-0") and "failed=0" in line for line in recap.splitlines()), recap
        assert switch.port_vlan(machine.nics[0].host_ifname) == bed.vlan
        user = cloud_config.DEFAULT_USER
        served = machine.ssh(user, bed.key, "cat /srv/deploy-web/index.html", via=gateway.netns)
        assert served.returncode == 0 and served.stdout == "deploy_web on net-web-0\n", served
        # Same moment: neither the controller nor tenant-b's gateway reaches the machine.
        assert machine.ssh(user, bed.key, "true").returncode == 255
        traffic.assert_isolated(bed.gateways["tenant-b"], _endpoint(machine))
        release = {
            "name": "release",
            "baremetal.tenancy.host_release": {"backend": "ironic", "name": "net-web-0", "wait": True},
        }
        released = run_playbook(localhost_play([release]), openstack_env.ansible_env("tenant-a"), tmp_path / "release")
        assert released.ok, released.explain()
        assert switch.port_vlan(machine.nics[0].host_ifname) == switch.quarantine_vlan
        assert machine.ssh(user, bed.key, "true", via=gateway.netns).returncode == 255
    finally:
        apply_tenancy_policy(openstack_env, tmp_path / "default")
