"""pytest plugin: a real Kubernetes control plane for the integration suites.

Loaded from ``tests/integration/conftest.py`` (``pytest_plugins``).

Fixtures (session scope):

- ``kube_env``: a started :class:`harness.kube.KubeEnv` (etcd,
  kube-apiserver with RBAC and static tokens, kube-controller-manager), with
  the infrastructure namespace ``metal3`` and the tenant namespaces
  ``tenant-a``/``tenant-b`` created and the first-slice tenant RBAC granted.
  Use ``kube_env.kubeconfig(identity)``, ``.api(identity)``,
  ``.ansible_env(identity)``; identities are ``admin``, ``binder``,
  ``tenant-a``, ``tenant-b``, ``tenant-c`` (no namespace).
- ``kube_minimal_bmh``: installs the stand-in BareMetalHost CRD and seeds one
  host and its BMC Secret in ``metal3``; returns a
  :class:`harness.kube.SeededHost`.

At the end of the run one line per started service is printed in the
terminal summary (name, version, URL, port, pid, seconds to ready).
"""

from __future__ import annotations

import time

import pytest
from harness import kube

# Every KubeEnv started in this session, for the terminal summary.
_ENVS: list[kube.KubeEnv] = []


@pytest.fixture(scope="session")
def kube_env(tmp_path_factory):
    """The session's Kubernetes control plane, set up for the tenancy tests."""
    missing = None
    try:
        bin_dir = kube.require_binaries()
    except kube.KubeBinariesMissing as exc:
        missing = str(exc)
    if missing:
        pytest.fail(missing, pytrace=False)
    env = kube.KubeEnv(tmp_path_factory.mktemp("kube"), bin_dir)
    _ENVS.append(env)
    t0 = time.monotonic()
    env.start()
    try:
        with env.api("admin") as admin:
            kube.setup_namespaces(admin)
            kube.grant_first_slice_tenant_rbac(admin)
        env.timings["setup total"] = time.monotonic() - t0
        yield env
    finally:
        env.stop()


@pytest.fixture(scope="session")
def kube_minimal_bmh(kube_env):
    """The minimal BareMetalHost CRD plus one host and its BMC Secret."""
    with kube_env.api("admin") as admin:
        kube.install_minimal_bmh_crd(admin)
        return kube.seed_minimal_bmh(admin)


def pytest_terminal_summary(terminalreporter):
    """One line per Kubernetes service started in this session."""
    if not _ENVS:
        return
    terminalreporter.section("kubernetes services (real, loopback)")
    for env in _ENVS:
        for started in env.history:
            terminalreporter.write_line(f"{started.service.summary()}, ready in {started.seconds:.1f}s")
        if "setup total" in env.timings:
            terminalreporter.write_line(
                f"kubernetes control plane + tenancy setup: {env.timings['setup total']:.1f}s (workdir {env.workdir})"
            )
