# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The two-step release, the binder's patch helpers, Secret copies and the planner's cost."""

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common import merge_patch as mpatch
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import Conflict
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3 import api as m3api
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder import planner as b
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import bmc_data, downward, identity, upward
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.parsed import parse_claim
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.metal3_objects import (
    BMC_VALUES,
    make_claim,
    make_host,
    ref_to,
)

NOW = "2026-02-01T10:00:00Z"
LATER = "2026-02-01T11:00:00Z"


def provisioned_host(claim, **kwargs):
    host = make_host(consumer=ref_to(claim), state="provisioned", online=True, powered_on=True, **kwargs)
    host["spec"]["image"] = {"url": "https://x/os.img", "checksum": "a" * 64}
    host["spec"]["userData"] = {"name": "hostclaim-x-userdata", "namespace": "infra"}
    return host


# ------------------------------------------------------------------ release


def test_deprovision_keeps_the_binding():
    claim = make_claim(spec={"nodeReuse": "md-0"})
    host = provisioned_host(
        claim,
        annotations={
            "reboot.metal3.io/hostclaim-fw": "",
            m3api.PASSED_ANNOTATIONS: '["reboot.metal3.io/hostclaim-fw"]',
        },
    )
    patch = b.deprovision_patch(host, claim)
    assert patch["spec"] == {"image": None, "userData": None, "online": False}
    assert "consumerRef" not in patch["spec"] and "labels" not in patch["metadata"]
    assert patch["metadata"]["annotations"] == {"reboot.metal3.io/hostclaim-fw": None, m3api.PASSED_ANNOTATIONS: None}
    assert patch["metadata"]["resourceVersion"] == "100"
    cleaned = mpatch.apply_merge_patch(host, patch)
    assert b.deprovision_patch(cleaned, claim) == {}
    assert bmc_data.find_bmc_data(patch, BMC_VALUES) == []


def test_deprovision_refuses_a_host_of_another_claim():
    with pytest.raises(Conflict):
        b.deprovision_patch(provisioned_host(make_claim(name="other")), make_claim())


def test_release_steps_wait_for_the_operator():
    claim = make_claim(spec={"nodeReuse": "md-0"})
    host = provisioned_host(claim)
    step, patch = b.release_step(host, claim, "md-0")
    assert step == "deprovision" and patch["spec"]["image"] is None
    host = mpatch.apply_merge_patch(host, patch)
    # the operator has not noticed yet, then it cleans the host
    for state in ("provisioned", "deprovisioning"):
        host["status"]["provisioning"]["state"] = state
        assert b.release_step(host, claim, "md-0") == ("deprovision", {})
    host["status"]["provisioning"]["state"] = "available"
    step, patch = b.release_step(host, claim, "md-0")
    assert step == "finish"
    assert patch["spec"] == {"consumerRef": None}
    assert patch["metadata"]["labels"] == {m3api.NODE_REUSE_LABEL: "tenant-a.md-0"}
    assert b.release_step(mpatch.apply_merge_patch(host, patch), claim, "md-0") == ("finish", {})


def test_a_host_that_never_ran_the_workload_is_released_in_one_write():
    claim = make_claim()
    host = make_host(consumer=ref_to(claim), state="available", online=True)
    host["spec"]["image"] = {"url": "https://x/os.img", "checksum": "a" * 64}
    step, patch = b.release_step(host, claim, None)
    assert step == "finish"
    assert patch["spec"] == {"consumerRef": None, "image": None, "online": False}


@pytest.mark.parametrize(
    "state,image,finished",
    [
        ("available", False, True),
        ("ready", False, True),
        ("provisioned", False, False),
        ("deprovisioning", False, False),
        ("provisioning", False, False),
        ("available", True, False),
        ("inspecting", False, True),
        (None, False, True),
    ],
)
def test_release_finished(state, image, finished):
    host = make_host(state=state)
    if image:
        host["spec"]["image"] = {"url": "https://x/os.img"}
    assert b.release_finished(host) is finished


# ------------------------------------------------------------------ patches


def test_merge_patches():
    assert upward.merge_patches({}, None) == {}
    first = {"metadata": {"labels": {"a": "1"}, "resourceVersion": "5"}}
    second = {"metadata": {"labels": {"b": None}, "annotations": {"x": "y"}}}
    third = {"metadata": {"finalizers": ["f"]}}
    merged = upward.merge_patches(first, second, third)
    assert merged == {
        "metadata": {
            "labels": {"a": "1", "b": None},
            "annotations": {"x": "y"},
            "finalizers": ["f"],
            "resourceVersion": "5",
        }
    }
    assert first == {"metadata": {"labels": {"a": "1"}, "resourceVersion": "5"}}
    target = {"metadata": {"labels": {"b": "2", "c": "3"}}}
    assert mpatch.apply_merge_patch(target, merged) == mpatch.apply_merge_patch(
        mpatch.apply_merge_patch(mpatch.apply_merge_patch(target, first), second), third
    )


def test_status_patch_removes_vanished_keys():
    old = {"addresses": [{"type": "InternalIP", "address": "1.2.3.4"}], "bootMACAddress": "m", "lastUpdated": NOW}
    new = {"addresses": [], "nics": [], "conditions": [], "lastUpdated": LATER}
    patch = upward.status_patch(old, new)
    assert mpatch.apply_merge_patch({"status": old}, patch) == {"status": new}
    assert upward.status_patch(new, dict(new)) == {}
    assert mpatch.apply_merge_patch({}, upward.status_patch(None, new)) == {"status": new}


def test_ready_problem_replaces_ready_only():
    claim = make_claim()
    host = make_host(consumer=ref_to(claim), state="available")
    status = upward.upward_status(host, None, NOW, claim)
    problem = upward.ready_problem(status, None, "DataSecretMissing", "Secret my-user-data not found", NOW)
    conds = dict((c["type"], c) for c in problem["conditions"])
    assert conds["Ready"]["reason"] == "DataSecretMissing" and conds["Ready"]["status"] == "False"
    assert conds["AssociateBMH"]["status"] == "True"
    assert problem["addresses"] == status["addresses"]
    again = upward.ready_problem(
        upward.upward_status(host, problem, LATER, claim),
        problem,
        "DataSecretMissing",
        "Secret my-user-data not found",
        LATER,
    )
    assert again == problem


def test_finalizer_patch():
    claim = make_claim()
    claim["metadata"]["finalizers"] = ["other.example.com/x"]
    patch = identity.finalizer_patch(claim, True)
    assert patch == {"metadata": {"finalizers": ["other.example.com/x", m3api.FINALIZER], "resourceVersion": "11"}}
    with_it = mpatch.apply_merge_patch(claim, patch)
    assert identity.finalizer_patch(with_it, True) == {}
    assert identity.finalizer_patch(with_it, False)["metadata"]["finalizers"] == ["other.example.com/x"]
    assert identity.finalizer_patch(claim, False) == {}


def test_secret_copy_and_its_patch():
    claim = make_claim(uid="0d9c7a52-7a1e-4b8e-9d59-2f6c1e2b3a4d", spec={"userData": "my-user-data"})
    host = make_host()
    source = {
        "metadata": {"name": "my-user-data", "namespace": "tenant-a", "resourceVersion": "3"},
        "type": "Opaque",
        "data": {"value": "I2Nsb3VkLWNvbmZpZw=="},
    }
    name = downward.secret_copy_names(parse_claim(claim))["userData"]
    wanted = downward.secret_copy(source, claim, host, "userData", name)
    assert wanted["metadata"]["namespace"] == "infra" and wanted["metadata"]["name"] == name
    assert wanted["metadata"]["labels"] == {
        m3api.COPY_CLAIM_UID_LABEL: claim["metadata"]["uid"],
        m3api.COPY_CLAIM_NAMESPACE_LABEL: "tenant-a",
        m3api.COPY_FIELD_LABEL: "userdata",
    }
    assert wanted["metadata"]["ownerReferences"][0]["uid"] == "uid-bmh-h1"
    assert wanted["metadata"]["annotations"] == {
        m3api.COPY_SOURCE_ANNOTATION: "tenant-a/my-user-data",
        m3api.COPY_CLAIM_ANNOTATION: "tenant-a/web-1",
    }
    assert wanted["data"] == source["data"] and wanted["type"] == "Opaque"
    current = dict(wanted, data={"value": "b2xk", "extra": "eA=="})
    current["metadata"] = dict(wanted["metadata"], resourceVersion="9")
    patch = downward.secret_copy_patch(current, wanted)
    assert patch == {"data": {"value": "I2Nsb3VkLWNvbmZpZw==", "extra": None}, "metadata": {"resourceVersion": "9"}}
    assert downward.secret_copy_patch(dict(wanted, metadata=current["metadata"]), wanted) == {}
    assert downward.secret_copy_patch(dict(current, type="kubernetes.io/tls"), wanted) is None


@pytest.mark.parametrize(
    "tenant_type",
    [
        "kubernetes.io/service-account-token",
        "bootstrap.kubernetes.io/token",
        "kubernetes.io/dockerconfigjson",
        "example.com/anything",
        None,
    ],
)
def test_the_copy_never_takes_the_type_of_the_tenants_secret(tenant_type):
    claim = make_claim(uid="0d9c7a52-7a1e-4b8e-9d59-2f6c1e2b3a4d", spec={"userData": {"name": "my-user-data"}})
    source = {
        "metadata": {"name": "my-user-data", "namespace": "tenant-a"},
        "type": tenant_type,
        "data": {"value": "eA=="},
    }
    wanted = downward.secret_copy(
        source, claim, make_host(), "userData", downward.secret_copy_names(parse_claim(claim))["userData"]
    )
    assert wanted["type"] == "Opaque"


# ------------------------------------------------------------------ planner


def test_alternatives_are_capped():
    claims = [make_claim("c1")]
    hosts = [make_host("h%02d" % i) for i in range(40)]
    action = b.plan_pass(claims, hosts, {"tenant-a": {}}, "x")[0]
    assert action["action"] == "bind"
    assert len(action["alternatives"]) == b.MAX_ALTERNATIVES
    ranked = b.rank_candidates(claims[0], hosts, "x")
    assert [h["metadata"]["name"] for h in ranked[: b.MAX_ALTERNATIVES + 1]] == [action["host"]["name"]] + [
        h["name"] for h in action["alternatives"]
    ]


def test_planning_a_large_pass_judges_each_host_once_per_selector(monkeypatch):
    """500 claims of 10 namespaces over 1,000 hosts: the namespaces share one sharing decision, so one survey per
    selector; hashes are per object. Counted, not timed (bench/bind.py times passes): a host is judged once per
    selector, its seed hashed once per pass."""
    namespaces = dict(("bench-%d" % i, {}) for i in range(10))
    claims = [
        make_claim("c%03d" % i, namespace="bench-%d" % (i % 10), spec={"hostSelector": {"matchLabels": {"s": "b"}}})
        for i in range(500)
    ]
    hosts = [make_host("h%04d" % i, labels={"s": "b"}) for i in range(1000)]
    calls = {"rejection": 0, "seed": 0}

    def counted(name, function):
        def call(*args, **kwargs):
            calls[name] += 1
            return function(*args, **kwargs)

        return call

    monkeypatch.setattr(b, "_match_rejection", counted("rejection", b._match_rejection))
    monkeypatch.setattr(b, "_host_seed", counted("seed", b._host_seed))
    plan = b.plan_pass(claims, hosts, namespaces, "binder-1")
    assert len([a for a in plan if a["action"] == "bind"]) == 500
    assert len(set((a["host"]["namespace"], a["host"]["name"]) for a in plan)) == 500
    assert calls == {"rejection": 1000, "seed": 1000}, calls
