# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""host_register on Ironic: enrol nodes (driver_info, properties, ports, traits) from what the BMCs told, and bring them to manageable or available.

Needs a system-scoped (admin) connection.  Every request goes through the one
Ironic client (:class:`ironic.client.Ironic`: retries of node locks and busy
databases, pages followed to the end); the nodes that exist are read once,
every page of them, so a fleet larger than Ironic's ``[api] max_limit`` is
matched whole and a rerun never enrols a system twice.  Ironic errors may
quote the BMC address; :func:`_scrub` keeps them out of results."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import Conflict, undo_after
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.params import check_timeout
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import registration_model as node_model
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.client import Ironic
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.model import in_failure_state
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.writes import Writes
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import registration_model as reg

# What is read of every existing node to match BMCs with nodes.
EXISTING_FIELDS = ("uuid", "name", "driver", "extra")
# Ironic's API and conductor often share one process: waits poll at most every 3 s.
LONGEST_POLL = 3.0


class IronicRegistrar:
    """Enrols or updates one node per BMC job; ``connect()`` gives each worker thread its own connection."""

    parallel = True

    def __init__(
        self,
        connect: Callable[[], Any],
        check_mode: bool,
        owner: str | None = None,
        default_resource_class: str = node_model.DEFAULT_RESOURCE_CLASS,
        interfaces: dict | None = None,
        update_password: bool = False,
        wait_timeout: float = 600,
        automated_clean: bool | None = None,
    ) -> None:
        self.connect = connect
        self.automated_clean = automated_clean
        self.local = threading.local()
        self.check_mode = check_mode
        self.owner = owner
        self.default_resource_class = default_resource_class
        self.interfaces = interfaces or {}
        self.update_password = update_password
        self.wait_timeout = check_timeout(wait_timeout)
        nodes = self.client().list("nodes", "Ironic nodes", fields=EXISTING_FIELDS)
        self.by_uuid, self.by_name = {}, {}
        for node in nodes:
            uuid = reg.normal_uuid((node.get("extra") or {}).get(node_model.SYSTEM_UUID_KEY)) or reg.normal_uuid(
                node.get("uuid")
            )
            self.by_uuid.setdefault(uuid, node)
            if node.get("name"):
                self.by_name[node["name"]] = node
        self.lock = threading.Lock()

    @property
    def writer(self) -> Writes:
        """The backend's writer: in check mode each node's writes are recorded, none sent (each job reports its
        change)."""
        writer = self.__dict__.get("_writer")
        if writer is None:
            writer = self.__dict__["_writer"] = Writes(None, check_mode=self.check_mode)
        return writer

    def client(self) -> Ironic:
        """This thread's Ironic client (one connection per worker thread)."""
        client = getattr(self.local, "client", None)
        if client is None:
            client = self.local.client = Ironic(self.connect())
        return client

    def _req(self, method: str, path: str, obj: str, json: Any = None) -> dict:
        """One Ironic request through this thread's client; ``{}`` for an empty answer."""
        return self.client().request(method, path, obj, body=json) or {}

    def _get_node(self, ident: str, obj: str) -> dict:
        return self._req("get", "/nodes/%s" % ident, obj)

    def register(self, job: Any) -> None:
        uuid = reg.normal_uuid(job.facts["uuid"])
        with self.lock:
            existing = self.by_uuid.get(uuid)
        name = (
            existing["name"]
            if existing and existing.get("name")
            else reg.host_name(job.spec.get("name"), job.facts, "ironic")
        )
        job.name = name
        obj = "node %s" % name
        if existing is None and name in self.by_name:
            raise Conflict(obj, "exists for another system (node %s)" % self.by_name[name]["uuid"])
        if existing is not None and existing.get("driver") != "redfish":
            raise Conflict(obj, "uses driver %s, not redfish: host_register leaves it alone" % existing.get("driver"))
        info = node_model.driver_info(
            job.base_url,
            job.system_path,
            job.spec["username"],
            job.spec["password"],
            job.spec.get("validate_certs", True),
        )
        desired = node_model.desired_node(
            name,
            job.facts,
            job.classification,
            info,
            self.owner,
            self.default_resource_class,
            self.interfaces,
            self.automated_clean,
        )
        job.ref = dict(node=name, node_uuid=(existing or {}).get("uuid") or uuid)
        links = self._links(job)
        job.ref["switch_ports"] = node_model.links_report(links, getattr(job, "reported_links", None) or {})
        macs = [nic["mac"] for nic in job.facts.get("nics") or []]
        if existing is None:
            traits = node_model.node_traits([], [], job.classification.traits)
            job.before = {}
            job.after = node_model.node_view(
                dict(desired, provision_state="available"), traits, node_model.missing_ports(job.facts, [])
            )
            job.after["switch_ports"] = node_model.links_view(links)
            job.changed = True
            job.status = "registered"
            if not self.writer.change("register node %s" % name):
                return
            node = self._req("post", "/nodes", obj, json=desired)
            with self.lock:
                self.by_uuid[uuid] = self.by_name[name] = node
            job.ref["node_uuid"] = node["uuid"]
            try:
                self._describe(node, traits, node_model.port_plan([], macs, links), obj)
            except Exception as exc:
                # a node without its ports or traits is not registered: this run's node goes again
                undo_after(exc, obj, lambda: self._forget(node, uuid, name, obj))
                raise
            self._provide(node, obj)
            return
        node = self._get_node(existing["uuid"], obj)
        ops = node_model.node_patch(node, desired, self.update_password)
        ports = self.client().list(
            "ports", obj, [("node_uuid", node["uuid"])], fields=("uuid", "address", "local_link_connection")
        )
        have_macs = [p["address"] for p in ports]
        plan = node_model.port_plan(ports, macs, links)
        previously = (node.get("extra") or {}).get(node_model.MANAGED_TRAITS_KEY) or []
        traits = node_model.node_traits(node.get("traits") or [], previously, job.classification.traits)
        steps = node_model.provision_steps(node.get("provision_state"))
        missing = node_model.missing_ports(job.facts, have_macs)
        trait_change = sorted(node.get("traits") or []) != traits
        job.before = node_model.node_view(node, node.get("traits"), have_macs)
        job.after = node_model.node_view(
            dict(node, **dict((k, v) for k, v in desired.items() if k not in ("driver_info",))),
            traits,
            have_macs + missing,
        )
        job.after["driver_info"] = job.before["driver_info"]
        job.before["switch_ports"] = node_model.links_view(node_model.port_links(ports))
        job.after["switch_ports"] = node_model.links_view(dict(node_model.port_links(ports), **links))
        if steps:
            job.after["provision_state"] = "available"
        if plan[1]:
            problem = node_model.relink_problem(node)
            if problem:
                raise Conflict(
                    obj, "its switch ports differ (%s) but %s" % (", ".join(change[1] for change in plan[1]), problem)
                )
        job.changed = bool(ops or missing or trait_change or steps or plan[1])
        job.status = "updated" if job.changed else "unchanged"
        if not job.changed or not self.writer.change("update node %s" % name):
            return
        if ops:
            node = self._req("patch", "/nodes/%s" % node["uuid"], obj, json=ops)
        self._describe(node, traits if trait_change else None, plan, obj)
        self._provide(node, obj)

    def _forget(self, node: dict, uuid: str, name: str, obj: str) -> None:
        """Delete the node this run created (its ports go with it)."""
        self._req("delete", "/nodes/%s" % node["uuid"], obj)
        with self.lock:
            self.by_uuid.pop(uuid, None)
            self.by_name.pop(name, None)

    def _links(self, job: Any) -> dict:
        """Each NIC's switch port: the owner's (option ``hosts[].nics``), else the BMC's where Ironic would accept
        it (a BMC's that it would refuse is left out, with a warning)."""
        reported = {}
        for mac, link in (getattr(job, "reported_links", None) or {}).items():
            problem = node_model.link_problem(link)
            if problem:
                job.warning = "%s: the switch port the BMC reports for NIC %s is not recorded: %s" % (
                    job.label,
                    mac,
                    problem,
                )
            else:
                reported[mac] = node_model.normal_link(link)
        return node_model.node_links(job.facts, reported, node_model.owner_links(job.spec.get("nics")))

    def _describe(self, node: dict, traits: list | None, plan: tuple, obj: str) -> None:
        """The node's missing ports, the switch ports of its ports (``plan``: :func:`port_plan`) and its traits.

        Ironic changes a port's switch port only while its node is enrolled, manageable or in maintenance: an
        ``available`` node is put in maintenance for the change and taken out of it again."""
        create, update = plan
        for body in create:
            self._req(
                "post", "/ports", "port %s of %s" % (body["address"], obj), json=dict(body, node_uuid=node["uuid"])
            )
        if update:
            pause = node.get("provision_state") == "available" and not node.get("maintenance")
            if pause:
                self._req(
                    "put", "/nodes/%s/maintenance" % node["uuid"], obj, json={"reason": "host_register: switch ports"}
                )
            try:
                for uuid, mac, link in update:
                    op = {"op": "add", "path": "/local_link_connection", "value": link}
                    self._req("patch", "/ports/%s" % uuid, "port %s of %s" % (mac, obj), json=[op])
            finally:
                if pause:
                    self._req("delete", "/nodes/%s/maintenance" % node["uuid"], obj)
        if traits is not None:
            self._req("put", "/nodes/%s/traits" % node["uuid"], obj, json={"traits": traits})

    def _provide(self, node: dict, obj: str) -> None:
        """Bring the node to available (a failure leaves it registered, with Ironic's reason; a rerun goes on)."""
        steps = node_model.provision_steps(node.get("provision_state"))
        if steps is None:
            return
        for action, reached in steps:
            self._req("put", "/nodes/%s/states/provision" % node["uuid"], obj, json={"target": action})
            self._wait(node["uuid"], reached, obj)

    def _wait(self, uuid: str, state: str, obj: str) -> dict:
        """Poll the node until it settles in ``state`` (the one wait loop, at most every 3 s)."""
        path = "/nodes/%s?fields=provision_state,target_provision_state,last_error" % uuid

        return self.client().poll(
            lambda: self._req("get", path, obj),
            lambda node: node.get("provision_state") == state and not node.get("target_provision_state"),
            self.wait_timeout,
            obj,
            failed=lambda node: stopped_on_the_way(node, state),
            describe=lambda node: "not %s (now %s)" % (state, node.get("provision_state")),
            longest=LONGEST_POLL,
        )


def _scrub(text: Any) -> str:
    """Ironic errors may quote the BMC URL: keep the cause, drop URLs."""
    return re.sub(r"[a-z][a-z0-9+.-]*://\S+", "<bmc>", str(text or ""))[:500]


def stopped_on_the_way(node: dict, state: str) -> str | None:
    """Why a node on its way to ``state`` stopped (Ironic's ``last_error``, scrubbed), or ``None`` if it did not.

    A node stopped when nothing is under way (no target) or when it is in a failure state, which keeps the
    target of what failed (model.FAILURE_STATES), and Ironic recorded an error."""
    if (in_failure_state(node) or not node.get("target_provision_state")) and node.get("last_error"):
        return "stopped in %s on the way to %s: %s" % (
            node.get("provision_state"),
            state,
            _scrub(node.get("last_error")),
        )
    return None
