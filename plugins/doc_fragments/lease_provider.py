# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  lease_provider:
    description:
      - Who keeps the leases of the nodes.
      - V(auto) (the default when neither the option nor E(BMT_LEASE_PROVIDER) is set) uses ESI-Leap where the cloud
        runs it (its Keystone catalog has a C(lease) service for these credentials' interface and region), and the
        node fields (C(lessee) and the lease records in C(properties)) elsewhere.
      - V(esi_leap) uses ESI-Leap; a cloud without it is an error, and nothing is written.
      - V(ironic) writes the node fields even where ESI-Leap runs (with a warning - ESI-Leap neither knows nor ends
        such leases).
      - The environment variable E(BMT_LEASE_PROVIDER) is used when the option is not set.
    type: str
    choices: [auto, esi_leap, ironic]
"""
