"""Ironic's ``neutron`` network interface on the test bed's switch: the owner's side of it.

TEST FIXTURE ONLY. It joins three things that run already: the session's Ironic (whose ``[neutron]`` section
reaches whatever Neutron the Keystone catalog names, :mod:`harness.ironic`), the Neutron of :mod:`harness.neutron`
and the switch of :mod:`harness.switch`.

- :func:`run_owner_role` runs the collection's ``baremetal.tenancy.ironic_tenancy`` role as the owner does, through
  ansible-playbook: its Neutron policy (a port's binding stays with the owner and services; requests carrying a
  service's token read the owner's networks) into :attr:`harness.neutron.Neutron.policy_path`, and, with
  ``networks=True``, Ironic's service user gets the role ``service`` on project ``service`` (Neutron's default
  policy gives ``binding:profile``, the switch port a port is bound to, to that role alone) and the provisioning,
  cleaning and quarantine networks are made (:data:`OWNER_NETWORKS`): VLAN networks of
  :data:`~harness.neutron.PHYSNET`, never shared with a tenant; Neutron picks the first two's segments from the
  range (a fixed number could be one a tenant's network already holds), the quarantine network holds the switch's
  quarantine VLAN so no tenant network ever gets it. The harness builds none of these pieces itself: the switch
  suites prove the role;
- :func:`connect_ironic` is that run with the networks, returning them (:class:`OwnerNetworks`);
- :func:`enroll_switched_node` enrols a ``redfish`` node with ``network_interface=neutron``, the ``ramdisk``
  deploy over ``redfish-virtual-media`` (the cheapest deploy that configures the tenant's network: the ``fake``
  deploy never touches networks), the two networks in its ``driver_info`` (Ironic's per-node override of
  ``[neutron] provisioning_network``/``cleaning_network``: the networks are made after Ironic starts) and one
  Ironic port whose ``local_link_connection`` names its switch port as NGS knows the switch (``switch_id``,
  ``port_id``, ``switch_info``), and takes it to ``available``;
- :func:`live_iso` writes the ISO a ramdisk deployment boots (``instance_info.boot_iso``) into Ironic's HTTP root;
  :func:`release_node` is the owner's clean-up of a node. Lessees attach VIFs once the owner runs the role with
  ``ironic_tenancy_lessee_vifs`` (``fixtures_openstack.apply_tenancy_policy(..., lessee_vifs=True)``).

Why not a second Ironic for these suites: Neutron's URL exists only once Neutron has started, after the session's
Ironic; but Ironic looks Neutron up in the catalog when a node first needs it, so the one ``[neutron]`` section
written at start (credentials only) serves, and no Ironic is restarted.
"""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

from . import neutron as neutron_harness
from .ansible import PlaybookRun, localhost_play, run_playbook
from .openstack import DEFAULT_PROPERTIES, IRONIC_SERVICE_USER, _make_available, wait_for_node
from .sushy import Bmc

LIVE_ISO = "switched-live.iso"
ROLE = "baremetal.tenancy.ironic_tenancy"
# purpose -> name of the owner's networks the role makes
OWNER_NETWORKS = {"provisioning": "bmt-provisioning", "cleaning": "bmt-cleaning", "quarantine": "bmt-quarantine"}
# Ironic's [neutron] networks by name, for an Ironic started with them (read when a node first needs them, after the
# owner's role made them); the session's Ironic names them per node instead (OwnerNetworks.driver_info)
IRONIC_NEUTRON_CONFIG = (
    f"\n[neutron]\nprovisioning_network = {OWNER_NETWORKS['provisioning']}\n"
    f"cleaning_network = {OWNER_NETWORKS['cleaning']}\n"
)


@dataclasses.dataclass
class OwnerNetworks:
    """The owner's provisioning, cleaning and quarantine networks (Neutron network objects, as the owner sees
    them), and the role's run that made them."""

    provisioning: object
    cleaning: object
    quarantine: object
    run: PlaybookRun | None = None

    @property
    def vlans(self) -> set[int]:
        """The provisioning and cleaning networks' VLANs."""
        return {self.provisioning.provider_segmentation_id, self.cleaning.provider_segmentation_id}

    @property
    def ids(self) -> set[str]:
        return {self.provisioning.id, self.cleaning.id, self.quarantine.id}

    @property
    def driver_info(self) -> dict:
        """What a node's ``driver_info`` names them with."""
        return {"provisioning_network": self.provisioning.id, "cleaning_network": self.cleaning.id}


def local_link_connection(switch_port: str) -> dict:
    """An Ironic port's ``local_link_connection`` for ``switch_port`` of the test bed's switch."""
    return dict(neutron_harness.local_link_information(switch_port)[0])


def owner_role_vars(neutron_policy: Path, quarantine_vlan: int, networks: bool = True) -> dict:
    """The ``ironic_tenancy`` role's variables for the owner's Neutron side (no Ironic policy: the
    ``ironic_tenancy_policy`` fixture writes that one)."""
    role_vars = {
        "ironic_tenancy_cloud": "admin",
        "ironic_tenancy_network_cloud": "admin-project",
        "ironic_tenancy_manage_policy": False,
        "ironic_tenancy_manage_neutron_policy": True,
        "ironic_tenancy_neutron_policy_file": str(neutron_policy),
    }
    if networks:
        physnet = {"network_type": "vlan", "physical_network": neutron_harness.PHYSNET}
        role_vars["ironic_tenancy_service_users"] = [IRONIC_SERVICE_USER]
        role_vars["ironic_tenancy_networks"] = {
            purpose: {"name": name, **physnet} for purpose, name in OWNER_NETWORKS.items()
        }
        role_vars["ironic_tenancy_networks"]["quarantine"]["segmentation_id"] = quarantine_vlan
    return role_vars


def run_owner_role(
    openstack_env, neutron_policy: Path, quarantine_vlan: int, workdir: Path, *, networks: bool = True, **options
) -> PlaybookRun:
    """Run the role with :func:`owner_role_vars` as the owner (``admin``; ``admin-project`` for Neutron);
    ``options``: :func:`harness.ansible.run_playbook`'s (``check``, ``diff``). Never raises on a failed run."""
    play = localhost_play(
        [], roles=[{"role": ROLE, "vars": owner_role_vars(neutron_policy, quarantine_vlan, networks)}]
    )
    return run_playbook(play, openstack_env.ansible_env("admin"), workdir, **options)


def connect_ironic(openstack_env, networks_env, workdir: Path) -> OwnerNetworks:
    """Ironic's user may bind ports; the owner's networks exist (see the module documentation): the role's run,
    then the networks as the owner (``admin`` on project ``admin``: Neutron has no system scope) sees them."""
    run = run_owner_role(openstack_env, networks_env.neutron.policy_path, networks_env.switch.quarantine_vlan, workdir)
    assert run.ok, run.explain()
    owner = networks_env.admin()
    made = {purpose: owner.network.find_network(name, ignore_missing=False) for purpose, name in OWNER_NETWORKS.items()}
    return OwnerNetworks(**made, run=run)


def live_iso(http_root: Path, workdir: Path) -> str:
    """A small ISO in Ironic's HTTP root (``genisoimage``); returns its file name."""
    source = Path(workdir) / "live-iso"
    source.mkdir(parents=True, exist_ok=True)
    (source / "README.txt").write_text("a live image nothing boots: the ramdisk deploy only needs one\n")
    target = Path(http_root) / LIVE_ISO
    subprocess.run(["genisoimage", "-quiet", "-o", str(target), "-V", "LIVE", str(source)], check=True)
    return LIVE_ISO


def enroll_switched_node(
    conn,
    bmc: Bmc,
    name: str,
    owner: str,
    lessee: str | None,
    switch_port: str,
    networks: OwnerNetworks,
    resource_class: str = "baremetal-switched",
    network_interface: str = "neutron",
):
    """Enrol (as ``conn``, the system admin) the node of the module documentation and take it to ``available``;
    ``network_interface="noop"``: the same node on the flat network (nothing moves its switch port)."""
    node = conn.baremetal.create_node(
        name=name,
        driver="redfish",
        resource_class=resource_class,
        owner=owner,
        lessee=lessee,
        driver_info={**bmc.driver_info, **networks.driver_info},
        network_interface=network_interface,
        deploy_interface="ramdisk",
        boot_interface="redfish-virtual-media",
        properties=dict(DEFAULT_PROPERTIES),
    )
    conn.baremetal.create_port(
        node_id=node.id,
        address=bmc.macs[0],
        pxe_enabled=True,
        local_link_connection=local_link_connection(switch_port),
    )
    return _make_available(conn, node, ())


def release_node(admin, node, timeout: float = 300) -> None:
    """The owner (``admin``, system-scoped) takes ``node`` back, undeployed and without VIFs, and deletes it."""
    try:
        current = admin.baremetal.get_node(node.id)
        if current.provision_state not in ("available", "manageable", "enroll"):
            admin.baremetal.set_node_provision_state(node, "deleted")
            wait_for_node(admin, node.id, timeout=timeout, provision_state="available")
        for vif in admin.baremetal.list_node_vifs(node):
            admin.baremetal.detach_vif_from_node(node, vif)
    finally:
        admin.baremetal.set_node_maintenance(node, "the switched-node suite is done")
        admin.baremetal.delete_node(node)
