# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The Metal3 backend's writer (:class:`common.writer.Writer` over :class:`client.KubeIO`): check mode simulated here.

The tenant claim code, ``host_register``, ``host_share`` and the binder's pass writer (``binder/writer.py``)
send every write through it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.writer import Writer


class KubeWrites(Writer):
    """The Metal3 writer: the writes of a module through a :class:`metal3.client.KubeIO` (``io``).

    In check mode each returns the object as the write would leave it (a create or replace: the body; a patch: the
    object the caller predicts; a delete: ``None``)."""

    def __init__(self, mod: Any, io: Any, check_mode: bool | None = None) -> None:
        super().__init__(mod, check_mode)
        self.io = io

    def _call(self, verb: str, kind: str) -> Callable[..., Any]:
        """``io.<verb>_<kind>``, looked up only when the write is sent."""

        def call(*args: Any) -> Any:
            return getattr(self.io, "%s_%s" % (verb, kind))(*args)

        return call

    def create(self, kind: str, namespace: str, body: dict) -> Any:
        """``io.create_<kind>(namespace, body)`` (``kind``: claim, host, secret)."""
        name = (body.get("metadata") or {}).get("name")
        call = self._call("create", kind)
        return self.write("create %s %s/%s" % (kind, namespace, name), call, namespace, body, predicted=body)

    def patch(self, kind: str, namespace: str, name: str, patch: dict, predicted: Any = None) -> Any:
        """``io.patch_<kind>(namespace, name, patch)``; in check mode ``predicted`` (the caller's
        ``apply_merge_patch(current, patch)``)."""
        call = self._call("patch", kind)
        return self.write("patch %s %s/%s" % (kind, namespace, name), call, namespace, name, patch, predicted=predicted)

    def replace(self, kind: str, namespace: str, name: str, body: dict) -> Any:
        """``io.replace_<kind>(namespace, name, body)``; in check mode ``body``."""
        call = self._call("replace", kind)
        return self.write("replace %s %s/%s" % (kind, namespace, name), call, namespace, name, body, predicted=body)

    def delete(self, kind: str, namespace: str, name: str) -> Any:
        """``io.delete_<kind>(namespace, name)``."""
        call = self._call("delete", kind)
        return self.write("delete %s %s/%s" % (kind, namespace, name), call, namespace, name)
