# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""How every reader of a HostClaim (``host_claim_info``, ``host_release``, the
inventory) learns the host it is bound to.  Pure.

The binder's record in the claim's status decides; the binding label, which
a tenant can edit, must agree with it or the claim has no host (fail closed).
"""

import hashlib

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
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import BINDING_LABEL

#: AssociateBMH message prefix of a bound claim: the binder's record of the host (see ``bound_host``)
BOUND_PREFIX = "bound to host "


def _short_hash(text, length):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def binding_label_value(host_name):
    """The binding label value for a BMH name (a hash when the name is not a valid label value)."""
    if not label_value_problem(host_name) and host_name:
        return host_name
    return "sha256-" + _short_hash(str(host_name), 56)


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
    back (fail closed).
    """
    name = recorded_host(claim)
    if name is None:
        return None
    labels = get_path(claim, "metadata", "labels")
    label = labels.get(BINDING_LABEL) if isinstance(labels, dict) else None
    return name if label == binding_label_value(name) else None


EXPORT_ANNOTATION_DOMAINS = ("export.hostclaim.metal3.io",)


def _domain(key):
    prefix, sep, _dummy = key.rpartition("/")
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


def metal3_record(claim):
    """The record of a HostClaim dict, or ``None`` while it is not bound to a host."""
    claim = as_dict(claim)
    meta, spec, status = as_dict(claim.get("metadata")), as_dict(claim.get("spec")), as_dict(claim.get("status"))
    conditions = normalise_conditions(status.get("conditions"))
    host = bound_host(claim)
    if condition_status(conditions, ASSOCIATED) != "True" or not as_str(meta.get("name")) or not as_str(host):
        return None
    labels = str_map(meta.get("labels"))
    image = pick(spec.get("image"), IMAGE_FIELDS)
    return {
        "backend": "metal3",
        "name": meta["name"],
        "namespace": as_str(meta.get("namespace")),
        "uid": as_str(meta.get("uid")),
        "host": host,
        "online": spec.get("online") is True,
        "powered_on": as_bool(status.get("poweredOn")),
        "associated": True,
        "ready": condition_status(conditions, READY) == "True",
        "conditions": conditions,
        "labels": labels,
        "annotations": exported_annotations(meta.get("annotations")),
        "image": image or None,
        "addresses": normalise_addresses(status.get("addresses")),
        "nics": _metal3_nics(status.get("nics")),
        "boot_mac_address": as_str(status.get("bootMACAddress")),
    }
