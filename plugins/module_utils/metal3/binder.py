# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""One reconcile pass of ``host_bind``: the binder.

:class:`Binder` lists hosts, claims, namespaces and the binder's Secret
copies once, asks the pure model (:mod:`binding`, :mod:`claim_sync`) what to
do, and applies it, several claims at a time.  Every write of a claim or a host carries a
``resourceVersion`` precondition; a 409 means somebody else changed the
object first, and the binder re-reads it, tries the next candidate, or
leaves the claim to the next pass.  Kubernetes is reached through :class:`client.KubeIO`.

The write order that makes concurrent binders safe:

1. hosts are listed before claims, so a host bound to a claim that is not in
   the claim list points at a claim that was deleted (the sweep re-reads the
   claim before it releases anything);
2. a bind writes the host's ``consumerRef`` first, then commits on the claim
   (binding label, finalizer, imported metadata) with the claim's
   ``resourceVersion`` as observed when planning.  A binder whose commit gets
   a 409 re-reads the claim: if another binder committed another host, it
   undoes its own ``consumerRef``;
3. a claim that carries a binding label which the host list does not confirm
   has that host re-read before planning (it may have been bound after the
   list); a label that the host does not confirm is erased, never honoured;
4. during the pass the binder follows hosts and claims with a watch (from the
   versions it listed): a claim another binder (or its tenant) changed is left
   to the next pass, a host another binder took is skipped without a write.
   Each binder works through the claims in its own order.  This only saves
   conflicts; correctness rests on the preconditions.
"""

import base64
import binascii
import datetime
import hashlib
import os
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    TenancyError,
    from_exception,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import (
    apply_merge_patch,
    get_path,
    with_precondition,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import (
    API_VERSION,
    BINDING_LABEL,
    CLAIM_KIND,
    CLAIMS,
    COPY_CLAIM_ANNOTATION,
    COPY_CLAIM_NAMESPACE_LABEL,
    COPY_CLAIM_UID_LABEL,
    FINALIZER,
    HOSTS,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binding import (
    bind_patch,
    find_adopted_host,
    host_is_candidate,
    host_key,
    plan_pass,
    release_plan,
    release_step,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim_spec import DATA_FIELDS
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim_sync import (
    EXPORT_ANNOTATION_DOMAINS,
    binding_label_fix,
    bmc_needles,
    claim_identity,
    claim_ref_matches,
    downward_patch,
    finalizer_patch,
    hardware_withheld,
    has_import_candidates,
    import_metadata,
    merge_patches,
    one_shot_cleanup_patch,
    pending_status,
    ready_problem,
    secret_copy,
    secret_copy_names,
    secret_copy_patch,
    status_patch,
    upward_status,
    validate_claim,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim_view import binding_label_value
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.client import (
    GROUP_VERSION,
    api_path,
    claim_label,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.sharing_policy import (
    host_policy,
    validate_policy,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import accounts as bmc_access
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish.account_rules import (
    LEDGER_ANNOTATION,
    ledger_load,
)


def now_rfc3339():
    """The current UTC time as Kubernetes writes it (seconds precision)."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def default_binder_id():
    """``<hostname>:<pid>``: distinct for concurrent binders, so that they spread over candidates."""
    return "%s:%d" % (socket.gethostname(), os.getpid())


# ---------------------------------------------------------------------------
# One binder pass
# ---------------------------------------------------------------------------


class _Outcome:
    """What happened to one claim (or swept host) during a pass."""

    def __init__(self, namespace, name, action="unchanged", host=None, reason=None, message=None):
        self.namespace = namespace
        self.name = name
        self.action = action
        self.host = host
        self.host_namespace = None
        self.reason = reason
        self.message = message
        self.writes = 0
        self.error = None
        self.retry = False
        self.bmc_accounts_removed = []
        self.withheld = []

    def as_dict(self):
        result = dict(
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


def _is_claim_ref(ref):
    return (
        isinstance(ref, dict)
        and (ref.get("apiVersion"), ref.get("kind")) == (API_VERSION, CLAIM_KIND)
        and ref.get("name")
    )


def _ref_claim(ref):
    """A minimal claim dict for the claim a ``consumerRef`` names (to release a host whose claim is gone)."""
    return {"metadata": {"namespace": ref.get("namespace"), "name": ref.get("name"), "uid": ref.get("uid")}}


def _host_name(host):
    return host_key(host)[1]


def _secret_text(secret, key):
    """A decoded value of a Secret's ``data`` (``None`` when absent)."""
    raw = ((secret or {}).get("data") or {}).get(key)
    if not isinstance(raw, str) or not raw:
        return None
    try:
        return base64.b64decode(raw).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return raw


class Binder:
    """One reconcile pass of ``host_bind`` (see the module documentation for what it does)."""

    #: retry rounds (re-list and re-plan) for claims whose every candidate was taken by someone else
    conflict_rounds = 2
    #: from this many BMC credentials Secrets to read in one namespace, one list replaces the reads
    bmc_secret_list_min = 4

    def __init__(
        self,
        io,
        binder_id=None,
        namespaces=None,
        name=None,
        host_namespaces=None,
        annotation_domains=EXPORT_ANNOTATION_DOMAINS,
        sweep=True,
        check_mode=False,
        workers=8,
    ):
        if name and (not namespaces or len(namespaces) != 1):
            raise InvalidInput("option name", "needs exactly one namespace in namespaces")
        self.io = io
        self.binder_id = binder_id or default_binder_id()
        self.namespaces = list(namespaces) if namespaces else None
        self.name = name
        self.host_namespaces = list(host_namespaces) if host_namespaces else None
        self.annotation_domains = tuple(annotation_domains or ())
        self.sweep = sweep
        self.check_mode = check_mode
        self.workers = max(1, int(workers or 1))
        self.now = now_rfc3339()
        self.changed = False
        self._lock = threading.Lock()
        self.reserved = set()
        self.hosts = []
        self.host_index = {}
        self.by_ref = {}
        self.namespace_labels = {}
        self.copies = {}
        self.bmc_rules = {}
        self.bmc_secrets = {}
        self.timings = {}
        self.claims_watch = None
        self.hosts_watch = None

    # -- writes (simulated in check mode) ----------------------------------------
    def _wrote(self, outcome):
        """Count one write that succeeded (or, in check mode, would be made)."""
        outcome.writes += 1
        with self._lock:
            self.changed = True

    def write_host(self, host, patch, outcome):
        if not patch:
            return host
        if self.check_mode:
            self._wrote(outcome)
            return apply_merge_patch(
                host, dict(patch, metadata=dict(patch.get("metadata") or {}, resourceVersion=None))
            )
        namespace, name = host_key(host)
        result = self.io.patch_host(namespace, name, patch)
        self._wrote(outcome)
        return result

    def write_claim(self, claim, patch, outcome, status=False):
        if not patch:
            return claim
        if self.check_mode:
            self._wrote(outcome)
            return apply_merge_patch(
                claim,
                dict(
                    patch,
                    metadata=dict(
                        patch.get("metadata") or {}, resourceVersion=get_path(claim, "metadata", "resourceVersion")
                    ),
                ),
            )
        namespace, name, _dummy = claim_identity(claim)
        result = self.io.patch_claim(namespace, name, patch, status=status)
        self._wrote(outcome)
        return result

    def create_copy(self, body, outcome):
        result = body if self.check_mode else self.io.create_secret(get_path(body, "metadata", "namespace"), body)
        self._wrote(outcome)
        return result

    def patch_copy(self, current, patch, outcome):
        if self.check_mode:
            result = apply_merge_patch(current, patch)
        else:
            result = self.io.patch_secret(
                get_path(current, "metadata", "namespace"), get_path(current, "metadata", "name"), patch
            )
        self._wrote(outcome)
        return result

    def delete_copy(self, secret, outcome):
        if not self.check_mode:
            self.io.delete_secret(get_path(secret, "metadata", "namespace"), get_path(secret, "metadata", "name"))
        self._wrote(outcome)

    # -- reading the world ---------------------------------------------------------
    def _in_scope(self, namespace, name=None):
        if self.namespaces is not None and namespace not in self.namespaces:
            return False
        return self.name is None or name == self.name

    def read(self):
        started = time.time()
        hosts = self.io.list_hosts(self.host_namespaces)  # hosts first: see the module docstring
        if self.name:
            claim = self.io.get_claim(self.namespaces[0], self.name)
            claims = [claim] if claim else []
        else:
            claims = self.io.list_claims(self.namespaces)
        self.namespace_labels = self.io.list_namespaces()
        missing = [namespace for namespace in self.namespaces or [] if namespace not in self.namespace_labels]
        if missing:
            raise InvalidInput("option namespaces", "namespace(s) %s do not exist" % ", ".join(missing))
        self.set_hosts(hosts)
        claims = [claim for claim in claims if self._in_scope(*claim_identity(claim)[:2])]
        self.confirm_labels(claims)
        self.prefetch_bmc_secrets(claims)
        if self.sweep or any(self._needs_copies(claim) for claim in claims):
            self.load_copies()
        if not self.check_mode:
            self.start_watches()
        self.timings["read"] = round(time.time() - started, 4)
        return claims

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

    def set_hosts(self, hosts):
        self.host_index = dict((host_key(host), host) for host in hosts)
        self._index()

    def replace_host(self, host):
        with self._lock:
            self.host_index[host_key(host)] = host
            self._index()

    def _index(self):
        hosts = list(self.host_index.values())
        by_ref = {}
        for host in hosts:
            ref = get_path(host, "spec", "consumerRef")
            if _is_claim_ref(ref):
                by_ref.setdefault((ref.get("namespace"), ref.get("name")), []).append(host)
        self.hosts, self.by_ref = hosts, by_ref

    def bound_hosts(self, claim):
        """Hosts of the current view whose consumerRef points at ``claim``."""
        namespace, name, _dummy = claim_identity(claim)
        return [host for host in self.by_ref.get((namespace, name), []) if claim_ref_matches(host, claim)]

    def confirm_labels(self, claims):
        """Re-read the host a binding label names when the host list does not confirm it (it may be newer)."""
        by_label = {}
        for host in self.hosts:
            by_label.setdefault(binding_label_value(_host_name(host)), []).append(host)
        for claim in claims:
            label = (get_path(claim, "metadata", "labels") or {}).get(BINDING_LABEL)
            if not label or self.bound_hosts(claim):
                continue
            for host in by_label.get(label, []):
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

    # -- the pass ------------------------------------------------------------------
    def run(self):
        try:
            return self._run()
        finally:
            self.stop_watches()

    def _job_order(self, claim):
        """Each binder works through the claims in its own order, so that concurrent binders rarely meet."""
        namespace, name, uid = claim_identity(claim)
        return hashlib.sha256(
            ("%s\0%s" % (self.binder_id, uid or "%s/%s" % (namespace, name))).encode("utf-8")
        ).hexdigest()

    def _run(self):
        started = time.time()
        claims = self.read()
        before = self.bindings(claims)
        planned = time.time()
        active = [claim for claim in claims if not get_path(claim, "metadata", "deletionTimestamp")]
        deleting = [
            claim
            for claim in claims
            if get_path(claim, "metadata", "deletionTimestamp")
            and FINALIZER in (get_path(claim, "metadata", "finalizers") or [])
        ]
        plan = plan_pass(active, self.hosts, self.namespace_labels, self.binder_id)
        self.timings["plan"] = round(time.time() - planned, 4)
        claims_by_key = dict((tuple(claim_identity(claim)[:2]), claim) for claim in claims)
        jobs = [
            (self.apply_action, action, claims_by_key[(action["claim"]["namespace"], action["claim"]["name"])])
            for action in plan
        ]
        jobs.extend((self.release, claim, None) for claim in deleting)
        applying = time.time()
        order = sorted(
            range(len(jobs)), key=lambda i: self._job_order(jobs[i][2] if jobs[i][2] is not None else jobs[i][1])
        )
        done = self.execute([jobs[i] for i in order])
        outcomes = [None] * len(jobs)
        for position, index in enumerate(order):
            outcomes[index] = done[position]
        outcomes = self.retry_conflicts(outcomes)
        swept = self.sweep_hosts(claims) if self.sweep else []
        self.timings["apply"] = round(time.time() - applying, 4)
        self.timings["total"] = round(time.time() - started, 4)
        return self.report(claims, outcomes, swept, before)

    def execute(self, jobs):
        def run(job):
            function, first, second = job
            namespace, name, _dummy = claim_identity(second if function == self.apply_action else first)
            outcome = _Outcome(namespace, name)
            claim = second if function == self.apply_action else first
            if self.claims_watch is not None and self.claims_watch.newer(claim) is not None:
                outcome.action = "deferred"
                outcome.message = (
                    "the claim changed during the pass (another binder or its tenant); left to the next pass"
                )
                return outcome
            try:
                function(first, second, outcome) if second is not None else function(first, outcome)
            except TenancyError as exc:
                outcome.action, outcome.error = "error", exc.message
            except Exception as exc:  # pylint: disable=broad-except
                outcome.action, outcome.error = "error", from_exception(claim_label(namespace, name), exc).message
            return outcome

        if self.workers == 1 or len(jobs) < 2:
            return [run(job) for job in jobs]
        pool = ThreadPoolExecutor(max_workers=min(self.workers, len(jobs)))
        try:
            return list(pool.map(run, jobs))
        finally:
            pool.shutdown(wait=True)

    def retry_conflicts(self, outcomes):
        """Re-list and re-plan claims that lost every candidate to other binders (at most ``conflict_rounds`` times)."""
        for _dummy in range(self.conflict_rounds):
            retry = [outcome for outcome in outcomes if outcome.retry]
            if not retry or self.check_mode:
                break
            self.set_hosts(self.io.list_hosts(self.host_namespaces))
            self.reserved = set()
            fresh = [self.io.get_claim(outcome.namespace, outcome.name) for outcome in retry]
            fresh = [claim for claim in fresh if claim and not get_path(claim, "metadata", "deletionTimestamp")]
            self.confirm_labels(fresh)
            by_key = dict((tuple(claim_identity(claim)[:2]), claim) for claim in fresh)
            plan = plan_pass(fresh, self.hosts, self.namespace_labels, self.binder_id)
            again = dict(
                ((o.namespace, o.name), o)
                for o in self.execute(
                    [
                        (self.apply_action, action, by_key[(action["claim"]["namespace"], action["claim"]["name"])])
                        for action in plan
                    ]
                )
            )
            merged = []
            for outcome in outcomes:
                replacement = again.get((outcome.namespace, outcome.name)) if outcome.retry else None
                if replacement is not None:
                    replacement.writes += outcome.writes
                merged.append(replacement or outcome)
            outcomes = merged
        for outcome in outcomes:
            if outcome.retry:
                outcome.action = "conflict"
                outcome.message = "every candidate host was taken by another binder; retried on the next pass"
        return outcomes

    # -- actions ---------------------------------------------------------------------
    def apply_action(self, action, claim, outcome):
        kind = action["action"]
        if kind == "bind":
            return self.bind(action, claim, outcome)
        if kind in ("adopt", "bound"):
            host = self.host_index[(action["host"]["namespace"], action["host"]["name"])]
            outcome.host, outcome.host_namespace = _host_name(host), host_key(host)[0]
            outcome.action = "adopted" if kind == "adopt" else "unchanged"
            return self.sync(claim, host, outcome)
        return self.pending(action, claim, outcome)

    def pending(self, action, claim, outcome):
        outcome.action, outcome.reason, outcome.message = "pending", action["reason"], action["message"]
        meta = merge_patches(
            action.get("claim_patch"), import_metadata(claim.get("metadata"), None, self.annotation_domains)["patch"]
        )
        try:
            claim = self.write_claim(claim, with_precondition(meta, claim), outcome)
            status = pending_status(claim.get("status"), action["reason"], action["message"], self.now)
            patch = status_patch(claim.get("status"), status)
            self.write_claim(claim, with_precondition(patch, claim), outcome, status=True)
        except (Conflict, NotFound):
            # someone (another binder, the tenant) changed the claim since the list: the next pass sees it
            self.io.count_conflict()

    def _reserve(self, host):
        with self._lock:
            if host_key(host) in self.reserved:
                return False
            self.reserved.add(host_key(host))
            return True

    def _try_host(self, host, claim, outcome):
        """Write ``consumerRef`` on ``host``; the updated host, or ``None`` if someone else took it."""
        namespace = claim_identity(claim)[0]
        for attempt in range(2):
            try:
                return self.write_host(host, bind_patch(host, claim), outcome)
            except Conflict:
                self.io.count_conflict()
                if attempt:
                    return None
                host = self.io.get_host(*host_key(host))
                if host is None:
                    return None
                ok, _dummy = host_is_candidate(host, claim, self.namespace_labels.get(namespace) or {})
                if not ok:
                    return None
        return None

    def bind(self, action, claim, outcome):
        chosen = [(action["host"]["namespace"], action["host"]["name"])]
        chosen.extend((ref["namespace"], ref["name"]) for ref in action.get("alternatives") or [])
        bound = None
        namespace = claim_identity(claim)[0]
        for position, key in enumerate(chosen):
            host = self.host_index.get(key)
            if host is None or not self._reserve(host):
                continue
            seen = self.hosts_watch.newer(host) if self.hosts_watch is not None else None
            if seen is not None:
                if seen[0] == "DELETED":
                    continue
                host = seen[1]
                self.replace_host(host)
            if (seen is not None or position) and not host_is_candidate(
                host, claim, self.namespace_labels.get(namespace) or {}
            )[0]:
                continue
            bound = self._try_host(host, claim, outcome)
            if bound is not None:
                break
        if bound is None:
            outcome.action, outcome.retry = "conflict", True
            return None
        outcome.host, outcome.host_namespace = _host_name(bound), host_key(bound)[0]
        claim = self.commit(claim, bound, outcome)
        if claim is None:
            return None
        outcome.action, outcome.reason = "bound", "Bound"
        outcome.message = "bound to host %s" % outcome.host
        return self.sync(claim, bound, outcome, committed=True)

    def _commit_patch(self, claim, host):
        return with_precondition(
            merge_patches(
                binding_label_fix(claim, _host_name(host)),
                {"metadata": {"finalizers": self._with_finalizer(claim)}} if self._with_finalizer(claim) else {},
                self.import_from(claim, host)["patch"],
            ),
            claim,
        )

    # -- host metadata up to the claim, never BMC data -------------------------------------
    def bmc_rule(self, host):
        """``(needles, blocked)`` for ``import_metadata``: the host's BMC data, user and password included.

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
            username, password = _secret_text(secret, "username"), _secret_text(secret, "password")
        rule = (bmc_needles(host, username, password), blocked)
        with self._lock:
            self.bmc_rules[key] = rule
        return rule

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

    def import_from(self, claim, host, outcome=None):
        """``import_metadata`` of ``host`` onto ``claim``; records what was withheld on ``outcome`` (for the owner)."""
        needles, blocked = self.bmc_rule(host)
        imported = import_metadata(
            claim.get("metadata"), host.get("metadata"), self.annotation_domains, needles, blocked
        )
        if outcome is not None:
            outcome.withheld = [
                dict(item, host="%s/%s" % host_key(host), claim="%s/%s" % claim_identity(claim)[:2])
                for item in imported["withheld"] + hardware_withheld(host, needles)
            ]
        return imported

    @staticmethod
    def _with_finalizer(claim):
        finalizers = list(get_path(claim, "metadata", "finalizers") or [])
        return None if FINALIZER in finalizers else [*finalizers, FINALIZER]

    def commit(self, claim, host, outcome):
        """Record the binding on the claim (precondition: the claim as planned); undo the host on a lost race."""
        for attempt in range(2):
            try:
                return self.write_claim(claim, self._commit_patch(claim, host), outcome)
            except NotFound:
                self.undo(host, claim, outcome)
                outcome.action, outcome.message = "gone", "the claim was deleted while binding"
                return None
            except Conflict:
                self.io.count_conflict()
                fresh = self.io.get_claim(*claim_identity(claim)[:2])
                if (
                    attempt
                    or fresh is None
                    or get_path(fresh, "metadata", "deletionTimestamp")
                    or claim_identity(fresh)[2] != claim_identity(claim)[2]
                    or self._bound_elsewhere(fresh, host)
                ):
                    self.undo(host, claim, outcome)
                    outcome.action = "lost"
                    outcome.message = "another binder bound the claim first"
                    return None
                claim = fresh
        return None

    def _bound_elsewhere(self, claim, host):
        """True if the claim's binding label names another host that really points at the claim."""
        label = (get_path(claim, "metadata", "labels") or {}).get(BINDING_LABEL)
        if not label or label == binding_label_value(_host_name(host)):
            return False
        for other in list(self.hosts):
            if binding_label_value(_host_name(other)) == label and host_key(other) != host_key(host):
                fresh = self.io.get_host(*host_key(other))
                if fresh is not None and claim_ref_matches(fresh, claim):
                    return True
        return False

    def undo(self, host, claim, outcome):
        """Take back a ``consumerRef`` this binder wrote for a claim it could not commit."""
        for _dummy in range(3):
            try:
                self.write_host(host, release_plan(host, claim, None), outcome)
                return
            except Conflict:
                self.io.count_conflict()
                host = self.io.get_host(*host_key(host))
                if host is None or not claim_ref_matches(host, claim):
                    return

    # -- keeping a bound claim and its host in sync ---------------------------------------
    def _data_copies(self, claim, host, outcome):
        """Make the Secret copies; ``(names by field, problem or None)``."""
        spec = validate_claim(claim)
        names = secret_copy_names(claim)
        namespace, _dummy, uid = claim_identity(claim)
        existing = dict(
            (get_path(s, "metadata", "name"), s)
            for s in self.copies.get(uid, [])
            if get_path(s, "metadata", "namespace") == host_key(host)[0]
        )
        for field in DATA_FIELDS:
            if not spec[field]:
                continue
            source = self.io.get_secret(namespace, spec[field])
            if source is None:
                return names, "Secret %s (spec.%s) was not found in namespace %s" % (spec[field], field, namespace)
            wanted = secret_copy(source, claim, host, field, names[field])
            current = existing.get(names[field])
            if current is None:
                try:
                    self.create_copy(wanted, outcome)
                    continue
                except Conflict:
                    current = self.io.get_secret(host_key(host)[0], names[field])
                    if current is None:
                        raise
            patch = secret_copy_patch(current, wanted)
            if patch is None:
                self.delete_copy(current, outcome)
                self.create_copy(wanted, outcome)
            elif patch:
                self.patch_copy(current, patch, outcome)
        return names, None

    def sync(self, claim, host, outcome, committed=False):
        """Claim -> host (Secrets, image, power, reserved annotations), host -> claim (status, metadata)."""
        writes_before = outcome.writes
        problem = None
        try:
            names, problem = self._data_copies(claim, host, outcome)
        except InvalidInput as exc:
            names, problem = None, exc.cause
            reason = "InvalidSpec"
        else:
            reason = "DataSecretMissing"
        one_shot = {}
        if problem is None:
            patch = downward_patch(claim, host, names)
            try:
                host = self.write_host(host, patch, outcome)
            except Conflict:
                self.io.count_conflict()
                outcome.message = "the host changed while updating it; retried on the next pass"
                return
            one_shot = one_shot_cleanup_patch(claim)
        imported = self.import_from(claim, host, outcome)
        meta = (
            {}
            if committed
            else merge_patches(
                binding_label_fix(claim, _host_name(host)),
                {"metadata": {"finalizers": self._with_finalizer(claim)}} if self._with_finalizer(claim) else {},
                imported["patch"],
            )
        )
        meta = merge_patches(meta, one_shot)
        try:
            claim = self.write_claim(claim, with_precondition(meta, claim), outcome)
            status = upward_status(host, claim.get("status"), self.now, claim, self.bmc_rule(host)[0])
            if problem:
                status = ready_problem(status, claim.get("status"), reason, problem, self.now)
                outcome.reason, outcome.message = reason, problem
            self.write_claim(
                claim, with_precondition(status_patch(claim.get("status"), status), claim), outcome, status=True
            )
        except Conflict:
            self.io.count_conflict()
            outcome.message = "the claim changed while updating it; retried on the next pass"
            return
        if outcome.action == "unchanged" and outcome.writes > writes_before:
            outcome.action = "updated"
        if outcome.reason is None:
            outcome.reason, outcome.message = "Bound", "bound to host %s" % _host_name(host)

    # -- releasing -------------------------------------------------------------------
    def release(self, claim, outcome):
        """A deleted claim: deprovision its host, then clear consumerRef, remove the copies and the finalizer."""
        namespace, name, uid = claim_identity(claim)
        host = find_adopted_host(claim, self.bound_hosts(claim))
        node_reuse = get_path(claim, "spec", "nodeReuse")
        if host is not None:
            outcome.host, outcome.host_namespace = _host_name(host), host_key(host)[0]
            for attempt in range(2):
                step, patch = release_step(host, claim, node_reuse)
                if step == "finish":
                    host = self.revoke_bmc_access(host, namespace, outcome)
                    if host is None:
                        return
                    step, patch = release_step(host, claim, node_reuse)
                try:
                    host = self.write_host(host, patch, outcome)
                    break
                except Conflict:
                    self.io.count_conflict()
                    host = self.io.get_host(*host_key(host))
                    if attempt or host is None or not claim_ref_matches(host, claim):
                        outcome.action, outcome.message = "releasing", "the host changed; retried on the next pass"
                        return
            if step == "deprovision":
                outcome.action, outcome.reason = "releasing", "Deprovisioning"
                outcome.message = "waiting for host %s to be deprovisioned" % outcome.host
                status = upward_status(host, claim.get("status"), self.now, claim, self.bmc_rule(host)[0])
                try:
                    self.write_claim(
                        claim, with_precondition(status_patch(claim.get("status"), status), claim), outcome, status=True
                    )
                except (Conflict, NotFound):
                    self.io.count_conflict()
                return
        for secret in self.copies.get(uid, []):
            self.delete_copy(secret, outcome)
        try:
            self.write_claim(claim, finalizer_patch(claim, False), outcome)
        except NotFound:
            pass
        except Conflict:
            self.io.count_conflict()
            fresh = self.io.get_claim(namespace, name)
            if fresh is not None and claim_identity(fresh)[2] == uid:
                self.write_claim(fresh, finalizer_patch(fresh, False), outcome)
        outcome.action, outcome.reason = "released", "Released"
        outcome.message = "host %s is back in the pool" % outcome.host if outcome.host else "no host was bound"

    def revoke_bmc_access(self, host, grantee, outcome):
        """Delete the BMC accounts granted on ``host`` to ``grantee`` (the claim's
        namespace) before the host goes back to the pool.

        Returns the host as it is now, or ``None`` when the accounts could not
        be deleted: then the host keeps its ``consumerRef``, and the release
        is retried on the next pass (``outcome`` says why).  Hosts without
        such an account (the ledger annotation) cost no request.
        """
        entries = ledger_load((get_path(host, "metadata", "annotations") or {}).get(LEDGER_ANNOTATION))
        granted = sorted(e["username"] for e in entries if e.get("grantee") == grantee)
        if not granted:
            return host
        if self.check_mode:
            self._wrote(outcome)
            outcome.bmc_accounts_removed = granted
            return host
        namespace, name = host_key(host)
        try:
            result = bmc_access.revoke_host_accounts(
                "metal3", name, namespace=namespace, api_client=self.io, grantee=grantee
            )
        except TenancyError as exc:
            outcome.action, outcome.reason = "releasing", "BMCAccountsNotRevoked"
            outcome.message = (
                "the BMC accounts granted on host %s could not be deleted (%s); retried on the next pass"
                % (name, exc.message)
            )
            return None
        if result["changed"]:
            self._wrote(outcome)
        outcome.bmc_accounts_removed = result["removed"]
        return self.io.get_host(namespace, name)

    def sweep_hosts(self, claims):
        """Release hosts bound to claims that no longer exist, and duplicate bindings; delete orphaned copies."""
        listed = dict((tuple(claim_identity(claim)[:2]), claim) for claim in claims)
        jobs = []
        for host in list(self.hosts):
            ref = get_path(host, "spec", "consumerRef")
            if not _is_claim_ref(ref) or not self._in_scope(ref.get("namespace"), ref.get("name")):
                continue
            claim = listed.get((ref.get("namespace"), ref.get("name")))
            if claim is None or (
                ref.get("uid") and claim_identity(claim)[2] and ref.get("uid") != claim_identity(claim)[2]
            ):
                jobs.append((host, ref, True))
            elif host_key(find_adopted_host(claim, self.bound_hosts(claim))) != host_key(host):
                jobs.append((host, ref, False))
        outcomes = [self._sweep_host(host, ref, orphan) for host, ref, orphan in jobs]
        uids = set(claim_identity(claim)[2] for claim in claims)
        for uid, secrets in sorted(self.copies.items(), key=lambda item: str(item[0])):
            if uid in uids:
                continue
            for secret in secrets:
                outcome = self._sweep_copy(secret)
                if outcome is not None:
                    outcomes.append(outcome)
        return [outcome for outcome in outcomes if outcome is not None]

    def _claim_gone(self, namespace, name, uid):
        fresh = self.io.get_claim(namespace, name)
        return fresh is None or (uid and claim_identity(fresh)[2] != uid)

    def _sweep_host(self, host, ref, orphan):
        namespace, name = host_key(host)
        outcome = _Outcome(ref.get("namespace"), ref.get("name"), action="swept", host=name)
        outcome.host_namespace = namespace
        claim = _ref_claim(ref)
        try:
            if orphan and not self._claim_gone(ref.get("namespace"), ref.get("name"), ref.get("uid")):
                return None
            if orphan:
                host = self.revoke_bmc_access(host, ref.get("namespace"), outcome)
                if host is None:
                    return outcome
            self.write_host(host, release_plan(host, claim, None), outcome)
        except Conflict:
            self.io.count_conflict()
            return None
        except TenancyError as exc:
            outcome.action, outcome.error = "error", exc.message
            return outcome
        outcome.reason = "ClaimGone" if orphan else "DuplicateBinding"
        outcome.message = (
            "released: HostClaim %s/%s no longer exists"
            if orphan
            else "released: HostClaim %s/%s is bound to another host"
        ) % (ref.get("namespace"), ref.get("name"))
        if orphan:
            for secret in self.copies.get(ref.get("uid"), []):
                self.delete_copy(secret, outcome)
            self.copies.pop(ref.get("uid"), None)
        return outcome

    def _sweep_copy(self, secret):
        meta = secret.get("metadata") or {}
        claim_namespace = (meta.get("labels") or {}).get(COPY_CLAIM_NAMESPACE_LABEL)
        source = (meta.get("annotations") or {}).get(COPY_CLAIM_ANNOTATION) or ""
        claim_name = source.partition("/")[2]
        if not claim_name or not self._in_scope(claim_namespace, claim_name):
            return None
        uid = (meta.get("labels") or {}).get(COPY_CLAIM_UID_LABEL)
        outcome = _Outcome(meta.get("namespace"), meta.get("name"), action="swept")
        try:
            if not self._claim_gone(claim_namespace, claim_name, uid):
                return None
            self.delete_copy(secret, outcome)
        except TenancyError as exc:
            outcome.action, outcome.error = "error", exc.message
            return outcome
        outcome.reason, outcome.message = "ClaimGone", "deleted the copy of a Secret of HostClaim %s" % source
        return outcome

    # -- result ----------------------------------------------------------------------
    def bindings(self, claims):
        result = {}
        for claim in claims:
            namespace, name, _dummy = claim_identity(claim)
            host = find_adopted_host(claim, self.bound_hosts(claim))
            result["%s/%s" % (namespace, name)] = "%s/%s" % host_key(host) if host else None
        return result

    def host_problems(self):
        problems = []
        for host in self.hosts:
            policy = host_policy(host)
            found = validate_policy(policy) if policy is not None else []
            if found:
                problems.append({"host": "%s/%s" % host_key(host), "problems": found})
        return sorted(problems, key=lambda item: item["host"])

    def report(self, claims, outcomes, swept, before):
        after = dict(before)
        for outcome in outcomes:
            key = "%s/%s" % (outcome.namespace, outcome.name)
            if outcome.action in ("bound", "adopted", "updated", "unchanged") and outcome.host:
                after[key] = "%s/%s" % (outcome.host_namespace, outcome.host)
            elif outcome.action in ("released", "pending", "gone"):
                after[key] = None
        summary = dict(
            (name, 0)
            for name in (
                "bound",
                "adopted",
                "updated",
                "unchanged",
                "pending",
                "releasing",
                "released",
                "lost",
                "gone",
                "conflict",
                "deferred",
                "error",
            )
        )
        for outcome in outcomes:
            summary[outcome.action] = summary.get(outcome.action, 0) + 1
        summary["swept"] = len([o for o in swept if o.action == "swept"])
        summary["claims"] = len(outcomes)
        errors = [o.as_dict() for o in list(outcomes) + list(swept) if o.action == "error"]
        withheld = [item for outcome in outcomes for item in outcome.withheld]
        return {
            "changed": self.changed,
            "settled": not self.changed and not summary["deferred"] and not summary["conflict"],
            "binder_id": self.binder_id,
            "claims": [outcome.as_dict() for outcome in outcomes],
            "swept": [outcome.as_dict() for outcome in swept],
            "errors": errors,
            "host_problems": self.host_problems(),
            "withheld": sorted(
                withheld, key=lambda item: (item["host"], item["claim"], item["kind"], str(item["key"]))
            ),
            "summary": summary,
            "requests": self.io.figures(),
            "timings": dict(self.timings),
            "bindings": {"before": before, "after": after},
        }
