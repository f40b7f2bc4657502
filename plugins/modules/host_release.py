#!/usr/bin/python
# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


DOCUMENTATION = r"""
module: host_release
short_description: Release a claimed host back to the pool
version_added: 0.1.0
description:
  - A tenant releases its claim, or an administrator evicts one.
  - With O(backend=metal3), the C(HostClaim) is deleted; the binder deprovisions the host, clears its C(consumerRef),
    removes the Secret copies and, when the claim has a node-reuse name, labels the host for reuse, then lets the
    claim go. With O(wait=true) the module returns when the claim is gone, that is when the host is back in the pool.
  - With O(backend=ironic), the node is undeployed (it goes through cleaning back to C(available)) and the
    allocation is removed (Ironic removes it when it undeploys; a node that was claimed but never deployed is powered
    off and its allocation deleted). A deployment under way is let finish first. With O(wait=true) the module returns
    when the allocation is gone and the node is C(available) again. The credentials must be scoped to the tenant's
    project; a claim of another project is not visible, so releasing it changes nothing.
  - With O(backend=ironic), every VIF of the node is detached first and the ports M(baremetal.tenancy.host_claim)
    made for the claim's O(baremetal.tenancy.host_claim#module:networks) are deleted. On a node with Ironic's
    C(neutron) network interface its switch port leaves the tenant's VLAN at once, and is in the owner's quarantine
    when the node is C(available) again.
  - Releasing a claim that does not exist changes nothing.
  - With O(backend=metal3), claims of either HostClaim dialect (O(dialect)) are released the same way.
author:
  - Baremetal Tenancy Contributors (@baremetal-tenancy)
extends_documentation_fragment:
  - baremetal.tenancy.backend
  - baremetal.tenancy.dialect
  - baremetal.tenancy.kubernetes_auth
  - baremetal.tenancy.openstack_auth
  - baremetal.tenancy.tls
  - baremetal.tenancy.wait
  - baremetal.tenancy.attributes
  - baremetal.tenancy.attributes.platform
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
options:
  name:
    description:
      - Name of the claim to release.
    type: str
    required: true
  namespace:
    description:
      - Namespace of the claim (O(backend=metal3)). Required with O(backend=metal3).
      - Refused with O(backend=ironic), where the credentials' project scopes the claims.
    type: str
  node_reuse:
    description:
      - Keep the host for this namespace under this name (O(backend=metal3)); a later claim in the same namespace with
        the same C(nodeReuse) gets the same host. Sets the claim's C(spec.nodeReuse) before deleting it.
      - The proposal's dialect only; baremetal-operator's HostClaim has no C(nodeReuse) and the option is refused
        (nothing is released). Refused with O(backend=ironic) too.
    type: str
"""

EXAMPLES = r"""
- name: Release my host and wait until it is back in the pool
  baremetal.tenancy.host_release:
    name: worker-0
    namespace: tenant-a
    wait: true

- name: Release it but keep it for my next claim named worker-0
  baremetal.tenancy.host_release:
    name: worker-0
    namespace: tenant-a
    node_reuse: worker-0

- name: Release an Ironic claim
  baremetal.tenancy.host_release:
    backend: ironic
    cloud: tenant-a
    name: db-0
    wait: true
"""

RETURN = r"""
dialect:
  description: The HostClaim dialect spoken, V(proposal) or V(bmo) (see O(dialect)).
  returned: with O(backend=metal3)
  type: str
  sample: bmo
released:
  description: Whether a claim was found and released (or, in check mode, would be).
  returned: always
  type: bool
host:
  description: Name of the host that was bound to the claim, if any.
  returned: always
  type: str
claim:
  description: The claim as it was before the release, in the shape of the C(claim) result of M(baremetal.tenancy.host_claim).
  returned: with O(backend=metal3), when a claim was found
  type: dict
"""

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.auth import WAIT_SPEC
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.backend_options import (
    CLAIM_SCOPE_INSTEAD,
    RELEASE_ONLY_FOR,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.base import TenancyModule
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.claim_backends import claim_backend
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.dialect import DIALECT_CHOICES


class HostReleaseModule(TenancyModule):
    object_kind = "host claim"
    argument_spec = dict(
        name=dict(type="str", required=True),
        namespace=dict(type="str"),
        node_reuse=dict(type="str"),
        dialect=dict(type="str", choices=list(DIALECT_CHOICES), default="auto"),
        **WAIT_SPEC,
    )
    module_kwargs = dict(required_if=[("backend", "metal3", ("namespace",))])
    backend_options = RELEASE_ONLY_FOR
    backend_instead = CLAIM_SCOPE_INSTEAD

    def run(self):
        backend = claim_backend(self.backend)
        backend.run_host_release(self)


def main():
    HostReleaseModule()()


if __name__ == "__main__":
    main()
