"""The private networks of `make demo`'s Ironic half (issue 36): a switch, Neutron and each tenant's VLAN.

As root on PostgreSQL, the Ironic half runs its four test-bed machines on a real switch
(tests/integration/harness/switch.py: an Open vSwitch in userspace in its own network namespace, managed over SSH)
instead of a flat bridge, with Neutron and networking-generic-switch moving the machines' switch ports
(tests/integration/harness/neutron.py). What is the owner's and what the tenants' is split as in real life:

- the owner writes Ironic's provisioning and cleaning networks into its configuration (by name: the networks are
  made later), runs the ``ironic_tenancy`` role with the Neutron side (the provisioning, cleaning and quarantine
  networks, Ironic's service user with the ``service`` role, the Neutron policy, lessees attaching their ports) and
  enrols the servers with the ``neutron`` network interface and each NIC's switch port (``host_register``'s
  ``nics``, from the owner's cabling records: sushy-tools reports no LLDP);
- each tenant makes its own network and subnet (``ironic_tenant_networks.yml``). Both pick the same subnet,
  :data:`SUBNET`, with address ranges of their own: only the VLANs keep them apart;
- the owner gives each tenant a gateway on its VLAN (the harness's access port: a namespace on a port pinned to the
  tenant's VLAN, the tenant's router in real life) and tenant-a a jump host on it (an ``sshd`` there), the one thing
  of the tenant's network the controller reaches;
- the claims name the network; the inventory takes ``ansible_host`` from the tenant's own port there and reaches it
  through the jump host (``examples/inventory/deploy_web.ironic.tenant_network.claimed_hosts.yml``).
"""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

from harness import ironic_networks, traffic
from harness import neutron as neutron_harness
from harness import openstack as openstack_harness
from harness import switch as switch_harness
from harness.switch import Endpoint

from .common import DemoError, say

SUBNET = "10.60.0.0/24"  # both tenants': the same addresses, apart only by VLAN
GATEWAY_IP = "10.60.0.1"
POOLS = {"tenant-a": ("10.60.0.10", "10.60.0.19"), "tenant-b": ("10.60.0.20", "10.60.0.29")}


def network_name(tenant: str) -> str:
    return f"{tenant}-private"


@dataclasses.dataclass
class Fabric:
    """The switch, Neutron, and what the owner gave each tenant on it."""

    switch: switch_harness.Switch
    neutron: neutron_harness.Neutron | None = None
    vlans: dict[str, int] = dataclasses.field(default_factory=dict)  # tenant -> its network's VLAN
    gateways: dict[str, Endpoint] = dataclasses.field(default_factory=dict)  # tenant -> its gateway
    jump: str | None = None  # tenant-a's jump host (root@<address>)


def start_switch(workdir: Path) -> Fabric:
    switch = switch_harness.Switch(workdir / "switch").start()
    say(
        f"  open vswitch (userspace, netns {switch.netns}, SSH on 127.0.0.1:{switch.ssh_port}) up in {switch.seconds:.1f}s"
    )
    return Fabric(switch)


def start_neutron(fabric: Fabric, env, workdir: Path) -> None:
    fabric.neutron = neutron_harness.start_neutron(
        workdir / "neutron", env.keystone_server, env.admin_conn, env.postgres_server, fabric.switch
    )
    say(f"  {fabric.neutron.service.summary()}")


def owner_role_vars(fabric: Fabric) -> dict:
    """The ``ironic_tenancy`` role's Neutron side (the harness's, :func:`harness.ironic_networks.owner_role_vars`),
    beside the projects and the Ironic policy, with lessees attaching their ports."""
    role_vars = ironic_networks.owner_role_vars(fabric.neutron.policy_path, fabric.switch.quarantine_vlan)
    del role_vars["ironic_tenancy_manage_policy"]  # the demo's run writes Ironic's policy too
    return {**role_vars, "ironic_tenancy_lessee_vifs": True}


def owner_connection(env):
    """The owner in Neutron: ``admin`` on project ``admin`` (Neutron has no system scope)."""
    return openstack_harness.connect(env.keystone_server.admin_auth("project"))


def settle_policy(env) -> None:
    """Neutron re-reads its changed policy file on the next request: make that one request alone."""
    list(owner_connection(env).network.networks(limit=1))


def nics(machine) -> list[dict]:
    """The owner's cabling record of a machine: each NIC's MAC and switch port (``host_register``'s ``nics``)."""
    return [{"mac": nic.mac, **ironic_networks.local_link_connection(nic.host_ifname)} for nic in machine.nics]


def tenant_networks_vars(tenant: str) -> dict:
    """``ironic_tenant_networks.yml``'s variables for ``tenant``: its network, the shared subnet, its range."""
    start, end = POOLS[tenant]
    subnet = {
        "name": "hosts",
        "cidr": SUBNET,
        "gateway_ip": GATEWAY_IP,
        "enable_dhcp": False,  # the hosts take their address from the config drive (Ironic's network_data)
        "allocation_pools": [{"start": start, "end": end}],
    }
    return {"networks": [{"name": network_name(tenant), "subnets": [subnet]}]}


def give_gateways(fabric: Fabric, env, tenants, alice_key: str) -> None:
    """The owner reads each tenant's VLAN (the segment Neutron gave its network) and gives it a gateway there;
    tenant-a's gateway is also its jump host, letting in alice's key."""
    owner = owner_connection(env)
    for index, tenant in enumerate(tenants):
        project = env.admin_conn.identity.find_project(tenant, ignore_missing=False)
        (network,) = owner.network.networks(name=network_name(tenant), project_id=project.id)
        fabric.vlans[tenant] = network.provider_segmentation_id
        fabric.gateways[tenant] = fabric.switch.add_gateway(
            f"demo-gw{index}", fabric.vlans[tenant], f"{GATEWAY_IP}/{SUBNET.split('/')[1]}"
        )
    fabric.jump = "root@" + fabric.switch.add_jump_host(fabric.gateways["tenant-a"], alice_key)
    say(
        "owner: gave each tenant a gateway on its VLAN ("
        + ", ".join(f"{t} VLAN {v}" for t, v in fabric.vlans.items())
        + f"; tenant-a's is also its jump host, {fabric.jump})"
    )


def ssh_config(keys: Path) -> Path:
    """alice's SSH configuration: her key, her known hosts (new keys accepted once), for the hosts and the jump
    host alike (ssh hands ``-F`` on to ProxyJump's ssh, not ``-o`` options)."""
    path = keys / "ssh_config"
    path.write_text(
        f"Host *\n  IdentityFile {keys / 'id'}\n  IdentitiesOnly yes\n  StrictHostKeyChecking accept-new\n"
        f"  UserKnownHostsFile {keys / 'known_hosts'}\n  LogLevel ERROR\n  ConnectTimeout 10\n"
    )
    return path


def deploy_web_inventory(fabric: Fabric, template: Path, workdir: Path) -> Path:
    """The example inventory with tenant-a's network and jump host filled in."""
    import yaml

    inventory = yaml.safe_load(template.read_text())
    inventory.update(network=network_name("tenant-a"), jump_host=fabric.jump)
    path = workdir / "deploy_web.ironic.tenant_network.claimed_hosts.yml"
    path.write_text(yaml.safe_dump(inventory, sort_keys=False))
    return path


def address(claim: dict, tenant: str) -> str:
    """The host's address on the tenant's network, from the claim's result (the tenant's own port)."""
    for network in claim.get("networks") or []:
        if network["network"] == network_name(tenant) and network["addresses"]:
            return network["addresses"][0]
    raise DemoError(f"claim {claim['name']} has no address on {network_name(tenant)}: {claim.get('networks')}")


def page(gateway: Endpoint, ip: str) -> str | None:
    """The web page at ``ip``:8080 fetched from ``gateway``'s namespace; None if nothing answers."""
    result = gateway.exec("curl", "-s", "--max-time", "5", f"http://{ip}:8080/", timeout=30)
    return result.stdout.strip() if result.returncode == 0 else None


def prove_isolation(fabric: Fabric, hosts: dict[str, tuple[str, str]], keys: Path, user: str) -> list[str]:
    """Traffic, at one moment: each tenant's gateway reaches its own hosts and none of the other's, and tenant-a's
    host reaches tenant-b's hosts neither. ``hosts``: claim -> (tenant, address). Returns the lines to print."""
    lines = []
    for source, gateway in fabric.gateways.items():
        reached, refused = [], []
        for claim, (tenant, ip) in sorted(hosts.items()):
            target = Endpoint(claim, "", "", f"{ip}/24", "")
            probe = traffic.ping(gateway, target, count=3, deadline=2)
            (reached if probe.ok else refused).append(claim)
            if probe.ok != (tenant == source):
                raise DemoError(
                    f"{source}'s gateway {'reaches' if probe.ok else 'does not reach'} {claim}: {probe.detail}"
                )
        lines.append(f"{source}'s gateway reaches {', '.join(reached)} and not {', '.join(refused)} (ping)")
    a_host = next(c for c, (t, _ip) in sorted(hosts.items()) if t == "tenant-a")
    for claim, (tenant, ip) in sorted(hosts.items()):
        if tenant == "tenant-a":
            continue
        # from tenant-a's gateway, as alice would from her jump host
        argv = ["ip", "netns", "exec", fabric.gateways["tenant-a"].netns, "ssh", "-F", str(keys / "ssh_config")]
        argv += ["-o", "BatchMode=yes", f"{user}@{hosts[a_host][1]}", f"ping -n -q -c 3 -i 0.2 -w 2 {ip}"]
        result = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)
        if result.returncode == 0:
            raise DemoError(f"{a_host} (tenant-a) reaches {claim} (tenant-b) at {ip}: {result.stdout}")
        loss = [line for line in result.stdout.splitlines() if "packet loss" in line]
        if not loss or "100% packet loss" not in loss[0]:
            raise DemoError(f"{a_host} could not ping at all ({result.returncode}): {result.stdout}{result.stderr}")
        lines.append(
            f"{a_host} (tenant-a, over SSH) pings {claim} (tenant-b, {ip} in the same subnet): {loss[0].strip()}"
        )
    return lines


def assert_quarantined(fabric: Fabric, machines, timeout: float = 60) -> None:
    """Each machine's switch port is in the quarantine VLAN within ``timeout`` s, else the demo fails."""
    quarantine = fabric.switch.quarantine_vlan
    for machine in machines:
        try:
            fabric.switch.wait_port_vlan(machine.nics[0].host_ifname, quarantine, timeout)
        except (AssertionError, switch_harness.SwitchError, TimeoutError) as exc:
            raise DemoError(f"{machine.name}'s switch port is not in quarantine (VLAN {quarantine}): {exc}") from exc
