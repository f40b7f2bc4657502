# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""common/cyclic_gc.py: the collector paused inside, restored as it was after (also on an error, also nested)."""

import gc

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.cyclic_gc import cyclic_gc_paused


@pytest.fixture(autouse=True)
def collector_restored():
    enabled = gc.isenabled()
    yield
    if enabled:
        gc.enable()
    else:
        gc.disable()


@pytest.mark.parametrize("enabled", [True, False])
def test_paused_inside_and_restored_after(enabled):
    (gc.enable if enabled else gc.disable)()
    with cyclic_gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled() is enabled


def test_restored_after_an_error():
    gc.enable()
    with pytest.raises(RuntimeError), cyclic_gc_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_a_pause_inside_a_pause_stays_paused_until_the_outer_one_ends():
    gc.enable()
    with cyclic_gc_paused():
        with cyclic_gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
