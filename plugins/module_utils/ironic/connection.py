# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Build an openstacksdk connection from the shared auth options; resolve
Keystone project references (the one rule of every module that names a
project: :func:`resolve_project`)."""

import os
import re
import traceback

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    InvalidInput,
    NotFound,
    from_exception,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.libraries import OPENSTACKSDK, MissingLibrary

try:
    import openstack
    import openstack.connection
    from openstack.config import loader as openstack_config

    HAS_OPENSTACKSDK = True
    OPENSTACKSDK_IMPORT_ERROR = None
except ImportError:
    HAS_OPENSTACKSDK = False
    OPENSTACKSDK_IMPORT_ERROR = traceback.format_exc()

# Ironic API microversion the collection needs: 1.65 lessee, 1.60 owned allocations.
IRONIC_MICROVERSION = "1.78"

# What resolve_project reports about a project reference.
PROJECT_VERIFIED = "verified"  # Keystone knows it
PROJECT_SKIPPED = "skipped"  # verify_projects=false: the ID was used as given
PROJECT_UNKNOWN = "unknown"  # an ID Keystone does not know, accepted where only existing records are touched
_PROJECT_ID_RE = re.compile(r"[0-9a-fA-F]{32}\Z")


def project_id_like(value):
    """Whether ``value`` has the form of a Keystone project ID (32 hex digits)."""
    return isinstance(value, str) and bool(_PROJECT_ID_RE.match(value))


def resolve_project(conn, project, verify=True, must_exist=True):
    """``(project_id, check)`` of a project reference (an ID or a name), resolved in Keystone.

    ``check`` is :data:`PROJECT_VERIFIED`, :data:`PROJECT_SKIPPED` (``verify``
    false: an ID is used as given; a name cannot be used unverified) or, with
    ``must_exist`` false, :data:`PROJECT_UNKNOWN` for an ID Keystone does not
    know (to end what was recorded for a project deleted since).  A project
    Keystone does not know is :class:`NotFound`; credentials that may not read
    it give :class:`InvalidInput` saying that ``verify_projects: false``
    skips the check.  ``(None, None)`` for no project.
    """
    if project is None:
        return None, None
    obj = "project %s" % project
    if not isinstance(project, str) or not project.strip():
        raise InvalidInput(obj, "must be a project ID or name")
    try:
        own = conn.current_project_id
    except Exception:  # system- or domain-scoped tokens have none
        own = None
    if own and project == own:
        return project, PROJECT_VERIFIED
    if not verify:
        if project_id_like(project):
            return project, PROJECT_SKIPPED
        raise InvalidInput(
            obj,
            "is not a project ID (32 hex digits): a name is only resolved in Keystone, which "
            "verify_projects=false skips; give the project ID",
        )
    try:
        found = conn.identity.find_project(project, ignore_missing=True)
    except Exception as exc:
        error = from_exception(obj, exc)
        if (error.details or {}).get("status") in (401, 403):
            raise InvalidInput(
                obj,
                "cannot be looked up in Keystone with these credentials (%s): use credentials "
                "that may read projects, or set verify_projects=false to use the project ID "
                "unverified" % error.cause,
            )
        raise error
    if found is None:
        if not must_exist and project_id_like(project):
            return project, PROJECT_UNKNOWN
        raise NotFound(obj, "does not exist in Keystone")
    return found.id, PROJECT_VERIFIED


def _cloud_region(cloud, kwargs):
    """openstacksdk's settings for ``cloud`` (a clouds.yaml name, or None) and ``kwargs``.

    The module options already carry the OS_* variables (auth.py), so the
    environment is not read again, except for the two variables that say
    where clouds.yaml lives: OS_CLIENT_CONFIG_FILE (which AWX's OpenStack
    credential sets) and OS_CLIENT_SECURE_FILE.
    """
    config_files = list(openstack_config.CONFIG_FILES)
    secure_files = list(openstack_config.SECURE_FILES)
    for variable, files in (("OS_CLIENT_CONFIG_FILE", config_files), ("OS_CLIENT_SECURE_FILE", secure_files)):
        if os.environ.get(variable):
            files.insert(0, os.environ[variable])
    config = openstack_config.OpenStackConfig(
        config_files=config_files,
        secure_files=secure_files,
        app_name="baremetal.tenancy",
        load_yaml_config=bool(cloud),
        load_envvars=False,
    )
    return config.get_one(cloud=cloud, **kwargs)


def openstack_connection(params):
    """An ``openstack.connection.Connection`` for the options in ``params``."""
    if not HAS_OPENSTACKSDK:
        raise MissingLibrary(OPENSTACKSDK, OPENSTACKSDK_IMPORT_ERROR)
    kwargs = dict(baremetal_api_version=IRONIC_MICROVERSION)
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
        raise InvalidInput(
            "OpenStack credentials", "none found: set cloud or auth (or OS_CLOUD / OS_AUTH_URL and friends)"
        )
    what = "OpenStack cloud %s" % (cloud or (kwargs.get("auth") or {}).get("auth_url"))
    try:
        region = _cloud_region(cloud, kwargs)
    except Exception as exc:
        raise from_exception(what, exc)
    auth_url = (region.config.get("auth") or {}).get("auth_url")
    if cloud and auth_url:
        what = "%s (%s)" % (what, auth_url)  # the endpoint, in the words of an error reaching it
    try:
        conn = openstack.connection.Connection(config=region)
        conn.authorize()
    except Exception as exc:
        raise from_exception(what, exc)
    return conn
