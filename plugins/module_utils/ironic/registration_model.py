# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""What host_register writes on Ironic: the node, its ports and traits, as pure functions of the BMC facts (no I/O)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish.registration_model import HIDDEN, normal_uuid

MANAGED_TRAITS_KEY = "bmt_classified_traits"

SYSTEM_UUID_KEY = "system_uuid"

DEFAULT_RESOURCE_CLASS = "baremetal"


def node_properties(facts: Mapping[str, Any]) -> dict:
    props = {}
    if facts.get("cpus"):
        props["cpus"] = int(facts["cpus"])
    if facts.get("memory_gib"):
        props["memory_mb"] = round(float(facts["memory_gib"]) * 1024)
    if facts.get("cpu_arch"):
        props["cpu_arch"] = facts["cpu_arch"]
    if facts.get("boot_mode") in ("UEFI", "Legacy"):
        props["capabilities"] = "boot_mode:%s" % ("uefi" if facts["boot_mode"] == "UEFI" else "bios")
    return props


def driver_info(base_url: str, system_path: str, username: str, password: str, validate_certs: bool = True) -> dict:
    return {
        "redfish_address": base_url,
        "redfish_system_id": system_path,
        "redfish_username": username,
        "redfish_password": password,
        "redfish_verify_ca": bool(validate_certs),
    }


def desired_node(
    name: str,
    facts: Mapping[str, Any],
    classification: Any,
    info: Mapping[str, Any],
    owner: str | None = None,
    default_resource_class: str = DEFAULT_RESOURCE_CLASS,
    interfaces: Mapping[str, Any] | None = None,
    automated_clean: bool | None = None,
) -> dict:
    """The fields of a new node (``uuid`` = the system UUID) and its traits and port MACs;
    ``automated_clean`` (``None``: the conductor's default, not managed) is the node's own setting."""
    fields = {
        "uuid": normal_uuid(facts.get("uuid")),
        "name": name,
        "driver": "redfish",
        "driver_info": dict(info),
        "resource_class": classification.resource_class or default_resource_class,
        "properties": node_properties(facts),
        "extra": {SYSTEM_UUID_KEY: normal_uuid(facts.get("uuid")), MANAGED_TRAITS_KEY: sorted(classification.traits)},
    }
    if owner:
        fields["owner"] = owner
    if automated_clean is not None:
        fields["automated_clean"] = bool(automated_clean)
    for key, value in (interfaces or {}).items():
        fields[key] = value
    return fields


def node_patch(current: Mapping[str, Any], desired: Mapping[str, Any], update_password: bool = False) -> list[dict]:
    """RFC 6902 operations from ``current`` (a dict of node fields) to ``desired``.

    ``driver_info`` is compared key by key; the password (masked by Ironic
    on reads) only when ``update_password``.  ``uuid`` and ``driver`` are
    never patched; a node of another driver is refused by the caller.
    """
    ops = []

    def put(path: str, have: Any, want: Any) -> None:
        if have != want:
            ops.append({"op": "add" if have is None else "replace", "path": path, "value": want})

    put("/name", current.get("name"), desired["name"])
    have_info = current.get("driver_info") or {}
    for key, value in desired["driver_info"].items():
        if key == "redfish_password" and not update_password:
            if key not in have_info:
                ops.append({"op": "add", "path": "/driver_info/%s" % key, "value": value})
            continue
        put("/driver_info/%s" % key, have_info.get(key), value)
    put("/resource_class", current.get("resource_class"), desired["resource_class"])
    if "owner" in desired:
        put("/owner", current.get("owner"), desired["owner"])
    if "automated_clean" in desired:
        put("/automated_clean", current.get("automated_clean"), desired["automated_clean"])
    have_props = current.get("properties") or {}
    for key, value in desired["properties"].items():
        put("/properties/%s" % key, have_props.get(key), value)
    have_extra = current.get("extra") or {}
    for key, value in desired["extra"].items():
        put("/extra/%s" % key, have_extra.get(key), value)
    for key, value in desired.items():
        if key.endswith("_interface"):
            put("/%s" % key, current.get(key), value)
    return ops


def node_traits(
    current_traits: Iterable[str] | None, previously_managed: Collection[str] | None, classified: Iterable[str]
) -> list[str]:
    """The node's traits after classification: others' traits kept, ours replaced."""
    keep = [t for t in (current_traits or []) if t not in (previously_managed or [])]
    out = list(keep)
    for trait in classified:
        if trait not in out:
            out.append(trait)
    return sorted(out)


def missing_ports(facts: Mapping[str, Any], existing_macs: Iterable[str] | None) -> list[str]:
    have = set(m.lower() for m in existing_macs or [])
    return [nic["mac"] for nic in facts.get("nics") or [] if nic["mac"] not in have]


def node_view(
    fields: Mapping[str, Any] | None, traits: Iterable[str] | None = None, ports: Iterable[str] | None = None
) -> dict:
    """What the diff shows of a node (no password, no BMC address)."""
    if not fields:
        return {}
    info = fields.get("driver_info") or {}
    return {
        "name": fields.get("name"),
        "resource_class": fields.get("resource_class"),
        "owner": fields.get("owner"),
        "automated_clean": fields.get("automated_clean"),
        "properties": dict(fields.get("properties") or {}),
        "traits": sorted(traits or []),
        "ports": sorted(ports or []),
        "driver_info": {
            "redfish_username": info.get("redfish_username"),
            "redfish_address": HIDDEN if info.get("redfish_address") else None,
            "redfish_password": HIDDEN if info.get("redfish_password") else None,
        },
        "provision_state": fields.get("provision_state"),
    }


def provision_steps(state: str | None) -> list[tuple[str, str]] | None:
    """Ironic actions that take a node from ``state`` to ``available``.

    Returns a list of (action, state reached) or ``None`` when the node is in
    a state host_register leaves alone (deployed, cleaning, failed...).
    """
    if state == "enroll":
        return [("manage", "manageable"), ("provide", "available")]
    if state == "manageable":
        return [("provide", "available")]
    if state == "available":
        return []
    return None
