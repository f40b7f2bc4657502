# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""``host_share`` on Ironic: set the ``owner`` of nodes.

The nodes are listed once (UUID, name and owner only), each owner reference
is resolved once in Keystone (:func:`connection.resolve_project`: an unknown
project is an error naming it, before any write), and only the nodes whose
owner differs get one PATCH.  Ironic's PATCH has no precondition; the owner
is the only field written, through the backend's writer (:class:`~.writes.Writes`),
which in check mode records the write and sends nothing.  The nodes of the
entries that are never cleaned between tenants (``automated_clean: false``)
are named in a warning and in ``cleaning_off`` (:mod:`cleaning`).
"""

from __future__ import annotations

from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.cleaning import (
    cleaning_off_warning,
    never_cleaned,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.client import Ironic
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.projects import resolve_project
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.share_plan import (
    owner_refs,
    plan_owners,
    plan_problems,
    refusal,
    validate_entries,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.writes import Writes

NODE_FIELDS = ("uuid", "name", "owner", "automated_clean")


def run_host_share(module: Any) -> None:
    params = module.params
    entries = validate_entries(params["hosts"])
    ironic = Ironic.from_params(params)
    nodes = ironic.list_nodes(fields=NODE_FIELDS)
    owner_ids, checks = {}, {}
    for ref in owner_refs(entries):
        owner_ids[ref], checks[ref] = resolve_project(
            ironic.conn, ref, verify=params["verify_projects"], option="owner"
        )
    plan = plan_owners(nodes, entries, owner_ids)
    if params["strict"]:
        error = refusal(plan)
        if error:
            raise error
    for problem in plan_problems(plan):
        module.warn(problem)
    cleaning_off = never_cleaned(plan["nodes"])
    warning = cleaning_off_warning(cleaning_off, "put in the pool")
    if warning:
        module.warn(warning)
    writer = Writes(module, ironic)
    for change in plan["changes"]:
        writer.patch_node(change["uuid"], [{"op": "add", "path": "/owner", "value": change["after"]}], change["name"])
    changes = [
        {"host": change["name"], "before": {"owner": change["before"]}, "after": {"owner": change["after"]}}
        for change in plan["changes"]
    ]
    module.changed(bool(changes))
    module.result.update(
        changes=changes,
        problems=plan_problems(plan),
        cleaning_off=cleaning_off,
        projects=[{"project": ref, "id": owner_ids[ref], "check": checks[ref]} for ref in owner_ids],
        requests={"total": ironic.requests, "writes": 0 if writer.check_mode else len(plan["changes"])},
    )
    module.set_diff(
        {"hosts": dict((c["host"], c["before"]) for c in changes)},
        {"hosts": dict((c["host"], c["after"]) for c in changes)},
    )
