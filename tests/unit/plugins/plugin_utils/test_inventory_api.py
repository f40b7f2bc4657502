# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The request logic of the inventory reads, with stand-in transports (the real APIs are in the integration suites)."""

import json
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common import errors
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    BackendError,
    Forbidden,
    InvalidInput,
    NotFound,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.client import Ironic
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.model import CLAIM_KEY, IRONIC_MICROVERSION
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.client import KubeIO
from ansible_collections.baremetal.tenancy.plugins.plugin_utils import inventory_api as api


def bound(name, namespace):
    """A claim as the binder leaves it: the host recorded in AssociateBMH, the binding label agreeing."""
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": {"hostclaim.metal3.io/host": "h-" + name}},
        "status": {"conditions": [{"type": "AssociateBMH", "status": "True", "message": "bound to host h-" + name}]},
    }


class Response:
    def __init__(self, status, body, reason="OK"):
        self.status = status
        self.reason = reason
        self.data = body if isinstance(body, bytes) else json.dumps(body).encode()


class Pool:
    """Serves pages of HostClaims per namespace, following ``continue`` tokens; records each request."""

    def __init__(self, claims_by_namespace, fail=None):
        self.claims = claims_by_namespace
        self.fail = fail or {}
        self.calls = []

    def request(self, method, url, headers=None, **kwargs):
        url, _sep, query = url.partition("?")
        fields = dict(parse_qsl(query))
        self.calls.append((method, url, fields, dict(headers or {})))
        namespace = url.split("/namespaces/")[1].split("/")[0]
        if namespace in self.fail:
            return self.fail[namespace]
        items = self.claims.get(namespace, [])
        start = int(fields.get("continue") or 0)
        limit = int(fields["limit"])
        page = items[start : start + limit]
        token = str(start + limit) if start + limit < len(items) else None
        return Response(200, {"items": page, "metadata": {"continue": token} if token else {}})


class Configuration:
    host = "https://api.example.test:6443/"

    def auth_settings(self):
        return {"BearerToken": {"in": "header", "key": "authorization", "value": "Bearer t0ken"}}


def kube_reader(pool):
    """The inventory's reader on the modules' KubeIO, its pool manager replaced by ``pool``."""
    reader = api.KubeClaims.__new__(api.KubeClaims)
    rest_client = type("RestClient", (), {"pool_manager": pool})()
    reader.io = KubeIO(type("Client", (), {"configuration": Configuration(), "rest_client": rest_client})())
    return reader


def test_one_paginated_list_per_namespace():
    claims = {
        "a": [bound("c%d" % i, "a") for i in range(7)] + [{"metadata": {"name": "unbound", "namespace": "a"}}],
        "b": [bound("x", "b")],
    }
    pool = Pool(claims)
    reader = kube_reader(pool)
    records = reader.records(["b", "a", "a"], page_size=3)
    assert sorted(r["name"] for r in records) == ["c%d" % i for i in range(7)] + ["x"]
    urls = [call[1] for call in pool.calls]
    assert urls.count("https://api.example.test:6443/apis/metal3.io/v1alpha1/namespaces/a/hostclaims") == 3
    assert urls.count("https://api.example.test:6443/apis/metal3.io/v1alpha1/namespaces/b/hostclaims") == 1
    assert reader.requests == len(pool.calls) == 4
    assert all(call[2]["limit"] == "3" and call[0] == "GET" for call in pool.calls)
    assert all(
        call[3]["authorization"] == "Bearer t0ken" and call[3]["Accept"] == "application/json" for call in pool.calls
    )
    assert [call[2].get("continue") for call in pool.calls if call[1].endswith("/a/hostclaims")] == [None, "3", "6"]


def test_each_record_is_handed_on_as_its_page_is_converted():
    claims = {"a": [bound("c%d" % i, "a") for i in range(5)] + [{"metadata": {"name": "unbound", "namespace": "a"}}]}
    pool = Pool(claims)
    seen = []

    def on_record(record):
        seen.append((record["name"], len(pool.calls)))  # how many pages were asked for when it came

    records = kube_reader(pool).records(["a"], page_size=2, on_record=on_record)
    assert [name for name, dummy in seen] == [r["name"] for r in records] == ["c%d" % i for i in range(5)]
    # the first records come before the last page is read (the next page is asked for while one is converted)
    assert seen[0][1] < len(pool.calls) == 3


@pytest.mark.parametrize(
    "status, body, cls, words",
    [
        (
            403,
            {"kind": "Status", "message": 'hostclaims.metal3.io is forbidden: User "u" cannot list'},
            Forbidden,
            ["HostClaims in namespace a", "forbidden", "HTTP 403"],
        ),
        (
            404,
            {"kind": "Status", "message": "the server could not find the requested resource"},
            NotFound,
            ["is the HostClaim CRD installed?", "HTTP 404"],
        ),
        (401, {"kind": "Status", "message": "Unauthorized"}, BackendError, ["credentials were refused", "HTTP 401"]),
        (500, b"<html>oops</html>", BackendError, ["Internal", "HTTP 500"]),
    ],
)
def test_http_errors_name_the_namespace_and_the_cause(status, body, cls, words):
    pool = Pool({}, fail={"a": Response(status, body, reason="Internal Server Error" if status == 500 else "x")})
    with pytest.raises(cls) as error:
        kube_reader(pool).records(["a"])
    for word in words:
        assert word in error.value.message
    assert "\n" not in error.value.message


def test_a_body_that_is_not_json():
    pool = Pool({}, fail={"a": Response(200, b"not json")})
    with pytest.raises(BackendError, match="not JSON"):
        kube_reader(pool).records(["a"])


def test_connection_failures_are_one_short_line():
    # urllib3 comes with the kubernetes client; the unit test environment may not have it.
    urllib3 = pytest.importorskip("urllib3", reason="urllib3 (installed with kubernetes) is not installed")

    class Down:
        def request(self, *args, **kwargs):
            reason = urllib3.exceptions.NewConnectionError(
                None,
                "HTTPSConnection(host='127.0.0.1', port=1): Failed to establish a new connection: "
                "[Errno 111] Connection refused",
            )
            raise urllib3.exceptions.MaxRetryError(None, "/apis", reason)

    with pytest.raises(BackendError) as error:
        kube_reader(Down()).records(["a"])
    assert error.value.message == (
        "Kubernetes API https://api.example.test:6443: cannot connect: [Errno 111] Connection refused"
    )


@pytest.mark.parametrize(
    "namespaces, words",
    [
        (None, ["option namespaces", "required"]),
        ([], ["required"]),
        (["Bad_NS"], ["'Bad_NS'"]),
        (["a/../b"], ["'a/../b'"]),
        (["x" * 64], ["63"]),
    ],
)
def test_namespaces_are_checked_before_any_request(namespaces, words):
    pool = Pool({})
    with pytest.raises(InvalidInput) as error:
        kube_reader(pool).records(namespaces)
    for word in words:
        assert word in error.value.message
    assert pool.calls == []


def test_fetch_records_rejects_an_unknown_backend():
    with pytest.raises(InvalidInput, match="option backend: 'x'"):
        api.fetch_records("x", {})


@pytest.mark.parametrize(
    "body, message",
    [
        ({"kind": "Status", "message": "m1"}, "m1"),
        (
            {"error_message": json.dumps({"faultstring": "Node x could not be found.", "faultcode": "Client"})},
            "Node x could not be found.",
        ),
        ({"error_message": "plain"}, "plain"),
        ({"other": 1}, None),
        ([1], None),
        ("x", None),
        (b"\xff", None),
    ],
)
def test_api_message(body, message):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    assert errors.api_message(raw) == message


def test_shorten():
    error = BackendError(
        "OpenStack cloud x",
        "Unable to establish connection to http://127.0.0.1:9/v3/auth/tokens: "
        "HTTPConnectionPool(host='127.0.0.1', port=9): Max retries exceeded (Caused by NewConnection"
        "Error(\"HTTPConnection(host='127.0.0.1', port=9): Failed to establish a new connection: "
        '[Errno 111] Connection refused"))',
    )
    assert errors.shorten(error).message == "OpenStack cloud x: cannot connect: [Errno 111] Connection refused"
    other = BackendError("x", "something else")
    assert errors.shorten(other).message == "x: something else"


class Adapter:
    """Serves Ironic lists with ``limit``/``marker`` pagination and ``next`` links; records each request."""

    def __init__(self, data, status=200):
        self.data = data
        self.status = status
        self.calls = []

    status_code_retries = 5

    def get(self, url, microversion=None, raise_exc=True):
        parsed = urlsplit(url)
        params = dict(parse_qsl(parsed.query))
        parts = parsed.path.strip("/").split("/")
        if len(parts) > 1 and parts[-2] in self.data:  # one object: /allocations/<uuid>
            path = "/%s/%s" % (parts[-2], parts[-1])
            self.calls.append((path, params, microversion))
            found = [i for i in self.data[parts[-2]] if i["uuid"] == parts[-1]]
            return self._response(self.status if found else 404, found[0] if found else {})
        path = "/" + parts[-1]
        self.calls.append((path, params, microversion))
        key = path.strip("/")
        items = self.data[key]
        for name, value in params.items():  # the server's filters
            if name == "project":
                items = [i for i in items if value in (i.get("owner"), i.get("lessee"))]
            elif name == "owner":
                items = [i for i in items if i.get("owner") == value]
        start = 0
        limit = int(params["limit"])
        if params.get("marker"):
            start = [i["uuid"] for i in items].index(params["marker"]) + 1
        page = items[start : start + limit]
        body = {key: page}
        if len(page) == limit:
            rest = {k: v for k, v in params.items() if k != "marker"}
            body["next"] = "http://ironic/v1/%s?%s" % (key, urlencode(dict(rest, marker=page[-1]["uuid"]), safe=","))
        return self._response(self.status, body)

    @staticmethod
    def _response(status, body):
        return type(
            "R",
            (),
            {
                "status_code": status,
                "reason": "x",
                "content": json.dumps({"error_message": json.dumps({"faultstring": "Forbidden by policy"})}).encode(),
                "json": lambda self: body,
            },
        )()


class Conn:
    def __init__(self, adapter):
        self.baremetal = adapter


def ironic_reader(adapter, project=("p-1", "tenant-a")):
    reader = api.IronicClaims.__new__(api.IronicClaims)
    reader.client = Ironic(Conn(adapter))
    reader.project_id, reader.project_name = project
    return reader


def _claimed(count, marked=True, owner="p-1"):
    """``count`` nodes leased to p-1 with allocations of ``owner``; ``marked``: host_claim's key on each."""
    nodes, allocations = [], []
    for i in range(count):
        marker = {"name": "c%d" % i, "allocation": "a%d" % i, "project": owner} if marked else None
        info = {CLAIM_KEY: marker} if marker else {}
        nodes.append(
            {"uuid": "n%d" % i, "name": "node%d" % i, "provision_state": "active", "instance_uuid": "a%d" % i}
            | {"lessee": "p-1", "owner": "infra", "instance_info": info}
        )
        allocations.append(
            {"uuid": "a%d" % i, "name": "c%d" % i, "node_uuid": "n%d" % i, "owner": owner, "state": "active"}
        )
    ports = [{"uuid": "p%d" % i, "address": "52:54:00:00:00:%02d" % i, "node_uuid": "n%d" % i} for i in range(count)]
    return {"allocations": allocations, "nodes": nodes, "ports": ports}


def test_ironic_marked_nodes_are_read_from_the_server_filtered_node_list_alone():
    adapter = Adapter(_claimed(5))
    records = ironic_reader(adapter).records(page_size=2)
    assert sorted(r["name"] for r in records) == ["c0", "c1", "c2", "c3", "c4"]
    assert sorted(r["allocation_uuid"] for r in records) == ["a0", "a1", "a2", "a3", "a4"]
    assert all(r["project_name"] == "tenant-a" and r["boot_mac_address"] for r in records)
    by_path = {}
    for path, params, microversion in adapter.calls:
        by_path.setdefault(path, []).append(params)
        assert microversion == IRONIC_MICROVERSION
    assert set(by_path) == {"/nodes", "/ports"}
    assert [p.get("marker") for p in by_path["/nodes"]] == [None, "n1", "n3"]
    assert all(p["associated"] == "true" and p["project"] == "p-1" for p in by_path["/nodes"])
    # allocation_uuid would make Ironic look each node's allocation up: instance_uuid carries it
    assert all("driver_info" not in p["fields"] and "allocation_uuid" not in p["fields"] for p in by_path["/nodes"])
    assert len(adapter.calls) == 6


def test_ironic_unmarked_nodes_read_their_allocations_one_by_one():
    data = _claimed(3, marked=False)
    data["nodes"][2]["instance_info"] = {CLAIM_KEY: {"name": "forged", "allocation": "a2", "project": "p-1"}}
    data["nodes"][2]["lessee"] = "p-2"  # another tenant wrote that key: not trusted
    data["nodes"][2]["owner"] = "p-1"
    data["allocations"][2]["owner"] = "p-2"
    adapter = Adapter(data)
    records = ironic_reader(adapter).records()
    assert sorted(r["name"] for r in records) == ["c0", "c1"]
    gets = sorted(path for path, dummy, dummy in adapter.calls if path.startswith("/allocations"))
    assert gets == ["/allocations/a0", "/allocations/a1", "/allocations/a2"]
    assert all(
        p["fields"] == "uuid,name,node_uuid,state,owner,extra" for path, p, dummy in adapter.calls if "/a" in path
    )


def test_ironic_many_unmarked_nodes_read_the_projects_allocation_list():
    count = api.ALLOCATION_READS_BEFORE_LIST + 1
    adapter = Adapter(_claimed(count, marked=False))
    records = ironic_reader(adapter).records(page_size=1000)
    assert len(records) == count
    lists = [params for path, params, dummy in adapter.calls if path == "/allocations"]
    assert len(lists) == 1 and lists[0]["owner"] == "p-1"
    assert not [path for path, dummy, dummy in adapter.calls if path.startswith("/allocations/")]


def test_ironic_an_allocation_gone_or_hidden_is_no_host():
    data = _claimed(2, marked=False)
    del data["allocations"][0]  # deleted since the node list: 404
    assert [r["name"] for r in ironic_reader(Adapter(data)).records()] == ["c1"]


def test_ironic_records_agree_with_the_allocation_route():
    """The same records whether the nodes tell the claims or the allocations do."""
    marked, unmarked = Adapter(_claimed(4)), Adapter(_claimed(4, marked=False))
    first, second = ironic_reader(marked).records(), ironic_reader(unmarked).records()
    assert sorted(first, key=lambda r: r["node_uuid"]) == sorted(second, key=lambda r: r["node_uuid"])


def test_ironic_without_ports():
    data = _claimed(1)
    adapter = Adapter(data)
    records = ironic_reader(adapter).records(ports=False)
    assert sorted(path for path, dummy, dummy in adapter.calls) == ["/nodes"]
    assert records[0]["nics"] == [] and records[0]["boot_mac_address"] is None and records[0]["name"] == "c0"
    assert ironic_reader(Adapter(data)).records()[0]["boot_mac_address"] == "52:54:00:00:00:00"


def test_ironic_system_scope_lists_every_project():
    data = _claimed(2, owner="p-9")
    adapter = Adapter(data)
    records = ironic_reader(adapter, (None, None)).records()
    assert sorted(r["name"] for r in records) == ["c0", "c1"]
    assert sorted(path for path, dummy, dummy in adapter.calls) == ["/allocations", "/nodes", "/ports"]
    assert all("owner" not in params and "project" not in params for path, params, dummy in adapter.calls)


def test_ironic_errors():
    adapter = Adapter({"allocations": [], "nodes": [], "ports": []}, status=403)
    with pytest.raises(Forbidden) as error:
        ironic_reader(adapter).records()
    assert "Forbidden by policy (HTTP 403)" in error.value.message and error.value.obj.startswith("Ironic ")


def bmo_bound(name, namespace, host_status=None):
    """A claim of baremetal-operator's dialect as the binder leaves it (issue 15 contract): no binding label needed."""
    annotations = {}
    if host_status is not None:
        annotations["hostclaim.metal3.io/host-status"] = json.dumps(host_status)
    return {
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
        "spec": {"poweredOn": True},
        "status": {
            "bareMetalHost": {"namespace": "infra", "name": "h-" + name},
            "poweredOn": True,
            "conditions": [
                {"type": "Associated", "status": "True", "reason": "BareMetalHostAssociated"},
                {"type": "Ready", "status": "True", "reason": "Ready"},
            ],
        },
    }


def test_bmo_claims_are_read_by_their_shape_beside_the_proposals():
    addresses = [{"type": "InternalIP", "address": "192.0.2.7"}]
    spoofed = {
        "metadata": {
            "name": "unbound",
            "namespace": "a",
            "annotations": {"hostclaim.metal3.io/host-status": json.dumps({"addresses": addresses})},
        },
        "spec": {"poweredOn": False},
        "status": {"conditions": [{"type": "Associated", "status": "False", "reason": "NoBareMetalHost"}]},
    }
    pool = Pool({"a": [bound("p", "a"), bmo_bound("b", "a", {"addresses": addresses}), spoofed]})
    records = dict((r["name"], r) for r in kube_reader(pool).records(["a"], page_size=10))
    assert sorted(records) == ["b", "p"]  # the unbound BMO claim is no host, whatever its annotation says
    assert records["b"]["host"] == "h-b" and records["b"]["addresses"] == addresses
    assert records["b"]["online"] is True and records["b"]["ready"] is True
    assert records["p"]["host"] == "h-p" and set(records["p"]) == set(records["b"])
