"""pytest plugin: the OpenStack services (Keystone, Ironic, sushy-tools).

Load it from ``tests/integration/conftest.py`` with
``pytest_plugins = ["fixtures_openstack"]`` (``tests/integration`` must be on
``sys.path``).

Fixtures
--------
``openstack_env`` (session)
    A :class:`harness.openstack.OpenStackEnv` (Ironic on PostgreSQL): ``.keystone`` / ``.ironic`` /
    ``.sushy`` (Service records: name, version, url, port, pid),
    ``.admin_conn`` (system-scoped admin openstacksdk connection), ``.infra``
    (the pool owner project), ``.tenants`` (``tenant-a``, ``tenant-b`` ->
    Project with ``.project_id``, ``.member`` / ``.manager`` auth dicts and
    ``.conn(role)``), ``.bmcs`` (sushy-tools BMCs), ``.policy_path`` (Ironic's
    policy file), ``.clouds_yaml`` and ``.ansible_env(cloud)``.
``openstack_admin`` (session)
    ``openstack_env.admin_conn``.
``enroll_node`` (session)
    ``enroll_node(name, resource_class="baremetal", lessee=None, traits=(),
    owner=None, bmc=None)``: enrols a node as admin and takes it to
    ``available``; owner defaults to the infra project; with ``bmc`` (a Bmc)
    a ``redfish`` node, else ``fake-hardware``.
``ironic_tenancy_policy`` (session)
    Runs the ``baremetal.tenancy.ironic_tenancy`` role (policy only) through
    ansible-playbook against ``openstack_env``'s Ironic policy file, so that
    lessees with the ``member`` role may deploy; returns the policy's path.
    Request it in tests that need it: it only widens what lessees may do.
``openstack_pg_env`` (session, started on first use)
    A second, separate environment whose Ironic runs on PostgreSQL (for
    concurrency: sqlite locks under parallel lifecycles), with ten tenant
    projects ``t01`` ... ``t10``, no BMCs, and the same policy role applied.

At the end of the session the services started are listed in the terminal
summary, with versions, loopback ports and start-up times.
"""

from __future__ import annotations

import dataclasses

import pytest
from harness import openstack as openstack_harness
from harness import procs
from harness.ansible import localhost_play, run_playbook

PG_TENANTS = tuple("t%02d" % i for i in range(1, 11))

_TIMINGS: list[str] = []


@pytest.fixture(scope="session")
def openstack_env(tmp_path_factory):
    # PostgreSQL rather than sqlite: several suites run lifecycles side by side
    # (two tenants claiming at once, enrolment with several workers), and
    # sqlite answers "database is locked" to that even in WAL mode.
    env = openstack_harness.start_openstack(tmp_path_factory.mktemp("openstack"), database="postgresql")
    for service in env.services:
        procs.record_service(service)
    _TIMINGS.append(f"openstack (keystone + ironic + sushy-tools) up in {env.startup_seconds:.1f}s")
    try:
        yield env
    finally:
        env.stop()


@pytest.fixture(scope="session")
def openstack_admin(openstack_env):
    return openstack_env.admin_conn


@pytest.fixture(scope="session")
def enroll_node(openstack_env):
    def enroll(name, resource_class="baremetal", lessee=None, traits=(), owner=None, bmc=None, properties=None):
        conn = openstack_env.admin_conn
        owner = owner or openstack_env.infra_project_id
        if bmc is not None:
            return openstack_harness.enroll_redfish_node(
                conn, bmc, name, resource_class, owner, lessee, traits, properties
            )
        return openstack_harness.enroll_fake_node(conn, name, resource_class, owner, lessee, traits, properties)

    return enroll


def apply_tenancy_policy(env, workdir, rules: dict | None = None, lessee_vifs: bool = False):
    """Write Ironic's owner/lessee policy with the ironic_tenancy role (policy only); ``rules``: the role's
    ``ironic_tenancy_policy_rules`` (rules the owner adds or replaces); ``lessee_vifs``: its
    ``ironic_tenancy_lessee_vifs`` (lessees that may deploy attach and detach VIFs)."""
    play = localhost_play(
        [],
        roles=[
            {
                "role": "baremetal.tenancy.ironic_tenancy",
                "vars": {
                    "ironic_tenancy_cloud": "admin",
                    "ironic_tenancy_policy_file": str(env.policy_path),
                    "ironic_tenancy_policy_rules": dict(rules or {}),
                    "ironic_tenancy_lessee_vifs": lessee_vifs,
                },
            }
        ],
    )
    run = run_playbook(play, env.ansible_env("admin"), workdir)
    assert run.ok, run.explain()
    env.settle_policy()
    return env.policy_path


@pytest.fixture(scope="session")
def ironic_tenancy_policy(openstack_env, tmp_path_factory):
    return apply_tenancy_policy(openstack_env, tmp_path_factory.mktemp("ironic-policy"))


@pytest.fixture(scope="session")
def openstack_pg_env(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("openstack-pg")
    env = openstack_harness.start_openstack(workdir, tenants=PG_TENANTS, sushy_systems=[], database="postgresql")
    for service in env.services:
        procs.record_service(dataclasses.replace(service, name=service.name + " (postgresql env)"))
    _TIMINGS.append(f"openstack on postgresql ({len(PG_TENANTS)} tenants) up in {env.startup_seconds:.1f}s")
    try:
        apply_tenancy_policy(env, workdir / "policy")
        yield env
    finally:
        env.stop()


def pytest_terminal_summary(terminalreporter):
    """Print the services the harness started (``-s`` not needed)."""
    services = procs.recorded_services()
    if not services:
        return
    terminalreporter.section("openstack services (real, loopback)")
    for service in services:
        terminalreporter.write_line(service.summary())
    for line in _TIMINGS:
        terminalreporter.write_line(line)
