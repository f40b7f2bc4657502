# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""What the Event-Driven Ansible source says about HostClaims and BareMetalHosts, and which changes need a pass.  Pure.

The event source (``extensions/eda/plugins/event_source/metal3_events.py``)
follows both collections with watches; for every change it asks this file

* what to tell the rulebook (:func:`claim_event`, :func:`host_event`): names
  and states only.  An event is built field by field from what it may carry
  (names, the dialect, states, reasons of the binder's conditions); it never
  copies a label, an annotation, a spec or a status as a whole, so no BMC
  address, credential or credentials Secret name can reach it, whatever the
  host carries;
* which claim namespaces need a ``host_bind`` pass (:meth:`TenancyState.change`):
  a claim that is pending or being deleted, a bound claim whose spec or
  reserved annotations changed, a claim that vanished while bound; a host bound
  to a claim whose state changed (the binder copies it up); a host that became
  free (every namespace with a pending claim).  A change the binder made
  itself (a claim's status, once bound) needs none, so that a pass does not
  trigger the next one.

Both HostClaim dialects are read through :mod:`claim_view` (the bound host from
the binder's record, never from a label alone).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.claim_record import (
    ASSOCIATED,
    as_dict,
    as_str,
    normalise_conditions,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import PAUSED_ANNOTATION
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.dialect import BMO, PROPOSAL
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.view import (
    BMO_ASSOCIATED,
    bound_host,
    is_bmo_claim,
)

#: change types of a watch, plus LISTED (seen in the initial listing)
ADDED, MODIFIED, DELETED, LISTED = "ADDED", "MODIFIED", "DELETED", "LISTED"
CHANGES = (ADDED, MODIFIED, DELETED, LISTED)
#: a claim's state in events
PENDING, BOUND, DELETING, GONE = "pending", "bound", "deleting", "gone"
#: host provisioning states in which a host without consumer can be bound (binding.READY_STATES)
FREE_STATES = ("ready", "available")
#: claim annotation domains the binder passes down to the host (a change needs a pass)
RESERVED_ANNOTATION_PREFIXES = ("host.metal3.io/", "reboot.metal3.io", "inspect.metal3.io")


def key_of(obj: Any) -> tuple[str, str]:
    meta = as_dict(as_dict(obj).get("metadata"))
    return as_str(meta.get("namespace")) or "", as_str(meta.get("name")) or ""


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode("utf-8")).hexdigest()[:16]


# ------------------------------------------------------------------ claims


def claim_state(claim: Any) -> dict:
    """The claim's state as the source keeps it (a superset of the event; never emitted whole)."""
    claim = as_dict(claim)
    meta = as_dict(claim.get("metadata"))
    namespace, name = key_of(claim)
    bmo = is_bmo_claim(claim)
    host = bound_host(claim)
    conditions = normalise_conditions(as_dict(claim.get("status")).get("conditions"))
    association = next(
        (c for c in conditions if c.get("type") == (BMO_ASSOCIATED if bmo else ASSOCIATED)),
        {},
    )
    ready = next((c for c in conditions if c.get("type") == "Ready"), {})
    if meta.get("deletionTimestamp"):
        state = DELETING
    elif host:
        state = BOUND
    else:
        state = PENDING
    annotations = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
    reserved = dict(
        (k, v) for k, v in annotations.items() if isinstance(k, str) and k.startswith(RESERVED_ANNOTATION_PREFIXES)
    )
    return {
        "namespace": namespace,
        "name": name,
        "dialect": BMO if bmo else PROPOSAL,
        "state": state,
        "host": host,
        "ready": ready.get("status") == "True",
        "reason": as_str(association.get("reason")),
        "generation": meta.get("generation"),
        "reserved": _digest(reserved),
        # relayed to another cluster (the proposal's spec.credentials): its remote state comes back only by a pass
        "relayed": bool(as_dict(claim.get("spec")).get("credentials")),
    }


def claim_event(change: str, state: dict) -> dict:
    """The event for a claim change: names and states only."""
    return {
        "hostclaim": {
            "change": change,
            "namespace": state["namespace"],
            "name": state["name"],
            "dialect": state["dialect"],
            "state": GONE if change == DELETED else state["state"],
            "host": state["host"],
            "ready": state["ready"],
            "reason": state["reason"],
        }
    }


def claim_needs_pass(change: str, old: dict | None, new: dict) -> bool:
    """Whether a claim change needs a binder pass in its namespace."""
    if change == LISTED:
        return True  # the first listing: one pass over every namespace with claims
    if change == DELETED:
        return new["state"] != PENDING or (old is not None and old["state"] != PENDING)
    if new["state"] in (PENDING, DELETING):
        return True
    if old is None:
        return True
    moved = old["host"] is not None and old["host"] != new["host"]  # pending -> bound is the binder's own write
    return moved or old["generation"] != new["generation"] or old["reserved"] != new["reserved"]


# ------------------------------------------------------------------ hosts


def host_state(host: Any) -> dict:
    """The host's state as the source keeps it (a superset of the event; never emitted whole)."""
    host = as_dict(host)
    meta, spec, status = as_dict(host.get("metadata")), as_dict(host.get("spec")), as_dict(host.get("status"))
    namespace, name = key_of(host)
    ref = spec.get("consumerRef") if isinstance(spec.get("consumerRef"), dict) else None
    consumer = None
    if ref and as_str(ref.get("name")):
        consumer = {"namespace": as_str(ref.get("namespace")) or namespace, "name": ref["name"]}
    provisioning = as_str(as_dict(status.get("provisioning")).get("state"))
    annotations = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
    deleting = bool(meta.get("deletionTimestamp"))
    paused = PAUSED_ANNOTATION in annotations
    free = (
        consumer is None
        and not deleting
        and not paused
        and provisioning in FREE_STATES
        and not status.get("errorType")
        and as_str(status.get("operationalStatus")) in (None, "OK")
    )
    status_seen = dict((k, v) for k, v in status.items() if k not in ("lastUpdated",))
    return {
        "namespace": namespace,
        "name": name,
        "state": provisioning,
        "powered_on": status.get("poweredOn") if isinstance(status.get("poweredOn"), bool) else None,
        "consumer": consumer,
        "free": free,
        "deleting": deleting,
        # what the binder reads of the host, to tell a change it must copy up from one it made itself
        "fingerprint": _digest([meta.get("labels"), annotations, spec, status_seen]),
    }


def host_event(change: str, state: dict) -> dict:
    """The event for a host change: names and states only (no BMC address, credentials, labels or annotations)."""
    return {
        "baremetalhost": {
            "change": change,
            "namespace": state["namespace"],
            "name": state["name"],
            "state": "gone" if change == DELETED else state["state"],
            "powered_on": state["powered_on"],
            "consumer": dict(state["consumer"]) if state["consumer"] else None,
            "free": False if change == DELETED else state["free"],
            "deleting": state["deleting"],
        }
    }


# ------------------------------------------------------------------ the tenancy state the source follows


def _remember(store: dict, change: str, key: tuple, new: dict) -> dict | None:
    """Record ``new`` as the state of ``key`` in ``store`` (forgotten on ``DELETED``); the state it had before."""
    if change == DELETED:
        return store.pop(key, None)
    old = store.get(key)
    store[key] = new
    return old


class TenancyState:
    """The claims and hosts the source has seen, and the claim namespaces each change needs a pass for.

    ``namespaces`` (claim namespaces) and ``host_namespaces`` restrict what is
    followed (``None``: all); objects outside them are ignored.
    """

    def __init__(self, namespaces=None, host_namespaces=None):
        self.namespaces = set(namespaces) if namespaces else None
        self.host_namespaces = set(host_namespaces) if host_namespaces else None
        self.claims: dict[tuple[str, str], dict] = {}
        self.hosts: dict[tuple[str, str], dict] = {}

    def follows_claims_of(self, namespace: str | None) -> bool:
        return bool(namespace) and (self.namespaces is None or namespace in self.namespaces)

    def follows_hosts_of(self, namespace: str | None) -> bool:
        return bool(namespace) and (self.host_namespaces is None or namespace in self.host_namespaces)

    def pending_namespaces(self) -> set[str]:
        return set(state["namespace"] for state in self.claims.values() if state["state"] != BOUND)

    def relayed_namespaces(self) -> set[str]:
        """Every namespace with a claim relayed to another cluster (the relay poll: no watch sees that cluster)."""
        return set(state["namespace"] for state in self.claims.values() if state["relayed"])

    def claim_namespaces(self) -> set[str]:
        """Every namespace with a claim, or with a host bound to one (the resync pass)."""
        found = set(state["namespace"] for state in self.claims.values())
        for state in self.hosts.values():
            if state["consumer"] and self.follows_claims_of(state["consumer"]["namespace"]):
                found.add(state["consumer"]["namespace"])
        return found

    def change(self, kind: str, change: str, obj: Any) -> tuple[dict | None, set[str]]:
        """Record one change of a ``claim`` or ``host``; return ``(event or None, namespaces needing a pass)``."""
        if change not in CHANGES:
            raise ValueError("unknown change %r" % (change,))
        if kind == "claim":
            return self._claim(change, obj)
        if kind == "host":
            return self._host(change, obj)
        raise ValueError("unknown kind %r" % (kind,))

    def _claim(self, change, obj):
        key = key_of(obj)
        if not self.follows_claims_of(key[0]):
            return None, set()
        new = claim_state(obj)
        old = _remember(self.claims, change, key, new)
        needed = {key[0]} if claim_needs_pass(change, old, new) else set()
        return claim_event(change, new), needed

    def _host(self, change, obj):
        key = key_of(obj)
        if not self.follows_hosts_of(key[0]):
            return None, set()
        new = host_state(obj)
        old = _remember(self.hosts, change, key, new)
        needed = set()
        changed = old is None or change == DELETED or old["fingerprint"] != new["fingerprint"]
        if changed:
            for state in (old, new):
                consumer = state and state["consumer"]
                if consumer and self.follows_claims_of(consumer["namespace"]):
                    needed.add(consumer["namespace"])
        if new["free"] and change != DELETED and (old is None or not old["free"]):
            needed |= self.pending_namespaces()
        return host_event(change, new), needed
