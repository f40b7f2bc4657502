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
once (``gone``), rather than running to the timeout.  A service that cannot be
reached while it is read (an error whose ``details`` say ``service_unreachable``: a
restarted API server, Ironic or Keystone) does not end the wait: it is read
again until it answers or the time runs out, and then that error is raised.
For ``COMING_BACK`` seconds after such an error, the answers of a service that
is starting again (403 while a kube-apiserver's authorization caches fill, 429,
503) are read again too.
"""

from __future__ import annotations

import time
from typing import Callable, TypeVar

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    BackendError,
    NotFound,
    TenancyError,
    WaitTimeout,
)

FIRST = 0.05
FAST_SECONDS = 1.0
FACTOR = 1.25
LONGEST = 1.0
#: seconds after a service was unreachable during which its start-up answers are retried
COMING_BACK = 30.0
#: the HTTP statuses of a service starting again
_STARTING = (403, 429, 503)

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
    service: str | None = None,
) -> T:
    """Call ``fetch()`` until ``done(value)``; return the last value.

    ``timeout`` is in seconds (``0``: look once).  ``failed(value)`` may return
    a reason to stop early (:class:`BackendError`); ``describe(value)`` says
    where things stand when the time runs out (:class:`WaitTimeout`).  When
    ``gone`` is given, a ``None`` from ``fetch`` raises :class:`NotFound` with
    that cause at once.  All errors are about ``what``; ``service`` names who
    was to finish it in the time-out's message (``not done by Ironic after``).
    """
    started = clock()
    deadline = started + max(0.0, float(timeout or 0))
    delay = FIRST
    coming_back = None  # until when a service that was unreachable may still be starting
    while True:
        try:
            value = fetch()
        except TenancyError as error:
            now = clock()
            unreachable = bool(error.details.get("service_unreachable"))
            starting = coming_back is not None and now < coming_back and error.details.get("status") in _STARTING
            if not (unreachable or starting) or now >= deadline:
                if (unreachable or starting) and now > started:
                    error.cause = "%s (still so when the wait of %s seconds ran out)" % (error.cause, timeout)
                raise
            if unreachable:
                coming_back = now + COMING_BACK
            sleep(min(max(delay, 0.5), deadline - now))
            continue
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
            by = " by %s" % service if service else ""
            raise WaitTimeout(what, "not done%s after %s seconds%s" % (by, timeout, where))
        sleep(min(delay, deadline - now))
        if now - started >= FAST_SECONDS:
            delay = min(delay * FACTOR, longest)
