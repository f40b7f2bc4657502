#!/usr/bin/python
# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


DOCUMENTATION = r"""
module: tenant_check
short_description: Check tenant definitions before anything is applied
version_added: 0.1.0
description:
  - Checks a list of tenants, the input of the C(baremetal.tenancy.tenant_namespace) role, with the rules that
    M(baremetal.tenancy.host_share) applies to tenant names too, and fails with one error naming the first bad tenant
    (C(tenants[2] (team-a))) and the cause. It reads and writes nothing, so a role can run it before its first change.
  - A tenant name is the name of its namespace, a DNS-1123 label. Each of O(tenants[].host_classes) is a non-empty label
    value. Each of O(tenants[].network_allows) is named by a lowercase DNS label of at most 32 characters.
    O(tenants[].quota) and O(tenants[].pod_security) may only use the keys of O(quota_keys) and O(pod_security_keys).
    A tenant may be listed once.
  - "A tenant may not be a namespace of Kubernetes or of the pool's infrastructure, where onboarding would give the
    tenant's users rights and offboarding would delete it: C(default), C(kube-system), C(kube-public),
    C(kube-node-lease), every name starting with C(kube-) or C(openshift-), C(metal3) (the BareMetalHosts and the
    binder), C(baremetal-operator-system) and C(flux-system), nor one of O(reserved_namespaces)."
  - Optionally checks the admission settings, O(pod_controls), O(policy_actions) and O(host_class_prefix).
  - "With O(apps) (the shared apps of the C(baremetal.tenancy.tenant_gitops) role), checks the apps and each tenant's
    O(tenants[].releases) against them, and fails with one error naming the entry
    (C(tenants[0] (team-a): releases[1] (site))) and the cause."
author:
  - Baremetal Tenancy Contributors (@baremetal-tenancy)
extends_documentation_fragment:
  - baremetal.tenancy.attributes
  - baremetal.tenancy.attributes.platform
  - baremetal.tenancy.attributes.info_module
options:
  tenants:
    description:
      - The tenants. Keys other than those below are not looked at.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: The tenant's name, which is the name of its namespace.
        type: str
        required: true
      host_classes:
        description: Host classes the tenant may claim (label values).
        type: list
        elements: str
      network_allows:
        description: Extra NetworkPolicies, each with a C(name).
        type: list
        elements: dict
      quota:
        description: Quota overrides, keys of O(quota_keys) only.
        type: dict
      pod_security:
        description: Pod Security overrides, keys of O(pod_security_keys) only.
        type: dict
      releases:
        description:
          - Helm releases of the tenant, each C(name) (a DNS-1123 label of at most 53 characters, listed once), C(app)
            (one of the names of O(apps)) and optional C(values) (a mapping). Checked only when O(apps) is given.
        type: list
        elements: dict
  apps:
    description:
      - The shared apps the tenants' O(tenants[].releases) install, each C(name) (a DNS-1123 label of at most 53
        characters, listed once), C(chart) (C(url) and C(path) of the chart in a Git repository, at most one of
        C(branch), C(tag) and C(commit), optional C(interval) and C(secret)), optional C(values) (a mapping) and
        C(interval).
      - Not checked, and the releases neither, when not given.
    type: list
    elements: dict
  reserved_namespaces:
    description:
      - More namespaces no tenant may be, on top of the built-in ones (for example the namespace of the BareMetalHosts
        and of the binder when it is not C(metal3), or other infrastructure of the cluster). Each is a DNS-1123 label.
    type: list
    elements: str
    default: []
  quota_keys:
    description: The keys a tenant's O(tenants[].quota) may use.
    type: list
    elements: str
    default: []
  pod_security_keys:
    description: The keys a tenant's O(tenants[].pod_security) may use.
    type: list
    elements: str
    default: []
  pod_controls:
    description: Pod controls to check against O(known_pod_controls). Not checked when not given.
    type: list
    elements: str
  known_pod_controls:
    description: The pod controls O(pod_controls) may name.
    type: list
    elements: str
    default: []
  policy_actions:
    description: Validation actions of admission policies, a non-empty list of V(Deny), V(Warn) and V(Audit). Not checked when not given.
    type: list
    elements: str
  host_class_prefix:
    description: Prefix of the namespace labels that grant host classes, a DNS subdomain followed by C(/). Not checked when not given.
    type: str
  port_ranges:
    description:
      - Container port ranges of the C(allowed-ports) pod control, each C(min) and C(max) (both included, 1 to 65535).
        Not checked when not given.
    type: list
    elements: dict
  group_ranges:
    description:
      - Group ID ranges of the C(group-ids) pod control by field (C(run_as_group), C(fs_group), C(supplemental_groups)),
        each a list of C(min) and C(max) (both included, 0 to 2147483647). Not checked when not given.
    type: dict
seealso:
  - module: baremetal.tenancy.host_share
"""

EXAMPLES = r"""
- name: Check the tenants before onboarding them
  baremetal.tenancy.tenant_check:
    tenants:
      - name: team-a
        host_classes: [small]
        quota: {hostclaims: 2}
    quota_keys: [hostclaims, secrets]
    reserved_namespaces: [bmh-infra]
    host_class_prefix: host-class.baremetal.tenancy/

- name: Check the shared apps and the tenants' releases of them
  baremetal.tenancy.tenant_check:
    tenants:
      - name: team-a
        releases:
          - {name: web, app: web, values: {replicas: 2}}
    apps:
      - name: web
        chart: {url: https://git.example.com/platform/charts.git, path: charts/web}
"""

RETURN = r"""
tenants:
  description: The tenants' names, in order.
  returned: success
  type: list
  elements: str
  sample: [team-a, team-b]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput, TenancyError
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.tenant_rules import (
    POLICY_ACTIONS,
    check_choices,
    check_id_ranges,
    check_reserved,
    check_tenants,
    label_prefix_problem,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.gitops.releases import check_apps, check_releases


def check(params):
    reserved = check_reserved(params["reserved_namespaces"])
    names = check_tenants(params["tenants"], params["quota_keys"], params["pod_security_keys"], reserved=reserved)
    if params["pod_controls"] is not None:
        check_choices(params["pod_controls"], params["known_pod_controls"], "pod_controls")
    if params["policy_actions"] is not None:
        if not params["policy_actions"]:
            raise InvalidInput("option policy_actions", "must name at least one of %s" % ", ".join(POLICY_ACTIONS))
        check_choices(params["policy_actions"], POLICY_ACTIONS, "policy_actions")
    if params["host_class_prefix"] is not None:
        problem = label_prefix_problem(params["host_class_prefix"])
        if problem:
            raise InvalidInput("option host_class_prefix", problem)
    if params["port_ranges"] is not None:
        check_id_ranges(params["port_ranges"], "port_ranges", "port")
    if params["group_ranges"] is not None:
        fields = ("run_as_group", "fs_group", "supplemental_groups")
        if sorted(params["group_ranges"]) != sorted(fields):
            raise InvalidInput("option group_ranges", "must have exactly the keys %s" % ", ".join(fields))
        for field in fields:
            check_id_ranges(params["group_ranges"][field], "group_ranges.%s" % field, "group")
    if params["apps"] is not None:
        check_releases(params["tenants"], check_apps(params["apps"]))
    return names


def main():
    module = AnsibleModule(
        argument_spec=dict(
            tenants=dict(type="list", elements="dict", required=True),
            reserved_namespaces=dict(type="list", elements="str", default=[]),
            quota_keys=dict(type="list", elements="str", default=[], no_log=False),
            pod_security_keys=dict(type="list", elements="str", default=[], no_log=False),
            pod_controls=dict(type="list", elements="str"),
            known_pod_controls=dict(type="list", elements="str", default=[]),
            policy_actions=dict(type="list", elements="str"),
            host_class_prefix=dict(type="str"),
            port_ranges=dict(type="list", elements="dict"),
            group_ranges=dict(type="dict"),
            apps=dict(type="list", elements="dict"),
        ),
        supports_check_mode=True,
    )
    try:
        names = check(module.params)
    except TenancyError as error:
        module.fail_json(msg=error.message, object=error.obj, cause=error.cause)
    module.exit_json(changed=False, tenants=names)


if __name__ == "__main__":
    main()
