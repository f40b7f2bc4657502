# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The options of a binder pass, shared by ``host_bind`` (one pass) and ``host_bind_worker`` (a pass per request).

One argument spec, one check and one way to build the :class:`binder.Binder` from the
options, so that a worker's pass is exactly a ``host_bind`` pass.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.selectors import (
    dns1123_label_problem,
    dns1123_subdomain_problem,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.run import Binder
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.dialect import AUTO, DIALECT_CHOICES

BIND_SPEC = dict(
    namespaces=dict(type="list", elements="str"),
    name=dict(type="str"),
    host_namespaces=dict(type="list", elements="str"),
    binder_id=dict(type="str"),
    import_annotation_domains=dict(type="list", elements="str", default=["export.hostclaim.metal3.io"]),
    sweep=dict(type="bool", default=True),
    workers=dict(type="int", default=8),
    dialect=dict(type="str", choices=list(DIALECT_CHOICES), default=AUTO),
    unanchored_name_matches=dict(type="bool", default=False),
    take_over=dict(type="bool", default=False),
)


def check_bind_options(params: dict) -> None:
    for option in ("namespaces", "host_namespaces"):
        for namespace in params[option] or []:
            problem = dns1123_label_problem(namespace)
            if problem:
                raise InvalidInput("option %s" % option, "namespace name %r %s" % (namespace, problem))
    if params.get("name"):
        problem = dns1123_subdomain_problem(params["name"])
        if problem:
            raise InvalidInput("option name", "%r %s" % (params["name"], problem))
        if len(params["namespaces"] or []) != 1:
            raise InvalidInput(
                "option name",
                "%r needs exactly one namespace in namespaces, got %s"
                % (params["name"], ", ".join(params["namespaces"] or []) or "none"),
            )
    if params["workers"] < 1:
        raise InvalidInput("option workers", "must be 1 or more, got %s" % params["workers"])


def make_binder(io: Any, params: dict, check_mode: bool, **scope: Any) -> Binder:
    """The binder of one pass with ``params``; ``scope`` (``namespaces``, ``host_namespaces``) overrides them."""
    return Binder(
        io,
        binder_id=params["binder_id"],
        namespaces=scope.get("namespaces", params["namespaces"]),
        name=params.get("name"),
        host_namespaces=scope.get("host_namespaces", params["host_namespaces"]),
        annotation_domains=params["import_annotation_domains"],
        sweep=params["sweep"],
        check_mode=check_mode,
        workers=params["workers"],
        dialect=params["dialect"],
        unanchored=params["unanchored_name_matches"],
        take_over=params["take_over"],
    )
