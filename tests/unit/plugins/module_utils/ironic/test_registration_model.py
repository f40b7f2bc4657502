# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


import json

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
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


# ------------------------------------------------------------------ switch ports


LINK = {"switch_id": "00:00:00:00:00:01", "port_id": "esiv-a", "switch_info": "bmt-switch"}


def test_owner_links_normalise_and_refuse_what_ironic_would():
    given = [
        dict(LINK, mac="52-54-00-AA-00-01"),
        {"mac": "52:54:00:aa:00:02", "switch_id": "00000000000000AB", "port_id": 7},
    ]
    assert node_model.owner_links(given) == {
        "52:54:00:aa:00:01": LINK,
        "52:54:00:aa:00:02": {"switch_id": "00000000000000AB", "port_id": "7"},
    }
    assert node_model.owner_links(None) == {}
    for bad, cause in (
        ([dict(LINK, mac="nope")], "is not a MAC address"),
        ([dict(LINK, mac="52:54:00:aa:00:01"), dict(LINK, mac="52:54:00:AA:00:01")], "given twice"),
        ([dict(LINK, mac="52:54:00:aa:00:01", port_id="")], "needs port_id"),
        ([dict(LINK, mac="52:54:00:aa:00:01", switch_id=None)], "needs switch_id"),
        ([dict(LINK, mac="52:54:00:aa:00:01", switch_id="tor-1")], "neither a MAC address nor"),
    ):
        with pytest.raises(InvalidInput, match=cause) as err:
            node_model.owner_links(bad)
        assert err.value.obj.startswith("nics[")


def test_node_links_owner_wins_and_unknown_macs_fail():
    facts = {"nics": [{"name": "1", "mac": "52:54:00:aa:00:01"}, {"name": "2", "mac": "52:54:00:aa:00:02"}]}
    bmc = {"52:54:00:aa:00:01": {"switch_id": "c4:7e:e0:e4:55:3f", "port_id": "Ethernet1/7"}, "52:54:00:ff:ff:ff": LINK}
    owner = {"52:54:00:aa:00:02": LINK}
    links = node_model.node_links(facts, bmc, owner)
    assert links == {"52:54:00:aa:00:01": bmc["52:54:00:aa:00:01"], "52:54:00:aa:00:02": LINK}
    assert node_model.node_links(facts, bmc, {"52:54:00:aa:00:01": LINK})["52:54:00:aa:00:01"] == LINK
    with pytest.raises(InvalidInput, match="nic 52:54:00:aa:00:09: is not a NIC the BMC reports"):
        node_model.node_links(facts, {}, {"52:54:00:aa:00:09": LINK})
    report = node_model.links_report(links, bmc)
    assert [(r["mac"], r["source"]) for r in report] == [("52:54:00:aa:00:01", "bmc"), ("52:54:00:aa:00:02", "owner")]


def test_port_plan_creates_missing_ports_and_fixes_differing_links():
    macs = ["52:54:00:aa:00:01", "52:54:00:aa:00:02", "52:54:00:aa:00:03"]
    links = {"52:54:00:aa:00:01": LINK, "52:54:00:aa:00:02": dict(LINK, port_id="esiv-b")}
    existing = [
        {"uuid": "p1", "address": "52:54:00:AA:00:01", "local_link_connection": dict(LINK)},  # same: nothing
        {"uuid": "p3", "address": "52:54:00:aa:00:03", "local_link_connection": {"port_id": "x", "switch_id": "y"}},
    ]
    create, update = node_model.port_plan(existing, macs, links)
    assert create == [{"address": "52:54:00:aa:00:02", "local_link_connection": dict(LINK, port_id="esiv-b")}]
    assert update == []  # no link wanted for :03: its port keeps what it has
    existing[0]["local_link_connection"] = {}
    assert node_model.port_plan(existing, macs, links)[1] == [("p1", "52:54:00:aa:00:01", LINK)]
    assert node_model.port_plan([], ["52:54:00:aa:00:04"], {}) == ([{"address": "52:54:00:aa:00:04"}], [])
    assert node_model.port_links(existing) == {"52:54:00:aa:00:03": {"port_id": "x", "switch_id": "y"}}


def test_relink_problem_names_the_state():
    for state in ("enroll", "manageable", "available"):
        assert node_model.relink_problem({"provision_state": state}) is None
    assert node_model.relink_problem({"provision_state": "active", "maintenance": True}) is None
    assert "is active" in node_model.relink_problem({"provision_state": "active"})
