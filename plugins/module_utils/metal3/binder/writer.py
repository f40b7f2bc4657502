# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Every write of a binder pass, in one writer.

:class:`Writer` sends the patches of hosts and claims (the callers put the
``resourceVersion`` precondition in them, :func:`merge_patch.with_precondition`),
the Secret copies, and the revocation of BMC accounts on a released host.  It
counts each write on the claim's :class:`binder_outcome.Outcome` and marks the
pass changed.  It is the Metal3 backend's writer (:class:`metal3.writer.KubeWrites`,
which the tenant and owner modules use too) with the pass's bookkeeping: in check
mode every write goes through :meth:`KubeWrites.write`, which sends nothing, records
it and returns the object as the write would leave it.  Requests are counted by
:class:`client.KubeIO` (the BMC-account ledger shares it).
"""

from __future__ import annotations

import threading
from typing import NamedTuple

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import (
    apply_merge_patch,
    get_path,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.outcome import Outcome
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.planner import host_key
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.bmc_ledger import Metal3Host
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.identity import claim_identity
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.client import KubeIO
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.writer import KubeWrites
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import accounts as bmc_access


class Revoked(NamedTuple):
    """BMC accounts deleted on a host (user names); ``sent``: False when check mode only simulated it."""

    removed: list[str]
    sent: bool


class Writer(KubeWrites):
    """The writes of one pass: sent (counted) or, in check mode, simulated."""

    def __init__(self, io: KubeIO, check_mode: bool = False, parent: Writer | None = None):
        super().__init__(None, io, check_mode)
        self.changed = False
        self.parent = parent
        self._lock = threading.Lock()

    def on(self, io: KubeIO) -> Writer:
        """A writer to another cluster (a relayed claim's) whose writes count as this pass's."""
        return Writer(io, self.check_mode, parent=self)

    def wrote(self, outcome: Outcome) -> None:
        """Count one write that succeeded (or, in check mode, would be made)."""
        if self.parent is not None:
            self.parent.wrote(outcome)
            self.changed = True
            return
        outcome.writes += 1
        with self._lock:
            self.changed = True

    def write_host(self, host: dict, patch: dict, outcome: Outcome) -> dict:
        if not patch:
            return host
        namespace, name = host_key(host)
        # in check mode the host as the patch would leave it (its resourceVersion unknown); a real write returns
        # the API's answer and ignores it, so it is not built (a deep copy of the whole host per write)
        predicted = (
            apply_merge_patch(host, dict(patch, metadata=dict(patch.get("metadata") or {}, resourceVersion=None)))
            if self.check_mode
            else None
        )
        result = self.patch("host", namespace, name, patch, predicted=predicted)
        self.wrote(outcome)
        return result

    def write_claim(self, claim: dict, patch: dict, outcome: Outcome, status: bool = False) -> dict:
        if not patch:
            return claim
        identity = claim_identity(claim)
        # in check mode the claim as the patch would leave it, at the version read (the pass's records of it hold);
        # not built for a real write (see write_host)
        version = get_path(claim, "metadata", "resourceVersion")
        predicted = (
            apply_merge_patch(claim, dict(patch, metadata=dict(patch.get("metadata") or {}, resourceVersion=version)))
            if self.check_mode
            else None
        )
        what = "patch claim%s %s/%s" % (" status" if status else "", identity.namespace, identity.name)
        result = self.write(
            what, self.io.patch_claim, identity.namespace, identity.name, patch, status=status, predicted=predicted
        )
        self.wrote(outcome)
        return result

    def create_claim(self, body: dict, outcome: Outcome) -> dict:
        result = self.create("claim", get_path(body, "metadata", "namespace"), body)
        self.wrote(outcome)
        return result

    def delete_claim(self, claim: dict, outcome: Outcome) -> None:
        identity = claim_identity(claim)
        self.delete("claim", identity.namespace, identity.name)
        self.wrote(outcome)

    def create_copy(self, body: dict, outcome: Outcome) -> dict:
        result = self.create("secret", get_path(body, "metadata", "namespace"), body)
        self.wrote(outcome)
        return result

    def patch_secret(self, current: dict, patch: dict, outcome: Outcome) -> dict:
        namespace, name = get_path(current, "metadata", "namespace"), get_path(current, "metadata", "name")
        result = self.patch("secret", namespace, name, patch, predicted=apply_merge_patch(current, patch))
        self.wrote(outcome)
        return result

    def delete_copy(self, secret: dict, outcome: Outcome) -> None:
        self.delete("secret", get_path(secret, "metadata", "namespace"), get_path(secret, "metadata", "name"))
        self.wrote(outcome)

    def revoke_accounts(self, host: dict, grantee: str, granted: list[str], outcome: Outcome) -> Revoked:
        """Delete the BMC accounts ``granted`` on ``host`` to ``grantee``; raises a TenancyError when the BMC refuses.

        The ledger's reads and writes go through this pass's KubeIO (counted
        with it); in check mode nothing is sent and the accounts are reported
        as they would be removed.
        """
        namespace, name = host_key(host)
        if not self.change("revoke BMC accounts of %s on host %s/%s" % (grantee, namespace, name)):
            self.wrote(outcome)
            return Revoked(list(granted), False)
        result = bmc_access.revoke_host_accounts(Metal3Host(self.io, namespace, name), grantee=grantee)
        if result["changed"]:
            self.wrote(outcome)
        return Revoked(result["removed"], True)
