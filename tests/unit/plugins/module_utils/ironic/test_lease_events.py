# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Ironic lease event source's model (ironic/lease_events.py): when it warns and asks for an ending, what
it remembers, and that its events carry names and states only."""

import datetime
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import lease_model as L
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import lease_notice as N
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.lease_events import (
    ENDING,
    WARNING,
    LeaseTracker,
)

UTC = datetime.timezone.utc
NOW = datetime.datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)
A, B = "a" * 32, "b" * 32


def at(seconds):
    return NOW + datetime.timedelta(seconds=seconds)


def leased(name, end_in, project=A, notice=False, **extra):
    lease = L.make_lease(project, at(-3600), at(end_in), NOW)
    properties = {L.LEASES_KEY: [lease], "cpus": 8}
    if notice:
        properties[N.NOTICE_KEY] = N.make_notice(lease, NOW)
    node = {"uuid": name + "-uuid", "name": name, "lessee": project, "provision_state": "active"}
    node.update(properties=properties, **extra)
    return node


def kinds(events):
    return [(next(iter(e)), e[next(iter(e))]["node"]) for e in events]


def test_warning_then_ending_each_once():
    tracker = LeaseTracker(warn_ahead=60, lead_time=15, retry=30)
    node = leased("n1", 20)
    allocation = {"uuid": "al-1", "name": "web-0", "state": "active", "node_uuid": "n1-uuid"}
    events, problems = tracker.poll([node], [allocation], NOW)
    assert problems == [] and kinds(events) == [(WARNING, "n1")]
    body = events[0][WARNING]
    assert body["end"] == L.format_time(at(20)) and body["project"] == A and body["seconds_left"] == 20
    assert body["allocation"] == {"name": "web-0", "uuid": "al-1", "state": "active"} and body["warn_before"] == 60
    assert tracker.poll([node], [allocation], at(1))[0] == []  # asked for already
    node = leased("n1", 20, notice=True)  # the run wrote the notice
    assert tracker.poll([node], [], at(4))[0] == []
    events = tracker.poll([node], [], at(5))[0]
    assert kinds(events) == [(ENDING, "n1")] and events[0][ENDING]["lead_time"] == 15
    assert tracker.poll([node], [], at(6))[0] == []
    assert tracker.poll([node], [], at(20 + 29))[0] == []  # the end passed, the run may still be at it
    assert kinds(tracker.poll([node], [], at(20 + 31))[0]) == [(ENDING, "n1")]  # still there: asked again


def test_a_missing_notice_is_asked_for_again_after_retry():
    tracker = LeaseTracker(warn_ahead=3600, lead_time=30, retry=60)
    node = leased("n1", 1800)
    assert kinds(tracker.poll([node], [], NOW)[0]) == [(WARNING, "n1")]
    assert tracker.poll([node], [], at(59))[0] == []
    assert kinds(tracker.poll([node], [], at(61))[0]) == [(WARNING, "n1")]


def test_a_restarted_source_resumes_from_what_the_nodes_say():
    nodes = [leased("warned", 600, notice=True), leased("unwarned", 600), leased("ending", 10), leased("overdue", -5)]
    events = LeaseTracker(warn_ahead=3600, lead_time=30, retry=60).poll(nodes, [], NOW)[0]
    assert sorted(kinds(events)) == [(ENDING, "ending"), (ENDING, "overdue"), (WARNING, "unwarned")]


def test_what_is_not_announced():
    lease = L.make_lease(A, at(-3600), at(100), NOW)
    follow = L.make_lease(A, at(100), at(7200), NOW)
    nodes = [
        leased("far", 7200),  # beyond warn_ahead
        dict(leased("nolessee", 100), lessee=None),  # access ended already
        {
            "uuid": "open-uuid",
            "name": "open",
            "lessee": A,
            "properties": {L.LEASES_KEY: [L.make_lease(A, at(-5), None, NOW)]},
        },
        {"uuid": "cont-uuid", "name": "cont", "lessee": A, "properties": {L.LEASES_KEY: [lease, follow]}},
        dict(leased("moved", 600, notice=True), lessee=B),  # the notice's project is not the lessee
    ]
    assert LeaseTracker(warn_ahead=3600, lead_time=30, retry=60).poll(nodes, [], NOW)[0] == []


def test_a_moved_end_is_announced_again():
    tracker = LeaseTracker(warn_ahead=3600, lead_time=30, retry=600)
    node = leased("n1", 600, notice=True)
    assert tracker.poll([node], [], NOW)[0] == []
    node["properties"][L.LEASES_KEY][0]["end"] = L.format_time(at(900))
    assert kinds(tracker.poll([node], [], at(1))[0]) == [(WARNING, "n1")]


def test_a_malformed_lease_list_is_a_problem_named_not_an_event():
    bad = {"uuid": "x-uuid", "name": "x", "lessee": A, "properties": {L.LEASES_KEY: "soon"}}
    events, problems = LeaseTracker(3600, 30, 60).poll([bad, leased("n1", 10)], [], NOW)
    assert kinds(events) == [(ENDING, "n1")] and problems and problems[0].startswith("node x:")


BMC = st.sampled_from(
    ["redfish+https://10.1.2.3/redfish/v1/Systems/1", "ipmi-10.9.8.7", "bmc-s3cr3t-password", "admin-bmc-user"]
)


@settings(max_examples=200, deadline=None)
@given(
    bmc=BMC,
    end_in=st.integers(min_value=-120, max_value=7200),
    in_name=st.booleans(),
    with_allocation=st.booleans(),
)
def test_events_never_carry_bmc_data(bmc, end_in, in_name, with_allocation):
    """Whatever the owner keeps in driver_info, extra, instance_info or other properties never reaches an event."""
    node = leased(
        "n1",
        end_in,
        driver_info={"redfish_address": bmc, "redfish_password": bmc, "redfish_username": bmc},
        extra={"bmc": bmc},
        instance_info={"image_source": bmc},
    )
    node["properties"]["bmc_address"] = bmc
    node["properties"]["notes"] = {"deep": [bmc]}
    allocations = [{"uuid": "al", "name": "web", "state": "active", "node_uuid": "n1-uuid", "extra": {"b": bmc}}]
    if in_name:
        node["properties"][L.LEASES_KEY][0]["note"] = bmc  # an extra key of the lease record does not travel either
    events, _problems = LeaseTracker(3600, 30, 60).poll([node], allocations if with_allocation else [], NOW)
    assert bmc not in json.dumps(events)
    if 0 < end_in <= 3600:
        assert events  # the property is not vacuous: there was an event to look at
