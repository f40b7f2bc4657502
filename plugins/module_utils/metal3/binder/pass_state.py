# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""What one binder pass reads, and its indexes: hosts (listed before claims), claims,
namespaces, the binder's Secret copies, the BMC credentials Secrets that keep BMC
data out of imported metadata, and the watches that follow hosts and claims
during the pass.  :class:`PassState` is what one pass of :class:`run.Binder` read
and decided (the dialect, the hosts reserved for a bind); it never writes (writes
are :class:`writer.Writer`).  :class:`bind.Bind` and :class:`release.Release` are
given it.
"""

from __future__ import annotations

import base64
import binascii
import threading

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    BackendError,
    InvalidInput,
    TenancyError,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import (
    get_path,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.parallel import beside
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import (
    API_VERSION,
    BINDING_LABEL,
    CLAIM_KIND,
    CLAIMS,
    COPY_CLAIM_UID_LABEL,
    HOSTS,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.planner import (
    host_is_candidate,
    host_key,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.bmc_data import bmc_needles, bmc_rules
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.bmo_controller_signal import (
    controller_problem,
    foreign_writes,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.bmo_upward import host_status_annotation
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.dialect import (
    AUTO,
    BMO,
    PROPOSAL,
    openapi_dialect,
    openapi_spec_fields,
    resolve_dialect,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.identity import (
    claim_dialect_of,
    claim_identity,
    claim_ref_matches,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.metadata_import import (
    has_import_candidates,
    host_offer,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.parsed import ParsedClaim, parse_claim
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.spec import DATA_FIELDS
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.upward import hardware_withheld
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.view import binding_label_value
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.client import (
    GROUP_VERSION,
    api_path,
)


def is_claim_ref(ref: object) -> bool:
    """Whether a ``consumerRef`` names a HostClaim."""
    return bool(
        isinstance(ref, dict)
        and (ref.get("apiVersion"), ref.get("kind")) == (API_VERSION, CLAIM_KIND)
        and ref.get("name")
    )


def ref_claim(ref: dict) -> dict:
    """A minimal claim dict for the claim a ``consumerRef`` names (to release a host whose claim is gone)."""
    return {"metadata": {"namespace": ref.get("namespace"), "name": ref.get("name"), "uid": ref.get("uid")}}


def host_name(host: dict) -> str:
    """The name of a BareMetalHost."""
    return host_key(host)[1]


def secret_text(secret: dict | None, key: str) -> str | None:
    """A decoded value of a Secret's ``data`` (``None`` when absent)."""
    raw = ((secret or {}).get("data") or {}).get(key)
    if not isinstance(raw, str) or not raw:
        return None
    try:
        return base64.b64decode(raw).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return raw


class PassState:
    """The world as one pass sees it: what it read (hosts and their indexes, namespaces, the dialect, the
    HostDeployPolicies, the Secret copies, BMC credentials), the watches that follow it, and the hosts
    reserved for a bind.  Reads go through ``io``; only the current view of hosts changes during the pass
    (:meth:`replace_host`, :meth:`set_hosts`).

    ``namespaces``, ``name`` and ``host_namespaces`` are the pass's scope (``None``: every namespace),
    ``annotation_domains`` the metadata a host may export (to know whose BMC credentials are needed),
    ``dialect`` the requested claim dialect and ``take_over`` whether claims another controller wrote
    are taken over.
    """

    #: from this many BMC credentials Secrets to read in one namespace, one list replaces the reads
    bmc_secret_list_min = 4

    def __init__(
        self,
        io,
        namespaces=None,
        name=None,
        host_namespaces=None,
        annotation_domains=(),
        dialect=AUTO,
        take_over=False,
    ):
        self.io = io
        self.namespaces = list(namespaces) if namespaces else None
        self.name = name
        self.host_namespaces = list(host_namespaces) if host_namespaces else None
        self.annotation_domains = tuple(annotation_domains or ())
        self.requested_dialect = dialect or AUTO
        self.take_over = bool(take_over)
        self.dialect = None
        self.taken_over = set()
        self.deploy_policies = []
        self._lock = threading.Lock()
        self.reserved = set()
        self.hosts = []
        self.host_index = {}
        self.by_ref = {}
        self.by_label = {}
        self.host_positions = {}
        self.namespace_labels = {}
        self.parsed_claims = {}
        self.copies = {}
        self.bmc_rules = {}
        self.bmc_secrets = {}
        self.offers = {}
        self.annotations = {}
        self.claims_watch = None
        self.hosts_watch = None
        self._watch_on_conflict = False

    def in_scope(self, namespace, name=None):
        """Whether the claim ``namespace/name`` is this pass's (``name`` ``None``: any claim of ``namespace``)."""
        if self.namespaces is not None and namespace not in self.namespaces:
            return False
        return self.name is None or name == self.name

    def _read_claims(self):
        """The claims (all those of the pass's namespaces, or the one it is for) and the namespaces' labels."""
        if self.name:
            claim = self.io.get_claim(self.namespaces[0], self.name)
            claims = [claim] if claim else []
        else:
            claims = self.io.list_claims(self.namespaces)
        self.namespace_labels = self.io.list_namespaces()
        return claims

    def read(self, sweep, watch):
        """Read the pass's world; returns the claims in scope.  ``sweep``: the Secret copies are read even when no
        claim needs them; ``watch``: follow hosts and claims during the pass once it meets another writer
        (:meth:`count_conflict`)."""
        # hosts first (see run's docstring): the claims are read once every host list has its first page, whose
        # resourceVersion its later pages are served at, so the claims are read after the hosts' snapshot while
        # the API server sends the hosts' later pages
        hosts, claims = beside(lambda snapshot: self.io.list_hosts(self.host_namespaces, snapshot), self._read_claims)
        missing = [namespace for namespace in self.namespaces or [] if namespace not in self.namespace_labels]
        if missing:
            raise InvalidInput("option namespaces", "namespace(s) %s do not exist" % ", ".join(missing))
        self.set_hosts(hosts)
        claims = [claim for claim in claims if self.in_scope(*claim_identity(claim)[:2])]
        self.parsed_claims = dict(((record.namespace, record.name), record) for record in map(parse_claim, claims))
        self.read_dialect(claims)
        self.confirm_labels(claims)
        self.prefetch_bmc_secrets(claims)
        if sweep or any(self._needs_copies(claim) for claim in claims):
            self.load_copies()
        self._watch_on_conflict = watch
        return claims

    def parsed(self, claim: dict) -> ParsedClaim:
        """The record of ``claim`` (:mod:`claim.parsed`): the one parsed when the pass read it when ``claim`` is
        that version, else ``claim`` parsed now (a newer read)."""
        record = self.parsed_claims.get(tuple(claim_identity(claim)[:2]))
        return record if record is not None and record.is_version_of(claim) else parse_claim(claim)

    def read_dialect(self, claims):
        """Settle the dialect; on baremetal-operator's, read the HostDeployPolicies and refuse to run beside
        another controller of the claims (``claim.bmo_controller_signal``).

        ``auto`` reads it from the claims (baremetal-operator's CRD requires ``spec.poweredOn``, the
        proposal's prunes it): no request; a forced dialect is checked against the served one.
        """
        if self.requested_dialect == AUTO:
            shapes = set(claim_dialect_of(claim) for claim in claims)
            self.dialect = BMO if BMO in shapes else (PROPOSAL if shapes else None)
        else:
            document = self.io.hostclaim_openapi()
            self.dialect = resolve_dialect(
                self.requested_dialect, openapi_dialect(document), openapi_spec_fields(document)
            )
        if self.dialect != BMO:
            return
        self.deploy_policies = self.io.list_deploy_policies(self.host_namespaces)
        writes = foreign_writes(claims)
        if writes and not self.take_over:
            raise BackendError("HostClaims of baremetal-operator's dialect", controller_problem(writes))
        self.taken_over = set("%s/%s" % (item.namespace, item.name) for item in writes)

    def count_conflict(self):
        """A write of this pass met another writer's (a 409): counted on ``io``, and the first one (when the pass
        was read with ``watch``) starts the watches (:meth:`start_watches`, from the versions listed).

        The watches are only early news for a pass that meets other writers: another binder's commit, a tenant's
        change, the operator's status writes. Opened from the start, they cost a pass that meets no one a third of
        its time for nothing (bench/bind.py, 1,000 hosts / 500 claims: 10.9 and 12.1 s against 7.8 and 9.6 s
        without them; the API server sends every write of the pass back to both). From the versions listed, they
        still deliver every change since the list.
        """
        self.io.count_conflict()
        with self._lock:
            start, self._watch_on_conflict = self._watch_on_conflict, False
        if start:
            self.start_watches()

    def start_watches(self):
        """Follow hosts and claims during the pass, from the versions just listed (cluster-wide, filtered by key)."""
        versions = self.io.list_versions
        host_paths = [api_path(GROUP_VERSION, HOSTS, namespace) for namespace in self.host_namespaces or [None]]
        if versions.get(host_paths[0]):
            self.hosts_watch = self.io.watch(api_path(GROUP_VERSION, HOSTS), versions[host_paths[0]])
        if not self.name:
            claim_paths = [api_path(GROUP_VERSION, CLAIMS, namespace) for namespace in self.namespaces or [None]]
            if versions.get(claim_paths[0]):
                self.claims_watch = self.io.watch(api_path(GROUP_VERSION, CLAIMS), versions[claim_paths[0]])

    def stop_watches(self):
        for watcher in (self.hosts_watch, self.claims_watch):
            if watcher is not None:
                watcher.stop()
        self.hosts_watch = self.claims_watch = None

    def claim_changed(self, claim):
        """The claims watch's newer event for ``claim`` (another binder or its tenant changed it during the pass),
        or ``None``."""
        return self.claims_watch.newer(claim) if self.claims_watch is not None else None

    def host_changed(self, host):
        """The hosts watch's newer ``(event type, host)`` for ``host`` (changed during the pass), or ``None``."""
        return self.hosts_watch.newer(host) if self.hosts_watch is not None else None

    def relist_hosts(self):
        """A new list of the hosts (a retry round); every reservation is dropped."""
        self.set_hosts(self.io.list_hosts(self.host_namespaces))
        self.reserved = set()

    def reserve(self, host):
        """Reserve ``host`` for one bind of this pass: False when a bind of this pass already tried it."""
        with self._lock:
            if host_key(host) in self.reserved:
                return False
            self.reserved.add(host_key(host))
            return True

    def is_candidate(self, host, claim, unanchored):
        """``planner.host_is_candidate`` with this pass's namespaces and HostDeployPolicies."""
        namespace = claim_identity(claim)[0]
        return host_is_candidate(
            host, self.parsed(claim), self.namespace_labels.get(namespace) or {}, self.deploy_policies, unanchored
        )[0]

    def is_taken_over(self, claim):
        """A claim another controller wrote, taken over (``claim.bmo_controller_signal``): the binder's status write must happen."""
        return "%s/%s" % claim_identity(claim)[:2] in self.taken_over

    def set_hosts(self, hosts):
        """A new view of the hosts, and its indexes: by key, by the claim ``consumerRef`` names, by binding label."""
        self.host_index = dict((host_key(host), host) for host in hosts)
        self.hosts = list(self.host_index.values())
        self.host_positions = dict((key, position) for position, key in enumerate(self.host_index))
        self.by_ref = {}
        self.by_label = {}
        for host in self.hosts:
            self._add_ref(host)
            self.by_label.setdefault(binding_label_value(host_name(host)), []).append(host_key(host))

    def replace_host(self, host):
        """A newer read of one host, in place: only that host's entries of the indexes change (a pass replaces
        thousands of hosts when binders run side by side)."""
        key = host_key(host)
        with self._lock:
            old = self.host_index.get(key)
            if old is not None:
                self._drop_ref(old)
                self.hosts[self.host_positions[key]] = host
            else:
                self.host_positions[key] = len(self.hosts)
                self.hosts.append(host)
                self.by_label.setdefault(binding_label_value(host_name(host)), []).append(key)
            self.host_index[key] = host
            self._add_ref(host)

    @staticmethod
    def _ref_key(host):
        ref = get_path(host, "spec", "consumerRef")
        return (ref.get("namespace"), ref.get("name")) if is_claim_ref(ref) else None

    def _add_ref(self, host):
        ref_key = self._ref_key(host)
        if ref_key is not None:
            # a new list, not an append: readers iterate the lists without the lock
            self.by_ref[ref_key] = [*self.by_ref.get(ref_key, []), host]

    def _drop_ref(self, host):
        ref_key = self._ref_key(host)
        if ref_key is not None:
            remaining = [other for other in self.by_ref.get(ref_key, []) if other is not host]
            if remaining:
                self.by_ref[ref_key] = remaining
            else:
                self.by_ref.pop(ref_key, None)

    def labelled_hosts(self, label):
        """The hosts of the current view whose binding label value is ``label``."""
        return [self.host_index[key] for key in self.by_label.get(label, [])]

    def bound_hosts(self, claim):
        """Hosts of the current view whose consumerRef points at ``claim``."""
        identity = claim_identity(claim)
        return [
            host for host in self.by_ref.get((identity.namespace, identity.name), []) if claim_ref_matches(host, claim)
        ]

    def confirm_labels(self, claims):
        """Re-read the host a binding label names when the host list does not confirm it (it may be newer)."""
        for claim in claims:
            label = (get_path(claim, "metadata", "labels") or {}).get(BINDING_LABEL)
            if not label or self.bound_hosts(claim):
                continue
            for host in self.labelled_hosts(label):
                fresh = self.io.get_host(*host_key(host))
                if fresh is not None:
                    self.replace_host(fresh)

    def _needs_copies(self, claim):
        spec = claim.get("spec") or {}
        return bool(get_path(claim, "metadata", "deletionTimestamp")) or any(spec.get(field) for field in DATA_FIELDS)

    def load_copies(self):
        """The binder's Secret copies, by claim uid (one list per pass)."""
        self.copies = {}
        for secret in self.io.list_secrets(COPY_CLAIM_UID_LABEL, self.host_namespaces):
            uid = (get_path(secret, "metadata", "labels") or {}).get(COPY_CLAIM_UID_LABEL)
            self.copies.setdefault(uid, []).append(secret)

    def copies_of(self, uid):
        """The binder's Secret copies of the claim ``uid``."""
        return self.copies.get(uid, [])

    def forget_copies(self, uid):
        """The copies of the claim ``uid`` are deleted: the sweep of orphaned copies skips them."""
        self.copies.pop(uid, None)

    def copies_by_claim(self):
        """``[(claim uid, copies)]``, in the order of the uids."""
        return sorted(self.copies.items(), key=lambda item: str(item[0]))

    def bmc_rule(self, host):
        """``(rules, blocked)`` for ``import_metadata``: the host's BMC data, user and password included, as
        ``bmc_rules`` (compiled once for every text of the host the pass matches against them).

        The credentials Secret is read once per pass and host, and only when
        the host has metadata that policy would import.  A Secret that cannot
        be read (other than not found) withholds everything (``blocked``).
        """
        key = host_key(host)
        with self._lock:
            if key in self.bmc_rules:
                return self.bmc_rules[key]
        username = password = blocked = None
        secret_name = self._credentials_to_read(host)
        if secret_name:
            try:
                if (key[0], secret_name) in self.bmc_secrets:
                    secret = self.bmc_secrets[(key[0], secret_name)]
                else:
                    secret = self.io.get_secret(key[0], secret_name)
            except TenancyError:
                secret, blocked = (
                    None,
                    "the BMC credentials Secret could not be read, so nothing is imported from this host",
                )
            username, password = secret_text(secret, "username"), secret_text(secret, "password")
        rule = (bmc_rules(bmc_needles(host, username, password)), blocked)
        with self._lock:
            self.bmc_rules[key] = rule
        return rule

    def _once_per_host_object(self, store, host, compute):
        """``compute()`` for ``host`` as this object holds it, kept in ``store`` by host: a bind's commit and sync
        read the same host object; a write's answer is a new object, computed again."""
        key = host_key(host)
        with self._lock:
            found = store.get(key)
        if found is not None and found[0] is host:
            return found[1]
        value = compute()
        with self._lock:
            store[key] = (host, value)
        return value

    def host_offer(self, host):
        """``(offer, hardware withheld)`` of ``host``: ``metadata_import.host_offer`` with the host's
        :meth:`bmc_rule` and ``upward.hardware_withheld``, once per host object."""

        def compute():
            rules, blocked = self.bmc_rule(host)
            return host_offer(host.get("metadata"), self.annotation_domains, rules, blocked), hardware_withheld(
                host, rules
            )

        return self._once_per_host_object(self.offers, host, compute)

    def host_status_annotation(self, host):
        """``bmo_upward.host_status_annotation`` of ``host`` (its addresses, BMC data left out by its
        :meth:`bmc_rule`), once per host object: a bind on baremetal-operator's dialect writes it at the commit and
        checks it at the sync."""
        return self._once_per_host_object(
            self.annotations, host, lambda: host_status_annotation(host, self.bmc_rule(host)[0])
        )

    def _credentials_to_read(self, host):
        """The credentials Secret name of ``host`` when its metadata has something to import, else ``None``."""
        name = get_path(host, "spec", "bmc", "credentialsName")
        if isinstance(name, str) and name and has_import_candidates(host.get("metadata"), self.annotation_domains):
            return name
        return None

    def prefetch_bmc_secrets(self, claims):
        """One list per host namespace instead of one read per host, where many credentials Secrets are needed.

        The reads a pass expects in a namespace are the Secrets of the hosts
        already bound to its claims, plus, for its pending claims, as many of
        the free hosts' Secrets as there are pending claims (the hosts a pass
        may pick are known before it picks). Only an optimisation: a namespace
        that cannot be listed leaves each host's Secret to ``bmc_rule`` (which
        fails closed).
        """
        needed, free, pending = {}, {}, 0
        for claim in claims:
            bound = self.bound_hosts(claim)
            if not bound and not get_path(claim, "metadata", "deletionTimestamp"):
                pending += 1
            for host in bound:
                name = self._credentials_to_read(host)
                if name:
                    needed.setdefault(host_key(host)[0], set()).add(name)
        if pending:
            for host in self.hosts:
                name = None if get_path(host, "spec", "consumerRef") else self._credentials_to_read(host)
                if name:
                    free.setdefault(host_key(host)[0], set()).add(name)
        for namespace in sorted(set(needed) | set(free)):
            names = needed.get(namespace, set()) | free.get(namespace, set())
            expected = len(needed.get(namespace, ())) + min(pending, len(free.get(namespace, ())))
            if expected < self.bmc_secret_list_min:
                continue
            try:
                secrets = self.io.list_items(
                    api_path("v1", "secrets", namespace), "Secrets in namespace %s" % namespace
                )
            except TenancyError:
                continue
            found = dict((get_path(secret, "metadata", "name"), secret) for secret in secrets)
            for name in names:
                self.bmc_secrets[(namespace, name)] = found.get(name)
