"""Onboarding as Git commits: the tenant_gitops role, a real Git server and a real, locked-down Flux (issue 19, item 2).

The cluster operator's repository (``fleet``) is served by ``git http-backend``
on 127.0.0.1 and applied by the real source- and kustomize-controller
(``make flux``) through a Kustomization in ``flux-system`` that runs as
kustomize-controller's own ServiceAccount, as Flux's multi-tenancy setup has
it. The role runs through ``ansible-playbook`` on a clone of that repository.

What is shown, step by step (one module-scoped story; each step asserts its
own part):

1. check mode with ``--diff`` shows every file the commit would write and
   changes nothing (no commit on the server, no namespace);
2. the role commits and pushes; the commit on the server is the one the role
   reports; the role waits until Flux has applied it;
3. the objects Flux created (namespace, RoleBindings, quota, LimitRange,
   NetworkPolicies) equal those ``tenant_namespace`` applies directly for a
   twin tenant with the same settings, but for the reconciler ServiceAccount,
   which the Git way adds to the tenant's RoleBindings; the cluster-wide
   admission policies Flux applies are those ``tenant_namespace`` applied (their
   generation does not move), and the direct run left ``tenant_gitops``'s own
   policy on chart repositories in place (the same object);
4. the tenant's own repository is reconciled as the tenant's reconciler
   ServiceAccount (its manifest appears; a manifest for another namespace in it
   is refused with the reason on the tenant's Kustomization);
5. a second run commits nothing;
6. a dirty checkout is refused with one clear error and left as it was;
7. offboarding removes the tenant's directory in one commit; Flux prunes the
   tenant and the role waits until the namespace is gone.

Runs only under ``-m gitops`` (``make test-gitops``).
"""

from __future__ import annotations

import copy
import json
import time

import pytest
import yaml
from harness import kube
from harness.ansible import run_playbook
from harness.flux import (
    COMMIT_TASK,
    operator_repository,
    ready_condition,
    request_reconcile,
    run_tenant_gitops,
    wait_ready,
)
from harness.git_server import git
from kubernetes import client

pytestmark = pytest.mark.gitops

FLEET = "fleet"
TENANT, TWIN = "g2-a", "g2-twin"
TENANT_REPO = "g2-a-apps"
RECONCILER = "gitops-reconciler"
INTERVAL = "10s"
ROLES = ["baremetal-tenancy-tenant", "baremetal-tenancy-tenant-workloads"]
SETTINGS = {
    "users": ["g2-user"],
    "host_classes": ["small"],
    "quota": {"hostclaims": 3},
    "cluster_roles": ROLES,
    "network_allows": [{"name": "web", "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{}]}}],
}
FLUX_LABEL_PREFIX = "kustomize.toolkit.fluxcd.io/"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
# The admission policies tenant_namespace writes with its default settings: its default pod controls and the HostClaim one.
TENANT_NAMESPACE_POLICIES = {
    f"baremetal-tenancy-{name}"
    for name in (
        "no-privileged",
        "allowed-registries",
        "no-host-path",
        "no-host-ports",
        "run-as-non-root",
        "seccomp",
        "claim-host-class",
    )
}
# tenant_gitops's policy on tenants' chart repositories, written to the operator's repository beside them.
HELM_POLICY = "baremetal-tenancy-helm-repositories"


def dump(*docs: dict) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False)


def configmap(name: str, namespace: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": {}}


@pytest.fixture(scope="module")
def fleet(admin, metal3_env, flux_env, git_server, tmp_path_factory):
    """The operator's repository applied by Flux, a clone of it, and the tenant's own repository."""
    workdir = tmp_path_factory.mktemp("gitops-onboarding")
    git_server.create_repo(TENANT_REPO)
    git_server.commit(
        TENANT_REPO,
        {
            "apps/hello.yaml": dump(configmap("hello", TENANT)),
            "elsewhere/intruder.yaml": dump(configmap("intruder", TWIN)),
        },
        "tenant apps",
    )
    custom = client.CustomObjectsApi(admin)
    checkout = operator_repository(admin, git_server, FLEET, workdir / "checkout", INTERVAL)
    tenant = {
        "name": TENANT,
        **copy.deepcopy(SETTINGS),
        "repository": {"url": git_server.url(TENANT_REPO), "path": "./apps", "interval": INTERVAL},
    }
    return {"workdir": workdir, "checkout": checkout, "tenant": tenant, "custom": custom}


def run_role(kube_env, fleet, name: str, state: str = "present", *, check: bool = False, **extra):
    return run_tenant_gitops(
        kube_env,
        fleet["checkout"],
        fleet["workdir"] / name,
        FLEET,
        [fleet["tenant"]],
        state,
        interval=INTERVAL,
        check=check,
        **extra,
    )


def server_head(git_server) -> str:
    return git_server.head(FLEET)


def server_files(git_server) -> list[str]:
    return git_server.files(FLEET)


# --------------------------------------------------------------------------
# 1-2: check mode, then the commit Flux applies
# --------------------------------------------------------------------------


def test_check_mode_shows_the_diff_and_changes_nothing(kube_env, fleet, git_server, admin):
    head = server_head(git_server)
    run = run_role(kube_env, fleet, "check", check=True)
    assert run.ok, run.explain()
    result = run.result(COMMIT_TASK)
    assert result["changed"]
    files = {f["path"]: f["action"] for f in result["files"]}
    assert files == {
        f"tenants/{TENANT}/tenant.yaml": "create",
        f"tenants/{TENANT}/sync.yaml": "create",
        "tenancy/policies.yaml": "create",
    }
    diffs = {d["after_header"]: d["after"] for d in result["diff"]}
    assert "kind: ResourceQuota" in diffs[f"tenants/{TENANT}/tenant.yaml"]
    assert f"serviceAccountName: {RECONCILER}" in diffs[f"tenants/{TENANT}/sync.yaml"]
    assert server_head(git_server) == head
    assert git("status", "--porcelain", cwd=fleet["checkout"]) == ""
    assert not kube.namespace_exists(admin, TENANT)


def test_onboarding_commit_is_pushed_and_applied_by_flux(kube_env, fleet, git_server, admin):
    run = run_role(kube_env, fleet, "onboard")
    assert run.ok, run.explain()
    result = run.result(COMMIT_TASK)
    assert result["changed"] and result["pushed"]
    assert server_head(git_server) == result["commit"]
    assert git("log", "-1", "--format=%s", cwd=fleet["checkout"]).strip() == f"tenants: onboard {TENANT}"
    assert {f"tenants/{TENANT}/tenant.yaml", f"tenants/{TENANT}/sync.yaml"} <= set(server_files(git_server))
    # The role waited until Flux had applied that very commit.
    fleet_sync = fleet["custom"].get_namespaced_custom_object(
        "kustomize.toolkit.fluxcd.io", "v1", "flux-system", "kustomizations", FLEET
    )
    assert fleet_sync["status"]["lastAppliedRevision"].endswith(result["commit"])
    assert kube.namespace_exists(admin, TENANT)


# --------------------------------------------------------------------------
# 3: the same objects as tenant_namespace applies directly
# --------------------------------------------------------------------------


def normal(api, obj, name: str) -> dict:
    """The object as a dict without what the server or the applier adds, with the tenant name replaced."""
    data = api.sanitize_for_serialization(obj)
    meta = data["metadata"]
    for key in ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation"):
        meta.pop(key, None)
    meta["labels"] = {k: v for k, v in (meta.get("labels") or {}).items() if not k.startswith(FLUX_LABEL_PREFIX)}
    annotations = {k: v for k, v in (meta.pop("annotations", None) or {}).items() if k != LAST_APPLIED}
    if annotations:
        meta["annotations"] = annotations
    data.pop("status", None)
    return json.loads(json.dumps(data).replace(name, "TENANT"))


def tenant_objects(api, name: str) -> dict[str, dict]:
    core, rbac, net = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api), client.NetworkingV1Api(api)
    selector = "app.kubernetes.io/managed-by=baremetal.tenancy"
    objects = {"Namespace": normal(api, core.read_namespace(name), name)}
    listed = [
        ("RoleBinding", rbac.list_namespaced_role_binding),
        ("ResourceQuota", core.list_namespaced_resource_quota),
        ("LimitRange", core.list_namespaced_limit_range),
        ("NetworkPolicy", net.list_namespaced_network_policy),
    ]
    for kind, call in listed:
        for item in call(name, label_selector=selector).items:
            objects[f"{kind}/{item.metadata.name}"] = normal(api, item, name)
    return objects


@pytest.fixture(scope="module")
def twin(kube_env, fleet, admin):
    """tenant_namespace applied directly, for a tenant with the same settings; returns the cluster's admission
    policies' generations after that run, and their uids before and after it."""
    admission = client.AdmissionregistrationV1Api(admin)
    uids_before = {p.metadata.name: p.metadata.uid for p in admission.list_validating_admission_policy().items}
    run = run_playbook(
        [
            {
                "name": "tenant_namespace directly",
                "hosts": "localhost",
                "connection": "local",
                "gather_facts": False,
                "roles": [{"role": "baremetal.tenancy.tenant_namespace"}],
            }
        ],
        kube_env.ansible_env("admin"),
        fleet["workdir"] / "twin",
        extra_vars={"tenant_namespace_tenants": [{"name": TWIN, **copy.deepcopy(SETTINGS)}]},
    )
    assert run.ok, run.explain()
    after = admission.list_validating_admission_policy().items
    return {
        "generations": {p.metadata.name: p.metadata.generation for p in after},
        "uids_before": uids_before,
        "uids_after": {p.metadata.name: p.metadata.uid for p in after},
    }


def test_flux_created_the_objects_tenant_namespace_applies(admin, twin):
    by_git, direct = tenant_objects(admin, TENANT), tenant_objects(admin, TWIN)
    assert sorted(by_git) == sorted(direct)
    assert {"ResourceQuota/baremetal-tenancy", "LimitRange/baremetal-tenancy"} <= set(by_git)
    assert {f"RoleBinding/{role}" for role in ROLES} <= set(by_git)
    reconciler = {"kind": "ServiceAccount", "name": RECONCILER, "namespace": "TENANT"}
    for key, obj in by_git.items():
        compared = obj
        if key.startswith("RoleBinding/"):
            # The one difference, by design: the reconciler gets the tenant's own roles.
            assert obj["subjects"][-1] == reconciler
            compared = {**obj, "subjects": obj["subjects"][:-1]}
        assert compared == direct[key], key
    sa = client.CoreV1Api(admin).read_namespaced_service_account(RECONCILER, TENANT)
    assert sa.metadata.labels["kustomize.toolkit.fluxcd.io/name"] == FLEET


def test_flux_applies_the_admission_policies_tenant_namespace_applies(admin, twin, fleet, git_server):
    # Reapply the fleet now that tenant_namespace has written the policies: an identical spec leaves generation alone.
    commit = server_head(git_server)
    deadline = time.monotonic() + 120
    custom = fleet["custom"]
    # Force a reconcile and wait for it.
    stamp = request_reconcile(admin, "Kustomization", "flux-system", FLEET)
    while True:
        obj = custom.get_namespaced_custom_object(
            "kustomize.toolkit.fluxcd.io", "v1", "flux-system", "kustomizations", FLEET
        )
        status = obj.get("status") or {}
        if status.get("lastHandledReconcileAt") == stamp and ready_condition(obj).get("status") == "True":
            break
        assert time.monotonic() < deadline, f"fleet not reconciled again: {ready_condition(obj)}"
        time.sleep(1)
    assert status["lastAppliedRevision"].endswith(commit)
    admission = client.AdmissionregistrationV1Api(admin)
    after = {p.metadata.name: p for p in admission.list_validating_admission_policy().items}
    # tenant_namespace's own policies, by name: the cluster holds others of the collection (flux_install's on
    # tenants' source URLs, tenant_gitops's on their chart repositories) that the direct run neither writes nor owns.
    ours = {name: gen for name, gen in twin["generations"].items() if name in TENANT_NAMESPACE_POLICIES}
    assert set(ours) == TENANT_NAMESPACE_POLICIES, sorted(twin["generations"])
    # The direct run left the fleet's other policy alone (it carries the same managed-by label): same object.
    assert twin["uids_after"][HELM_POLICY] == twin["uids_before"][HELM_POLICY]
    assert after[HELM_POLICY].metadata.labels.get("kustomize.toolkit.fluxcd.io/name") == FLEET
    for name, generation in ours.items():
        assert after[name].metadata.generation == generation, name
        assert after[name].metadata.labels.get("kustomize.toolkit.fluxcd.io/name") == FLEET, name


# --------------------------------------------------------------------------
# 4: the tenant's own repository, as the tenant
# --------------------------------------------------------------------------


def test_tenant_repository_is_reconciled_as_the_tenant(admin, fleet):
    obj = wait_ready(admin, "Kustomization", TENANT, TENANT)
    assert obj["spec"]["serviceAccountName"] == RECONCILER
    hello = client.CoreV1Api(admin).read_namespaced_config_map("hello", TENANT)
    assert hello.metadata.labels["kustomize.toolkit.fluxcd.io/namespace"] == TENANT
    # The same repository pointed at a manifest for another namespace: refused as the tenant, nothing created.
    fleet["custom"].patch_namespaced_custom_object(
        "kustomize.toolkit.fluxcd.io",
        "v1",
        TENANT,
        "kustomizations",
        TENANT,
        {"spec": {"path": "./elsewhere"}},
    )
    obj = wait_ready(
        admin,
        "Kustomization",
        TENANT,
        TENANT,
        status="False",
        message=f'User "system:serviceaccount:{TENANT}:{RECONCILER}" cannot',
    )
    message = ready_condition(obj)["message"]
    assert f'User "system:serviceaccount:{TENANT}:{RECONCILER}" cannot' in message, message
    assert kube.call_ignoring(404, client.CoreV1Api(admin).read_namespaced_config_map, "intruder", TWIN) is None
    # Flux puts the operator's spec back on its next reconcile of the fleet (drift correction).
    deadline = time.monotonic() + 180
    while True:
        obj = fleet["custom"].get_namespaced_custom_object(
            "kustomize.toolkit.fluxcd.io", "v1", TENANT, "kustomizations", TENANT
        )
        if obj["spec"]["path"] == "./apps":
            break
        assert time.monotonic() < deadline, "the tenant's Kustomization was not restored from the fleet repository"
        time.sleep(2)
    wait_ready(admin, "Kustomization", TENANT, TENANT)


# --------------------------------------------------------------------------
# 5-6: idempotence, a dirty checkout
# --------------------------------------------------------------------------


def test_second_run_commits_nothing(kube_env, fleet, git_server):
    head = server_head(git_server)
    run = run_role(kube_env, fleet, "again")
    assert run.ok, run.explain()
    result = run.result(COMMIT_TASK)
    assert not result["changed"] and not result["pushed"] and result["files"] == []
    assert result["commit"] == head == server_head(git_server)


def test_dirty_checkout_is_refused_and_left_alone(kube_env, fleet, git_server):
    head = server_head(git_server)
    stray = fleet["checkout"] / "tenants" / TENANT / "edited-by-hand.yaml"
    stray.write_text("kind: ConfigMap\n")
    try:
        run = run_role(
            kube_env, fleet, "dirty", tenant_gitops_tenants=[{**fleet["tenant"], "quota": {"hostclaims": 5}}]
        )
        assert not run.ok
        result = run.result(COMMIT_TASK)
        assert result["msg"] == (
            f"Git checkout {fleet['checkout']}: has uncommitted or untracked changes "
            f"(tenants/{TENANT}/edited-by-hand.yaml); commit, stash or remove them first"
        )
        assert stray.read_text() == "kind: ConfigMap\n"
        assert server_head(git_server) == head
    finally:
        stray.unlink()


# --------------------------------------------------------------------------
# 7: offboarding
# --------------------------------------------------------------------------


def test_offboarding_removes_the_directory_and_flux_prunes_the_tenant(kube_env, fleet, git_server, admin):
    run = run_role(kube_env, fleet, "offboard", state="absent")
    assert run.ok, run.explain()
    result = run.result(COMMIT_TASK)
    assert {f["path"]: f["action"] for f in result["files"]} == {
        f"tenants/{TENANT}/tenant.yaml": "remove",
        f"tenants/{TENANT}/sync.yaml": "remove",
    }
    assert server_head(git_server) == result["commit"]
    files = server_files(git_server)
    assert not [f for f in files if f.startswith(f"tenants/{TENANT}/")]
    assert "tenancy/policies.yaml" in files  # shared by every tenant: kept
    assert not kube.namespace_exists(admin, TENANT)
    fleet_sync = fleet["custom"].get_namespaced_custom_object(
        "kustomize.toolkit.fluxcd.io", "v1", "flux-system", "kustomizations", FLEET
    )
    inventory = [e["id"] for e in fleet_sync["status"]["inventory"]["entries"]]
    assert not [i for i in inventory if i.startswith(f"{TENANT}_") or i == f"_{TENANT}__Namespace"], inventory
