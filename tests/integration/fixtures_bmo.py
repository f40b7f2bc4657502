"""pytest plugin: Metal3's real baremetal-operator beside the session's apiserver.

Loaded from ``tests/integration/conftest.py`` (``pytest_plugins``).

- ``metal3_operator`` (session): :func:`harness.baremetal_operator.start_metal3`
  on ``kube_env``: BMO's own CRDs (without its HostClaim dialect), Ironic with
  HTTP basic auth, sushy-tools BMCs, BMO and its validating webhooks.

Suites that need it carry the ``real_bmo`` marker. ``make integration`` runs
them in a second pytest session, with an apiserver of their own, after the
suites that still use the stand-in ``harness/bmo.py``; ``make test-bmo`` runs
only them (both after ``make bmo``).
"""

from __future__ import annotations

import pytest
from harness import baremetal_operator, sushy

_STACKS: list[baremetal_operator.Metal3] = []


def pytest_configure(config):
    config.addinivalue_line("markers", "real_bmo: needs the real baremetal-operator (make bmo; make test-bmo)")


@pytest.fixture(scope="session")
def metal3_operator(kube_env, tmp_path_factory):
    try:
        baremetal_operator.require_bmo()
    except baremetal_operator.BmoMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    stack = baremetal_operator.start_metal3(
        kube_env, tmp_path_factory.mktemp("metal3"), systems=sushy.default_systems(6)
    )
    _STACKS.append(stack)
    try:
        yield stack
    finally:
        stack.stop()


def pytest_terminal_summary(terminalreporter):
    if not _STACKS:
        return
    terminalreporter.section("metal3 (real baremetal-operator, loopback)")
    for stack in _STACKS:
        for service in stack.services:
            terminalreporter.write_line(service.summary())
        terminalreporter.write_line(
            "start: " + ", ".join(f"{name} {seconds:.1f}s" for name, seconds in stack.timings.items())
        )
