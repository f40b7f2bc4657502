# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Detecting BMC data, pure: what a host's BMC is known by, and whether a text repeats it or looks sensitive.

``bmc_needles`` / ``bmc_values_of`` list a host's BMC data: its address and
every component of it that identifies the machine (host part, explicit port,
system id and other path segments, query values, user info), the credentials
Secret name, and the user name and password the binder reads from that
Secret.  ``bmc_match`` says whether a text repeats one of them, in any
spelling a user would write (see its rule); ``looks_sensitive`` flags keys
and values such as ``bmc``, ``credential``, ``password``, ``secret``,
``token``, ``ipmi``, ``redfish``, ``idrac``, ``ilo<n>`` or a URL whose
scheme is not http/https or that has user info.  ``find_bmc_data`` scans any
object with the same matcher (the tests' and the leak checks' scanner).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from functools import lru_cache
from urllib.parse import unquote, unquote_plus

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import (
    get_path,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.spec import (
    URL_SCHEMES,
)

#: a BMC value shorter than this is matched only as a whole value or word (see ``bmc_match``); a path
#: segment or query value shorter than this (iLO's system ``1``) identifies no machine and is no needle
MIN_CONTAINED_BMC_VALUE = 4

#: the kinds of BMC data ``bmc_needles`` reports (``what``), most specific first
BMC_ADDRESS = "BMC address"
BMC_HOST = "BMC address host part"
BMC_SYSTEM_ID = "BMC system id"
BMC_PATH_SEGMENT = "BMC address path segment"
BMC_QUERY_VALUE = "BMC address query value"
BMC_PORT = "BMC address port"
BMC_SECRET_NAME = "BMC credentials Secret name"
BMC_USER = "BMC user name"
BMC_PASSWORD = "BMC password"

#: path segments of BMC addresses that are the same on every machine: never needles
GENERIC_PATH_WORDS = frozenset(
    (
        "redfish",
        "v1",
        "systems",
        "managers",
        "chassis",
        "wsman",
        "system.embedded.1",
        "idrac.embedded.1",
        "bmc",
        "self",
    )
)


SENSITIVE_WORDS = (
    "bmc",
    "credential",
    "password",
    "passwd",
    "secret",
    "token",
    "ipmi",
    "redfish",
    "idrac",
    "irmc",
    "kubeconfig",
    "last-applied-configuration",
    "private-key",
    "privatekey",
)


SENSITIVE_TOKENS = ("drac", "cimc", "xcc", "ilo")


def _url_problem(text):
    start = text.find("://")
    while start != -1:
        begin = start
        while begin > 0 and (text[begin - 1].isalnum() or text[begin - 1] in "+.-"):
            begin -= 1
        scheme = text[begin:start].lower()
        authority = text[start + 3 :].split("/")[0]
        if scheme not in URL_SCHEMES or "@" in authority:
            return True
        start = text.find("://", start + 3)
    return False


def looks_sensitive(text: str) -> bool:
    """True if ``text`` may carry BMC data or a credential (deny-list, case-insensitive)."""
    if not isinstance(text, str):
        return False
    lower = text.lower()
    if any(word in lower for word in SENSITIVE_WORDS):
        return True
    tokens = "".join(char if char.isalnum() else " " for char in lower).split()
    for token in tokens:
        if token in SENSITIVE_TOKENS or (token.startswith("ilo") and token[3:].isdigit()):
            return True
    return _url_problem(text)


# ---------------------------------------------------------------- the parts of a BMC address


def address_parts(address: str) -> dict:
    """The components of a BMC address (with or without scheme): ``user``, ``password``, ``host``,
    ``port`` (explicit only, digits), ``segments`` (path segments, percent-decoded) and ``query``
    (query and fragment values, decoded); missing parts are ``''`` or ``[]``."""
    text = address.strip()
    rest = text.split("://", 1)[1] if "://" in text else text
    cut = min([index for index in (rest.find(c) for c in "/?#") if index != -1] or [len(rest)])
    authority, tail = rest[:cut], rest[cut:]
    userinfo, at, hostport = authority.rpartition("@")
    user, _sep, password = userinfo.partition(":") if at else ("", "", "")
    port = ""
    if hostport.startswith("["):
        host, _sep, after = hostport[1:].partition("]")
        port = after[1:] if after.startswith(":") else ""
    elif hostport.count(":") == 1:
        host, port = hostport.split(":")
    else:
        host = hostport
    if not port.isdigit():
        port = ""
    tail, _sep, fragment = tail.partition("#")
    path, _sep, query = tail.partition("?")
    values = [unquote_plus(pair.partition("=")[2]) for pair in query.split("&") if pair.partition("=")[2]]
    if fragment:
        values.append(unquote(fragment))
    return {
        "user": unquote(user),
        "password": unquote(password),
        "host": host,
        "port": port,
        "segments": [unquote(segment) for segment in path.split("/") if segment],
        "query": values,
    }


def _bmc_host_part(address):
    return address_parts(address)["host"]


def _identifies(value):
    """True if a path segment or query value may identify a machine (not a generic Redfish word, not too short)."""
    lower = value.strip().lower()
    return len(lower) >= MIN_CONTAINED_BMC_VALUE and lower not in GENERIC_PATH_WORDS


def _address_needles(address):
    parts = address_parts(address)
    needles = [(BMC_ADDRESS, address), (BMC_HOST, parts["host"])]
    segments = [segment for segment in parts["segments"] if _identifies(segment)]
    lowered = [segment.lower() for segment in parts["segments"]]
    # the segment after ``Systems`` is the system id; any other identifying segment is reported as a path segment
    system = parts["segments"][lowered.index("systems") + 1] if "systems" in lowered[:-1] else None
    needles += [(BMC_SYSTEM_ID if segment == system else BMC_PATH_SEGMENT, segment) for segment in segments]
    needles += [(BMC_QUERY_VALUE, value) for value in parts["query"] if _identifies(value)]
    needles += [(BMC_PORT, parts["port"]), (BMC_USER, parts["user"]), (BMC_PASSWORD, parts["password"])]
    return needles


def bmc_needles(host: dict, username: str | None = None, password: str | None = None) -> list[tuple[str, str]]:
    """``[(what, value)]``: the BMC data of a BMH dict that nothing imported may repeat.

    ``what`` names the kind of value for reports (``BMC address``, ``BMC address host part``, ``BMC system id``,
    ``BMC address path segment``, ``BMC address query value``, ``BMC address port``, ``BMC user name``,
    ``BMC password`` (those two also from the address's user info), ``BMC credentials Secret name``); ``username``
    and ``password`` come from the credentials Secret when the caller could read it.  Empty values, generic
    Redfish path words (``GENERIC_PATH_WORDS``) and path segments or query values shorter than
    ``MIN_CONTAINED_BMC_VALUE`` are left out; each value once.
    """
    bmc = get_path(host, "spec", "bmc") or {}
    needles = []
    address = bmc.get("address")
    if isinstance(address, str) and address.strip():
        needles.extend(_address_needles(address))
    needles.append((BMC_SECRET_NAME, bmc.get("credentialsName")))
    needles.extend([(BMC_USER, username), (BMC_PASSWORD, password)])
    seen, unique = set(), []
    for what, value in needles:
        if isinstance(value, str) and value and (what, value) not in seen:
            seen.add((what, value))
            unique.append((what, value))
    return unique


def bmc_values_of(host: dict, username: str | None = None, password: str | None = None) -> list[str]:
    """The values of ``bmc_needles`` (plain strings: each is matched by the rule its spelling suggests)."""
    return [needle[1] for needle in bmc_needles(host, username, password)]


# ---------------------------------------------------------------- one matcher for every spelling

_SEPARATORS = "[-._]"
_UUID = re.compile(r"\{?(?:urn:uuid:)?([0-9a-f]{8})-?([0-9a-f]{4})-?([0-9a-f]{4})-?([0-9a-f]{4})-?([0-9a-f]{12})\}?")


def _words(lower):
    return "".join(char if char.isalnum() else " " for char in lower).split()


def _ip(value):
    text = value.strip().strip("[]").split("%", 1)[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _ipv4_pattern(address):
    octets = [("0*%d" % int(octet)) if int(octet) else "0+" for octet in str(address).split(".")]
    return r"(?<![0-9])(?<![0-9][-._])%s(?![0-9])(?![-._][0-9])" % _SEPARATORS.join(octets)


def _ipv6_pattern(address):
    groups = [int(group, 16) for group in address.exploded.split(":")]

    def group(value):
        digits = "%x" % value
        return "0{1,4}" if not value else "0{0,%d}%s" % (4 - len(digits), digits)

    def joined(part):
        return "[:-]".join(group(value) for value in part)

    variants = [joined(groups)]
    for start in range(8):
        for end in range(start + 1, 9):
            if all(value == 0 for value in groups[start:end]):
                variants.append(joined(groups[:start]) + "(?:::|--)" + joined(groups[end:]))
    pattern = r"(?<![0-9a-f:])(?:%s)(?![0-9a-f:])" % "|".join(variants)
    if address.ipv4_mapped is not None:
        pattern += "|" + _ipv4_pattern(address.ipv4_mapped)
    return pattern


def _host_pattern(host):
    """The host part in its spellings: an IP address in any notation, else a name (case only); ``None``: no host."""
    address = _ip(host)
    if isinstance(address, ipaddress.IPv4Address):
        return _ipv4_pattern(address)
    if isinstance(address, ipaddress.IPv6Address):
        return _ipv6_pattern(address)
    return re.escape(host.lower()) if host else None


def _uuid_pattern(value):
    found = _UUID.fullmatch(value.strip().lower())
    return "-?".join(found.groups()) if found else None


def _token_pattern(value):
    """A path segment or query value: a UUID with or without dashes, else the value between non-alphanumerics
    (its separators ``-``, ``.``, ``_`` interchangeable)."""
    uuid = _uuid_pattern(value)
    if uuid:
        return uuid
    text = "".join(_SEPARATORS if char in "-._" else re.escape(char) for char in value.strip().lower())
    return r"(?<![0-9a-z])%s(?![0-9a-z])" % text


def _address_pattern(address):
    """The address without scheme and user info, its host in any notation, path and query case-insensitive."""
    parts = address_parts(address)
    host = _host_pattern(parts["host"])
    if host is None:
        return None
    pattern = r"\[?(?:%s)\]?" % host if _ip(parts["host"]) else "(?:%s)" % host
    if parts["port"]:
        pattern += ":0*%s(?![0-9])" % parts["port"].lstrip("0")
    for segment in parts["segments"]:
        uuid = _uuid_pattern(segment)
        pattern += "/" + (uuid or re.escape(segment.lower()))
    if parts["segments"]:
        pattern += "(?![0-9a-z])"
    return pattern


# ------------------------------------------------ what every match contains (the prefilter of each pattern)
#
# Each ``_*_literals`` mirrors the pattern builder of the same name: the strings (lowered, as the patterns are)
# that every text the pattern matches contains, so that a text without one of them is not searched.  Mandatory
# parts only: an octet's or a group's digits without their optional leading zeros, a UUID's five groups (the
# dashes between them are optional), the runs between interchangeable separators, a host name, ``/segment``.


def _ipv4_literals(address):
    """Each octet's decimal digits: ``0*%d`` (or ``0+`` for 0) in ``_ipv4_pattern`` contains them."""
    return tuple(str(int(octet)) for octet in str(address).split("."))


def _ipv6_literals(address):
    """Each non-zero group's hex digits (every variant of ``_ipv6_pattern`` spells the non-zero groups, with or
    without leading zeros; only zero groups are compressed); none for an IPv4-mapped address, whose pattern has
    a second alternative (the IPv4 address) without them."""
    if address.ipv4_mapped is not None:
        return ()
    return tuple("%x" % int(group, 16) for group in address.exploded.split(":") if int(group, 16))


def _host_literals(host):
    """As ``_host_pattern``: ``None`` when it is ``None`` (no host)."""
    address = _ip(host)
    if isinstance(address, ipaddress.IPv4Address):
        return _ipv4_literals(address)
    if isinstance(address, ipaddress.IPv6Address):
        return _ipv6_literals(address)
    return (host.lower(),) if host else None


def _uuid_literals(value):
    found = _UUID.fullmatch(value.strip().lower())
    return found.groups() if found else None


def _token_literals(value):
    """As ``_token_pattern``: a UUID's groups, else the runs of the value between its separators."""
    uuid = _uuid_literals(value)
    if uuid:
        return uuid
    text = value.strip().lower()
    return tuple(run for run in re.split("[-._]", text) if run)


def _address_literals(address):
    """As ``_address_pattern``: ``None`` when it is ``None`` (no host part)."""
    parts = address_parts(address)
    literals = _host_literals(parts["host"])
    if literals is None:
        return None
    literals = list(literals)
    if parts["port"]:  # ``:0*<port without leading zeros>``: a port of zeros leaves only the colon
        literals.extend([":", parts["port"].lstrip("0")] if parts["port"].lstrip("0") else [":"])
    for segment in parts["segments"]:
        uuid = _uuid_literals(segment)
        literals.extend(["/" + uuid[0], *uuid[1:]] if uuid else ["/" + segment.lower()])
    # the longest first: the most selective test rejects most texts at once
    return tuple(sorted(set(literals), key=len, reverse=True))


def _looks_like_address(value):
    """True for a plain value spelled as an address: with a scheme, or an IP with or without an explicit port."""
    if "://" in value:
        return True
    parts = address_parts(value)
    return _ip(parts["host"]) is not None and not parts["segments"] and not parts["query"]


def _generic(value):
    """The rule for a name, user or password: long values anywhere, short ones as the whole value or a word."""

    def test(variants, words):
        if len(value) >= MIN_CONTAINED_BMC_VALUE:
            return any(value in text for text in variants)
        return any(text == value for text in variants) or value in words()

    return test


def _regex(build, literals, fallback):
    """The test of a regular expression: ``build()`` makes its pattern, compiled when a text first needs it.

    ``literals`` are strings that every match of the pattern contains (its prefilter, from ``_*_literals``): the
    expression runs only on the texts that contain them all, so a host's matchers cost a few substring tests on
    texts that cannot match, and are compiled only when a text might.  ``fallback`` (the lowered value) is the
    plain rule used if the pattern does not compile (not expected: every pattern is built from escaped text).
    """
    compiled = []

    def test(variants, words):
        for text in variants:
            if all(literal in text for literal in literals):
                if not compiled:
                    try:
                        compiled.append(re.compile(build()))
                    except re.error:
                        compiled.append(None)
                if compiled[0] is None:
                    return _generic(fallback)(variants, words)
                if compiled[0].search(text):
                    return True
        return False

    return test


def _port(value):
    port = value.strip().lstrip("0") or "0"

    def test(variants, words):
        return any(text.strip().lstrip(":").lstrip("0") == port for text in variants if text.strip())

    return test


def _rule(what, value):
    """The test for one needle, by its kind (``what``); a plain value (``what`` ``None``) by its spelling."""
    lower = value.lower()
    if what == BMC_PORT:
        return _port(lower) if lower.strip().isdigit() else _generic(lower)
    if what == BMC_ADDRESS or (what is None and _looks_like_address(value)):
        literals = _address_literals(value)
        if literals is None:  # no host part: ``_address_pattern`` is None
            return _generic(lower)
        return _regex(lambda: _address_pattern(value), literals, lower)
    if what == BMC_HOST or (what is None and _ip(value)):
        if _ip(value):
            host = value.strip().strip("[]")
            return _regex(lambda: _host_pattern(host), _host_literals(host), lower)
        return _generic(lower)
    if what in (BMC_SYSTEM_ID, BMC_PATH_SEGMENT, BMC_QUERY_VALUE) or (what is None and _uuid_pattern(value)):
        return _regex(lambda: _token_pattern(value), _token_literals(value), lower)
    return _generic(lower)


class BmcRules(tuple):
    """The compiled rules of a set of BMC values (``bmc_rules``): ``[(what, test)]``.

    Accepted wherever ``bmc_values`` are.  A caller that matches many texts against one host's BMC data (a bind
    pass: each label, annotation, address and NIC of the host) builds them once, and each ``bmc_match`` then
    neither normalises the values nor looks the set up again.
    """

    __slots__ = ()


@lru_cache(maxsize=512)
def _compiled(needles):
    """The rules of a needle set, once per set (the regular expressions compiled when a text first needs them)."""
    return BmcRules((what or "BMC data", _rule(what, value)) for what, value in needles)


def bmc_rules(bmc_values: Sequence) -> BmcRules:
    """``bmc_values`` (as ``bmc_match`` takes them) compiled once: pass the result as ``bmc_values`` to match many
    texts against the same values.  Rules given are returned as they are."""
    if isinstance(bmc_values, BmcRules):
        return bmc_values
    return _compiled(_normal(bmc_values))


def _normal(bmc_values):
    """``bmc_values`` as a hashable tuple of ``(what or None, value)``; empty values left out."""
    needles = []
    for needle in bmc_values or ():
        what, value = needle if isinstance(needle, tuple) else (None, needle)
        if value is None or isinstance(value, bool):
            continue
        value = value if isinstance(value, str) else str(value)
        if value:
            needles.append((what, value))
    return tuple(needles)


def _variants(text):
    """The text lowered, and percent-decoded (up to three times) when that changes it."""
    lower = text.lower()
    variants = [lower]
    for dummy in range(3):
        decoded = unquote(variants[-1])
        if decoded == variants[-1]:
            break
        variants.append(decoded)
    return variants


def _match(text, rules):
    if not text:
        return None
    variants = _variants(text)
    words = []

    def word_set():
        if not words:
            words.append(set(word for variant in variants for word in _words(variant)))
        return words[0]

    for what, test in rules:
        if test(variants, word_set):
            return what
    return None


def bmc_match(text: str, bmc_values: Sequence):
    """What ``text`` repeats of ``bmc_values`` (``[(what, value)]`` or plain strings), or ``None``.

    Case-insensitive, on the text as it is and percent-decoded.  By the kind of value (``what``; a plain
    string is judged by its spelling: an address, an IP address, a UUID, or anything else):

    * an address, without its scheme and user info, its host in any notation (below), a UUID path
      segment with or without dashes;
    * a host part that is an IPv4 address: its four numbers (leading zeros allowed) separated by ``.``,
      ``-`` or ``_`` (``ip-10-0-0-5``), not inside a longer dotted number (``10.0.0.1`` does not match
      ``10.0.0.15``, ``110.0.0.1`` or a serial ``9100012``); an IPv6 address compressed or not, with
      leading zeros or not, bracketed or not, with ``:`` or ``-`` separators, not inside a longer one;
    * a system id, other path segment or query value: a UUID with or without dashes anywhere, anything
      else between non-alphanumerics (its ``-``, ``.``, ``_`` interchangeable);
    * a port: only as the whole value (``8000``, ``:8000``); next to the host (``host:port``) the host
      matches;
    * anything else (a host name, the Secret name, a user name, a password): a value of at least
      ``MIN_CONTAINED_BMC_VALUE`` characters wherever it occurs; a shorter one (a weak password, a
      one-letter user name) only when it is the whole of ``text`` or one of its words (runs of letters
      and digits), so that a one-character password does not withhold every value containing that
      character.

    Empty values never match.  The first needle that matches names the result.  ``bmc_values`` may also be
    the ``bmc_rules`` of such values, compiled once for many texts.
    """
    if not isinstance(text, str) or not text:
        return None
    return _match(text, bmc_rules(bmc_values))


def mentions(text: str, bmc_values: Sequence) -> bool:
    return bmc_match(text, bmc_values) is not None


def _scan(obj, rules, path, found):
    if isinstance(obj, dict):
        for key, value in obj.items():
            child = "%s.%s" % (path, key) if path else str(key)
            if _match(str(key), rules):
                found.append(child + " (key)")
            _scan(value, rules, child, found)
    elif isinstance(obj, (list, tuple)):
        for index, value in enumerate(obj):
            _scan(value, rules, "%s[%d]" % (path, index), found)
    elif obj is not None and not isinstance(obj, bool) and _match(str(obj), rules):
        found.append(path or ".")


def find_bmc_data(obj, bmc_values: Sequence) -> list[str]:
    """Paths in ``obj`` (nested dicts/lists/strings) whose key or value repeats one of ``bmc_values``.

    ``bmc_values`` and the rule are those of ``bmc_match`` (the same matcher: ``[(what, value)]`` from
    ``bmc_needles``, or plain values, non-strings as their ``str``, or their ``bmc_rules``).  Returns ``[]`` when nothing leaks.
    """
    rules = bmc_rules(bmc_values)
    found = []
    if rules:
        _scan(obj, rules, "", found)
    return found
