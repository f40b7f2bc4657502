# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The base class of every module of the collection.

A module subclasses :class:`TenancyModule`, declares ``argument_spec`` (its own
options; auth options are added from :mod:`auth` according to ``backends``)
and implements :meth:`run`, which fills ``self.result`` through
:meth:`changed`, :meth:`set_diff` and plain assignment.  Every exception that
escapes ``run`` goes through the one mapping path,
:func:`errors.from_exception`, and ends as one ``fail_json`` naming the
object and the cause.

Optional libraries are checked once, when the module starts: the ones the
module declares in ``required_libraries`` (or :meth:`needed_libraries` for
those only some options need) and the client library of the chosen
backend.  A missing one fails through ansible-core's
``missing_required_lib`` message with the import traceback, before any
request is sent.

A module that takes ``backend`` lists the options meant for one backend
only in :attr:`TenancyModule.backend_options`; one given with the other
backend fails before ``run`` with the one error of :mod:`backend_options`
(``option <name>: is for backend <other>``).
"""

from __future__ import annotations

import copy
import traceback
from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.auth import BACKENDS, auth_spec
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.backend_options import refuse_foreign_options
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import TenancyError, from_exception
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.libraries import (
    BACKEND_LIBRARIES,
    Library,
    import_error,
    missing_message,
)


class TenancyModule:
    """Shared option handling, check/diff mode, result and error mapping."""

    #: the module's own options
    argument_spec = {}
    #: extra AnsibleModule keyword arguments (mutually_exclusive, required_if, ...)
    module_kwargs = {}
    #: control planes the module works on; selects the auth options
    backends = BACKENDS
    #: the object the module is about, for errors raised outside any wrap_errors
    object_kind = "module"
    #: optional libraries the module needs whatever its options (the backend's client library is added)
    required_libraries: tuple[Library, ...] = ()
    #: options meant for one backend only, by backend (``{"metal3": (...), "ironic": (...)}``); refused with the other
    backend_options: dict[str, tuple[str, ...]] = {}
    #: by backend in use, what to use instead of an option of the other one (key ``*``: of any other)
    backend_instead: dict[str, dict[str, str]] = {}

    def __init__(self, argv_module: Any = None) -> None:
        spec = auth_spec(self.backends)
        spec.update(copy.deepcopy(self.argument_spec))
        if len(self.backends) > 1 and "backend" not in spec:
            spec["backend"] = dict(type="str", choices=list(self.backends), default=self.backends[0])
        kwargs = dict(supports_check_mode=True)  # module_kwargs may say otherwise
        kwargs.update(self.module_kwargs)
        self.module = argv_module or AnsibleModule(argument_spec=spec, **kwargs)
        self.params = self.module.params
        self.result = dict(changed=False)
        self.check_libraries()

    # -- optional libraries --------------------------------------------------
    def needed_libraries(self) -> tuple[Library, ...]:
        """The libraries this run needs: the declared ones and the backend's (override to add per option)."""
        return tuple(self.required_libraries) + BACKEND_LIBRARIES.get(self.backend, ())

    def check_libraries(self) -> None:
        """Fail once, with ``missing_required_lib`` and the import traceback, on the first missing library."""
        for library in self.needed_libraries():
            error = import_error(library)
            if error is not None:
                self.module.fail_json(msg=missing_message(library), exception=error)

    # -- what subclasses use -------------------------------------------------
    @property
    def check_mode(self) -> bool:
        return self.module.check_mode

    @property
    def diff_mode(self) -> bool:
        return self.module._diff  # pylint: disable=protected-access

    @property
    def backend(self) -> str:
        return self.params.get("backend") or self.backends[0]

    def changed(self, value: Any = True) -> None:
        """Mark the result as changed (never un-marks)."""
        self.result["changed"] = self.result["changed"] or bool(value)

    def set_diff(self, before: Any, after: Any) -> None:
        """Attach ``before``/``after`` to the result, only in diff mode."""
        if self.diff_mode:
            self.result["diff"] = dict(before=before, after=after)

    def warn(self, message: str) -> None:
        self.module.warn(message)

    def refuse_foreign_options(self) -> None:
        """The one rule: an option of :attr:`backend_options` meant for the other backend is an error naming it."""
        if len(self.backends) > 1 and self.backend_options:
            refuse_foreign_options(self.params, self.backend, self.backend_options, self.backend_instead)

    def run(self) -> None:
        raise NotImplementedError

    # -- entry point ---------------------------------------------------------
    def fail(self, error: TenancyError, **extra: Any) -> None:
        """One clear failure: ``<object>: <cause>``; the result so far is kept."""
        result = dict(self.result)
        result.update(extra)
        result.update(error.details)
        result.update(dict(object=error.obj, cause=error.cause, error_type=error.__class__.__name__))
        self.module.fail_json(msg=error.message, **result)

    def __call__(self) -> None:
        try:
            self.refuse_foreign_options()
            self.run()
        except TenancyError as error:
            self.fail(error)
        except Exception as exc:  # pylint: disable=broad-except
            # Anything a client library raised outside a wrap_errors block.
            self.fail(from_exception(self.object_kind, exc), exception=traceback.format_exc())
        self.module.exit_json(**self.result)
