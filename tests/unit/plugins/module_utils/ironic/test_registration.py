# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""ironic/registration.py with a stand-in Ironic that answers in pages (the real one: test_redfish_register.py)."""

import json

from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import registration as R
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.model import IRONIC_MICROVERSION


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
