"""Flux installed and held to its multi-tenancy lockdown by the collection's ``flux_install`` role (issue 38, item 1).

The session's shared Flux (``flux_env``) is the role's: ``ansible-playbook`` applied the CRDs, the namespace,
ServiceAccounts, RBAC, Deployments and the admission policy on tenants' source URLs, and the harness started each
controller as a process with the arguments, ServiceAccount and environment of its Deployment, read back from the
apiserver. What is shown:

- the Deployments carry every lockdown flag, and each running controller's command line is its Deployment's
  arguments (only the addresses a pod has to itself replaced), run as its Deployment's ServiceAccount;
- a Deployment without a lockdown flag is refused by the harness (it would not start it), and the role refuses an
  extra argument that would turn a lockdown flag off, before changing anything;
- the controllers' own ServiceAccounts may not apply tenant objects; only the platform's reconciliation
  (kustomize-controller and helm-controller) has the platform role, and a tenant namespace's ``default``
  ServiceAccount, what an object naming none is reconciled as, may do nothing;
- the admission policy refuses, in a tenant namespace, a GitRepository, HelmRepository or OCIRepository whose URL is
  not under an allowed one (naming the URL), accepts one that is, and leaves other namespaces alone.

Runs only under ``-m gitops`` (``make test-gitops``).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from harness import flux
from harness.ansible import run_playbook
from harness.kube import call_ignoring
from kubernetes import client

pytestmark = pytest.mark.gitops

TENANT, PLATFORM = "fi-tenant", "fi-platform"
TENANT_LABEL = "baremetal.tenancy/tenant"
SOURCES = {
    "GitRepository": ("gitrepositories", {"interval": "10m", "ref": {"branch": "main"}}),
    "HelmRepository": ("helmrepositories", {"interval": "10m"}),
    "OCIRepository": ("ocirepositories", {"interval": "10m", "ref": {"tag": "latest"}}),
}


@pytest.fixture(scope="module")
def namespaces(admin):
    core = client.CoreV1Api(admin)
    for name, labels in ((TENANT, {TENANT_LABEL: TENANT}), (PLATFORM, {})):
        call_ignoring(409, core.create_namespace, {"metadata": {"name": name, "labels": labels}})
    yield
    for name in (TENANT, PLATFORM):
        call_ignoring(404, core.delete_namespace, name)


def cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]


def test_each_controller_runs_exactly_as_the_role_s_deployment_says(flux_env):
    assert set(flux_env.deployments) == set(flux.CONTROLLERS)
    for name, deployment in flux_env.deployments.items():
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        args = container["args"]
        if name != "source-controller":
            assert "--no-cross-namespace-refs=true" in args and "--default-service-account=default" in args, args
        if name == "kustomize-controller":
            assert "--no-remote-bases=true" in args, args
        assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == name
        assert deployment["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "baremetal.tenancy"
        running = cmdline(flux_env.controllers[name].proc.pid)[1:]
        kept = [a for a in args if a.partition("=")[0] not in flux.LOCAL_FLAGS]
        assert [a for a in running if a.partition("=")[0] not in flux.LOCAL_FLAGS] == kept
        assert all(
            a.split("=", 1)[1].startswith(("127.0.0.1:", "/"))
            for a in running
            if a.partition("=")[0] in flux.LOCAL_FLAGS
        )
        environ = Path(f"/proc/{flux_env.controllers[name].proc.pid}/environ").read_bytes().decode().split("\0")
        assert f"RUNTIME_NAMESPACE={flux.NAMESPACE}" in environ  # the Deployment's fieldRef, resolved
        kubeconfig = next(e.partition("=")[2] for e in environ if e.startswith("KUBECONFIG="))
        assert f"system:serviceaccount:{flux.NAMESPACE}:{name}" in Path(kubeconfig).read_text()


@pytest.mark.parametrize(
    "controller,flag",
    [
        ("kustomize-controller", "--no-cross-namespace-refs"),
        ("kustomize-controller", "--default-service-account"),
        ("kustomize-controller", "--no-remote-bases"),
        ("helm-controller", "--no-cross-namespace-refs"),
        ("helm-controller", "--default-service-account"),
    ],
)
def test_a_deployment_without_a_lockdown_flag_is_not_started(flux_env, controller, flag):
    deployment = copy.deepcopy(flux_env.deployments[controller])
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["args"] = [a for a in container["args"] if a.partition("=")[0] != flag]
    with pytest.raises(flux.LockdownMissing, match=f"Deployment flux-system/{controller}: {flag} is not set"):
        flux.deployment_process(deployment, controller)
    args, account, env = flux.deployment_process(flux_env.deployments[controller], controller)
    assert account == controller and env["RUNTIME_NAMESPACE"] == flux.NAMESPACE and args


def test_the_role_refuses_an_extra_argument_that_turns_the_lockdown_off(flux_env, kube_env, admin, tmp_path):
    apps = client.AppsV1Api(admin)
    before = apps.read_namespaced_deployment("kustomize-controller", flux.NAMESPACE).metadata.resource_version
    variables = dict(
        flux_env.role_variables(), flux_install_extra_args={"kustomize-controller": ["--no-remote-bases=false"]}
    )
    run = run_playbook(flux.FLUX_INSTALL_PLAY, kube_env.ansible_env("admin"), tmp_path, extra_vars=variables)
    assert not run.ok
    assert "may not set a lockdown flag" in run.stdout, run.stdout[-3000:]
    after = apps.read_namespaced_deployment("kustomize-controller", flux.NAMESPACE).metadata.resource_version
    assert after == before


def can(admin, user: str, verb: str, resource: str, namespace: str, group: str = "") -> bool:
    review = {
        "spec": {
            "user": user,
            "groups": ["system:serviceaccounts", "system:authenticated"],
            "resourceAttributes": {"verb": verb, "resource": resource, "group": group, "namespace": namespace},
        }
    }
    return client.AuthorizationV1Api(admin).create_subject_access_review(review).status.allowed


def test_only_the_platform_reconciliation_has_rights_beyond_flux_objects(flux_env, admin, namespaces):
    sa = f"system:serviceaccount:{flux.NAMESPACE}:"
    assert not can(admin, sa + "source-controller", "create", "deployments", TENANT, "apps")
    assert can(admin, sa + "source-controller", "list", "gitrepositories", TENANT, "source.toolkit.fluxcd.io")
    for reconciler in ("kustomize-controller", "helm-controller"):
        assert can(admin, sa + reconciler, "create", "deployments", TENANT, "apps")
        assert can(admin, sa + reconciler, "impersonate", "serviceaccounts", TENANT)
    # what a tenant object that names no ServiceAccount is reconciled as: nothing may it do
    default = f"system:serviceaccount:{TENANT}:default"
    assert not can(admin, default, "create", "configmaps", TENANT)
    assert not can(admin, default, "create", "deployments", TENANT, "apps")


def create_source(admin, kind: str, namespace: str, name: str, url: str):
    plural, spec = SOURCES[kind]
    body = {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {**spec, "url": url},
    }
    return client.CustomObjectsApi(admin).create_namespaced_custom_object(
        "source.toolkit.fluxcd.io", "v1", namespace, plural, body
    )


@pytest.mark.parametrize("kind", sorted(SOURCES))
def test_a_tenant_source_outside_the_allowed_urls_is_refused_by_admission(
    flux_env, git_server, admin, namespaces, kind
):
    scheme_base = git_server.base_url
    outside = {
        "GitRepository": "http://10.0.0.1/internal.git",
        "HelmRepository": f"{scheme_base}.evil.example/charts",
        "OCIRepository": "oci://registry.internal.example/x",
    }[kind]
    with pytest.raises(client.exceptions.ApiException) as refused:
        create_source(admin, kind, TENANT, f"out-{kind.lower()}", outside)
    assert refused.value.status in (403, 422)
    message = json.loads(refused.value.body)["message"]
    assert outside in message and "not an allowed source URL" in message, message
    assert scheme_base in message  # the allowed URLs are named
    # under an allowed URL: accepted (an OCIRepository's URL is oci://, which the session allows none of)
    if kind != "OCIRepository":
        create_source(admin, kind, TENANT, f"in-{kind.lower()}", git_server.url("fi-allowed"))
    # a namespace that is not a tenant's is not the policy's business
    create_source(admin, kind, PLATFORM, f"out-{kind.lower()}", outside)
