"""HelmReleases per tenant from a shared base, by Git: the tenant_gitops role's releases on the real Flux (issue 19).

A small chart (``web``: a ConfigMap holding a greeting; a value that puts the
ConfigMap into another namespace; a value that adds a bare Pod with a
privileged container) is kept in Git, in a charts repository on the local Git
server. The tenant_gitops role, through ``ansible-playbook``, commits to the
cluster operator's repository one shared base for the app
(``apps/base/web/``: a HelmRelease and the GitRepository of its chart) and,
per release of a tenant, a Kustomize overlay that puts the base into the
tenant's namespace with the tenant's values. The real source-, kustomize- and
helm-controller, locked down (``--no-cross-namespace-refs``,
``--default-service-account``, ``--no-remote-bases``), apply and install it;
helm-controller impersonates the tenant's reconciler ServiceAccount, which
holds the tenant's own ClusterRoles.

What is shown, step by step (one module-scoped story; each step asserts its
own part):

1. check mode with ``--diff`` shows the shared base and each tenant's overlay
   and changes nothing;
2. two tenants get a release each from the same base with different values:
   each tenant's ConfigMap carries its own value, in its own namespace; the
   chart source, the HelmChart and Helm's release records are in the tenant's
   namespace; the base is never applied by itself;
3. releases are installed as the tenant: a release whose chart writes into the
   other tenant's namespace is refused by RBAC for the tenant's
   ServiceAccount, and the HelmRelease says so; a release with a privileged
   Pod is refused by Pod Security admission (the namespace is ``restricted``),
   the HelmRelease's Ready condition carries the refusal, and no Pod exists;
4. a second run commits nothing;
5. a bad release entry fails with one error naming the tenant, the entry and
   the cause, and commits nothing;
6. offboarding removes the tenants' directories: Flux prunes the releases with
   the namespaces; the shared base stays.

Runs only under ``-m gitops`` (``make test-gitops``).
"""

from __future__ import annotations

import copy

import pytest
from harness import kube
from harness.flux import COMMIT_TASK, operator_repository, ready_condition, run_tenant_gitops, wait_ready
from harness.git_server import git
from kubernetes import client

pytestmark = pytest.mark.gitops

FLEET = "fleet-helm"
CHARTS = "helm-charts"
A, B = "h5-a", "h5-b"
RECONCILER = "gitops-reconciler"
INTERVAL = "10s"
ROLES = ["baremetal-tenancy-tenant", "baremetal-tenancy-tenant-workloads"]
HELM_TIMEOUT = 240

# The shared chart, in Git. configNamespace and privilegedPod are what a tenant's values must not get through.
CHART = {
    "charts/web/Chart.yaml": "apiVersion: v2\nname: web\ndescription: a greeting in a ConfigMap\nversion: 0.1.0\n",
    "charts/web/values.yaml": (
        "greeting: hello\n"
        '# Namespace of the ConfigMap ("" is the release\'s own).\n'
        'configNamespace: ""\n'
        "# A bare Pod with a privileged container.\n"
        "privilegedPod: false\n"
    ),
    "charts/web/templates/configmap.yaml": (
        "apiVersion: v1\n"
        "kind: ConfigMap\n"
        "metadata:\n"
        "  name: {{ .Release.Name }}-greeting\n"
        "  {{- with .Values.configNamespace }}\n"
        "  namespace: {{ . }}\n"
        "  {{- end }}\n"
        "data:\n"
        "  greeting: {{ .Values.greeting | quote }}\n"
    ),
    "charts/web/templates/pod.yaml": (
        "{{- if .Values.privilegedPod }}\n"
        "apiVersion: v1\n"
        "kind: Pod\n"
        "metadata:\n"
        "  name: {{ .Release.Name }}-debug\n"
        "spec:\n"
        "  containers:\n"
        "    - name: debug\n"
        "      image: registry.k8s.io/pause:3.10\n"
        "      securityContext:\n"
        "        privileged: true\n"
        "{{- end }}\n"
    ),
}


def greeting(tenant: str) -> str:
    return f"hello from {tenant}"


def tenant(name: str, *extra_releases: dict) -> dict:
    return {
        "name": name,
        "users": [f"{name}-user"],
        "cluster_roles": ROLES,
        "releases": [{"name": "web", "app": "web", "values": {"greeting": greeting(name)}}, *extra_releases],
    }


# The second commit: A's chart writes into B's namespace; B's chart holds a privileged Pod.
SPILL = {"name": "spill", "app": "web", "values": {"configNamespace": B}}
DEBUG = {"name": "debug", "app": "web", "values": {"privilegedPod": True}}


@pytest.fixture(scope="module")
def fleet(admin, metal3_env, flux_env, git_server, tmp_path_factory):
    """The charts repository, the operator's repository applied by Flux and a clone of it."""
    assert "helm-controller" in flux_env.controllers, "the session's Flux runs without helm-controller"
    workdir = tmp_path_factory.mktemp("gitops-helm")
    git_server.create_repo(CHARTS)
    git_server.commit(CHARTS, CHART, "the web chart")
    checkout = operator_repository(admin, git_server, FLEET, workdir / "checkout", INTERVAL)
    apps = [
        {
            "name": "web",
            "chart": {"url": git_server.url(CHARTS), "path": "charts/web", "interval": INTERVAL},
            "values": {"greeting": "hello"},
            "interval": INTERVAL,
        }
    ]
    return {"workdir": workdir, "checkout": checkout, "apps": apps, "custom": client.CustomObjectsApi(admin)}


def run_role(kube_env, fleet, name: str, tenants: list[dict], state: str = "present", *, check: bool = False):
    return run_tenant_gitops(
        kube_env,
        fleet["checkout"],
        fleet["workdir"] / name,
        FLEET,
        copy.deepcopy(tenants),
        state,
        interval=INTERVAL,
        check=check,
        tenant_gitops_apps=fleet["apps"],
    )


def server_head(git_server) -> str:
    return git_server.head(FLEET)


def server_files(git_server) -> list[str]:
    return git_server.files(FLEET)


def config_map(admin, name: str, namespace: str):
    return kube.call_ignoring(404, client.CoreV1Api(admin).read_namespaced_config_map, name, namespace)


def fleet_inventory(fleet) -> list[str]:
    obj = fleet["custom"].get_namespaced_custom_object(
        "kustomize.toolkit.fluxcd.io", "v1", "flux-system", "kustomizations", FLEET
    )
    return [e["id"] for e in obj["status"]["inventory"]["entries"]]


def release_files(tenant_name: str, release: str) -> set[str]:
    return {f"tenants/{tenant_name}/releases/{release}/{f}" for f in ("kustomization.yaml", "values-patch.yaml")}


BASE_FILES = {"apps/base/kustomization.yaml"} | {
    f"apps/base/web/{f}" for f in ("kustomization.yaml", "source.yaml", "release.yaml")
}


# --------------------------------------------------------------------------
# 1-2: check mode, then one release per tenant from the shared base
# --------------------------------------------------------------------------


def test_check_mode_shows_the_base_and_the_overlays_and_changes_nothing(kube_env, fleet, git_server, admin):
    head = server_head(git_server)
    run = run_role(kube_env, fleet, "check", [tenant(A), tenant(B)], check=True)
    assert run.ok, run.explain()
    result = run.result(COMMIT_TASK)
    files = {f["path"]: f["action"] for f in result["files"]}
    expected = (
        BASE_FILES
        | release_files(A, "web")
        | release_files(B, "web")
        | {f"tenants/{A}/tenant.yaml", f"tenants/{B}/tenant.yaml", "tenancy/policies.yaml"}
    )
    assert files == dict.fromkeys(expected, "create")
    diffs = {d["after_header"]: d["after"] for d in result["diff"]}
    assert f"greeting: {greeting(A)}" in diffs[f"tenants/{A}/releases/web/values-patch.yaml"]
    assert f"namespace: {A}" in diffs[f"tenants/{A}/releases/web/kustomization.yaml"]
    assert "- ../../../../apps/base/web" in diffs[f"tenants/{A}/releases/web/kustomization.yaml"]
    assert f"serviceAccountName: {RECONCILER}" in diffs["apps/base/web/release.yaml"]
    assert server_head(git_server) == head
    assert git("status", "--porcelain", cwd=fleet["checkout"]) == ""
    assert not kube.namespace_exists(admin, A) and not kube.namespace_exists(admin, B)


def test_each_tenant_gets_the_shared_chart_with_its_own_values(kube_env, fleet, git_server, admin):
    run = run_role(kube_env, fleet, "onboard", [tenant(A), tenant(B)])
    assert run.ok, run.explain()
    result = run.result(COMMIT_TASK)
    assert result["pushed"] and server_head(git_server) == result["commit"]
    custom = fleet["custom"]
    for name in (A, B):
        release = wait_ready(admin, "HelmRelease", name, "web", timeout=HELM_TIMEOUT)
        assert release["spec"]["serviceAccountName"] == RECONCILER
        assert release["spec"]["values"] == {"greeting": greeting(name)}
        # The chart source is the tenant's own (no namespace in the reference: --no-cross-namespace-refs).
        assert release["spec"]["chart"]["spec"]["sourceRef"] == {"kind": "GitRepository", "name": "web-chart"}
        wait_ready(admin, "GitRepository", name, "web-chart")
        chart = custom.get_namespaced_custom_object("source.toolkit.fluxcd.io", "v1", name, "helmcharts", f"{name}-web")
        assert chart["spec"]["chart"] == "charts/web"
        assert release["status"]["storageNamespace"] == name
        cm = config_map(admin, "web-greeting", name)
        assert cm is not None and cm.data == {"greeting": greeting(name)}
        # Helm's release records are Secrets of the tenant's namespace.
        secrets = client.CoreV1Api(admin).list_namespaced_secret(name, label_selector="owner=helm,name=web").items
        assert [s.metadata.name for s in secrets] == ["sh.helm.release.v1.web.v1"]
    # The shared base reaches the cluster only through the overlays, in the tenants' namespaces.
    inventory = fleet_inventory(fleet)
    flux_objects = sorted(i for i in inventory if "toolkit.fluxcd.io" in i)
    assert flux_objects == sorted(
        f"{ns}_{name}_{kind}"
        for ns in (A, B)
        for name, kind in (
            ("web", "helm.toolkit.fluxcd.io_HelmRelease"),
            ("web-chart", "source.toolkit.fluxcd.io_GitRepository"),
        )
    ), inventory


# --------------------------------------------------------------------------
# 3: installed as the tenant; Pod Security refuses the privileged Pod
# --------------------------------------------------------------------------


def test_second_commit_adds_a_release_to_each_tenant(kube_env, fleet, git_server):
    run = run_role(kube_env, fleet, "add", [tenant(A, SPILL), tenant(B, DEBUG)])
    assert run.ok, run.explain()
    result = run.result(COMMIT_TASK)
    assert {f["path"]: f["action"] for f in result["files"]} == dict.fromkeys(
        release_files(A, "spill") | release_files(B, "debug"), "create"
    )
    assert server_head(git_server) == result["commit"]


def test_a_release_is_installed_as_the_tenant_and_cannot_write_elsewhere(fleet, admin):
    release = wait_ready(
        admin,
        "HelmRelease",
        A,
        "spill",
        status="False",
        timeout=HELM_TIMEOUT,
        message=f'User "system:serviceaccount:{A}:{RECONCILER}" cannot',
    )
    message = ready_condition(release)["message"]
    print(f"HelmRelease {A}/spill Ready: {message}")
    assert f'User "system:serviceaccount:{A}:{RECONCILER}" cannot' in message, message
    assert f'in the namespace "{B}"' in message, message
    assert config_map(admin, "spill-greeting", B) is None
    assert config_map(admin, "spill-greeting", A) is None
    # The release reached the cluster renamed, with its own chart source, from the same base.
    assert release["spec"]["chart"]["spec"]["sourceRef"]["name"] == "spill-chart"
    assert release["spec"]["values"] == {"greeting": "hello", "configNamespace": B}
    # B's own release is untouched.
    assert config_map(admin, "web-greeting", B).data == {"greeting": greeting(B)}


def test_a_privileged_pod_in_a_tenant_chart_is_refused_and_the_release_reports_it(admin):
    release = wait_ready(
        admin,
        "HelmRelease",
        B,
        "debug",
        status="False",
        timeout=HELM_TIMEOUT,
        message=f"Helm install failed for release {B}/debug",
    )
    condition = ready_condition(release)
    message = condition["message"]
    print(f"HelmRelease {B}/debug Ready: {message}")
    assert f"Helm install failed for release {B}/debug" in message, condition
    assert 'violates PodSecurity "restricted:latest"' in message, condition
    assert 'privileged (container "debug" must not set securityContext.privileged=true)' in message, condition
    assert client.CoreV1Api(admin).list_namespaced_pod(B).items == []
    wait_ready(admin, "HelmRelease", B, "web")


# --------------------------------------------------------------------------
# 4-5: idempotence, a bad release entry
# --------------------------------------------------------------------------


def test_second_run_commits_nothing(kube_env, fleet, git_server):
    head = server_head(git_server)
    run = run_role(kube_env, fleet, "again", [tenant(A, SPILL), tenant(B, DEBUG)])
    assert run.ok, run.explain()
    result = run.result(COMMIT_TASK)
    assert not result["changed"] and not result["pushed"] and result["files"] == []
    assert result["commit"] == head == server_head(git_server)


def test_a_bad_release_entry_is_one_error_and_changes_nothing(kube_env, fleet, git_server):
    head = server_head(git_server)
    bad = {"name": "extra", "app": "wbe", "values": {"greeting": "typo"}}
    run = run_role(kube_env, fleet, "bad", [tenant(A, SPILL), tenant(B, DEBUG, bad)])
    assert not run.ok
    expected = "tenants[1] (h5-b): releases[2] (extra): app 'wbe' is not one of the shared apps (web)"
    assert [f for f in run.failures() if expected in f], run.explain()
    assert COMMIT_TASK not in run.tasks
    assert server_head(git_server) == head
    assert git("status", "--porcelain", cwd=fleet["checkout"]) == ""


# --------------------------------------------------------------------------
# 6: offboarding
# --------------------------------------------------------------------------


def test_offboarding_removes_the_releases_with_the_tenants(kube_env, fleet, git_server, admin):
    run = run_role(kube_env, fleet, "offboard", [tenant(A, SPILL), tenant(B, DEBUG)], state="absent")
    assert run.ok, run.explain()
    result = run.result(COMMIT_TASK)
    assert server_head(git_server) == result["commit"]
    assert {f["path"] for f in result["files"]} == (
        release_files(A, "web")
        | release_files(A, "spill")
        | release_files(B, "web")
        | release_files(B, "debug")
        | {f"tenants/{A}/tenant.yaml", f"tenants/{B}/tenant.yaml"}
    )
    files = server_files(git_server)
    assert not [f for f in files if f.startswith("tenants/")]
    assert BASE_FILES <= set(files)  # shared: kept
    assert not kube.namespace_exists(admin, A) and not kube.namespace_exists(admin, B)
    inventory = fleet_inventory(fleet)
    assert not [i for i in inventory if i.startswith((f"{A}_", f"{B}_"))], inventory
    for name in (A, B):
        assert not fleet["custom"].list_namespaced_custom_object("helm.toolkit.fluxcd.io", "v2", name, "helmreleases")[
            "items"
        ]
