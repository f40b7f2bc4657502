# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3 import registration_model as bmh_model
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import registration_model as reg

UUID = "7a1b0000-0000-0000-0000-000000000001"
FACTS = {
    "uuid": UUID,
    "cpus": 96,
    "memory_gib": 512,
    "cpu_arch": "x86_64",
    "boot_mode": "UEFI",
    "nics": [{"name": "a", "mac": "52:54:00:aa:bb:01"}, {"name": "b", "mac": "52:54:00:aa:bb:02"}],
}
ADDRESS = "redfish+http://127.0.0.1:8000/redfish/v1/Systems/" + UUID


def bmh(labels=None, claim_ns=None, **kw):
    return bmh_model.desired_bmh(
        "web-1",
        "metal3",
        dict(FACTS, **kw),
        labels if labels is not None else {"infra-kind": "large"},
        ADDRESS,
        "web-1-bmc-secret",
        host_claim_namespaces=claim_ns,
    )


def test_names():
    assert reg.host_name(None, FACTS, "metal3") == "host-" + UUID
    assert reg.host_name(None, FACTS, "ironic") == "host-" + UUID
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
