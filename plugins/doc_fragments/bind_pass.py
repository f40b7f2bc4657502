# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


class ModuleDocFragment:
    # The options of a binder pass, shared by host_bind (one pass) and host_bind_worker (a pass per request).
    DOCUMENTATION = r"""
options:
  namespaces:
    description:
      - Only reconcile the claims of these namespaces (and sweep only hosts bound to claims of these namespaces).
      - All namespaces when not given.
    type: list
    elements: str
  host_namespaces:
    description:
      - Only consider C(BareMetalHosts) (and Secret copies) in these namespaces. All namespaces when not given.
    type: list
    elements: str
  binder_id:
    description:
      - Identity of this binder. Concurrent binders with different identities spread over the candidate hosts instead of
        racing for the same one. Defaults to C(<hostname>:<pid>).
    type: str
  import_annotation_domains:
    description:
      - Domains of the host annotations that are copied to the claim (for example V(export.hostclaim.metal3.io) copies
        C(export.hostclaim.metal3.io/rack)). Host labels are copied unless their domain is reserved; annotations only
        from these domains. Keys or values that look like BMC data are never copied.
    type: list
    elements: str
    default: [export.hostclaim.metal3.io]
  sweep:
    description:
      - Release hosts bound to claims that no longer exist (or bound twice) and delete orphaned Secret copies.
    type: bool
    default: true
  workers:
    description:
      - How many claims are written at the same time.
    type: int
    default: 8
  dialect:
    description:
      - Which C(HostClaim) API the cluster serves. V(auto) tells it from the claims themselves (baremetal-operator's
        CRD requires C(spec.poweredOn), the proposal's has no such field); V(proposal) or V(bmo) is checked against the
        API server's OpenAPI document and fails, changing nothing, when the cluster serves the other one or neither.
    type: str
    choices: [auto, proposal, bmo]
    default: auto
  unanchored_name_matches:
    description:
      - On baremetal-operator's dialect, search C(HostDeployPolicy) C(nameMatches) patterns anywhere in the namespace
        name, as upstream's controller does (C(prod) then admits C(not-prod)). By default the pattern must match the
        whole name.
    type: bool
    default: false
  take_over:
    description:
      - On baremetal-operator's dialect, take over claims whose status another controller wrote (upstream's own
        HostClaim controller), once it is stopped. Without it such claims stop the pass with an error naming them.
    type: bool
    default: false
"""
