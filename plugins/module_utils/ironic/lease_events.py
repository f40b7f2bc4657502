# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""What the Ironic lease event source emits for one polled view of nodes and allocations.  Pure.

Two events, both about a node whose lessee's access ends (:func:`lease_notice.ending_lease`):

- ``lease_warning`` once the end is within ``warn_ahead`` seconds, while the
  node carries no notice of that end yet (:mod:`lease_notice`) and the end is
  further than ``lead_time`` (closer ends are announced by the run that ends
  them);
- ``lease_ending`` once the end is within ``lead_time`` seconds, or has
  passed (the source was down, or the run that should have ended it
  failed): the run it starts waits for the end, then ends the lease.

Each is emitted once; a ``lease_warning`` whose notice is still missing, and
a ``lease_ending`` whose lease is still there, ``retry`` seconds later (after
the end, for an ending) are emitted again.  Nothing else is remembered: the
warnings given are read back from the nodes, so a restarted source resumes
where the last one stopped (it asks again for endings already under way,
which are harmless to repeat: the run reads the node at the end).

Events carry names and states only: the node's name, UUID and provision
state, the lease's ID, project and end, the allocation's name, UUID and
state.  Never ``driver_info``, ``extra``, ``instance_info`` or anything else
of ``properties``: whatever the owner keeps there (BMC details included)
does not travel (property-tested).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import TenancyError
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import lease_model as model
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import lease_notice as notices

WARNING = "lease_warning"
ENDING = "lease_ending"

#: the fields the source asks Ironic for (nothing else is read)
SOURCE_NODE_FIELDS = ("uuid", "name", "lessee", "provision_state", "properties")
SOURCE_ALLOCATION_FIELDS = ("uuid", "name", "state", "node_uuid")


def _allocation(allocation: Mapping[str, Any] | None) -> dict | None:
    if not allocation:
        return None
    return {"name": allocation.get("name"), "uuid": allocation.get("uuid"), "state": allocation.get("state")}


class LeaseTracker:
    """Turns successive views of the pool into ``lease_warning`` / ``lease_ending`` events."""

    def __init__(self, warn_ahead: float, lead_time: float, retry: float) -> None:
        self.warn_ahead = warn_ahead
        self.lead_time = lead_time
        self.retry = retry
        self.sent: dict[tuple, datetime.datetime] = {}

    def _due(self, key: tuple, now: datetime.datetime, after: datetime.datetime | None = None) -> bool:
        """Whether the event ``key`` is to be emitted now: the first time, or ``retry`` seconds after it was
        last emitted (and after ``after``)."""
        sent = self.sent.get(key)
        if sent is not None and now < max(sent, after or sent) + datetime.timedelta(seconds=self.retry):
            return False
        self.sent[key] = now
        return True

    def poll(
        self, nodes: Iterable[Mapping[str, Any]], allocations: Iterable[Mapping[str, Any]], now: datetime.datetime
    ) -> tuple[list[dict], list[str]]:
        """``(events, problems)`` for the view ``nodes`` / ``allocations`` at ``now``.

        A node with a malformed lease list is a problem (named), not an event.
        """
        by_node = dict((a.get("node_uuid"), a) for a in allocations if a.get("node_uuid"))
        events, problems, seen = [], [], set()
        for node in nodes:
            try:
                lease = notices.ending_lease(dict(node), now)
            except TenancyError as exc:
                problems.append(str(exc))
                continue
            if lease is None:
                continue
            left = notices.seconds_left(lease, now)
            body = {
                "node": model.node_label(dict(node)),
                "node_uuid": node.get("uuid"),
                "provision_state": node.get("provision_state"),
                "lease": lease["id"],
                "project": lease["project"],
                "end": lease["end"],
                "seconds_left": round(left, 1),
                "allocation": _allocation(by_node.get(node.get("uuid"))),
                "warn_before": self.warn_ahead,
            }
            if left <= self.lead_time:
                key = (ENDING, node.get("uuid"), lease["id"], lease["end"])
                seen.add(key)
                if self._due(key, now, model.parse_time(lease["end"])):
                    events.append({ENDING: dict(body, lead_time=self.lead_time)})
            elif left <= self.warn_ahead and not notices.announces(notices.node_notice(dict(node)), lease):
                key = (WARNING, node.get("uuid"), lease["id"], lease["end"])
                seen.add(key)
                if self._due(key, now):
                    events.append({WARNING: body})
        for key in list(self.sent):
            if key not in seen:
                del self.sent[key]
        return events, problems
