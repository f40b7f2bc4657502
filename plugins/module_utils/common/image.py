# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The one image rule of host_claim, for both backends: :func:`image_problem`.

An image is the module option ``image`` (``url``, ``checksum``,
``checksum_type``, ``format``).  The rule is the same on both backends
except for the URL schemes each control plane can fetch (:data:`URL_SCHEMES`):
Metal3's binder passes only http(s) to the BareMetalHost; Ironic also reads
``file://`` on its conductor (which the ironic backend allows only under
directories the owner names).  Pure, standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

CHECKSUM_TYPES = ("md5", "sha256", "sha512", "auto")
CHECKSUM_LENGTHS = {"md5": 32, "sha256": 64, "sha512": 128}
IMAGE_FORMATS = ("raw", "qcow2", "vdi", "vmdk", "live-iso")
#: the URL schemes each backend accepts for the image and a checksum file
URL_SCHEMES = {"metal3": ("http", "https"), "ironic": ("http", "https", "file")}
_HEX = frozenset("0123456789abcdefABCDEF")


def url_problem(url: Any, where: str, backend: str) -> str | None:
    """Why ``url`` (option ``where``) is no URL ``backend`` can fetch, or ``None``."""
    schemes = URL_SCHEMES[backend]
    if not isinstance(url, str) or not url or any(char.isspace() for char in url):
        return "%s must be a URL without white space" % where
    scheme, sep, rest = url.partition("://")
    host = rest.split("/")[0]
    if not sep or scheme.lower() not in schemes or not (host or scheme.lower() == "file"):
        named = ", ".join("%s://" % s for s in schemes[:-1]) + " or %s://" % schemes[-1]
        return "%s must be an %s URL with backend %s, got %r" % (where, named, backend, url)
    if "@" in host:
        return "%s must not carry user information" % where
    return None


def _checksum_problem(checksum: str, checksum_type: str, backend: str) -> str | None:
    if any(char.isspace() for char in checksum):
        return "image.checksum must not contain white space"
    if "://" in checksum:
        return url_problem(checksum, "image.checksum", backend)
    value = checksum.split(":", 1)[1] if ":" in checksum else checksum
    if not value or not set(value) <= _HEX:
        return "image.checksum must be hex digits or the URL of a checksum file"
    expected = CHECKSUM_LENGTHS.get(checksum_type)
    if expected and len(value) != expected:
        return "a %s checksum has %d hex digits, got %d" % (checksum_type, expected, len(value))
    if checksum_type == "auto" and len(value) not in CHECKSUM_LENGTHS.values():
        return "image.checksum has %d hex digits, which is no md5, sha256 or sha512" % len(value)
    return None


def image_problem(image: Mapping[str, Any] | None, backend: str) -> str | None:
    """Why ``image`` cannot be deployed with ``backend`` (``metal3`` or ``ironic``), or ``None``."""
    if image is None:
        return None
    if backend not in URL_SCHEMES:
        raise ValueError("backend must be one of %s" % ", ".join(URL_SCHEMES))
    if not isinstance(image, Mapping):
        return "image must be a mapping with url, checksum, checksum_type and format"
    url = image.get("url")
    problem = url_problem(url, "image.url", backend)
    if problem:
        return problem
    fmt = image.get("format")
    if fmt is not None and fmt not in IMAGE_FORMATS:
        return "image.format %r is not one of %s" % (fmt, ", ".join(IMAGE_FORMATS))
    checksum_type = image.get("checksum_type") or "auto"
    if checksum_type not in CHECKSUM_TYPES:
        return "image.checksum_type %r is not one of %s" % (checksum_type, ", ".join(CHECKSUM_TYPES))
    checksum = image.get("checksum")
    if checksum is None or checksum == "":
        if fmt != "live-iso":
            return "image %s has no checksum: image.checksum is required unless image.format is live-iso" % url
        return None
    if not isinstance(checksum, str):
        return "image.checksum must be a string"
    return _checksum_problem(checksum, checksum_type, backend)
