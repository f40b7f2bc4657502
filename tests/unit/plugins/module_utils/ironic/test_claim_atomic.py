# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""ironic/claims.py: a host_claim run that fails changes nothing (issue 34, item 3).

A reboot that cannot go with the deployment of the same run is refused before the allocation; a deployment or
power change Ironic refuses after the run created the allocation gives the node back (the real Ironic: the
bad-input matrix, row ``claim-reboot-with-deploy``)."""

import dataclasses

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import Forbidden, InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import claims
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.writes import Writes
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.fake_module import FakeModule as Mod

MD5 = "9f6c1a0f5e2b4c8d7a3e1f0b2c4d6e8f"
IMAGE = {"url": "http://images.example.com/os.qcow2", "checksum": MD5, "checksum_type": "md5", "format": "qcow2"}
REQUEST = claims.ClaimRequest(
    name="web-0",
    obj="claim web-0",
    resource_class="rc",
    traits=None,
    candidates=None,
    image=IMAGE,
    drive="H4sI",
    digest="sha256:0",
    addresses=[],
    online=True,
    reboot="rebooting",
    wait_ready=False,
    wait=False,
    wait_timeout=60,
)


class Ironic:
    """One node; ``refuse`` names the call Ironic refuses (HTTP 403), ``refuse_undo`` a call of the undo."""

    def __init__(self, refuse, refuse_undo=None):
        self.node = {"uuid": "n-1", "name": "n-1", "provision_state": "available", "power_state": "power off"}
        self.node["instance_info"] = {}
        self.refuse, self.refuse_undo = refuse, refuse_undo
        self.calls = []
        self.allocation = {"uuid": "a-1", "name": "web-0", "state": "active", "node_uuid": "n-1"}

    def _call(self, name):
        self.calls.append(name)
        if name in (self.refuse, self.refuse_undo):
            raise Forbidden("node n-1", "refused (HTTP 403)")

    def patch_node(self, uuid, ops, label=None):
        self._call("patch_node")
        for op in ops:
            if op["path"] == "/instance_info":
                self.node["instance_info"] = {}
            elif op["op"] == "add":
                self.node["instance_info"][op["path"].rsplit("/", 1)[1]] = op["value"]

    def set_provision_state(self, uuid, target, label=None, configdrive=None):
        self._call("set_provision_state")

    def set_power_state(self, uuid, target, label=None):
        self._call("set_power_state")

    def clear_instance_name(self, uuid, label=None):
        self._call("clear_instance_name")

    def get_node(self, uuid, missing_ok=False, fields=None):
        return dict(self.node)

    def delete_allocation(self, uuid, label=None):
        self._call("delete_allocation")
        self.allocation = None


def run(client, created=True, **request):
    mod = Mod()
    claim = claims.ClaimState(client.allocation, dict(client.node), created=created)
    with pytest.raises(Forbidden) as caught:
        claims._deploy_and_power(mod, Writes(mod, client), "p-1", dataclasses.replace(REQUEST, **request), claim)
    return caught.value


def test_a_deployment_ironic_refuses_gives_the_allocation_back():
    client = Ironic(refuse="set_provision_state")
    error = run(client)
    # instance_info written, the deployment refused: what the run wrote is cleared, the allocation deleted
    assert client.calls == [
        "patch_node",
        "set_provision_state",
        "patch_node",
        "clear_instance_name",
        "delete_allocation",
    ]
    assert client.allocation is None and client.node["instance_info"] == {}
    assert error.message.startswith("node n-1: refused (HTTP 403); allocation web-0 (node n-1) was undone")


def test_a_power_change_ironic_refuses_gives_the_allocation_back():
    client = Ironic(refuse="set_power_state")
    run(client, image=None, reboot=None)
    assert client.calls == ["set_power_state", "clear_instance_name", "delete_allocation"]
    assert client.allocation is None


def test_an_undo_that_fails_is_reported_with_the_first_error():
    client = Ironic(refuse="set_provision_state", refuse_undo="delete_allocation")
    error = run(client)
    assert client.allocation is not None
    assert error.message == (
        "node n-1: refused (HTTP 403); allocation web-0 (node n-1) is left behind: undoing it failed "
        "(node n-1: refused (HTTP 403))"
    )


def test_an_allocation_of_an_earlier_run_is_kept():
    client = Ironic(refuse="set_provision_state")
    error = run(client, created=False)
    assert client.calls == ["patch_node", "set_provision_state"] and client.allocation is not None
    assert "undo" not in error.message


@pytest.mark.parametrize(
    "node, changes",
    [
        (None, {}),  # a new claim: its node is deployed by this run
        ({"provision_state": "available", "instance_info": {}}, {}),
        ({"provision_state": "deploying", "target_provision_state": "active"}, {"image": None}),
        ({"provision_state": "active", "instance_info": {"image_source": "http://other/os.qcow2"}}, {}),
    ],
)
def test_a_reboot_with_a_deployment_the_run_does_not_wait_for_is_refused_before_any_write(node, changes):
    claim = claims.ClaimState(None, dict(node, uuid="n-1") if node else None)
    with pytest.raises(InvalidInput, match=r"annotation host\.metal3\.io/reboot: the node is deployed by this run"):
        claims._refuse_reboot_with_deployment(dataclasses.replace(REQUEST, **changes), claim)


@pytest.mark.parametrize(
    "node, changes",
    [
        (None, {"wait_ready": True}),  # the run waits for the deployment, then reboots
        (None, {"image": None}),  # allocation only
        (None, {"reboot": None}),
        ({"provision_state": "active", "instance_info": {}}, {"image": None}),
    ],
)
def test_a_reboot_without_a_deployment_or_after_it_is_accepted(node, changes):
    claim = claims.ClaimState(None, dict(node, uuid="n-1") if node else None)
    claims._refuse_reboot_with_deployment(dataclasses.replace(REQUEST, **changes), claim)
