# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The I/O of host_offer_expire: the lease keeper's run on nodes ESI-Leap leases.

The decisions are in :mod:`esi_leap_keeper` (pure).  With the owner's
credentials, for each node: read it from Ironic (name, lessee, provision state,
``properties``: its ``lease_uuid`` and the notice), read the lease it names from
ESI-Leap, then

- write the end-of-lease notice when the end is within ``warn_before``
  (action ``warned``), exactly as ``host_lease state=expired`` writes it for a
  lease in node fields;
- for an end within ``lead_time`` (or passed): announce it if nobody did, wait
  until the end, then until ESI-Leap's manager has ended the lease (the node's
  ``lease_uuid`` and ``lessee`` gone: ESI-Leap undeploys a deployed node), and
  remove the notice (action ``ended``); the allocation and ``instance_info``
  the lessee left on a node it claimed and never deployed (ESI-Leap undeploys
  only deployed nodes) are removed (``allocation_removed``).  The module never
  writes ``lessee`` or ``lease_uuid``: ending the lease is ESI-Leap's.  When ESI-Leap has not ended
  it within ``wait_timeout`` (or without ``wait``), the node is listed in
  ``deferred`` with the reason;
- remove a notice whose lease is over (ended early by the tenant, or at its end
  while no keeper ran): action ``ended``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput, NotFound, WaitTimeout
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.params import check_timeout
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import esi_leap_keeper as keeper
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import esi_leap_model as esi
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import lease_model as model
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import lease_notice as notices
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.client import Ironic
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.esi_leap_client import EsiLeap
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.writes import Writes

#: what the keeper reads of a node (no driver or BMC field)
KEEPER_NODE_FIELDS = ("uuid", "name", "lessee", "provision_state", "properties", "instance_uuid")


def _read(ironic: Ironic, ident: str) -> dict | None:
    return ironic.get_node(ident, fields=KEEPER_NODE_FIELDS, missing_ok=True)


def _lease(esi_client: EsiLeap, node: dict) -> esi.Lease | None:
    uuid = keeper.node_lease_uuid(node)
    return esi_client.get_lease(uuid, missing_ok=True) if uuid else None


def run_host_offer_expire(
    mod: Any,
    ironic: Ironic | None = None,
    esi_client: EsiLeap | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    p = mod.params
    check_timeout(p["wait_timeout"])
    for option in ("warn_before", "lead_time"):
        if p[option] is not None and p[option] < 0:
            raise InvalidInput("option %s" % option, "must be 0 seconds or more, not %s" % p[option])
    if ironic is None or esi_client is None:
        ironic = Ironic.from_params(p)
        esi_client = EsiLeap.from_connection(ironic.conn)
    writer = Writes(mod, ironic)
    now = model.utcnow()
    if p["nodes"]:
        found = [_read(ironic, ident) for ident in p["nodes"]]
        missing = [ident for ident, node in zip(p["nodes"], found) if node is None]
        if missing:
            raise NotFound(
                "option nodes: node %s" % missing[0], "does not exist or is not visible to these credentials"
            )
        nodes = [node for node in found if node is not None]
    else:
        nodes = ironic.list_nodes(fields=KEEPER_NODE_FIELDS)
    actions: list[dict] = []
    deferred: list[dict] = []
    before: dict = {}
    after: dict = {}
    for node in sorted((n for n in nodes if keeper.is_esi_node(n)), key=model.node_label):
        label = model.node_label(node)
        lease = _lease(esi_client, node)
        record = keeper.ending_lease(node, lease)
        current = notices.node_notice(node)
        before[label] = current
        after[label] = current
        if record is not None and notices.seconds_left(record, now) <= (p["lead_time"] or 0):
            _end(mod, writer, esi_client, node, record, now, actions, deferred, after, sleep)
            continue
        notice, changed = keeper.plan_notice(node, lease, now, p["warn_before"])
        if not changed:
            continue
        writer.patch_node(node["uuid"], notices.notice_patch(node, notice), label)
        after[label] = notice
        if notice is not None:
            actions.append({"node": label, "lease": notice["lease"], "project": notice["project"], "action": "warned"})
        elif current is not None:
            actions.append(
                {"node": label, "lease": current.get("lease"), "project": current.get("project"), "action": "ended"}
            )
    mod.result["actions"] = actions
    mod.result["deferred"] = deferred
    mod.result["now"] = model.format_time(now)
    mod.set_diff({k: v for k, v in before.items() if v is not None}, {k: v for k, v in after.items() if v is not None})


def _end(mod, writer, esi_client, node, record, now, actions, deferred, after, sleep):
    """Announce the end if nobody did, wait for it and for ESI-Leap to end the lease, then remove the notice."""
    p = mod.params
    ironic = writer.client
    label = model.node_label(node)
    entry = {"node": label, "lease": record["id"], "project": record["project"]}
    if not notices.announces(notices.node_notice(node), record):
        notice = notices.make_notice(record, now)
        writer.patch_node(node["uuid"], notices.notice_patch(node, notice), label)
        after[label] = notice
        actions.append(dict(entry, action="warned"))
    if writer.check_mode:
        # nothing to wait for: no write of this run reaches ESI-Leap or Ironic
        deferred.append(
            {"node": label, "reason": "check mode: ESI-Leap ends lease %s at %s" % (record["id"], record["end"])}
        )
        return
    left = notices.seconds_left(record, model.utcnow())
    if left > 0:
        sleep(left)
    timeout = p["wait_timeout"] if p["wait"] else 0

    def over(current):
        return (
            current is None
            or keeper.node_lease_uuid(current) != record["id"]
            or current.get("lessee") != record["project"]
        )

    try:
        current = ironic.poll(
            lambda: _read(ironic, node["uuid"]),
            over,
            timeout,
            "node %s" % label,
            describe=lambda current: (
                "ESI-Leap has not ended lease %s yet (its manager ends leases at its periodic tick)" % record["id"]
            ),
            service="ESI-Leap",
        )
    except WaitTimeout as error:
        deferred.append({"node": label, "reason": error.cause})
        return
    if current is not None and not current.get("lessee"):
        # ESI-Leap 1.0.0 leaves those of a node it did not undeploy
        writer.write("detach the VIFs of node %s" % label, ironic.detach_vifs, node["uuid"], label)
    if keeper.left_after_end(node, current, record["project"]):
        # read again with instance_info (not in the poll's reads: it can hold a deployment's whole config drive)
        current = ironic.get_node(node["uuid"], fields=(*KEEPER_NODE_FIELDS, "instance_info"), missing_ok=True)
        left = keeper.left_after_end(node, current, record["project"])
        if left:
            writer.patch_node(node["uuid"], left, label)
            entry["allocation_removed"] = current["instance_uuid"]
    if current is not None and notices.NOTICE_KEY in (current.get("properties") or {}):
        writer.patch_node(node["uuid"], notices.notice_patch(current, None), label)
    mod.changed()
    after[label] = None
    actions.append(dict(entry, action="ended"))
