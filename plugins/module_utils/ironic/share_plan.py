# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The owner's plan for Ironic nodes: which project owns which node.  Pure.

``host_share`` (backend ironic) puts a node in the pool of a project by
setting its ``owner``, the Ironic counterpart of sharing a BareMetalHost.
Entries name nodes (``names``, or one ``name``; a node name or UUID) and
give the ``owner`` (a project name or ID, resolved in Keystone by the
caller); they apply in order and a later entry wins.  Only nodes whose owner
differs are changed, so a second run writes nothing.  Labels, classes,
selectors and ``share`` are Metal3 words and are refused here, with the
entry's index.

This file imports no client library.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput

ENTRY_KEYS = ("name", "names", "owner")
METAL3_ONLY_KEYS = ("selector", "class", "labels", "share")


def validate_entries(entries: Any, where: str = "hosts") -> list[tuple[list[str], str]]:
    """Check every entry; return ``[(names, owner)]``, or raise one :class:`InvalidInput` about ``hosts[<index>]``."""
    if not isinstance(entries, list):
        raise InvalidInput("option %s" % where, "must be a list of entries")
    result = []
    for index, entry in enumerate(entries):
        here = "%s[%d]" % (where, index)
        if not isinstance(entry, dict):
            raise InvalidInput(here, "must be a mapping with names and owner")
        metal3 = sorted(key for key in entry if key in METAL3_ONLY_KEYS)
        if metal3:
            raise InvalidInput(here, "%s only work with backend metal3" % ", ".join(metal3))
        unknown = sorted((str(key) for key in entry if key not in ENTRY_KEYS), key=str)
        if unknown:
            raise InvalidInput(here, "unknown key(s) %s (known: %s)" % (", ".join(unknown), ", ".join(ENTRY_KEYS)))
        names = entry.get("names") or []
        if not isinstance(names, list):
            raise InvalidInput(here, "names must be a list of node names or UUIDs")
        if entry.get("name") is not None:
            names = [*names, entry["name"]]
        if not names:
            raise InvalidInput(here, "needs names (or name): the nodes, by name or UUID")
        for name in names:
            if not isinstance(name, str) or not name.strip():
                raise InvalidInput(here, "node %r must be a node name or UUID" % (name,))
        owner = entry.get("owner")
        if not isinstance(owner, str) or not owner.strip():
            raise InvalidInput(here, "needs an owner: a project name or ID")
        result.append((names, owner))
    return result


def owner_refs(entries: Iterable[tuple[list[str], str]]) -> list[str]:
    """The distinct owner references of validated entries, in order of appearance."""
    return list(dict.fromkeys(owner for _names, owner in entries))


def _index(nodes):
    by_ref = {}
    for node in nodes:
        for key in ("uuid", "name"):
            if node.get(key):
                by_ref.setdefault(node[key], node)
    return by_ref


def plan_owners(nodes: Iterable[dict], entries: Iterable[tuple[list[str], str]], owner_ids: Mapping[str, str]) -> dict:
    """``{"changes": [...], "missing": [(index, name)], "nodes": [...]}`` for the nodes listed by Ironic.

    ``owner_ids`` maps each owner reference to its project ID.  A change is
    ``{"name", "uuid", "before", "after"}`` (owners as project IDs), one per
    node whose owner must change, in the order of the entries; ``nodes`` are the
    listed nodes the entries name, changed or not, in that order.
    """
    by_ref = _index(nodes)
    wanted, order, missing = {}, [], []
    for index, (names, owner) in enumerate(entries):
        for name in names:
            node = by_ref.get(name)
            if node is None:
                missing.append((index, name))
                continue
            if node["uuid"] not in wanted:
                order.append(node)
            wanted[node["uuid"]] = owner_ids[owner]
    changes = [
        {"name": node.get("name") or node["uuid"], "uuid": node["uuid"], "before": node.get("owner"), "after": owner}
        for node, owner in ((node, wanted[node["uuid"]]) for node in order)
        if (node.get("owner") or None) != owner
    ]
    return {"changes": changes, "missing": missing, "nodes": order}


def plan_problems(plan: dict, where: str = "hosts") -> list[str]:
    return ["%s[%d]: no node %s in Ironic" % (where, index, name) for index, name in plan["missing"]]


def refusal(plan: dict, where: str = "hosts") -> InvalidInput | None:
    """The :class:`InvalidInput` a strict run raises for the plan, or ``None``."""
    problems = plan_problems(plan, where)
    if not problems:
        return None
    return InvalidInput(
        "Ironic nodes",
        "%s. Nothing was changed (strict=false applies the other entries anyway)." % "; ".join(problems),
        {"problems": problems},
    )
