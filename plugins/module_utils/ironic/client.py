# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Ironic I/O through openstacksdk: nodes, allocations, ports, waiting.

- Requests go through the connection's baremetal adapter with the
  collection's microversion, as the caller's own token: with a
  project-scoped token Ironic itself filters nodes, allocations and ports to
  what the project owns or leases, so nothing is listed and then filtered on
  the client (which is what openstacksdk does for ``owner``/``lessee``).
- Lists send their filters to the server, ask only for the ``fields`` the
  caller needs, and follow Ironic's ``next`` links.
- openstacksdk retries every 409 with a back-off of up to 15 s; here a 409
  that means "node locked by the conductor" is retried briefly and any other
  409 (a name already taken, a state transition refused) is reported at once.
- :meth:`Ironic.poll` waits with a short interval of its own that grows
  slowly (0.05 s, then x1.25 up to 1 s): a fake-hardware deployment is
  seen within tens of milliseconds of finishing, and a real one costs at most
  one request per second.  openstacksdk's ``wait=True`` polls every 2 s.
- Every failure becomes a :class:`errors.TenancyError` that names the object
  (``node n-3``, ``claim web-0``) and carries Ironic's own message.
"""

import json
import time

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    BackendError,
    Conflict,
    Forbidden,
    InvalidInput,
    NotFound,
    WaitTimeout,
    from_exception,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.connection import (
    IRONIC_MICROVERSION,
    openstack_connection,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.model import (
    ALLOCATION_FIELDS,
    NODE_FIELDS,
    PORT_FIELDS,
)

# Waiting: every POLL_FIRST seconds for the first POLL_FAST_SECONDS (fake-hardware
# and quick steps finish within it), then intervals growing by POLL_FACTOR to POLL_MAX.
POLL_FIRST = 0.05
POLL_FAST_SECONDS = 1.0
POLL_FACTOR = 1.25
POLL_MAX = 1.0
LOCK_RETRY_SECONDS = 20.0
# instance_name (a display name next to instance_info) exists from this microversion on.
INSTANCE_NAME_MICROVERSION = "1.104"

_STATUS_ERRORS = {400: InvalidInput, 403: Forbidden, 404: NotFound, 409: Conflict, 406: InvalidInput}


def _fault(response):
    """Ironic's error text from a response body (``faultstring``), or the reason."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        message = body.get("error_message")
        if isinstance(message, str):
            try:
                inner = json.loads(message)
            except ValueError:
                inner = None
            if isinstance(inner, dict) and inner.get("faultstring"):
                return str(inner["faultstring"])
            return message
        if isinstance(message, dict) and message.get("faultstring"):
            return str(message["faultstring"])
    text = (getattr(response, "text", "") or "").strip()
    return text[:500] or getattr(response, "reason", None) or "HTTP %s" % response.status_code


def _is_lock_conflict(status, message):
    lowered = message.lower()
    return status == 409 and ("locked" in lowered or "reserved" in lowered)


def _query(params):
    items = []
    for key, value in params:
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            value = ",".join(value)
        items.append("%s=%s" % (key, value))
    return "?" + "&".join(items) if items else ""


class Ironic:
    """Ironic, as seen by the credentials of one connection."""

    def __init__(self, conn, microversion=IRONIC_MICROVERSION, sleep=time.sleep, clock=time.monotonic):
        self.conn = conn
        self.api = conn.baremetal
        # openstacksdk would retry every 409 and 503 up to 5 times (15 s of
        # back-off): a taken name or a refused transition must fail at once.
        self.api.status_code_retries = 0
        self.microversion = microversion
        self.sleep = sleep
        self.clock = clock
        self.requests = 0

    @classmethod
    def from_params(cls, params):
        return cls(openstack_connection(params))

    # -------------------------------------------------------------- identity
    @property
    def project_id(self):
        """The project of the caller's token, or ``None`` (system or domain scope)."""
        try:
            return self.conn.current_project_id
        except Exception as exc:  # keystoneauth errors while fetching a token
            raise from_exception("OpenStack credentials", exc)

    def require_project(self, what):
        project = self.project_id
        if not project:
            raise InvalidInput(
                what,
                "needs credentials scoped to the tenant's project (project_name or project_id), "
                "not system- or domain-scoped ones",
            )
        return project

    # -------------------------------------------------------------- requests
    def request(self, method, path, obj, body=None, ok=(200, 201, 202, 204), missing_ok=False, microversion=None):
        """One API call; returns the decoded body (or ``None``).

        404 gives ``None`` when ``missing_ok``; a node lock (409) or an
        unavailable service (503) is retried for a few seconds; anything else
        raises the TenancyError for the status, about ``obj``.
        ``microversion`` overrides the collection's for this call.
        """
        deadline = self.clock() + LOCK_RETRY_SECONDS
        delay = 0.1
        while True:
            self.requests += 1
            kwargs = dict(microversion=microversion or self.microversion, raise_exc=False)
            if body is not None:
                kwargs["json"] = body
            try:
                response = getattr(self.api, method)(path, **kwargs)
            except Exception as exc:  # connection refused, TLS, token errors
                raise from_exception(obj, exc)
            status = response.status_code
            if status in ok:
                if status == 204 or not (response.content or b"").strip():
                    return None
                try:
                    return response.json()
                except ValueError:
                    return None
            if status == 404 and missing_ok:
                return None
            message = _fault(response)
            if (_is_lock_conflict(status, message) or status == 503) and self.clock() < deadline:
                self.sleep(delay)
                delay = min(delay * 2, 1.0)
                continue
            cls = _STATUS_ERRORS.get(status, BackendError)
            raise cls(obj, "%s (HTTP %s)" % (message, status), {"status": status})

    def list(self, resource, obj, params=(), fields=None):
        """Every item of a collection (``nodes``, ``allocations``, ``ports``),
        following ``next`` links."""
        params = list(params)
        if fields:
            params.append(("fields", list(fields)))
        url = "/%s%s" % (resource, _query(params))
        items = []
        while url:
            page = self.request("get", url, obj) or {}
            items.extend(page.get(resource) or [])
            url = page.get("next")
        return items

    # -------------------------------------------------------------- nodes
    def get_node(self, ident, fields=NODE_FIELDS, missing_ok=False):
        return self.request(
            "get", "/nodes/%s%s" % (ident, _query([("fields", list(fields))])), "node %s" % ident, missing_ok=missing_ok
        )

    def list_nodes(self, fields=NODE_FIELDS, **filters):
        params = sorted((k, v) for k, v in filters.items() if v is not None)
        return self.list("nodes", "nodes", params, fields)

    def patch_node(self, ident, ops, label=None):
        return self.request("patch", "/nodes/%s" % ident, "node %s" % (label or ident), body=list(ops))

    def set_provision_state(self, ident, target, label=None, configdrive=None):
        body = {"target": target}
        if configdrive is not None:
            body["configdrive"] = configdrive
        self.request("put", "/nodes/%s/states/provision" % ident, "node %s" % (label or ident), body=body)

    def set_power_state(self, ident, target, label=None):
        self.request("put", "/nodes/%s/states/power" % ident, "node %s" % (label or ident), body={"target": target})

    def clear_instance_name(self, ident, label=None):
        """Remove the node's ``instance_name`` (API 1.104, Ironic 2025.2+), which
        whoever may write ``instance_info`` may set.  Returns whether one was
        removed; an Ironic without the field has nothing to clear."""
        obj = "node %s" % (label or ident)
        try:
            node = self.request(
                "get",
                "/nodes/%s?fields=instance_name" % ident,
                obj,
                missing_ok=True,
                microversion=INSTANCE_NAME_MICROVERSION,
            )
        except InvalidInput:  # 406 (or 400): this Ironic has no instance_name
            return False
        if not node or not node.get("instance_name"):
            return False
        self.request(
            "patch",
            "/nodes/%s" % ident,
            obj,
            body=[{"op": "remove", "path": "/instance_name"}],
            microversion=INSTANCE_NAME_MICROVERSION,
        )
        return True

    # -------------------------------------------------------------- allocations
    def get_allocation(self, ident, fields=ALLOCATION_FIELDS):
        return self.request(
            "get",
            "/allocations/%s%s" % (ident, _query([("fields", list(fields))])),
            "claim %s" % ident,
            missing_ok=True,
        )

    def list_allocations(self, fields=ALLOCATION_FIELDS, **filters):
        params = sorted((k, v) for k, v in filters.items() if v is not None)
        return self.list("allocations", "claims", params, fields)

    def create_allocation(self, name, resource_class, traits=None, candidate_nodes=None, extra=None):
        body = {"name": name, "resource_class": resource_class}
        if traits:
            body["traits"] = list(traits)
        if candidate_nodes:
            body["candidate_nodes"] = list(candidate_nodes)
        if extra:
            body["extra"] = dict(extra)
        return self.request("post", "/allocations", "claim %s" % name, body=body)

    def delete_allocation(self, ident, label=None):
        self.request("delete", "/allocations/%s" % ident, "claim %s" % (label or ident), missing_ok=True)

    # -------------------------------------------------------------- ports
    def list_ports(self, node=None, fields=PORT_FIELDS):
        params = [("node", node)] if node else []
        return self.list("ports", "ports", params, fields)

    # -------------------------------------------------------------- waiting
    def poll(self, fetch, done, timeout, what, failed=None, describe=None):
        """Call ``fetch()`` until ``done(value)``; return the last value.

        ``failed(value)`` may return a reason to stop early; ``describe(value)``
        says where things stand when the timeout (seconds, ``0``: look once)
        passes.
        """
        started = self.clock()
        deadline = started + max(0, timeout or 0)
        delay = POLL_FIRST
        while True:
            value = fetch()
            if done(value):
                return value
            problem = failed(value) if failed else None
            if problem:
                raise BackendError(what, problem)
            now = self.clock()
            if now >= deadline:
                where = ": %s" % describe(value) if describe else ""
                raise WaitTimeout(what, "not done after %s seconds%s" % (timeout, where))
            self.sleep(min(delay, deadline - now))
            if now - started >= POLL_FAST_SECONDS:
                delay = min(delay * POLL_FACTOR, POLL_MAX)


def node_settled(node, provision_state=None, power_state=None):
    """Whether ``node`` reached the states (and no transition is under way)."""
    if node is None:
        return False
    if provision_state is not None and (
        node.get("provision_state") != provision_state or node.get("target_provision_state")
    ):
        return False
    if power_state is not None and (node.get("power_state") != power_state or node.get("target_power_state")):
        return False
    return True


def node_where(node):
    if node is None:
        return "the node is gone"
    text = "provision state %s" % node.get("provision_state")
    if node.get("target_provision_state"):
        text += " -> %s" % node["target_provision_state"]
    text += ", power %s" % node.get("power_state")
    if node.get("target_power_state"):
        text += " -> %s" % node["target_power_state"]
    return text
