# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The I/O of host_lease: read nodes, apply lease plans, end leases.

The decisions are in :mod:`lease_model` (pure); this file reads the nodes with the
caller's credentials (a system administrator, or a member of the project
that owns the nodes), writes one JSON patch per node, and ends leases the way
ESI-Leap does: the lessee, ``instance_info`` and the lease record go in one
patch (``instance_name``, which a lessee may also write, right after; the
``ironic_tenancy`` policy lets a lessee write nothing else), then a deployed node is undeployed (Ironic cleans it, clears its
``instance_info`` and removes the tenant's allocation).  A node that was
allocated but never deployed loses its ``instance_uuid``, which makes Ironic
remove the allocation too: the owner may do that, although it may not delete
another project's allocation.

Ironic's PATCH has no precondition, so two host_lease runs on the same node
at the same moment could overwrite each other's lease list: after writing,
the node is read again and a lost write is reported as a conflict.

A lease given (or started) on a node that is never cleaned between tenants
(``automated_clean: false``) is reported in a warning naming the node and in
``cleaning_off`` (:mod:`cleaning`); the lease is still written.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable, Iterable
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    TenancyError,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.params import check_timeout
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import lease_model as model
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import lease_notice as notices
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.bmc_ledger import IronicHost
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.cleaning import (
    cleaning_off_warning,
    never_cleaned,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.client import Ironic, node_settled, node_where
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.model import (
    CLAIM_KEY,
    UNDEPLOYABLE_STATES,
    cleaning_failed,
    in_failure_state,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.projects import PROJECT_SKIPPED, resolve_project
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.writes import Writes
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish.accounts import revoke_host_accounts

#: Written into ``instance_info`` by the patch that ends a deployed node's lessee (its value: that lessee), and
#: cleared by Ironic with the rest of ``instance_info`` when the undeployment asked for right after it is done. A
#: deployed node that still has it lost its lessee in a run killed before it asked for the undeployment: the next
#: run that writes (state present, absent or expired) asks for it (:func:`undeployment_owed`), so the last
#: tenant's instance never stays on a node nobody leases.
ENDED_KEY = "baremetal_tenancy_access_ended"

LEASE_NODE_FIELDS = (
    "uuid",
    "name",
    "owner",
    "lessee",
    "properties",
    "provision_state",
    "target_provision_state",
    "power_state",
    "target_power_state",
    "maintenance",
    "instance_uuid",
    "instance_info",
    "resource_class",
    "traits",
    "automated_clean",
)


# ------------------------------------------------------------------ helpers


def resolve_lessee(
    client: Ironic, project: str | None, verify: bool = True, state: str = "present"
) -> tuple[str | None, str | None]:
    """``(project_id, check)`` of option ``project``: see :func:`projects.resolve_project`.

    A lease is only written for a project Keystone knows; ending or listing
    leases also accepts the ID of a project deleted since (its records must
    remain endable).
    """
    return resolve_project(client.conn, project, verify=verify, must_exist=state == "present", option="project")


def read_nodes(client: Ironic, idents: Iterable[str] | None = None, resource_class: str | None = None) -> list[dict]:
    """The nodes named by ``idents`` (each must exist), or every node the
    caller sees (of ``resource_class``)."""
    if idents:
        nodes = []
        for ident in idents:
            node = client.get_node(ident, fields=LEASE_NODE_FIELDS, missing_ok=True)
            if node is None:
                raise NotFound(
                    "option nodes: node %s" % ident,
                    "does not exist or is not visible to these credentials (a lease "
                    "needs a system administrator or a member of the owner project)",
                )
            nodes.append(node)
        return nodes
    return client.list_nodes(fields=LEASE_NODE_FIELDS, resource_class=resource_class)


def leases_patch(node: dict, new_leases: list[dict] | None) -> list[dict]:
    """The JSON patch op that stores ``new_leases`` on ``node``."""
    path = "/properties/%s" % model.LEASES_KEY
    if not new_leases:
        if model.LEASES_KEY in (node.get("properties") or {}):
            return [{"op": "remove", "path": path}]
        return []
    return [{"op": "add", "path": path, "value": new_leases}]


def _same_leases(node, new_leases):
    return ((node.get("properties") or {}).get(model.LEASES_KEY) or []) == (new_leases or [])


def end_access_patch(
    node: dict, new_leases: list[dict] | None, new_lessee: str | None = None
) -> tuple[list[dict], bool]:
    """``(ops, undeploy)`` that end the current lessee's access, ESI-Leap style.

    The lessee is removed (or replaced by ``new_lessee``), the lease list
    updated and the lease notice (:mod:`lease_notice`) removed; a node that is not deployed also loses ``instance_info`` and the
    allocation (through ``instance_uuid``); a deployed one is undeployed
    after the patch (``undeploy`` is then ``True``).
    """
    ops = list(leases_patch(node, new_leases)) if not _same_leases(node, new_leases) else []
    ops.extend(notices.notice_patch(node, None))
    if new_lessee:
        ops.append({"op": "add", "path": "/lessee", "value": new_lessee})
    elif node.get("lessee"):
        ops.append({"op": "remove", "path": "/lessee"})
    undeploy = node.get("provision_state") in UNDEPLOYABLE_STATES
    if not undeploy:
        if node.get("instance_info"):
            ops.append({"op": "remove", "path": "/instance_info"})
        if node.get("instance_uuid"):
            ops.append({"op": "remove", "path": "/instance_uuid"})
    else:
        if CLAIM_KEY in (node.get("instance_info") or {}):
            # The claim's name on the node goes with the lessee, in this patch: until the undeployment clears the
            # rest, the next lessee's inventory must not name a host after what the last one wrote.
            ops.append({"op": "remove", "path": "/instance_info/%s" % CLAIM_KEY})
        ended = node.get("lessee") or (node.get("instance_info") or {}).get(ENDED_KEY) or ""
        ops.append({"op": "add", "path": "/instance_info/%s" % ENDED_KEY, "value": ended})
    return ops, undeploy


def undeployment_owed(node: dict) -> bool:
    """Whether ``node`` lost its lessee in a run that stopped before it asked for the undeployment (see
    :data:`ENDED_KEY`): still deployed, with the mark of the patch that ended the access."""
    return ENDED_KEY in (node.get("instance_info") or {}) and node.get("provision_state") in UNDEPLOYABLE_STATES


TRANSITION_STATES = ("deploying", "cleaning", "deleting", "clean wait", "inspecting", "verifying")


def busy(node: dict) -> str | None:
    """Why ``node`` cannot be changed now (a transition is under way), or ``None``.

    A node in one of Ironic's failure states is not busy, whatever target it shows (``in_failure_state``):
    nothing is under way, and waiting for it would wait out the timeout; its lease ends as on an idle node
    (a ``deploy failed`` node is undeployed, a ``clean failed`` one stays with its owner)."""
    state = node.get("provision_state")
    target = node.get("target_provision_state")
    if in_failure_state(node):
        return None
    if target or state in TRANSITION_STATES:
        return "it is in provision state %s%s" % (state, " -> %s" % target if target else "")
    return None


# ------------------------------------------------------------------ the runner


class LeaseRun:
    """One host_lease run: reads, plans, writes, reports."""

    def __init__(
        self,
        mod,
        client=None,
        now=None,
        revoke=None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], datetime.datetime] | None = None,
    ):
        self.mod = mod
        self.sleep = sleep
        # the wall clock the run waits on for lead_time (microseconds kept, unlike model.utcnow)
        self.clock = clock or (lambda: datetime.datetime.now(model.UTC))
        # revoke(node_uuid, lessee) -> revoke_host_accounts() result
        self.revoke = revoke or self._revoke_on_bmc
        self.p = mod.params
        self.client = client
        # every write of the run: in check mode recorded, nothing sent
        self.writer = Writes(mod, client)
        self.now = now or model.utcnow()
        self.actions = []
        self.deferred = []
        self.before = {}
        self.after = {}
        self.undeployed = []
        self.project_check = None
        self.leased = []  # the nodes this run leases to a project (or whose lease it starts)

    # -- entry
    def run(self) -> None:
        p = self.p
        check_timeout(p["wait_timeout"])
        start, end = model.check_run_options(p)
        if self.client is None:
            self.client = self.writer.client = Ironic.from_params(p)
        state = p["state"]
        project, self.project_check = resolve_lessee(self.client, p["project"], p.get("verify_projects", True), state)
        if self.project_check == PROJECT_SKIPPED:
            self.mod.warn("project %s was not checked in Keystone (verify_projects=false)" % project)
        if state == "present":
            nodes = self._present(project, start, end)
        elif state == "absent":
            nodes = self._absent(project)
        elif state == "expired":
            nodes = self._expired()
        else:
            nodes = read_nodes(self.client, p["nodes"], p["resource_class"])
        if state != "query":
            self._undeploy_owed(nodes)
        if self.undeployed and p["wait"] and not self.writer.check_mode:
            self._wait_available()
        self._report(nodes, project)

    # -- present
    def _present(self, project, start, end):
        p = self.p
        model.check_present_options(p, project)
        nodes = read_nodes(self.client, p["nodes"], p["resource_class"])
        if p["count"] is not None:
            already, chosen = model.choose_nodes(
                nodes, project, start, end, self.now, p["count"], p["resource_class"], p["traits"]
            )
            targets = already + chosen
        else:
            targets = nodes
        # Plan every node first: one refusal leases nothing.
        plans = [(node, model.plan_lease(node, project, start, end, self.now)) for node in targets]
        for node, plan in plans:
            if plan["action"] == "create" and plan["set_lessee"] and not model.node_is_free_now(node):
                raise Conflict(
                    "node %s" % model.node_label(node),
                    "is in use (provision state %s%s%s): a lease that starts now needs an available node "
                    "that nobody has claimed"
                    % (
                        node.get("provision_state"),
                        ", claimed" if node.get("instance_uuid") else "",
                        ", in maintenance" if node.get("maintenance") else "",
                    ),
                )
        self.leased.extend(node for node, plan in plans)
        for node, plan in plans:
            label = model.node_label(node)
            self.before[label] = model.node_leases(node)
            self.after[label] = plan["leases"]
            if plan["action"] == "none" and not plan["set_lessee"]:
                continue
            self.mod.changed()
            self.actions.append(
                {
                    "node": label,
                    "lease": plan["lease"]["id"],
                    "project": project,
                    "action": "created"
                    if plan["action"] == "create"
                    else "updated"
                    if plan["action"] == "update"
                    else "started",
                }
            )
            if not self.writer.change("lease node %s" % label):
                continue
            ops = leases_patch(node, plan["leases"]) if plan["action"] != "none" else []
            if plan["set_lessee"]:
                ops.append({"op": "add", "path": "/lessee", "value": plan["set_lessee"]})
            if self._write(node, ops):
                self._verify(node, plan["lease"])
        return [node for node, plan in plans]

    def _verify(self, node, lease):
        """Read the node again: did a concurrent run overwrite the lease list?"""
        fresh = self.client.get_node(node["uuid"], fields=LEASE_NODE_FIELDS)
        current = model.node_leases(fresh)
        mine = [item for item in current if item["id"] == lease["id"]]
        label = model.node_label(node)
        if not mine:
            raise Conflict(
                "node %s" % label,
                "another change of its leases happened at the same time and "
                "replaced %s; rerun the task" % model.describe(lease),
            )
        start, end = model.window(mine[0])
        clash = model.conflicts(fresh, current, lease["project"], start, end, self.now, ignore_id=lease["id"])
        if clash:
            raise Conflict(
                "node %s" % label,
                "%s now overlaps %s (written at the same time by another run); end "
                "one of them" % (model.describe(lease), "; ".join(clash)),
            )

    # -- absent
    def _absent(self, project):
        p = self.p
        if not (p["nodes"] or project or p["lease_id"]):
            raise InvalidInput("host_lease", "state absent needs nodes, project or lease_id")
        nodes = read_nodes(self.client, p["nodes"], p["resource_class"])
        for node in nodes:
            plan = model.plan_end(node, project, self.now, p["lease_id"])
            if not plan["removed"] and not plan["end_lessee"]:
                continue
            label = model.node_label(node)
            self.before[label] = model.node_leases(node)
            self.after[label] = plan["leases"]
            self.mod.changed()
            for lease in plan["removed"]:
                self.actions.append(
                    {
                        "node": label,
                        "lease": lease["id"],
                        "project": lease["project"],
                        "action": "ended" if model.status(lease, self.now) == model.ACTIVE else "removed",
                    }
                )
            if plan["end_lessee"] and not any(a["node"] == label and a["action"] == "ended" for a in self.actions):
                self.actions.append({"node": label, "lease": None, "project": plan["end_lessee"], "action": "ended"})
            if not self.writer.change("end leases of node %s" % label):
                continue
            if plan["end_lessee"]:
                self._end_access(node, plan["leases"])
            else:
                self._write(node, leases_patch(node, plan["leases"]))
        return nodes

    # -- expired
    def _expired(self):
        p = self.p
        nodes = read_nodes(self.client, p["nodes"], p["resource_class"])
        warn_before = p.get("warn_before")
        lead_time = p.get("lead_time") or 0
        if lead_time:
            warn_before = max(warn_before or 0, lead_time)
        # Announce first (a lease this run ends at its end was announced before), and drop stale notices.
        nodes = [self._announce(node, warn_before) for node in nodes]
        done = {}
        for end, group in self._ends_ahead(nodes, lead_time):
            self._wait_until(end)
            fresh = [self.client.get_node(node["uuid"], fields=LEASE_NODE_FIELDS, missing_ok=True) for node in group]
            fresh = [node for node in fresh if node is not None]
            self._expire_nodes(fresh)
            done.update((node["uuid"], node) for node in fresh)
        if done and not self.writer.check_mode:
            self.now = max(self.now, self.clock().replace(microsecond=0))
        rest = [node for node in nodes if node["uuid"] not in done]
        self._expire_nodes(rest)
        return [done.get(node["uuid"], node) for node in nodes]

    def _ends_ahead(self, nodes, lead_time):
        """``[(end, nodes)]``: the nodes whose lessee's access ends within ``lead_time`` seconds, grouped by end."""
        if not lead_time:
            return []
        groups = {}
        for end, node in notices.ends_within(nodes, self.now, lead_time):
            groups.setdefault(end, []).append(node)
        return sorted(groups.items(), key=lambda item: item[0])

    def _wait_until(self, end):
        """Sleep until ``end`` (in check mode, only move the run's clock there)."""
        if not self.writer.check_mode:
            left = (end - self.clock()).total_seconds()
            if left > 0:
                self.sleep(left + 0.01)
        self.now = max(self.now, end)

    def _announce(self, node, warn_before):
        """Write, keep or drop the node's lease notice (:mod:`lease_notice`); returns the node as it is now."""
        label = model.node_label(node)
        notice, change = notices.plan_notice(node, self.now, warn_before)
        if not change:
            return node
        self.mod.changed()
        if notice is not None:
            self.actions.append(
                {"node": label, "lease": notice["lease"], "project": notice["project"], "action": "warned"}
            )
        if not self.writer.change("write the lease notice of node %s" % label):
            return node
        ops = notices.notice_patch(node, notice)
        if not self._write(node, ops):
            return node
        properties = dict(node.get("properties") or {})
        if notice is None:
            properties.pop(notices.NOTICE_KEY, None)
        else:
            properties[notices.NOTICE_KEY] = notice
        return dict(node, properties=properties)

    def _expire_nodes(self, nodes):
        for node in nodes:
            plan = model.plan_reconcile(node, self.now)
            label = model.node_label(node)
            if plan["blocked"]:
                self.deferred.append({"node": label, "reason": plan["blocked"]})
            if not plan["expired"] and not plan["start"]:
                continue
            self.before[label] = model.node_leases(node)
            self.after[label] = plan["leases"]
            self.mod.changed()
            for lease in plan["expired"]:
                self.actions.append(
                    {
                        "node": label,
                        "lease": lease["id"],
                        "project": lease["project"],
                        "action": "ended" if lease["project"] == plan["end_lessee"] else "removed",
                    }
                )
            if plan["start"]:
                self.leased.append(node)
                self.actions.append(
                    {
                        "node": label,
                        "lease": plan["start"]["id"],
                        "project": plan["start"]["project"],
                        "action": "started",
                    }
                )
            if not self.writer.change("expire leases of node %s" % label):
                continue
            new_lessee = plan["start"]["project"] if plan["start"] else None
            if plan["end_lessee"]:
                self._end_access(node, plan["leases"], new_lessee=new_lessee)
                continue
            ops = [] if _same_leases(node, plan["leases"]) else leases_patch(node, plan["leases"])
            if new_lessee:
                ops.append({"op": "add", "path": "/lessee", "value": new_lessee})
            self._write(node, ops)
        return nodes

    def _write(self, node, ops):
        """Patch ``node`` once it is idle: wait for it with ``wait``, else defer
        to a later run.  Returns whether the patch was sent."""
        if not ops:
            return False
        label = model.node_label(node)
        reason = busy(node)
        if reason and self.p["wait"]:
            self.client.poll(
                lambda: self.client.get_node(node["uuid"], fields=LEASE_NODE_FIELDS),
                lambda n: not busy(n),
                self.p["wait_timeout"],
                "node %s" % label,
                describe=node_where,
            )
            reason = None
        if reason:
            self.deferred.append({"node": label, "reason": "%s; retried on a later run" % reason})
            return False
        self.writer.patch_node(node["uuid"], ops, label)
        return True

    def _undeploy_owed(self, nodes):
        """Finish what a killed run left: undeploy the nodes whose access it ended (:func:`undeployment_owed`)."""
        done = set(node["uuid"] for node in self.undeployed)
        for node in nodes:
            if node["uuid"] in done or not undeployment_owed(node):
                continue
            label = model.node_label(node)
            self.before[label] = self.after[label] = model.node_leases(node)
            self.mod.changed()
            ended = (node.get("instance_info") or {}).get(ENDED_KEY) or None
            self.actions.append({"node": label, "lease": None, "project": ended, "action": "ended"})
            if self.writer.change("end the access of node %s" % label):
                self._end_access(node, model.node_leases(node))

    # -- ending access (ESI-Leap)
    def _end_access(self, node, new_leases, new_lessee=None):
        label = model.node_label(node)
        reason = busy(node)
        if reason and self.p["wait"]:
            node = self.client.poll(
                lambda: self.client.get_node(node["uuid"], fields=LEASE_NODE_FIELDS),
                lambda n: not busy(n),
                self.p["wait_timeout"],
                "node %s" % label,
                describe=node_where,
            )
            reason = None
        if reason:
            self.deferred.append({"node": label, "reason": "%s; the lease is ended on a later run" % reason})
            return
        if not self._revoke_bmc_access(node, label):
            return
        writer = self.writer
        # the lessee's networks (of a node not deployed, too) go first
        writer.write("detach the VIFs of node %s" % label, self.client.detach_vifs, node["uuid"], label)
        ops, undeploy = end_access_patch(node, new_leases, new_lessee)
        if ops:
            writer.patch_node(node["uuid"], ops, label)
        if not undeploy:
            # instance_name goes with instance_info (a lessee may write both); undeploying clears both.
            writer.write(
                "clear the instance_name of node %s" % label, self.client.clear_instance_name, node["uuid"], label
            )
        if undeploy:
            writer.write("undeploy node %s" % label, self.client.set_provision_state, node["uuid"], "deleted", label)
            self.undeployed.append(node)

    def _revoke_bmc_access(self, node, label):
        """Delete the BMC accounts granted on ``node`` to its lessee, before the
        lessee goes.  False (node deferred) when they could not be deleted."""
        lessee = node.get("lessee")
        if not lessee:
            return True
        try:
            result = self.revoke(node["uuid"], lessee)
        except TenancyError as exc:
            reason = (
                "the BMC accounts granted to the lessee could not be deleted (%s); the lease is ended on a later run"
            )
            self.deferred.append({"node": label, "reason": reason % exc.message})
            return False
        for action in self.actions:
            if result["removed"] and action["node"] == label and action["action"] == "ended":
                action["bmc_accounts_removed"] = result["removed"]
        return True

    def _revoke_on_bmc(self, node_uuid, lessee):
        return revoke_host_accounts(
            IronicHost(self.client.conn, node_uuid),
            grantee=self._project_names(lessee),
            bmc_password=self.p.get("bmc_password"),
        )

    def _project_names(self, project_id):
        """The names a project goes by in BMC account records: its ID, and its name when Keystone tells it."""
        names = set([project_id])
        try:
            names.add(self.client.conn.identity.get_project(project_id).name)
        except Exception:  # the caller may not look projects up: the ID alone then
            pass
        return names

    def _wait_available(self):
        for node in self.undeployed:
            label = model.node_label(node)

            def failed(n: dict) -> str | None:
                if cleaning_failed(n):
                    return "cleaning failed after the lease ended: the node needs the owner's attention"
                return None

            self.client.poll(
                lambda uuid=node["uuid"]: self.client.get_node(uuid, fields=LEASE_NODE_FIELDS),
                lambda n: node_settled(n, provision_state="available"),
                self.p["wait_timeout"],
                "node %s" % label,
                failed=failed,
                describe=node_where,
            )

    # -- result
    def _report(self, nodes, project):
        mod = self.mod
        views = []
        fresh = nodes
        if mod.result.get("changed") and not self.writer.check_mode:
            # Read again only the nodes this run wrote.
            fresh = [
                self.client.get_node(n["uuid"], fields=LEASE_NODE_FIELDS, missing_ok=True) or n
                if model.node_label(n) in self.after
                else n
                for n in nodes
            ]
        for node in fresh:
            label = model.node_label(node)
            check_mode = self.writer.check_mode
            records = self.after.get(label) if check_mode and label in self.after else model.node_leases(node)
            for lease in records:
                if project is None or lease["project"] == project:
                    views.append(model.lease_view(node, lease, self.now))
            if (
                not check_mode
                and model.unmanaged_lessee(node, model.node_leases(node), self.now)
                and (project is None or node.get("lessee") == project)
            ):
                views.append(model.unmanaged_view(node))
        mod.result["leases"] = views
        mod.result["actions"] = self.actions
        mod.result["deferred"] = self.deferred
        mod.result["now"] = model.format_time(self.now)
        mod.result["project_check"] = self.project_check
        for item in self.deferred:
            mod.warn("node %s: %s" % (item["node"], item["reason"]))
        mod.result["cleaning_off"] = never_cleaned(self.leased)
        warning = cleaning_off_warning(mod.result["cleaning_off"], "leased to a tenant")
        if warning:
            mod.warn(warning)
        mod.set_diff(dict(self.before), dict(self.after))


def run_host_lease(mod: Any) -> None:
    LeaseRun(mod).run()
