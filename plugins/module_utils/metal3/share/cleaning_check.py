# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The owner's warning that a host handed to tenants is not cleaned between them.  Pure.

When a claim is released the binder deprovisions the host, and
baremetal-operator cleans its disks (Ironic's automated cleaning) only if the
host's ``spec.automatedCleaningMode`` is not ``disabled``.  With cleaning off,
what one tenant left on the disks (files, users, SSH keys) is there for the
next tenant: the hand-over tests see it.  The owner may have good reasons
(something else wipes the hosts), so the binder does not refuse such a host;
it names it in every pass, in ``host_bind``'s ``cleaning_disabled`` and a
warning.

Which hosts count: those the binder may hand to tenants or has handed to one.
A host bound to a claim (``consumerRef`` of kind ``HostClaim``), a host that
carries the sharing annotation (the proposal's dialect), and a host in a
namespace with a ``HostDeployPolicy`` (baremetal-operator's dialect).  A
host shared with nobody is the owner's own business.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import SHARING_ANNOTATION

DISABLED = "disabled"
#: how many host names the warning lists before "and N more"
SHOWN_NAMES = 10


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def cleaning_disabled(host: Mapping | None) -> bool:
    """True if the BMH's ``spec.automatedCleaningMode`` is ``disabled``."""
    return _get(host, "spec", "automatedCleaningMode") == DISABLED


def offered_to_tenants(host: Mapping | None, policy_namespaces: Iterable[str] = ()) -> bool:
    """True if the host is bound to a claim, shared by its annotation, or in a namespace with a HostDeployPolicy."""
    if _get(host, "spec", "consumerRef", "kind") == "HostClaim":
        return True
    if _get(host, "metadata", "annotations", SHARING_ANNOTATION) is not None:
        return True
    return _get(host, "metadata", "namespace") in set(policy_namespaces)


def uncleaned_hosts(hosts: Iterable[Mapping], deploy_policies: Iterable[Mapping] = ()) -> list[str]:
    """``namespace/name`` of the hosts offered to tenants whose cleaning is disabled, sorted."""
    policy_namespaces = {_get(policy, "metadata", "namespace") for policy in deploy_policies} - {None}
    policy_namespaces = {namespace for namespace in policy_namespaces if isinstance(namespace, str)}
    return sorted(
        "%s/%s" % (_get(host, "metadata", "namespace"), _get(host, "metadata", "name"))
        for host in hosts
        if cleaning_disabled(host) and offered_to_tenants(host, policy_namespaces)
    )


def cleaning_warning(names: list[str], shown_names: int = SHOWN_NAMES) -> str:
    """The owner's warning about ``names`` (``namespace/name``), listing at most ``shown_names`` of them."""
    listed = ", ".join(names[:shown_names]) + (
        " and %d more" % (len(names) - shown_names) if len(names) > shown_names else ""
    )
    return (
        "%d BareMetalHost(s) handed to tenants have spec.automatedCleaningMode %s (%s): their disks are not cleaned "
        "when a claim is released, so files, users and SSH keys a tenant left there reach the next tenant. Set it to "
        "metadata (host_register automated_cleaning: true) unless something else wipes these hosts."
        % (len(names), DISABLED, listed)
    )
