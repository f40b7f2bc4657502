# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Who keeps the leases of Ironic nodes: ESI-Leap, or the collection itself in node fields.  Pure.

Option ``lease_provider`` (environment ``BMT_LEASE_PROVIDER``):

- ``auto`` (the default): ESI-Leap where the cloud runs it (its Keystone catalog has a ``lease`` service), else the
  node fields (``lessee`` and the lease records in ``properties``), so the collection never writes a ``lessee``
  under ESI-Leap's feet;
- ``esi_leap``: ESI-Leap, and a cloud without it is one error naming the option (nothing is written in node fields);
- ``ironic``: the node fields even where ESI-Leap runs (with a warning: ESI-Leap's manager ends only the leases it
  made, and takes back a node whose ``lessee`` it set).

:func:`choose_provider` takes the answer to "does the catalog have a ``lease`` service?" as a callable, asked only
when the choice depends on it, so that the decision stays free of clients.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ansible.module_utils.basic import env_fallback

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput

AUTO = "auto"
ESI_LEAP = "esi_leap"
IRONIC = "ironic"
CHOICES = (AUTO, ESI_LEAP, IRONIC)
#: the environment variable read when the option is not set
ENV = "BMT_LEASE_PROVIDER"

#: the option as modules declare it (no default in the spec, so that the environment variable is read; unset: auto)
LEASE_PROVIDER_SPEC = dict(lease_provider=dict(type="str", choices=list(CHOICES), fallback=(env_fallback, [ENV])))


@dataclasses.dataclass(frozen=True)
class ProviderChoice:
    """The provider a run uses, why, and a warning for the user (or ``None``)."""

    provider: str
    reason: str
    warning: str | None = None


def choose_provider(asked: str | None, runs_esi_leap: Callable[[], bool]) -> ProviderChoice:
    """The provider for option ``lease_provider`` = ``asked`` (``None``: ``auto``); ``runs_esi_leap()`` tells whether
    the cloud's catalog has a ``lease`` service.  ``esi_leap`` on a cloud without one is an :class:`InvalidInput`."""
    asked = asked or AUTO
    if asked not in CHOICES:
        raise InvalidInput("option lease_provider", "must be one of %s, got %s" % (", ".join(CHOICES), asked))
    found = runs_esi_leap()
    if asked == ESI_LEAP:
        if not found:
            raise InvalidInput(
                "option lease_provider",
                "is esi_leap but this cloud does not run ESI-Leap: its service catalog has no 'lease' service for "
                "these credentials' interface and region (use auto or ironic)",
            )
        return ProviderChoice(ESI_LEAP, "forced by option lease_provider")
    if asked == IRONIC:
        warning = None
        if found:
            warning = (
                "lease_provider is ironic on a cloud that runs ESI-Leap: the leases are written in node fields, "
                "which ESI-Leap neither knows nor ends"
            )
        return ProviderChoice(IRONIC, "forced by option lease_provider", warning)
    if found:
        return ProviderChoice(ESI_LEAP, "the service catalog has a 'lease' service (ESI-Leap)")
    return ProviderChoice(IRONIC, "the service catalog has no 'lease' service: leases are kept in node fields")
