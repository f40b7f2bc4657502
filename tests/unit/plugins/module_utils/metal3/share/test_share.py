# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""host_share on Metal3 (``share.run_host_share``) against the in-memory API: the sharing annotation, and the
migration of hosts whose policy is still in ``spec.hostClaimNamespaces`` (one patch, idempotent, check mode, diff)."""

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import dialect as claim_dialect
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share import pool_policies
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share import runner as share
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share.sharing_policy import (
    ANNOTATION,
    host_policy,
)
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils import fake_module
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.fake_kube import (
    FakeApiClient,
    FakeKube,
)

NAMESPACE = "metal3"
TENANT = "baremetal.tenancy/tenant"


class FakeModule(fake_module.FakeModule):
    def __init__(self, hosts, check_mode=False, **params):
        base = dict(
            namespace=NAMESPACE,
            class_label="infra-kind",
            tenant_label=TENANT,
            hosts=hosts,
            strict=True,
            namespace_share=None,
            dialect="auto",
        )
        base.update(params)
        super().__init__(check_mode, **base)


def bmh(name, annotations=None, legacy="absent"):
    spec = {"online": False, "bmc": {"address": "redfish://192.0.2.1/x", "credentialsName": name + "-bmc"}}
    if legacy != "absent":
        spec["hostClaimNamespaces"] = legacy
    return {
        "apiVersion": "metal3.io/v1alpha1",
        "kind": "BareMetalHost",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {}, "annotations": dict(annotations or {})},
        "spec": spec,
    }


@pytest.fixture
def fake(monkeypatch):
    kube = FakeKube(page=10)
    monkeypatch.setattr(share, "kube_api_client", lambda params: FakeApiClient(kube))
    return kube


def run(hosts, check_mode=False, **params):
    module = FakeModule(hosts, check_mode, **params)
    share.run_host_share(module)
    return module


def writes(fake):
    return [(method, path, body) for method, path, body in fake.requests if method != "GET"]


def stored(fake, name):
    return fake.get("baremetalhosts", NAMESPACE, name)


def test_a_legacy_host_is_migrated_in_one_patch_and_a_second_run_writes_nothing(fake):
    fake.add("baremetalhosts", bmh("h0", legacy={"withLabel": [TENANT]}))
    entries = [{"name": "h0", "share": {"all_tenants": True}}]
    first = run(entries)
    assert first.result["changed"] is True
    sent = writes(fake)
    assert len(sent) == 1 and sent[0][0] == "PATCH"
    body = sent[0][2]
    assert body["metadata"]["annotations"] == {ANNOTATION: '{"withLabel":["baremetal.tenancy/tenant"]}'}
    assert body["spec"] == {"hostClaimNamespaces": None}
    assert body["metadata"]["resourceVersion"]  # the precondition
    host = stored(fake, "h0")
    assert "hostClaimNamespaces" not in host["spec"] and host_policy(host) == ({"withLabel": [TENANT]}, [])
    assert first.result["changes"] == [
        {
            "host": "h0",
            "before": {"labels": {}, "sharing": None, "legacy_sharing": {"withLabel": [TENANT]}},
            "after": {"labels": {}, "sharing": {"withLabel": [TENANT]}},
        }
    ]
    fake.requests.clear()
    second = run(entries)
    assert second.result["changed"] is False and second.result["changes"] == []
    assert writes(fake) == []


def test_check_mode_shows_the_migration_and_writes_nothing(fake):
    fake.add("baremetalhosts", bmh("h0", legacy={"matches": "old-.*"}))
    before = stored(fake, "h0")
    module = run([{"name": "h0", "share": {"matches": "t-.*"}}], check_mode=True)
    assert module.result["changed"] is True and writes(fake) == []
    assert stored(fake, "h0") == before
    assert module.result["diff"] == {
        "before": {"hosts": {"h0": {"labels": {}, "sharing": None, "legacy_sharing": {"matches": "old-.*"}}}},
        "after": {"hosts": {"h0": {"labels": {}, "sharing": {"matches": "t-.*"}}}},
    }


def test_an_invalid_annotation_is_replaced_and_stop_sharing_removes_both(fake):
    fake.add("baremetalhosts", bmh("h0", {ANNOTATION: "not json"}))
    fake.add("baremetalhosts", bmh("h1", {ANNOTATION: '{"matches":"x"}'}, legacy={"matches": "x"}))
    module = run([{"name": "h0", "share": {"tenants": ["a"]}}, {"name": "h1", "share": {}}])
    assert [change["host"] for change in module.result["changes"]] == ["h0", "h1"]
    assert host_policy(stored(fake, "h0")) == ({"withLabel": [TENANT + "=a"]}, [])
    h1 = stored(fake, "h1")
    assert ANNOTATION not in h1["metadata"]["annotations"] and "hostClaimNamespaces" not in h1["spec"]
    assert module.result["changes"][0]["before"]["sharing"] == "'not json'"


def test_a_conflict_replans_from_the_fresh_host(fake):
    fake.add("baremetalhosts", bmh("h0", legacy={"matches": "x"}))

    def someone_else(kube):
        kube.write("baremetalhosts", NAMESPACE, "h0", {"metadata": {"annotations": {ANNOTATION: '{"matches":"t-.*"}'}}})

    fake.hooks.append((lambda method, path, body: method == "PATCH", someone_else))
    module = run([{"name": "h0", "share": {"matches": "t-.*"}}])
    patches = [body for method, _path, body in writes(fake)]
    assert len(patches) == 2
    assert patches[1]["spec"] == {"hostClaimNamespaces": None} and "annotations" not in patches[1]["metadata"]
    assert "hostClaimNamespaces" not in stored(fake, "h0")["spec"]
    assert module.result["changed"] is True


# ---------------------------------------------------------------- the namespace's sharing, on either dialect

POLICIES = "hostdeploypolicies"


def serve_bmo_hostclaim(fake):
    """The OpenAPI document of metal3.io/v1alpha1 with baremetal-operator's HostClaim (what the module reads)."""
    props = dict((field, {"type": "string"}) for field in claim_dialect.BMO_SPEC_FIELDS)
    schema = {"properties": {"spec": {"properties": props}}}
    fake.openapi = {"components": {"schemas": {claim_dialect.OPENAPI_SCHEMA: schema}}}


def policies(fake):
    return dict(
        (name, obj)
        for (plural, namespace, name), obj in fake.objects.items()
        if plural == POLICIES and namespace == NAMESPACE
    )


def test_bmo_namespace_share_writes_labelled_policies_and_a_second_run_writes_nothing(fake):
    serve_bmo_hostclaim(fake)
    fake.add("baremetalhosts", bmh("h0"))
    fake.add(
        POLICIES, {"metadata": {"name": "owners-own", "namespace": NAMESPACE}, "spec": {"hostClaimNamespaces": {}}}
    )
    share_all = {"all_tenants": True, "matches": "t-.*"}
    first = run([{"name": "h0", "class": "small"}], namespace_share=share_all)
    assert first.result["changed"] is True and first.result["dialect"] == "bmo"
    written = policies(fake)
    assert set(written) == {"owners-own", "baremetal-tenancy-sharing-0"}
    assert written["baremetal-tenancy-sharing-0"]["spec"]["hostClaimNamespaces"] == {
        "nameMatches": "^(?:t-.*)$",
        "hasLabels": [{"name": TENANT}],
    }
    assert written["baremetal-tenancy-sharing-0"]["metadata"]["labels"] == {
        pool_policies.MANAGED_BY: "baremetal.tenancy"
    }
    assert first.result["policies"] == [
        {
            "policy": "baremetal-tenancy-sharing-0",
            "action": "create",
            "before": None,
            "after": {"nameMatches": "^(?:t-.*)$", "hasLabels": [{"name": TENANT}]},
        }
    ]
    assert stored(fake, "h0")["metadata"]["labels"] == {"infra-kind": "small"}
    assert ANNOTATION not in stored(fake, "h0")["metadata"]["annotations"]  # no per-host sharing on BMO's dialect
    assert first.result["diff"]["before"]["policies"] == {}
    fake.requests.clear()
    second = run([{"name": "h0", "class": "small"}], namespace_share=share_all)
    assert second.result["changed"] is False and second.result["policies"] == [] and writes(fake) == []
    assert second.result["diff"]["before"] == second.result["diff"]["after"]
    # fewer tenants: the policy no longer wanted goes, the owner's own stays; then stop sharing
    third = run([], namespace_share={"tenants": ["a"]})
    assert [(c["policy"], c["action"]) for c in third.result["policies"]] == [("baremetal-tenancy-sharing-0", "update")]
    assert policies(fake)["baremetal-tenancy-sharing-0"]["spec"]["hostClaimNamespaces"] == {
        "hasLabels": [{"name": TENANT, "value": "a"}]
    }
    stop = run([], namespace_share={})
    assert [(c["policy"], c["action"]) for c in stop.result["policies"]] == [("baremetal-tenancy-sharing-0", "delete")]
    assert set(policies(fake)) == {"owners-own"}


def test_bmo_check_mode_writes_no_policy(fake):
    serve_bmo_hostclaim(fake)
    module = run([], check_mode=True, namespace_share={"tenants": ["a", "b"]})
    assert module.result["changed"] is True and writes(fake) == [] and policies(fake) == {}
    assert [c["action"] for c in module.result["policies"]] == ["create", "create"]
    assert module.result["diff"]["after"]["policies"] == {
        "baremetal-tenancy-sharing-0": {"hasLabels": [{"name": TENANT, "value": "a"}]},
        "baremetal-tenancy-sharing-1": {"hasLabels": [{"name": TENANT, "value": "b"}]},
    }


def test_bmo_refuses_a_per_host_share_and_changes_nothing(fake):
    serve_bmo_hostclaim(fake)
    fake.add("baremetalhosts", bmh("h0"))
    before = stored(fake, "h0")
    with pytest.raises(InvalidInput, match=r"^hosts\[1\]: share: the cluster serves baremetal-operator's HostClaim"):
        run([{"name": "h0", "class": "small"}, {"name": "h0", "share": {"all_tenants": True}}], namespace_share={})
    assert writes(fake) == [] and stored(fake, "h0") == before


def test_bmo_refuses_to_take_over_a_hand_written_policy_of_a_wanted_name(fake):
    serve_bmo_hostclaim(fake)
    fake.add("baremetalhosts", bmh("h0"))
    fake.add(
        POLICIES,
        {
            "metadata": {"name": "baremetal-tenancy-sharing", "namespace": NAMESPACE},
            "spec": {"hostClaimNamespaces": {}},
        },
    )
    with pytest.raises(InvalidInput, match=r"exist\(s\) without the label"):
        run([{"name": "h0", "class": "small"}], namespace_share={"matches": "t-.*"})
    assert writes(fake) == []


def test_proposal_namespace_share_is_every_hosts_annotation_and_an_entry_share_wins(fake):
    fake.add("baremetalhosts", bmh("h0"))
    fake.add("baremetalhosts", bmh("h1"))
    module = run([{"name": "h1", "share": {"tenants": ["b"]}}], namespace_share={"all_tenants": True})
    assert module.result["dialect"] == "proposal" and module.result["policies"] == []
    assert host_policy(stored(fake, "h0")) == ({"withLabel": [TENANT]}, [])
    assert host_policy(stored(fake, "h1")) == ({"withLabel": [TENANT + "=b"]}, [])
    fake.requests.clear()
    again = run([{"name": "h1", "share": {"tenants": ["b"]}}], namespace_share={"all_tenants": True})
    assert again.result["changed"] is False and writes(fake) == []


def test_labels_only_read_no_dialect(fake):
    fake.add("baremetalhosts", bmh("h0"))
    module = run([{"name": "h0", "class": "small"}])
    assert module.result["dialect"] is None
    assert not [path for method, path, body in fake.requests if path.startswith("/openapi")]
