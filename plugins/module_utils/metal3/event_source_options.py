# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The options of the event source ``baremetal.tenancy.metal3_events``, checked once.  Pure.

The Kubernetes auth options are the modules' (:data:`auth.KUBERNETES_AUTH_SPEC`,
:data:`auth.TLS_SPEC`), with the same aliases and the same environment
fallbacks (``K8S_AUTH_*``), so that the credentials an EDA controller or AWX
injects as environment variables work unchanged.  A bad option is one
:class:`errors.InvalidInput` naming it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.auth import KUBERNETES_AUTH_SPEC, TLS_SPEC
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.selectors import dns1123_label_problem

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
    "watch_timeout": ("float", 300.0),
}
AUTH_SPECS = dict(KUBERNETES_AUTH_SPEC, **TLS_SPEC)


def _env_names(spec: Mapping[str, Any]) -> list[str]:
    fallback = spec.get("fallback") or ()
    return list(fallback[1]) if len(fallback) > 1 else []


def _convert(option: str, kind: str, value: Any) -> Any:
    try:
        if kind == "bool":
            return boolean(value, strict=True)
        if kind == "float":
            if isinstance(value, bool):
                raise TypeError("a boolean")
            number = float(value)
            if number < 0:
                raise ValueError("negative")
            return number
        if kind == "list":
            if isinstance(value, str):
                value = [part.strip() for part in value.split(",") if part.strip()]
            if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
                raise TypeError("not a list of strings")
            return value
        if kind == "path":
            return os.path.expanduser(str(value))
        return str(value)
    except (TypeError, ValueError) as exc:
        raise InvalidInput("event source option %s" % option, "%r is not a valid %s (%s)" % (value, kind, exc)) from exc


def source_options(args: Mapping[str, Any] | None, environ: Mapping[str, str] | None = None) -> dict:
    """The checked options: ``auth`` (for :func:`connection.kube_api_client`) and the source's own."""
    environ = os.environ if environ is None else environ
    args = dict(args or {})
    names = {}
    for option, spec in AUTH_SPECS.items():
        names[option] = option
        for alias in spec.get("aliases") or ():
            names[alias] = option
    unknown = sorted(
        key for key in args if key not in names and key not in SOURCE_OPTIONS and not key.startswith("eda_")
    )
    if unknown:
        raise InvalidInput(
            "event source baremetal.tenancy.metal3_events",
            "unknown option(s) %s (known: %s)"
            % (", ".join(unknown), ", ".join(sorted(set(names.values()) | set(SOURCE_OPTIONS)))),
        )
    auth = {}
    for key, value in args.items():
        if key in names and value is not None:
            option = names[key]
            auth[option] = _convert(option, AUTH_SPECS[option].get("type", "str"), value)
    for option, spec in AUTH_SPECS.items():
        if option in auth:
            continue
        for variable in _env_names(spec):
            if environ.get(variable) not in (None, ""):
                auth[option] = _convert(option, spec.get("type", "str"), environ[variable])
                break
    options = {"auth": auth}
    for option, (kind, default) in SOURCE_OPTIONS.items():
        value = args.get(option)
        options[option] = default if value is None else _convert(option, kind, value)
    for option in ("namespaces", "host_namespaces"):
        for namespace in options[option] or []:
            problem = dns1123_label_problem(namespace)
            if problem:
                raise InvalidInput("event source option %s" % option, "namespace name %r %s" % (namespace, problem))
    if options["max_delay"] < options["debounce"]:
        raise InvalidInput("event source option max_delay", "must be at least debounce (%s)" % options["debounce"])
    if options["pass_timeout"] <= 0 or options["watch_timeout"] < 1:
        raise InvalidInput("event source options pass_timeout/watch_timeout", "must be positive (watch_timeout >= 1)")
    return options
