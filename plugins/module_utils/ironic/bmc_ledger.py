# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The BMC-account ledger of an Ironic node: its BMC address (driver_info) and the key ``driver_info["bmt_bmc_accounts"]``.

driver_info is readable and writable only by the owner's and system
readers/members, never by a lessee.  Ironic's PATCH has no precondition, so
the ledger is re-read right before it is written.  Requests go through the
one Ironic client (node locks retried, errors named after the node)."""

from __future__ import annotations

from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.client import Ironic
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import account_rules as ba

MASKED = "******"


class IronicHost:
    """An Ironic node: its BMC address (driver_info) and its account ledger (driver_info key)."""

    def __init__(self, conn: Any, ident: str) -> None:
        self.conn = conn
        self.client = Ironic(conn)
        self.ident = ident
        self.obj = "node %s" % ident
        self.node = None
        self.loaded = []

    def _req(self, method: str, path: str, json: Any = None) -> dict:
        return self.client.request(method, path, self.obj, body=json) or {}

    def load(self) -> list:
        self.node = self._req(
            "get", "/nodes/%s?fields=uuid,name,driver,driver_info,provision_state,lessee,owner" % self.ident
        )
        self.loaded = ba.ledger_load((self.node.get("driver_info") or {}).get(ba.LEDGER_KEY))
        return list(self.loaded)

    def bmc(self, password: str | None = None) -> tuple:
        info = self.node.get("driver_info") or {}
        if self.node.get("driver") not in ("redfish", "idrac"):
            raise InvalidInput(self.obj, "uses driver %s: BMC accounts need a Redfish BMC" % self.node.get("driver"))
        address = info.get("redfish_address")
        if not address:
            raise InvalidInput(self.obj, "has no driver_info.redfish_address")
        username = info.get("redfish_username")
        secret = password or info.get("redfish_password")
        if not secret or secret == MASKED:
            raise InvalidInput(
                self.obj,
                "Ironic masks driver_info.redfish_password: give the BMC password (bmc_password), "
                "or allow the 'show_password' policy for this administrator",
            )
        verify = info.get("redfish_verify_ca", True)
        if isinstance(verify, str):
            verify = verify.lower() not in ("false", "0", "no", "off")
        return address.rstrip("/") + (info.get("redfish_system_id") or ""), username, secret, verify

    def save(self, entries: list) -> None:
        loaded = self.loaded
        self.load()  # the freshest ledger, with this run's change applied to it
        wanted = ba.ledger_dump(ba.ledger_rebase(self.loaded, loaded, entries))
        old = (self.node.get("driver_info") or {}).get(ba.LEDGER_KEY)
        if old == wanted:
            return
        # Ironic's PATCH has no "test" operation: the ledger is re-read just
        # before writing, so only a writer racing within that window can be lost.
        path = "/driver_info/%s" % ba.LEDGER_KEY
        if wanted is None:
            ops = [{"op": "remove", "path": path}]
        else:
            ops = [{"op": "add", "path": path, "value": wanted}]
        self.node = self._req("patch", "/nodes/%s" % self.node["uuid"], json=ops)
