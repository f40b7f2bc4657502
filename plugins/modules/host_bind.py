#!/usr/bin/python
# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


DOCUMENTATION = r"""
module: host_bind
short_description: Bind HostClaims to BareMetalHosts, one reconcile pass
version_added: 0.1.0
description:
  - The administrator's side of the Metal3 C(HostClaim) system. One run is one reconcile pass over the claims of all
    namespaces, of O(namespaces), or of one claim (O(name)); run it in a loop (see the C(baremetal.tenancy.metal3_bind_claims)
    playbook) or on a schedule.
  - "Binding: the hosts, claims, namespaces and the binder's Secret copies are listed once per pass. A pending claim is
    bound to a C(BareMetalHost) whose sharing policy shares it with the claim's namespace, whose labels match the
    claim's C(hostSelector) (C(matchLabels) and C(matchExpressions)), and which is not consumed, not being deleted, not
    paused, C(ready) or C(available) and without error. A host labelled for the claim's C(nodeReuse) is preferred."
  - "The sharing policy is the host's annotation C(baremetal.tenancy/host-claim-namespaces), whose value is compact
    JSON such as C({\"matches\":\"tenant-.*\"}) or C({\"withLabel\":[\"team=a\"]}) (M(baremetal.tenancy.host_share) writes
    it): C(matches) is an RE2 pattern that must match the whole namespace name, C(withLabel) a list of C(key) or
    C(key=value) namespace labels of which the namespace must carry one; both set, both must hold. A host without the
    annotation is not shared. A value that is not JSON, not an object of that shape, or has a bad pattern or entry
    shares the host with nobody and is reported in RV(host_problems)."
  - "C(spec.hostClaimNamespaces), where the policy lived before, is no longer read: baremetal-operator's own writes
    drop it. A host that still carries it and no annotation is shared with nobody and listed in RV(legacy_policies);
    running M(baremetal.tenancy.host_share) (or the C(baremetal.tenancy.host_pool) role) again writes the annotation and
    removes the field."
  - The host's C(consumerRef) is written first, with a C(resourceVersion) precondition; a conflict (another binder won)
    moves on to the next candidate. Then the claim is committed (binding label C(hostclaim.metal3.io/host), finalizer,
    imported metadata), also with a precondition, and its status is written.
  - "Bound claims are kept in sync: the claim's user-data, network-data and meta-data Secrets are copied into the host's
    namespace; C(online), C(image) and the reserved annotations C(host.metal3.io/reboot) (to C(reboot.metal3.io)) and
    C(host.metal3.io/inspect) (to C(inspect.metal3.io)) are passed down; addresses, NICs, boot MAC address, power and
    conditions are copied up, with the host's labels and the annotations of the allowed domains (tracked in two
    annotations so that they are removed when they vanish). Nothing that can carry BMC data is ever copied up."
  - "No label or annotation whose key or value repeats the host's BMC data is copied up: its BMC address, the address's
    host part, its credentials Secret name, and the user name and password of that Secret (which the binder reads, once
    per pass and host, only when the host has metadata to import). Matching ignores case; a value of 4 characters or
    more is found anywhere, a shorter one (a weak password) only as the whole value or a whole word, so that a short
    password does not withhold everything. What is withheld is reported in RV(withheld), to the owner only; when the
    credentials Secret cannot be read, nothing is imported from that host."
  - "Release: a deleted claim keeps its finalizer until its host is deprovisioned: the image, data and power are taken
    off the host, and once the host is clean C(consumerRef) is cleared, the node-reuse label
    C(infrastructure.cluster.x-k8s.io/node-reuse=<namespace>.<nodeReuse>) is set, the Secret copies are deleted and the
    finalizer removed."
  - Hosts whose C(consumerRef) points at a claim that no longer exists, or that duplicate another host's binding, are
    released (the sweep; the temporary BMC accounts granted on them to the claim's namespace are deleted first), and
    Secret copies of claims that no longer exist are deleted.
  - A binding label that C(consumerRef) does not confirm is erased and never honoured.
  - "Hosts in another cluster (the HostClaim proposal's C(spec.credentials)): a claim naming, in C(credentials), a
    Secret of its own namespace holding a kubeconfig (key C(kubeconfig), or C(value) as Cluster API writes them) is
    relayed: mirrored as a HostClaim in the kubeconfig context's namespace of that cluster, created and managed with
    that kubeconfig only, in the dialect that cluster serves (told from its OpenAPI document). Its user-data,
    network-data and meta-data Secrets are copied next to it, changes of the claim (power, image, selector, reboot and
    inspection requests) follow, and the remote claim's host, addresses, NICs, power, conditions and imported metadata
    come back. Deleting the claim deletes the remote claim and keeps the finalizer until the host cluster has let it
    go. The kubeconfig may only carry a token or an embedded client certificate: C(exec) and C(auth-provider)
    plugins, file paths, basic auth, impersonation, proxies, plain C(http) and unverified servers are refused. A
    kubeconfig that is missing, invalid, refused, without the rights, or whose cluster cannot be reached gives the
    claim one reason (see RV(claims[].reason)) and changes nothing in the host cluster; the kubeconfig, its token and
    its server never appear in a result, a status or a message."
  - "On baremetal-operator's own C(HostClaim) (v0.14: C(spec.poweredOn), Secret references C({name, namespace}),
    C(hostSelector.inNamespace), C(failureDomain), C(customDeploy)), this module is the controller that finishes
    upstream's: hosts are shared by the C(HostDeployPolicy) objects of the hosts' namespace (any policy of that namespace
    may admit the claim's namespace; inside one, C(names), C(nameMatches) and every C(hasLabels) entry must all hold),
    except that C(nameMatches) must match the whole namespace name unless O(unanchored_name_matches) is set; where
    upstream's unanchored search would admit a namespace that is refused, RV(anchoring) says so. C(inNamespace)
    restricts the hosts to one namespace; hosts labelled C(infrastructure.cluster.x-k8s.io/failure-domain) with the
    claim's C(failureDomain) are chosen first. The claim's finalizer is upstream's C(metal3.io/hostclaim), its status
    upstream's (C(bareMetalHost), C(poweredOn), conditions C(Associated), C(Synchronized), C(Provisioned) and C(Ready),
    the summary, as upstream computes them), so that upstream's controller taking over, or this module taking over
    from it, changes nothing. The bound host's addresses, NICs and boot MAC go in the claim annotation
    C(hostclaim.metal3.io/host-status) (the status has no room for them). Power, image or C(customDeploy), data Secrets
    (copied next to the host) and reboot requests (C(reboot.metal3.io[/<suffix>]) on the claim, as upstream's webhook
    validates them, or C(host.metal3.io/reboot[.<suffix>])) reach the host; a deleted claim's host is deprovisioned
    and cleaned before it is bound again."
  - "Hosts handed to tenants whose cleaning is off (C(spec.automatedCleaningMode=disabled)) are named in
    RV(cleaning_disabled) and a warning, on both dialects: a released host is then not cleaned before the next tenant."
  - "It refuses to run beside upstream's own HostClaim controller (C(--hostclaims)), which would hand hosts on still
    provisioned: the API server records which field manager wrote each claim's status, and a claim whose status another
    manager wrote after this module's last write is reported with the manager's name, and nothing is written. After
    stopping upstream's controller, run once with O(take_over=true)."
  - Several binders may run at once; every write is conditional, so a host is never bound twice. Once a pass meets
    another writer (its first conflict), the binder follows hosts and claims with a watch, so that it skips what
    another binder has just taken instead of writing and getting a conflict; each binder works through the claims in
    its own order.
author:
  - Baremetal Tenancy Contributors (@baremetal-tenancy)
extends_documentation_fragment:
  - baremetal.tenancy.bind_pass
  - baremetal.tenancy.kubernetes_auth
  - baremetal.tenancy.tls
  - baremetal.tenancy.attributes
  - baremetal.tenancy.attributes.platform
attributes:
  check_mode:
    support: full
    details: Reads everything and reports what the pass would do; writes nothing.
  diff_mode:
    support: full
    details: The diff shows each claim's bound host (C(namespace/name)) before and after the pass.
options:
  name:
    description:
      - Only reconcile this claim; O(namespaces) must then name exactly one namespace.
    type: str
notes:
  - Needs the binder's credentials (the ClusterRole that the C(baremetal.tenancy.hostclaim_setup) role creates), never a
    tenant's.
  - The baremetal-operator does the provisioning; this module only writes the C(BareMetalHost) spec and annotations.
seealso:
  - module: baremetal.tenancy.host_claim
  - module: baremetal.tenancy.host_release
"""

EXAMPLES = r"""
- name: One reconcile pass over every namespace
  baremetal.tenancy.host_bind:
  register: pass_result

- name: Show what a pass would do, without writing
  baremetal.tenancy.host_bind:
    namespaces: [tenant-a, tenant-b]
  check_mode: true
  diff: true

- name: Reconcile until a pass settles (at most 20 passes)
  baremetal.tenancy.host_bind:
    binder_id: binder-1
  register: pass_result
  until: pass_result.settled
  retries: 20
  delay: 2
"""

RETURN = r"""
claims:
  description: What the pass did for each claim in scope, oldest claim first.
  returned: always
  type: list
  elements: dict
  contains:
    namespace:
      description: Namespace of the claim.
      type: str
    name:
      description: Name of the claim.
      type: str
    action:
      description:
        - V(bound) newly bound, V(adopted) a host already pointing at the claim was recorded, V(updated) a bound claim or
          its host was brought in sync, V(unchanged) nothing to do, V(pending) no host (see RV(claims[].reason)),
          V(releasing) waiting for the host to be deprovisioned, V(released) the host is back in the pool and the claim
          was let go, V(lost) another binder bound the claim first, V(gone) the claim vanished while binding,
          V(conflict) every candidate was taken by other binders (retried on the next pass), V(deferred) the claim
          changed during the pass (another binder or its tenant; left to the next pass), V(error), V(relayed) the claim
          (with C(spec.credentials)) was mirrored in the cluster of its kubeconfig and its status brought back
          (RV(claims[].host) and RV(claims[].host_namespace) are then the host cluster's).
      type: str
      sample: bound
    host:
      description: Name of the host bound to the claim, if any.
      type: str
      sample: host-07
    host_namespace:
      description: Namespace of that host.
      type: str
      sample: metal3
    reason:
      description:
        - Reason of the claim's condition (for example V(Bound), V(NoAvailableHost), V(NoSharedHost), V(NoMatchingHost),
          V(InvalidSpec), V(DataSecretMissing)); for a relayed claim V(CredentialsNotFound), V(CredentialsInvalid),
          V(RemoteUnreachable), V(RemoteUnauthorized), V(RemoteForbidden), V(RemoteHostClaimAPIMissing),
          V(RemoteSpecUnsupported), V(RemoteNameTaken), V(RemoteNamespaceNotFound), V(SecretNotFound), or the host cluster's own reason.
      type: str
    message:
      description: Why, in words.
      type: str
    writes:
      description: Number of writes done (or, in check mode, that would be done) for this claim.
      type: int
    error:
      description: The error, when RV(claims[].action=error).
      type: str
      returned: on error
    bmc_accounts_removed:
      description:
        - User names of the temporary BMC accounts (see M(baremetal.tenancy.bmc_account)) granted on the host to
          the claim's namespace, deleted before the host went back to the pool. When they cannot be deleted, the
          host keeps its C(consumerRef) and the claim stays C(releasing) with reason C(BMCAccountsNotRevoked).
      type: list
      elements: str
      returned: when accounts were deleted
    withheld:
      description: What of the host was not copied to this claim (see RV(withheld)).
      type: list
      elements: dict
      returned: when something was withheld
swept:
  description: Hosts released because their claim no longer exists or is bound elsewhere, and deleted orphaned Secret copies.
  returned: always
  type: list
  elements: dict
errors:
  description: The entries of RV(claims) and RV(swept) whose action is V(error).
  returned: always
  type: list
  elements: dict
host_problems:
  description:
    - Hosts whose sharing annotation C(baremetal.tenancy/host-claim-namespaces) is invalid; such a host is shared with
      no namespace. Each problem names the host and the annotation, and quotes at most the first 40 characters of a
      bad value. Each is also a warning.
  returned: always
  type: list
  elements: dict
  sample: [{host: metal3/host-3, problems: ["BareMetalHost metal3/host-3: annotation baremetal.tenancy/host-claim-namespaces:
            matches '(' is not a valid RE2 pattern: missing ): ("]}]
legacy_policies:
  description:
    - Hosts (C(namespace/name)) that carry C(spec.hostClaimNamespaces) and no annotation
      C(baremetal.tenancy/host-claim-namespaces). That field is no longer read, so they are shared with no namespace; run
      M(baremetal.tenancy.host_share) or the C(baremetal.tenancy.host_pool) role again, which writes the annotation and
      removes the field. One warning lists them.
  returned: always
  type: list
  elements: str
  sample: [metal3/host-4]
cleaning_disabled:
  description:
    - Hosts (C(namespace/name)) handed to tenants (bound to a claim, carrying the sharing annotation, or in a namespace
      with a C(HostDeployPolicy)) whose C(spec.automatedCleaningMode) is V(disabled). Their disks are not cleaned when
      a claim is released, so what a tenant left on them (files, users, SSH keys) reaches the next tenant. One warning
      lists them. The binder still binds them (something else may wipe the hosts).
  returned: always
  type: list
  elements: str
  sample: [metal3/host-4]
withheld:
  description:
    - The host labels and annotations that were not copied to a claim because they repeat the host's BMC data or look
      like credentials, one entry per claim, kind (C(label) or C(annotation)) and key, with the reason. Never the value;
      C(key) is null when the key itself repeats BMC data.
    - Kind C(status) with key C(addresses) or C(nics) when inspected hardware entries (a NIC on the BMC's address, for
      example) were left out of the claim's status.
    - For the owner only; the tenant's claim says nothing about it.
  returned: always
  type: list
  elements: dict
  sample: [{host: metal3/host-3, claim: tenant-a/web, kind: label, key: example.com/owner,
            reason: the value repeats the BMC user name}]
summary:
  description: Number of claims per action, plus C(swept) and C(claims) (total).
  returned: always
  type: dict
  sample: {bound: 3, pending: 1, unchanged: 10, claims: 14, swept: 0}
requests:
  description:
    - API requests of the pass per verb (C(list), C(watch), C(get), C(create), C(replace), C(patch), C(delete)), C(total),
      C(writes), and C(conflicts) (HTTP 409 answers, each followed by a re-read or the next candidate).
    - Lists are per pass (hosts, claims, namespaces, Secret copies), not per claim. The BMC-account ledger's reads and
      writes on released hosts are counted too. Binding a claim takes 3 writes (the
      host's C(consumerRef), the claim's commit, its status), plus the Secret copies and the host's image and power
      when the claim sets them.
  returned: always
  type: dict
relay_requests:
  description:
    - API requests sent to the host clusters of relayed claims (claims with C(spec.credentials)), per verb as in
      RV(requests), summed over the kubeconfigs used; C({}) when no claim is relayed.
  returned: always
  type: dict
settled:
  description:
    - True when the pass changed nothing and left nothing to the next pass (no V(deferred) or V(conflict) claim).
      A reconcile loop can stop then (C(until) in the C(baremetal.tenancy.metal3_bind_claims) playbook).
  returned: always
  type: bool
timings:
  description: Seconds spent reading (C(read)), planning (C(plan)), writing (C(apply)) and in total (C(total)).
  returned: always
  type: dict
binder_id:
  description: The identity this binder used.
  returned: always
  type: str
dialect:
  description: The C(HostClaim) dialect of the claims (V(proposal) or V(bmo)); V(null) when V(auto) found no claim.
  returned: always
  type: str
  sample: bmo
anchoring:
  description:
    - On baremetal-operator's dialect, each claim namespace and host namespace where a C(HostDeployPolicy) refuses the
      claim's namespace because C(nameMatches) does not match the whole name, while upstream's controller (an unanchored
      search) would admit it. Empty with O(unanchored_name_matches).
  returned: always
  type: list
  elements: dict
  sample: [{namespace: not-prod, host_namespace: infra, reason: "HostDeployPolicy infra/prod: namespace 'not-prod' does not
            match the whole pattern 'prod' (baremetal-operator's own controller searches nameMatches unanchored and would
            admit it)"}]
taken_over:
  description: The claims (C(namespace/name)) whose status another controller had written, taken over with O(take_over).
  returned: always
  type: list
  elements: str
"""

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.base import TenancyModule
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.options import (
    BIND_SPEC,
    check_bind_options,
    make_binder,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.client import KubeIO
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.connection import kube_api_client
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share.cleaning_check import cleaning_warning
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share.sharing_policy import legacy_warning


class HostBindModule(TenancyModule):
    object_kind = "host_bind"
    backends = ("metal3",)
    argument_spec = dict(BIND_SPEC)

    def run(self):
        check_bind_options(self.params)
        binder = make_binder(KubeIO(kube_api_client(self.params)), self.params, self.check_mode)
        report = binder.run()
        bindings = report.pop("bindings")
        self.changed(report.pop("changed"))
        self.result.update(report)
        self.set_diff({"bindings": bindings["before"]}, {"bindings": bindings["after"]})
        if report["errors"]:
            self.warn("%d claim(s) or host(s) could not be reconciled; see the errors result" % len(report["errors"]))
        for problem in report["host_problems"]:
            self.warn("; ".join(problem["problems"]))
        if report["legacy_policies"]:
            self.warn(legacy_warning(report["legacy_policies"]))
        if report["cleaning_disabled"]:
            self.warn(cleaning_warning(report["cleaning_disabled"]))


def main():
    HostBindModule()()


if __name__ == "__main__":
    main()
