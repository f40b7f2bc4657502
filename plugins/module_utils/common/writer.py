# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Check mode, simulated in one place per backend: the writer a module's writes go through.

A runner decides what to change from what it read and hands each write to
its writer instead of testing check mode around it:

* :meth:`Writer.write` for one request (``write(what, call, *args,
  predicted=...)``): its answer; in check mode ``predicted``, nothing sent;
* :meth:`Writer.change` for a step that is several requests (and waits) in
  a real run: whether to make them.

Each marks the module changed.  In check mode the write is recorded in
:attr:`Writer.would` (what the run would do, in order) and the runner goes on
with the predicted object, the same way in both modes.  :attr:`Writer.check_mode`
stays readable for what is not a write (a wait, a read again after a write).

The Ironic backend's writer is :class:`ironic.writes.Writes` (a
:class:`Writer` with the writes of a claim); the Metal3 backend's is
:class:`metal3.writer.KubeWrites`, over the Kubernetes client of
:mod:`metal3.client` (its ``create_*``/``patch_*``/``replace_*``/``delete_*``).
Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Writer:
    """The writes of one module run on one backend.

    ``mod``: the TenancyModule marked changed by each write (``None``: nobody, then ``check_mode`` is given)."""

    def __init__(self, mod: Any, check_mode: bool | None = None) -> None:
        self.mod = mod
        self.check_mode = bool(mod.check_mode if check_mode is None else check_mode)
        self.would: list[str] = []

    def _changed(self) -> None:
        if self.mod is not None:
            self.mod.changed()

    def _change(self, what: str) -> bool:
        """Mark the run changed; whether to really write (not in check mode)."""
        self._changed()
        if self.check_mode:
            self.would.append(what)
            return False
        return True

    def change(self, what: str) -> bool:
        """A step of several requests (or one the runner sends itself): marks the run changed and says whether
        to really make it (not in check mode); in check mode it is recorded in :attr:`would`."""
        return self._change(what)

    def write(self, what: str, call: Callable[..., Any], *args: Any, predicted: Any = None, **kwargs: Any) -> Any:
        """One request: ``call(*args, **kwargs)`` and its answer, the run marked changed once it succeeded;
        in check mode ``what`` is recorded, the run marked changed and ``predicted`` returned, nothing sent."""
        if self.check_mode:
            self._change(what)
            return predicted
        result = call(*args, **kwargs)
        self._changed()
        return result
