# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""When the event source asks for a binder pass, and for which namespaces.  Pure (the clock is an argument).

The guarantee: one pass for a storm of changes, and never a second pass while
one is running.

* Changes add their claim namespaces to a pending set.  A pass is asked for
  once no change came for ``debounce`` seconds, or ``max_delay`` seconds after
  the first pending change even if changes keep coming (so a steady stream
  still gets passes).
* At most one pass is outstanding.  Changes that come while it runs (its own
  writes among them) wait in the pending set and make exactly one next pass,
  asked for when the running one has reported its end (:meth:`finished`).
* A pass that failed is asked for again (its namespaces added back) after a
  back-off (``retry_delay`` doubling up to ``max_retry_delay``); one that was
  not settled (claims deferred or in conflict) at once.  A pass that never
  reports its end is taken as failed after ``pass_timeout`` seconds.
"""

from __future__ import annotations

from collections.abc import Iterable


class PassCoalescer:
    """The pending namespaces, the outstanding pass, and the decision :meth:`take`."""

    def __init__(
        self,
        debounce: float = 0.1,
        max_delay: float = 1.0,
        pass_timeout: float = 900.0,
        retry_delay: float = 1.0,
        max_retry_delay: float = 30.0,
    ) -> None:
        if debounce < 0 or max_delay < debounce or pass_timeout <= 0 or retry_delay < 0:
            raise ValueError("need 0 <= debounce <= max_delay, pass_timeout > 0, retry_delay >= 0")
        self.debounce = debounce
        self.max_delay = max_delay
        self.pass_timeout = pass_timeout
        self.retry_delay = retry_delay
        self.max_retry_delay = max_retry_delay
        self.pending: set[str] = set()
        self.first_at: float | None = None
        self.last_at: float | None = None
        self.not_before = 0.0
        self.running: dict | None = None
        self.last_id = 0
        self.failures = 0
        #: changes folded into each pass asked for so far (``changes`` of the running one)
        self.changes = 0

    def add(self, namespaces: Iterable[str], now: float, urgent: bool = False) -> None:
        """Changes needing a pass in ``namespaces`` happened at ``now`` (``urgent``: ask without waiting)."""
        namespaces = set(namespace for namespace in namespaces if namespace)
        if not namespaces:
            return
        self.pending |= namespaces
        self.changes += 1
        if self.first_at is None:
            self.first_at = now
        if urgent:
            self.first_at = min(self.first_at, now - self.max_delay)
        if not urgent or self.last_at is None:
            self.last_at = now

    def take(self, now: float) -> dict | None:
        """The pass to ask for now (``{id, namespaces, changes}``), or ``None``.  It is then outstanding."""
        self.expire(now)
        if self.running is not None or not self.pending or now < self.not_before:
            return None
        quiet = now - self.last_at >= self.debounce
        overdue = now - self.first_at >= self.max_delay
        if not (quiet or overdue):
            return None
        self.last_id += 1
        request = {"id": self.last_id, "namespaces": sorted(self.pending), "changes": self.changes}
        self.running = dict(request, started=now)
        self.pending = set()
        self.first_at = self.last_at = None
        self.changes = 0
        return request

    def expire(self, now: float) -> bool:
        """Take an outstanding pass older than ``pass_timeout`` as failed; return whether one was."""
        if self.running is not None and now - self.running["started"] >= self.pass_timeout:
            self.finished(self.running["id"], ok=False, settled=False, now=now)
            return True
        return False

    def finished(self, pass_id: int, ok: bool, settled: bool, now: float) -> bool:
        """The pass ``pass_id`` ended; return ``False`` when it is not the outstanding one (ignored)."""
        running = self.running
        if running is None or running["id"] != pass_id:
            return False
        self.running = None
        if not ok:
            self.failures += 1
            delay = min(self.max_retry_delay, self.retry_delay * (2 ** min(self.failures - 1, 16)))
            self.not_before = now + delay
            self.add(running["namespaces"], now, urgent=True)
        else:
            self.failures = 0
            self.not_before = 0.0
            if not settled:
                self.add(running["namespaces"], now, urgent=True)
        return True
