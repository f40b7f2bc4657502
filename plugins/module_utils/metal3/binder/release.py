# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Releasing hosts: the release step of a pass (:class:`Release`, created by :class:`run.Binder`).

A deleted claim's host is deprovisioned, then its BMC accounts granted to the
tenant are revoked, its ``consumerRef`` cleared, the claim's Secret copies and
its finalizer removed.  The sweep releases hosts whose claim is gone (re-read
first) or that duplicate a binding (the BMC accounts granted on them to the
claim's namespace revoked first), and deletes orphaned Secret copies.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    Conflict,
    NotFound,
    TenancyError,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import (
    get_path,
    with_precondition,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import (
    COPY_CLAIM_ANNOTATION,
    COPY_CLAIM_NAMESPACE_LABEL,
    COPY_CLAIM_UID_LABEL,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.outcome import Outcome
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.pass_state import (
    PassState,
    host_name,
    is_claim_ref,
    ref_claim,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.planner import (
    deprovision_failure,
    find_adopted_host,
    host_key,
    release_plan,
    release_step,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.status import ClaimStatuses
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.writer import Writer
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.dialect import BMO
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.identity import (
    claim_dialect_of,
    claim_finalizer,
    claim_identity,
    claim_ref_matches,
    finalizer_patch,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.upward import status_patch
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish.account_rules import (
    LEDGER_ANNOTATION,
    ledger_load,
)


class Release:
    """Release, BMC access revocation and sweep of one pass.

    ``state`` is what the pass read (its hosts, its scope, the Secret copies), ``writer`` sends its writes,
    ``io`` its reads (re-reads after a 409, a gone claim checked), ``statuses`` the claim statuses.
    """

    def __init__(self, state: PassState, writer: Writer, io: Any, statuses: ClaimStatuses):
        self.state = state
        self.writer = writer
        self.io = io
        self.statuses = statuses

    def release(self, claim: dict, outcome: Outcome) -> None:
        """A deleted claim: deprovision its host, then clear consumerRef, remove the copies and the finalizer."""
        namespace, name, uid = claim_identity(claim)
        host = find_adopted_host(claim, self.state.bound_hosts(claim))
        node_reuse = get_path(claim, "spec", "nodeReuse")
        if host is not None:
            outcome.host, outcome.host_namespace = host_name(host), host_key(host)[0]
            for attempt in range(2):
                step, patch = release_step(host, claim, node_reuse)
                if step == "finish":
                    host = self.revoke_bmc_access(host, namespace, outcome)
                    if host is None:
                        return
                    step, patch = release_step(host, claim, node_reuse)
                try:
                    host = self.writer.write_host(host, patch, outcome)
                    break
                except Conflict:
                    self.state.count_conflict()
                    host = self.io.get_host(*host_key(host))
                    if attempt or host is None or not claim_ref_matches(host, claim):
                        outcome.action, outcome.message = "releasing", "the host changed; retried on the next pass"
                        return
            if step == "deprovision":
                outcome.action, outcome.reason = "releasing", "Deprovisioning"
                outcome.message = "waiting for host %s to be deprovisioned" % outcome.host
                failure = deprovision_failure(host)
                if failure:
                    outcome.reason = "DeprovisioningFailed"
                    outcome.message = (
                        "host %s is out of the pool until its owner repairs it: deprovisioning failed (%s)"
                        % (outcome.host, failure)
                    )
                status = self.statuses.bound_status(claim, host)
                try:
                    self.writer.write_claim(
                        claim, with_precondition(status_patch(claim.get("status"), status), claim), outcome, status=True
                    )
                except (Conflict, NotFound):
                    self.state.count_conflict()
                return
        for secret in self.state.copies_of(uid):
            self.writer.delete_copy(secret, outcome)
        claim = self._deleted_status(claim, outcome)
        try:
            self.writer.write_claim(claim, finalizer_patch(claim, False), outcome)
        except NotFound:
            pass
        except Conflict:
            self.state.count_conflict()
            fresh = self.io.get_claim(namespace, name)
            if fresh is not None and claim_identity(fresh)[2] == uid:
                self.writer.write_claim(fresh, finalizer_patch(fresh, False), outcome)
        outcome.action, outcome.reason = "released", "Released"
        outcome.message = "host %s is back in the pool" % outcome.host if outcome.host else "no host was bound"

    def _deleted_status(self, claim: dict, outcome: Outcome) -> dict:
        """On baremetal-operator's dialect, a claim that another finalizer keeps once its host is let go shows
        what upstream's controller writes then (``bmo_upward.deleted_status``); without another finalizer the
        claim is gone with the binder's, as with upstream's. Returns the claim as it is now."""
        finalizers = get_path(claim, "metadata", "finalizers") or []
        if claim_dialect_of(claim) != BMO or not [item for item in finalizers if item != claim_finalizer(claim)]:
            return claim
        status = self.statuses.deleted_status(claim)
        try:
            return self.writer.write_claim(
                claim, with_precondition(status_patch(claim.get("status"), status), claim), outcome, status=True
            )
        except (Conflict, NotFound):
            self.state.count_conflict()
            return claim

    def revoke_bmc_access(self, host: dict, grantee: str, outcome: Outcome) -> dict | None:
        """Delete the BMC accounts granted on ``host`` to ``grantee`` (the claim's
        namespace) before the host goes back to the pool.

        Returns the host as it is now, or ``None`` when the accounts could not
        be deleted: then the host keeps its ``consumerRef``, and the release
        is retried on the next pass (``outcome`` says why).  Hosts without
        such an account (the ledger annotation) cost no request.
        """
        entries = ledger_load((get_path(host, "metadata", "annotations") or {}).get(LEDGER_ANNOTATION))
        granted = sorted(e["username"] for e in entries if e.get("grantee") == grantee)
        if not granted:
            return host
        try:
            revoked = self.writer.revoke_accounts(host, grantee, granted, outcome)
        except TenancyError as exc:
            outcome.action, outcome.reason = "releasing", "BMCAccountsNotRevoked"
            outcome.message = (
                "the BMC accounts granted on host %s could not be deleted (%s); retried on the next pass"
                % (host_name(host), exc.message)
            )
            return None
        outcome.bmc_accounts_removed = revoked.removed
        return self.io.get_host(*host_key(host)) if revoked.sent else host

    def sweep_hosts(self, claims: Sequence[dict]) -> list[Outcome]:
        """Release hosts bound to claims that no longer exist, and duplicate bindings; delete orphaned copies."""
        listed = dict((tuple(claim_identity(claim)[:2]), claim) for claim in claims)
        jobs = []
        for host in list(self.state.hosts):
            ref = get_path(host, "spec", "consumerRef")
            if not is_claim_ref(ref) or not self.state.in_scope(ref.get("namespace"), ref.get("name")):
                continue
            claim = listed.get((ref.get("namespace"), ref.get("name")))
            if claim is None or (
                ref.get("uid") and claim_identity(claim)[2] and ref.get("uid") != claim_identity(claim)[2]
            ):
                jobs.append((host, ref, True))
            elif host_key(find_adopted_host(claim, self.state.bound_hosts(claim))) != host_key(host):
                jobs.append((host, ref, False))
        outcomes = [self._sweep_host(host, ref, orphan) for host, ref, orphan in jobs]
        uids = set(claim_identity(claim)[2] for claim in claims)
        for uid, secrets in self.state.copies_by_claim():
            if uid in uids:
                continue
            for secret in secrets:
                outcome = self._sweep_copy(secret)
                if outcome is not None:
                    outcomes.append(outcome)
        return [outcome for outcome in outcomes if outcome is not None]

    def _claim_gone(self, namespace, name, uid):
        fresh = self.io.get_claim(namespace, name)
        return fresh is None or (uid and claim_identity(fresh)[2] != uid)

    def _sweep_host(self, host, ref, orphan):
        namespace, name = host_key(host)
        outcome = Outcome(ref.get("namespace"), ref.get("name"), action="swept", host=name)
        outcome.host_namespace = namespace
        claim = ref_claim(ref)
        try:
            if orphan and not self._claim_gone(ref.get("namespace"), ref.get("name"), ref.get("uid")):
                return None
            # the claim's namespace loses the host either way (its claim is gone, or bound to another host): the
            # BMC accounts granted to it on this host go first, or nothing would ever revoke them
            host = self.revoke_bmc_access(host, ref.get("namespace"), outcome)
            if host is None:
                return outcome
            self.writer.write_host(host, release_plan(host, claim, None), outcome)
        except Conflict:
            self.state.count_conflict()
            return None
        except TenancyError as exc:
            outcome.action, outcome.error = "error", exc.message
            return outcome
        outcome.reason = "ClaimGone" if orphan else "DuplicateBinding"
        outcome.message = (
            "released: HostClaim %s/%s no longer exists"
            if orphan
            else "released: HostClaim %s/%s is bound to another host"
        ) % (ref.get("namespace"), ref.get("name"))
        if orphan:
            for secret in self.state.copies_of(ref.get("uid")):
                self.writer.delete_copy(secret, outcome)
            self.state.forget_copies(ref.get("uid"))
        return outcome

    def _sweep_copy(self, secret):
        meta = secret.get("metadata") or {}
        claim_namespace = (meta.get("labels") or {}).get(COPY_CLAIM_NAMESPACE_LABEL)
        source = (meta.get("annotations") or {}).get(COPY_CLAIM_ANNOTATION) or ""
        claim_name = source.partition("/")[2]
        if not claim_name or not self.state.in_scope(claim_namespace, claim_name):
            return None
        uid = (meta.get("labels") or {}).get(COPY_CLAIM_UID_LABEL)
        outcome = Outcome(meta.get("namespace"), meta.get("name"), action="swept")
        try:
            if not self._claim_gone(claim_namespace, claim_name, uid):
                return None
            self.writer.delete_copy(secret, outcome)
        except TenancyError as exc:
            outcome.action, outcome.error = "error", exc.message
            return outcome
        outcome.reason, outcome.message = "ClaimGone", "deleted the copy of a Secret of HostClaim %s" % source
        return outcome
