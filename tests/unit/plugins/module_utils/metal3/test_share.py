# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""host_share on Metal3 (``share.run_host_share``) against the in-memory API: the sharing annotation, and the
migration of hosts whose policy is still in ``spec.hostClaimNamespaces`` (one patch, idempotent, check mode, diff)."""

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3 import share
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.sharing_policy import ANNOTATION, host_policy
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.fake_kube import (
    FakeApiClient,
    FakeKube,
)

NAMESPACE = "metal3"
TENANT = "baremetal.tenancy/tenant"


class FakeModule:
    def __init__(self, hosts, check_mode=False):
        self.params = dict(
            namespace=NAMESPACE,
            class_label="infra-kind",
            tenant_label=TENANT,
            hosts=hosts,
            strict=True,
        )
        self.check_mode = check_mode
        self.result = {"changed": False}
        self.warnings = []

    def changed(self, value=True):
        self.result["changed"] = self.result["changed"] or bool(value)

    def warn(self, message):
        self.warnings.append(message)

    def set_diff(self, before, after):
        self.result["diff"] = dict(before=before, after=after)


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


def run(hosts, check_mode=False):
    module = FakeModule(hosts, check_mode)
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
