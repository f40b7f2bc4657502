#!/usr/bin/python
# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


DOCUMENTATION = r"""
module: host_offer_claim
short_description: Claim an ESI-Leap offer of a node with the tenant's own credentials, or end the lease early
version_added: 0.1.0
description:
  - Where the cloud runs ESI-Leap (its service catalog has a C(lease) service), a tenant claims an offer the owner
    made (M(baremetal.tenancy.host_offer)) with its own project-scoped credentials (its users need ESI-Leap's
    C(lessee) or C(esi_leap_lessee) role). The claim is a lease of the node for the tenant's project; ESI-Leap's
    manager makes the project the node's C(lessee) at its next tick, and removes it at the lease's end.
  - O(state=present) claims the offer O(offer), or the first offer (by node name) of O(resource_class) and O(node)
    that can be claimed for the window from O(start) (default now) to O(end) (default the end of the offer's
    availability). A lease the project already holds that matches the options is found and kept, so a rerun
    changes nothing.
  - An offer made for another project cannot be claimed; ESI-Leap refuses it and the module says so, naming the
    offer. A window outside the offer's availabilities is reported as ESI-Leap's refusal.
  - O(state=absent) ends the project's leases early (O(lease), or those of O(offer), O(resource_class) or O(node)).
    A tenant ends only its own leases. ESI-Leap removes the node's C(lessee) and undeploys a deployed node; the
    project's claim (allocation) of a node that is not deployed, which ESI-Leap leaves, is deleted first.
  - With O(wait=true), O(state=present) returns once the node's C(lessee) is the project (read from Ironic with the
    tenant's credentials) and the lease is V(active); O(state=absent) once the leases are V(deleted).
  - The result shows names, projects, windows and states, never a BMC field.
author:
  - Baremetal Tenancy Contributors (@baremetal-tenancy)
extends_documentation_fragment:
  - baremetal.tenancy.openstack_auth
  - baremetal.tenancy.tls
  - baremetal.tenancy.wait
  - baremetal.tenancy.attributes
  - baremetal.tenancy.attributes.platform
attributes:
  check_mode:
    support: full
    details:
      - Reads the offers and leases and reports the lease the claim would make (without a UUID) or the leases it
        would end; writes nothing.
  diff_mode:
    support: none
options:
  state:
    description:
      - V(present) claims an offer, V(absent) ends leases early. Ending a lease first detaches the project's VIFs
        from the node (ESI-Leap leaves them on a node it does not undeploy); where the owner's policy keeps VIFs to the owner, a warning
        says they stay attached.
    type: str
    choices: [present, absent]
    default: present
  offer:
    description:
      - UUID (or name) of the offer to claim; with O(state=absent), end the project's leases of this offer.
      - With O(state=present), one of O(offer), O(resource_class) and O(node) is required.
    type: str
  resource_class:
    description:
      - Claim an offer of a node of this resource class (the first one that can be claimed for the window); with
        O(state=absent), end the project's leases of nodes of this class.
    type: str
  node:
    description:
      - Claim an offer of this node (name or UUID); with O(state=absent), end the project's leases of this node.
    type: str
  start:
    description:
      - When the lease starts, as an ISO 8601 date and time (without a time zone, UTC). Default now.
    type: str
  end:
    description:
      - When the lease ends, as an ISO 8601 date and time. Default the end of the offer's availability.
    type: str
  lease:
    description:
      - UUID of the lease to end (O(state=absent)). A lease of another project is an error.
    type: str
  name:
    description:
      - Name of the lease (ESI-Leap keeps it with the lease), for example the name of the claim that deploys the
        node. With a name, only a lease of that name is found and kept on a rerun, so claims of one resource class
        with different names lease different nodes; without one, any lease of the project that matches the other
        options is kept.
      - With O(state=absent), end only the project's leases of that name (alone, or with the other options).
    type: str
seealso:
  - module: baremetal.tenancy.host_offer
  - module: baremetal.tenancy.host_offer_info
  - module: baremetal.tenancy.host_claim
"""

EXAMPLES = r"""
- name: Claim an offer of a large node for two days and wait until the node is ours
  baremetal.tenancy.host_offer_claim:
    cloud: tenant-a
    resource_class: baremetal-large
    end: "2026-05-03T08:00:00Z"
    wait: true
  register: claimed

- name: Claim one offer by its UUID
  baremetal.tenancy.host_offer_claim:
    cloud: tenant-a
    offer: 8a5c1f0e-2b7d-4c3a-9e1f-0d2c4b6a8e9f

- name: End that lease early
  baremetal.tenancy.host_offer_claim:
    cloud: tenant-a
    state: absent
    lease: "{{ claimed.lease.uuid }}"
    wait: true
"""

RETURN = r"""
lease:
  description:
    - The lease claimed, or the one the project already held (O(state=present)); in check mode the lease the claim
      would make, without a UUID.
  returned: when O(state=present)
  type: dict
  contains:
    uuid:
      description: UUID of the lease (null in check mode).
      type: str
    offer:
      description: UUID of the offer it was claimed from.
      type: str
    node:
      description: Name of the node (its UUID when it has none).
      type: str
    node_uuid:
      description: UUID of the node.
      type: str
    resource_class:
      description: Resource class of the node.
      type: str
    project:
      description: ID of the lessee project (the caller's).
      type: str
    project_name:
      description: Name of the lessee project.
      type: str
    owner:
      description: ID of the project that offered the node.
      type: str
    owner_name:
      description: Name of that project.
      type: str
    start:
      description: Start of the lease (ISO 8601, UTC).
      type: str
    end:
      description: End of the lease (ISO 8601, UTC), null when it has none.
      type: str
    status:
      description: ESI-Leap's status of the lease (V(created) until the manager fulfils it, then V(active)).
      type: str
      sample: active
    name:
      description: Name of the lease (O(name)), null when it has none.
      type: str
offer:
  description: The offer claimed (null when the lease was already held).
  returned: when O(state=present)
  type: dict
  contains:
    uuid:
      description: UUID of the offer.
      type: str
    node:
      description: Name of the node.
      type: str
    start:
      description: Start of the offer (ISO 8601, UTC).
      type: str
    end:
      description: End of the offer (ISO 8601, UTC), null when it has none.
      type: str
    lessee:
      description: ID of the one project the offer is made for; null for every project.
      type: str
    claimable:
      description: Whether the offer could be claimed when the run read it.
      type: bool
leases:
  description: The leases O(state=absent) looked at (those ended show status V(deleted)).
  returned: when O(state=absent)
  type: list
  elements: dict
  contains:
    uuid:
      description: UUID of the lease.
      type: str
    node:
      description: Name of the node.
      type: str
    status:
      description: ESI-Leap's status of the lease.
      type: str
    name:
      description: Name of the lease, null when it has none.
      type: str
ended:
  description: UUIDs of the leases this run ended (or, in check mode, would end).
  returned: when O(state=absent)
  type: list
  elements: str
project:
  description: The caller's project.
  returned: always
  type: str
"""

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.auth import WAIT_SPEC
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.base import TenancyModule
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.esi_leap_offers import run_host_offer_claim


class HostOfferClaimModule(TenancyModule):
    object_kind = "host offer claim"
    backends = ("ironic",)
    argument_spec = dict(
        state=dict(type="str", choices=["present", "absent"], default="present"),
        offer=dict(type="str"),
        resource_class=dict(type="str"),
        node=dict(type="str"),
        start=dict(type="str"),
        end=dict(type="str"),
        lease=dict(type="str"),
        name=dict(type="str"),
        **WAIT_SPEC,
    )
    module_kwargs = dict(mutually_exclusive=[("lease", "offer")])

    def run(self):
        run_host_offer_claim(self)


def main():
    HostOfferClaimModule()()


if __name__ == "__main__":
    main()
