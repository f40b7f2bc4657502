# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  backend:
    description:
      - The control plane that holds the hosts.
      - V(metal3) works on C(HostClaim) and C(BareMetalHost) objects through the Kubernetes API.
      - V(ironic) works on Ironic nodes and allocations through openstacksdk.
    type: str
    choices: [metal3, ironic]
    default: metal3
requirements:
  - urllib3 (backend V(metal3))
  - kubernetes >= 28.1.0 (backend V(metal3), for a kubeconfig with exec, auth-provider, tokenFile or a proxy, and in a pod)
  - openstacksdk >= 4.0.0 (backend V(ironic))
"""
