# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The status a binder pass writes on a claim, in the claim's dialect (shared by :class:`bind.Bind` and
:class:`release.Release`).  Computes, never writes.
"""

from __future__ import annotations

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import get_path
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import HOST_STATUS_ANNOTATION
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.pass_state import PassState
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import bmo_upward
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.dialect import BMO
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.identity import claim_dialect_of
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.upward import (
    pending_status,
    ready_problem,
    upward_status,
)


class ClaimStatuses:
    """Claim statuses at the pass's time ``now``; a host's BMC data (never shown) and the claims taken over
    come from ``state``."""

    def __init__(self, state: PassState, now: str):
        self.state = state
        self.now = now

    def unbound_status(self, claim: dict, reason: str, message: str) -> dict:
        """The status of a claim without a host, in its dialect."""
        if claim_dialect_of(claim) == BMO:
            return bmo_upward.unbound_status(claim, reason, message, self.now, self.state.is_taken_over(claim))
        return pending_status(claim.get("status"), reason, message, self.now)

    def bound_status(self, claim: dict, host: dict, problem: tuple | None = None) -> dict:
        """The status of a claim bound to ``host``, in its dialect; ``problem`` is ``(reason, message, field)``
        when the claim could not be applied to the host."""
        if claim_dialect_of(claim) == BMO:
            sync_problem = None
            if problem:
                reason = bmo_upward.SECRET_SYNC_REASONS.get(problem[2], problem[0])
                sync_problem = (reason, problem[1])
            return bmo_upward.bound_status(claim, host, self.now, sync_problem, self.state.is_taken_over(claim))
        status = upward_status(host, claim.get("status"), self.now, claim, self.state.bmc_rule(host)[0])
        if problem:
            status = ready_problem(status, claim.get("status"), problem[0], problem[1], self.now)
        return status

    def deleted_status(self, claim: dict) -> dict:
        """baremetal-operator's status of a deleted claim whose host was let go (``bmo_upward.deleted_status``)."""
        return bmo_upward.deleted_status(claim, self.now)

    def host_status_patch(self, claim: dict, host: dict | None) -> dict:
        """On baremetal-operator's dialect: the claim annotation with the bound host's addresses (``bmo_upward``)."""
        if claim_dialect_of(claim) != BMO:
            return {}
        value = self.state.host_status_annotation(host) if host is not None else None
        current = (get_path(claim, "metadata", "annotations") or {}).get(HOST_STATUS_ANNOTATION)
        return {} if current == value else {"metadata": {"annotations": {HOST_STATUS_ANNOTATION: value}}}
