# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import claim_view as CV
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import model as M

MD5 = "9f6c1a0f5e2b4c8d7a3e1f0b2c4d6e8f"
SHA256 = "a" * 64
IMAGE = {"url": "http://images.example.com/os.qcow2", "checksum": MD5, "checksum_type": "md5", "format": "qcow2"}
PROJECT = "p" * 32


def node(**extra):
    base = {
        "uuid": "node-uuid",
        "name": "n1",
        "provision_state": "available",
        "target_provision_state": None,
        "power_state": "power off",
        "target_power_state": None,
        "instance_info": {},
        "traits": ["CUSTOM_A"],
        "resource_class": "rc",
    }
    base.update(extra)
    return base


def allocation(**extra):
    base = {
        "uuid": "alloc-uuid",
        "name": "web-0",
        "state": "active",
        "node_uuid": "node-uuid",
        "resource_class": "rc",
        "traits": ["CUSTOM_A"],
        "last_error": None,
    }
    base.update(extra)
    return base


# ------------------------------------------------------------------ names, traits, images


@pytest.mark.parametrize("name", ["web-0", "a", "db_1.example~x", "A" * 255])
def test_good_names(name):
    assert M.claim_name_problem(name) is None
    assert M.validate_name(name) == name


@pytest.mark.parametrize(
    "name, words",
    [
        ("", "non-empty"),
        (None, "non-empty"),
        ("a" * 256, "at most 255"),
        ("web 0", "only letters"),
        ("web/0", "only letters"),
        ("12345678-1234-1234-1234-123456789012", "UUID"),
        ("123456781234123412341234567890ab", "UUID"),
    ],
)
def test_bad_names(name, words):
    assert words in M.claim_name_problem(name)
    with pytest.raises(InvalidInput) as info:
        M.validate_name(name)
    assert info.value.obj.startswith("claim")


def test_traits():
    assert M.validate_traits(["CUSTOM_B", "CUSTOM_A", "CUSTOM_A", "HW_CPU_X86_AVX2"], "x") == [
        "CUSTOM_A",
        "CUSTOM_B",
        "HW_CPU_X86_AVX2",
    ]
    for bad in ["custom_gpu", "CUSTOM-GPU", "", "1ABC", "CUSTOM_" + "X" * 300]:
        with pytest.raises(InvalidInput):
            M.validate_traits([bad], "claim x")


def test_images():
    assert M.validate_image(IMAGE, "c") == IMAGE
    assert M.validate_image(None, "c") is None
    live = M.validate_image({"url": "http://x/live.iso", "format": "live-iso"}, "c")
    assert live["checksum"] is None
    url_sum = M.validate_image(
        {"url": "https://x/os.img", "checksum": "https://x/SHA256SUMS", "checksum_type": "sha256"}, "c"
    )
    assert url_sum["checksum"] == "https://x/SHA256SUMS"
    assert (
        M.validate_image({"url": "file:///var/lib/os.img", "checksum": SHA256}, "c", ["/var/lib"])["checksum_type"]
        == "auto"
    )


@pytest.mark.parametrize(
    "image, words",
    [
        ({"url": "http://x/os.qcow2"}, "checksum is required"),
        ({"url": "http://x/os.qcow2", "checksum": ""}, "checksum is required"),
        ({"url": "ftp://x/os.qcow2", "checksum": MD5}, "http://, https:// or file://"),
        ({"url": "http://x/os .qcow2", "checksum": MD5}, "white space"),
        ({"url": "http://user:pw@x/os.qcow2", "checksum": MD5}, "user information"),
        ({"url": "http://x/os.qcow2", "checksum": MD5, "checksum_type": "sha256"}, "a sha256 checksum has 64"),
        ({"url": "http://x/os.qcow2", "checksum": "abc"}, "no md5, sha256 or sha512"),
        ({"url": "http://x/os.qcow2", "checksum": "zz" * 16}, "hex digits"),
        ({"url": "http://x/os.qcow2", "checksum": MD5, "checksum_type": "crc"}, "not one of"),
    ],
)
def test_bad_images(image, words):
    with pytest.raises(InvalidInput) as info:
        M.validate_image(image, "claim web-0")
    assert words in info.value.cause
    assert info.value.obj == "claim web-0"


# ------------------------------------------------------------------ instance_info


@pytest.mark.parametrize(
    "image, expected",
    [
        (IMAGE, {"image_source": IMAGE["url"], "image_checksum": MD5, "image_disk_format": "qcow2"}),
        (
            {"url": "http://x/a", "checksum": SHA256, "checksum_type": "sha256"},
            {"image_source": "http://x/a", "image_os_hash_algo": "sha256", "image_os_hash_value": SHA256},
        ),
        (
            {"url": "http://x/a", "checksum": "sha512:" + "b" * 128, "checksum_type": "sha512"},
            {"image_source": "http://x/a", "image_os_hash_algo": "sha512", "image_os_hash_value": "b" * 128},
        ),
        (
            {"url": "http://x/a", "checksum": "http://x/SUMS", "checksum_type": "sha256"},
            {"image_source": "http://x/a", "image_checksum": "http://x/SUMS"},
        ),
        ({"url": "http://x/live.iso", "format": "live-iso"}, {"boot_iso": "http://x/live.iso"}),
        (None, {}),
    ],
)
def test_image_instance_info(image, expected):
    assert M.image_instance_info(image) == expected


@given(
    st.sampled_from(
        [
            IMAGE,
            {"url": "http://x/a", "checksum": SHA256, "checksum_type": "sha256"},
            {"url": "http://x/live.iso", "format": "live-iso"},
        ]
    )
)
def test_image_round_trip(image):
    """What the node shows back is the image that was asked for."""
    shown = M.image_of(M.image_instance_info(image))
    assert shown["url"] == image["url"]
    if image.get("checksum"):
        assert shown["checksum"] == image["checksum"]
    if image.get("format"):
        assert shown["format"] == image["format"]


def test_desired_instance_info_and_differences():
    desired = M.desired_instance_info(IMAGE, "sha256:x", [{"type": "InternalIP", "address": "192.0.2.1"}])
    assert desired[M.CONFIGDRIVE_KEY] == "sha256:x" and desired[M.ADDRESSES_KEY][0]["address"] == "192.0.2.1"
    current = dict(desired, traits=[], configdrive="******", image_type="whole-disk")
    assert M.instance_info_differs(current, desired) == []
    assert M.instance_info_differs(dict(current, **{M.CONFIGDRIVE_KEY: "sha256:y"}), desired) == [M.CONFIGDRIVE_KEY]
    assert M.instance_info_differs({}, desired) == sorted(desired)


def test_config_drive_key_is_not_masked_by_ironic():
    """Ironic masks instance_info keys that contain oslo.utils' secret words."""
    for word in ("configdrive", "password", "token", "secret", "key"):
        assert word not in M.CONFIGDRIVE_KEY.replace("keys", "")
        assert word not in M.ADDRESSES_KEY


# ------------------------------------------------------------------ deploy / power decisions


@pytest.mark.parametrize(
    "state, target, info, expected",
    [
        ("available", None, {}, "deploy"),
        ("active", None, "same", "none"),
        ("active", None, {"image_source": "http://x/old"}, "rebuild"),
        ("deploy failed", None, "same", "redeploy"),
        # what Ironic's API shows: a failure state keeps the target of what failed
        ("deploy failed", "active", "same", "redeploy"),
        ("deploy failed", "active", {"image_source": "http://x/old"}, "redeploy"),
        ("deploying", "active", "same", "none"),
        ("wait call-back", "active", "same", "none"),
    ],
)
def test_deploy_action(state, target, info, expected):
    desired = M.desired_instance_info(IMAGE, "sha256:x", [])
    current = desired if info == "same" else info
    assert (
        M.deploy_action(node(provision_state=state, target_provision_state=target, instance_info=current), desired)
        == expected
    )


@pytest.mark.parametrize(
    "state, target",
    [
        ("cleaning", "available"),
        ("manageable", None),
        ("enroll", None),
        ("deleting", "available"),
        ("clean failed", None),
    ],
)
def test_deploy_refused_in_other_states(state, target):
    with pytest.raises(InvalidInput) as info:
        M.deploy_action(node(provision_state=state, target_provision_state=target), M.image_instance_info(IMAGE))
    assert "node n1" == info.value.obj and state in info.value.cause


def test_deploy_of_another_image_while_deploying_is_refused():
    with pytest.raises(InvalidInput):
        M.deploy_action(
            node(
                provision_state="deploying",
                target_provision_state="active",
                instance_info={"image_source": "http://x/other"},
            ),
            M.image_instance_info(IMAGE),
        )


@pytest.mark.parametrize(
    "power, target, online, expected",
    [
        ("power off", None, True, "power on"),
        ("power on", None, True, None),
        ("power on", None, False, "power off"),
        ("power off", "power on", True, None),
        ("power on", "power off", True, "power on"),
        ("power off", None, None, None),
    ],
)
def test_power_action(power, target, online, expected):
    assert M.power_action(node(power_state=power, target_power_state=target), online) == expected


# ------------------------------------------------------------------ views


def test_claim_view_of_a_deployed_claim():
    deployed = node(
        provision_state="active",
        power_state="power on",
        instance_info=M.desired_instance_info(IMAGE, "sha256:x", [{"type": "InternalIP", "address": "192.0.2.77"}]),
        extra={"addresses": [{"type": "InternalIP", "address": "192.0.2.9"}]},
    )
    ports = [
        {"uuid": "p2", "address": "52:54:00:00:00:02", "pxe_enabled": False},
        {"uuid": "p1", "address": "52:54:00:00:00:01", "pxe_enabled": True},
    ]
    view = CV.claim_view("web-0", PROJECT, allocation(), deployed, ports, online=True, want_image=True)
    assert view["host"] == "n1" and view["namespace"] == PROJECT and view["backend"] == "ironic"
    assert view["ready"] is True and view["associated"] is True and view["powered_on"] is True
    assert view["image"] == {"url": IMAGE["url"], "checksum": MD5, "format": "qcow2"}
    # The owner's record in extra only: the lessee-written instance_info address is not read.
    assert view["addresses"] == [{"type": "InternalIP", "address": "192.0.2.9"}]
    assert view["nics"] == [
        {"name": "p1", "MAC": "52:54:00:00:00:01", "ip": None},
        {"name": "p2", "MAC": "52:54:00:00:00:02", "ip": None},
    ]
    assert view["boot_mac_address"] == "52:54:00:00:00:01"
    assert [c["type"] for c in view["conditions"]] == ["Allocated", "Ready"]
    assert view["conditions"][1]["reason"] == "Provisioned"
    maintained = dict(deployed, maintenance=True)
    view = CV.claim_view("web-0", PROJECT, allocation(), maintained, ports, online=True, want_image=True)
    assert view["ready"] is False and view["conditions"][1]["reason"] == "Maintenance"


def test_claim_view_keys_match_the_documented_shape():
    view = CV.claim_view("web-0", PROJECT, None, None)
    assert sorted(view) == sorted(
        [
            "name",
            "namespace",
            "backend",
            "host",
            "online",
            "powered_on",
            "associated",
            "ready",
            "provision_state",
            "image",
            "addresses",
            "nics",
            "boot_mac_address",
            "conditions",
            "labels",
            "traits",
        ]
    )
    assert view["ready"] is False and view["host"] is None


@pytest.mark.parametrize(
    "alloc, nd, want, online, reason",
    [
        (None, None, False, None, "NotClaimed"),
        (allocation(state="error", node_uuid=None, last_error="no nodes"), None, False, None, "AllocationFailed"),
        (allocation(state="allocating", node_uuid=None), None, False, None, "Allocating"),
        (allocation(), node(provision_state="deploying", target_provision_state="active"), True, None, "Provisioning"),
        (allocation(), node(provision_state="deploy failed"), True, None, "DeployFailed"),
        (allocation(), node(provision_state="active", power_state="power on"), True, False, "PowerChanging"),
        (allocation(), node(), False, None, "Allocated"),
        (allocation(), node(power_state="power on"), False, True, "Allocated"),
    ],
)
def test_ready_reasons(alloc, nd, want, online, reason):
    assert M.ready_state(alloc, nd, want, online)[1] == reason


def test_views_never_carry_bmc_data():
    secret = {"redfish_address": "http://10.0.0.9", "redfish_password": "hunter2", "redfish_username": "root"}
    dirty = node(
        driver_info=secret, provision_state="active", power_state="power on", last_error="http://10.0.0.9 down"
    )
    text = json.dumps(
        [CV.claim_view("web-0", PROJECT, allocation(), dirty, online=True), M.diff_view(allocation(), dirty)]
    )
    for value in [*list(secret.values()), "driver_info", "last_error"]:
        assert value not in text


def test_diff_view():
    deployed = node(
        provision_state="active", power_state="power on", instance_info=M.desired_instance_info(IMAGE, "sha256:x", [])
    )
    view = M.diff_view(allocation(), deployed)
    assert view == {
        "name": "web-0",
        "resource_class": "rc",
        "traits": ["CUSTOM_A"],
        "host": "n1",
        "image": {"url": IMAGE["url"], "checksum": MD5, "format": "qcow2"},
        "config_drive": "sha256:x",
        "online": True,
    }
    assert M.diff_view(None, None) == {}


def test_allocation_mismatch():
    assert M.allocation_mismatch(allocation(), "rc", ["CUSTOM_A"]) is None
    assert M.allocation_mismatch(allocation(), None, None) is None
    assert "resource class rc, not big" in M.allocation_mismatch(allocation(), "big", None)
    assert "traits" in M.allocation_mismatch(allocation(), None, ["CUSTOM_B"])


def test_candidate_problems():
    assert "has resource class rc" in M.candidate_problems([], "rc", None)
    assert "all the traits CUSTOM_B" in M.candidate_problems([node()], "rc", ["CUSTOM_B"])
    assert M.candidate_problems([node()], "rc", ["CUSTOM_A"]) is None


@settings(max_examples=100)
@given(
    st.sampled_from(["available", "active", "deploying", "deploy failed", "cleaning", "manageable"]),
    st.sampled_from([None, "active", "available"]),
    st.sampled_from(["power on", "power off", None]),
    st.sampled_from([True, False, None]),
    st.booleans(),
)
def test_ready_only_when_deployed_and_powered(state, target, power, online, want_image):
    """A claim is never reported ready while its node moves or its power differs from what was asked."""
    nd = node(provision_state=state, target_provision_state=target, power_state=power)
    view = CV.claim_view("web-0", PROJECT, allocation(), nd, online=online, want_image=want_image)
    if view["ready"]:
        if want_image:
            assert state == "active" and target is None
        if online is not None:
            assert power == ("power on" if online else "power off")


# ------------------------------------------------------------------ file:// images (issue 12)


def test_file_urls_are_refused_without_an_allowed_prefix():
    with pytest.raises(InvalidInput) as info:
        M.validate_image({"url": "file:///etc/ironic/ironic.conf", "format": "live-iso"}, "claim c")
    assert info.value.message.startswith(
        "claim c: image.url file:///etc/ironic/ironic.conf names a file on the Ironic conductor"
    )
    assert "file_url_allowed_prefixes" in info.value.message
    with pytest.raises(InvalidInput) as info:
        M.validate_image({"url": "http://x.example/os.img", "checksum": "file:///etc/shadow"}, "claim c")
    assert info.value.message.startswith("claim c: image.checksum file:///etc/shadow")
    assert M.validate_image({"url": "http://x.example/live.iso", "format": "live-iso"}, "claim c")["url"]


@pytest.mark.parametrize(
    "url, problem",
    [
        ("file:///var/lib/ironic/images/live.iso", None),
        ("FILE:///var/lib/ironic/images/a/b.iso", None),
        ("file://localhost/var/lib/ironic/images/x", None),
        ("file:///var/lib/ironic/images/../../../../etc/passwd", "is not under an allowed prefix"),
        ("file:///var/lib/ironic/images", "is not under an allowed prefix"),
        ("file:///var/lib/ironic/imagesX/x", "is not under an allowed prefix"),
        ("file:////etc/passwd", "is not under an allowed prefix"),
        ("file:///var/lib/ironic/images/%2e%2e/x", "no %-escapes"),
        ("file://conductor-2/var/lib/ironic/images/x", "names host"),
        ("http://example.com/file:///etc/passwd", None),
    ],
)
def test_file_url_problem_resolves_the_path_before_comparing(url, problem):
    found = M.file_url_problem(url, M.validate_file_prefixes(["/var/lib/ironic/images/"], "claim c"))
    assert (found is None) if problem is None else (problem in found), found


@pytest.mark.parametrize("prefix", ["relative/dir", "/", "/var/../etc", "/var/lib/%2e", ""])
def test_bad_allowed_prefixes_are_refused(prefix):
    with pytest.raises(InvalidInput) as info:
        M.validate_file_prefixes([prefix], "claim c")
    assert "file_url_allowed_prefixes entry" in info.value.cause


# ------------------------------------------------------------------ reboot (issue 12)


def test_reboot_request_reads_the_metal3_annotation():
    assert M.reboot_request(None, "claim c") is None
    assert M.reboot_request({}, "claim c") is None
    assert M.reboot_request({"host.metal3.io/reboot": ""}, "claim c") == "rebooting"
    assert M.reboot_request({"host.metal3.io/reboot": '{"mode": "hard"}'}, "claim c") == "rebooting"
    assert M.reboot_request({"host.metal3.io/reboot": '{"mode": "soft", "force": true}'}, "claim c") == "soft rebooting"
    assert M.reboot_request({"host.metal3.io/reboot": None}, "claim c") is None


@pytest.mark.parametrize(
    "annotations, words",
    [
        ({"host.metal3.io/reboot.mine": ""}, "annotation host.metal3.io/reboot.mine does nothing with backend ironic"),
        ({"example.com/note": "x"}, "annotation example.com/note does nothing"),
        ({"host.metal3.io/reboot": '{"mode": "sideways"}'}, "must be empty or JSON"),
        ({"host.metal3.io/reboot": "now"}, "must be empty or JSON"),
        ({"host.metal3.io/reboot": '{"mode": "soft", "force": "yes"}'}, "must be empty or JSON"),
        ({"host.metal3.io/reboot": 5}, "must be a string"),
    ],
)
def test_reboot_request_refuses_what_ironic_cannot_do(annotations, words):
    with pytest.raises(InvalidInput) as info:
        M.reboot_request(annotations, "claim c")
    assert info.value.obj == "claim c" and words in info.value.cause


@pytest.mark.parametrize(
    "fields, expected",
    [
        # Ironic 39 keeps the undeployment's target on a node whose automated cleaning failed.
        ({"provision_state": "clean failed", "target_provision_state": "available"}, True),
        ({"provision_state": "clean failed", "target_provision_state": None}, True),
        ({"provision_state": "clean wait", "target_provision_state": "available"}, False),
        ({"provision_state": "cleaning", "target_provision_state": "available"}, False),
        ({"provision_state": "available", "target_provision_state": None}, False),
        ({"provision_state": "deploy failed", "target_provision_state": "active"}, False),
    ],
)
def test_cleaning_failed_whatever_the_target_says(fields, expected):
    assert M.cleaning_failed(node(**fields)) is expected


def test_no_node_has_not_failed_cleaning():
    assert M.cleaning_failed(None) is False and M.cleaning_failed({}) is False


@pytest.mark.parametrize("state", M.FAILURE_STATES)
@pytest.mark.parametrize("target", [None, "active", "available", "manageable", "rescue"])
def test_a_failure_state_is_stopped_whatever_its_target(state, target):
    assert M.in_failure_state(node(provision_state=state, target_provision_state=target)) is True


@pytest.mark.parametrize("state", ["available", "active", "deploying", "cleaning", "clean wait", "manageable", "error"])
def test_other_states_are_not_failure_states(state):
    assert M.in_failure_state(node(provision_state=state, target_provision_state="active")) is False
    assert M.in_failure_state(None) is False
