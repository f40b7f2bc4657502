# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Binding a claim and keeping it in sync: the bind step of a pass (:class:`Bind`, created by :class:`run.Binder`).

A bind writes the host's ``consumerRef`` first, then commits on the claim
(binding label, finalizer, imported metadata) with the claim's
``resourceVersion`` as planned; a lost commit undoes the host.  ``sync`` keeps
a bound claim and its host in step: the claim's data Secrets copied next to
the host, image, power and reserved annotations down, status and exported
metadata up (never BMC data).  What the pass read is its :class:`pass_state.PassState`; every write goes
through :class:`writer.Writer`.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    Conflict,
    InvalidInput,
    NotFound,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import (
    get_path,
    with_precondition,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import (
    BINDING_LABEL,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.pass_state import (
    PassState,
    host_name,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.planner import (
    bind_patch,
    host_key,
    release_plan,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.status import ClaimStatuses
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.writer import Writer
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.dialect import BMO
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.downward import (
    downward_patch,
    one_shot_cleanup_patch,
    secret_copy,
    secret_copy_names,
    secret_copy_patch,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.identity import (
    binding_label_fix,
    claim_dialect_of,
    claim_finalizer,
    claim_identity,
    claim_ref_matches,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.metadata_import import import_metadata
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.spec import DATA_FIELDS
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.upward import (
    merge_patches,
    status_patch,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.view import binding_label_value


class Bind:
    """Bind, commit, undo, sync and data copies of one pass.

    ``state`` is what the pass read (and the hosts it reserved), ``writer`` sends its writes, ``io`` its
    reads (re-reads after a 409), ``statuses`` the claim statuses; ``annotation_domains`` the host metadata
    imported onto claims, ``unanchored`` the ``nameMatches`` search of HostDeployPolicies.
    """

    def __init__(
        self,
        state: PassState,
        writer: Writer,
        io: Any,
        statuses: ClaimStatuses,
        annotation_domains: tuple = (),
        unanchored: bool = False,
    ):
        self.state = state
        self.writer = writer
        self.io = io
        self.statuses = statuses
        self.annotation_domains = tuple(annotation_domains or ())
        self.unanchored = bool(unanchored)

    def apply_action(self, action: dict, claim: dict, outcome: Any) -> None:
        """Apply a plan ``action`` (``bind``, ``adopt``, ``bound`` or ``pending``; not ``relay``) to ``claim``."""
        kind = action["action"]
        if kind == "bind":
            return self.bind(action, claim, outcome)
        if kind in ("adopt", "bound"):
            host = self.state.host_index[(action["host"]["namespace"], action["host"]["name"])]
            outcome.host, outcome.host_namespace = host_name(host), host_key(host)[0]
            outcome.action = "adopted" if kind == "adopt" else "unchanged"
            return self.sync(claim, host, outcome)
        return self.pending(action, claim, outcome)

    def is_candidate(self, host: dict, claim: dict) -> bool:
        """``planner.host_is_candidate`` with this pass's namespaces and HostDeployPolicies."""
        return self.state.is_candidate(host, claim, self.unanchored)

    def pending(self, action: dict, claim: dict, outcome: Any) -> None:
        outcome.action, outcome.reason, outcome.message = "pending", action["reason"], action["message"]
        meta = merge_patches(
            action.get("claim_patch"),
            import_metadata(claim.get("metadata"), None, self.annotation_domains)["patch"],
            self.statuses.host_status_patch(claim, None),
            self._bmo_finalizer(claim),
        )
        try:
            claim = self.writer.write_claim(claim, with_precondition(meta, claim), outcome)
            status = self.statuses.unbound_status(claim, action["reason"], action["message"])
            patch = status_patch(claim.get("status"), status)
            self.writer.write_claim(claim, with_precondition(patch, claim), outcome, status=True)
        except (Conflict, NotFound):
            # someone (another binder, the tenant) changed the claim since the list: the next pass sees it
            self.state.count_conflict()

    def _try_host(self, host, claim, outcome):
        """Write ``consumerRef`` on ``host``; the updated host, or ``None`` if someone else took it."""
        for attempt in range(2):
            try:
                return self.writer.write_host(host, bind_patch(host, claim), outcome)
            except Conflict:
                self.state.count_conflict()
                if attempt:
                    return None
                host = self.io.get_host(*host_key(host))
                if host is None:
                    return None
                if not self.is_candidate(host, claim):
                    return None
        return None

    def bind(self, action: dict, claim: dict, outcome: Any) -> None:
        chosen = [(action["host"]["namespace"], action["host"]["name"])]
        chosen.extend((ref["namespace"], ref["name"]) for ref in action.get("alternatives") or [])
        bound = None
        for position, key in enumerate(chosen):
            host = self.state.host_index.get(key)
            if host is None or not self.state.reserve(host):
                continue
            seen = self.state.host_changed(host)
            if seen is not None:
                if seen[0] == "DELETED":
                    continue
                host = seen[1]
                self.state.replace_host(host)
            if (seen is not None or position) and not self.is_candidate(host, claim):
                continue
            bound = self._try_host(host, claim, outcome)
            if bound is not None:
                break
        if bound is None:
            outcome.action, outcome.retry = "conflict", True
            return None
        outcome.host, outcome.host_namespace = host_name(bound), host_key(bound)[0]
        claim = self.commit(claim, bound, outcome)
        if claim is None:
            return None
        outcome.action, outcome.reason = "bound", "Bound"
        outcome.message = "bound to host %s" % outcome.host
        return self.sync(claim, bound, outcome, committed=True)

    def _commit_patch(self, claim, host):
        return with_precondition(
            merge_patches(
                binding_label_fix(claim, host_name(host)),
                {"metadata": {"finalizers": self._with_finalizer(claim)}} if self._with_finalizer(claim) else {},
                self.import_from(claim, host)["patch"],
                self.statuses.host_status_patch(claim, host),
            ),
            claim,
        )

    def import_from(self, claim: dict, host: dict, outcome: Any = None) -> dict:
        """``import_metadata`` of ``host`` onto ``claim``; records what was withheld on ``outcome`` (for the owner)."""
        offer, hardware = self.state.host_offer(host)
        imported = import_metadata(claim.get("metadata"), host.get("metadata"), offer=offer)
        if outcome is not None:
            outcome.withheld = [
                dict(item, host="%s/%s" % host_key(host), claim="%s/%s" % claim_identity(claim)[:2])
                for item in imported["withheld"] + hardware
            ]
        return imported

    def _bmo_finalizer(self, claim):
        """baremetal-operator's controller puts its finalizer on every claim it sees, bound or not: so does the binder."""
        finalizers = self._with_finalizer(claim)
        return {"metadata": {"finalizers": finalizers}} if finalizers and claim_dialect_of(claim) == BMO else {}

    @staticmethod
    def _with_finalizer(claim):
        finalizers = list(get_path(claim, "metadata", "finalizers") or [])
        finalizer = claim_finalizer(claim)
        return None if finalizer in finalizers else [*finalizers, finalizer]

    def commit(self, claim: dict, host: dict, outcome: Any) -> dict | None:
        """Record the binding on the claim (precondition: the claim as planned); undo the host on a lost race."""
        for attempt in range(2):
            try:
                return self.writer.write_claim(claim, self._commit_patch(claim, host), outcome)
            except NotFound:
                self.undo(host, claim, outcome)
                outcome.action, outcome.message = "gone", "the claim was deleted while binding"
                return None
            except Conflict:
                self.state.count_conflict()
                fresh = self.io.get_claim(*claim_identity(claim)[:2])
                if (
                    attempt
                    or fresh is None
                    or get_path(fresh, "metadata", "deletionTimestamp")
                    or claim_identity(fresh)[2] != claim_identity(claim)[2]
                    or self._bound_elsewhere(fresh, host)
                ):
                    self.undo(host, claim, outcome)
                    outcome.action = "lost"
                    outcome.message = "another binder bound the claim first"
                    return None
                claim = fresh
        return None

    def _bound_elsewhere(self, claim, host):
        """True if the claim's binding label names another host that really points at the claim."""
        label = (get_path(claim, "metadata", "labels") or {}).get(BINDING_LABEL)
        if not label or label == binding_label_value(host_name(host)):
            return False
        for other in self.state.labelled_hosts(label):
            if host_key(other) != host_key(host):
                fresh = self.io.get_host(*host_key(other))
                if fresh is not None and claim_ref_matches(fresh, claim):
                    return True
        return False

    def undo(self, host: dict, claim: dict, outcome: Any) -> None:
        """Take back a ``consumerRef`` this binder wrote for a claim it could not commit."""
        for _attempt in range(3):
            try:
                self.writer.write_host(host, release_plan(host, claim, None), outcome)
                return
            except Conflict:
                self.state.count_conflict()
                host = self.io.get_host(*host_key(host))
                if host is None or not claim_ref_matches(host, claim):
                    return

    def _data_copies(self, record, host, outcome):
        """Make the Secret copies of the claim (its record, ``PassState.parsed``); ``(names by field, problem or
        None)``, a problem being ``(reason, message, field)``."""
        spec = record.valid_spec()
        names = secret_copy_names(record)
        claim, namespace, uid = record.obj, record.namespace, record.uid
        existing = dict(
            (get_path(s, "metadata", "name"), s)
            for s in self.state.copies_of(uid)
            if get_path(s, "metadata", "namespace") == host_key(host)[0]
        )
        for field in DATA_FIELDS:
            if not spec[field]:
                continue
            source = self.io.get_secret(namespace, spec[field])
            if source is None:
                return names, (
                    "DataSecretMissing",
                    "Secret %s (spec.%s) was not found in namespace %s" % (spec[field], field, namespace),
                    field,
                )
            wanted = secret_copy(source, claim, host, field, names[field])
            current = existing.get(names[field])
            if current is None:
                try:
                    self.writer.create_copy(wanted, outcome)
                    continue
                except Conflict:
                    current = self.io.get_secret(host_key(host)[0], names[field])
                    if current is None:
                        raise
            patch = secret_copy_patch(current, wanted)
            if patch is None:
                self.writer.delete_copy(current, outcome)
                self.writer.create_copy(wanted, outcome)
            elif patch:
                self.writer.patch_secret(current, patch, outcome)
        return names, None

    def _write_down(self, record, host, names, outcome):
        """The downward patch of the claim (its record); on a 409 (the operator writes the host's status too) it
        is computed again on a fresh read and sent once more, while the host is still bound to the claim.

        Returns ``(host the patch was computed from, updated host)``, or ``None`` (left to the next pass).
        """
        claim = record.obj
        for attempt in range(2):
            try:
                return host, self.writer.write_host(host, downward_patch(record, host, names), outcome)
            except Conflict:
                self.state.count_conflict()
                if attempt:
                    return None
                host = self.io.get_host(*host_key(host))
                if host is None or not claim_ref_matches(host, claim):
                    return None
        return None

    def sync(self, claim: dict, host: dict, outcome: Any, committed: bool = False) -> None:
        """Claim -> host (Secrets, image, power, reserved annotations), host -> claim (status, metadata)."""
        writes_before = outcome.writes
        problem = None
        record = self.state.parsed(claim).as_read(claim)
        try:
            names, problem = self._data_copies(record, host, outcome)
        except InvalidInput as exc:
            names, problem = None, ("InvalidSpec", exc.cause, None)
        one_shot = {}
        if problem is None:
            written = self._write_down(record, host, names, outcome)
            if written is None:
                outcome.message = "the host changed while updating it; retried on the next pass"
                return
            before, host = written
            one_shot = one_shot_cleanup_patch(claim, before)
        imported = self.import_from(claim, host, outcome)
        meta = (
            {}
            if committed
            else merge_patches(
                binding_label_fix(claim, host_name(host)),
                {"metadata": {"finalizers": self._with_finalizer(claim)}} if self._with_finalizer(claim) else {},
                imported["patch"],
            )
        )
        meta = merge_patches(meta, one_shot, self.statuses.host_status_patch(claim, host))
        try:
            claim = self.writer.write_claim(claim, with_precondition(meta, claim), outcome)
            status = self.statuses.bound_status(claim, host, problem)
            if problem:
                outcome.reason, outcome.message = problem[0], problem[1]
            self.writer.write_claim(
                claim, with_precondition(status_patch(claim.get("status"), status), claim), outcome, status=True
            )
        except Conflict:
            self.state.count_conflict()
            outcome.message = "the claim changed while updating it; retried on the next pass"
            return
        if outcome.action == "unchanged" and outcome.writes > writes_before:
            outcome.action = "updated"
        if outcome.reason is None:
            outcome.reason, outcome.message = "Bound", "bound to host %s" % host_name(host)
