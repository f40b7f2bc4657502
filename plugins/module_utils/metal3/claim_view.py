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
