# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one writer of a pass (binder_writes): in check mode every write is simulated and nothing is sent."""

from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.binder_world import (
    binder,
    world,
)


def test_check_mode_writes_nothing():
    fake = world()
    before = repr(sorted(fake.objects.items()))
    report = binder(fake, check_mode=True).run()
    assert report["changed"] is True and report["claims"][0]["action"] == "bound"
    assert report["requests"]["writes"] == 0
    assert repr(sorted(fake.objects.items())) == before
