# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The one image validator of the collection (URL, checksum, checksum type, format), per backend.  Pure.

:func:`image_problem` says what is wrong with an image, or ``None``.  The
rules are shared; what differs by backend is written here as data: the URL
schemes (:data:`URL_SCHEMES`; Metal3's binder accepts http and https only,
Ironic also ``file://``, whose path prefixes the ironic backend checks) and
the spelling of the checksum type key (Metal3's API ``checksumType``, the
module option ``checksum_type``).
"""

from __future__ import annotations

CHECKSUM_TYPES = ("md5", "sha256", "sha512", "auto")
CHECKSUM_LENGTHS = {"md5": 32, "sha256": 64, "sha512": 128}
IMAGE_FORMATS = ("raw", "qcow2", "vdi", "vmdk", "live-iso")
#: URL schemes an image (and a checksum URL) may use, by backend
URL_SCHEMES = {"metal3": ("http", "https"), "ironic": ("http", "https", "file")}
#: the key of the checksum type, by backend
CHECKSUM_TYPE_KEY = {"metal3": "checksumType", "ironic": "checksum_type"}
HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def image_fields(backend: str) -> tuple[str, ...]:
    """The keys an image mapping may have with ``backend``."""
    return ("url", "checksum", CHECKSUM_TYPE_KEY[backend], "format")


def url_problem(url: object, backend: str) -> str | None:
    """What is wrong with an image or checksum URL for ``backend``, or ``None``."""
    if not isinstance(url, str) or not url:
        return "must be a non-empty string"
    if any(char.isspace() for char in url):
        return "must not contain white space"
    schemes = URL_SCHEMES[backend]
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    authority = rest.split("/")[0]
    if not sep or scheme not in schemes or not (authority or scheme == "file"):
        names = ", ".join("%s://" % name for name in schemes[:-1]) + " or %s://" % schemes[-1]
        return "must be an %s URL with a host, got %r" % (names, url)
    if "@" in authority:
        return "must not carry user information"
    return None


def checksum_problem(checksum: object, checksum_type: str | None, backend: str) -> str | None:
    """What is wrong with a checksum, or ``None``.

    A checksum is hex digits (optionally ``<algorithm>:<hex>``, as Ironic
    writes them) or the URL of a checksum file.  A named type fixes the
    number of digits; ``auto`` (or no type) needs an md5, sha256 or sha512 length.
    """
    if not isinstance(checksum, str) or not checksum or any(char.isspace() for char in checksum):
        return "must be a non-empty string without white space"
    if "://" in checksum:
        return url_problem(checksum, backend)
    digits = checksum.split(":", 1)[1] if ":" in checksum else checksum
    if not digits or not set(digits) <= HEX_DIGITS:
        return "must be hex digits or the URL of a checksum file"
    expected = CHECKSUM_LENGTHS.get(checksum_type or "")
    if expected and len(digits) != expected:
        return "a %s checksum has %d hex digits, got %d" % (checksum_type, expected, len(digits))
    if not expected and len(digits) not in CHECKSUM_LENGTHS.values():
        return "has %d hex digits, which is no md5, sha256 or sha512" % len(digits)
    return None


def image_problem(image: object, backend: str) -> str | None:
    """``"<field>: <what is wrong>"`` for an image mapping given to ``backend`` (``metal3``, ``ironic``), or ``None``.

    ``None`` (no image) is fine.  A checksum is required unless the format is ``live-iso``.
    """
    if image is None:
        return None
    type_key = CHECKSUM_TYPE_KEY[backend]
    fields = image_fields(backend)
    if not isinstance(image, dict):
        return "image: must be a mapping with %s and %s" % (", ".join(fields[:-1]), fields[-1])
    unknown = sorted(set(image) - set(fields), key=str)
    if unknown:
        return "image: unknown field(s) %s" % ", ".join(repr(k) for k in unknown)
    problem = url_problem(image.get("url"), backend)
    if problem:
        return "image.url: %s" % problem
    for key, value, choices in (
        (type_key, image.get(type_key), CHECKSUM_TYPES),
        ("format", image.get("format"), IMAGE_FORMATS),
    ):
        if value is not None and value not in choices:
            return "image.%s: %r is not one of %s" % (key, value, ", ".join(choices))
    if image.get("checksum") not in (None, ""):
        problem = checksum_problem(image["checksum"], image.get(type_key), backend)
        if problem:
            return "image.checksum: %s" % problem
    elif image.get("format") != "live-iso":
        return "image: a checksum is required unless format is live-iso"
    return None
