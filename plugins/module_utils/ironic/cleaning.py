# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Whether an Ironic node is cleaned between tenants, and the owner's warning when it is not.  Pure.

Ironic wipes a node's disks (automated cleaning) when a deployment ends, before
the node is ``available`` again, unless cleaning is off. A node says so in its
``automated_clean`` field (API 1.47): ``true`` cleans, ``false`` never cleans,
``null`` follows the conductor's ``[conductor] automated_clean`` (which the API
does not show; Ironic's default is on). On a node that is never cleaned, what one
tenant leaves on its disks - files, users, SSH keys, host name - is found by the
next one. The owner's modules that hand nodes to tenants (``host_lease``,
``host_share``) warn about such nodes, naming them; they change nothing about
it (``host_register``'s ``automated_cleaning`` does).

This file imports no client library.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

FIELD = "automated_clean"


def _label(node: dict) -> str:
    return str(node.get("name") or node.get("uuid") or "?")


def never_cleaned(nodes: Iterable[Any]) -> list[str]:
    """Names (or UUIDs) of the nodes whose ``automated_clean`` is ``false``, sorted, each once.

    ``null`` (the conductor decides) and a missing field are not reported: the API cannot tell."""
    labels = set()
    for node in nodes or ():
        if isinstance(node, dict) and node.get(FIELD) is False:
            labels.add(_label(node))
    return sorted(labels)


def cleaning_off_warning(labels: Iterable[str], action: str = "handed to tenants") -> str | None:
    """The owner's warning about the nodes ``labels`` (from :func:`never_cleaned`), or ``None`` if there are none."""
    labels = list(labels)
    if not labels:
        return None
    return (
        "automated cleaning is off (automated_clean: false) on node%s %s, %s: what a tenant leaves on %s disks "
        "(files, users, SSH keys) is found by the next tenant. Turn cleaning on (host_register automated_cleaning: "
        "true) unless something else wipes %s between tenants."
        % (
            "s" if len(labels) > 1 else "",
            ", ".join(labels),
            action,
            "their" if len(labels) > 1 else "its",
            "them" if len(labels) > 1 else "it",
        )
    )
