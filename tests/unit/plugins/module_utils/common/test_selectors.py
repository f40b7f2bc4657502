# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.selectors import (
    dns1123_label_problem,
    dns1123_subdomain_problem,
    is_empty,
    label_key_problem,
    label_value_problem,
    matches,
    matches_normalised,
    validate_selector,
)

OWNER = "HostClaim tenant-a/web-1"

# small alphabets so that generated label sets collide with selectors often
KEYS = st.sampled_from(["a", "b", "c", "example.com/rack", "infra-kind"])
VALUES = st.sampled_from(["", "x", "y", "medium", "r1.z-2_3"])
LABELS = st.dictionaries(KEYS, VALUES, max_size=5)


@st.composite
def expressions(draw):
    operator = draw(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]))
    expr = {"key": draw(KEYS), "operator": operator}
    if operator in ("In", "NotIn"):
        expr["values"] = draw(st.lists(VALUES, min_size=1, max_size=3))
    return expr


SELECTORS = st.fixed_dictionaries(
    {},
    optional={
        "matchLabels": st.dictionaries(KEYS, VALUES, max_size=3),
        "matchExpressions": st.lists(expressions(), max_size=3),
    },
)


def reference_match(selector, labels):
    """Straightforward restatement of metav1.LabelSelector semantics."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if key not in labels or labels[key] != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        present = expr["key"] in labels
        value = labels.get(expr["key"])
        results = {
            "In": present and value in expr.get("values", []),
            "NotIn": not present or value not in expr.get("values", []),
            "Exists": present,
            "DoesNotExist": not present,
        }
        if not results[expr["operator"]]:
            return False
    return True


# ------------------------------------------------------------ name syntax


@pytest.mark.parametrize(
    "key",
    [
        "a",
        "infra-kind",
        "A_b.c",
        "example.com/rack",
        "a.b-c.d/x_y.Z",
        "x" * 63,
        ("d" * 253) + "/n",
        "kubernetes.io/hostname",
    ],
)
def test_valid_label_keys(key):
    assert label_key_problem(key) is None


@pytest.mark.parametrize(
    "key,fragment",
    [
        ("", "non-empty"),
        (None, "non-empty"),
        (5, "non-empty"),
        ("a/b/c", "more than one"),
        ("/name", "prefix"),
        ("Example.com/x", "prefix"),
        ("ex_ample.com/x", "prefix"),
        ("example.com/", "empty name"),
        ("x" * 64, "at most 63"),
        (("d" * 254) + "/n", "at most 253"),
        ("-a", "alphanumeric"),
        ("a-", "alphanumeric"),
        ("a b", "alphanumeric"),
        ("a\nb", "alphanumeric"),
        ("a\n", "alphanumeric"),
    ],
)
def test_invalid_label_keys(key, fragment):
    problem = label_key_problem(key)
    assert problem is not None and fragment in problem


@pytest.mark.parametrize("value", ["", "a", "Medium", "a-b_c.d", "x" * 63, "0"])
def test_valid_label_values(value):
    assert label_value_problem(value) is None


@pytest.mark.parametrize("value", ["x" * 64, "-a", "a-", "a b", "a/b", "a:b", None, 3, "a\n", "caf\u00e9"])
def test_invalid_label_values(value):
    assert label_value_problem(value) is not None


@pytest.mark.parametrize(
    "name,ok",
    [
        ("tenant-a", True),
        ("a", True),
        ("a" * 63, True),
        ("a" * 64, False),
        ("Tenant", False),
        ("-a", False),
        ("a-", False),
        ("a.b", False),
        ("", False),
        (None, False),
        ("a\n", False),
    ],
)
def test_dns1123_label(name, ok):
    assert (dns1123_label_problem(name) is None) == ok


@pytest.mark.parametrize(
    "name,ok",
    [
        ("my-user-data", True),
        ("a.b.c", True),
        ("a" * 253, True),
        ("a" * 254, False),
        ("a..b", False),
        (".a", False),
        ("A", False),
        ("a_b", False),
        ("", False),
        (None, False),
        ("a.-b", False),
    ],
)
def test_dns1123_subdomain(name, ok):
    assert (dns1123_subdomain_problem(name) is None) == ok


# ------------------------------------------------------------- validation


def test_none_and_empty_selectors_normalise_to_empty():
    for selector in (
        None,
        {},
        {"matchLabels": None, "matchExpressions": None},
        {"matchLabels": {}, "matchExpressions": []},
    ):
        normalised = validate_selector(selector, OWNER)
        assert normalised == {"matchLabels": {}, "matchExpressions": []}
        assert is_empty(normalised)


def test_normalisation_sorts_and_deduplicates_values():
    normalised = validate_selector(
        {
            "matchExpressions": [
                {"key": "a", "operator": "In", "values": ["y", "x", "y"]},
                {"key": "b", "operator": "Exists", "values": []},
            ]
        }
    )
    assert normalised["matchExpressions"] == [
        {"key": "a", "operator": "In", "values": ["x", "y"]},
        {"key": "b", "operator": "Exists", "values": []},
    ]


def test_unknown_operator_names_operator_and_claim():
    with pytest.raises(InvalidInput) as exc:
        validate_selector(
            {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}, OWNER, "spec.hostSelector"
        )
    assert exc.value.obj == OWNER
    assert "'Gt'" in exc.value.cause and "matchExpressions[0]" in exc.value.cause
    assert OWNER in str(exc.value)


@pytest.mark.parametrize("operator", ["in", "notin", "exists", "Equals", "", None, "Lt"])
def test_operators_are_exact(operator):
    with pytest.raises(InvalidInput, match="unknown operator"):
        validate_selector({"matchExpressions": [{"key": "a", "operator": operator, "values": ["x"]}]}, OWNER)


@pytest.mark.parametrize("operator", ["In", "NotIn"])
@pytest.mark.parametrize("values", [None, [], "x", {"a": 1}])
def test_values_required_for_set_operators(operator, values):
    expr = {"key": "a", "operator": operator}
    if values is not None:
        expr["values"] = values
    with pytest.raises(InvalidInput, match="requires a non-empty list"):
        validate_selector({"matchExpressions": [expr]}, OWNER)


@pytest.mark.parametrize("operator", ["Exists", "DoesNotExist"])
def test_values_forbidden_for_existence_operators(operator):
    with pytest.raises(InvalidInput, match="takes no values"):
        validate_selector({"matchExpressions": [{"key": "a", "operator": operator, "values": ["x"]}]}, OWNER)
    for empty in (None, []):
        assert validate_selector({"matchExpressions": [{"key": "a", "operator": operator, "values": empty}]}, OWNER)


@pytest.mark.parametrize(
    "selector,fragment",
    [
        ("infra-kind=medium", "must be a mapping"),
        (["a"], "must be a mapping"),
        ({"matchLabel": {"a": "b"}}, "unknown field(s) 'matchLabel'"),
        ({"matchLabels": ["a"]}, "mapping of label keys"),
        ({"matchLabels": {"a b": "x"}}, "alphanumeric"),
        ({"matchLabels": {"a": "x y"}}, "alphanumeric"),
        ({"matchLabels": {"a": 1}}, "must be a string"),
        ({"matchLabels": {"a": None}}, "must be a string"),
        ({"matchExpressions": {"key": "a"}}, "must be a list"),
        ({"matchExpressions": ["a"]}, "must be a mapping"),
        ({"matchExpressions": [{"key": "a", "operator": "Exists", "value": []}]}, "unknown field(s) 'value'"),
        ({"matchExpressions": [{"operator": "Exists"}]}, "key must be"),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["ok", "not ok"]}]}, "alphanumeric"),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": [1]}]}, "must be a string"),
        ({"matchExpressions": [{"key": "a", "operator": "Exists", "values": "x"}]}, "takes no values"),
        ({"matchExpressions": [{"key": "a", "operator": "Exists", "values": {}}]}, "values must be a list"),
    ],
)
def test_invalid_selectors_name_owner_and_cause(selector, fragment):
    with pytest.raises(InvalidInput) as exc:
        validate_selector(selector, OWNER)
    assert exc.value.obj == OWNER
    assert fragment in exc.value.cause


def test_error_names_the_failing_expression_index():
    selector = {"matchExpressions": [{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Nope"}]}
    with pytest.raises(InvalidInput, match=r"hostSelector\.matchExpressions\[1\]"):
        validate_selector(selector, OWNER)


def test_matches_validates():
    with pytest.raises(InvalidInput):
        matches({"matchExpressions": [{"key": "a", "operator": "Foo"}]}, {"a": "b"})


# --------------------------------------------------------------- matching


@pytest.mark.parametrize(
    "selector,labels,expected",
    [
        ({}, {}, True),
        (None, {"a": "x"}, True),
        ({"matchLabels": {"infra-kind": "medium"}}, {"infra-kind": "medium", "x": "y"}, True),
        ({"matchLabels": {"infra-kind": "medium"}}, {"infra-kind": "large"}, False),
        ({"matchLabels": {"infra-kind": "medium"}}, {}, False),
        ({"matchLabels": {"a": ""}}, {"a": ""}, True),
        ({"matchLabels": {"a": ""}}, {}, False),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["x", "y"]}]}, {"a": "y"}, True),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["x"]}]}, {}, False),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["x"]}]}, {}, True),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["x"]}]}, {"a": "x"}, False),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["x"]}]}, {"a": "z"}, True),
        ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"a": ""}, True),
        ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"b": "a"}, False),
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"b": "a"}, True),
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"a": ""}, False),
        ({"matchLabels": {"a": "x"}, "matchExpressions": [{"key": "b", "operator": "Exists"}]}, {"a": "x"}, False),
        (
            {"matchLabels": {"a": "x"}, "matchExpressions": [{"key": "b", "operator": "Exists"}]},
            {"a": "x", "b": ""},
            True,
        ),
    ],
)
def test_matches_examples(selector, labels, expected):
    assert matches(selector, labels) is expected


def test_matches_with_none_labels():
    assert matches({}, None)
    assert not matches({"matchLabels": {"a": "b"}}, None)


@given(LABELS)
def test_empty_selector_matches_everything(labels):
    assert matches({}, labels) and matches(None, labels)


@given(SELECTORS, LABELS)
def test_matches_agrees_with_reference(selector, labels):
    assert matches(selector, labels) == reference_match(selector, labels)


@given(SELECTORS, SELECTORS, LABELS)
def test_conjunction(first, second, labels):
    both = {
        "matchLabels": dict(first.get("matchLabels") or {}),
        "matchExpressions": list(first.get("matchExpressions") or []) + list(second.get("matchExpressions") or []),
    }
    conflict = any(both["matchLabels"].get(k, v) != v for k, v in (second.get("matchLabels") or {}).items())
    both["matchLabels"].update(second.get("matchLabels") or {})
    if not conflict:
        assert matches(both, labels) == (matches(first, labels) and matches(second, labels))


@given(KEYS, st.lists(VALUES, min_size=1, max_size=3), LABELS)
def test_in_and_notin_are_complements(key, values, labels):
    in_sel = {"matchExpressions": [{"key": key, "operator": "In", "values": values}]}
    notin_sel = {"matchExpressions": [{"key": key, "operator": "NotIn", "values": values}]}
    assert matches(in_sel, labels) != matches(notin_sel, labels)


@given(KEYS, LABELS)
def test_exists_and_doesnotexist_are_complements(key, labels):
    exists = {"matchExpressions": [{"key": key, "operator": "Exists"}]}
    absent = {"matchExpressions": [{"key": key, "operator": "DoesNotExist"}]}
    assert matches(exists, labels) != matches(absent, labels)


@given(KEYS, VALUES, LABELS)
def test_match_labels_equals_single_value_in(key, value, labels):
    assert matches({"matchLabels": {key: value}}, labels) == matches(
        {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}, labels
    )


@settings(max_examples=50)
@given(SELECTORS)
def test_normalisation_is_idempotent_and_preserves_meaning(selector):
    once = validate_selector(selector)
    assert validate_selector(once) == once
    for labels in ({}, {"a": "x"}, {"a": "", "b": "y", "infra-kind": "medium"}):
        assert matches_normalised(once, labels) == reference_match(selector, labels)
