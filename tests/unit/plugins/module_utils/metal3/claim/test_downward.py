# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Claim -> host (downward): image, power, Secret copies and the reserved annotations passed down, nothing else."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.common import merge_patch as mpatch
from ansible_collections.baremetal.tenancy.plugins.module_utils.common import selectors
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import Conflict, InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3 import api as m3api
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import downward
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import spec as m3spec
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.parsed import parse_claim
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.metal3_objects import (
    IMAGE,
    bound_pair,
    make_claim,
    make_host,
    ref_to,
)

COPIES = {
    "userData": "hostclaim-x-userdata",
    "networkData": "hostclaim-x-networkdata",
    "metaData": "hostclaim-x-metadata",
}


def test_downward_patch_applies_image_online_and_secret_copies():
    claim, host = bound_pair(
        spec={
            "online": True,
            "image": dict(IMAGE),
            "userData": {"name": "my-user-data"},
            "networkData": "my-network-data",
        }
    )
    patch = downward.downward_patch(parse_claim(claim), host, COPIES)
    assert patch["spec"]["online"] is True
    assert patch["spec"]["image"] == IMAGE
    assert patch["spec"]["userData"] == {"name": "hostclaim-x-userdata", "namespace": "infra"}
    assert patch["spec"]["networkData"] == {"name": "hostclaim-x-networkdata", "namespace": "infra"}
    assert "metaData" not in patch["spec"]
    assert patch["metadata"]["resourceVersion"] == host["metadata"]["resourceVersion"]
    assert set(patch["spec"]) <= {"online", "image", "userData", "networkData", "metaData"}
    assert "consumerRef" not in patch["spec"] and "bmc" not in patch["spec"]


def test_downward_patch_never_points_into_the_tenant_namespace():
    claim, host = bound_pair(spec={"userData": "my-user-data", "metaData": "my-meta", "networkData": "my-net"})
    patch = downward.downward_patch(parse_claim(claim), host, COPIES)
    for field in m3spec.DATA_FIELDS:
        assert patch["spec"][field]["namespace"] == "infra"
        assert not patch["spec"][field]["name"].startswith("my-")


def test_downward_patch_is_idempotent():
    claim, host = bound_pair(
        spec={"online": True, "image": dict(IMAGE), "userData": "ud"},
        claim_annotations={"host.metal3.io/reboot.hold": ""},
    )
    patch = downward.downward_patch(parse_claim(claim), host, COPIES)
    applied = mpatch.apply_merge_patch(host, patch)
    assert downward.downward_patch(parse_claim(claim), applied, COPIES) == {}


def test_downward_patch_clears_what_the_claim_dropped():
    claim, host = bound_pair(
        spec={"online": False, "image": {"url": "https://x/live.iso", "format": "live-iso"}},
        image=dict(IMAGE),
        online=True,
    )
    host["spec"]["userData"] = {"name": "old-copy", "namespace": "infra"}
    patch = downward.downward_patch(parse_claim(claim), host, {})
    assert patch["spec"]["online"] is False
    assert patch["spec"]["userData"] is None
    assert patch["spec"]["image"] == {
        "url": "https://x/live.iso",
        "checksum": None,
        "checksumType": None,
        "format": "live-iso",
    }
    applied = mpatch.apply_merge_patch(host, patch)
    assert applied["spec"]["image"] == {"url": "https://x/live.iso", "format": "live-iso"}
    claim["spec"].pop("image")
    assert (
        mpatch.apply_merge_patch(applied, downward.downward_patch(parse_claim(claim), applied, {}))["spec"].get("image")
        is None
    )


def test_downward_patch_requires_binding():
    claim = make_claim()
    with pytest.raises(Conflict) as exc:
        downward.downward_patch(parse_claim(claim), make_host(), COPIES)
    assert exc.value.obj == "BareMetalHost infra/h1" and "HostClaim tenant-a/web-1" in exc.value.cause
    other = make_claim(name="web-2")
    with pytest.raises(Conflict):
        downward.downward_patch(parse_claim(claim), make_host(consumer=ref_to(other)), COPIES)


def test_downward_patch_requires_copy_names():
    claim, host = bound_pair(spec={"userData": "ud"})
    with pytest.raises(InvalidInput) as exc:
        downward.downward_patch(parse_claim(claim), host, {})
    assert "userData" in exc.value.cause and exc.value.obj == "HostClaim tenant-a/web-1"
    with pytest.raises(InvalidInput):
        downward.downward_patch(parse_claim(claim), host, {"userData": "Bad_Name"})


def test_downward_patch_validates_the_claim():
    claim, host = bound_pair(spec={"image": {"url": "https://x/os.img"}})
    with pytest.raises(InvalidInput, match="checksum is required"):
        downward.downward_patch(parse_claim(claim), host, {})


@pytest.mark.parametrize(
    "claim_annotations,expected",
    [
        ({"host.metal3.io/reboot": ""}, {"reboot.metal3.io": ""}),
        ({"host.metal3.io/reboot": '{"mode": "hard"}'}, {"reboot.metal3.io": '{"mode": "hard"}'}),
        (
            {"host.metal3.io/reboot": '{"mode":"soft","force":true}'},
            {"reboot.metal3.io": '{"mode":"soft","force":true}'},
        ),
        ({"host.metal3.io/inspect": ""}, {"inspect.metal3.io": ""}),
        ({"host.metal3.io/reboot.upgrade": ""}, {"reboot.metal3.io/hostclaim-upgrade": ""}),
        ({"host.metal3.io/inspect": "disabled"}, {}),
        ({"host.metal3.io/reboot": '{"mode": "cold"}'}, {}),
        ({"host.metal3.io/reboot": '{"mode": "hard", "x": 1}'}, {}),
        ({"host.metal3.io/reboot": '{"force": "yes"}'}, {}),
        ({"host.metal3.io/reboot": "now"}, {}),
        ({"host.metal3.io/reboot": "[]"}, {}),
        ({"host.metal3.io/hardwaredetails": "{}"}, {}),
        ({"host.metal3.io/paused": ""}, {}),
        ({"host.metal3.io/detached": ""}, {}),
        ({"host.metal3.io/reboot.": ""}, {}),
        ({"host.metal3.io/reboot." + "x" * 55: ""}, {}),
        ({"host.metal3.io/reboot." + "x" * 53: ""}, {"reboot.metal3.io/hostclaim-" + "x" * 53: ""}),
        ({"baremetalhost.metal3.io/paused": ""}, {}),
        # baremetal-operator's own claim keys (its webhook validates them on HostClaims) mean the same
        ({"reboot.metal3.io": ""}, {"reboot.metal3.io": ""}),
        ({"reboot.metal3.io/maint": '{"mode": "soft"}'}, {"reboot.metal3.io/hostclaim-maint": '{"mode": "soft"}'}),
        ({"reboot.metal3.io": "now"}, {}),
        ({"reboot.metal3.io/": ""}, {}),
        ({"inspect.metal3.io": "disabled"}, {}),
        ({"kubectl.kubernetes.io/last-applied-configuration": "{}"}, {}),
        ({"team": "a"}, {}),
    ],
)
def test_passed_annotations_mapping(claim_annotations, expected):
    mapping, ignored = downward.passed_annotations(claim_annotations)
    assert mapping == expected
    reserved = [k for k in claim_annotations if downward.is_request_key(k)]
    assert sorted(ignored) == sorted(k for k in reserved if not expected)


def test_downward_annotations_and_tracking():
    claim, host = bound_pair(
        claim_annotations={
            "host.metal3.io/reboot": "",
            "host.metal3.io/reboot.fw": "",
            "host.metal3.io/bogus": "",
            "team": "a",
        }
    )
    patch = downward.downward_patch(parse_claim(claim), host, {})
    annotations = patch["metadata"]["annotations"]
    assert annotations == {
        "reboot.metal3.io": "",
        "reboot.metal3.io/hostclaim-fw": "",
        m3api.PASSED_ANNOTATIONS: '["reboot.metal3.io/hostclaim-fw"]',
    }


def test_hold_is_removed_when_the_tenant_removes_it():
    claim, host = bound_pair(claim_annotations={"host.metal3.io/reboot.fw": ""})
    host = mpatch.apply_merge_patch(host, downward.downward_patch(parse_claim(claim), host, {}))
    assert "reboot.metal3.io/hostclaim-fw" in host["metadata"]["annotations"]
    claim["metadata"]["annotations"] = {}
    patch = downward.downward_patch(parse_claim(claim), host, {})
    assert patch["metadata"]["annotations"] == {"reboot.metal3.io/hostclaim-fw": None, m3api.PASSED_ANNOTATIONS: None}


def test_admin_annotations_are_never_removed_or_overwritten():
    admin = {
        "reboot.metal3.io/maintenance": "",
        "inspect.metal3.io": "disabled",
        m3api.PAUSED_ANNOTATION: "",
        m3api.PASSED_ANNOTATIONS: '["reboot.metal3.io/maintenance", "inspect.metal3.io"]',
    }
    claim, host = bound_pair(claim_annotations={"host.metal3.io/reboot.maintenance": ""}, host_annotations=admin)
    annotations = downward.downward_patch(parse_claim(claim), host, {})["metadata"]["annotations"]
    assert "reboot.metal3.io/maintenance" not in annotations
    assert "inspect.metal3.io" not in annotations
    assert m3api.PAUSED_ANNOTATION not in annotations
    assert annotations["reboot.metal3.io/hostclaim-maintenance"] == ""


@pytest.mark.parametrize(
    "host_args,passed",
    [
        ({"state": "available"}, True),
        ({"state": "ready"}, True),
        ({"state": "provisioned"}, False),
        ({"state": "provisioning"}, False),
        ({"state": "deprovisioning"}, False),
        ({"state": "registering"}, False),
        ({"state": "available", "host_annotations": {"inspect.metal3.io": "disabled"}}, False),
        ({"state": "available", "inspection_mode": "disabled"}, False),
        ({"state": "available", "inspection_mode": "agent"}, True),
    ],
)
def test_inspection_request_waits_until_the_operator_would_honour_it(host_args, passed):
    """The real baremetal-operator inspects again only an available host whose inspection is not disabled;
    ``inspect.metal3.io: disabled`` is the owner's and never overwritten. Until then the request stays on the claim."""
    mode = host_args.pop("inspection_mode", None)
    claim, host = bound_pair(claim_annotations={"host.metal3.io/inspect": ""}, **host_args)
    if mode:
        host["spec"]["inspectionMode"] = mode
    annotations = downward.downward_patch(parse_claim(claim), host, {}).get("metadata", {}).get("annotations", {})
    cleanup = downward.one_shot_cleanup_patch(claim, host)
    if passed:
        assert annotations["inspect.metal3.io"] == ""
        assert cleanup == {"metadata": {"annotations": {"host.metal3.io/inspect": None}}}
        assert downward.inspection_refusal(host) is None
    else:
        assert "inspect.metal3.io" not in annotations
        assert cleanup == {}
        assert downward.inspection_refusal(host)


def test_one_shot_cleanup_patch():
    claim = make_claim(
        annotations={
            "host.metal3.io/reboot": "",
            "host.metal3.io/inspect": "",
            "host.metal3.io/reboot.fw": "",
            "team": "a",
        }
    )
    assert downward.one_shot_cleanup_patch(claim) == {
        "metadata": {"annotations": {"host.metal3.io/reboot": None, "host.metal3.io/inspect": None}}
    }
    assert downward.one_shot_cleanup_patch(make_claim(annotations={"host.metal3.io/inspect": "disabled"})) == {}
    assert downward.one_shot_cleanup_patch(make_claim()) == {}


ANNOTATION_KEYS = st.one_of(
    st.sampled_from(
        [
            "team",
            "example.com/x",
            "reboot.metal3.io",
            "inspect.metal3.io",
            "baremetalhost.metal3.io/paused",
            "host.metal3.io/detached",
            "host.metal3.io/reboot",
            "host.metal3.io/inspect",
            "inspect.metal3.io/hardwaredetails",
            "reboot.metal3.io/x",
            m3api.PASSED_ANNOTATIONS,
        ]
    ),
    st.from_regex(r"\Ahost\.metal3\.io/[a-z][a-z.-]{0,12}[a-z]\Z", fullmatch=True),
)


@settings(max_examples=200)
@given(st.dictionaries(ANNOTATION_KEYS, st.sampled_from(["", "disabled", '{"mode":"hard"}', "{}", "x"]), max_size=6))
def test_only_mapped_reserved_annotations_cross_downward(claim_annotations):
    claim, host = bound_pair(claim_annotations=claim_annotations)
    patch = downward.downward_patch(parse_claim(claim), host, {})
    crossed = (patch.get("metadata") or {}).get("annotations") or {}
    allowed = {"reboot.metal3.io", "inspect.metal3.io", m3api.PASSED_ANNOTATIONS}
    for key, value in crossed.items():
        assert key in allowed or key.startswith("reboot.metal3.io/hostclaim-"), key
        if key == "inspect.metal3.io":
            assert value == "" and claim_annotations.get("host.metal3.io/inspect") == ""
    assert "spec" not in patch or set(patch["spec"]) <= {"online", "image", "userData", "networkData", "metaData"}


def test_secret_copy_names():
    claim = make_claim(
        uid="0b7a3c1e-1111-2222-3333-444455556666", spec={"userData": "ud", "networkData": {"name": "nd"}}
    )
    names = downward.secret_copy_names(parse_claim(claim))
    assert names == {
        "userData": "hostclaim-0b7a3c1e-1111-2222-3333-444455556666-userdata",
        "networkData": "hostclaim-0b7a3c1e-1111-2222-3333-444455556666-networkdata",
    }
    for name in names.values():
        assert selectors.dns1123_subdomain_problem(name) is None
    other = make_claim(uid="", spec={"metaData": "md"})
    assert selectors.dns1123_subdomain_problem(downward.secret_copy_names(parse_claim(other))["metaData"]) is None
    assert downward.secret_copy_names(parse_claim(make_claim())) == {}


def test_secret_copy_names_differ_between_claims():
    first = downward.secret_copy_names(parse_claim(make_claim(name="a", uid="", spec={"userData": "ud"})))
    second = downward.secret_copy_names(parse_claim(make_claim(name="b", uid="", spec={"userData": "ud"})))
    assert first != second
