# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""tenant_network's runner and the claim's network checks against an in-memory Neutron (its REST shapes)."""

import json
import re

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import Conflict, InvalidInput, NotFound
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import neutron as N
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.fake_module import FakeModule

PROJECT = "p" * 32
OTHER = "o" * 32


class Response:
    def __init__(self, status, body=None):
        self.status_code = status
        self.content = json.dumps(body).encode() if body is not None else b""
        self.text = self.content.decode()
        self.reason = "reason"

    def json(self):
        return json.loads(self.content)


class FakeNeutron:
    """Networks and subnets of several projects; the caller sees its own (Neutron filters by its token)."""

    def __init__(self):
        self.networks = {}
        self.subnets = {}
        self.writes = []
        self._ids = iter(range(1000))

    def add_network(self, name, project=PROJECT):
        uid = "net-%d" % next(self._ids)
        self.networks[uid] = {"id": uid, "name": name, "project_id": project, "status": "ACTIVE", "shared": False}
        return uid

    def _query(self, path):
        resource, unused, query = path.lstrip("/").partition("?")
        params = {}
        for item in query.split("&") if query else ():
            key, unused, value = item.partition("=")
            if key != "fields":
                params[key] = value
        return resource, params

    def _visible(self, items):
        return [i for i in items if self.networks.get(i.get("network_id", i["id"]), i)["project_id"] == PROJECT]

    def get(self, path, **kwargs):
        resource, params = self._query(path)
        items = list((self.networks if resource == "networks" else self.subnets).values())
        items = [i for i in self._visible(items) if all(i.get(k) == v for k, v in params.items())]
        return Response(200, {resource: items})

    def post(self, path, json=None, **kwargs):
        self.writes.append(("post", path, json))
        if path == "/networks":
            uid = self.add_network(json["network"]["name"])
            return Response(201, {"network": self.networks[uid]})
        uid = "sub-%d" % next(self._ids)
        self.subnets[uid] = dict(json["subnet"], id=uid)
        return Response(201, {"subnet": self.subnets[uid]})

    def put(self, path, json=None, **kwargs):
        self.writes.append(("put", path, json))
        uid = path.rsplit("/", 1)[1]
        self.subnets[uid].update(json["subnet"])
        return Response(200, {"subnet": self.subnets[uid]})

    def delete(self, path, **kwargs):
        self.writes.append(("delete", path, None))
        uid = path.rsplit("/", 1)[1]
        if any(s["network_id"] == uid and s.get("in_use") for s in self.subnets.values()):
            return Response(409, {"NeutronError": {"message": "One or more ports have an IP allocation"}})
        self.networks.pop(uid, None)
        return Response(204)


class Conn:
    def __init__(self, network, project=PROJECT):
        self.network = network
        self.current_project_id = project


@pytest.fixture
def neutron(monkeypatch):
    fake = FakeNeutron()
    monkeypatch.setattr(N.Neutron, "from_params", classmethod(lambda cls, params: cls(Conn(fake))))
    return fake


SUBNET = {"name": "hosts", "cidr": "10.20.0.0/24", "gateway_ip": "10.20.0.1", "enable_dhcp": False}


def run(check_mode=False, **params):
    base = {"name": "private", "state": "present", "subnets": [SUBNET]}
    base.update(params)
    mod = FakeModule(check_mode=check_mode, **base)
    N.run_tenant_network(mod)
    return mod


def test_check_mode_writes_nothing_and_shows_what_would_be(neutron):
    mod = run(check_mode=True)
    assert mod.result["changed"] is True and neutron.writes == []
    assert mod.result["network"]["id"] is None
    assert [s["cidr"] for s in mod.result["network"]["subnets"]] == ["10.20.0.0/24"]


def test_create_then_rerun_changes_nothing(neutron):
    first = run()
    assert first.result["changed"] is True
    assert [w[1] for w in neutron.writes] == ["/networks", "/subnets"]
    assert neutron.writes[1][2]["subnet"]["ip_version"] == 4
    second = run()
    assert second.result["changed"] is False and len(neutron.writes) == 2
    assert second.result["network"] == first.result["network"]


def test_a_changed_gateway_is_updated_in_place(neutron):
    run()
    mod = run(subnets=[dict(SUBNET, gateway_ip="10.20.0.254")])
    assert mod.result["changed"] is True
    assert neutron.writes[-1][0] == "put" and neutron.writes[-1][2] == {"subnet": {"gateway_ip": "10.20.0.254"}}


def test_a_changed_cidr_is_refused_and_nothing_is_written(neutron):
    run()
    writes = len(neutron.writes)
    with pytest.raises(InvalidInput, match="cidr cannot change"):
        run(subnets=[dict(SUBNET, cidr="10.30.0.0/24", gateway_ip=None)])
    assert len(neutron.writes) == writes


def test_another_projects_network_of_the_same_name_is_neither_seen_nor_touched(neutron):
    theirs = neutron.add_network("private", project=OTHER)
    mod = run()
    assert mod.result["network"]["id"] != theirs and neutron.networks[theirs]["project_id"] == OTHER
    gone = run(state="absent")
    assert gone.result["changed"] is True and theirs in neutron.networks


def test_absent_deletes_and_a_network_in_use_is_one_clear_error(neutron):
    run()
    for subnet in neutron.subnets.values():
        subnet["in_use"] = True
    with pytest.raises(Conflict, match=r"release the claim first.*IP allocation"):
        run(state="absent")
    for subnet in neutron.subnets.values():
        subnet["in_use"] = False
    assert run(state="absent").result["changed"] is True
    assert run(state="absent").result["changed"] is False


def test_bad_input_is_refused_before_neutron_is_asked(neutron, monkeypatch):
    monkeypatch.setattr(N.Neutron, "from_params", classmethod(lambda cls, params: pytest.fail("asked Neutron")))
    with pytest.raises(InvalidInput, match=re.escape("option cidr '10.20.0.1/24'")):
        run(subnets=[dict(SUBNET, cidr="10.20.0.1/24")])


def test_a_claim_naming_another_projects_network_is_not_found(neutron):
    theirs = neutron.add_network("theirs", project=OTHER)
    client = N.Neutron(Conn(neutron))
    with pytest.raises(NotFound, match="network %s does not exist or is not project" % theirs):
        N.resolve_claim_networks(client, PROJECT, [{"network": theirs, "fixed_ip": None}], "claim c")


def test_a_claim_on_a_network_without_the_address_is_refused(neutron):
    run()
    client = N.Neutron(Conn(neutron))
    with pytest.raises(InvalidInput, match=re.escape("fixed_ip 10.99.0.5 is in none of its subnets")):
        N.resolve_claim_networks(client, PROJECT, [{"network": "private", "fixed_ip": "10.99.0.5"}], "claim c")
    (ok,) = N.resolve_claim_networks(client, PROJECT, [{"network": "private", "fixed_ip": "10.20.0.5"}], "claim c")
    assert ok["network"]["name"] == "private" and ok["fixed_ip"] == "10.20.0.5"


def test_neutrons_own_message_is_the_cause():
    response = Response(409, {"NeutronError": {"type": "InUse", "message": "Unable to complete", "detail": ""}})
    assert N._message(response) == "Unable to complete"
    assert N._message(Response(500)) == "reason"
