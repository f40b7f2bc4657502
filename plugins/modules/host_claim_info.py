#!/usr/bin/python
# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


DOCUMENTATION = r"""
module: host_claim_info
short_description: List or read a tenant's host claims
version_added: 0.1.0
description:
  - Lists the tenant's claims, or reads one, with the tenant's own credentials.
  - With O(backend=metal3), the C(HostClaims) of the given namespaces; with O(backend=ironic), the allocations of the
    caller's project and the nodes they hold.
  - With O(backend=metal3), claims of either HostClaim dialect (O(dialect)) are read into the same record.
  - The result never carries a BMC address or credential.
author:
  - Baremetal Tenancy Contributors (@baremetal-tenancy)
extends_documentation_fragment:
  - baremetal.tenancy.backend
  - baremetal.tenancy.dialect
  - baremetal.tenancy.kubernetes_auth
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
  name:
    description:
      - Name of one claim to read. All claims when not given.
    type: str
  namespace:
    description:
      - Namespace of the claims (O(backend=metal3)). Required with O(backend=metal3) unless O(namespaces) is given.
      - Refused with O(backend=ironic), where the credentials' project scopes the claims.
    type: str
  namespaces:
    description:
      - Several namespaces to list (O(backend=metal3)). Refused with O(backend=ironic).
    type: list
    elements: str
"""

EXAMPLES = r"""
- name: List my claims
  baremetal.tenancy.host_claim_info:
    namespace: tenant-a
  register: my_claims

- name: Read one Ironic claim of my project
  baremetal.tenancy.host_claim_info:
    backend: ironic
    cloud: tenant-a
    name: db-0
"""

RETURN = r"""
dialect:
  description: The HostClaim dialect spoken, V(proposal) or V(bmo) (see O(dialect)).
  returned: with O(backend=metal3)
  type: str
  sample: bmo
claims:
  description: The claims found, in the shape of the C(claim) result of M(baremetal.tenancy.host_claim).
  returned: always
  type: list
  elements: dict
"""

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.backend_options import (
    CLAIM_INFO_ONLY_FOR,
    CLAIM_SCOPE_INSTEAD,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.base import TenancyModule
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.claim_backends import claim_backend
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.dialect import DIALECT_CHOICES


class HostClaimInfoModule(TenancyModule):
    object_kind = "host claims"
    argument_spec = dict(
        name=dict(type="str"),
        namespace=dict(type="str"),
        namespaces=dict(type="list", elements="str"),
        dialect=dict(type="str", choices=list(DIALECT_CHOICES), default="auto"),
    )
    module_kwargs = dict(mutually_exclusive=[("namespace", "namespaces")])
    backend_options = CLAIM_INFO_ONLY_FOR
    backend_instead = CLAIM_SCOPE_INSTEAD

    def run(self):
        backend = claim_backend(self.backend)
        self.result["claims"] = backend.claim_info(self)


def main():
    HostClaimInfoModule()()


if __name__ == "__main__":
    main()
