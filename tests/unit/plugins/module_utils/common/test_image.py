# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one image validator: shared rules, URL schemes and key spelling by backend."""

from __future__ import annotations

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.image import image_problem

SHA256 = "a" * 64


@pytest.mark.parametrize(
    "image, backend, problem",
    [
        (None, "metal3", None),
        ({"url": "https://x/os.img", "checksum": SHA256, "checksumType": "sha256"}, "metal3", None),
        ({"url": "https://x/os.iso", "format": "live-iso"}, "metal3", None),
        ({"url": "file:///srv/os.img", "checksum": SHA256}, "ironic", None),
        (
            {"url": "file:///srv/os.img", "checksum": SHA256},
            "metal3",
            "image.url: must be an http:// or https:// URL with a host, got 'file:///srv/os.img'",
        ),
        ({"url": "https://u:p@x/os.img", "checksum": SHA256}, "metal3", "image.url: must not carry user information"),
        ({"url": "https://x/os.img"}, "ironic", "image: a checksum is required unless format is live-iso"),
        (
            {"url": "https://x/os.img", "checksum": "abc", "checksum_type": "md5"},
            "ironic",
            "image.checksum: a md5 checksum has 32 hex digits, got 3",
        ),
        ({"url": "https://x/os.img", "checksum": SHA256, "checksum_type": "sha1"}, "ironic", "image.checksum_type:"),
        ({"url": "https://x/os.img", "checksum": SHA256, "checksum_type": "sha256"}, "metal3", "unknown field(s)"),
        ("https://x/os.img", "metal3", "image: must be a mapping"),
    ],
)
def test_image_problem(image, backend, problem):
    found = image_problem(image, backend)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found, found
