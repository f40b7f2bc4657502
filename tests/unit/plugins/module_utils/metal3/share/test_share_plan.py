# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import apply_merge_patch
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share import plan as sp
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share.sharing_policy import (
    ANNOTATION,
    MAX_VALUE_LENGTH,
    host_policy,
)

TENANT = "baremetal.tenancy/tenant"
CLASS = "infra-kind"


def host(name, labels=None, share="absent", version="7", legacy="absent"):
    """A BMH; ``share`` is the policy of its annotation (a dict is encoded, a string is the raw value),
    ``legacy`` its ``spec.hostClaimNamespaces`` (where the policy lived before)."""
    spec = {"online": False, "bmc": {"address": "redfish://192.0.2.1/x", "credentialsName": name + "-bmc"}}
    meta = {"name": name, "labels": labels or {}, "resourceVersion": version}
    if share != "absent":
        meta["annotations"] = {ANNOTATION: share if isinstance(share, str) else json.dumps(share)}
    if legacy != "absent":
        spec["hostClaimNamespaces"] = legacy
    return {"metadata": meta, "spec": spec}


def annotation(value):
    """The merge patch member that sets (``None``: removes) the annotation."""
    return {"annotations": {ANNOTATION: value}}


def plan(hosts, entries, class_label=CLASS):
    return sp.plan_hosts(hosts, sp.validate_entries(entries, TENANT), class_label)


def patches(result):
    return dict((change["name"], change["patch"]) for change in result["changes"])


def refused(entries):
    with pytest.raises(InvalidInput) as info:
        sp.validate_entries(entries, TENANT)
    return info.value.message


# ------------------------------------------------------------- what an entry does


def test_class_labels_and_share_of_named_hosts():
    result = plan(
        [host("h0"), host("h1"), host("h2")],
        [{"names": ["h0", "h1"], "class": "small", "labels": {"rack": "r1"}, "share": {"all_tenants": True}}],
    )
    assert patches(result) == {
        name: {
            "metadata": {
                "labels": {CLASS: "small", "rack": "r1"},
                "annotations": {ANNOTATION: '{"withLabel":["baremetal.tenancy/tenant"]}'},
            },
        }
        for name in ("h0", "h1")
    }
    assert result["missing"] == [] and result["unmatched"] == []


def test_share_maps_tenants_all_tenants_with_labels_and_matches_in_that_order():
    result = plan(
        [host("h0")],
        [
            {
                "name": "h0",
                "share": {
                    "tenants": ["team-a", "team-b", "team-a"],
                    "all_tenants": True,
                    "with_labels": ["gpu", "zone=z1"],
                    "matches": "lab-.*",
                },
            }
        ],
    )
    value = patches(result)["h0"]["metadata"]["annotations"][ANNOTATION]
    assert json.loads(value) == {
        "matches": "lab-.*",
        "withLabel": [TENANT, TENANT + "=team-a", TENANT + "=team-b", "gpu", "zone=z1"],
    }
    assert value == json.dumps(json.loads(value), separators=(",", ":"), sort_keys=True)  # compact JSON
    assert set(patches(result)["h0"]) == {"metadata"}


def test_empty_share_removes_the_annotation_and_no_share_leaves_it():
    shared = {"matches": "old-.*"}
    result = plan([host("h0", share=shared), host("h1", share=shared)], [{"name": "h0", "share": {}}, {"name": "h1"}])
    assert patches(result) == {"h0": {"metadata": annotation(None)}}


def test_null_share_stops_sharing_like_an_empty_one():
    result = plan([host("h0", share={"matches": "x"})], [{"name": "h0", "share": None}])
    assert patches(result) == {"h0": {"metadata": annotation(None)}}


def test_stop_sharing_a_host_that_is_not_shared_changes_nothing():
    assert plan([host("h0")], [{"name": "h0", "share": {}}])["changes"] == []


def test_share_replaces_the_whole_policy_including_subfields_it_does_not_set():
    result = plan(
        [host("h0", share={"matches": "old-.*", "withLabel": ["x"]})], [{"name": "h0", "share": {"tenants": ["a"]}}]
    )
    assert patches(result)["h0"] == {"metadata": annotation('{"withLabel":["%s=a"]}' % TENANT)}


def test_zero_value_subfields_count_as_unset_when_comparing():
    current = {"matches": "", "withLabel": [TENANT]}
    assert plan([host("h0", share=current)], [{"name": "h0", "share": {"all_tenants": True}}])["changes"] == []


def test_the_same_policy_written_by_hand_is_not_rewritten():
    by_hand = '{ "withLabel" : [ "%s" ],\n  "matches": null }' % TENANT
    assert plan([host("h0", share=by_hand)], [{"name": "h0", "share": {"all_tenants": True}}])["changes"] == []


@pytest.mark.parametrize(
    "value",
    ["", "not json", "[]", "5", "null", '{"withLabels": ["x"]}', '{"matches": "("}', '{"matches":"a","matches":"b"}'],
)
def test_an_invalid_annotation_is_replaced_by_the_share(value):
    result = plan([host("h0", share=value)], [{"name": "h0", "share": {"matches": "t-.*"}}])
    assert patches(result) == {"h0": {"metadata": annotation('{"matches":"t-.*"}')}}


def test_stop_sharing_removes_an_invalid_annotation_too():
    assert patches(plan([host("h0", share="not json")], [{"name": "h0", "share": {}}])) == {
        "h0": {"metadata": annotation(None)}
    }


# ------------------------------------------------------------- migration from spec.hostClaimNamespaces


def test_sharing_a_host_with_the_legacy_field_writes_the_annotation_and_removes_the_field_in_one_patch():
    legacy = host("h0", legacy={"withLabel": [TENANT]})
    result = plan([legacy], [{"name": "h0", "share": {"all_tenants": True}}])
    assert patches(result) == {
        "h0": {
            "metadata": annotation('{"withLabel":["baremetal.tenancy/tenant"]}'),
            "spec": {"hostClaimNamespaces": None},
        }
    }
    after = apply_merge_patch(legacy, patches(result)["h0"])
    assert "hostClaimNamespaces" not in after["spec"] and host_policy(after) == ({"withLabel": [TENANT]}, [])
    assert plan([after], [{"name": "h0", "share": {"all_tenants": True}}])["changes"] == []


def test_a_host_already_annotated_only_loses_the_legacy_field():
    both = host("h0", share={"matches": "t-.*"}, legacy={"matches": "old-.*"})
    assert patches(plan([both], [{"name": "h0", "share": {"matches": "t-.*"}}])) == {
        "h0": {"spec": {"hostClaimNamespaces": None}}
    }


@pytest.mark.parametrize("legacy", [{"matches": "x"}, {}, None])
def test_stop_sharing_removes_the_legacy_field(legacy):
    assert patches(plan([host("h0", legacy=legacy)], [{"name": "h0", "share": {}}])) == {
        "h0": {"spec": {"hostClaimNamespaces": None}}
    }


def test_an_entry_without_share_leaves_the_legacy_field_alone():
    legacy = host("h0", legacy={"matches": "x"})
    assert patches(plan([legacy], [{"name": "h0", "class": "small"}])) == {
        "h0": {"metadata": {"labels": {CLASS: "small"}}}
    }


def test_a_share_longer_than_the_annotation_allows_is_refused():
    tenants = ["t-%05d" % index for index in range(MAX_VALUE_LENGTH // 30)]
    assert refused([{"name": "h0", "share": {"tenants": tenants}}]).startswith(
        "hosts[0]: share gives a policy longer than the %d characters" % MAX_VALUE_LENGTH
    )


def test_null_label_removes_it_and_an_absent_null_label_changes_nothing():
    result = plan(
        [host("h0", {"old": "yes", "keep": "1"}), host("h1")], [{"names": ["h0", "h1"], "labels": {"old": None}}]
    )
    assert patches(result) == {"h0": {"metadata": {"labels": {"old": None}}}}


def test_later_entries_win_and_selectors_see_earlier_labels():
    result = plan(
        [host("h0", {"rack": "r1"}), host("h1")],
        [
            {"names": ["h0", "h1"], "class": "small", "share": {"all_tenants": True}},
            {"selector": {CLASS: "small", "rack": "r1"}, "class": "large", "share": {"tenants": ["b"]}},
        ],
    )
    assert patches(result)["h0"] == {
        "metadata": {"labels": {CLASS: "large"}, **annotation('{"withLabel":["%s=b"]}' % TENANT)},
    }
    assert patches(result)["h1"]["metadata"]["labels"] == {CLASS: "small"}


def test_labels_win_over_class_for_the_class_label_within_one_entry():
    result = plan([host("h0")], [{"name": "h0", "class": "small", "labels": {CLASS: "tiny"}}])
    assert patches(result)["h0"] == {"metadata": {"labels": {CLASS: "tiny"}}}


def test_names_and_selector_must_both_match():
    result = plan(
        [host("h0", {"rack": "r1"}), host("h1", {"rack": "r2"})],
        [{"names": ["h0", "h1"], "selector": {"rack": "r2"}, "class": "x"}],
    )
    assert list(patches(result)) == ["h1"]


def test_booleans_and_numbers_become_label_text():
    result = plan([host("h0", {"gpu": "true"})], [{"selector": {"gpu": True}, "labels": {"cores": 64, "fast": False}}])
    assert patches(result)["h0"] == {"metadata": {"labels": {"cores": "64", "fast": "false"}}}


def test_the_class_label_is_the_callers():
    result = plan([host("h0")], [{"name": "h0", "class": "small"}], class_label="example.com/class")
    assert patches(result)["h0"] == {"metadata": {"labels": {"example.com/class": "small"}}}


def test_hosts_already_as_asked_get_no_patch():
    current = host("h0", {CLASS: "small"}, share={"withLabel": [TENANT]})
    assert plan([current], [{"name": "h0", "class": "small", "share": {"all_tenants": True}}])["changes"] == []


def test_unknown_names_and_empty_selectors_are_reported_with_their_entry():
    result = plan([host("h0")], [{"names": ["h0", "h9"], "class": "a"}, {"selector": {"rack": "r7"}, "class": "b"}])
    assert result["missing"] == [(0, "h9")]
    assert result["unmatched"] == [(1, {"rack": "r7"})]
    error = sp.refusal(result, "pool")
    assert error.obj == "BareMetalHosts in namespace pool"
    assert "hosts[0]: no BareMetalHost named h9 in namespace pool" in error.cause
    assert 'hosts[1]: no BareMetalHost in namespace pool carries the labels {"rack": "r7"}' in error.cause
    assert "Nothing was changed" in error.cause
    assert sp.refusal(plan([host("h0")], [{"name": "h0"}]), "pool") is None


def test_diff_view_shows_labels_and_sharing_only():
    view = sp.host_view(host("h0", {"a": "b"}, share={"matches": "x"}))
    assert view == {"labels": {"a": "b"}, "sharing": {"matches": "x"}}
    assert sp.host_view(host("h0")) == {"labels": {}, "sharing": None}


def test_diff_view_shows_the_legacy_field_while_present_and_a_bad_value_cut():
    view = sp.host_view(host("h0", share="x" * 500, legacy={"matches": "old"}))
    assert view["legacy_sharing"] == {"matches": "old"}
    assert view["sharing"].startswith("'xxx") and len(view["sharing"]) < 80 and "(500 characters)" in view["sharing"]


# ------------------------------------------------------------- refusals, one per cause, naming the entry


@pytest.mark.parametrize(
    "entries, expected",
    [
        ([{"class": "small"}], "hosts[0]: needs names (or name) or a selector"),
        ([{"name": "h0"}, {"names": ["h1"], "share": {"tenant": ["a"]}}], "hosts[1]: share has unknown key(s) tenant"),
        ([{"name": "h0", "colour": "red"}], "hosts[0]: unknown key(s) colour"),
        ([{"name": "h0", "share": {"tenants": ["Team_A"]}}], "hosts[0]: share.tenants: tenant name 'Team_A'"),
        (
            [{"name": "h0", "share": {"tenants": ["team-a", "kube-system"]}}],
            "hosts[0]: share.tenants: tenant name 'kube-system' is a reserved namespace",
        ),
        ([{"name": "h0", "share": {"with_labels": ["bad key"]}}], "hosts[0]: share.with_labels[0] 'bad key'"),
        ([{"name": "h0", "share": {"with_labels": ["k=bad value"]}}], "hosts[0]: share.with_labels[0] 'k=bad value'"),
        ([{"name": "h0", "share": {"matches": "("}}], "hosts[0]: share.matches '(' is not a valid RE2 pattern"),
        ([{"name": "h0", "share": {"all_tenants": "yes"}}], "hosts[0]: share.all_tenants must be true or false"),
        ([{"name": "h0", "share": ["a"]}], "hosts[0]: share must be a mapping"),
        ([{"name": "h0", "labels": {"bad key": "x"}}], "hosts[0]: labels: key 'bad key'"),
        ([{"name": "h0", "labels": {"k": "bad value"}}], "hosts[0]: labels: value 'bad value'"),
        ([{"name": "h0", "labels": ["k"]}], "hosts[0]: labels must be a mapping"),
        ([{"selector": {"k": None}}], "hosts[0]: selector: value None must be a string"),
        ([{"name": "h0", "class": "bad class"}], "hosts[0]: class: value 'bad class'"),
        ([{"name": "h0", "class": ""}], "hosts[0]: class: value must not be empty"),
        ([{"names": "h0"}], "hosts[0]: names must be a list of strings"),
        ([{"names": ["Bad_Host"]}], "hosts[0]: host name 'Bad_Host'"),
        (["h0"], "hosts[0]: must be a mapping"),
    ],
)
def test_a_bad_entry_is_one_error_naming_its_index_and_cause(entries, expected):
    assert refused(entries).startswith(expected)


def test_entries_must_be_a_list():
    assert refused({"name": "h0"}).startswith("option hosts: must be a list")


def test_label_options_are_checked():
    with pytest.raises(InvalidInput, match="option class_label: key 'a b'"):
        sp.check_label_option("a b", "class_label")
    assert sp.check_label_option(TENANT, "tenant_label") == TENANT


# ------------------------------------------------------------- properties

LABEL = st.sampled_from(["a", "b", "example.com/c", CLASS])
VALUE = st.sampled_from(["x", "y", "z1"])
NAMES = st.sampled_from(["h0", "h1", "h2"])
SHARE = st.one_of(
    st.just({}),
    st.fixed_dictionaries(
        {},
        optional={
            "tenants": st.lists(st.sampled_from(["t-a", "t-b"]), max_size=2),
            "all_tenants": st.booleans(),
            "with_labels": st.lists(st.sampled_from(["gpu", "zone=z1"]), max_size=2),
            "matches": st.sampled_from(["", "lab-.*", "t-[ab]"]),
        },
    ),
)
ENTRY = st.fixed_dictionaries(
    {},
    optional={
        "class": VALUE,
        "labels": st.dictionaries(LABEL, st.one_of(st.none(), VALUE), max_size=3),
        "share": SHARE,
    },
).flatmap(
    lambda body: st.one_of(
        st.lists(NAMES, min_size=1, max_size=3).map(lambda names: dict(body, names=names)),
        st.dictionaries(LABEL, VALUE, min_size=1, max_size=2).map(lambda selector: dict(body, selector=selector)),
    )
)
HOST = st.builds(
    host,
    NAMES,
    st.dictionaries(LABEL, VALUE, max_size=3),
    st.one_of(
        st.just("absent"),
        st.just({"matches": "old-.*"}),
        st.just({"withLabel": [TENANT]}),
        st.just('{"withLabel": ["%s"], "matches": ""}' % TENANT),
        st.sampled_from(["", "not json", "[]", '{"matches": "("}']),
        st.text(max_size=8),
    ),
    legacy=st.one_of(st.just("absent"), st.none(), st.just({"matches": "old-.*"}), st.just({"withLabel": [TENANT]})),
)


def unique_hosts(hosts):
    return list(dict((h["metadata"]["name"], h) for h in hosts).values())


@settings(max_examples=300)
@given(st.lists(HOST, max_size=3).map(unique_hosts), st.lists(ENTRY, min_size=1, max_size=4))
def test_applying_the_plan_then_planning_again_changes_nothing(hosts, entries):
    first = plan(hosts, entries)
    by_name = dict((h["metadata"]["name"], h) for h in hosts)
    for change in first["changes"]:
        by_name[change["name"]] = apply_merge_patch(by_name[change["name"]], change["patch"])
    assert plan(list(by_name.values()), entries)["changes"] == []


@settings(max_examples=300)
@given(st.lists(HOST, max_size=3).map(unique_hosts), st.lists(ENTRY, min_size=1, max_size=4))
def test_a_plan_only_touches_labels_and_sharing_and_shares_validly(hosts, entries):
    for change in plan(hosts, entries)["changes"]:
        patch = change["patch"]
        assert patch  # an empty patch is never sent
        assert set(patch) <= {"metadata", "spec"}
        assert set(patch.get("metadata", {})) <= {"labels", "annotations"}
        assert set(patch.get("metadata", {}).get("annotations", {})) <= {ANNOTATION}
        assert patch.get("spec", {"hostClaimNamespaces": None}) == {"hostClaimNamespaces": None}  # only removed
        after = apply_merge_patch(change["host"], patch)
        if ANNOTATION in patch.get("metadata", {}).get("annotations", {}):
            # what is written is valid, and the leftover field goes in the same patch
            assert host_policy(after)[1] == [] and "hostClaimNamespaces" not in after["spec"]
        assert after["spec"]["bmc"] == change["host"]["spec"]["bmc"]


@settings(max_examples=300)
@given(st.lists(st.one_of(ENTRY, st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3)), max_size=3))
def test_validation_raises_only_invalid_input(entries):
    try:
        sp.validate_entries(entries, TENANT)
    except InvalidInput as error:
        assert error.message.startswith("hosts[")


def test_a_label_set_by_a_later_entry_lets_an_earlier_selector_match_in_the_same_run():
    """Found by hypothesis: without settling, the second run removed label b."""
    hosts = [host("h1", {"a": "x", "b": "x"})]
    entries = [
        {"selector": {"example.com/c": "z1"}, "labels": {"b": None}},
        {"names": ["h1"], "labels": {"example.com/c": "z1"}},
    ]
    first = plan(hosts, entries)
    assert [change["patch"] for change in first["changes"]] == [
        {"metadata": {"labels": {"b": None, "example.com/c": "z1"}}}
    ]
    after = apply_merge_patch(hosts[0], first["changes"][0]["patch"])
    assert plan([after], entries)["changes"] == []
