# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The literal prefilter of bmc_match changes no result (issue 41, item 1).

``bmc_data`` runs a needle's regular expression only on the texts that contain every literal of its pattern
(``_*_literals``) and compiles it when a text first needs it.  ``_reference_match`` below is the matcher as it was
before (each pattern compiled when the needle set is first seen, every text searched): the same pattern builders,
no prefilter.  The properties compare the two on generated addresses and on texts spelled from them (case,
separators, leading zeros, IPv6 forms, brackets, UUID forms, percent-encoding) and mutated near them (a character
dropped, changed or added), and check the prefilter's claim directly: every match of a pattern contains its
literals.  Rules compiled once (``bmc_rules``, what a bind pass keeps per host) match as the values they were
compiled from do, wherever values are taken.
"""

import ipaddress
import re
import uuid
from functools import lru_cache
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import bmc_data, metadata_import

# ---------------------------------------------------------------- the matcher before the prefilter


def _reference_regex(pattern):
    compiled = re.compile(pattern)

    def test(variants, words):
        return any(compiled.search(text) for text in variants)

    return test


def _reference_rule(what, value):
    lower = value.lower()
    if what == bmc_data.BMC_PORT:
        return bmc_data._port(lower) if lower.strip().isdigit() else bmc_data._generic(lower)
    if what == bmc_data.BMC_ADDRESS or (what is None and bmc_data._looks_like_address(value)):
        pattern = bmc_data._address_pattern(value)
        return _reference_regex(pattern) if pattern else bmc_data._generic(lower)
    if what == bmc_data.BMC_HOST or (what is None and bmc_data._ip(value)):
        if bmc_data._ip(value):
            return _reference_regex(bmc_data._host_pattern(value.strip().strip("[]")))
        return bmc_data._generic(lower)
    if what in (bmc_data.BMC_SYSTEM_ID, bmc_data.BMC_PATH_SEGMENT, bmc_data.BMC_QUERY_VALUE) or (
        what is None and bmc_data._uuid_pattern(value)
    ):
        return _reference_regex(bmc_data._token_pattern(value))
    return bmc_data._generic(lower)


@lru_cache(maxsize=64)
def _reference_compiled(needles):
    return tuple((what or "BMC data", _reference_rule(what, value)) for what, value in needles)


def _reference_match(text, bmc_values):
    if not isinstance(text, str) or not text:
        return None
    return bmc_data._match(text, _reference_compiled(bmc_data._normal(bmc_values)))


# ---------------------------------------------------------------- addresses and texts near them

_TOKEN = st.text(alphabet="abcdefXYZ0123456789-._~%", min_size=1, max_size=10)
_SEGMENT = st.one_of(
    st.sampled_from([*sorted(bmc_data.GENERIC_PATH_WORDS), "Systems", "1", "node-77a", "System.Embedded.1"]),
    st.uuids().map(str),
    st.uuids().map(lambda value: value.hex.upper()),
    _TOKEN,
)


@st.composite
def _ipv4_mapped(draw):
    return ipaddress.IPv6Address("::ffff:%s" % draw(st.ip_addresses(v=4)))


_HOST = st.one_of(
    st.ip_addresses(v=4).map(str),
    st.ip_addresses(v=4).map(lambda address: ".".join("0%d" % octet for octet in address.packed)),
    st.ip_addresses(v=6).map(lambda address: "[%s]" % address.compressed),
    st.ip_addresses(v=6).map(lambda address: "[%s]" % address.exploded),
    _ipv4_mapped().map(lambda address: "[%s]" % address),
    _ipv4_mapped().map(lambda address: "[::ffff:%s]" % address.ipv4_mapped),
    st.sampled_from(["[fe80::1%25eth0]", "[::]", "[::1]", "0.0.0.0", "bmc1.lab", "BMC-7.Rack_2.example.com", ""]),
    st.text(alphabet="abcxyz0189.-_", min_size=1, max_size=12),
)


@st.composite
def _address(draw):
    scheme = draw(st.sampled_from(["", "redfish://", "redfish+http://", "idrac-virtualmedia+https://", "ipmi://"]))
    user = draw(st.sampled_from(["", "admin@", "ops:Kx7p%40Q2@"]))
    host = draw(_HOST)
    port = draw(st.sampled_from(["", ":623", ":8000", ":08443", ":0", ":00"]))
    segments = draw(st.lists(_SEGMENT, max_size=4))
    path = "".join("/" + quote(segment, safe="-._~") for segment in segments)
    query = draw(st.sampled_from(["", "?tenant=rk-2041", "?a=1&node=abc.def#frag", "#node-0042"]))
    return scheme + user + host + port + path + query


def _ipv6_spellings(address):
    exploded, compressed = address.exploded, address.compressed
    stripped = ":".join(group.lstrip("0") or "0" for group in exploded.split(":"))
    return [exploded, compressed, stripped, exploded.upper(), compressed.replace(":", "-"), "[%s]" % compressed]


def _spellings(value):
    """Texts that spell ``value`` (or a part of it) the ways a user would, and look-alikes."""
    texts = [value, value.upper(), value.swapcase(), quote(value, safe=""), quote(quote(value, safe=""), safe="")]
    texts += [value.replace(".", sep) for sep in "-_"]
    parts = bmc_data.address_parts(value)
    address = bmc_data._ip(parts["host"]) or bmc_data._ip(value)
    hosts = []
    if isinstance(address, ipaddress.IPv4Address):
        octets = [str(octet) for octet in address.packed]
        hosts += [
            "ip-" + "-".join(octets),
            "_".join("00" + octet for octet in octets),
            ".".join(octets[:3]) + ".1" + octets[3],
            "".join(octets),
        ]
    elif isinstance(address, ipaddress.IPv6Address):
        hosts += _ipv6_spellings(address)
        if address.ipv4_mapped is not None:
            hosts += [str(address.ipv4_mapped), "-".join(str(octet) for octet in address.ipv4_mapped.packed)]
    texts += hosts
    if parts["host"] and parts["host"] != value:  # the address with its host spelled another way
        texts += [value.replace(parts["host"], host, 1) for host in hosts]
    if parts["port"]:  # the port with more or fewer leading zeros
        port = parts["port"]
        texts += [value.replace(":" + port, ":0" + port, 1), value.replace(":" + port, ":" + (port.lstrip("0") or "0"))]
    for segment in parts["segments"]:
        texts += [segment, segment.upper(), "/" + segment, segment.replace("-", "")]
        found = bmc_data._UUID.fullmatch(segment.strip().lower())
        if found:
            joined = "".join(found.groups())
            texts += [joined, joined.upper(), "{%s}" % str(uuid.UUID(joined)), "urn:uuid:" + str(uuid.UUID(joined))]
    texts += parts["query"] + [parts["host"], parts["port"], ":" + parts["port"], parts["user"], parts["password"]]
    return [text for text in texts if text]


@st.composite
def _near(draw, text):
    """``text`` with up to two changes (a character dropped, changed or added), inside filler."""
    for dummy in range(draw(st.integers(0, 2))):
        position = draw(st.integers(0, len(text)))
        change = draw(st.sampled_from(["drop", "change", "add"]))
        character = draw(st.sampled_from("0123456789abcdef.-_:/[]%Z "))
        if change == "drop":
            text = text[:position] + text[position + 1 :]
        elif change == "change":
            text = text[:position] + character + text[position + 1 :]
        else:
            text = text[:position] + character + text[position:]
    prefix = draw(st.sampled_from(["", " ", "x", "1", "a.", "at ", "host ", "ip-"]))
    suffix = draw(st.sampled_from(["", " ", "x", "1", ".5", "/", ":9", "-0"]))
    return prefix + text + suffix


@st.composite
def _case(draw):
    address = draw(_address())
    host = {"spec": {"bmc": {"address": address, "credentialsName": draw(st.sampled_from(["h1-bmc", "", "x"]))}}}
    user = draw(st.sampled_from([None, "", "a", "opsadmin"]))
    password = draw(st.sampled_from([None, "p", "Kx7pQ2vR9wLm"]))
    kind = draw(st.sampled_from(["needles", "plain"]))
    needles = bmc_data.bmc_needles(host, user, password)
    values = needles if kind == "needles" else [value for what, value in needles]
    source = draw(st.sampled_from([address] + [value for what, value in needles]))
    spellings = _spellings(source) or ["x"]
    text = draw(st.one_of(st.sampled_from(spellings), st.text(alphabet="0123456789abcdef.-_:/%", max_size=24)))
    return values, draw(_near(text))


# ---------------------------------------------------------------- the properties


@settings(max_examples=1500, deadline=None)
@given(_case())
def test_the_prefilter_changes_no_result(case):
    values, text = case
    assert bmc_data.bmc_match(text, values) == _reference_match(text, values)


@settings(max_examples=300, deadline=None)
@given(_case(), _case())
def test_the_scanner_gives_the_same_paths(first, second):
    values, text = first
    obj = {"a": text, text or "k": [second[1], {"b": second[1] + text}], "n": 5}
    rules = _reference_compiled(bmc_data._normal(values))
    expected = []
    if rules:
        bmc_data._scan(obj, rules, "", expected)
    assert bmc_data.find_bmc_data(obj, values) == expected


# ---------------------------------------------------------------- rules compiled once (bmc_rules)

_ODD_VALUES = st.lists(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-5, 70000),
        st.text(alphabet="0123456789abcdef.-_:/%", max_size=12),
        st.tuples(
            st.sampled_from([None, bmc_data.BMC_PORT, bmc_data.BMC_USER]), st.one_of(st.none(), st.text(max_size=8))
        ),
    ),
    max_size=4,
)


@settings(max_examples=1500, deadline=None)
@given(_case(), _ODD_VALUES)
def test_rules_compiled_once_match_as_the_values_do(case, odd):
    values, text = case
    for given_values in (values, list(values) + odd, odd):
        rules = bmc_data.bmc_rules(given_values)
        assert isinstance(rules, bmc_data.BmcRules)
        assert bmc_data.bmc_rules(rules) is rules  # rules given are kept, never compiled again
        expected = _reference_match(text, given_values)
        assert bmc_data.bmc_match(text, rules) == expected
        assert bmc_data.mentions(text, rules) is (expected is not None)
        obj = {"k": [text, {text or "x": 5}], "empty": ""}
        assert bmc_data.find_bmc_data(obj, rules) == bmc_data.find_bmc_data(obj, given_values)


@settings(max_examples=300, deadline=None)
@given(_case())
def test_a_host_offer_with_rules_is_the_offer_with_the_values(case):
    values, text = case
    meta = {
        "labels": {"rack": text[:63] or "r1", "example.com/" + (text[:20] or "k"): "v"},
        "annotations": {"metal3.io/x": text, "note": "plain"},
    }
    with_values = metadata_import.host_offer(meta, ("example.com", "metal3.io"), values)
    assert metadata_import.host_offer(meta, ("example.com", "metal3.io"), bmc_data.bmc_rules(values)) == with_values


@settings(max_examples=1500, deadline=None)
@given(_case())
def test_every_match_of_a_pattern_contains_its_literals(case):
    values, text = case
    for what, value in bmc_data._normal(values):
        built = _pattern_and_literals(what, value)
        if built is None:
            continue
        pattern, literals = built
        compiled = re.compile(pattern)
        for variant in bmc_data._variants(text):
            for found in compiled.finditer(variant):
                assert all(literal in found.group(0) for literal in literals), (pattern, literals, variant)


def _pattern_and_literals(what, value):
    """The pattern ``_rule`` gives ``(what, value)`` and its literals, or ``None`` for a rule without a pattern."""
    if what == bmc_data.BMC_PORT:
        return None
    if what == bmc_data.BMC_ADDRESS or (what is None and bmc_data._looks_like_address(value)):
        pattern = bmc_data._address_pattern(value)
        assert (pattern is None) is (bmc_data._address_literals(value) is None)
        return (pattern, bmc_data._address_literals(value)) if pattern else None
    if what == bmc_data.BMC_HOST or (what is None and bmc_data._ip(value)):
        host = value.strip().strip("[]")
        return (bmc_data._host_pattern(host), bmc_data._host_literals(host)) if bmc_data._ip(value) else None
    if what in (bmc_data.BMC_SYSTEM_ID, bmc_data.BMC_PATH_SEGMENT, bmc_data.BMC_QUERY_VALUE) or (
        what is None and bmc_data._uuid_pattern(value)
    ):
        return bmc_data._token_pattern(value), bmc_data._token_literals(value)
    return None


@pytest.mark.parametrize(
    "address",
    [
        "redfish+http://10.0.0.5:8000/redfish/v1/Systems/8F3E1C2A-1234-4ABC-9DEF-0123456789AB",
        "redfish-virtualmedia+https://[fd00:0:0:0::5]:8443/redfish/v1/Systems/node-77a?tenant=rk-2041#x",
        "redfish://[::ffff:10.1.2.3]/redfish/v1/Systems/1",
        "ipmi://10.0.0.1:00",
        "redfish://bmc1.lab/redfish/v1/Systems/abcd",
    ],
)
def test_every_spelling_of_a_known_address_gets_the_same_answer(address):
    host = {"spec": {"bmc": {"address": address, "credentialsName": "h1-bmc"}}}
    needles = bmc_data.bmc_needles(host, "opsadmin", "Kx7pQ2vR9wLm")
    matched = 0
    for value in [address] + [value for what, value in needles]:
        for text in _spellings(value):
            for wrapped in (text, "at " + text + ".", "x" + text + "1"):
                assert bmc_data.bmc_match(wrapped, needles) == _reference_match(wrapped, needles), wrapped
                matched += _reference_match(wrapped, needles) is not None
    assert matched  # the spellings do reach the expressions


def test_a_pattern_is_compiled_only_when_a_text_may_match(monkeypatch):
    needles = bmc_data.bmc_needles({"spec": {"bmc": {"address": "redfish://10.1.2.3/redfish/v1/Systems/1"}}})
    bmc_data._compiled.cache_clear()
    compiles = []
    original = re.compile

    def counting(pattern, *args):
        compiles.append(pattern)
        return original(pattern, *args)

    monkeypatch.setattr(bmc_data.re, "compile", counting)
    assert bmc_data.bmc_match("rack-7", needles) is None
    assert bmc_data.bmc_match("52:54:00:03:08:01", needles) is None
    assert not compiles
    assert bmc_data.bmc_match("ip-10-1-2-3", needles) == bmc_data.BMC_HOST
    assert len(compiles) == 1  # the host part's; the address's needs "/redfish" too
