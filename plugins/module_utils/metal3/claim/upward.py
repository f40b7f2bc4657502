# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Host -> claim: the claim's status computed from its BareMetalHost, pure.

``status`` carries addresses, bootMACAddress, NICs, power and the
``AssociateBMH`` / ``Ready`` conditions (readiness: provisioned and powered as
the claim asks); never ``errorMessage``, which can quote the BMC, nor an
address or NIC entry that repeats the host's BMC data (``bmc_data.bmc_match``,
reported by ``hardware_withheld``).  Also the status of a claim that waits
for a host (``pending_status``), the merge patch of a status, and
``merge_patches`` (several merge patches as one).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import (
    combine_patches,
    get_path,
    same_json,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import (
    PAUSED_ANNOTATION,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.bmc_data import bmc_match
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.identity import require_bound
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.view import (
    BOUND_PREFIX,
)

HOST_STATES = (
    "",
    "unmanaged",
    "registering",
    "match profile",
    "preparing",
    "ready",
    "available",
    "provisioning",
    "provisioned",
    "externally provisioned",
    "deprovisioning",
    "inspecting",
    "deleting",
    "powering off before delete",
    "detached",
    "servicing",
)


HOST_ERROR_TYPES = (
    "provisioned registration error",
    "registration error",
    "inspection error",
    "preparation error",
    "provisioning error",
    "power management error",
    "detach error",
    "servicing error",
)


def status_condition(ctype, status, reason, message, existing, now):
    """One condition of a claim's status; its ``lastTransitionTime`` kept from ``existing`` when its status is the same."""
    previous = [c for c in existing or [] if isinstance(c, dict) and c.get("type") == ctype]
    since = now
    if previous and previous[0].get("status") == status and previous[0].get("lastTransitionTime"):
        since = previous[0]["lastTransitionTime"]
    return {"type": ctype, "status": status, "reason": reason, "message": message, "lastTransitionTime": since}


def host_addresses(host):
    addresses = []
    for nic in get_path(host, "status", "hardware", "nics") or []:
        if isinstance(nic, dict) and nic.get("ip"):
            addresses.append({"type": "InternalIP", "address": nic["ip"]})
    hostname = get_path(host, "status", "hardware", "hostname")
    if hostname:
        addresses.append({"type": "Hostname", "address": hostname})
        addresses.append({"type": "InternalDNS", "address": hostname})
    unique = []
    for address in addresses:
        if address not in unique:
            unique.append(address)
    return unique


def host_nics(host):
    nics = []
    for nic in get_path(host, "status", "hardware", "nics") or []:
        if not isinstance(nic, dict):
            continue
        entry = {"name": nic.get("name"), "MAC": nic.get("mac"), "ip": nic.get("ip") or None}
        nics.append(dict((k, v) for k, v in entry.items() if v))
    return nics


def desired_online(host, claim):
    if claim is not None:
        spec = claim.get("spec") or {}
        online = spec.get("poweredOn") if "poweredOn" in spec else spec.get("online")
    else:
        online = get_path(host, "spec", "online")
    return online is True


def _power_word(on):
    return "on" if on else "off"


def _provisioned_ready(host, online):
    powered = get_path(host, "status", "poweredOn") is True
    if powered == online:
        return "True", "Provisioned", "the host is provisioned and powered %s" % _power_word(online)
    return "False", "PowerChanging", "waiting for the host to power %s" % _power_word(online)


def ready_state(host, online):
    """``(status, reason, message)`` of the Ready condition; never quotes errorMessage."""
    state = get_path(host, "status", "provisioning", "state")
    error_type = get_path(host, "status", "errorType")
    if get_path(host, "metadata", "deletionTimestamp"):
        return "False", "HostDeleting", "the host is being deleted"
    if PAUSED_ANNOTATION in (get_path(host, "metadata", "annotations") or {}):
        return "False", "HostPaused", "the host is paused by its administrator"
    if error_type or get_path(host, "status", "errorMessage"):
        kind = error_type if error_type in HOST_ERROR_TYPES else "error"
        return "False", "HostError", "the host reports a %s; ask the infrastructure administrator" % kind
    if state == "provisioned":
        return _provisioned_ready(host, online)
    if state == "provisioning":
        return "False", "Provisioning", "the image is being written"
    if state == "deprovisioning":
        return "False", "Deprovisioning", "the host is being cleaned"
    if state in ("available", "ready"):
        return "False", "NotProvisioned", "no image is provisioned; set spec.image"
    shown = state if state in HOST_STATES and state else "unknown"
    return "False", "HostNotReady", "the host is in state %r" % shown


def finish_status(status, existing_status, now):
    """``status`` with ``lastUpdated``: kept when nothing else changed from ``existing_status``, else ``now``."""
    previous = dict(existing_status or {})
    previous_updated = previous.pop("lastUpdated", None)
    status["lastUpdated"] = previous_updated if previous_updated and same_json(previous, status) else now
    return status


def hardware_withheld(host: dict, bmc_values: Sequence) -> list[dict]:
    """``[{kind: status, key, reason}]``: the hardware addresses and NICs ``upward_status`` leaves out for ``bmc_values``."""
    withheld = []
    for key, entries in (("addresses", host_addresses(host)), ("nics", host_nics(host))):
        reasons = [entry_match(entry, bmc_values) for entry in entries]
        for what in sorted(set(reason for reason in reasons if reason)):
            withheld.append({"kind": "status", "key": key, "reason": "an entry repeats the %s" % what})
    return withheld


def entry_match(entry, bmc_values):
    for value in entry.values():
        what = bmc_match(value, bmc_values)
        if what:
            return what
    return None


def upward_status(host, existing_status, now, claim=None, bmc_values=()):
    """The claim status for its bound BMH (``host``), or an unbound status when ``host`` is ``None``.

    An address or NIC entry that repeats one of ``bmc_values`` (``bmc_needles``:
    a BMC reachable on a host NIC, a host name carrying the BMC user) is left
    out (``hardware_withheld`` says which).

    ``now`` is an RFC 3339 string.  ``lastUpdated`` and each
    ``lastTransitionTime`` only move when something changed.  Desired power is
    the claim's ``spec.online`` when ``claim`` is given, else the BMH's.
    With ``claim``, raises ``Conflict`` unless the BMH ``consumerRef`` points
    at it (pass the claim: a tenant can forge the binding label).
    """
    if host is None:
        return pending_status(existing_status, "NotBound", "the claim is not bound to a host", now)
    if claim is not None:
        require_bound(host, claim)
    existing = (existing_status or {}).get("conditions") or []
    name = get_path(host, "metadata", "name")
    ready = ready_state(host, desired_online(host, claim))
    status = {
        "addresses": [entry for entry in host_addresses(host) if not entry_match(entry, bmc_values)],
        "nics": [entry for entry in host_nics(host) if not entry_match(entry, bmc_values)],
        "conditions": [
            status_condition("AssociateBMH", "True", "Associated", BOUND_PREFIX + str(name), existing, now),
            status_condition("Ready", ready[0], ready[1], ready[2], existing, now),
        ],
    }
    boot_mac = get_path(host, "spec", "bootMACAddress")
    if boot_mac:
        status["bootMACAddress"] = boot_mac
    powered_on = get_path(host, "status", "poweredOn")
    if isinstance(powered_on, bool):
        status["poweredOn"] = powered_on
    return finish_status(status, existing_status, now)


def ready_problem(status: dict, existing_status: dict | None, reason: str, message: str, now: str) -> dict:
    """``status`` with its Ready condition replaced by ``False``/``reason``/``message`` (a problem the tenant can fix).

    Used when the binder cannot apply the claim (for example a data Secret the
    claim names does not exist); ``message`` must only name the tenant's own
    objects.  Transition time and ``lastUpdated`` follow the usual rules.
    """
    existing = (existing_status or {}).get("conditions") or []
    result = copy.deepcopy(status)
    result.pop("lastUpdated", None)
    result["conditions"] = [c for c in result.get("conditions") or [] if c.get("type") != "Ready"]
    result["conditions"].append(status_condition("Ready", "False", reason, message, existing, now))
    return finish_status(result, existing_status, now)


def status_patch(existing_status: dict | None, status: dict) -> dict:
    """Merge patch (``{'status': ...}``) turning ``existing_status`` into ``status``; ``{}`` if they are equal."""
    existing_status = existing_status if isinstance(existing_status, dict) else {}
    if same_json(existing_status, status):
        return {}
    patch = dict((key, None) for key in existing_status if key not in status)
    patch.update(status)
    return {"status": patch}


def merge_patches(*patches) -> dict:
    """One merge patch with the effect of applying ``patches`` in order (``{}``/``None`` are skipped).

    Exact for patches that never delete a mapping (``None``) that a later
    patch sets members of, which is how the binder composes its patches.
    """
    result = {}
    for patch in patches:
        if patch:
            result = combine_patches(result, patch)
    return result


def pending_status(existing_status: dict | None, reason: str, message: str, now: str) -> dict:
    """Status of an unbound claim: no host data, AssociateBMH and Ready False with ``reason``/``message``."""
    existing = (existing_status or {}).get("conditions") or []
    status = {
        "addresses": [],
        "nics": [],
        "conditions": [
            status_condition("AssociateBMH", "False", reason, message, existing, now),
            status_condition("Ready", "False", "NotBound", "the claim is not bound to a host", existing, now),
        ],
    }
    return finish_status(status, existing_status, now)
