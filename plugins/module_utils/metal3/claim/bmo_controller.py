# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""What baremetal-operator's own HostClaim controller writes on a claim: finalizers and status.  Pure.

baremetal-operator v0.14 (``--hostclaims``) reconciles a ``metal3.io/v1alpha1``
``HostClaim`` in ``internal/controller/metal3.io/hostclaim_controller.go`` and
``pkg/hostclaim/hostclaim_manager.go`` with cluster-api v1.14's
``util/conditions`` and ``util/patch``. A binder that acts as that controller
writes what these functions compute, so that either controller may take over:

* the finalizer ``metal3.io/hostclaim`` while the claim lives, removed once the
  claim being deleted has let its host go;
* ``status.bareMetalHost`` (``{namespace, name}``) once a host is chosen,
  removed on deletion;
* ``status.conditions`` (``metav1.Condition``): ``Associated`` as each case
  sets it, then ``Ready``, the summary of ``Associated``, ``Synchronized`` and
  ``Provisioned``. BMO v0.14 never sets ``Synchronized`` nor ``Provisioned``
  (its update step is a stub), so ``Ready`` is never ``True`` there.

``observedGeneration`` of each condition is the claim's ``metadata.generation``
(cluster-api's ``Set``). The patch helper also writes
``status.observedGeneration``, but BMO's HostClaim CRD has no such field and
the API server prunes it, so it is left out here. Other status fields
(``lastUpdated``, ``poweredOn``, ``hardwareData``) are not written by BMO's
controller and are kept as they are.
"""

from __future__ import annotations

import copy
import datetime
import re

FINALIZER = "metal3.io/hostclaim"

READY = "Ready"
ASSOCIATED = "Associated"
SYNCHRONIZED = "Synchronized"
PROVISIONED = "Provisioned"
# The conditions summarized into Ready, in BMO's order (the order of relevance of the summary's message).
SUMMARY_TYPES = (ASSOCIATED, SYNCHRONIZED, PROVISIONED)

ASSOCIATED_REASON = "BareMetalHostAssociated"
NO_HOST_REASON = "NoBareMetalHost"
NO_HOST_MESSAGE = "No available host found: requeuing."
# Associate's other failures (the reconcile then returns the error; the status is written all the same).
PICK_FAILED_MESSAGE = "Failed to pick a BaremetalHost for the Host"
NOT_SYNCHRONIZED_REASON = "BareMetalHostNotSynchronized"
CONSUMER_REF_FAILED_MESSAGE = "Failed to set consumer Reference on BareMetalHost"
DELETING_REASON = "HostClaimDeleting"

# cluster-api's generic reasons of a summary (merge_strategies.go) and of a missing condition (mirror.go).
ISSUES_REPORTED = "IssuesReported"
UNKNOWN_REPORTED = "UnknownReported"
INFO_REPORTED = "InfoReported"
NOT_YET_REPORTED = "NotYetReported"
NOT_YET_REPORTED_MESSAGE = "Condition not yet reported"

# cluster-api's default condition order (util/conditions/sort.go): the types listed go in this order, any other
# type goes where the empty placeholder (readiness and availability gates) is, alphabetically among its peers.
_OTHER = ""
_ORDER = (
    "Available",
    "Ready",
    "UpToDate",
    "RemoteConnectionProbe",
    "BootstrapConfigReady",
    "InfrastructureReady",
    "ControlPlaneInitialized",
    "ControlPlaneAvailable",
    "WorkersAvailable",
    "CertificatesAvailable",
    "Initialized",
    "EtcdClusterHealthy",
    "ControlPlaneComponentsHealthy",
    "NodeHealthy",
    "NodeReady",
    "NodeKubeadmLabelsAndTaintsSet",
    "EtcdPodHealthy",
    "EtcdMemberHealthy",
    "APIServerPodHealthy",
    "ControllerManagerPodHealthy",
    "SchedulerPodHealthy",
    "HealthCheckSucceeded",
    "OwnerRemediated",
    "TopologyReconciled",
    "Updating",
    "RollingOut",
    "Remediating",
    "ScalingDown",
    "ScalingUp",
    "MachinesReady",
    "ControlPlaneMachinesReady",
    "WorkerMachinesReady",
    "MachinesUpToDate",
    "ControlPlaneMachinesUpToDate",
    "WorkerMachinesUpToDate",
    _OTHER,
    "Paused",
    "Deleting",
)
_RANK = {name: index for index, name in enumerate(_ORDER)}

# Go's regexp `\s*\*\s+` (RE2's \s is [\t\n\f\r ]), searched anywhere in a line as Go's MatchString does.
_BULLET = re.compile(r"[\t\n\f\r ]*\*[\t\n\f\r ]+")

_ISSUE, _UNKNOWN, _INFO = 0, 1, 2


def timestamp(now):
    """``now`` as a ``metav1.Time`` is written: UTC, truncated to the second (cluster-api truncates)."""
    if now.tzinfo is None:
        now = now.replace(tzinfo=datetime.timezone.utc)
    return now.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _sort_key(condition):
    return (_RANK.get(condition["type"], _RANK[_OTHER]), condition["type"])


def set_condition(conditions, condition, now, generation):
    """cluster-api ``conditions.Set`` (util/conditions/setter.go) over apimachinery's ``meta.SetStatusCondition``.

    Returns a new list; ``conditions`` is not changed. ``condition`` gives ``type``, ``status``,
    ``reason`` and ``message``; ``observedGeneration`` becomes ``generation`` (the object's
    ``metadata.generation``). A new condition, or one whose status changes, gets ``lastTransitionTime``
    = ``now`` (to the second); one that keeps its status keeps its ``lastTransitionTime`` and takes the
    other fields. The list is sorted in cluster-api's default order only when something changed.
    """
    result = [dict(item) for item in conditions or ()]
    wanted = {
        "type": condition["type"],
        "status": condition["status"],
        "reason": condition.get("reason", ""),
        "message": condition.get("message", ""),
        "observedGeneration": generation,
    }
    existing = None
    for item in result:
        if item.get("type") == wanted["type"]:
            existing = item
            break
    if existing is None:
        result.append(dict(wanted, lastTransitionTime=timestamp(now)))
    else:
        changed = False
        if existing.get("status") != wanted["status"]:
            existing["lastTransitionTime"] = timestamp(now)
            changed = True
        for field in ("status", "reason", "message", "observedGeneration"):
            if existing.get(field) != wanted[field]:
                existing[field] = wanted[field]
                changed = True
        if not changed:
            return result
    # Python's sort is stable, as Go's sort.SliceStable.
    result.sort(key=_sort_key)
    return result


def _priority(condition):
    """cluster-api ``GetDefaultMergePriorityFunc`` for positive polarity: False is an issue, True an info."""
    if condition["status"] == "True":
        return _INFO
    if condition["status"] == "False":
        return _ISSUE
    return _UNKNOWN


def _indent_if_multiline(message):
    """cluster-api ``indentIfMultiline`` (merge_strategies.go), the text after ``* Type:``."""
    if "\n" not in message and not _BULLET.search(message):
        return " " + message
    lines = message.split("\n")
    bare = any(not _BULLET.search(line) for line in lines)
    indented = []
    for line in lines:
        if not bare:
            indented.append("  " + line)
        elif _BULLET.search(line):
            indented.append("    " + line)
        else:
            indented.append("  * " + line)
    return "\n" + "\n".join(indented)


def summary_ready(conditions, condition_types=SUMMARY_TYPES, target=READY):
    """cluster-api ``NewSummaryCondition(claim, "Ready", ForConditionTypes{Associated, Synchronized, Provisioned})``.

    The default merge strategy (merge_strategies.go), as BMO's ``patchHostClaim`` calls it: a missing type
    counts as ``Unknown``/``NotYetReported``/"Condition not yet reported"; any ``False`` makes the summary
    ``False`` (reason ``IssuesReported``), else any ``Unknown`` makes it ``Unknown`` (``UnknownReported``),
    else ``True`` (``InfoReported``): the generic reasons, even for a single condition. The message has one
    ``* Type: message`` line per issue or unknown condition (the reason when the message is empty), in the
    order of ``condition_types``; ``True`` ones are listed only when the summary is ``True``, and then only if
    they have a message. Returns the condition without ``lastTransitionTime``/``observedGeneration``
    (:func:`set_condition` gives them).
    """
    by_type = {}
    for condition in conditions or ():
        if condition.get("type") in condition_types:
            by_type[condition["type"]] = condition
    in_scope = []
    for condition_type in condition_types:
        in_scope.append(
            by_type.get(
                condition_type,
                {
                    "type": condition_type,
                    "status": "Unknown",
                    "reason": NOT_YET_REPORTED,
                    "message": NOT_YET_REPORTED_MESSAGE,
                },
            )
        )
    priorities = [_priority(condition) for condition in in_scope]
    if _ISSUE in priorities:
        status, reason = "False", ISSUES_REPORTED
    elif _UNKNOWN in priorities:
        status, reason = "Unknown", UNKNOWN_REPORTED
    else:
        status, reason = "True", INFO_REPORTED
    lines = []
    for condition, priority in zip(in_scope, priorities):
        message = condition.get("message", "")
        if priority == _INFO and (status != "True" or not message):
            continue
        detail = _indent_if_multiline(message) if message else " " + condition.get("reason", "")
        lines.append(f"* {condition['type']}:{detail}")
    return {"type": target, "status": status, "reason": reason, "message": "\n".join(lines)}


def _with_finalizer(finalizers):
    """controller-runtime ``AddFinalizer``: appended when absent."""
    finalizers = list(finalizers or ())
    if FINALIZER not in finalizers:
        finalizers.append(FINALIZER)
    return finalizers


def _write(claim, finalizers, status, conditions, now):
    """``patchHostClaim``: Ready summarized and set last, then the whole write."""
    generation = claim["metadata"].get("generation")
    conditions = set_condition(conditions, summary_ready(conditions), now, generation)
    status = dict(status)
    status["conditions"] = conditions
    return {"finalizers": finalizers, "status": status}


def _parts(claim):
    status = copy.deepcopy(claim.get("status") or {})
    status.pop("observedGeneration", None)
    return status, status.get("conditions") or [], claim["metadata"].get("generation")


def associated_status(claim, host_ref, now):
    """``reconcileNormal`` once a host is chosen (``Associate``) or already recorded (``IsAssociated``).

    Returns ``{"finalizers": [...], "status": {...}}``: the finalizer added, ``status.bareMetalHost`` =
    ``host_ref`` (``{"namespace", "name"}``), ``Associated`` ``True``/``BareMetalHostAssociated`` with an
    empty message, then ``Ready``. When the claim already records a host, BMO keeps that one, so does this.
    """
    status, conditions, generation = _parts(claim)
    if not status.get("bareMetalHost"):
        status["bareMetalHost"] = {"namespace": host_ref["namespace"], "name": host_ref["name"]}
    conditions = set_condition(
        conditions, {"type": ASSOCIATED, "status": "True", "reason": ASSOCIATED_REASON, "message": ""}, now, generation
    )
    return _write(claim, _with_finalizer(claim["metadata"].get("finalizers")), status, conditions, now)


def no_host_status(claim, now):
    """``reconcileNormal`` when ``Associate`` finds no host (``ErrNoAvailableBMH``; BMO requeues after 30 s).

    The finalizer added, no ``status.bareMetalHost``, ``Associated`` ``False``/``NoBareMetalHost``/
    "No available host found: requeuing.", then ``Ready``. BMO says the same when no policy admits the
    claim's namespace.
    """
    return unassociated_status(claim, NO_HOST_REASON, NO_HOST_MESSAGE, now)


def unassociated_status(claim, reason, message, now):
    """``reconcileNormal`` when ``Associate`` fails: the finalizer added, ``Associated`` ``False``, then ``Ready``.

    BMO's cases: ``NoBareMetalHost`` with :data:`NO_HOST_MESSAGE` (no host), or with
    :data:`PICK_FAILED_MESSAGE` (choosing failed, e.g. a policy's bad ``nameMatches``);
    ``BareMetalHostNotSynchronized`` with :data:`CONSUMER_REF_FAILED_MESSAGE` (writing the host's
    ``consumerRef`` failed). ``status.bareMetalHost`` is left as it is (absent: the claim was not associated).
    """
    status, conditions, generation = _parts(claim)
    conditions = set_condition(
        conditions, {"type": ASSOCIATED, "status": "False", "reason": reason, "message": message}, now, generation
    )
    return _write(claim, _with_finalizer(claim["metadata"].get("finalizers")), status, conditions, now)


def provisioned_status(claim, now):
    """``reconcileNormal`` when ``Provisioned`` is ``True`` (``IsProvisioned``): the finalizer and ``Ready`` only.

    BMO v0.14 never sets ``Provisioned`` itself; another writer may.
    """
    status, conditions, _generation = _parts(claim)
    return _write(claim, _with_finalizer(claim["metadata"].get("finalizers")), status, conditions, now)


def deleting_status(claim, now):
    """``reconcileDelete`` once the host is let go (``Delete`` succeeded: its ``consumerRef`` cleared, or gone).

    ``Associated`` ``False``/``HostClaimDeleting`` with an empty message (so Ready's message shows the
    reason: ``* Associated: HostClaimDeleting``), ``status.bareMetalHost`` removed, the finalizer removed
    (every occurrence, as controller-runtime's ``RemoveFinalizer``). The patch helper writes the conditions
    first, then the finalizers, then the rest of the status: with no other finalizer the claim is gone before
    ``status.bareMetalHost`` is cleared, and only a claim held by another finalizer shows this whole write.
    """
    status, conditions, generation = _parts(claim)
    status.pop("bareMetalHost", None)
    conditions = set_condition(
        conditions, {"type": ASSOCIATED, "status": "False", "reason": DELETING_REASON, "message": ""}, now, generation
    )
    finalizers = [name for name in claim["metadata"].get("finalizers") or () if name != FINALIZER]
    return _write(claim, finalizers, status, conditions, now)


def is_provisioned(claim):
    """``IsProvisioned``: the claim's ``Provisioned`` condition is ``True``."""
    for condition in (claim.get("status") or {}).get("conditions") or ():
        if condition.get("type") == PROVISIONED:
            return condition.get("status") == "True"
    return False


def controller_write(claim, host_ref, now):
    """``Reconcile``'s choice of case, for a claim as read and the host chosen for it (``None``: none).

    Deleting (``metadata.deletionTimestamp``), once the host is let go: :func:`deleting_status`;
    ``Provisioned`` ``True``: :func:`provisioned_status`; a host recorded in ``status.bareMetalHost`` or
    chosen: :func:`associated_status`; else :func:`no_host_status`.
    """
    if claim["metadata"].get("deletionTimestamp"):
        return deleting_status(claim, now)
    if is_provisioned(claim):
        return provisioned_status(claim, now)
    recorded = (claim.get("status") or {}).get("bareMetalHost")
    if recorded or host_ref:
        return associated_status(claim, recorded or host_ref, now)
    return no_host_status(claim, now)
