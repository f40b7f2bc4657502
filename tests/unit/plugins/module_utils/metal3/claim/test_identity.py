# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Who a claim is and which host points at it (identity): consumerRef, the binding label and its convergence."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.common import merge_patch as mpatch
from ansible_collections.baremetal.tenancy.plugins.module_utils.common import selectors
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3 import api as m3api
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import identity
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import view as m3view
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.metal3_objects import (
    make_claim,
    make_host,
    ref_to,
)


def test_consumer_ref_for():
    claim = make_claim()
    assert identity.consumer_ref_for(claim) == {
        "apiVersion": "metal3.io/v1alpha1",
        "kind": "HostClaim",
        "namespace": "tenant-a",
        "name": "web-1",
        "uid": "uid-tenant-a-web-1",
    }
    del claim["metadata"]["uid"]
    assert "uid" not in identity.consumer_ref_for(claim)


@pytest.mark.parametrize(
    "change,expected",
    [
        ({}, True),
        ({"uid": None}, True),
        ({"uid": "uid-of-a-deleted-claim"}, False),
        ({"name": "web-2"}, False),
        ({"namespace": "tenant-b"}, False),
        ({"kind": "Metal3Machine"}, False),
        ({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1"}, False),
    ],
)
def test_claim_ref_matches(change, expected):
    claim = make_claim()
    ref = ref_to(claim)
    ref.update(change)
    ref = dict((k, v) for k, v in ref.items() if v is not None)
    assert identity.claim_ref_matches(make_host(consumer=ref), claim) is expected


def test_claim_ref_matches_without_consumer():
    claim = make_claim()
    assert not identity.claim_ref_matches(make_host(), claim)
    assert not identity.claim_ref_matches(make_host(consumer={}), claim)
    assert not identity.claim_ref_matches(None, claim)


def test_claim_without_uid_matches_ref_with_uid():
    claim = make_claim()
    host = make_host(consumer=ref_to(claim))
    del claim["metadata"]["uid"]
    assert identity.claim_ref_matches(host, claim)


def test_binding_label_fix():
    claim = make_claim()
    assert identity.binding_label_fix(claim, "h1") == {"metadata": {"labels": {m3api.BINDING_LABEL: "h1"}}}
    assert identity.binding_label_fix(claim, None) == {}
    claim["metadata"]["labels"][m3api.BINDING_LABEL] = "h1"
    assert identity.binding_label_fix(claim, "h1") == {}
    assert identity.binding_label_fix(claim, "h2") == {"metadata": {"labels": {m3api.BINDING_LABEL: "h2"}}}
    assert identity.binding_label_fix(claim, None) == {"metadata": {"labels": {m3api.BINDING_LABEL: None}}}
    claim["metadata"]["labels"] = None
    assert identity.binding_label_fix(claim, None) == {}


def test_binding_label_value_for_long_names():
    long_name = "h" * 100 + ".example.com"
    value = m3view.binding_label_value(long_name)
    assert selectors.label_value_problem(value) is None and value.startswith("sha256-") and len(value) == 63
    assert m3view.binding_label_value(long_name) == value
    assert m3view.binding_label_value("h1") == "h1"
    claim = make_claim(labels={m3api.BINDING_LABEL: value})
    assert identity.binding_label_fix(claim, long_name) == {}


@given(st.sampled_from([None, "h1", "h2"]), st.sampled_from([None, "h1", "h2", ""]))
def test_binding_label_fix_converges(bound, current):
    labels = {} if current is None else {m3api.BINDING_LABEL: current}
    claim = make_claim(labels=labels)
    fixed = mpatch.apply_merge_patch(claim, identity.binding_label_fix(claim, bound))
    assert (fixed["metadata"].get("labels") or {}).get(m3api.BINDING_LABEL) == bound
    assert identity.binding_label_fix(fixed, bound) == {}
