# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Ironic I/O helpers with a stand-in for openstacksdk's adapter (no network).

The real Ironic is exercised by tests/integration/ironic/; these
tests pin the parts that must not regress silently: error mapping, retries
of node locks only, pagination, polling intervals, and the lease patches.
"""

import json

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common import polling
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    BackendError,
    Conflict,
    Forbidden,
    InvalidInput,
    NotFound,
    WaitTimeout,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import client as IR
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import lease_model as L
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import leases as IL
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.model import CLAIM_KEY, FAILURE_STATES


class Response:
    def __init__(self, status, body=None):
        self.status_code = status
        self._body = body
        self.content = b"" if body is None else json.dumps(body).encode()
        self.text = self.content.decode()
        self.reason = "reason"

    def json(self):
        if self._body is None:
            raise ValueError("no body")
        return self._body


def fault(text):
    return {"error_message": json.dumps({"faultcode": "Client", "faultstring": text, "debuginfo": None})}


class Adapter:
    status_code_retries = 5

    def __init__(self, answers):
        self.answers = list(answers)
        self.calls = []

    def _call(self, method, path, **kwargs):
        self.calls.append((method, path, kwargs))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def get(self, path, **kwargs):
        return self._call("get", path, **kwargs)

    def post(self, path, **kwargs):
        return self._call("post", path, **kwargs)

    def patch(self, path, **kwargs):
        return self._call("patch", path, **kwargs)

    def put(self, path, **kwargs):
        return self._call("put", path, **kwargs)

    def delete(self, path, **kwargs):
        return self._call("delete", path, **kwargs)


class Conn:
    def __init__(self, answers):
        self.baremetal = Adapter(answers)
        self.current_project_id = "p" * 32


class Clock:
    def __init__(self):
        self.now = 0.0
        self.sleeps = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


def client(answers):
    clock = Clock()
    return IR.Ironic(Conn(answers), sleep=clock.sleep, clock=clock), clock


def test_sdk_retries_are_turned_off_and_the_microversion_is_sent():
    ironic, _dummy = client([Response(200, {"uuid": "u"})])
    assert ironic.api.status_code_retries == 0
    assert ironic.get_node("n1", fields=("uuid", "name")) == {"uuid": "u"}
    _method, path, kwargs = ironic.api.calls[0]
    assert path == "/nodes/n1?fields=uuid,name"
    assert kwargs["microversion"] == IR.IRONIC_MICROVERSION and kwargs["raise_exc"] is False


@pytest.mark.parametrize(
    "status, cls",
    [(400, InvalidInput), (403, Forbidden), (404, NotFound), (409, Conflict), (500, BackendError), (406, InvalidInput)],
)
def test_errors_name_the_object_and_carry_ironic_s_message(status, cls):
    ironic, _dummy = client([Response(status, fault("Node n1 could not be found."))])
    with pytest.raises(cls) as info:
        ironic.patch_node("uuid-1", [], label="n1")
    assert info.value.message == "node n1: Node n1 could not be found. (HTTP %d)" % status
    assert info.value.details == {"status": status}


def test_missing_ok():
    ironic, _dummy = client([Response(404, fault("Allocation web-0 could not be found."))])
    assert ironic.get_allocation("web-0") is None


def test_node_locks_are_retried_other_conflicts_are_not():
    locked = fault("Node n1 is locked by host c1, please retry after the current operation is completed.")
    ironic, clock = client([Response(409, locked), Response(503, {}), Response(202)])
    ironic.set_power_state("n1", "power on")
    assert len(ironic.api.calls) == 3 and clock.sleeps == [0.1, 0.2]
    ironic, clock = client([Response(409, fault("An allocation with name web-0 already exists."))])
    with pytest.raises(Conflict) as info:
        ironic.create_allocation("web-0", "rc")
    assert "already exists" in info.value.cause and clock.sleeps == []


def test_lock_retries_give_up():
    locked = Response(409, fault("Node n1 is locked by host c1"))
    ironic, clock = client([locked] * 100)
    with pytest.raises(Conflict):
        ironic.set_power_state("n1", "power on")
    assert clock.now >= IR.LOCK_RETRY_SECONDS


def test_connection_errors_are_backend_errors():
    ironic, _dummy = client([OSError("connection refused")])
    with pytest.raises(BackendError) as info:
        ironic.get_node("n1")
    assert "connection refused" in info.value.message


class ConnectFailure(Exception):
    """keystoneauth's exception for a connection refused or cut (by name: no library is imported)."""


@pytest.mark.parametrize(
    "text, cause",
    [
        (
            "Unable to establish connection to http://127.0.0.1:6385/v1/nodes/n1?fields=uuid: "
            "HTTPConnectionPool(host='127.0.0.1', port=6385): Max retries exceeded with url: /v1/nodes/n1 (Caused by "
            "NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f>: Failed to establish a new "
            "connection: [Errno 111] Connection refused'))",
            "Ironic at http://127.0.0.1:6385/v1/nodes/n1 cannot be reached: [Errno 111] Connection refused",
        ),
        (
            "Unable to establish connection to http://127.0.0.1:5000/v3/auth/tokens: ('Connection aborted.', "
            "RemoteDisconnected('Remote end closed connection without response'))",
            "Keystone at http://127.0.0.1:5000/v3/auth/tokens cannot be reached: ('Connection aborted.', "
            "RemoteDisconnected('Remote end closed connection without response'))",
        ),
    ],
)
def test_a_connection_refused_or_cut_names_the_service_and_is_unreachable(text, cause):
    ironic, _dummy = client([ConnectFailure(text)])
    with pytest.raises(BackendError) as info:
        ironic.get_node("n1")
    assert info.value.message == "node n1: " + cause
    assert info.value.details == {"service_unreachable": True}


def test_a_wait_reads_again_while_ironic_cannot_be_reached():
    refused = ConnectFailure("Unable to establish connection to http://i/v1/nodes/n1: refused")
    ironic, _clock = client([Response(200, {"provision_state": "deploying"}), refused, refused])
    ironic.api.answers.append(Response(200, {"provision_state": "active"}))
    node = ironic.poll(lambda: ironic.get_node("n1"), lambda n: n["provision_state"] == "active", 60, "node n1")
    assert node == {"provision_state": "active"} and len(ironic.api.calls) == 4


GONE = (
    "(psycopg2.OperationalError) server closed the connection unexpectedly\n\tThis probably means the server "
    "terminated abnormally\n[SQL: SELECT conductors.hostname FROM conductors]\n[parameters: {}]"
)


def test_a_database_server_gone_away_is_retried():
    ironic, clock = client([Response(500, fault(GONE)), Response(200, {"nodes": []})])
    assert ironic.list_nodes(fields=("uuid",)) == []
    assert clock.sleeps == [0.1]


def test_a_database_server_away_for_long_names_ironic_s_database_not_the_sql():
    ironic, clock = client([Response(500, fault(GONE))] * 100)
    with pytest.raises(BackendError) as info:
        ironic.get_node("n1")
    assert info.value.message == (
        "node n1: Ironic cannot reach its database: (psycopg2.OperationalError) server closed the connection "
        "unexpectedly (HTTP 500)"
    )
    assert info.value.details == {"status": 500, "service_unreachable": True}
    assert clock.now >= IR.LOCK_RETRY_SECONDS


def test_a_busy_sqlite_database_is_retried():
    busy = Response(500, fault("(sqlite3.OperationalError) database is locked"))
    ironic, clock = client([busy, Response(200, {"nodes": []})])
    assert ironic.list_nodes(fields=("uuid",)) == []
    assert clock.sleeps == [0.1]


def test_lists_ask_for_a_page_size_and_follow_every_page():
    pages = [
        Response(200, {"nodes": [{"uuid": str(i)}], "next": "http://ironic/v1/nodes?limit=1&marker=%d" % i})
        for i in range(4)
    ] + [Response(200, {"nodes": []})]
    ironic, _dummy = client(pages)
    assert [n["uuid"] for n in ironic.list("nodes", "nodes", fields=("uuid",), limit=1)] == ["0", "1", "2", "3"]
    assert ironic.api.calls[0][1] == "/nodes?fields=uuid&limit=1"
    assert ironic.requests == 5


def test_lists_follow_next_links_and_send_filters():
    ironic, _dummy = client(
        [
            Response(200, {"nodes": [{"uuid": "1"}], "next": "http://ironic/v1/nodes?marker=1"}),
            Response(200, {"nodes": [{"uuid": "2"}]}),
        ]
    )
    nodes = ironic.list_nodes(fields=("uuid",), resource_class="rc", owner=None)
    assert nodes == [{"uuid": "1"}, {"uuid": "2"}]
    assert ironic.api.calls[0][1] == "/nodes?resource_class=rc&fields=uuid"
    assert ironic.api.calls[1][1] == "http://ironic/v1/nodes?marker=1"


def test_poll_intervals_start_short_and_grow_to_a_cap():
    ironic, clock = client([])
    values = iter(range(100))
    result = ironic.poll(lambda: next(values), lambda v: v >= 60, 600, "node n1")
    assert result == 60
    fast = round(polling.FAST_SECONDS / polling.FIRST)
    assert clock.sleeps[:fast] == [polling.FIRST] * fast
    assert clock.sleeps[fast + 1] > polling.FIRST
    assert all(b >= a for a, b in zip(clock.sleeps, clock.sleeps[1:]))
    assert max(clock.sleeps) == polling.LONGEST


def test_poll_timeout_and_failure():
    ironic, clock = client([])
    with pytest.raises(WaitTimeout) as info:
        ironic.poll(lambda: "deploying", lambda v: False, 3, "node n1", describe=lambda v: "state " + v)
    assert info.value.message == "node n1: not done by Ironic after 3 seconds: state deploying"
    assert clock.now == pytest.approx(3)
    with pytest.raises(BackendError) as info:
        ironic.poll(lambda: "deploy failed", lambda v: False, 3, "node n1", failed=lambda v: "it failed")
    assert info.value.message == "node n1: it failed"
    # timeout 0: look once
    ironic, clock = client([])
    with pytest.raises(WaitTimeout):
        ironic.poll(lambda: 1, lambda v: False, 0, "x")
    assert clock.sleeps == []


def test_project_scope_is_required():
    ironic, _dummy = client([])
    assert ironic.require_project("claim x") == "p" * 32
    ironic.conn.current_project_id = None
    with pytest.raises(InvalidInput) as info:
        ironic.require_project("claim x")
    assert "scoped" in info.value.cause


# ------------------------------------------------------------------ lease patches


def leased_node(**extra):
    base = {
        "uuid": "u1",
        "name": "n1",
        "lessee": "a" * 32,
        "provision_state": "available",
        "target_provision_state": None,
        "instance_info": {},
        "instance_uuid": None,
        "properties": {
            L.LEASES_KEY: [
                {
                    "id": "aaaaaaaaaaaa",
                    "project": "a" * 32,
                    "start": "2026-01-01T00:00:00Z",
                    "end": "2026-01-02T00:00:00Z",
                }
            ]
        },
    }
    base.update(extra)
    return base


def test_ending_access_to_a_deployed_node_undeploys_it():
    ops, undeploy = IL.end_access_patch(
        leased_node(provision_state="active", instance_uuid="x", instance_info={"image_source": "x"}), []
    )
    assert ops == [
        {"op": "remove", "path": "/properties/" + L.LEASES_KEY},
        {"op": "remove", "path": "/lessee"},
        {"op": "add", "path": "/instance_info/" + IL.ENDED_KEY, "value": "a" * 32},
    ]
    assert undeploy is True


def test_a_node_whose_access_ended_is_owed_its_undeployment_until_ironic_clears_instance_info():
    ended = {"image_source": "x", IL.ENDED_KEY: "a" * 32}
    assert IL.undeployment_owed(leased_node(lessee=None, provision_state="active", instance_info=ended))
    assert IL.undeployment_owed(leased_node(lessee=None, provision_state="deploy failed", instance_info=ended))
    assert not IL.undeployment_owed(leased_node(lessee=None, provision_state="cleaning", instance_info=ended))
    assert not IL.undeployment_owed(leased_node(lessee=None, provision_state="available", instance_info={}))
    assert not IL.undeployment_owed(leased_node(provision_state="active", instance_info={"image_source": "x"}))
    # a second patch (the rerun's) keeps the lessee the first one recorded
    ops, undeploy = IL.end_access_patch(leased_node(lessee=None, provision_state="active", instance_info=ended), None)
    assert {"op": "add", "path": "/instance_info/" + IL.ENDED_KEY, "value": "a" * 32} in ops and undeploy


def test_ending_access_to_a_deployed_node_takes_the_claims_name_off_it_in_the_same_patch():
    marker = {"name": "web", "allocation": "x", "project": "a" * 32}
    node = leased_node(
        provision_state="active", instance_uuid="x", instance_info={"image_source": "x", CLAIM_KEY: marker}
    )
    ops, undeploy = IL.end_access_patch(node, [], new_lessee="b" * 32)
    assert {"op": "remove", "path": "/instance_info/" + CLAIM_KEY} in ops
    assert {"op": "add", "path": "/lessee", "value": "b" * 32} in ops and undeploy is True


def test_ending_access_to_a_claimed_node_removes_its_allocation():
    ops, undeploy = IL.end_access_patch(leased_node(instance_uuid="alloc", instance_info={"image_source": "x"}), [])
    assert {"op": "remove", "path": "/instance_uuid"} in ops
    assert {"op": "remove", "path": "/instance_info"} in ops
    assert undeploy is False


def test_handing_over_sets_the_next_lessee():
    nxt = [{"id": "bbbbbbbbbbbb", "project": "b" * 32, "start": "2026-01-02T00:00:00Z", "end": None}]
    ops, dummy = IL.end_access_patch(leased_node(), nxt)
    assert ops == [
        {"op": "add", "path": "/properties/" + L.LEASES_KEY, "value": nxt},
        {"op": "remove", "path": "/lessee"},
    ]
    ops, _dummy = IL.end_access_patch(leased_node(), nxt, new_lessee="b" * 32)
    assert ops == [
        {"op": "add", "path": "/properties/" + L.LEASES_KEY, "value": nxt},
        {"op": "add", "path": "/lessee", "value": "b" * 32},
    ]


def test_busy():
    assert IL.busy(leased_node()) is None
    assert "deploying -> active" in IL.busy(leased_node(provision_state="deploying", target_provision_state="active"))
    assert IL.busy(leased_node(provision_state="cleaning"))


@pytest.mark.parametrize("state", FAILURE_STATES)
def test_a_node_in_a_failure_state_is_not_busy_whatever_its_target(state):
    """Ironic keeps the target of what failed (deploy failed -> active, clean failed -> available...): nothing
    is under way, so ending a lease must not wait for it."""
    assert IL.busy(leased_node(provision_state=state, target_provision_state="active")) is None
    assert IL.busy(leased_node(provision_state=state, target_provision_state="available")) is None


def test_lessee_must_exist_only_to_be_leased():
    class Identity:
        def find_project(self, name, ignore_missing=True):
            return None

    ironic, _dummy = client([])
    ironic.conn.identity = Identity()
    with pytest.raises(NotFound) as info:
        IL.resolve_lessee(ironic, "a" * 32)
    assert info.value.message == "option project: project %s: does not exist in Keystone" % ("a" * 32)
    # ending or listing the leases of a project deleted since
    assert IL.resolve_lessee(ironic, "a" * 32, state="absent") == ("a" * 32, "unknown")
    with pytest.raises(NotFound):
        IL.resolve_lessee(ironic, "tenant-x", state="absent")
    assert IL.resolve_lessee(ironic, "a" * 32, verify=False) == ("a" * 32, "skipped")
    assert IL.resolve_lessee(ironic, None) == (None, None)
