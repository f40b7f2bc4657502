# -*- coding: utf-8 -*-
# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Build an openstacksdk connection from the shared auth options."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import traceback

from ansible_collections.baremetal.tenancy.plugins.module_utils.errors import InvalidInput, from_exception

try:
    import openstack
    HAS_OPENSTACKSDK = True
    OPENSTACKSDK_IMPORT_ERROR = None
except ImportError:
    HAS_OPENSTACKSDK = False
    OPENSTACKSDK_IMPORT_ERROR = traceback.format_exc()

# Ironic API microversion the collection needs: 1.65 lessee, 1.60 owned allocations.
IRONIC_MICROVERSION = "1.78"


def openstack_connection(params):
    """An ``openstack.connection.Connection`` for the options in ``params``."""
    if not HAS_OPENSTACKSDK:
        raise InvalidInput("python library openstacksdk", "is required for backend ironic (pip install openstacksdk)")
    kwargs = dict(app_name="baremetal.tenancy", baremetal_api_version=IRONIC_MICROVERSION)
    for key in ("auth", "auth_type", "region_name", "interface", "api_timeout"):
        if params.get(key) is not None:
            kwargs[key] = params[key]
    if params.get("ca_cert"):
        kwargs["cacert"] = params["ca_cert"]
    if params.get("validate_certs") is not None:
        kwargs["verify"] = params["validate_certs"]
    cloud = params.get("cloud")
    if isinstance(cloud, dict):
        kwargs.update(cloud)
        cloud = None
    if not cloud and not params.get("auth"):
        raise InvalidInput("OpenStack credentials",
                           "none found: set cloud or auth (or OS_CLOUD / OS_AUTH_URL and friends)")
    try:
        conn = openstack.connect(cloud=cloud, load_yaml_config=bool(cloud), load_envvars=False, **kwargs)
        conn.authorize()
    except Exception as exc:
        raise from_exception("OpenStack cloud %s" % (cloud or kwargs.get("auth", {}).get("auth_url")), exc)
    return conn
