# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import share_plan as sp

INFRA, TENANT = "a" * 32, "b" * 32
IDS = {"infra": INFRA, "tenant": TENANT, INFRA: INFRA}
NODES = [
    {"uuid": "u-0", "name": "n-0", "owner": None},
    {"uuid": "u-1", "name": "n-1", "owner": INFRA},
    {"uuid": "u-2", "name": None, "owner": ""},
]


def plan(entries, nodes=None):
    return sp.plan_owners(NODES if nodes is None else nodes, sp.validate_entries(entries), IDS)


def test_owners_are_set_only_where_they_differ():
    result = plan([{"names": ["n-0", "n-1", "u-2"], "owner": "infra"}])
    assert result["changes"] == [
        {"name": "n-0", "uuid": "u-0", "before": None, "after": INFRA},
        {"name": "u-2", "uuid": "u-2", "before": "", "after": INFRA},
    ]
    assert result["missing"] == []
    # Every node the entries name, changed or not (the owner's cleaning check reads them).
    assert [n["uuid"] for n in result["nodes"]] == ["u-0", "u-1", "u-2"]


def test_a_later_entry_wins_and_a_node_is_changed_once():
    result = plan([{"name": "n-1", "owner": "tenant"}, {"names": ["u-1"], "owner": "infra"}])
    assert result["changes"] == []
    result = plan([{"name": "n-0", "owner": "infra"}, {"name": "u-0", "owner": "tenant"}])
    assert result["changes"] == [{"name": "n-0", "uuid": "u-0", "before": None, "after": TENANT}]


def test_unknown_nodes_are_refused_with_their_entry():
    result = plan([{"name": "n-0", "owner": "infra"}, {"names": ["n-9"], "owner": "infra"}])
    assert result["missing"] == [(1, "n-9")]
    error = sp.refusal(result)
    assert error.message.startswith("Ironic nodes: hosts[1]: no node n-9 in Ironic. Nothing was changed")
    assert sp.refusal(plan([{"name": "n-0", "owner": "infra"}])) is None


def test_owner_refs_are_distinct_and_ordered():
    assert sp.owner_refs(
        sp.validate_entries([{"name": "x", "owner": "b"}, {"name": "y", "owner": "a"}, {"name": "z", "owner": "b"}])
    ) == ["b", "a"]


@pytest.mark.parametrize(
    "entries, expected",
    [
        ([{"owner": "infra"}], "hosts[0]: needs names (or name)"),
        ([{"name": "n-0"}], "hosts[0]: needs an owner"),
        ([{"name": "n-0", "owner": " "}], "hosts[0]: needs an owner"),
        (
            [{"name": "n-0", "owner": "x"}, {"name": "n-1", "owner": "x", "share": {}}],
            "hosts[1]: share only work with backend metal3",
        ),
        (
            [{"selector": {"a": "b"}, "class": "c", "owner": "x"}],
            "hosts[0]: class, selector only work with backend metal3",
        ),
        ([{"name": "n-0", "owner": "x", "lessee": "y"}], "hosts[0]: unknown key(s) lessee"),
        ([{"names": "n-0", "owner": "x"}], "hosts[0]: names must be a list"),
        ([{"names": [""], "owner": "x"}], "hosts[0]: node '' must be a node name or UUID"),
        ([3], "hosts[0]: must be a mapping"),
    ],
)
def test_a_bad_entry_is_one_error_naming_its_index(entries, expected):
    with pytest.raises(InvalidInput) as info:
        sp.validate_entries(entries)
    assert info.value.message.startswith(expected)


NODE = st.builds(
    dict,
    uuid=st.sampled_from(["u-0", "u-1", "u-2"]),
    name=st.sampled_from(["n-0", "n-1", None]),
    owner=st.sampled_from([None, INFRA, TENANT]),
)
ENTRY = st.builds(
    dict,
    names=st.lists(st.sampled_from(["n-0", "n-1", "u-0", "u-2"]), min_size=1, max_size=3),
    owner=st.sampled_from(["infra", "tenant"]),
)


@settings(max_examples=300)
@given(
    st.lists(NODE, max_size=3).map(lambda nodes: list(dict((n["uuid"], n) for n in nodes).values())),
    st.lists(ENTRY, min_size=1, max_size=3),
)
def test_applying_the_plan_then_planning_again_changes_nothing(nodes, entries):
    first = plan(entries, nodes)
    after = [dict(node) for node in nodes]
    for change in first["changes"]:
        next(node for node in after if node["uuid"] == change["uuid"])["owner"] = change["after"]
    assert plan(entries, after)["changes"] == []
    assert len(set(change["uuid"] for change in first["changes"])) == len(first["changes"])
