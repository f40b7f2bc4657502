#!/usr/bin/python
# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


DOCUMENTATION = r"""
module: host_offer_expire
short_description: Warn the lessees of nodes ESI-Leap leases ahead of the end, and see the ends through
version_added: 0.1.0
description:
  - The lease keeper's run on Ironic nodes whose lease ESI-Leap holds (the node's C(properties.lease_uuid), written by
    ESI-Leap's manager, names an active ESI-Leap lease of the node's C(lessee)). The EDA rulebook C(lease_keeper.yml)
    runs it through the playbook C(baremetal.tenancy.ironic_lease_event) for the events its source emits about such
    nodes; nodes leased in their own fields are M(baremetal.tenancy.host_lease)'s and are left alone.
  - With O(warn_before), a lease ending within that many seconds gets the end-of-lease notice on its node (properties,
    C(baremetal_tenancy_lease_notice)), the same notice M(baremetal.tenancy.host_lease) writes for a lease in node
    fields, with the ESI-Leap lease's UUID as its C(lease). The lessee reads it on its node and cannot write it.
  - A lease ending within O(lead_time) seconds (or already past its end) is announced if nobody did, then the module
    waits until the end and until ESI-Leap's manager has ended the lease (it removes the node's C(lessee) and
    C(lease_uuid) and undeploys a deployed node), detaches every VIF left on the node once it has no lessee
    (ESI-Leap leaves a node it did not undeploy with the lessee's Neutron ports attached, and the next lessee's
    deployment would bind them), removes the allocation and C(instance_info) the lessee left on a node it claimed
    and never deployed (ESI-Leap leaves both there, so the node would stay allocated to nobody's lease and show the
    next lessee the last one's image; only an C(available) node nobody leases that still holds the allocation it
    held before the end), and removes the notice. The module never writes C(lessee) nor C(lease_uuid), since ending
    the lease is ESI-Leap's work. When ESI-Leap has not ended it within O(wait_timeout)
    (at once without O(wait)), the node is listed in RV(deferred).
  - A notice whose ESI-Leap lease is over (the tenant ended it early, or it ended while no keeper ran) is removed.
  - Run it with the credentials of the project that owns the nodes (or a system administrator's) on a cloud whose
    catalog has ESI-Leap's C(lease) service.
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
      - Reads the nodes and their leases and reports the notices it would write or remove (RV(actions)); an end within
        O(lead_time) is listed in RV(deferred) without waiting. Writes nothing.
  diff_mode:
    support: full
    details: The diff shows the notices of the nodes before and after.
options:
  nodes:
    description:
      - Names or UUIDs of the nodes. Default every node the credentials see.
      - A node that does not exist or is not visible is an error naming it.
    type: list
    elements: str
  warn_before:
    description:
      - Write the end-of-lease notice on each node whose ESI-Leap lease ends within this many seconds (and has not
        ended yet). A notice already announcing the same end is left as it is.
    type: int
  lead_time:
    description:
      - The leases whose end comes within this many seconds are announced, waited for, and seen ended by ESI-Leap (the
        module waits until the end). V(0) (the default) handles only the leases whose end has passed.
    type: int
    default: 0
notes:
  - ESI-Leap's manager ends leases at its periodic tick (every minute by default), so an end is seen up to a minute
    after the lease's end time; give O(wait_timeout) more than that.
seealso:
  - module: baremetal.tenancy.host_lease
  - module: baremetal.tenancy.host_offer_claim
  - name: ESI-Leap
    description: The leasing service of the Elastic Secure Infrastructure project.
    link: https://github.com/CCI-MOC/esi-leap
"""

EXAMPLES = r"""
- name: Warn the lessees whose ESI-Leap lease ends within an hour
  baremetal.tenancy.host_offer_expire:
    cloud: infra
    warn_before: 3600

- name: See the end of node-07's lease through (it ends within the next 30 seconds)
  baremetal.tenancy.host_offer_expire:
    cloud: infra
    nodes: [node-07]
    lead_time: 30
    wait: true
    wait_timeout: 300
"""

RETURN = r"""
actions:
  description: What the run did (or, in check mode, would do), one entry per node and lease.
  returned: always
  type: list
  elements: dict
  contains:
    node:
      description: Name (or UUID) of the node.
      type: str
    lease:
      description: UUID of the ESI-Leap lease.
      type: str
    project:
      description: The lessee project ID.
      type: str
    action:
      description: V(warned) (end-of-lease notice written) or V(ended) (ESI-Leap ended the lease; the notice removed).
      type: str
    allocation_removed:
      description:
        - With V(ended), the UUID of the allocation the lessee left on the node it never deployed, removed with its
          C(instance_info).
      type: str
      returned: when the run removed one
deferred:
  description: Nodes whose lease ESI-Leap had not ended yet when the run gave up waiting, with the reason.
  returned: always
  type: list
  elements: dict
  contains:
    node:
      description: Name (or UUID) of the node.
      type: str
    reason:
      description: Why the run did not see the end.
      type: str
now:
  description: The time the run compared the leases' ends with (ISO 8601, UTC).
  returned: always
  type: str
"""

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.auth import WAIT_SPEC
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.base import TenancyModule
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.esi_leap_expire import run_host_offer_expire


class HostOfferExpireModule(TenancyModule):
    object_kind = "host offer leases"
    backends = ("ironic",)
    argument_spec = dict(
        nodes=dict(type="list", elements="str"),
        warn_before=dict(type="int"),
        lead_time=dict(type="int", default=0),
        **WAIT_SPEC,
    )

    def run(self):
        run_host_offer_expire(self)


def main():
    HostOfferExpireModule()()


if __name__ == "__main__":
    main()
