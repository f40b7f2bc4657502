#!/usr/bin/python
# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


DOCUMENTATION = r"""
module: host_offer
short_description: Offer Ironic nodes to tenants through ESI-Leap, or withdraw the offers
version_added: 0.1.0
description:
  - Where the cloud runs ESI-Leap (its service catalog has a C(lease) service), the owner of Ironic nodes offers them
    to tenant projects; a tenant then claims an offer with its own credentials
    (M(baremetal.tenancy.host_offer_claim)) and ESI-Leap's manager makes the tenant the node's C(lessee) for the
    lease's window, and ends it at the end.
  - Run it with credentials scoped to the project that owns the nodes (its users need ESI-Leap's C(owner) or
    C(esi_leap_owner) role). A cloud without ESI-Leap is an error and nothing changes.
  - O(state=present) offers each node of O(nodes), or every node of the project of O(resource_class) or with
    O(properties), for the window
    from O(start) to O(end), to O(lessee) only or to every project. An available offer of the project for the same
    node, window and lessee is kept as it is, so a rerun changes nothing.
  - A node the project does not own (Ironic does not show it to these credentials, or shows another owner) is an
    error naming it, and nothing changes.
  - ESI-Leap refuses an offer whose window overlaps another offer or a lease of the node; the module reports that
    refusal with ESI-Leap's words, and the offers the run created before it are withdrawn again.
  - O(state=absent) withdraws the project's available offers of the nodes (narrowed to O(lessee), O(start) and
    O(end) when they are given). ESI-Leap ends the leases made from a withdrawn offer with it.
  - The result shows names, projects, windows and states, never a BMC field.
author:
  - Baremetal Tenancy Contributors (@baremetal-tenancy)
extends_documentation_fragment:
  - baremetal.tenancy.openstack_auth
  - baremetal.tenancy.tls
  - baremetal.tenancy.attributes
  - baremetal.tenancy.attributes.platform
attributes:
  check_mode:
    support: full
    details:
      - Reads the nodes and the project's offers and reports what would change (RV(actions), RV(offers)); writes
        nothing. A window that overlaps one of the project's offers fails as ESI-Leap would refuse it.
  diff_mode:
    support: full
    details: The diff shows the project's available offers of each node before and after.
options:
  state:
    description:
      - V(present) offers the nodes, V(absent) withdraws the offers.
    type: str
    choices: [present, absent]
    default: present
  nodes:
    description:
      - Names or UUIDs of the nodes. Each must be owned by the caller's project.
      - One of O(nodes), O(resource_class) and O(properties) is required.
    type: list
    elements: str
  resource_class:
    description:
      - Every node of this resource class that the caller's project owns (with O(nodes), each named node must be of
        this class).
    type: str
  properties:
    description:
      - Every node the caller's project owns whose Ironic C(properties) hold these keys with these values (V(cpus=16)
        matches a node with C(cpus) 16; values compare as given or as text), narrowed to O(resource_class) when it is
        given; with O(nodes), each named node must match.
      - The properties are read only to choose the nodes; no result shows them.
    type: dict
  start:
    description:
      - When the offer starts, as an ISO 8601 date and time (V(2026-05-01T08:00:00Z); without a time zone, UTC).
        Default now. ESI-Leap keeps whole seconds.
      - With O(state=present) and no O(start), an offer of the node that has already started matches.
      - With O(state=absent), only the offers starting then are withdrawn.
    type: str
  end:
    description:
      - When the offer ends, as an ISO 8601 date and time. Default never.
      - With O(state=absent), only the offers ending then are withdrawn.
    type: str
  lessee:
    description:
      - The one project (ID or name, which ESI-Leap resolves in Keystone) the offer is made for; its sub-projects may
        claim it too. Without it the offer is made for every project.
      - With O(state=absent), only the offers made for this project are withdrawn.
    type: str
notes:
  - ESI-Leap's manager sets the node's C(lessee) when a lease starts, at its next periodic tick (a minute by default).
seealso:
  - module: baremetal.tenancy.host_offer_info
  - module: baremetal.tenancy.host_offer_claim
  - module: baremetal.tenancy.host_lease
  - name: ESI-Leap
    description: The leasing service of the Elastic Secure Infrastructure project.
    link: https://github.com/CCI-MOC/esi-leap
"""

EXAMPLES = r"""
- name: Offer two nodes to tenant-a for a week
  baremetal.tenancy.host_offer:
    cloud: infra
    nodes: [node-07, node-08]
    lessee: tenant-a
    start: "2026-05-01T08:00:00Z"
    end: "2026-05-08T08:00:00Z"

- name: Offer every large node of the project to every tenant from now on
  baremetal.tenancy.host_offer:
    cloud: infra
    resource_class: baremetal-large

- name: Offer every node of the project with 16 CPUs to tenant-b until the end of May
  baremetal.tenancy.host_offer:
    cloud: infra
    properties:
      cpus: 16
    lessee: tenant-b
    end: "2026-06-01T00:00:00Z"

- name: Withdraw the offers of node-08
  baremetal.tenancy.host_offer:
    cloud: infra
    state: absent
    nodes: [node-08]
"""

RETURN = r"""
offers:
  description:
    - With O(state=present), the offers that satisfy the request (kept or created; in check mode the ones to create
      have no RV(offers[].uuid)); with O(state=absent), the offers withdrawn (status V(deleted)).
  returned: always
  type: list
  elements: dict
  contains:
    uuid:
      description: UUID of the offer (null for an offer check mode would create).
      type: str
    node:
      description: Name of the node (its UUID when it has none).
      type: str
      sample: node-07
    node_uuid:
      description: UUID of the node.
      type: str
    resource_class:
      description: Resource class of the node.
      type: str
    owner:
      description: The offering project's ID.
      type: str
    owner_name:
      description: The offering project's name.
      type: str
    lessee:
      description: The ID (or, in check mode, the reference given) of the one project the offer is made for; null for
        every project.
      type: str
    lessee_name:
      description: Name of that project.
      type: str
    start:
      description: Start of the offer (ISO 8601, UTC).
      type: str
      sample: "2026-05-01T08:00:00Z"
    end:
      description: End of the offer (ISO 8601, UTC), null when it has none.
      type: str
    status:
      description: ESI-Leap's status of the offer (V(available), V(deleted), V(expired), V(error)).
      type: str
      sample: available
    availabilities:
      description: The windows of the offer that no lease takes (ESI-Leap's C(availabilities)).
      type: list
      elements: dict
      contains:
        start:
          description: Start of the window (ISO 8601, UTC).
          type: str
        end:
          description: End of the window (ISO 8601, UTC), null when it has none.
          type: str
actions:
  description: What the run did (or, in check mode, would do), one entry per offer.
  returned: always
  type: list
  elements: dict
  contains:
    node:
      description: Name of the node.
      type: str
    offer:
      description: UUID of the offer (null for an offer check mode would create).
      type: str
    action:
      description: V(created) or V(withdrawn).
      type: str
project:
  description: The caller's project (the offering project).
  returned: always
  type: str
"""

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.base import TenancyModule
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.esi_leap_offers import run_host_offer


class HostOfferModule(TenancyModule):
    object_kind = "host offer"
    backends = ("ironic",)
    argument_spec = dict(
        state=dict(type="str", choices=["present", "absent"], default="present"),
        nodes=dict(type="list", elements="str"),
        resource_class=dict(type="str"),
        properties=dict(type="dict"),
        start=dict(type="str"),
        end=dict(type="str"),
        lessee=dict(type="str"),
    )
    module_kwargs = dict(required_one_of=[("nodes", "resource_class", "properties")])

    def run(self):
        run_host_offer(self)


def main():
    HostOfferModule()()


if __name__ == "__main__":
    main()
