# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""A HostClaim parsed once: who it is, its dialect and its validated spec, in an immutable record.  Pure.

A binder pass parses each claim it reads once (:func:`parse_claim`) and hands
the record to the planner, the bind step (and through it ``claim.downward``)
and the relay (``relay.runner``, ``relay.remote``), which do not validate the
raw dict again: this module is the only caller of ``identity.validate_claim``
on a claim the binder read.  The raw object is kept (``obj``) for the writes
and for the functions that take a claim dict.  A record stands for one version
of the claim (its ``resourceVersion``): a newer read is parsed again.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import get_path
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.identity import (
    claim_dialect_of,
    claim_identity,
    validate_claim,
)


class ParsedClaim(NamedTuple):
    """One version of a HostClaim, validated once.

    ``spec`` is the normalised spec (``identity.validate_claim``, read-only), or ``None`` when it is invalid:
    then ``error`` is the ``InvalidInput`` validation raised.  ``obj`` is the claim dict as read.
    """

    namespace: str | None
    name: str | None
    uid: str | None
    resource_version: str | None
    dialect: str
    spec: Mapping[str, Any] | None
    error: InvalidInput | None
    obj: dict

    @property
    def selector(self) -> Mapping[str, Any] | None:
        """The validated ``hostSelector`` (``None`` when the spec is invalid)."""
        return None if self.spec is None else self.spec["hostSelector"]

    def valid_spec(self) -> Mapping[str, Any]:
        """The validated spec; raises (a new) ``InvalidInput`` as validation did when it is invalid."""
        if self.error is not None:
            raise InvalidInput(self.error.obj, self.error.cause, self.error.details)
        return self.spec

    def as_read(self, claim: dict) -> ParsedClaim:
        """This record with ``claim`` as its raw object: ``claim`` is another copy of the same version
        (:meth:`is_version_of`; a write simulated in check mode keeps the ``resourceVersion``), whose metadata the
        writes and the downward patch must see as it is."""
        return self if claim is self.obj else self._replace(obj=claim)

    def is_version_of(self, claim: dict | None) -> bool:
        """Whether ``claim`` is the version of the claim this record was parsed from (same uid and
        ``resourceVersion``; a claim without a ``resourceVersion`` only when it is the same object)."""
        if claim is self.obj:
            return True
        version = get_path(claim, "metadata", "resourceVersion")
        return version is not None and (claim_identity(claim), version) == (
            (self.namespace, self.name, self.uid),
            self.resource_version,
        )


def parse_claim(claim: dict) -> ParsedClaim:
    """Parse a HostClaim dict of either dialect once (an invalid spec is recorded, not raised)."""
    identity = claim_identity(claim)
    try:
        spec, error = MappingProxyType(validate_claim(claim)), None
    except InvalidInput as exc:
        spec, error = None, exc
    return ParsedClaim(
        identity.namespace,
        identity.name,
        identity.uid,
        get_path(claim, "metadata", "resourceVersion"),
        claim_dialect_of(claim),
        spec,
        error,
        claim,
    )


def as_parsed(claim: dict | ParsedClaim) -> ParsedClaim:
    """``claim`` when it is already a record, else the record of the claim dict (parsed now)."""
    return claim if isinstance(claim, ParsedClaim) else parse_claim(claim)
