# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""merge_patch copies JSON without ``copy.deepcopy`` (issue 41, item 1): the same results, nothing shared.

``apply_merge_patch``, ``combine_patches`` and ``with_precondition`` copy with ``copy_json`` (no memo) and
``combine_patches`` combines maps in its own copy instead of copying them again.  The functions as they were
(``copy.deepcopy`` everywhere) are kept here; on generated JSON the results are equal, key order included, and no
dict or list of a result is one of its inputs'.
"""

import copy
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.common import merge_patch as mpatch

# ---------------------------------------------------------------- the functions before


def _old_apply(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _old_apply(result.get(key), value)
    return result


def _old_combine(first, second):
    result = copy.deepcopy(first)
    for key, value in second.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = _old_combine(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def _old_precondition(patch, obj):
    version = mpatch.get_path(obj, "metadata", "resourceVersion")
    if not patch or not version:
        return patch
    result = copy.deepcopy(patch)
    result.setdefault("metadata", {})["resourceVersion"] = version
    return result


# ---------------------------------------------------------------- JSON, with shared members

_KEYS = st.sampled_from(["metadata", "labels", "annotations", "spec", "status", "a", "b", "resourceVersion"])
_LEAF = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False), st.text(max_size=4))
_JSON = st.recursive(
    _LEAF,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_KEYS, inner, max_size=4)),
    max_leaves=20,
)
_PATCH = st.dictionaries(_KEYS, _JSON, max_size=5)


@st.composite
def _aliased(draw):
    """A dict in which one map may appear under two keys (the case ``copy.deepcopy``'s memo keeps shared)."""
    patch = draw(_PATCH)
    if draw(st.booleans()):
        shared = draw(st.dictionaries(_KEYS, _JSON, max_size=3))
        patch["labels"], patch["annotations"] = shared, shared
    return patch


def _containers(value, found):
    if isinstance(value, (dict, list)):
        found.add(id(value))
        for member in value.values() if isinstance(value, dict) else value:
            _containers(member, found)
    return found


def _dumped(value):
    return json.dumps(value)  # key order included


def _shares_nothing(result, *inputs):
    ids = set()
    for value in inputs:
        _containers(value, ids)
    return not (_containers(result, set()) & ids)


@settings(max_examples=500, deadline=None)
@given(_JSON)
def test_copy_json_is_a_deep_copy(value):
    copied = mpatch.copy_json(value)
    assert _dumped(copied) == _dumped(value) and _shares_nothing(copied, value)


@settings(max_examples=500, deadline=None)
@given(_aliased(), _aliased())
def test_combine_patches_as_before_and_shares_nothing(first, second):
    before = _dumped([first, second])
    result = mpatch.combine_patches(first, second)
    assert _dumped(result) == _dumped(_old_combine(first, second))
    assert _shares_nothing(result, first, second)
    assert _dumped([first, second]) == before  # the inputs are not changed


@settings(max_examples=500, deadline=None)
@given(_aliased(), st.one_of(_JSON, _aliased()))
def test_apply_merge_patch_as_before_and_shares_nothing(target, patch):
    before = _dumped([target, patch])
    result = mpatch.apply_merge_patch(target, patch)
    assert _dumped(result) == _dumped(_old_apply(target, patch))
    assert _shares_nothing(result, target, patch)
    assert _dumped([target, patch]) == before


@settings(max_examples=300, deadline=None)
@given(_aliased(), st.sampled_from([None, {}, {"metadata": {}}, {"metadata": {"resourceVersion": "42"}}]))
def test_with_precondition_as_before_and_shares_nothing(patch, obj):
    outcomes = []
    for function in (mpatch.with_precondition, _old_precondition):
        try:
            outcomes.append(function(patch, obj))
        except TypeError as exc:  # ``metadata`` that is not a map: the same error either way
            outcomes.append(type(exc))
    result, old = outcomes
    assert result == old if isinstance(old, type) else _dumped(result) == _dumped(old)
    if isinstance(result, dict) and result is not patch:
        assert _shares_nothing(result, patch)


def test_anything_but_json_is_deep_copied():
    value = {"a": (1, [2]), "b": {1, 2}}
    copied = mpatch.copy_json(value)
    assert copied == value and copied["a"][1] is not value["a"][1] and copied["b"] is not value["b"]
