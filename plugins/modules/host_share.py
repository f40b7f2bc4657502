#!/usr/bin/python
# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


DOCUMENTATION = r"""
module: host_share
short_description: Share the hosts of the pool with tenants, as their owner (BareMetalHost labels and sharing, Ironic node owners)
version_added: 0.1.0
description:
  - The owner's side of sharing a pool of hosts, on both control planes. M(baremetal.tenancy.host_lease) lends Ironic
    nodes to a tenant project for a time window; this module decides which hosts are in whose pool for good.
  - With O(backend=metal3), sets the labels of the C(BareMetalHosts) of O(namespace) (for example the host class that
    claims select) and their sharing policy, which decides which tenant namespaces may claim them. The policy is the
    annotation C(baremetal.tenancy/host-claim-namespaces), whose value is the policy as compact JSON, for example
    C({"withLabel":["baremetal.tenancy/tenant"]}).
    C(withLabel) lists namespace labels (the tenant label that the C(baremetal.tenancy.tenant_namespace) role puts on a
    tenant's namespace, for example), C(matches) an RE2 pattern that must match the whole namespace name; when both are
    set, a namespace must satisfy both.
  - The sharing depends on the HostClaim API the cluster serves (O(dialect)). On the Metal3 HostClaim proposal's (which
    the C(baremetal.tenancy.hostclaim_setup) role installs) it is the annotation above, per host. On baremetal-operator's
    own HostClaim (v0.14 and later) the hosts of a namespace are shared by C(HostDeployPolicy) objects in that namespace,
    not host by host - O(namespace_share) writes them, and O(hosts[].share) is refused.
  - With O(backend=ironic), sets the C(owner) of Ironic nodes to a Keystone project (the project whose pool the node is
    in, which may then lease it with M(baremetal.tenancy.host_lease) or claim it).
  - Entries of O(hosts) apply in order; a later entry wins for the same label, share or owner, and a selector sees the
    labels that earlier entries set.
  - The policy is an annotation because annotations survive Metal3's baremetal-operator, which writes hosts back with
    its typed objects and drops every spec field it does not know. C(spec.hostClaimNamespaces), where the policy lived
    before, is no longer read; when this module writes a host's sharing it removes that field in the same patch, so
    running it again migrates a host.
  - The hosts are read once; only the hosts that must change are written (Metal3 - one JSON merge patch of the labels,
    the sharing annotation and a leftover C(spec.hostClaimNamespaces), with the C(resourceVersion) read as
    precondition; Ironic - one PATCH of C(owner)). A second run changes nothing and writes nothing.
  - Every entry is checked before anything is read or written; a bad entry fails the task with one error naming the
    entry (C(hosts[2])) and the cause. With O(strict=true), a host name that is not a host, or a selector that matches
    no host, fails the task before any write, naming each.
author:
  - Baremetal Tenancy Contributors (@baremetal-tenancy)
extends_documentation_fragment:
  - baremetal.tenancy.backend
  - baremetal.tenancy.kubernetes_auth
  - baremetal.tenancy.openstack_auth
  - baremetal.tenancy.tls
  - baremetal.tenancy.attributes
  - baremetal.tenancy.attributes.platform
attributes:
  check_mode:
    support: full
    details: Reads the hosts and reports in RV(changes) what would change; writes nothing.
  diff_mode:
    support: full
    details:
      - The diff shows the labels and sharing policy (Metal3) or the C(owner) (Ironic) of each host that changes.
      - On baremetal-operator's dialect with O(namespace_share), it also shows the C(hostClaimNamespaces) of the
        collection's C(HostDeployPolicies) of O(namespace) before and after.
options:
  hosts:
    description:
      - What to do with which hosts, in order.
    type: list
    elements: dict
    required: true
    suboptions:
      names:
        description:
          - Names of the hosts (C(BareMetalHost) names; Ironic node names or UUIDs).
          - With O(hosts[].selector), a host must match both.
        type: list
        elements: str
      name:
        description:
          - One more host name, added to O(hosts[].names).
        type: str
      selector:
        description:
          - Labels the hosts carry, all of them, with exact values (O(backend=metal3)).
        type: dict
      class:
        description:
          - Sets the label O(class_label) to this value (O(backend=metal3)).
        type: str
      labels:
        description:
          - Labels to set; a V(null) value removes the label (O(backend=metal3)).
          - Values V(true) and V(false) are written as the strings C(true) and C(false), numbers as their text.
        type: dict
      share:
        description:
          - Sets the sharing policy, the annotation C(baremetal.tenancy/host-claim-namespaces), replacing what was there
            (O(backend=metal3)); a leftover C(spec.hostClaimNamespaces) is removed in the same patch.
          - Not given, sharing is left as it is; V({}) (no key set) stops sharing and removes the annotation.
          - Refused, before anything is written, on a cluster that serves baremetal-operator's HostClaim (see
            O(namespace_share)), with an error naming each such entry (C(hosts[1])).
        type: dict
        suboptions:
          tenants:
            description:
              - Tenant names (their namespaces); each adds C(<tenant_label>=<name>) to C(withLabel).
              - A namespace of Kubernetes or of the pool's infrastructure, which M(baremetal.tenancy.tenant_check)
                refuses as a tenant, is refused.
            type: list
            elements: str
          all_tenants:
            description: Adds C(<tenant_label>) to C(withLabel) (every onboarded tenant).
            type: bool
          with_labels:
            description: More C(withLabel) entries, C(key) or C(key=value).
            type: list
            elements: str
          matches:
            description: C(matches), an RE2 pattern that must match the whole namespace name. An invalid pattern is refused.
            type: str
      owner:
        description:
          - The project that owns the nodes, by name or ID, resolved in Keystone (O(backend=ironic)).
        type: str
  namespace_share:
    description:
      - The sharing of every host of O(namespace) (O(backend=metal3)), in the vocabulary of O(hosts[].share). Not
        given, the namespace's sharing is left as it is; V({}) (no key set) stops sharing.
      - Refused with O(backend=ironic).
      - On baremetal-operator's HostClaim dialect, the C(HostDeployPolicy) objects (C(metal3.io/v1alpha1)) of
        O(namespace) that the collection writes, named C(baremetal-tenancy-sharing) (only C(matches)) or
        C(baremetal-tenancy-sharing-<n>) (one per C(withLabel) entry, because a policy's C(hasLabels) wants all of
        its labels and policies are alternatives) and labelled C(app.kubernetes.io/managed-by=baremetal.tenancy).
        C(matches) becomes C(nameMatches) anchored as C(^(?:<pattern>)$), so that baremetal-operator's own
        controller, which searches the pattern anywhere in the name, and M(baremetal.tenancy.host_bind) admit the
        same namespaces. The collection's policies that are no longer wanted are deleted; policies without the
        label (an owner's own) are never changed, and one that has a wanted name fails the task before any write.
      - On the proposal's dialect, the sharing annotation of every host of O(namespace); an entry of O(hosts) that
        sets its own O(hosts[].share) wins for the hosts it picks.
    type: dict
    suboptions:
      tenants:
        description:
          - Tenant names (their namespaces); each adds C(<tenant_label>=<name>) to C(withLabel).
          - A namespace of Kubernetes or of the pool's infrastructure, which M(baremetal.tenancy.tenant_check) refuses
            as a tenant, is refused.
        type: list
        elements: str
      all_tenants:
        description: Adds C(<tenant_label>) to C(withLabel) (every onboarded tenant).
        type: bool
      with_labels:
        description: More C(withLabel) entries, C(key) or C(key=value).
        type: list
        elements: str
      matches:
        description: C(matches), an RE2 pattern that must match the whole namespace name. An invalid pattern is refused.
        type: str
  dialect:
    description:
      - Which HostClaim API the sharing is written for (O(backend=metal3)), read from the API server only when
        O(namespace_share) or a O(hosts[].share) is given.
      - V(auto) - the one the cluster serves; a cluster without any C(HostClaim) API gets the proposal's annotation.
        V(proposal) or V(bmo) insist on one, and fail when the cluster serves the other (V(bmo) also when it serves
        none).
    type: str
    choices: [auto, proposal, bmo]
    default: auto
  namespace:
    description:
      - Namespace of the C(BareMetalHosts) (O(backend=metal3)).
    type: str
    default: metal3
  class_label:
    description:
      - The host label that O(hosts[].class) sets (O(backend=metal3)).
    type: str
    default: infra-kind
  tenant_label:
    description:
      - The namespace label that marks a tenant, as the C(baremetal.tenancy.tenant_namespace) role sets it (O(backend=metal3)).
    type: str
    default: baremetal.tenancy/tenant
  strict:
    description:
      - Fail, changing nothing, when a named host does not exist or a selector matches no host.
      - With V(false), the other entries are applied and each such name or selector is reported in RV(problems) and as
        a warning.
    type: bool
    default: true
  verify_projects:
    description:
      - Whether O(hosts[].owner) is looked up in Keystone (O(backend=ironic)). Set V(false) only where the credentials
        cannot read projects; the owners must then be project IDs, used as given.
    type: bool
    default: true
notes:
  - Needs the owner's credentials - a Kubernetes identity that may list and patch C(BareMetalHosts) in O(namespace), or a
    system-scoped OpenStack administrator (Ironic lets only the system change a node's C(owner)). Tenant credentials are
    refused by the API server and by Ironic, and nothing changes.
  - With O(backend=ironic), project names are resolved in Keystone without a domain; give project IDs where a name is
    used in more than one domain.
seealso:
  - module: baremetal.tenancy.host_lease
  - module: baremetal.tenancy.host_bind
  - name: Metal3 HostClaim proposal
    description: The C(hostClaimNamespaces) policy (C(matches), C(withLabel)) that the sharing annotation holds.
    link: https://github.com/metal3-io/metal3-docs/blob/main/design/hostclaim-multitenancy-and-hybrid-clusters.md
  - name: Ironic node multi-tenancy
    description: Owner and lessee of Ironic nodes.
    link: https://docs.openstack.org/ironic/latest/admin/node-multitenancy.html
"""

EXAMPLES = r"""
- name: Classify and share the BareMetalHosts of namespace metal3
  baremetal.tenancy.host_share:
    namespace: metal3
    hosts:
      - names: [node-0, node-1, node-2]
        class: small
        share: {all_tenants: true}
      - selector: {vendor: dell, gpu: "true"}
        class: large
        share: {tenants: [team-b]}
      - names: [node-9]
        labels: {maintenance: "true"}
        share: {}

- name: Show what would change, changing nothing
  baremetal.tenancy.host_share:
    kubeconfig: /etc/metal3/admin.kubeconfig
    hosts:
      - selector: {rack: r7}
        share: {matches: "lab-.*"}
  check_mode: true
  diff: true

- name: Share the hosts of namespace metal3 with every tenant on baremetal-operator's HostClaim (HostDeployPolicies)
  baremetal.tenancy.host_share:
    namespace: metal3
    namespace_share: {all_tenants: true, matches: "team-.*"}
    hosts:
      - selector: {vendor: dell}
        class: large

- name: Put Ironic nodes into the pool of the infra project (as a system administrator)
  baremetal.tenancy.host_share:
    backend: ironic
    cloud: admin
    hosts:
      - names: [node-07, node-08]
        owner: infra
      - name: node-09
        owner: 4b7c0e5d2f1a4e8b9c3d6f7a8b9c0d1e
"""

RETURN = r"""
changes:
  description:
    - The hosts that changed (in check mode, that would change), each with what the module manages of it before and
      after.
  returned: always
  type: list
  elements: dict
  contains:
    host:
      description: Name of the host (the C(BareMetalHost), or the node's name, else its UUID).
      type: str
      sample: node-0
    before:
      description:
        - Metal3 - C(labels), C(sharing) (the policy the annotation C(baremetal.tenancy/host-claim-namespaces) holds,
          decoded; null without the annotation; the value itself, cut to 40 characters, when it is not JSON) and,
          while the host carries it, C(legacy_sharing) (its C(spec.hostClaimNamespaces), no longer read).
          Ironic - C(owner) (a project ID).
      type: dict
      sample: {labels: {}, sharing: null, legacy_sharing: {withLabel: [baremetal.tenancy/tenant]}}
    after:
      description: The same, after the change.
      type: dict
      sample: {labels: {infra-kind: small}, sharing: {withLabel: [baremetal.tenancy/tenant]}}
policies:
  description:
    - The collection's C(HostDeployPolicies) of O(namespace) that were (in check mode, would be) created, updated or
      deleted, on baremetal-operator's dialect with O(namespace_share). Empty otherwise.
  returned: when O(backend=metal3)
  type: list
  elements: dict
  contains:
    policy:
      description: Name of the C(HostDeployPolicy).
      type: str
      sample: baremetal-tenancy-sharing-0
    action:
      description: V(create), V(update) or V(delete).
      type: str
      sample: create
    before:
      description: Its C(spec.hostClaimNamespaces) before (null when created).
      type: dict
    after:
      description: Its C(spec.hostClaimNamespaces) after (null when deleted).
      type: dict
      sample: {hasLabels: [{name: baremetal.tenancy/tenant}], nameMatches: "^(?:team-.*)$"}
dialect:
  description:
    - The HostClaim dialect the sharing was written for, V(proposal) or V(bmo); null when no sharing was asked for
      (the dialect is then not read).
  returned: when O(backend=metal3)
  type: str
  sample: bmo
problems:
  description:
    - Host names that are no host and selectors that match no host, one sentence each naming the entry. Empty unless
      O(strict=false) (a strict run fails on them).
  returned: always
  type: list
  elements: str
  sample: ["hosts[1]: no BareMetalHost named node-99 in namespace metal3"]
cleaning_off:
  description:
    - Names (or UUIDs) of the nodes of O(hosts) that Ironic never cleans between tenants (their C(automated_clean) is
      V(false)), also named in a warning (O(backend=ironic)). What a tenant leaves on their disks is found by the
      next tenant. A node whose C(automated_clean) is null follows the conductor's setting, which the API does not
      show, and is not listed.
  returned: when O(backend=ironic)
  type: list
  elements: str
  sample: [node-04]
projects:
  description: How each O(hosts[].owner) was resolved (O(backend=ironic)).
  returned: when O(backend=ironic)
  type: list
  elements: dict
  contains:
    project:
      description: The owner as given.
      type: str
      sample: infra
    id:
      description: The project ID.
      type: str
    check:
      description: V(verified) (Keystone knows it) or V(skipped) (O(verify_projects=false)).
      type: str
      sample: verified
requests:
  description:
    - API requests of the run. Metal3 - per verb (C(list), C(get), C(patch), ...), C(total), C(writes) and
      C(conflicts). Ironic - C(total) and C(writes).
    - A second run with the same options makes C(writes=0).
  returned: always
  type: dict
  sample: {list: 1, patch: 2, total: 3, writes: 2, conflicts: 0}
"""

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.base import TenancyModule
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.selectors import dns1123_label_problem
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import share as ironic_share
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.dialect import DIALECT_CHOICES
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share import runner as metal3_share


class HostShareModule(TenancyModule):
    object_kind = "host share"
    argument_spec = dict(
        hosts=dict(type="list", elements="dict", required=True),
        namespace=dict(type="str", default="metal3"),
        class_label=dict(type="str", default="infra-kind"),
        tenant_label=dict(type="str", default="baremetal.tenancy/tenant"),
        strict=dict(type="bool", default=True),
        verify_projects=dict(type="bool", default=True),
        namespace_share=dict(
            type="dict",
            options=dict(
                tenants=dict(type="list", elements="str"),
                all_tenants=dict(type="bool"),
                with_labels=dict(type="list", elements="str"),
                matches=dict(type="str"),
            ),
        ),
        dialect=dict(type="str", default="auto", choices=list(DIALECT_CHOICES)),
    )
    backend_options = dict(metal3=("namespace_share",), ironic=())

    def run(self):
        if self.backend == "metal3":
            problem = dns1123_label_problem(self.params["namespace"])
            if problem:
                raise InvalidInput("option namespace", "%r %s" % (self.params["namespace"], problem))
            metal3_share.run_host_share(self)
        else:
            ironic_share.run_host_share(self)


def main():
    HostShareModule()()


if __name__ == "__main__":
    main()
