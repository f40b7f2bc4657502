# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The fields of a claim record, shared by both backends' claim views.

A *record* is one plain, JSON-serialisable dict per claimed host (see
:data:`RECORD_KEYS`).  ``metal3.claim_view`` and ``ironic.claim_view``
build it from API objects; ``host_claim_info`` returns it and the
``claimed_hosts`` inventory presents it.  Records hold only the fields named
here, so nothing else a control plane returns can reach a tenant.  Pure: no
I/O."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from typing import Any

#: The keys of every record, with either backend (one spelling); ``metal3.claim_view.METAL3_KEYS`` and the
#: ironic view add their backend's own (``uid``, ``provisioning_state`` ...; ``project_id``, ``traits`` ...).
RECORD_KEYS = (
    "backend",
    "name",
    "namespace",
    "host",
    "online",
    "powered_on",
    "associated",
    "ready",
    "conditions",
    "labels",
    "annotations",
    "image",
    "addresses",
    "nics",
    "boot_mac_address",
)

ANY_TYPE = "*"

ADDRESS_FAMILIES = ("ipv4", "ipv6", "hostname")

DEFAULT_ADDRESS_TYPES = ("ExternalIP", "InternalIP")

DEFAULT_ADDRESS_FAMILIES = ("ipv4", "ipv6")

DEFAULT_UNTYPED_ADDRESS = "InternalIP"

ASSOCIATED = "AssociateBMH"

ALLOCATED = "Allocated"

READY = "Ready"

IMAGE_FIELDS = ("url", "checksum", "checksumType", "format")

CONDITION_FIELDS = ("type", "status", "reason", "message", "lastTransitionTime")

NIC_FIELDS = ("name", "MAC", "ip")

TYPE_ALIASES = {"InternalIP6": "InternalIP", "ExternalIP6": "ExternalIP"}

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"

_HOSTNAME_RE = re.compile(r"%s(?:\.%s)*\Z" % (_LABEL, _LABEL))

_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"

_IPV4_RE = re.compile(r"%s(?:\.%s){3}\Z" % (_OCTET, _OCTET))


def as_dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def as_bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def str_map(value: Any) -> dict[str, str]:
    """The ``str -> str`` entries of a mapping (labels, annotations)."""
    return dict((k, v) for k, v in as_dict(value).items() if isinstance(k, str) and isinstance(v, str))


def pick(value: Any, fields: Iterable[str]) -> dict[str, str]:
    """The string fields of ``value`` named in ``fields`` (others dropped)."""
    if not isinstance(value, dict):
        return {}
    # a plain loop: this runs for every condition of every claim an inventory of thousands reads
    result = {}
    for field in fields:
        item = value.get(field)
        if isinstance(item, str) and item:
            result[field] = item
    return result


def address_family(address: Any) -> str | None:
    """``ipv4``, ``ipv6``, ``hostname`` (a valid DNS name) or ``None`` (unusable)."""
    if not isinstance(address, str) or not address or len(address) > 253:
        return None
    if _IPV4_RE.match(address):
        return "ipv4"
    if ":" in address:
        try:
            ipaddress.IPv6Address(address)
        except ValueError:
            return None
        return "ipv6"
    name = address[:-1] if address.endswith(".") else address
    if not _HOSTNAME_RE.match(name) or name.rsplit(".", 1)[-1].isdigit():
        return None
    return "hostname"


def normalise_addresses(value: Any, default_type: str = DEFAULT_UNTYPED_ADDRESS) -> list[dict[str, str]]:
    """A list of ``{type, address}`` from what an API holds, duplicates and junk removed.

    Accepts a list of ``{type, address}`` dicts or of strings, or one of them
    alone.  A string, or a dict without a type, gets ``default_type``.
    """
    if isinstance(value, (str, dict)):
        value = [value]
    if not isinstance(value, list):
        return []
    result = []
    for item in value:
        if isinstance(item, str):
            entry = {"type": default_type, "address": item.strip()}
        elif isinstance(item, dict) and isinstance(item.get("address"), str):
            entry = {"type": as_str(item.get("type")) or default_type, "address": item["address"].strip()}
        else:
            continue
        if entry["address"] and entry not in result:
            result.append(entry)
    return result


def select_address(
    addresses: Iterable[Any] | None,
    types: Iterable[str] | None = DEFAULT_ADDRESS_TYPES,
    families: Iterable[str] | None = DEFAULT_ADDRESS_FAMILIES,
) -> str | None:
    """The preferred address of ``addresses`` (``{type, address}`` dicts), or ``None``.

    Types are tried in order (``*`` matches any type; no types means any),
    within a type the families in order (no families means all three), and
    within both the addresses in their order.
    """
    types = list(types or ()) or [ANY_TYPE]
    families = list(families or ()) or list(ADDRESS_FAMILIES)
    known = [(entry.get("type"), entry.get("address")) for entry in addresses or () if isinstance(entry, dict)]
    family_of = {}  # index in known -> family, worked out only for the addresses of a wanted type (once each)
    for wanted_type in types:
        for family in families:
            for index, (entry_type, address) in enumerate(known):
                if wanted_type != ANY_TYPE and entry_type != wanted_type:
                    continue
                if index not in family_of:
                    family_of[index] = address_family(address)
                if family_of[index] == family:
                    return address
    return None


def normalise_conditions(value: Any) -> list[dict[str, str]]:
    """The conditions of a status: dicts with a type, string fields only."""
    if not isinstance(value, list):
        return []
    return [pick(item, CONDITION_FIELDS) for item in value if isinstance(item, dict) and as_str(item.get("type"))]


def condition_status(conditions: Iterable[Mapping[str, Any]] | None, ctype: str) -> Any:
    """``status`` of the first condition of type ``ctype``, or ``None``."""
    for condition in conditions or ():
        if condition.get("type") == ctype:
            return condition.get("status")
    return None
