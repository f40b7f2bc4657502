"""pytest plugin: the test bed's network, a real switch configured by Neutron (``harness/switch.py``, ``harness/neutron.py``).

Marker
------
``networks``: the test starts the switch and Neutron (root, Debian's ``openvswitch-switch``, ``make neutron``).
Selected only by a marker expression that names it (``make test-networks``): in any other selection these tests
are deselected (``selection.py``), so the default integration sessions neither need Neutron's venv nor start the switch.

Fixtures (session scope)
------------------------
``switch``
    A started :class:`harness.switch.Switch`: Open vSwitch in userspace in a namespace of its own, SSH for NGS on a
    loopback port. At its end, a teardown error if anything of it is left on the host.
``networks_env``
    A :class:`NetworksEnv`: Neutron added to the shared ``openstack_env`` (its Keystone and its PostgreSQL: no
    second Keystone), configuring ``switch`` through networking-generic-switch, with the owner's Neutron policy
    written by the ``ironic_tenancy`` role (:func:`harness.ironic_networks.run_owner_role`, no networks).
``ironic_on_switch``
    The session's Ironic joined to ``networks_env`` by the ``ironic_tenancy`` role (:mod:`harness.ironic_networks`):
    its service user may bind ports, and the owner's provisioning, cleaning and quarantine networks exist on VLANs
    of their own. Returns their :class:`~harness.ironic_networks.OwnerNetworks` (with the role's run).
"""

from __future__ import annotations

import dataclasses
import subprocess
import time

import pytest
from harness import ironic_networks, procs
from harness import neutron as neutron_harness
from harness import openstack as openstack_harness
from harness import switch as switch_harness

MARKER = "networks"
_LINES: list[str] = []


def note(line: str) -> None:
    """A line for the terminal summary's networks section (a measured time)."""
    _LINES.append(line)


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        f"{MARKER}: a real switch (Open vSwitch in userspace) configured by Neutron + networking-generic-switch"
        " (root; make neutron; make test-networks)",
    )


@dataclasses.dataclass
class NetworksEnv:
    """Neutron on the shared OpenStack environment, and the switch it configures."""

    openstack: openstack_harness.OpenStackEnv
    neutron: neutron_harness.Neutron
    switch: switch_harness.Switch

    def admin(self):
        """A connection as the owner: the ``admin`` user scoped to project ``admin`` (Neutron has no system scope)."""
        return openstack_harness.connect(self.openstack.keystone_server.admin_auth("project"))

    def tenant(self, name: str, role: str = "member"):
        """A new connection as tenant ``name``'s user with ``role`` (its catalog has the network endpoint)."""
        return openstack_harness.connect(self.openstack.tenants[name].credentials[role])

    @staticmethod
    def bind(conn, port, switch_port: str, host: str):
        """Bind Neutron port ``port`` to ``switch_port`` (as Ironic's ``neutron`` network interface does)."""
        return conn.network.update_port(
            port,
            binding_host_id=host,
            binding_vnic_type="baremetal",
            binding_profile={"local_link_information": neutron_harness.local_link_information(switch_port)},
        )

    @staticmethod
    def unbind(conn, port):
        return conn.network.update_port(port, binding_host_id="", binding_profile={})


def _ovs_version() -> str:
    result = subprocess.run(["ovs-vsctl", "--version"], capture_output=True, text=True, check=False)
    return result.stdout.split()[3] if result.returncode == 0 else "?"


@pytest.fixture(scope="session")
def switch(tmp_path_factory):
    try:
        switch_harness.require_ovs()
    except switch_harness.SwitchError as exc:
        pytest.fail(str(exc), pytrace=False)
    sw = switch_harness.Switch(tmp_path_factory.mktemp("switch"))
    try:
        sw.start()
        vswitchd = {p.name: p.pid for p in sw.procs}["ovs-vswitchd"]
        url = f"ssh://root@127.0.0.1:{sw.ssh_port}"
        procs.record_service(
            procs.Service(f"open vswitch (userspace, netns {sw.netns})", _ovs_version(), url, sw.ssh_port, vswitchd)
        )
        _LINES.append(f"switch (ovsdb-server + ovs-vswitchd + ssh) up in {sw.seconds:.1f}s")
        yield sw
    finally:
        sw.stop()
    left = sw.leftovers()
    assert not left, f"switch {sw.netns}: left on the host after stop: {left}"


@pytest.fixture(scope="session")
def networks_env(openstack_env, switch, tmp_path_factory):
    try:
        neutron_harness.require_neutron()
    except neutron_harness.NeutronMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    if openstack_env.postgres_server is None:
        pytest.fail("networks_env needs openstack_env on PostgreSQL", pytrace=False)
    server = neutron_harness.start_neutron(
        tmp_path_factory.mktemp("neutron"),
        openstack_env.keystone_server,
        openstack_env.admin_conn,
        openstack_env.postgres_server,
        switch,
    )
    procs.record_service(server.service)
    _LINES.append(f"neutron (database from the seed, keystone objects, gunicorn) up in {server.seconds:.1f}s")
    try:
        started = time.monotonic()
        run = ironic_networks.run_owner_role(
            openstack_env,
            server.policy_path,
            switch.quarantine_vlan,
            tmp_path_factory.mktemp("neutron-policy"),
            networks=False,
        )
        if not run.ok:
            pytest.fail(f"the ironic_tenancy role's Neutron policy: {run.explain()}", pytrace=False)
        env = NetworksEnv(openstack_env, server, switch)
        list(env.admin().network.networks(limit=1))  # Neutron re-reads the changed policy file on this request
        _LINES.append(f"the owner's Neutron policy (ironic_tenancy role) in {time.monotonic() - started:.1f}s")
        yield env
    finally:
        server.stop()


@pytest.fixture(scope="session")
def ironic_on_switch(networks_env, tmp_path_factory):
    started = time.monotonic()
    owner = ironic_networks.connect_ironic(networks_env.openstack, networks_env, tmp_path_factory.mktemp("owner-role"))
    _LINES.append(
        f"the owner's Ironic service role and networks (ironic_tenancy role) in {time.monotonic() - started:.1f}s"
    )
    return owner


def pytest_terminal_summary(terminalreporter):
    if _LINES:
        terminalreporter.section("networks (real switch, loopback)")
        for line in _LINES:
            terminalreporter.write_line(line)
