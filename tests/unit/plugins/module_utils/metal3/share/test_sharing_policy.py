# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


import json
import re
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share import sharing_policy as np

NAMESPACE = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?\Z", fullmatch=True)
PREFIX = st.from_regex(r"\A[a-z][-a-z0-9]{0,6}\Z", fullmatch=True)


@pytest.fixture(autouse=True)
def fresh_cache():
    np.clear_cache()
    yield
    np.clear_cache()


def allowed(policy, namespace, labels=None):
    return np.evaluate(policy, namespace, labels or {}).allowed


def annotated(value="absent", legacy="absent", name="h1"):
    """A BMH with the sharing annotation ``value`` (raw) and/or ``spec.hostClaimNamespaces`` ``legacy``."""
    host = {"metadata": {"name": name, "namespace": "infra", "annotations": {}}, "spec": {"online": False}}
    if value != "absent":
        host["metadata"]["annotations"][np.ANNOTATION] = value
    if legacy != "absent":
        host["spec"]["hostClaimNamespaces"] = legacy
    return host


def test_re2_is_available_in_the_test_environment():
    assert np.HAS_RE2


# ------------------------------------------------------------- semantics


def test_absent_policy_shares_nothing():
    decision = np.evaluate(None, "tenant-a", {"team": "a"})
    assert decision.allowed is False
    assert "not shared" in decision.reason
    assert np.validate_policy(None) == []


def test_host_policy_and_is_shared_read_the_annotation():
    host = annotated('{"matches":"tenant-.*"}')
    assert np.host_policy(host) == ({"matches": "tenant-.*"}, [])
    assert np.host_policy({}) == (None, []) and np.host_policy(None) == (None, [])
    assert np.is_shared(host, "tenant-a", {}).allowed
    assert not np.is_shared({"spec": {}}, "tenant-a", {}).allowed
    assert not np.is_shared({"metadata": {"annotations": None}}, "tenant-a", {}).allowed


@pytest.mark.parametrize(
    "pattern,namespace,expected",
    [
        (".*", "anything", True),
        ("n1|n2", "n1", True),
        ("n1|n2", "n2", True),
        ("n1|n2", "n12", False),
        ("n1|n2", "xn1", False),
        ("p-.*", "p-a", True),
        ("p-.*", "xp-a", False),
        ("p-.*", "p", False),
        ("tenant", "tenant-a", False),
        ("tenant", "my-tenant", False),
        ("^tenant$", "tenant", True),
        ("tenant-[0-9]+", "tenant-12", True),
        ("tenant-[0-9]+", "tenant-12a", False),
        ("(?i)TENANT-A", "tenant-a", True),
        ("[a-z]+", "abc-d", False),
    ],
)
def test_matches_is_a_full_match(pattern, namespace, expected):
    assert allowed({"matches": pattern}, namespace) is expected


@pytest.mark.parametrize(
    "entries,labels,expected",
    [
        (["team"], {"team": "a"}, True),
        (["team"], {"team": ""}, True),
        (["team"], {"other": "team"}, False),
        (["team=a"], {"team": "a"}, True),
        (["team=a"], {"team": "b"}, False),
        (["team="], {"team": ""}, True),
        (["team="], {"team": "a"}, False),
        (["team=a", "tier=gold"], {"tier": "gold"}, True),
        (["team=a", "tier=gold"], {"tier": "silver", "team": "b"}, False),
        (["example.com/tenant"], {"example.com/tenant": "yes"}, True),
        (["example.com/tenant=yes"], {"example.com/tenant": "yes"}, True),
        (["team"], {}, False),
    ],
)
def test_with_label_needs_one_entry(entries, labels, expected):
    assert allowed({"withLabel": entries}, "tenant-a", labels) is expected


@pytest.mark.parametrize(
    "namespace,labels,expected",
    [
        ("p-a", {"team": "a"}, True),
        ("p-a", {}, False),
        ("q-a", {"team": "a"}, False),
        ("q-a", {}, False),
    ],
)
def test_both_conditions_must_hold(namespace, labels, expected):
    assert allowed({"matches": "p-.*", "withLabel": ["team"]}, namespace, labels) is expected


def test_unset_subfields_are_ignored_when_the_other_is_set():
    assert allowed({"matches": "p-.*", "withLabel": []}, "p-a")
    assert allowed({"matches": "p-.*", "withLabel": None}, "p-a")
    assert allowed({"matches": "", "withLabel": ["team"]}, "x", {"team": "1"})
    assert allowed({"matches": None, "withLabel": ["team"]}, "x", {"team": "1"})


@pytest.mark.parametrize("policy", [{}, {"matches": ""}, {"withLabel": []}, {"matches": None, "withLabel": None}])
def test_policy_setting_nothing_shares_nothing_and_is_reported(policy):
    decision = np.evaluate(policy, "tenant-a", {"team": "a"})
    assert not decision.allowed
    problems = np.validate_policy(policy)
    assert len(problems) == 1 and "neither matches nor withLabel" in problems[0]
    assert problems[0] in decision.reason


def test_decision_reasons_name_namespace():
    refused = np.evaluate({"matches": "p-.*"}, "xp-a", {})
    assert "'xp-a'" in refused.reason and "'p-.*'" in refused.reason
    refused = np.evaluate({"withLabel": ["team"]}, "tenant-a", {})
    assert "'tenant-a'" in refused.reason and "team" in refused.reason
    accepted = np.evaluate({"matches": ".*"}, "tenant-a", {})
    assert accepted.allowed and "tenant-a" in accepted.reason
    assert accepted == (True, accepted.reason)


@pytest.mark.parametrize("namespace", ["", None, "Tenant", "a" * 64, "a\n", "a.b", 5])
def test_invalid_namespace_names_are_refused(namespace):
    decision = np.evaluate({"matches": ".*"}, namespace, {})
    assert not decision.allowed and "namespace name" in decision.reason


def test_dot_does_not_reach_past_a_newline():
    # not reachable with valid names, but the regexp must not be able to widen a match
    assert not allowed({"matches": "a.*"}, "a\nb")


# -------------------------------------------------------- invalid policies


@pytest.mark.parametrize(
    "policy,fragment",
    [
        ({"matches": "("}, "not a valid RE2 pattern"),
        ({"matches": "(a)\\1"}, "not a valid RE2 pattern"),
        ({"matches": "(?=a)a"}, "not a valid RE2 pattern"),
        ({"matches": "(?<!a)b"}, "not a valid RE2 pattern"),
        ({"matches": "a{1001}"}, "not a valid RE2 pattern"),
        ({"matches": 5}, "matches must be a string"),
        ({"matches": [".*"]}, "matches must be a string"),
        ({"matches": True}, "matches must be a string"),
        ({"withLabel": "team"}, "withLabel must be a list"),
        ({"withLabel": [5]}, "withLabel[0] must be a string"),
        ({"withLabel": ["ok", "bad key"]}, "withLabel[1]"),
        ({"withLabel": ["team=bad value"]}, "withLabel[0]"),
        ({"withLabel": ["=a"]}, "withLabel[0]"),
        ({"withLabels": ["team"]}, "unknown field(s) 'withLabels'"),
        ({"matches": ".*", "match": "x"}, "unknown field(s) 'match'"),
        (".*", "must be a mapping"),
        ([".*"], "must be a mapping"),
    ],
)
def test_invalid_policies_fail_closed_and_are_reported(policy, fragment):
    problems = np.validate_policy(policy)
    assert problems and any(fragment in problem for problem in problems), problems
    decision = np.evaluate(policy, "tenant-a", {"team": "a", "ok": ""})
    assert decision.allowed is False
    assert "invalid sharing policy (annotation %s)" % np.ANNOTATION in decision.reason and fragment in decision.reason
    # the same through the annotation
    host = annotated(json.dumps(policy))
    assert not np.is_shared(host, "tenant-a", {"team": "a", "ok": ""}).allowed
    problems = np.policy_problems(host)
    assert problems and all(p.startswith("BareMetalHost infra/h1: annotation %s: " % np.ANNOTATION) for p in problems)
    if isinstance(policy, dict):
        assert any(fragment in problem for problem in problems), problems
    else:
        assert "must be a JSON object" in problems[0]


def test_a_typo_never_widens_sharing():
    # ``withLabels`` ignored would leave ``matches: .*`` alone: everyone. Fail closed instead.
    assert not allowed({"matches": ".*", "withLabels": ["team"]}, "anyone")


def test_invalid_pattern_with_valid_labels_still_refuses():
    assert not allowed({"matches": "(", "withLabel": ["team"]}, "tenant-a", {"team": "a"})


def test_validate_policy_names_owner():
    problems = np.validate_policy({"matches": "("}, owner="BareMetalHost infra/h1")
    assert problems[0].startswith("BareMetalHost infra/h1: ")


def test_problems_and_reasons_are_text():
    problems = np.validate_policy({"matches": "("})
    assert isinstance(problems[0], str) and "b'" not in problems[0] and "missing )" in problems[0]


def test_compile_errors_are_not_logged_to_stderr(capfd):
    np.validate_policy({"matches": "(unclosed"})
    captured = capfd.readouterr()
    assert "unclosed" not in captured.err


# ------------------------------------------------------------- the annotation


def test_the_annotation_key_is_the_collections():
    assert np.ANNOTATION == "baremetal.tenancy/host-claim-namespaces"


def test_missing_annotation_is_not_shared_and_not_a_problem():
    host = annotated()
    assert np.host_policy(host) == (None, []) and np.policy_problems(host) == []
    decision = np.is_shared(host, "tenant-a", {})
    assert not decision.allowed and "no annotation %s" % np.ANNOTATION in decision.reason


@pytest.mark.parametrize(
    "value,fragment",
    [
        ("", "the value is empty"),
        ("   ", "the value is empty"),
        ("{matches: p-.*}", "not valid JSON (Expecting property name enclosed in double quotes at character 1)"),
        ('{"matches": "p-.*"', "not valid JSON"),
        ("p-.*", "not valid JSON"),
        ('{"matches": "p-.*"} x', "not valid JSON (Extra data"),
        ("[]", "must be a JSON object with matches and/or withLabel, got an array"),
        ('["p-.*"]', "got an array"),
        ("5", "got a number"),
        ("5.5", "got a number"),
        ('"p-.*"', "got a string"),
        ("true", "got a boolean"),
        ("null", "got null"),
        ('{"withLabels": ["team"]}', "unknown field(s) 'withLabels'"),
        ('{"matches": ".*", "tenants": ["a"]}', "unknown field(s) 'tenants'"),
        ('{"matches": "a", "matches": ".*"}', "a JSON object gives the key 'matches' twice"),
        ('{"matches": "("}', "is not a valid RE2 pattern"),
        ('{"withLabel": "team"}', "withLabel must be a list"),
        ("{}", "neither matches nor withLabel"),
        ("1" * 5000, "not valid JSON"),
        ("[" * 60000, "not valid JSON"),
        (5, "must be a string of JSON"),
    ],
)
def test_an_invalid_annotation_shares_nothing_and_is_reported_naming_host_and_annotation(value, fragment):
    _policy, problems = np.parse_annotation(value)
    assert problems and any(fragment in problem for problem in problems), problems
    host = annotated(value)
    decision = np.is_shared(host, "tenant-a", {"team": "a"})
    assert decision.allowed is False and "annotation %s" % np.ANNOTATION in decision.reason
    reported = np.policy_problems(host)
    assert reported and all(r.startswith("BareMetalHost infra/h1: annotation %s: " % np.ANNOTATION) for r in reported)
    assert all(len(r) < 400 for r in reported), reported


def test_a_value_over_the_limit_is_refused_unread_and_not_echoed():
    value = '{"matches": "%s"}' % ("a" * np.MAX_VALUE_LENGTH)
    policy, problems = np.parse_annotation(value)
    assert policy is None and len(problems) == 1
    assert "is %d characters long, more than the %d" % (len(value), np.MAX_VALUE_LENGTH) in problems[0]
    assert "aaaa" not in problems[0]
    assert not np.is_shared(annotated(value), "aaaa", {}).allowed


@pytest.mark.parametrize(
    "value",
    [
        "x" * 10000,
        '{"matches": "(%s"}' % ("b" * 10000),
        '{"withLabel": ["%s"]}' % ("bad key " * 1000),
        '{"%s": 1}' % ("k" * 10000),
        '{"matches": "a", "withLabel": [%s]}' % ",".join(['"bad key %d"' % i for i in range(500)]),
    ],
)
def test_a_problem_quotes_only_a_short_prefix_of_a_bad_value(value):
    problems = np.policy_problems(annotated(value))
    assert problems
    text = "; ".join(problems)
    assert len(text) < 2000, text
    for run in ("x" * 50, "b" * 50, "bad key " * 6, "k" * 50):
        assert run not in text


def test_many_bad_entries_are_summed_up():
    value = json.dumps({"withLabel": ["bad key %d" % i for i in range(20)]})
    problems = np.parse_annotation(value)[1]
    assert len(problems) == np.MAX_PROBLEMS + 1 and problems[-1] == "and 15 more bad withLabel entries"


@pytest.mark.parametrize(
    "value,namespace,labels,expected",
    [
        ('{"matches":"p-.*"}', "p-a", {}, True),
        ('{"matches":"p-.*"}', "xp-a", {}, False),
        ('{"withLabel":["team=a"]}', "x", {"team": "a"}, True),
        ('{"withLabel":["team=a"]}', "x", {"team": "b"}, False),
        ('{"matches":"p-.*","withLabel":["team"]}', "p-a", {"team": ""}, True),
        ('{"matches":"p-.*","withLabel":["team"]}', "p-a", {}, False),
        ('{\n  "withLabel": ["team"],\n  "matches": null\n}', "x", {"team": "1"}, True),
    ],
)
def test_a_valid_annotation_has_the_policys_semantics(value, namespace, labels, expected):
    assert np.parse_annotation(value)[1] == []
    assert np.is_shared(annotated(value), namespace, labels).allowed is expected
    assert np.evaluate_annotation(value, namespace, labels).allowed is expected
    assert np.policy_problems(annotated(value)) == []


def test_encode_policy_is_compact_sorted_json():
    assert np.encode_policy({"withLabel": ["team=a"], "matches": "p-.*"}) == '{"matches":"p-.*","withLabel":["team=a"]}'
    assert np.encode_policy({"matches": "p-.*"}) == '{"matches":"p-.*"}'


# ------------------------------------------------------------- spec.hostClaimNamespaces (no longer read)


def test_the_legacy_field_is_never_read():
    host = annotated(legacy={"matches": ".*"})
    assert np.has_legacy_policy(host) and np.has_legacy_field(host)
    decision = np.is_shared(host, "tenant-a", {})
    assert not decision.allowed
    assert "spec.hostClaimNamespaces is no longer read" in decision.reason and "host_share" in decision.reason
    assert np.policy_problems(host) == []  # reported apart (legacy_policies), not as an invalid policy


def test_the_annotation_wins_over_a_leftover_field():
    host = annotated('{"matches":"p-.*"}', legacy={"matches": ".*"})
    assert not np.has_legacy_policy(host) and np.has_legacy_field(host)
    assert np.is_shared(host, "p-a", {}).allowed and not np.is_shared(host, "q-a", {}).allowed
    # an invalid annotation does not fall back to the field either
    host = annotated("nope", legacy={"matches": ".*"})
    assert not np.is_shared(host, "q-a", {}).allowed and not np.has_legacy_policy(host)


@pytest.mark.parametrize("legacy", [None, "absent"])
def test_a_null_or_absent_legacy_field_is_no_legacy_policy(legacy):
    assert not np.has_legacy_policy(annotated(legacy=legacy))


def test_decision_keys_separate_legacy_hosts_and_values():
    keys = {
        np.decision_key(annotated()),
        np.decision_key(annotated(legacy={"matches": ".*"})),
        np.decision_key(annotated('{"matches":".*"}')),
        np.decision_key(annotated(5)),
    }
    assert len(keys) == 4
    assert np.decision_key(annotated('{"matches":".*"}', name="h2")) in keys


def test_legacy_warning_names_hosts_and_the_fix():
    names = ["infra/h%02d" % index for index in range(12)]
    warning = np.legacy_warning(names)
    assert warning.startswith("12 BareMetalHost(s) carry spec.hostClaimNamespaces and no annotation %s" % np.ANNOTATION)
    assert "infra/h09" in warning and "infra/h10" not in warning and "and 2 more" in warning
    assert "host_share" in warning and "host_pool" in warning


# ------------------------------------------------------------- sharing_patch (the one writer's patch)


def test_sharing_patch_sets_the_annotation_and_removes_the_field_in_one_patch():
    host = annotated(legacy={"matches": ".*"})
    assert np.sharing_patch(host, {"matches": "p-.*"}) == {
        "metadata": {"annotations": {np.ANNOTATION: '{"matches":"p-.*"}'}},
        "spec": {"hostClaimNamespaces": None},
    }
    assert np.sharing_patch(annotated('{"matches":"p-.*"}'), {"matches": "p-.*", "withLabel": []}) == {}
    assert np.sharing_patch(annotated('{"matches":"p-.*"}'), None) == {
        "metadata": {"annotations": {np.ANNOTATION: None}}
    }
    assert np.sharing_patch(annotated(), None) == {} and np.sharing_patch(annotated(), {}) == {}


def test_sharing_view():
    assert np.sharing_view(annotated()) == {"sharing": None}
    assert np.sharing_view(annotated('{"matches":"p"}', legacy=None)) == {
        "sharing": {"matches": "p"},
        "legacy_sharing": None,
    }
    assert np.sharing_view(annotated("oops")) == {"sharing": "'oops'"}


# --------------------------------------------------------------- RE2 only


def test_pathological_pattern_is_decided_fast():
    name = "a" * 5000 + "b"
    start = time.process_time()  # CPU seconds: a backtracking engine needs ~2**60 steps here, RE2 microseconds
    decision = np.evaluate({"matches": "(a+)+$"}, "a" * 60 + "b", {})
    compiled, error = np.compile_pattern("(a+)+$")
    assert error is None
    assert compiled.fullmatch(name) is None
    assert compiled.fullmatch("a" * 5000) is not None
    elapsed = time.process_time() - start
    assert decision.allowed is False
    assert elapsed < 5, "RE2 should decide in linear time, took %.2fs" % elapsed


def test_pathological_patterns_are_fast_through_evaluate():
    start = time.process_time()
    for pattern in ("(a+)+$", "(a|aa)+", "(a*)*b", "(x+x+)+y", "(.*a){12}"):
        assert not allowed({"matches": pattern}, "a" * 62 + "c")
    assert time.process_time() - start < 5


def test_python_re_is_never_used_for_the_pattern(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("Python re used with %r" % (args,))

    monkeypatch.setattr(re, "compile", refuse)
    monkeypatch.setattr(re, "_compile", refuse)
    assert allowed({"matches": "p-[a-z]+"}, "p-abc")
    assert not allowed({"matches": "(a+)+$"}, "a" * 62 + "b")
    assert np.validate_policy({"matches": "(b+)+c"}) == []
    compiled, _dummy = np.compile_pattern("p-[a-z]+")
    assert type(compiled).__module__.startswith("re2")


def test_compile_cache_is_used(monkeypatch):
    calls = []
    original = np.re2.compile

    def counting(pattern, options=None):
        calls.append(pattern)
        return original(pattern, options)

    monkeypatch.setattr(np.re2, "compile", counting)
    for _dummy in range(5):
        allowed({"matches": "cached-.*"}, "cached-a")
        allowed({"matches": "("}, "cached-a")
    assert calls.count("cached-.*") == 1
    assert calls.count("(") == 1


def test_compile_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(np, "_CACHE_SIZE", 3)
    for index in range(10):
        np.compile_pattern("p%d" % index)
    assert len(np._CACHE) <= 3


def test_without_re2_patterns_fail_closed(monkeypatch):
    monkeypatch.setattr(np, "HAS_RE2", False)
    monkeypatch.setattr(np, "re2", None)
    decision = np.evaluate({"matches": ".*"}, "tenant-a", {})
    assert not decision.allowed and "google-re2" in decision.reason
    assert any("google-re2" in problem for problem in np.validate_policy({"matches": ".*"}))
    # withLabel alone does not need re2
    assert allowed({"withLabel": ["team"]}, "tenant-a", {"team": "a"})
    # both set: still refused
    assert not allowed({"matches": ".*", "withLabel": ["team"]}, "tenant-a", {"team": "a"})
    assert np.compile_pattern(".*") == (None, np.MISSING_RE2)


def test_module_imports_cleanly_without_re2(monkeypatch):
    import importlib

    monkeypatch.setitem(sys.modules, "re2", None)
    name = "ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share.sharing_policy"
    saved = sys.modules.pop(name)
    try:
        module = importlib.import_module(name)
        assert module.HAS_RE2 is False and module.re2 is None
        assert not module.evaluate({"matches": ".*"}, "a", {}).allowed
    finally:
        sys.modules[name] = saved


# ------------------------------------------------------------ properties


@given(PREFIX, NAMESPACE)
def test_prefix_pattern_needs_the_prefix(prefix, namespace):
    pattern = re.escape(prefix) + "-.*"
    assert allowed({"matches": pattern}, namespace) == namespace.startswith(prefix + "-")


@given(NAMESPACE, NAMESPACE)
def test_literal_pattern_allows_exactly_that_name(literal, namespace):
    assert allowed({"matches": literal}, namespace) == (literal == namespace)


@given(NAMESPACE, NAMESPACE)
def test_prefixed_namespace_never_matches_prefix_pattern(prefix, namespace):
    # 'xp-a' must be refused by 'p-.*' whatever p is
    assert not allowed({"matches": prefix + "-.*"}, "x" + prefix + "-" + namespace) or ("x" + prefix).startswith(
        prefix + "-"
    )


SAFE_PATTERN = st.recursive(
    st.sampled_from(["a", "b", "-", "[a-c]", "[0-9]", ".", "x"]),
    lambda inner: st.one_of(
        st.tuples(inner, inner).map("".join),
        st.tuples(inner, inner).map(lambda t: "(?:%s|%s)" % t),
        inner.map(lambda p: "(?:%s)*" % p),
        inner.map(lambda p: "(?:%s)?" % p),
    ),
    max_leaves=6,
)


@settings(max_examples=200)
@given(SAFE_PATTERN, st.from_regex(r"\A[abx0-9]([-abcx0-9]{0,8}[abx0-9])?\Z", fullmatch=True))
def test_agrees_with_a_full_match_reference(pattern, namespace):
    # Python's re is used here only as a test oracle on small, safe patterns.
    expected = re.fullmatch(pattern, namespace) is not None
    assert allowed({"matches": pattern}, namespace) == expected


@given(
    st.lists(st.sampled_from(["team", "team=a", "tier=gold", "x.io/t"]), min_size=1, max_size=4),
    st.dictionaries(st.sampled_from(["team", "tier", "x.io/t"]), st.sampled_from(["", "a", "gold"]), max_size=3),
)
def test_with_label_reference(entries, labels):
    def present(entry):
        key, sep, value = entry.partition("=")
        return key in labels and (not sep or labels[key] == value)

    assert allowed({"withLabel": entries}, "tenant-a", labels) == any(present(e) for e in entries)


@given(st.text(max_size=30), NAMESPACE)
def test_evaluate_never_raises_and_invalid_never_allows(pattern, namespace):
    decision = np.evaluate({"matches": pattern}, namespace, {})
    assert isinstance(decision.allowed, bool) and isinstance(decision.reason, str)
    if np.validate_policy({"matches": pattern}):
        assert not decision.allowed


POLICY_MEMBERS = st.one_of(st.none(), st.text(max_size=5), st.lists(st.text(max_size=5), max_size=2))
ANY_POLICY = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=5),
    st.lists(st.text(max_size=5), max_size=2),
    st.dictionaries(st.text(max_size=8), POLICY_MEMBERS, max_size=3),
    st.dictionaries(st.sampled_from(["matches", "withLabel"]), POLICY_MEMBERS, max_size=2),
)


@given(ANY_POLICY, NAMESPACE)
def test_arbitrary_policies_never_raise(policy, namespace):
    decision = np.evaluate(policy, namespace, {"team": "a"})
    assert isinstance(decision.allowed, bool)
    if np.validate_policy(policy) or policy is None:
        assert decision.allowed is False


@given(st.text(max_size=60), NAMESPACE)
def test_any_annotation_value_never_raises_and_a_reported_one_never_allows(value, namespace):
    decision = np.evaluate_annotation(value, namespace, {"team": "a"})
    assert isinstance(decision.allowed, bool) and isinstance(decision.reason, str)
    if np.parse_annotation(value)[1]:
        assert decision.allowed is False


@given(ANY_POLICY, NAMESPACE)
def test_a_policy_decides_the_same_through_its_annotation(policy, namespace):
    value = json.dumps(policy)
    direct = np.evaluate(policy, namespace, {"team": "a"})
    through = np.evaluate_annotation(value, namespace, {"team": "a"})
    assert through.allowed == (direct.allowed and isinstance(policy, dict))
    if isinstance(policy, dict):
        assert np.parse_annotation(value) == (policy, np.validate_policy(policy))
