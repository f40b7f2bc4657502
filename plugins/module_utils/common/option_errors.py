# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Errors about an object built from options name the option the user wrote.

The validation of a HostClaim speaks of its fields (``spec.userData: Secret
name 'Bad_Secret' must ...``): right for a claim read from the cluster, but a
user of ``host_claim`` wrote ``user_data_secret``, and must find that name in
the message. :class:`naming_options` re-raises an :class:`InvalidInput` whose
cause begins with a field path (``spec.<field>``) with the option that fills
that field put in front: ``option user_data_secret: spec.userData: ...``.
Pure, standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput

_PATH = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:\.[A-Za-z][A-Za-z0-9]*)*")


def option_of(cause: object, options: Mapping[str, str], prefix: str = "spec.") -> str | None:
    """The option behind the field path that ``cause`` begins with, the most specific one
    (``hostSelector.inNamespace`` before ``hostSelector``); ``None``: no path, or no option fills it."""
    if not isinstance(cause, str) or not cause.startswith(prefix):
        return None
    match = _PATH.match(cause[len(prefix) :])
    parts = match.group(0).split(".") if match else []
    for end in range(len(parts), 0, -1):
        option = options.get(".".join(parts[:end]))
        if option:
            return option
    return None


def name_the_option(error: InvalidInput, options: Mapping[str, str], prefix: str = "spec.") -> InvalidInput:
    """``error`` with the option of its field path named first in its cause (unchanged without one)."""
    option = option_of(error.cause, options, prefix)
    if option is None:
        return error
    return error.__class__(error.obj, "option %s: %s" % (option, error.cause), error.details)


class naming_options:  # pylint: disable=invalid-name
    """Context manager: an :class:`InvalidInput` raised inside names the option of the field it is about."""

    def __init__(self, options: Mapping[str, str], prefix: str = "spec."):
        self.options = options
        self.prefix = prefix

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if isinstance(exc, InvalidInput):
            named = name_the_option(exc, self.options, self.prefix)
            if named is not exc:
                raise named from None
        return False
