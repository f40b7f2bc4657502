# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The notice that tells a tenant its lease of a node is about to end.  Pure.

Where the notice lives, and why there
-------------------------------------
In the node's ``properties`` under :data:`NOTICE_KEY`
(``baremetal_tenancy_lease_notice``), beside the lease records
(:mod:`lease_model`)::

    properties:
      baremetal_tenancy_lease_notice:
        lease: 3f2a9c1e7b0d
        project: 6960e8e785034a809ab29278fef84d86
        end: "2026-05-08T08:00:00Z"
        warned: "2026-05-08T07:00:00Z"
        message: "the lease 3f2a9c1e7b0d of this node ends at 2026-05-08T08:00:00Z: ..."

- The lessee reads it with its own credentials, on the node its allocation
  is on (``GET /v1/nodes/<node>``: Ironic shows a lessee the node's
  ``properties``), the same place its lease's end is recorded.
- The lessee cannot write it: ``properties`` is for the system and the owner
  (``baremetal:node:update:properties``), under Ironic's default policy and
  the ``ironic_tenancy`` role's.  The allocation was the other candidate, but
  its ``extra`` and ``name`` are the tenant's own to write (the owner may not
  even update another project's allocation), so nothing there could be told
  apart from what the tenant wrote itself, and the lease keeper, which reads
  the notice back to know whom it warned, would trust a tenant's field.
- It is a key of its own rather than a field of the lease record, so that
  writing it never rewrites the lease list (Ironic's PATCH has no
  precondition: a concurrent ``host_lease`` could lose a lease otherwise).

One notice per node (a node has one lessee at a time).  It goes with the
lessee: :func:`leases.end_access_patch` removes it in the patch that ends
the lease, and a notice whose lease is no longer the one ending (ended,
moved) is removed or replaced by the next ``host_lease state=expired`` run.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import lease_model as model

NOTICE_KEY = "baremetal_tenancy_lease_notice"
#: the fields that say which lease end a notice announces (``warned`` and ``message`` follow from them)
NOTICE_IDENTITY = ("lease", "project", "end")


def ending_lease(node: dict | None, now: datetime.datetime) -> dict | None:
    """The lease whose end ends the access of the node's lessee, or ``None``.

    That is the lessee's earliest lease that has started and has an end (an
    end that passed already is overdue: it is still returned), unless another
    lease of the same project starts right at that end (the access goes on).
    Raises :class:`errors.InvalidInput` for a malformed lease list.
    """
    lessee = (node or {}).get("lessee")
    if not lessee:
        return None
    leases = [lease for lease in model.node_leases(node) if lease["project"] == lessee]
    starts = set(lease["start"] for lease in leases)
    for lease in sorted(leases, key=lambda item: item["start"]):
        start, end = model.window(lease)
        if start > now or end is None:
            continue
        if lease["end"] in starts:
            continue  # a lease of the same project follows without a gap
        return lease
    return None


def seconds_left(lease: dict, now: datetime.datetime) -> float:
    """Seconds from ``now`` until the end of ``lease`` (negative once it passed)."""
    return (model.parse_time(lease["end"]) - now).total_seconds()


def node_notice(node: dict | None) -> dict | None:
    """The notice written on ``node``, or ``None`` (anything but a mapping counts as none)."""
    notice = ((node or {}).get("properties") or {}).get(NOTICE_KEY)
    return notice if isinstance(notice, dict) else None


def announces(notice: dict | None, lease: dict | None) -> bool:
    """Whether ``notice`` announces the end of ``lease`` as it is recorded now."""
    if not notice or not lease:
        return False
    return all(
        notice.get(key) == value for key, value in zip(NOTICE_IDENTITY, (lease["id"], lease["project"], lease["end"]))
    )


def make_notice(lease: dict, now: datetime.datetime) -> dict:
    return {
        "lease": lease["id"],
        "project": lease["project"],
        "end": lease["end"],
        "warned": model.format_time(now),
        "message": "the lease %s of this node ends at %s: the project's access ends then, its allocation is "
        "removed and a deployed node is undeployed and cleaned" % (lease["id"], lease["end"]),
    }


def plan_notice(node: dict, now: datetime.datetime, warn_before: float | None) -> tuple[dict | None, bool]:
    """``(notice, changed)``: the notice ``node`` should carry, and whether that differs from what it carries.

    With ``warn_before`` (seconds), the lease ending within that time (and not
    ended yet: an overdue lease is ended, not announced) gets a notice; a notice already announcing the same lease end is kept as it is
    (its ``warned`` time included); without ``warn_before``, only such a notice
    is kept.  Any other notice goes.
    """
    current = node_notice(node)
    lease = ending_lease(node, now)
    if lease is not None and announces(current, lease):
        return current, False
    desired = None
    if lease is not None and warn_before is not None and 0 < seconds_left(lease, now) <= warn_before:
        desired = make_notice(lease, now)
    present = NOTICE_KEY in ((node or {}).get("properties") or {})
    return desired, desired is not None or present


def notice_patch(node: dict, notice: dict | None) -> list[dict]:
    """The JSON patch ops that leave ``notice`` (``None``: none) on ``node``."""
    path = "/properties/%s" % NOTICE_KEY
    if notice is None:
        return [{"op": "remove", "path": path}] if NOTICE_KEY in ((node or {}).get("properties") or {}) else []
    return [{"op": "add", "path": path, "value": notice}]


def ends_within(nodes: Iterable[dict], now: datetime.datetime, seconds: float) -> list[tuple[datetime.datetime, Any]]:
    """``(end, node)`` for each node whose lessee's access ends after ``now`` and within ``seconds``, by end."""
    found = []
    for node in nodes:
        lease = ending_lease(node, now)
        if lease is not None and 0 < seconds_left(lease, now) <= seconds:
            found.append((model.parse_time(lease["end"]), node))
    found.sort(key=lambda item: (item[0], model.node_label(item[1])))
    return found
