"""The agent's deployment and cleaning run on the owner's provisioning and cleaning networks (issue 36, item 1).

A test-bed machine whose NIC is a port of a switch of its own (:mod:`harness.switch`), enrolled with Ironic's
``neutron`` network interface and the ``direct`` deploy, with FakeIPA as its agent (:mod:`harness.ironic_machines`:
Keystone, Ironic on PostgreSQL, sushy-tools; Neutron with networking-generic-switch on that PostgreSQL). The owner
runs the ``ironic_tenancy`` role once: the provisioning, cleaning and quarantine networks, Ironic's service role,
Neutron's policy and the owner/lessee policy with lessees attaching ports; Ironic's ``[neutron]
provisioning_network`` and ``cleaning_network`` name the first two. tenant-a claims the node onto its private network
with ``host_claim`` (``networks``) and releases it with ``host_release``.

What the machine records when the agent acts on it (its ``events``, with its switch port's VLAN at that moment):

- the agent's ``write_image`` handed the config drive over while the switch port was on the provisioning network's
  VLAN, and the deployed host is on tenant-a's VLAN (never the provisioning one while the tenant's OS runs);
- at release, automated cleaning wiped the disk while the port was on the cleaning network's VLAN, and then the
  port is back in quarantine;
- meanwhile no tenant's own token sees another project's port (the owner's policy lets Ironic read the ports it
  makes on the owner's networks with a lessee's token beside its own service token: without that, a lessee's agent
  deployment fails, "Failed to create neutron ports").

FakeIPA itself talks to Ironic over loopback (it plays the agent ramdisk, on no network namespace): what is proved is
where Ironic and networking-generic-switch put the machine's switch port while each agent step acts on the machine.
"""

from __future__ import annotations

import dataclasses
import time

import pytest
from fixtures_networks import note
from harness import ironic_networks, procs
from harness import neutron as neutron_harness
from harness import openstack as openstack_harness
from harness import switch as switch_harness
from harness.ansible import localhost_play, run_playbook
from harness.ironic_machines import start_ironic_machines

pytestmark = pytest.mark.networks

NODE = "agent-switched"
NETWORK = "agent-tenant-a"
WAIT = 900  # seconds: a deployment or a cleaning boots the agent on loaded cores


@dataclasses.dataclass
class AgentBed:
    stack: object  # harness.ironic_machines.IronicMachines
    switch: switch_harness.Switch
    owner: object  # the owner's Neutron connection (admin on project admin)
    networks: dict  # purpose -> the owner's network
    node: object


@pytest.fixture(scope="module")
def agent_bed(tmp_path_factory):
    for check in (switch_harness.require_ovs, neutron_harness.require_neutron):
        try:
            check()
        except (switch_harness.SwitchError, neutron_harness.NeutronMissing) as exc:
            pytest.fail(str(exc), pytrace=False)
    workdir = tmp_path_factory.mktemp("agent-networks")
    started = time.monotonic()
    switch = switch_harness.Switch(workdir / "switch").start()
    stack = neutron = None
    try:
        stack = start_ironic_machines(
            workdir / "stack",
            count=1,
            first_mac=0x70,
            switch=switch,
            ironic_config=ironic_networks.IRONIC_NEUTRON_CONFIG,
        )
        for service in stack.services:
            procs.record_service(dataclasses.replace(service, name=f"{service.name} (agent on the switch)"))
        env = stack.env
        neutron = neutron_harness.start_neutron(
            workdir / "neutron", env.keystone_server, env.admin_conn, env.postgres_server, switch
        )
        procs.record_service(dataclasses.replace(neutron.service, name=f"{neutron.service.name} (agent on the switch)"))
        # The owner, once: the networks, Ironic's service role, Neutron's policy and Ironic's, lessees' VIFs.
        role_vars = ironic_networks.owner_role_vars(neutron.policy_path, switch.quarantine_vlan)
        role_vars.update(
            ironic_tenancy_manage_policy=True,
            ironic_tenancy_policy_file=str(env.policy_path),
            ironic_tenancy_lessee_vifs=True,
        )
        play = localhost_play([], roles=[{"role": ironic_networks.ROLE, "vars": role_vars}])
        run = run_playbook(play, env.ansible_env("admin"), workdir / "owner-role")
        assert run.ok, run.explain()
        env.settle_policy()
        owner = openstack_harness.connect(env.keystone_server.admin_auth("project"))
        list(owner.network.networks(limit=1))  # Neutron re-reads its changed policy file on this request
        networks = {
            purpose: owner.network.find_network(name, ignore_missing=False)
            for purpose, name in ironic_networks.OWNER_NETWORKS.items()
        }
        node = stack.enroll(0, NODE, lessee=env.tenants["tenant-a"].project_id, network_interface="neutron")
        note(f"agent on the switch: stack, Neutron, owner role and the node in {time.monotonic() - started:.1f}s")
        yield AgentBed(stack, switch, owner, networks, node)
    finally:
        try:
            if neutron is not None:
                neutron.stop()
            if stack is not None:
                stack.stop()
        finally:
            switch.stop()
    assert not switch.leftovers(), switch.leftovers()


def test_agent_deploys_on_the_provisioning_network_and_cleans_on_the_cleaning_network(agent_bed, tmp_path):
    stack, switch, machine = agent_bed.stack, agent_bed.switch, agent_bed.stack.machines[0]
    port = machine.nics[0].host_ifname
    provisioning = agent_bed.networks["provisioning"].provider_segmentation_id
    cleaning = agent_bed.networks["cleaning"].provider_segmentation_id
    assert switch.port_vlan(port) == switch.quarantine_vlan
    tasks = [
        {
            "name": "my network",
            "baremetal.tenancy.tenant_network": {
                "name": NETWORK,
                "subnets": [{"name": "hosts", "cidr": "10.61.0.0/24", "enable_dhcp": False}],
            },
        },
        {
            "name": "claim",
            "baremetal.tenancy.host_claim": {
                "backend": "ironic",
                "name": "agent-0",
                "resource_class": "baremetal",
                "image": stack.image(),
                "networks": [{"network": NETWORK}],
                "online": True,
                "wait": True,
                "wait_timeout": WAIT,
            },
            "register": "claim",
        },
    ]
    started = time.monotonic()
    run = run_playbook(localhost_play(tasks), stack.env.ansible_env("tenant-a"), tmp_path / "claim", timeout=WAIT)
    assert run.ok, run.explain() + "\n" + machine.describe()
    assert run.result("claim")["claim"]["host"] == NODE
    note(f"agent on the switch: claim with a network, direct deploy: {time.monotonic() - started:.1f}s")
    tenant_vlan = agent_bed.owner.network.find_network(NETWORK, ignore_missing=False).provider_segmentation_id
    assert len({provisioning, cleaning, tenant_vlan, switch.quarantine_vlan}) == 4
    # The owner's policy lets Ironic read ports on a lessee's behalf (get_port), never a tenant alone: tenant-b
    # sees none of tenant-a's, the owner's or Ironic's ports, tenant-a only its own.
    tenants = stack.env.tenants
    # new connections: a project's cached one holds the catalog from before Neutron was registered
    tenant_a, tenant_b = (openstack_harness.connect(tenants[t].credentials["member"]) for t in ("tenant-a", "tenant-b"))
    assert list(tenant_b.network.ports()) == []
    own = list(tenant_a.network.ports())
    assert own and {port.project_id for port in own} == {tenants["tenant-a"].project_id}, own
    handed = [e for e in machine.events if e.startswith("config drive ")]
    # The agent wrote the image and handed the config drive over on the provisioning network, and only there.
    assert handed and all(e.endswith(f" on VLAN {provisioning}") for e in handed), machine.events
    switch.wait_port_vlan(port, tenant_vlan)

    started = time.monotonic()
    release = {
        "name": "release",
        "baremetal.tenancy.host_release": {"backend": "ironic", "name": "agent-0", "wait": True},
    }
    released = run_playbook(
        localhost_play([release]), stack.env.ansible_env("tenant-a"), tmp_path / "release", timeout=WAIT
    )
    assert released.ok, released.explain() + "\n" + machine.describe()
    note(f"agent on the switch: release with automated cleaning: {time.monotonic() - started:.1f}s")
    wiped = [e for e in machine.events if e.startswith("wipe ")]
    assert wiped == [f"wipe erase_devices_metadata on VLAN {cleaning}"], machine.events
    switch.wait_port_vlan(port, switch.quarantine_vlan)
    node = stack.env.admin_conn.baremetal.get_node(NODE)
    assert node.provision_state == "available" and not node.instance_info, node
    assert stack.env.admin_conn.baremetal.list_node_vifs(node) == []
