# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Python's cyclic garbage collector paused around work that decodes thousands of API objects.

Decoding and preparing tens of thousands of objects (hosts, claims) allocates
millions of containers, none of them garbage, and every full collection the
allocations trigger walks all of them again: at 20,000 claims that doubled the
inventory plugin's own CPU time (bench/inventory.py); a binder pass over
10,000 hosts and 5,000 claims spent 1.9 s of 45 s in the collector
(bench/bind.py's ``single_pass.gc``). Reference counting still frees what goes
out of use meanwhile (decoded JSON holds no cycles); cycles wait until the
collector runs again.
"""

from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def cyclic_gc_paused():
    """Pause the cyclic collector for the block, then restore it as it was (a pause inside a pause stays paused)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
