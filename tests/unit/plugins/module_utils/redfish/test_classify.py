# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.libraries import MissingLibrary
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import classify as cl

LARGE = "MemorySummary.TotalSystemMemoryGiB >= `256` && ProcessorSummary.Count >= `64`"


def system(memory=None, cpus=None, manufacturer="Contoso", nics=1):
    doc = {
        "Manufacturer": manufacturer,
        "ProcessorSummary": {},
        "MemorySummary": {},
        "EthernetInterfaces": {"Members": [{"MACAddress": "52:54:00:00:00:%02x" % i} for i in range(nics)]},
    }
    if memory is not None:
        doc["MemorySummary"]["TotalSystemMemoryGiB"] = memory
    if cpus is not None:
        doc["ProcessorSummary"]["Count"] = cpus
    return doc


def run(rules, doc):
    return cl.classify(doc, cl.compile_rules(rules))


def test_the_issue_example():
    rules = [{"name": "large", "when": LARGE, "labels": {"infra-kind": "large"}}]
    assert run(rules, system(256, 64)).labels == {"infra-kind": "large"}
    assert run(rules, system(512, 96)).labels == {"infra-kind": "large"}
    assert run(rules, system(255, 128)).labels == {}
    assert run(rules, system(1024, 63)).labels == {}


def test_missing_figures_do_not_match_and_do_not_fail():
    rules = [{"when": LARGE, "labels": {"k": "v"}}]
    assert run(rules, system()).labels == {}
    assert run(rules, {}).labels == {}


def test_first_matching_rule_wins_per_key_and_traits_accumulate():
    rules = [
        {
            "name": "a",
            "when": "Manufacturer == 'Contoso'",
            "labels": {"vendor": "contoso", "tier": "gold"},
            "traits": ["CUSTOM_A"],
        },
        {
            "name": "b",
            "labels": {"tier": "bronze", "zone": "z1"},
            "resource_class": "rc-b",
            "traits": ["CUSTOM_B", "CUSTOM_A"],
        },
        {"name": "c", "resource_class": "rc-c", "traits": ["CUSTOM_C"]},
    ]
    out = run(rules, system())
    assert out.labels == {"vendor": "contoso", "tier": "gold", "zone": "z1"}
    assert out.resource_class == "rc-b"
    assert out.traits == ["CUSTOM_A", "CUSTOM_B", "CUSTOM_C"]
    assert out.matched == ["a", "b", "c"]
    other = run(rules, system(manufacturer="Fabrikam"))
    assert other.labels == {"tier": "bronze", "zone": "z1"}
    assert other.matched == ["b", "c"]


def test_stop_ends_evaluation_only_when_the_rule_matches():
    rules = [
        {"name": "large", "when": LARGE, "labels": {"kind": "large"}, "stop": True},
        {"name": "default", "labels": {"kind": "small", "extra": "yes"}},
    ]
    assert run(rules, system(512, 96)).as_dict() == {
        "labels": {"kind": "large"},
        "resource_class": None,
        "traits": [],
        "matched_rules": ["large"],
        "unevaluable_rules": [],
    }
    assert run(rules, system(64, 8)).labels == {"kind": "small", "extra": "yes"}


def test_unnamed_rules_are_reported_by_index():
    out = run([{"when": "`false`"}, {"labels": {"a": "b"}}], system())
    assert out.matched == ["#1"]


@pytest.mark.parametrize(
    "value,truthy",
    [
        (None, False),
        (False, False),
        ("", False),
        ([], False),
        ({}, False),
        (0, True),
        (True, True),
        ("x", True),
        ([0], True),
        ({"a": 1}, True),
        (0.0, True),
    ],
)
def test_jmespath_truthiness(value, truthy):
    assert cl._truthy(value) is truthy


def test_expressions_over_expanded_collections():
    rules = [{"when": "length(EthernetInterfaces.Members) >= `2`", "traits": ["CUSTOM_DUAL_NIC"]}]
    assert run(rules, system(nics=2)).traits == ["CUSTOM_DUAL_NIC"]
    assert run(rules, system(nics=1)).traits == []
    # length(null) is a JMESPath type error: the rule does not match and is reported.
    out = run(rules, {})
    assert out.traits == []
    assert out.unevaluable == ["#0"]
    assert out.as_dict()["unevaluable_rules"] == ["#0"]


@pytest.mark.parametrize(
    "rules,fragment",
    [
        ("not a list", "must be a list"),
        (["x"], "must be a mapping"),
        ([{"whne": "a"}], "unknown key(s) whne"),
        ([{"name": 3}], "name must be a string"),
        ([{"name": "bad", "when": "a >= "}], "classification rule 'bad'"),
        ([{"when": "a >= "}], "invalid JMESPath expression"),
        ([{"when": ""}], "non-empty JMESPath"),
        ([{"when": 5}], "non-empty JMESPath"),
        ([{"labels": ["a"]}], "labels must be a mapping"),
        ([{"labels": {"bad key!": "v"}}], "label key"),
        ([{"labels": {"k": "bad value!"}}], "label k"),
        ([{"labels": {"k": True}}], "value must be a string"),
        ([{"labels": {"k": "x" * 64}}], "at most 63"),
        ([{"resource_class": "has space"}], "resource_class"),
        ([{"resource_class": "x" * 81}], "resource_class"),
        ([{"traits": "CUSTOM_A"}], "traits must be a list"),
        ([{"traits": ["lower"]}], "trait 'lower'"),
        ([{"stop": "yes"}], "stop must be true or false"),
    ],
)
def test_invalid_rules_name_the_rule_and_the_cause(rules, fragment):
    with pytest.raises(InvalidInput) as err:
        cl.compile_rules(rules)
    assert fragment in err.value.message


def test_second_rule_is_named_by_index_in_errors():
    with pytest.raises(InvalidInput) as err:
        cl.compile_rules([{"labels": {"a": "b"}}, {"traits": ["x"]}])
    assert err.value.obj == "option rules[1] (classification rule #1)"


def test_numbers_and_none_become_label_strings():
    out = run([{"labels": {"gen": 5, "empty": None}}], {})
    assert out.labels == {"gen": "5", "empty": ""}


def test_none_rules_is_no_classification():
    assert cl.compile_rules(None) == []
    assert run(None, {}).as_dict() == {
        "labels": {},
        "resource_class": None,
        "traits": [],
        "matched_rules": [],
        "unevaluable_rules": [],
    }


def test_classification_equality():
    a = cl.Classification({"a": "b"}, "rc", ["T"], ["x"])
    assert a == cl.Classification({"a": "b"}, "rc", ["T"], ["x"])
    assert a != cl.Classification({"a": "c"}, "rc", ["T"], ["x"])
    assert "rc" in repr(a)


KEYS = st.sampled_from(["kind", "tier", "zone", "vendor"])
VALUES = st.sampled_from(["a", "b", "c"])
RULE = st.fixed_dictionaries(
    {
        "when": st.sampled_from(["`true`", "`false`", "MemorySummary.TotalSystemMemoryGiB >= `128`", LARGE]),
        "labels": st.dictionaries(KEYS, VALUES, max_size=3),
        "traits": st.lists(st.sampled_from(["CUSTOM_A", "CUSTOM_B", "CUSTOM_C"]), max_size=2),
        "resource_class": st.one_of(st.none(), st.sampled_from(["rc-1", "rc-2"])),
        "stop": st.booleans(),
    }
)


@settings(max_examples=200)
@given(
    rules=st.lists(RULE, max_size=6),
    memory=st.sampled_from([None, 64, 128, 512]),
    cpus=st.sampled_from([None, 8, 64, 96]),
)
def test_property_matches_a_naive_reference(rules, memory, cpus):
    """Against a straightforward re-implementation of the documented semantics."""
    doc = system(memory, cpus)
    out = run(rules, doc)
    labels, traits, rc = {}, [], None
    for rule in rules:
        mem = memory or 0
        ok = {
            "`true`": True,
            "`false`": False,
            "MemorySummary.TotalSystemMemoryGiB >= `128`": memory is not None and mem >= 128,
            LARGE: memory is not None and cpus is not None and mem >= 256 and cpus >= 64,
        }[rule["when"]]
        if not ok:
            continue
        for k, v in rule["labels"].items():
            labels.setdefault(k, v)
        rc = rc or rule["resource_class"]
        for trait in rule["traits"]:
            if trait not in traits:
                traits.append(trait)
        if rule["stop"]:
            break
    assert out.labels == labels
    assert out.traits == traits
    assert out.resource_class == rc


def test_a_when_rule_without_jmespath_is_a_missing_library(monkeypatch):
    monkeypatch.setattr(cl, "HAS_JMESPATH", False)
    monkeypatch.setattr(cl, "JMESPATH_IMPORT_ERROR", "Traceback: no jmespath")
    with pytest.raises(MissingLibrary) as err:
        cl.compile_rules([{"name": "big", "when": "MemorySummary.TotalSystemMemoryGiB > `64`"}])
    assert "(jmespath)" in err.value.message and err.value.details["exception"] == "Traceback: no jmespath"
