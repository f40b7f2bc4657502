# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""What host_register wants a host to look like on each backend.  Pure.

From the facts of a Redfish system (:func:`client.system_facts`) and its
classification (:mod:`classify`), build:

* metal3: a ``BareMetalHost`` and its BMC credentials ``Secret``, and the
  JSON merge patch that brings an existing BMH to the wanted state;
* ironic: the fields of a node with the ``redfish`` hardware type, and the
  JSON patch (RFC 6902) for an existing node, the traits and ports to set.

Ownership of what the classification writes is tracked on the host, so
that labels and traits a rule no longer gives are removed on the next run
and nobody else's labels or traits are touched: annotation
:data:`MANAGED_LABELS_ANNOTATION` on the BMH, ``extra[MANAGED_TRAITS_KEY]``
on the node.  A host is matched by its system UUID (annotation
:data:`SYSTEM_UUID_ANNOTATION`; node ``uuid`` or ``extra.system_uuid``).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.selectors import dns1123_subdomain_problem

DOMAIN = "baremetal.tenancy"
SYSTEM_UUID_ANNOTATION = DOMAIN + "/system-uuid"
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
HIDDEN = "<hidden>"
IRONIC_NAME_RE = re.compile(r"^[A-Za-z0-9._~-]{1,255}$")
DEFAULT_NAME_PREFIX = "host-"


def normal_uuid(value: Any) -> str | None:
    text = (value or "").strip().lower()
    return text if UUID_RE.match(text) else None


def default_name(uuid: str) -> str:
    """``host-<16 hex digits>``: a digest of the system UUID, never the UUID itself.

    Many BMCs (sushy-tools, libvirt-based ones) use the system UUID as the Redfish system id, the last segment
    of the BMC address; the host name reaches tenants (the claim's binding label, ``status.bareMetalHost``,
    ``host_claim_info``, the inventory), BMC data must not (``bmc_data``).
    """
    return DEFAULT_NAME_PREFIX + hashlib.sha256(("%s/%s" % (DOMAIN, uuid)).encode()).hexdigest()[:16]


def host_name(given: str | None, facts: dict, backend: str) -> str:
    """The host's name: the one given, else :func:`default_name` of the system UUID."""
    uuid = normal_uuid(facts.get("uuid"))
    if not given and not uuid:
        raise InvalidInput("system", "reports no valid UUID: give the host a name")
    name = given or default_name(uuid)
    if backend == "metal3":
        problem = dns1123_subdomain_problem(name)
        if problem:
            raise InvalidInput("host name %r" % name, problem)
    elif not IRONIC_NAME_RE.match(name):
        raise InvalidInput("host name %r" % name, "must be 1-255 letters, digits, '.', '_', '~' or '-'")
    return name


def boot_mac(facts: dict, override: str | None = None) -> str | None:
    if override:
        mac = override.strip().lower().replace("-", ":")
        if not re.match(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$", mac):
            raise InvalidInput("boot_mac_address %r" % override, "must be a MAC address")
        return mac
    nics = facts.get("nics") or []
    return nics[0]["mac"] if nics else None


# ------------------------------------------------------------------ metal3


# ------------------------------------------------------------------ ironic


# ------------------------------------------------------------------ switch ports seen over LLDP
#
# Redfish's Port resource (Chassis -> NetworkAdapters -> Ports, Port.v1_4 and later) carries what the NIC received
# from its link partner over LLDP: ``Ethernet.LLDPReceive`` (ChassisId, PortId, SystemName, each ID with its IEEE
# 802.1AB subtype) and the NIC's MACs in ``Ethernet.AssociatedMACAddresses``. Many BMCs (sushy-tools among them)
# report no NetworkAdapters or no LLDPReceive: the owner then gives the switch ports itself.

_OCTETS_RE = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2})*$")
_TEXT_SUBTYPES = ("IfName", "IfAlias", "LocalAssign", "ChassisComp", "PortComp")


def _mac_text(value: Any) -> str | None:
    text = str(value or "").strip().lower().replace("-", ":")
    return text if re.match(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$", text) and text != "00:00:00:00:00:00" else None


def lldp_id(value: Any, subtype: Any) -> str | None:
    """An LLDP ID as a switch names it: a MAC for subtype ``MacAddr``, the text of an interface or local name
    (Redfish gives IDs as colon-separated octets; printable ASCII octets are decoded), else the value as given."""
    if value is None or value == "":
        return None
    text = str(value).strip()
    if subtype == "MacAddr":
        return _mac_text(text) or text
    if subtype in _TEXT_SUBTYPES and _OCTETS_RE.match(text):
        raw = bytes(int(octet, 16) for octet in text.split(":"))
        if all(0x20 < byte < 0x7F for byte in raw):
            return raw.decode("ascii")
    return text


def lldp_neighbours(ports: Any) -> dict:
    """MAC -> ``{switch_id, port_id, switch_info}`` from Redfish Port documents that carry ``LLDPReceive`` with a
    chassis and a port ID (``switch_info``: the partner's system name, when given). Pure; never raises on odd data."""
    out: dict = {}
    for port in ports or []:
        if not isinstance(port, dict):
            continue
        ethernet = port.get("Ethernet") if isinstance(port.get("Ethernet"), dict) else {}
        lldp = ethernet.get("LLDPReceive") if isinstance(ethernet.get("LLDPReceive"), dict) else {}
        switch_id = lldp_id(lldp.get("ChassisId"), lldp.get("ChassisIdSubtype"))
        port_id = lldp_id(lldp.get("PortId"), lldp.get("PortIdSubtype"))
        if not switch_id or not port_id:
            continue
        link = {"switch_id": switch_id, "port_id": port_id}
        if lldp.get("SystemName"):
            link["switch_info"] = str(lldp["SystemName"])
        macs = (
            ethernet.get("AssociatedMACAddresses") if isinstance(ethernet.get("AssociatedMACAddresses"), list) else []
        )
        for mac in filter(None, (_mac_text(m) for m in macs)):
            out.setdefault(mac, link)
    return out
