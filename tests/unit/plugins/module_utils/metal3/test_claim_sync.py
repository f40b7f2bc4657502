# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.common import merge_patch as mpatch
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import Conflict, InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3 import api as m3api
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3 import claim_spec as m3spec
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3 import claim_sync as cs
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3 import claim_view as m3view
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.metal3_objects import (
    BMC_ADDRESS,
    BMC_IP,
    BMC_PASSWORD,
    BMC_SECRET,
    BMC_USER,
    BMC_VALUES,
    make_claim,
    make_host,
    ref_to,
)

NOW = "2026-03-01T10:00:00Z"
LATER = "2026-03-01T11:00:00Z"
IMAGE = {
    "url": "https://images.example.com/os.qcow2",
    "checksum": "https://images.example.com/os.qcow2.sha256sum",
    "checksumType": "sha256",
    "format": "qcow2",
}


def bound_pair(spec=None, claim_annotations=None, host_annotations=None, **host_args):
    claim = make_claim(spec=spec, annotations=claim_annotations)
    host = make_host(consumer=ref_to(claim), annotations=host_annotations, **host_args)
    return claim, host


def prune_empty(value):
    """Kubernetes does not distinguish an empty map from an absent one."""
    if isinstance(value, dict):
        pruned = dict((k, prune_empty(v)) for k, v in value.items())
        return dict((k, v) for k, v in pruned.items() if v != {})
    return value


# ------------------------------------------------------------ claim spec


def test_minimal_spec_is_normalised():
    spec = m3spec.validate_claim_spec({}, "web-1")
    assert spec == {
        "online": False,
        "kind": "baremetal",
        "hostSelector": {"matchLabels": {}, "matchExpressions": []},
        "image": None,
        "nodeReuse": None,
        "credentials": None,
        "userData": None,
        "networkData": None,
        "metaData": None,
    }
    assert m3spec.validate_claim_spec(None, "web-1") == spec


def test_full_spec_is_normalised():
    spec = m3spec.validate_claim_spec(
        {
            "online": True,
            "kind": "baremetal",
            "hostSelector": {"matchLabels": {"infra-kind": "medium"}},
            "image": dict(IMAGE),
            "userData": {"name": "my-user-data"},
            "networkData": "my-network-data",
            "metaData": None,
            "nodeReuse": "md-0",
        },
        "web-1",
        "tenant-a",
    )
    assert spec["online"] is True
    assert spec["image"] == IMAGE
    assert spec["userData"] == "my-user-data" and spec["networkData"] == "my-network-data"
    assert spec["metaData"] is None
    assert spec["nodeReuse"] == "md-0"
    assert spec["hostSelector"]["matchLabels"] == {"infra-kind": "medium"}


@pytest.mark.parametrize("kind", ["baremetal", "baremetalhost"])
def test_the_proposals_kinds_are_accepted(kind):
    assert m3spec.validate_claim_spec({"kind": kind, "userData": {"name": "my-user-data"}}, "my-host")["kind"] == kind


@pytest.mark.parametrize(
    "spec,fragment",
    [
        ({"online": "true"}, "spec.online"),
        ({"online": 1}, "spec.online"),
        ({"kind": "virtualmachine"}, "spec.kind"),
        ({"kind": "BareMetalHost"}, "spec.kind"),
        ({"hostSelector": {"matchExpressions": [{"key": "a", "operator": "Like"}]}}, "unknown operator 'Like'"),
        ({"image": "https://x/os.img"}, "spec.image"),
        ({"image": {"url": "https://x/os.img"}}, "checksum is required"),
        ({"image": {"url": "https://x/os.img", "format": "qcow2"}}, "checksum is required"),
        ({"image": {"checksum": "abc"}}, "spec.image.url"),
        ({"image": {"url": "", "checksum": "abc"}}, "spec.image.url"),
        ({"image": {"url": "ftp://x/os.img", "checksum": "abc"}}, "http:// or https://"),
        ({"image": {"url": "file:///etc/shadow", "checksum": "abc"}}, "http:// or https://"),
        ({"image": {"url": "https:///os.img", "checksum": "abc"}}, "with a host"),
        ({"image": {"url": "https://u:p@x/os.img", "checksum": "abc"}}, "user information"),
        ({"image": {"url": "https://x/a b", "checksum": "abc"}}, "white space"),
        ({"image": {"url": "https://x/os.img", "checksum": "abc", "checksumType": "sha1"}}, "checksumType"),
        ({"image": {"url": "https://x/os.img", "checksum": "abc", "format": "iso"}}, "image.format"),
        ({"image": {"url": "https://x/os.img", "checksum": "ab cd"}}, "image.checksum"),
        ({"image": {"url": "https://x/os.img", "checksum": ""}}, "image.checksum"),
        ({"image": {"url": "https://x/os.img", "checksum": "ftp://x/sum"}}, "image.checksum"),
        ({"image": {"url": "https://x/os.img", "checksum": "abcd", "checksumType": "md5"}}, "32 hex digits"),
        ({"image": {"url": "https://x/os.img", "checksum": "a" * 32, "checksumType": "sha256"}}, "64 hex digits"),
        ({"image": {"url": "https://x/os.img", "checksum": "abc", "diskFormat": "raw"}}, "'diskFormat'"),
        ({"userData": "My_Data"}, "spec.userData"),
        ({"userData": {"name": "ud", "namespace": "other"}}, 'only "name"'),
        ({"networkData": {"name": None}}, "spec.networkData"),
        ({"metaData": 5}, "spec.metaData"),
        ({"nodeReuse": "Not_A_Label"}, "spec.nodeReuse"),
        ({"nodeReuse": "a" * 64}, "spec.nodeReuse"),
        ({"credentials": "Bad Name"}, "spec.credentials"),
        ({"poweredOn": True}, "unknown field(s) 'poweredOn'"),
        ("online", "spec must be a mapping"),
    ],
)
def test_invalid_specs_name_claim_and_field(spec, fragment):
    with pytest.raises(InvalidInput) as exc:
        m3spec.validate_claim_spec(spec, "web-1", "tenant-a")
    assert exc.value.obj == "HostClaim tenant-a/web-1"
    assert fragment in exc.value.cause, exc.value.cause


def test_claim_name_without_namespace_in_errors():
    with pytest.raises(InvalidInput) as exc:
        m3spec.validate_claim_spec({"online": "yes"}, "web-1")
    assert exc.value.obj == "HostClaim web-1"


@pytest.mark.parametrize(
    "image",
    [
        {"url": "https://x/live.iso", "format": "live-iso"},
        {"url": "http://x/os.raw", "checksum": "a" * 32, "checksumType": "md5", "format": "raw"},
        {"url": "https://x/os.img", "checksum": "b" * 128, "checksumType": "sha512"},
        {"url": "https://x/os.img", "checksum": "c" * 64, "checksumType": "auto", "format": "vmdk"},
        {"url": "HTTPS://x/os.img", "checksum": "https://x/os.img.md5", "format": "vdi"},
        {"url": "https://x/os.img", "checksum": "sha256:" + "c" * 64},
    ],
)
def test_valid_images(image):
    spec = m3spec.validate_claim_spec({"image": image}, "web-1")
    assert spec["image"]["url"] == image["url"]
    assert set(spec["image"]) == set(m3spec.IMAGE_FIELDS)


def test_node_reuse_label_value_length_is_checked_with_namespace():
    m3spec.validate_claim_spec({"nodeReuse": "a" * 50}, "web-1", "tenant-a")
    with pytest.raises(InvalidInput, match="at most 63"):
        m3spec.validate_claim_spec({"nodeReuse": "a" * 60}, "web-1", "tenant-a")


def test_node_reuse_value():
    assert m3spec.node_reuse_value("tenant-a", "md-0") == "tenant-a.md-0"
    assert m3spec.node_reuse_value("tenant-a", None) is None
    assert m3spec.node_reuse_value(None, "md-0") is None
    assert m3spec.node_reuse_value("t" * 40, "m" * 40) is None


def test_validate_claim_uses_metadata():
    claim = make_claim(spec={"online": "no"})
    with pytest.raises(InvalidInput) as exc:
        cs.validate_claim(claim)
    assert exc.value.obj == "HostClaim tenant-a/web-1"


# ------------------------------------------------------------ consumerRef


def test_consumer_ref_for():
    claim = make_claim()
    assert cs.consumer_ref_for(claim) == {
        "apiVersion": "metal3.io/v1alpha1",
        "kind": "HostClaim",
        "namespace": "tenant-a",
        "name": "web-1",
        "uid": "uid-tenant-a-web-1",
    }
    del claim["metadata"]["uid"]
    assert "uid" not in cs.consumer_ref_for(claim)


@pytest.mark.parametrize(
    "change,expected",
    [
        ({}, True),
        ({"uid": None}, True),
        ({"uid": "uid-of-a-deleted-claim"}, False),
        ({"name": "web-2"}, False),
        ({"namespace": "tenant-b"}, False),
        ({"kind": "Metal3Machine"}, False),
        ({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1"}, False),
    ],
)
def test_claim_ref_matches(change, expected):
    claim = make_claim()
    ref = ref_to(claim)
    ref.update(change)
    ref = dict((k, v) for k, v in ref.items() if v is not None)
    assert cs.claim_ref_matches(make_host(consumer=ref), claim) is expected


def test_claim_ref_matches_without_consumer():
    claim = make_claim()
    assert not cs.claim_ref_matches(make_host(), claim)
    assert not cs.claim_ref_matches(make_host(consumer={}), claim)
    assert not cs.claim_ref_matches(None, claim)


def test_claim_without_uid_matches_ref_with_uid():
    claim = make_claim()
    host = make_host(consumer=ref_to(claim))
    del claim["metadata"]["uid"]
    assert cs.claim_ref_matches(host, claim)


# ----------------------------------------------------------- merge patches


@pytest.mark.parametrize(
    "target,patch,result",
    [
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ],
)
def test_apply_merge_patch_rfc7386_examples(target, patch, result):
    before = copy.deepcopy(target)
    assert mpatch.apply_merge_patch(target, patch) == result
    assert target == before


JSONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.sampled_from(["", "a", "b"])),
    lambda inner: st.one_of(
        st.lists(inner, max_size=2), st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3)
    ),
    max_leaves=8,
)
OBJECTS = st.dictionaries(st.sampled_from(["a", "b", "c"]), JSONISH, max_size=3)


@settings(max_examples=300)
@given(OBJECTS, OBJECTS)
def test_minimal_patch_has_the_same_effect(current, patch):
    minimal = mpatch.minimal_patch(current, patch)
    assert prune_empty(mpatch.apply_merge_patch(current, minimal)) == prune_empty(
        mpatch.apply_merge_patch(current, patch)
    )
    assert mpatch.minimal_patch(mpatch.apply_merge_patch(current, patch), patch) == {}


def test_minimal_patch_distinguishes_false_and_zero():
    assert mpatch.minimal_patch({"online": 0}, {"online": False}) == {"online": False}
    assert mpatch.minimal_patch({"online": False}, {"online": False}) == {}


def test_with_precondition():
    host = make_host(resource_version="42")
    assert mpatch.with_precondition({}, host) == {}
    assert mpatch.with_precondition({"spec": {"online": True}}, host) == {
        "spec": {"online": True},
        "metadata": {"resourceVersion": "42"},
    }
    del host["metadata"]["resourceVersion"]
    assert mpatch.with_precondition({"spec": {"online": True}}, host) == {"spec": {"online": True}}


# -------------------------------------------------------------- downward

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
    patch = cs.downward_patch(claim, host, COPIES)
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
    patch = cs.downward_patch(claim, host, COPIES)
    for field in m3spec.DATA_FIELDS:
        assert patch["spec"][field]["namespace"] == "infra"
        assert not patch["spec"][field]["name"].startswith("my-")


def test_downward_patch_is_idempotent():
    claim, host = bound_pair(
        spec={"online": True, "image": dict(IMAGE), "userData": "ud"},
        claim_annotations={"host.metal3.io/reboot.hold": ""},
    )
    patch = cs.downward_patch(claim, host, COPIES)
    applied = mpatch.apply_merge_patch(host, patch)
    assert cs.downward_patch(claim, applied, COPIES) == {}


def test_downward_patch_clears_what_the_claim_dropped():
    claim, host = bound_pair(
        spec={"online": False, "image": {"url": "https://x/live.iso", "format": "live-iso"}},
        image=dict(IMAGE),
        online=True,
    )
    host["spec"]["userData"] = {"name": "old-copy", "namespace": "infra"}
    patch = cs.downward_patch(claim, host, {})
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
    assert mpatch.apply_merge_patch(applied, cs.downward_patch(claim, applied, {}))["spec"].get("image") is None


def test_downward_patch_requires_binding():
    claim = make_claim()
    with pytest.raises(Conflict) as exc:
        cs.downward_patch(claim, make_host(), COPIES)
    assert exc.value.obj == "BareMetalHost infra/h1" and "HostClaim tenant-a/web-1" in exc.value.cause
    other = make_claim(name="web-2")
    with pytest.raises(Conflict):
        cs.downward_patch(claim, make_host(consumer=ref_to(other)), COPIES)


def test_downward_patch_requires_copy_names():
    claim, host = bound_pair(spec={"userData": "ud"})
    with pytest.raises(InvalidInput) as exc:
        cs.downward_patch(claim, host, {})
    assert "userData" in exc.value.cause and exc.value.obj == "HostClaim tenant-a/web-1"
    with pytest.raises(InvalidInput):
        cs.downward_patch(claim, host, {"userData": "Bad_Name"})


def test_downward_patch_validates_the_claim():
    claim, host = bound_pair(spec={"image": {"url": "https://x/os.img"}})
    with pytest.raises(InvalidInput, match="checksum is required"):
        cs.downward_patch(claim, host, {})


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
        ({"reboot.metal3.io": ""}, {}),
        ({"inspect.metal3.io": "disabled"}, {}),
        ({"kubectl.kubernetes.io/last-applied-configuration": "{}"}, {}),
        ({"team": "a"}, {}),
    ],
)
def test_passed_annotations_mapping(claim_annotations, expected):
    mapping, ignored = cs.passed_annotations(claim_annotations)
    assert mapping == expected
    reserved = [k for k in claim_annotations if k.startswith("host.metal3.io/")]
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
    patch = cs.downward_patch(claim, host, {})
    annotations = patch["metadata"]["annotations"]
    assert annotations == {
        "reboot.metal3.io": "",
        "reboot.metal3.io/hostclaim-fw": "",
        m3api.PASSED_ANNOTATIONS: '["reboot.metal3.io/hostclaim-fw"]',
    }


def test_hold_is_removed_when_the_tenant_removes_it():
    claim, host = bound_pair(claim_annotations={"host.metal3.io/reboot.fw": ""})
    host = mpatch.apply_merge_patch(host, cs.downward_patch(claim, host, {}))
    assert "reboot.metal3.io/hostclaim-fw" in host["metadata"]["annotations"]
    claim["metadata"]["annotations"] = {}
    patch = cs.downward_patch(claim, host, {})
    assert patch["metadata"]["annotations"] == {"reboot.metal3.io/hostclaim-fw": None, m3api.PASSED_ANNOTATIONS: None}


def test_admin_annotations_are_never_removed_or_overwritten():
    admin = {
        "reboot.metal3.io/maintenance": "",
        "inspect.metal3.io": "disabled",
        m3api.PAUSED_ANNOTATION: "",
        m3api.PASSED_ANNOTATIONS: '["reboot.metal3.io/maintenance", "inspect.metal3.io"]',
    }
    claim, host = bound_pair(claim_annotations={"host.metal3.io/reboot.maintenance": ""}, host_annotations=admin)
    annotations = cs.downward_patch(claim, host, {})["metadata"]["annotations"]
    assert "reboot.metal3.io/maintenance" not in annotations
    assert "inspect.metal3.io" not in annotations
    assert m3api.PAUSED_ANNOTATION not in annotations
    assert annotations["reboot.metal3.io/hostclaim-maintenance"] == ""


def test_one_shot_cleanup_patch():
    claim = make_claim(
        annotations={
            "host.metal3.io/reboot": "",
            "host.metal3.io/inspect": "",
            "host.metal3.io/reboot.fw": "",
            "team": "a",
        }
    )
    assert cs.one_shot_cleanup_patch(claim) == {
        "metadata": {"annotations": {"host.metal3.io/reboot": None, "host.metal3.io/inspect": None}}
    }
    assert cs.one_shot_cleanup_patch(make_claim(annotations={"host.metal3.io/inspect": "disabled"})) == {}
    assert cs.one_shot_cleanup_patch(make_claim()) == {}


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
    patch = cs.downward_patch(claim, host, {})
    crossed = (patch.get("metadata") or {}).get("annotations") or {}
    allowed = {"reboot.metal3.io", "inspect.metal3.io", m3api.PASSED_ANNOTATIONS}
    for key, value in crossed.items():
        assert key in allowed or key.startswith("reboot.metal3.io/hostclaim-"), key
        if key == "inspect.metal3.io":
            assert value == "" and claim_annotations.get("host.metal3.io/inspect") == ""
    assert "spec" not in patch or set(patch["spec"]) <= {"online", "image", "userData", "networkData", "metaData"}


# ------------------------------------------------------------ secret copies


def test_secret_copy_names():
    claim = make_claim(
        uid="0b7a3c1e-1111-2222-3333-444455556666", spec={"userData": "ud", "networkData": {"name": "nd"}}
    )
    names = cs.secret_copy_names(claim)
    assert names == {
        "userData": "hostclaim-0b7a3c1e-1111-2222-3333-444455556666-userdata",
        "networkData": "hostclaim-0b7a3c1e-1111-2222-3333-444455556666-networkdata",
    }
    for name in names.values():
        assert cs.dns1123_subdomain_problem(name) is None
    other = make_claim(uid="", spec={"metaData": "md"})
    assert cs.dns1123_subdomain_problem(cs.secret_copy_names(other)["metaData"]) is None
    assert cs.secret_copy_names(make_claim()) == {}


def test_secret_copy_names_differ_between_claims():
    first = cs.secret_copy_names(make_claim(name="a", uid="", spec={"userData": "ud"}))
    second = cs.secret_copy_names(make_claim(name="b", uid="", spec={"userData": "ud"}))
    assert first != second


# ------------------------------------------------------------- upward status


def host_for_status(**kwargs):
    claim = make_claim()
    return claim, make_host(consumer=ref_to(claim), **kwargs)


def conditions(status):
    return dict((c["type"], c) for c in status["conditions"])


def test_upward_status_of_a_provisioned_host():
    claim, host = host_for_status(state="provisioned", online=True, powered_on=True, hostname="node-1")
    host["status"]["hardware"]["nics"].append({"name": "ens4", "mac": "52:54:00:01:00:06", "ip": "fe80::1%ens4"})
    host["status"]["hardware"]["nics"].append({"name": "ens5", "mac": "52:54:00:01:00:07"})
    claim["spec"]["online"] = True
    status = cs.upward_status(host, None, NOW, claim)
    assert status["addresses"] == [
        {"type": "InternalIP", "address": "192.168.133.33"},
        {"type": "InternalIP", "address": "fe80::1%ens4"},
        {"type": "Hostname", "address": "node-1"},
        {"type": "InternalDNS", "address": "node-1"},
    ]
    assert status["bootMACAddress"] == "52:54:00:01:00:05"
    assert status["nics"] == [
        {"name": "ens3", "MAC": "52:54:00:01:00:05", "ip": "192.168.133.33"},
        {"name": "ens4", "MAC": "52:54:00:01:00:06", "ip": "fe80::1%ens4"},
        {"name": "ens5", "MAC": "52:54:00:01:00:07"},
    ]
    conds = conditions(status)
    assert conds["AssociateBMH"]["status"] == "True" and conds["AssociateBMH"]["reason"] == "Associated"
    assert conds["Ready"] == {
        "type": "Ready",
        "status": "True",
        "reason": "Provisioned",
        "message": "the host is provisioned and powered on",
        "lastTransitionTime": NOW,
    }
    assert status["lastUpdated"] == NOW
    assert status["poweredOn"] is True
    assert set(status) == {"addresses", "bootMACAddress", "nics", "conditions", "poweredOn", "lastUpdated"}


@pytest.mark.parametrize(
    "host_args,online,reason,ready",
    [
        ({"state": "provisioned", "powered_on": False}, False, "Provisioned", "True"),
        ({"state": "provisioned", "powered_on": False}, True, "PowerChanging", "False"),
        ({"state": "provisioned", "powered_on": True}, False, "PowerChanging", "False"),
        ({"state": "provisioning"}, True, "Provisioning", "False"),
        ({"state": "deprovisioning"}, True, "Deprovisioning", "False"),
        ({"state": "available"}, False, "NotProvisioned", "False"),
        ({"state": "ready"}, False, "NotProvisioned", "False"),
        ({"state": "inspecting"}, False, "HostNotReady", "False"),
        ({"state": "provisioned", "powered_on": True, "deleting": True}, True, "HostDeleting", "False"),
        (
            {"state": "provisioned", "powered_on": True, "annotations": {"baremetalhost.metal3.io/paused": ""}},
            True,
            "HostPaused",
            "False",
        ),
        ({"state": "provisioned", "error_type": "power management error"}, True, "HostError", "False"),
    ],
)
def test_ready_condition(host_args, online, reason, ready):
    claim, host = host_for_status(**host_args)
    claim["spec"]["online"] = online
    cond = conditions(cs.upward_status(host, None, NOW, claim))["Ready"]
    assert (cond["status"], cond["reason"]) == (ready, reason)
    assert cond["message"]


def test_ready_uses_host_online_without_claim():
    _dummy, host = host_for_status(state="provisioned", online=True, powered_on=True)
    assert conditions(cs.upward_status(host, None, NOW))["Ready"]["status"] == "True"


def test_error_message_never_goes_up():
    message = "Failed to get power state for node: %s user %s password %s" % (BMC_ADDRESS, "admin", BMC_PASSWORD)
    dummy, host = host_for_status(state="provisioned", error_type="power management error", error_message=message)
    status = cs.upward_status(host, None, NOW)
    assert cs.find_bmc_data(status, BMC_VALUES) == []
    assert "power management error" in conditions(status)["Ready"]["message"]
    _dummy, host = host_for_status(state="provisioned", error_type="made up %s" % BMC_IP, error_message=message)
    status = cs.upward_status(host, None, NOW)
    assert cs.find_bmc_data(status, BMC_VALUES) == []


def test_unknown_states_are_not_echoed():
    _dummy, host = host_for_status(state="weird %s" % BMC_IP)
    assert cs.find_bmc_data(cs.upward_status(host, None, NOW), BMC_VALUES) == []


def test_upward_status_never_carries_bmc_data():
    claim, host = host_for_status(state="provisioned", powered_on=True, online=True, hostname="node-1")
    status = cs.upward_status(host, None, NOW, claim)
    assert cs.find_bmc_data(host, BMC_VALUES)  # the fixture does carry BMC data
    assert cs.find_bmc_data(status, BMC_VALUES) == []


def test_transition_times_and_last_updated_only_move_on_change():
    claim, host = host_for_status(state="provisioning")
    first = cs.upward_status(host, None, NOW, claim)
    again = cs.upward_status(host, first, LATER, claim)
    assert again == first
    host["status"]["provisioning"]["state"] = "deprovisioning"
    second = cs.upward_status(host, again, LATER, claim)
    # still False: reason and message change, the transition time does not
    assert conditions(second)["Ready"]["reason"] == "Deprovisioning"
    assert conditions(second)["Ready"]["lastTransitionTime"] == NOW
    assert second["lastUpdated"] == LATER
    host["status"]["provisioning"]["state"] = "provisioned"
    third = cs.upward_status(host, second, "2026-03-01T12:00:00Z", claim)
    assert conditions(third)["Ready"]["status"] == "True"
    assert conditions(third)["Ready"]["lastTransitionTime"] == "2026-03-01T12:00:00Z"
    assert conditions(third)["AssociateBMH"]["lastTransitionTime"] == NOW


def test_upward_status_refuses_a_host_not_bound_to_the_claim():
    claim = make_claim(labels={m3api.BINDING_LABEL: "h1"})
    other = make_claim(name="other", namespace="tenant-b")
    with pytest.raises(Conflict):
        cs.upward_status(make_host(consumer=ref_to(other), state="provisioned"), None, NOW, claim)
    with pytest.raises(Conflict):
        cs.upward_status(make_host(state="available"), None, NOW, claim)


def test_tampered_status_is_replaced():
    claim, host = host_for_status(state="provisioning")
    forged = {
        "conditions": [
            {"type": "Ready", "status": "True", "reason": "Forged", "lastTransitionTime": "x"},
            {"type": "Owned", "status": "True"},
        ],
        "addresses": [{"type": "InternalIP", "address": "1.2.3.4"}],
        "bmc": "x",
        "lastUpdated": "x",
    }
    status = cs.upward_status(host, forged, NOW, claim)
    assert conditions(status)["Ready"]["status"] == "False"
    assert set(conditions(status)) == {"Ready", "AssociateBMH"}
    assert status["addresses"] == [{"type": "InternalIP", "address": "192.168.133.33"}]
    assert "bmc" not in status and status["lastUpdated"] == NOW


def test_pending_and_unbound_status():
    bound = cs.upward_status(host_for_status(state="provisioned")[1], None, NOW)
    status = cs.pending_status(
        bound, "NoMatchingHost", "no host shared with namespace tenant-a matches hostSelector", LATER
    )
    assert status["addresses"] == [] and status["nics"] == [] and "bootMACAddress" not in status
    conds = conditions(status)
    assert conds["AssociateBMH"]["status"] == "False" and conds["AssociateBMH"]["reason"] == "NoMatchingHost"
    assert conds["AssociateBMH"]["lastTransitionTime"] == LATER
    assert conds["Ready"]["status"] == "False"
    assert (
        cs.pending_status(status, "NoMatchingHost", conds["AssociateBMH"]["message"], "2027-01-01T00:00:00Z") == status
    )
    unbound = cs.upward_status(None, None, NOW)
    assert conditions(unbound)["AssociateBMH"]["reason"] == "NotBound"


# -------------------------------------------------------- metadata import


def test_labels_are_imported_and_tracked():
    host_labels = {"infra-kind": "medium", "example.com/rack": "r1", "topology.kubernetes.io/zone": "z1"}
    result = cs.import_metadata({"labels": {"app": "web"}}, {"labels": host_labels})
    assert result["labels"]["set"] == {
        "infra-kind": "medium",
        "example.com/rack": "r1",
        "topology.kubernetes.io/zone": "z1",
    }
    assert result["labels"]["remove"] == []
    tracked = json.loads(result["annotations"]["set"][m3api.IMPORTED_LABELS])
    assert tracked == ["example.com/rack", "infra-kind", "topology.kubernetes.io/zone"]
    assert result["patch"]["metadata"]["labels"] == result["labels"]["set"]
    assert m3api.IMPORTED_ANNOTATIONS not in result["annotations"]["set"]


@pytest.mark.parametrize(
    "key,value",
    [
        ("infrastructure.cluster.x-k8s.io/node-reuse", "tenant-b.md-0"),
        ("cluster.x-k8s.io/cluster-name", "tenant-b-cluster"),
        ("baremetalhost.metal3.io/detached", ""),
        ("metal3.io/uuid", "x"),
        ("hostclaim.metal3.io/host", "h9"),
        ("hostclaim.metal3.io/imported-labels", ""),
        ("host.metal3.io/reboot", ""),
        ("kubernetes.io/hostname", "n1"),
        ("node-role.kubernetes.io/master", ""),
        ("machine.openshift.io/zone", "z"),
        ("bmc-address", "10.1.2.3"),
        ("example.com/bmc", "x"),
        ("rack", "ipmi-10.1.2.3"),
        ("mgmt", "idrac-r12"),
        ("vendor", "ilo5"),
        ("example.com/credentials", "x"),
        ("password", "x"),
        ("x", "redfish"),
        ("Bad Key", "x"),
    ],
)
def test_sensitive_or_reserved_labels_are_not_imported(key, value):
    result = cs.import_metadata({}, {"labels": {key: value}})
    assert result["labels"]["set"] == {} and result["patch"] == {}


def test_annotations_are_imported_only_from_the_allow_list():
    host_annotations = {
        "export.hostclaim.metal3.io/rack-position": "u12",
        "export.hostclaim.metal3.io/notes": "see https://wiki.example.com/h1",
        "kubectl.kubernetes.io/last-applied-configuration": json.dumps({"spec": {"bmc": {"address": BMC_ADDRESS}}}),
        "example.com/owner": "team-a",
        "team": "a",
        "baremetalhost.metal3.io/status": '{"x": 1}',
        "inspect.metal3.io/hardwaredetails": "{}",
    }
    result = cs.import_metadata({}, {"annotations": host_annotations})
    imported = dict((k, v) for k, v in result["annotations"]["set"].items() if not k.startswith("hostclaim.metal3.io/"))
    assert imported == {
        "export.hostclaim.metal3.io/rack-position": "u12",
        "export.hostclaim.metal3.io/notes": "see https://wiki.example.com/h1",
    }
    assert json.loads(result["annotations"]["set"][m3api.IMPORTED_ANNOTATIONS]) == sorted(imported)


@pytest.mark.parametrize(
    "value",
    [
        BMC_ADDRESS,
        "ipmi://10.1.2.3",
        "idrac-virtualmedia://10.1.2.3/redfish/v1/Systems/1",
        "https://admin:pw@10.1.2.3/",
        "console at ilo4-host",
        "the BMC is 10.1.2.3",
        "password: x",
        "libvirt://host",
        "x" * (cs.MAX_IMPORTED_VALUE + 1),
        "token abc",
        "see secret h1-bmc",
    ],
)
def test_sensitive_annotation_values_are_not_imported(value):
    result = cs.import_metadata({}, {"annotations": {"export.hostclaim.metal3.io/notes": value}})
    assert result["patch"] == {}


def test_other_export_domains_can_be_configured():
    host_meta = {"annotations": {"example.com/owner": "team-a", "export.hostclaim.metal3.io/x": "y"}}
    result = cs.import_metadata({}, host_meta, annotation_domains=("example.com",))
    assert result["annotations"]["set"]["example.com/owner"] == "team-a"
    assert "export.hostclaim.metal3.io/x" not in result["annotations"]["set"]


def test_vanished_keys_are_removed():
    first = cs.import_metadata(
        {}, {"labels": {"a": "1", "b": "2"}, "annotations": {"export.hostclaim.metal3.io/n": "x"}}
    )
    claim_meta = mpatch.apply_merge_patch({"labels": {"app": "web"}}, first["patch"]["metadata"])
    second = cs.import_metadata(claim_meta, {"labels": {"a": "1"}})
    assert second["labels"] == {"set": {}, "remove": ["b"]}
    assert second["annotations"]["remove"] == sorted([m3api.IMPORTED_ANNOTATIONS, "export.hostclaim.metal3.io/n"])
    assert second["annotations"]["set"] == {m3api.IMPORTED_LABELS: '["a"]'}
    claim_meta = mpatch.apply_merge_patch(claim_meta, second["patch"]["metadata"])
    assert claim_meta["labels"] == {"app": "web", "a": "1"}
    assert claim_meta["annotations"] == {m3api.IMPORTED_LABELS: '["a"]'}


def test_unbinding_removes_every_import():
    first = cs.import_metadata({}, {"labels": {"a": "1"}, "annotations": {"export.hostclaim.metal3.io/n": "x"}})
    claim_meta = mpatch.apply_merge_patch({"labels": {"app": "web"}}, first["patch"]["metadata"])
    claim_meta = mpatch.apply_merge_patch(claim_meta, cs.import_metadata(claim_meta, None)["patch"]["metadata"])
    assert prune_empty(claim_meta) == {"labels": {"app": "web"}}


def test_value_that_became_sensitive_is_removed():
    first = cs.import_metadata({}, {"labels": {"rack": "r1"}})
    claim_meta = mpatch.apply_merge_patch({}, first["patch"]["metadata"])
    second = cs.import_metadata(claim_meta, {"labels": {"rack": "bmc-r1"}})
    assert second["labels"]["remove"] == ["rack"]


def test_tampered_imported_values_are_restored():
    first = cs.import_metadata({}, {"labels": {"infra-kind": "medium"}})
    claim_meta = mpatch.apply_merge_patch({}, first["patch"]["metadata"])
    claim_meta["labels"]["infra-kind"] = "large"
    assert cs.import_metadata(claim_meta, {"labels": {"infra-kind": "medium"}})["labels"]["set"] == {
        "infra-kind": "medium"
    }


def test_tampered_tracking_cannot_remove_protected_keys():
    claim_meta = {
        "labels": {m3api.BINDING_LABEL: "h1", "app": "web"},
        "annotations": {
            m3api.IMPORTED_LABELS: json.dumps([m3api.BINDING_LABEL, "app"]),
            m3api.IMPORTED_ANNOTATIONS: json.dumps([m3api.IMPORTED_LABELS, "host.metal3.io/reboot.fw"]),
            "host.metal3.io/reboot.fw": "",
        },
    }
    result = cs.import_metadata(claim_meta, {"labels": {}})
    assert result["labels"]["remove"] == ["app"]  # the tenant's own label, its own choice
    assert m3api.BINDING_LABEL not in result["labels"]["remove"]
    assert "host.metal3.io/reboot.fw" not in result["annotations"]["remove"]


@pytest.mark.parametrize("raw", ["not json", '{"a": 1}', "5", '[1, "a"]', None])
def test_malformed_tracking_is_tolerated(raw):
    claim_meta = {"labels": {"a": "1"}, "annotations": {m3api.IMPORTED_LABELS: raw} if raw is not None else {}}
    result = cs.import_metadata(claim_meta, {"labels": {"a": "1"}})
    assert result["annotations"]["set"].get(m3api.IMPORTED_LABELS, '["a"]') == '["a"]'


def test_import_is_idempotent_example():
    host_meta = {"labels": {"a": "1", "bmc-ip": BMC_IP}, "annotations": {"export.hostclaim.metal3.io/n": "x"}}
    first = cs.import_metadata({}, host_meta)
    claim_meta = mpatch.apply_merge_patch({}, first["patch"]["metadata"])
    assert cs.import_metadata(claim_meta, host_meta)["patch"] == {}


HOST_LABEL_KEYS = st.sampled_from(
    [
        "a",
        "b",
        "example.com/rack",
        "bmc-ip",
        "infrastructure.cluster.x-k8s.io/node-reuse",
        "hostclaim.metal3.io/host",
        "topology.kubernetes.io/zone",
        "vendor",
    ]
)
HOST_LABEL_VALUES = st.sampled_from(["", "x", "r1", BMC_IP, "ilo5", "tenant-b.md-0", BMC_SECRET])
HOST_ANNOTATION_KEYS = st.sampled_from(
    [
        "export.hostclaim.metal3.io/n",
        "export.hostclaim.metal3.io/m",
        "team",
        "kubectl.kubernetes.io/last-applied-configuration",
        "baremetalhost.metal3.io/status",
    ]
)
HOST_ANNOTATION_VALUES = st.sampled_from(
    [
        "",
        "x",
        BMC_ADDRESS,
        "https://%s/" % BMC_IP,
        "password=" + BMC_PASSWORD,
        "u12",
        "ipmi://10.0.0.1",
        json.dumps({"bmc": BMC_ADDRESS}),
    ]
)
HOST_META = st.fixed_dictionaries(
    {
        "labels": st.dictionaries(HOST_LABEL_KEYS, HOST_LABEL_VALUES, max_size=5),
        "annotations": st.dictionaries(HOST_ANNOTATION_KEYS, HOST_ANNOTATION_VALUES, max_size=4),
    }
)


@settings(max_examples=300)
@given(HOST_META, HOST_META)
def test_import_properties(first_meta, second_meta):
    claim_meta = {"labels": {"app": "web", m3api.BINDING_LABEL: "h1"}, "annotations": {"note": "tenant"}}
    bmc_values = cs.bmc_values_of(make_host())
    for host_meta in (first_meta, second_meta):
        result = cs.import_metadata(claim_meta, host_meta, bmc_values=bmc_values)
        if result["patch"]:
            claim_meta = mpatch.apply_merge_patch(claim_meta, result["patch"]["metadata"])
        # idempotent
        assert cs.import_metadata(claim_meta, host_meta, bmc_values=bmc_values)["patch"] == {}
        # nothing sensitive or reserved ever lands on the claim
        assert cs.find_bmc_data(result, [BMC_IP, BMC_ADDRESS, BMC_PASSWORD, BMC_SECRET, "ilo5", "ipmi"]) == []
        labels = claim_meta.get("labels") or {}
        assert "infrastructure.cluster.x-k8s.io/node-reuse" not in labels
        assert labels[m3api.BINDING_LABEL] == "h1" and labels["app"] == "web"
        assert (claim_meta.get("annotations") or {}).get("note") == "tenant"
        for key in ("kubectl.kubernetes.io/last-applied-configuration", "team", "baremetalhost.metal3.io/status"):
            assert key not in (claim_meta.get("annotations") or {})
        # claim reflects exactly the importable part of the current host metadata
        imported = set(cs.tracked_keys(claim_meta.get("annotations"), m3api.IMPORTED_LABELS))
        assert imported == set(k for k, v in host_meta["labels"].items() if cs.label_importable(k, v, bmc_values))
        for key in imported:
            assert labels[key] == host_meta["labels"][key]


# ------------------------------------------------------------ binding label


def test_binding_label_fix():
    claim = make_claim()
    assert cs.binding_label_fix(claim, "h1") == {"metadata": {"labels": {m3api.BINDING_LABEL: "h1"}}}
    assert cs.binding_label_fix(claim, None) == {}
    claim["metadata"]["labels"][m3api.BINDING_LABEL] = "h1"
    assert cs.binding_label_fix(claim, "h1") == {}
    assert cs.binding_label_fix(claim, "h2") == {"metadata": {"labels": {m3api.BINDING_LABEL: "h2"}}}
    assert cs.binding_label_fix(claim, None) == {"metadata": {"labels": {m3api.BINDING_LABEL: None}}}
    claim["metadata"]["labels"] = None
    assert cs.binding_label_fix(claim, None) == {}


def test_binding_label_value_for_long_names():
    long_name = "h" * 100 + ".example.com"
    value = m3view.binding_label_value(long_name)
    assert cs.label_value_problem(value) is None and value.startswith("sha256-") and len(value) == 63
    assert m3view.binding_label_value(long_name) == value
    assert m3view.binding_label_value("h1") == "h1"
    claim = make_claim(labels={m3api.BINDING_LABEL: value})
    assert cs.binding_label_fix(claim, long_name) == {}


@given(st.sampled_from([None, "h1", "h2"]), st.sampled_from([None, "h1", "h2", ""]))
def test_binding_label_fix_converges(bound, current):
    labels = {} if current is None else {m3api.BINDING_LABEL: current}
    claim = make_claim(labels=labels)
    fixed = mpatch.apply_merge_patch(claim, cs.binding_label_fix(claim, bound))
    assert (fixed["metadata"].get("labels") or {}).get(m3api.BINDING_LABEL) == bound
    assert cs.binding_label_fix(fixed, bound) == {}


# ------------------------------------------------------------- the scanner


def test_find_bmc_data_paths():
    obj = {
        "status": {"addresses": [{"address": "10.0.0.1"}, {"address": BMC_IP}]},
        "metadata": {"annotations": {"note-%s" % BMC_SECRET: "x"}},
        "n": 5,
        "b": True,
    }
    paths = cs.find_bmc_data(obj, [BMC_IP, BMC_SECRET.upper()])
    assert sorted(paths) == sorted(["status.addresses[1].address", "metadata.annotations.note-%s (key)" % BMC_SECRET])
    assert cs.find_bmc_data(obj, []) == []
    assert cs.find_bmc_data(obj, ["", None]) == []
    assert cs.find_bmc_data({"port": 623}, [623]) == ["port"]
    assert cs.find_bmc_data(BMC_IP, [BMC_IP]) == ["."]
    assert cs.find_bmc_data(("a", BMC_IP), [BMC_IP]) == ["[1]"]


def test_find_bmc_data_detects_the_fixture_host():
    paths = cs.find_bmc_data(make_host(), BMC_VALUES)
    assert "spec.bmc.address" in paths and "spec.bmc.credentialsName" in paths


@pytest.mark.parametrize(
    "address,host_part",
    [
        (BMC_ADDRESS, BMC_IP),
        ("ipmi://10.1.2.3:623", "10.1.2.3"),
        ("10.1.2.3", "10.1.2.3"),
        ("idrac-virtualmedia://[fd00::5]:443/redfish/v1/Systems/1", "fd00::5"),
        ("redfish://admin@bmc-h1.example.com/redfish/v1/Systems/1", "bmc-h1.example.com"),
        ("fd00::5", "fd00::5"),
    ],
)
def test_bmc_values_of(address, host_part):
    host = make_host()
    host["spec"]["bmc"]["address"] = address
    assert cs.bmc_values_of(host) == [address, host_part, BMC_SECRET]
    assert cs.bmc_values_of({"spec": {}}) == []


def test_values_naming_this_hosts_bmc_are_not_imported():
    host = make_host(labels={"mgmt-net": BMC_IP.replace(".", "-"), "addr": "x"})
    host["metadata"]["annotations"] = {"export.hostclaim.metal3.io/notes": "console https://%s/" % BMC_IP}
    result = cs.import_metadata({}, host["metadata"], bmc_values=[*cs.bmc_values_of(host), BMC_IP.replace(".", "-")])
    assert result["labels"]["set"] == {"addr": "x"}
    assert "export.hostclaim.metal3.io/notes" not in result["annotations"]["set"]


def test_looks_sensitive():
    assert cs.looks_sensitive("redfish+https://x")
    assert cs.looks_sensitive("see https://user:pw@x/")
    assert not cs.looks_sensitive("see https://wiki.example.com/x and http://y")
    assert cs.looks_sensitive("see https://wiki.example.com/a://b")
    assert not cs.looks_sensitive("kilo-rack")
    assert cs.looks_sensitive("ilo6")
    assert not cs.looks_sensitive(5)


# ------------------------------------------------------- BMC user and password (issue 12, defect 5)


def _credentialed_host(labels=None, annotations=None):
    host = make_host(labels=labels, annotations=annotations)
    return host, cs.bmc_needles(host, BMC_USER, BMC_PASSWORD)


def test_bmc_needles_name_each_value():
    host = make_host()
    assert cs.bmc_needles(host, BMC_USER, BMC_PASSWORD) == [
        ("BMC address", BMC_ADDRESS),
        ("BMC address host part", BMC_IP),
        ("BMC credentials Secret name", BMC_SECRET),
        ("BMC user name", BMC_USER),
        ("BMC password", BMC_PASSWORD),
    ]
    assert cs.bmc_needles(host, "", None) == cs.bmc_needles(host)
    needles = cs.bmc_needles(host, BMC_USER, BMC_PASSWORD)
    assert cs.bmc_values_of(host, BMC_USER, BMC_PASSWORD) == [value for dummy, value in needles]


def test_labels_and_annotations_repeating_the_bmc_user_or_password_are_withheld_and_reported():
    host, needles = _credentialed_host(
        labels={
            "example.com/owner": BMC_USER,
            "example.com/pin": BMC_PASSWORD.upper(),
            "example.com/rack": "r7",
            "example.com/" + BMC_USER: "x",
        },
        annotations={
            "export.hostclaim.metal3.io/contact": "ask %s" % BMC_USER,
            "export.hostclaim.metal3.io/rack": "r7",
            "internal.example.com/pw": BMC_PASSWORD,
        },
    )
    result = cs.import_metadata({}, host["metadata"], bmc_values=needles)
    assert result["labels"]["set"] == {"example.com/rack": "r7"}
    assert set(result["annotations"]["set"]) == {
        "export.hostclaim.metal3.io/rack",
        m3api.IMPORTED_LABELS,
        m3api.IMPORTED_ANNOTATIONS,
    }
    assert sorted(result["withheld"], key=lambda item: (item["kind"], str(item["key"]))) == [
        {
            "kind": "annotation",
            "key": "export.hostclaim.metal3.io/contact",
            "reason": "the value repeats the BMC user name",
        },
        {"kind": "label", "key": None, "reason": "the key repeats the BMC user name"},
        {"kind": "label", "key": "example.com/owner", "reason": "the value repeats the BMC user name"},
        {"kind": "label", "key": "example.com/pin", "reason": "the value repeats the BMC password"},
    ]  # the annotation outside the exported domains is not imported by policy: not reported
    assert cs.find_bmc_data(result, BMC_VALUES) == []


def test_an_unreadable_credentials_secret_withholds_everything():
    host, _dummy = _credentialed_host(
        labels={"example.com/rack": "r7"}, annotations={"export.hostclaim.metal3.io/rack": "r7"}
    )
    claim_meta = {"labels": {"example.com/rack": "r7"}, "annotations": {m3api.IMPORTED_LABELS: '["example.com/rack"]'}}
    result = cs.import_metadata(claim_meta, host["metadata"], bmc_values=cs.bmc_needles(host), blocked="unreadable")
    assert result["labels"] == {"set": {}, "remove": ["example.com/rack"]}
    assert [(item["kind"], item["reason"]) for item in result["withheld"]] == [
        ("label", "unreadable"),
        ("annotation", "unreadable"),
    ]


@pytest.mark.parametrize(
    "text, needle, matched",
    [
        ("q7", "q7", True),  # a short value: as the whole value
        ("welcome, Q7 racks", "q7", True),  # or as a word
        ("q7team", "q7", False),  # not inside a word
        ("rack a", "a", True),
        ("rack", "a", False),  # a one-letter password does not withhold every value with that letter
        ("pw=Kx7pQ2vR9wLm!", "kx7pq2vr9wlm", True),  # a long value anywhere, case-insensitively
        ("abcd", "abcd", True),
        ("xabcdx", "abcd", True),
        ("xabcx", "abc", False),
        ("", "abcd", False),
        ("anything", "", False),
    ],
)
def test_bmc_match_rule(text, needle, matched):
    assert (cs.bmc_match(text, [("BMC password", needle)]) == "BMC password") is matched


_TEXT = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=40)


@settings(max_examples=300, deadline=None)
@given(
    prefix=_TEXT,
    needle=st.text(alphabet="abcdefXYZ0123456789-_.!", min_size=cs.MIN_CONTAINED_BMC_VALUE, max_size=20),
    suffix=_TEXT,
)
def test_a_long_bmc_value_is_found_wherever_it_is(prefix, needle, suffix):
    assert cs.bmc_match(prefix + needle + suffix, [("BMC password", needle)]) == "BMC password"


@settings(max_examples=300, deadline=None)
@given(needle=st.text(min_size=1, max_size=cs.MIN_CONTAINED_BMC_VALUE - 1), text=_TEXT)
def test_a_short_bmc_value_only_matches_a_whole_value_or_word(needle, text):
    lower, value = text.lower(), needle.lower()
    words = "".join(char if char.isalnum() else " " for char in lower).split()
    expected = bool(text) and (lower == value or value in words)
    assert (cs.bmc_match(text, [needle]) is not None) is expected


@settings(max_examples=200, deadline=None)
@given(
    values=st.dictionaries(st.sampled_from(["example.com/a", "example.com/b", "c"]), _TEXT, max_size=3),
    user=st.text(min_size=1, max_size=12),
    password=st.text(min_size=1, max_size=12),
)
def test_nothing_imported_repeats_a_bmc_value_and_no_report_carries_one(values, user, password):
    host = make_host(
        labels=values,
        annotations=dict(("export.hostclaim.metal3.io/" + k.split("/")[-1], v) for k, v in values.items()),
    )
    needles = cs.bmc_needles(host, user, password)
    result = cs.import_metadata({}, host["metadata"], bmc_values=needles)
    for section in ("labels", "annotations"):
        for key, value in result[section]["set"].items():
            if key not in (m3api.IMPORTED_LABELS, m3api.IMPORTED_ANNOTATIONS):
                assert cs.bmc_match(key, needles) is None and cs.bmc_match(value, needles) is None
    for item in result["withheld"]:
        assert item["key"] is None or cs.bmc_match(item["key"], needles) is None


# ------------------------------------------------------------ the bound-host rule (issue 12, defect 2)

LONG_HOST = "rack-1." + "h" * 70  # a BMH name that is not a valid label value


def _recorded(host=None, status="True", label=None):
    claim = make_claim(labels={m3api.BINDING_LABEL: label} if label is not None else {})
    if host is not None:
        claim["status"] = {
            "conditions": [{"type": "AssociateBMH", "status": status, "message": m3view.BOUND_PREFIX + host}]
        }
    return claim


@pytest.mark.parametrize(
    "claim, host",
    [
        (_recorded("h1", label="h1"), "h1"),
        (_recorded("h1", label="h2"), None),  # forged label: fail closed
        (_recorded("h1"), None),  # label removed: fail closed
        (_recorded(None, label="h1"), None),  # a label alone never binds
        (_recorded("h1", status="False", label="h1"), None),
        (_recorded(LONG_HOST, label=m3view.binding_label_value(LONG_HOST)), LONG_HOST),  # not a label value: hashed
        (_recorded(LONG_HOST, label=LONG_HOST[:63]), None),
        ({"metadata": {"labels": "x"}, "status": {"conditions": "x"}}, None),
    ],
)
def test_bound_host(claim, host):
    assert m3view.bound_host(claim) == host


@settings(max_examples=300, deadline=None)
@given(
    recorded=st.one_of(st.none(), st.text(max_size=20)),
    status=st.sampled_from(["True", "False", "Unknown"]),
    label=st.one_of(st.none(), st.text(max_size=20)),
)
def test_a_label_never_decides_the_host(recorded, status, label):
    claim = _recorded(recorded, status=status, label=label)
    host = m3view.bound_host(claim)
    assert host is None or host == m3view.recorded_host(claim)
    if recorded is not None and status == "True" and recorded:
        # whatever label the tenant writes, the host is the recorded one or none
        assert host in (None, recorded)
        assert (host is not None) is (label == m3view.binding_label_value(recorded))
