# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The options of the event source ``baremetal.tenancy.metal3_events``, checked once.  Pure.

The Kubernetes auth options are the modules' (:data:`auth.KUBERNETES_AUTH_SPEC`,
:data:`auth.TLS_SPEC`), with the same aliases and the same environment
fallbacks (``K8S_AUTH_*``), checked by :mod:`common.source_options` (shared
with the Ironic lease source), so that the credentials an EDA controller or
AWX injects as environment variables work unchanged.  A bad option is one
:class:`errors.InvalidInput` naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.auth import KUBERNETES_AUTH_SPEC, TLS_SPEC
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.selectors import dns1123_label_problem
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.source_options import check_source_options

#: option -> (type, default)
SOURCE_OPTIONS = {
    "namespaces": ("list", None),
    "host_namespaces": ("list", None),
    "debounce": ("float", 0.1),
    "max_delay": ("float", 1.0),
    "pass_timeout": ("float", 900.0),
    "retry_delay": ("float", 1.0),
    "wait_for_pass": ("bool", True),
    "object_events": ("bool", True),
    "resync": ("float", 600.0),
    "relay_poll": ("float", 30.0),
    "watch_timeout": ("float", 300.0),
    "worker": ("bool", False),
    "worker_timeout": ("float", 60.0),
}
AUTH_SPECS = dict(KUBERNETES_AUTH_SPEC, **TLS_SPEC)


def source_options(args: Mapping[str, Any] | None, environ: Mapping[str, str] | None = None) -> dict:
    """The checked options: ``auth`` (for :func:`connection.kube_api_client`) and the source's own."""
    options = check_source_options("baremetal.tenancy.metal3_events", args, AUTH_SPECS, SOURCE_OPTIONS, environ)
    for option in ("namespaces", "host_namespaces"):
        for namespace in options[option] or []:
            problem = dns1123_label_problem(namespace)
            if problem:
                raise InvalidInput("event source option %s" % option, "namespace name %r %s" % (namespace, problem))
    if options["max_delay"] < options["debounce"]:
        raise InvalidInput("event source option max_delay", "must be at least debounce (%s)" % options["debounce"])
    if options["worker"] and not options["wait_for_pass"]:
        raise InvalidInput("event source option worker", "needs wait_for_pass (the worker reports each pass's end)")
    if options["pass_timeout"] <= 0 or options["watch_timeout"] < 1:
        raise InvalidInput("event source options pass_timeout/watch_timeout", "must be positive (watch_timeout >= 1)")
    return options
