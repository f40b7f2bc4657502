# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The JSON merge patches every binder write is made of (RFC 7386, minimal patches, preconditions)."""

import copy

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.common import merge_patch as mpatch
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.metal3_objects import (
    make_host,
    prune_empty,
)


@pytest.mark.parametrize(
    "target,patch,result",
    [
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ],
)
def test_apply_merge_patch_rfc7386_examples(target, patch, result):
    before = copy.deepcopy(target)
    assert mpatch.apply_merge_patch(target, patch) == result
    assert target == before


JSONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.sampled_from(["", "a", "b"])),
    lambda inner: st.one_of(
        st.lists(inner, max_size=2), st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3)
    ),
    max_leaves=8,
)


OBJECTS = st.dictionaries(st.sampled_from(["a", "b", "c"]), JSONISH, max_size=3)


@settings(max_examples=300)
@given(OBJECTS, OBJECTS)
def test_minimal_patch_has_the_same_effect(current, patch):
    minimal = mpatch.minimal_patch(current, patch)
    assert prune_empty(mpatch.apply_merge_patch(current, minimal)) == prune_empty(
        mpatch.apply_merge_patch(current, patch)
    )
    assert mpatch.minimal_patch(mpatch.apply_merge_patch(current, patch), patch) == {}


def test_minimal_patch_distinguishes_false_and_zero():
    assert mpatch.minimal_patch({"online": 0}, {"online": False}) == {"online": False}
    assert mpatch.minimal_patch({"online": False}, {"online": False}) == {}


def _second_writes_into_what_first_replaced(first, second):
    """True where ``second`` sets a map member by member that ``first`` replaces (or removes) as a whole."""
    for key, value in second.items():
        if isinstance(value, dict) and key in first:
            if not isinstance(first[key], dict) or _second_writes_into_what_first_replaced(first[key], value):
                return True
    return False


@settings(max_examples=300)
@given(OBJECTS, OBJECTS, OBJECTS)
def test_combined_patches_do_what_both_do_in_turn(current, first, second):
    assume(not _second_writes_into_what_first_replaced(first, second))
    combined = mpatch.combine_patches(first, second)
    in_turn = mpatch.apply_merge_patch(mpatch.apply_merge_patch(current, first), second)
    assert prune_empty(mpatch.apply_merge_patch(current, combined)) == prune_empty(in_turn)


def test_combine_patches_of_labels_annotations_and_spec():
    first = {"metadata": {"labels": {"a": "1"}}}
    second = {"metadata": {"annotations": {"b": None}}, "spec": {"x": None}}
    assert mpatch.combine_patches(first, second) == {
        "metadata": {"labels": {"a": "1"}, "annotations": {"b": None}},
        "spec": {"x": None},
    }
    assert first == {"metadata": {"labels": {"a": "1"}}}  # inputs unchanged


def test_with_precondition():
    host = make_host(resource_version="42")
    assert mpatch.with_precondition({}, host) == {}
    assert mpatch.with_precondition({"spec": {"online": True}}, host) == {
        "spec": {"online": True},
        "metadata": {"resourceVersion": "42"},
    }
    del host["metadata"]["resourceVersion"]
    assert mpatch.with_precondition({"spec": {"online": True}}, host) == {"spec": {"online": True}}
