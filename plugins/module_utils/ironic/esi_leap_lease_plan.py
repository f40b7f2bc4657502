# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""host_lease's decisions where ESI-Leap keeps the leases (``lease_provider`` ``esi_leap``).  Pure.

The owner leases a node directly (ESI-Leap's ``POST /v1/leases``, what ``openstack esi lease create`` does):
ESI-Leap's manager then sets the node's ``lessee`` and ``properties.lease_uuid`` and removes both at the end.  The
decisions mirror those of the node-field leases (:mod:`lease_model`) so that host_lease answers the same way on
both providers:

- a lease of ``project`` on the node for the same window (the same start, or one under way when no start is asked;
  the same end, or any end when none is asked: ESI-Leap gives every lease an end) is kept: a rerun changes nothing;
- a window overlapping another held lease of the node, or a ``lessee`` that no ESI-Leap lease explains, is a
  :class:`Conflict` naming the node and what it overlaps, found before anything is written;
- a lease starting now needs a node that is free now (:func:`lease_model.node_is_free_now`);
- with ``count``, the nodes already leased that way count, the others are chosen by name among the free ones;
- ending a lease first removes what ESI-Leap leaves of the tenant on a node that is not deployed
  (:func:`leftover_patch`);
- the views have host_lease's shape (``id``, ``node``, ``node_uuid``, ``project``, ``start``, ``end``, ``status``
  from the window: ``pending``, ``active``, ``expired``) plus ESI-Leap's own ``esi_leap_status``.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Collection, Iterable, Sequence

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import Conflict
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import esi_leap_model as esi
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import lease_model
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.model import UNDEPLOYABLE_STATES

PENDING = lease_model.PENDING
ACTIVE = lease_model.ACTIVE
EXPIRED = lease_model.EXPIRED
UNMANAGED = lease_model.UNMANAGED


def _second(value: datetime.datetime | None) -> datetime.datetime | None:
    return None if value is None else value.replace(microsecond=0)


def held(lease: esi.Lease) -> bool:
    """Whether the lease holds (or will hold) its node: not over, not failed."""
    return lease.status in esi.HELD


def status(lease: esi.Lease, now: datetime.datetime) -> str:
    """host_lease's status of an ESI-Leap lease, from its window (an ended one is ``expired``)."""
    if not held(lease):
        return EXPIRED
    if lease.end is not None and now >= lease.end:
        return EXPIRED
    if lease.status == esi.ACTIVE:
        return ACTIVE  # fulfilled: its start has come on ESI-Leap's clock, whatever ours says
    if lease.start is not None and now < _second(lease.start):
        return PENDING
    return ACTIVE


def lease_view(lease: esi.Lease, now: datetime.datetime) -> dict:
    """An ESI-Leap lease as host_lease returns it."""
    return {
        "id": lease.uuid,
        "node": lease.node,
        "node_uuid": lease.node_uuid,
        "project": lease.project,
        "start": lease_model.format_time(_second(lease.start)),
        "end": lease_model.format_time(lease.end),
        "status": status(lease, now),
        "esi_leap_status": lease.status,
    }


def describe(lease: esi.Lease) -> str:
    return "ESI-Leap lease %s of project %s %s" % (
        lease.uuid,
        lease.project_name or lease.project,
        esi.describe_window(_second(lease.start), lease.end),
    )


def node_leases(leases: Iterable[esi.Lease], node_uuid: str) -> list[esi.Lease]:
    """The held leases of one node."""
    return [lease for lease in leases if lease.node_uuid == node_uuid and held(lease)]


def matching(
    leases: Iterable[esi.Lease],
    project: str,
    start: datetime.datetime | None,
    end: datetime.datetime | None,
    now: datetime.datetime,
) -> esi.Lease | None:
    """A held lease of ``project`` for the window asked (see the module's doc), or ``None``."""
    for lease in leases:
        if lease.project != project or not held(lease):
            continue
        if start is None:
            if lease.start is not None and _second(lease.start) > now:
                continue
        elif _second(lease.start) != _second(start):
            continue
        if end is not None and _second(lease.end) != _second(end):
            continue
        return lease
    return None


def conflicts(
    node: dict,
    leases: Sequence[esi.Lease],
    start: datetime.datetime | None,
    end: datetime.datetime | None,
    now: datetime.datetime,
    ignore: str | None = None,
) -> list[str]:
    """What a lease of ``node`` for ``[start, end)`` would overlap: held leases, and a ``lessee`` that no held
    lease of the node explains (set outside ESI-Leap)."""
    found = [
        describe(lease)
        for lease in leases
        if lease.uuid != ignore and esi.overlaps(lease.start, lease.end, start, end, now)
    ]
    lessee = node.get("lessee")
    if lessee and not any(lease.project == lessee and status(lease, now) == ACTIVE for lease in leases):
        found.append("lessee %s, set outside ESI-Leap (no end)" % lessee)
    return found


@dataclasses.dataclass
class PresentPlan:
    """``keep``: (node, lease) already leased as asked; ``create``: the nodes to lease."""

    keep: list[tuple[dict, esi.Lease]] = dataclasses.field(default_factory=list)
    create: list[dict] = dataclasses.field(default_factory=list)


def _busy_conflict(node: dict) -> Conflict:
    return Conflict(
        "node %s" % lease_model.node_label(node),
        "is in use (provision state %s%s%s): a lease that starts now needs an available node that nobody has claimed"
        % (
            node.get("provision_state"),
            ", claimed" if node.get("instance_uuid") else "",
            ", in maintenance" if node.get("maintenance") else "",
        ),
    )


def plan_present(
    nodes: Sequence[dict],
    leases: Sequence[esi.Lease],
    project: str,
    start: datetime.datetime | None,
    end: datetime.datetime | None,
    now: datetime.datetime,
) -> PresentPlan:
    """Lease each of ``nodes`` (named by the user) to ``project``: keep what is leased as asked, refuse the first
    node that cannot be leased (nothing is leased then)."""
    plan = PresentPlan()
    starts_now = start is None or start <= now
    for node in nodes:
        mine = node_leases(leases, node["uuid"])
        found = matching(mine, project, start, end, now)
        if found is not None:
            plan.keep.append((node, found))
            continue
        clash = conflicts(node, mine, start, end, now)
        if clash:
            raise Conflict(
                "node %s" % lease_model.node_label(node),
                "a lease to project %s %s overlaps %s; nothing was leased"
                % (project, esi.describe_window(start, end), "; ".join(clash)),
            )
        if starts_now and not lease_model.node_is_free_now(node):
            raise _busy_conflict(node)
        plan.create.append(node)
    return plan


def choose_nodes(
    nodes: Iterable[dict],
    leases: Sequence[esi.Lease],
    project: str,
    start: datetime.datetime | None,
    end: datetime.datetime | None,
    now: datetime.datetime,
    count: int,
    resource_class: str | None = None,
    traits: Collection[str] | None = None,
) -> PresentPlan:
    """Pick ``count`` nodes (by name) of ``resource_class`` with ``traits``: those already leased to ``project`` as
    asked count, the others must be free over the window (and now, when it starts now).  Fewer free nodes than
    needed is a :class:`Conflict`: nothing is leased then."""
    matching_nodes = sorted(
        (
            n
            for n in nodes
            if (resource_class is None or n.get("resource_class") == resource_class)
            and lease_model.has_traits(n, traits)
        ),
        key=lambda n: (lease_model.node_label(n), n.get("uuid") or ""),
    )
    plan = PresentPlan()
    free = []
    starts_now = start is None or start <= now
    for node in matching_nodes:
        mine = node_leases(leases, node["uuid"])
        found = matching(mine, project, start, end, now)
        if found is not None:
            plan.keep.append((node, found))
            continue
        if node.get("maintenance") or conflicts(node, mine, start, end, now):
            continue
        if starts_now and not lease_model.node_is_free_now(node):
            continue
        free.append(node)
    if len(plan.keep) >= count:
        plan.keep = plan.keep[:count]
        return plan
    needed = count - len(plan.keep)
    if len(free) < needed:
        what = "resource class %s" % resource_class if resource_class else "the selection"
        if traits:
            what += " with traits %s" % ", ".join(sorted(traits))
        raise Conflict(
            "lease of %d node(s) to project %s" % (count, project),
            "only %d node(s) of %s are free %s (%d already leased to the project); nothing was leased"
            % (len(free), what, esi.describe_window(start, end), len(plan.keep)),
        )
    plan.create = free[:needed]
    return plan


def lease_body(node_uuid: str, project: str, start: datetime.datetime | None, end: datetime.datetime | None) -> dict:
    """The ``POST /v1/leases`` body of the owner's direct lease (ESI-Leap's defaults: from now, for its default
    lease time)."""
    body = {"resource_type": esi.RESOURCE_TYPE, "resource_uuid": node_uuid, "project_id": project}
    if start is not None:
        body["start_time"] = esi.esi_time(start)
    if end is not None:
        body["end_time"] = esi.esi_time(end)
    return body


def leases_to_end(
    leases: Iterable[esi.Lease],
    node_uuids: Collection[str] | None,
    project: str | None,
    lease_id: str | None,
) -> list[esi.Lease]:
    """The held leases that ``state=absent`` ends: on ``node_uuids`` (``None``: every node), of ``project`` and
    ``lease_id`` when given."""
    return [
        lease
        for lease in leases
        if held(lease)
        and (node_uuids is None or lease.node_uuid in node_uuids)
        and (project is None or lease.project == project)
        and (lease_id is None or lease.uuid == lease_id)
    ]


def planned_view(node: dict, project: str, start, end, now: datetime.datetime) -> dict:
    """The view of a lease this run would create (check mode: no ID yet)."""
    begin = start or now
    return {
        "id": None,
        "node": lease_model.node_label(node),
        "node_uuid": node.get("uuid"),
        "project": project,
        "start": lease_model.format_time(begin),
        "end": lease_model.format_time(end),
        "status": PENDING if begin > now else ACTIVE,
        "esi_leap_status": None,
    }


#: what the end of an ESI-Leap lease reads of its node
END_NODE_FIELDS = ("uuid", "name", "lessee", "provision_state", "instance_uuid", "instance_info")


def leftover_patch(node: dict | None, project: str | None, owner: bool) -> list[dict]:
    """The JSON patch that removes what ``project`` (the lessee) left on ``node`` that ESI-Leap does not remove when
    the lease ends: ESI-Leap removes ``lessee`` and ``properties.lease_uuid`` and undeploys a deployed node (which
    clears ``instance_info`` and the allocation), but leaves ``instance_info`` (and an allocation) on a node that is
    not deployed.  Sent before the lease is ended, while the caller still may: the lessee removes
    ``instance_info``; the owner also ``instance_uuid`` (which makes Ironic remove the allocation).  Nothing for a
    node of another lessee, or a deployed one (its undeployment clears both)."""
    node = node or {}
    if not node or not project or node.get("lessee") != project:
        return []
    if node.get("provision_state") in UNDEPLOYABLE_STATES:
        return []
    ops = []
    if node.get("instance_info"):
        ops.append({"op": "remove", "path": "/instance_info"})
    if owner and node.get("instance_uuid"):
        ops.append({"op": "remove", "path": "/instance_uuid"})
    return ops


def leftover_allocation(node: dict | None, project: str | None) -> str | None:
    """The allocation (``instance_uuid``) ``project``, the lessee, holds on ``node`` when the node is not deployed:
    ESI-Leap leaves it when the lease ends, and the node then stays allocated to nobody's lease (the next lessee's
    claim cannot get it). A lessee may not write ``instance_uuid`` but deletes its own allocation, as a release does
    (the owner removes ``instance_uuid``, :func:`leftover_patch`). None for a deployed node (its undeployment removes
    the allocation) or a node of another lessee."""
    node = node or {}
    if not node or not project or node.get("lessee") != project:
        return None
    if node.get("provision_state") in UNDEPLOYABLE_STATES:
        return None
    return node.get("instance_uuid") or None
