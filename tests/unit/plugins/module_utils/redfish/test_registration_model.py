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
