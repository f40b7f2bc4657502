# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Who keeps the leases: the decision between ESI-Leap and node fields (pure)."""

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import lease_provider as P


class Catalog:
    """Answers "does the catalog have a lease service?" and counts the questions."""

    def __init__(self, found):
        self.found = found
        self.asked = 0

    def __call__(self):
        self.asked += 1
        return self.found


@pytest.mark.parametrize(
    "asked, found, provider, warned",
    [
        (None, True, P.ESI_LEAP, False),
        (None, False, P.IRONIC, False),
        ("auto", True, P.ESI_LEAP, False),
        ("auto", False, P.IRONIC, False),
        ("esi_leap", True, P.ESI_LEAP, False),
        ("ironic", False, P.IRONIC, False),
        ("ironic", True, P.IRONIC, True),
    ],
)
def test_every_choice(asked, found, provider, warned):
    catalog = Catalog(found)
    choice = P.choose_provider(asked, catalog)
    assert choice.provider == provider
    assert (choice.warning is not None) is warned
    assert catalog.asked == 1
    assert choice.reason


def test_esi_leap_forced_on_a_cloud_without_it_is_one_error_naming_the_option():
    with pytest.raises(InvalidInput) as info:
        P.choose_provider("esi_leap", Catalog(False))
    assert info.value.obj == "option lease_provider"
    assert "does not run ESI-Leap" in info.value.message and "'lease' service" in info.value.message


def test_an_unknown_provider_is_refused_before_the_catalog_is_read():
    catalog = Catalog(True)
    with pytest.raises(InvalidInput) as info:
        P.choose_provider("blazar", catalog)
    assert info.value.obj == "option lease_provider" and "got blazar" in info.value.message
    assert catalog.asked == 0


def test_the_warning_of_ironic_on_an_esi_leap_cloud_says_why():
    choice = P.choose_provider("ironic", Catalog(True))
    assert "ESI-Leap neither knows nor ends" in choice.warning


def test_the_spec_reads_the_environment_and_has_no_default():
    spec = P.LEASE_PROVIDER_SPEC["lease_provider"]
    assert spec["choices"] == ["auto", "esi_leap", "ironic"]
    assert "default" not in spec
    assert spec["fallback"][1] == ["BMT_LEASE_PROVIDER"]
