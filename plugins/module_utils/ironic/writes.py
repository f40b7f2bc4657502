# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The Ironic backend's one writer: every write of a module on Ironic, Neutron or ESI-Leap passes through :class:`Writes`.

Check mode is simulated here only.  A runner decides what to change from
what it read and hands each write to its :class:`Writes`:

* a typed method (:meth:`Writes.create_allocation`, :meth:`Writes.deploy`,
  ...) for the writes of a claim;
* :meth:`Writes.write` (:class:`common.writer.Writer`) for one request through any client (an Ironic node
  PATCH, a Neutron POST, an ESI-Leap offer): ``write(what, call, *args,
  predicted=...)``;
* :meth:`Writes.change` for a step that is several requests (and waits) in a
  real run: it says whether to make them.

Each marks the module changed.  In check mode nothing is sent: the write is
recorded in :attr:`Writes.would` (what the run would do, in order) and the
method returns what the service would answer (a new allocation that Ironic
has not filled yet, the node with its new ``instance_info`` or power, the
``predicted`` object), so the runner goes on the same way in both modes and
never tests check mode around a write by hand.  :attr:`Writes.check_mode`
stays readable for what is not a write (a wait, a clock that moves only in a
real run).
"""

from __future__ import annotations

from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.writer import Writer


class Writes(Writer):
    """The writes of one module run on the Ironic backend (:class:`common.writer.Writer`: ``change``, ``write``,
    ``would``, ``check_mode``).

    ``mod``: a TenancyModule (``None``: nobody to mark changed, ``check_mode`` given); ``client``: its Ironic
    (:class:`~.client.Ironic`), for the typed methods."""

    def __init__(self, mod: Any, client: Any = None, check_mode: bool | None = None) -> None:
        super().__init__(mod, check_mode)
        self.client = client

    def patch_node(self, uuid: str, ops: list, label: str | None = None, predicted: Any = None) -> Any:
        """PATCH node ``uuid`` with ``ops``: Ironic's answer (``predicted`` in check mode)."""
        what = "patch node %s" % (label or uuid)
        return self.write(what, self.client.patch_node, uuid, ops, label, predicted=predicted)

    def create_allocation(
        self, name: str, resource_class: str, traits: list | None = None, candidate_nodes: list | None = None
    ) -> dict:
        if self._change("create allocation %s" % name):
            return self.client.create_allocation(name, resource_class, traits=traits, candidate_nodes=candidate_nodes)
        return {
            "name": name,
            "resource_class": resource_class,
            "traits": list(traits or []),
            "state": "allocating",
            "node_uuid": None,
        }

    def delete_allocation(self, uuid: str, label: str) -> None:
        if self._change("delete allocation %s" % label):
            self.client.delete_allocation(uuid, label)

    def deploy(self, node: dict, ops: list, target: str, configdrive: Any, instance_info: dict) -> dict:
        """Write ``instance_info`` (``ops``) and move the node to ``target``;
        returns the node as it would be in check mode (else as given: it is read again)."""
        label = node.get("name") or node["uuid"]
        if self._change("deploy node %s (%s)" % (label, target)):
            self.client.patch_node(node["uuid"], ops, label)
            self.client.set_provision_state(node["uuid"], target, label, configdrive=configdrive)
            return node
        return dict(node, instance_info=dict(instance_info))

    def set_power_state(self, node: dict, target: str) -> dict:
        label = node.get("name") or node["uuid"]
        if self._change("%s node %s" % (target, label)):
            self.client.set_power_state(node["uuid"], target, label)
            return node
        power = target if target in ("power on", "power off") else "power on"
        return dict(node, power_state=power)

    def undeploy(self, node: dict) -> None:
        """Undeploy (Ironic cleans the node and removes its allocation)."""
        label = node.get("name") or node["uuid"]
        if self._change("undeploy node %s" % label):
            self.client.set_provision_state(node["uuid"], "deleted", label)

    def clear_instance(self, node: dict) -> None:
        """Remove the whole ``instance_info`` and the ``instance_name`` of an undeployed node."""
        label = node.get("name") or node["uuid"]
        if self._change("clear instance_info and instance_name of node %s" % label):
            if node.get("instance_info"):
                self.client.patch_node(node["uuid"], [{"op": "remove", "path": "/instance_info"}], label)
            self.client.clear_instance_name(node["uuid"], label)
