# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""JSON merge patches (RFC 7386) on the plain dicts the Kubernetes API returns.  Pure.

Patches are plain dicts, ``None`` deletes a key.  Used by the tenant claim
runner, the binder and host registration alike.
"""

from __future__ import annotations

import copy
import json
from typing import Any


def get_path(obj: Any, *path: str) -> Any:
    """``obj[path[0]][path[1]]...`` or ``None`` when any step is missing or not a dict."""
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def same_json(left: Any, right: Any) -> bool:
    """Whether two JSON values are equal as JSON (key order ignored)."""
    return json.dumps(left, sort_keys=True) == json.dumps(right, sort_keys=True)


_NOTHING = object()


def copy_json(value: Any) -> Any:
    """A copy of a JSON value that shares no dict or list with it: ``copy.deepcopy`` for JSON without its memo.

    Plain dicts and lists are copied member by member, strings, numbers, booleans and ``None`` (immutable) are
    kept, anything else goes to ``copy.deepcopy``.  Several times faster than ``copy.deepcopy`` on the patches and
    objects the API returns; unlike it, a dict or list that appears twice in ``value`` is copied twice (JSON has
    no shared members: the copy serialises the same).
    """
    kind = type(value)
    if kind is dict:
        return {key: copy_json(member) for key, member in value.items()}
    if kind is list:
        return [copy_json(member) for member in value]
    if value is None or kind in (str, int, float, bool):
        return value
    return copy.deepcopy(value)


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """Return ``target`` with the JSON merge patch (RFC 7386) applied; inputs are not changed."""
    if not isinstance(patch, dict):
        return copy_json(patch)
    result = copy_json(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result


def _minimal_member(current, key, value):
    """The part of ``{key: value}`` that changes ``current``, or ``_NOTHING``."""
    if value is None:
        return None if key in current else _NOTHING
    if not isinstance(value, dict):
        return value if key not in current or not same_json(current[key], value) else _NOTHING
    base = current.get(key)
    sub = minimal_patch(base if isinstance(base, dict) else {}, value)
    if sub or (key in current and not isinstance(base, dict)):
        return sub
    return _NOTHING


def minimal_patch(current: Any, patch: dict) -> dict:
    """Drop the parts of a merge patch that would not change ``current``.

    Equivalent to ``patch`` for Kubernetes, which does not distinguish an
    empty map from an absent one.
    """
    current = current if isinstance(current, dict) else {}
    result = {}
    for key, value in patch.items():
        member = _minimal_member(current, key, value)
        if member is not _NOTHING:
            result[key] = member
    return result


def combine_patches(first: dict, second: dict) -> dict:
    """One merge patch that does ``first`` and ``second`` (``second`` wins where both set a member).

    Maps present in both are combined member by member; meant for patches
    of different parts of one object (labels, annotations, spec fields).
    """
    result = copy_json(first)
    _combine_into(result, second)
    return result


def _combine_into(result: dict, second: dict) -> None:
    """``combine_patches`` in ``result``, a copy that nothing else holds (its maps are combined in place: no second
    copy of what was just copied)."""
    for key, value in second.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            _combine_into(result[key], value)
        else:
            result[key] = copy_json(value)


def with_precondition(patch: dict, obj: Any) -> dict:
    """Add ``metadata.resourceVersion`` of ``obj`` to a non-empty patch (the API server then answers 409 on a race)."""
    version = get_path(obj, "metadata", "resourceVersion")
    if not patch or not version:
        return patch
    result = copy_json(patch)
    result.setdefault("metadata", {})["resourceVersion"] = version
    return result
