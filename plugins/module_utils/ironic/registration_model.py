# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""What host_register writes on Ironic: the node, its ports and traits, as pure functions of the BMC facts (no I/O)."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish.registration_model import HIDDEN, normal_uuid

MANAGED_TRAITS_KEY = "bmt_classified_traits"

SYSTEM_UUID_KEY = "system_uuid"

DEFAULT_RESOURCE_CLASS = "baremetal"

_MAC_RE = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")


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


# ------------------------------------------------------------------ switch ports (local_link_connection)
#
# Each NIC's switch port, as Ironic's ``neutron`` network interface hands it to Neutron (``binding:profile``
# ``local_link_information``) and networking-generic-switch finds the switch by: ``switch_id`` (the switch's MAC,
# or an OpenFlow datapath ID), ``port_id`` (the switch's name of the port), ``switch_info`` (the switch's name,
# NGS's configuration section). Owner data; never shown to a tenant.

LINK_KEYS = ("switch_id", "port_id", "switch_info")
_DATAPATH_ID_RE = re.compile(r"^(0x)?[0-9a-fA-F]{16}$")


def _mac_or_none(value: Any) -> str | None:
    text = str(value or "").strip().lower().replace("-", ":")
    return text if _MAC_RE.match(text) else None


def link_problem(link: Mapping[str, Any]) -> str | None:
    """Why Ironic would refuse ``link`` as a port's ``local_link_connection`` (``None``: it would not)."""
    if not link.get("port_id"):
        return "needs port_id"
    switch_id = str(link.get("switch_id") or "")
    if not switch_id:
        return "needs switch_id"
    if not _mac_or_none(switch_id) and not _DATAPATH_ID_RE.match(switch_id):
        return "switch_id %r is neither a MAC address nor an OpenFlow datapath ID" % switch_id
    return None


def normal_link(link: Mapping[str, Any]) -> dict:
    """``link`` with only Ironic's three keys, a MAC ``switch_id`` in lower case with colons."""
    out = {
        "switch_id": _mac_or_none(link.get("switch_id")) or str(link.get("switch_id")),
        "port_id": str(link["port_id"]),
    }
    if link.get("switch_info"):
        out["switch_info"] = str(link["switch_info"])
    return out


def owner_links(nics: Iterable[Mapping[str, Any]] | None) -> dict:
    """The switch ports the owner gives (option ``hosts[].nics``): MAC -> ``local_link_connection``.

    Raises InvalidInput naming the NIC for a bad MAC, a MAC given twice or a link Ironic would refuse."""
    out: dict = {}
    for index, nic in enumerate(nics or []):
        mac = _mac_or_none(nic.get("mac"))
        obj = "nics[%d]" % index
        if not mac:
            raise InvalidInput(obj, "mac %r is not a MAC address" % (nic.get("mac"),))
        if mac in out:
            raise InvalidInput(obj, "mac %s is given twice" % mac)
        problem = link_problem(nic)
        if problem:
            raise InvalidInput("%s (%s)" % (obj, mac), problem)
        out[mac] = normal_link(nic)
    return out


def node_links(facts: Mapping[str, Any], reported: Mapping[str, Any], given: Mapping[str, Any]) -> dict:
    """Each NIC's switch port: what the owner gave, else what the BMC reported (LLDP). MAC -> link.

    A MAC the owner gives that the BMC does not report is an error naming it (a typo would otherwise leave the
    NIC without its switch port and enrol nothing for the MAC)."""
    macs = [nic["mac"] for nic in facts.get("nics") or []]
    for mac in given:
        if mac not in macs:
            raise InvalidInput("nic %s" % mac, "is not a NIC the BMC reports (%s)" % (", ".join(macs) or "none"))
    out = {}
    for mac in macs:
        link = given.get(mac) or reported.get(mac)
        if link:
            out[mac] = dict(link)
    return out


def port_plan(existing: Iterable[Mapping[str, Any]], macs: Iterable[str], links: Mapping[str, Any]) -> tuple:
    """What makes the node's ports: ``(create, update)``.

    ``create``: ``[{"address", "local_link_connection"?}]`` for the NICs without a port; ``update``: ``[(uuid, mac,
    link)]`` for ports whose ``local_link_connection`` differs from the link wanted. A port whose NIC has no link
    wanted keeps what it has."""
    have = dict((str(p.get("address") or "").lower(), p) for p in existing)
    create, update = [], []
    for mac in macs:
        link = links.get(mac)
        port = have.get(mac)
        if port is None:
            body = {"address": mac}
            if link:
                body["local_link_connection"] = dict(link)
            create.append(body)
        elif link and dict(port.get("local_link_connection") or {}) != dict(link):
            update.append((port["uuid"], mac, dict(link)))
    return create, update


def links_view(links: Mapping[str, Any]) -> dict:
    """What the owner's diff shows of the switch ports: MAC -> link (sorted keys)."""
    return dict((mac, dict(sorted(link.items()))) for mac, link in sorted(links.items()))


def port_links(ports: Iterable[Mapping[str, Any]]) -> dict:
    """MAC -> ``local_link_connection`` of the ports that have one."""
    return dict(
        (str(p.get("address") or "").lower(), dict(p["local_link_connection"]))
        for p in ports
        if p.get("local_link_connection")
    )


def links_report(links: Mapping[str, Any], reported: Mapping[str, Any]) -> list[dict]:
    """The owner's result: each NIC's switch port with where it came from (``bmc``: LLDP over Redfish; ``owner``)."""
    out = []
    for mac, link in sorted(links.items()):
        source = "bmc" if mac in reported and normal_link(reported[mac]) == link else "owner"
        out.append(dict(link, mac=mac, source=source))
    return out


# Where Ironic lets a port's switch port change without maintenance; available: host_register uses maintenance.
RELINK_STATES = ("enroll", "manageable", "inspecting", "inspect wait", "available")


def relink_problem(node: Mapping[str, Any]) -> str | None:
    """Why host_register will not change the switch ports of ``node`` now (``None``: it will)."""
    if node.get("provision_state") in RELINK_STATES or node.get("maintenance"):
        return None
    return "the node is %s: change its switch ports when it is available or manageable" % node.get("provision_state")
