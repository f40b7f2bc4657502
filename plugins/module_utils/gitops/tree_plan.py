# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""What a commit to a Git checkout must change so that some directories hold exactly the wanted files.  Pure.

``gitops_commit`` owns whole directories of a repository: each directory it is
given holds exactly the files given for it afterwards (files that are not
given are removed), and a directory given as ``None`` is removed with
everything in it. Nothing outside these directories is read or written, so
the rest of the repository stays the operator's.

Paths are relative to the repository, use ``/`` and may not leave it (no
``..``, no absolute path, nothing under ``.git``); no directory may lie
inside another one given in the same call (the plan would be ambiguous).
Every problem is one :class:`InvalidInput` naming the path and the cause,
raised before anything is read or written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput


class Change(NamedTuple):
    """One file: ``before`` is ``None`` when it is created, ``after`` is ``None`` when it is removed."""

    path: str
    before: str | None
    after: str | None

    @property
    def action(self) -> str:
        if self.before is None:
            return "create"
        if self.after is None:
            return "remove"
        return "update"


def path_problem(path: str) -> str | None:
    """Why ``path`` cannot be written by the module, or ``None``."""
    if not isinstance(path, str) or not path:
        return "must be a non-empty relative path"
    if path.startswith("/") or "\\" in path:
        return "must be a relative path with / as separator"
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return "may not contain empty, . or .. parts"
    if any(part.lower() == ".git" for part in parts):
        return "may not be inside .git"
    return None


def _checked(path: str, what: str) -> str:
    problem = path_problem(path)
    if problem:
        raise InvalidInput("%s %r" % (what, path), problem)
    return path


def desired_files(directories: Mapping[str, Mapping[str, str] | None]) -> dict[str, dict[str, str] | None]:
    """Check ``directories`` ({dir: {relative file: text} or None}) and return it with full file paths."""
    names = sorted(_checked(d.rstrip("/"), "directory") for d in directories)
    for index, outer in enumerate(names):
        for inner in names[index + 1 :]:
            if inner == outer or inner.startswith(outer + "/"):
                raise InvalidInput("directory %r" % inner, "lies inside directory %r given in the same call" % outer)
    result: dict[str, dict[str, str] | None] = {}
    for given, files in directories.items():
        directory = given.rstrip("/")
        if files is None:
            result[directory] = None
            continue
        if not isinstance(files, Mapping):
            raise InvalidInput("directory %r" % directory, "must map file names to their text, or be null")
        full = {}
        for name, text in files.items():
            _checked(name, "file")
            if not isinstance(text, str):
                raise InvalidInput("file %r" % ("%s/%s" % (directory, name)), "the content must be text")
            full["%s/%s" % (directory, name)] = text
        for path in full:
            for other in full:
                if other.startswith(path + "/"):
                    raise InvalidInput("file %r" % path, "is also a directory holding %r" % other)
        result[directory] = full
    return result


def plan(current: Mapping[str, str], wanted: Mapping[str, dict[str, str] | None]) -> list[Change]:
    """The changes that turn ``current`` into ``wanted``, sorted by path.

    ``current`` maps every file now under the wanted directories to its text;
    ``wanted`` is :func:`desired_files`' result.
    """
    changes = []
    for directory, files in wanted.items():
        prefix = directory + "/"
        existing = {p: t for p, t in current.items() if p.startswith(prefix)}
        wanted_here = files or {}
        for path in sorted(set(existing) | set(wanted_here)):
            before, after = existing.get(path), wanted_here.get(path)
            if before != after:
                changes.append(Change(path, before, after))
    return sorted(changes)


def diff_entries(changes: list[Change]) -> list[dict]:
    """Ansible's diff format, one entry per changed file (``/dev/null`` for a missing side)."""
    return [
        dict(
            before_header=change.path if change.before is not None else "/dev/null",
            after_header=change.path if change.after is not None else "/dev/null",
            before=change.before or "",
            after=change.after or "",
        )
        for change in changes
    ]


def summary(changes: list[Change]) -> list[dict]:
    """``[{path, action}]`` for the module result."""
    return [dict(path=change.path, action=change.action) for change in changes]
