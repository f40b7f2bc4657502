# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The owner's sharing on either dialect (metal3/share/pool_policies.py): which dialect, the refusal of a per-host share
on baremetal-operator's, and the plan that keeps exactly the wanted policies among the collection's own."""

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import BackendError, InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import dialect as cd
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share import deploy_policy as dp
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share import pool_policies as pp
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share.plan import (
    namespace_share,
    validate_entries,
)

INFRA = "infra"
TENANT = "baremetal.tenancy/tenant"


def openapi(fields):
    props = dict((field, {"type": "string"}) for field in fields)
    return {"components": {"schemas": {cd.OPENAPI_SCHEMA: {"properties": {"spec": {"properties": props}}}}}}


BMO_DOC = openapi(cd.BMO_SPEC_FIELDS)
PROPOSAL_DOC = openapi(["online", "kind", "nodeReuse"])


@pytest.mark.parametrize(
    "requested,document,expected",
    [
        ("auto", BMO_DOC, "bmo"),
        ("auto", PROPOSAL_DOC, "proposal"),
        ("auto", None, "proposal"),  # no HostClaim API: the annotation needs none
        ("proposal", None, "proposal"),
        ("bmo", BMO_DOC, "bmo"),
        ("proposal", PROPOSAL_DOC, "proposal"),
    ],
)
def test_sharing_dialect(requested, document, expected):
    assert pp.sharing_dialect(requested, document) == expected


def test_a_forced_dialect_the_cluster_does_not_serve_fails():
    with pytest.raises(InvalidInput, match="option dialect"):
        pp.sharing_dialect("proposal", BMO_DOC)
    with pytest.raises(InvalidInput, match="option dialect"):
        pp.sharing_dialect("bmo", PROPOSAL_DOC)
    with pytest.raises(BackendError, match="serves none"):
        pp.sharing_dialect("bmo", None)
    with pytest.raises(BackendError, match="neither dialect"):
        pp.sharing_dialect("auto", openapi(["replicas"]))


def test_a_per_host_share_is_refused_naming_each_entry():
    entries = validate_entries(
        [{"name": "h0", "class": "small"}, {"name": "h1", "share": {}}, {"name": "h2", "share": {"tenants": ["a"]}}],
        TENANT,
    )
    error = pp.per_host_share_refusal(entries)
    assert isinstance(error, InvalidInput)
    assert str(error).startswith("hosts[1], hosts[2]: share: ")
    assert "HostDeployPolicy" in str(error) and "namespace_share" in str(error) and "Nothing was changed" in str(error)
    assert pp.per_host_share_refusal(entries[:1]) is None


def test_wanted_policies_are_labelled_anchored_and_one_per_with_label_entry():
    sharing = namespace_share({"all_tenants": True, "tenants": ["a"], "matches": "t-.*"}, TENANT)
    policies = pp.wanted_policies(INFRA, sharing)
    assert [p["metadata"]["name"] for p in policies] == ["baremetal-tenancy-sharing-0", "baremetal-tenancy-sharing-1"]
    assert all(pp.is_ours(p) and p["metadata"]["namespace"] == INFRA for p in policies)
    assert [p["spec"]["hostClaimNamespaces"] for p in policies] == [
        {"nameMatches": "^(?:t-.*)$", "hasLabels": [{"name": TENANT}]},
        {"nameMatches": "^(?:t-.*)$", "hasLabels": [{"name": TENANT, "value": "a"}]},
    ]
    only_matches = pp.wanted_policies(INFRA, namespace_share({"matches": "prod"}, TENANT))
    assert [p["metadata"]["name"] for p in only_matches] == ["baremetal-tenancy-sharing"]
    # what the policies admit, by BMO's own (unanchored) search, is what the sharing says
    assert dp.evaluate_namespace(only_matches, INFRA, "prod", {}, unanchored=True).allowed
    assert not dp.evaluate_namespace(only_matches, INFRA, "not-prod", {}, unanchored=True).allowed
    assert pp.wanted_policies(INFRA, namespace_share({}, TENANT)) == []


def stored(policy, version="1", labels="ours"):
    policy = dict(policy, metadata=dict(policy["metadata"], resourceVersion=version))
    if labels != "ours":
        policy["metadata"] = dict(policy["metadata"], labels=labels)
    return policy


def handwritten(name, constraints):
    return {"metadata": {"name": name, "namespace": INFRA}, "spec": {"hostClaimNamespaces": constraints}}


def test_plan_creates_updates_and_deletes_only_the_collections_policies():
    old = pp.wanted_policies(INFRA, namespace_share({"tenants": ["a", "b", "c"]}, TENANT))
    existing = [stored(p) for p in old] + [handwritten("owners-own", {"names": ["x"]})]
    wanted = pp.wanted_policies(INFRA, namespace_share({"tenants": ["a", "z"]}, TENANT))
    plan = pp.plan_policies(existing, wanted)
    assert plan["create"] == [] and plan["foreign"] == []
    assert [(current["metadata"]["name"], patch) for current, patch in plan["update"]] == [
        (
            "baremetal-tenancy-sharing-1",
            {"spec": {"hostClaimNamespaces": {"hasLabels": [{"name": TENANT, "value": "z"}]}}},
        )
    ]
    assert [p["metadata"]["name"] for p in plan["delete"]] == ["baremetal-tenancy-sharing-2"]  # never owners-own
    assert set(plan["before"]) == {
        "baremetal-tenancy-sharing-0",
        "baremetal-tenancy-sharing-1",
        "baremetal-tenancy-sharing-2",
    }
    assert set(plan["after"]) == {"baremetal-tenancy-sharing-0", "baremetal-tenancy-sharing-1"}
    assert pp.plan_changes(plan)
    again = pp.plan_policies([stored(p) for p in wanted] + existing[-1:], wanted)
    assert not pp.plan_changes(again) and again["before"] == again["after"]


def test_an_update_removes_constraints_the_sharing_no_longer_has():
    current = stored(pp.wanted_policies(INFRA, namespace_share({"matches": "t-.*"}, TENANT))[0])
    current["spec"]["hostClaimNamespaces"]["names"] = ["added-by-hand"]
    wanted = pp.wanted_policies(INFRA, namespace_share({"matches": "u-.*"}, TENANT))
    ((dummy, patch),) = pp.plan_policies([current], wanted)["update"]
    assert patch == {"spec": {"hostClaimNamespaces": {"nameMatches": "^(?:u-.*)$", "names": None}}}


def test_stop_sharing_deletes_the_collections_policies_only():
    existing = [stored(p) for p in pp.wanted_policies(INFRA, namespace_share({"all_tenants": True}, TENANT))]
    existing.append(handwritten("owners-own", {}))
    plan = pp.plan_policies(existing, pp.wanted_policies(INFRA, None))
    assert [p["metadata"]["name"] for p in plan["delete"]] == ["baremetal-tenancy-sharing-0"]
    assert plan["after"] == {}


def test_a_hand_written_policy_of_a_wanted_name_is_refused():
    wanted = pp.wanted_policies(INFRA, namespace_share({"matches": "t-.*"}, TENANT))
    existing = [handwritten("baremetal-tenancy-sharing", {"nameMatches": "t-"})]
    plan = pp.plan_policies(existing, wanted)
    assert plan["foreign"] == ["baremetal-tenancy-sharing"] and not pp.plan_changes(plan)
    error = pp.foreign_refusal(plan, INFRA)
    assert "HostDeployPolicy in namespace infra: baremetal-tenancy-sharing exist(s) without the label" in str(error)
    assert pp.foreign_refusal(pp.plan_policies([], wanted), INFRA) is None
    # another manager's label is not the collection's either
    other = stored(wanted[0], labels={pp.MANAGED_BY: "helm"})
    assert pp.plan_policies([other], wanted)["foreign"] == ["baremetal-tenancy-sharing"]


def test_namespace_share_is_checked_like_a_hosts_share():
    with pytest.raises(InvalidInput, match=r"^namespace_share: share.tenants: "):
        namespace_share({"tenants": ["Team_A"]}, TENANT)
    with pytest.raises(InvalidInput, match="not a valid RE2 pattern"):
        namespace_share({"matches": "("}, TENANT)
    assert namespace_share({"tenants": None, "all_tenants": None, "with_labels": None, "matches": None}, TENANT) is None
