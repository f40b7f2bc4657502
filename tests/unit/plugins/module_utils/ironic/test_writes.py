# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""ironic/writes.py: every write marks the run changed; in check mode none reaches Ironic."""

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.writes import Writes


class Mod:
    def __init__(self, check_mode):
        self.check_mode = check_mode
        self.result = {"changed": False}

    def changed(self, value=True):
        self.result["changed"] = self.result["changed"] or bool(value)


class Client:
    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        def call(*args, **kwargs):
            self.calls.append(name)
            return {"uuid": "a-1", "name": args[0] if args else None, "state": "allocating"}

        return call


NODE = {"uuid": "n-1", "name": "node-1", "power_state": "power off", "instance_info": {"x": 1}}


def run_all(writes):
    writes.create_allocation("web-0", "rc", traits=["CUSTOM_A"])
    writes.delete_allocation("a-0", "web-0")
    deployed = writes.deploy(NODE, [{"op": "add"}], "active", "drive", {"image_source": "http://i/os"})
    powered = writes.set_power_state(NODE, "power on")
    writes.undeploy(NODE)
    writes.clear_instance(NODE)
    return deployed, powered


def test_check_mode_records_every_write_and_sends_none():
    mod, client = Mod(True), Client()
    writes = Writes(mod, client)
    deployed, powered = run_all(writes)
    assert client.calls == []
    assert mod.result["changed"] is True
    assert len(writes.would) == 6 and writes.would[0] == "create allocation web-0"
    # What Ironic would answer, so the runner goes on the same way in both modes.
    assert deployed["instance_info"] == {"image_source": "http://i/os"} and powered["power_state"] == "power on"
    assert writes.create_allocation("web-1", "rc")["state"] == "allocating"


def test_real_mode_sends_each_write():
    mod, client = Mod(False), Client()
    writes = Writes(mod, client)
    run_all(writes)
    assert client.calls == [
        "create_allocation",
        "delete_allocation",
        "patch_node",
        "set_provision_state",
        "set_power_state",
        "set_provision_state",
        "patch_node",
        "clear_instance_name",
    ]
    assert writes.would == [] and mod.result["changed"] is True


@pytest.mark.parametrize("check_mode", [True, False])
def test_no_write_no_change(check_mode):
    mod = Mod(check_mode)
    Writes(mod, Client())
    assert mod.result["changed"] is False
