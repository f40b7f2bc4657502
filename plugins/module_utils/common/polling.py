# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The one wait loop of the collection.

:func:`poll` reads an object until a condition holds, on a monotonic clock:
every ``FIRST`` seconds for the first ``FAST_SECONDS`` (fake hardware and quick
steps finish within it), then at intervals growing by ``FACTOR`` up to
``LONGEST``.  An object that disappears while it is awaited ends the wait at
once (``gone``), rather than running to the timeout.
"""

from __future__ import annotations

import time
from typing import Callable, TypeVar

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    BackendError,
    NotFound,
    WaitTimeout,
)

FIRST = 0.05
FAST_SECONDS = 1.0
FACTOR = 1.25
LONGEST = 1.0

T = TypeVar("T")


def poll(
    fetch: Callable[[], T],
    done: Callable[[T], bool],
    timeout: float,
    what: str,
    failed: Callable[[T], str | None] | None = None,
    describe: Callable[[T], str] | None = None,
    gone: str | None = None,
    longest: float = LONGEST,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """Call ``fetch()`` until ``done(value)``; return the last value.

    ``timeout`` is in seconds (``0``: look once).  ``failed(value)`` may return
    a reason to stop early (:class:`BackendError`); ``describe(value)`` says
    where things stand when the time runs out (:class:`WaitTimeout`).  When
    ``gone`` is given, a ``None`` from ``fetch`` raises :class:`NotFound` with
    that cause at once.  All errors are about ``what``.
    """
    started = clock()
    deadline = started + max(0.0, float(timeout or 0))
    delay = FIRST
    while True:
        value = fetch()
        if done(value):
            return value
        if value is None and gone:
            raise NotFound(what, gone)
        problem = failed(value) if failed else None
        if problem:
            raise BackendError(what, problem)
        now = clock()
        if now >= deadline:
            where = ": %s" % describe(value) if describe else ""
            raise WaitTimeout(what, "not done after %s seconds%s" % (timeout, where))
        sleep(min(delay, deadline - now))
        if now - started >= FAST_SECONDS:
            delay = min(delay * FACTOR, longest)
