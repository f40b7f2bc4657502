# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one image rule (common/image.py): the same answer on both backends but for the URL schemes."""

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.image import image_problem

GOOD = {"url": "https://images.example/os.qcow2", "checksum": "a" * 64, "checksum_type": "sha256", "format": "qcow2"}


@pytest.mark.parametrize("backend", ["metal3", "ironic"])
def test_a_good_image_is_good_on_both_backends(backend):
    assert image_problem(GOOD, backend) is None
    assert image_problem(None, backend) is None
    assert image_problem(dict(GOOD, checksum=None, format="live-iso"), backend) is None
    assert image_problem(dict(GOOD, checksum="https://images.example/SHA256SUMS"), backend) is None


@pytest.mark.parametrize(
    "change, words",
    [
        ({"url": "ftp://x/os.img"}, "image.url must be"),
        ({"url": "https:// spaced"}, "white space"),
        ({"url": "https://user:pw@host/os.img"}, "user information"),
        ({"checksum": None}, "image.checksum is required unless image.format is live-iso"),
        ({"checksum": "a" * 63}, "a sha256 checksum has 64 hex digits, got 63"),
        ({"checksum": "zz" * 32}, "hex digits or the URL of a checksum file"),
        ({"checksum_type": "auto", "checksum": "a" * 40}, "no md5, sha256 or sha512"),
        ({"checksum_type": "crc"}, "checksum_type 'crc' is not one of"),
        ({"format": "iso9660"}, "image.format 'iso9660' is not one of"),
    ],
)
@pytest.mark.parametrize("backend", ["metal3", "ironic"])
def test_the_same_problem_on_both_backends(backend, change, words):
    problem = image_problem(dict(GOOD, **change), backend)
    assert problem is not None and words in problem


def test_file_urls_only_with_ironic():
    local = dict(GOOD, url="file:///srv/images/os.qcow2")
    assert image_problem(local, "ironic") is None
    assert "with backend metal3" in image_problem(local, "metal3")
    assert "http:// or https://" in image_problem(local, "metal3")


def test_an_unknown_backend_is_a_programming_error():
    with pytest.raises(ValueError):
        image_problem(GOOD, "vsphere")
