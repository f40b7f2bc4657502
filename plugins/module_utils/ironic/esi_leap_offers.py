# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The I/O of host_offer, host_offer_info and host_offer_claim: ESI-Leap's offers and leases.

The decisions are in :mod:`esi_leap_model` (pure); this file reads and writes
through the two clients, each with the caller's own project-scoped
credentials: :class:`client.Ironic` for the owner's nodes (names, owner,
resource class: never BMC fields) and :class:`esi_leap_client.EsiLeap` for
offers and leases.

- The owner offers only the nodes Ironic shows it as their owner (or lessee,
  which ESI-Leap turns into a sub-lease): a node it does not own is one error
  naming the node before anything is written.
- One refusal creates nothing: when ESI-Leap refuses an offer (an overlapping
  window, an unknown project), the offers this run created before it are
  withdrawn again (:func:`errors.undo_after`) and the error says so.
- Check mode writes nothing: it reports the plan, and refuses a window that
  overlaps one of the owner's offers the way ESI-Leap would.
- A claim is made with the tenant's own credentials; a second run finds the
  lease the tenant already holds and changes nothing.  With ``wait`` the run
  returns once ESI-Leap's manager has made the tenant the node's ``lessee``
  (read from Ironic with the tenant's credentials).
"""

from __future__ import annotations

from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    Conflict,
    Forbidden,
    InvalidInput,
    NotFound,
    TenancyError,
    undo_after,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.params import check_timeout
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import esi_leap_lease_plan as lease_plan
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import esi_leap_model as model
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.client import Ironic
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.esi_leap_client import EsiLeap
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.lease_model import utcnow, validate_window
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.writes import Writes

#: what the owner's runs read of a node: no driver or BMC field
OFFER_NODE_FIELDS = ("uuid", "name", "owner", "lessee", "resource_class")
#: what the tenant's wait reads of its leased node
LEASED_NODE_FIELDS = ("uuid", "name", "lessee")


def _label(node: dict) -> str:
    return node.get("name") or node.get("uuid") or "?"


def owner_nodes(
    client: Ironic,
    project: str,
    idents: list[str] | None,
    resource_class: str | None,
    properties: dict | None = None,
) -> list[dict]:
    """The nodes to offer: those named (each must be ``project``'s), or every node ``project`` owns of
    ``resource_class`` and with ``properties``, by name.  Properties are read only to be matched."""
    fields = OFFER_NODE_FIELDS + (("properties",) if properties else ())
    if idents:
        nodes = []
        for ident in idents:
            obj = "option nodes: node %s" % ident
            node = client.get_node(ident, fields=fields, missing_ok=True)
            if node is None:
                raise NotFound(
                    obj,
                    "is not a node of project %s: Ironic does not show it to these credentials (only a node's owner "
                    "offers it)" % project,
                )
            if project not in (node.get("owner"), node.get("lessee")):
                raise Forbidden(
                    obj,
                    "is owned by project %s, not by %s: only a node's owner offers it"
                    % (node.get("owner") or "(none)", project),
                )
            if resource_class and node.get("resource_class") != resource_class:
                raise InvalidInput(
                    obj, "is of resource class %s, not %s" % (node.get("resource_class"), resource_class)
                )
            mismatch = model.properties_mismatch(node.get("properties"), properties)
            if properties and mismatch:
                raise InvalidInput(obj, "does not match option properties: %s" % mismatch)
            nodes.append(_without_properties(node))
        return nodes
    nodes = client.list_nodes(fields=fields, owner=project, resource_class=resource_class)
    if properties:
        nodes = [node for node in nodes if model.properties_mismatch(node.get("properties"), properties) is None]
    if not nodes:
        if properties:
            raise NotFound(
                "option properties",
                "project %s owns no node %swith these properties"
                % (project, "of resource class %s " % resource_class if resource_class else ""),
            )
        raise NotFound(
            "option resource_class: %s" % resource_class, "project %s owns no node of this resource class" % project
        )
    return sorted((_without_properties(node) for node in nodes), key=_label)


def _without_properties(node: dict) -> dict:
    return {key: value for key, value in node.items() if key != "properties"}


def _connect(params: dict) -> tuple[Ironic, EsiLeap]:
    ironic = Ironic.from_params(params)
    return ironic, EsiLeap.from_connection(ironic.conn)


def _by_node(views: list[dict]) -> dict:
    out: dict[str, list] = {}
    for view in views:
        out.setdefault(view["node"], []).append(
            {key: view[key] for key in ("uuid", "lessee", "lessee_name", "start", "end", "status")}
        )
    return out


# ------------------------------------------------------------------ host_offer (owner)


def _undo_offers(mod: Any, esi: EsiLeap, created: list[model.Offer], error: TenancyError) -> None:
    """Withdraw the offers this run created before ``error`` stopped it (:func:`errors.undo_after` says so in the
    error); the run then changed nothing, unless the withdrawal failed too."""
    undone = []

    def undo() -> None:
        for offer in created:
            esi.delete_offer(offer.uuid, "offer %s of node %s" % (offer.uuid, offer.node))
        undone.append(True)

    undo_after(error, "offer(s) %s created by this run" % ", ".join(o.uuid for o in created), undo)
    if undone:
        mod.result["changed"] = False


def run_host_offer(mod: Any, ironic: Ironic | None = None, esi: EsiLeap | None = None) -> None:
    p = mod.params
    start, end = validate_window(p["start"], p["end"])
    if not p["nodes"] and not p["resource_class"] and not p.get("properties"):
        raise InvalidInput(
            "host_offer", "give the nodes to offer (option nodes), their resource class or their properties"
        )
    if ironic is None or esi is None:
        ironic, esi = _connect(p)
    project = ironic.require_project("host_offer")
    writer = Writes(mod, ironic)
    now = utcnow()
    nodes = owner_nodes(ironic, project, p["nodes"], p["resource_class"], p.get("properties"))
    uuids = [node["uuid"] for node in nodes]
    existing = [offer for offer in esi.list_offers(project_id=project) if offer.owner == project]
    mine = [offer for offer in existing if offer.node_uuid in uuids]
    before = [model.offer_view(offer) for offer in mine if offer.status == model.AVAILABLE]
    actions: list[dict] = []
    views: list[dict] = []
    if p["state"] == "present":
        wanted = [model.WantedOffer(node["uuid"], _label(node), start, end, p["lessee"]) for node in nodes]
        plan = model.plan_offers(wanted, mine, now)
        for _wish, offer in plan.keep:
            views.append(model.offer_view(offer))
        if writer.check_mode:
            for wish in plan.create:
                other = model.overlapping_offer(wish, mine, now)
                if other is not None:
                    raise Conflict(
                        wish.describe(),
                        "ESI-Leap would refuse it: its window overlaps offer %s of the node %s"
                        % (other.uuid, model.describe_window(other.start, other.end)),
                    )
        created: list[model.Offer] = []
        for wish in plan.create:
            try:
                offer = writer.write("create %s" % wish.describe(), esi.create_offer, wish)
            except TenancyError as error:
                if created:
                    _undo_offers(mod, esi, created, error)
                raise
            if offer is None:  # check mode: the offer as asked, ESI-Leap has not named it
                views.append(wish.view())
                actions.append({"node": wish.node, "offer": None, "action": "created"})
                continue
            created.append(offer)
            views.append(model.offer_view(offer))
            actions.append({"node": wish.node, "offer": offer.uuid, "action": "created"})
        known = {view["uuid"] for view in before}
        after = before + [view for view in views if view["uuid"] not in known]
    else:
        withdraw = model.plan_withdraw(mine, uuids, project, p["lessee"], start, end)
        for offer in withdraw:
            what = "offer %s of node %s" % (offer.uuid, offer.node)
            writer.write("withdraw " + what, esi.delete_offer, offer.uuid, what)
            view = model.offer_view(offer)
            view["status"] = model.DELETED
            views.append(view)
            actions.append({"node": offer.node, "offer": offer.uuid, "action": "withdrawn"})
        gone = {offer.uuid for offer in withdraw}
        after = [view for view in before if view["uuid"] not in gone]
    mod.result["offers"] = views
    mod.result["actions"] = actions
    mod.result["project"] = project
    mod.set_diff(_by_node(before), _by_node(after))


# ------------------------------------------------------------------ host_offer_info (owner or tenant)


def run_host_offer_info(mod: Any, ironic: Ironic | None = None, esi: EsiLeap | None = None) -> None:
    p = mod.params
    if ironic is None or esi is None:
        ironic, esi = _connect(p)
    project = ironic.require_project("host_offer_info")
    now = utcnow()
    filters = {"resource_class": p["resource_class"]} if p["resource_class"] else {}
    offers = [
        offer
        for offer in esi.list_offers(**filters)
        if (p["node"] is None or p["node"] in (offer.node, offer.node_uuid))
        and (not p["available"] or model.claimable(offer, None, None, now))
    ]
    leases = [
        lease
        for lease in esi.list_leases()
        if (p["node"] is None or p["node"] in (lease.node, lease.node_uuid))
        and (p["resource_class"] is None or lease.resource_class == p["resource_class"])
    ]
    mod.result["offers"] = [model.offer_view(offer, now) for offer in offers]
    mod.result["leases"] = [model.lease_view(lease) for lease in leases]
    mod.result["project"] = project


# ------------------------------------------------------------------ host_offer_claim (tenant)


def _selection(p: dict) -> str:
    parts = []
    for key in ("resource_class", "node"):
        if p.get(key):
            parts.append("%s %s" % (key.replace("_", " "), p[key]))
    return "offers of %s" % " and ".join(parts) if parts else "offers"


def run_host_offer_claim(mod: Any, ironic: Ironic | None = None, esi: EsiLeap | None = None) -> None:
    p = mod.params
    check_timeout(p["wait_timeout"])
    start, end = validate_window(p["start"], p["end"])
    if ironic is None or esi is None:
        ironic, esi = _connect(p)
    project = ironic.require_project("host_offer_claim")
    mod.result["project"] = project
    if p["state"] == "present":
        _claim(mod, ironic, esi, project, start, end)
    else:
        _end(mod, esi, project, ironic)


def _claim(mod, ironic, esi, project, start, end):
    p = mod.params
    writer = Writes(mod, ironic)
    if not (p["offer"] or p["resource_class"] or p["node"]):
        raise InvalidInput("host_offer_claim", "give the offer to claim (option offer) or resource_class or node")
    now = utcnow()
    offer = None
    if p["offer"]:
        try:
            offer = esi.get_offer(p["offer"])
        except Forbidden as error:
            raise Forbidden(
                error.obj,
                "is not offered to project %s: a project claims only the offers made for every project or for it "
                "(ESI-Leap: %s; HTTP 403)" % (project, error.details.get("esi_leap_message")),
                error.details,
            ) from None
        if offer is None:
            raise NotFound("offer %s" % p["offer"], "does not exist (ESI-Leap does not know it)")
    leases = esi.list_leases()
    lease = model.held_lease(
        leases, project, offer.uuid if offer else None, p["resource_class"], p["node"], start, end, p.get("name")
    )
    if lease is not None:
        offer = None
    else:
        if offer is None:
            offers = esi.list_offers(**({"resource_class": p["resource_class"]} if p["resource_class"] else {}))
            offer = model.choose_offer(offers, p["resource_class"], p["node"], start, end, now)
            if offer is None:
                raise NotFound(
                    _selection(p),
                    "none is available to project %s %s" % (project, model.describe_window(start, end)),
                )
        obj = "claim of offer %s (node %s)" % (offer.uuid, offer.node)
        if writer.check_mode and not model.claimable(offer, start, end, now):
            raise Conflict(obj, "ESI-Leap would refuse it: the offer is not available for that window")
        predicted = model.Lease(
            uuid=None,
            offer_uuid=offer.uuid,
            node_uuid=offer.node_uuid,
            node=offer.node,
            resource_class=offer.resource_class,
            project=project,
            project_name=None,
            owner=offer.owner,
            owner_name=offer.owner_name,
            start=start or now,
            end=end,
            status=model.CREATED,
            name=p.get("name"),
        )
        body = model.claim_body(start, end, p.get("name"))
        lease = writer.write(obj, esi.claim_offer, offer.uuid, body, obj, predicted=predicted)
    if p["wait"] and not writer.check_mode:
        lease = wait_leased(ironic, esi, project, lease, p["wait_timeout"])
    mod.result["lease"] = model.lease_view(lease)
    mod.result["offer"] = model.offer_view(offer, now) if offer is not None else None


def wait_leased(ironic, esi, project, lease, timeout):
    """Wait until ESI-Leap's manager has fulfilled ``lease`` (active) and ``project`` is its node's lessee; the lease."""
    what = "lease %s of node %s" % (lease.uuid, lease.node)
    lease = esi.poll(
        lambda: esi.get_lease(lease.uuid),
        lambda current: current is not None and current.status == model.ACTIVE,
        timeout,
        what,
        failed=model.lease_failed,
        describe=lambda current: "status %s" % (current.status if current else "gone"),
    )
    if lease.node_uuid:
        # the manager writes Ironic before the lease's status; the tenant reads its node with its own credentials
        ironic.poll(
            lambda: ironic.get_node(lease.node_uuid, fields=LEASED_NODE_FIELDS, missing_ok=True),
            lambda node: node is not None and node.get("lessee") == project,
            timeout,
            "node %s" % lease.node,
            describe=lambda node: (
                "not visible to project %s yet" % project if node is None else "lessee %s" % node.get("lessee")
            ),
            service="ESI-Leap",
        )
    return lease


def _end(mod, esi, project, ironic=None):
    p = mod.params
    writer = Writes(mod, ironic)
    if p["lease"]:
        lease = esi.get_lease(p["lease"], missing_ok=True)
        if lease is None:
            raise NotFound("lease %s" % p["lease"], "does not exist (ESI-Leap does not know it)")
        if lease.project != project:
            raise Forbidden(
                "lease %s" % p["lease"], "is not a lease of project %s: a tenant ends its own leases" % project
            )
        targets = [lease] if lease.status in model.HELD else []
        shown = [lease]
    else:
        if not (p["offer"] or p["resource_class"] or p["node"] or p.get("name")):
            raise InvalidInput(
                "host_offer_claim", "give the lease to end (option lease), or offer, resource_class, node or name"
            )
        targets = model.leases_to_end(
            esi.list_leases(), project, p["offer"], p["resource_class"], p["node"], p.get("name")
        )
        shown = list(targets)
    ended = []
    for lease in targets:
        if writer.change("end lease %s of node %s" % (lease.uuid, lease.node)):
            if ironic is not None and lease.node_uuid and lease.status == model.ACTIVE:
                # what ESI-Leap leaves of the tenant on a node that is not deployed goes with the lease
                node = ironic.get_node(lease.node_uuid, fields=lease_plan.END_NODE_FIELDS, missing_ok=True)
                if node is not None and node.get("lessee") == project:
                    _detach_own_vifs(mod, ironic, lease)
                ops = lease_plan.leftover_patch(node, project, owner=False)
                if ops:
                    ironic.patch_node(lease.node_uuid, ops, lease.node)
                _release_own_allocation(ironic, lease_plan.leftover_allocation(node, project), project, lease.node)
            esi.delete_lease(lease.uuid, "lease %s of node %s" % (lease.uuid, lease.node))
        ended.append(lease.uuid)
    if ended and p["wait"] and not writer.check_mode:
        for uuid in ended:
            esi.poll(
                lambda uuid=uuid: esi.get_lease(uuid),
                lambda current: current is None or current.status in (model.DELETED, model.EXPIRED),
                p["wait_timeout"],
                "lease %s" % uuid,
                describe=lambda current: "status %s" % current.status,
            )
    views = []
    for lease in shown:
        view = model.lease_view(lease)
        if lease.uuid in ended:
            view["status"] = model.DELETED
        views.append(view)
    mod.result["leases"] = views
    mod.result["ended"] = ended


def _release_own_allocation(ironic, allocation: str | None, project: str, label: str | None) -> None:
    """The project's claim of a node that is not deployed goes with its lease (ESI-Leap leaves it, and the node
    would stay allocated): deleted when it is the project's own, as a release deletes it."""
    if allocation is None:
        return
    found = ironic.get_allocation(allocation)
    if found is not None and found.get("owner") in (None, project):
        ironic.delete_allocation(allocation, "%s on node %s" % (found.get("name") or allocation, label))


def _detach_own_vifs(mod, ironic, lease):
    """The tenant's VIFs leave the node with its lease (ESI-Leap 1.0.0 detaches none, Ironic only those of a node it
    undeploys; the next lessee's deployment would bind them). An owner's policy that keeps VIFs to the owner
    refuses: a warning says so (``host_claim`` with ``networks`` refuses a node that carries another's VIF)."""
    try:
        ironic.detach_vifs(lease.node_uuid, lease.node)
    except Forbidden as exc:
        mod.warn(
            "node %s: its VIFs stay attached (%s): the owner's policy keeps VIFs to the owner, who must detach them "
            "before the node is leased again" % (lease.node, exc.cause)
        )
