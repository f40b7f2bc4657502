# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The options of the event source ``baremetal.tenancy.ironic_leases``, checked once.  Pure.

The OpenStack auth options are the modules' (:data:`auth.OPENSTACK_AUTH_SPEC`,
:data:`auth.TLS_SPEC`) with their environment fallbacks (``OS_CLOUD``,
``OS_AUTH_URL`` and friends, ``OS_CLIENT_CONFIG_FILE`` for clouds.yaml), so
that AWX's OpenStack credential works unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.auth import OPENSTACK_AUTH_SPEC, TLS_SPEC
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.source_options import check_source_options

#: option -> (type, default)
SOURCE_OPTIONS = {
    "interval": ("float", 5.0),
    "lead_time": ("float", 30.0),
    "warn_ahead": ("float", 3600.0),
    "retry": ("float", 60.0),
    "nodes": ("list", None),
    "resource_class": ("str", None),
}
AUTH_SPECS = dict(OPENSTACK_AUTH_SPEC, **TLS_SPEC)


def source_options(args: Mapping[str, Any] | None, environ: Mapping[str, str] | None = None) -> dict:
    """The checked options: ``auth`` (for :func:`connection.openstack_connection`) and the source's own."""
    options = check_source_options("baremetal.tenancy.ironic_leases", args, AUTH_SPECS, SOURCE_OPTIONS, environ)
    if options["interval"] <= 0:
        raise InvalidInput("event source option interval", "must be more than 0 seconds")
    if options["lead_time"] < options["interval"]:
        raise InvalidInput(
            "event source option lead_time",
            "must be at least interval (%s s): a lease could end between two polls unseen" % options["interval"],
        )
    if options["warn_ahead"] < options["lead_time"]:
        raise InvalidInput("event source option warn_ahead", "must be at least lead_time (%s s)" % options["lead_time"])
    return options
