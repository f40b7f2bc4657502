"""The tenancy posture check (``tenancy_posture``, issue 38, item 2) on a real cluster: each deviation from the
tenancy model is introduced and reported with the object that causes it.

On the session's apiserver with the shared Flux the ``flux_install`` role installed (``flux_env``) and
baremetal-operator's BareMetalHost CRD (``metal3_bmo_env``), the module runs through ``ansible-playbook`` as an owner
runs it. First a tenant namespace that follows the model (quota, default-deny NetworkPolicy, Pod Security
``restricted``, the admission bindings, a Kustomization naming its ServiceAccount and a source from the allowed Git
server) and a shared host: no deviation of the suite's objects. Then one deviation of each kind:

- kustomize-controller's Deployment without ``--no-remote-bases`` (patched, and restored afterwards; the running
  process is not touched);
- a tenant Kustomization without a ServiceAccount, one whose source is in another namespace, and a HelmRelease
  whose chart comes from another namespace;
- a tenant GitRepository outside the allowed URLs (created before its namespace became a tenant's, so that
  admission, which the test also shows refusing it, could not stop it);
- a tenant namespace without its quota, NetworkPolicy, Pod Security level and admission binding;
- a BareMetalHost no sharing policy covers, and one whose sharing policy is invalid;
- a HostDeployPolicy whose ``nameMatches`` is unanchored (the CRD is installed for the test when the session's
  baremetal-operator runs the proposal's dialect, and removed afterwards).

Each is found in ``deviations`` by check, kind, namespace and name; nothing that follows the model is reported;
with ``fail_on_deviation`` the task fails and says how many.

Runs only under ``-m gitops`` (``make test-gitops``).
"""

from __future__ import annotations

import dataclasses
import time

import pytest
import yaml
from harness import baremetal_operator, flux
from harness.ansible import localhost_play, run_playbook
from harness.kube import call_ignoring
from kubernetes import client

pytestmark = [pytest.mark.gitops, pytest.mark.real_bmo]

GOOD, BAD, LATE = "pst-good", "pst-bad", "pst-late"
INFRA, INFRA_POLICY = "pst-infra", "pst-infra-p"
TENANT_LABEL = "baremetal.tenancy/tenant"
SA = "gitops-reconciler"
TEST_POLICY = "pst-bound-only"
FLUX_POLICY = "baremetal-tenancy-flux-source-urls"
HDP_CRD = "hostdeploypolicies.metal3.io"
OURS = (GOOD, BAD, LATE, INFRA, INFRA_POLICY)


def flux_obj(kind: str, name: str, namespace: str, spec: dict) -> tuple[str, str, str, dict]:
    group, version, plural = {
        "GitRepository": ("source.toolkit.fluxcd.io", "v1", "gitrepositories"),
        "Kustomization": ("kustomize.toolkit.fluxcd.io", "v1", "kustomizations"),
        "HelmRelease": ("helm.toolkit.fluxcd.io", "v2", "helmreleases"),
        "HostDeployPolicy": ("metal3.io", "v1alpha1", "hostdeploypolicies"),
    }[kind]
    body = {"apiVersion": f"{group}/{version}", "kind": kind, "metadata": {"name": name, "namespace": namespace}}
    body["spec"] = spec
    return group, version, plural, body


def create(api, kind: str, name: str, namespace: str, spec: dict) -> dict:
    group, version, plural, body = flux_obj(kind, name, namespace, spec)
    return client.CustomObjectsApi(api).create_namespaced_custom_object(group, version, namespace, plural, body)


def tenant_objects(api, namespace: str) -> None:
    """What onboarding gives a tenant namespace: quota, default-deny NetworkPolicy."""
    core, net = client.CoreV1Api(api), client.NetworkingV1Api(api)
    core.create_namespaced_resource_quota(namespace, {"metadata": {"name": "q"}, "spec": {"hard": {"pods": "10"}}})
    net.create_namespaced_network_policy(
        namespace,
        {"metadata": {"name": "deny"}, "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}},
    )


def posture_run(kube_env, git_server, workdir, **options):
    args = {
        "service_account": SA,
        "allowed_source_urls": [git_server.base_url],
        "required_policies": [FLUX_POLICY, TEST_POLICY],
        **options,
    }
    play = localhost_play([{"name": "posture", "baremetal.tenancy.tenancy_posture": args, "register": "posture"}])
    return run_playbook(play, kube_env.ansible_env("admin"), workdir)


def ours(result: dict) -> set[tuple]:
    """The deviations of the suite's objects (the session's other suites have their own) and of Flux."""
    return {
        (d["check"], d["kind"], d["namespace"], d["name"])
        for d in result["deviations"]
        if d["namespace"] in OURS or d["name"] in OURS or d["name"] == TEST_POLICY or d["check"] == "flux_lockdown"
    }


@pytest.fixture(scope="module")
def world(metal3_bmo_env, flux_env, git_server, admin, tmp_path_factory):
    core = client.CoreV1Api(admin)
    ext = client.ApiextensionsV1Api(admin)
    adm = client.AdmissionregistrationV1Api(admin)
    installed_crd = False
    if not call_ignoring(404, ext.read_custom_resource_definition, HDP_CRD):
        crds = baremetal_operator.bmo_crds(baremetal_operator.bmo_dir(), claim_dialect="bmo")
        baremetal_operator.install_crds(admin, [c for c in crds if c["metadata"]["name"] == HDP_CRD])
        installed_crd = True
    psa = {"pod-security.kubernetes.io/enforce": "restricted"}
    for name, labels in (
        (GOOD, {TENANT_LABEL: GOOD, "pst": "bound", **psa}),
        (LATE, {}),
        (INFRA, {}),
        (INFRA_POLICY, {}),
    ):
        core.create_namespace({"metadata": {"name": name, "labels": labels}})
    tenant_objects(admin, GOOD)
    # a policy of the test, bound only to namespaces labelled pst=bound
    adm.create_validating_admission_policy(
        {
            "metadata": {"name": TEST_POLICY},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE"],
                            "resources": ["configmaps"],
                        }
                    ]
                },
                "validations": [{"expression": "true"}],
            },
        }
    )
    adm.create_validating_admission_policy_binding(
        {
            "metadata": {"name": TEST_POLICY},
            "spec": {
                "policyName": TEST_POLICY,
                "validationActions": ["Deny"],
                "matchResources": {"namespaceSelector": {"matchLabels": {"pst": "bound"}}},
            },
        }
    )
    create(
        admin,
        "GitRepository",
        "fleet",
        GOOD,
        {"interval": "10m", "url": git_server.url("pst"), "ref": {"branch": "main"}},
    )
    create(
        admin,
        "Kustomization",
        "fleet",
        GOOD,
        {
            "interval": "10m",
            "path": "./",
            "prune": True,
            "serviceAccountName": SA,
            "sourceRef": {"kind": "GitRepository", "name": "fleet"},
        },
    )
    hosts = dataclasses.replace(metal3_bmo_env, operator=None)  # objects only, in namespaces BMO does not watch
    hosts.create_host(INFRA, "pst-shared", policy={"matches": "pst-.*"})
    create(admin, "HostDeployPolicy", "tight", INFRA_POLICY, {"hostClaimNamespaces": {"nameMatches": "^(?:pst-.*)$"}})
    hosts.create_host(INFRA_POLICY, "pst-by-policy", index=2)
    apps = client.AppsV1Api(admin)
    original = apps.read_namespaced_deployment("kustomize-controller", flux.NAMESPACE)
    state = {"workdir": tmp_path_factory.mktemp("posture"), "hosts": hosts}
    try:
        yield state
    finally:
        container = original.spec.template.spec.containers[0]
        apps.patch_namespaced_deployment(
            "kustomize-controller",
            flux.NAMESPACE,
            {"spec": {"template": {"spec": {"containers": [{"name": container.name, "args": container.args}]}}}},
        )
        call_ignoring(404, adm.delete_validating_admission_policy_binding, TEST_POLICY)
        call_ignoring(404, adm.delete_validating_admission_policy, TEST_POLICY)
        for name in (GOOD, BAD, LATE, INFRA, INFRA_POLICY):
            call_ignoring(404, core.delete_namespace, name)
        if installed_crd:
            deadline = time.monotonic() + 60
            while call_ignoring(404, core.read_namespace, INFRA_POLICY) and time.monotonic() < deadline:
                time.sleep(1)
            call_ignoring(404, ext.delete_custom_resource_definition, HDP_CRD)


def test_1_a_cluster_that_follows_the_model_has_no_deviation_of_the_suite(world, kube_env, git_server):
    run = posture_run(kube_env, git_server, world["workdir"] / "clean")
    assert run.ok, run.explain()
    result = run.result("posture")
    assert ours(result) == set(), result["deviations"]
    assert GOOD in result["tenants"]
    assert result["not_served"] == [], result["not_served"]
    assert result["changed"] is False


def test_2_each_deviation_is_reported_by_the_object_that_causes_it(world, kube_env, git_server, admin):
    core = client.CoreV1Api(admin)
    # Flux: kustomize-controller without --no-remote-bases
    apps = client.AppsV1Api(admin)
    deployment = apps.read_namespaced_deployment("kustomize-controller", flux.NAMESPACE)
    container = deployment.spec.template.spec.containers[0]
    args = [a for a in container.args if not a.startswith("--no-remote-bases")]
    apps.patch_namespaced_deployment(
        "kustomize-controller",
        flux.NAMESPACE,
        {"spec": {"template": {"spec": {"containers": [{"name": container.name, "args": args}]}}}},
    )
    # tenant reconcilers
    create(
        admin,
        "Kustomization",
        "no-sa",
        GOOD,
        {"interval": "10m", "path": "./", "prune": False, "sourceRef": {"kind": "GitRepository", "name": "fleet"}},
    )
    create(
        admin,
        "Kustomization",
        "cross",
        GOOD,
        {
            "interval": "10m",
            "path": "./",
            "prune": False,
            "serviceAccountName": SA,
            "sourceRef": {"kind": "GitRepository", "name": "fleet", "namespace": flux.NAMESPACE},
        },
    )
    create(
        admin,
        "HelmRelease",
        "cross-chart",
        GOOD,
        {
            "interval": "10m",
            "serviceAccountName": SA,
            "chart": {
                "spec": {"chart": "web", "sourceRef": {"kind": "GitRepository", "name": "c", "namespace": "other"}}
            },
        },
    )
    # a source outside the allowed URLs: admission refuses it in a tenant namespace ...
    outside = {"interval": "10m", "url": "http://10.0.0.1/internal.git", "ref": {"branch": "main"}}
    with pytest.raises(client.exceptions.ApiException):
        create(admin, "GitRepository", "outside", GOOD, outside)
    # ... but one created before its namespace became a tenant's is there all the same
    create(admin, "GitRepository", "outside", LATE, outside)
    tenant_objects(admin, LATE)
    core.patch_namespace(
        LATE,
        {
            "metadata": {
                "labels": {TENANT_LABEL: LATE, "pst": "bound", "pod-security.kubernetes.io/enforce": "baseline"}
            }
        },
    )
    # a tenant namespace without quota, NetworkPolicy, Pod Security level or the test policy's binding
    core.create_namespace(
        {"metadata": {"name": BAD, "labels": {TENANT_LABEL: BAD, "pod-security.kubernetes.io/enforce": "privileged"}}}
    )
    # hosts and HostDeployPolicies
    world["hosts"].create_host(INFRA, "pst-unshared", index=3)
    world["hosts"].create_host(INFRA, "pst-invalid", index=4, policy='{"matches":"("}')
    create(admin, "HostDeployPolicy", "loose", INFRA_POLICY, {"hostClaimNamespaces": {"nameMatches": "pst"}})

    run = posture_run(kube_env, git_server, world["workdir"] / "deviations")
    assert run.ok, run.explain()
    result = run.result("posture")
    expected = {
        ("flux_lockdown", "Deployment", flux.NAMESPACE, "kustomize-controller"),
        ("tenant_service_account", "Kustomization", GOOD, "no-sa"),
        ("tenant_cross_namespace_source", "Kustomization", GOOD, "cross"),
        ("tenant_cross_namespace_source", "HelmRelease", GOOD, "cross-chart"),
        ("tenant_source_url", "GitRepository", LATE, "outside"),
        ("namespace_quota", "Namespace", None, BAD),
        ("namespace_network_policy", "Namespace", None, BAD),
        ("namespace_pod_security", "Namespace", None, BAD),
        ("namespace_admission_binding", "Namespace", None, BAD),
        ("host_sharing", "BareMetalHost", INFRA, "pst-unshared"),
        ("host_sharing", "BareMetalHost", INFRA, "pst-invalid"),
        ("deploy_policy_anchoring", "HostDeployPolicy", INFRA_POLICY, "loose"),
    }
    assert ours(result) == expected, yaml.safe_dump(result["deviations"])
    causes = {(d["kind"], d["name"]): d["cause"] for d in result["deviations"]}
    assert causes[("Deployment", "kustomize-controller")] == "--no-remote-bases is not set"
    assert "10.0.0.1" in causes[("GitRepository", "outside")]
    assert "'pst'" in causes[("HostDeployPolicy", "loose")]
    assert result["ok"] is False and result["counts"]["host_sharing"] >= 2


def test_3_fail_on_deviation_fails_the_task_naming_the_count(world, kube_env, git_server):
    run = posture_run(kube_env, git_server, world["workdir"] / "fail", fail_on_deviation=True)
    assert not run.ok
    result = run.result("posture")
    assert result["failed"] is True
    assert "deviation(s) from the tenancy model" in result["msg"]
    assert "Deployment flux-system/kustomize-controller: --no-remote-bases is not set" in result["msg"]
    assert len(result["deviations"]) >= 12
