"""pytest plugin: Metal3's real baremetal-operator beside the session's apiserver.

Loaded from ``tests/integration/conftest.py`` (``pytest_plugins``).

- ``metal3_operator`` (session): :func:`harness.baremetal_operator.start_metal3`
  on ``kube_env``: BMO's own CRDs (without its HostClaim dialect), Ironic with
  HTTP basic auth on PostgreSQL, sushy-tools BMCs, BMO and its validating
  webhooks. One stack per session. BMO watches :data:`BMO_NAMESPACES` only
  (``--namespace a,b,...``).
- ``metal3_bmo_env`` (session): the ``metal3_env`` setup (hostclaim_setup
  role, RBAC) as a :class:`fixtures_metal3.Metal3Env` whose ``create_host``
  makes real hosts on the stack's pool of BMCs (:class:`BmcPool`) and whose
  ``wait_host``/``wait_hosts`` wait for BMO's states.

Suites that need it carry the ``real_bmo`` marker: every Metal3 suite but those
that test the binder alone on hosts whose status they write themselves
(``fixtures_metal3``'s docstring lists them) and test_host_share's migration of
the field BMO's CRD lacks. ``make integration`` runs them in a session of their
own (``real_bmo``, scripts/integration-sessions.sh), with an apiserver of their
own, beside the other sessions; ``make test-bmo`` runs only them.
"""

from __future__ import annotations

import dataclasses
import time

import pytest
from harness import baremetal_operator, kube, sushy
from harness.kube import INFRA_NAMESPACE
from kubernetes import client

_STACKS: list[baremetal_operator.Metal3] = []

# The namespaces of the hosts of suites on the real operator (BMO's watch list).
BMO_NAMESPACES = (
    INFRA_NAMESPACE,
    "story-infra",
    "proposal-infra",
    "hann-infra",
    "pol-infra",
    "sec-infra",
    "secm-infra",
    "mod-infra",  # test_metal3_modules
    "hs-infra",  # test_host_share
    "cc-infra",  # test_metal3_concurrency
    "inv-infra",  # test_inventory_metal3
    "t6-infra",  # test_tenant_onboarding
    "t6-infra-off",  # test_tenant_offboarding
    "bmt-rf-infra",  # test_redfish_claims
    "gh-infra",  # test_gitops_hostclaims
)
# test_metal3_operator's own systems (the first AGENT_SYSTEMS announce power changes to FakeIPA).
AGENT_SYSTEMS = 6
# sushy-tools systems handed out to Metal3Env.create_host (more are cheap; BMCs go back on delete_hosts).
POOL_SYSTEMS = 40


def pytest_configure(config):
    config.addinivalue_line("markers", "real_bmo: needs the real baremetal-operator (make bmo; make test-bmo)")


@pytest.fixture(scope="session")
def metal3_operator(kube_env, tmp_path_factory):
    try:
        baremetal_operator.require_bmo()
    except baremetal_operator.BmoMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    pool_systems = sushy.default_systems(POOL_SYSTEMS)
    for number, system in enumerate(pool_systems):
        system["name"] = f"pool-{number}"
        system["nics"] = [{"mac": f"52:54:01:00:00:{number:02x}", "ip": f"192.0.2.{100 + number}"}]
    accounts = baremetal_operator.pool_accounts(POOL_SYSTEMS)
    stack = baremetal_operator.start_metal3(
        kube_env,
        tmp_path_factory.mktemp("metal3"),
        systems=sushy.default_systems(AGENT_SYSTEMS) + pool_systems,
        namespace=",".join(BMO_NAMESPACES),
        accounts=accounts,
        notify=AGENT_SYSTEMS,
        postgresql=True,
    )
    stack.pool = baremetal_operator.BmcPool(stack, AGENT_SYSTEMS, accounts)
    _STACKS.append(stack)
    try:
        yield stack
    finally:
        stack.pool.stop()
        stack.stop()


@pytest.fixture(scope="session")
def metal3_bmo_env(metal3_operator, metal3_env, tmp_path_factory):
    """``metal3_env`` on the real operator (requested after ``metal3_operator``: the
    hostclaim_setup role then finds BMO's own BareMetalHost CRD and leaves it as it is,
    test_metal3_setup)."""
    return dataclasses.replace(
        metal3_env,
        workdir=tmp_path_factory.mktemp("metal3-bmo"),
        operator=metal3_operator,
        pool=metal3_operator.pool,
        watched=BMO_NAMESPACES,
    )


# baremetal-operator's own HostClaim dialect (v0.14) with its controller, on a cluster of its own (the
# HostClaim CRD there is BMO's): the namespaces of the suites that use it, and their BMCs.
BMO_DIALECT_NAMESPACES = (
    "bd-infra",  # test_bmo_hostclaim_upstream: hosts (BMC 0)
    "not-prod",
    "prod",
    "bs-infra",  # test_bmo_claim_status_upstream: hosts (BMCs 1 and 2)
    "bs-tenant",
    "bh-infra",  # test_bmo_hostclaim_upstream, host_bind's side: hosts (BMC 3); its claims' namespaces are not watched
    "bc-infra",  # test_bmo_dialect_binder: hosts (BMCs 4 to 15); its claims' namespaces are not watched
    "ow-infra",  # test_bmo_dialect_owner: hosts (BMCs 16 and 17)
    "ow-prod",
    "not-ow-prod",
    "ow-tenant",
    "rb-infra",  # test_metal3_relay_bmo: hosts (BMCs 18 and 19) of claims relayed from other clusters
)
BMO_DIALECT_SYSTEMS = 20


@pytest.fixture(scope="session")
def bmo_dialect(tmp_path_factory):
    """``(kube_env, stack)``: a second control plane whose HostClaim and HostDeployPolicy CRDs are
    baremetal-operator's, and BMO running its own HostClaim controller (``--hostclaims``) on it, watching
    :data:`BMO_DIALECT_NAMESPACES`. Suites create their own hosts on the stack's BMCs."""
    env = kube.KubeEnv(tmp_path_factory.mktemp("kube-bmo-dialect"), kube.require_binaries())
    env.start()
    stack = None
    try:
        with env.api("admin") as api:
            for name in BMO_DIALECT_NAMESPACES:
                client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
        stack = baremetal_operator.start_metal3(
            env,
            tmp_path_factory.mktemp("metal3-bmo-dialect"),
            systems=sushy.default_systems(BMO_DIALECT_SYSTEMS),
            namespace=",".join(BMO_DIALECT_NAMESPACES),
            claim_dialect="bmo",
            hostclaims_controller=True,
            notify=0,
        )
        _STACKS.append(stack)
        yield env, stack
    finally:
        if stack is not None:
            stack.stop()
        env.stop()


def bmo_dialect_setup_vars() -> dict:
    """The variables of the hostclaim_setup role on the BMO-dialect cluster: every suite that runs the role there
    passes these, so that no run takes the binder identity out of the binder's ClusterRoleBinding for the others."""
    from fixtures_metal3 import BINDER_SUBJECTS

    return {"hostclaim_setup_binder_subjects": BINDER_SUBJECTS, "hostclaim_setup_infra_namespace": "bh-infra"}


@pytest.fixture(scope="session")
def bmo_dialect_rbac(bmo_dialect, tmp_path_factory):
    """The BMO-dialect cluster after the hostclaim_setup role (binder and tenant RBAC only: the CRDs are BMO's),
    its binder ServiceAccount in bh-infra. ``(kube_env, stack)``."""
    from fixtures_metal3 import setup_play
    from harness.ansible import run_playbook

    env, stack = bmo_dialect
    variables = bmo_dialect_setup_vars()
    run = run_playbook(setup_play(variables), env.ansible_env("admin"), tmp_path_factory.mktemp("bmo-dialect-setup"))
    assert run.ok, run.explain()
    return env, stack


def tenant_namespace(api, namespace: str, identity: str | None) -> None:
    """Create ``namespace`` and bind ``identity``'s user to the aggregated tenant ClusterRole there."""
    from fixtures_metal3 import TENANT_CLUSTERROLE

    client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    if identity is None:
        return
    client.RbacAuthorizationV1Api(api).create_namespaced_role_binding(
        namespace,
        client.V1RoleBinding(
            metadata=client.V1ObjectMeta(name="baremetal-tenant"),
            role_ref=client.V1RoleRef(
                api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=TENANT_CLUSTERROLE
            ),
            subjects=[
                client.RbacV1Subject(
                    api_group="rbac.authorization.k8s.io", kind="User", name=kube.IDENTITIES[identity].user
                )
            ],
        ),
    )


def create_hosts(api, stack, namespace: str, hosts: dict[str, tuple[int, str]], timeout: float = 300) -> None:
    """Create ``hosts`` (name -> (BMC index, pool label)) on the live-ISO route; wait until all are available."""
    for name, (index, pool) in hosts.items():
        bmc = stack.bmcs[index]
        client.CoreV1Api(api).create_namespaced_secret(
            namespace, baremetal_operator.bmc_secret(f"{name}-bmc", bmc, namespace=namespace)
        )
        manifest = baremetal_operator.host_manifest(
            name, bmc, f"{name}-bmc", namespace=namespace, labels={"pool": pool}
        )
        client.CustomObjectsApi(api).create_namespaced_custom_object(
            "metal3.io", "v1alpha1", namespace, "baremetalhosts", manifest
        )
    baremetal_operator.wait_hosts(
        api,
        stack,
        namespace,
        list(hosts),
        lambda h: baremetal_operator.host_state(h) == "available",
        "available",
        timeout,
    )


def wait_for(what: str, read, predicate, stack, timeout: float = 120):
    """Poll ``read()`` every 0.5 s until ``predicate`` holds; fail with BMO's and Ironic's logs."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = read()
        if predicate(last):
            return last
        time.sleep(0.5)
    pytest.fail(f"not {what} after {timeout}s: {last!r}\n{stack.logs()}")


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
