# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The tenant's claim functions of one backend, imported only for the backend a run uses.

``host_claim``, ``host_claim_info`` and ``host_release`` take ``backend``; each
backend's module_utils ship with them (ansible-core packs every import it finds), but a run imports, and compiles
from the module's zip, only its own backend's: about a tenth of a second of CPU less per task.
"""

from __future__ import annotations


def claim_backend(backend: str):
    """``metal3.claim.tenant`` for ``metal3``, ``ironic.claims`` otherwise: ``claim``, ``claim_info``, ``release``."""
    if backend == "metal3":
        from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import tenant

        return tenant
    from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import claims

    return claims
