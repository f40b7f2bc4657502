# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


import copy
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import apply_merge_patch
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import registration_model as reg
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish.classify import Classification

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
    return reg.desired_bmh(
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


def test_desired_bmh():
    host = bmh(claim_ns={"matches": "tenant-.*", "withLabel": None})
    assert host["spec"] == {
        "online": False,
        "bootMACAddress": "52:54:00:aa:bb:01",
        "bootMode": "UEFI",
        "bmc": {"address": ADDRESS, "credentialsName": "web-1-bmc-secret", "disableCertificateVerification": False},
        "hostClaimNamespaces": {"matches": "tenant-.*"},
    }
    assert host["metadata"]["annotations"] == {
        reg.SYSTEM_UUID_ANNOTATION: UUID,
        reg.MANAGED_LABELS_ANNOTATION: '["infra-kind"]',
    }
    assert "hostClaimNamespaces" not in bmh()["spec"]
    assert "bootMode" not in bmh(boot_mode=None)["spec"]
    assert bmh(boot_mode="Legacy")["spec"]["bootMode"] == "legacy"


def test_bmh_patch_of_itself_is_empty():
    host = bmh(claim_ns={"withLabel": ["a"]})
    assert reg.bmh_patch(host, host, True) == {}


def test_bmh_patch_keeps_others_labels_and_removes_our_stale_ones():
    current = bmh({"infra-kind": "large", "vendor": "fabrikam"})
    current["metadata"]["labels"]["rack"] = "r7"
    current["metadata"]["labels"]["infra-kind"] = "tampered"
    desired = bmh({"infra-kind": "large"})
    patch = reg.bmh_patch(current, desired, False)
    assert patch["metadata"]["labels"] == {"vendor": None, "infra-kind": "large"}
    after = apply_merge_patch(copy.deepcopy(current), patch)
    assert after["metadata"]["labels"] == {"infra-kind": "large", "rack": "r7"}
    assert json.loads(after["metadata"]["annotations"][reg.MANAGED_LABELS_ANNOTATION]) == ["infra-kind"]
    assert reg.bmh_patch(after, desired, False) == {}


def test_bmh_patch_spec_fields():
    current = bmh()
    current["spec"]["bmc"]["address"] = "redfish://old/redfish/v1/Systems/1"
    current["spec"]["bootMACAddress"] = "52:54:00:aa:bb:09"
    current["spec"]["online"] = True  # the tenant's power state: never touched
    current["spec"]["hostClaimNamespaces"] = {"matches": "x", "withLabel": ["y"]}
    desired = bmh(claim_ns={"matches": "tenant-.*"})
    patch = reg.bmh_patch(current, desired, True)
    assert patch["spec"] == {
        "bmc": {"address": ADDRESS},
        "bootMACAddress": "52:54:00:aa:bb:01",
        "hostClaimNamespaces": {"matches": "tenant-.*", "withLabel": None},
    }
    assert "hostClaimNamespaces" not in reg.bmh_patch(current, desired, False).get("spec", {})
    after = apply_merge_patch(copy.deepcopy(current), patch)
    assert after["spec"]["online"] is True
    assert reg.bmh_patch(after, desired, True) == {}


def test_bmh_patch_adopts_a_host_made_by_hand():
    current = {"metadata": {"name": "web-1", "labels": {"rack": "r1"}}, "spec": {"bmc": {"address": ADDRESS}}}
    patch = reg.bmh_patch(current, bmh(), False)
    after = apply_merge_patch(copy.deepcopy(current), patch)
    assert reg.bmh_patch(after, bmh(), False) == {}
    assert after["metadata"]["labels"] == {"rack": "r1", "infra-kind": "large"}


@given(
    st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.sampled_from(["x", "y"]), max_size=4),
    st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.sampled_from(["x", "y"]), max_size=4),
    st.dictionaries(st.sampled_from(["e", "f"]), st.sampled_from(["x", "y"]), max_size=2),
)
def test_property_reclassification_converges_and_spares_foreign_labels(old, new, foreign):
    current = bmh(old)
    current["metadata"]["labels"].update(foreign)
    desired = bmh(new)
    after = apply_merge_patch(copy.deepcopy(current), reg.bmh_patch(current, desired, False))
    assert reg.bmh_patch(after, desired, False) == {}
    for key, value in foreign.items():
        assert after["metadata"]["labels"][key] == value
    for key, value in new.items():
        assert after["metadata"]["labels"][key] == value
    for key in set(old) - set(new):
        assert key not in after["metadata"]["labels"]


def test_bmh_view_hides_the_address():
    view = reg.bmh_view(bmh())
    assert view["bmc"]["address"] == reg.HIDDEN
    assert ADDRESS not in json.dumps(view)
    assert reg.bmh_view(None) == {}


def test_secret():
    secret = reg.desired_secret("s", "metal3", "root", "p@ss")
    assert secret["data"] == {"username": "cm9vdA==", "password": "cEBzcw=="}
    assert not reg.secret_differs(secret, "root", "p@ss")
    assert reg.secret_differs(secret, "root", "other")
    assert reg.secret_differs(secret, "admin", "p@ss")
    assert reg.secret_differs(None, "root", "p@ss")
    assert reg.secret_differs({"data": {"username": "!!!"}}, "root", "p@ss")
    assert reg.secret_name("web-1") == "web-1-bmc-secret"


CLASS = Classification({"infra-kind": "large"}, "baremetal-large", ["CUSTOM_LARGE"], ["large"])
INFO = reg.driver_info("http://127.0.0.1:8000", "/redfish/v1/Systems/" + UUID, "admin", "pw", False)


def test_desired_node():
    node = reg.desired_node("web-1", FACTS, CLASS, INFO, owner="p1", interfaces={"deploy_interface": "ramdisk"})
    assert node == {
        "uuid": UUID,
        "name": "web-1",
        "driver": "redfish",
        "driver_info": INFO,
        "resource_class": "baremetal-large",
        "properties": {"cpus": 96, "memory_mb": 524288, "cpu_arch": "x86_64", "capabilities": "boot_mode:uefi"},
        "extra": {reg.SYSTEM_UUID_KEY: UUID, reg.MANAGED_TRAITS_KEY: ["CUSTOM_LARGE"]},
        "owner": "p1",
        "deploy_interface": "ramdisk",
    }
    plain = reg.desired_node("web-1", {"uuid": UUID}, Classification(), INFO)
    assert plain["resource_class"] == "baremetal" and plain["properties"] == {} and "owner" not in plain


def test_node_patch():
    desired = reg.desired_node("web-1", FACTS, CLASS, INFO, owner="p1")
    current = dict(desired, driver_info=dict(INFO, redfish_password="******"))
    assert reg.node_patch(current, desired) == []
    ops = reg.node_patch(current, desired, update_password=True)
    assert ops == [{"op": "replace", "path": "/driver_info/redfish_password", "value": "pw"}]
    current = dict(
        desired,
        resource_class="old",
        owner=None,
        properties={"cpus": 8},
        extra={},
        driver_info={k: v for k, v in INFO.items() if k != "redfish_password"},
    )
    ops = reg.node_patch(current, desired)
    paths = [(o["op"], o["path"]) for o in ops]
    assert ("add", "/driver_info/redfish_password") in paths
    assert ("replace", "/resource_class") in paths
    assert ("add", "/owner") in paths
    assert ("replace", "/properties/cpus") in paths
    assert ("add", "/properties/memory_mb") in paths
    assert ("add", "/extra/" + reg.MANAGED_TRAITS_KEY) in paths


def test_node_traits_keep_others_and_replace_ours():
    assert reg.node_traits(["CUSTOM_ADMIN", "CUSTOM_OLD"], ["CUSTOM_OLD"], ["CUSTOM_NEW"]) == [
        "CUSTOM_ADMIN",
        "CUSTOM_NEW",
    ]
    assert reg.node_traits(None, None, ["B", "A", "B"]) == ["A", "B"]


def test_ports_and_steps():
    assert reg.missing_ports(FACTS, ["52:54:00:AA:BB:01"]) == ["52:54:00:aa:bb:02"]
    assert reg.missing_ports(FACTS, None) == ["52:54:00:aa:bb:01", "52:54:00:aa:bb:02"]
    assert reg.provision_steps("enroll") == [("manage", "manageable"), ("provide", "available")]
    assert reg.provision_steps("manageable") == [("provide", "available")]
    assert reg.provision_steps("available") == []
    for state in ("active", "deploying", "clean failed", "verifying"):
        assert reg.provision_steps(state) is None


def test_node_view_hides_secrets():
    view = reg.node_view(
        dict(reg.desired_node("web-1", FACTS, CLASS, INFO), provision_state="available"),
        ["CUSTOM_LARGE"],
        ["52:54:00:aa:bb:01"],
    )
    text = json.dumps(view)
    assert "127.0.0.1" not in text and '"pw"' not in text
    assert view["driver_info"]["redfish_username"] == "admin"
    assert reg.node_view(None) == {}
