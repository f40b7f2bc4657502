# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


import json

from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import registration_model as node_model
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish.classify import Classification
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.redfish.registration_facts import (
    FACTS,
    UUID,
)

CLASS = Classification({"infra-kind": "large"}, "baremetal-large", ["CUSTOM_LARGE"], ["large"])
INFO = node_model.driver_info("http://127.0.0.1:8000", "/redfish/v1/Systems/" + UUID, "admin", "pw", False)


def test_desired_node():
    node = node_model.desired_node("web-1", FACTS, CLASS, INFO, owner="p1", interfaces={"deploy_interface": "ramdisk"})
    assert node == {
        "uuid": UUID,
        "name": "web-1",
        "driver": "redfish",
        "driver_info": INFO,
        "resource_class": "baremetal-large",
        "properties": {"cpus": 96, "memory_mb": 524288, "cpu_arch": "x86_64", "capabilities": "boot_mode:uefi"},
        "extra": {node_model.SYSTEM_UUID_KEY: UUID, node_model.MANAGED_TRAITS_KEY: ["CUSTOM_LARGE"]},
        "owner": "p1",
        "deploy_interface": "ramdisk",
    }
    plain = node_model.desired_node("web-1", {"uuid": UUID}, Classification(), INFO)
    assert plain["resource_class"] == "baremetal" and plain["properties"] == {} and "owner" not in plain


def test_node_patch():
    desired = node_model.desired_node("web-1", FACTS, CLASS, INFO, owner="p1")
    current = dict(desired, driver_info=dict(INFO, redfish_password="******"))
    assert node_model.node_patch(current, desired) == []
    ops = node_model.node_patch(current, desired, update_password=True)
    assert ops == [{"op": "replace", "path": "/driver_info/redfish_password", "value": "pw"}]
    current = dict(
        desired,
        resource_class="old",
        owner=None,
        properties={"cpus": 8},
        extra={},
        driver_info={k: v for k, v in INFO.items() if k != "redfish_password"},
    )
    ops = node_model.node_patch(current, desired)
    paths = [(o["op"], o["path"]) for o in ops]
    assert ("add", "/driver_info/redfish_password") in paths
    assert ("replace", "/resource_class") in paths
    assert ("add", "/owner") in paths
    assert ("replace", "/properties/cpus") in paths
    assert ("add", "/properties/memory_mb") in paths
    assert ("add", "/extra/" + node_model.MANAGED_TRAITS_KEY) in paths


def test_node_traits_keep_others_and_replace_ours():
    assert node_model.node_traits(["CUSTOM_ADMIN", "CUSTOM_OLD"], ["CUSTOM_OLD"], ["CUSTOM_NEW"]) == [
        "CUSTOM_ADMIN",
        "CUSTOM_NEW",
    ]
    assert node_model.node_traits(None, None, ["B", "A", "B"]) == ["A", "B"]


def test_ports_and_steps():
    assert node_model.missing_ports(FACTS, ["52:54:00:AA:BB:01"]) == ["52:54:00:aa:bb:02"]
    assert node_model.missing_ports(FACTS, None) == ["52:54:00:aa:bb:01", "52:54:00:aa:bb:02"]
    assert node_model.provision_steps("enroll") == [("manage", "manageable"), ("provide", "available")]
    assert node_model.provision_steps("manageable") == [("provide", "available")]
    assert node_model.provision_steps("available") == []
    for state in ("active", "deploying", "clean failed", "verifying"):
        assert node_model.provision_steps(state) is None


def test_node_view_hides_secrets():
    view = node_model.node_view(
        dict(node_model.desired_node("web-1", FACTS, CLASS, INFO), provision_state="available"),
        ["CUSTOM_LARGE"],
        ["52:54:00:aa:bb:01"],
    )
    text = json.dumps(view)
    assert "127.0.0.1" not in text and '"pw"' not in text
    assert view["driver_info"]["redfish_username"] == "admin"
    assert node_model.node_view(None) == {}


def test_automated_clean_is_managed_only_when_given():
    plain = node_model.desired_node("web-1", FACTS, CLASS, INFO)
    assert "automated_clean" not in plain
    assert node_model.node_patch(dict(plain, automated_clean=True), plain) == []
    off = node_model.desired_node("web-1", FACTS, CLASS, INFO, automated_clean=False)
    assert off["automated_clean"] is False
    assert node_model.node_patch(dict(off, automated_clean=None), off) == [
        {"op": "add", "path": "/automated_clean", "value": False}
    ]
    assert node_model.node_patch(dict(off, automated_clean=True), off) == [
        {"op": "replace", "path": "/automated_clean", "value": False}
    ]
    assert node_model.node_patch(off, off) == []
    assert node_model.node_view(off)["automated_clean"] is False
