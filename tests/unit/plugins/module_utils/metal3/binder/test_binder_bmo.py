# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The binder on baremetal-operator's dialect: HostDeployPolicies, inNamespace, failureDomain, BMO's finalizer and
status, the take-over guard (the real operator is in tests/integration/bmo/test_bmo_dialect_binder.py)."""

import json

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import BackendError, InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import FINALIZER, HOST_STATUS_ANNOTATION
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.bmo_controller import (
    FINALIZER as BMO_FINALIZER,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.bmo_controller import (
    NO_HOST_MESSAGE,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.bmo_controller_signal import (
    BINDER_FIELD_MANAGER,
)
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.binder_world import binder, bound
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.fake_kube import FakeKube


def _host(fake, namespace, name, labels=None, nics=None):
    status = {"provisioning": {"state": "available"}, "operationalStatus": "OK", "poweredOn": False}
    if nics:
        status["hardware"] = {"nics": nics}
    fake.add(
        "baremetalhosts",
        {
            "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {}, kind="m")},
            "spec": {"online": False, "bmc": {"address": "redfish://10.9.9.9/x", "credentialsName": name + "-bmc"}},
            "status": status,
        },
    )


def _claim(fake, namespace, name, **spec):
    body = {"poweredOn": False, "hostSelector": {"matchLabels": {"kind": "m"}}}
    body.update(spec)
    return fake.add("hostclaims", {"metadata": {"name": name, "namespace": namespace, "generation": 1}, "spec": body})


def _policy(fake, namespace, name, constraints):
    fake.add(
        "hostdeploypolicies",
        {"metadata": {"name": name, "namespace": namespace}, "spec": {"hostClaimNamespaces": constraints}},
    )


def bmo_world(hosts=2):
    fake = FakeKube()
    for name, labels in (("infra", {}), ("infra-2", {}), ("tenant-a", {"team": "a"}), ("not-tenant-a", {})):
        fake.add("namespaces", {"metadata": {"name": name, "labels": labels}})
    for index in range(hosts):
        _host(fake, "infra", "h%d" % index)
    _policy(fake, "infra", "tenants", {"nameMatches": "tenant-a"})
    return fake


def _conditions(claim):
    return dict((c["type"], (c["status"], c["reason"], c["message"])) for c in claim["status"]["conditions"])


def test_a_bmo_claim_is_bound_with_bmos_finalizer_and_status_and_a_second_pass_writes_nothing():
    fake = bmo_world()
    _claim(fake, "tenant-a", "web")
    report = binder(fake, binder_id="b1").run()
    assert report["dialect"] == "bmo" and report["claims"][0]["action"] == "bound"
    claim = fake.get("hostclaims", "tenant-a", "web")
    host = bound(fake)["web"]
    assert claim["metadata"]["finalizers"] == [BMO_FINALIZER]
    assert claim["status"]["bareMetalHost"] == {"namespace": "infra", "name": host}
    assert _conditions(claim) == {
        "Associated": ("True", "BareMetalHostAssociated", ""),
        "Synchronized": ("True", "ConfigurationSynced", ""),
        "Provisioned": ("False", "NotProvisioned", "no image is provisioned; set spec.image"),
        "Ready": ("False", "IssuesReported", "* Provisioned: no image is provisioned; set spec.image"),
    }
    assert all(c["observedGeneration"] == 1 for c in claim["status"]["conditions"])
    assert claim["status"]["poweredOn"] is False and "addresses" not in claim["status"]
    assert set(fake.field_managers) == {BINDER_FIELD_MANAGER}
    again = binder(fake, binder_id="b1").run()
    assert again["requests"]["writes"] == 0 and again["claims"][0]["action"] == "unchanged"


def test_power_and_image_go_down_and_addresses_come_up_in_the_annotation_without_bmc_data():
    fake = bmo_world(hosts=1)
    nics = [{"name": "eth0", "mac": "aa:bb:cc:00:00:01", "ip": "192.0.2.5"}, {"name": "bmc", "ip": "10.9.9.9"}]
    fake.write("baremetalhosts", "infra", "h0", {"status": {"hardware": {"nics": nics}}})
    image = {"url": "http://img.example/a.qcow2", "checksum": "http://img.example/a.sha256", "checksumType": "sha256"}
    _claim(fake, "tenant-a", "web", poweredOn=True, image=image, customDeploy=None)
    report = binder(fake).run()
    # consumerRef, the claim's commit (the annotation included), the host's image and power, the claim's status
    assert report["claims"][0]["writes"] == 4
    host = fake.get("baremetalhosts", "infra", "h0")
    assert host["spec"]["online"] is True and host["spec"]["image"]["url"] == image["url"]
    claim = fake.get("hostclaims", "tenant-a", "web")
    shown = json.loads(claim["metadata"]["annotations"][HOST_STATUS_ANNOTATION])
    assert shown == {
        "addresses": [{"type": "InternalIP", "address": "192.0.2.5"}],
        "nics": [{"name": "eth0", "MAC": "aa:bb:cc:00:00:01", "ip": "192.0.2.5"}],
    }
    assert "10.9.9.9" not in json.dumps(claim)


def test_custom_deploy_reaches_the_host_and_is_taken_off_on_release():
    fake = bmo_world(hosts=1)
    _claim(fake, "tenant-a", "web", customDeploy={"method": "install_coreos"})
    binder(fake).run()
    assert fake.get("baremetalhosts", "infra", "h0")["spec"]["customDeploy"] == {"method": "install_coreos"}
    fake.request("DELETE", "https://x/apis/metal3.io/v1alpha1/namespaces/tenant-a/hostclaims/web")
    report = binder(fake).run()
    assert report["claims"][0]["action"] == "released"
    host = fake.get("baremetalhosts", "infra", "h0")
    assert "customDeploy" not in host["spec"] and "consumerRef" not in host["spec"]
    assert fake.get("hostclaims", "tenant-a", "web") is None


def test_the_anchored_name_matches_refuses_what_upstream_admits_and_says_so():
    fake = bmo_world()
    _claim(fake, "not-tenant-a", "web")
    report = binder(fake).run()
    (outcome,) = report["claims"]
    assert outcome["action"] == "pending" and outcome["reason"] == "NoSharedHost"
    claim = fake.get("hostclaims", "not-tenant-a", "web")
    assert _conditions(claim)["Associated"] == ("False", "NoBareMetalHost", NO_HOST_MESSAGE)
    assert "bareMetalHost" not in claim["status"] and claim["metadata"]["finalizers"] == [BMO_FINALIZER]
    (note,) = report["anchoring"]
    assert (note["namespace"], note["host_namespace"]) == ("not-tenant-a", "infra")
    assert "would admit it" in note["reason"]
    upstream = binder(fake, unanchored=True).run()
    assert upstream["claims"][0]["action"] == "bound" and upstream["anchoring"] == []


def test_no_policy_no_host_and_has_labels_must_all_hold():
    fake = bmo_world()
    _policy(fake, "infra", "tenants", {"nameMatches": "tenant-a", "hasLabels": [{"name": "team", "value": "b"}]})
    fake.objects.pop(("hostdeploypolicies", "infra", "tenants"))
    _policy(fake, "infra", "labelled", {"nameMatches": "tenant-a", "hasLabels": [{"name": "team", "value": "b"}]})
    _claim(fake, "tenant-a", "web")
    assert binder(fake).run()["claims"][0]["action"] == "pending"
    fake.write("namespaces", None, "tenant-a", {"metadata": {"labels": {"team": "b"}}})
    assert binder(fake).run()["claims"][0]["action"] == "bound"


def test_in_namespace_restricts_and_failure_domain_is_preferred():
    fake = bmo_world(hosts=3)
    _host(fake, "infra-2", "far")
    _policy(fake, "infra-2", "all", {"nameMatches": ".*"})
    fake.write(
        "baremetalhosts",
        "infra",
        "h2",
        {"metadata": {"labels": {"infrastructure.cluster.x-k8s.io/failure-domain": "z"}}},
    )
    _claim(fake, "tenant-a", "there", hostSelector={"matchLabels": {"kind": "m"}, "inNamespace": "infra-2"})
    _claim(fake, "tenant-a", "zoned", failureDomain="z")
    binder(fake).run()
    hosts = bound(fake)
    assert hosts["there"] == "far" and hosts["zoned"] == "h2"
    assert fake.get("hostclaims", "tenant-a", "there")["status"]["bareMetalHost"]["namespace"] == "infra-2"


def test_a_missing_user_data_secret_is_upstreams_sync_failure():
    fake = bmo_world(hosts=1)
    _claim(fake, "tenant-a", "web", userData={"name": "ud", "namespace": "tenant-a"})
    report = binder(fake).run()
    assert report["claims"][0]["reason"] == "DataSecretMissing"
    conditions = _conditions(fake.get("hostclaims", "tenant-a", "web"))
    assert conditions["Synchronized"][:2] == ("False", "UserDataSecretSyncFailure")
    assert "Secret ud (spec.userData) was not found in namespace tenant-a" in conditions["Ready"][2]


def test_a_secret_of_another_namespace_is_refused_as_invalid():
    fake = bmo_world(hosts=1)
    _claim(fake, "tenant-a", "web", userData={"name": "ud", "namespace": "infra"})
    report = binder(fake).run()
    assert report["claims"][0]["reason"] == "InvalidSpec" and bound(fake) == {}
    associated = _conditions(fake.get("hostclaims", "tenant-a", "web"))["Associated"]
    assert associated[:2] == ("False", "InvalidSpec") and "not in the claim's namespace" in associated[2]


def _foreign(fake, name, time="2026-11-25T03:00:00Z"):
    fake.write(
        "hostclaims",
        "tenant-a",
        name,
        {
            "metadata": {
                "managedFields": [
                    {"manager": "baremetal-operator", "operation": "Update", "subresource": "status", "time": time}
                ]
            }
        },
    )


def test_claims_another_controller_wrote_stop_the_pass_before_any_write_unless_taken_over():
    fake = bmo_world()
    _claim(fake, "tenant-a", "web")
    _foreign(fake, "web")
    before = len(fake.requests)
    with pytest.raises(BackendError) as exc:
        binder(fake).run()
    assert "HostClaim tenant-a/web (status written by 'baremetal-operator' at 2026-11-25T03:00:00Z" in exc.value.message
    assert "take_over=true" in exc.value.message
    assert [method for method, _path, _body in fake.requests[before:] if method != "GET"] == []
    taking_over = binder(fake, take_over=True)
    report = taking_over.run()
    assert report["taken_over"] == ["tenant-a/web"] and report["claims"][0]["action"] == "bound"
    assert fake.get("hostclaims", "tenant-a", "web")["status"]["lastUpdated"] == taking_over.now


def test_a_forced_dialect_is_checked_against_the_served_one():
    fake = bmo_world()
    _claim(fake, "tenant-a", "web")
    fake.openapi = None
    with pytest.raises(BackendError) as exc:
        binder(fake, dialect="bmo").run()
    assert "serves none" in exc.value.message
    fake.openapi = {
        "components": {
            "schemas": {
                "io.metal3.v1alpha1.HostClaim": {"properties": {"spec": {"properties": {"poweredOn": {}, "image": {}}}}}
            }
        }
    }
    with pytest.raises(InvalidInput) as exc:
        binder(fake, dialect="proposal").run()
    assert exc.value.message.startswith("option dialect: is proposal but the cluster serves the bmo HostClaim")
    assert binder(fake, dialect="bmo").run()["claims"][0]["action"] == "bound"


def test_the_proposal_dialect_keeps_its_own_finalizer():
    from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.binder_world import world

    fake = world()
    report = binder(fake).run()
    assert report["dialect"] == "proposal" and report["anchoring"] == []
    assert fake.get("hostclaims", "tenant-a", "c0")["metadata"]["finalizers"] == [FINALIZER]
