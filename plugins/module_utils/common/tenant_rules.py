# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""What a tenant definition may hold: the rules ``host_share`` and ``tenant_check`` apply.  Pure.

The same words mean the same thing everywhere: a tenant name is the name of
its namespace (a DNS-1123 label), a host class is a label value (the value of
the host class label, and the name part of the namespace label the
``tenant_namespace`` role derives from it), a network allow is named by a
lowercase DNS label of at most 32 characters (the role prefixes it to build a
NetworkPolicy name).  Every check returns the first problem as text, or
``None``; :func:`check_tenants` raises one :class:`InvalidInput` naming the
entry (``tenants[2] (team-a)``) and the cause, before anything is applied.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.selectors import (
    dns1123_label_problem,
    dns1123_subdomain_problem,
    label_value_problem,
)

NETWORK_ALLOW_MAX = 32
POLICY_ACTIONS = ("Deny", "Warn", "Audit")

#: Namespaces no tenant may be named after: onboarding would give the tenant's users rights there, offboarding would
#: delete it. Kubernetes' own, and the defaults of the collection's infrastructure: the BareMetalHosts and the binder
#: (``metal3``), baremetal-operator (``baremetal-operator-system``) and Flux (``flux-system``). An owner names more
#: (``tenant_check``'s ``reserved_namespaces``).
RESERVED_NAMESPACES = (
    "default",
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "metal3",
    "baremetal-operator-system",
    "flux-system",
)
#: Name prefixes reserved the same way: Kubernetes keeps ``kube-`` for itself, OpenShift ``openshift-``.
RESERVED_PREFIXES = ("kube-", "openshift-")


def tenant_name_problem(name: Any) -> str | None:
    """Why ``name`` cannot name a tenant (its namespace), or ``None``."""
    problem = dns1123_label_problem(name)
    return "tenant name %r %s (a DNS-1123 label)" % (name, problem) if problem else None


def reserved_namespace_problem(name: Any, extra: Collection[str] = ()) -> str | None:
    """Why ``name`` is a namespace no tenant may have, or ``None`` (see ``RESERVED_NAMESPACES``; ``extra``: more)."""
    if name in RESERVED_NAMESPACES:
        why = "a namespace of Kubernetes or of the pool's infrastructure"
    elif name in extra:
        why = "listed in reserved_namespaces"
    elif isinstance(name, str) and name.startswith(RESERVED_PREFIXES):
        why = "the prefix %s is reserved for the system" % next(p for p in RESERVED_PREFIXES if name.startswith(p))
    else:
        return None
    return "tenant name %r is a reserved namespace (%s)" % (name, why)


def host_class_problem(value: Any) -> str | None:
    """Why ``value`` cannot name a host class (a non-empty label value), or ``None``."""
    if value == "":
        return "host class must not be empty"
    problem = label_value_problem(value)
    return "host class %s" % problem if problem else None


def network_allow_name_problem(name: Any) -> str | None:
    """Why ``name`` cannot name a network allow, or ``None``."""
    problem = dns1123_label_problem(name)
    if not problem and len(name) > NETWORK_ALLOW_MAX:
        problem = "must be at most %d characters" % NETWORK_ALLOW_MAX
    return "network allow name %r %s" % (name, problem) if problem else None


def label_prefix_problem(prefix: Any) -> str | None:
    """Why ``prefix`` is not a label-key prefix (a DNS subdomain followed by ``/``), or ``None``."""
    if not isinstance(prefix, str) or not prefix.endswith("/"):
        return "%r must be a DNS subdomain followed by /" % (prefix,)
    problem = dns1123_subdomain_problem(prefix[:-1])
    return "%r: the part before / %s" % (prefix, problem) if problem else None


def _unknown_keys(value, known, what):
    if value is None:
        return None
    if not isinstance(value, dict):
        return "%s must be a mapping" % what
    unknown = sorted((str(key) for key in value if key not in known), key=str)
    if unknown:
        return "%s has unknown key(s) %s (known: %s)" % (what, ", ".join(unknown), ", ".join(sorted(known)))
    return None


def _list_of(value, what):
    if value is None:
        return []
    if not isinstance(value, list):
        raise TypeError("%s must be a list" % what)
    return value


def tenant_problem(
    tenant: Any,
    quota_keys: Collection[str] = (),
    pod_security_keys: Collection[str] = (),
    reserved: Collection[str] = (),
) -> str | None:
    """The first problem of one tenant definition (a dict with ``name`` ...), or ``None``.

    ``reserved`` names namespaces reserved on top of ``RESERVED_NAMESPACES``."""
    if not isinstance(tenant, dict):
        return "must be a mapping with at least a name"
    problem = tenant_name_problem(tenant.get("name")) or reserved_namespace_problem(tenant.get("name"), reserved)
    if problem:
        return problem
    try:
        for value in _list_of(tenant.get("host_classes"), "host_classes"):
            problem = host_class_problem(value)
            if problem:
                return problem
        for allow in _list_of(tenant.get("network_allows"), "network_allows"):
            if not isinstance(allow, dict):
                return "network_allows entries must be mappings with a name"
            problem = network_allow_name_problem(allow.get("name"))
            if problem:
                return problem
    except TypeError as exc:
        return str(exc)
    return _unknown_keys(tenant.get("quota"), quota_keys, "quota") or _unknown_keys(
        tenant.get("pod_security"), pod_security_keys, "pod_security"
    )


def _entry_name(index, tenant, where):
    name = tenant.get("name") if isinstance(tenant, dict) else None
    return "%s[%d] (%s)" % (where, index, name) if isinstance(name, str) and name else "%s[%d]" % (where, index)


def check_reserved(reserved: Any, where: str = "reserved_namespaces") -> list[str]:
    """Raise :class:`InvalidInput` unless ``reserved`` is a list of namespace names (DNS-1123 labels); return it."""
    if not isinstance(reserved, list):
        raise InvalidInput("option %s" % where, "must be a list of namespace names")
    for index, name in enumerate(reserved):
        problem = dns1123_label_problem(name)
        if problem:
            raise InvalidInput("option %s" % where, "entry %d (%r) %s (a DNS-1123 label)" % (index, name, problem))
    return reserved


def check_tenants(
    tenants: Any,
    quota_keys: Collection[str] = (),
    pod_security_keys: Collection[str] = (),
    where: str = "tenants",
    reserved: Collection[str] = (),
) -> list[str]:
    """Raise :class:`InvalidInput` about the first bad tenant, or a name listed twice; return the names.

    ``reserved`` names namespaces reserved on top of ``RESERVED_NAMESPACES`` (see :func:`check_reserved`)."""
    if not isinstance(tenants, list):
        raise InvalidInput("option %s" % where, "must be a list of tenants")
    names = []
    for index, tenant in enumerate(tenants):
        problem = tenant_problem(tenant, quota_keys, pod_security_keys, reserved)
        if problem:
            raise InvalidInput(_entry_name(index, tenant, where), problem)
        if tenant["name"] in names:
            raise InvalidInput(
                _entry_name(index, tenant, where),
                "tenant %s is listed twice (first as %s[%d]); list each tenant once"
                % (tenant["name"], where, names.index(tenant["name"])),
            )
        names.append(tenant["name"])
    return names


# Bounds of the ID ranges the pod controls compare with: container ports, and group IDs (a 32-bit GID).
ID_BOUNDS = {"port": (1, 65535), "group": (0, 2147483647)}


def check_id_ranges(ranges: Any, where: str, kind: str) -> list:
    """Raise :class:`InvalidInput` unless ``ranges`` is a non-empty list of ``{min, max}`` integers within ``kind``'s bounds."""
    low, high = ID_BOUNDS[kind]
    if not isinstance(ranges, list) or not ranges:
        raise InvalidInput("option %s" % where, "must be a non-empty list of {min, max} ranges")
    for index, entry in enumerate(ranges):
        name = "option %s[%d]" % (where, index)
        if not isinstance(entry, dict) or set(entry) != {"min", "max"}:
            raise InvalidInput(name, "must be a dict with exactly the keys min and max, got %r" % (entry,))
        bounds = [entry["min"], entry["max"]]
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in bounds):
            raise InvalidInput(name, "min and max must be integers, got %r" % (entry,))
        if not low <= bounds[0] <= bounds[1] <= high:
            raise InvalidInput(
                name, "needs %d <= min <= max <= %d, got min %d, max %d" % (low, high, bounds[0], bounds[1])
            )
    return ranges


def check_choices(values: Any, known: Sequence[str], where: str) -> list:
    """Raise :class:`InvalidInput` unless ``values`` is a list of members of ``known``."""
    if not isinstance(values, list):
        raise InvalidInput("option %s" % where, "must be a list")
    unknown = [value for value in values if value not in known]
    if unknown:
        raise InvalidInput(
            "option %s" % where,
            "unknown value(s) %s (known: %s)" % (", ".join(str(v) for v in unknown), ", ".join(known)),
        )
    return values
