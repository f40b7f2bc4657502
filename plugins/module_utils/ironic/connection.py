# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Build an openstacksdk connection from the shared auth options (the only
file that imports openstacksdk, and only when a connection is made: a module
run for the other backend never pays the half second that importing
openstacksdk costs).  Project references are resolved in
:mod:`ironic.projects`."""

from __future__ import annotations

import importlib
import os
import re
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    BackendError,
    InvalidInput,
    from_exception,
    timeout_cause,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.libraries import OPENSTACKSDK, require
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.model import IRONIC_MICROVERSION


def _cloud_region(cloud: str | None, kwargs: dict) -> Any:
    """openstacksdk's settings for ``cloud`` (a clouds.yaml name, or None) and ``kwargs``.

    The module options already carry the OS_* variables (auth.py), so the
    environment is not read again, except for the two variables that say
    where clouds.yaml lives: OS_CLIENT_CONFIG_FILE (which AWX's OpenStack
    credential sets) and OS_CLIENT_SECURE_FILE.
    """
    openstack_config = importlib.import_module("openstack.config.loader")
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


#: keystoneauth's words for a connection refused or cut: "Unable to establish connection to <url>: <reason>"
_UNABLE = re.compile(r"Unable to establish connection to (\S+?): ")
_NEW_CONNECTION = "Failed to establish a new connection: "


def connect_failure(exc: BaseException | None) -> bool:
    """Whether ``exc`` is keystoneauth's ``ConnectFailure`` (a connection refused or cut), also as the cause of the
    exception openstacksdk wraps it in."""
    for dummy in range(3):
        if exc is None:
            return False
        if exc.__class__.__name__ == "ConnectFailure":
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def unreachable(obj: str, exc: BaseException, service: str | None = None) -> BackendError:
    """The error of a connection refused or cut (keystoneauth's ``ConnectFailure``): the ``service`` (by default
    Keystone while a token was fetched, else Ironic), its URL without the query and the reason, marked
    ``service_unreachable``."""
    text = str(exc)
    match = _UNABLE.search(text)
    url = match.group(1).split("?", 1)[0] if match else None
    reason = text[match.end() :] if match else text
    if _NEW_CONNECTION in reason:
        reason = reason[reason.index(_NEW_CONNECTION) + len(_NEW_CONNECTION) :].rstrip("\"')")
    service = service or ("Keystone" if url and "/auth/tokens" in url else "Ironic")
    where = " at %s" % url if url else ""
    return BackendError(obj, "%s%s cannot be reached: %s" % (service, where, reason), {"service_unreachable": True})


def request_failure(obj: str, exc: BaseException, request: str, timeout: Any, service: str | None = None) -> Exception:
    """The error of an exception raised by ``request`` (``"GET /v1/nodes"``): its time-out (``api_timeout``), a
    connection refused or cut (:func:`unreachable`), or anything else; ``service`` names the API (default: Ironic,
    or Keystone for a connection refused while a token was fetched)."""
    if "timeout" in exc.__class__.__name__.lower():
        return BackendError(obj, timeout_cause(service or "Ironic", request, timeout, "api_timeout"))
    if connect_failure(exc):
        return unreachable(obj, exc, service)
    return from_exception(obj, exc)


def response_body(response: Any) -> Any:
    """The decoded JSON body of a successful answer; ``None`` when it is empty or not JSON."""
    if response.status_code == 204 or not (response.content or b"").strip():
        return None
    try:
        return response.json()
    except ValueError:
        return None


def openstack_connection(params: dict) -> Any:
    """An ``openstack.connection.Connection`` for the options in ``params``."""
    require(OPENSTACKSDK)  # imports openstack.connection, or raises MissingLibrary with the import traceback
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
        raise from_exception(what, exc) from exc
    auth_url = (region.config.get("auth") or {}).get("auth_url")
    if cloud and auth_url:
        what = "%s (%s)" % (what, auth_url)  # the endpoint, in the words of an error reaching it
    try:
        conn = importlib.import_module("openstack.connection").Connection(config=region)
        conn.authorize()
    except Exception as exc:
        if connect_failure(exc):  # logging in talks to Keystone alone
            raise unreachable(what, exc, "Keystone") from exc
        raise from_exception(what, exc) from exc
    return conn
