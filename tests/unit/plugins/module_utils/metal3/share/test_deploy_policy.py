# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""baremetal-operator's HostDeployPolicy semantics (metal3/share/deploy_policy.py): upstream's rules case by case,
the one deliberate difference (nameMatches anchored unless asked), and that the policies written for a
sharing policy of the collection admit exactly the namespaces that sharing policy admits."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share import deploy_policy as dp
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share import sharing_policy as sp

INFRA = "infra"


def policy(constraints, name="p", namespace=INFRA):
    spec = {} if constraints == "absent" else {"hostClaimNamespaces": constraints}
    return {"metadata": {"name": name, "namespace": namespace}, "spec": spec}


def admits(constraints, namespace, labels=None, unanchored=False):
    return dp.evaluate_policy(policy(constraints), namespace, labels, unanchored).allowed


@pytest.mark.parametrize(
    "constraints,namespace,labels,expected",
    [
        ("absent", "t-a", {}, False),  # no hostClaimNamespaces: nobody
        ({}, "anything", {}, True),  # no constraint inside: everybody
        ({"names": []}, "t-a", {}, False),  # names present and empty: nobody
        ({"names": ["t-a", "t-b"]}, "t-a", {}, True),
        ({"names": ["t-a"]}, "t-b", {}, False),
        ({"hasLabels": [{"name": "team"}]}, "t-a", {"team": "x"}, True),
        ({"hasLabels": [{"name": "team", "value": ""}]}, "t-a", {"team": "x"}, True),  # empty value: presence
        ({"hasLabels": [{"name": "team", "value": "a"}]}, "t-a", {"team": "x"}, False),
        ({"hasLabels": [{"name": "team"}, {"name": "tier", "value": "gold"}]}, "t-a", {"team": "a"}, False),  # ALL
        (
            {"hasLabels": [{"name": "team"}, {"name": "tier", "value": "gold"}]},
            "t-a",
            {"team": "a", "tier": "gold"},
            True,
        ),
        ({"names": ["t-a"], "nameMatches": "t-.*", "hasLabels": [{"name": "team"}]}, "t-a", {}, False),
        ({"names": ["t-a"], "nameMatches": "t-.*", "hasLabels": [{"name": "team"}]}, "t-a", {"team": ""}, True),
    ],
)
def test_upstream_rules(constraints, namespace, labels, expected):
    assert admits(constraints, namespace, labels) is expected
    assert admits(constraints, namespace, labels, unanchored=True) is expected


def test_name_matches_is_a_whole_name_match_unless_upstreams_search_is_asked_for():
    # The example of baremetal-operator's own API documentation: "prod" matches "not-prod" and "reproduce".
    for namespace in ("not-prod", "reproduce", "production"):
        refused = dp.evaluate_policy(policy({"nameMatches": "prod"}), namespace, {})
        assert not refused.allowed
        assert dp.ANCHORING_NOTE in refused.reason and repr(namespace) in refused.reason
        assert admits({"nameMatches": "prod"}, namespace, unanchored=True)
    assert admits({"nameMatches": "prod"}, "prod")
    plain = dp.evaluate_policy(policy({"nameMatches": "^t-"}), "x", {})
    assert not plain.allowed and dp.ANCHORING_NOTE not in plain.reason  # neither way admits it
    assert "contains no match" in dp.evaluate_policy(policy({"nameMatches": "^t-"}), "x", {}, unanchored=True).reason


@pytest.mark.parametrize(
    "constraints,fragment",
    [
        ({"nameMatches": "("}, "is not a valid RE2 pattern"),
        ({"nameMatches": "(?=x)"}, "is not a valid RE2 pattern"),  # look-ahead: Python's re, not RE2
        ({"names": "t-a"}, "names must be a list"),
        ({"hasLabels": [{"name": "bad key!"}]}, "hasLabels[0]"),
        ({"hasLabels": [{"label": "team"}]}, "hasLabels[0]: must be a mapping with name"),
        ({"hasLabels": {"name": "team"}}, "hasLabels must be a list"),
        ({"namesMatch": "t-.*"}, "unknown field(s) 'namesMatch'"),
        ("not a mapping", "hostClaimNamespaces must be a mapping"),
    ],
)
def test_an_invalid_policy_admits_nobody_and_names_itself(constraints, fragment):
    decision = dp.evaluate_policy(policy(constraints, name="broken"), "t-a", {"team": "a"}, unanchored=True)
    assert not decision.allowed
    assert "HostDeployPolicy infra/broken is invalid" in decision.reason and fragment in decision.reason


def test_policies_of_a_namespace_are_alternatives_and_other_namespaces_do_not_count():
    policies = [
        policy({"nameMatches": "("}, name="a-broken"),
        policy({"names": ["t-b"]}, name="b-names"),
        policy({"hasLabels": [{"name": "team"}]}, name="c-team"),
        policy({}, name="everybody", namespace="elsewhere"),
    ]
    assert dp.evaluate_namespace(policies, INFRA, "t-a", {"team": "x"}).allowed
    refused = dp.evaluate_namespace(policies, INFRA, "t-a", {})
    assert not refused.allowed
    for name in ("a-broken", "b-names", "c-team"):
        assert "infra/%s" % name in refused.reason
    assert "elsewhere" not in refused.reason
    none = dp.evaluate_namespace(policies, "empty", "t-a", {})
    assert not none.allowed and "has no HostDeployPolicy" in none.reason
    decisions = dp.admitting_namespaces(policies, "t-a", {})
    assert sorted(decisions) == ["elsewhere", INFRA]
    assert decisions["elsewhere"].allowed and not decisions[INFRA].allowed
    assert list(dp.admitting_namespaces(policies, "t-a", {}, in_namespace="elsewhere")) == ["elsewhere"]


SAFE_PATTERN = st.recursive(
    st.sampled_from(["a", "b", "-", "[a-c]", "[0-9]", ".", "x", "^", "$"]),
    lambda inner: st.one_of(
        st.tuples(inner, inner).map("".join),
        st.tuples(inner, inner).map(lambda t: "(?:%s|%s)" % t),
        inner.map(lambda p: "(?:%s)*" % p),
    ),
    max_leaves=5,
)
NAMESPACE = st.from_regex(r"\A[abx0-9]([-abcx0-9]{0,8}[abx0-9])?\Z", fullmatch=True)


@settings(max_examples=300)
@given(SAFE_PATTERN, NAMESPACE)
def test_anchored_admits_a_subset_of_upstream_and_both_agree_with_reference(pattern, namespace):
    # Python's re is only the test's oracle, on small patterns both engines read alike.
    anchored = admits({"nameMatches": pattern}, namespace)
    unanchored = admits({"nameMatches": pattern}, namespace, unanchored=True)
    assert anchored == (re.fullmatch(pattern, namespace) is not None)
    assert unanchored == (re.search(pattern, namespace) is not None)
    assert not anchored or unanchored


LABEL_ENTRIES = st.lists(st.sampled_from(["team", "team=a", "tier=gold", "x.io/t"]), max_size=3, unique=True)
LABELS = st.dictionaries(st.sampled_from(["team", "tier", "x.io/t"]), st.sampled_from(["", "a", "gold"]), max_size=3)


@settings(max_examples=300)
@given(
    st.one_of(st.none(), SAFE_PATTERN.filter(lambda p: "^" not in p and "$" not in p)), LABEL_ENTRIES, NAMESPACE, LABELS
)
def test_the_policies_written_for_a_sharing_policy_admit_what_it_admits(pattern, entries, namespace, labels):
    """host_pool on BMO's dialect writes policies_from_sharing: whoever reads them (host_bind anchored, or
    baremetal-operator's own unanchored controller) admits exactly the namespaces the sharing policy admits."""
    sharing = {"matches": pattern, "withLabel": entries}
    expected = sp.evaluate(sharing, namespace, labels).allowed if (pattern or entries) else False
    policies = dp.policies_from_sharing("share", INFRA, sharing)
    for unanchored in (False, True):
        assert dp.evaluate_namespace(policies, INFRA, namespace, labels, unanchored).allowed == expected
    assert all(dp.constraint_problems(p["spec"]["hostClaimNamespaces"]) == [] for p in policies)


def test_policies_from_sharing_shapes():
    assert dp.policies_from_sharing("s", INFRA, None) == []
    assert dp.policies_from_sharing("s", INFRA, {"matches": None, "withLabel": []}) == []
    (only,) = dp.policies_from_sharing("s", INFRA, {"matches": "p-.*"})
    assert only["metadata"] == {"name": "s", "namespace": INFRA}
    assert only["spec"] == {"hostClaimNamespaces": {"nameMatches": "^(?:p-.*)$"}}
    two = dp.policies_from_sharing("s", INFRA, {"matches": "p-.*", "withLabel": ["team", "tier=gold"]})
    assert [p["metadata"]["name"] for p in two] == ["s-0", "s-1"]
    assert [p["spec"]["hostClaimNamespaces"]["hasLabels"] for p in two] == [
        [{"name": "team"}],
        [{"name": "tier", "value": "gold"}],
    ]
