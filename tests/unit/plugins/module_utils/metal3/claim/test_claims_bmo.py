# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The tenant side on baremetal-operator's HostClaim dialect (issue 15): host_claim, host_claim_info and
host_release speak it with the same options, and every reader (the modules' record, the inventory) reads a BMO
claim as the data contract says: host from status.bareMetalHost, power from status.poweredOn, ready from Ready,
associated from Associated, addresses/NICs/boot MAC from the binder's host-status annotation only while a host
is bound."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.claim_record import RECORD_KEYS
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    BackendError,
    Conflict,
    InvalidInput,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import tenant as mc
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import view as m3view
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.client import KubeIO
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.fake_kube import (
    BMO_OPENAPI,
    FakeApiClient,
    FakeKube,
    openapi_document,
)

NS = "t1"
IMAGE = {"url": "http://images.example/os.qcow2", "checksum": "http://images.example/os.sha256"}
HOST_STATUS = {
    "addresses": [{"type": "InternalIP", "address": "192.0.2.10"}, {"type": "Hostname", "address": "h1"}],
    "nics": [{"name": "eth0", "MAC": "52:54:00:00:00:01", "ip": "192.0.2.10"}],
    "bootMACAddress": "52:54:00:00:00:01",
}


def condition(ctype, status, reason, message=""):
    return {"type": ctype, "status": status, "reason": reason, "message": message}


def bmo_claim(bound=True, annotation=None, provisioned="Provisioned", ready=True, **spec):
    """A BMO-dialect claim as the binder leaves it (the contract of issue 15); the annotation is HOST_STATUS unless
    given (a string is written as it is)."""
    annotation = HOST_STATUS if annotation is None else annotation
    claim = {
        "apiVersion": "metal3.io/v1alpha1",
        "kind": "HostClaim",
        "metadata": {
            "name": "web",
            "namespace": NS,
            "uid": "u-1",
            "labels": {"hostclaim.metal3.io/host": "h1"} if bound else {},
            "annotations": {},
            "finalizers": ["metal3.io/hostclaim"],
        },
        "spec": dict({"poweredOn": True, "image": IMAGE}, **spec),
        "status": {},
    }
    if annotation is not False:
        claim["metadata"]["annotations"][m3view.HOST_STATUS_ANNOTATION] = (
            annotation if isinstance(annotation, str) else json.dumps(annotation, separators=(",", ":"))
        )
    if bound:
        claim["status"] = {
            "bareMetalHost": {"namespace": "infra", "name": "h1"},
            "poweredOn": True,
            "lastUpdated": "2026-11-25T00:00:00Z",
            "conditions": [
                condition("Associated", "True", "BareMetalHostAssociated"),
                condition("Synchronized", "True", "ConfigurationSynced"),
                condition("Provisioned", "True" if provisioned == "Provisioned" else "False", provisioned),
                condition("Ready", "True" if ready else "False", "Ready" if ready else "NotReady"),
            ],
        }
    else:
        claim["status"] = {
            "conditions": [
                condition("Associated", "False", "NoBareMetalHost", "No available host found: requeuing."),
                condition("Ready", "False", "NoBareMetalHost"),
            ]
        }
    return claim


# ------------------------------------------------------------------ reading a BMO claim


def test_a_bound_bmo_claim_reads_as_the_contract_says():
    record = m3view.claim_record(bmo_claim())
    assert m3view.is_bmo_claim(bmo_claim())
    assert set(record) == set(RECORD_KEYS) | set(m3view.METAL3_KEYS)
    assert record["host"] == "h1" and record["associated"] is True and record["ready"] is True
    assert record["online"] is True and record["powered_on"] is True
    assert record["provisioning_state"] == "provisioned"
    assert record["addresses"] == HOST_STATUS["addresses"]
    assert record["nics"] == HOST_STATUS["nics"]
    assert record["boot_mac_address"] == "52:54:00:00:00:01"
    assert record["node_reuse"] is None and record["image"] == IMAGE
    # the binder's annotation is data of the record, never an annotation of it (not in the export domain)
    assert record["annotations"] == {}
    assert m3view.metal3_record(bmo_claim()) == record


def test_an_unbound_bmo_claim_has_no_host_and_its_annotation_is_not_read():
    claim = bmo_claim(bound=False)  # a tenant may write the annotation on its own claim: ignored
    record = m3view.claim_record(claim)
    assert record["host"] is None and record["associated"] is False and record["ready"] is False
    assert record["addresses"] == [] and record["nics"] == [] and record["boot_mac_address"] is None
    assert record["provisioning_state"] is None and record["powered_on"] is None
    assert m3view.metal3_record(claim) is None
    assert m3view.bmo_host_status(claim) == {}


@pytest.mark.parametrize(
    "reason,state", [("Provisioning", "provisioning"), ("NotProvisioned", "available"), ("HostError", "error")]
)
def test_the_provisioning_state_of_a_bmo_claim_comes_from_provisioned(reason, state):
    record = m3view.claim_record(bmo_claim(provisioned=reason, ready=False))
    assert record["provisioning_state"] == state and record["ready"] is False and record["associated"] is True


@pytest.mark.parametrize("junk", ["not json", "[1, 2]", '"x"', ""])
def test_a_host_status_annotation_that_is_no_json_object_gives_no_addresses(junk):
    record = m3view.claim_record(bmo_claim(annotation=junk))
    assert record["host"] == "h1" and record["addresses"] == [] and record["nics"] == []


def test_the_host_of_a_bmo_claim_is_status_bare_metal_host_alone():
    claim = bmo_claim()
    claim["metadata"]["labels"] = {}  # baremetal-operator's own controller writes no binding label
    assert m3view.bound_host(claim) == "h1"
    claim["metadata"]["labels"] = {"hostclaim.metal3.io/host": "h2"}  # a label never decides
    assert m3view.bound_host(claim) == "h1"
    for junk in (None, "h1", {"namespace": "infra"}, {"name": ""}, {"name": 3}):
        claim["status"]["bareMetalHost"] = junk
        assert m3view.bound_host(claim) is None
    # a proposal claim with a bareMetalHost-like status is read by the proposal's rule (no poweredOn in spec)
    proposal = bmo_claim()
    proposal["spec"] = {"online": True}
    assert not m3view.is_bmo_claim(proposal) and m3view.bound_host(proposal) is None


def test_the_same_keys_on_both_dialects():
    proposal = {"metadata": {"name": "web", "namespace": NS}, "spec": {"online": True}}
    assert set(m3view.claim_record(proposal)) == set(m3view.claim_record(bmo_claim()))


# ------------------------------------------------------------------ the modules on a BMO cluster


class StubModule:
    """The part of TenancyModule the metal3 entry points use."""

    def __init__(self, check_mode=False, **params):
        self.params = dict(
            state="present",
            namespace=NS,
            name="web",
            wait=False,
            wait_for="ready",
            wait_timeout=300,
            online=None,
            host_selector=None,
            image=None,
            annotations=None,
            node_reuse=None,
            in_namespace=None,
            failure_domain=None,
            custom_deploy=None,
            user_data_secret=None,
            network_data_secret=None,
            meta_data_secret=None,
            dialect="auto",
        )
        self.params.update(params)
        self.check_mode = check_mode
        self.result: dict = {"changed": False}

    def changed(self):
        self.result["changed"] = True

    def set_diff(self, before, after):
        self.result["diff"] = {"before": before, "after": after}


@pytest.fixture
def fake(monkeypatch):
    fake = FakeKube()
    fake.openapi = BMO_OPENAPI
    fake.add("namespaces", {"metadata": {"name": NS}})
    fake.add("secrets", {"metadata": {"name": "ud", "namespace": NS}})
    monkeypatch.setattr(mc, "_client", lambda mod: KubeIO(FakeApiClient(fake)))
    return fake


def writes(fake):
    return [request for request in fake.requests if request[0] != "GET"]


SELECTOR = {
    "matchLabels": {"pool": "a"},
    "matchExpressions": [
        {"key": "rack", "operator": "In", "values": ["r1"]},
        {"key": "gpu", "operator": "DoesNotExist", "values": None},
    ],
}
OPTIONS = dict(
    online=False,
    host_selector=SELECTOR,
    image=dict(IMAGE, checksum_type="sha256", format="qcow2"),
    user_data_secret="ud",
    in_namespace="infra",
    failure_domain="fd-1",
)


def test_host_claim_writes_baremetal_operators_shape_and_is_idempotent(fake):
    mod = StubModule(**OPTIONS)
    mc.run_host_claim(mod)
    assert mod.result["changed"] is True and mod.result["dialect"] == "bmo"
    spec = fake.get("hostclaims", NS, "web")["spec"]
    assert spec == {
        "poweredOn": False,
        "hostSelector": {
            "matchLabels": {"pool": "a"},
            "matchExpressions": [
                {"key": "rack", "operator": "in", "values": ["r1"]},
                {"key": "gpu", "operator": "!", "values": []},
            ],
            "inNamespace": "infra",
        },
        "image": dict(IMAGE, checksumType="sha256", format="qcow2"),
        "userData": {"name": "ud", "namespace": NS},
        "failureDomain": "fd-1",
    }
    record = mod.result["claim"]
    assert record["online"] is False and record["host"] is None and record["host_selector"] == spec["hostSelector"]
    assert set(record) == set(RECORD_KEYS) | set(m3view.METAL3_KEYS)

    again = StubModule(**OPTIONS)
    before = len(writes(fake))
    mc.run_host_claim(again)
    assert again.result["changed"] is False and len(writes(fake)) == before and "diff" not in again.result


def test_host_claim_updates_only_what_changes_and_keeps_consumer_ref(fake):
    mc.run_host_claim(StubModule(**OPTIONS))
    fake.write("hostclaims", NS, "web", {"spec": {"consumerRef": {"kind": "Metal3Machine", "name": "m"}}})
    mod = StubModule(online=True, failure_domain="", in_namespace="infra")
    mc.run_host_claim(mod)
    assert mod.result["changed"] is True
    (patch,) = [request[2] for request in writes(fake) if request[0] == "PATCH"]
    assert patch == {"spec": {"poweredOn": True, "failureDomain": None}}
    spec = fake.get("hostclaims", NS, "web")["spec"]
    assert spec["consumerRef"] == {"kind": "Metal3Machine", "name": "m"} and "failureDomain" not in spec
    assert mod.result["diff"]["before"]["spec"]["poweredOn"] is False
    assert mod.result["diff"]["after"]["spec"]["poweredOn"] is True


def test_check_mode_on_a_bmo_claim_reports_and_writes_nothing(fake):
    mod = StubModule(check_mode=True, **OPTIONS)
    mc.run_host_claim(mod)
    assert mod.result["changed"] is True and writes(fake) == []
    assert mod.result["diff"]["before"] == {} and mod.result["diff"]["after"]["spec"]["poweredOn"] is False
    assert mod.result["claim"]["name"] == "web" and fake.get("hostclaims", NS, "web") is None


def test_a_claim_written_by_hand_in_another_spelling_is_left_as_it_is(fake):
    """BMO's controller reads ``In`` (it lower-cases); only the wire form decides whether anything changes."""
    hand = {
        "metadata": {"name": "web", "namespace": NS},
        "spec": {
            "poweredOn": True,
            "hostSelector": {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]},
        },
    }
    fake.add("hostclaims", hand)
    mod = StubModule(
        online=True, host_selector={"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}
    )
    mc.run_host_claim(mod)
    assert mod.result["changed"] is False and writes(fake) == []


@pytest.mark.parametrize(
    "options,message",
    [
        ({"node_reuse": "pool"}, "HostClaim t1/web: nodeReuse cannot be set on a baremetal-operator HostClaim"),
        (
            {"custom_deploy": "m", "image": dict(IMAGE)},
            "HostClaim t1/web: spec: image and customDeploy are alternatives",
        ),
        ({"failure_domain": "bad value!"}, "HostClaim t1/web: option failure_domain: spec.failureDomain: 'bad value!'"),
        ({"in_namespace": "Not_A_Namespace"}, "HostClaim t1/web: option in_namespace: spec.hostSelector.inNamespace"),
        (
            {"user_data_secret": "missing"},
            "HostClaim t1/web: option user_data_secret: spec.userData: Secret 'missing' was not found",
        ),
        (
            {"host_selector": {"matchExpressions": [{"key": "a", "operator": "in", "values": ["x"]}]}},
            "HostClaim t1/web: option host_selector: spec.hostSelector.matchExpressions[0]: unknown operator 'in'",
        ),
    ],
)
def test_what_a_bmo_claim_cannot_say_is_one_error_and_nothing_is_written(fake, options, message):
    with pytest.raises(InvalidInput) as err:
        mc.run_host_claim(StubModule(**options))
    assert err.value.message.startswith(message), err.value.message
    assert writes(fake) == []


@pytest.mark.parametrize(
    "option,value,field",
    [
        ("in_namespace", "infra", "hostSelector.inNamespace"),
        ("failure_domain", "fd", "failureDomain"),
        ("custom_deploy", "m", "customDeploy"),
    ],
)
def test_bmo_only_options_are_refused_on_the_proposals_dialect(fake, option, value, field):
    fake.openapi = openapi_document(["online", "kind", "hostSelector", "nodeReuse"])
    with pytest.raises(InvalidInput) as err:
        mc.run_host_claim(StubModule(**{option: value}))
    assert err.value.message == (
        "HostClaim t1/web: %s cannot be set on a proposal HostClaim (this cluster's dialect)" % field
    )
    assert writes(fake) == []


def test_the_proposals_dialect_is_unchanged(fake):
    fake.openapi = openapi_document(["online", "kind", "hostSelector", "nodeReuse", "userData"])
    mod = StubModule(online=True, node_reuse="pool", user_data_secret="ud")
    mc.run_host_claim(mod)
    assert mod.result["dialect"] == "proposal"
    assert fake.get("hostclaims", NS, "web")["spec"] == {
        "online": True,
        "kind": "baremetal",
        "nodeReuse": "pool",
        "userData": {"name": "ud"},
    }


def test_a_forced_dialect_the_cluster_does_not_serve_and_a_cluster_serving_none_are_refused(fake):
    with pytest.raises(InvalidInput) as err:
        mc.run_host_claim(StubModule(dialect="proposal", online=True))
    assert "option dialect: is proposal but the cluster serves the bmo HostClaim" in err.value.message
    fake.openapi = None
    with pytest.raises(BackendError) as err:
        mc.run_host_claim(StubModule(online=True))
    assert "serves none" in err.value.message
    with pytest.raises(BackendError):
        mc.claim_info(StubModule())
    assert writes(fake) == []


def test_a_proposal_claim_left_on_a_bmo_cluster_is_a_conflict(fake):
    fake.add("hostclaims", {"metadata": {"name": "web", "namespace": NS}, "spec": {}})
    with pytest.raises(Conflict) as err:
        mc.run_host_claim(StubModule(online=True))
    assert "HostClaim t1/web: is not of baremetal-operator's dialect" in err.value.message
    assert writes(fake) == []


def test_waiting_for_a_bmo_claim_reads_the_bound_host(fake):
    fake.add("hostclaims", bmo_claim())
    mod = StubModule(online=True, image=None, wait=True, wait_for="associated", wait_timeout=5)
    mc.run_host_claim(mod)
    assert mod.result["claim"]["host"] == "h1" and mod.result["changed"] is False


def test_claim_info_reads_bmo_claims(fake):
    fake.add("hostclaims", bmo_claim())
    other = bmo_claim(bound=False)
    other["metadata"]["name"] = "db"
    fake.add("hostclaims", other)
    mod = StubModule()
    mod.params.update(name=None, namespaces=None)
    records = mc.claim_info(mod)
    assert mod.result["dialect"] == "bmo"
    assert [(r["name"], r["host"], r["addresses"]) for r in records] == [
        ("db", None, []),
        ("web", "h1", HOST_STATUS["addresses"]),
    ]


def test_host_release_on_bmo(fake):
    fake.add("hostclaims", bmo_claim())
    with pytest.raises(InvalidInput) as err:
        mc.run_host_release(StubModule(node_reuse="pool"))
    assert err.value.message.startswith("HostClaim t1/web: nodeReuse cannot be set on a baremetal-operator HostClaim")
    assert writes(fake) == [] and fake.get("hostclaims", NS, "web") is not None

    check = StubModule(check_mode=True)
    mc.run_host_release(check)
    assert check.result["changed"] is True and writes(fake) == []
    assert check.result["released"] is True and check.result["host"] == "h1"

    mod = StubModule()
    mc.run_host_release(mod)
    assert mod.result["released"] is True and mod.result["host"] == "h1" and mod.result["dialect"] == "bmo"
    assert mod.result["claim"]["addresses"] == HOST_STATUS["addresses"]
    # BMO's finalizer keeps the claim until the binder lets it go; deleting again changes nothing
    assert fake.get("hostclaims", NS, "web")["metadata"]["deletionTimestamp"]
    again = StubModule()
    mc.run_host_release(again)
    assert again.result["changed"] is False


def test_bmo_spec_patch_is_empty_for_an_equal_model():
    current = mc.claim_dialect.normalise_bmo_spec({"poweredOn": True, "image": IMAGE}, "web", NS)
    assert mc.bmo_spec_patch({"poweredOn": True, "image": IMAGE}, current, copy.deepcopy(current), "web", NS) == {}
    wanted = dict(current, image=None, customDeploy={"method": "m"})
    assert mc.bmo_spec_patch({"poweredOn": True, "image": IMAGE}, current, wanted, "web", NS) == {
        "customDeploy": {"method": "m"},
        "image": None,
    }


OPTION_VALUES = st.fixed_dictionaries(
    {},
    optional={
        "online": st.booleans(),
        "host_selector": st.fixed_dictionaries(
            {},
            optional={
                "matchLabels": st.dictionaries(st.sampled_from(["pool", "x.io/t"]), st.sampled_from(["a", "b"])),
                "matchExpressions": st.lists(
                    st.one_of(
                        st.builds(
                            lambda key, operator, values: {"key": key, "operator": operator, "values": values},
                            st.sampled_from(["rack", "gpu"]),
                            st.sampled_from(["In", "NotIn"]),
                            st.lists(st.sampled_from(["r1", "r2"]), min_size=1, max_size=2, unique=True),
                        ),
                        st.builds(
                            lambda key, operator: {"key": key, "operator": operator, "values": None},
                            st.sampled_from(["rack", "gpu"]),
                            st.sampled_from(["Exists", "DoesNotExist"]),
                        ),
                    ),
                    max_size=2,
                ),
            },
        ),
        "image": st.just(dict(IMAGE, checksum_type="auto", format=None)),
        "user_data_secret": st.sampled_from(["ud", ""]),
        "in_namespace": st.sampled_from(["infra", ""]),
        "failure_domain": st.sampled_from(["fd-1", "fd-2", ""]),
    },
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=OPTION_VALUES, second=OPTION_VALUES)
def test_any_options_twice_on_a_bmo_claim_change_nothing_the_second_time(monkeypatch, first, second):
    fake = FakeKube()
    fake.openapi = BMO_OPENAPI
    fake.add("namespaces", {"metadata": {"name": NS}})
    fake.add("secrets", {"metadata": {"name": "ud", "namespace": NS}})
    monkeypatch.setattr(mc, "_client", lambda mod: KubeIO(FakeApiClient(fake)))
    for options in (first, second):
        mc.run_host_claim(StubModule(**options))
        stored = fake.get("hostclaims", NS, "web")
        model = mc.claim_dialect.normalise_bmo_spec(stored["spec"], "web", NS)
        if "online" in options:
            assert model["online"] is options["online"]
        for key, option in (("inNamespace", "in_namespace"), ("failureDomain", "failure_domain")):
            if option in options:
                assert model[key] == (options[option] or None)
        before = len(writes(fake))
        again = StubModule(**options)
        mc.run_host_claim(again)
        assert again.result["changed"] is False and len(writes(fake)) == before
