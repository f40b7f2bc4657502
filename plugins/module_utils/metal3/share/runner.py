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
raised before the first write.  Every write goes through the Metal3 writer
(:class:`metal3.writer.KubeWrites`): check mode writes nothing.

The namespace's sharing (``namespace_share``) and the dialect
(:mod:`pool_policies`): on the proposal's HostClaim it is every host's
sharing annotation (an entry's own ``share`` wins for the hosts it picks); on
baremetal-operator's it is the collection's ``HostDeployPolicy`` objects of
the namespace (one list, then create, merge-patch with the ``resourceVersion``
read, or delete only the policies labelled as the collection's), and a
per-host ``share`` is refused before anything is written.  The dialect is
read (the OpenAPI document) only when some sharing is asked for.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import Conflict, NotFound
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import (
    apply_merge_patch,
    get_path,
    with_precondition,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.dialect import BMO
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.client import (
    GROUP_VERSION,
    MERGE_PATCH,
    KubeIO,
    api_path,
    host_label,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.connection import kube_api_client
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share import pool_policies
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share.deploy_policy import PLURAL
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share.plan import (
    check_label_option,
    host_view,
    namespace_share,
    plan_host,
    plan_hosts,
    plan_problems,
    refusal,
    validate_entries,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.writer import KubeWrites

CONFLICT_RETRIES = 3


def _policy_label(namespace, name):
    return "%s %s/%s" % (pool_policies.KIND, namespace, name)


def _write_policies(io, namespace, plan):
    """Create, patch (with the ``resourceVersion`` read) and delete the collection's policies as planned."""
    collection = api_path(GROUP_VERSION, PLURAL, namespace)
    for body in plan["create"]:
        name = get_path(body, "metadata", "name")
        io.request("create", "POST", collection, _policy_label(namespace, name), body=body)
    for current, patch in plan["update"]:
        name = get_path(current, "metadata", "name")
        io.request(
            "patch",
            "PATCH",
            api_path(GROUP_VERSION, PLURAL, namespace, name),
            _policy_label(namespace, name),
            body=with_precondition(patch, current),
            content_type=MERGE_PATCH,
        )
    for current in plan["delete"]:
        name = get_path(current, "metadata", "name")
        precondition = {"preconditions": {"resourceVersion": get_path(current, "metadata", "resourceVersion")}}
        try:
            io.request(
                "delete",
                "DELETE",
                api_path(GROUP_VERSION, PLURAL, namespace, name),
                _policy_label(namespace, name),
                body=precondition,
            )
        except NotFound:
            pass


def _policy_changes(plan):
    """The result's ``policies``: one entry per policy written (or that would be)."""
    out = []
    for body in plan["create"]:
        name = get_path(body, "metadata", "name")
        out.append({"policy": name, "action": "create", "before": None, "after": plan["after"][name]})
    for current, dummy in plan["update"]:
        name = get_path(current, "metadata", "name")
        out.append({"policy": name, "action": "update", "before": plan["before"][name], "after": plan["after"][name]})
    for current in plan["delete"]:
        name = get_path(current, "metadata", "name")
        out.append({"policy": name, "action": "delete", "before": plan["before"][name], "after": None})
    return sorted(out, key=lambda change: change["policy"])


def _write(io, namespace, name, host, patch, entries, class_label, base=None):
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
        patch, dummy = plan_host(host, entries, class_label, base)
        if not patch:
            return host, None


def run_host_share(module: Any) -> None:
    params = module.params
    namespace = params["namespace"]
    class_label = check_label_option(params["class_label"], "class_label")
    tenant_label = check_label_option(params["tenant_label"], "tenant_label")
    entries = validate_entries(params["hosts"], tenant_label)
    share_given = params.get("namespace_share") is not None
    sharing = namespace_share(params.get("namespace_share"), tenant_label) if share_given else None
    io = KubeIO(kube_api_client(params))
    dialect = None
    if share_given or any(entry["share_set"] for entry in entries):
        dialect = pool_policies.sharing_dialect(params.get("dialect") or "auto", io.hostclaim_openapi())
    base, policy_plan = None, None
    if dialect == BMO:
        error = pool_policies.per_host_share_refusal(entries)
        if error:
            raise error
        if share_given:
            existing = io.list_items(
                api_path(GROUP_VERSION, PLURAL, namespace),
                "HostDeployPolicies in namespace %s" % namespace,
            )
            policy_plan = pool_policies.plan_policies(existing, pool_policies.wanted_policies(namespace, sharing))
            error = pool_policies.foreign_refusal(policy_plan, namespace)
            if error:
                raise error
    elif share_given:
        base = (True, sharing)
    hosts = io.list_hosts([namespace])
    plan = plan_hosts(hosts, entries, class_label, base)
    if params["strict"]:
        error = refusal(plan, namespace)
        if error:
            raise error
    for problem in plan_problems(plan, namespace):
        module.warn(problem)
    # the module is marked changed below, once: a host re-read after a conflict may need no write any more
    writer = KubeWrites(None, io, check_mode=module.check_mode)
    before, after, changes = {}, {}, []
    for change in plan["changes"]:
        name, patch, host = change["name"], change["patch"], change["host"]
        host, written = writer.write(
            "patch %s" % host_label(namespace, name),
            _write,
            io,
            namespace,
            name,
            host,
            patch,
            entries,
            class_label,
            base,
            predicted=(host, apply_merge_patch(host, patch)),
        )
        if written is None:
            continue
        before[name], after[name] = host_view(host), host_view(written)
        changes.append({"host": name, "before": before[name], "after": after[name]})
    policy_changes = []
    if policy_plan is not None:
        writer.write("write the pool policies of namespace %s" % namespace, _write_policies, io, namespace, policy_plan)
        policy_changes = _policy_changes(policy_plan)
    module.changed(bool(changes) or bool(policy_changes))
    module.result.update(
        changes=changes,
        policies=policy_changes,
        dialect=dialect,
        problems=plan_problems(plan, namespace),
        requests=io.figures(),
    )
    if policy_plan is not None:
        module.set_diff(
            {"hosts": before, "policies": policy_plan["before"]}, {"hosts": after, "policies": policy_plan["after"]}
        )
    else:
        module.set_diff({"hosts": before}, {"hosts": after})
