# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Keystone project references: the one rule of every Ironic module that names a project.

``host_lease`` (``project``) and ``host_register`` (``owner``) resolve an ID
or a name with :func:`resolve_project`: an unknown project is an error, and
``verify_projects: false`` accepts only IDs, unverified.  The ``claimed_hosts``
inventory names the caller's own project with :func:`token_project` (what the
token says; a project-scoped token cannot read Keystone's project list).
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    InvalidInput,
    NotFound,
    from_exception,
)

# What resolve_project reports about a project reference.
PROJECT_VERIFIED = "verified"  # Keystone knows it
PROJECT_SKIPPED = "skipped"  # verify_projects=false: the ID was used as given
PROJECT_UNKNOWN = "unknown"  # an ID Keystone does not know, accepted where only existing records are touched
_PROJECT_ID_RE = re.compile(r"[0-9a-fA-F]{32}\Z")


def project_id_like(value: Any) -> bool:
    """Whether ``value`` has the form of a Keystone project ID (32 hex digits)."""
    return isinstance(value, str) and bool(_PROJECT_ID_RE.match(value))


def resolve_project(
    conn: Any, project: str | None, verify: bool = True, must_exist: bool = True, option: str | None = None
) -> tuple[str | None, str | None]:
    """``(project_id, check)`` of a project reference (an ID or a name), resolved in Keystone.

    ``check`` is :data:`PROJECT_VERIFIED`, :data:`PROJECT_SKIPPED` (``verify``
    false: an ID is used as given; a name cannot be used unverified) or, with
    ``must_exist`` false, :data:`PROJECT_UNKNOWN` for an ID Keystone does not
    know (to end what was recorded for a project deleted since).  A project
    Keystone does not know is :class:`NotFound`; credentials that may not read
    it give :class:`InvalidInput` saying that ``verify_projects: false``
    skips the check.  ``(None, None)`` for no project.  ``option``, the option the reference
    came from, is named in the errors.
    """
    if project is None:
        return None, None
    obj = ("option %s: project %s" % (option, project)) if option else "project %s" % project
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
            ) from exc
        raise error from exc
    if found is None:
        if not must_exist and project_id_like(project):
            return project, PROJECT_UNKNOWN
        raise NotFound(obj, "does not exist in Keystone")
    return found.id, PROJECT_VERIFIED


class TokenProject(NamedTuple):
    """The project of a token: ID and name, both ``None`` for a system- or domain-scoped token."""

    project_id: str | None
    project_name: str | None


def token_project(conn: Any) -> TokenProject:
    """The project the connection's token is scoped to (no request beyond the token's own)."""
    session = conn.session
    try:
        access = session.auth.get_access(session)
    except Exception:  # pylint: disable=broad-except
        return TokenProject(None, None)
    return TokenProject(getattr(access, "project_id", None), getattr(access, "project_name", None))
