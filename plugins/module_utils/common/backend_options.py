# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The one rule for an option meant for the other backend: it is an error, the same on both.

A host_claim option that only one control plane understands (a Kubernetes
namespace and selector, or an Ironic resource class and inline config-drive
data) is refused with backend the other one, naming the option and what to
use instead, before anything is read or written: a silently ignored option
would claim a host the user did not ask for.  Pure, standard library only.
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
#: what to use instead, on the backend in use
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
        "namespace": "credentials scoped to the tenant's project (cloud or auth)",
        "*": "resource_class, traits and candidate_nodes",
    },
}
_EMPTY = (None, [], {}, "")


def foreign_options(params: Mapping[str, Any], backend: str) -> list[str]:
    """The options in ``params`` that are set and belong to the other backend, in declaration order."""
    other = "ironic" if backend == "metal3" else "metal3"
    return [name for name in ONLY_FOR[other] if params.get(name) not in _EMPTY]


def refuse_foreign_options(params: Mapping[str, Any], backend: str) -> None:
    """Raise :class:`InvalidInput` naming the first option meant for the other backend."""
    given = foreign_options(params, backend)
    if given:
        other = "ironic" if backend == "metal3" else "metal3"
        instead = INSTEAD[backend].get(given[0], INSTEAD[backend]["*"])
        raise InvalidInput(
            "option %s" % given[0], "is for backend %s; with backend %s use %s" % (other, backend, instead)
        )
