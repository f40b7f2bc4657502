# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


import copy
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import Conflict, InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import apply_merge_patch
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import (
    BINDING_LABEL,
    NODE_REUSE_LABEL,
    PASSED_ANNOTATIONS,
    SHARING_ANNOTATION,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder import planner as b
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.bmc_data import find_bmc_data
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.dialect import FAILURE_DOMAIN_LABEL
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.metal3_objects import (
    BMC_VALUES,
    make_claim,
    make_host,
    ref_to,
)

NAMESPACES = {"tenant-a": {"team": "a"}, "tenant-b": {"team": "b"}, "p-x": {}}


def claim_key(claim):
    return claim["metadata"]["namespace"], claim["metadata"]["name"]


def apply_plan(plan, claims, hosts):
    """What the I/O layer does when every write succeeds."""
    claims = dict((claim_key(c), copy.deepcopy(c)) for c in claims)
    hosts = dict((b.host_key(h), copy.deepcopy(h)) for h in hosts)
    for action in plan:
        key = (action["claim"]["namespace"], action["claim"]["name"])
        if action["action"] == "bind":
            host_key = (action["host"]["namespace"], action["host"]["name"])
            hosts[host_key] = apply_merge_patch(hosts[host_key], action["host_patch"])
        if action.get("claim_patch"):
            claims[key] = apply_merge_patch(claims[key], action["claim_patch"])
    return list(claims.values()), list(hosts.values())


def by_action(plan, kind):
    return [a for a in plan if a["action"] == kind]


def binding_of(plan):
    return dict(
        ((a["claim"]["namespace"], a["claim"]["name"]), (a["host"]["namespace"], a["host"]["name"]))
        for a in plan
        if a["host"]
    )


# --------------------------------------------------------- host_is_candidate


def test_plain_host_is_a_candidate():
    ok, reason = b.host_is_candidate(make_host(), make_claim(), NAMESPACES["tenant-a"])
    assert ok and "BareMetalHost infra/h1" in reason


@pytest.mark.parametrize(
    "host_args,fragment",
    [
        ({"policy": None}, "no annotation baremetal.tenancy/host-claim-namespaces"),
        ({"policy": None, "legacy_policy": {"matches": ".*"}}, "spec.hostClaimNamespaces is no longer read"),
        ({"policy": "not json"}, "is not valid JSON"),
        ({"policy": '["tenant-a"]'}, "must be a JSON object"),
        ({"policy": {"matches": "p-.*"}}, "does not match"),
        ({"policy": {"matches": "("}}, "invalid sharing policy (annotation baremetal.tenancy/host-claim-namespaces)"),
        ({"policy": {"withLabel": ["team=b"]}}, "carries none"),
        ({"labels": {"infra-kind": "small"}}, "hostSelector"),
        ({"deleting": True}, "being deleted"),
        ({"annotations": {"baremetalhost.metal3.io/paused": ""}}, "paused"),
        (
            {
                "consumer": {
                    "apiVersion": "metal3.io/v1alpha1",
                    "kind": "HostClaim",
                    "namespace": "tenant-b",
                    "name": "x",
                }
            },
            "consumed",
        ),
        ({"error_type": "registration error"}, "registration error"),
        ({"error_message": "something"}, "errorMessage"),
        ({"operational": "detached"}, "'detached'"),
        ({"operational": "error"}, "'error'"),
        ({"state": "provisioned"}, "'provisioned'"),
        ({"state": "inspecting"}, "'inspecting'"),
        ({"state": "externally provisioned"}, "externally provisioned"),
        ({"state": None}, "None"),
    ],
)
def test_rejections(host_args, fragment):
    claim = make_claim(spec={"hostSelector": {"matchLabels": {"infra-kind": "medium"}}})
    host_args.setdefault("labels", {"infra-kind": "medium"})
    ok, reason = b.host_is_candidate(make_host(**host_args), claim, NAMESPACES["tenant-a"])
    assert not ok
    assert fragment in reason and reason.startswith("BareMetalHost infra/h1: ")


@pytest.mark.parametrize("state", ["ready", "available"])
def test_ready_states(state):
    assert b.host_is_candidate(make_host(state=state), make_claim(), {})[0]


def test_missing_operational_status_is_accepted():
    host = make_host()
    del host["status"]["operationalStatus"]
    assert b.host_is_candidate(host, make_claim(), {})[0]


def test_sharing_is_checked_before_anything_else():
    host = make_host(policy={"matches": "p-.*"}, deleting=True, state="provisioned", labels={"x": "y"})
    ok, reason = b.host_is_candidate(host, make_claim(spec={"hostSelector": {"matchLabels": {"a": "b"}}}), {})
    assert not ok and "does not match" in reason


def test_invalid_claim_raises():
    with pytest.raises(InvalidInput):
        b.host_is_candidate(make_host(), make_claim(spec={"kind": "vm"}), {})


# --------------------------------------------------------- find_adopted_host


def test_find_adopted_host():
    claim = make_claim()
    hosts = [make_host("h1"), make_host("h2", consumer=ref_to(claim)), make_host("h3")]
    assert b.find_adopted_host(claim, hosts)["metadata"]["name"] == "h2"
    assert b.find_adopted_host(claim, [make_host("h1")]) is None
    assert b.find_adopted_host(claim, []) is None and b.find_adopted_host(claim, None) is None


def test_stale_ref_to_a_previous_claim_with_the_same_name_is_not_adopted():
    claim = make_claim()
    stale = ref_to(claim)
    stale["uid"] = "uid-of-the-deleted-one"
    assert b.find_adopted_host(claim, [make_host(consumer=stale)]) is None


def test_ref_without_uid_is_adopted():
    claim = make_claim()
    assert b.find_adopted_host(claim, [make_host(consumer=ref_to(claim, uid=False))]) is not None


def test_several_adopted_hosts_pick_the_lowest_name():
    claim = make_claim()
    hosts = [make_host("h9", consumer=ref_to(claim)), make_host("h2", consumer=ref_to(claim))]
    assert b.find_adopted_host(claim, hosts)["metadata"]["name"] == "h2"


# ------------------------------------------------------------------ ranking


def test_node_reuse_host_first_then_unlabelled_then_reserved():
    claim = make_claim(spec={"nodeReuse": "md-0"})
    reuse = make_host("h-reuse", labels={NODE_REUSE_LABEL: "tenant-a.md-0"})
    other_reuse = make_host("h-other", labels={NODE_REUSE_LABEL: "tenant-b.md-0"})
    plain = [make_host("h-%d" % i) for i in range(5)]
    ranked = b.rank_candidates(claim, [other_reuse, *plain, reuse], "binder-1")
    names = [h["metadata"]["name"] for h in ranked]
    assert names[0] == "h-reuse" and names[-1] == "h-other"


def test_reuse_label_of_another_namespace_is_not_preferred():
    claim = make_claim(namespace="tenant-b", spec={"nodeReuse": "md-0"})
    reuse_a = make_host("h-a", labels={NODE_REUSE_LABEL: "tenant-a.md-0"})
    plain = make_host("h-plain")
    assert b.rank_candidates(claim, [reuse_a, plain], "x")[0]["metadata"]["name"] == "h-plain"


def test_ranking_is_deterministic_and_order_independent():
    claim = make_claim()
    hosts = [make_host("h-%d" % i) for i in range(20)]
    first = [h["metadata"]["name"] for h in b.rank_candidates(claim, hosts, "binder-1")]
    shuffled = list(hosts)
    random.Random(4).shuffle(shuffled)
    assert [h["metadata"]["name"] for h in b.rank_candidates(claim, shuffled, "binder-1")] == first
    assert sorted(first) == sorted(h["metadata"]["name"] for h in hosts)


def test_concurrent_binders_spread_over_candidates():
    hosts = [make_host("h-%d" % i) for i in range(20)]
    for index in range(10):
        claim = make_claim(name="c-%d" % index)
        firsts = set(b.rank_candidates(claim, hosts, "binder-%d" % n)[0]["metadata"]["name"] for n in range(4))
        assert len(firsts) > 1
    claims = [make_claim(name="c-%d" % index) for index in range(30)]
    firsts = set(b.rank_candidates(c, hosts, "binder-1")[0]["metadata"]["name"] for c in claims)
    assert len(firsts) > 5


def test_claims_without_uid_are_ranked():
    claim = make_claim(uid="")
    assert len(b.rank_candidates(claim, [make_host("a"), make_host("b")], "x")) == 2
    assert b.rank_candidates(claim, None, "x") == []


# ------------------------------------------------------------------ patches


def test_bind_patch():
    claim = make_claim()
    host = make_host(labels={NODE_REUSE_LABEL: "tenant-a.md-0", "infra-kind": "medium"}, resource_version="77")
    patch = b.bind_patch(host, claim)
    assert patch == {
        "spec": {"consumerRef": ref_to(claim)},
        "metadata": {"labels": {NODE_REUSE_LABEL: None}, "resourceVersion": "77"},
    }
    assert b.bind_patch(make_host(), claim) == {
        "spec": {"consumerRef": ref_to(claim)},
        "metadata": {"resourceVersion": "100"},
    }


def bound_host(claim, **kwargs):
    host = make_host(consumer=ref_to(claim), state="provisioned", online=True, **kwargs)
    host["spec"]["image"] = {"url": "https://x/os.img", "checksum": "a" * 64}
    host["spec"]["userData"] = {"name": "hostclaim-x-userdata", "namespace": "infra"}
    host["spec"]["networkData"] = {"name": "hostclaim-x-networkdata", "namespace": "infra"}
    return host


def test_release_plan_with_node_reuse():
    claim = make_claim(spec={"nodeReuse": "md-0"})
    host = bound_host(
        claim,
        annotations={
            "reboot.metal3.io/hostclaim-fw": "",
            "reboot.metal3.io/maint": "",
            PASSED_ANNOTATIONS: '["reboot.metal3.io/hostclaim-fw", "reboot.metal3.io/maint"]',
        },
    )
    patch = b.release_plan(host, claim, "md-0")
    assert patch["spec"] == {"consumerRef": None, "image": None, "userData": None, "networkData": None, "online": False}
    assert patch["metadata"]["labels"] == {NODE_REUSE_LABEL: "tenant-a.md-0"}
    assert patch["metadata"]["annotations"] == {"reboot.metal3.io/hostclaim-fw": None, PASSED_ANNOTATIONS: None}
    assert patch["metadata"]["resourceVersion"] == "100"
    released = apply_merge_patch(host, patch)
    assert "consumerRef" not in released["spec"] and released["spec"]["online"] is False
    assert released["spec"]["bmc"] == host["spec"]["bmc"]
    # the release never touches the owner's sharing policy
    assert released["metadata"]["annotations"] == {
        "reboot.metal3.io/maint": "",
        SHARING_ANNOTATION: host["metadata"]["annotations"][SHARING_ANNOTATION],
    }
    assert b.release_plan(released, claim, "md-0") == {}


def test_release_plan_without_node_reuse_removes_a_stale_label():
    claim = make_claim()
    host = bound_host(claim, labels={NODE_REUSE_LABEL: "tenant-b.old"})
    patch = b.release_plan(host, claim, None)
    assert patch["metadata"]["labels"] == {NODE_REUSE_LABEL: None}
    assert "labels" not in b.release_plan(bound_host(claim), claim, None).get("metadata", {})


def test_release_plan_with_too_long_node_reuse_value():
    claim = make_claim()
    host = bound_host(claim, labels={NODE_REUSE_LABEL: "x"})
    assert b.release_plan(host, claim, "m" * 60)["metadata"]["labels"] == {NODE_REUSE_LABEL: None}


def test_release_plan_refuses_a_host_consumed_by_someone_else():
    claim = make_claim()
    host = bound_host(make_claim(name="other"))
    with pytest.raises(Conflict) as exc:
        b.release_plan(host, claim, None)
    assert exc.value.obj == "BareMetalHost infra/h1" and "tenant-a/web-1" in exc.value.cause


def test_release_plan_carries_no_bmc_data():
    claim = make_claim(spec={"nodeReuse": "md-0"})
    assert find_bmc_data(b.release_plan(bound_host(claim), claim, "md-0"), BMC_VALUES) == []


# --------------------------------------------------------------- plan_pass


def test_plan_binds_pending_claims_to_distinct_hosts():
    claims = [make_claim("c1"), make_claim("c2"), make_claim("c3", namespace="tenant-b")]
    hosts = [make_host("h%d" % i) for i in range(5)]
    plan = b.plan_pass(claims, hosts, NAMESPACES, "binder-1")
    assert [a["action"] for a in plan] == ["bind"] * 3
    bound = binding_of(plan)
    assert len(set(bound.values())) == 3
    for action in plan:
        assert action["host_patch"]["spec"]["consumerRef"]["name"] == action["claim"]["name"]
        assert action["claim_patch"] == {"metadata": {"labels": {BINDING_LABEL: action["host"]["name"]}}}
        assert action["host"] not in action["alternatives"]
        assert action["reason"] == "Binding"


def test_alternatives_exclude_hosts_given_to_other_claims():
    claims = [make_claim("c%d" % i, created="2026-01-0%dT00:00:00Z" % (i + 1)) for i in range(3)]
    hosts = [make_host("h%d" % i) for i in range(5)]
    plan = b.plan_pass(claims, hosts, NAMESPACES, "x")
    used = set(a["host"]["name"] for a in plan)
    assert len(used) == 3
    for action in plan:
        assert set(h["name"] for h in action["alternatives"]) == {"h0", "h1", "h2", "h3", "h4"} - used
        assert all(h["namespace"] == "infra" for h in action["alternatives"])


def test_alternatives_are_ranked():
    claim = make_claim(spec={"nodeReuse": "md-0"})
    hosts = [
        make_host("h-reuse", labels={NODE_REUSE_LABEL: "tenant-a.md-0"}),
        make_host("h-other", labels={NODE_REUSE_LABEL: "tenant-b.md-0"}),
        make_host("h-plain"),
    ]
    plan = b.plan_pass([claim], hosts, NAMESPACES, "x")
    assert plan[0]["host"]["name"] == "h-reuse"
    assert [h["name"] for h in plan[0]["alternatives"]] == ["h-plain", "h-other"]


def test_oldest_claim_is_served_first():
    claims = [make_claim("young", created="2026-02-01T00:00:00Z"), make_claim("old", created="2026-01-01T00:00:00Z")]
    plan = b.plan_pass(claims, [make_host("h1")], NAMESPACES, "x")
    assert [(a["claim"]["name"], a["action"]) for a in plan] == [("old", "bind"), ("young", "pending")]
    assert plan[1]["reason"] == "NoAvailableHost"
    assert plan[1]["message"] == "all hosts matching hostSelector are consumed"


def test_node_reuse_claim_gets_its_host_even_when_younger():
    claims = [
        make_claim("old", created="2026-01-01T00:00:00Z"),
        make_claim("young", created="2026-02-01T00:00:00Z", spec={"nodeReuse": "md-0"}),
    ]
    hosts = [make_host("h-reuse", labels={NODE_REUSE_LABEL: "tenant-a.md-0"}), make_host("h-plain")]
    for binder in ("a", "b", "c", "d"):
        bound = binding_of(b.plan_pass(claims, hosts, NAMESPACES, binder))
        assert bound[("tenant-a", "young")] == ("infra", "h-reuse")
        assert bound[("tenant-a", "old")] == ("infra", "h-plain")


def test_reuse_host_is_spent_on_bind():
    claim = make_claim(spec={"nodeReuse": "md-0"})
    plan = b.plan_pass([claim], [make_host("h-reuse", labels={NODE_REUSE_LABEL: "tenant-a.md-0"})], NAMESPACES, "x")
    assert plan[0]["host_patch"]["metadata"]["labels"] == {NODE_REUSE_LABEL: None}


@pytest.mark.parametrize(
    "hosts,reason,message",
    [
        ([], "NoSharedHost", "no host is shared with namespace tenant-a"),
        (
            [make_host(policy=None), make_host("h2", policy={"matches": "tenant-b"})],
            "NoSharedHost",
            "no host is shared with namespace tenant-a",
        ),
        (
            [make_host(labels={"infra-kind": "small"})],
            "NoMatchingHost",
            "no host shared with namespace tenant-a matches hostSelector",
        ),
        (
            [
                make_host(
                    labels={"infra-kind": "medium"},
                    consumer={"kind": "HostClaim", "name": "z", "namespace": "tenant-b"},
                )
            ],
            "NoAvailableHost",
            "all hosts matching hostSelector are consumed",
        ),
        (
            [
                make_host(labels={"infra-kind": "medium"}, state="provisioning"),
                make_host("h2", labels={"infra-kind": "medium"}, deleting=True),
                make_host("h3", labels={"infra-kind": "medium"}, state="inspecting"),
            ],
            "NoAvailableHost",
            "all hosts matching hostSelector are unavailable: 1 being deleted, 2 not ready",
        ),
    ],
)
def test_pending_reasons(hosts, reason, message):
    claim = make_claim(spec={"hostSelector": {"matchLabels": {"infra-kind": "medium"}}})
    plan = b.plan_pass([claim], hosts, NAMESPACES, "x")
    assert plan == [
        {
            "action": "pending",
            "claim": {"namespace": "tenant-a", "name": "web-1", "uid": "uid-tenant-a-web-1"},
            "host": None,
            "reason": reason,
            "message": message,
            "claim_patch": {},
        }
    ]


def test_pending_message_does_not_reveal_hosts_of_other_tenants():
    claim = make_claim(spec={"hostSelector": {"matchLabels": {"infra-kind": "medium"}}})
    hidden = make_host("secret-host-zq", policy={"matches": "tenant-b"}, labels={"infra-kind": "medium"})
    plan = b.plan_pass([claim], [hidden], NAMESPACES, "x")
    assert plan[0]["reason"] == "NoSharedHost" and "zq" not in plan[0]["message"]


def test_invalid_claims_are_pending_and_claims_with_credentials_are_relayed():
    claims = [
        make_claim("bad", spec={"hostSelector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}),
        make_claim("remote", spec={"credentials": "kubeconfig-x"}),
        make_claim("lost", namespace="gone"),
    ]
    plan = b.plan_pass(claims, [make_host()], NAMESPACES, "x")
    reasons = dict((a["claim"]["name"], (a["reason"], a["message"])) for a in plan)
    assert reasons["bad"][0] == "InvalidSpec" and "'Near'" in reasons["bad"][1] and "tenant-a/bad" in reasons["bad"][1]
    assert reasons["remote"][0] == "Relaying"
    assert [a["action"] for a in plan if a["claim"]["name"] == "remote"] == ["relay"]
    assert reasons["lost"] == ("NamespaceNotFound", "namespace gone was not found")


def test_deleting_claims_are_skipped():
    claims = [make_claim("c1", deleting=True), make_claim("c2")]
    plan = b.plan_pass(claims, [make_host()], NAMESPACES, "x")
    assert [a["claim"]["name"] for a in plan] == ["c2"]


def test_adoption_and_bound():
    claim = make_claim()
    host = make_host("h7", consumer=ref_to(claim), state="provisioned")
    plan = b.plan_pass([claim], [host, make_host("h1")], NAMESPACES, "x")
    assert plan[0]["action"] == "adopt" and plan[0]["host"] == {"namespace": "infra", "name": "h7"}
    assert plan[0]["claim_patch"] == {"metadata": {"labels": {BINDING_LABEL: "h7"}}}
    claim["metadata"]["labels"][BINDING_LABEL] = "h7"
    plan = b.plan_pass([claim], [host, make_host("h1")], NAMESPACES, "x")
    assert plan[0]["action"] == "bound" and plan[0]["claim_patch"] == {}


def test_adoption_ignores_sharing_and_state():
    # the binder wrote consumerRef earlier; the host may since be provisioned or unshared
    claim = make_claim()
    host = make_host(consumer=ref_to(claim), policy=None, state="provisioned")
    assert b.plan_pass([claim], [host], NAMESPACES, "x")[0]["action"] == "adopt"


def test_forged_binding_label_is_erased_and_never_honoured():
    victim = make_claim("victim", namespace="tenant-b")
    host = make_host("h-victim", consumer=ref_to(victim), state="provisioned")
    attacker = make_claim("attacker", labels={BINDING_LABEL: "h-victim"})
    plan = b.plan_pass([attacker, victim], [host], NAMESPACES, "x")
    actions = dict((a["claim"]["name"], a) for a in plan)
    assert actions["attacker"]["action"] == "pending"
    assert actions["attacker"]["claim_patch"] == {"metadata": {"labels": {BINDING_LABEL: None}}}
    assert actions["victim"]["action"] == "adopt"


def test_forged_label_is_replaced_on_bind():
    claim = make_claim(labels={BINDING_LABEL: "someone-elses"})
    plan = b.plan_pass([claim], [make_host("h1")], NAMESPACES, "x")
    assert plan[0]["claim_patch"] == {"metadata": {"labels": {BINDING_LABEL: "h1"}}}


def test_stale_uid_ref_keeps_the_host_consumed():
    claim = make_claim()
    stale = ref_to(claim)
    stale["uid"] = "old"
    plan = b.plan_pass([claim], [make_host(consumer=stale)], NAMESPACES, "x")
    assert plan[0]["action"] == "pending" and plan[0]["reason"] == "NoAvailableHost"


def test_hosts_in_several_namespaces():
    claims = [make_claim("c1"), make_claim("c2")]
    hosts = [make_host("h1", namespace="infra-1"), make_host("h1", namespace="infra-2")]
    plan = b.plan_pass(claims, hosts, NAMESPACES, "x")
    assert sorted(binding_of(plan).values()) == [("infra-1", "h1"), ("infra-2", "h1")]


def test_plan_is_deterministic_and_order_independent():
    claims = [make_claim("c%d" % i, created="2026-01-01T00:00:%02dZ" % i) for i in range(6)]
    hosts = [make_host("h%d" % i) for i in range(8)]
    first = b.plan_pass(claims, hosts, NAMESPACES, "binder-1")
    shuffled_claims, shuffled_hosts = list(claims), list(hosts)
    random.Random(1).shuffle(shuffled_claims)
    random.Random(2).shuffle(shuffled_hosts)
    assert b.plan_pass(shuffled_claims, shuffled_hosts, NAMESPACES, "binder-1") == first


def test_inputs_are_not_modified():
    claims = [make_claim("c1", labels={BINDING_LABEL: "x"})]
    hosts = [make_host("h1")]
    before = copy.deepcopy((claims, hosts))
    b.plan_pass(claims, hosts, NAMESPACES, "x")
    assert (claims, hosts) == before


def test_empty_inputs():
    assert b.plan_pass([], [], {}, "x") == []
    assert b.plan_pass(None, None, None, "x") == []


def test_pending_reason_function():
    claim = make_claim()
    assert b.pending_reason(claim, [])[0] == "NoSharedHost"
    assert b.pending_reason(claim, [], taken_count=2) == (
        "NoAvailableHost",
        "all hosts matching hostSelector are consumed",
    )


# -------------------------------------------------------------- properties

HOST_LABELS = st.dictionaries(
    st.sampled_from(["infra-kind", "rack"]), st.sampled_from(["small", "medium", "r1"]), max_size=2
)
POLICIES = st.sampled_from(
    [
        None,
        {"matches": ".*"},
        {"matches": "tenant-.*"},
        {"matches": "p-.*"},
        {"matches": "("},
        {"withLabel": ["team=a"]},
        {"matches": "tenant-.*", "withLabel": ["team"]},
        {},
    ]
)
STATES = st.sampled_from(["available", "ready", "provisioned", "inspecting"])
SELECTORS = st.sampled_from(
    [
        None,
        {"matchLabels": {"infra-kind": "medium"}},
        {"matchExpressions": [{"key": "rack", "operator": "Exists"}]},
        {"matchExpressions": [{"key": "infra-kind", "operator": "NotIn", "values": ["small"]}]},
    ]
)


@st.composite
def worlds(draw, unconstrained=False):
    host_count = draw(st.integers(0, 7))
    claim_count = draw(st.integers(0, 7))
    claims = []
    for index in range(claim_count):
        namespace = draw(st.sampled_from(sorted(NAMESPACES)))
        spec = {"online": False}
        if not unconstrained:
            spec["hostSelector"] = draw(SELECTORS)
            if draw(st.booleans()):
                spec["nodeReuse"] = draw(st.sampled_from(["md-0", "md-1"]))
        claims.append(
            make_claim(
                "c%d" % index,
                namespace=namespace,
                spec=spec,
                created="2026-01-01T00:00:%02dZ" % draw(st.integers(0, 3)),
                deleting=draw(st.booleans()) and not unconstrained and draw(st.booleans()),
            )
        )
    hosts = []
    for index in range(host_count):
        if unconstrained:
            hosts.append(make_host("bmh-zq-%d" % index))
            continue
        consumer = None
        if claims and draw(st.integers(0, 4)) == 0:
            consumer = ref_to(draw(st.sampled_from(claims)))
        labels = draw(HOST_LABELS)
        if draw(st.booleans()):
            labels[NODE_REUSE_LABEL] = draw(st.sampled_from(["tenant-a.md-0", "tenant-b.md-1", "p-x.md-0"]))
        hosts.append(
            make_host(
                "bmh-zq-%d" % index,
                labels=labels,
                policy=draw(POLICIES),
                state=draw(STATES),
                consumer=consumer,
                deleting=draw(st.integers(0, 6)) == 0,
            )
        )
    return claims, hosts


def _claim_by_key(claims):
    return dict((claim_key(c), c) for c in claims)


@settings(max_examples=300)
@given(worlds(), st.sampled_from(["binder-0", "binder-1", "binder-2", "binder-3"]))
def test_plan_invariants(world, binder):
    claims, hosts = world
    plan = b.plan_pass(claims, hosts, NAMESPACES, binder)
    live = [c for c in claims if not c["metadata"].get("deletionTimestamp")]
    # one action per live claim
    assert sorted((a["claim"]["namespace"], a["claim"]["name"]) for a in plan) == sorted(claim_key(c) for c in live)
    # a host is never given to two claims
    targets = [tuple(sorted(a["host"].items())) for a in plan if a["host"]]
    assert len(targets) == len(set(targets))
    by_key = _claim_by_key(claims)
    host_by_key = dict((b.host_key(h), h) for h in hosts)
    for action in plan:
        claim = by_key[(action["claim"]["namespace"], action["claim"]["name"])]
        if action["action"] == "bind":
            host = host_by_key[(action["host"]["namespace"], action["host"]["name"])]
            ok, reason = b.host_is_candidate(host, claim, NAMESPACES[claim["metadata"]["namespace"]])
            assert ok, reason
            assert b.find_adopted_host(claim, hosts) is None
        elif action["action"] in ("adopt", "bound"):
            host = host_by_key[(action["host"]["namespace"], action["host"]["name"])]
            assert b.claim_ref_matches(host, claim)
        else:
            assert action["host"] is None and action["message"]
            # pending messages never name a host
            assert "bmh-zq" not in action["message"]
    assert find_bmc_data(plan, BMC_VALUES) == []


@settings(max_examples=200)
@given(worlds(), st.sampled_from(["binder-0", "binder-1"]))
def test_applying_a_plan_then_planning_again_binds_nothing_new(world, binder):
    claims, hosts = world
    plan = b.plan_pass(claims, hosts, NAMESPACES, binder)
    claims2, hosts2 = apply_plan(plan, claims, hosts)
    again = b.plan_pass(claims2, hosts2, NAMESPACES, binder)
    assert by_action(again, "bind") == [] and by_action(again, "adopt") == []
    # every claim bound or adopted by the first plan is now simply bound to the same host
    first = binding_of([a for a in plan if a["action"] in ("bind", "adopt", "bound")])
    assert binding_of(by_action(again, "bound")) == first
    # and a third pass changes nothing
    claims3, hosts3 = apply_plan(again, claims2, hosts2)
    assert b.plan_pass(claims3, hosts3, NAMESPACES, binder) == again


@settings(max_examples=200)
@given(worlds(unconstrained=True), st.sampled_from(["binder-0", "binder-1"]))
def test_unconstrained_claims_bind_as_many_as_possible(world, binder):
    claims, hosts = world
    plan = b.plan_pass(claims, hosts, NAMESPACES, binder)
    assert len(by_action(plan, "bind")) == min(len(claims), len(hosts))
    for action in by_action(plan, "pending"):
        assert action["reason"] in ("NoAvailableHost", "NoSharedHost")


@settings(max_examples=100)
@given(worlds(), st.randoms(use_true_random=False))
def test_plan_does_not_depend_on_input_order(world, rnd):
    claims, hosts = world
    shuffled_claims, shuffled_hosts = list(claims), list(hosts)
    rnd.shuffle(shuffled_claims)
    rnd.shuffle(shuffled_hosts)
    assert b.plan_pass(claims, hosts, NAMESPACES, "b") == b.plan_pass(shuffled_claims, shuffled_hosts, NAMESPACES, "b")


@settings(max_examples=100)
@given(worlds())
def test_concurrent_binders_never_double_book_after_conflicts(world):
    """Four binders plan on the same snapshot; writes race with resourceVersion preconditions."""
    claims, hosts = world
    plans = [b.plan_pass(claims, hosts, NAMESPACES, "binder-%d" % n) for n in range(4)]
    state = dict((b.host_key(h), copy.deepcopy(h)) for h in hosts)
    versions = dict((key, host["metadata"]["resourceVersion"]) for key, host in state.items())
    winners = {}
    for step in range(max([len(p) for p in plans] + [0])):
        for plan in plans:
            if step >= len(plan) or plan[step]["action"] != "bind":
                continue
            action = plan[step]
            key = (action["host"]["namespace"], action["host"]["name"])
            claim = (action["claim"]["namespace"], action["claim"]["name"])
            if claim in winners:
                continue  # another binder already bound this claim; this one would adopt on its next pass
            if action["host_patch"]["metadata"]["resourceVersion"] != versions[key]:
                continue  # 409: someone else won
            state[key] = apply_merge_patch(state[key], action["host_patch"])
            versions[key] = str(int(versions[key]) + 1)
            state[key]["metadata"]["resourceVersion"] = versions[key]
            winners[claim] = key
    assert len(set(winners.values())) == len(winners)


# ------------------------------------------- shared surveys against a full scan


class _ScanningPlanner(b._Planner):
    """The planner with the survey it had before surveys were shared: every host scanned for every (namespace,
    selector), each decided for the claim's own namespace."""

    def survey(self, claim, spec):
        namespace, dialect = claim["metadata"]["namespace"], b.claim_dialect_of(claim)
        candidates, rejections = [], []
        for host in self.hosts:
            rejection = b._rejection(host, spec, self.decision(host, namespace, dialect), self.availability(host))
            if rejection:
                rejections.append(rejection)
            else:
                candidates.append(host)
        return candidates, rejections


def _scanning_plan(claims, hosts, namespaces, binder, policies=()):
    return _ScanningPlanner(hosts, namespaces, binder, policies).plan(claims)


BMO_NAMESPACES = dict(NAMESPACES, **{"infra": {}, "infra-2": {}})
DEPLOY_POLICIES = st.sampled_from(
    [
        {"nameMatches": "tenant-.*"},
        {"names": ["p-x"]},
        {"hasLabels": ["team"]},
        {"nameMatches": "tenant-a", "hasLabels": ["team=a"]},
        {"nameMatches": "("},
    ]
)


@st.composite
def bmo_worlds(draw):
    """Claims of baremetal-operator's dialect over hosts of two namespaces, shared by HostDeployPolicies."""
    policies = []
    for namespace in ("infra", "infra-2"):
        for index in range(draw(st.integers(0, 2))):
            policies.append(
                {
                    "metadata": {"name": "p%d" % index, "namespace": namespace},
                    "spec": {"hostClaimNamespaces": draw(DEPLOY_POLICIES)},
                }
            )
    hosts = []
    for index in range(draw(st.integers(0, 8))):
        labels = draw(HOST_LABELS)
        if draw(st.booleans()):
            labels[FAILURE_DOMAIN_LABEL] = draw(st.sampled_from(["fd-1", "fd-2"]))
        hosts.append(
            make_host(
                "bmh-zq-%d" % index,
                namespace=draw(st.sampled_from(["infra", "infra-2"])),
                labels=labels,
                policy=None,
                state=draw(STATES),
            )
        )
    claims = []
    for index in range(draw(st.integers(0, 8))):
        selector = dict(draw(SELECTORS) or {})
        if draw(st.booleans()):
            selector["inNamespace"] = draw(st.sampled_from(["infra", "infra-2"]))
        spec = {"poweredOn": False, "hostSelector": selector}
        if draw(st.booleans()):
            spec["failureDomain"] = draw(st.sampled_from(["fd-1", "fd-2"]))
        claims.append(make_claim("c%d" % index, namespace=draw(st.sampled_from(sorted(NAMESPACES))), spec=spec))
    return claims, hosts, policies


@settings(max_examples=300)
@given(worlds(), st.sampled_from(["binder-0", "binder-1"]))
def test_shared_surveys_plan_as_a_full_scan_does(world, binder):
    claims, hosts = world
    assert b.plan_pass(claims, hosts, NAMESPACES, binder) == _scanning_plan(claims, hosts, NAMESPACES, binder)


@settings(max_examples=300)
@given(bmo_worlds(), st.sampled_from(["binder-0", "binder-1"]))
def test_shared_surveys_plan_as_a_full_scan_does_on_bmos_dialect(world, binder):
    claims, hosts, policies = world
    plan = b.plan_pass(claims, hosts, BMO_NAMESPACES, binder, policies)
    assert plan == _scanning_plan(claims, hosts, BMO_NAMESPACES, binder, policies)
    # the worlds reach every outcome a survey decides (over the examples: bound and each pending reason)
    assert all(action["action"] in ("bind", "pending") for action in plan)


def test_namespaces_with_equal_decisions_share_one_survey_and_one_index():
    hosts = [make_host("h%d" % index, labels={"rack": "r1"}) for index in range(6)]
    claims = [make_claim("c%d" % index, namespace=namespace) for index, namespace in enumerate(sorted(NAMESPACES))]
    planner = b._Planner(hosts, NAMESPACES, "binder-0")
    plan = planner.plan(claims)
    assert [action["action"] for action in plan] == ["bind"] * 3
    # three namespaces, one sharing policy admitting all three: one survey of the hosts, one index
    assert len(planner.surveys) == 1 and len(planner.matches) == 1 and len(planner.indexes) == 1
    # a namespace the policy refuses gets a survey of its own (no candidates), and its own pending reason
    refusing = [make_host("h%d" % index, policy={"matches": "tenant-.*"}) for index in range(3)]
    planner = b._Planner(refusing, NAMESPACES, "binder-0")
    plan = planner.plan(claims)
    assert dict((a["claim"]["namespace"], a["action"]) for a in plan) == {
        "p-x": "pending",
        "tenant-a": "bind",
        "tenant-b": "bind",
    }
    assert [a["reason"] for a in plan if a["action"] == "pending"] == ["NoSharedHost"]
    assert len(planner.surveys) == 2 and len(planner.matches) == 1
