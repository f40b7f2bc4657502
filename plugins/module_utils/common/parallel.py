# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The one way the collection runs independent work side by side.

:func:`parallel_map` is ``[func(item) for item in items]`` on up to
``workers`` threads, in order.  Each item fails alone: with
``errors="return"`` an exception takes the place of its result, with
``errors="raise"`` (the default) the first exception in item order is
raised once every item has finished.  One worker, or one item, runs inline.

:func:`beside` runs a long task on a thread and a second one here once
the first says it is far enough (an event it sets), so that the second
overlaps the first's remainder.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, TypeVar

T = TypeVar("T")
R = TypeVar("R")
S = TypeVar("S")


def parallel_map(
    func: Callable[[T], R], items: Sequence[T], workers: int, errors: str = "raise"
) -> list[R | BaseException]:
    """Results of ``func`` over ``items`` (order kept) on up to ``workers`` threads."""
    if errors not in ("raise", "return"):
        raise ValueError("errors must be 'raise' or 'return'")
    items = list(items)

    def one(item):
        try:
            return func(item)
        except Exception as exc:  # pylint: disable=broad-except
            return _Failed(exc)

    if workers <= 1 or len(items) < 2:
        results = [one(item) for item in items]
    else:
        with ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
            results = list(pool.map(one, items))
    if errors == "raise":
        for result in results:
            if isinstance(result, _Failed):
                raise result.exc
        return results
    return [result.exc if isinstance(result, _Failed) else result for result in results]


def beside(background: Callable[[threading.Event], R], then: Callable[[], S]) -> tuple[R, S]:
    """``(background(ready), then())``: ``background`` runs on a thread, ``then`` here once ``background`` has set
    ``ready`` or ended.  A ``background`` that fails before ``then`` starts raises its error and ``then`` is not run;
    otherwise both finish before either's error (``then``'s first) is raised."""
    ready = threading.Event()
    with ThreadPoolExecutor(max_workers=1) as pool:
        running = pool.submit(background, ready)
        running.add_done_callback(lambda _running: ready.set())
        ready.wait()
        if running.done():
            running.result()
        done = then()
        return running.result(), done


class _Failed:
    __slots__ = ("exc",)

    def __init__(self, exc: BaseException):
        self.exc = exc
