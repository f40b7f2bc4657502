# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""ironic/registration.py with a stand-in Ironic that answers in pages (the real one: test_redfish_register.py)."""

import copy
import json
import threading
from types import SimpleNamespace

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import Conflict
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import registration as R
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.model import IRONIC_MICROVERSION
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.redfish.registration_facts import (
    FACTS,
    UUID,
)


class Response:
    def __init__(self, body):
        self.status_code = 200
        self.content = json.dumps(body).encode()
        self.text = self.content.decode()

    def json(self):
        return json.loads(self.content)


class PagedIronic:
    """Serves GET /nodes one node per page, with Ironic's ``next`` links."""

    status_code_retries = 5

    def __init__(self, nodes):
        self.nodes = nodes
        self.calls = []

    def get(self, url, microversion=None, raise_exc=True):
        self.calls.append((url, microversion))
        start = int(url.split("marker=")[1]) + 1 if "marker=" in url else 0
        body = {"nodes": self.nodes[start : start + 1]}
        if start + 1 < len(self.nodes):
            body["next"] = "http://ironic/v1/nodes?fields=uuid,name,driver,extra&limit=1&marker=%d" % start
        return Response(body)


class Conn:
    def __init__(self, adapter):
        self.baremetal = adapter


def test_every_page_of_existing_nodes_is_read():
    nodes = [
        {
            "uuid": "0000000%d-0000-0000-0000-000000000000" % i,
            "name": "host-%d" % i,
            "driver": "redfish",
            "extra": {"system_uuid": "1111111%d-0000-0000-0000-000000000000" % i},
        }
        for i in range(3)
    ]
    adapter = PagedIronic(nodes)
    registrar = R.IronicRegistrar(lambda: Conn(adapter), check_mode=True)
    assert sorted(registrar.by_name) == ["host-0", "host-1", "host-2"]
    assert "11111112-0000-0000-0000-000000000000" in registrar.by_uuid  # on the last page
    assert len(adapter.calls) == 3
    assert adapter.calls[0] == ("/nodes?fields=uuid,name,driver,extra", IRONIC_MICROVERSION)


def test_a_node_in_a_failure_state_stopped_although_its_target_is_set():
    # Ironic's API shows the target of what failed on a node in a failure state (inspect failed -> manageable).
    node = {"provision_state": "inspect failed", "target_provision_state": "manageable", "last_error": "no disks"}
    assert R.stopped_on_the_way(node, "manageable") == "stopped in inspect failed on the way to manageable: no disks"
    cleaning = {"provision_state": "clean failed", "target_provision_state": "available", "last_error": "erase"}
    assert "stopped in clean failed" in R.stopped_on_the_way(cleaning, "available")


def test_a_node_under_way_or_without_an_error_has_not_stopped():
    assert R.stopped_on_the_way({"provision_state": "cleaning", "target_provision_state": "available"}, "x") is None
    busy = {"provision_state": "clean wait", "target_provision_state": "available", "last_error": "old"}
    assert R.stopped_on_the_way(busy, "available") is None
    assert (
        R.stopped_on_the_way({"provision_state": "inspect failed", "target_provision_state": "manageable"}, "m") is None
    )
    settled = {"provision_state": "enroll", "target_provision_state": None, "last_error": "bad credentials"}
    assert R.stopped_on_the_way(settled, "manageable").endswith("bad credentials")


# -- a new node whose ports Ironic refuses is deleted again (issue 34, item 3) ------------------------------------


class Requests:
    """Stands in for IronicRegistrar._req: records each request; ``refuse`` (method, path prefix) gets a 409."""

    def __init__(self, refuse=None, refuse_undo=None):
        self.sent = []
        self.refuse = [r for r in (refuse, refuse_undo) if r]

    def __call__(self, method, path, obj, json=None):
        self.sent.append((method, path))
        for refused_method, prefix in self.refuse:
            if method == refused_method and path.startswith(prefix):
                raise Conflict(obj, "a port with this MAC address already exists (HTTP 409)")
        if method == "post" and path == "/nodes":
            return dict(json, uuid="0000aaaa-0000-0000-0000-000000000000", provision_state="enroll")
        return {"provision_state": "manageable"}


def registrar(requests):
    reg = R.IronicRegistrar.__new__(R.IronicRegistrar)
    reg.check_mode, reg.owner, reg.interfaces, reg.update_password = False, None, {}, False
    reg.default_resource_class, reg.automated_clean, reg.wait_timeout = "baremetal", None, 60
    reg.by_uuid, reg.by_name, reg.lock = {}, {}, threading.Lock()
    reg._req = requests
    reg._wait = lambda uuid, state, obj: {"provision_state": state}
    return reg


def new_job():
    return SimpleNamespace(
        spec={"name": "web-1", "username": "root", "password": "calvin", "validate_certs": False},
        facts=copy.deepcopy(FACTS),
        classification=SimpleNamespace(labels={}, resource_class=None, traits=["CUSTOM_X"]),
        base_url="http://127.0.0.1:8000",
        system_path="/redfish/v1/Systems/" + UUID,
        name=None,
        ref=None,
    )


def test_a_new_node_whose_port_ironic_refuses_is_deleted_again():
    requests = Requests(refuse=("post", "/ports"))
    reg = registrar(requests)
    with pytest.raises(Conflict) as caught:
        reg.register(new_job())
    assert requests.sent[0] == ("post", "/nodes") and requests.sent[-1] == (
        "delete",
        "/nodes/0000aaaa-0000-0000-0000-000000000000",
    )
    assert not [s for s in requests.sent if s[1].endswith("/traits") or "/states/" in s[1]]
    assert reg.by_name == {} and reg.by_uuid == {}  # a later BMC of the same run may use the name
    assert caught.value.message.endswith("; node web-1 was undone")


def test_a_node_that_cannot_be_deleted_again_is_named_in_the_error():
    requests = Requests(refuse=("post", "/ports"), refuse_undo=("delete", "/nodes/"))
    with pytest.raises(Conflict) as caught:
        registrar(requests).register(new_job())
    assert "; node web-1 is left behind: undoing it failed (node web-1: " in caught.value.message


def test_a_new_node_that_is_complete_is_provided():
    requests = Requests()
    one = new_job()
    registrar(requests).register(one)
    assert ("put", "/nodes/0000aaaa-0000-0000-0000-000000000000/traits") in requests.sent
    assert not [s for s in requests.sent if s[0] == "delete"] and one.status == "registered"


# -- switch ports (issue 36, item 2) ---------------------------------------------------------------------------

LINK = {"switch_id": "00:00:00:00:00:01", "port_id": "esiv-a", "switch_info": "bmt-switch"}


def existing_registrar(state, ports, maintenance=False):
    """A registrar that knows node web-1 (the FACTS system) in ``state`` with ``ports``; records the requests."""
    sent = []
    node = {"uuid": UUID, "name": "web-1", "driver": "redfish", "provision_state": state, "maintenance": maintenance}

    def req(method, path, obj, json=None):
        sent.append((method, path, json))
        return dict(node) if method in ("get", "patch") and path.startswith("/nodes/") else {}

    reg = registrar(req)
    reg.by_uuid = {UUID: node}
    reg.by_name = {"web-1": node}
    reg.client = lambda: SimpleNamespace(list=lambda *args, **kwargs: copy.deepcopy(ports))
    return reg, sent


def job_with_links(nics=None, reported=None):
    job = new_job()
    job.spec["nics"] = nics
    job.reported_links = reported or {}
    job.label, job.warning = "BMC #0 (web-1)", None
    return job


def test_an_available_nodes_switch_port_changes_in_maintenance():
    mac = FACTS["nics"][0]["mac"]
    ports = [{"uuid": "p-1", "address": mac, "local_link_connection": {}}]
    reg, sent = existing_registrar("available", ports)
    job = job_with_links(nics=[dict(LINK, mac=mac)])
    reg.register(job)
    writes = [(m, p) for m, p, _body in sent if m != "get"]
    i = writes.index(("put", "/nodes/%s/maintenance" % UUID))
    assert writes[i + 1] == ("patch", "/ports/p-1")
    assert writes[i + 2] == ("delete", "/nodes/%s/maintenance" % UUID)
    patch = next(body for m, p, body in sent if p == "/ports/p-1")
    assert patch == [{"op": "add", "path": "/local_link_connection", "value": LINK}]
    assert job.ref["switch_ports"] == [dict(LINK, mac=mac, source="owner")]
    assert job.before["switch_ports"] == {} and job.after["switch_ports"] == {mac: LINK}
    assert job.changed


def test_a_switch_port_the_bmc_reports_is_recorded_and_a_bad_one_is_a_warning():
    macs = [nic["mac"] for nic in FACTS["nics"]]
    ports = [{"uuid": "p-%d" % i, "address": mac, "local_link_connection": LINK} for i, mac in enumerate(macs)]
    reported = {macs[0]: LINK, macs[1]: {"switch_id": "tor-1", "port_id": "7"}}
    reg, sent = existing_registrar("manageable", ports)
    job = job_with_links(reported=reported)
    reg.register(job)
    assert not [p for m, p, _body in sent if p.startswith("/ports") or p.endswith("/maintenance")]
    assert job.ref["switch_ports"] == [dict(LINK, mac=macs[0], source="bmc")]
    assert "not recorded: switch_id 'tor-1' is neither" in job.warning


def test_a_deployed_nodes_differing_switch_port_fails_and_writes_nothing():
    mac = FACTS["nics"][0]["mac"]
    reg, sent = existing_registrar("active", [{"uuid": "p-1", "address": mac, "local_link_connection": {}}])
    with pytest.raises(Conflict, match="the node is active: change its switch ports when it is available"):
        reg.register(job_with_links(nics=[dict(LINK, mac=mac)]))
    assert [m for m, _path, _body in sent if m != "get"] == []
    # the same node whose switch port already matches is left alone, without an error
    ports = [
        {"uuid": "p-%d" % i, "address": nic["mac"], "local_link_connection": LINK}
        for i, nic in enumerate(FACTS["nics"])
    ]
    reg, sent = existing_registrar("active", ports)
    job = job_with_links(nics=[dict(LINK, mac=mac)])
    reg.register(job)
    assert not [p for m, p, _body in sent if p.startswith("/ports")]


def test_a_new_nodes_ports_carry_their_switch_ports():
    requests = Requests()
    mac = FACTS["nics"][0]["mac"]
    job = job_with_links(nics=[dict(LINK, mac=mac)])
    bodies = []
    original = requests.__call__

    def req(method, path, obj, json=None):
        if path == "/ports":
            bodies.append(json)
        return original(method, path, obj, json)

    registrar(req).register(job)
    assert {
        "node_uuid": "0000aaaa-0000-0000-0000-000000000000",
        "address": mac,
        "local_link_connection": LINK,
    } in bodies
    assert [b for b in bodies if b["address"] != mac] == [
        {"node_uuid": "0000aaaa-0000-0000-0000-000000000000", "address": nic["mac"]} for nic in FACTS["nics"][1:]
    ]
