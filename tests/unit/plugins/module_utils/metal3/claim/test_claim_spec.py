# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The HostClaim spec a tenant may write (claim_spec): normalised, or refused naming the claim and the field."""

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import identity
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import spec as m3spec
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.metal3_objects import (
    IMAGE,
    make_claim,
)


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
        ({"image": {"url": "https://x/os.img", "checksum": ""}}, "checksum is required"),
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
        identity.validate_claim(claim)
    assert exc.value.obj == "HostClaim tenant-a/web-1"
