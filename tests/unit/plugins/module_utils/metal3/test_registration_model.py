# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


import copy
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import apply_merge_patch
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3 import registration_model as bmh_model
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share.sharing_policy import (
    ANNOTATION,
    host_policy,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import registration_model as reg
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.redfish.registration_facts import (
    ADDRESS,
    FACTS,
    UUID,
    bmh,
)

SYSTEM = "/redfish/v1/Systems/1"


def test_desired_bmh():
    host = bmh(claim_ns={"matches": "tenant-.*", "withLabel": None})
    assert host["spec"] == {
        "online": False,
        "bootMACAddress": "52:54:00:aa:bb:01",
        "bootMode": "UEFI",
        "bmc": {"address": ADDRESS, "credentialsName": "web-1-bmc-secret", "disableCertificateVerification": False},
    }
    assert host["metadata"]["annotations"] == {
        reg.SYSTEM_UUID_ANNOTATION: UUID,
        bmh_model.MANAGED_LABELS_ANNOTATION: '["infra-kind"]',
        ANNOTATION: '{"matches":"tenant-.*"}',
    }
    assert ANNOTATION not in bmh()["metadata"]["annotations"]
    assert ANNOTATION not in bmh(claim_ns={"matches": None, "withLabel": []})["metadata"]["annotations"]
    assert "bootMode" not in bmh(boot_mode=None)["spec"]
    assert bmh(boot_mode="Legacy")["spec"]["bootMode"] == "legacy"


def test_bmh_patch_of_itself_is_empty():
    host = bmh(claim_ns={"withLabel": ["a"]})
    assert bmh_model.bmh_patch(host, host, True) == {}


def test_bmh_patch_keeps_others_labels_and_removes_our_stale_ones():
    current = bmh({"infra-kind": "large", "vendor": "fabrikam"})
    current["metadata"]["labels"]["rack"] = "r7"
    current["metadata"]["labels"]["infra-kind"] = "tampered"
    desired = bmh({"infra-kind": "large"})
    patch = bmh_model.bmh_patch(current, desired, False)
    assert patch["metadata"]["labels"] == {"vendor": None, "infra-kind": "large"}
    after = apply_merge_patch(copy.deepcopy(current), patch)
    assert after["metadata"]["labels"] == {"infra-kind": "large", "rack": "r7"}
    assert json.loads(after["metadata"]["annotations"][bmh_model.MANAGED_LABELS_ANNOTATION]) == ["infra-kind"]
    assert bmh_model.bmh_patch(after, desired, False) == {}


def test_bmh_patch_spec_fields():
    current = bmh()
    current["spec"]["bmc"]["address"] = "redfish://old/redfish/v1/Systems/1"
    current["spec"]["bootMACAddress"] = "52:54:00:aa:bb:09"
    current["spec"]["online"] = True  # the tenant's power state: never touched
    desired = bmh()
    patch = bmh_model.bmh_patch(current, desired, False)
    assert patch == {"spec": {"bmc": {"address": ADDRESS}, "bootMACAddress": "52:54:00:aa:bb:01"}}
    after = apply_merge_patch(copy.deepcopy(current), patch)
    assert after["spec"]["online"] is True
    assert bmh_model.bmh_patch(after, desired, True) == {}


# ------------------------------------------------------------- sharing: the annotation, and the migration


def legacy_host(policy):
    """A registered host whose policy is still in spec.hostClaimNamespaces (written by an older release)."""
    host = bmh()
    host["spec"]["hostClaimNamespaces"] = policy
    return host


def test_bmh_patch_migrates_the_legacy_field_to_the_annotation_in_one_patch():
    current = legacy_host({"matches": "x", "withLabel": ["y"]})
    desired = bmh(claim_ns={"matches": "tenant-.*", "withLabel": None})
    patch = bmh_model.bmh_patch(current, desired, True)
    assert patch == {
        "metadata": {"annotations": {ANNOTATION: '{"matches":"tenant-.*"}'}},
        "spec": {"hostClaimNamespaces": None},
    }
    after = apply_merge_patch(copy.deepcopy(current), patch)
    assert "hostClaimNamespaces" not in after["spec"]
    assert host_policy(after) == ({"matches": "tenant-.*"}, [])
    assert bmh_model.bmh_patch(after, desired, True) == {}  # a second run writes nothing


def test_bmh_patch_combines_spec_changes_and_the_migration():
    current = legacy_host({"matches": "x"})
    current["spec"]["bootMACAddress"] = "52:54:00:aa:bb:09"
    patch = bmh_model.bmh_patch(current, bmh(claim_ns={"withLabel": ["t"]}), True)
    assert patch["spec"] == {"bootMACAddress": "52:54:00:aa:bb:01", "hostClaimNamespaces": None}
    assert patch["metadata"] == {"annotations": {ANNOTATION: '{"withLabel":["t"]}'}}


def test_without_the_option_sharing_and_the_legacy_field_are_left_alone():
    current = legacy_host({"matches": "x"})
    current["metadata"]["annotations"][ANNOTATION] = '{"matches":"y"}'
    assert bmh_model.bmh_patch(current, bmh(), False) == {}


def test_an_empty_option_stops_sharing():
    current = bmh(claim_ns={"matches": "x"})
    current["spec"]["hostClaimNamespaces"] = {"matches": "x"}
    patch = bmh_model.bmh_patch(current, bmh(claim_ns={"matches": None, "withLabel": None}), True)
    assert patch == {"metadata": {"annotations": {ANNOTATION: None}}, "spec": {"hostClaimNamespaces": None}}


def test_an_equal_policy_written_by_hand_is_kept():
    current = bmh()
    current["metadata"]["annotations"][ANNOTATION] = '{ "withLabel": ["t"] }'
    assert bmh_model.bmh_patch(current, bmh(claim_ns={"withLabel": ["t"]}), True) == {}


def test_bmh_view_shows_the_sharing_and_the_legacy_field():
    view = bmh_model.bmh_view(legacy_host({"matches": "x"}))
    assert view["sharing"] is None and view["legacy_sharing"] == {"matches": "x"}
    view = bmh_model.bmh_view(bmh(claim_ns={"withLabel": ["t"]}))
    assert view["sharing"] == {"withLabel": ["t"]} and "legacy_sharing" not in view


@pytest.mark.parametrize(
    "option,fragment",
    [
        ({"matches": "("}, "is not a valid RE2 pattern"),
        ({"withLabel": ["bad key"]}, "withLabel[0]"),
        ({"withLabel": ["k=bad value"]}, "withLabel[0]"),
    ],
)
def test_an_invalid_option_is_refused_before_anything_is_read(option, fragment):
    problems = bmh_model.claim_namespaces_problems(option)
    assert problems and fragment in problems[0]


@pytest.mark.parametrize("option", [None, {}, {"matches": None, "withLabel": None}, {"matches": "t-.*"}])
def test_a_valid_or_absent_option_has_no_problem(option):
    assert bmh_model.claim_namespaces_problems(option) == []


def test_bmh_patch_adopts_a_host_made_by_hand():
    current = {"metadata": {"name": "web-1", "labels": {"rack": "r1"}}, "spec": {"bmc": {"address": ADDRESS}}}
    patch = bmh_model.bmh_patch(current, bmh(), False)
    after = apply_merge_patch(copy.deepcopy(current), patch)
    assert bmh_model.bmh_patch(after, bmh(), False) == {}
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
    after = apply_merge_patch(copy.deepcopy(current), bmh_model.bmh_patch(current, desired, False))
    assert bmh_model.bmh_patch(after, desired, False) == {}
    for key, value in foreign.items():
        assert after["metadata"]["labels"][key] == value
    for key, value in new.items():
        assert after["metadata"]["labels"][key] == value
    for key in set(old) - set(new):
        assert key not in after["metadata"]["labels"]


def test_bmh_view_hides_the_address():
    view = bmh_model.bmh_view(bmh())
    assert view["bmc"]["address"] == reg.HIDDEN
    assert ADDRESS not in json.dumps(view)
    assert bmh_model.bmh_view(None) == {}


def test_bmh_view_shows_the_scheme_so_a_new_driver_is_a_visible_change():
    before = bmh()
    after = bmh()
    after["spec"]["bmc"]["address"] = "redfish-virtualmedia+http://" + ADDRESS.split("://", 1)[1]
    assert bmh_model.bmh_view(before)["bmc"]["scheme"] == ADDRESS.split("://", 1)[0]
    assert bmh_model.bmh_view(after)["bmc"]["scheme"] == "redfish-virtualmedia+http"
    assert bmh_model.bmh_view(before) != bmh_model.bmh_view(after)
    assert ADDRESS.split("://", 1)[1] not in json.dumps(bmh_model.bmh_view(after))


@pytest.mark.parametrize(
    "address,scheme",
    [
        ("Redfish-VirtualMedia+HTTP://bmc/redfish/v1/Systems/1", "redfish-virtualmedia+http"),
        ("idrac-redfish://10.0.0.1/redfish/v1/Systems/1", "idrac-redfish"),
        ("10.0.0.1:623", None),
        ("user:pw@bmc://x", None),
        ("", None),
        (None, None),
    ],
)
def test_address_scheme(address, scheme):
    assert bmh_model.address_scheme(address) == scheme


def test_secret():
    secret = bmh_model.desired_secret("s", "metal3", "root", "p@ss")
    assert secret["data"] == {"username": "cm9vdA==", "password": "cEBzcw=="}
    assert not bmh_model.secret_differs(secret, "root", "p@ss")
    assert bmh_model.secret_differs(secret, "root", "other")
    assert bmh_model.secret_differs(secret, "admin", "p@ss")
    assert bmh_model.secret_differs(None, "root", "p@ss")
    assert bmh_model.secret_differs({"data": {"username": "!!!"}}, "root", "p@ss")
    assert bmh_model.secret_name("web-1") == "web-1-bmc-secret"


@pytest.mark.parametrize(
    "current,wanted,patched",
    [
        ("redfish-virtualmedia+https://bmc" + SYSTEM, "redfish-virtualmedia://bmc" + SYSTEM, False),
        ("Redfish-VirtualMedia://bmc" + SYSTEM, "redfish-virtualmedia://bmc" + SYSTEM, False),
        ("redfish+https://bmc" + SYSTEM, "redfish://bmc" + SYSTEM, False),
        ("redfish+http://bmc" + SYSTEM, "redfish://bmc" + SYSTEM, True),
        ("redfish://bmc" + SYSTEM, "redfish-virtualmedia://bmc" + SYSTEM, True),
        ("redfish-virtualmedia+http://bmc" + SYSTEM, "redfish-virtualmedia+http://bmc:8000" + SYSTEM, True),
    ],
)
def test_an_equivalent_address_is_not_patched(current, wanted, patched):
    host, desired = bmh(), bmh()
    host["spec"]["bmc"]["address"] = current
    desired["spec"]["bmc"]["address"] = wanted
    patch = bmh_model.bmh_patch(host, desired, False)
    assert (patch.get("spec", {}).get("bmc") == {"address": wanted}) is patched
    if not patched:
        assert "spec" not in patch


def _host(**options):
    return bmh_model.desired_bmh(
        "web-1",
        "metal3",
        dict(FACTS, manufacturer="Fabrikam", model="R9", cpu_model="EPYC"),
        {},
        ADDRESS,
        "s",
        **options,
    )


def test_without_the_options_inspection_and_cleaning_are_the_operators_defaults():
    host = _host()
    assert "inspectionMode" not in host["spec"] and "automatedCleaningMode" not in host["spec"]
    assert bmh_model.HARDWARE_DETAILS_ANNOTATION not in host["metadata"]["annotations"]
    # an existing host's own settings are left as they are
    current = copy.deepcopy(host)
    current["spec"].update(inspectionMode="disabled", automatedCleaningMode="disabled")
    assert bmh_model.bmh_patch(current, host, False) == {}


def test_redfish_inspection_disables_the_agent_and_hands_over_the_redfish_facts():
    host = _host(inspection="redfish", automated_cleaning=False)
    assert host["spec"]["inspectionMode"] == "disabled"
    assert host["spec"]["automatedCleaningMode"] == "disabled"
    details = json.loads(host["metadata"]["annotations"][bmh_model.HARDWARE_DETAILS_ANNOTATION])
    assert details == {
        "systemVendor": {"manufacturer": "Fabrikam", "productName": "R9"},
        "cpu": {"arch": "x86_64", "model": "EPYC", "count": 96},
        "ramMebibytes": 512 * 1024,
        "nics": [{"name": "a", "mac": "52:54:00:aa:bb:01"}, {"name": "b", "mac": "52:54:00:aa:bb:02"}],
    }
    assert bmh_model.hardware_details({"uuid": UUID}) == {}


def test_the_hardware_annotation_is_written_once_the_modes_on_every_run():
    """The operator removes the annotation once it took the details: a rerun must not write it again."""
    host = _host(inspection="redfish", automated_cleaning=True)
    consumed = copy.deepcopy(host)
    del consumed["metadata"]["annotations"][bmh_model.HARDWARE_DETAILS_ANNOTATION]
    assert bmh_model.bmh_patch(consumed, host, False) == {}
    changed = copy.deepcopy(consumed)
    changed["spec"].update(inspectionMode="agent", automatedCleaningMode="disabled")
    assert bmh_model.bmh_patch(changed, host, False) == {
        "spec": {"inspectionMode": "disabled", "automatedCleaningMode": "metadata"}
    }
    assert bmh_model.bmh_patch(consumed, _host(inspection="agent"), False) == {"spec": {"inspectionMode": "agent"}}


def test_bmh_view_shows_inspection_and_cleaning():
    view = bmh_model.bmh_view(_host(inspection="redfish", automated_cleaning=True))
    assert (view["inspectionMode"], view["automatedCleaningMode"]) == ("disabled", "metadata")
    assert (bmh_model.cleaning_mode(None), bmh_model.cleaning_mode(False)) == (None, "disabled")
