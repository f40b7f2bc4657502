# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""What a tenant sees of an Ironic claim: the one builder of the claim record.

``host_claim``, ``host_release`` and ``host_claim_info`` (:func:`claim_view`)
and the ``claimed_hosts`` inventory (:func:`ironic_records`) build the record
of an allocation joined to its node and ports here, so they always agree:

- addresses come only from the owner's record in the node's ``extra``
  (never from ``instance_info``, which a lessee writes, nor from the
  allocation's ``extra``, which its tenant owns);
- a claimed node is ready when it is deployed (``active``, no transition
  under way) and not in maintenance (:func:`claim_ready`); ``host_claim``
  also waits for the power it asked for, and may ask for no image;
- the node's state is ``provision_state``, as Ironic spells it;
- the inventory learns a claim from its node where the node can tell
  (:func:`claims_on_nodes`), and from the allocation only where it cannot.

Pure: no I/O."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.claim_record import (
    ALLOCATED,
    READY,
    TYPE_ALIASES,
    as_dict,
    as_str,
    normalise_addresses,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.model import (
    CLAIM_KEY,
    image_of,
    node_label,
    ready_state,
)

ADDRESSES_KEY = "addresses"


class Readiness(NamedTuple):
    """Whether a claim is ready, with the reason and message of its ``Ready`` condition."""

    ready: bool
    reason: str
    message: str


def _power(power_state: Any) -> bool | None:
    return {"power on": True, "power off": False}.get(power_state)


def claim_ready(
    allocation: Mapping | None, node: Mapping | None, want_image: bool = True, online: bool | None = None
) -> Readiness:
    """The one readiness rule: a node in maintenance is never ready; otherwise
    :func:`model.ready_state` (deployed when an image is wanted, in the
    requested power when one is)."""
    if allocation and allocation.get("node_uuid") and node is not None and node.get("maintenance") is True:
        return Readiness(False, "Maintenance", "the node is in maintenance; ask the infrastructure administrator")
    return Readiness(*ready_state(allocation, node, want_image, online))


def ironic_addresses(allocation: Any, node: Any) -> list[dict]:
    """Addresses of an Ironic claim: the owner's record in the node's ``extra`` only.

    ``allocation`` (tenant-written ``extra``) and the node's ``instance_info``
    (lessee-written) are deliberately not read: see the module docstring.
    """
    result: list[dict] = []
    for entry in normalise_addresses(as_dict(as_dict(node).get("extra")).get(ADDRESSES_KEY)):
        entry["type"] = TYPE_ALIASES.get(entry["type"], entry["type"])
        if entry not in result:
            result.append(entry)
    return result


def _condition(kind: str, status: str, reason: str, message: str) -> dict:
    return {"type": kind, "status": status, "reason": reason, "message": message}


def _allocated(allocation: Mapping | None, node: Mapping | None) -> tuple[bool, dict]:
    associated = bool(allocation and allocation.get("node_uuid") and allocation.get("state") == "active")
    if associated and node is not None:
        return True, _condition(ALLOCATED, "True", "Allocated", "allocated node %s" % node_label(node))
    if allocation is not None and allocation.get("state") == "error":
        message = allocation.get("last_error") or "allocation failed"
        return False, _condition(ALLOCATED, "False", "AllocationFailed", message)
    return False, _condition(ALLOCATED, "False", "Allocating", "waiting for Ironic to pick a node")


def _nics(ports: Iterable[Mapping]) -> tuple[list[dict], str | None]:
    usable = sorted(
        (p for p in ports or () if isinstance(p, Mapping) and as_str(p.get("address"))), key=lambda p: p["address"]
    )
    nics = [{"name": as_str(p.get("uuid")), "MAC": p["address"], "ip": None} for p in usable]
    boot = [p["address"] for p in usable if p.get("pxe_enabled") is True] or [nic["MAC"] for nic in nics]
    return nics, boot[0] if boot else None


def claim_view(
    name: str | None,
    project_id: str | None,
    allocation: Mapping | None,
    node: Mapping | None,
    ports: Iterable[Mapping] = (),
    online: bool | None = None,
    want_image: bool | None = None,
) -> dict:
    """The record of one claim (the ``claim`` result, a ``claims`` item, the inventory's record).

    ``online`` is the power ``host_claim`` asked for (readers: ``None``, Ironic
    records no requested power; ``powered_on`` is the node's); ``want_image`` whether the claim asks for a deployment
    (``None``: readers, a claim is ready once deployed).
    """
    node = node if (allocation and allocation.get("node_uuid")) else None
    info = as_dict((node or {}).get("instance_info"))
    image = image_of(info)
    powered_on = _power((node or {}).get("power_state"))
    ready = claim_ready(allocation, node, True if want_image is None else want_image, online)
    associated, allocated = _allocated(allocation, node)
    nics, boot_mac = _nics(ports)
    traits = (node or {}).get("traits") or (allocation or {}).get("traits") or []
    owner = as_str((allocation or {}).get("owner")) or project_id
    return {
        "name": name
        or as_str((allocation or {}).get("name"))
        or (node_label(node) if node is not None else as_str((allocation or {}).get("uuid"))),
        "namespace": owner,
        "backend": "ironic",
        "host": node_label(node) if node is not None else None,
        "online": online,
        "powered_on": powered_on,
        "associated": associated,
        "ready": ready.ready,
        "provision_state": as_str((node or {}).get("provision_state")),
        "image": dict(image) if image else None,
        "addresses": ironic_addresses(allocation, node),
        "nics": nics,
        "boot_mac_address": boot_mac,
        "conditions": [allocated, _condition(READY, "True" if ready.ready else "False", ready.reason, ready.message)],
        "labels": {},
        "traits": sorted(t for t in traits if as_str(t)) if isinstance(traits, list) else [],
    }


def _inventory_record(allocation: Mapping, node: Mapping, ports: list, project_names: Mapping | None) -> dict:
    record = claim_view(None, None, allocation, node, ports)
    owner = record["namespace"]
    record.update(
        project_id=owner,
        project_name=as_str(as_dict(project_names).get(owner)),
        node_uuid=node["uuid"],
        allocation_uuid=as_str(allocation.get("uuid")),
        power_state=as_str(node.get("power_state")),
        annotations={},
        resource_class=as_str(node.get("resource_class")),
        maintenance=node.get("maintenance") is True,
    )
    return record


def _ports_by_node(ports: Iterable[Any]) -> dict[str, list]:
    by_node: dict[str, list] = {}
    for port in ports or ():
        if isinstance(port, dict) and as_str(port.get("node_uuid")) and as_str(port.get("address")):
            by_node.setdefault(port["node_uuid"], []).append(port)
    return by_node


def ironic_records(
    allocations: Iterable[Any], nodes: Iterable[Any], ports: Iterable[Any] = (), project_names: Mapping | None = None
) -> list[dict]:
    """Records of the allocations that hold a node (joined to ``nodes`` and their ``ports``).

    An allocation without a node, or whose node is not in ``nodes`` (not
    visible to the caller), is not a host.  ``project_names`` maps project
    IDs to names where known.
    """
    by_uuid = {node["uuid"]: node for node in nodes or () if isinstance(node, dict) and as_str(node.get("uuid"))}
    by_node = _ports_by_node(ports)
    records = []
    for allocation in allocations or ():
        if not isinstance(allocation, dict):
            continue
        node = by_uuid.get(allocation.get("node_uuid"))
        if node is not None:
            records.append(_inventory_record(allocation, node, by_node.get(node["uuid"], []), project_names))
    return records


def _claim_on_node(node: Mapping, project_id: str) -> dict | None:
    """The allocation ``node`` holds for ``project_id``, as far as the node alone can tell; else ``None``.

    Only a node that the project leases (or owns, leased to nobody) is read
    this way: then its ``instance_info`` was written by the project itself or
    by the owner, never by another tenant (the owner removes the claim key in
    the patch that ends a lessee's access). The key must name the very
    allocation Ironic recorded on the node (``instance_uuid``) and this project.
    """
    allocation_uuid = as_str(node.get("instance_uuid"))
    lessee = node.get("lessee")
    if not allocation_uuid or not (lessee == project_id or (not lessee and node.get("owner") == project_id)):
        return None
    marker = as_dict(as_dict(node.get("instance_info")).get(CLAIM_KEY))
    name = as_str(marker.get("name"))
    if not name or marker.get("allocation") != allocation_uuid or marker.get("project") != project_id:
        return None
    return {"uuid": allocation_uuid, "name": name, "owner": project_id, "state": "active", "node_uuid": node["uuid"]}


def claims_on_nodes(nodes: Iterable[Any], project_id: str) -> tuple[list[dict], list[str]]:
    """``(allocations, unknown)`` for the nodes a project's token lists.

    ``allocations``: what the nodes themselves tell of the project's claims
    (the fields :func:`ironic_records` reads of an allocation); ``unknown``:
    the allocation UUIDs (``instance_uuid``) of the claimed nodes that cannot
    tell, whose allocations must be read - and kept only if the project owns
    them and they hold that node.
    """
    allocations, unknown = [], []
    for node in nodes or ():
        if not isinstance(node, dict) or not as_str(node.get("uuid")) or not as_str(node.get("instance_uuid")):
            continue
        allocation = _claim_on_node(node, project_id)
        if allocation is None:
            unknown.append(node["instance_uuid"])
        else:
            allocations.append(allocation)
    return allocations, unknown


def owned_allocations(allocations: Iterable[Any], project_id: str) -> list[dict]:
    """The allocations among ``allocations`` that ``project_id`` owns (read by UUID, they may be anyone's)."""
    return [a for a in allocations or () if isinstance(a, dict) and a.get("owner") == project_id]
