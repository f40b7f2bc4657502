# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""host_register on Ironic: enrol nodes (driver_info, properties, ports, traits) from what the BMCs told, and bring them to manageable or available.

Needs a system-scoped (admin) connection.  Ironic errors may quote the BMC
address; :func:`scrub` keeps them out of results."""

import threading
import time

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    BackendError,
    Conflict,
    WaitTimeout,
    from_exception,
    wrap_errors,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.params import check_timeout
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import registration_model as node_model
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.connection import IRONIC_MICROVERSION
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import registration_model as reg

NODE_FIELDS = (
    "uuid",
    "name",
    "driver",
    "driver_info",
    "resource_class",
    "owner",
    "properties",
    "extra",
    "provision_state",
    "target_provision_state",
    "last_error",
    "traits",
    "maintenance",
)

POLL = 1.0

RETRIES = 8


def _transient(response):
    """Whether an Ironic answer is worth retrying as it is."""
    status = response.status_code
    if status == 503:
        return True
    if status not in (409, 500):
        return False
    text = (response.text or "").lower()
    if status == 409:
        return "locked" in text or "reserved" in text
    return "database is locked" in text


def _raise_for(response, obj):
    from openstack import exceptions as os_exc

    try:
        os_exc.raise_from_response(response)
    except Exception as exc:
        raise from_exception(obj, exc)


class IronicRegistrar:
    parallel = True

    def __init__(
        self,
        connect,
        check_mode,
        owner=None,
        default_resource_class=node_model.DEFAULT_RESOURCE_CLASS,
        interfaces=None,
        update_password=False,
        wait_timeout=600,
    ):
        self.connect = connect
        self.local = threading.local()
        self.check_mode = check_mode
        self.owner = owner
        self.default_resource_class = default_resource_class
        self.interfaces = interfaces or {}
        self.update_password = update_password
        self.wait_timeout = check_timeout(wait_timeout)
        conn = self.conn()
        with wrap_errors("Ironic nodes"):
            response = conn.baremetal.get("/nodes?fields=uuid,name,driver,extra", microversion=IRONIC_MICROVERSION)
            _raise_for(response, "Ironic nodes")
            nodes = response.json().get("nodes", [])
        self.by_uuid, self.by_name = {}, {}
        for node in nodes:
            uuid = reg.normal_uuid((node.get("extra") or {}).get(node_model.SYSTEM_UUID_KEY)) or reg.normal_uuid(
                node.get("uuid")
            )
            self.by_uuid.setdefault(uuid, node)
            if node.get("name"):
                self.by_name[node["name"]] = node
        self.lock = threading.Lock()

    def conn(self):
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = self.connect()
        return conn

    def _req(self, method, path, obj, **kwargs):
        """One Ironic request; a node locked by the conductor (409) or a busy
        database (503, or 500 "database is locked" on sqlite) is retried."""
        conn = self.conn()
        for attempt in range(RETRIES + 1):
            with wrap_errors(obj):
                response = getattr(conn.baremetal, method)(path, microversion=IRONIC_MICROVERSION, **kwargs)
                if attempt < RETRIES and _transient(response):
                    time.sleep(min(0.5 * (attempt + 1), 3))
                    continue
                _raise_for(response, obj)
                return response.json() if response.content else {}

    def _get_node(self, ident, obj):
        return self._req("get", "/nodes/%s" % ident, obj)

    def register(self, job):
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
            name, job.facts, job.classification, info, self.owner, self.default_resource_class, self.interfaces
        )
        job.ref = dict(node=name, node_uuid=(existing or {}).get("uuid") or uuid)
        if existing is None:
            traits = node_model.node_traits([], [], job.classification.traits)
            job.before = {}
            job.after = node_model.node_view(
                dict(desired, provision_state="available"), traits, node_model.missing_ports(job.facts, [])
            )
            job.changed = True
            job.status = "registered"
            if self.check_mode:
                return
            node = self._req("post", "/nodes", obj, json=desired)
            with self.lock:
                self.by_uuid[uuid] = self.by_name[name] = node
            job.ref["node_uuid"] = node["uuid"]
            self._finish(job, node, traits, [], obj)
            return
        node = self._get_node(existing["uuid"], obj)
        ops = node_model.node_patch(node, desired, self.update_password)
        ports = self._req("get", "/ports?node_uuid=%s&fields=address" % node["uuid"], obj).get("ports", [])
        have_macs = [p["address"] for p in ports]
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
        if steps:
            job.after["provision_state"] = "available"
        job.changed = bool(ops or missing or trait_change or steps)
        job.status = "updated" if job.changed else "unchanged"
        if self.check_mode or not job.changed:
            return
        if ops:
            node = self._req("patch", "/nodes/%s" % node["uuid"], obj, json=ops)
        self._finish(job, node, traits if trait_change else None, have_macs, obj)

    def _finish(self, job, node, traits, have_macs, obj):
        for mac in node_model.missing_ports(job.facts, have_macs):
            self._req("post", "/ports", "port %s of %s" % (mac, obj), json={"node_uuid": node["uuid"], "address": mac})
        if traits is not None:
            self._req("put", "/nodes/%s/traits" % node["uuid"], obj, json={"traits": traits})
        steps = node_model.provision_steps(node.get("provision_state"))
        if steps is None:
            return
        for action, reached in steps:
            self._req("put", "/nodes/%s/states/provision" % node["uuid"], obj, json={"target": action})
            self._wait(node["uuid"], reached, obj)

    def _wait(self, uuid, state, obj):
        """Poll the node until it settles in ``state``: 1 s, then backing off to 3 s
        (Ironic's API and conductor often share one process: polls slow it down)."""
        deadline = time.monotonic() + self.wait_timeout
        polls = 0
        while True:
            polls += 1
            node = self._req("get", "/nodes/%s?fields=provision_state,target_provision_state,last_error" % uuid, obj)
            if node.get("provision_state") == state and not node.get("target_provision_state"):
                return node
            if not node.get("target_provision_state") and node.get("last_error"):
                raise BackendError(
                    obj,
                    "stopped in %s on the way to %s: %s"
                    % (node.get("provision_state"), state, _scrub(node.get("last_error"))),
                )
            if time.monotonic() > deadline:
                raise WaitTimeout(
                    obj, "not %s after %ss (now %s)" % (state, self.wait_timeout, node.get("provision_state"))
                )
            time.sleep(min(POLL * (1 + polls // 3), 3.0))


def _scrub(text):
    """Ironic errors may quote the BMC URL: keep the cause, drop URLs."""
    import re

    return re.sub(r"[a-z][a-z0-9+.-]*://\S+", "<bmc>", str(text or ""))[:500]
