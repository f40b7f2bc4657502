# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""One reconcile pass of ``host_bind``: the binder.

:class:`Binder` lists hosts, claims, namespaces and the binder's Secret
copies once (a :class:`pass_state.PassState`, which parses each claim once into a
:class:`claim.parsed.ParsedClaim`), asks the pure model (:mod:`planner`, and
``claim/``'s :mod:`downward`, :mod:`upward`, :mod:`metadata_import`) what to do,
and applies it, several claims at a time, through two steps it composes: a
:class:`bind.Bind` and a :class:`release.Release`, each given the pass state, the
:class:`writer.Writer` and the claim statuses (:class:`status.ClaimStatuses`).  Every write of a claim or a host carries a
``resourceVersion`` precondition; a 409 means somebody else changed the
object first, and the binder re-reads it, tries the next candidate, or
leaves the claim to the next pass.  Kubernetes is reached through :class:`client.KubeIO`.

The write order that makes concurrent binders safe:

1. hosts are listed before claims (the claims once every host list has its
   first page, whose snapshot its later pages are served from), so a host bound
   to a claim that is not in the claim list points at a claim that was deleted
   (the sweep re-reads the claim before it releases anything);
2. a bind writes the host's ``consumerRef`` first, then commits on the claim
   (binding label, finalizer, imported metadata) with the claim's
   ``resourceVersion`` as observed when planning.  A binder whose commit gets
   a 409 re-reads the claim: if another binder committed another host, it
   undoes its own ``consumerRef``;
3. a claim that carries a binding label which the host list does not confirm
   has that host re-read before planning (it may have been bound after the
   list); a label that the host does not confirm is erased, never honoured;
4. once a pass meets another writer (its first 409), the binder follows hosts
   and claims with a watch (from the versions it listed): a claim another binder
   (or its tenant) changed is left to the next pass, a host another binder took
   is skipped without a write.
   Each binder works through the claims in its own order.  This only saves
   conflicts; correctness rests on the preconditions.
"""

from __future__ import annotations

import datetime
import hashlib
import os
import socket
import time

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.cyclic_gc import cyclic_gc_paused
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    InvalidInput,
    TenancyError,
    from_exception,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import (
    get_path,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.parallel import parallel_map
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import (
    EXPORT_ANNOTATION_DOMAINS,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.bind import Bind
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.outcome import Job, Outcome
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.pass_state import (
    PassState,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.planner import (
    find_adopted_host,
    host_key,
    plan_pass,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.release import Release
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.status import ClaimStatuses
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.writer import Writer
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.bmo_controller_signal import (
    BINDER_FIELD_MANAGER,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.dialect import AUTO, BMO
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.identity import (
    claim_finalizer,
    claim_identity,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.view import bound_host
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.client import (
    claim_label,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.relay.remote import REMOTE_ANNOTATION, is_relayed
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.relay.runner import Relay
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share.cleaning_check import uncleaned_hosts
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share.deploy_policy import (
    ANCHORING_NOTE,
    admitting_namespaces,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share.sharing_policy import (
    has_legacy_policy,
    policy_problems,
)


def now_rfc3339():
    """The current UTC time as Kubernetes writes it (seconds precision)."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def default_binder_id():
    """``<hostname>:<pid>``: distinct for concurrent binders, so that they spread over candidates."""
    return "%s:%d" % (socket.gethostname(), os.getpid())


class Binder:
    """One reconcile pass of ``host_bind`` (see the module documentation for what it does).

    The pass orchestration lives here (read, plan, execute through
    :func:`parallel.parallel_map`, retry conflicts, report).  It composes the
    pass's parts, each given what it uses: what the pass reads,
    :class:`pass_state.PassState` (``state``); its writes, :class:`writer.Writer`;
    the claim statuses, :class:`status.ClaimStatuses`; the actions,
    :class:`bind.Bind` and :class:`release.Release`; the relayed claims,
    :class:`relay.runner.Relay`.
    """

    #: retry rounds (re-list and re-plan) for claims whose every candidate was taken by someone else
    conflict_rounds = 2

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
        dialect=AUTO,
        unanchored=False,
        take_over=False,
        relay_clients=None,
    ):
        if name and (not namespaces or len(namespaces) != 1):
            raise InvalidInput("option name", "needs exactly one namespace in namespaces")
        self.io = io
        if getattr(io, "field_manager", True) is None:
            io.field_manager = BINDER_FIELD_MANAGER
        self.unanchored = bool(unanchored)
        self.binder_id = binder_id or default_binder_id()
        self.annotation_domains = tuple(annotation_domains or ())
        self.sweep = sweep
        self.check_mode = check_mode
        self.workers = max(1, int(workers or 1))
        self.now = now_rfc3339()
        self.state = PassState(
            io,
            namespaces=namespaces,
            name=name,
            host_namespaces=host_namespaces,
            annotation_domains=self.annotation_domains,
            dialect=dialect,
            take_over=take_over,
        )
        self.writer = Writer(io, check_mode)
        self.relay = Relay(io, self.writer, self.now, self.annotation_domains, relay_clients, self.state.parsed)
        statuses = ClaimStatuses(self.state, self.now)
        self.bind_step = Bind(self.state, self.writer, io, statuses, self.annotation_domains, self.unanchored)
        self.release_step = Release(self.state, self.writer, io, statuses)
        self.timings = {}

    @property
    def changed(self) -> bool:
        """Whether the pass wrote (in check mode: would write) anything."""
        return self.writer.changed

    def run(self):
        try:
            # a pass decodes every host and claim it reads and keeps them to its end (common/cyclic_gc.py)
            with cyclic_gc_paused():
                return self._run()
        finally:
            self.state.stop_watches()
            self.relay.close()

    def _job_order(self, claim):
        """Each binder works through the claims in its own order, so that concurrent binders rarely meet."""
        namespace, name, uid = claim_identity(claim)
        return hashlib.sha256(
            ("%s\0%s" % (self.binder_id, uid or "%s/%s" % (namespace, name))).encode("utf-8")
        ).hexdigest()

    def _run(self):
        started = time.time()
        claims = self.state.read(sweep=self.sweep, watch=not self.check_mode)
        self.timings["read"] = round(time.time() - started, 4)
        before = self.bindings(claims)
        planned = time.time()
        active = [claim for claim in claims if not get_path(claim, "metadata", "deletionTimestamp")]
        deleting = [
            claim
            for claim in claims
            if get_path(claim, "metadata", "deletionTimestamp")
            and claim_finalizer(claim) in (get_path(claim, "metadata", "finalizers") or [])
        ]
        plan = self.plan(active)
        self.timings["plan"] = round(time.time() - planned, 4)
        claims_by_key = dict((tuple(claim_identity(claim)[:2]), claim) for claim in claims)
        jobs = [Job(claims_by_key[(action["claim"]["namespace"], action["claim"]["name"])], action) for action in plan]
        jobs.extend(Job(claim) for claim in deleting)
        applying = time.time()
        order = sorted(range(len(jobs)), key=lambda i: self._job_order(jobs[i].claim))
        done = self.execute([jobs[i] for i in order])
        outcomes = [None] * len(jobs)
        for position, index in enumerate(order):
            outcomes[index] = done[position]
        outcomes = self.retry_conflicts(outcomes)
        swept = self.release_step.sweep_hosts(claims) if self.sweep else []
        self.timings["apply"] = round(time.time() - applying, 4)
        self.timings["total"] = round(time.time() - started, 4)
        return self.report(claims, outcomes, swept, before)

    def plan(self, claims):
        """The plan (``planner.plan_pass``) of ``claims`` (parsed once: ``PassState.parsed``) on the pass's current view."""
        state = self.state
        records = [state.parsed(claim) for claim in claims]
        return plan_pass(
            records, state.hosts, state.namespace_labels, self.binder_id, state.deploy_policies, self.unanchored
        )

    def execute(self, jobs: list[Job]) -> list[Outcome]:
        """Each job's outcome (order kept), ``workers`` claims at a time (:func:`parallel.parallel_map`)."""

        def run(job: Job) -> Outcome:
            identity = claim_identity(job.claim)
            outcome = Outcome(identity.namespace, identity.name)
            if self.state.claim_changed(job.claim) is not None:
                outcome.action = "deferred"
                outcome.message = (
                    "the claim changed during the pass (another binder or its tenant); left to the next pass"
                )
                return outcome
            try:
                if job.action is None and is_relayed(job.claim):
                    self.relay.release(self.state.parsed(job.claim).as_read(job.claim), outcome)
                elif job.action is None:
                    self.release_step.release(job.claim, outcome)
                elif job.action["action"] == "relay":
                    self.relay.sync(self.state.parsed(job.claim).as_read(job.claim), outcome)
                else:
                    self.bind_step.apply_action(job.action, job.claim, outcome)
            except TenancyError as exc:
                outcome.action, outcome.error = "error", exc.message
            except Exception as exc:  # pylint: disable=broad-except
                outcome.action = "error"
                outcome.error = from_exception(claim_label(identity.namespace, identity.name), exc).message
            return outcome

        return parallel_map(run, jobs, self.workers)

    def retry_conflicts(self, outcomes):
        """Re-list and re-plan claims that lost every candidate to other binders (at most ``conflict_rounds`` times)."""
        for _round in range(self.conflict_rounds):
            retry = [outcome for outcome in outcomes if outcome.retry]
            if not retry or self.check_mode:
                break
            self.state.relist_hosts()
            fresh = [self.io.get_claim(outcome.namespace, outcome.name) for outcome in retry]
            fresh = [claim for claim in fresh if claim and not get_path(claim, "metadata", "deletionTimestamp")]
            self.state.confirm_labels(fresh)
            by_key = dict((tuple(claim_identity(claim)[:2]), claim) for claim in fresh)
            plan = self.plan(fresh)
            jobs = [Job(by_key[(action["claim"]["namespace"], action["claim"]["name"])], action) for action in plan]
            again = dict(((o.namespace, o.name), o) for o in self.execute(jobs))
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

    def bindings(self, claims):
        result = {}
        for claim in claims:
            identity = claim_identity(claim)
            if is_relayed(claim):
                host = bound_host(claim)
                where = (get_path(claim, "metadata", "annotations") or {}).get(REMOTE_ANNOTATION) or "/"
                remote = "%s/%s" % (where.split("/", 1)[0], host) if host else None
                result["%s/%s" % (identity.namespace, identity.name)] = remote
                continue
            host = find_adopted_host(claim, self.state.bound_hosts(claim))
            result["%s/%s" % (identity.namespace, identity.name)] = "%s/%s" % host_key(host) if host else None
        return result

    def host_problems(self):
        """Hosts whose sharing annotation is invalid (shared with nobody), each problem naming the host and the annotation."""
        problems = []
        for host in self.state.hosts:
            found = policy_problems(host)
            if found:
                problems.append({"host": "%s/%s" % host_key(host), "problems": found})
        return sorted(problems, key=lambda item: item["host"])

    def anchoring(self, claims):
        """Where the anchored ``nameMatches`` refuses a claim namespace that baremetal-operator's own controller
        (an unanchored search) would admit: ``[{namespace, host_namespace, reason}]`` (``[]`` with ``unanchored``)."""
        if self.state.dialect != BMO or self.unanchored:
            return []
        found = []
        for namespace in sorted(set(str(claim_identity(claim)[0]) for claim in claims)):
            labels = self.state.namespace_labels.get(namespace) or {}
            for host_namespace, decision in admitting_namespaces(self.state.deploy_policies, namespace, labels).items():
                if not decision.allowed and ANCHORING_NOTE in decision.reason:
                    found.append({"namespace": namespace, "host_namespace": host_namespace, "reason": decision.reason})
        return found

    def legacy_policies(self):
        """``ns/name`` of the hosts that carry ``spec.hostClaimNamespaces`` and no sharing annotation (shared with nobody)."""
        return sorted("%s/%s" % host_key(host) for host in self.state.hosts if has_legacy_policy(host))

    def report(self, claims, outcomes, swept, before):
        after = dict(before)
        for outcome in outcomes:
            key = "%s/%s" % (outcome.namespace, outcome.name)
            if outcome.action in ("bound", "adopted", "updated", "unchanged", "relayed") and outcome.host:
                after[key] = "%s/%s" % (outcome.host_namespace, outcome.host)
            elif outcome.action in ("released", "pending", "gone") or (
                outcome.action == "relayed" and not outcome.host
            ):
                after[key] = None
        summary = dict(
            (name, 0)
            for name in (
                "bound",
                "adopted",
                "updated",
                "unchanged",
                "relayed",
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
            "changed": self.writer.changed,
            "settled": not self.writer.changed and not summary["deferred"] and not summary["conflict"],
            "binder_id": self.binder_id,
            "dialect": self.state.dialect,
            "taken_over": sorted(self.state.taken_over),
            "anchoring": self.anchoring(claims),
            "claims": [outcome.as_dict() for outcome in outcomes],
            "swept": [outcome.as_dict() for outcome in swept],
            "errors": errors,
            "host_problems": self.host_problems(),
            "legacy_policies": self.legacy_policies(),
            "cleaning_disabled": uncleaned_hosts(self.state.hosts, self.state.deploy_policies),
            "withheld": sorted(
                withheld, key=lambda item: (item["host"], item["claim"], item["kind"], str(item["key"]))
            ),
            "summary": summary,
            "requests": self.io.figures(),
            "relay_requests": self.relay.figures(),
            "timings": dict(self.timings),
            "bindings": {"before": before, "after": after},
        }
