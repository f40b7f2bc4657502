# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The status baremetal-operator's HostClaim controller writes (metal3/claim/bmo_controller.py): cluster-api's Set
(transition times, order, observedGeneration), its summary into Ready, and each case of the controller."""

import datetime

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import bmo_controller as bs

T0 = datetime.datetime(2026, 11, 25, 0, 0, 0, 700000, tzinfo=datetime.timezone.utc)
T1 = T0 + datetime.timedelta(minutes=5)
S0, S1 = "2026-11-25T00:00:00Z", "2026-11-25T00:05:00Z"
HOST = {"namespace": "infra", "name": "node-0"}
NOT_YET = "* Synchronized: Condition not yet reported\n* Provisioned: Condition not yet reported"


def claim(generation=1, finalizers=None, status=None, deleting=False):
    metadata = {"name": "web", "namespace": "tenant", "generation": generation}
    if finalizers is not None:
        metadata["finalizers"] = finalizers
    if deleting:
        metadata["deletionTimestamp"] = "2026-11-25T00:06:00Z"
    return {"metadata": metadata, "spec": {"poweredOn": False}, "status": status or {}}


def cond(ctype, status, reason="", message="", when=S0, generation=1):
    return {
        "type": ctype,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": when,
        "observedGeneration": generation,
    }


def by_type(conditions):
    return {c["type"]: c for c in conditions}


def test_timestamp_is_utc_to_the_second():
    assert bs.timestamp(T0) == S0
    assert bs.timestamp(datetime.datetime(2026, 11, 25, 1, 0, 0, 999999)) == "2026-11-25T01:00:00Z"
    plus_two = datetime.timezone(datetime.timedelta(hours=2))
    assert bs.timestamp(datetime.datetime(2026, 11, 25, 2, 5, 0, tzinfo=plus_two)) == S1


def test_set_adds_a_new_condition_with_now_and_the_generation():
    result = bs.set_condition([], {"type": "Associated", "status": "True", "reason": "R"}, T0, 3)
    assert result == [cond("Associated", "True", "R", "", S0, 3)]


def test_set_keeps_the_transition_time_when_the_status_stays():
    before = [cond("Associated", "False", "A", "one", S0, 1)]
    result = bs.set_condition(before, {"type": "Associated", "status": "False", "reason": "B", "message": "two"}, T1, 2)
    assert result == [cond("Associated", "False", "B", "two", S0, 2)]
    assert before == [cond("Associated", "False", "A", "one", S0, 1)]  # not changed in place


def test_set_takes_now_when_the_status_flips():
    before = [cond("Associated", "False", "A", "one", S0, 1)]
    result = bs.set_condition(before, {"type": "Associated", "status": "True", "reason": "B"}, T1, 1)
    assert result == [cond("Associated", "True", "B", "", S1, 1)]


def test_set_orders_ready_first_then_alphabetically_with_paused_and_deleting_last():
    conditions = []
    for ctype in ("Synchronized", "Deleting", "Associated", "Paused", "Ready", "Available", "Provisioned"):
        conditions = bs.set_condition(conditions, {"type": ctype, "status": "True"}, T0, 1)
    assert [c["type"] for c in conditions] == [
        "Available",
        "Ready",
        "Associated",
        "Provisioned",
        "Synchronized",
        "Paused",
        "Deleting",
    ]


def test_set_does_not_reorder_when_nothing_changes():
    unsorted = [cond("Associated", "True", "R"), cond("Ready", "True", "R")]
    assert bs.set_condition(unsorted, {"type": "Associated", "status": "True", "reason": "R"}, T1, 1) == unsorted
    changed = bs.set_condition(unsorted, {"type": "Associated", "status": "True", "reason": "Q"}, T1, 1)
    assert [c["type"] for c in changed] == ["Ready", "Associated"]


def test_summary_with_nothing_reported():
    assert bs.summary_ready([]) == {
        "type": "Ready",
        "status": "Unknown",
        "reason": "UnknownReported",
        "message": "* Associated: Condition not yet reported\n" + NOT_YET,
    }


def test_summary_of_an_associated_claim_drops_the_info_and_keeps_the_unknowns():
    summary = bs.summary_ready([cond("Associated", "True", "BareMetalHostAssociated")])
    assert (summary["status"], summary["reason"], summary["message"]) == ("Unknown", "UnknownReported", NOT_YET)


def test_summary_issue_wins_with_the_generic_reason_and_the_reason_for_an_empty_message():
    summary = bs.summary_ready([cond("Associated", "False", "HostClaimDeleting")])
    assert summary["status"] == "False" and summary["reason"] == "IssuesReported"
    assert summary["message"] == "* Associated: HostClaimDeleting\n" + NOT_YET


def test_summary_true_lists_only_infos_with_a_message_in_the_given_order():
    conditions = [
        cond("Provisioned", "True", "P", "image written"),
        cond("Synchronized", "True", "S"),
        cond("Associated", "True", "A", "host node-0"),
        cond("Other", "False", "X", "not in scope"),
    ]
    assert bs.summary_ready(conditions) == {
        "type": "Ready",
        "status": "True",
        "reason": "InfoReported",
        "message": "* Associated: host node-0\n* Provisioned: image written",
    }


@pytest.mark.parametrize(
    ("message", "shown"),
    [
        ("two\nlines", "* Associated:\n  * two\n  * lines"),
        ("* a\n* b", "* Associated:\n  * a\n  * b"),
        ("* a\nplain", "* Associated:\n    * a\n  * plain"),
        ("x * y", "* Associated:\n  x * y"),  # Go's MatchString searches: " * " anywhere counts
        ("x *y", "* Associated: x *y"),
    ],
)
def test_summary_indents_multiline_or_bulleted_messages(message, shown):
    conditions = [cond("Associated", "False", "R", message), cond("Synchronized", "True"), cond("Provisioned", "True")]
    assert bs.summary_ready(conditions)["message"] == shown


def test_associated_from_a_new_claim():
    write = bs.associated_status(claim(), HOST, T0)
    assert write["finalizers"] == ["metal3.io/hostclaim"]
    assert write["status"] == {
        "bareMetalHost": HOST,
        "conditions": [
            cond("Ready", "Unknown", "UnknownReported", NOT_YET, S0),
            cond("Associated", "True", "BareMetalHostAssociated", "", S0),
        ],
    }


def test_associated_again_is_a_fixed_point_and_keeps_every_transition_time():
    first = bs.associated_status(claim(finalizers=["other"]), HOST, T0)
    assert first["finalizers"] == ["other", "metal3.io/hostclaim"]
    again = bs.associated_status(claim(finalizers=first["finalizers"], status=first["status"]), HOST, T1)
    assert again == first


def test_a_new_generation_updates_observed_generation_and_keeps_transition_times():
    first = bs.associated_status(claim(), HOST, T0)
    later = bs.associated_status(claim(generation=2, finalizers=first["finalizers"], status=first["status"]), HOST, T1)
    assert [(c["type"], c["lastTransitionTime"], c["observedGeneration"]) for c in later["status"]["conditions"]] == [
        ("Ready", S0, 2),
        ("Associated", S0, 2),
    ]


def test_an_associated_claim_keeps_its_recorded_host_and_other_status_fields():
    status = {"bareMetalHost": HOST, "poweredOn": True, "observedGeneration": 1}
    write = bs.associated_status(claim(status=status), {"namespace": "infra", "name": "node-9"}, T0)
    assert write["status"]["bareMetalHost"] == HOST and write["status"]["poweredOn"] is True
    assert "observedGeneration" not in write["status"]  # pruned by BMO's CRD


def test_no_host():
    write = bs.no_host_status(claim(), T0)
    assert write["finalizers"] == ["metal3.io/hostclaim"]
    assert write["status"] == {
        "conditions": [
            cond(
                "Ready",
                "False",
                "IssuesReported",
                "* Associated: No available host found: requeuing.\n" + NOT_YET,
                S0,
            ),
            cond("Associated", "False", "NoBareMetalHost", "No available host found: requeuing.", S0),
        ],
    }
    assert bs.no_host_status(claim(finalizers=write["finalizers"], status=write["status"]), T1) == write


def test_unbound_then_bound_flips_both_conditions_to_now():
    unbound = bs.no_host_status(claim(), T0)
    bound = bs.associated_status(
        claim(generation=2, finalizers=unbound["finalizers"], status=unbound["status"]), HOST, T1
    )
    conditions = by_type(bound["status"]["conditions"])
    assert conditions["Associated"] == cond("Associated", "True", "BareMetalHostAssociated", "", S1, 2)
    assert conditions["Ready"] == cond("Ready", "Unknown", "UnknownReported", NOT_YET, S1, 2)


def test_bound_then_unbound_keeps_unknown_ready_time_only_when_unchanged():
    bound = bs.associated_status(claim(), HOST, T0)
    lost = bs.no_host_status(claim(status={"conditions": bound["status"]["conditions"]}), T1)
    conditions = by_type(lost["status"]["conditions"])
    assert conditions["Associated"]["lastTransitionTime"] == S1
    assert conditions["Ready"]["status"] == "False" and conditions["Ready"]["lastTransitionTime"] == S1


def test_deleting_lets_the_host_go_and_drops_the_finalizer():
    bound = bs.associated_status(claim(finalizers=["hold"]), HOST, T0)
    write = bs.deleting_status(
        claim(generation=2, finalizers=bound["finalizers"], status=bound["status"], deleting=True), T1
    )
    assert write["finalizers"] == ["hold"]
    assert write["status"] == {
        "conditions": [
            cond("Ready", "False", "IssuesReported", "* Associated: HostClaimDeleting\n" + NOT_YET, S1, 2),
            cond("Associated", "False", "HostClaimDeleting", "", S1, 2),
        ],
    }


def test_deleting_an_unbound_claim_keeps_the_false_transition_times():
    unbound = bs.no_host_status(claim(), T0)
    write = bs.deleting_status(claim(finalizers=unbound["finalizers"], status=unbound["status"], deleting=True), T1)
    conditions = by_type(write["status"]["conditions"])
    assert (
        conditions["Associated"]["reason"] == "HostClaimDeleting"
        and conditions["Associated"]["lastTransitionTime"] == S0
    )
    assert conditions["Ready"]["message"].startswith("* Associated: HostClaimDeleting\n")
    assert conditions["Ready"]["lastTransitionTime"] == S0
    assert write["finalizers"] == []


def test_provisioned_claims_only_get_the_finalizer_and_ready():
    status = {"conditions": [cond("Provisioned", "True", "P"), cond("Associated", "True", "A")]}
    provisioned = claim(status=status)
    assert bs.is_provisioned(provisioned) and not bs.is_provisioned(claim())
    write = bs.provisioned_status(provisioned, T1)
    assert write["finalizers"] == ["metal3.io/hostclaim"]
    conditions = by_type(write["status"]["conditions"])
    assert conditions["Ready"] == cond(
        "Ready", "Unknown", "UnknownReported", "* Synchronized: Condition not yet reported", S1
    )
    assert conditions["Associated"] == cond("Associated", "True", "A")


@pytest.mark.parametrize(
    ("reason", "message"),
    [
        ("NoBareMetalHost", "Failed to pick a BaremetalHost for the Host"),
        ("BareMetalHostNotSynchronized", "Failed to set consumer Reference on BareMetalHost"),
    ],
)
def test_other_association_failures(reason, message):
    write = bs.unassociated_status(claim(), reason, message, T0)
    assert write["finalizers"] == ["metal3.io/hostclaim"] and "bareMetalHost" not in write["status"]
    assert write["status"]["conditions"] == [
        cond("Ready", "False", "IssuesReported", f"* Associated: {message}\n" + NOT_YET, S0),
        cond("Associated", "False", reason, message, S0),
    ]


def test_controller_write_chooses_the_case_as_reconcile_does():
    assert bs.controller_write(claim(), None, T0) == bs.no_host_status(claim(), T0)
    assert bs.controller_write(claim(), HOST, T0) == bs.associated_status(claim(), HOST, T0)
    recorded = claim(status={"bareMetalHost": HOST})
    other = {"namespace": "infra", "name": "node-9"}
    assert bs.controller_write(recorded, other, T0)["status"]["bareMetalHost"] == HOST
    provisioned = claim(status={"conditions": [cond("Provisioned", "True", "P")]})
    assert bs.controller_write(provisioned, HOST, T0) == bs.provisioned_status(provisioned, T0)
    deleting = claim(finalizers=["metal3.io/hostclaim"], status={"bareMetalHost": HOST}, deleting=True)
    assert bs.controller_write(deleting, HOST, T0) == bs.deleting_status(deleting, T0)
    assert bs.controller_write(deleting, HOST, T0)["finalizers"] == []
