# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The options of the collection's Event-Driven Ansible sources, checked once.  Pure.

An event source gets its options as a plain dict from the rulebook, with no
AnsibleModule to apply an argument spec.  This file applies the parts of the
modules' specs that matter there: the auth options keep their aliases and
their environment fallbacks (``K8S_AUTH_*``, ``OS_*``, exactly the modules'
:mod:`common.auth` specs), so that the credentials an EDA controller or AWX
injects as environment variables work unchanged; the source's own options
are converted from the strings a rulebook's variables often are.  A bad or
unknown option is one :class:`errors.InvalidInput` naming it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ansible.module_utils.basic import env_fallback
from ansible.module_utils.errors import AnsibleFallbackNotFound
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput


def _convert(option: str, kind: str, value: Any) -> Any:
    try:
        if kind == "bool":
            return boolean(value, strict=True)
        if kind in ("float", "int"):
            if isinstance(value, bool):
                raise TypeError("a boolean")
            number = float(value) if kind == "float" else int(value)
            if number < 0:
                raise ValueError("negative")
            return number
        if kind == "list":
            if isinstance(value, str):
                value = [part.strip() for part in value.split(",") if part.strip()]
            if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
                raise TypeError("not a list of strings")
            return value
        if kind == "dict":
            if not isinstance(value, dict):
                raise TypeError("not a mapping")
            return dict(value)
        if kind == "raw":
            return value
        if kind == "path":
            return os.path.expanduser(str(value))
        return str(value)
    except (TypeError, ValueError) as exc:
        raise InvalidInput("event source option %s" % option, "%r is not a valid %s (%s)" % (value, kind, exc)) from exc


def _fallback(option: str, spec: Mapping[str, Any], environ: Mapping[str, str]) -> Any:
    """The value the spec's fallback finds in ``environ``, or ``None``."""
    fallback = spec.get("fallback") or ()
    if not fallback:
        return None
    function, args = fallback[0], fallback[1:]
    if function is env_fallback:
        for variable in args[0] if args else ():
            if environ.get(variable) not in (None, ""):
                return _convert(option, spec.get("type", "str"), environ[variable])
        return None
    try:
        return function(environ)
    except AnsibleFallbackNotFound:
        return None


def check_source_options(
    source: str,
    args: Mapping[str, Any] | None,
    auth_specs: Mapping[str, Mapping[str, Any]],
    own_options: Mapping[str, tuple[str, Any]],
    environ: Mapping[str, str] | None = None,
) -> dict:
    """``{"auth": {...}, <own option>: value, ...}`` for the rulebook's ``args``.

    ``auth_specs`` are argument specs of the modules (aliases, types and
    fallbacks are honoured); ``own_options`` maps each of the source's own
    options to ``(type, default)``.  Keys starting with ``eda_`` (added by
    ansible-rulebook) are ignored; any other unknown key is an error.
    """
    environ = os.environ if environ is None else environ
    args = dict(args or {})
    names = {}
    for option, spec in auth_specs.items():
        names[option] = option
        for alias in spec.get("aliases") or ():
            names[alias] = option
    unknown = sorted(key for key in args if key not in names and key not in own_options and not key.startswith("eda_"))
    if unknown:
        raise InvalidInput(
            "event source %s" % source,
            "unknown option(s) %s (known: %s)"
            % (", ".join(unknown), ", ".join(sorted(set(names.values()) | set(own_options)))),
        )
    auth = {}
    for key, value in args.items():
        if key in names and value is not None:
            option = names[key]
            auth[option] = _convert(option, auth_specs[option].get("type", "str"), value)
    for option, spec in auth_specs.items():
        if option not in auth:
            value = _fallback(option, spec, environ)
            if value is not None:
                auth[option] = value
    options = {"auth": auth}
    for option, (kind, default) in own_options.items():
        value = args.get(option)
        options[option] = default if value is None else _convert(option, kind, value)
    return options
