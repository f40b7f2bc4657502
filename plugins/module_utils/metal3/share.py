# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""``host_share`` on Metal3: label and share the BareMetalHosts of one namespace.

One list of the namespace's hosts, the plan of :mod:`share_plan`, then one
JSON merge patch per host that must change, with the ``resourceVersion`` it
was planned from as precondition.  A 409 (someone changed the host since)
re-reads that host and plans it again, a few times; the plan never writes a
host it did not read.  Strict refusals (unknown names, empty selectors) are
raised before the first write, and check mode writes nothing.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import Conflict, NotFound
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import (
    apply_merge_patch,
    with_precondition,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.client import KubeIO, host_label
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.connection import kube_api_client
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share_plan import (
    check_label_option,
    host_view,
    plan_host,
    plan_hosts,
    plan_problems,
    refusal,
    validate_entries,
)

CONFLICT_RETRIES = 3


def _write(io, namespace, name, host, patch, entries, class_label):
    """Patch one host; on a conflict re-read and re-plan it.

    Returns ``(host read, host written)``; the second is ``None`` when the
    host no longer needs a change.
    """
    conflicts = 0
    while True:
        try:
            return host, io.patch_host(namespace, name, with_precondition(patch, host))
        except Conflict:
            conflicts += 1
            io.count_conflict()
            if conflicts > CONFLICT_RETRIES:
                raise
        host = io.get_host(namespace, name)
        if host is None:
            raise NotFound(host_label(namespace, name), "was deleted while it was being labelled and shared")
        patch, _matched = plan_host(host, entries, class_label)
        if not patch:
            return host, None


def run_host_share(module: Any) -> None:
    params = module.params
    namespace = params["namespace"]
    class_label = check_label_option(params["class_label"], "class_label")
    tenant_label = check_label_option(params["tenant_label"], "tenant_label")
    entries = validate_entries(params["hosts"], tenant_label)
    io = KubeIO(kube_api_client(params))
    hosts = io.list_hosts([namespace])
    plan = plan_hosts(hosts, entries, class_label)
    if params["strict"]:
        error = refusal(plan, namespace)
        if error:
            raise error
    for problem in plan_problems(plan, namespace):
        module.warn(problem)
    before, after, changes = {}, {}, []
    for change in plan["changes"]:
        name, patch, host = change["name"], change["patch"], change["host"]
        if module.check_mode:
            written = apply_merge_patch(host, patch)
        else:
            host, written = _write(io, namespace, name, host, patch, entries, class_label)
            if written is None:
                continue
        before[name], after[name] = host_view(host), host_view(written)
        changes.append({"host": name, "before": before[name], "after": after[name]})
    module.changed(bool(changes))
    module.result.update(
        changes=changes,
        problems=plan_problems(plan, namespace),
        requests=io.figures(),
    )
    module.set_diff({"hosts": before}, {"hosts": after})
