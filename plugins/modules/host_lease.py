#!/usr/bin/python
# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


DOCUMENTATION = r"""
module: host_lease
short_description: Lease Ironic nodes to tenant projects for a time window, list leases and end expired ones
version_added: 0.1.0
description:
  - The owner of a pool of Ironic nodes (a system administrator, or a member of the project that owns the nodes) lends
    nodes to tenant projects. A lease sets the node's C(lessee) to the tenant's project for a time window; the tenant
    can then claim and deploy the node with its own credentials (M(baremetal.tenancy.host_claim) with
    O(baremetal.tenancy.host_claim#module:backend=ironic)).
  - O(state=present) leases the nodes named in O(nodes), or O(count) nodes chosen by O(resource_class) and O(traits),
    to O(project), from O(start) (default now) until O(end) (default open-ended). A lease that starts later is
    recorded and begins when O(state=expired) runs after its start.
  - Two leases of one node never overlap; an overlapping request is refused with the lease it overlaps, and nothing is
    changed. Rerunning the same request changes nothing; a request for the same project and start with another O(end)
    moves the end of the lease.
  - O(state=absent) ends leases now (those of O(project), or O(lease_id), on O(nodes) or on every node).
  - O(state=expired) brings the pool up to date with the clock, as a periodic job would. Leases whose end has passed
    are ended the way ESI-Leap ends one, and leases whose start has come begin.
  - Ending a lease removes the node's C(lessee), its C(instance_info) and the lease record in one update; a deployed
    node is then undeployed (Ironic cleans it and removes the tenant's allocation), an allocated node that was never
    deployed loses its allocation.
  - The update that ends a deployed node's lessee also marks its C(instance_info) with
    C(baremetal_tenancy_access_ended) (the lessee's project ID), which Ironic clears with the rest when the
    undeployment is done. A run stopped between the two (killed, or its host lost) leaves the node deployed with
    that mark and no lessee; the next run with O(state=present), V(absent) or V(expired) undeploys it (an action
    V(ended) without a lease), so the last tenant's instance never stays on a node nobody leases.
  - Before the C(lessee) goes, the temporary BMC accounts granted on the node to the lessee project (by its ID or
    name, see M(baremetal.tenancy.bmc_account)) are deleted. Ironic masks the stored BMC password, so give
    O(bmc_password) when such accounts may exist. A node whose accounts cannot be deleted keeps its lessee and is
    listed in RV(deferred) with the reason.
  - Then every VIF attached to the node is detached, with either lease provider. Ironic detaches those of a node it
    undeploys, but a node never deployed keeps the lessee's Neutron ports, and the next lessee's deployment would
    bind them and put its host on the previous lessee's network.
  - With O(state=expired), O(warn_before) warns lessees ahead of the end of their lease, with a notice in the node's
    C(properties) under C(baremetal_tenancy_lease_notice) (C(lease), C(project), C(end), C(warned), C(message)). The
    lessee reads it on its node with its own credentials and cannot write it. The notice goes when the lease ends.
  - With O(state=expired), O(lead_time) ends the leases that end within that many seconds at their end, the run waiting
    until then, so that a job started ahead of an end (as the C(lease_keeper) rulebook does) ends the lease on time.
  - O(state=query) lists leases and changes nothing.
  - Lease records are kept in the node's C(properties) under C(baremetal_tenancy_leases) (a list of C(id), C(project),
    C(start), C(end), C(created)). A lessee cannot write C(properties) under Ironic's default policy, so a tenant cannot
    lengthen its own lease. A C(lessee) set without a lease record (by hand or by another tool) is reported with status
    V(unmanaged) and blocks leases of other projects until it is ended.
  - Where ESI-Leap keeps the leases (O(lease_provider), by default wherever the cloud runs it), the owner leases
    through ESI-Leap instead (a direct lease, as C(openstack esi lease create) makes) and no node field is written
    by the module. The caller must then be a member of the owner project (ESI-Leap records the caller's project as
    the lease's owner). ESI-Leap's manager sets the node's C(lessee) at its next tick (up to a minute; O(wait)
    waits for it) and removes it at the end of the lease, undeploying a deployed node; O(state=absent) ends the
    ESI-Leap leases. O(state=expired) changes nothing there (ESI-Leap's manager ends and starts leases itself) and
    lists them. A lease without O(end) ends after ESI-Leap's default lease time (7 days unless its operator
    changed it). Overlapping windows are refused as with node-field leases; a lease of a node the caller does not
    own is ESI-Leap's refusal.
author:
  - Baremetal Tenancy Contributors (@baremetal-tenancy)
extends_documentation_fragment:
  - baremetal.tenancy.openstack_auth
  - baremetal.tenancy.tls
  - baremetal.tenancy.wait
  - baremetal.tenancy.lease_provider
  - baremetal.tenancy.attributes
  - baremetal.tenancy.attributes.platform
attributes:
  check_mode:
    support: full
    details: Reads the nodes and reports what would change (RV(actions), RV(leases)); writes nothing.
  diff_mode:
    support: full
    details: The diff shows the lease records of each node that changes.
options:
  state:
    description:
      - V(present) leases nodes, V(absent) ends leases now, V(expired) ends the leases whose end has passed and starts
        the leases whose start has come, V(query) only lists leases.
    type: str
    choices: [present, absent, expired, query]
    default: present
  project:
    description:
      - The tenant's project, by ID or by name, resolved in Keystone (see O(verify_projects)). A project Keystone does
        not know is an error naming it, and nothing changes.
      - Required with O(state=present); with the other states it narrows the leases ended or listed to this project
        (there, the ID of a project deleted since is accepted, so that its leases can still be ended).
    type: str
  verify_projects:
    description:
      - Whether O(project) is looked up in Keystone. Set V(false) only where the credentials cannot read projects
        (for example a member of the owner project, which may read its own project only); O(project) must then be a
        project ID, used as given, and the result's RV(project_check) says V(skipped).
    type: bool
    default: true
  nodes:
    description:
      - Names or UUIDs of the nodes. Each must exist and be visible to the caller.
      - Without O(nodes), O(state=present) chooses O(count) nodes among every node the caller sees, and the other states
        look at every node the caller sees.
    type: list
    elements: str
  resource_class:
    description:
      - Only nodes of this resource class.
    type: str
  traits:
    description:
      - Only nodes that have all these traits (with O(count)).
    type: list
    elements: str
  count:
    description:
      - How many nodes to lease (O(state=present)). Nodes already leased to O(project) for the same window count
        towards it; the others are chosen among the free nodes (available, not claimed, no overlapping lease) by name.
      - When fewer nodes are free, nothing is leased.
    type: int
  start:
    description:
      - When the lease starts, as an ISO 8601 date and time (V(2026-05-01T08:00:00Z); without a time zone, UTC).
        Default now.
    type: str
  end:
    description:
      - When the lease ends, as an ISO 8601 date and time. Default never (until it is ended with O(state=absent)).
    type: str
  lease_id:
    description:
      - The ID of one lease to end (O(state=absent)).
    type: str
  warn_before:
    description:
      - With O(state=expired), write the end-of-lease notice on each node whose lessee's access ends within this many
        seconds (and has not ended yet). A notice already announcing the same end is left as it is; a notice whose
        lease is no longer the one ending (ended, or its end moved) is removed by any O(state=expired) run.
    type: int
  lead_time:
    description:
      - With O(state=expired), the leases whose end comes within this many seconds are ended at their end, the module
        waiting until then (the nodes are read again at the end). Each is announced first, as with O(warn_before).
      - V(0) (the default) ends only the leases whose end has passed.
    type: int
    default: 0
  bmc_password:
    description:
      - Password of the BMC user stored in the node's C(driver_info), used to delete the temporary BMC accounts of
        a lessee whose lease ends. Needed only for nodes with such accounts (Ironic masks the stored password).
      - The environment variable E(BMT_BMC_PASSWORD) is used when the option is not set.
    type: str
notes:
  - Ironic's PATCH has no precondition; the module reads each node again after writing it and reports a lease list
    that a concurrent run overwrote. Run one O(state=expired) job at a time (for example one AWX schedule).
  - With O(wait=true), the module waits for nodes that are being deployed or cleaned before changing them, and for
    undeployed nodes to be C(available) again; without it such nodes are listed in RV(deferred) and handled on a later
    run.
seealso:
  - module: baremetal.tenancy.host_claim
  - name: Ironic node multi-tenancy
    description: Owner and lessee of Ironic nodes.
    link: https://docs.openstack.org/ironic/latest/admin/node-multitenancy.html
  - name: ESI-Leap
    description: The leasing service of the Elastic Secure Infrastructure project, whose way of ending a lease this module follows.
    link: https://github.com/CCI-MOC/esi-leap
"""

EXAMPLES = r"""
- name: Lease two named nodes to tenant-a for a week (as a system administrator, who may read projects)
  baremetal.tenancy.host_lease:
    cloud: admin
    project: 4b7c0e5d2f1a4e8b9c3d6f7a8b9c0d1e
    nodes: [node-07, node-08]
    start: "2026-05-01T08:00:00Z"
    end: "2026-05-08T08:00:00Z"

- name: The same as a member of the owner project, which Keystone does not let read other projects
  baremetal.tenancy.host_lease:
    cloud: infra
    project: 4b7c0e5d2f1a4e8b9c3d6f7a8b9c0d1e
    verify_projects: false
    nodes: [node-07, node-08]
    end: "2026-05-08T08:00:00Z"

- name: Lease three large nodes with NVMe to tenant-b from now on
  baremetal.tenancy.host_lease:
    cloud: admin
    project: tenant-b
    resource_class: baremetal-large
    traits: [CUSTOM_NVME]
    count: 3

- name: List the leases of tenant-b
  baremetal.tenancy.host_lease:
    cloud: admin
    state: query
    project: tenant-b
  register: tenant_b_leases

- name: End the leases whose time is up, start those that are due (run it from a schedule)
  baremetal.tenancy.host_lease:
    cloud: admin
    state: expired
    wait: true

- name: Warn the lessees whose lease ends within the hour, end those ending within 30 s at their end
  baremetal.tenancy.host_lease:
    cloud: admin
    state: expired
    warn_before: 3600
    lead_time: 30

- name: Lease a node through ESI-Leap, as a member of the owner project, and wait for ESI-Leap to make it tenant-b's
  baremetal.tenancy.host_lease:
    cloud: infra
    lease_provider: esi_leap
    project: 9d2e4f6a8b0c4d1e8f3a5b7c9d1e3f5a
    verify_projects: false
    nodes: [node-09]
    end: "2026-05-08T08:00:00Z"
    wait: true

- name: End every lease of tenant-a now
  baremetal.tenancy.host_lease:
    cloud: admin
    state: absent
    project: tenant-a
"""

RETURN = r"""
leases:
  description:
    - The leases of the nodes the module looked at (those of O(project) when it is given), after the change (in check
      mode, as they would be).
  returned: always
  type: list
  elements: dict
  contains:
    id:
      description: ID of the lease (null for a C(lessee) set outside this module).
      type: str
      sample: 3f2a9c1e7b0d
    node:
      description: Name (or UUID) of the node.
      type: str
      sample: node-07
    node_uuid:
      description: UUID of the node.
      type: str
    project:
      description: The lessee project ID.
      type: str
    start:
      description: Start of the lease (ISO 8601, UTC).
      type: str
      sample: "2026-05-01T08:00:00Z"
    end:
      description: End of the lease (ISO 8601, UTC), or null for an open-ended lease.
      type: str
    status:
      description: V(pending), V(active), V(expired) or V(unmanaged).
      type: str
      sample: active
    esi_leap_status:
      description: ESI-Leap's own status of the lease (V(created), V(active), V(deleted)...).
      type: str
      returned: with O(lease_provider) V(esi_leap)
actions:
  description: What the run did (or, in check mode, would do), one entry per lease and node.
  returned: always
  type: list
  elements: dict
  contains:
    node:
      description: Name (or UUID) of the node.
      type: str
    lease:
      description: ID of the lease (null for a C(lessee) set outside this module).
      type: str
    project:
      description: The lessee project ID.
      type: str
    action:
      description: V(created), V(updated) (end moved), V(started), V(ended) (access ended, node undeployed if it was
        deployed), V(removed) (a record dropped without ending access) or V(warned) (end-of-lease notice written, see
        O(warn_before)).
      type: str
    bmc_accounts_removed:
      description: User names of the lessee's temporary BMC accounts deleted when its access ended.
      type: list
      elements: str
      returned: when accounts were deleted
deferred:
  description: Nodes that were busy (being deployed or cleaned) and are handled on a later run, with the reason.
  returned: always
  type: list
  elements: dict
  contains:
    node:
      description: Name (or UUID) of the node.
      type: str
    reason:
      description: Why it was not changed.
      type: str
cleaning_off:
  description:
    - Names (or UUIDs) of the nodes this run leases (or whose lease it starts) that Ironic never cleans between
      tenants (their C(automated_clean) is V(false)), also named in a warning. What the previous tenant left on
      their disks is found by the lessee. The lease is written all the same. A node whose C(automated_clean) is null
      follows the conductor's setting, which the API does not show, and is not listed.
  returned: always
  type: list
  elements: str
  sample: [node-04]
now:
  description: The time the run compared the lease windows with (ISO 8601, UTC).
  returned: always
  type: str
  sample: "2026-05-08T08:00:03Z"
lease_provider:
  description: Who kept the leases of this run, V(esi_leap) or V(ironic) (node fields); see O(lease_provider).
  returned: always
  type: str
  sample: esi_leap
project_check:
  description:
    - How O(project) was checked in Keystone - V(verified) (Keystone knows it), V(skipped) (O(verify_projects=false),
      the ID was used as given) or V(unknown) (an ID Keystone does not know, accepted to end or list its leases);
      null without O(project).
  returned: always
  type: str
  sample: verified
"""

from ansible.module_utils.basic import env_fallback

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.auth import WAIT_SPEC
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.base import TenancyModule
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.esi_leap_leases import run_host_lease
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.lease_provider import LEASE_PROVIDER_SPEC


class HostLeaseModule(TenancyModule):
    object_kind = "host lease"
    backends = ("ironic",)
    argument_spec = dict(
        state=dict(type="str", choices=["present", "absent", "expired", "query"], default="present"),
        project=dict(type="str"),
        nodes=dict(type="list", elements="str"),
        resource_class=dict(type="str"),
        traits=dict(type="list", elements="str"),
        count=dict(type="int"),
        start=dict(type="str"),
        end=dict(type="str"),
        lease_id=dict(type="str"),
        bmc_password=dict(type="str", no_log=True, fallback=(env_fallback, ["BMT_BMC_PASSWORD"])),
        verify_projects=dict(type="bool", default=True),
        warn_before=dict(type="int"),
        lead_time=dict(type="int", default=0),
        **LEASE_PROVIDER_SPEC,
        **WAIT_SPEC,
    )
    module_kwargs = dict(
        required_if=[("state", "present", ("project",))],
    )

    def run(self):
        run_host_lease(self)


def main():
    HostLeaseModule()()


if __name__ == "__main__":
    main()
