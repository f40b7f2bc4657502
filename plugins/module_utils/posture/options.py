# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The options of ``tenancy_posture``, checked before anything is read.  Pure.

Each bad option fails with one :class:`InvalidInput` naming the option and the bad value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.selectors import (
    dns1123_label_problem,
    label_key_problem,
    label_value_problem,
)


def _urls(value: Any, option: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(u, str) and u.strip() == u and u for u in value):
        raise InvalidInput("option %s" % option, "must be a list of non-empty URLs without spaces, got %r" % (value,))
    for url in value:
        if "://" not in url:
            raise InvalidInput("option %s" % option, "%r is not a URL (scheme://...)" % url)
    return value


def check_options(params: Mapping[str, Any]) -> dict:
    """The options as the checks use them; raises InvalidInput on the first bad one."""
    out = dict(params)
    problem = dns1123_label_problem(params["flux_namespace"])
    if problem:
        raise InvalidInput("option flux_namespace", "%r: %s" % (params["flux_namespace"], problem))
    problem = label_key_problem(params["tenant_label"])
    if problem:
        raise InvalidInput("option tenant_label", "%r: %s" % (params["tenant_label"], problem))
    key, sep, value = (params["managed_label"] or "").partition("=")
    problem = label_key_problem(key) or (label_value_problem(value) if sep else "must be key=value")
    if problem:
        raise InvalidInput("option managed_label", "%r: %s" % (params["managed_label"], problem))
    if params.get("service_account") is not None:
        problem = dns1123_label_problem(params["service_account"])
        if problem:
            raise InvalidInput("option service_account", "%r: %s" % (params["service_account"], problem))
    out["allowed_source_urls"] = _urls(params["allowed_source_urls"], "allowed_source_urls")
    per_tenant = params.get("tenant_source_urls") or {}
    for tenant, urls in per_tenant.items():
        problem = dns1123_label_problem(tenant)
        if problem:
            raise InvalidInput("option tenant_source_urls", "tenant %r: %s" % (tenant, problem))
        _urls(urls, "tenant_source_urls[%s]" % tenant)
    out["tenant_source_urls"] = per_tenant
    return out
