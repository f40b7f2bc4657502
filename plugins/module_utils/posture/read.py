# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Read what the posture checks need from the cluster (lists only, no write) and run them.

Every request goes through the collection's one Kubernetes client
(:class:`metal3.client.KubeIO`).  A kind the cluster does not serve (no Flux,
no Metal3 CRDs: a 404 on its list) is read as no objects, and the report says
which kinds were missing in ``not_served``.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import NotFound
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.client import api_path
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share.sharing_policy import policy_problems
from ansible_collections.baremetal.tenancy.plugins.module_utils.posture import checks

#: name -> (group/version, plural, kind)
KINDS = {
    "deployments": ("apps/v1", "deployments", "Deployment"),
    "namespaces": ("v1", "namespaces", "Namespace"),
    "quotas": ("v1", "resourcequotas", "ResourceQuota"),
    "network_policies": ("networking.k8s.io/v1", "networkpolicies", "NetworkPolicy"),
    "admission_policies": (
        "admissionregistration.k8s.io/v1",
        "validatingadmissionpolicies",
        "ValidatingAdmissionPolicy",
    ),
    "admission_bindings": (
        "admissionregistration.k8s.io/v1",
        "validatingadmissionpolicybindings",
        "ValidatingAdmissionPolicyBinding",
    ),
    "git_repositories": ("source.toolkit.fluxcd.io/v1", "gitrepositories", "GitRepository"),
    "helm_repositories": ("source.toolkit.fluxcd.io/v1", "helmrepositories", "HelmRepository"),
    "oci_repositories": ("source.toolkit.fluxcd.io/v1", "ocirepositories", "OCIRepository"),
    "kustomizations": ("kustomize.toolkit.fluxcd.io/v1", "kustomizations", "Kustomization"),
    "helm_releases": ("helm.toolkit.fluxcd.io/v2", "helmreleases", "HelmRelease"),
    "hosts": ("metal3.io/v1alpha1", "baremetalhosts", "BareMetalHost"),
    "deploy_policies": ("metal3.io/v1alpha1", "hostdeploypolicies", "HostDeployPolicy"),
}


def read_cluster(io, flux_namespace: str, not_served: list[str]) -> dict[str, list[dict]]:
    """Every list the checks need (``kind`` filled in on each item); kinds not served are appended to
    ``not_served`` and read as ``[]``."""
    out = {}
    for key, (group_version, plural, kind) in KINDS.items():
        namespace = flux_namespace if key == "deployments" else None
        what = "%ss" % kind if not namespace else "%ss in namespace %s" % (kind, namespace)
        try:
            items = io.list_items(api_path(group_version, plural, namespace), what)
        except NotFound:
            not_served.append("%s (%s)" % (kind, group_version))
            items = []
        for item in items:
            item.setdefault("kind", kind)
        out[key] = items
    return out


def posture(objects: dict[str, list[dict]], params: dict[str, Any]) -> dict:
    """The report of every check on ``objects`` (as :func:`read_cluster` returns them)."""
    tenants = checks.tenant_namespaces(objects["namespaces"], params["tenant_label"])
    names = [ns["metadata"]["name"] for ns in tenants]
    required = params.get("required_policies")
    if required is None:
        managed = params["managed_label"]
        key, _sep, value = managed.partition("=")
        # the collection's roles: baremetal.tenancy (tenant_namespace), baremetal.tenancy.flux_install, ...
        required = sorted(
            p["metadata"]["name"]
            for p in objects["admission_policies"]
            if str((p["metadata"].get("labels") or {}).get(key, "")) in (value,)
            or str((p["metadata"].get("labels") or {}).get(key, "")).startswith(value + ".")
        )
    deviations = []
    deviations += checks.flux_controller_deviations(
        objects["deployments"], params["flux_namespace"], params["flux_controllers"]
    )
    deviations += checks.reconciler_deviations(
        objects["kustomizations"] + objects["helm_releases"], names, params.get("service_account")
    )
    deviations += checks.source_deviations(
        objects["git_repositories"] + objects["helm_repositories"] + objects["oci_repositories"],
        names,
        params["allowed_source_urls"],
        params.get("tenant_source_urls") or {},
    )
    deviations += checks.namespace_deviations(
        tenants,
        objects["quotas"],
        objects["network_policies"],
        objects["admission_policies"],
        objects["admission_bindings"],
        required,
    )
    deviations += checks.host_deviations(objects["hosts"], objects["deploy_policies"], policy_problems)
    deviations += checks.deploy_policy_deviations(objects["deploy_policies"])
    result = checks.report(deviations)
    result["tenants"] = names
    result["required_policies"] = list(required)
    return result
