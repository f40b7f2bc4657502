# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The optional Python libraries of the collection, and the one way a missing one is reported.

Every library a module or module_util may need is declared once here
(:data:`SUSHY`, :data:`KUBERNETES`, ...).  A missing one is always reported
with ansible-core's :func:`missing_required_lib` message and the import
traceback: the module base class checks the libraries a module declares
once, before ``run`` (``TenancyModule.required_libraries``); a module_util
that reaches a library the module did not declare (a library only some
options need) raises :class:`MissingLibrary`, which the base class turns
into the same failure.  Importing this file imports no optional library.
"""

from __future__ import annotations

import importlib
import traceback
from typing import NamedTuple

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput


class Library(NamedTuple):
    """An optional library: its distribution name (what to install), what is imported, why it is needed."""

    name: str
    module: str
    reason: str
    url: str | None = None


SUSHY = Library("sushy", "sushy", "to talk to BMCs through Redfish", "https://pypi.org/project/sushy/")
KUBERNETES = Library("kubernetes", "kubernetes.config", "for backend metal3", "https://pypi.org/project/kubernetes/")
OPENSTACKSDK = Library(
    "openstacksdk", "openstack.connection", "for backend ironic", "https://pypi.org/project/openstacksdk/"
)
JMESPATH = Library("jmespath", "jmespath", "for classification rules with when", "https://pypi.org/project/jmespath/")
RE2 = Library(
    "google-re2",
    "re2",
    "to evaluate RE2 patterns (matches of the sharing policy)",
    "https://pypi.org/project/google-re2/",
)
URLLIB3 = Library("urllib3", "urllib3", "for backend metal3", "https://pypi.org/project/urllib3/")
PYYAML = Library("PyYAML", "yaml", "to check cloud-config user data", "https://pypi.org/project/PyYAML/")

#: the client library each backend's connection needs
#: (the kubernetes library only for the kubeconfigs the light transport leaves to it: ``metal3.connection``)
BACKEND_LIBRARIES = {"metal3": (URLLIB3,), "ironic": (OPENSTACKSDK,)}

_PROBED: dict[str, str | None] = {}


def import_error(library: Library) -> str | None:
    """The traceback of importing ``library`` (``None`` when it imports); each library is tried once."""
    if library.module not in _PROBED:
        try:
            importlib.import_module(library.module)
            _PROBED[library.module] = None
        except ImportError:
            _PROBED[library.module] = traceback.format_exc()
    return _PROBED[library.module]


def missing_message(library: Library) -> str:
    """ansible-core's message for a missing library, naming what to install and why."""
    return missing_required_lib(library.name, reason=library.reason, url=library.url)


class MissingLibrary(InvalidInput):
    """A library is not installed; ``details["exception"]`` holds the import traceback."""

    def __init__(self, library: Library, import_traceback: str | None = None) -> None:
        self.library = library
        details = dict(exception=import_traceback or import_error(library) or "")
        super().__init__("python library %s" % library.name, missing_message(library), details)


def require(library: Library, import_traceback: str | None = None, available: bool | None = None) -> None:
    """Raise :class:`MissingLibrary` unless ``library`` imports.

    ``available`` (and ``import_traceback``) come from a module_util that
    imported the library itself (its ``HAS_*`` flag); without them it is tried.
    """
    if available is None:
        available = import_error(library) is None
    if not available:
        raise MissingLibrary(library, import_traceback)
