# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Who else writes the status of baremetal-operator's HostClaims: the signal that its own controller is on.  Pure.

baremetal-operator's HostClaim controller (``--hostclaims``) and ``host_bind``
keep the same finalizer and status on the same claims, so both must never run:
on a deleted claim upstream's controller clears the host's ``consumerRef`` at
once and hands the host on still provisioned.  The API server records who
wrote what in ``metadata.managedFields``: every status write of ``host_bind``
is made as the field manager :data:`BINDER_FIELD_MANAGER`.  A claim whose
status another manager wrote *after* the binder's last write (or which the
binder never wrote) was reconciled by another controller.  Upstream's
controller writes every new claim in its namespaces within a second (the
finalizer, ``Associated``), so a pass that finds none is safe to run.

After the owner stopped upstream's controller (``--hostclaims`` off), the
claims it wrote are taken over with ``host_bind``'s ``take_over``: the binder
then writes each of them once (``status.lastUpdated``, which upstream never
writes), so later passes see its write as the newest.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

#: the ``fieldManager`` of host_bind's writes
BINDER_FIELD_MANAGER = "baremetal.tenancy-host_bind"


class ForeignWrite(NamedTuple):
    """The newest status write of another field manager on a claim."""

    namespace: str | None
    name: str | None
    manager: str
    time: str


def foreign_status_write(claim: dict, own: str = BINDER_FIELD_MANAGER) -> ForeignWrite | None:
    """The newest status write on ``claim`` by a field manager other than ``own``, when it is newer than
    ``own``'s last write on the claim (or ``own`` never wrote it); else ``None``.

    Times are RFC 3339 in UTC to the second, as the API server writes them: a write
    in the same second as the binder's counts as older (not foreign).
    """
    meta = claim.get("metadata") or {}
    entries = [entry for entry in meta.get("managedFields") or [] if isinstance(entry, dict)]
    ours = [str(entry.get("time") or "") for entry in entries if entry.get("manager") == own]
    foreign = [
        (str(entry.get("time") or ""), str(entry.get("manager") or "(no manager)"))
        for entry in entries
        if entry.get("subresource") == "status" and entry.get("manager") != own
    ]
    if not foreign:
        return None
    time, manager = max(foreign)
    if ours and time <= max(ours):
        return None
    return ForeignWrite(meta.get("namespace"), meta.get("name"), manager, time)


def foreign_writes(claims: Iterable[dict], own: str = BINDER_FIELD_MANAGER) -> list[ForeignWrite]:
    """:func:`foreign_status_write` of every claim that has one, by namespace and name."""
    found = [foreign_status_write(claim, own) for claim in claims]
    return sorted((item for item in found if item is not None), key=lambda item: (str(item[0]), str(item[1])))


def controller_problem(writes: list[ForeignWrite], limit: int = 3) -> str | None:
    """The refusal for a pass that found claims another controller wrote (``None``: none)."""
    if not writes:
        return None
    shown = ", ".join(
        "HostClaim %s/%s (status written by %r at %s)" % (item.namespace, item.name, item.manager, item.time)
        for item in writes[:limit]
    )
    more = " and %d more" % (len(writes) - limit) if len(writes) > limit else ""
    return (
        "another controller writes these claims, most likely baremetal-operator's own HostClaim controller "
        "(--hostclaims): %s%s. Both must not run: stop it, then run host_bind once with take_over=true to take "
        "over the claims it wrote" % (shown, more)
    )
