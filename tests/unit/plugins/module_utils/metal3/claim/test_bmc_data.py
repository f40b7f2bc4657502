# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Detecting BMC data (bmc_data): the needles of a host, the match rule, the scanner, and what is withheld because of them."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3 import api as m3api
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import bmc_data, metadata_import
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.metal3_objects import (
    BMC_ADDRESS,
    BMC_IP,
    BMC_PASSWORD,
    BMC_SECRET,
    BMC_USER,
    BMC_VALUES,
    make_host,
)


def test_find_bmc_data_paths():
    obj = {
        "status": {"addresses": [{"address": "10.0.0.1"}, {"address": BMC_IP}]},
        "metadata": {"annotations": {"note-%s" % BMC_SECRET: "x"}},
        "n": 5,
        "b": True,
    }
    paths = bmc_data.find_bmc_data(obj, [BMC_IP, BMC_SECRET.upper()])
    assert sorted(paths) == sorted(["status.addresses[1].address", "metadata.annotations.note-%s (key)" % BMC_SECRET])
    assert bmc_data.find_bmc_data(obj, []) == []
    assert bmc_data.find_bmc_data(obj, ["", None]) == []
    assert bmc_data.find_bmc_data({"port": 623}, [623]) == ["port"]
    assert bmc_data.find_bmc_data(BMC_IP, [BMC_IP]) == ["."]
    assert bmc_data.find_bmc_data(("a", BMC_IP), [BMC_IP]) == ["[1]"]


def test_find_bmc_data_detects_the_fixture_host():
    paths = bmc_data.find_bmc_data(make_host(), BMC_VALUES)
    assert "spec.bmc.address" in paths and "spec.bmc.credentialsName" in paths


@pytest.mark.parametrize(
    "address,components",
    [
        (BMC_ADDRESS, [BMC_IP]),  # iLO's system id 1 identifies no machine
        ("ipmi://10.1.2.3:623", ["10.1.2.3", "623"]),
        ("10.1.2.3", ["10.1.2.3"]),
        ("idrac-virtualmedia://[fd00::5]:443/redfish/v1/Systems/1", ["fd00::5", "443"]),
        ("redfish://admin@bmc-h1.example.com/redfish/v1/Systems/1", ["bmc-h1.example.com", "admin"]),
        ("fd00::5", ["fd00::5"]),
    ],
)
def test_bmc_values_of(address, components):
    host = make_host()
    host["spec"]["bmc"]["address"] = address
    assert bmc_data.bmc_values_of(host) == [address, *components, BMC_SECRET]
    assert bmc_data.bmc_values_of({"spec": {}}) == []


def test_values_naming_this_hosts_bmc_are_not_imported():
    host = make_host(labels={"mgmt-net": BMC_IP.replace(".", "-"), "addr": "x"})
    host["metadata"]["annotations"] = {"export.hostclaim.metal3.io/notes": "console https://%s/" % BMC_IP}
    result = metadata_import.import_metadata(
        {}, host["metadata"], bmc_values=[*bmc_data.bmc_values_of(host), BMC_IP.replace(".", "-")]
    )
    assert result["labels"]["set"] == {"addr": "x"}
    assert "export.hostclaim.metal3.io/notes" not in result["annotations"]["set"]


def test_looks_sensitive():
    assert bmc_data.looks_sensitive("redfish+https://x")
    assert bmc_data.looks_sensitive("see https://user:pw@x/")
    assert not bmc_data.looks_sensitive("see https://wiki.example.com/x and http://y")
    assert bmc_data.looks_sensitive("see https://wiki.example.com/a://b")
    assert not bmc_data.looks_sensitive("kilo-rack")
    assert bmc_data.looks_sensitive("ilo6")
    assert not bmc_data.looks_sensitive(5)


def _credentialed_host(labels=None, annotations=None):
    host = make_host(labels=labels, annotations=annotations)
    return host, bmc_data.bmc_needles(host, BMC_USER, BMC_PASSWORD)


def test_bmc_needles_name_each_value():
    host = make_host()
    assert bmc_data.bmc_needles(host, BMC_USER, BMC_PASSWORD) == [
        ("BMC address", BMC_ADDRESS),
        ("BMC address host part", BMC_IP),
        ("BMC credentials Secret name", BMC_SECRET),
        ("BMC user name", BMC_USER),
        ("BMC password", BMC_PASSWORD),
    ]
    assert bmc_data.bmc_needles(host, "", None) == bmc_data.bmc_needles(host)
    needles = bmc_data.bmc_needles(host, BMC_USER, BMC_PASSWORD)
    assert bmc_data.bmc_values_of(host, BMC_USER, BMC_PASSWORD) == [value for dummy, value in needles]


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
    result = metadata_import.import_metadata({}, host["metadata"], bmc_values=needles)
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
    assert bmc_data.find_bmc_data(result, BMC_VALUES) == []


def test_an_unreadable_credentials_secret_withholds_everything():
    host, _dummy = _credentialed_host(
        labels={"example.com/rack": "r7"}, annotations={"export.hostclaim.metal3.io/rack": "r7"}
    )
    claim_meta = {"labels": {"example.com/rack": "r7"}, "annotations": {m3api.IMPORTED_LABELS: '["example.com/rack"]'}}
    result = metadata_import.import_metadata(
        claim_meta, host["metadata"], bmc_values=bmc_data.bmc_needles(host), blocked="unreadable"
    )
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
    assert (bmc_data.bmc_match(text, [("BMC password", needle)]) == "BMC password") is matched


_TEXT = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=40)


@settings(max_examples=300)
@given(
    prefix=_TEXT,
    needle=st.text(alphabet="abcdefXYZ0123456789-_.!", min_size=bmc_data.MIN_CONTAINED_BMC_VALUE, max_size=20),
    suffix=_TEXT,
)
def test_a_long_bmc_value_is_found_wherever_it_is(prefix, needle, suffix):
    assert bmc_data.bmc_match(prefix + needle + suffix, [("BMC password", needle)]) == "BMC password"


@settings(max_examples=300)
@given(
    needle=st.text(min_size=1, max_size=bmc_data.MIN_CONTAINED_BMC_VALUE - 1),
    text=st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126, exclude_characters="%"), max_size=40),
)
def test_a_short_bmc_value_only_matches_a_whole_value_or_word(needle, text):
    """(Without ``%``: a percent-encoded text is also matched decoded, see test_bmc_data_address.)"""
    lower, value = text.lower(), needle.lower()
    words = "".join(char if char.isalnum() else " " for char in lower).split()
    expected = bool(text) and (lower == value or value in words)
    assert (bmc_data.bmc_match(text, [("BMC password", needle)]) is not None) is expected


@settings(max_examples=200)
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
    needles = bmc_data.bmc_needles(host, user, password)
    result = metadata_import.import_metadata({}, host["metadata"], bmc_values=needles)
    for section in ("labels", "annotations"):
        for key, value in result[section]["set"].items():
            if key not in (m3api.IMPORTED_LABELS, m3api.IMPORTED_ANNOTATIONS):
                assert bmc_data.bmc_match(key, needles) is None and bmc_data.bmc_match(value, needles) is None
    for item in result["withheld"]:
        assert item["key"] is None or bmc_data.bmc_match(item["key"], needles) is None
