#!/usr/bin/python
# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


DOCUMENTATION = r"""
module: tenant_network
short_description: Create or delete a tenant's private network and its subnets in Neutron
version_added: 0.1.0
description:
  - With the tenant's own credentials (scoped to its project), makes the Neutron network of the project named
    O(name) and its O(subnets) match, or deletes it. Neutron gives a tenant network a VLAN of the owner's range; a
    host claimed with M(baremetal.tenancy.host_claim) and its O(baremetal.tenancy.host_claim#module:networks) option
    is deployed onto it, its switch port moved to that VLAN by networking-generic-switch.
  - Only networks of the caller's project are read or written; another project's network of the same name is
    neither seen nor changed.
  - A subnet is matched by name. Its gateway, DHCP and allocation pools are updated in place; a subnet whose CIDR
    differs is an error (a CIDR cannot change) and nothing changes. Subnets of the network not listed are kept.
  - The result never carries the network's segment (VLAN) or anything of the switch.
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
    details: Reads the network and its subnets and reports what would change; writes nothing.
  diff_mode:
    support: full
    details: The diff shows the network and its subnets before and after.
options:
  name:
    description:
      - Name of the network, unique within the caller's project.
    type: str
    required: true
  state:
    description:
      - V(present) makes the network and its subnets; V(absent) deletes the network with its subnets (refused while
        a claimed host is attached to it).
    type: str
    choices: [present, absent]
    default: present
  subnets:
    description:
      - Subnets of the network.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: Name of the subnet, unique within the network.
        type: str
        required: true
      cidr:
        description: The subnet's range, a network address (V(10.20.0.0/24)).
        type: str
        required: true
      gateway_ip:
        description: The gateway's address, in O(subnets[].cidr). Without it the subnet has no gateway.
        type: str
      enable_dhcp:
        description: Whether Neutron serves DHCP on the subnet.
        type: bool
        default: false
      allocation_pools:
        description: Ranges Neutron picks hosts' addresses from, each with C(start) and C(end).
        type: list
        elements: dict
notes:
  - The credentials must be scoped to the tenant's project; Neutron has no system scope.
"""

EXAMPLES = r"""
- name: My private network with one subnet
  baremetal.tenancy.tenant_network:
    cloud: tenant-a
    name: tenant-a-private
    subnets:
      - name: hosts
        cidr: 10.20.0.0/24
        gateway_ip: 10.20.0.1
        allocation_pools:
          - start: 10.20.0.10
            end: 10.20.0.99

- name: Delete it once no host is attached
  baremetal.tenancy.tenant_network:
    cloud: tenant-a
    name: tenant-a-private
    state: absent
"""

RETURN = r"""
network:
  description: The network after the change (in check mode, as it would be; a new network's ID is null); null with
    O(state=absent).
  returned: always
  type: dict
  contains:
    id:
      description: ID of the network.
      type: str
    name:
      description: Name of the network.
      type: str
    project_id:
      description: The project that owns it (the caller's).
      type: str
    status:
      description: Neutron's status of the network.
      type: str
    subnets:
      description: Its subnets (C(id), C(name), C(cidr), C(ip_version), C(gateway_ip), C(enable_dhcp),
        C(allocation_pools)), sorted by name.
      type: list
      elements: dict
"""

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.base import TenancyModule
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.neutron import run_tenant_network


class TenantNetworkModule(TenancyModule):
    object_kind = "tenant network"
    backends = ("ironic",)
    argument_spec = dict(
        name=dict(type="str", required=True),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        subnets=dict(
            type="list",
            elements="dict",
            default=[],
            options=dict(
                name=dict(type="str", required=True),
                cidr=dict(type="str", required=True),
                gateway_ip=dict(type="str"),
                enable_dhcp=dict(type="bool", default=False),
                allocation_pools=dict(type="list", elements="dict"),
            ),
        ),
    )

    def run(self):
        run_tenant_network(self)


def main():
    TenantNetworkModule()()


if __name__ == "__main__":
    main()
