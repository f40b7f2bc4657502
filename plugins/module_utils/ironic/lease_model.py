# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Lease windows of Ironic nodes: overlap, matching, start and end.  Pure.

Where lease data lives
----------------------
A node's leases are a list kept in the node's ``properties`` under the key
:data:`LEASES_KEY` (``baremetal_tenancy_leases``)::

    properties:
      baremetal_tenancy_leases:
        - id: 3f2a9c1e7b0d          # 12 hex digits
          project: 6960e8e785034a809ab29278fef84d86
          start: "2026-05-01T08:00:00Z"
          end: "2026-05-08T08:00:00Z"   # null: open-ended
          created: "2026-04-30T17:02:11Z"

``properties`` rather than ``extra``: under Ironic's default policy a lessee
with the ``member`` role may write ``extra`` (``baremetal:node:update_extra``)
but not ``properties`` (``baremetal:node:update:properties`` is for the
system and the owner), so a tenant cannot lengthen its own lease.  This is
also where ESI-Leap records the lease a node is in (``properties.lease_uuid``).
Everyone who can read the node (owner, lessee, system readers) can read
the windows.

The node's ``lessee`` field is what Ironic enforces; the list is the
schedule.  A lease is *pending* before its start, *active* from its start
until its end, *expired* after it.  An active lease's project is the node's
lessee.  A ``lessee`` set on a node without a matching lease (by hand, or by
another tool) counts as an open-ended lease that this collection does not
manage: it blocks new leases of other projects until it is cleared.

Two leases of one node never overlap: windows are half-open ``[start, end)``
and an open end lasts forever.

Times are timezone-aware ``datetime`` objects in UTC; in lease records and
module results they are ISO 8601 strings ending in ``Z``.  This file imports
nothing but the standard library.
"""

from __future__ import annotations

import datetime
import re
import uuid
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import Conflict, InvalidInput

LEASES_KEY = "baremetal_tenancy_leases"

PENDING = "pending"
ACTIVE = "active"
EXPIRED = "expired"
UNMANAGED = "unmanaged"

UTC = datetime.timezone.utc
_ID_RE = re.compile(r"[0-9a-f]{12}\Z")
_ISO_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6})\d*)?)?)?"
    r"(Z|z|[+-]\d{2}:?\d{2})?\Z"
)


# ------------------------------------------------------------------ times


def parse_time(value: Any, obj: str = "time") -> datetime.datetime | None:
    """A UTC ``datetime`` from an ISO 8601 string (naive means UTC), or ``None``.

    Accepts ``YYYY-MM-DD``, ``YYYY-MM-DDTHH:MM[:SS[.ffffff]]`` with ``Z`` or
    ``+HH:MM`` offsets, and ``datetime`` objects.
    """
    if value is None or value == "":
        return None
    if isinstance(value, datetime.datetime):
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    if not isinstance(value, str):
        raise InvalidInput(obj, "must be an ISO 8601 date and time, got %r" % (value,))
    match = _ISO_RE.match(value.strip())
    if not match:
        raise InvalidInput(obj, "must be an ISO 8601 date and time such as 2026-05-01T08:00:00Z, got %r" % value)
    year, month, day, hour, minute, second, fraction, offset = match.groups()
    try:
        result = datetime.datetime(
            int(year),
            int(month),
            int(day),
            int(hour or 0),
            int(minute or 0),
            int(second or 0),
            int((fraction or "0").ljust(6, "0")),
        )
    except ValueError as exc:
        raise InvalidInput(obj, "is not a valid date and time (%s): %r" % (exc, value)) from exc
    if offset and offset not in ("Z", "z"):
        sign = 1 if offset[0] == "+" else -1
        digits = offset[1:].replace(":", "")
        delta = datetime.timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
        result = result - sign * delta
    return result.replace(tzinfo=UTC)


def format_time(value: Any) -> str | None:
    """ISO 8601 in UTC with a ``Z`` and whole seconds, or ``None``."""
    if value is None:
        return None
    value = parse_time(value)
    return value.replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def utcnow() -> datetime.datetime:
    return datetime.datetime.now(UTC).replace(microsecond=0)


def validate_window(
    start: Any, end: Any, prefix: str = "option"
) -> tuple[datetime.datetime | None, datetime.datetime | None]:
    """``(start, end)`` parsed from the options (``None`` where not given); the end must come after the start."""
    start_at = parse_time(start, "%s start" % prefix)
    end_at = parse_time(end, "%s end" % prefix)
    if start_at is not None and end_at is not None and end_at <= start_at:
        raise InvalidInput(
            "%s end" % prefix,
            "must be after start (%s), got %s" % (format_time(start_at), format_time(end_at)),
        )
    return start_at, end_at


# ------------------------------------------------------------------ host_lease's options


def check_run_options(params: Mapping[str, Any]) -> tuple[datetime.datetime | None, datetime.datetime | None]:
    """The checks of host_lease's options every run makes before it reads anything, on either lease provider.

    Returns the window ``(start, end)``; raises :class:`InvalidInput` naming the option.
    """
    for option in ("warn_before", "lead_time"):
        if (params.get(option) or 0) < 0:
            raise InvalidInput("option %s" % option, "must be 0 or more seconds, got %s" % params[option])
    if params.get("count") is not None and params["count"] < 1:
        raise InvalidInput("option count", "must be 1 or more, got %s" % params["count"])
    return validate_window(params.get("start"), params.get("end"))


def check_present_options(params: Mapping[str, Any], project: str | None) -> None:
    """What host_lease's state present needs: a project, and the nodes or how many (on either lease provider)."""
    if not project:
        raise InvalidInput("option project", "is required with state present")
    if not params.get("nodes") and params.get("count") is None:
        raise InvalidInput(
            "host_lease",
            "give the nodes to lease (option nodes) or how many (option count, with "
            "resource_class and traits to choose them)",
        )


# ------------------------------------------------------------------ records


def new_lease_id() -> str:
    return uuid.uuid4().hex[:12]


def make_lease(
    project: str,
    start: datetime.datetime,
    end: datetime.datetime | None,
    now: datetime.datetime,
    lease_id: str | None = None,
) -> dict:
    """A lease record (dict of strings) for ``project`` over ``[start, end)``."""
    return {
        "id": lease_id or new_lease_id(),
        "project": project,
        "start": format_time(start),
        "end": format_time(end),
        "created": format_time(now),
    }


def node_leases(node: dict | None, obj: str | None = None) -> list[dict]:
    """The lease records of ``node`` (a dict with ``properties``), validated.

    A malformed list is reported rather than silently dropped: the owner must
    know that the schedule of this node cannot be trusted.
    """
    obj = obj or "node %s" % node_label(node)
    raw = ((node or {}).get("properties") or {}).get(LEASES_KEY)
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InvalidInput(obj, "properties.%s is not a list of leases" % LEASES_KEY)
    leases = []
    for i, item in enumerate(raw):
        where = "properties.%s[%d]" % (LEASES_KEY, i)
        if not isinstance(item, dict) or not isinstance(item.get("project"), str) or not item.get("project"):
            raise InvalidInput(obj, "%s has no project" % where)
        if not isinstance(item.get("id"), str) or not _ID_RE.match(item["id"]):
            raise InvalidInput(obj, "%s has no valid id" % where)
        start = parse_time(item.get("start"), "%s %s.start" % (obj, where))
        if start is None:
            raise InvalidInput(obj, "%s has no start" % where)
        end = parse_time(item.get("end"), "%s %s.end" % (obj, where))
        if end is not None and end <= start:
            raise InvalidInput(obj, "%s ends before it starts" % where)
        lease = dict(item)
        lease["start"] = format_time(start)
        lease["end"] = format_time(end)
        leases.append(lease)
    return leases


def node_label(node: dict | None) -> str:
    node = node or {}
    return node.get("name") or node.get("uuid") or node.get("id") or "?"


# ------------------------------------------------------------------ windows


def window(lease: Mapping[str, Any]) -> tuple[datetime.datetime | None, datetime.datetime | None]:
    """``(start, end)`` datetimes of a lease record (``end`` may be ``None``)."""
    return parse_time(lease["start"]), parse_time(lease.get("end"))


def overlaps(
    a_start: datetime.datetime | None,
    a_end: datetime.datetime | None,
    b_start: datetime.datetime | None,
    b_end: datetime.datetime | None,
) -> bool:
    """Whether ``[a_start, a_end)`` and ``[b_start, b_end)`` share an instant.

    ``None`` as a start means "since ever", as an end "forever".
    """
    a_before_b_ends = b_end is None or a_start is None or a_start < b_end
    b_before_a_ends = a_end is None or b_start is None or b_start < a_end
    return a_before_b_ends and b_before_a_ends


def status(lease: Mapping[str, Any], now: datetime.datetime) -> str:
    start, end = window(lease)
    if now < start:
        return PENDING
    if end is not None and now >= end:
        return EXPIRED
    return ACTIVE


def describe(lease: Mapping[str, Any]) -> str:
    return "lease %s of project %s from %s until %s" % (
        lease.get("id", "?"),
        lease.get("project"),
        lease.get("start") or "ever",
        lease.get("end") or "open end",
    )


def unmanaged_lessee(node: dict | None, leases: Iterable[dict], now: datetime.datetime) -> str | None:
    """The node's lessee when no active lease explains it, else ``None``."""
    lessee = (node or {}).get("lessee")
    if not lessee:
        return None
    for lease in leases:
        if lease["project"] == lessee and status(lease, now) == ACTIVE:
            return None
    return lessee


def conflicts(
    node: dict | None,
    leases: Sequence[dict],
    project: str | None,
    start: datetime.datetime | None,
    end: datetime.datetime | None,
    now: datetime.datetime,
    ignore_id: str | None = None,
) -> list[str]:
    """Descriptions of what the window ``[start, end)`` for ``project`` would
    overlap on ``node``: leases (expired ones never count) and an unmanaged
    lessee of another project."""
    found = []
    for lease in leases:
        if lease.get("id") == ignore_id or status(lease, now) == EXPIRED:
            continue
        other_start, other_end = window(lease)
        if overlaps(start, end, other_start, other_end):
            found.append(describe(lease))
    other = unmanaged_lessee(node, leases, now)
    if other and other != project:
        found.append("lessee %s, set outside host_lease (no end)" % other)
    return found


def find_matching(
    leases: Iterable[dict],
    project: str | None,
    start: datetime.datetime | None,
    end: datetime.datetime | None,
    now: datetime.datetime,
) -> dict | None:
    """The lease that a request for ``project`` from ``start`` (``None``: now)
    until ``end`` designates, or ``None``.

    With a start, the lease of the project with that start.  Without one, the
    project's active lease, else its earliest pending lease with the same
    end (so that rerunning a task that leases "from now" finds its lease).
    """
    mine = [lease for lease in leases if lease["project"] == project and status(lease, now) != EXPIRED]
    if start is not None:
        start_s = format_time(start)
        for lease in mine:
            if lease["start"] == start_s:
                return lease
        return None
    for lease in mine:
        if status(lease, now) == ACTIVE:
            return lease
    end_s = format_time(end)
    pending = sorted((lease for lease in mine if lease.get("end") == end_s), key=lambda lease: lease["start"])
    return pending[0] if pending else None


def plan_lease(
    node: dict, project: str, start: datetime.datetime | None, end: datetime.datetime | None, now: datetime.datetime
) -> dict:
    """What leasing ``node`` to ``project`` over ``[start or now, end)`` takes.

    Returns a dict: ``action`` (``none``, ``create``, ``update``), ``lease`` (the
    record after the change), ``leases`` (the node's full list after it),
    ``set_lessee`` (the project to set as lessee now, or ``None``).
    Raises :class:`Conflict` naming the overlapping leases, or
    :class:`InvalidInput` for a window that ends before it starts or has
    already ended.
    """
    obj = "node %s" % node_label(node)
    leases = node_leases(node, obj)
    if end is not None and start is not None and end <= start:
        raise InvalidInput(obj, "the lease ends (%s) before it starts (%s)" % (format_time(end), format_time(start)))
    if end is not None and end <= now:
        raise InvalidInput(obj, "the lease would end at %s, which has passed" % format_time(end))
    existing = find_matching(leases, project, start, end, now)
    if existing is not None:
        lease = dict(existing)
        action = "none"
        if format_time(end) != existing.get("end"):
            found = conflicts(node, leases, project, parse_time(existing["start"]), end, now, ignore_id=existing["id"])
            if found:
                raise Conflict(
                    obj,
                    "cannot move the end of %s to %s: it would overlap %s"
                    % (describe(existing), format_time(end) or "open end", "; ".join(found)),
                )
            lease["end"] = format_time(end)
            action = "update"
        new_list = [lease if item["id"] == lease["id"] else item for item in leases]
    else:
        effective_start = start or now
        found = conflicts(node, leases, project, effective_start, end, now)
        if found:
            raise Conflict(
                obj,
                "a lease to project %s from %s until %s overlaps %s"
                % (project, format_time(effective_start), format_time(end) or "open end", "; ".join(found)),
            )
        lease = make_lease(project, effective_start, end, now)
        action = "create"
        new_list = sorted([*leases, lease], key=lambda item: item["start"])
    set_lessee = None
    if status(lease, now) == ACTIVE and (node or {}).get("lessee") != project:
        set_lessee = project
    return {"action": action, "lease": lease, "leases": new_list, "set_lessee": set_lessee}


def plan_reconcile(node: dict, now: datetime.datetime) -> dict:
    """What bringing ``node`` up to date with the clock takes.

    Returns a dict: ``expired`` (lease records whose end has passed),
    ``end_lessee`` (the project whose access ends now: the lessee of an
    expired lease that no active lease of the same project continues),
    ``start`` (the lease that has become active and whose project is not the
    lessee yet, or ``None``), ``blocked`` (why ``start`` cannot happen: the
    node has another lessee, set outside host_lease), ``leases`` (the list
    after dropping the expired ones).
    """
    obj = "node %s" % node_label(node)
    leases = node_leases(node, obj)
    lessee = (node or {}).get("lessee")
    expired = [lease for lease in leases if status(lease, now) == EXPIRED]
    remaining = [lease for lease in leases if status(lease, now) != EXPIRED]
    active = [lease for lease in remaining if status(lease, now) == ACTIVE]
    end_lessee = None
    if (
        lessee
        and any(lease["project"] == lessee for lease in expired)
        and not any(lease["project"] == lessee for lease in active)
    ):
        end_lessee = lessee
    start, blocked = None, None
    if active and active[0]["project"] != lessee:
        if lessee and lessee != end_lessee:
            blocked = "lessee %s, set outside host_lease, blocks %s" % (lessee, describe(active[0]))
        else:
            start = active[0]
    return {"expired": expired, "end_lessee": end_lessee, "start": start, "blocked": blocked, "leases": remaining}


def plan_end(node: dict, project: str | None, now: datetime.datetime, lease_id: str | None = None) -> dict:
    """What ending the leases of ``project`` on ``node`` now takes (``state=absent``).

    Returns a dict: ``removed`` (records dropped), ``end_lessee`` (``project``
    if it is the node's lessee now, else ``None``), ``leases`` (the list
    after). ``lease_id`` narrows it to one lease.
    """
    obj = "node %s" % node_label(node)
    leases = node_leases(node, obj)
    removed = [
        lease
        for lease in leases
        if (project is None or lease["project"] == project) and (lease_id is None or lease["id"] == lease_id)
    ]
    kept = [lease for lease in leases if lease not in removed]
    lessee = (node or {}).get("lessee")
    end_lessee = None
    if lessee:
        if any(lease["project"] == lessee and status(lease, now) == ACTIVE for lease in removed):
            end_lessee = lessee
        elif lease_id is None and project in (None, lessee) and unmanaged_lessee(node, leases, now):
            # ending "the project's leases" also ends access given outside host_lease
            end_lessee = lessee
    return {"removed": removed, "end_lessee": end_lessee, "leases": kept}


def lease_view(node: dict | None, lease: Mapping[str, Any], now: datetime.datetime) -> dict:
    """A lease as the module returns it."""
    return {
        "id": lease["id"],
        "node": node_label(node),
        "node_uuid": (node or {}).get("uuid") or (node or {}).get("id"),
        "project": lease["project"],
        "start": lease.get("start"),
        "end": lease.get("end"),
        "status": status(lease, now),
    }


def unmanaged_view(node: dict) -> dict:
    return {
        "id": None,
        "node": node_label(node),
        "node_uuid": (node or {}).get("uuid") or (node or {}).get("id"),
        "project": node.get("lessee"),
        "start": None,
        "end": None,
        "status": UNMANAGED,
    }


# ------------------------------------------------------------------ choosing nodes


def node_is_free_now(node: dict | None) -> bool:
    """A node that can be handed to a new lessee at once: available, not
    allocated, not deployed, not in maintenance."""
    node = node or {}
    return (
        node.get("provision_state") == "available"
        and not node.get("target_provision_state")
        and not node.get("allocation_uuid")
        and not node.get("instance_uuid")
        and not node.get("maintenance")
    )


def has_traits(node: dict | None, traits: Iterable[str] | None) -> bool:
    return set(traits or ()) <= set((node or {}).get("traits") or ())


def choose_nodes(
    nodes: Iterable[dict],
    project: str,
    start: datetime.datetime | None,
    end: datetime.datetime | None,
    now: datetime.datetime,
    count: int,
    resource_class: str | None = None,
    traits: Collection[str] | None = None,
) -> tuple[list[dict], list[dict]]:
    """Pick nodes for a lease of ``count`` nodes; pure and deterministic.

    Nodes already leased to ``project`` over the same request (same start,
    or active now when no start is given, and the same end) count towards
    ``count``: rerunning the task changes nothing.  The others must have the
    resource class and traits, no lease overlapping the window, no unmanaged
    lessee and, when the lease starts now, be free at once.  Returns
    ``(already, chosen)``, lists of nodes.  Raises :class:`Conflict` when
    fewer than ``count`` nodes qualify: nothing is leased then.
    """
    matching = [
        n
        for n in nodes
        if (resource_class is None or n.get("resource_class") == resource_class) and has_traits(n, traits)
    ]
    matching.sort(key=lambda n: (node_label(n), n.get("uuid") or ""))
    already, free = [], []
    starts_now = start is None or start <= now
    for node in matching:
        leases = node_leases(node)
        existing = find_matching(leases, project, start, end, now)
        if existing is not None and existing.get("end") == format_time(end):
            already.append(node)
            continue
        if node.get("maintenance"):
            continue
        if conflicts(node, leases, project, start or now, end, now):
            continue
        if starts_now and not node_is_free_now(node):
            continue
        free.append(node)
    if len(already) >= count:
        return already[:count], []
    needed = count - len(already)
    if len(free) < needed:
        what = "resource class %s" % resource_class if resource_class else "the selection"
        if traits:
            what += " with traits %s" % ", ".join(sorted(traits))
        raise Conflict(
            "lease of %d node(s) to project %s" % (count, project),
            "only %d node(s) of %s are free from %s until %s (%d already leased to the project); "
            "nothing was leased"
            % (len(free), what, format_time(start or now), format_time(end) or "open end", len(already)),
        )
    return already, free[:needed]
