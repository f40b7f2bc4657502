"""pytest plugin: real Flux controllers and a Git server for the GitOps suites (marker ``gitops``).

Loaded from ``tests/integration/conftest.py`` (``pytest_plugins``).

Tests marked ``gitops`` run only when the ``-m`` expression names ``gitops``
(``make test-gitops``): in any other selection they are deselected (``selection.py``),
so the default integration sessions neither build nor start Flux. They need
``make flux`` (scripts/build-flux.sh).

Fixtures (session scope):

- ``git_server``: a started :class:`harness.git_server.GitServer`.
- ``admin`` (module scope): the cluster administrator's API client on
  ``kube_env``, as every GitOps suite uses it.
- ``flux_env``: a started :class:`harness.flux.FluxEnv` on ``kube_env``:
  source-, kustomize- and helm-controller installed by the ``flux_install``
  role (multi-tenancy lockdown; tenants' sources only from ``git_server``) and
  run as its Deployments say (helm-controller for the tenants' HelmReleases of
  ``test_gitops_helm.py``).
"""

from __future__ import annotations

import pytest
from harness import flux
from harness.git_server import GitServer

MARKER = "gitops"
SESSION_CONTROLLERS = ("source-controller", "kustomize-controller", "helm-controller")
_ENVS: list[flux.FluxEnv] = []
_GIT: list[GitServer] = []


def pytest_configure(config):
    config.addinivalue_line(
        "markers", f"{MARKER}: real Flux controllers and a Git server (make flux; make test-gitops)"
    )


@pytest.fixture(scope="session")
def git_server(tmp_path_factory):
    server = GitServer(tmp_path_factory.mktemp("git"))
    _GIT.append(server)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def admin(kube_env):
    with kube_env.api("admin") as api:
        yield api


@pytest.fixture(scope="session")
def flux_env(kube_env, git_server, tmp_path_factory):
    try:
        directory = flux.require_flux(controllers=SESSION_CONTROLLERS)
    except flux.FluxMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    # Installed by the flux_install role; tenants' sources may point at the session's Git server only.
    env = flux.FluxEnv(
        kube_env,
        tmp_path_factory.mktemp("flux"),
        directory,
        SESSION_CONTROLLERS,
        allowed_source_urls=[git_server.base_url],
    )
    _ENVS.append(env)
    env.start()
    try:
        yield env
    finally:
        env.stop()


def pytest_terminal_summary(terminalreporter):
    """One line per Flux controller and Git server started in this session."""
    if not _ENVS and not _GIT:
        return
    terminalreporter.section("flux and git (real, loopback)")
    for server in _GIT:
        if server.service:
            terminalreporter.write_line(server.service.summary())
    for env in _ENVS:
        for controller in env.history:
            terminalreporter.write_line(f"{controller.service.summary()}, ready in {controller.seconds:.1f}s")
