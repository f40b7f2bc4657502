# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The whole report on a cluster's objects (posture/read.py's posture()): every check applied, the required
policies taken from the collection's managed labels unless named."""

from ansible_collections.baremetal.tenancy.plugins.module_utils.posture import read

GOOD = {
    "flux_namespace": "flux-system",
    "flux_controllers": ["kustomize-controller", "helm-controller"],
    "tenant_label": "baremetal.tenancy/tenant",
    "service_account": None,
    "allowed_source_urls": ["https://git.example.com/t"],
    "tenant_source_urls": {"team-a": ["oci://ghcr.io/team-a"]},
    "required_policies": None,
    "managed_label": "app.kubernetes.io/managed-by=baremetal.tenancy",
    "fail_on_deviation": False,
}


def lockdown_deployment(name, args):
    return {
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "flux-system"},
        "spec": {"template": {"spec": {"containers": [{"name": "manager", "args": args}]}}},
    }


def cluster(**extra):
    objects = {key: [] for key in read.KINDS}
    objects["deployments"] = [
        lockdown_deployment(
            "kustomize-controller",
            ["--no-cross-namespace-refs=true", "--default-service-account=default", "--no-remote-bases=true"],
        ),
        lockdown_deployment("helm-controller", ["--no-cross-namespace-refs=true", "--default-service-account=default"]),
    ]
    objects.update(extra)
    return objects


def test_a_cluster_that_follows_the_model_has_no_deviation():
    ns = {
        "metadata": {
            "name": "t",
            "labels": {"baremetal.tenancy/tenant": "t", "pod-security.kubernetes.io/enforce": "restricted"},
        }
    }
    objects = cluster(
        namespaces=[ns, {"metadata": {"name": "kube-system"}}],
        quotas=[{"metadata": {"name": "q", "namespace": "t"}}],
        network_policies=[
            {
                "metadata": {"name": "d", "namespace": "t"},
                "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
            }
        ],
        admission_policies=[
            {"metadata": {"name": "mine", "labels": {"app.kubernetes.io/managed-by": "baremetal.tenancy"}}},
            {
                "metadata": {
                    "name": "flux",
                    "labels": {"app.kubernetes.io/managed-by": "baremetal.tenancy.flux_install"},
                }
            },
            {"metadata": {"name": "look-alike", "labels": {"app.kubernetes.io/managed-by": "baremetal.tenancyx"}}},
            {"metadata": {"name": "someone-elses"}},
        ],
        admission_bindings=[
            {"metadata": {"name": "b"}, "spec": {"policyName": "mine"}},
            {"metadata": {"name": "f"}, "spec": {"policyName": "flux"}},
        ],
    )
    out = read.posture(objects, GOOD)
    assert out["ok"] is True, out["deviations"]
    assert out["tenants"] == ["t"]
    assert out["required_policies"] == ["flux", "mine"]


def test_every_check_is_applied_and_required_policies_may_be_named():
    objects = cluster(
        deployments=[],
        namespaces=[{"metadata": {"name": "t", "labels": {"baremetal.tenancy/tenant": "t"}}}],
        git_repositories=[
            {"kind": "GitRepository", "metadata": {"name": "g", "namespace": "t"}, "spec": {"url": "https://evil"}}
        ],
        kustomizations=[{"kind": "Kustomization", "metadata": {"name": "k", "namespace": "t"}, "spec": {}}],
        hosts=[{"metadata": {"name": "h", "namespace": "infra"}}],
        deploy_policies=[
            {"metadata": {"name": "p", "namespace": "x"}, "spec": {"hostClaimNamespaces": {"nameMatches": "t"}}}
        ],
    )
    out = read.posture(objects, dict(GOOD, required_policies=["wanted"]))
    assert out["ok"] is False
    assert {check for check, count in out["counts"].items() if count} == {
        "flux_lockdown",
        "tenant_service_account",
        "tenant_source_url",
        "namespace_quota",
        "namespace_network_policy",
        "namespace_pod_security",
        "namespace_admission_binding",
        "host_sharing",
        "deploy_policy_anchoring",
    }
    assert out["required_policies"] == ["wanted"]
