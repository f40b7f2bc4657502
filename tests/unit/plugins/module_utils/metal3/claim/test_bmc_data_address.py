# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every component of a BMC address is BMC data (bmc_data): host, port, system id, other path segments, query
values and user info, in any spelling a user would write, without withholding what merely looks alike."""

import ipaddress
import uuid
from urllib.parse import quote

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3 import api as m3api
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import bmc_data, metadata_import, upward
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.metal3_objects import (
    BMC_SECRET,
    make_host,
)

SYSTEM = "8F3E1C2A-1234-4ABC-9DEF-0123456789AB"
ADDRESS = "redfish+http://10.0.0.5:8000/redfish/v1/Systems/%s" % SYSTEM
IPV6_ADDRESS = "redfish-virtualmedia+https://[fd00:0:0:0::5]:8443/redfish/v1/Systems/node-77a?tenant=rk-2041#x"
EXPORT = "export.hostclaim.metal3.io/"


def _host(address=ADDRESS, **args):
    host = make_host(**args)
    host["spec"]["bmc"]["address"] = address
    return host


def _needles(address=ADDRESS, user="opsadmin", password="Kx7pQ2vR9wLm"):
    return bmc_data.bmc_needles(_host(address), user, password)


# ---------------------------------------------------------------- the components


@pytest.mark.parametrize(
    "address, parts",
    [
        (
            ADDRESS,
            {"host": "10.0.0.5", "port": "8000", "segments": ["redfish", "v1", "Systems", SYSTEM], "query": []},
        ),
        (
            IPV6_ADDRESS,
            {
                "host": "fd00:0:0:0::5",
                "port": "8443",
                "segments": ["redfish", "v1", "Systems", "node-77a"],
                "query": ["rk-2041", "x"],
            },
        ),
        ("ipmi://u%40x:p%3Aw@bmc1.lab:623", {"host": "bmc1.lab", "port": "623", "user": "u@x", "password": "p:w"}),
        ("10.0.0.5", {"host": "10.0.0.5", "port": "", "segments": []}),
        ("fd00::5", {"host": "fd00::5", "port": ""}),
        ("bmc1.lab:abc/x%20y", {"host": "bmc1.lab", "port": "", "segments": ["x y"]}),  # not a port
    ],
)
def test_address_parts(address, parts):
    found = bmc_data.address_parts(address)
    assert dict((key, found[key]) for key in parts) == parts


def test_every_identifying_component_is_a_needle_generic_words_and_short_segments_are_not():
    assert _needles(IPV6_ADDRESS, user=None, password=None) == [
        ("BMC address", IPV6_ADDRESS),
        ("BMC address host part", "fd00:0:0:0::5"),
        ("BMC system id", "node-77a"),
        ("BMC address query value", "rk-2041"),  # the fragment "x" is too short to identify anything
        ("BMC address port", "8443"),
        ("BMC credentials Secret name", BMC_SECRET),
    ]
    needles = _needles("idrac-virtualmedia://bmc1.lab/redfish/v1/Systems/System.Embedded.1/Managers/iDRAC.Embedded.1")
    assert [what for what, dummy in needles] == [
        "BMC address",
        "BMC address host part",
        "BMC credentials Secret name",
        "BMC user name",
        "BMC password",
    ]
    needles = _needles("redfish://root:calvin@bmc1.lab/redfish/v1/Chassis/blade-0042/Systems/sys-9", None, None)
    assert needles[2:] == [
        ("BMC address path segment", "blade-0042"),
        ("BMC system id", "sys-9"),
        ("BMC user name", "root"),
        ("BMC password", "calvin"),
        ("BMC credentials Secret name", BMC_SECRET),
    ]


# ---------------------------------------------------------------- spellings that are the BMC's


@pytest.mark.parametrize(
    "text, what",
    [
        (SYSTEM, "BMC system id"),
        (SYSTEM.lower(), "BMC system id"),
        (SYSTEM.replace("-", ""), "BMC system id"),
        (SYSTEM.replace("-", "").lower(), "BMC system id"),
        ("{%s}" % SYSTEM.lower(), "BMC system id"),
        ("urn:uuid:" + SYSTEM.lower(), "BMC system id"),
        ("oob=%s;" % SYSTEM.replace("-", ""), "BMC system id"),
        (ADDRESS, "BMC address"),
        (ADDRESS.upper(), "BMC address"),
        ("10.0.0.5:8000/redfish/v1/Systems/" + SYSTEM.lower(), "BMC address"),
        ("https://opsadmin@10.0.0.5:8000/redfish/v1/systems/" + SYSTEM.replace("-", ""), "BMC address"),
        (quote("10.0.0.5:8000/redfish/v1/Systems/" + SYSTEM, safe=""), "BMC address"),
        ("10.0.0.5", "BMC address host part"),
        ("ip-10-0-0-5.ec2.internal", "BMC address host part"),
        ("10_0_0_5", "BMC address host part"),
        ("010.000.000.005", "BMC address host part"),
        ("at 10.0.0.5.", "BMC address host part"),
        ("10.0.0.5:9999", "BMC address host part"),
        ("::ffff:10.0.0.5", "BMC address host part"),
        ("8000", "BMC address port"),
        (" :8000 ", "BMC address port"),
        ("08000", "BMC address port"),
    ],
)
def test_the_spellings_of_a_redfish_address(text, what):
    assert bmc_data.bmc_match(text, _needles()) == what


@pytest.mark.parametrize(
    "text, what",
    [
        ("fd00::5", "BMC address host part"),
        ("FD00::5", "BMC address host part"),
        ("fd00:0:0:0:0:0:0:5", "BMC address host part"),
        ("fd00:0000:0000:0000:0000:0000:0000:0005", "BMC address host part"),
        ("fd00:0::0:5", "BMC address host part"),
        ("[fd00::5]:8443", "BMC address host part"),
        ("fd00--5.ipv6-literal.net", "BMC address host part"),
        ("[FD00::5]:8443/redfish/v1/Systems/node-77a", "BMC address"),
        ("node-77a", "BMC system id"),
        ("NODE_77A", "BMC system id"),
        ("rack node.77a", "BMC system id"),
        ("rk-2041", "BMC address query value"),
        ("8443", "BMC address port"),
    ],
)
def test_the_spellings_of_an_ipv6_address_with_a_named_system(text, what):
    assert bmc_data.bmc_match(text, _needles(IPV6_ADDRESS)) == what


# ---------------------------------------------------------------- what merely looks alike


@pytest.mark.parametrize(
    "text",
    [
        "9100012",  # a serial with the IP's digits
        "serial 10005",
        "10.0.0.50",
        "110.0.0.5",
        "10.0.0.5.1",
        "10.0.0.55:8000",
        "10-0-0-51",
        "port 8000",  # a port is withheld as the whole value only
        "80001",
        "redfish v1 systems managers",  # generic words (not BMC data by this rule; looks_sensitive is another rule)
        "System.Embedded.1",
        "1",
        str(uuid.UUID(int=1)),
        SYSTEM[:-1] + "C",
        "node-77ab",
        "anode-77a",
        "fd00::51",
        "fd00::5:1",
        "afd00::5",
        "rk-20410",
        "rack r7",
    ],
)
def test_look_alikes_are_not_withheld(text):
    assert bmc_data.bmc_match(text, _needles()) is None
    assert bmc_data.bmc_match(text, _needles(IPV6_ADDRESS)) is None


def test_a_short_address_withholds_only_itself():
    needles = _needles("ipmi://10.0.0.1")
    assert bmc_data.bmc_match("9100012", needles) is None
    assert bmc_data.bmc_match("v10.0.0.12", needles) is None
    assert bmc_data.bmc_match("ip 10.0.0.1", needles) == "BMC address"  # the address is the host alone here
    assert bmc_data.bmc_match("1", _needles("redfish://10.0.0.1/redfish/v1/Systems/1")) is None


# ---------------------------------------------------------------- properties

_FILLER = st.text(alphabet="ghjkmnpqrstuvwxyz =,;()", max_size=12)


@st.composite
def _ipv4_spelling(draw, address):
    parts = [("0" * draw(st.integers(0, 2))) + str(octet) for octet in address.packed]
    separators = [draw(st.sampled_from(".-_")) for dummy in range(3)]
    return parts[0] + "".join(sep + part for sep, part in zip(separators, parts[1:]))


@settings(max_examples=300)
@given(st.data(), st.ip_addresses(v=4), _FILLER, _FILLER)
def test_an_ipv4_host_is_found_in_any_spelling(data, address, prefix, suffix):
    needles = _needles("redfish://%s/redfish/v1/Systems/1" % address)
    text = prefix + data.draw(_ipv4_spelling(address)) + suffix
    assert bmc_data.bmc_match(text, needles) in ("BMC address", "BMC address host part")


@settings(max_examples=300)
@given(st.ip_addresses(v=4), st.ip_addresses(v=4), _FILLER)
def test_another_ipv4_address_or_a_run_of_digits_is_not_the_host(address, other, filler):
    assume(address != other)
    needles = _needles("redfish://%s/redfish/v1/Systems/1" % address)
    assert bmc_data.bmc_match(filler + str(other) + filler, needles) is None
    assert bmc_data.bmc_match("".join(str(octet) for octet in address.packed), needles) is None


@st.composite
def _ipv6_spelling(draw, address):
    if draw(st.booleans()):
        text = address.exploded
    else:
        text = address.compressed
        groups = [("0" * draw(st.integers(0, 4 - len(group))) + group) if group else "" for group in text.split(":")]
        text = ":".join(groups)
    if draw(st.booleans()):
        text = text.upper()
    if draw(st.booleans()):
        text = "[%s]:%d" % (text, draw(st.integers(1, 65535)))
    return text


@settings(max_examples=300)
@given(st.data(), st.ip_addresses(v=6), _FILLER)
def test_an_ipv6_host_is_found_in_any_spelling(data, address, filler):
    assume(address.ipv4_mapped is None)
    needles = _needles("redfish://[%s]/redfish/v1/Systems/1" % address)
    text = filler + " " + data.draw(_ipv6_spelling(address)) + " " + filler
    assert bmc_data.bmc_match(text, needles) in ("BMC address", "BMC address host part")


@settings(max_examples=200)
@given(st.ip_addresses(v=6), st.ip_addresses(v=6))
def test_another_ipv6_address_is_not_the_host(address, other):
    assume(address != other and address.ipv4_mapped is None and other.ipv4_mapped is None)
    needles = _needles("redfish://[%s]/redfish/v1/Systems/1" % address)
    assert bmc_data.bmc_match("at %s and %s" % (other.compressed, other.exploded), needles) is None


@settings(max_examples=300)
@given(st.uuids(), st.sampled_from(["upper", "lower", "dashless", "DASHLESS", "braced", "encoded"]), _FILLER, _FILLER)
def test_a_uuid_system_id_is_found_in_any_spelling_and_any_text(system, spelling, prefix, suffix):
    needles = _needles("redfish+http://127.0.0.1:8000/redfish/v1/Systems/%s" % system)
    text = {
        "upper": str(system).upper(),
        "lower": str(system),
        "dashless": system.hex,
        "DASHLESS": system.hex.upper(),
        "braced": "{%s}" % system,
        "encoded": quote("Systems/%s" % system, safe=""),
    }[spelling]
    assert bmc_data.bmc_match(prefix + text + suffix, needles) == "BMC system id"
    assert bmc_data.find_bmc_data({"export.hostclaim.metal3.io/oob-system": prefix + text + suffix}, needles) == [
        "export.hostclaim.metal3.io/oob-system"
    ]


@settings(max_examples=300)
@given(
    st.sampled_from([ADDRESS, IPV6_ADDRESS, "ipmi://10.0.0.1:623", "redfish://bmc1.lab/redfish/v1/Systems/abcd"]),
    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=40),
)
def test_the_scanner_and_the_binder_use_one_matcher(address, text):
    needles = _needles(address)
    matched = bmc_data.bmc_match(text, needles) is not None
    assert (bmc_data.find_bmc_data({"k": text}, needles) == ["k"]) is matched
    assert (bmc_data.find_bmc_data({text: 1}, needles) == ["%s (key)" % text]) is (matched and bool(text))
    assert bmc_data.mentions(text, needles) is matched


def test_the_scanner_judges_plain_values_by_their_spelling():
    values = [ADDRESS, "127.0.0.1:8000", SYSTEM, "fd00::5"]
    obj = {
        "a": ADDRESS.split("://")[1].upper(),
        "b": "http://127.0.0.1:8000/x",
        "c": "http://127.0.0.1:8001/live.iso",  # another port of the same host: not this BMC
        "d": SYSTEM.replace("-", "").lower(),
        "e": "[FD00:0:0::5]",
        "f": "serial 1270018000",
    }
    assert bmc_data.find_bmc_data(obj, values) == ["a", "b", "d", "e"]


# ---------------------------------------------------------------- what the binder does with them


def test_an_exported_system_id_is_withheld_and_reported_by_kind_an_innocent_annotation_crosses():
    host = _host(
        annotations={
            EXPORT + "oob-system": SYSTEM,
            EXPORT + "oob-system-dashless": SYSTEM.replace("-", "").lower(),
            EXPORT + "oob-address": ADDRESS.split("://")[1],
            EXPORT + "mgmt": "ip-10-0-0-5",
            EXPORT + "oob-port": "8000",
            EXPORT + SYSTEM.lower(): "x",
            EXPORT + "rack": "r7 serial 9100012 port 8000",
        }
    )
    needles = bmc_data.bmc_needles(host, "opsadmin", "Kx7pQ2vR9wLm")
    result = metadata_import.import_metadata({}, host["metadata"], bmc_values=needles)
    assert set(result["annotations"]["set"]) == {EXPORT + "rack", m3api.IMPORTED_ANNOTATIONS}
    assert sorted(result["withheld"], key=lambda item: str(item["key"])) == [
        {"kind": "annotation", "key": None, "reason": "the key repeats the BMC system id"},
        {"kind": "annotation", "key": EXPORT + "mgmt", "reason": "the value repeats the BMC address host part"},
        {"kind": "annotation", "key": EXPORT + "oob-address", "reason": "the value repeats the BMC address"},
        {"kind": "annotation", "key": EXPORT + "oob-port", "reason": "the value repeats the BMC address port"},
        {"kind": "annotation", "key": EXPORT + "oob-system", "reason": "the value repeats the BMC system id"},
        {"kind": "annotation", "key": EXPORT + "oob-system-dashless", "reason": "the value repeats the BMC system id"},
    ]
    assert bmc_data.find_bmc_data(result, needles) == []


def test_a_nic_on_the_bmc_in_another_ipv6_spelling_is_left_out_of_the_status():
    host = _host(IPV6_ADDRESS)
    host["status"] = {
        "hardware": {
            "nics": [
                {"name": "eno1", "mac": "52:54:00:00:00:01", "ip": "fd00::6"},
                {"name": "bmc0", "mac": "52:54:00:00:00:02", "ip": "FD00:0000::0005"},
            ]
        }
    }
    needles = bmc_data.bmc_needles(host)
    assert [nic["name"] for nic in upward.host_nics(host) if not upward.entry_match(nic, needles)] == ["eno1"]
    assert upward.hardware_withheld(host, needles) == [
        {"kind": "status", "key": key, "reason": "an entry repeats the BMC address host part"}
        for key in ("addresses", "nics")
    ]


def test_ip_address_helper_rejects_names():
    assert bmc_data._ip("bmc1.lab") is None and bmc_data._ip("[fd00::5]") == ipaddress.ip_address("fd00::5")
