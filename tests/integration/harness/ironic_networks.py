"""Ironic's ``neutron`` network interface on the test bed's switch: the owner's side of it.

TEST FIXTURE ONLY. It joins three things that run already: the session's Ironic (whose ``[neutron]`` section
reaches whatever Neutron the Keystone catalog names, :mod:`harness.ironic`), the Neutron of :mod:`harness.neutron`
and the switch of :mod:`harness.switch`.

- :func:`connect_ironic` gives Ironic's service user the role ``service`` on project ``service`` (Neutron's
  default policy gives ``binding:profile``, the switch port a port is bound to, to that role alone) and creates,
  as the owner (``admin`` on project ``admin``), the provisioning and cleaning networks: VLAN networks of
  :data:`~harness.neutron.PHYSNET` whose segments Neutron picks from the range (a fixed number could be one a
  tenant's network already holds), never shared with a tenant;
- :func:`enroll_switched_node` enrols a ``redfish`` node with ``network_interface=neutron``, the ``ramdisk``
  deploy over ``redfish-virtual-media`` (the cheapest deploy that configures the tenant's network: the ``fake``
  deploy never touches networks), the two networks in its ``driver_info`` (Ironic's per-node override of
  ``[neutron] provisioning_network``/``cleaning_network``: the networks are made after Ironic starts) and one
  Ironic port whose ``local_link_connection`` names its switch port as NGS knows the switch (``switch_id``,
  ``port_id``, ``switch_info``), and takes it to ``available``;
- :func:`live_iso` writes the ISO a ramdisk deployment boots (``instance_info.boot_iso``) into Ironic's HTTP root;
  :data:`LESSEE_VIF_RULES` is the owner's addition to the ``ironic_tenancy`` role's policy that lets a lessee
  attach its own Neutron ports; :func:`release_node` is the owner's clean-up of a node.

Why not a second Ironic for these suites: Neutron's URL exists only once Neutron has started, after the session's
Ironic; but Ironic looks Neutron up in the catalog when a node first needs it, so the one ``[neutron]`` section
written at start (credentials only) serves, and no Ironic is restarted.
"""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

from . import neutron as neutron_harness
from .openstack import DEFAULT_PROPERTIES, IRONIC_SERVICE_USER, _make_available, wait_for_node
from .sushy import Bmc

LIVE_ISO = "switched-live.iso"
# The owner's addition to the ironic_tenancy role's policy (its ``ironic_tenancy_policy_rules``), which keeps VIFs
# to the owner: a lessee that may deploy its node may attach and detach its VIFs (its own Neutron ports: Ironic
# checks with the caller's token that the caller sees the port before it binds it).
LESSEE_VIF_RULES = {
    name: "rule:baremetal_tenancy:node_admin or rule:baremetal_tenancy:node_lessee_deployer"
    for name in ("baremetal:node:vif:attach", "baremetal:node:vif:detach")
}


@dataclasses.dataclass
class OwnerNetworks:
    """The owner's provisioning and cleaning networks (Neutron network objects, as the owner sees them)."""

    provisioning: object
    cleaning: object

    @property
    def vlans(self) -> set[int]:
        return {self.provisioning.provider_segmentation_id, self.cleaning.provider_segmentation_id}

    @property
    def driver_info(self) -> dict:
        """What a node's ``driver_info`` names them with."""
        return {"provisioning_network": self.provisioning.id, "cleaning_network": self.cleaning.id}


def local_link_connection(switch_port: str) -> dict:
    """An Ironic port's ``local_link_connection`` for ``switch_port`` of the test bed's switch."""
    return dict(neutron_harness.local_link_information(switch_port)[0])


def grant_service_role(keystone_admin, username: str = IRONIC_SERVICE_USER) -> None:
    """Role ``service`` on project ``service`` to ``username`` (Ironic's service user): what Neutron's default
    policy asks of whoever writes ``binding:profile``."""
    identity = keystone_admin.identity
    project = identity.find_project(neutron_harness.SERVICE_PROJECT, domain_id="default", ignore_missing=False)
    user = identity.find_user(username, domain_id="default", ignore_missing=False)
    identity.assign_project_role_to_user(project, user, identity.find_role("service", ignore_missing=False))


def connect_ironic(keystone_admin, owner_conn) -> OwnerNetworks:
    """Ironic's user may bind ports; the owner's provisioning and cleaning networks exist (see the module
    documentation). ``keystone_admin``: system-scoped admin; ``owner_conn``: project-scoped admin (Neutron)."""
    grant_service_role(keystone_admin)
    made = {}
    for purpose in ("provisioning", "cleaning"):
        made[purpose] = owner_conn.network.create_network(
            name=f"bmt-{purpose}", provider_network_type="vlan", provider_physical_network=neutron_harness.PHYSNET
        )
    return OwnerNetworks(**made)


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
):
    """Enrol (as ``conn``, the system admin) the node of the module documentation and take it to ``available``."""
    node = conn.baremetal.create_node(
        name=name,
        driver="redfish",
        resource_class=resource_class,
        owner=owner,
        lessee=lessee,
        driver_info={**bmc.driver_info, **networks.driver_info},
        network_interface="neutron",
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
