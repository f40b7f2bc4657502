# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""ESI-Leap's offers and leases as the collection sees them.  Pure: no client library.

Where the cloud runs ESI-Leap (the catalog has a ``lease`` service), ESI-Leap
owns the leases of Ironic nodes: the owner *offers* a node for a window
(optionally to one project), a tenant *claims* the offer with its own
credentials, which makes a *lease*, and ESI-Leap's manager sets the node's
``lessee`` (and ``properties.lease_uuid``) at its next tick and removes them
at the lease's end.  The collection writes no ``lessee`` under ESI-Leap's feet.

- Records are parsed once where they enter (:func:`parse_offer`,
  :func:`parse_lease`) into typed objects; views (:func:`offer_view`,
  :func:`lease_view`) carry names, projects, windows and states only: never
  ESI-Leap's ``resource_properties`` nor ``properties``, so nothing read from the
  node beyond its name and resource class reaches a result.
- Times: ESI-Leap takes and returns naive UTC; an offer without an end runs to
  ``9999-12-31T23:59:59.999999``, which the views show as an open end
  (``None``).  Windows are compared to the second (ESI-Leap keeps the
  microseconds of "now" when no start is given).
- Planning offers is idempotent: an available offer of the caller's project for
  the same node, the same lessee and the same window is kept, whatever its UUID
  (:func:`plan_offers`); a window without a start is "from now", which an offer
  already under way satisfies.
- ESI-Leap answers most refusals with HTTP 500 and its own text (a window that
  overlaps another offer or lease: "Time conflict for ironic_node ..."; a claim
  outside the offer's availabilities: "... has no availabilities at given time
  range ..."): :func:`esi_error` turns each into the collection's error class
  (a 409 or one of those texts: :class:`Conflict`; 403: :class:`Forbidden`; 404 or
  an unknown project: :class:`NotFound`; a bad window: :class:`InvalidInput`)
  with one message naming the object and the cause, ESI-Leap's words kept.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    Conflict,
    Forbidden,
    InvalidInput,
    NotFound,
    TenancyError,
    api_message,
    status_error,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.lease_model import (
    UTC,
    format_time,
    parse_time,
)

#: the Keystone catalog's service type of ESI-Leap
SERVICE_TYPE = "lease"
#: ESI-Leap's resource type of Ironic nodes
RESOURCE_TYPE = "ironic_node"
#: from this year on, an ESI-Leap end is "never" (it stores datetime.max)
_OPEN_END_YEAR = 9999

# ESI-Leap's statuses (offers: available, expired, deleted, error; leases: the rest too).
AVAILABLE = "available"
CREATED = "created"
ACTIVE = "active"
WAIT_FULFILL = "wait fulfill"
WAIT_CANCEL = "wait cancel"
WAIT_EXPIRE = "wait expire"
EXPIRED = "expired"
DELETED = "deleted"
ERROR = "error"
#: a lease the tenant holds, or will once the manager fulfils it
HELD = (CREATED, WAIT_FULFILL, ACTIVE)
#: a lease that is over (or being ended)
OVER = (WAIT_CANCEL, WAIT_EXPIRE, EXPIRED, DELETED)


# ------------------------------------------------------------------ node properties


def properties_mismatch(properties: Mapping[str, Any] | None, wanted: Mapping[str, Any] | None) -> str | None:
    """Why a node with ``properties`` does not match ``wanted`` (``None`` when it does).

    Each key of ``wanted`` must be in ``properties`` with an equal value; a value compares equal as given or as text
    (``cpus: 8`` matches ``"8"``: survey answers and ``-e key=value`` are text).  The reason names the key and the
    wanted value only, never what the node holds.
    """
    have = properties if isinstance(properties, Mapping) else {}
    for key in sorted(wanted or {}):
        want = (wanted or {})[key]
        if key not in have:
            return "has no property %s" % key
        value = have[key]
        if value != want and str(value) != str(want):
            return "its property %s is not %s" % (key, want)
    return None


# ------------------------------------------------------------------ times


def read_time(value: Any, obj: str = "ESI-Leap time") -> datetime.datetime | None:
    """A UTC ``datetime`` from an ESI-Leap time (naive UTC), ``None`` for none or the open end."""
    moment = parse_time(value, obj)
    if moment is not None and moment.year >= _OPEN_END_YEAR:
        return None
    return moment


def esi_time(value: datetime.datetime | None) -> str | None:
    """A time as ESI-Leap takes it: naive UTC to the second (``None`` stays ``None``)."""
    if value is None:
        return None
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")


def _second(value: datetime.datetime | None) -> datetime.datetime | None:
    return None if value is None else value.replace(microsecond=0)


def describe_window(start: datetime.datetime | None, end: datetime.datetime | None) -> str:
    """``from <start> to <end>`` in the collection's words (``now``, ``no end``)."""
    return "from %s to %s" % (format_time(start) or "now", format_time(end) or "no end")


def overlaps(
    a_start: datetime.datetime | None,
    a_end: datetime.datetime | None,
    b_start: datetime.datetime | None,
    b_end: datetime.datetime | None,
    now: datetime.datetime,
) -> bool:
    """Whether two half-open windows overlap (a missing start is ``now``, a missing end is never)."""
    a_start = a_start or now
    b_start = b_start or now
    return (a_end is None or b_start < a_end) and (b_end is None or a_start < b_end)


# ------------------------------------------------------------------ records


@dataclasses.dataclass(frozen=True)
class Offer:
    """An ESI-Leap offer of one node, parsed once."""

    uuid: str
    node_uuid: str | None
    node: str | None  # the node's name, or its UUID when it has none
    resource_class: str | None
    owner: str | None  # the offering project
    owner_name: str | None
    lessee: str | None  # the one project it is offered to, or None (every project)
    lessee_name: str | None
    start: datetime.datetime | None
    end: datetime.datetime | None  # None: no end
    status: str | None
    availabilities: tuple[tuple[datetime.datetime | None, datetime.datetime | None], ...] = ()


@dataclasses.dataclass(frozen=True)
class Lease:
    """An ESI-Leap lease of one node, parsed once."""

    uuid: str
    offer_uuid: str | None
    node_uuid: str | None
    node: str | None
    resource_class: str | None
    project: str | None  # the lessee project
    project_name: str | None
    owner: str | None
    owner_name: str | None
    start: datetime.datetime | None
    end: datetime.datetime | None
    status: str | None
    name: str | None = None  # the lease's name (host_offer_claim's name: the claim it is for)


def _text(record: Mapping[str, Any], key: str) -> str | None:
    value = record.get(key)
    return value if isinstance(value, str) and value else None


def _node_label(record: Mapping[str, Any]) -> str | None:
    name = _text(record, "resource")
    if name and name != "unknown-name":  # ESI-Leap's placeholder when it could not read the node
        return name
    return _text(record, "resource_uuid")


def parse_offer(record: Mapping[str, Any]) -> Offer:
    """An :class:`Offer` from ESI-Leap's JSON."""
    uuid = _text(record, "uuid") or "?"
    obj = "ESI-Leap offer %s" % uuid
    windows = []
    for pair in record.get("availabilities") or []:
        if isinstance(pair, (list, tuple)) and len(pair) == 2:
            windows.append((read_time(pair[0], obj), read_time(pair[1], obj)))
    return Offer(
        uuid=uuid,
        node_uuid=_text(record, "resource_uuid"),
        node=_node_label(record),
        resource_class=_text(record, "resource_class"),
        owner=_text(record, "project_id"),
        owner_name=_text(record, "project"),
        lessee=_text(record, "lessee_id"),
        lessee_name=_text(record, "lessee"),
        start=read_time(record.get("start_time"), obj),
        end=read_time(record.get("end_time"), obj),
        status=_text(record, "status"),
        availabilities=tuple(windows),
    )


def parse_lease(record: Mapping[str, Any]) -> Lease:
    """A :class:`Lease` from ESI-Leap's JSON."""
    uuid = _text(record, "uuid") or "?"
    obj = "ESI-Leap lease %s" % uuid
    return Lease(
        uuid=uuid,
        offer_uuid=_text(record, "offer_uuid"),
        node_uuid=_text(record, "resource_uuid"),
        node=_node_label(record),
        resource_class=_text(record, "resource_class"),
        project=_text(record, "project_id"),
        project_name=_text(record, "project"),
        owner=_text(record, "owner_id"),
        owner_name=_text(record, "owner"),
        start=read_time(record.get("start_time"), obj),
        end=read_time(record.get("end_time"), obj),
        status=_text(record, "status"),
        name=_text(record, "name"),
    )


def offer_view(offer: Offer, now: datetime.datetime | None = None) -> dict:
    """What a module result shows of an offer (``now`` adds ``claimable``: an availability covers now)."""
    view = {
        "uuid": offer.uuid,
        "node": offer.node,
        "node_uuid": offer.node_uuid,
        "resource_class": offer.resource_class,
        "owner": offer.owner,
        "owner_name": offer.owner_name,
        "lessee": offer.lessee,
        "lessee_name": offer.lessee_name,
        "start": format_time(offer.start),
        "end": format_time(offer.end),
        "status": offer.status,
        "availabilities": [{"start": format_time(s), "end": format_time(e)} for s, e in offer.availabilities],
    }
    if now is not None:
        view["claimable"] = claimable(offer, None, None, now)
    return view


def lease_view(lease: Lease) -> dict:
    """What a module result shows of a lease."""
    return {
        "uuid": lease.uuid,
        "offer": lease.offer_uuid,
        "node": lease.node,
        "node_uuid": lease.node_uuid,
        "resource_class": lease.resource_class,
        "project": lease.project,
        "project_name": lease.project_name,
        "owner": lease.owner,
        "owner_name": lease.owner_name,
        "start": format_time(lease.start),
        "end": format_time(lease.end),
        "status": lease.status,
        "name": lease.name,
    }


# ------------------------------------------------------------------ offers the owner wants


@dataclasses.dataclass(frozen=True)
class WantedOffer:
    """One offer the owner asks for: a node, a window, optionally one lessee (an ID or a name)."""

    node_uuid: str
    node: str
    start: datetime.datetime | None
    end: datetime.datetime | None
    lessee: str | None

    def describe(self) -> str:
        to = "project %s" % self.lessee if self.lessee else "every project"
        return "offer of node %s to %s %s" % (self.node, to, describe_window(self.start, self.end))

    def body(self) -> dict:
        """The POST /v1/offers body."""
        body: dict[str, Any] = {"resource_type": RESOURCE_TYPE, "resource_uuid": self.node_uuid}
        if self.start is not None:
            body["start_time"] = esi_time(self.start)
        if self.end is not None:
            body["end_time"] = esi_time(self.end)
        if self.lessee:
            body["lessee_id"] = self.lessee
        return body

    def view(self) -> dict:
        """The view of the offer this would create (check mode: no UUID yet)."""
        return {
            "uuid": None,
            "node": self.node,
            "node_uuid": self.node_uuid,
            "resource_class": None,
            "owner": None,
            "owner_name": None,
            "lessee": self.lessee,
            "lessee_name": None,
            "start": format_time(self.start),
            "end": format_time(self.end),
            "status": AVAILABLE,
            "availabilities": [],
        }


def lessee_matches(offer: Offer, lessee: str | None) -> bool:
    """Whether ``offer`` is made for ``lessee`` (an ID or a name; ``None``: made for every project)."""
    if lessee is None:
        return offer.lessee is None
    return lessee in (offer.lessee, offer.lessee_name)


def window_matches(
    offer: Offer, start: datetime.datetime | None, end: datetime.datetime | None, now: datetime.datetime
) -> bool:
    """Whether ``offer``'s window is the one asked for: the same end (or both none), and the same start, or, with
    no start asked (from now), a start that has come."""
    if _second(offer.end) != _second(end):
        return False
    if start is None:
        return offer.start is None or _second(offer.start) <= now
    return _second(offer.start) == _second(start)


def offer_matches(offer: Offer, wanted: WantedOffer, now: datetime.datetime) -> bool:
    return (
        offer.status == AVAILABLE
        and offer.node_uuid == wanted.node_uuid
        and lessee_matches(offer, wanted.lessee)
        and window_matches(offer, wanted.start, wanted.end, now)
    )


@dataclasses.dataclass
class OfferPlan:
    """What :func:`plan_offers` decided: offers kept as they are (with what they satisfy), and offers to create."""

    keep: list[tuple[WantedOffer, Offer]] = dataclasses.field(default_factory=list)
    create: list[WantedOffer] = dataclasses.field(default_factory=list)


def plan_offers(wanted: Sequence[WantedOffer], existing: Iterable[Offer], now: datetime.datetime) -> OfferPlan:
    """Which wanted offers exist already (kept) and which to create; each existing offer satisfies one wish."""
    plan = OfferPlan()
    free = [offer for offer in existing if offer.status == AVAILABLE]
    for wish in wanted:
        found = next((offer for offer in free if offer_matches(offer, wish, now)), None)
        if found is None:
            plan.create.append(wish)
        else:
            free.remove(found)
            plan.keep.append((wish, found))
    return plan


def overlapping_offer(wish: WantedOffer, existing: Iterable[Offer], now: datetime.datetime) -> Offer | None:
    """An available offer of the same node whose window overlaps ``wish``'s (ESI-Leap would refuse the wish)."""
    for offer in existing:
        if (
            offer.status == AVAILABLE
            and offer.node_uuid == wish.node_uuid
            and overlaps(offer.start, offer.end, wish.start, wish.end, now)
        ):
            return offer
    return None


def plan_withdraw(
    existing: Iterable[Offer],
    node_uuids: Iterable[str],
    owner: str | None,
    lessee: str | None = None,
    start: datetime.datetime | None = None,
    end: datetime.datetime | None = None,
) -> list[Offer]:
    """The available offers of ``owner`` on ``node_uuids`` to withdraw; ``lessee``, ``start`` and ``end``, when
    given, narrow them to the offers for that project, starting and ending then (to the second)."""
    nodes = set(node_uuids)
    chosen = []
    for offer in existing:
        if offer.status != AVAILABLE or offer.node_uuid not in nodes or (owner and offer.owner != owner):
            continue
        if lessee is not None and not lessee_matches(offer, lessee):
            continue
        if start is not None and _second(offer.start) != _second(start):
            continue
        if end is not None and _second(offer.end) != _second(end):
            continue
        chosen.append(offer)
    return chosen


# ------------------------------------------------------------------ claims


#: how far ESI-Leap's "now" may run ahead of the run's: an offer under way shows an availability from the moment
#: ESI-Leap answered, which comes after the moment the run took as now
NOW_SLACK = datetime.timedelta(seconds=60)


def _starts_by(offer: Offer, a_start: datetime.datetime | None, begin: datetime.datetime) -> bool:
    """Whether the availability starting at ``a_start`` has begun by ``begin``.  ESI-Leap starts the first
    availability of an offer under way at its own now (with microseconds), a moment after the run's ``now``: such
    an availability counts from the offer's start."""
    if a_start is None or _second(a_start) <= begin:
        return True
    return offer.start is not None and _second(offer.start) <= begin and a_start - begin <= NOW_SLACK


def claimable(
    offer: Offer, start: datetime.datetime | None, end: datetime.datetime | None, now: datetime.datetime
) -> bool:
    """Whether one of ``offer``'s availabilities holds the window (a missing start is now, a missing end is the
    availability's end), as ESI-Leap requires of a claim."""
    if offer.status != AVAILABLE:
        return False
    begin = start or now
    for a_start, a_end in offer.availabilities:
        if not _starts_by(offer, a_start, begin):
            continue
        if a_end is not None and begin >= a_end:
            continue
        if end is not None and a_end is not None and end > a_end:
            continue
        return True
    return False


def _node_is(record: Offer | Lease, node: str | None) -> bool:
    return node is None or node in (record.node, record.node_uuid)


def _class_is(record: Offer | Lease, resource_class: str | None) -> bool:
    return resource_class is None or record.resource_class == resource_class


def choose_offer(
    offers: Iterable[Offer],
    resource_class: str | None,
    node: str | None,
    start: datetime.datetime | None,
    end: datetime.datetime | None,
    now: datetime.datetime,
) -> Offer | None:
    """The first offer (by node, then start, then UUID) of ``resource_class`` and ``node`` claimable for the window."""
    candidates = [
        offer
        for offer in offers
        if _class_is(offer, resource_class) and _node_is(offer, node) and claimable(offer, start, end, now)
    ]
    candidates.sort(key=lambda o: (o.node or "", o.start or now, o.uuid))
    return candidates[0] if candidates else None


def held_lease(
    leases: Iterable[Lease],
    project: str,
    offer_uuid: str | None = None,
    resource_class: str | None = None,
    node: str | None = None,
    start: datetime.datetime | None = None,
    end: datetime.datetime | None = None,
    name: str | None = None,
) -> Lease | None:
    """A lease ``project`` already holds that a claim with these options would make (its second run). With
    ``name``, only a lease of that name: claims of one resource class with different names hold different leases."""
    for lease in leases:
        if lease.project != project or lease.status not in HELD:
            continue
        if name is not None and lease.name != name:
            continue
        if offer_uuid is not None and lease.offer_uuid != offer_uuid:
            continue
        if not (_class_is(lease, resource_class) and _node_is(lease, node)):
            continue
        if start is not None and _second(lease.start) != _second(start):
            continue
        if end is not None and _second(lease.end) != _second(end):
            continue
        return lease
    return None


def leases_to_end(
    leases: Iterable[Lease],
    project: str,
    offer_uuid: str | None = None,
    resource_class: str | None = None,
    node: str | None = None,
    name: str | None = None,
) -> list[Lease]:
    """The leases ``project`` holds (as the lessee) that match the options: what ending them early ends."""
    return [
        lease
        for lease in leases
        if lease.project == project
        and lease.status in HELD
        and (name is None or lease.name == name)
        and (offer_uuid is None or lease.offer_uuid == offer_uuid)
        and _class_is(lease, resource_class)
        and _node_is(lease, node)
    ]


def claim_body(start: datetime.datetime | None, end: datetime.datetime | None, name: str | None = None) -> dict:
    """The POST /v1/offers/<uuid>/claim body (ESI-Leap's defaults: from now to the end of the availability)."""
    body = {"name": name} if name else {}
    if start is not None:
        body["start_time"] = esi_time(start)
    if end is not None:
        body["end_time"] = esi_time(end)
    return body


def lease_failed(lease: Lease | None) -> str | None:
    """Why a wait for ``lease`` to become active stops early, or ``None``."""
    if lease is None:
        return None
    if lease.status == ERROR:
        return "ESI-Leap's manager could not fulfil it (status error)"
    if lease.status in OVER:
        return "it ended before it became active (status %s)" % lease.status
    return None


# ------------------------------------------------------------------ errors


def esi_message(body: Any) -> str | None:
    """ESI-Leap's error text (its WSME ``faultstring``), or the collection's reading of any other error body."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            return body.strip()[:500] or None
    if isinstance(body, Mapping) and isinstance(body.get("faultstring"), str):
        return body["faultstring"]
    return api_message(body)


_OVERLAP_WORDS = ("time conflict",)
_OUTSIDE_WORDS = ("has no availabilities", 'does not have status "available"')
_UNKNOWN_PROJECT_WORDS = ("no project named",)
_BAD_WINDOW_WORDS = ("start time must be strictly less than end time", "max time range")


def esi_error(obj: str, status: int, message: str | None) -> TenancyError:
    """The collection's error for an ESI-Leap error answer about ``obj``: one message naming it, the cause in the
    collection's words and ESI-Leap's own text with the status after it."""
    text = (message or "HTTP %s" % status).strip()
    said = "(ESI-Leap: %s; HTTP %s)" % (text, status)
    lowered = text.lower()
    details = {"status": status, "esi_leap_message": text}
    if status == 409 or any(words in lowered for words in _OVERLAP_WORDS):
        return Conflict(
            obj, "ESI-Leap refused it: its window overlaps another offer or lease of the node %s" % said, details
        )
    if any(words in lowered for words in _OUTSIDE_WORDS):
        return Conflict(obj, "ESI-Leap refused it: the offer is not available for that window %s" % said, details)
    if any(words in lowered for words in _UNKNOWN_PROJECT_WORDS):
        return NotFound(obj, "ESI-Leap knows no such project %s" % said, details)
    if any(words in lowered for words in _BAD_WINDOW_WORDS):
        return InvalidInput(obj, "ESI-Leap refused the window %s" % said, details)
    if status == 403:
        return Forbidden(obj, "ESI-Leap does not allow it to these credentials %s" % said, details)
    if status == 404:
        return NotFound(obj, "does not exist or is not visible to these credentials %s" % said, details)
    error = status_error(obj, status, "ESI-Leap: %s" % text)
    error.details.update(details)
    return error
