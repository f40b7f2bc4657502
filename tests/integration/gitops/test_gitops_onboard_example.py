"""``examples/gitops/onboard.yml`` as the cluster operator runs it, on the real Flux and the session's Git server.

The example's repositories are served by the test's Git server under the same paths (``platform/charts``,
``team-a/bare-metal``): the run gives it that server with ``-e onboard_git_url=...``, the clone of the operator's
repository (``tenant_gitops_checkout``) and the Flux Kustomization that applies it, and changes nothing else of the
example. What is shown:

1. onboarding: the commit on the server is the one the example reports; Flux created team-a's namespace, its quota
   (four HostClaims), the RoleBindings of alice@example.com, the tenant's GitRepository and Kustomization (SOPS
   decryption with ``sops-age``), and helm-controller installed the shared chart as the tenant with the example's
   greeting;
2. the next step of the example's header (the tenant's age key into ``sops-age``, outside Git): the tenant's
   repository is applied as the tenant, the encrypted Secret decrypted;
3. offboarding with ``-e tenant_gitops_state=absent``: the tenant's directory goes in one commit, Flux prunes the
   namespace; the shared base stays.

Runs only under ``-m gitops`` (``make test-gitops``).
"""

from __future__ import annotations

import base64

import pytest
import yaml
from harness import kube, sops_age
from harness.ansible import REPO_ROOT, run_playbook
from harness.flux import COMMIT_TASK, operator_repository, request_reconcile, wait_ready
from kubernetes import client
from test_gitops_helm import CHART

pytestmark = pytest.mark.gitops

EXAMPLE = REPO_ROOT / "examples" / "gitops" / "onboard.yml"
FLEET = "fleet-example"
TENANT = "team-a"
CHARTS, TENANT_REPO = "platform/charts", "team-a/bare-metal"
PLAINTEXT = "team-a-database-password"
HELM_TIMEOUT = 240


def dump(*docs: dict) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False)


@pytest.fixture(scope="module")
def fleet(admin, metal3_env, flux_env, git_server, tmp_path_factory):
    """The example's repositories on the Git server, the operator's repository applied by Flux and a clone of it."""
    assert "helm-controller" in flux_env.controllers, "the session's Flux runs without helm-controller"
    try:
        sops_age.require_tools()
    except sops_age.ToolsMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    workdir = tmp_path_factory.mktemp("gitops-example")
    git_server.create_repo(CHARTS)
    git_server.commit(CHARTS, CHART, "the web chart")
    public, private = sops_age.new_key()
    secret = dump({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"}, "stringData": {"pw": PLAINTEXT}})
    git_server.create_repo(TENANT_REPO)
    git_server.commit(
        TENANT_REPO,
        {
            "kustomization.yaml": dump(
                {
                    "apiVersion": "kustomize.config.k8s.io/v1beta1",
                    "kind": "Kustomization",
                    "namespace": TENANT,  # as examples/gitops/tenant-repo/kustomization.yaml: the tenant's namespace
                    "resources": ["hello.yaml", "db.enc.yaml"],
                }
            ),
            "hello.yaml": dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "hello"}, "data": {}}),
            "db.enc.yaml": sops_age.encrypt(secret, public, "db.enc.yaml"),
        },
        "team-a's apps",
    )
    checkout = operator_repository(admin, git_server, FLEET, workdir / "checkout", "10s")
    return {"workdir": workdir, "checkout": checkout, "key": private, "custom": client.CustomObjectsApi(admin)}


def run_example(kube_env, fleet, git_server, name: str, **extra):
    return run_playbook(
        EXAMPLE,
        kube_env.ansible_env("admin"),
        fleet["workdir"] / name,
        extra_vars={
            "onboard_git_url": git_server.base_url,
            "tenant_gitops_checkout": str(fleet["checkout"]),
            "tenant_gitops_flux_kustomization": {"name": FLEET, "namespace": "flux-system"},
            "tenant_gitops_wait_timeout": 300,
            **extra,
        },
    )


def test_onboard_example_commits_the_tenant_and_flux_applies_it(kube_env, fleet, git_server, admin):
    run = run_example(kube_env, fleet, git_server, "onboard")
    assert run.ok, run.explain()
    result = run.result(COMMIT_TASK)
    assert result["pushed"] and git_server.head(FLEET) == result["commit"]
    files = set(git_server.files(FLEET))
    assert {f"tenants/{TENANT}/tenant.yaml", f"tenants/{TENANT}/sync.yaml", "apps/base/web/release.yaml"} <= files
    assert {f"tenants/{TENANT}/releases/web/{f}" for f in ("kustomization.yaml", "values-patch.yaml")} <= files
    # what Flux applied from the commit (the role waited for it)
    core, rbac = client.CoreV1Api(admin), client.RbacAuthorizationV1Api(admin)
    namespace = core.read_namespace(TENANT)
    assert namespace.metadata.labels["kustomize.toolkit.fluxcd.io/name"] == FLEET
    quota = core.read_namespaced_resource_quota("baremetal-tenancy", TENANT)
    assert quota.spec.hard["count/hostclaims.metal3.io"] == "4"
    bound = {
        (b.role_ref.name, s.name) for b in rbac.list_namespaced_role_binding(TENANT).items for s in b.subjects or []
    }
    for role in ("baremetal-tenancy-tenant", "baremetal-tenancy-tenant-workloads"):
        assert (role, "alice@example.com") in bound, bound
    # the tenant's own repository, as the example names it on the Git server
    source = fleet["custom"].get_namespaced_custom_object(
        "source.toolkit.fluxcd.io", "v1", TENANT, "gitrepositories", TENANT
    )
    assert source["spec"]["url"] == git_server.url(TENANT_REPO)
    sync = fleet["custom"].get_namespaced_custom_object(
        "kustomize.toolkit.fluxcd.io", "v1", TENANT, "kustomizations", TENANT
    )
    assert sync["spec"]["decryption"] == {"provider": "sops", "secretRef": {"name": "sops-age"}}
    # the shared chart from the example's charts repository, installed as the tenant with its greeting
    release = wait_ready(admin, "HelmRelease", TENANT, "web", timeout=HELM_TIMEOUT)
    assert release["spec"]["serviceAccountName"] == "gitops-reconciler"
    assert release["spec"]["values"] == {"greeting": "hello from team-a"}
    chart_source = wait_ready(admin, "GitRepository", TENANT, "web-chart")
    assert chart_source["spec"]["url"] == git_server.url(CHARTS)
    greeting = core.read_namespaced_config_map("web-greeting", TENANT)
    assert greeting.data == {"greeting": "hello from team-a"}


def test_the_tenants_repository_decrypts_with_the_key_handed_over_outside_git(fleet, admin):
    core = client.CoreV1Api(admin)
    # The header's next step: the tenant's age private key into sops-age in its namespace.
    body = {"metadata": {"name": "sops-age", "namespace": TENANT}, "stringData": {"age.agekey": fleet["key"]}}
    kube.call_ignoring(409, core.create_namespaced_secret, TENANT, body)
    # flux reconcile kustomization team-a -n team-a: do not wait out the example's one-minute interval
    request_reconcile(admin, "Kustomization", TENANT, TENANT)
    wait_ready(admin, "Kustomization", TENANT, TENANT, timeout=180)
    assert (
        core.read_namespaced_config_map("hello", TENANT).metadata.labels["kustomize.toolkit.fluxcd.io/name"] == TENANT
    )
    secret = core.read_namespaced_secret("db", TENANT)
    assert base64.b64decode(secret.data["pw"]).decode() == PLAINTEXT


def test_offboard_example_removes_the_tenant(kube_env, fleet, git_server, admin):
    run = run_example(kube_env, fleet, git_server, "offboard", tenant_gitops_state="absent")
    assert run.ok, run.explain()
    result = run.result(COMMIT_TASK)
    assert git_server.head(FLEET) == result["commit"]
    removed = {f["path"] for f in result["files"] if f["action"] == "remove"}
    assert {f"tenants/{TENANT}/tenant.yaml", f"tenants/{TENANT}/sync.yaml"} <= removed
    files = git_server.files(FLEET)
    assert not [f for f in files if f.startswith(f"tenants/{TENANT}/")]
    assert "apps/base/web/release.yaml" in files  # shared: kept
    assert not kube.namespace_exists(admin, TENANT)
