# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The lease keeper on leases ESI-Leap holds: which lease ends a node's access, its notice, its events.  Pure.

Where ESI-Leap runs, a lease lives in ESI-Leap, not in the node's fields: its
manager writes the node's ``lessee`` and ``properties.lease_uuid`` when the lease
starts and removes them (undeploying a deployed node) when it ends.  The
keeper does not end such a lease itself (it would write under ESI-Leap's feet):
it warns the lessee ahead of the end with the same notice as for leases written
in node fields (:mod:`lease_notice`, same key, same fields, the ESI-Leap lease's
UUID as its ``lease``), and at the end waits until ESI-Leap has ended the lease,
then removes the notice.

What is trusted: the lease a node's access depends on is the one named by
``properties.lease_uuid`` (written by ESI-Leap with its service credentials; a
lessee cannot write ``properties``), read back from ESI-Leap, active, and held
by the node's ``lessee``.  Anything else (no such lease, another project's, an
ended one) makes no lease end to announce; a notice left on the node then
announces nothing and goes.

Events: the same ``lease_warning`` and ``lease_ending`` as :mod:`lease_events`,
with ``provider: esi_leap``; a node still carrying a notice of an ESI-Leap
lease that is over (ESI-Leap ended it at its end, or the tenant ended it early:
ESI-Leap's events say when) gets a ``lease_ending`` at once, so the notice goes.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import TenancyError
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import esi_leap_model as esi
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import lease_events
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import lease_model as model
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import lease_notice as notices

PROVIDER = "esi_leap"
#: the key ESI-Leap writes in a leased node's properties
LEASE_UUID_KEY = "lease_uuid"
#: ESI-Leap's event of a lease's end (expiry or cancel: both deactivate the lease)
ENDED_EVENT = "esi_leap.lease.delete.end"
#: the fields the keeper reads of an ESI-Leap event
EVENT_FIELDS = ("id", "event_type", "event_time", "object_uuid", "resource_uuid")


def lease_record(lease: esi.Lease) -> dict:
    """An ESI-Leap lease as a lease record of :mod:`lease_model` (``id``, ``project``, ``start``, ``end``)."""
    return {
        "id": lease.uuid,
        "project": lease.project,
        "start": model.format_time(lease.start),
        "end": model.format_time(lease.end),
    }


def node_lease_uuid(node: Mapping[str, Any] | None) -> str | None:
    value = ((node or {}).get("properties") or {}).get(LEASE_UUID_KEY)
    return value if isinstance(value, str) and value else None


def ending_lease(node: Mapping[str, Any] | None, lease: esi.Lease | None) -> dict | None:
    """The record of the ESI-Leap lease whose end ends the access of the node's lessee, or ``None``.

    ``lease`` is ESI-Leap's lease named by the node's ``properties.lease_uuid``; it counts only when it is active,
    held by the node's ``lessee`` and has an end.
    """
    lessee = (node or {}).get("lessee")
    if lease is None or not lessee or node_lease_uuid(node) != lease.uuid:
        return None
    if lease.status != esi.ACTIVE or lease.project != lessee or lease.end is None:
        return None
    return lease_record(lease)


def plan_notice(
    node: Mapping[str, Any], lease: esi.Lease | None, now: datetime.datetime, warn_before: float | None
) -> tuple[dict | None, bool]:
    """``(notice, changed)``: the notice ``node`` should carry for ``lease``, as :func:`lease_notice.plan_notice`
    decides it for leases in node fields (a notice announcing the same end is kept as it is; with ``warn_before``,
    an end within that time and not passed gets one; any other notice goes)."""
    current = notices.node_notice(dict(node))
    record = ending_lease(node, lease)
    if record is not None and notices.announces(current, record):
        return current, False
    desired = None
    if record is not None and warn_before is not None and 0 < notices.seconds_left(record, now) <= warn_before:
        desired = notices.make_notice(record, now)
    present = notices.NOTICE_KEY in ((node or {}).get("properties") or {})
    return desired, desired is not None or present


def ended_leases(events: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Lease UUID -> the time ESI-Leap ended it, from ESI-Leap's events (``esi_leap.lease.delete.end``)."""
    out = {}
    for event in events:
        if event.get("event_type") == ENDED_EVENT and event.get("object_uuid"):
            out[event["object_uuid"]] = str(event.get("event_time") or "")
    return out


def last_event_id(events: Iterable[Mapping[str, Any]], last: int | None) -> int | None:
    """The highest event ID seen so far (ESI-Leap's ``last_event_id`` filter returns the events after it)."""
    for event in events:
        ident = event.get("id")
        if isinstance(ident, int) and (last is None or ident > last):
            last = ident
    return last


def is_esi_node(node: Mapping[str, Any]) -> bool:
    """Whether ESI-Leap leases ``node`` (``properties.lease_uuid``), or it carries a notice and no lease record in
    its fields (a notice the ESI-Leap keeper wrote); a malformed lease list is the other keeper's to report."""
    if node_lease_uuid(node) is not None:
        return True
    if notices.node_notice(dict(node)) is None:
        return False
    try:
        return not model.node_leases(dict(node))
    except TenancyError:
        return False


def left_after_end(before: Mapping[str, Any] | None, current: Mapping[str, Any] | None, project: str) -> list[dict]:
    """The JSON patch (the owner's) removing what ``project`` left on a node it claimed and never deployed, once
    ESI-Leap ended its lease: ESI-Leap's end undeploys a deployed node (which removes its allocation and
    ``instance_info``) but leaves both on a node that is not deployed, which then stays allocated to nobody's lease
    (no next lessee's claim can get it) and shows the next lessee the last one's image. ``before`` is the node read
    while ``project`` was its lessee, ``current`` after the end: only an ``available`` node that nobody leases,
    still holding the allocation it held then (removing ``instance_uuid`` makes Ironic delete the allocation; a
    node owner may not read a lessee's allocation, so its identity is the node's ``instance_uuid``)."""
    if not before or not current or not project or before.get("lessee") != project:
        return []
    if current.get("lessee") or current.get("provision_state") != "available":
        return []
    uuid = current.get("instance_uuid")
    if not uuid or uuid != before.get("instance_uuid"):
        return []
    ops = [{"op": "remove", "path": "/instance_uuid"}]
    if current.get("instance_info"):
        ops.append({"op": "remove", "path": "/instance_info"})
    return ops


def _allocation(allocation: Mapping[str, Any] | None) -> dict | None:
    if not allocation:
        return None
    return {"name": allocation.get("name"), "uuid": allocation.get("uuid"), "state": allocation.get("state")}


class EsiLeaseTracker(lease_events.LeaseTracker):
    """Turns successive views of the ESI-leased nodes and ESI-Leap's leases into lease keeper events."""

    def poll_esi(
        self,
        nodes: Iterable[Mapping[str, Any]],
        leases: Iterable[esi.Lease],
        allocations: Iterable[Mapping[str, Any]],
        now: datetime.datetime,
        ended: Mapping[str, str] | None = None,
    ) -> list[dict]:
        """The events for ``nodes`` (those ESI-Leap leases, or carrying a notice of an ESI-Leap lease) given
        ESI-Leap's ``leases`` and the leases its events say ``ended`` (UUID -> time)."""
        by_uuid = dict((lease.uuid, lease) for lease in leases)
        by_node = dict((a.get("node_uuid"), a) for a in allocations if a.get("node_uuid"))
        events, seen = [], set()
        for node in nodes:
            if not is_esi_node(node):
                continue
            record = ending_lease(node, by_uuid.get(node_lease_uuid(node) or ""))
            notice = notices.node_notice(dict(node))
            base = {
                "provider": PROVIDER,
                "node": model.node_label(dict(node)),
                "node_uuid": node.get("uuid"),
                "provision_state": node.get("provision_state"),
                "allocation": _allocation(by_node.get(node.get("uuid"))),
                "warn_before": self.warn_ahead,
            }
            if record is None:
                if notice is None or (notice.get("lease") in by_uuid and by_uuid[notice["lease"]].status in esi.HELD):
                    continue
                # a notice of a lease that is over (or unknown): the run removes it
                key = (lease_events.ENDING, node.get("uuid"), notice.get("lease"), notice.get("end"))
                seen.add(key)
                if self._due(key, now):
                    body = dict(
                        base,
                        lease=notice.get("lease"),
                        project=notice.get("project"),
                        end=notice.get("end"),
                        seconds_left=0.0,
                        lead_time=self.lead_time,
                    )
                    if notice.get("lease") in (ended or {}):
                        body["ended_at"] = (ended or {})[notice["lease"]]
                    events.append({lease_events.ENDING: body})
                continue
            left = notices.seconds_left(record, now)
            body = dict(
                base, lease=record["id"], project=record["project"], end=record["end"], seconds_left=round(left, 1)
            )
            if left <= self.lead_time:
                key = (lease_events.ENDING, node.get("uuid"), record["id"], record["end"])
                seen.add(key)
                if self._due(key, now, model.parse_time(record["end"])):
                    events.append({lease_events.ENDING: dict(body, lead_time=self.lead_time)})
            elif left <= self.warn_ahead and not notices.announces(notice, record):
                key = (lease_events.WARNING, node.get("uuid"), record["id"], record["end"])
                seen.add(key)
                if self._due(key, now):
                    events.append({lease_events.WARNING: body})
        for key in list(self.sent):
            if key not in seen:
                del self.sent[key]
        return events
