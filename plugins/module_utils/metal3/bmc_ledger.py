# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The BMC-account ledger of a BareMetalHost: its BMC credentials (the Secret its spec names) and the annotation ``baremetal.tenancy/bmc-accounts``.

Tenants cannot read BareMetalHosts, and the binder never copies this
annotation into a claim.  Every write carries a resourceVersion precondition;
a conflict re-reads and retries.  Every request goes through the metal3
``KubeIO`` given (so a binder pass counts the ledger's requests with its own).
"""

from __future__ import annotations

import base64

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    Conflict,
    InvalidInput,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import API_VERSION, HOSTS
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.client import KubeIO, api_path
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import account_rules as ba

RETRIES = 5  # resourceVersion conflicts re-read and retried


class Metal3Host:
    """A BareMetalHost: its BMC credentials (Secret) and its account ledger (annotation)."""

    def __init__(self, api_client, namespace: str, name: str):
        """``api_client``: a metal3 :class:`KubeIO` (shared, counted) or a kubernetes ApiClient (wrapped in one)."""
        self.io = api_client if isinstance(api_client, KubeIO) else KubeIO(api_client)
        self.namespace = namespace
        self.name = name
        self.obj = "BareMetalHost %s/%s" % (namespace, name)
        self.bmh = None
        self.loaded = []

    def load(self):
        self.bmh = self.io.request("get", "GET", api_path(API_VERSION, HOSTS, self.namespace, self.name), self.obj)
        self.loaded = ba.ledger_load((self.bmh["metadata"].get("annotations") or {}).get(ba.LEDGER_ANNOTATION))
        return list(self.loaded)

    def bmc(self, password=None):
        """``(address, username, password)`` from the BMH and its credentials Secret (which holds the password:
        ``password``, what an Ironic node needs, is not used)."""
        bmc = (self.bmh.get("spec") or {}).get("bmc") or {}
        if not bmc.get("address") or not bmc.get("credentialsName"):
            raise InvalidInput(self.obj, "has no spec.bmc address or credentialsName")
        secret_obj = "Secret %s/%s" % (self.namespace, bmc["credentialsName"])
        secret = self.io.request(
            "get", "GET", api_path("v1", "secrets", self.namespace, bmc["credentialsName"]), secret_obj
        )
        data = secret.get("data") or {}
        try:
            username = base64.b64decode(data.get("username") or "").decode("utf-8")
            password = base64.b64decode(data.get("password") or "").decode("utf-8")
        except (ValueError, TypeError) as exc:
            raise InvalidInput(secret_obj, "username/password are not base64 text") from exc
        if not username or not password:
            raise InvalidInput(secret_obj, "lacks username or password")
        return bmc["address"], username, password, not bmc.get("disableCertificateVerification", False)

    def save(self, entries):
        """Write the ledger with a resourceVersion precondition; on a conflict,
        re-read it and apply this run's change to what is there now."""
        loaded = self.loaded
        for _attempt in range(RETRIES):
            wanted = ba.ledger_dump(ba.ledger_rebase(self.loaded, loaded, entries))
            current = (self.bmh["metadata"].get("annotations") or {}).get(ba.LEDGER_ANNOTATION)
            if current == wanted:
                return
            patch = {
                "metadata": {
                    "resourceVersion": self.bmh["metadata"]["resourceVersion"],
                    "annotations": {ba.LEDGER_ANNOTATION: wanted},
                }
            }
            try:
                self.bmh = self.io.patch_host(self.namespace, self.name, patch)
                return
            except Conflict:
                self.load()
        raise Conflict(self.obj, "the account ledger kept changing; try again")
