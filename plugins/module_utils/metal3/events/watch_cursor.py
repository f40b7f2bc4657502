# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Following one Kubernetes collection for good: list, watch, resume, relist.  Pure.

:class:`WatchCursor` decides the next step of a follower that must never lose
a change:

* start with a list (its ``resourceVersion`` is where the watch starts);
* a watch that ends (the server's timeout, a dropped connection, an API
  server restarting) is resumed from the last ``resourceVersion`` seen (an
  object's or a ``BOOKMARK``'s), after a back-off that grows while the server
  cannot be reached and is reset by the next event;
* ``410 Gone`` (the version is older than what the server keeps: an HTTP 410
  answer to the watch request, or an ``ERROR`` event with code 410 in the
  stream) means the changes in between are lost to the watch: the collection
  is listed again and :func:`relist_changes` turns the difference between
  what was known and the new listing into the changes a watch would have
  delivered (deletions included).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

LIST, WATCH = "list", "watch"
GONE_STATUS = 410
#: back-off after failures in a row (seconds): 0.2, 0.4, ... up to MAX_BACKOFF
FIRST_BACKOFF = 0.2
MAX_BACKOFF = 5.0


def _version(obj: Any) -> str | None:
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    version = meta.get("resourceVersion") if isinstance(meta, Mapping) else None
    return version if isinstance(version, str) and version else None


def object_key(obj: Any) -> tuple[str, str]:
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    meta = meta if isinstance(meta, Mapping) else {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class WatchCursor:
    """Where a follower of one collection stands, and what it must do next (:meth:`next_step`)."""

    def __init__(self) -> None:
        self.resource_version: str | None = None
        self.must_list = True
        self.failures = 0
        #: how many times each thing happened (lists, relists after 410, resumed watches)
        self.counts = {"lists": 0, "relists": 0, "resumes": 0, "failures": 0}

    def next_step(self) -> tuple[str, str | None]:
        """``("list", None)`` or ``("watch", resourceVersion)``."""
        if self.must_list or not self.resource_version:
            return LIST, None
        return WATCH, self.resource_version

    def listed(self, resource_version: str | None) -> None:
        """A list succeeded at ``resource_version``: watch from there."""
        self.counts["lists"] += 1
        self.resource_version = resource_version
        self.must_list = not resource_version
        self.failures = 0

    def event(self, event: Any) -> str | None:
        """Take one watch event; return its type when it is a change to deliver, else ``None``.

        ``BOOKMARK`` only moves the version; an ``ERROR`` with code 410 makes
        the next step a list, any other ``ERROR`` a resumed watch.
        """
        if not isinstance(event, Mapping):
            return None
        kind = event.get("type")
        obj = event.get("object")
        if kind == "ERROR":
            code = obj.get("code") if isinstance(obj, Mapping) else None
            self.failed(code if isinstance(code, int) else None)
            return None
        version = _version(obj)
        if version:
            self.resource_version = version
            self.failures = 0
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            return kind
        return None

    def ended(self) -> None:
        """The watch ended without an error (timeout, closed stream): resume it."""
        self.counts["resumes"] += 1

    def failed(self, status: int | None = None) -> float:
        """A request or stream failed (HTTP ``status`` when known); return the seconds to wait before the next step."""
        self.counts["failures"] += 1
        if status == GONE_STATUS:
            self.counts["relists"] += 1
            self.must_list = True
            return 0.0
        self.failures += 1
        if not self.must_list:
            self.counts["resumes"] += 1
        return backoff(self.failures)


def backoff(failures: int) -> float:
    """Seconds to wait after ``failures`` failures in a row (0 for none)."""
    if failures <= 0:
        return 0.0
    return min(MAX_BACKOFF, FIRST_BACKOFF * (2 ** min(failures - 1, 16)))


def relist_changes(known: Mapping[tuple[str, str], Any], items: Iterable[Any]) -> list[tuple[str, Any]]:
    """The changes between ``known`` (key -> last object seen) and a new listing, as a watch would deliver them.

    New objects are ``ADDED``, objects of another ``resourceVersion``
    ``MODIFIED``, objects no longer listed ``DELETED`` (with the last object
    seen); unchanged objects give nothing.  Deletions come last, in key order.
    """
    changes = []
    seen = set()
    for obj in items:
        key = object_key(obj)
        seen.add(key)
        before = known.get(key)
        if before is None:
            changes.append(("ADDED", obj))
        elif _version(before) != _version(obj) or _version(obj) is None:
            changes.append(("MODIFIED", obj))
    for key in sorted(set(known) - seen):
        changes.append(("DELETED", known[key]))
    return changes
