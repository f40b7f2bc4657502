# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Host -> claim on baremetal-operator's dialect: the status ``host_bind`` writes on a BMO HostClaim.  Pure.

The fields and conditions are baremetal-operator's (``bmo_claim_status``), so
that its own controller, taking over, finds nothing to change:

* ``bareMetalHost`` (``{namespace, name}``) and ``Associated``
  (``True``/``BareMetalHostAssociated``) while bound; no ``bareMetalHost`` and
  ``Associated`` ``False``/``NoBareMetalHost`` with baremetal-operator's own
  message while no host is available (``InvalidSpec`` and the like for a claim
  this binder cannot serve, with the binder's message);
* ``Synchronized`` (where upstream's update step is a stub): ``True``/
  ``ConfigurationSynced`` once image, power and data Secrets are on the host,
  ``False`` with upstream's ``<Field>SecretSyncFailure`` when a data Secret is
  missing (``InvalidSpec`` for a spec the binder refuses);
* ``Provisioned``: ``True`` when the host is provisioned and powered as asked,
  else ``False`` with the reason of the proposal's ``Ready`` (``Provisioning``,
  ``Deprovisioning``, ``HostError``...; never a BMC message);
* ``Ready``: cluster-api's summary of the three, as baremetal-operator computes it;
* ``poweredOn``: the host's power; ``lastUpdated``: when the binder's status last changed.

The status has no room for addresses: they go in the claim annotation
``hostclaim.metal3.io/host-status`` (:func:`host_status_annotation`), BMC data
left out as on the proposal's status.
"""

from __future__ import annotations

import copy
import datetime
import functools
import json
from collections.abc import Sequence

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import get_path
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import bmo_controller as bmo
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.upward import (
    desired_online,
    entry_match,
    finish_status,
    host_addresses,
    host_nics,
    ready_state,
)

SYNCED_REASON = "ConfigurationSynced"
#: upstream's Synchronized reasons for a data Secret that cannot be synced, per spec field
SECRET_SYNC_REASONS = {
    "userData": "UserDataSecretSyncFailure",
    "networkData": "NetworkDataSecretSyncFailure",
    "metaData": "MetaDataSecretSyncFailure",
}
#: the binder's pending reasons that baremetal-operator says as "no available host"
NO_HOST_REASONS = ("NoSharedHost", "NoMatchingHost", "NoAvailableHost")


@functools.lru_cache(maxsize=4)
def _now(now: str) -> datetime.datetime:
    """``now`` parsed (a pass has one ``now``: parsed once, not at each of a status's conditions)."""
    return datetime.datetime.strptime(now, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)


def _parts(claim):
    status = copy.deepcopy(claim.get("status") or {})
    status.pop("observedGeneration", None)
    return status, status.get("conditions") or [], get_path(claim, "metadata", "generation")


def _set(conditions, ctype, state, reason, message, now, generation):
    condition = {"type": ctype, "status": state, "reason": reason, "message": message}
    return bmo.set_condition(conditions, condition, _now(now), generation)


def _finish(status, conditions, existing, now, generation, force):
    conditions = bmo.set_condition(conditions, bmo.summary_ready(conditions), _now(now), generation)
    status["conditions"] = conditions
    status.pop("lastUpdated", None)
    status = finish_status(status, existing, now)
    if force:
        status["lastUpdated"] = now
    return status


def bound_status(
    claim: dict,
    host: dict,
    now: str,
    sync_problem: tuple[str, str] | None = None,
    force: bool = False,
) -> dict:
    """The status of a claim bound to ``host``: ``sync_problem`` is ``(reason, message)`` when the claim could
    not be applied to the host (``Synchronized`` ``False``); ``force`` moves ``lastUpdated`` (a take-over)."""
    status, conditions, generation = _parts(claim)
    existing = claim.get("status")
    meta = host.get("metadata") or {}
    status["bareMetalHost"] = {"namespace": meta.get("namespace"), "name": meta.get("name")}
    conditions = _set(conditions, bmo.ASSOCIATED, "True", bmo.ASSOCIATED_REASON, "", now, generation)
    if sync_problem:
        conditions = _set(conditions, bmo.SYNCHRONIZED, "False", sync_problem[0], sync_problem[1], now, generation)
    else:
        conditions = _set(conditions, bmo.SYNCHRONIZED, "True", SYNCED_REASON, "", now, generation)
    ready = ready_state(host, desired_online(host, claim))
    conditions = _set(conditions, bmo.PROVISIONED, ready[0], ready[1], ready[2], now, generation)
    powered = get_path(host, "status", "poweredOn")
    if isinstance(powered, bool):
        status["poweredOn"] = powered
    else:
        status.pop("poweredOn", None)
    return _finish(status, conditions, existing, now, generation, force)


def unbound_status(claim: dict, reason: str, message: str, now: str, force: bool = False) -> dict:
    """The status of a claim with no host: baremetal-operator's "no available host" for the binder's
    ``NoSharedHost``/``NoMatchingHost``/``NoAvailableHost`` (its wording: a tenant learns nothing about hosts
    not shared with it), else ``reason``/``message``. ``Synchronized`` and ``Provisioned`` are dropped."""
    status, conditions, generation = _parts(claim)
    existing = claim.get("status")
    if reason in NO_HOST_REASONS:
        reason, message = bmo.NO_HOST_REASON, bmo.NO_HOST_MESSAGE
    conditions = [c for c in conditions if c.get("type") not in (bmo.SYNCHRONIZED, bmo.PROVISIONED)]
    conditions = _set(conditions, bmo.ASSOCIATED, "False", reason, message, now, generation)
    status.pop("bareMetalHost", None)
    status.pop("poweredOn", None)
    return _finish(status, conditions, existing, now, generation, force)


def deleted_status(claim: dict, now: str) -> dict:
    """The status of a deleted claim once its host is let go (``bmo_claim_status.deleting_status``)."""
    return bmo.deleting_status(claim, _now(now))["status"]


def host_status_annotation(host: dict, bmc_values: Sequence = ()) -> str | None:
    """The claim annotation ``hostclaim.metal3.io/host-status`` for the bound ``host`` (``None``: nothing to say)."""
    value = {
        "addresses": [entry for entry in host_addresses(host) if not entry_match(entry, bmc_values)],
        "nics": [entry for entry in host_nics(host) if not entry_match(entry, bmc_values)],
    }
    value["bootMACAddress"] = get_path(host, "spec", "bootMACAddress")
    value = dict((key, item) for key, item in value.items() if item)
    return json.dumps(value, sort_keys=True, separators=(",", ":")) if value else None
