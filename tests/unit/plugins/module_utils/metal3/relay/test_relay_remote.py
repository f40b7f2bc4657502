# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A claim relayed to another cluster (relay.remote): the remote claim in either dialect, its Secret copies, the
status and metadata coming back, and the reasons a relay that cannot work gives."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    BackendError,
    Conflict,
    Forbidden,
    InvalidInput,
    NotFound,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import apply_merge_patch
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import BINDING_LABEL, IMPORTED_LABELS
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.dialect import BMO, PROPOSAL
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.parsed import parse_claim
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.view import claim_record
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.relay import remote as relay
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.relay.kubeconfig import RemoteAccess
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.metal3_objects import (
    IMAGE,
    LATER,
    NOW,
    make_claim,
)

SPEC = {
    "online": True,
    "kind": "baremetal",
    "credentials": {"name": "hosts-kubeconfig"},
    "hostSelector": {"matchLabels": {"role": "worker"}},
    "image": IMAGE,
    "userData": {"name": "cloud-init"},
}


def local(spec=None, annotations=None, **kwargs):
    return make_claim(spec=dict(SPEC, **(spec or {})), annotations=annotations, **kwargs)


def remote_for(claim, dialect=PROPOSAL, namespace="hosts-a"):
    body = relay.remote_claim(parse_claim(claim), dialect, namespace)
    body["metadata"].update(resourceVersion="7", uid="remote-uid")
    return body


# ------------------------------------------------------------------ names


def test_the_remote_name_is_stable_unique_per_uid_and_a_label_value():
    one = relay.remote_claim_name("tenant-a", "web-1", "u1")
    assert one == relay.remote_claim_name("tenant-a", "web-1", "u1") and one.startswith("web-1-")
    assert one != relay.remote_claim_name("tenant-a", "web-1", "u2")
    assert one != relay.remote_claim_name("tenant-b", "web-1", "u1")
    long_name = relay.remote_claim_name("ns", "a" * 250 + ".x", "u")
    assert len(long_name) <= 63 and long_name[0].isalnum()


@given(st.text(min_size=1, max_size=253), st.text(max_size=63), st.uuids())
def test_any_remote_name_is_a_valid_label_value(name, namespace, uid):
    result = relay.remote_claim_name(namespace, name, str(uid))
    assert len(result) <= 63 and result.replace("-", "").isalnum() and result == result.lower()
    assert result[0].isalnum() and result[-1].isalnum()


# ------------------------------------------------------------------ downward


def test_a_proposal_remote_claim_carries_the_spec_the_copies_and_the_origin():
    claim = local()
    body = relay.remote_claim(parse_claim(claim), PROPOSAL, "hosts-a")
    name = body["metadata"]["name"]
    assert body["metadata"]["namespace"] == "hosts-a"
    assert body["metadata"]["labels"] == {relay.ORIGIN_UID_LABEL: "uid-tenant-a-web-1"}
    assert body["metadata"]["annotations"][relay.ORIGIN_ANNOTATION] == "tenant-a/web-1"
    assert body["spec"]["online"] is True and body["spec"]["hostSelector"] == {"matchLabels": {"role": "worker"}}
    assert body["spec"]["userData"] == {"name": name + "-userdata"}
    assert "credentials" not in body["spec"]  # the kubeconfig never travels


def test_a_bmo_remote_claim_speaks_powered_on_and_namespaced_secret_references():
    body = relay.remote_claim(parse_claim(local()), BMO, "hosts-a")
    assert body["spec"]["poweredOn"] is True and "online" not in body["spec"]
    assert body["spec"]["userData"] == {"name": body["metadata"]["name"] + "-userdata", "namespace": "hosts-a"}
    assert body["spec"]["image"]["url"] == IMAGE["url"]


def test_node_reuse_cannot_be_relayed_to_a_bmo_cluster():
    with pytest.raises(InvalidInput) as caught:
        relay.remote_claim(parse_claim(local(spec={"nodeReuse": "pool"})), BMO, "hosts-a")
    assert caught.value.details["reason"] == relay.REMOTE_SPEC_UNSUPPORTED and "nodeReuse" in caught.value.cause
    assert (
        relay.remote_claim(parse_claim(local(spec={"nodeReuse": "pool"})), PROPOSAL, "hosts-a")["spec"]["nodeReuse"]
        == "pool"
    )


def test_an_unknown_dialect_is_refused():
    with pytest.raises(InvalidInput):
        relay.remote_claim(parse_claim(local()), "other", "hosts-a")


def test_reboot_and_inspection_requests_go_down_and_nothing_else():
    annotations = {"reboot.metal3.io": "", "host.metal3.io/inspect": "", "team": "blue", "reboot.metal3.io/x": "{}"}
    body = relay.remote_claim(parse_claim(local(annotations=annotations)), PROPOSAL, "hosts-a")
    meta = body["metadata"]["annotations"]
    assert meta["reboot.metal3.io"] == "" and meta["host.metal3.io/inspect"] == "" and "team" not in meta
    assert json.loads(meta[relay.PASSED_ANNOTATIONS]) == sorted(
        ["host.metal3.io/inspect", "reboot.metal3.io", "reboot.metal3.io/x"]
    )


def test_changes_follow_and_removed_requests_are_removed():
    claim = local(annotations={"reboot.metal3.io": ""})
    current = remote_for(claim)
    current["spec"]["nodeReuse"] = "set-by-hand"
    current["spec"]["unknownToTheRelay"] = True
    changed = local(spec={"online": False})
    patch = relay.remote_claim_patch(current, relay.remote_claim(parse_claim(changed), PROPOSAL, "hosts-a"), changed)
    assert patch["metadata"]["resourceVersion"] == "7"
    after = apply_merge_patch(current, patch)
    assert after["spec"]["online"] is False and "nodeReuse" not in after["spec"]
    assert after["spec"]["unknownToTheRelay"] is True
    assert "reboot.metal3.io" not in after["metadata"]["annotations"]


def test_a_bmo_remote_keeps_the_consumer_ref_its_controller_wrote():
    claim = local()
    current = remote_for(claim, BMO)
    current["spec"]["consumerRef"] = {"name": "x"}
    current["spec"]["failureDomain"] = "by-hand"
    patch = relay.remote_claim_patch(current, relay.remote_claim(parse_claim(claim), BMO, "hosts-a"), claim)
    assert patch["spec"] == {"failureDomain": None}


def test_a_remote_claim_in_step_needs_no_patch():
    claim = local()
    assert (
        relay.remote_claim_patch(remote_for(claim), relay.remote_claim(parse_claim(claim), PROPOSAL, "hosts-a"), claim)
        == {}
    )


def test_a_remote_claim_of_someone_else_is_never_changed():
    claim = local()
    other = remote_for(local(uid="another-uid"))
    with pytest.raises(Conflict) as caught:
        relay.remote_claim_patch(other, relay.remote_claim(parse_claim(claim), PROPOSAL, "hosts-a"), claim)
    assert caught.value.details["reason"] == relay.REMOTE_NAME_TAKEN
    assert relay.failure_reason(caught.value, "tenant-a/k", "hosts-a")[0] == relay.REMOTE_NAME_TAKEN


def test_a_claim_without_uid_owns_nothing():
    assert not relay.owned_by(remote_for(local()), local(uid=""))


def test_secret_copies_keep_type_and_data_and_follow_changes():
    claim = local()
    source = {"type": "Opaque", "data": {"userData": "YQ=="}, "metadata": {"name": "cloud-init"}}
    wanted = relay.remote_secret(source, claim, "web-1-abc", "userData", "hosts-a")
    assert wanted["metadata"]["name"] == "web-1-abc-userdata" and wanted["data"] == {"userData": "YQ=="}
    assert wanted["metadata"]["labels"][relay.FIELD_LABEL] == "userData" and relay.owned_by(wanted, claim)
    current = dict(
        wanted, data={"userData": "Yg==", "old": "eA=="}, metadata=dict(wanted["metadata"], resourceVersion="3")
    )
    patch = relay.remote_secret_patch(current, wanted, claim)
    assert patch["data"] == {"userData": "YQ==", "old": None} and patch["metadata"]["resourceVersion"] == "3"
    assert relay.remote_secret_patch(dict(current, type="kubernetes.io/tls"), wanted, claim) is None
    assert relay.remote_secret_patch(dict(wanted, metadata=dict(wanted["metadata"])), wanted, claim) == {}


def test_stale_copies_are_the_relays_own_that_no_field_uses():
    claim = local()
    own = relay.remote_secret({"data": {}}, claim, "r", "userData", "ns")
    stale = relay.remote_secret({"data": {}}, claim, "r", "metaData", "ns")
    foreign = relay.remote_secret({"data": {}}, local(uid="x"), "r", "networkData", "ns")
    assert relay.stale_remote_secrets([own, stale, foreign], claim, ["r-userdata"]) == [stale]


# ------------------------------------------------------------------ upward


def bound_proposal_remote(claim, ready=("True", "Provisioned", "the host is provisioned and powered on")):
    remote = remote_for(claim)
    remote["metadata"]["labels"][BINDING_LABEL] = "h7"
    remote["metadata"]["labels"]["site"] = "paris"
    remote["metadata"]["annotations"][IMPORTED_LABELS] = json.dumps(["site"])
    remote["metadata"]["annotations"]["export.hostclaim.metal3.io/rack"] = "r1"
    remote["status"] = {
        "addresses": [{"type": "InternalIP", "address": "192.0.2.7"}],
        "nics": [{"name": "eth0", "MAC": "00:11:22:33:44:55", "ip": "192.0.2.7"}],
        "bootMACAddress": "00:11:22:33:44:55",
        "poweredOn": True,
        "conditions": [
            {"type": "AssociateBMH", "status": "True", "reason": "Associated", "message": "bound to host h7"},
            {"type": "Ready", "status": ready[0], "reason": ready[1], "message": ready[2]},
        ],
        "errorMessage": "never copied",
    }
    return remote


def test_a_bound_proposal_remote_gives_host_addresses_nics_power_and_readiness():
    claim = local()
    status = relay.local_status(bound_proposal_remote(claim), None, NOW)
    assert status["addresses"] == [{"type": "InternalIP", "address": "192.0.2.7"}]
    assert status["nics"][0]["MAC"] == "00:11:22:33:44:55" and status["poweredOn"] is True
    assert status["bootMACAddress"] == "00:11:22:33:44:55" and "errorMessage" not in status
    conditions = dict((c["type"], c) for c in status["conditions"])
    assert conditions["AssociateBMH"]["message"] == "bound to host h7"
    assert conditions["Ready"]["status"] == "True" and conditions["Ready"]["reason"] == "Provisioned"
    assert conditions["Ready"]["message"].startswith(relay.REMOTE_PREFIX)
    # the local view reads it like a local claim once the binding label agrees
    labelled = apply_merge_patch(claim, relay.local_label_patch(claim, bound_proposal_remote(claim)))
    record = claim_record(dict(labelled, status=status))
    assert record["host"] == "h7" and record["ready"] and record["provisioning_state"] == "provisioned"
    assert labelled["metadata"]["annotations"][relay.REMOTE_ANNOTATION].startswith("hosts-a/web-1-")


def test_a_status_that_did_not_change_keeps_its_times():
    claim = local()
    first = relay.local_status(bound_proposal_remote(claim), None, NOW)
    again = relay.local_status(bound_proposal_remote(claim), first, LATER)
    assert again == first
    changed = relay.local_status(bound_proposal_remote(claim, ("False", "Provisioning", "writing")), first, LATER)
    assert changed["lastUpdated"] == LATER
    ready = next(c for c in changed["conditions"] if c["type"] == "Ready")
    assert ready["lastTransitionTime"] == LATER and ready["reason"] == "Provisioning"


def test_a_bmo_remote_gives_the_host_from_its_status_and_the_provisioned_reason():
    claim = local()
    remote = remote_for(claim, BMO)
    remote["metadata"]["annotations"]["hostclaim.metal3.io/host-status"] = json.dumps(
        {"addresses": [{"type": "InternalIP", "address": "192.0.2.9"}], "bootMACAddress": "00:00:00:00:00:09"}
    )
    remote["status"] = {
        "bareMetalHost": {"namespace": "hosts-a", "name": "h9"},
        "poweredOn": False,
        "conditions": [
            {"type": "Associated", "status": "True", "reason": "Associated", "message": ""},
            {"type": "Provisioned", "status": "False", "reason": "Provisioning", "message": "writing the image"},
            {"type": "Ready", "status": "False", "reason": "Provisioning", "message": "writing the image"},
        ],
    }
    status = relay.local_status(remote, None, NOW)
    conditions = dict((c["type"], c) for c in status["conditions"])
    assert conditions["AssociateBMH"]["message"] == "bound to host h9"
    assert conditions["Ready"]["reason"] == "Provisioning" and status["poweredOn"] is False
    assert status["addresses"] == [{"type": "InternalIP", "address": "192.0.2.9"}]


def test_an_unbound_remote_gives_its_reason_prefixed_and_no_host():
    claim = local()
    remote = remote_for(claim)
    remote["status"] = {
        "conditions": [{"type": "AssociateBMH", "status": "False", "reason": "NoSharedHost", "message": "none"}]
    }
    status = relay.local_status(remote, None, NOW)
    associate = status["conditions"][0]
    assert (associate["status"], associate["reason"]) == ("False", "NoSharedHost")
    assert associate["message"] == relay.REMOTE_PREFIX + "none" and status["addresses"] == []
    assert relay.local_label_patch(claim, remote).get("metadata", {}).get("labels") is None


def test_a_remote_reason_that_is_no_identifier_is_replaced_and_long_messages_are_cut():
    claim = local()
    remote = remote_for(claim)
    remote["status"] = {
        "conditions": [{"type": "AssociateBMH", "status": "False", "reason": "no such\nthing", "message": "x" * 2000}]
    }
    associate = relay.local_status(remote, None, NOW)["conditions"][0]
    assert associate["reason"] == "RemotePending" and len(associate["message"]) == relay.MAX_MESSAGE


def test_a_forged_remote_binding_label_is_not_a_host():
    claim = local()
    remote = remote_for(claim)
    remote["metadata"]["labels"][BINDING_LABEL] = "h1"  # the remote tenant may write labels, never the status
    assert relay.bound_remote_host(remote) is None and relay.remote_metadata(remote) is None


def test_the_binding_label_follows_and_is_erased_when_the_remote_is_gone():
    claim = local()
    bound = apply_merge_patch(claim, relay.local_label_patch(claim, bound_proposal_remote(claim)))
    assert bound["metadata"]["labels"][BINDING_LABEL] == "h7"
    assert relay.local_label_patch(bound, bound_proposal_remote(claim)) == {}
    gone = apply_merge_patch(bound, relay.local_label_patch(bound, None))
    assert BINDING_LABEL not in gone["metadata"]["labels"]
    assert relay.REMOTE_ANNOTATION not in gone["metadata"]["annotations"]


def test_remote_metadata_is_what_its_binder_imported_from_the_host():
    meta = relay.remote_metadata(bound_proposal_remote(local()))
    assert meta == {"labels": {"site": "paris"}, "annotations": {"export.hostclaim.metal3.io/rack": "r1"}}


# ------------------------------------------------------------------ failures

ACCESS = RemoteAccess("https://10.0.0.1:6443", "hosts-a", token="tok-0123456789abcdef")


@pytest.mark.parametrize(
    "error, reason",
    [
        (
            InvalidInput("Secret tenant-a/k", "the kubeconfig is empty", {"reason": relay.CREDENTIALS_INVALID}),
            relay.CREDENTIALS_INVALID,
        ),
        (NotFound("Secret tenant-a/k", "gone", {"reason": relay.CREDENTIALS_NOT_FOUND}), relay.CREDENTIALS_NOT_FOUND),
        (
            BackendError("Kubernetes API https://10.0.0.1:6443", "the credentials were refused", {"status": 401}),
            relay.REMOTE_UNAUTHORIZED,
        ),
        (
            Forbidden("HostClaims in namespace hosts-a", "forbidden: User tenant", {"status": 403}),
            relay.REMOTE_FORBIDDEN,
        ),
        (
            BackendError("Kubernetes API https://10.0.0.1:6443", "cannot connect", {"service_unreachable": True}),
            relay.REMOTE_UNREACHABLE,
        ),
        (BackendError("Kubernetes API https://10.0.0.1:6443", "read timed out"), relay.REMOTE_UNREACHABLE),
        (BackendError("HostClaim API", "none", {"reason": relay.REMOTE_NO_API}), relay.REMOTE_NO_API),
        (Conflict("HostClaim hosts-a/x", "changed", {"status": 409}), "RemoteRetry"),
        (NotFound("HostClaims in namespace hosts-a", "not found", {"status": 404}), relay.REMOTE_NAMESPACE_NOT_FOUND),
        (BackendError("x", "boom", {"status": 500}), "RemoteError"),
        (
            InvalidInput(
                "HostClaim tenant-a/web-1", "cannot be relayed: nodeReuse", {"reason": relay.REMOTE_SPEC_UNSUPPORTED}
            ),
            relay.REMOTE_SPEC_UNSUPPORTED,
        ),
    ],
)
def test_each_failure_gives_one_reason_that_never_quotes_the_server_or_the_remote_api(error, reason):
    got, message = relay.failure_reason(error, "tenant-a/k", "hosts-a")
    assert got == reason and got in (*relay.REASONS, "RemoteRetry", "RemoteError")
    assert "10.0.0.1" not in message and "User tenant" not in message and message


def test_scrub_hides_every_secret_value():
    text = "token %s leaked" % ACCESS.token
    assert ACCESS.token not in relay.scrub(text, ACCESS.secret_values()) and "[hidden]" in relay.scrub(
        text, ACCESS.secret_values()
    )
    assert relay.scrub(None, ACCESS.secret_values()) is None


def test_is_relayed_and_the_names_the_claim_uses():
    claim = local()
    assert relay.is_relayed(claim) and not relay.is_relayed(make_claim())
    assert relay.credentials_name(parse_claim(claim)) == "hosts-kubeconfig"
    assert relay.data_secret_names(parse_claim(claim)) == {"userData": "cloud-init"}
