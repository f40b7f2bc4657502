# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The tenancy model's posture, checked on objects read from a cluster.  Pure: no client library.

Each check takes plain dicts (as the API returns them) and gives a list of
:class:`Deviation`, each naming the object that causes it (kind, namespace,
name) and the cause, so that a scheduled job can report, count and alert on
them.  A check never raises on a malformed object: what it cannot read is a
deviation of that object (fail closed).

The model the checks hold the cluster to (``DESIGN.md``, Flux's multi-tenancy
guidance):

* Flux's kustomize-controller and helm-controller run with
  ``--no-cross-namespace-refs=true`` and ``--default-service-account=<name>``,
  and kustomize-controller with ``--no-remote-bases=true``
  (:data:`LOCKDOWN_FLAGS`); the test harness refuses to start a controller
  whose Deployment fails :func:`flux_controller_deviations`.
* A tenant's Kustomization and HelmRelease name their ServiceAccount and take
  their sources from their own namespace.
* A tenant's GitRepository, HelmRepository and OCIRepository point at a URL
  the owner allowed (:func:`url_allowed`, the rule of ``flux_install``'s
  admission policy).
* A tenant namespace (one carrying the tenant label) has a ResourceQuota, a
  default-deny NetworkPolicy, a Pod Security ``enforce`` level other than
  ``privileged``, and every required admission policy bound to it.
* Every BareMetalHost is covered by a sharing policy (its annotation, or a
  HostDeployPolicy of its namespace), and every HostDeployPolicy's
  ``nameMatches`` is anchored (baremetal-operator searches it unanchored).
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.selectors import matches

#: the checks, in report order; each deviation carries one of these names
CHECKS = (
    "flux_lockdown",
    "tenant_service_account",
    "tenant_cross_namespace_source",
    "tenant_source_url",
    "namespace_quota",
    "namespace_network_policy",
    "namespace_pod_security",
    "namespace_admission_binding",
    "host_sharing",
    "deploy_policy_anchoring",
)

KUSTOMIZE = "kustomize-controller"
HELM = "helm-controller"
SOURCE = "source-controller"
CONTROLLERS = (SOURCE, KUSTOMIZE, HELM)
#: flag -> value it must have (``None``: any non-empty value), per controller
LOCKDOWN_FLAGS = {
    SOURCE: {},
    KUSTOMIZE: {"--no-cross-namespace-refs": "true", "--default-service-account": None, "--no-remote-bases": "true"},
    HELM: {"--no-cross-namespace-refs": "true", "--default-service-account": None},
}
SOURCE_KINDS = ("GitRepository", "HelmRepository", "OCIRepository")
RECONCILER_KINDS = ("Kustomization", "HelmRelease")
POD_SECURITY_ENFORCE = "pod-security.kubernetes.io/enforce"
POD_SECURITY_LEVELS = ("baseline", "restricted")
SHARING_ANNOTATION = "baremetal.tenancy/host-claim-namespaces"

Deviation = namedtuple("Deviation", "check kind namespace name cause")


def object_label(kind: str, namespace: str | None, name: str | None) -> str:
    """``Kind namespace/name`` (``Kind name`` for a cluster-scoped object)."""
    return "%s %s/%s" % (kind, namespace, name) if namespace else "%s %s" % (kind, name)


def as_dict(deviation: Deviation) -> dict:
    """The machine-readable form of one deviation (the module's ``deviations`` entries)."""
    return {
        "check": deviation.check,
        "kind": deviation.kind,
        "namespace": deviation.namespace,
        "name": deviation.name,
        "object": object_label(deviation.kind, deviation.namespace, deviation.name),
        "cause": deviation.cause,
    }


def _meta(obj: Any) -> Mapping:
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    return meta if isinstance(meta, Mapping) else {}


def _spec(obj: Any) -> Mapping:
    spec = obj.get("spec") if isinstance(obj, Mapping) else None
    return spec if isinstance(spec, Mapping) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _where(obj: Any) -> tuple[str | None, str | None]:
    meta = _meta(obj)
    return _text(meta.get("namespace")), _text(meta.get("name"))


def _labels(obj: Any, key: str = "labels") -> Mapping:
    labels = _meta(obj).get(key)
    return labels if isinstance(labels, Mapping) else {}


def _kind(obj: Any, default: str) -> str:
    kind = obj.get("kind") if isinstance(obj, Mapping) else None
    return kind if isinstance(kind, str) and kind else default


# -- Flux controllers ----------------------------------------------------------------------------------------


def parse_flags(args: Any) -> dict[str, str]:
    """``--name=value`` and bare ``--name`` (a boolean: ``"true"``) of a container's args, the last one winning.

    Flux's controllers parse their flags with pflag: a boolean flag is given as
    ``--flag`` or ``--flag=value``; ``--flag value`` does not set a boolean.
    """
    flags: dict[str, str] = {}
    for arg in args if isinstance(args, list) else []:
        if not isinstance(arg, str) or not arg.startswith("--"):
            continue
        name, sep, value = arg.partition("=")
        flags[name] = value if sep else "true"
    return flags


def controller_container(deployment: Mapping, name: str) -> Mapping | None:
    """The Deployment's container named ``name`` (Flux's name), else its only container, else ``None``."""
    pod = _spec(_spec(deployment).get("template"))
    containers = [c for c in pod.get("containers") or [] if isinstance(c, Mapping)]
    for container in containers:
        if container.get("name") in (name, "manager"):
            return container
    return containers[0] if len(containers) == 1 else None


def lockdown_problems(controller: str, args: Any) -> list[str]:
    """What the container ``args`` of ``controller`` lack of its lockdown flags (``[]``: locked down)."""
    flags = parse_flags(args)
    problems = []
    for flag, wanted in LOCKDOWN_FLAGS.get(controller, {}).items():
        value = flags.get(flag)
        if value is None or value == "":
            problems.append("%s is not set" % flag)
        elif wanted is not None and value.lower() != wanted:
            problems.append("%s is %r, not %r" % (flag, value, wanted))
    return problems


def flux_controller_deviations(
    deployments: Iterable[Mapping], namespace: str, controllers: Iterable[str] = (KUSTOMIZE, HELM)
) -> list[Deviation]:
    """Each of ``controllers`` must be a Deployment in ``namespace`` whose container runs with its lockdown flags."""
    found = {}
    for deployment in deployments:
        ns, name = _where(deployment)
        if ns == namespace:
            found[name] = deployment
    out = []
    for controller in controllers:
        deployment = found.get(controller)
        if deployment is None:
            out.append(
                Deviation("flux_lockdown", "Deployment", namespace, controller, "the Flux controller is not installed")
            )
            continue
        container = controller_container(deployment, controller)
        if container is None:
            out.append(Deviation("flux_lockdown", "Deployment", namespace, controller, "no controller container"))
            continue
        for problem in lockdown_problems(controller, container.get("args")):
            out.append(Deviation("flux_lockdown", "Deployment", namespace, controller, problem))
    return out


# -- tenants' Flux objects -----------------------------------------------------------------------------------


def url_allowed(url: Any, allowed: Iterable[str]) -> bool:
    """Whether a source URL is one of ``allowed``: equal to an entry, or under it.

    Under an entry means starting with the entry followed by ``/`` (an entry
    that ends with ``/`` already has it), so ``https://git.example.com/team-a``
    allows ``https://git.example.com/team-a/fleet.git`` but neither
    ``https://git.example.com/team-ab`` nor ``https://git.example.com/team-a.evil.io``.
    ``flux_install``'s admission policy applies the same rule.
    """
    if not isinstance(url, str) or not url:
        return False
    for entry in allowed:
        if not entry:
            continue
        if url == entry or url.startswith(entry if entry.endswith("/") else entry + "/"):
            return True
    return False


def tenant_allowed_urls(namespace: str, allowed: Iterable[str], per_tenant: Mapping[str, Iterable[str]]) -> list[str]:
    return list(allowed) + list((per_tenant or {}).get(namespace) or [])


def _source_refs(kind: str, spec: Mapping) -> list[tuple[str, Any]]:
    """(where, sourceRef) pairs of a Kustomization or HelmRelease spec."""
    if kind == "Kustomization":
        return [("spec.sourceRef", spec.get("sourceRef"))]
    refs = [("spec.chartRef", spec.get("chartRef"))]
    chart = spec.get("chart")
    chart_spec = chart.get("spec") if isinstance(chart, Mapping) else None
    if isinstance(chart_spec, Mapping):
        refs.append(("spec.chart.spec.sourceRef", chart_spec.get("sourceRef")))
    return refs


def reconciler_deviations(objects: Iterable[Mapping], tenants: Iterable[str], service_account: str | None = None):
    """A tenant's Kustomizations and HelmReleases must name a ServiceAccount (``service_account`` when given) and
    take their sources from their own namespace."""
    tenants = set(tenants)
    out = []
    for obj in objects:
        ns, name = _where(obj)
        if ns not in tenants:
            continue
        kind = _kind(obj, "Kustomization")
        spec = _spec(obj)
        account = spec.get("serviceAccountName")
        if not account:
            out.append(Deviation("tenant_service_account", kind, ns, name, "spec.serviceAccountName is not set"))
        elif service_account and account != service_account:
            out.append(
                Deviation(
                    "tenant_service_account",
                    kind,
                    ns,
                    name,
                    "spec.serviceAccountName is %r, not %r" % (account, service_account),
                )
            )
        for where, ref in _source_refs(kind, spec):
            if isinstance(ref, Mapping) and ref.get("namespace") not in (None, "", ns):
                out.append(
                    Deviation(
                        "tenant_cross_namespace_source",
                        kind,
                        ns,
                        name,
                        "%s points at %s in namespace %s"
                        % (where, object_label(str(ref.get("kind")), None, ref.get("name")), ref.get("namespace")),
                    )
                )
    return out


def source_deviations(
    sources: Iterable[Mapping],
    tenants: Iterable[str],
    allowed: Iterable[str],
    per_tenant: Mapping[str, Iterable[str]] | None = None,
):
    """A tenant's GitRepository, HelmRepository and OCIRepository must point at an allowed URL."""
    tenants = set(tenants)
    allowed = list(allowed)
    out = []
    for source in sources:
        ns, name = _where(source)
        if ns not in tenants:
            continue
        url = _spec(source).get("url")
        if not url_allowed(url, tenant_allowed_urls(ns, allowed, per_tenant or {})):
            out.append(
                Deviation(
                    "tenant_source_url",
                    _kind(source, "GitRepository"),
                    ns,
                    name,
                    "spec.url %r is not under an allowed URL" % (url,),
                )
            )
    return out


# -- tenant namespaces ---------------------------------------------------------------------------------------


def tenant_namespaces(namespaces: Iterable[Mapping], tenant_label: str) -> list[Mapping]:
    """The namespaces carrying ``tenant_label``, sorted by name."""
    found = [ns for ns in namespaces if tenant_label in _labels(ns)]
    return sorted(found, key=lambda ns: str(_meta(ns).get("name")))


def is_default_deny(policy: Mapping) -> bool:
    """A NetworkPolicy that selects every pod and denies all ingress and egress."""
    spec = _spec(policy)
    selector = spec.get("podSelector")
    if selector is None or not isinstance(selector, Mapping):
        return False
    if selector.get("matchLabels") or selector.get("matchExpressions"):
        return False
    types = spec.get("policyTypes") or []
    return "Ingress" in types and "Egress" in types and not spec.get("ingress") and not spec.get("egress")


def _selects(selector: Any, labels: Mapping) -> bool:
    """A binding's namespaceSelector selects ``labels`` (absent: every namespace; invalid: none)."""
    if selector is None:
        return True
    try:
        return matches(selector, dict(labels), owner="namespaceSelector")
    except InvalidInput:
        return False


def binding_covers(binding: Mapping, namespace: Mapping) -> bool:
    """Whether a ValidatingAdmissionPolicyBinding applies to objects in ``namespace``."""
    resources = _spec(binding).get("matchResources")
    if resources is None:
        return True
    if not isinstance(resources, Mapping):
        return False
    return _selects(resources.get("namespaceSelector"), _labels(namespace))


def namespace_deviations(
    namespaces: Iterable[Mapping],
    quotas: Iterable[Mapping],
    network_policies: Iterable[Mapping],
    policies: Iterable[Mapping],
    bindings: Iterable[Mapping],
    required_policies: Iterable[str],
):
    """Each tenant namespace has a ResourceQuota, a default-deny NetworkPolicy, a Pod Security enforce level
    (baseline or restricted) and a binding of each of ``required_policies`` (which must exist) that applies to it."""
    by_ns: dict[str, dict[str, list]] = {}
    for what, items in (("quota", quotas), ("netpol", network_policies)):
        for item in items:
            by_ns.setdefault(str(_where(item)[0]), {}).setdefault(what, []).append(item)
    existing = {_where(p)[1] for p in policies}
    bindings = list(bindings)
    out = []
    missing_policies = [p for p in required_policies if p not in existing]
    for policy in missing_policies:
        out.append(
            Deviation(
                "namespace_admission_binding",
                "ValidatingAdmissionPolicy",
                None,
                policy,
                "the required admission policy does not exist",
            )
        )
    for namespace in namespaces:
        name = _where(namespace)[1]
        own = by_ns.get(str(name), {})
        if not own.get("quota"):
            out.append(Deviation("namespace_quota", "Namespace", None, name, "no ResourceQuota in the namespace"))
        if not any(is_default_deny(p) for p in own.get("netpol", [])):
            out.append(
                Deviation(
                    "namespace_network_policy",
                    "Namespace",
                    None,
                    name,
                    "no default-deny NetworkPolicy (every pod, Ingress and Egress, no rule)",
                )
            )
        level = _labels(namespace).get(POD_SECURITY_ENFORCE)
        if level not in POD_SECURITY_LEVELS:
            cause = (
                "label %s is not set" % POD_SECURITY_ENFORCE
                if level is None
                else "label %s is %r (baseline or restricted wanted)" % (POD_SECURITY_ENFORCE, level)
            )
            out.append(Deviation("namespace_pod_security", "Namespace", None, name, cause))
        for policy in required_policies:
            if policy in missing_policies:
                continue
            if not any(_spec(b).get("policyName") == policy and binding_covers(b, namespace) for b in bindings):
                out.append(
                    Deviation(
                        "namespace_admission_binding",
                        "Namespace",
                        None,
                        name,
                        "no ValidatingAdmissionPolicyBinding of %s applies to it" % policy,
                    )
                )
    return out


# -- Metal3 --------------------------------------------------------------------------------------------------


def _unescaped_end(pattern: str, char: str) -> bool:
    """``pattern`` ends with ``char`` not escaped by a backslash."""
    if not pattern.endswith(char):
        return False
    backslashes = len(pattern[:-1]) - len(pattern[:-1].rstrip("\\"))
    return backslashes % 2 == 0


def _top_level_alternation(body: str) -> bool:
    """Whether ``body`` has a ``|`` outside every group and character class."""
    depth, in_class, escaped = 0, False, False
    for char in body:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            return True
    return False


def is_anchored(pattern: Any) -> bool:
    """Whether an unanchored search of ``pattern`` can only match a whole name: ``^…$`` with no top-level ``|``.

    Conservative: a pattern anchored in a way this does not recognise is
    reported (``^a$|^b$``: write ``^(?:a|b)$``, as ``host_share`` does).
    """
    if not isinstance(pattern, str) or len(pattern) < 2:
        return False
    if not pattern.startswith("^") or not _unescaped_end(pattern, "$"):
        return False
    return not _top_level_alternation(pattern[1:-1])


def deploy_policy_deviations(policies: Iterable[Mapping]) -> list[Deviation]:
    """Every HostDeployPolicy's ``nameMatches`` must be anchored."""
    out = []
    for policy in policies:
        ns, name = _where(policy)
        constraints = _spec(policy).get("hostClaimNamespaces")
        pattern = constraints.get("nameMatches") if isinstance(constraints, Mapping) else None
        if pattern in (None, ""):
            continue
        if not is_anchored(pattern):
            out.append(
                Deviation(
                    "deploy_policy_anchoring",
                    "HostDeployPolicy",
                    ns,
                    name,
                    "nameMatches %r is not anchored (^…$): baremetal-operator searches it and would admit any "
                    "namespace containing a match" % (pattern,),
                )
            )
    return out


def host_deviations(hosts: Iterable[Mapping], policies: Iterable[Mapping], annotation_problems) -> list[Deviation]:
    """Every BareMetalHost must be covered by a sharing policy: a valid sharing annotation
    (``annotation_problems(host)`` lists what is wrong with it, ``[]`` when valid), or a HostDeployPolicy with
    ``hostClaimNamespaces`` in its namespace."""
    covered_namespaces = {_where(p)[0] for p in policies if isinstance(_spec(p).get("hostClaimNamespaces"), Mapping)}
    out = []
    for host in hosts:
        ns, name = _where(host)
        annotations = _labels(host, "annotations")
        if SHARING_ANNOTATION in annotations:
            problems = annotation_problems(host)
            if problems:
                out.append(
                    Deviation(
                        "host_sharing",
                        "BareMetalHost",
                        ns,
                        name,
                        "its sharing policy is invalid and shares nothing: %s" % "; ".join(problems),
                    )
                )
            continue
        if ns in covered_namespaces:
            continue
        out.append(
            Deviation(
                "host_sharing",
                "BareMetalHost",
                ns,
                name,
                "no sharing policy covers it (no %s annotation, no HostDeployPolicy in its namespace)"
                % SHARING_ANNOTATION,
            )
        )
    return out


# -- the report ------------------------------------------------------------------------------------------------


def report(deviations: Iterable[Deviation]) -> dict:
    """``deviations`` (machine-readable, in check order then by object) and ``counts`` per check."""
    order = {name: index for index, name in enumerate(CHECKS)}
    items = sorted(
        deviations,
        key=lambda d: (order.get(d.check, len(order)), d.kind, str(d.namespace or ""), str(d.name), d.cause),
    )
    counts = dict((name, 0) for name in CHECKS)
    for item in items:
        counts[item.check] = counts.get(item.check, 0) + 1
    return {"deviations": [as_dict(d) for d in items], "counts": counts, "ok": not items}
