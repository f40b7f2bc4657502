# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The I/O of host_lease where ESI-Leap keeps the leases, and the choice of provider for every host_lease run.

:func:`run_host_lease` reads option ``lease_provider`` (:mod:`lease_provider`): the node-field leases
(:class:`leases.LeaseRun`) or ESI-Leap (:class:`EsiLeaseRun`).  The decisions of the ESI-Leap run are in
:mod:`esi_leap_lease_plan` (pure); this file reads the owner's nodes from Ironic (no BMC field) and ESI-Leap's
leases, and writes only through ESI-Leap, with the owner's own project-scoped credentials (ESI-Leap records the
caller's project as the lease's owner): never a node field.

- ``present``: one ``POST /v1/leases`` per node to lease, after every node was planned (one refusal leases
  nothing; a refusal of ESI-Leap itself ends again the leases this run made); with ``wait``, the run returns once
  ESI-Leap's manager made the project the ``lessee`` of each node whose lease starts now.
- ``absent``: ``DELETE /v1/leases/<uuid>``, after removing what ESI-Leap would leave of the tenant on a node that
  is not deployed (``instance_info``, the allocation: :func:`esi_leap_lease_plan.leftover_patch`); ESI-Leap's manager then removes the ``lessee`` and
  ``properties.lease_uuid`` and undeploys a deployed node; with ``wait`` the run returns once the lessee is gone and
  an undeployed node is ``available`` again.
- ``expired``: ESI-Leap's manager ends and starts leases on its own tick, so the run changes nothing and lists them
  (a schedule written for node-field leases keeps working on either provider).
- ``query``: lists.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    InvalidInput,
    TenancyError,
    undo_after,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.params import check_timeout
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import esi_leap_lease_plan as plan_model
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import esi_leap_model as esi_model
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import lease_model
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import lease_provider as providers
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.cleaning import (
    cleaning_off_warning,
    never_cleaned,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.client import Ironic, node_settled, node_where
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.esi_leap_client import EsiLeap, runs_esi_leap
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.esi_leap_offers import wait_leased
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.leases import (
    LEASE_NODE_FIELDS,
    LeaseRun,
    read_nodes,
    resolve_lessee,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.projects import PROJECT_SKIPPED
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.writes import Writes


def run_host_lease(mod: Any) -> None:
    """host_lease on the provider option ``lease_provider`` chooses."""
    ironic = Ironic.from_params(mod.params)
    choice = providers.choose_provider(mod.params.get("lease_provider"), lambda: runs_esi_leap(ironic.conn))
    if choice.warning:
        mod.warn(choice.warning)
    if choice.provider == providers.ESI_LEAP:
        EsiLeaseRun(mod, ironic, EsiLeap.from_connection(ironic.conn)).run()
    else:
        LeaseRun(mod, client=ironic).run()
    mod.result["lease_provider"] = choice.provider


class EsiLeaseRun:
    """One host_lease run on ESI-Leap: reads, plans, writes through ESI-Leap, reports."""

    def __init__(self, mod: Any, ironic: Ironic, esi: EsiLeap, now=None) -> None:
        self.mod = mod
        self.p = mod.params
        self.ironic = ironic
        self.esi = esi
        self.writer = Writes(mod, ironic)
        self.now = now or lease_model.utcnow()
        self.actions: list[dict] = []
        self.before: dict = {}
        self.after: dict = {}
        self.leased: list[dict] = []
        # (node, the lease whose fulfilment is awaited, or None: the node's lease ended)
        self.waits: list[tuple[dict, esi_model.Lease | None]] = []
        self.ended_views: list[dict] = []

    def run(self) -> None:
        p = self.p
        check_timeout(p["wait_timeout"])
        start, end = lease_model.check_run_options(p)
        state = p["state"]
        project, check = resolve_lessee(self.ironic, p["project"], p.get("verify_projects", True), state)
        if check == PROJECT_SKIPPED:
            self.mod.warn("project %s was not checked in Keystone (verify_projects=false)" % project)
        self.ironic.require_project("host_lease with lease_provider esi_leap (ESI-Leap's leases have a project owner)")
        if state == "present":
            leases = self._present(project, start, end)
        elif state == "absent":
            leases = self._absent(project)
        else:
            if state == "expired" and (p.get("warn_before") or p.get("lead_time")):
                self.mod.warn(
                    "warn_before and lead_time do nothing with lease_provider esi_leap: ESI-Leap's manager ends "
                    "its leases itself"
                )
            leases = self._leases_of(p["nodes"], p["resource_class"])
        if self.waits and p["wait"] and not self.writer.check_mode:
            self._wait()
            leases = [self.esi.get_lease(lease.uuid, missing_ok=True) or lease for lease in leases]
        if self.mod.result.get("changed") and not self.writer.check_mode:
            self.now = max(self.now, lease_model.utcnow())  # the leases made by this run started on ESI-Leap's clock
        self._report(leases, project, check)

    # -- reading
    def _nodes(self, idents, resource_class):
        return read_nodes(self.ironic, idents, resource_class)

    def _all_leases(self) -> list[esi_model.Lease]:
        return self.esi.list_leases()

    def _leases_of(self, idents, resource_class) -> list[esi_model.Lease]:
        leases = self._all_leases()
        if idents:
            uuids = {node["uuid"] for node in self._nodes(idents, resource_class)}
            return [lease for lease in leases if lease.node_uuid in uuids]
        return [lease for lease in leases if resource_class is None or lease.resource_class == resource_class]

    # -- present
    def _present(self, project, start, end):
        p = self.p
        lease_model.check_present_options(p, project)
        nodes = self._nodes(p["nodes"], p["resource_class"])
        leases = self._all_leases()
        if p["count"] is not None:
            plan = plan_model.choose_nodes(
                nodes, leases, project, start, end, self.now, p["count"], p["resource_class"], p["traits"]
            )
        else:
            plan = plan_model.plan_present(nodes, leases, project, start, end, self.now)
        for node, lease in plan.keep:
            label = lease_model.node_label(node)
            view = plan_model.lease_view(lease, self.now)
            self.before[label] = self.after[label] = [view]
        created: list[esi_model.Lease] = []
        starts_now = start is None or start <= self.now
        for node in plan.create:
            label = lease_model.node_label(node)
            self.before[label] = []
            self.leased.append(node)
            self.mod.changed()
            obj = "lease of node %s to project %s %s" % (label, project, esi_model.describe_window(start, end))
            try:
                lease = self.writer.write(
                    "create " + obj,
                    self.esi.create_lease,
                    plan_model.lease_body(node["uuid"], project, start, end),
                    obj,
                )
            except TenancyError as error:
                if created:
                    self._undo(created, error)
                raise
            if lease is None:  # check mode: the lease as planned, ESI-Leap has not named it
                self.after[label] = [plan_model.planned_view(node, project, start, end, self.now)]
                self.actions.append({"node": label, "lease": None, "project": project, "action": "created"})
                continue
            created.append(lease)
            self.after[label] = [plan_model.lease_view(lease, self.now)]
            self.actions.append({"node": label, "lease": lease.uuid, "project": project, "action": "created"})
            if starts_now:
                self.waits.append((node, lease))
        # in check mode nothing was created: what the run would make is in self.after, beside what is there
        return [lease for _node, lease in plan.keep] + created

    def _undo(self, created, error):
        undone = []

        def undo():
            for lease in created:
                self.esi.delete_lease(lease.uuid, "lease %s of node %s" % (lease.uuid, lease.node))
            undone.append(True)

        undo_after(error, "lease(s) %s made by this run" % ", ".join(lease.uuid for lease in created), undo)
        if undone:
            self.mod.result["changed"] = False

    # -- absent
    def _absent(self, project):
        p = self.p
        if not (p["nodes"] or project or p["lease_id"]):
            raise InvalidInput("host_lease", "state absent needs nodes, project or lease_id")
        uuids = None
        nodes_by_uuid = {}
        if p["nodes"]:
            nodes = self._nodes(p["nodes"], p["resource_class"])
            nodes_by_uuid = {node["uuid"]: node for node in nodes}
            uuids = set(nodes_by_uuid)
        leases = self._all_leases()
        if p["lease_id"] and not any(lease.uuid == p["lease_id"] for lease in leases):
            found = self.esi.get_lease(p["lease_id"], missing_ok=True)
            if found is not None:
                leases.append(found)
        targets = plan_model.leases_to_end(leases, uuids, project, p["lease_id"])
        if p["resource_class"]:
            targets = [lease for lease in targets if lease.resource_class == p["resource_class"]]
        shown = []
        for lease in targets:
            label = lease.node or lease.node_uuid
            before = plan_model.lease_view(lease, self.now)
            self.before.setdefault(label, []).append(before)
            self.after.setdefault(label, [])
            was_active = before["status"] == plan_model.ACTIVE
            self.actions.append(
                {
                    "node": label,
                    "lease": lease.uuid,
                    "project": lease.project,
                    "action": "ended" if was_active else "removed",
                }
            )
            self.mod.changed()
            ended = dict(before, status=plan_model.EXPIRED, esi_leap_status=esi_model.DELETED)
            shown.append(ended)
            if not self.writer.change("end lease %s of node %s" % (lease.uuid, label)):
                continue
            self._clear_leftovers(lease, label)
            self.esi.delete_lease(lease.uuid, "lease %s of node %s" % (lease.uuid, label))
            if was_active and lease.node_uuid:
                self.waits.append(
                    (nodes_by_uuid.get(lease.node_uuid) or {"uuid": lease.node_uuid, "name": label}, None)
                )
        self.ended_views = shown
        return []

    def _clear_leftovers(self, lease, label):
        """What ESI-Leap leaves of the tenant on a node that is not deployed goes first: its VIFs (ESI-Leap 1.0.0
        detaches none, Ironic only those of a node it undeploys; the next lessee's deployment would bind them) and
        :func:`leftover_patch`."""
        if not lease.node_uuid or plan_model.status(lease, self.now) != plan_model.ACTIVE:
            return
        node = self.ironic.get_node(lease.node_uuid, fields=plan_model.END_NODE_FIELDS, missing_ok=True)
        if node is not None and node.get("lessee") == lease.project:
            self.ironic.detach_vifs(lease.node_uuid, label)  # on a node never deployed nothing else does
        ops = plan_model.leftover_patch(node, lease.project, owner=True)
        if ops:
            self.ironic.patch_node(lease.node_uuid, ops, label)

    # -- waiting
    def _wait(self):
        timeout = self.p["wait_timeout"]
        for node, lease in self.waits:
            label = lease_model.node_label(node)
            if lease is not None:
                # fulfilled: the lease active and its project the node's lessee (as host_offer_claim waits)
                wait_leased(self.ironic, self.esi, lease.project, lease, timeout)
            else:
                self.ironic.poll(
                    lambda uuid=node["uuid"]: self.ironic.get_node(uuid, fields=LEASE_NODE_FIELDS),
                    lambda n: (
                        n is not None
                        and not n.get("lessee")
                        and node_settled(n)
                        and n.get("provision_state") in ("available", "manageable", "enroll")
                    ),
                    timeout,
                    "node %s" % label,
                    describe=lambda n: "lessee %s, %s" % ((n or {}).get("lessee"), node_where(n)),
                    service="ESI-Leap",
                )

    # -- result
    def _report(self, leases, project, check):
        mod = self.mod
        views = [
            plan_model.lease_view(lease, self.now) for lease in leases if project is None or lease.project == project
        ]
        if self.writer.check_mode and self.p["state"] == "present":
            known = {view["node_uuid"] for view in views}
            for after in self.after.values():
                views.extend(view for view in after if view["id"] is None and view["node_uuid"] not in known)
        views.extend(self.ended_views)
        views.sort(key=lambda view: (view["node"] or "", view["start"] or "", view["id"] or ""))
        mod.result["leases"] = views
        mod.result["actions"] = self.actions
        mod.result["deferred"] = []
        mod.result["now"] = lease_model.format_time(self.now)
        mod.result["project_check"] = check
        mod.result["cleaning_off"] = never_cleaned(self.leased)
        warning = cleaning_off_warning(mod.result["cleaning_off"], "leased to a tenant")
        if warning:
            mod.warn(warning)
        mod.set_diff(dict(self.before), dict(self.after))
