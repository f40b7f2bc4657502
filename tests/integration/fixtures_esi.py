"""pytest plugin: ESI-Leap beside the session's Keystone + Ironic (marker ``esi``, ``make test-esi``).

Loaded from ``tests/integration/conftest.py`` (``pytest_plugins``). Needs ``make esi-leap``
(scripts/build-esi-leap.sh: ESI-Leap's own venv). Selected only by a marker expression that names
it (``selection.py``): ``make integration`` runs it in a session of its own, ``esi``.

Fixtures (session scope, started on first use):

- ``esi_leap_env``: a started :class:`harness.esi_leap.EsiLeap` (API + manager, a 1-s manager tick) on top of the
  shared ``openstack_env`` (its Keystone, Ironic and PostgreSQL: no second stack), with ``esi_leap_owner`` for the
  infra project's users and ``esi_leap_lessee`` for the tenants' users. Stopped at the end of the session, after a
  check that the manager left no database connection in a transaction (an error of the last test's teardown
  otherwise: a manager that keeps them empties its pool and stops fulfilling leases, ``harness/esi_leap.py``).
- ``esi_api``: ``esi_api(project, role="member")``, a keystoneauth adapter on ESI-Leap's API as that project's
  user (its own credentials, a token issued after the ESI-Leap roles were given), found through the catalog
  (service type ``lease``); requests return the response whatever its status (``raise_exc=False``).
- ``infra``, ``tenant_a``, ``tenant_b``: the shared environment's owner project (the nodes' owner, which offers and
  leases them) and its two tenants (:class:`harness.openstack.Project`), as the ESI-Leap suites name them.

A failing test that uses ``esi_leap_env`` gets a section "ESI-Leap manager" in its report: whether the manager runs,
the last pass of each of its jobs, its connections left in a transaction and the end of its log without the lines
every pass writes (:meth:`harness.esi_leap.EsiLeap.manager_report`).
"""

from __future__ import annotations

import pytest
from harness import procs
from harness.esi_leap import SERVICE_TYPE, start_esi_leap
from harness.keystone import REGION

MARKER = "esi"
_STARTED: list[str] = []
_RUNNING: list = []  # the session's EsiLeap while it runs, for the failure report


def pytest_configure(config):
    config.addinivalue_line(
        "markers", f"{MARKER}: ESI-Leap (offers, leases, its manager) beside Keystone + Ironic (make test-esi)"
    )


@pytest.fixture(scope="session")
def esi_leap_env(openstack_env, tmp_path_factory):
    server = start_esi_leap(openstack_env, tmp_path_factory.mktemp("esi-leap"))
    procs.record_service(server.service)
    _STARTED.append(
        f"esi-leap (api + manager pid {server.manager_proc.pid}, tick {server.tick:g} s)"
        f" up in {server.startup_seconds:.1f}s"
    )
    _RUNNING.append(server)
    stuck = []
    try:
        yield server
        stuck = server.manager_stuck_transactions()
    finally:
        _RUNNING.clear()
        server.stop()
    assert not stuck, "ESI-Leap's manager left %d database connection(s) in a transaction:\n%s" % (
        len(stuck),
        "\n".join("  backend %d, %.0f s: %s" % row for row in stuck),
    )


@pytest.fixture(scope="session")
def esi_api(esi_leap_env):
    from keystoneauth1 import adapter, session
    from keystoneauth1.identity import v3

    adapters = {}

    def api(project, role="member"):
        key = (project.name, role)
        if key not in adapters:
            sess = session.Session(auth=v3.Password(**project.credentials[role]))
            adapters[key] = adapter.Adapter(
                sess, service_type=SERVICE_TYPE, interface="public", region_name=REGION, raise_exc=False
            )
        return adapters[key]

    return api


@pytest.fixture(scope="session")
def infra(openstack_env):
    return openstack_env.infra


@pytest.fixture(scope="session")
def tenant_a(openstack_env):
    return openstack_env.tenants["tenant-a"]


@pytest.fixture(scope="session")
def tenant_b(openstack_env):
    return openstack_env.tenants["tenant-b"]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and _RUNNING and "esi_leap_env" in getattr(item, "fixturenames", ()):
        report.sections.append(("ESI-Leap manager", _RUNNING[0].manager_report()))


def pytest_terminal_summary(terminalreporter):
    for line in _STARTED:
        terminalreporter.write_line(line)
