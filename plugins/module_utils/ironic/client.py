# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The one Ironic client of the collection: every Ironic request goes through :class:`Ironic`.

- Requests go through the connection's baremetal adapter with the
  collection's microversion (:data:`model.IRONIC_MICROVERSION`, written once),
  as the caller's own token: with a project-scoped token Ironic itself
  filters nodes, allocations and ports to what the project owns or leases, so
  nothing is listed and then filtered on the client (which is what
  openstacksdk does for ``owner``/``lessee``).
- Lists send their filters to the server, ask only for the ``fields`` the
  caller needs, and follow Ironic's ``next`` links to the last page (a fleet
  larger than Ironic's ``[api] max_limit`` is read whole).
- openstacksdk retries every 409 with a back-off of up to 15 s; here a 409
  that means "node locked by the conductor", a 503, sqlite's "database is
  locked" and a 500 saying Ironic's database server went away (restarted) are
  retried briefly and any other error (a name already taken, a state
  transition refused) is reported at once.
- Waiting is :func:`common.polling.poll` (the collection's one wait loop) on
  this client's clock; openstacksdk's ``wait=True`` polls every 2 s.
- Every failure becomes a :class:`errors.TenancyError` that names the object
  (``node n-3``, ``claim web-0``) and carries Ironic's own message, through
  the collection's one status table and error-body parser (``common/errors``);
  a connection refused or cut names the service (Ironic, or Keystone when the
  token was being fetched) and its URL, and is marked ``service_unreachable``: a wait
  reads again until the service is back (a restart) or its time runs out.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common import polling
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    BackendError,
    InvalidInput,
    api_message,
    from_exception,
    status_error,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.connection import (
    openstack_connection,
    request_failure,
    response_body,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.model import (
    ALLOCATION_FIELDS,
    INSTANCE_NAME_MICROVERSION,
    IRONIC_MICROVERSION,
    NODE_FIELDS,
    PORT_FIELDS,
)

__all__ = ["INSTANCE_NAME_MICROVERSION", "IRONIC_MICROVERSION", "Ironic", "node_settled", "node_where"]

LOCK_RETRY_SECONDS = 20.0
OK = (200, 201, 202, 204)


def _message(response: Any) -> str:
    """Ironic's error text from a response (its ``faultstring``), else the body or the reason."""
    message = api_message(getattr(response, "content", None) or b"")
    if message:
        return message
    text = (getattr(response, "text", "") or "").strip()
    return text[:500] or getattr(response, "reason", None) or "HTTP %s" % response.status_code


#: Ironic's 500 answers when its database server went away (restarted, failed over): the request's transaction
#: failed, a new connection will be made for the next one
_DATABASE_GONE = (
    "server closed the connection unexpectedly",
    "terminating connection due to administrator command",
    "could not connect to server",
    "connection refused",
    "dbconnectionerror",
    "connection to server at",
)


def _database_gone(status: int, message: str) -> bool:
    lowered = message.lower()
    return status == 500 and any(words in lowered for words in _DATABASE_GONE)


def _transient(status: int, message: str) -> bool:
    """Whether an error answer is worth retrying as it is: a node locked by the
    conductor (409), an unavailable service (503), a busy sqlite or a database
    server gone away (500)."""
    lowered = message.lower()
    if status == 409:
        return "locked" in lowered or "reserved" in lowered
    if status == 500:
        return "database is locked" in lowered or _database_gone(status, message)
    return status == 503


def _query(params: Iterable[tuple[str, Any]]) -> str:
    items = []
    for key, value in params:
        if value is None:
            continue
        text = ",".join(value) if isinstance(value, (list, tuple)) else value
        items.append("%s=%s" % (key, text))
    return "?" + "&".join(items) if items else ""


class Ironic:
    """Ironic, as seen by the credentials of one connection."""

    def __init__(
        self,
        conn: Any,
        microversion: str = IRONIC_MICROVERSION,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.conn = conn
        self.api = conn.baremetal
        #: seconds of the connection's api_timeout (None: openstacksdk's default, no limit)
        self.timeout = getattr(getattr(conn, "config", None), "config", {}).get("api_timeout")
        # openstacksdk would retry every 409 and 503 up to 5 times (15 s of
        # back-off): a taken name or a refused transition must fail at once.
        self.api.status_code_retries = 0
        self.microversion = microversion
        self.sleep = sleep
        self.clock = clock
        self.requests = 0
        self._count_lock = threading.Lock()

    @classmethod
    def from_params(cls, params: dict) -> Ironic:
        return cls(openstack_connection(params))

    # -------------------------------------------------------------- identity
    @property
    def project_id(self) -> str | None:
        """The project of the caller's token, or ``None`` (system or domain scope)."""
        try:
            return self.conn.current_project_id
        except Exception as exc:  # keystoneauth errors while fetching a token
            raise from_exception("OpenStack credentials", exc) from exc

    def require_project(self, what: str) -> str:
        project = self.project_id
        if not project:
            raise InvalidInput(
                what,
                "needs credentials scoped to the tenant's project (project_name or project_id), "
                "not system- or domain-scoped ones",
            )
        return project

    # -------------------------------------------------------------- requests
    def request(
        self,
        method: str,
        path: str,
        obj: str,
        body: Any = None,
        ok: Sequence[int] = OK,
        missing_ok: bool = False,
        microversion: str | None = None,
    ) -> Any:
        """One API call; returns the decoded body (or ``None``).

        404 gives ``None`` when ``missing_ok``; a node lock (409), an
        unavailable service (503) or a busy sqlite database (500) is retried
        for a few seconds; anything else raises the TenancyError for the
        status (:func:`errors.status_error`), about ``obj``.
        ``microversion`` overrides the collection's for this call.
        """
        deadline = self.clock() + LOCK_RETRY_SECONDS
        delay = 0.1
        while True:
            with self._count_lock:
                self.requests += 1
            kwargs: dict[str, Any] = {"microversion": microversion or self.microversion, "raise_exc": False}
            if body is not None:
                kwargs["json"] = body
            try:
                response = getattr(self.api, method)(path, **kwargs)
            except Exception as exc:  # connection refused, TLS, token errors, time-outs
                raise request_failure(obj, exc, "%s %s" % (method.upper(), path), self.timeout) from exc
            status = response.status_code
            if status in ok:
                return response_body(response)
            if status == 404 and missing_ok:
                return None
            message = _message(response)
            if _transient(status, message) and self.clock() < deadline:
                self.sleep(delay)
                delay = min(delay * 2, 1.0)
                continue
            if _database_gone(status, message):
                # the driver's first line, not the SQL statement and its parameters; a wait reads again
                reason = message.strip().splitlines()[0]
                raise BackendError(
                    obj,
                    "Ironic cannot reach its database: %s (HTTP %s)" % (reason, status),
                    {"status": status, "service_unreachable": True},
                )
            raise status_error(obj, status, message)

    def list(
        self,
        resource: str,
        obj: str,
        params: Iterable[tuple[str, Any]] = (),
        fields: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> list[dict]:
        """Every item of a collection (``nodes``, ``allocations``, ``ports``),
        following ``next`` links; ``limit`` is the page size asked for (Ironic
        caps it at its ``[api] max_limit``)."""
        params = list(params)
        if fields:
            params.append(("fields", list(fields)))
        if limit:
            params.append(("limit", limit))
        url = "/%s%s" % (resource, _query(params))
        items: list[dict] = []
        while url:
            page = self.request("get", url, obj) or {}
            items.extend(page.get(resource) or [])
            url = page.get("next")
        return items

    # -------------------------------------------------------------- nodes
    def get_node(self, ident: str, fields: Sequence[str] = NODE_FIELDS, missing_ok: bool = False) -> dict | None:
        return self.request(
            "get", "/nodes/%s%s" % (ident, _query([("fields", list(fields))])), "node %s" % ident, missing_ok=missing_ok
        )

    def list_nodes(self, fields: Sequence[str] = NODE_FIELDS, **filters: Any) -> list[dict]:
        params = sorted((k, v) for k, v in filters.items() if v is not None)
        return self.list("nodes", "nodes", params, fields)

    def patch_node(self, ident: str, ops: Iterable[dict], label: str | None = None) -> dict | None:
        return self.request("patch", "/nodes/%s" % ident, "node %s" % (label or ident), body=list(ops))

    def set_provision_state(self, ident: str, target: str, label: str | None = None, configdrive: Any = None) -> None:
        body = {"target": target}
        if configdrive is not None:
            body["configdrive"] = configdrive
        self.request("put", "/nodes/%s/states/provision" % ident, "node %s" % (label or ident), body=body)

    def set_power_state(self, ident: str, target: str, label: str | None = None) -> None:
        self.request("put", "/nodes/%s/states/power" % ident, "node %s" % (label or ident), body={"target": target})

    def clear_instance_name(self, ident: str, label: str | None = None) -> bool:
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
    def get_allocation(self, ident: str, fields: Sequence[str] = ALLOCATION_FIELDS) -> dict | None:
        return self.request(
            "get",
            "/allocations/%s%s" % (ident, _query([("fields", list(fields))])),
            "claim %s" % ident,
            missing_ok=True,
        )

    def list_allocations(self, fields: Sequence[str] = ALLOCATION_FIELDS, **filters: Any) -> list[dict]:
        params = sorted((k, v) for k, v in filters.items() if v is not None)
        return self.list("allocations", "claims", params, fields)

    def create_allocation(
        self,
        name: str,
        resource_class: str,
        traits: Iterable[str] | None = None,
        candidate_nodes: Iterable[str] | None = None,
        extra: dict | None = None,
    ) -> dict:
        body = {"name": name, "resource_class": resource_class}
        if traits:
            body["traits"] = list(traits)
        if candidate_nodes:
            body["candidate_nodes"] = list(candidate_nodes)
        if extra:
            body["extra"] = dict(extra)
        return self.request("post", "/allocations", "claim %s" % name, body=body)

    def delete_allocation(self, ident: str, label: str | None = None) -> None:
        self.request("delete", "/allocations/%s" % ident, "claim %s" % (label or ident), missing_ok=True)

    # -------------------------------------------------------------- ports
    def list_ports(self, node: str | None = None, fields: Sequence[str] = PORT_FIELDS) -> list[dict]:
        params = [("node", node)] if node else []
        return self.list("ports", "ports", params, fields)

    # -------------------------------------------------------------- VIFs
    def list_vifs(self, ident: str, label: str | None = None) -> list[str]:
        """The IDs of the node's VIFs (Neutron ports attached to it)."""
        body = self.request("get", "/nodes/%s/vifs" % ident, "node %s" % (label or ident)) or {}
        return [vif.get("id") for vif in body.get("vifs") or () if vif.get("id")]

    def attach_vif(self, ident: str, vif: str, label: str | None = None) -> None:
        self.request("post", "/nodes/%s/vifs" % ident, "node %s" % (label or ident), body={"id": vif})

    def detach_vif(self, ident: str, vif: str, label: str | None = None) -> None:
        self.request("delete", "/nodes/%s/vifs/%s" % (ident, vif), "node %s" % (label or ident), missing_ok=True)

    def detach_vifs(self, ident: str, label: str | None = None) -> list[str]:
        """Detach every VIF from the node; their IDs. A lease's end: Ironic detaches the VIFs of a node it undeploys,
        but a node never deployed keeps them, and the next lessee's deployment would bind them, putting its host on
        the previous lessee's network."""
        vifs = self.list_vifs(ident, label)
        for vif in vifs:
            self.detach_vif(ident, vif, label)
        return vifs

    # -------------------------------------------------------------- waiting
    def poll(
        self,
        fetch: Callable[[], Any],
        done: Callable[[Any], bool],
        timeout: float,
        what: str,
        failed: Callable[[Any], str | None] | None = None,
        describe: Callable[[Any], str] | None = None,
        gone: str | None = None,
        longest: float = polling.LONGEST,
        service: str = "Ironic",
    ) -> Any:
        """:func:`common.polling.poll` on this client's clock (the one wait loop); a time-out names ``service``,
        the one that was to finish (ESI-Leap's manager writes some of the node fields waited for)."""
        return polling.poll(
            fetch,
            done,
            timeout,
            what,
            failed=failed,
            describe=describe,
            gone=gone,
            longest=longest,
            sleep=self.sleep,
            clock=self.clock,
            service=service,
        )


def node_settled(node: dict | None, provision_state: str | None = None, power_state: str | None = None) -> bool:
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


def node_where(node: dict | None) -> str:
    if node is None:
        return "the node is gone"
    text = "provision state %s" % node.get("provision_state")
    if node.get("target_provision_state"):
        text += " -> %s" % node["target_provision_state"]
    text += ", power %s" % node.get("power_state")
    if node.get("target_power_state"):
        text += " -> %s" % node["target_power_state"]
    return text
