# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Which claim namespaces may bind the hosts of a namespace, by baremetal-operator's ``HostDeployPolicy``.  Pure.

baremetal-operator v0.14 keeps the owner's sharing policy in ``HostDeployPolicy``
objects (``metal3.io/v1alpha1``) in the hosts' namespace, not on the hosts.
Its HostClaim controller decides as follows, and so does :func:`evaluate_namespace`:

* The policies of one host namespace are alternatives: one that admits the
  claim's namespace is enough. A namespace without policies admits nobody.
* A policy without ``spec.hostClaimNamespaces`` admits nobody.
* Inside one policy every constraint that is present must hold:
  ``names`` (a list; present, even empty, it must contain the namespace),
  ``nameMatches`` (a pattern) and every ``hasLabels`` entry (the namespace
  carries label ``name``, and when ``value`` is not empty, with that value).
* ``nameMatches``: baremetal-operator calls Go's ``regexp.MatchString``, an
  unanchored search, so ``prod`` admits ``not-prod`` and ``reproduce``. Here
  it must match the WHOLE name unless ``unanchored`` is asked for; a decision
  that differs between the two says so in its reason (:data:`ANCHORING_NOTE`).
  Either way the pattern is RE2 (Go's syntax) evaluated with google-re2.
* A policy that is invalid (a bad pattern, a malformed entry) admits nobody and
  the reason names it; the other policies of the namespace still count.
  baremetal-operator instead stops choosing a host for the claim.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.selectors import (
    label_key_problem,
    label_value_problem,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import DEPLOY_POLICIES
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share.sharing_policy import (
    Decision,
    compile_pattern,
    shown,
)

KIND = "HostDeployPolicy"
PLURAL = DEPLOY_POLICIES
CONSTRAINT_KEYS = ("names", "nameMatches", "hasLabels")
#: said in a reason when upstream's unanchored search would have decided otherwise
ANCHORING_NOTE = "baremetal-operator's own controller searches nameMatches unanchored and would admit it"


def _policy_name(policy: Mapping[str, Any]) -> str:
    meta = policy.get("metadata") or {}
    return "%s %s/%s" % (KIND, meta.get("namespace"), meta.get("name"))


def constraint_problems(constraints: Any) -> list[str]:
    """What is wrong with a ``spec.hostClaimNamespaces`` (``[]``: nothing; ``None`` is valid and admits nobody)."""
    if constraints is None:
        return []
    if not isinstance(constraints, Mapping):
        return ["hostClaimNamespaces must be a mapping"]
    problems = []
    unknown = sorted(set(constraints) - set(CONSTRAINT_KEYS), key=str)
    if unknown:
        problems.append("hostClaimNamespaces has unknown field(s) %s" % ", ".join(repr(k) for k in unknown))
    names = constraints.get("names")
    if names is not None and (not isinstance(names, list) or not all(isinstance(n, str) for n in names)):
        problems.append("names must be a list of namespace names")
    pattern = constraints.get("nameMatches")
    if pattern not in (None, ""):
        if not isinstance(pattern, str):
            problems.append("nameMatches must be a string")
        else:
            error = compile_pattern(pattern)[1]
            if error:
                problems.append("nameMatches %s is not a valid RE2 pattern: %s" % (shown(pattern), error))
    labels = constraints.get("hasLabels")
    if labels is not None:
        if not isinstance(labels, list):
            problems.append("hasLabels must be a list of {name, value}")
        else:
            for index, pair in enumerate(labels):
                problem = _pair_problem(pair)
                if problem:
                    problems.append("hasLabels[%d]: %s" % (index, problem))
    return problems


def _pair_problem(pair):
    if not isinstance(pair, Mapping) or set(pair) - {"name", "value"}:
        return "must be a mapping with name and an optional value"
    problem = label_key_problem(pair.get("name"))
    if problem:
        return problem
    value = pair.get("value")
    if value not in (None, ""):
        return label_value_problem(value)
    return None


def _search(pattern: str, namespace: str, anchored: bool) -> bool:
    compiled = compile_pattern(pattern)[0]
    return (compiled.fullmatch(namespace) if anchored else compiled.search(namespace)) is not None


def _labels_hold(pairs, labels):
    for pair in pairs or []:
        name, value = pair["name"], pair.get("value")
        if name not in labels:
            return "namespace carries no label %s" % name
        if value not in (None, "") and labels[name] != value:
            return "namespace label %s is %r, not %r" % (name, labels[name], value)
    return None


def evaluate_policy(
    policy: Mapping[str, Any], namespace: str, ns_labels: Mapping[str, str] | None, unanchored: bool = False
) -> Decision:
    """Whether one HostDeployPolicy admits claims of ``namespace`` (labels ``ns_labels``); never raises."""
    who = _policy_name(policy)
    constraints = (policy.get("spec") or {}).get("hostClaimNamespaces")
    if constraints is None:
        return Decision(False, "%s has no hostClaimNamespaces, so it admits no namespace" % who)
    problems = constraint_problems(constraints)
    if problems:
        return Decision(False, "%s is invalid and admits no namespace: %s" % (who, "; ".join(problems)))
    names = constraints.get("names")
    if names is not None and namespace not in names:
        return Decision(False, "%s: namespace %r is not in names" % (who, namespace))
    labels_problem = _labels_hold(constraints.get("hasLabels"), ns_labels or {})
    if labels_problem:
        return Decision(False, "%s: %s" % (who, labels_problem))
    pattern = constraints.get("nameMatches")
    if pattern and not _search(pattern, namespace, anchored=not unanchored):
        if unanchored:
            return Decision(False, "%s: namespace %r contains no match of %s" % (who, namespace, shown(pattern)))
        note = " (%s)" % ANCHORING_NOTE if _search(pattern, namespace, anchored=False) else ""
        return Decision(
            False, "%s: namespace %r does not match the whole pattern %s%s" % (who, namespace, shown(pattern), note)
        )
    return Decision(True, "%s admits namespace %r" % (who, namespace))


def evaluate_namespace(
    policies: Iterable[Mapping[str, Any]],
    host_namespace: str,
    namespace: str,
    ns_labels: Mapping[str, str] | None,
    unanchored: bool = False,
) -> Decision:
    """Whether the HostDeployPolicies of ``host_namespace`` (others in ``policies`` are ignored) let claims of
    ``namespace`` bind its hosts: the first policy that admits, else every refusal."""
    own = [p for p in policies if (p.get("metadata") or {}).get("namespace") == host_namespace]
    if not own:
        return Decision(False, "namespace %s has no %s, so its hosts are shared with nobody" % (host_namespace, KIND))
    refusals = []
    for policy in sorted(own, key=lambda p: str((p.get("metadata") or {}).get("name"))):
        decision = evaluate_policy(policy, namespace, ns_labels, unanchored)
        if decision.allowed:
            return decision
        refusals.append(decision.reason)
    return Decision(False, "; ".join(refusals))


def admitting_namespaces(
    policies: Iterable[Mapping[str, Any]],
    namespace: str,
    ns_labels: Mapping[str, str] | None,
    unanchored: bool = False,
    in_namespace: str | None = None,
) -> dict[str, Decision]:
    """Per host namespace that has policies (only ``in_namespace`` when given), its decision for ``namespace``."""
    policies = list(policies)
    host_namespaces = sorted({str((p.get("metadata") or {}).get("namespace")) for p in policies})
    if in_namespace:
        host_namespaces = [in_namespace]
    return dict(
        (host_ns, evaluate_namespace(policies, host_ns, namespace, ns_labels, unanchored))
        for host_ns in host_namespaces
    )


def policies_from_sharing(name: str, host_namespace: str, sharing: Mapping[str, Any] | None) -> list[dict]:
    """The HostDeployPolicies that share ``host_namespace``'s hosts as the collection's sharing policy
    (``{"matches": pattern, "withLabel": [entries]}``, see :mod:`sharing_policy`) does:

    * ``matches`` becomes an anchored ``nameMatches`` (:func:`anchor`), so that baremetal-operator's
      unanchored search and host_bind's full match admit the same namespaces;
    * ``withLabel`` admits a namespace carrying ONE of its labels, ``hasLabels`` wants ALL of them:
      one policy per entry (policies are alternatives), named ``<name>-<index>``;
    * no policy at all for ``None`` or a policy that sets neither (shared with nobody).
    """
    sharing = sharing or {}
    base: dict = {}
    if sharing.get("matches"):
        base["nameMatches"] = anchor(sharing["matches"])
    entries = sharing.get("withLabel") or []
    if not base and not entries:
        return []
    if not entries:
        return [_policy(name, host_namespace, base)]
    out = []
    for index, entry in enumerate(entries):
        key, sep, value = entry.partition("=")
        pair = {"name": key, "value": value} if sep else {"name": key}
        out.append(_policy("%s-%d" % (name, index), host_namespace, dict(base, hasLabels=[pair])))
    return out


def _policy(name, host_namespace, constraints):
    return {
        "apiVersion": "metal3.io/v1alpha1",
        "kind": KIND,
        "metadata": {"name": name, "namespace": host_namespace},
        "spec": {"hostClaimNamespaces": constraints},
    }


def anchor(pattern: str) -> str:
    """A pattern that BMO's unanchored search and a full match read alike: ``^(?:pattern)$``."""
    return "^(?:%s)$" % pattern
