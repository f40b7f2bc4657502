# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The bound-host rule every reader shares (claim_view.bound_host): the binder's record decides, a label never does."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3 import api as m3api
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import view as m3view
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.metal3_objects import (
    make_claim,
)

LONG_HOST = "rack-1." + "h" * 70  # a BMH name that is not a valid label value


def _recorded(host=None, status="True", label=None):
    claim = make_claim(labels={m3api.BINDING_LABEL: label} if label is not None else {})
    if host is not None:
        claim["status"] = {
            "conditions": [{"type": "AssociateBMH", "status": status, "message": m3view.BOUND_PREFIX + host}]
        }
    return claim


@pytest.mark.parametrize(
    "claim, host",
    [
        (_recorded("h1", label="h1"), "h1"),
        (_recorded("h1", label="h2"), None),  # forged label: fail closed
        (_recorded("h1"), None),  # label removed: fail closed
        (_recorded(None, label="h1"), None),  # a label alone never binds
        (_recorded("h1", status="False", label="h1"), None),
        (_recorded(LONG_HOST, label=m3view.binding_label_value(LONG_HOST)), LONG_HOST),  # not a label value: hashed
        (_recorded(LONG_HOST, label=LONG_HOST[:63]), None),
        ({"metadata": {"labels": "x"}, "status": {"conditions": "x"}}, None),
    ],
)
def test_bound_host(claim, host):
    assert m3view.bound_host(claim) == host


@settings(max_examples=300)
@given(
    recorded=st.one_of(st.none(), st.text(max_size=20)),
    status=st.sampled_from(["True", "False", "Unknown"]),
    label=st.one_of(st.none(), st.text(max_size=20)),
)
def test_a_label_never_decides_the_host(recorded, status, label):
    claim = _recorded(recorded, status=status, label=label)
    host = m3view.bound_host(claim)
    assert host is None or host == m3view.recorded_host(claim)
    if recorded is not None and status == "True" and recorded:
        # whatever label the tenant writes, the host is the recorded one or none
        assert host in (None, recorded)
        assert (host is not None) is (label == m3view.binding_label_value(recorded))
