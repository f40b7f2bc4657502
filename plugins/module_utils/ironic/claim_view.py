# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""What a tenant sees of an Ironic claim: the record of an allocation joined to its node and ports.

Addresses come only from the owner's record in the node's ``extra``
(never from ``instance_info``, which a lessee writes, nor from the
allocation's ``extra``, which its tenant owns).  A claimed node is ready when
it is ``active`` with no transition under way and not in maintenance.  Pure:
no I/O."""

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.claim_record import (
    ALLOCATED,
    READY,
    TYPE_ALIASES,
    as_dict,
    as_str,
    condition_status,
    normalise_addresses,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.model import image_of

ADDRESSES_KEY = "addresses"


def _power(power_state):
    return {"power on": True, "power off": False}.get(power_state)


def ironic_ready(node):
    """``(ready, reason, message)`` of a claimed node."""
    state = node.get("provision_state")
    if node.get("maintenance") is True:
        return False, "Maintenance", "the node is in maintenance; ask the infrastructure administrator"
    if state == "active" and not node.get("target_provision_state"):
        return True, "Provisioned", "the node is deployed"
    shown = state if isinstance(state, str) and state else "unknown"
    if node.get("target_provision_state"):
        shown = "%s -> %s" % (shown, node["target_provision_state"])
    return False, "NotProvisioned", "the node is in provision state %s" % shown


def _ironic_conditions(allocation, node):
    ready, reason, message = ironic_ready(node)
    return [
        {
            "type": ALLOCATED,
            "status": "True",
            "reason": "Allocated",
            "message": "allocation %s holds node %s" % (allocation.get("uuid"), node.get("name") or node.get("uuid")),
        },
        {"type": READY, "status": "True" if ready else "False", "reason": reason, "message": message},
    ]


def ironic_addresses(allocation, node):
    """Addresses of an Ironic claim: the owner's record in the node's ``extra`` only.

    ``allocation`` (tenant-written ``extra``) and the node's ``instance_info``
    (lessee-written) are deliberately not read: see the module docstring.
    """
    node = as_dict(node)
    result = []
    for value in (as_dict(node.get("extra")).get(ADDRESSES_KEY),):
        for entry in normalise_addresses(value):
            entry["type"] = TYPE_ALIASES.get(entry["type"], entry["type"])
            if entry not in result:
                result.append(entry)
    return result


def _ports_by_node(ports):
    by_node = {}
    for port in ports or ():
        if isinstance(port, dict) and as_str(port.get("node_uuid")) and as_str(port.get("address")):
            by_node.setdefault(port["node_uuid"], []).append(port)
    for node_ports in by_node.values():
        node_ports.sort(key=lambda port: port["address"])
    return by_node


def _ironic_record(allocation, node, ports, project_names):
    owner = as_str(allocation.get("owner"))
    node_name = as_str(node.get("name"))
    traits = node.get("traits")
    conditions = _ironic_conditions(allocation, node)
    boot = [port["address"] for port in ports if port.get("pxe_enabled") is True] or [port["address"] for port in ports]
    image = image_of(as_dict(node.get("instance_info")))
    return {
        "backend": "ironic",
        "name": as_str(allocation.get("name")) or node_name or node["uuid"],
        "namespace": owner,
        "project_id": owner,
        "project_name": as_str(as_dict(project_names).get(owner)),
        "host": node_name or node["uuid"],
        "node_uuid": node["uuid"],
        "allocation_uuid": as_str(allocation.get("uuid")),
        "online": None,
        "powered_on": _power(node.get("power_state")),
        "power_state": as_str(node.get("power_state")),
        "associated": True,
        "ready": condition_status(conditions, READY) == "True",
        "conditions": conditions,
        "labels": {},
        "annotations": {},
        "resource_class": as_str(node.get("resource_class")),
        "traits": sorted(trait for trait in traits if as_str(trait)) if isinstance(traits, list) else [],
        "provision_state": as_str(node.get("provision_state")),
        "maintenance": node.get("maintenance") is True,
        "image": dict(image) if image else None,
        "addresses": ironic_addresses(allocation, node),
        "nics": [{"name": as_str(port.get("uuid")), "MAC": port["address"]} for port in ports],
        "boot_mac_address": boot[0] if boot else None,
    }


def ironic_records(allocations, nodes, ports=(), project_names=None):
    """Records of the allocations that hold a node (joined to ``nodes`` and their ``ports``).

    An allocation without a node, or whose node is not in ``nodes`` (not
    visible to the caller), is not a host.  ``project_names`` maps project
    IDs to names where known.
    """
    by_uuid = dict((node["uuid"], node) for node in nodes or () if isinstance(node, dict) and as_str(node.get("uuid")))
    by_node = _ports_by_node(ports)
    records = []
    for allocation in allocations or ():
        if not isinstance(allocation, dict):
            continue
        node = by_uuid.get(allocation.get("node_uuid"))
        if node is not None:
            records.append(_ironic_record(allocation, node, by_node.get(node["uuid"], []), project_names))
    return records
