# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The end-of-lease notice (ironic/lease_notice.py): which lease ends a lessee's access, and the notice's plan."""

import datetime

from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import lease_model as L
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import lease_notice as N

UTC = datetime.timezone.utc
NOW = datetime.datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)
A, B = "a" * 32, "b" * 32


def at(seconds):
    return NOW + datetime.timedelta(seconds=seconds)


def node(lessee, *leases, **properties):
    return {"uuid": "u", "name": "n", "lessee": lessee, "properties": dict({L.LEASES_KEY: list(leases)}, **properties)}


def test_the_ending_lease_is_the_lessees_started_one_with_an_end():
    mine = L.make_lease(A, at(-60), at(60), NOW)
    other = L.make_lease(B, at(60), at(120), NOW)
    assert N.ending_lease(node(A, mine, other), NOW) == mine
    assert N.ending_lease(node(B, mine, other), NOW) is None  # B's lease has not started
    assert N.ending_lease(node(None, mine), NOW) is None
    assert N.ending_lease(node(A, L.make_lease(A, at(-60), None, NOW)), NOW) is None  # open-ended
    overdue = L.make_lease(A, at(-60), at(-1), NOW)
    assert N.ending_lease(node(A, overdue), NOW) == overdue


def test_plan_notice():
    lease = L.make_lease(A, at(-60), at(600), NOW)
    bare = node(A, lease)
    notice, change = N.plan_notice(bare, NOW, 3600)
    assert change and N.announces(notice, lease) and notice["warned"] == L.format_time(NOW)
    assert N.plan_notice(bare, NOW, 60) == (None, False)  # not within the warning time
    assert N.plan_notice(bare, NOW, None) == (None, False)
    warned = node(A, lease, **{N.NOTICE_KEY: notice})
    assert N.plan_notice(warned, at(30), 3600) == (notice, False)  # kept as it is, warned time included
    assert N.plan_notice(warned, at(30), None) == (notice, False)
    stale = node(B, **{N.NOTICE_KEY: notice})
    assert N.plan_notice(stale, NOW, 3600) == (None, True)
    assert N.notice_patch(stale, None) == [{"op": "remove", "path": "/properties/" + N.NOTICE_KEY}]
    assert N.notice_patch(bare, None) == []
    tampered = node(A, lease, **{N.NOTICE_KEY: "not a mapping"})
    assert N.plan_notice(tampered, NOW, 3600)[1] is True


def test_an_overdue_lease_is_not_announced_but_ended():
    overdue = node(A, L.make_lease(A, at(-60), at(-1), NOW))
    assert N.plan_notice(overdue, NOW, 3600) == (None, False)
    assert N.ends_within([overdue], NOW, 30) == []


def test_ends_within_orders_by_end():
    first = node(A, L.make_lease(A, at(-60), at(20), NOW))
    second = dict(node(B, L.make_lease(B, at(-60), at(10), NOW)), name="m")
    far = node(A, L.make_lease(A, at(-60), at(100), NOW))
    assert [(end, n["name"]) for end, n in N.ends_within([first, second, far], NOW, 30)] == [
        (at(10).replace(microsecond=0), "m"),
        (at(20).replace(microsecond=0), "n"),
    ]
