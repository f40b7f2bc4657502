"""A tenant's own Git repository reconciled by a shared, locked-down Flux (issue 19, first slice).

Real source-controller and kustomize-controller (``make flux``) run against
the harness kube-apiserver with Flux's multi-tenancy lockdown
(``--no-cross-namespace-refs``, ``--default-service-account=default``,
``--no-remote-bases``); the tenant's repository is served by ``git
http-backend`` on 127.0.0.1. The tenant namespace holds a ServiceAccount
``reconciler`` bound to the built-in ``admin`` ClusterRole in that namespace
only, and the tenant's GitRepository and Kustomizations, which name it.

What is shown:

- the tenant's manifests are applied (a ConfigMap appears, labelled by
  kustomize-controller);
- isolation: a manifest for another tenant's namespace, a ClusterRole, a
  remote base and a source in another namespace are each refused, with the
  reason on the Kustomization's Ready condition, and nothing of the refused
  path exists afterwards (not even the harmless ConfigMap committed beside
  the offending manifest);
- a Kustomization that names no ServiceAccount is reconciled as the
  namespace's ``default`` ServiceAccount, which may do nothing, not as the
  controller.

Runs only under ``-m gitops`` (``make test-gitops``; fixtures_flux deselects it
elsewhere).
"""

from __future__ import annotations

import pytest
import yaml
from harness.flux import ready_condition, wait_ready
from harness.kube import call_ignoring
from kubernetes import client

pytestmark = pytest.mark.gitops

TENANT, OTHER = "gitops-a", "gitops-b"
SA = "reconciler"
REPO = "gitops-a"
INTERVAL = "10s"


def dump(*docs: dict) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False)


def configmap(name: str, namespace: str | None = None, **data: str) -> dict:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def kustomization_yaml(*resources: str) -> str:
    return dump(
        {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": list(resources)}
    )


def flux_kustomization(name: str, path: str, *, service_account: str | None = SA, source_namespace: str | None = None):
    source = {"kind": "GitRepository", "name": "tenant"}
    if source_namespace:
        source["namespace"] = source_namespace
    spec = {
        "interval": INTERVAL,
        "retryInterval": INTERVAL,
        "path": path,
        "prune": True,
        "sourceRef": source,
        "timeout": "1m",
    }
    if service_account:
        spec["serviceAccountName"] = service_account
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": name, "namespace": TENANT},
        "spec": spec,
    }


@pytest.fixture(scope="module")
def tenant(admin, flux_env, git_server):
    """Two tenant namespaces; in gitops-a the reconciler ServiceAccount, the repository and its GitRepository."""
    core = client.CoreV1Api(admin)
    rbac = client.RbacAuthorizationV1Api(admin)
    for ns in (TENANT, OTHER):
        call_ignoring(
            409, core.create_namespace, {"metadata": {"name": ns, "labels": {"baremetal.tenancy/role": "tenant"}}}
        )
    call_ignoring(409, core.create_namespaced_service_account, TENANT, {"metadata": {"name": SA}})
    binding = {
        "metadata": {"name": "reconciler-admin", "namespace": TENANT},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
        "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": TENANT}],
    }
    call_ignoring(409, rbac.create_namespaced_role_binding, TENANT, binding)

    git_server.create_repo(REPO)
    git_server.create_repo("gitops-b")
    git_server.commit(
        "gitops-b",
        {
            "apps/kustomization.yaml": kustomization_yaml("cm.yaml"),
            "apps/cm.yaml": dump(configmap("from-b", OTHER, owner="b")),
        },
        "tenant b",
    )
    remote_base = f"{git_server.url('gitops-b')}//apps?ref=main"
    files = {
        "apps/kustomization.yaml": kustomization_yaml("settings.yaml"),
        "apps/settings.yaml": dump(configmap("settings", TENANT, colour="blue")),
        "other-namespace/kustomization.yaml": kustomization_yaml("ok.yaml", "intruder.yaml"),
        "other-namespace/ok.yaml": dump(configmap("beside-intruder", TENANT)),
        "other-namespace/intruder.yaml": dump(configmap("intruder", OTHER, owner="a")),
        "cluster-role/kustomization.yaml": kustomization_yaml("ok.yaml", "clusterrole.yaml"),
        "cluster-role/ok.yaml": dump(configmap("beside-clusterrole", TENANT)),
        "cluster-role/clusterrole.yaml": dump(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": "gitops-a-escalation"},
                "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
            }
        ),
        "remote-base/kustomization.yaml": kustomization_yaml("ok.yaml", remote_base),
        "remote-base/ok.yaml": dump(configmap("beside-remote-base", TENANT)),
        "default-sa/kustomization.yaml": kustomization_yaml("cm.yaml"),
        "default-sa/cm.yaml": dump(configmap("as-default-sa", TENANT)),
    }
    git_server.commit(REPO, files, "tenant a: apps and isolation probes")
    custom = client.CustomObjectsApi(admin)
    repo = {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": "tenant", "namespace": TENANT},
        "spec": {"interval": INTERVAL, "url": git_server.url(REPO), "ref": {"branch": "main"}},
    }
    call_ignoring(
        409, custom.create_namespaced_custom_object, "source.toolkit.fluxcd.io", "v1", TENANT, "gitrepositories", repo
    )
    wait_ready(admin, "GitRepository", TENANT, "tenant")
    # A source the tenant must not use: one in another namespace.
    other_repo = {
        **repo,
        "metadata": {"name": "tenant", "namespace": OTHER},
        "spec": {**repo["spec"], "url": git_server.url("gitops-b")},
    }
    call_ignoring(
        409,
        custom.create_namespaced_custom_object,
        "source.toolkit.fluxcd.io",
        "v1",
        OTHER,
        "gitrepositories",
        other_repo,
    )
    return custom


def apply_kustomization(custom, body: dict) -> None:
    call_ignoring(
        409, custom.create_namespaced_custom_object, "kustomize.toolkit.fluxcd.io", "v1", TENANT, "kustomizations", body
    )


def configmap_exists(admin, namespace: str, name: str) -> bool:
    return call_ignoring(404, client.CoreV1Api(admin).read_namespaced_config_map, name, namespace) is not None


def test_tenant_manifests_are_applied_as_the_tenant(admin, tenant):
    apply_kustomization(tenant, flux_kustomization("apps", "./apps"))
    obj = wait_ready(admin, "Kustomization", TENANT, "apps")
    cm = client.CoreV1Api(admin).read_namespaced_config_map("settings", TENANT)
    assert cm.data == {"colour": "blue"}
    assert cm.metadata.labels["kustomize.toolkit.fluxcd.io/name"] == "apps"
    assert cm.metadata.labels["kustomize.toolkit.fluxcd.io/namespace"] == TENANT
    assert obj["status"]["lastAppliedRevision"].startswith("main@sha1:")


@pytest.mark.parametrize(
    ("name", "path", "absent", "reason"),
    [
        (
            "other-namespace",
            "./other-namespace",
            [("configmap", OTHER, "intruder"), ("configmap", TENANT, "beside-intruder")],
            f'User "system:serviceaccount:{TENANT}:{SA}" cannot',
        ),
        (
            "cluster-role",
            "./cluster-role",
            [("clusterrole", None, "gitops-a-escalation"), ("configmap", TENANT, "beside-clusterrole")],
            f'User "system:serviceaccount:{TENANT}:{SA}" cannot',
        ),
        (
            "remote-base",
            "./remote-base",
            [("configmap", OTHER, "from-b"), ("configmap", TENANT, "beside-remote-base")],
            # --no-remote-bases: kustomize clones the remote base into a temporary directory that Flux's secure
            # file system then refuses to read ("<clone> is not in or below <source artifact>").
            "accumulating resources from 'http://127.0.0.1:",
        ),
    ],
)
def test_tenant_repository_cannot_reach_beyond_its_namespace(admin, tenant, name, path, absent, reason):
    apply_kustomization(tenant, flux_kustomization(name, path))
    obj = wait_ready(admin, "Kustomization", TENANT, name, status="False", message=reason)
    message = ready_condition(obj)["message"]
    assert reason in message, message
    if name == "remote-base":
        assert "fs-security-constraint" in message and "is not in or below" in message, message
    rbac = client.RbacAuthorizationV1Api(admin)
    for kind, namespace, object_name in absent:
        if kind == "clusterrole":
            assert call_ignoring(404, rbac.read_cluster_role, object_name) is None
        else:
            assert not configmap_exists(admin, namespace, object_name), f"{namespace}/{object_name} was created"


def test_source_in_another_namespace_is_refused(admin, tenant):
    apply_kustomization(tenant, flux_kustomization("cross-namespace", "./apps", source_namespace=OTHER))
    obj = wait_ready(admin, "Kustomization", TENANT, "cross-namespace", status="False", message="cross-namespace")
    message = ready_condition(obj)["message"]
    assert "cross-namespace" in message, message
    assert not configmap_exists(admin, OTHER, "from-b")


def test_no_service_account_means_the_namespace_default_not_the_controller(admin, tenant):
    apply_kustomization(tenant, flux_kustomization("default-sa", "./default-sa", service_account=None))
    obj = wait_ready(
        admin,
        "Kustomization",
        TENANT,
        "default-sa",
        status="False",
        message=f'User "system:serviceaccount:{TENANT}:default" cannot',
    )
    message = ready_condition(obj)["message"]
    assert f'User "system:serviceaccount:{TENANT}:default" cannot' in message, message
    assert not configmap_exists(admin, TENANT, "as-default-sa")
