# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Detecting BMC data, pure: what a host's BMC is known by, and whether a text repeats it or looks sensitive.

``bmc_needles`` / ``bmc_values_of`` list a host's BMC data (its address, the
address's host part, the credentials Secret name, and the user name and
password the binder reads from that Secret); ``bmc_match`` says whether a
text repeats one of them (see its rule); ``looks_sensitive`` flags keys and
values such as ``bmc``, ``credential``, ``password``, ``secret``, ``token``,
``ipmi``, ``redfish``, ``idrac``, ``ilo<n>`` or a URL whose scheme is not
http/https or that has user info.  ``find_bmc_data`` scans any object for
them (the tests' and the leak checks' scanner).
"""

from __future__ import annotations

from collections.abc import Sequence

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import (
    get_path,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim_spec import (
    URL_SCHEMES,
)

#: a BMC value shorter than this is matched only as a whole value or word (see ``bmc_match``)
MIN_CONTAINED_BMC_VALUE = 4


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


def _bmc_host_part(address):
    rest = address.split("://", 1)[-1]
    authority = rest.split("/", 1)[0].rpartition("@")[2]
    if authority.startswith("["):
        return authority[1:].split("]", 1)[0]
    return authority.split(":", 1)[0] if authority.count(":") == 1 else authority


def bmc_needles(host: dict, username: str | None = None, password: str | None = None) -> list[tuple[str, str]]:
    """``[(what, value)]``: the BMC data of a BMH dict that nothing imported may repeat.

    ``what`` names the kind of value for reports (``BMC address``, ``BMC address host part``, ``BMC credentials
    Secret name``, ``BMC user name``, ``BMC password``); ``username`` and ``password`` come from the credentials
    Secret when the caller could read it.  Empty values are left out.
    """
    bmc = get_path(host, "spec", "bmc") or {}
    needles = []
    address = bmc.get("address")
    if isinstance(address, str) and address:
        needles.extend([("BMC address", address), ("BMC address host part", _bmc_host_part(address))])
    needles.append(("BMC credentials Secret name", bmc.get("credentialsName")))
    needles.extend([("BMC user name", username), ("BMC password", password)])
    return [(what, value) for what, value in needles if isinstance(value, str) and value]


def bmc_values_of(host: dict, username: str | None = None, password: str | None = None) -> list[str]:
    """The values of ``bmc_needles`` (for ``import_metadata`` and ``find_bmc_data``)."""
    return [needle[1] for needle in bmc_needles(host, username, password)]


def _words(lower):
    return "".join(char if char.isalnum() else " " for char in lower).split()


def bmc_match(text: str, bmc_values: Sequence):
    """What ``text`` repeats of ``bmc_values`` (``[(what, value)]`` or plain strings), or ``None``.

    Case-insensitive.  A value of at least ``MIN_CONTAINED_BMC_VALUE`` characters
    matches wherever it occurs in ``text``; a shorter one (a weak password, a
    one-letter user name) only when it is the whole of ``text`` or one of its
    words (runs of letters and digits), so that a one-character password does
    not withhold every value containing that character.  Empty values never
    match.
    """
    if not isinstance(text, str) or not text:
        return None
    lower = text.lower()
    words = None
    for needle in bmc_values or ():
        what, value = needle if isinstance(needle, tuple) else ("BMC data", needle)
        if not isinstance(value, str) or not value:
            continue
        value = value.lower()
        if len(value) >= MIN_CONTAINED_BMC_VALUE:
            if value in lower:
                return what
            continue
        if words is None:
            words = set(_words(lower))
        if lower == value or value in words:
            return what
    return None


def mentions(text: str, bmc_values: Sequence) -> bool:
    return bmc_match(text, bmc_values) is not None


def _hits(text, needles):
    lower = text.lower()
    return any(needle in lower for needle in needles)


def _scan(obj, needles, path, found):
    if isinstance(obj, dict):
        for key, value in obj.items():
            child = "%s.%s" % (path, key) if path else str(key)
            if _hits(str(key), needles):
                found.append(child + " (key)")
            _scan(value, needles, child, found)
    elif isinstance(obj, (list, tuple)):
        for index, value in enumerate(obj):
            _scan(value, needles, "%s[%d]" % (path, index), found)
    elif obj is not None and not isinstance(obj, bool) and _hits(str(obj), needles):
        found.append(path or ".")


def find_bmc_data(obj: dict, bmc_values: Sequence) -> list[str]:
    """Paths in ``obj`` (nested dicts/lists/strings) whose key or value contains any of ``bmc_values``.

    Matching is case-insensitive on substrings; empty needles are ignored.
    Returns ``[]`` when nothing leaks.
    """
    needles = [str(value).lower() for value in bmc_values or [] if value is not None and str(value)]
    found = []
    if needles:
        _scan(obj, needles, "", found)
    return found
