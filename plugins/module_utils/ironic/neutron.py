# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The one Neutron client of the collection, as the caller's own token, and the tenant's network writes.

- Requests go through the connection's ``network`` adapter (the catalog's ``network`` service) with the caller's
  project-scoped token: Neutron shows a tenant its own networks and ports (and shared ones), never another
  project's, and its policy keeps a port's binding (the switch port) to the owner and services.
- Lists are filtered by the server (``project_id``, ``network_id``, ``name``) and ask only for the fields used.
- Every failure becomes a :class:`errors.TenancyError` naming the object and carrying Neutron's own message
  (its ``NeutronError`` body); a connection refused names Neutron.

:func:`run_tenant_network` is the ``tenant_network`` module: the network of the caller's project named ``name``
and its subnets, made to match (check mode simulated: reads only).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    status_error,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import network_model as model
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.connection import (
    openstack_connection,
    request_failure,
    response_body,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.writes import Writes

OK = (200, 201, 202, 204)
NETWORK_FIELDS = ("id", "name", "project_id", "status", "shared", "subnets")
SUBNET_FIELDS = ("id", "name", "network_id", "cidr", "ip_version", "gateway_ip", "enable_dhcp", "allocation_pools")


def _message(response: Any) -> str:
    try:
        body = json.loads((response.content or b"").decode("utf-8", "replace"))
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("NeutronError"), dict):
        message = body["NeutronError"].get("message")
        if message:
            return message
    text = (getattr(response, "text", "") or "").strip()
    return text[:500] or getattr(response, "reason", None) or "HTTP %s" % response.status_code


def _query(params: Iterable[tuple[str, Any]]) -> str:
    items = []
    for key, value in params:
        for one in value if isinstance(value, (list, tuple)) else (value,):
            if one is not None:
                items.append("%s=%s" % (key, one))
    return "?" + "&".join(items) if items else ""


class Neutron:
    """Neutron, as seen by the credentials of one connection (an openstacksdk ``Connection``)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.api = conn.network
        self.timeout = getattr(getattr(conn, "config", None), "config", {}).get("api_timeout")
        self.requests = 0

    @classmethod
    def from_params(cls, params: dict) -> Neutron:
        return cls(openstack_connection(params))

    def request(self, method: str, path: str, obj: str, body: Any = None, missing_ok: bool = False) -> Any:
        self.requests += 1
        kwargs: dict[str, Any] = {"raise_exc": False}
        if body is not None:
            kwargs["json"] = body
        try:
            response = getattr(self.api, method)(path, **kwargs)
        except Exception as exc:  # connection refused, TLS, token errors, time-outs
            raise request_failure(obj, exc, "%s %s" % (method.upper(), path), self.timeout, "Neutron") from exc
        if response.status_code in OK:
            return response_body(response)
        if response.status_code == 404 and missing_ok:
            return None
        raise status_error(obj, response.status_code, _message(response))

    def list(self, resource: str, obj: str, params: Iterable[tuple[str, Any]] = (), fields: Sequence[str] = ()):
        params = list(params) + [("fields", f) for f in fields]
        body = self.request("get", "/%s%s" % (resource, _query(params)), obj) or {}
        return list(body.get(resource) or [])

    # ------------------------------------------------------------ networks
    def find_network(self, ref: str, project_id: str | None, obj: str) -> dict | None:
        """The network ``ref`` (ID, or name within ``project_id``) the caller sees; ``None`` when there is none."""
        found = self.list("networks", obj, [("id", ref)], NETWORK_FIELDS)
        if not found:
            found = self.list("networks", obj, [("name", ref), ("project_id", project_id)], NETWORK_FIELDS)
        if len(found) > 1:
            raise Conflict(
                obj, "%d networks of project %s are named %s: name one by its ID" % (len(found), project_id, ref)
            )
        return found[0] if found else None

    def subnets(self, network_id: str, obj: str) -> list[dict]:
        return self.list("subnets", obj, [("network_id", network_id)], SUBNET_FIELDS)

    # ------------------------------------------------------------ ports
    def ports(self, obj: str, **filters: Any) -> list[dict]:
        return self.list("ports", obj, sorted(filters.items()), model.PORT_FIELDS)

    def get_port(self, port_id: str, obj: str) -> dict | None:
        body = self.request("get", "/ports/%s" % port_id, obj, missing_ok=True)
        return (body or {}).get("port")

    def create_port(self, body: dict, obj: str) -> dict:
        return self.request("post", "/ports", obj, body={"port": body})["port"]

    def update_port(self, port_id: str, body: dict, obj: str) -> dict:
        return self.request("put", "/ports/%s" % port_id, obj, body={"port": body})["port"]

    def delete_port(self, port_id: str, obj: str) -> None:
        self.request("delete", "/ports/%s" % port_id, obj, missing_ok=True)


# ---------------------------------------------------------------- tenant_network


def _require_project(conn: Any, obj: str) -> str:
    project = getattr(conn, "current_project_id", None)
    if not project:
        raise InvalidInput(
            obj,
            "needs credentials scoped to the tenant's project (project_name or project_id), "
            "not system- or domain-scoped ones",
        )
    return project


def run_tenant_network(mod: Any) -> None:
    p = mod.params
    name = model.validate_network_name(p["name"])
    obj = "network %s" % name
    wanted = model.validate_subnets(name, p["subnets"]) if p["state"] == "present" else []
    neutron = Neutron.from_params(p)
    writer = Writes(mod)
    project = _require_project(neutron.conn, obj)
    found = neutron.list("networks", obj, [("name", name), ("project_id", project)], NETWORK_FIELDS)
    if len(found) > 1:
        raise Conflict(obj, "project %s has %d networks of this name: remove all but one" % (project, len(found)))
    network = found[0] if found else None
    subnets = neutron.subnets(network["id"], obj) if network else []
    before = model.network_view(network, subnets)
    if p["state"] == "absent":
        mod.result["network"] = None
        mod.set_diff(before or {}, {})
        if network is None:
            return
        mod.changed()
        try:
            writer.write(
                "delete network %s" % name,
                neutron.request,
                "delete",
                "/networks/%s" % network["id"],
                obj,
                missing_ok=True,
            )
        except Conflict as exc:
            raise Conflict(
                obj,
                "still has ports (a claimed host is attached to it: release the claim first): %s" % exc.cause,
            ) from exc
        return
    if network is None:
        mod.changed()
        predicted = {"network": {"id": None, "name": name, "project_id": project, "status": "ACTIVE"}}
        network = writer.write(
            "create network %s" % name,
            neutron.request,
            "post",
            "/networks",
            obj,
            body={"network": {"name": name}},
            predicted=predicted,
        )["network"]
    by_name = dict((s.get("name"), s) for s in subnets)
    for subnet in wanted:
        sobj = "%s, subnet %s" % (obj, subnet["name"])
        current = by_name.get(subnet["name"])
        if current is None:
            mod.changed()
            body = dict(subnet, network_id=network["id"])
            if "gateway_ip" not in subnet:
                body["gateway_ip"] = None
            by_name[subnet["name"]] = writer.write(
                "create subnet %s of network %s" % (subnet["name"], name),
                neutron.request,
                "post",
                "/subnets",
                sobj,
                body={"subnet": body},
                predicted={"subnet": dict(body, id=None)},
            )["subnet"]
            continue
        changes = model.subnet_changes(subnet, current, sobj)
        if changes:
            mod.changed()
            by_name[subnet["name"]] = writer.write(
                "update subnet %s of network %s" % (subnet["name"], name),
                neutron.request,
                "put",
                "/subnets/%s" % current["id"],
                sobj,
                body={"subnet": changes},
                predicted={"subnet": dict(current, **changes)},
            )["subnet"]
    after = model.network_view(network, by_name.values())
    mod.set_diff(before or {}, after)
    mod.result["network"] = after


# ---------------------------------------------------------------- a claim's networks


def resolve_claim_networks(neutron: Neutron, project: str, networks: list[dict], obj: str) -> list[dict]:
    """Before any write: each network of a claim exists for the caller, with a subnet that can give the address.
    Returns ``[{network, subnets, fixed_ip}]``."""
    resolved = []
    for entry in networks:
        network = neutron.find_network(entry["network"], project, obj)
        if network is None or (network.get("project_id") != project and not network.get("shared")):
            raise NotFound(
                obj, "network %s does not exist or is not project %s's (option networks)" % (entry["network"], project)
            )
        subnets = neutron.subnets(network["id"], obj)
        problem = model.fixed_ip_problem(entry["fixed_ip"], subnets)
        if problem:
            raise InvalidInput(obj, "network %s: %s (option networks)" % (network.get("name"), problem))
        resolved.append({"network": network, "subnets": subnets, "fixed_ip": entry["fixed_ip"]})
    return resolved


def claim_ports(neutron: Neutron, project: str, claim: str, node_uuid: str | None, obj: str) -> list[dict]:
    """The caller's ports ``host_claim`` made for ``claim`` on node ``node_uuid``."""
    if not node_uuid:
        return []
    prefix = model.claim_port_name(claim, "")
    return [
        port
        for port in neutron.ports(obj, project_id=project, device_id=node_uuid)
        if (port.get("name") or "").startswith(prefix)
    ]
