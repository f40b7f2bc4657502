# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The one rule for an option meant for the other backend: it is an error, the same in every module.

An option that only one control plane understands (a Kubernetes namespace and
selector, or an Ironic resource class and inline config-drive data) is
refused with backend the other one, naming the option, the backend it is for
and, where there is one, what to use instead, before anything is read or
written: a silently ignored option would act on what the user did not ask
for.  Every module that takes ``backend`` declares its table in
``TenancyModule.backend_options`` (and ``backend_instead``) and
:class:`~.base.TenancyModule` applies it before ``run``::

    option resource_class: is for backend ironic
    option user_data: is for backend ironic; with backend metal3 use user_data_secret

An option is given when it is set and not empty (``None``, ``[]``, ``{}``,
``""`` are not given); options with a default other than ``None`` cannot be
told apart from the default and are not listed.  A name ``<list>[].<key>``
(``hosts[].nics``) is given when any element of the list has ``<key>`` set.
Pure, standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput

#: host_claim options by the backend they belong to
ONLY_FOR = {
    "metal3": (
        "namespace",
        "host_selector",
        "user_data_secret",
        "network_data_secret",
        "meta_data_secret",
        "node_reuse",
        "credentials",
        "in_namespace",
        "failure_domain",
        "custom_deploy",
    ),
    "ironic": (
        "resource_class",
        "traits",
        "candidate_nodes",
        "user_data",
        "network_data",
        "meta_data",
        "file_url_allowed_prefixes",
        "networks",
    ),
}
_DATA_SECRETS = "user_data_secret, network_data_secret and meta_data_secret"
_INLINE_DATA = "user_data, network_data and meta_data"
_PROJECT_CREDENTIALS = "credentials scoped to the tenant's project (cloud or auth)"
#: host_claim: what to use instead, on the backend in use (``*``: any other option)
INSTEAD = {
    "metal3": {
        "user_data": _DATA_SECRETS,
        "network_data": _DATA_SECRETS,
        "meta_data": _DATA_SECRETS,
        "file_url_allowed_prefixes": "an http or https image URL (the only schemes the binder accepts)",
        "*": "host_selector",
    },
    "ironic": {
        "user_data_secret": _INLINE_DATA,
        "network_data_secret": _INLINE_DATA,
        "meta_data_secret": _INLINE_DATA,
        "namespace": _PROJECT_CREDENTIALS,
        "*": "resource_class, traits and candidate_nodes",
    },
}
#: host_claim_info and host_release: the tenant's namespace(s) are Metal3's; Ironic scopes by the credentials
CLAIM_INFO_ONLY_FOR = {"metal3": ("namespace", "namespaces"), "ironic": ()}
RELEASE_ONLY_FOR = {"metal3": ("namespace", "node_reuse"), "ironic": ()}
CLAIM_SCOPE_INSTEAD = {"ironic": {"namespace": _PROJECT_CREDENTIALS, "namespaces": _PROJECT_CREDENTIALS}}
_EMPTY = (None, [], {}, "")


def other_backend(backend: str) -> str:
    return "ironic" if backend == "metal3" else "metal3"


def _given(params: Mapping[str, Any], name: str) -> bool:
    if "[]." in name:
        outer, key = name.split("[].", 1)
        items = params.get(outer) or []
        return any(isinstance(item, Mapping) and item.get(key) not in _EMPTY for item in items)
    return params.get(name) not in _EMPTY


def foreign_options(params: Mapping[str, Any], backend: str, only_for: Mapping[str, Any]) -> list[str]:
    """The options in ``params`` that are given and belong to the other backend, in declaration order
    (``only_for``: the options of each backend)."""
    return [name for name in only_for.get(other_backend(backend), ()) if _given(params, name)]


def foreign_option_error(option: str, backend: str, instead: str | None = None) -> InvalidInput:
    """The one error for ``option`` (meant for the other backend) given with ``backend``."""
    cause = "is for backend %s" % other_backend(backend)
    if instead:
        cause += "; with backend %s use %s" % (backend, instead)
    return InvalidInput("option %s" % option, cause)


def refuse_foreign_options(
    params: Mapping[str, Any],
    backend: str,
    only_for: Mapping[str, Any],
    instead: Mapping[str, Mapping[str, str]] | None = None,
) -> None:
    """Raise :class:`InvalidInput` naming the first option of ``params`` meant for the other backend.

    ``only_for``: the options of each backend (host_claim's: :data:`ONLY_FOR`); ``instead``: by backend in use,
    what to use instead of an option (key ``*``: of any other; host_claim's: :data:`INSTEAD`)."""
    instead = instead or {}
    given = foreign_options(params, backend, only_for)
    if given:
        advice = instead.get(backend) or {}
        raise foreign_option_error(given[0], backend, advice.get(given[0], advice.get("*")))
