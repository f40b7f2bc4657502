"""The design doc's two implementations side by side: one Flux for the cluster, or a Flux per tenant (issue 19, item 4).

The session's shared Flux (``flux_env``: source- and kustomize-controller in
``flux-system``, every namespace, cluster-admin, reconciling each tenant as
the tenant's ServiceAccount under the lockdown flags) runs beside a dedicated
pair for tenant ``d4-a``: the same binaries, running in and watching only
``d4-a`` (``--watch-all-namespaces=false``), with rights in ``d4-a`` only
(the built-in ``admin`` role there and Flux's own objects), applying as
themselves. Flux's sharding label splits the work: the tenant's objects
carry ``sharding.fluxcd.io/key=d4-a``, which the shared Flux does not watch.

What is shown:

- the dedicated Flux reconciles the tenant's repository (a ConfigMap appears;
  its own log names the Kustomization, the shared one's does not);
- a manifest for another namespace is refused by the apiserver because the
  dedicated controller's own identity has no rights there — isolation
  without impersonation or lockdown flags;
- what each costs: the resident memory of the shared pair and of the
  dedicated pair (one more pair per tenant), printed as one JSON line.

Runs only under ``-m gitops`` (``make test-gitops``).
"""

from __future__ import annotations

import json

import pytest
import yaml
from harness import flux, kube
from harness.flux import ready_condition, wait_ready
from kubernetes import client

pytestmark = pytest.mark.gitops

TENANT, OTHER = "d4-a", "d4-b"
REPO = "d4-a-apps"
INTERVAL = "10s"
SHARD = {flux.SHARD_LABEL: TENANT}


def dump(*docs: dict) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False)


def configmap(name: str, namespace: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": {}}


@pytest.fixture(scope="module")
def dedicated(admin, kube_env, flux_env, git_server, tmp_path_factory):
    """Tenant d4-a with its own source- and kustomize-controller; its repository with an app and an intruder."""
    core = client.CoreV1Api(admin)
    for ns in (TENANT, OTHER):
        kube.call_ignoring(409, core.create_namespace, {"metadata": {"name": ns}})
    git_server.create_repo(REPO)
    git_server.commit(
        REPO,
        {
            "apps/app.yaml": dump(configmap("app", TENANT)),
            "elsewhere/intruder.yaml": dump(configmap("intruder", OTHER)),
        },
        "tenant d4-a",
    )
    env = flux.FluxEnv(
        kube_env,
        tmp_path_factory.mktemp("flux-d4-a"),
        flux_env.directory,
        ("source-controller", "kustomize-controller"),
        tenant=TENANT,
    )
    env.start()
    custom = client.CustomObjectsApi(admin)
    repo = {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": "apps", "namespace": TENANT, "labels": SHARD},
        "spec": {"interval": INTERVAL, "url": git_server.url(REPO), "ref": {"branch": "main"}},
    }
    kube.call_ignoring(
        409, custom.create_namespaced_custom_object, "source.toolkit.fluxcd.io", "v1", TENANT, "gitrepositories", repo
    )
    try:
        yield {"env": env, "custom": custom, "shared": flux_env}
    finally:
        env.stop()


def kustomization(name: str, path: str) -> dict:
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": name, "namespace": TENANT, "labels": SHARD},
        "spec": {
            "interval": INTERVAL,
            "retryInterval": INTERVAL,
            "path": path,
            "prune": True,
            "timeout": "1m",
            "sourceRef": {"kind": "GitRepository", "name": "apps"},
        },
    }


def create(custom, body: dict) -> None:
    kube.call_ignoring(
        409, custom.create_namespaced_custom_object, "kustomize.toolkit.fluxcd.io", "v1", TENANT, "kustomizations", body
    )


def log_text(env: flux.FluxEnv, name: str) -> str:
    return env.controllers[name].proc.log_path.read_text(errors="replace")


def test_dedicated_flux_reconciles_the_tenant_as_itself(admin, dedicated):
    create(dedicated["custom"], kustomization("apps", "./apps"))
    obj = wait_ready(admin, "Kustomization", TENANT, "apps")
    assert "serviceAccountName" not in obj["spec"]
    app = client.CoreV1Api(admin).read_namespaced_config_map("app", TENANT)
    assert app.metadata.labels["kustomize.toolkit.fluxcd.io/name"] == "apps"
    ours = f'"Kustomization":{{"name":"apps","namespace":"{TENANT}"}}'
    assert ours in log_text(dedicated["env"], "kustomize-controller")
    assert ours not in log_text(dedicated["shared"], "kustomize-controller")


def test_dedicated_flux_cannot_reach_another_namespace(admin, dedicated):
    create(dedicated["custom"], kustomization("elsewhere", "./elsewhere"))
    obj = wait_ready(
        admin,
        "Kustomization",
        TENANT,
        "elsewhere",
        status="False",
        message=f'User "system:serviceaccount:{TENANT}:kustomize-controller" cannot',
    )
    message = ready_condition(obj)["message"]
    assert f'User "system:serviceaccount:{TENANT}:kustomize-controller" cannot' in message, message
    assert kube.call_ignoring(404, client.CoreV1Api(admin).read_namespaced_config_map, "intruder", OTHER) is None


def test_memory_of_one_shared_flux_and_of_one_flux_per_tenant(dedicated):
    shared = dedicated["shared"].rss_kib()
    per_tenant = dedicated["env"].rss_kib()
    assert set(per_tenant) == {"source-controller", "kustomize-controller"}
    assert all(size > 0 for size in per_tenant.values())
    figure = {
        "bench": "flux_memory",
        "shared_kib": shared,
        "dedicated_kib_per_tenant": per_tenant,
        "dedicated_total_mib_per_tenant": round(sum(per_tenant.values()) / 1024, 1),
    }
    print(json.dumps(figure))
