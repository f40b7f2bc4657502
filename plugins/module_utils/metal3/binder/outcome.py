# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The small named types of a binder pass: a :class:`Job` (one claim to act on)
and its :class:`Outcome` (what happened to it, as ``host_bind`` reports it).  Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple


class Job(NamedTuple):
    """One claim of the pass: apply a plan ``action`` to it, or (``action`` ``None``) release it (it is being deleted)."""

    claim: dict
    action: dict | None = None


@dataclass
class Outcome:
    """What happened to one claim (or swept host or Secret copy) during a pass."""

    namespace: str | None
    name: str | None
    action: str = "unchanged"
    host: str | None = None
    reason: str | None = None
    message: str | None = None
    host_namespace: str | None = None
    writes: int = 0
    error: str | None = None
    retry: bool = False
    bmc_accounts_removed: list[str] = field(default_factory=list)
    withheld: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The entry of ``host_bind``'s ``claims`` / ``swept`` / ``errors`` results."""
        result: dict[str, Any] = dict(
            namespace=self.namespace,
            name=self.name,
            action=self.action,
            host=self.host,
            host_namespace=self.host_namespace if self.host else None,
            reason=self.reason,
            message=self.message,
            writes=self.writes,
        )
        if self.error:
            result["error"] = self.error
        if self.bmc_accounts_removed:
            result["bmc_accounts_removed"] = list(self.bmc_accounts_removed)
        if self.withheld:
            result["withheld"] = [dict(item) for item in self.withheld]
        return result
