# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""A tenant's private networks, as data: what ``tenant_network`` and ``host_claim``'s ``networks`` ask for.

Pure: no I/O.  Everything a tenant may give is checked here before any request, so bad input changes nothing:

- a network's name; its subnets (names unique, CIDR a network address, gateway and pools inside it);
- a claim's networks (a network named once, a fixed address that is an IP address);
- the name of the Neutron port ``host_claim`` makes for a claim on a network (:func:`claim_port_name`), which the
  release finds again; the link from the port to the node is the port's ``device_id`` (the node's UUID), a field
  only the port's own project (and the owner) can write.

What a tenant is shown of a network, a subnet or a port (:func:`network_view`, :func:`subnet_view`,
:func:`port_addresses`) is a fixed list of fields: never a port's binding (``binding:profile`` names the switch
port), nor a segment (the VLAN).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput

MAX_NAME = 255
#: the fields of a subnet that a rerun may change in place (a CIDR cannot change)
SUBNET_MUTABLE = ("gateway_ip", "enable_dhcp", "allocation_pools")
PORT_FIELDS = ("id", "name", "network_id", "device_id", "fixed_ips", "mac_address", "status", "project_id")


def _name_problem(name: Any) -> str | None:
    if not isinstance(name, str) or not name.strip():
        return "must not be empty"
    if len(name) > MAX_NAME:
        return "is longer than %d characters" % MAX_NAME
    if name != name.strip():
        return "must not start or end with a space"
    return None


def validate_network_name(name: Any) -> str:
    problem = _name_problem(name)
    if problem:
        raise InvalidInput("network %r" % (name,), "name %s" % problem)
    return name


def _address(value: Any, obj: str, what: str) -> Any:
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        raise InvalidInput(obj, "%s %r is not an IP address" % (what, value)) from None


def _subnet(network: str, index: int, raw: Mapping) -> dict:
    name = raw.get("name")
    obj = "network %s" % network
    problem = _name_problem(name)
    if problem:
        raise InvalidInput(obj, "subnets[%d]: option name %s" % (index, problem))
    obj = "network %s, subnet %s" % (network, name)
    cidr = raw.get("cidr")
    try:
        net = ipaddress.ip_network(cidr, strict=True)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(obj, "option cidr %r is not a network address (%s)" % (cidr, exc)) from None
    subnet = {"name": name, "cidr": str(net), "ip_version": net.version, "enable_dhcp": bool(raw.get("enable_dhcp"))}
    gateway = raw.get("gateway_ip")
    if gateway:
        address = _address(gateway, obj, "option gateway_ip")
        if address not in net:
            raise InvalidInput(obj, "option gateway_ip %s is not in %s" % (gateway, net))
        subnet["gateway_ip"] = str(address)
    pools = []
    for pool in raw.get("allocation_pools") or ():
        start = _address(pool.get("start"), obj, "allocation_pools start")
        end = _address(pool.get("end"), obj, "allocation_pools end")
        if start not in net or end not in net or start > end:
            raise InvalidInput(obj, "allocation pool %s-%s is not a range inside %s" % (start, end, net))
        pools.append({"start": str(start), "end": str(end)})
    if pools:
        subnet["allocation_pools"] = pools
    return subnet


def validate_subnets(network: str, subnets: Iterable[Mapping] | None) -> list[dict]:
    """The subnets asked for, checked and normalised (sorted by name); names unique."""
    result = [_subnet(network, index, raw or {}) for index, raw in enumerate(subnets or ())]
    names = [s["name"] for s in result]
    twice = sorted(set(n for n in names if names.count(n) > 1))
    if twice:
        raise InvalidInput("network %s" % network, "subnet %s is listed more than once" % ", ".join(twice))
    return sorted(result, key=lambda s: s["name"])


def subnet_changes(wanted: Mapping, current: Mapping, obj: str) -> dict:
    """What to update on ``current`` (a Neutron subnet) so it is ``wanted``; a different CIDR is an error."""
    if str(ipaddress.ip_network(current.get("cidr"), strict=False)) != wanted["cidr"]:
        raise InvalidInput(
            obj,
            "exists with cidr %s, not %s; a subnet's cidr cannot change: remove the subnet (or the network) first, "
            "or give the new range another subnet name" % (current.get("cidr"), wanted["cidr"]),
        )
    changes = {}
    if bool(current.get("enable_dhcp")) != wanted["enable_dhcp"]:
        changes["enable_dhcp"] = wanted["enable_dhcp"]
    if "gateway_ip" in wanted and current.get("gateway_ip") != wanted["gateway_ip"]:
        changes["gateway_ip"] = wanted["gateway_ip"]
    if "allocation_pools" in wanted:
        have = sorted((p.get("start"), p.get("end")) for p in current.get("allocation_pools") or ())
        if have != sorted((p["start"], p["end"]) for p in wanted["allocation_pools"]):
            changes["allocation_pools"] = wanted["allocation_pools"]
    return changes


def subnet_view(subnet: Mapping) -> dict:
    return {
        "id": subnet.get("id"),
        "name": subnet.get("name"),
        "cidr": subnet.get("cidr"),
        "ip_version": subnet.get("ip_version"),
        "gateway_ip": subnet.get("gateway_ip"),
        "enable_dhcp": bool(subnet.get("enable_dhcp")),
        "allocation_pools": [dict(p) for p in subnet.get("allocation_pools") or ()],
    }


def network_view(network: Mapping | None, subnets: Iterable[Mapping] = ()) -> dict | None:
    """What a tenant is shown of its network (no segment, no provider field)."""
    if network is None:
        return None
    return {
        "id": network.get("id"),
        "name": network.get("name"),
        "project_id": network.get("project_id") or network.get("tenant_id"),
        "status": network.get("status"),
        "subnets": sorted((subnet_view(s) for s in subnets), key=lambda s: s["name"] or ""),
    }


# ---------------------------------------------------------------- a claim's networks


def validate_claim_networks(networks: Iterable[Mapping] | None, obj: str) -> list[dict]:
    """``host_claim``'s option ``networks``: each ``{network, fixed_ip}``, a network named once."""
    result = []
    for index, given in enumerate(networks or ()):
        raw = given or {}
        ref = raw.get("network")
        problem = _name_problem(ref)
        if problem:
            raise InvalidInput(obj, "option networks[%d]: network %s" % (index, problem))
        entry = {"network": ref, "fixed_ip": None}
        if raw.get("fixed_ip"):
            entry["fixed_ip"] = str(_address(raw["fixed_ip"], obj, "option networks[%d]: fixed_ip" % index))
        result.append(entry)
    refs = [e["network"] for e in result]
    twice = sorted(set(r for r in refs if refs.count(r) > 1))
    if twice:
        raise InvalidInput(obj, "option networks: network %s is listed more than once" % ", ".join(twice))
    return result


def claim_port_name(claim: str, network_name: str) -> str:
    """The name of the Neutron port ``host_claim`` makes for claim ``claim`` on a network."""
    return "bmt-%s-%s" % (claim, network_name)


def fixed_ip_problem(fixed_ip: str | None, subnets: Iterable[Mapping]) -> str | None:
    """Why ``fixed_ip`` cannot be had on a network with ``subnets`` (``None``: it can)."""
    subnets = list(subnets)
    if not subnets:
        return "the network has no subnet"
    if fixed_ip is None:
        return None
    address = ipaddress.ip_address(fixed_ip)
    for subnet in subnets:
        try:
            if address in ipaddress.ip_network(subnet.get("cidr"), strict=False):
                return None
        except (TypeError, ValueError):
            continue
    return "fixed_ip %s is in none of its subnets (%s)" % (
        fixed_ip,
        ", ".join(sorted(str(s.get("cidr")) for s in subnets)),
    )


def port_addresses(port: Mapping | None) -> list[str]:
    """The IP addresses of a Neutron port (its ``fixed_ips``), in order."""
    return [ip["ip_address"] for ip in (port or {}).get("fixed_ips") or () if ip.get("ip_address")]


def claim_network_view(network: Mapping, port: Mapping | None) -> dict:
    """One item of a claim's ``networks`` result: the network and the host's addresses on it (no port binding)."""
    return {
        "network": network.get("name"),
        "network_id": network.get("id"),
        "addresses": port_addresses(port),
        "mac_address": (port or {}).get("mac_address"),
    }


def networks_off(resolved: Iterable[Mapping] | None, ports: Iterable[Mapping]) -> str | None:
    """What a failed deployment adds to its error: the claim's networks (``resolve_claim_networks``' items) the
    host is not on, each with its port's status (``None`` when it is on all of them). A port is ``ACTIVE`` once
    networking-generic-switch has put the host's switch port on the network's VLAN; until then the host waits in
    quarantine. Names the tenant's own networks and ports only, never a switch or a binding."""
    by_network = {port.get("network_id"): port for port in ports or () if isinstance(port, Mapping)}
    off = []
    for item in resolved or ():
        network = item["network"]
        port = by_network.get(network.get("id"))
        if port is None:
            off.append("%s (the claim has no port on it)" % network.get("name"))
        elif port.get("status") != "ACTIVE":
            off.append("%s (its port is %s)" % (network.get("name"), port.get("status") or "without a status"))
    if not off:
        return None
    return "the switch has not put the host on network%s %s" % ("s" if len(off) > 1 else "", ", ".join(off))


def tenant_ports_by_node(ports: Iterable[Any], project_id: str | None) -> dict[str, dict]:
    """The caller's ports that name a node (``device_id``), by node UUID: where the inventory finds a host's
    address on the tenant's network. Another project's port is never read, whatever it says."""
    by_node: dict[str, dict] = {}
    for port in ports or ():
        if not isinstance(port, Mapping) or not port.get("device_id"):
            continue
        if project_id and (port.get("project_id") or port.get("tenant_id")) != project_id:
            continue
        if port_addresses(port):
            by_node.setdefault(port["device_id"], dict(port))
    return by_node
