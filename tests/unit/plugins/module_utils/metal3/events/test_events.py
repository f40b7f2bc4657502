# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The event source's model (metal3/events/changes.py): names and states only, and which changes need a binder pass."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3 import api as m3api
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import view as m3view
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.events import changes as events
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.metal3_objects import (
    BMC_VALUES,
    make_claim,
    make_host,
    ref_to,
)


def bound_proposal_claim(name="web-1", namespace="tenant-a", host="h1"):
    return make_claim(
        name=name,
        namespace=namespace,
        labels={m3api.BINDING_LABEL: host},
        status={
            "conditions": [
                {"type": "AssociateBMH", "status": "True", "reason": "Bound", "message": m3view.BOUND_PREFIX + host}
            ]
        },
    )


def bmo_claim(name="db-1", namespace="tenant-b", host=None):
    status = {"conditions": [{"type": "Associated", "status": "False", "reason": "NoBareMetalHost"}]}
    if host:
        status = {
            "bareMetalHost": {"namespace": "infra", "name": host},
            "conditions": [{"type": "Associated", "status": "True", "reason": "Associated"}],
        }
    return make_claim(name=name, namespace=namespace, spec={"poweredOn": False}, status=status)


def test_claim_states_of_both_dialects():
    assert events.claim_state(make_claim())["state"] == events.PENDING
    bound = events.claim_state(bound_proposal_claim())
    assert (bound["state"], bound["host"], bound["dialect"], bound["reason"]) == ("bound", "h1", "proposal", "Bound")
    pending_bmo = events.claim_state(bmo_claim())
    assert (pending_bmo["state"], pending_bmo["dialect"], pending_bmo["reason"]) == (
        "pending",
        "bmo",
        "NoBareMetalHost",
    )
    bound_bmo = events.claim_state(bmo_claim(host="h2"))
    assert (bound_bmo["state"], bound_bmo["host"]) == ("bound", "h2")
    assert events.claim_state(make_claim(deleting=True))["state"] == events.DELETING


def test_a_forged_binding_label_is_no_binding():
    claim = make_claim(labels={m3api.BINDING_LABEL: "h1"})
    assert events.claim_state(claim)["state"] == events.PENDING


def test_pending_and_deleting_claims_need_a_pass_a_bound_status_write_does_not():
    tenancy = events.TenancyState()
    event, needed = tenancy.change("claim", events.ADDED, make_claim())
    assert needed == {"tenant-a"}
    assert event["hostclaim"]["state"] == "pending"
    # the binder's own status write: bound, same generation -> no pass
    claim = bound_proposal_claim()
    event, needed = tenancy.change("claim", events.MODIFIED, claim)
    assert event["hostclaim"]["state"] == "bound"
    assert needed == set()
    # the tenant changes the spec (generation) -> pass
    claim["metadata"]["generation"] = 2
    assert tenancy.change("claim", events.MODIFIED, claim)[1] == {"tenant-a"}
    # a reboot request -> pass
    claim["metadata"]["annotations"]["host.metal3.io/reboot"] = ""
    assert tenancy.change("claim", events.MODIFIED, claim)[1] == {"tenant-a"}
    # deleted with its finalizer -> pass (release)
    claim["metadata"]["deletionTimestamp"] = "2026-01-02T00:00:00Z"
    assert tenancy.change("claim", events.MODIFIED, claim)[1] == {"tenant-a"}
    # gone after being bound -> pass (sweep); a pending claim gone -> none
    event, needed = tenancy.change("claim", events.DELETED, claim)
    assert (event["hostclaim"]["state"], needed) == ("gone", {"tenant-a"})
    tenancy.change("claim", events.ADDED, make_claim(name="x"))
    assert tenancy.change("claim", events.DELETED, make_claim(name="x"))[1] == set()
    assert not tenancy.claims


def test_the_first_listing_asks_for_every_namespace_with_claims_or_bound_hosts():
    tenancy = events.TenancyState()
    assert tenancy.change("claim", events.LISTED, bound_proposal_claim(namespace="t1"))[1] == {"t1"}
    host = make_host(consumer=ref_to(make_claim(namespace="t2")))
    assert tenancy.change("host", events.LISTED, host)[1] == {"t2"}
    assert tenancy.claim_namespaces() == {"t1", "t2"}


def test_a_host_that_becomes_free_asks_for_the_namespaces_with_pending_claims():
    tenancy = events.TenancyState()
    tenancy.change("claim", events.ADDED, make_claim(namespace="t1"))
    tenancy.change("claim", events.ADDED, bound_proposal_claim(namespace="t2"))
    busy = make_host(state="provisioning", resource_version="1")
    assert tenancy.change("host", events.ADDED, busy)[1] == set()
    free = make_host(state="available", resource_version="2")
    event, needed = tenancy.change("host", events.MODIFIED, free)
    assert event["baremetalhost"]["free"] is True
    assert needed == {"t1"}
    # a host that stays free and changes nothing the binder reads asks for nothing
    again = make_host(state="available", resource_version="3")
    assert tenancy.change("host", events.MODIFIED, again)[1] == set()


def test_namespaces_with_relayed_claims_are_those_polled_for_the_other_cluster():
    tenancy = events.TenancyState()
    relayed = make_claim(name="r", namespace="t1", spec={"online": False, "credentials": "hosts-kubeconfig"})
    tenancy.change("claim", events.ADDED, relayed)
    tenancy.change("claim", events.ADDED, make_claim(name="local", namespace="t2"))
    tenancy.change("claim", events.ADDED, bmo_claim(namespace="t3"))
    assert tenancy.relayed_namespaces() == {"t1"}
    # the flag is the source's own: no event carries it, nor the Secret's name
    event, unused = tenancy.change("claim", events.MODIFIED, relayed)
    assert "relayed" not in event["hostclaim"] and "hosts-kubeconfig" not in json.dumps(event)
    tenancy.change("claim", events.DELETED, relayed)
    assert tenancy.relayed_namespaces() == set()


def test_a_bound_host_changing_state_asks_for_its_claims_namespace():
    tenancy = events.TenancyState()
    consumer = ref_to(make_claim(namespace="t3"))
    tenancy.change("host", events.ADDED, make_host(consumer=consumer, state="provisioning"))
    event, needed = tenancy.change("host", events.MODIFIED, make_host(consumer=consumer, state="provisioned"))
    assert needed == {"t3"}
    assert event["baremetalhost"]["consumer"] == {"namespace": "t3", "name": "web-1"}
    assert tenancy.change("host", events.DELETED, make_host(consumer=consumer))[1] == {"t3"}


def test_namespaces_outside_the_scope_are_ignored():
    tenancy = events.TenancyState(namespaces=["t1"], host_namespaces=["infra"])
    assert tenancy.change("claim", events.ADDED, make_claim(namespace="t9")) == (None, set())
    assert tenancy.change("host", events.ADDED, make_host(namespace="other")) == (None, set())
    host = make_host(consumer=ref_to(make_claim(namespace="t9")), state="provisioned")
    assert tenancy.change("host", events.ADDED, host)[1] == set()


def test_unknown_kinds_and_changes_are_refused():
    with pytest.raises(ValueError):
        events.TenancyState().change("claim", "BOOKMARK", make_claim())
    with pytest.raises(ValueError):
        events.TenancyState().change("node", events.ADDED, make_claim())


EVENT_KEYS = {
    "hostclaim": {"change", "namespace", "name", "dialect", "state", "host", "ready", "reason"},
    "baremetalhost": {"change", "namespace", "name", "state", "powered_on", "consumer", "free", "deleting"},
}


def host_with_bmc_everywhere():
    """A host whose labels, annotations and status repeat its BMC data (an owner's mistake or a hostile value)."""
    host = make_host(
        labels={"bmc": "10.99.88.77", "user": "admin-zq"},
        annotations={"note": "hunter2-zq", "bmc.example.com/secret": "h1-bmc-secret-zq"},
        consumer=ref_to(make_claim()),
        error_message="cannot reach redfish-virtualmedia+https://10.99.88.77/redfish/v1/Systems/1 as admin-zq",
        error_type="registration error",
    )
    host["status"]["lastUpdated"] = "2026-01-01T00:00:00Z"
    return host


@pytest.mark.parametrize("change", events.CHANGES)
def test_no_event_carries_bmc_data_or_more_than_names_and_states(change):
    tenancy = events.TenancyState()
    claim = bound_proposal_claim()
    claim["metadata"]["annotations"]["note"] = "admin-zq hunter2-zq"
    claim["metadata"]["labels"]["bmc"] = "10.99.88.77"
    seen = [
        tenancy.change("host", change, host_with_bmc_everywhere())[0],
        tenancy.change("claim", change, claim)[0],
        tenancy.change("claim", change, bmo_claim(host="h1"))[0],
    ]
    text = json.dumps(seen)
    assert not [value for value in BMC_VALUES if value in text]
    for event in seen:
        ((kind, body),) = event.items()
        assert set(body) == EVENT_KEYS[kind]
        for value in body.values():
            assert value is None or isinstance(value, (str, bool)) or set(value) == {"namespace", "name"}


@given(
    labels=st.dictionaries(st.text(max_size=8), st.text(max_size=30), max_size=3),
    annotations=st.dictionaries(st.text(max_size=8), st.text(max_size=30), max_size=3),
    state=st.one_of(st.none(), st.text(max_size=12)),
    change=st.sampled_from(events.CHANGES),
)
def test_host_events_never_repeat_a_label_or_annotation_value(labels, annotations, state, change):
    secret = "S3cr3t-BMC-value"
    labels = dict((k, v + secret) for k, v in labels.items())
    annotations = dict((k, secret + v) for k, v in annotations.items())
    host = make_host(labels=labels, annotations=annotations, state=state)
    event = events.TenancyState().change("host", change, host)[0]
    assert secret not in json.dumps(event)
