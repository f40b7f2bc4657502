#!/usr/bin/python
# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


DOCUMENTATION = r"""
module: tenancy_posture
short_description: Report every deviation of a cluster from the tenancy model
version_added: 0.1.0
description:
  - Reads the cluster (lists only, nothing is written) and reports each deviation from the soft multi-tenancy model
    with the object that causes it, for a scheduled job or a pre-flight check.
  - "Flux: each of O(flux_controllers) is a Deployment in O(flux_namespace) whose container runs with Flux's
    multi-tenancy lockdown flags: C(--no-cross-namespace-refs=true) and C(--default-service-account) on
    kustomize-controller and helm-controller, C(--no-remote-bases=true) on kustomize-controller."
  - "Tenants (namespaces carrying O(tenant_label)): every Kustomization and HelmRelease names a ServiceAccount
    (O(service_account) when given) and takes its sources from its own namespace; every GitRepository,
    HelmRepository and OCIRepository points at a URL of O(allowed_source_urls) (or the tenant's
    O(tenant_source_urls)): equal to an entry or under it (the entry followed by C(/))."
  - "Tenant namespaces: a ResourceQuota, a default-deny NetworkPolicy (every pod, Ingress and Egress, no rule), the
    label C(pod-security.kubernetes.io/enforce) at C(baseline) or C(restricted), and a binding of every admission
    policy of O(required_policies) that applies to the namespace."
  - "Metal3: every BareMetalHost is covered by a sharing policy (a valid C(baremetal.tenancy/host-claim-namespaces)
    annotation, or a HostDeployPolicy in its namespace), and every HostDeployPolicy's C(nameMatches) is anchored
    (C(^...$) without a top-level C(|)): baremetal-operator searches it unanchored."
  - A kind the cluster does not serve (no Flux or no Metal3 CRDs) counts as no objects and is listed in RV(not_served).
author:
  - Baremetal Tenancy Contributors (@baremetal-tenancy)
extends_documentation_fragment:
  - baremetal.tenancy.kubernetes_auth
  - baremetal.tenancy.tls
  - baremetal.tenancy.attributes
  - baremetal.tenancy.attributes.platform
  - baremetal.tenancy.attributes.info_module
attributes:
  check_mode:
    support: full
    details: The module only reads.
options:
  flux_namespace:
    description: The namespace of the shared Flux controllers.
    type: str
    default: flux-system
  flux_controllers:
    description: The Flux controllers that must run locked down (source-controller has no lockdown flag to check).
    type: list
    elements: str
    choices: [kustomize-controller, helm-controller, source-controller]
    default: [kustomize-controller, helm-controller]
  tenant_label:
    description: The namespace label that makes a namespace a tenant's (as the C(baremetal.tenancy.tenant_namespace) role sets it).
    type: str
    default: baremetal.tenancy/tenant
  service_account:
    description:
      - The ServiceAccount every tenant Kustomization and HelmRelease must name (the C(baremetal.tenancy.tenant_gitops)
        role's C(tenant_gitops_reconciler)). When not given, any name will do, but one must be named.
    type: str
  allowed_source_urls:
    description:
      - URLs every tenant's Flux sources may point at (the C(baremetal.tenancy.flux_install) role's
        C(flux_install_allowed_source_urls)). Empty, no tenant source is allowed.
    type: list
    elements: str
    default: []
  tenant_source_urls:
    description: More allowed URLs for one tenant, by namespace name.
    type: dict
    default: {}
  required_policies:
    description:
      - The ValidatingAdmissionPolicies that must exist and be bound to every tenant namespace.
      - When not given, every ValidatingAdmissionPolicy carrying O(managed_label), or its key with the value followed
        by a dot and a role's name (C(baremetal.tenancy.flux_install), the policy on tenants' source URLs).
    type: list
    elements: str
  managed_label:
    description: The C(key=value) label of the collection's admission policies (for the default of O(required_policies)).
    type: str
    default: app.kubernetes.io/managed-by=baremetal.tenancy
  fail_on_deviation:
    description:
      - Fail (with the whole report in the result) when there is any deviation, so that a scheduled job's status
        shows it. Otherwise the module succeeds and RV(ok) tells.
    type: bool
    default: false
seealso:
  - module: baremetal.tenancy.tenant_check
"""

EXAMPLES = r"""
- name: Check the cluster's tenancy posture every night, failing the job on any deviation
  baremetal.tenancy.tenancy_posture:
    service_account: gitops-reconciler
    allowed_source_urls:
      - https://git.example.com/tenants
    fail_on_deviation: true

- name: Report deviations without failing
  baremetal.tenancy.tenancy_posture:
    allowed_source_urls: [https://git.example.com/tenants]
  register: posture

- name: Show them
  ansible.builtin.debug:
    msg: "{{ posture.deviations | map(attribute='object') | list }}"
  when: not posture.ok
"""

RETURN = r"""
ok:
  description: Whether there is no deviation.
  returned: always
  type: bool
deviations:
  description: Every deviation, ordered by check, then object.
  returned: always
  type: list
  elements: dict
  contains:
    check:
      description: >-
        Which check: V(flux_lockdown), V(tenant_service_account), V(tenant_cross_namespace_source),
        V(tenant_source_url), V(namespace_quota), V(namespace_network_policy), V(namespace_pod_security),
        V(namespace_admission_binding), V(host_sharing) or V(deploy_policy_anchoring).
      type: str
    kind:
      description: The kind of the object that causes it.
      type: str
    namespace:
      description: Its namespace (null for a cluster-scoped object).
      type: str
    name:
      description: Its name.
      type: str
    object:
      description: C(Kind namespace/name) (or C(Kind name)).
      type: str
    cause:
      description: What is wrong.
      type: str
  sample:
    - check: flux_lockdown
      kind: Deployment
      namespace: flux-system
      name: kustomize-controller
      object: Deployment flux-system/kustomize-controller
      cause: --no-remote-bases is not set
counts:
  description: The number of deviations per check (every check named, 0 included).
  returned: always
  type: dict
  sample: {flux_lockdown: 1, namespace_quota: 0}
tenants:
  description: The tenant namespaces checked.
  returned: always
  type: list
  elements: str
required_policies:
  description: The admission policies each tenant namespace had to have bound.
  returned: always
  type: list
  elements: str
not_served:
  description: The kinds the cluster does not serve (read as no objects).
  returned: always
  type: list
  elements: str
"""

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.base import TenancyModule
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.client import KubeIO
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.connection import kube_api_client
from ansible_collections.baremetal.tenancy.plugins.module_utils.posture.options import check_options
from ansible_collections.baremetal.tenancy.plugins.module_utils.posture.read import posture, read_cluster


class TenancyPostureModule(TenancyModule):
    object_kind = "tenancy posture"
    backends = ("metal3",)
    argument_spec = dict(
        flux_namespace=dict(type="str", default="flux-system"),
        flux_controllers=dict(
            type="list",
            elements="str",
            choices=["kustomize-controller", "helm-controller", "source-controller"],
            default=["kustomize-controller", "helm-controller"],
        ),
        tenant_label=dict(type="str", default="baremetal.tenancy/tenant"),
        service_account=dict(type="str"),
        allowed_source_urls=dict(type="list", elements="str", default=[]),
        tenant_source_urls=dict(type="dict", default={}),
        required_policies=dict(type="list", elements="str"),
        managed_label=dict(type="str", default="app.kubernetes.io/managed-by=baremetal.tenancy"),
        fail_on_deviation=dict(type="bool", default=False),
    )

    def run(self):
        params = check_options(self.params)
        not_served: list[str] = []
        objects = read_cluster(KubeIO(kube_api_client(self.params)), params["flux_namespace"], not_served)
        self.result.update(posture(objects, params))
        self.result["not_served"] = not_served
        if params["fail_on_deviation"] and not self.result["ok"]:
            shown = self.result["deviations"][:5]
            more = len(self.result["deviations"]) - len(shown)
            self.module.fail_json(
                msg="%d deviation(s) from the tenancy model: %s%s"
                % (
                    len(self.result["deviations"]),
                    "; ".join("%s: %s" % (d["object"], d["cause"]) for d in shown),
                    "; and %d more" % more if more else "",
                ),
                **self.result,
            )


def main():
    TenancyPostureModule()()


if __name__ == "__main__":
    main()
