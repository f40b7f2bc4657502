# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""claim/bmo_controller_signal.py: which claims another controller wrote after the binder (managedFields of the status)."""

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.bmo_controller_signal import (
    BINDER_FIELD_MANAGER,
    ForeignWrite,
    controller_problem,
    foreign_status_write,
    foreign_writes,
)


def _claim(name, *entries):
    fields = [
        {"manager": manager, "operation": "Update", "time": time, **({"subresource": sub} if sub else {})}
        for manager, sub, time in entries
    ]
    return {"metadata": {"namespace": "t", "name": name, "managedFields": fields}}


TENANT = ("kubectl-create", None, "2026-11-25T01:00:00Z")


@pytest.mark.parametrize(
    "entries, expected",
    [
        ((), None),
        ((TENANT,), None),  # the tenant writes the spec, never the status
        (
            (TENANT, ("baremetal-operator", "status", "2026-11-25T01:00:01Z")),
            ("baremetal-operator", "2026-11-25T01:00:01Z"),
        ),
        # the binder wrote after it: upstream's write is history (a take-over, or a controller long stopped)
        (
            (
                ("baremetal-operator", "status", "2026-11-25T01:00:01Z"),
                (BINDER_FIELD_MANAGER, "status", "2026-11-25T01:00:05Z"),
            ),
            None,
        ),
        # in the same second: not counted as newer
        (
            (
                ("baremetal-operator", "status", "2026-11-25T01:00:05Z"),
                (BINDER_FIELD_MANAGER, None, "2026-11-25T01:00:05Z"),
            ),
            None,
        ),
        # written again after the binder: it runs now
        (
            (
                (BINDER_FIELD_MANAGER, "status", "2026-11-25T01:00:05Z"),
                ("manager", "status", "2026-11-25T01:00:09Z"),
                ("baremetal-operator", "status", "2026-11-25T01:00:07Z"),
            ),
            ("manager", "2026-11-25T01:00:09Z"),
        ),
        # another writer of the spec only (a GitOps tool, kubectl) is no controller of the claim
        (((BINDER_FIELD_MANAGER, "status", "2026-11-25T01:00:05Z"), ("flux", None, "2026-11-25T01:00:09Z")), None),
    ],
)
def test_foreign_status_write(entries, expected):
    found = foreign_status_write(_claim("c", *entries))
    assert (found and (found.manager, found.time)) == (expected or None)


def test_a_claim_without_managed_fields_or_with_junk_is_nobodys():
    assert foreign_status_write({"metadata": {"name": "c"}}) is None
    assert foreign_status_write({"metadata": {"name": "c", "managedFields": ["junk", None]}}) is None


def test_the_refusal_names_claims_writers_and_the_way_out():
    writes = foreign_writes(
        [_claim("c%d" % i, ("baremetal-operator", "status", "2026-11-25T01:00:0%dZ" % i)) for i in range(5)]
    )
    assert [w.name for w in writes] == ["c0", "c1", "c2", "c3", "c4"]
    message = controller_problem(writes)
    assert "HostClaim t/c0 (status written by 'baremetal-operator' at 2026-11-25T01:00:00Z)" in message
    assert "t/c3" not in message and "and 2 more" in message
    assert "take_over=true" in message and "--hostclaims" in message
    assert controller_problem([]) is None
    assert ForeignWrite("t", "c", "m", "x").manager == "m"
