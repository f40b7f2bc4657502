# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The owner's sharing of a namespace's hosts on either HostClaim dialect (``host_share``).  Pure.

* Which dialect the sharing speaks (:func:`sharing_dialect`): the proposal's
  (the host annotation ``baremetal.tenancy/host-claim-namespaces``, per host)
  or baremetal-operator's (``HostDeployPolicy`` objects in the hosts'
  namespace, per namespace). A cluster without any HostClaim API is the
  proposal's (an annotation needs no CRD; hosts can be shared before claims).
* On baremetal-operator's dialect a per-host ``share`` cannot be said: BMO
  shares all the hosts of a namespace by its policies
  (:func:`per_host_share_refusal`).
* The namespace's sharing (``namespace_share``, the vocabulary of a host's
  ``share``) becomes the policies of :func:`deploy_policy.policies_from_sharing`
  (``nameMatches`` anchored, one policy per ``withLabel`` entry), named
  ``baremetal-tenancy-sharing[-<n>]`` and labelled as the collection's
  (:data:`MANAGED_BY`). :func:`plan_policies` compares them with the
  namespace's policies: it creates, updates and deletes only policies that
  carry the label, and refuses to take over a policy of the wanted name that
  does not (an owner's hand-written policy is never touched).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import dialect as claim_dialect
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share.deploy_policy import (
    KIND,
    policies_from_sharing,
)

MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGER = "baremetal.tenancy"
#: the base name of the policies the collection writes (``<name>`` or ``<name>-<index>``)
POLICY_NAME = "baremetal-tenancy-sharing"


def sharing_dialect(requested: str, document: Mapping[str, Any] | None) -> str:
    """The dialect of the owner's sharing, from the OpenAPI document of metal3.io/v1alpha1 (``None``: not served).

    No HostClaim API at all is the proposal's unless ``bmo`` is forced (which then fails, as
    :func:`claim_dialect.resolve_dialect` says)."""
    fields = claim_dialect.openapi_spec_fields(document)
    if fields is None and requested in (claim_dialect.AUTO, claim_dialect.PROPOSAL):
        return claim_dialect.PROPOSAL
    return claim_dialect.resolve_dialect(requested, claim_dialect.openapi_dialect(document), fields)


def per_host_share_refusal(entries: Sequence[Mapping[str, Any]], where: str = "hosts") -> InvalidInput | None:
    """The error for entries (as :func:`share_plan.validate_entries` returns them) that set a per-host ``share``
    on baremetal-operator's dialect, naming each; ``None`` when none does."""
    offending = ["%s[%d]" % (where, index) for index, entry in enumerate(entries) if entry.get("share_set")]
    if not offending:
        return None
    return InvalidInput(
        ", ".join(offending),
        "share: the cluster serves baremetal-operator's HostClaim, which shares a namespace's hosts by "
        "%s objects, not host by host; give the namespace's sharing instead (option namespace_share, "
        "host_pool_share in the host_pool role). Nothing was changed." % KIND,
        {"entries": offending},
    )


def is_ours(policy: Mapping[str, Any]) -> bool:
    """Whether a HostDeployPolicy is one the collection wrote (it carries :data:`MANAGED_BY`)."""
    return ((policy.get("metadata") or {}).get("labels") or {}).get(MANAGED_BY) == MANAGER


def wanted_policies(namespace: str, sharing: Mapping[str, Any] | None) -> list[dict]:
    """The policies that share ``namespace``'s hosts as ``sharing`` (``{matches, withLabel}``, ``None``: nobody) says."""
    out = []
    for policy in policies_from_sharing(POLICY_NAME, namespace, sharing):
        policy["metadata"]["labels"] = {MANAGED_BY: MANAGER}
        out.append(policy)
    return out


def _name(policy):
    return (policy.get("metadata") or {}).get("name")


def _constraints(policy):
    return (policy.get("spec") or {}).get("hostClaimNamespaces")


def _replacing_patch(current: Mapping[str, Any], wanted: Mapping[str, Any]) -> dict:
    """A JSON merge patch that makes ``current``'s ``hostClaimNamespaces`` exactly ``wanted``'s."""
    old = _constraints(current) or {}
    new = dict(_constraints(wanted) or {})
    new.update((key, None) for key in old if key not in new)
    return {"spec": {"hostClaimNamespaces": new}}


def plan_policies(existing: Iterable[Mapping[str, Any]], wanted: Sequence[Mapping[str, Any]]) -> dict:
    """What to write so that the collection's policies of a namespace are ``wanted``.

    ``existing``: every HostDeployPolicy of the namespace. Returns ``create`` (bodies), ``update``
    (``(current, merge patch)``), ``delete`` (the collection's policies no longer wanted), ``foreign`` (names
    of wanted policies that exist without the collection's label: refused), ``before`` and ``after``
    (name -> ``hostClaimNamespaces`` of the collection's policies, for the diff).
    """
    existing = list(existing)
    by_name = dict((_name(p), p) for p in existing)
    ours = dict((_name(p), p) for p in existing if is_ours(p))
    wanted_names = set(_name(p) for p in wanted)
    plan: dict = {"create": [], "update": [], "delete": [], "foreign": []}
    for policy in wanted:
        name = _name(policy)
        current = by_name.get(name)
        if current is None:
            plan["create"].append(dict(policy))
        elif not is_ours(current):
            plan["foreign"].append(name)
        elif _constraints(current) != _constraints(policy):
            plan["update"].append((current, _replacing_patch(current, policy)))
    plan["delete"] = [ours[name] for name in sorted(ours) if name not in wanted_names]
    plan["before"] = dict((name, _constraints(p)) for name, p in sorted(ours.items()))
    plan["after"] = dict((_name(p), _constraints(p)) for p in sorted(wanted, key=_name))
    return plan


def plan_changes(plan: Mapping[str, Any]) -> bool:
    """Whether the plan writes anything."""
    return bool(plan["create"] or plan["update"] or plan["delete"])


def foreign_refusal(plan: Mapping[str, Any], namespace: str) -> InvalidInput | None:
    """The error for wanted policy names that an owner's own policies already use."""
    if not plan["foreign"]:
        return None
    return InvalidInput(
        "%s in namespace %s" % (KIND, namespace),
        "%s exist(s) without the label %s=%s, so not written by this collection; it is never changed: "
        "rename or remove it to let the namespace's sharing be written. Nothing was changed."
        % (", ".join(sorted(plan["foreign"])), MANAGED_BY, MANAGER),
        {"policies": sorted(plan["foreign"])},
    )
