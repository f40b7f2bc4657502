# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The ESI-Leap client with a stand-in for keystoneauth's session (no network): the catalog lookup, URLs, bodies
and error mapping. The real ESI-Leap is exercised by tests/integration/esi/test_esi_leap_offers.py."""

import json

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    BackendError,
    Conflict,
    Forbidden,
    InvalidInput,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import esi_leap_client as C
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import esi_leap_model as M


class Response:
    def __init__(self, status, body=None):
        self.status_code = status
        self._body = body
        self.content = b"" if body is None else json.dumps(body).encode()

    def json(self):
        return self._body


class EndpointNotFound(Exception):
    pass


class ConnectFailure(Exception):
    pass


class Session:
    def __init__(self, endpoint="http://127.0.0.1:7777", answers=()):
        self.endpoint = endpoint
        self.answers = list(answers)
        self.calls = []
        self.lookups = []

    def get_endpoint(self, **kwargs):
        self.lookups.append(kwargs)
        if isinstance(self.endpoint, Exception):
            raise self.endpoint
        return self.endpoint

    def request(self, url, method, **kwargs):
        self.calls.append((method, url, kwargs))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


class Config:
    config = {"api_timeout": None}

    def get_interface(self, service_type):
        return "internal"

    def get_region_name(self, service_type):
        return "RegionOne"


class Conn:
    def __init__(self, session):
        self.session = session
        self.config = Config()


def client(*answers, endpoint="http://127.0.0.1:7777/v1/"):
    esi = C.EsiLeap.from_connection(Conn(Session(endpoint, answers)))
    esi.sleep = esi.conn.session.calls.append  # the retries' pauses, recorded beside the calls
    return esi


def test_the_lease_service_is_found_in_the_catalog_for_the_connections_interface_and_region():
    session = Session("http://127.0.0.1:7777/v1/")
    assert C.lease_endpoint(Conn(session)) == "http://127.0.0.1:7777"
    assert session.lookups == [{"service_type": "lease", "interface": "internal", "region_name": "RegionOne"}]
    assert C.runs_esi_leap(Conn(Session("http://h:1")))


def test_a_cloud_without_esi_leap_is_one_clear_error():
    for endpoint in (None, EndpointNotFound("no lease")):
        assert not C.runs_esi_leap(Conn(Session(endpoint)))
        with pytest.raises(InvalidInput) as error:
            C.EsiLeap.from_connection(Conn(Session(endpoint)))
        assert error.value.message.startswith("OpenStack cloud: does not run ESI-Leap")


def test_keystone_out_of_reach_while_looking_the_service_up_names_keystone():
    failure = ConnectFailure("Unable to establish connection to http://127.0.0.1:5000/v3/auth/tokens: refused")
    with pytest.raises(BackendError) as error:
        C.lease_endpoint(Conn(Session(failure)))
    assert "Keystone" in error.value.message and error.value.details["service_unreachable"]


def test_offers_are_listed_with_filters_and_parsed():
    esi = client(Response(200, {"offers": [{"uuid": "o-1", "resource_uuid": "n", "status": "available"}]}))
    offers = esi.list_offers(resource_class="rc", project_id="p")
    assert [o.uuid for o in offers] == ["o-1"]
    method, url, kwargs = esi.conn.session.calls[0]
    assert (method, url) == ("GET", "http://127.0.0.1:7777/v1/offers?project_id=p&resource_class=rc")
    assert kwargs["raise_exc"] is False and "json" not in kwargs


def test_an_offer_is_created_with_the_wanted_body_and_a_claim_returns_the_lease():
    wanted = M.WantedOffer("n-uuid", "n1", None, None, "tenant-a")
    esi = client(
        Response(201, {"uuid": "o-1", "resource_uuid": "n-uuid", "status": "available"}),
        Response(201, {"uuid": "l-1", "offer_uuid": "o-1", "status": "created"}),
        Response(200),
    )
    assert esi.create_offer(wanted).uuid == "o-1"
    assert esi.claim_offer("o-1", {}).uuid == "l-1"
    esi.delete_lease("l-1")
    calls = esi.conn.session.calls
    assert calls[0][:2] == ("POST", "http://127.0.0.1:7777/v1/offers") and calls[0][2]["json"] == wanted.body()
    assert calls[1][:2] == ("POST", "http://127.0.0.1:7777/v1/offers/o-1/claim") and calls[1][2]["json"] == {}
    assert calls[2][:2] == ("DELETE", "http://127.0.0.1:7777/v1/leases/l-1")
    assert esi.requests == 3


def test_an_overlap_refused_with_esi_leaps_500_names_the_offer():
    wanted = M.WantedOffer("n-uuid", "n1", None, None, None)
    body = {"faultcode": "Server", "faultstring": "Time conflict for ironic_node n-uuid.", "debuginfo": None}
    esi = client(Response(500, body))
    with pytest.raises(Conflict) as error:
        esi.create_offer(wanted)
    assert error.value.message == (
        "offer of node n1 to every project from now to no end: ESI-Leap refused it: its window overlaps another "
        "offer or lease of the node (ESI-Leap: Time conflict for ironic_node n-uuid.; HTTP 500)"
    )


def test_a_missing_offer_or_lease_may_be_none_and_a_forbidden_one_is_an_error():
    body = {"faultcode": "Client", "faultstring": "Access was denied to offer o-1.", "debuginfo": None}
    esi = client(Response(404, {"faultstring": "not found"}), Response(403, body))
    assert esi.get_offer("o-x") is None
    with pytest.raises(Forbidden, match="offer o-1: ESI-Leap does not allow it"):
        esi.get_offer("o-1")


def test_esi_leap_out_of_reach_is_named_and_marked_for_waits():
    failure = ConnectFailure("Unable to establish connection to http://127.0.0.1:7777/v1/leases: refused")
    with pytest.raises(BackendError) as error:
        client(failure).list_leases()
    assert "ESI-Leap at http://127.0.0.1:7777/v1/leases cannot be reached" in error.value.message
    assert error.value.details["service_unreachable"]


FLAKE = {"faultcode": "Server", "faultstring": "Must provide Keystone credentials or user-defined endpoint"}


def test_a_read_answered_with_a_server_error_is_sent_again_twice_at_most():
    lease = {"uuid": "l-1", "status": "deleted", "project_id": "p"}
    esi = client(Response(500, FLAKE), Response(200, lease))
    assert esi.get_lease("l-1").status == "deleted"
    assert [c if isinstance(c, float) else c[0] for c in esi.conn.session.calls] == ["GET", C.GET_RETRY_DELAY, "GET"]
    assert esi.requests == 2
    esi = client(Response(500, FLAKE), Response(502, FLAKE), Response(500, FLAKE))
    with pytest.raises(BackendError, match="HTTP 500"):
        esi.list_leases()
    assert esi.requests == 3


def test_a_write_answered_with_a_server_error_is_never_sent_again():
    esi = client(Response(500, FLAKE))
    with pytest.raises(BackendError):
        esi.delete_lease("l-1")
    assert esi.requests == 1 and len(esi.conn.session.calls) == 1
    esi = client(Response(404, {"faultstring": "not found"}))
    assert esi.get_lease("l-x", missing_ok=True) is None and esi.requests == 1  # a client error is an answer
