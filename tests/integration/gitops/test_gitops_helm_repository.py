"""Charts from a Helm chart repository, per tenant, on the real Flux (issue 38, items 3 and 4).

A Helm (HTTP) chart repository runs in the test bed on 127.0.0.1
(``harness.chart_repo``: ``index.yaml`` and packaged ``.tgz`` charts, built by
the harness). The owner allows it for tenants as a cluster owner does: the
session's ``flux_install`` role is applied again with its URL added to
``flux_install_allowed_source_urls`` (the session's Git server stays), and the
session's list is put back at the end. Its chart ``web`` (a ConfigMap with a greeting and the chart's
version; optionally a Pod, restricted-compliant but for the container port
the values give) is released to two tenants by the ``tenant_gitops`` role,
through ``ansible-playbook``: the operator's repository gets one shared base
(a ``HelmRepository`` and a ``HelmRelease`` naming the chart and its version)
and, per tenant, an overlay with the tenant's values. The real source- and
helm-controller fetch the index and the package and install the chart as the
tenant's reconciler ServiceAccount.

What is shown, step by step (one module-scoped story):

1. each tenant gets the chart by name and version from the repository, with
   its own values; its namespace lists the repository as allowed;
2. a chart version bump in the operator's repository (``version`` of the
   app) upgrades every tenant's release (Helm's second revision, the new
   chart's ConfigMap);
3. a pod control of ``tenant_namespace`` (``allowed-ports``, switched on by
   the operator's repository) refuses the Pod of a tenant's release: the
   release fails, and its Ready condition carries the policy's message naming
   the field; no Pod exists;
4. a tenant that may write Flux sources in its own repository cannot point a
   release at a repository the owner did not allow it, at either of the two
   levels: another repository on the owner's allowed chart server is refused
   by ``tenant_gitops``'s policy ``baremetal-tenancy-helm-repositories`` (the
   tenant's own chart repositories), and a repository the owner lists for the
   tenant in ``tenant_gitops`` but not in ``flux_install``'s source allow-list
   is still refused by ``baremetal-tenancy-flux-source-urls`` (the cluster's
   allowed servers); each with the URL and the allowed ones on the tenant's
   Kustomization, and neither is created;
5. offboarding removes the releases with the tenants; the opt-in pod control
   is switched off again (the session's other suites do not expect it).

Runs only under ``-m gitops`` (``make test-gitops``).
"""

from __future__ import annotations

import copy
import time

import pytest
import yaml
from harness import kube
from harness.chart_repo import ChartRepository
from harness.flux import COMMIT_TASK, operator_repository, ready_condition, run_tenant_gitops, wait_ready
from kubernetes import client

pytestmark = pytest.mark.gitops

FLEET = "fleet-helm-repo"
A, B = "h6-a", "h6-b"
TENANT_REPO = "h6-a-own"
RECONCILER = "gitops-reconciler"
INTERVAL = "10s"
HELM_TIMEOUT = 240
# A platform team's grant for tenants that declare their own releases in their repository.
FLUX_ROLE = "h6-tenant-helm"
ROLES = ["baremetal-tenancy-tenant", "baremetal-tenancy-tenant-workloads"]
ANNOTATION = "baremetal.tenancy/helm-repositories"
# On no server the owner allows tenants' sources from (flux_install_allowed_source_urls).
DISALLOWED = "http://127.0.0.1:9/charts"
SOURCE_POLICY = "baremetal-tenancy-flux-source-urls"

VALUES = (
    "greeting: hello\n"
    "# A Pod that every default pod control admits, listening on pod.port.\n"
    "pod:\n"
    "  enabled: false\n"
    "  port: 8080\n"
)
TEMPLATES = {
    "templates/configmap.yaml": (
        "apiVersion: v1\n"
        "kind: ConfigMap\n"
        "metadata:\n"
        "  name: {{ .Release.Name }}-greeting\n"
        "data:\n"
        "  greeting: {{ .Values.greeting | quote }}\n"
        "  chart: {{ .Chart.Version | quote }}\n"
    ),
    "templates/pod.yaml": (
        "{{- if .Values.pod.enabled }}\n"
        "apiVersion: v1\n"
        "kind: Pod\n"
        "metadata:\n"
        "  name: {{ .Release.Name }}-server\n"
        "spec:\n"
        "  securityContext:\n"
        "    runAsNonRoot: true\n"
        "    runAsUser: 1000\n"
        "    seccompProfile: {type: RuntimeDefault}\n"
        "  containers:\n"
        "    - name: server\n"
        "      image: registry.k8s.io/pause:3.10\n"
        "      ports:\n"
        "        - containerPort: {{ .Values.pod.port }}\n"
        "      securityContext:\n"
        "        allowPrivilegeEscalation: false\n"
        "        capabilities: {drop: [ALL]}\n"
        "{{- end }}\n"
    ),
}


def chart_files(version: str) -> dict[str, str]:
    chart = f"apiVersion: v2\nname: web\ndescription: a greeting in a ConfigMap\nversion: {version}\n"
    return {"Chart.yaml": chart, "values.yaml": VALUES, **TEMPLATES}


def greeting(tenant: str) -> str:
    return f"hello from {tenant}"


def tenant(name: str, *extra_releases: dict, **keys) -> dict:
    return {
        "name": name,
        "users": [f"{name}-user"],
        "cluster_roles": ROLES,
        "releases": [{"name": "web", "app": "web", "values": {"greeting": greeting(name)}}, *extra_releases],
        **keys,
    }


PORTS = {"name": "ports", "app": "web", "values": {"pod": {"enabled": True, "port": 22}}}
# The pod controls for step 3: the defaults and allowed-ports (the other opt-in controls are tested without Flux).
DEFAULT_CONTROLS = [
    "no-privileged",
    "allowed-registries",
    "no-host-path",
    "no-host-ports",
    "run-as-non-root",
    "seccomp",
]
PORT_CONTROL = {
    "tenant_namespace_pod_controls": [*DEFAULT_CONTROLS, "allowed-ports"],
    "tenant_namespace_allowed_ports": [{"min": 8000, "max": 8999}],
}


@pytest.fixture(scope="module")
def fleet(admin, kube_env, metal3_env, flux_env, git_server, tmp_path_factory):
    """The chart repository (web 0.1.0), the operator's repository applied by Flux and a clone of it."""
    assert "helm-controller" in flux_env.controllers, "the session's Flux runs without helm-controller"
    workdir = tmp_path_factory.mktemp("gitops-helm-repo")
    charts = ChartRepository(workdir / "chart-repo").start()
    charts.publish("web", "0.1.0", chart_files("0.1.0"))
    checkout = operator_repository(admin, git_server, FLEET, workdir / "checkout", INTERVAL)
    state = {"workdir": workdir, "checkout": checkout, "charts": charts, "version": "0.1.0"}
    session_urls = list(flux_env.allowed_source_urls)
    try:
        # The owner allows the chart repository for tenants in flux_install's source allow-list: without it the
        # role's admission policy refuses the tenants' HelmRepository (only the session's Git server is allowed).
        flux_env.allow_source_urls([*session_urls, charts.url])
        yield state
    finally:
        # Whatever failed: no tenant left, and the opt-in pod control off (the session's other suites run after).
        run_role(kube_env, state, "teardown-absent", [tenant(A), tenant(B)], state="absent")
        run_role(kube_env, state, "teardown-defaults", [])
        kube.call_ignoring(404, client.RbacAuthorizationV1Api(admin).delete_cluster_role, FLUX_ROLE)
        flux_env.allow_source_urls(session_urls)
        charts.stop()


def apps(fleet) -> list[dict]:
    chart = {"repository": fleet["charts"].url, "name": "web", "version": fleet["version"], "interval": INTERVAL}
    return [{"name": "web", "chart": chart, "values": {"greeting": "hello"}, "interval": INTERVAL}]


def run_role(kube_env, fleet, name: str, tenants: list[dict], state: str = "present", **variables):
    return run_tenant_gitops(
        kube_env,
        fleet["checkout"],
        fleet["workdir"] / name,
        FLEET,
        copy.deepcopy(tenants),
        state,
        interval=INTERVAL,
        tenant_gitops_apps=apps(fleet),
        **variables,
    )


def config_map(admin, name: str, namespace: str):
    return kube.call_ignoring(404, client.CoreV1Api(admin).read_namespaced_config_map, name, namespace)


def release_secrets(admin, namespace: str, release: str) -> list[str]:
    items = client.CoreV1Api(admin).list_namespaced_secret(namespace, label_selector=f"owner=helm,name={release}").items
    return sorted(s.metadata.name for s in items)


def wait_config_map(admin, name: str, namespace: str, data: dict, timeout: float = HELM_TIMEOUT):
    deadline = time.monotonic() + timeout
    while True:
        cm = config_map(admin, name, namespace)
        if cm is not None and cm.data == data:
            return cm
        assert time.monotonic() < deadline, (namespace, name, cm and cm.data)
        time.sleep(1)


# --------------------------------------------------------------------------
# 1-2: the chart by name and version, then a version bump
# --------------------------------------------------------------------------


def test_each_tenant_gets_the_chart_from_the_helm_repository_with_its_own_values(kube_env, fleet, admin):
    run = run_role(kube_env, fleet, "onboard", [tenant(A), tenant(B)])
    assert run.ok, run.explain()
    files = {f["path"]: f["action"] for f in run.result(COMMIT_TASK)["files"]}
    assert files["apps/base/web/source.yaml"] == "create"
    custom = client.CustomObjectsApi(admin)
    for name in (A, B):
        release = wait_ready(admin, "HelmRelease", name, "web", timeout=HELM_TIMEOUT)
        spec = release["spec"]["chart"]["spec"]
        assert (spec["chart"], spec["version"]) == ("web", "0.1.0"), spec
        assert spec["sourceRef"] == {"kind": "HelmRepository", "name": "web-chart"}, spec
        assert release["spec"]["serviceAccountName"] == RECONCILER
        source = wait_ready(admin, "HelmRepository", name, "web-chart")
        assert source["spec"]["url"] == fleet["charts"].url
        chart = custom.get_namespaced_custom_object("source.toolkit.fluxcd.io", "v1", name, "helmcharts", f"{name}-web")
        assert chart["status"]["artifact"]["revision"] == "0.1.0"
        wait_config_map(admin, "web-greeting", name, {"greeting": greeting(name), "chart": "0.1.0"})
        assert release_secrets(admin, name, "web") == ["sh.helm.release.v1.web.v1"]
        annotations = client.CoreV1Api(admin).read_namespace(name).metadata.annotations
        assert annotations[ANNOTATION] == fleet["charts"].url


def test_a_chart_version_bump_upgrades_every_tenants_release(kube_env, fleet, admin):
    fleet["charts"].publish("web", "0.2.0", chart_files("0.2.0"))
    fleet["version"] = "0.2.0"
    run = run_role(kube_env, fleet, "bump", [tenant(A), tenant(B)])
    assert run.ok, run.explain()
    result = run.result(COMMIT_TASK)
    # One file changes: the shared base's release; no tenant's overlay.
    assert {f["path"]: f["action"] for f in result["files"]} == {"apps/base/web/release.yaml": "update"}
    for name in (A, B):
        wait_config_map(admin, "web-greeting", name, {"greeting": greeting(name), "chart": "0.2.0"})
        release = wait_ready(admin, "HelmRelease", name, "web", timeout=HELM_TIMEOUT)
        assert release["status"]["history"][0]["chartVersion"] == "0.2.0", release["status"]
        assert release_secrets(admin, name, "web") == ["sh.helm.release.v1.web.v1", "sh.helm.release.v1.web.v2"]


# --------------------------------------------------------------------------
# 3: a pod control refuses a release's Pod
# --------------------------------------------------------------------------


def test_a_release_whose_pod_breaks_a_pod_control_fails_with_the_policy_message(kube_env, fleet, admin):
    run = run_role(kube_env, fleet, "ports", [tenant(A), tenant(B, PORTS)], **PORT_CONTROL)
    assert run.ok, run.explain()
    release = wait_ready(
        admin,
        "HelmRelease",
        B,
        "ports",
        status="False",
        timeout=HELM_TIMEOUT,
        message=f"Helm install failed for release {B}/ports",
    )
    message = ready_condition(release)["message"]
    print(f"HelmRelease {B}/ports Ready: {message}")
    assert f"Helm install failed for release {B}/ports" in message, message
    assert "ValidatingAdmissionPolicy 'baremetal-tenancy-allowed-ports'" in message, message
    assert "ports[].containerPort must be within the allowed ports (8000-8999); refused containers: server" in message
    assert client.CoreV1Api(admin).list_namespaced_pod(B).items == []
    # The tenant's other release is untouched.
    assert config_map(admin, "web-greeting", B).data == {"greeting": greeting(B), "chart": "0.2.0"}


# --------------------------------------------------------------------------
# 4: only the repositories the owner allows
# --------------------------------------------------------------------------


def own_release(url: str) -> str:
    """The tenant's own repository: a HelmRepository ``elsewhere`` at ``url`` and a release of its chart."""
    docs = [
        {
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "HelmRepository",
            "metadata": {"name": "elsewhere", "namespace": A},
            "spec": {"interval": INTERVAL, "url": url},
        },
        {
            "apiVersion": "helm.toolkit.fluxcd.io/v2",
            "kind": "HelmRelease",
            "metadata": {"name": "elsewhere", "namespace": A},
            "spec": {
                "interval": INTERVAL,
                "serviceAccountName": RECONCILER,
                "chart": {"spec": {"chart": "web", "sourceRef": {"kind": "HelmRepository", "name": "elsewhere"}}},
            },
        },
    ]
    return yaml.safe_dump_all(docs, sort_keys=False)


def wait_refused(admin, url: str) -> str:
    """The message of the tenant's Kustomization once it has failed on the HelmRepository at ``url``."""
    custom = client.CustomObjectsApi(admin)
    deadline = time.monotonic() + HELM_TIMEOUT
    while True:
        sync = kube.call_ignoring(
            404, custom.get_namespaced_custom_object, "kustomize.toolkit.fluxcd.io", "v1", A, "kustomizations", A
        )
        condition = ready_condition(sync or {})
        if condition.get("status") == "False" and f"spec.url {url} " in condition.get("message", ""):
            print(f"Kustomization {A}/{A} Ready: {condition['message']}")
            return condition["message"]
        assert time.monotonic() < deadline, f"Kustomization {A}/{A} not refused on {url}: {condition}"
        time.sleep(1)


def test_a_tenant_cannot_point_a_release_at_a_repository_the_owner_did_not_allow(kube_env, fleet, admin, git_server):
    rbac = client.RbacAuthorizationV1Api(admin)
    role = client.V1ClusterRole(
        metadata=client.V1ObjectMeta(name=FLUX_ROLE),
        rules=[
            client.V1PolicyRule(api_groups=["source.toolkit.fluxcd.io"], resources=["helmrepositories"], verbs=["*"]),
            client.V1PolicyRule(api_groups=["helm.toolkit.fluxcd.io"], resources=["helmreleases"], verbs=["*"]),
        ],
    )
    kube._create_or_keep(rbac.create_cluster_role, role)
    custom = client.CustomObjectsApi(admin)

    def nothing_created():
        sources = custom.list_namespaced_custom_object("source.toolkit.fluxcd.io", "v1", A, "helmrepositories")
        assert [o["metadata"]["name"] for o in sources["items"]] == ["web-chart"]
        releases = custom.list_namespaced_custom_object("helm.toolkit.fluxcd.io", "v2", A, "helmreleases")
        assert [o["metadata"]["name"] for o in releases["items"]] == ["web"]

    # Another repository on the chart server the owner allows (flux_install's policy admits it), but not one of the
    # tenant's chart repositories: tenant_gitops's policy refuses it.
    other = f"{fleet['charts'].url}/other"
    git_server.create_repo(TENANT_REPO)
    git_server.commit(TENANT_REPO, {"release.yaml": own_release(other)}, "a chart from another repository")
    with_repo = tenant(
        A,
        cluster_roles=[*ROLES, FLUX_ROLE],
        repository={"url": git_server.url(TENANT_REPO), "interval": INTERVAL},
    )
    run = run_role(kube_env, fleet, "own-repo", [with_repo, tenant(B, PORTS)], **PORT_CONTROL)
    assert run.ok, run.explain()
    message = wait_refused(admin, other)
    assert "ValidatingAdmissionPolicy 'baremetal-tenancy-helm-repositories'" in message, message
    assert (
        f"HelmRepository elsewhere: spec.url {other} is not a chart repository the owner allows in namespace {A}"
        f" (allowed: [{fleet['charts'].url}])"
    ) in message, message
    nothing_created()

    # A repository the owner lists for the tenant in tenant_gitops but not in flux_install's source allow-list: the
    # cluster's allow-list still refuses it (both policies apply; listing it for one tenant does not widen the cluster's).
    # (the owner's list first, then the tenant's commit: committed first, Flux could apply it while the tenant's
    # policy still refused it, and that refusal is not the one this step is about)
    listed = {**with_repo, "helm_repositories": [DISALLOWED]}
    run = run_role(kube_env, fleet, "own-repo-listed", [listed, tenant(B, PORTS)], **PORT_CONTROL)
    assert run.ok, run.explain()
    annotation = client.CoreV1Api(admin).read_namespace(A).metadata.annotations[ANNOTATION]
    assert sorted(annotation.split()) == sorted([fleet["charts"].url, DISALLOWED])
    git_server.commit(TENANT_REPO, {"release.yaml": own_release(DISALLOWED)}, "a chart from elsewhere")
    message = wait_refused(admin, DISALLOWED)
    assert f"ValidatingAdmissionPolicy '{SOURCE_POLICY}'" in message, message
    allowed = ", ".join([git_server.base_url, fleet["charts"].url])
    assert (
        f"HelmRepository elsewhere: spec.url {DISALLOWED} is not an allowed source URL for tenants (allowed: {allowed})"
    ) in message, message
    nothing_created()


# --------------------------------------------------------------------------
# 5: offboarding
# --------------------------------------------------------------------------


def test_offboarding_removes_the_releases_and_the_opt_in_control_goes(kube_env, fleet, admin):
    run = run_role(kube_env, fleet, "offboard", [tenant(A), tenant(B, PORTS)], state="absent")
    assert run.ok, run.explain()
    assert not kube.namespace_exists(admin, A) and not kube.namespace_exists(admin, B)
    run = run_role(kube_env, fleet, "defaults", [])
    assert run.ok, run.explain()
    admission = client.AdmissionregistrationV1Api(admin)
    names = {p.metadata.name for p in admission.list_validating_admission_policy().items}
    assert "baremetal-tenancy-allowed-ports" not in names
    assert "baremetal-tenancy-helm-repositories" in names
