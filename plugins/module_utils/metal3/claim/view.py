# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The one view of a HostClaim: what ``host_claim``, ``host_claim_info``,
``host_release`` and the ``claimed_hosts`` inventory report of it.  Pure.

:func:`claim_record` builds the record (the keys of
:data:`claim_record.RECORD_KEYS` plus the metal3 ones of
:data:`METAL3_KEYS`); the modules return it as it is, the inventory keeps
the bound claims (:func:`metal3_record`) and only presents them (prefix,
``ansible_host``, groups).  The host a claim is bound to comes from one
rule, :func:`bound_host`: the binder's record in the claim's status decides;
on a claim of the proposal's dialect the binding label, which a tenant can
edit, must agree with it or the claim has no host (fail closed).

Both HostClaim dialects are read, each claim by its shape
(:func:`is_bmo_claim`: ``spec.poweredOn``, which baremetal-operator's CRD
requires and the proposal's prunes), into the same record:

* the proposal's: host from the ``AssociateBMH`` condition (``bound to host
  <name>``) and the binding label, power asked in ``spec.online``, addresses,
  NICs and boot MAC in the status;
* baremetal-operator's (v0.14): host from ``status.bareMetalHost`` (tenants
  cannot write the status), power asked in ``spec.poweredOn``, ``Associated``
  and ``Ready`` conditions, the provisioning state from the ``Provisioned``
  condition's reason; addresses, NICs and boot MAC from the binder's
  ``hostclaim.metal3.io/host-status`` annotation, read only while
  ``status.bareMetalHost`` is set (a tenant may write annotations of its own
  claim: it only misleads itself, and never before a host is bound).
"""

from __future__ import annotations

import copy
import hashlib
import json

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.claim_record import (
    ASSOCIATED,
    IMAGE_FIELDS,
    NIC_FIELDS,
    READY,
    as_bool,
    as_dict,
    as_str,
    condition_status,
    normalise_addresses,
    normalise_conditions,
    pick,
    str_map,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import get_path
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.selectors import label_value_problem
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import (
    BINDING_LABEL,
    EXPORT_ANNOTATION_DOMAINS,
)

#: AssociateBMH message prefix of a bound claim: the binder's record of the host (see ``bound_host``)
BOUND_PREFIX = "bound to host "
#: the binder's copy of the bound host's addresses, NICs and boot MAC on a baremetal-operator claim (compact JSON)
HOST_STATUS_ANNOTATION = "hostclaim.metal3.io/host-status"
#: baremetal-operator's condition types (v0.14)
BMO_ASSOCIATED = "Associated"
BMO_PROVISIONED = "Provisioned"


def is_bmo_claim(claim) -> bool:
    """Whether a claim is of baremetal-operator's dialect: its spec has ``poweredOn``.

    baremetal-operator's CRD requires the field and the proposal's prunes it,
    so the shape tells the dialect of every claim an API server returns.
    """
    spec = get_path(claim, "spec")
    return isinstance(spec, dict) and "poweredOn" in spec


def bmo_host_reference(claim):
    """``{namespace, name}`` of ``status.bareMetalHost`` on a baremetal-operator claim, or ``None``."""
    reference = get_path(claim, "status", "bareMetalHost")
    if not isinstance(reference, dict) or not as_str(reference.get("name")):
        return None
    return {"namespace": as_str(reference.get("namespace")), "name": reference["name"]}


def bmo_host_status(claim) -> dict:
    """The binder's ``host-status`` annotation of a bound baremetal-operator claim (``{}``: none, not bound, junk)."""
    if bmo_host_reference(claim) is None:
        return {}
    text = str_map(get_path(claim, "metadata", "annotations")).get(HOST_STATUS_ANNOTATION)
    try:
        value = json.loads(text) if text else None
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def short_hash(text: str, length: int) -> str:
    """The first ``length`` hex digits of the SHA-256 of ``text`` (names and label values that must fit)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def binding_label_value(host_name):
    """The binding label value for a BMH name (a hash when the name is not a valid label value)."""
    if not label_value_problem(host_name) and host_name:
        return host_name
    return "sha256-" + short_hash(str(host_name), 56)


def recorded_host(claim):
    """The host the binder recorded on the claim's status (``AssociateBMH`` True, ``bound to host <name>``), or ``None``.

    Tenants cannot write the status subresource: this is the binder's record,
    written from the BMH ``consumerRef``.
    """
    conditions = get_path(claim, "status", "conditions")
    for condition in conditions if isinstance(conditions, list) else []:
        if isinstance(condition, dict) and condition.get("type") == "AssociateBMH":
            message = condition.get("message")
            if (
                condition.get("status") != "True"
                or not isinstance(message, str)
                or not message.startswith(BOUND_PREFIX)
            ):
                return None
            return message[len(BOUND_PREFIX) :] or None
    return None


def bound_host(claim):
    """The host a claim is bound to, for every reader (``host_claim_info``, ``host_release``, the inventory), or ``None``.

    The binder's record decides (``recorded_host``); the binding label, which
    a tenant can edit, never does: a label that disagrees with the record
    (forged, or removed) means no host until the binder's next pass sets it
    back (fail closed).  On a baremetal-operator claim the record is
    ``status.bareMetalHost`` alone (the label is indicative only there, and
    baremetal-operator's own controller does not write it).
    """
    if is_bmo_claim(claim):
        reference = bmo_host_reference(claim)
        return reference["name"] if reference else None
    name = recorded_host(claim)
    if name is None:
        return None
    labels = get_path(claim, "metadata", "labels")
    label = labels.get(BINDING_LABEL) if isinstance(labels, dict) else None
    return name if label == binding_label_value(name) else None


#: Ready condition reason (the proposal's), Provisioned condition reason (baremetal-operator's) -> the provisioning
#: state a tenant may see
READY_REASON_STATES = {
    "Provisioned": "provisioned",
    "PowerChanging": "provisioned",
    "Provisioning": "provisioning",
    "Deprovisioning": "deprovisioning",
    "NotProvisioned": "available",
    "HostError": "error",
    "HostDeleting": "deleting",
    "HostPaused": "paused",
    "HostNotReady": "not ready",
}

#: the keys only a metal3 record has (beside ``claim_record.RECORD_KEYS``)
METAL3_KEYS = ("uid", "provisioning_state", "node_reuse", "host_selector", "deleting")


def _domain(key):
    prefix, sep, _name = key.rpartition("/")
    return prefix if sep else ""


def exported_annotations(annotations):
    """The annotations of a claim in the export domain (imported from the host by the binder)."""
    result = {}
    for key, value in str_map(annotations).items():
        domain = _domain(key)
        if any(domain == allowed or domain.endswith("." + allowed) for allowed in EXPORT_ANNOTATION_DOMAINS):
            result[key] = value
    return result


def _metal3_nics(value):
    if not isinstance(value, list):
        return []
    nics = [pick(item, NIC_FIELDS) for item in value if isinstance(item, dict)]
    return [nic for nic in nics if nic]


def claim_record(claim: dict) -> dict:
    """The record of any HostClaim (bound or not), of either dialect: the ``claim`` result of the modules, the
    inventory's data.

    ``annotations`` are only those in the export domain (what the
    infrastructure administrator exports from the host, imported by the
    binder): other annotations may hold anything (``last-applied-configuration``
    copies the whole object), and a record must never carry BMC data.
    """
    claim = as_dict(claim)
    meta, spec, status = as_dict(claim.get("metadata")), as_dict(claim.get("spec")), as_dict(claim.get("status"))
    conditions = normalise_conditions(status.get("conditions"))
    ready = next((condition for condition in conditions if condition.get("type") == READY), {})
    if is_bmo_claim(claim):
        associated = condition_status(conditions, BMO_ASSOCIATED) == "True"
        state = next((condition for condition in conditions if condition.get("type") == BMO_PROVISIONED), {})
        online = spec.get("poweredOn") is True
        found = bmo_host_status(claim)
        node_reuse = None
    else:
        associated = condition_status(conditions, ASSOCIATED) == "True"
        state = ready
        online = spec.get("online") is True
        found = status
        node_reuse = as_str(spec.get("nodeReuse"))
    selector = spec.get("hostSelector")
    return {
        "backend": "metal3",
        "name": as_str(meta.get("name")),
        "namespace": as_str(meta.get("namespace")),
        "uid": as_str(meta.get("uid")),
        "host": bound_host(claim),
        "online": online,
        "powered_on": as_bool(status.get("poweredOn")),
        "associated": associated,
        "ready": ready.get("status") == "True",
        "provisioning_state": READY_REASON_STATES.get(state.get("reason")) if associated else None,
        "conditions": conditions,
        "labels": str_map(meta.get("labels")),
        "annotations": exported_annotations(meta.get("annotations")),
        "image": pick(spec.get("image"), IMAGE_FIELDS) or None,
        "addresses": normalise_addresses(found.get("addresses")),
        "nics": _metal3_nics(found.get("nics")),
        "boot_mac_address": as_str(found.get("bootMACAddress")),
        "node_reuse": node_reuse,
        "host_selector": copy.deepcopy(selector) if isinstance(selector, dict) else None,
        "deleting": bool(meta.get("deletionTimestamp")),
    }


def metal3_record(claim: dict) -> dict | None:
    """The record of a HostClaim bound to a host (:func:`bound_host`), or ``None`` (the inventory's hosts)."""
    record = claim_record(claim)
    if not record["associated"] or not record["name"] or not record["host"]:
        return None
    return record
