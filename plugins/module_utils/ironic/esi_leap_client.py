# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The one ESI-Leap client of the collection: every ESI-Leap request goes through :class:`EsiLeap`.

- It speaks ESI-Leap's REST API (``/v1/offers``, ``/v1/offers/<uuid>/claim``,
  ``/v1/leases``) over the keystoneauth session of the openstacksdk connection
  the Ironic backend already builds (:mod:`connection`): the caller's own
  token, the endpoint of the catalog's ``lease`` service for the connection's
  interface and region.  No ESI client library (esisdk,
  python-esileapclient) is needed.
- :func:`lease_endpoint` tells whether the cloud runs ESI-Leap (the catalog has
  a ``lease`` service); :meth:`EsiLeap.from_connection` refuses a cloud
  without one with one clear error.
- Records are parsed once, here, into :mod:`esi_leap_model`'s typed objects;
  every error answer becomes :func:`esi_leap_model.esi_error` (one message
  naming the object, ESI-Leap's text kept); a connection refused names
  ESI-Leap and its URL and is marked ``service_unreachable``, as Ironic's are.
- Waiting is :func:`common.polling.poll` on this client's clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlencode

from ansible_collections.baremetal.tenancy.plugins.module_utils.common import polling
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    InvalidInput,
    from_exception,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import esi_leap_model as model
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.connection import (
    connect_failure,
    request_failure,
    response_body,
    unreachable,
)

OK = (200, 201, 202, 204)
# A read ESI-Leap answers with a server error is sent again, twice at most, a second apart: ESI-Leap 1.0.0's API
# builds its Ironic client per request and, when a lease has just been deleted, a read of it or of the lease list
# has been seen to fail once with HTTP 500 ("Must provide Keystone credentials or user-defined endpoint",
# ironicclient's AmbiguousAuthSystem) and succeed the next second. Writes are never sent twice (ESI-Leap also
# answers a refused offer or claim with 500).
GET_RETRIES = 2
GET_RETRY_DELAY = 1.0


def _config_value(conn: Any, getter: str) -> str | None:
    config = getattr(conn, "config", None)
    method = getattr(config, getter, None)
    if method is None:
        return None
    try:
        return method(model.SERVICE_TYPE)
    except Exception:  # pylint: disable=broad-except
        return None


def lease_endpoint(conn: Any) -> str | None:
    """The URL of ESI-Leap's API in the connection's catalog (without a trailing ``/v1``), or ``None`` when the
    cloud does not run ESI-Leap (no ``lease`` service for the connection's interface and region)."""
    interface = _config_value(conn, "get_interface") or "public"
    region = _config_value(conn, "get_region_name")
    try:
        url = conn.session.get_endpoint(service_type=model.SERVICE_TYPE, interface=interface, region_name=region)
    except Exception as exc:  # keystoneauth's EndpointNotFound; anything else is a real failure
        if exc.__class__.__name__ in ("EndpointNotFound", "CatalogException", "EmptyCatalog"):
            return None
        if connect_failure(exc):
            raise unreachable("OpenStack credentials", exc, "Keystone") from exc
        raise from_exception("OpenStack service catalog", exc) from exc
    if not url:
        return None
    url = url.rstrip("/")
    if url.endswith("/v1"):
        url = url[: -len("/v1")]
    return url


def runs_esi_leap(conn: Any) -> bool:
    """Whether the cloud of ``conn`` runs ESI-Leap (its catalog has a ``lease`` service)."""
    return lease_endpoint(conn) is not None


class EsiLeap:
    """ESI-Leap, as seen by the credentials of one openstacksdk connection."""

    def __init__(
        self,
        conn: Any,
        endpoint: str,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.conn = conn
        self.endpoint = endpoint.rstrip("/")
        self.sleep = sleep
        self.clock = clock
        #: seconds of the connection's api_timeout (None: no limit)
        self.timeout = getattr(getattr(conn, "config", None), "config", {}).get("api_timeout")
        self.requests = 0

    @classmethod
    def from_connection(cls, conn: Any) -> EsiLeap:
        """The client for ``conn``'s cloud; a cloud without ESI-Leap is an :class:`InvalidInput` saying so."""
        endpoint = lease_endpoint(conn)
        if endpoint is None:
            raise InvalidInput(
                "OpenStack cloud",
                "does not run ESI-Leap: its service catalog has no '%s' service for these credentials' interface "
                "and region" % model.SERVICE_TYPE,
            )
        return cls(conn, endpoint)

    # -------------------------------------------------------------- requests
    def request(
        self,
        method: str,
        path: str,
        obj: str,
        body: Any = None,
        params: Sequence[tuple[str, Any]] = (),
        ok: Sequence[int] = OK,
        missing_ok: bool = False,
    ) -> Any:
        """One call to ``/v1<path>``; returns the decoded body (``None`` when empty, or on a 404 with
        ``missing_ok``); an error answer raises :func:`esi_leap_model.esi_error` about ``obj``."""
        query = [(key, value) for key, value in params if value is not None]
        url = "%s/v1%s%s" % (self.endpoint, path, ("?" + urlencode(query)) if query else "")
        kwargs: dict[str, Any] = {"raise_exc": False, "headers": {"Accept": "application/json"}}
        if body is not None:
            kwargs["json"] = body
        if self.timeout:
            kwargs["timeout"] = self.timeout
        for attempt in range(1 + (GET_RETRIES if method.lower() == "get" else 0)):
            if attempt:
                self.sleep(GET_RETRY_DELAY)
            self.requests += 1
            try:
                response = self.conn.session.request(url, method.upper(), **kwargs)
            except Exception as exc:  # connection refused, TLS, token errors, time-outs
                raise request_failure(obj, exc, "%s %s" % (method.upper(), path), self.timeout, "ESI-Leap") from exc
            if response.status_code < 500:
                break
        status = response.status_code
        if status in ok:
            return response_body(response)
        if status == 404 and missing_ok:
            return None
        raise model.esi_error(obj, status, model.esi_message(response.content or b""))

    # -------------------------------------------------------------- offers
    def list_offers(self, **filters: Any) -> list[model.Offer]:
        """The offers these credentials may see (ESI-Leap's own filtering: a tenant sees the offers made for every
        project, for its own project or made by it), filtered on the server by ``filters``."""
        page = self.request("get", "/offers", "offers", params=sorted(filters.items())) or {}
        return [model.parse_offer(item) for item in page.get("offers") or []]

    def get_offer(self, uuid: str, obj: str | None = None) -> model.Offer | None:
        record = self.request("get", "/offers/%s" % uuid, obj or "offer %s" % uuid, missing_ok=True)
        return None if record is None else model.parse_offer(record)

    def create_offer(self, wish: model.WantedOffer) -> model.Offer:
        return model.parse_offer(self.request("post", "/offers", wish.describe(), body=wish.body(), ok=(200, 201)))

    def delete_offer(self, uuid: str, obj: str | None = None) -> None:
        self.request("delete", "/offers/%s" % uuid, obj or "offer %s" % uuid)

    def claim_offer(self, uuid: str, body: dict, obj: str | None = None) -> model.Lease:
        return model.parse_lease(
            self.request("post", "/offers/%s/claim" % uuid, obj or "claim of offer %s" % uuid, body=body, ok=(200, 201))
        )

    # -------------------------------------------------------------- leases
    def list_leases(self, **filters: Any) -> list[model.Lease]:
        """The leases these credentials may see (ESI-Leap's own filtering: those of the caller's project as the
        lessee or the owner), filtered on the server by ``filters`` (``status="any"``: ended ones too)."""
        page = self.request("get", "/leases", "leases", params=sorted(filters.items())) or {}
        return [model.parse_lease(item) for item in page.get("leases") or []]

    def get_lease(self, uuid: str, obj: str | None = None, missing_ok: bool = False) -> model.Lease | None:
        record = self.request("get", "/leases/%s" % uuid, obj or "lease %s" % uuid, missing_ok=missing_ok)
        return None if record is None else model.parse_lease(record)

    def create_lease(self, body: dict, obj: str) -> model.Lease:
        """The owner's direct lease (``POST /v1/leases``)."""
        return model.parse_lease(self.request("post", "/leases", obj, body=body, ok=(200, 201)))

    def delete_lease(self, uuid: str, obj: str | None = None) -> None:
        self.request("delete", "/leases/%s" % uuid, obj or "lease %s" % uuid)

    # -------------------------------------------------------------- waiting
    def poll(
        self,
        fetch: Callable[[], Any],
        done: Callable[[Any], bool],
        timeout: float,
        what: str,
        failed: Callable[[Any], str | None] | None = None,
        describe: Callable[[Any], str] | None = None,
    ) -> Any:
        """:func:`common.polling.poll` on this client's clock; a time-out names ESI-Leap."""
        return polling.poll(
            fetch,
            done,
            timeout,
            what,
            failed=failed,
            describe=describe,
            sleep=self.sleep,
            clock=self.clock,
            service="ESI-Leap",
        )
