#!/usr/bin/python
# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


DOCUMENTATION = r"""
module: host_offer_info
short_description: List the ESI-Leap offers a project may see or claim, and its leases
version_added: 0.1.0
description:
  - Where the cloud runs ESI-Leap (its service catalog has a C(lease) service), lists with the caller's own
    project-scoped credentials the offers ESI-Leap shows the caller's project, and the project's leases.
  - A tenant sees the offers made for every project and those made for its own project (or a parent project); an
    offer made for another project is never listed. An owner sees its own offers too.
  - The leases listed are those of the caller's project, as the lessee or as the owner of the nodes (ESI-Leap's
    default statuses; ended leases are not listed).
  - The result shows names, projects, windows and states, never a BMC field.
author:
  - Baremetal Tenancy Contributors (@baremetal-tenancy)
extends_documentation_fragment:
  - baremetal.tenancy.openstack_auth
  - baremetal.tenancy.tls
  - baremetal.tenancy.attributes
  - baremetal.tenancy.attributes.platform
  - baremetal.tenancy.attributes.info_module
attributes:
  check_mode:
    support: full
    details: The module only reads.
options:
  resource_class:
    description:
      - Only offers and leases of nodes of this resource class.
    type: str
  node:
    description:
      - Only offers and leases of this node (name or UUID).
    type: str
  available:
    description:
      - Only the offers that can be claimed now (one of their availabilities covers now).
    type: bool
    default: false
seealso:
  - module: baremetal.tenancy.host_offer
  - module: baremetal.tenancy.host_offer_claim
"""

EXAMPLES = r"""
- name: The offers tenant-a may claim now, and its leases
  baremetal.tenancy.host_offer_info:
    cloud: tenant-a
    resource_class: baremetal-large
    available: true
  register: offers

- name: Claim the first of them
  baremetal.tenancy.host_offer_claim:
    cloud: tenant-a
    offer: "{{ offers.offers[0].uuid }}"
  when: offers.offers | length > 0
"""

RETURN = r"""
offers:
  description: The offers the caller's project may see, by ESI-Leap's rules, after the filters.
  returned: always
  type: list
  elements: dict
  contains:
    uuid:
      description: UUID of the offer.
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
    owner:
      description: The offering project's ID.
      type: str
    owner_name:
      description: The offering project's name.
      type: str
    lessee:
      description: ID of the one project the offer is made for; null for every project.
      type: str
    lessee_name:
      description: Name of that project.
      type: str
    start:
      description: Start of the offer (ISO 8601, UTC).
      type: str
    end:
      description: End of the offer (ISO 8601, UTC), null when it has none.
      type: str
    status:
      description: ESI-Leap's status of the offer.
      type: str
      sample: available
    availabilities:
      description: The windows of the offer that no lease takes.
      type: list
      elements: dict
      contains:
        start:
          description: Start of the window (ISO 8601, UTC).
          type: str
        end:
          description: End of the window (ISO 8601, UTC), null when it has none.
          type: str
    claimable:
      description: Whether the offer can be claimed now.
      type: bool
leases:
  description: The leases of the caller's project (as lessee or owner), after the filters.
  returned: always
  type: list
  elements: dict
  contains:
    uuid:
      description: UUID of the lease.
      type: str
    offer:
      description: UUID of the offer it was claimed from (null for a lease the owner made directly).
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
      description: ID of the lessee project.
      type: str
    project_name:
      description: Name of the lessee project.
      type: str
    owner:
      description: ID of the project that leased the node out.
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
      description: ESI-Leap's status of the lease (V(created), V(active), V(wait fulfill), V(error), ...).
      type: str
      sample: active
    name:
      description: Name of the lease (given when it was claimed), null when it has none.
      type: str
project:
  description: The caller's project.
  returned: always
  type: str
"""

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.base import TenancyModule
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.esi_leap_offers import run_host_offer_info


class HostOfferInfoModule(TenancyModule):
    object_kind = "host offers"
    backends = ("ironic",)
    argument_spec = dict(
        resource_class=dict(type="str"),
        node=dict(type="str"),
        available=dict(type="bool", default=False),
    )

    def run(self):
        run_host_offer_info(self)


def main():
    HostOfferInfoModule()()


if __name__ == "__main__":
    main()
