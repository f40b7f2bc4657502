# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

import re

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import bmc_data
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import registration_model as reg
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.redfish.registration_facts import (
    FACTS,
    UUID,
)


def test_names():
    assert reg.host_name(None, FACTS, "metal3") == reg.host_name(None, FACTS, "ironic") == reg.default_name(UUID)
    assert re.fullmatch("host-[0-9a-f]{16}", reg.default_name(UUID))
    # the default name never repeats the system UUID (often the BMC's Redfish system id), in any spelling
    needles = [("BMC system id", UUID)]
    assert bmc_data.bmc_match(reg.default_name(UUID), needles) is None
    assert reg.default_name(UUID) != reg.default_name(UUID[:-1] + "2")
    assert reg.host_name("web-1", FACTS, "metal3") == "web-1"
    assert reg.host_name("Web_1", FACTS, "ironic") == "Web_1"
    with pytest.raises(InvalidInput):
        reg.host_name("Web_1", FACTS, "metal3")
    with pytest.raises(InvalidInput):
        reg.host_name("a b", FACTS, "ironic")
    with pytest.raises(InvalidInput):
        reg.host_name(None, {"uuid": "not-a-uuid"}, "metal3")
    assert reg.normal_uuid(" 7A1B0000-0000-0000-0000-000000000001 ") == UUID
    assert reg.normal_uuid(None) is None


def test_boot_mac():
    assert reg.boot_mac(FACTS) == "52:54:00:aa:bb:01"
    assert reg.boot_mac(FACTS, "52-54-00-AA-BB-02") == "52:54:00:aa:bb:02"
    assert reg.boot_mac({"nics": []}) is None
    with pytest.raises(InvalidInput):
        reg.boot_mac(FACTS, "nope")


# ------------------------------------------------------------------ LLDP


def _port(macs, **lldp):
    return {"Id": "1", "Ethernet": {"AssociatedMACAddresses": macs, "LLDPReceive": lldp}}


def test_lldp_neighbours_from_redfish_ports():
    ports = [
        _port(
            ["52:54:00:AA:00:01"],
            ChassisId="C4-7E-E0-E4-55-3F",
            ChassisIdSubtype="MacAddr",
            PortId="45:74:68:65:72:6e:65:74:31:2f:37",  # "Ethernet1/7" as octets
            PortIdSubtype="IfName",
            SystemName="tor-1",
        ),
        _port(["52:54:00:aa:00:02"], ChassisId="00:00:00:00:00:01", ChassisIdSubtype="MacAddr", PortId="esiv-b"),
    ]
    assert reg.lldp_neighbours(ports) == {
        "52:54:00:aa:00:01": {"switch_id": "c4:7e:e0:e4:55:3f", "port_id": "Ethernet1/7", "switch_info": "tor-1"},
        "52:54:00:aa:00:02": {"switch_id": "00:00:00:00:00:01", "port_id": "esiv-b"},
    }


@pytest.mark.parametrize(
    "value, subtype, expected",
    [
        ("0A:1B:2C:3D", "IfName", "0A:1B:2C:3D"),  # octets that are not printable text stay as given
        ("67:65:31", "LocalAssign", "ge1"),
        ("67:65:31", "MacAddr", "67:65:31"),  # not a MAC: as given
        ("ge-0/0/1", "IfName", "ge-0/0/1"),  # plain text
        ("", "IfName", None),
        (None, None, None),
    ],
)
def test_lldp_id(value, subtype, expected):
    assert reg.lldp_id(value, subtype) == expected


@pytest.mark.parametrize(
    "ports",
    [
        None,
        [],
        ["not a dict"],
        [{"Ethernet": None}],
        [{"Ethernet": {"LLDPReceive": "x"}}],
        [_port(["52:54:00:aa:00:01"], PortId="p1")],  # no chassis ID
        [_port(["52:54:00:aa:00:01"], ChassisId="00:00:00:00:00:01")],  # no port ID
        [_port(["not a mac", None], ChassisId="00:00:00:00:00:01", PortId="p1")],
        [
            {
                "Ethernet": {
                    "AssociatedMACAddresses": "52:54:00:aa:00:01",
                    "LLDPReceive": {"ChassisId": "a", "PortId": "b"},
                }
            }
        ],
    ],
)
def test_lldp_neighbours_ignore_what_is_missing_or_odd(ports):
    assert reg.lldp_neighbours(ports) == {}
