# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Who a claim is and which host points at it, pure.

A claim's identity (namespace, name, uid), the ``consumerRef`` the binder
writes on a BareMetalHost (the authority on a binding), the claim's
validation, and the binder's marks on the claim: its finalizer and the
binding label ``hostclaim.metal3.io/host``.  The label is only an
indication: readers take the bound host from ``claim_view.bound_host`` (what
the binder recorded in the status, which tenants cannot write), never from
the label alone.
"""

from __future__ import annotations

from typing import NamedTuple

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import Conflict
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import (
    get_path,
    with_precondition,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import (
    API_VERSION,
    BINDING_LABEL,
    CLAIM_KIND,
    FINALIZER,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.bmo_controller import (
    FINALIZER as BMO_FINALIZER,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.dialect import (
    BMO,
    PROPOSAL,
    normalise_spec,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.view import (
    binding_label_value,
)


def object_name(obj: dict, kind: str) -> str:
    """``Kind namespace/name`` for messages."""
    meta = (obj or {}).get("metadata") or {}
    if meta.get("namespace"):
        return "%s %s/%s" % (kind, meta.get("namespace"), meta.get("name"))
    return "%s %s" % (kind, meta.get("name"))


class ClaimIdentity(NamedTuple):
    """Who a claim is: its namespace, name and uid (``None`` when unknown)."""

    namespace: str | None
    name: str | None
    uid: str | None


def claim_identity(claim: dict | None) -> ClaimIdentity:
    """``(namespace, name, uid)`` of a claim dict."""
    meta = (claim or {}).get("metadata") or {}
    return ClaimIdentity(meta.get("namespace"), meta.get("name"), meta.get("uid"))


def consumer_ref_for(claim: dict) -> dict:
    """The BMH ``spec.consumerRef`` naming ``claim`` (uid included when known)."""
    namespace, name, uid = claim_identity(claim)
    ref = {"apiVersion": API_VERSION, "kind": CLAIM_KIND, "namespace": namespace, "name": name}
    if uid:
        ref["uid"] = uid
    return ref


def claim_ref_matches(host: dict, claim: dict) -> bool:
    """True if the BMH ``consumerRef`` points at this claim (uid compared when both have one)."""
    ref = get_path(host, "spec", "consumerRef")
    if not isinstance(ref, dict) or not ref:
        return False
    namespace, name, uid = claim_identity(claim)
    if (ref.get("apiVersion"), ref.get("kind")) != (API_VERSION, CLAIM_KIND):
        return False
    if (ref.get("namespace"), ref.get("name")) != (namespace, name) or not name:
        return False
    return not (ref.get("uid") and uid and ref.get("uid") != uid)


def require_bound(host: dict, claim: dict) -> None:
    if not claim_ref_matches(host, claim):
        raise Conflict(
            object_name(host, "BareMetalHost"), "consumerRef does not point at %s" % object_name(claim, "HostClaim")
        )


def claim_dialect_of(claim: dict | None) -> str:
    """The dialect of a HostClaim dict, by its shape: ``bmo`` when ``spec.poweredOn`` is present.

    baremetal-operator's CRD requires ``poweredOn``; the proposal's CRD has no such
    field and its API server prunes it, so a claim read from a cluster is never ambiguous.
    """
    spec = (claim or {}).get("spec")
    return BMO if isinstance(spec, dict) and "poweredOn" in spec else PROPOSAL


def validate_claim(claim: dict) -> dict:
    """The normalised spec of a HostClaim dict of either dialect (``claim_dialect.normalise_spec``)."""
    namespace, name = claim_identity(claim)[:2]
    return normalise_spec(claim_dialect_of(claim), (claim or {}).get("spec"), name, namespace)


def claim_finalizer(claim: dict | None) -> str:
    """The finalizer the binder keeps on a claim: baremetal-operator's own on its dialect, else the binder's."""
    return BMO_FINALIZER if claim_dialect_of(claim) == BMO else FINALIZER


def finalizer_patch(obj: dict, present: bool, finalizer: str | None = None) -> dict:
    """Merge patch adding (``present``) or removing ``finalizer`` (by default the claim's, ``claim_finalizer``) on
    ``obj``, with a resourceVersion precondition; ``{}`` when there is nothing to change."""
    finalizer = finalizer or claim_finalizer(obj)
    finalizers = list(get_path(obj, "metadata", "finalizers") or [])
    if (finalizer in finalizers) == bool(present):
        return {}
    if present:
        finalizers.append(finalizer)
    else:
        finalizers = [item for item in finalizers if item != finalizer]
    return with_precondition({"metadata": {"finalizers": finalizers}}, obj)


def binding_label_fix(claim: dict, bound_host_name: str | None) -> dict:
    """Claim merge patch making the binding label agree with ``consumerRef`` (``{}`` if it already does).

    ``bound_host_name`` is the name of the BMH whose ``consumerRef`` points at
    the claim, or ``None``: then any binding label is erased.
    """
    labels = get_path(claim, "metadata", "labels") or {}
    wanted = None if bound_host_name is None else binding_label_value(bound_host_name)
    if labels.get(BINDING_LABEL) == wanted and (wanted is not None or BINDING_LABEL not in labels):
        return {}
    return {"metadata": {"labels": {BINDING_LABEL: wanted}}}
