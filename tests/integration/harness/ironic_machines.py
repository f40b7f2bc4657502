"""Keystone + Ironic whose nodes are test-bed machines, with FakeIPA as their agent.

TEST FIXTURE ONLY: the tenant-facing suites of the Ironic backend on hardware a
playbook can log into (``tests/integration/machines/test_ironic_machines.py``, the
Ironic half of ``make demo``). :func:`start_ironic_machines` starts:

- a :class:`harness.machines.TestBed` (bridge, one machine per system);
- Keystone, Ironic (on PostgreSQL) and sushy-tools (:func:`harness.openstack.start_openstack`),
  the systems addressed on the test bed and announcing their power changes
  to FakeIPA, and Ironic configured for the agent:
  ``[conductor] automated_clean`` (on by default: cleaning runs when a node is
  provided and on every undeployment), ``[agent] require_tls = false``,
  ``[api] ramdisk_heartbeat_timeout = 10``, ``[agent]
  post_deploy_get_power_state_retries = 1`` (FakeIPA does not power off), the ``direct`` deploy interface,
  and ``[deploy] erase_devices_priority = 0`` (only
  ``erase_devices_metadata`` runs, as Metal3's ironic-image does);
- FakeIPA (:mod:`harness.fake_ipa`) on the test bed's bus: its
  ``write_image`` deploy step hands the deployment's config drive to the
  machine and its erasing clean step wipes the machine's disk (or fails with
  the machine's :attr:`Machine.wipe_failure`).

Nodes (:meth:`IronicMachines.enroll`) use the ``redfish`` hardware type,
``redfish-virtual-media`` boot (the agent ramdisk is a placeholder ISO FakeIPA
stands in for) and the ``direct`` deploy: a tenant deploys the raw disk image
:meth:`IronicMachines.image` serves from Ironic's HTTP root, and the machine
boots from its disk with the config drive the agent handed it. The owner's
record of each node's address (``extra.addresses``, the only place the
``claimed_hosts`` inventory reads one from) is the machine's test-bed address.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import hashlib
import os
import threading
import time
from pathlib import Path

from . import procs
from .fake_ipa import FakeIpa, start_fake_ipa
from .ironic_networks import local_link_connection
from .machines import Machine, TestBed
from .openstack import DEFAULT_PROPERTIES, DEFAULT_TENANTS, OpenStackEnv, start_openstack, wait_for_node
from .sushy import default_systems

DEPLOY_ISO = "ipa.iso"  # the agent ramdisk's ISO: a placeholder, FakeIPA plays the agent it would start
DISK_IMAGE = "disk.img"
DISK_IMAGE_SIZE = 1 << 20


def ironic_agent_config(automated_clean: bool) -> str:
    """Ironic options for the agent's flows (read after the harness's own ``ironic.conf``)."""
    return "\n".join(
        [
            "[DEFAULT]",
            "enabled_deploy_interfaces = direct,ramdisk,fake",
            "default_deploy_interface = direct",
            "",
            "[conductor]",
            f"automated_clean = {str(automated_clean).lower()}",
            "",
            "[agent]",
            "require_tls = false",
            # FakeIPA never carries out the agent's soft power-off: ask once, then Ironic powers off itself.
            "post_deploy_get_power_state_retries = 1",
            "post_deploy_get_power_state_retry_interval = 1",
            "",
            "[api]",
            "ramdisk_heartbeat_timeout = 10",
            "",
            "[deploy]",
            "erase_devices_priority = 0",
            "",
        ]
    )


@dataclasses.dataclass
class IronicMachines:
    env: OpenStackEnv
    bed: TestBed
    fake_ipa: FakeIpa
    machines: list[Machine]
    startup_seconds: float

    @property
    def services(self) -> list[procs.Service]:
        return [*self.env.services, self.fake_ipa.service]

    def image(self) -> dict:
        """The tenant's ``image`` (``host_claim``): a raw whole-disk image with its sha256, served by Ironic."""
        path = self.env.ironic_server.http_root / DISK_IMAGE
        if not path.exists():
            tmp = path.with_name(f".{DISK_IMAGE}.{os.getpid()}.{threading.get_ident()}")  # claims in threads
            tmp.write_bytes(b"test-bed disk image\n".ljust(DISK_IMAGE_SIZE, b"\0"))
            tmp.replace(path)
        checksum = hashlib.sha256(path.read_bytes()).hexdigest()
        return {
            "url": f"{self.env.ironic_server.http_url}/{DISK_IMAGE}",
            "checksum": checksum,
            "checksum_type": "sha256",
            "format": "raw",
        }

    def enroll(
        self,
        index: int,
        name: str,
        *,
        lessee: str | None = None,
        resource_class: str = "baremetal",
        automated_clean: bool = True,
        network_interface: str = "noop",
        timeout: float = 600,
    ):
        """Enrol machine ``index`` as node ``name`` (as the admin; owner: the infra project), record its
        address as the owner does, and take it to ``available``; then set its ``automated_clean`` (the
        owner's choice: ``False`` never cleans it). The new machine's disk is blank: the node is not
        cleaned on the way (cleaning boots the agent, about 2 minutes on a loaded machine).
        ``network_interface="neutron"`` (a test bed on a switch): each port's ``local_link_connection`` names
        the machine's switch port."""
        conn = self.env.admin_conn
        machine = self.machines[index]
        driver_info = dict(machine.bmc.driver_info, deploy_iso=f"{self.env.ironic_server.http_url}/{DEPLOY_ISO}")
        node = conn.baremetal.create_node(
            name=name,
            driver="redfish",
            resource_class=resource_class,
            owner=self.env.infra_project_id,
            lessee=lessee,
            driver_info=driver_info,
            boot_interface="redfish-virtual-media",
            deploy_interface="direct",
            network_interface=network_interface,
            properties=dict(DEFAULT_PROPERTIES),
            extra={"addresses": [{"type": "InternalIP", "address": machine.ip}]},
            automated_clean=False,
        )
        links = {nic.mac.lower(): nic.host_ifname for nic in machine.nics}
        for mac in machine.bmc.macs:
            link = {}
            if network_interface == "neutron":
                link = {"local_link_connection": local_link_connection(links[mac.lower()]), "pxe_enabled": True}
            conn.baremetal.create_port(node_id=node.id, address=mac, **link)
        _make_available_within(conn, node, timeout)
        return conn.baremetal.update_node(node, automated_clean=automated_clean)

    def stop(self) -> None:
        self.bed.stop()
        self.fake_ipa.stop()
        self.env.stop()


def _make_available_within(conn, node, timeout: float):
    """:func:`harness.openstack._make_available` with ``timeout`` for each state (several nodes at once on
    loaded cores: verifying alone took over 60 s at load 28)."""
    conn.baremetal.set_node_power_state(node, "power off")
    wait_for_node(conn, node.id, timeout=timeout, power_state="power off")
    conn.baremetal.set_node_provision_state(node, "manage")
    wait_for_node(conn, node.id, timeout=timeout, provision_state="manageable")
    conn.baremetal.set_node_provision_state(node, "provide")
    return wait_for_node(conn, node.id, timeout=timeout, provision_state="available")


def start_ironic_machines(
    workdir: str | Path,
    count: int = 4,
    tenants=DEFAULT_TENANTS,
    automated_clean: bool = True,
    database: str = "postgresql",
    first_mac: int = 0x40,
    switch=None,
    ironic_config: str = "",
) -> IronicMachines:
    """Start the stack of the module documentation with ``count`` machines (none enrolled yet).
    ``first_mac``: the machines' MACs are ``52:54:04:00:00:<first_mac + i>`` (Ironic refuses a MAC twice:
    keep them apart from other stacks of the same session). ``switch`` (a :class:`harness.switch.Switch`): the
    machines' NICs are its ports instead of the bridge's; ``ironic_config``: Ironic options after the agent's.
    Everything started is stopped on failure."""
    started = time.monotonic()
    workdir = Path(workdir)
    bed = TestBed(workdir / "bed", switch=switch)
    env = fake_ipa = None
    try:
        systems = default_systems(count)
        for number, system in enumerate(systems):
            system["name"] = f"machine-{number}"
            system["nics"] = [{"mac": f"52:54:04:00:00:{first_mac + number:02x}"}]
            system["external_notifier"] = True
        bed.address_systems(systems)
        ipa_port = procs.free_port()
        env = start_openstack(
            workdir / "openstack",
            tenants=tenants,
            sushy_systems=systems,
            database=database,
            ironic_config=ironic_agent_config(automated_clean) + ironic_config,
            sushy_notification_url=f"http://{procs.LOOPBACK}:{ipa_port}",
        )
        (env.ironic_server.http_root / DEPLOY_ISO).write_bytes(b"\0" * 4096)
        sushy = env.sushy_server
        fake_ipa = start_fake_ipa(
            workdir / "fake-ipa",
            ipa_port,
            env.ironic.url,
            sushy.base_url,
            sushy.username,
            sushy.password,
            machine_bus=bed.bus,
        )
        machines = bed.add_machines(env.bmcs)
        return IronicMachines(env, bed, fake_ipa, machines, time.monotonic() - started)
    except BaseException:
        bed.stop()
        if fake_ipa is not None:
            fake_ipa.stop()
        if env is not None:
            env.stop()
        raise


def enroll_all(stack: IronicMachines, nodes: list[dict], timeout: float = 600) -> dict:
    """Enrol several machines at once: ``nodes`` are :meth:`IronicMachines.enroll` keyword arguments
    (with ``index`` and ``name``); returns name -> node."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(nodes) or 1) as pool:
        futures = {spec["name"]: pool.submit(stack.enroll, timeout=timeout, **spec) for spec in nodes}
        return {name: future.result() for name, future in futures.items()}
