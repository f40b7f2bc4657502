# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The candidate index gives each claim exactly what ranking every candidate would (rendezvous_index)."""

import heapq

from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder import planner as binding
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.rendezvous_index import (
    SEED_BITS,
    CandidateIndex,
    XorRank,
)
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.metal3_objects import (
    make_claim,
    make_host,
)

# seeds from a few values (many equal seeds: ties broken by key) or from the whole 64-bit range
SEEDS = st.one_of(st.integers(0, 7), st.integers(0, 2**SEED_BITS - 1))
LABELS = st.sampled_from([None, None, "a.x", "b.y"])
DOMAINS = st.sampled_from([None, "d1", "d2"])


@st.composite
def entry_lists(draw):
    count = draw(st.integers(0, 40))
    return [
        (draw(SEEDS), ("infra", "h%02d" % draw(st.integers(0, 99))), index, draw(LABELS), draw(DOMAINS))
        for index in range(count)
    ]


def brute_force(entries, query, taken, count, reuse_value=None, domain=None):
    """The planner's order written out: every candidate ranked, the first ``count`` kept."""

    def rank(entry):
        label = entry[3]
        if domain:
            return (0 if entry[4] == domain else 1, 1 if label is None else 2)
        if reuse_value and label == reuse_value:
            return (0,)
        return (1 if label is None else 2,)

    free = [entry for entry in entries if entry[1] not in taken]
    return heapq.nsmallest(count, free, key=lambda entry: (rank(entry), entry[0] ^ query, entry[1], entry[2]))


@given(entries=entry_lists(), query=SEEDS)
def test_xor_rank_reads_every_entry_in_increasing_xor_then_key(entries, query):
    expected = sorted(entries, key=lambda entry: (entry[0] ^ query, entry[1], entry[2]))
    assert list(XorRank(entries).nearest(query, lambda entry: False)) == expected


@given(entries=entry_lists(), query=SEEDS, skipped=st.sets(st.integers(0, 99)))
def test_xor_rank_skips_what_it_is_told_and_nothing_else(entries, query, skipped):
    found = list(XorRank(entries).nearest(query, lambda entry: entry[2] in skipped))
    assert [entry for entry in found if entry[2] in skipped] == []
    assert sorted(found) == sorted(entry for entry in entries if entry[2] not in skipped)


@given(
    entries=entry_lists(),
    query=SEEDS,
    taken=st.sets(st.builds(lambda n: ("infra", "h%02d" % n), st.integers(0, 99))),
    count=st.integers(1, 20),
    reuse_value=st.sampled_from([None, "a.x", "b.y", "c.z"]),
    domain=st.sampled_from([None, "d1", "d2", "d3"]),
)
def test_best_is_what_ranking_every_candidate_gives(entries, query, taken, count, reuse_value, domain):
    index = CandidateIndex(entries)
    assert index.best(query, taken, count, None if domain else reuse_value, domain) == brute_force(
        entries, query, taken, count, None if domain else reuse_value, domain
    )


@given(entries=entry_lists(), queries=st.lists(SEEDS, min_size=1, max_size=5))
def test_an_index_answers_many_claims_as_hosts_are_taken(entries, queries):
    """One index serves every claim of a survey while the pass takes hosts one by one."""
    index, taken = CandidateIndex(entries), set()
    for query in queries:
        best = index.best(query, taken, 3, "a.x")
        assert best == brute_force(entries, query, taken, 3, "a.x")
        if best:
            taken.add(best[0][1])


def test_a_pass_at_scale_binds_each_claim_to_its_own_best_host():
    """400 claims from 6 namespaces over 1,000 hosts (500 of them matching): each claim gets the best host left for it, in claim order."""
    hosts = [make_host("h%04d" % number, labels={"rack": "r%d" % (number % 4)}) for number in range(1000)]
    claims = [
        make_claim(
            "c%04d" % number,
            namespace="tenant-%d" % (number % 6),
            created="2026-01-01T00:%02d:%02dZ" % (number // 60, number % 60),
            spec={"online": False, "hostSelector": {"matchLabels": {"rack": "r%d" % (number % 2)}}},
        )
        for number in range(400)
    ]
    namespaces = dict(("tenant-%d" % number, {}) for number in range(6))
    plan = binding.plan_pass(claims, hosts, namespaces, "binder-1")
    taken, runners_up = set(), {}
    by_name = dict((claim["metadata"]["name"], claim) for claim in claims)
    for action in plan:
        claim = by_name[action["claim"]["name"]]
        rack = claim["spec"]["hostSelector"]["matchLabels"]["rack"]
        free = [
            host
            for host in hosts
            if host["metadata"]["labels"]["rack"] == rack and host["metadata"]["name"] not in taken
        ]
        best = [host["metadata"]["name"] for host in binding.rank_candidates(claim, free, "binder-1")]
        assert action["action"] == "bind"
        assert action["host"]["name"] == best[0]
        runners_up[action["claim"]["name"]] = best[1 : binding.MAX_ALTERNATIVES + 1]
        taken.add(best[0])
    assert len(taken) == 400
    # alternatives: the runners-up that no claim of the plan took
    for action in plan:
        expected = [name for name in runners_up[action["claim"]["name"]] if name not in taken]
        assert [ref["name"] for ref in action["alternatives"]] == expected
