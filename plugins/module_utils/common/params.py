# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Checks of option values shared by modules.  Pure."""

from __future__ import annotations

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput


def check_timeout(value: float | None, name: str = "wait_timeout") -> float | None:
    """A timeout must be a non-negative number of seconds."""
    if value is None:
        return None
    if value < 0:
        raise InvalidInput("option %s" % name, "must be zero or more seconds, got %s" % value)
    return value


def check_at_least(value: float | None, name: str, minimum: int = 1) -> float | None:
    """A count or size (workers, page size, seconds) must be ``minimum`` or more; ``None`` is unset."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
        raise InvalidInput("option %s" % name, "must be %s or more, got %r" % (minimum, value))
    return value
