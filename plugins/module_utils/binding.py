# -*- coding: utf-8 -*-
# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The binder's algorithm: candidates, choice, one planning pass, release; pure.

Inputs are the dicts the Kubernetes API returns (HostClaim and BareMetalHost
objects) and ``{namespace name: labels}``.  Outputs are plain dicts: actions
and JSON merge patches that the I/O layer sends as they are.

A host is a candidate for a claim when, in this order: its
``hostClaimNamespaces`` shares it with the claim's namespace, its labels
match the claim's ``hostSelector``, it is not being deleted, not paused, not
consumed (empty ``consumerRef``), has no ``errorType``/``errorMessage``, its
``operationalStatus`` (when reported) is ``OK`` and its provisioning state
is ``ready`` or ``available``.  Sharing is checked first so that a pending
message never tells a tenant anything about hosts not shared with it.

Choice: a host already pointing at the claim is adopted (a retry after a
crash is safe).  Otherwise claims are served oldest first; claims with
``nodeReuse`` first take a host labelled ``<namespace>.<nodeReuse>``; then
every claim takes its best ranked candidate.  Ranking prefers the node-reuse
host, then hosts without any node-reuse label (hosts kept for someone else's
reuse come last), then a rendezvous hash of (claim uid, binder id, host), so
that concurrent binders spread over the candidates instead of racing for the
same first host, and one binder's choice is stable across passes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib

from ansible_collections.baremetal.tenancy.plugins.module_utils.claim_sync import (
    DATA_FIELDS,
    NODE_REUSE_LABEL,
    PASSED_ANNOTATIONS,
    PAUSED_ANNOTATION,
    binding_label_fix,
    claim_identity,
    claim_ref_matches,
    consumer_ref_for,
    get_path,
    is_hold_key,
    minimal_patch,
    node_reuse_value,
    object_name,
    tracked_keys,
    validate_claim,
    with_precondition,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.errors import Conflict, InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.namespace_policy import is_shared
from ansible_collections.baremetal.tenancy.plugins.module_utils.selectors import matches_normalised

READY_STATES = ('ready', 'available')

STAGE_NOT_SHARED = 0
STAGE_NO_MATCH = 1
STAGE_UNAVAILABLE = 2

UNAVAILABLE_WORDS = {
    'Deleting': 'being deleted',
    'Paused': 'paused',
    'Consumed': 'consumed',
    'HostError': 'in error',
    'NotOperational': 'not operational',
    'NotReady': 'not ready',
}


# --------------------------------------------------------------- candidates

def host_key(host):
    """``(namespace, name)`` of a BMH dict."""
    meta = (host or {}).get('metadata') or {}
    return meta.get('namespace'), meta.get('name')


def _host_ref(host):
    namespace, name = host_key(host)
    return {'namespace': namespace, 'name': name}


def _availability(host):
    """``(code, message)`` if the host cannot take a new claim, else ``None``."""
    meta = host.get('metadata') or {}
    status = host.get('status') or {}
    if meta.get('deletionTimestamp'):
        return 'Deleting', 'the host is being deleted'
    if PAUSED_ANNOTATION in (meta.get('annotations') or {}):
        return 'Paused', 'the host is paused (%s)' % PAUSED_ANNOTATION
    if get_path(host, 'spec', 'consumerRef'):
        return 'Consumed', 'the host is consumed (spec.consumerRef is set)'
    if status.get('errorType') or status.get('errorMessage'):
        return 'HostError', 'the host reports an error (%s)' % (status.get('errorType') or 'errorMessage')
    if status.get('operationalStatus') not in (None, 'OK'):
        return 'NotOperational', 'the host operationalStatus is %r' % status.get('operationalStatus')
    state = get_path(status, 'provisioning', 'state')
    if state not in READY_STATES:
        return 'NotReady', 'the host provisioning state is %r, not ready or available' % (state,)
    return None


def _rejection(host, spec, decision, unavailable):
    """``(stage, code, message)`` explaining why ``host`` is not a candidate, or ``None``.

    ``decision`` is the namespace policy decision, ``unavailable`` the result
    of ``_availability(host)``: both are computed by the caller (and cached by
    the planner).
    """
    if not decision.allowed:
        return STAGE_NOT_SHARED, 'NotShared', decision.reason
    labels = get_path(host, 'metadata', 'labels') or {}
    if not matches_normalised(spec['hostSelector'], labels):
        return STAGE_NO_MATCH, 'SelectorMismatch', 'the host labels do not match hostSelector'
    if unavailable:
        return (STAGE_UNAVAILABLE,) + unavailable
    return None


def host_is_candidate(host, claim, ns_labels):
    """``(True, reason)`` if ``host`` may be bound to ``claim``, else ``(False, why)``.

    ``ns_labels`` are the labels of the claim's namespace.  Raises
    ``InvalidInput`` if the claim spec is invalid.
    """
    spec = validate_claim(claim)
    namespace = claim_identity(claim)[0]
    rejection = _rejection(host, spec, is_shared(host, namespace, ns_labels), _availability(host))
    if rejection:
        return False, '%s: %s' % (object_name(host, 'BareMetalHost'), rejection[2])
    return True, '%s is a candidate' % object_name(host, 'BareMetalHost')


def find_adopted_host(claim, hosts):
    """The BMH whose ``consumerRef`` already points at ``claim`` (lowest namespace/name if several), or ``None``."""
    bound = [host for host in hosts or [] if claim_ref_matches(host, claim)]
    return sorted(bound, key=host_key)[0] if bound else None


# ------------------------------------------------------------------ ranking

def _reuse_rank(host, reuse_value):
    label = (get_path(host, 'metadata', 'labels') or {}).get(NODE_REUSE_LABEL)
    if reuse_value and label == reuse_value:
        return 0
    return 1 if label is None else 2


def _spread(claim, binder_id, host):
    namespace, name, uid = claim_identity(claim)
    seed = '\0'.join([uid or '%s/%s' % (namespace, name), str(binder_id), '%s/%s' % host_key(host)])
    return hashlib.sha256(seed.encode('utf-8')).hexdigest()


def claim_reuse_value(claim):
    """The node-reuse label value the claim looks for, or ``None``."""
    return node_reuse_value(claim_identity(claim)[0], get_path(claim, 'spec', 'nodeReuse'))


def rank_candidates(claim, candidates, binder_id):
    """``candidates`` best first: node-reuse host, unlabelled hosts, others; then a per-binder rendezvous hash."""
    reuse_value = claim_reuse_value(claim)
    return sorted(candidates or [], key=lambda host: (_reuse_rank(host, reuse_value), _spread(claim, binder_id, host),
                                                      host_key(host)))


# ---------------------------------------------------------------- patches

def bind_patch(host, claim):
    """BMH merge patch that binds ``host`` to ``claim``: ``consumerRef``, node-reuse label spent, resourceVersion precondition."""
    patch = {'spec': {'consumerRef': consumer_ref_for(claim)}}
    if NODE_REUSE_LABEL in (get_path(host, 'metadata', 'labels') or {}):
        patch['metadata'] = {'labels': {NODE_REUSE_LABEL: None}}
    return with_precondition(patch, host)


def release_plan(host, claim, node_reuse):
    """BMH merge patch releasing ``host`` from ``claim`` (``{}`` if already released).

    Clears ``consumerRef``, ``image``, the data Secret references and the
    reboot holds passed down, sets ``online: false`` and the node-reuse label
    ``<claim namespace>.<node_reuse>`` (removed when ``node_reuse`` is unset or
    the value is not a valid label value).  Raises ``Conflict`` if the host is
    consumed by someone else.
    """
    if not get_path(host, 'spec', 'consumerRef'):
        return {}
    if not claim_ref_matches(host, claim):
        raise Conflict(object_name(host, 'BareMetalHost'),
                       'consumerRef does not point at %s; not released' % object_name(claim, 'HostClaim'))
    spec = dict((field, None) for field in DATA_FIELDS)
    spec.update({'consumerRef': None, 'image': None, 'online': False})
    annotations = get_path(host, 'metadata', 'annotations') or {}
    removed = dict((key, None) for key in tracked_keys(annotations, PASSED_ANNOTATIONS) if is_hold_key(key))
    removed[PASSED_ANNOTATIONS] = None
    reuse = node_reuse_value(claim_identity(claim)[0], node_reuse)
    patch = {'spec': spec, 'metadata': {'labels': {NODE_REUSE_LABEL: reuse}, 'annotations': removed}}
    return with_precondition(minimal_patch(host, patch), host)


# -------------------------------------------------------------- plan_pass

def _claim_ref(claim):
    namespace, name, uid = claim_identity(claim)
    return {'namespace': namespace, 'name': name, 'uid': uid}


def _action(kind, claim, host=None, **extra):
    action = {'action': kind, 'claim': _claim_ref(claim), 'host': _host_ref(host) if host else None}
    action.update(extra)
    return action


def _pending(claim, reason, message):
    return _action('pending', claim, None, reason=reason, message=message,
                   claim_patch=binding_label_fix(claim, None))


def _claim_sort_key(claim):
    namespace, name, dummy = claim_identity(claim)
    return get_path(claim, 'metadata', 'creationTimestamp') or '', namespace or '', name or ''


def _adoption_action(claim, host):
    label_patch = binding_label_fix(claim, get_path(host, 'metadata', 'name'))
    if label_patch:
        return _action('adopt', claim, host, claim_patch=label_patch, reason='Adopted',
                       message='host %s already points at the claim' % host_key(host)[1])
    return _action('bound', claim, host, claim_patch={}, reason='Bound', message='bound to host %s' % host_key(host)[1])


def _prepare(claim, namespaces):
    """``(spec, None)`` for a claim that can be planned, else ``(None, pending action)``."""
    try:
        spec = validate_claim(claim)
    except InvalidInput as exc:
        return None, _pending(claim, 'InvalidSpec', exc.message)
    namespace = claim_identity(claim)[0]
    if spec['credentials']:
        return None, _pending(claim, 'Unsupported', 'spec.credentials (hosts in another cluster) is not supported by this binder')
    if namespace not in (namespaces or {}):
        return None, _pending(claim, 'NamespaceNotFound', 'namespace %s was not found' % namespace)
    return spec, None


def _unavailable_message(codes):
    counts = {}
    for code in codes:
        counts[UNAVAILABLE_WORDS[code]] = counts.get(UNAVAILABLE_WORDS[code], 0) + 1
    if len(counts) == 1:
        return 'all hosts matching hostSelector are %s' % list(counts)[0]
    detail = ', '.join('%d %s' % (counts[word], word) for word in sorted(counts))
    return 'all hosts matching hostSelector are unavailable: %s' % detail


def pending_reason(claim, rejections, taken_count=0):
    """``(reason, message)`` for a claim left unbound; names no host and nothing not shared with the tenant."""
    namespace = claim_identity(claim)[0]
    codes = [code for stage, code, dummy in rejections if stage == STAGE_UNAVAILABLE]
    codes.extend(['Consumed'] * taken_count)
    if codes:
        return 'NoAvailableHost', _unavailable_message(codes)
    if any(stage == STAGE_NO_MATCH for stage, dummy, dummy2 in rejections):
        return 'NoMatchingHost', 'no host shared with namespace %s matches hostSelector' % namespace
    return 'NoSharedHost', 'no host is shared with namespace %s' % namespace


class _Planner(object):
    """State of one planning pass."""

    def __init__(self, hosts, namespaces, binder_id):
        self.hosts = list(hosts or [])
        self.namespaces = dict(namespaces or {})
        self.binder_id = binder_id
        self.taken = set()
        self.actions = {}
        self.rejections = {}
        self.ranked = {}
        self.decisions = {}
        self.unavailable = {}

    def decision(self, host, namespace):
        key = (id(host), namespace)
        if key not in self.decisions:
            self.decisions[key] = is_shared(host, namespace, self.namespaces.get(namespace) or {})
        return self.decisions[key]

    def availability(self, host):
        if id(host) not in self.unavailable:
            self.unavailable[id(host)] = _availability(host)
        return self.unavailable[id(host)]

    def survey(self, claim, spec):
        """``(candidates, rejections)`` of one claim over all hosts."""
        namespace = claim_identity(claim)[0]
        candidates, rejections = [], []
        for host in self.hosts:
            rejection = _rejection(host, spec, self.decision(host, namespace), self.availability(host))
            if rejection:
                rejections.append(rejection)
            else:
                candidates.append(host)
        return candidates, rejections

    def free(self, hosts):
        return [host for host in hosts if host_key(host) not in self.taken]

    def bind(self, claim, ranked, host):
        self.taken.add(host_key(host))
        self.ranked[id(claim)] = ranked
        self.actions[id(claim)] = _action(
            'bind', claim, host, host_patch=bind_patch(host, claim), alternatives=[],
            claim_patch=binding_label_fix(claim, host_key(host)[1]), reason='Binding',
            message='binding to host %s' % host_key(host)[1])

    def fill_alternatives(self):
        """Once every claim is served: the other candidates no claim of this plan uses."""
        for key, ranked in self.ranked.items():
            self.actions[key]['alternatives'] = [_host_ref(h) for h in ranked if host_key(h) not in self.taken]

    def reuse_phase(self, work):
        for claim, candidates in work:
            reuse_value = claim_reuse_value(claim)
            if not reuse_value:
                continue
            ranked = rank_candidates(claim, self.free(candidates), self.binder_id)
            if ranked and _reuse_rank(ranked[0], reuse_value) == 0:
                self.bind(claim, ranked, ranked[0])

    def main_phase(self, work):
        for claim, candidates in work:
            if id(claim) in self.actions:
                continue
            ranked = rank_candidates(claim, self.free(candidates), self.binder_id)
            if ranked:
                self.bind(claim, ranked, ranked[0])
            else:
                taken = len(candidates) - len(self.free(candidates))
                reason, message = pending_reason(claim, self.rejections[id(claim)], taken)
                self.actions[id(claim)] = _pending(claim, reason, message)

    def plan(self, claims):
        ordered = sorted([c for c in claims or [] if not get_path(c, 'metadata', 'deletionTimestamp')],
                         key=_claim_sort_key)
        work = []
        for claim in ordered:
            adopted = find_adopted_host(claim, self.hosts)
            if adopted is not None:
                self.taken.add(host_key(adopted))
                self.actions[id(claim)] = _adoption_action(claim, adopted)
                continue
            spec, pending = _prepare(claim, self.namespaces)
            if pending:
                self.actions[id(claim)] = pending
                continue
            candidates, self.rejections[id(claim)] = self.survey(claim, spec)
            work.append((claim, candidates))
        self.reuse_phase(work)
        self.main_phase(work)
        self.fill_alternatives()
        return [self.actions[id(claim)] for claim in ordered]


def plan_pass(claims, hosts, namespaces, binder_id):
    """Plan one binder pass: one action per claim that is not being deleted, oldest claim first.

    ``namespaces`` maps every namespace name to its labels.  Each action is a
    dict with ``action`` (``bind``, ``adopt``, ``bound`` or ``pending``),
    ``claim`` and ``host`` refs, ``reason``/``message`` (for the claim's
    AssociateBMH condition; pending messages never name a host) and
    ``claim_patch`` (binding label fix).  ``bind`` also has ``host_patch``
    (``bind_patch``) and ``alternatives`` (the claim's other candidates, best
    first, that no claim of this plan uses: what to try after a 409, re-reading
    the host and using ``bind_patch``).  No host is given to two claims.
    """
    return _Planner(hosts, namespaces, binder_id).plan(claims)
