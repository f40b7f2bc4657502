# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared checks of option values name the option and the value (common/params.py)."""

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.params import check_at_least, check_timeout


@pytest.mark.parametrize("value", [0, -1, 0.5, True, "3", [1]])
def test_a_value_below_the_minimum_or_not_a_number_names_option_and_value(value):
    with pytest.raises(InvalidInput) as info:
        check_at_least(value, "page_size")
    assert info.value.message == "option page_size: must be 1 or more, got %r" % (value,)


@pytest.mark.parametrize("value", [None, 1, 2, 500, 1.5])
def test_unset_or_large_enough_values_pass(value):
    assert check_at_least(value, "page_size") == value


def test_the_minimum_can_be_zero():
    assert check_at_least(0, "retries", minimum=0) == 0
    with pytest.raises(InvalidInput, match="option retries: must be 0 or more, got -1"):
        check_at_least(-1, "retries", minimum=0)


def test_a_negative_timeout_names_the_option_and_the_value():
    with pytest.raises(InvalidInput, match="option wait_timeout: must be zero or more seconds, got -5"):
        check_timeout(-5)
    assert check_timeout(None) is None and check_timeout(0) == 0
