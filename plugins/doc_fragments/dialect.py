# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  dialect:
    description:
      - Which HostClaim API to speak (O(backend=metal3)). V(proposal) is the Metal3 HostClaim proposal's, which the
        role C(baremetal.tenancy.hostclaim_setup) installs; V(bmo) is baremetal-operator's own HostClaim (v0.14 and
        later); V(auto) speaks the one the cluster serves, read from the API server's OpenAPI document (a tenant needs
        no access to CRDs).
      - A forced dialect the cluster does not serve is refused, and so is a cluster that serves neither; nothing
        changes.
    type: str
    choices: [auto, proposal, bmo]
    default: auto
"""
