# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""ESI-Leap's records as the collection sees them, offer plans, claims and error mapping (pure)."""

import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    BackendError,
    Conflict,
    Forbidden,
    InvalidInput,
    NotFound,
    TenancyError,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import esi_leap_model as M

UTC = datetime.timezone.utc
NOW = datetime.datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)
OWNER = "o" * 32
A = "a" * 32
B = "b" * 32


def t(hours):
    return NOW + datetime.timedelta(hours=hours)


def esi(moment):
    """A time as ESI-Leap returns it (naive, microseconds when it made it)."""
    return None if moment is None else moment.replace(tzinfo=None).isoformat()


def offer_record(
    uuid="o-1", node="n1", start=None, end=None, lessee=None, lessee_name=None, status="available", **extra
):
    record = {
        "uuid": uuid,
        "resource_type": "ironic_node",
        "resource_uuid": node + "-uuid",
        "resource": node,
        "resource_class": "rc",
        "resource_properties": {"cpus": 8, "bmc_address": "redfish://10.0.0.1"},
        "properties": {"note": "x"},
        "project_id": OWNER,
        "project": "infra",
        "lessee_id": lessee,
        "lessee": lessee_name,
        "start_time": esi(start or NOW),
        "end_time": esi(end) if end else "9999-12-31T23:59:59.999999",
        "status": status,
        "availabilities": [[esi(start or NOW), esi(end) if end else "9999-12-31T23:59:59.999999"]],
        "parent_lease_uuid": None,
    }
    record.update(extra)
    return record


def offer(**kwargs):
    return M.parse_offer(offer_record(**kwargs))


def lease(uuid="l-1", project=A, offer_uuid="o-1", node="n1", status="active", start=None, end=None, name=None):
    return M.parse_lease(
        {
            "uuid": uuid,
            "name": name,
            "offer_uuid": offer_uuid,
            "resource_uuid": node + "-uuid",
            "resource": node,
            "resource_class": "rc",
            "resource_properties": {"cpus": 8},
            "project_id": project,
            "project": "tenant",
            "owner_id": OWNER,
            "owner": "infra",
            "start_time": esi(start or NOW),
            "end_time": esi(end or t(24)),
            "status": status,
        }
    )


def wish(node="n1", start=None, end=None, lessee=None):
    return M.WantedOffer(node + "-uuid", node, start, end, lessee)


# ------------------------------------------------------------------ times


def test_esi_leap_open_end_reads_as_no_end():
    assert M.read_time("9999-12-31T23:59:59.999999") is None
    assert M.read_time(None) is None
    assert M.read_time("2026-05-01T12:00:00.123456") == NOW.replace(microsecond=123456)


@given(st.datetimes(min_value=datetime.datetime(2000, 1, 1), max_value=datetime.datetime(2999, 1, 1)))
def test_times_sent_to_esi_leap_read_back_to_the_second(moment):
    moment = moment.replace(tzinfo=UTC)
    assert M.read_time(M.esi_time(moment)) == moment.replace(microsecond=0)


# ------------------------------------------------------------------ views


def test_views_show_names_windows_and_states_never_node_properties():
    view = M.offer_view(offer(lessee=A, lessee_name="tenant-a", end=t(24)), NOW)
    assert view == {
        "uuid": "o-1",
        "node": "n1",
        "node_uuid": "n1-uuid",
        "resource_class": "rc",
        "owner": OWNER,
        "owner_name": "infra",
        "lessee": A,
        "lessee_name": "tenant-a",
        "start": "2026-05-01T12:00:00Z",
        "end": "2026-05-02T12:00:00Z",
        "status": "available",
        "availabilities": [{"start": "2026-05-01T12:00:00Z", "end": "2026-05-02T12:00:00Z"}],
        "claimable": True,
    }
    assert "redfish" not in repr(view) and "redfish" not in repr(M.lease_view(lease()))
    assert M.offer_view(offer())["end"] is None


def test_a_node_esi_leap_could_not_name_is_shown_by_its_uuid():
    assert offer(resource="unknown-name").node == "n1-uuid"


# ------------------------------------------------------------------ planning offers


def test_an_offer_for_the_same_node_window_and_lessee_is_kept():
    existing = [offer(start=t(1), end=t(5), lessee=A, lessee_name="tenant-a")]
    plan = M.plan_offers([wish(start=t(1), end=t(5), lessee="tenant-a")], existing, NOW)
    assert plan.create == [] and plan.keep[0][1].uuid == "o-1"
    # another lessee, window or node is another offer
    for other in (
        wish(start=t(1), end=t(5), lessee=B),
        wish(start=t(1), end=t(6), lessee=A),
        wish("n2", t(1), t(5), A),
    ):
        assert M.plan_offers([other], existing, NOW).create == [other]
    # an offer for everybody is not an offer for tenant-a
    assert M.plan_offers([wish(start=t(1), end=t(5), lessee=A)], [offer(start=t(1), end=t(5))], NOW).create


def test_without_a_start_an_offer_under_way_matches_and_a_future_one_does_not():
    under_way = offer(start=t(-2), end=t(5))
    assert M.plan_offers([wish(end=t(5))], [under_way], NOW).keep
    assert M.plan_offers([wish(end=t(5))], [offer(start=t(1), end=t(5))], NOW).create


def test_withdrawn_and_expired_offers_are_not_kept():
    for status in ("deleted", "expired", "error"):
        assert M.plan_offers([wish()], [offer(status=status)], NOW).create


_hours = st.integers(min_value=-48, max_value=48)


@st.composite
def wishes(draw):
    out = []
    for index in range(draw(st.integers(min_value=0, max_value=5))):
        start = draw(st.one_of(st.none(), _hours.map(t)))
        length = draw(st.one_of(st.none(), st.integers(min_value=1, max_value=48)))
        end = None if length is None else (start or NOW) + datetime.timedelta(hours=length)
        out.append(wish("n%d" % index, start, end, draw(st.sampled_from([None, A, B]))))
    return out


def created(wanted):
    """The offers ESI-Leap makes for ``wanted`` (a missing start is now, with microseconds)."""
    return [
        offer(
            uuid="o-%d" % i,
            node=w.node,
            start=w.start or NOW.replace(microsecond=1234),
            end=w.end,
            lessee=w.lessee,
        )
        for i, w in enumerate(wanted)
    ]


@given(wishes())
def test_planning_again_after_the_offers_are_made_creates_nothing(wanted):
    first = M.plan_offers(wanted, [], NOW)
    assert first.create == wanted and first.keep == []
    again = M.plan_offers(wanted, created(wanted), NOW + datetime.timedelta(seconds=30))
    assert again.create == [] and [w for w, o in again.keep] == wanted


@given(wishes(), wishes())
def test_a_kept_offer_is_always_the_same_node_lessee_and_end(wanted, others):
    plan = M.plan_offers(wanted, created(others), NOW)
    assert len(plan.keep) + len(plan.create) == len(wanted)
    for w, o in plan.keep:
        assert (o.node_uuid, o.lessee, o.end) == (w.node_uuid, w.lessee, w.end)
    assert len({o.uuid for w, o in plan.keep}) == len(plan.keep)


def test_an_overlapping_window_is_found_before_esi_leap_refuses_it():
    existing = [offer(start=t(1), end=t(5))]
    assert M.overlapping_offer(wish(start=t(4), end=t(8)), existing, NOW).uuid == "o-1"
    assert M.overlapping_offer(wish(start=t(5), end=t(8)), existing, NOW) is None  # half-open windows touch
    assert M.overlapping_offer(wish("n2", t(4), t(8)), existing, NOW) is None
    assert M.overlapping_offer(wish(), existing, NOW).uuid == "o-1"  # from now, no end


def test_a_new_offer_body_is_what_esi_leap_takes():
    assert wish(start=t(1), end=t(5), lessee="tenant-a").body() == {
        "resource_type": "ironic_node",
        "resource_uuid": "n1-uuid",
        "start_time": "2026-05-01T13:00:00",
        "end_time": "2026-05-01T17:00:00",
        "lessee_id": "tenant-a",
    }
    assert wish().body() == {"resource_type": "ironic_node", "resource_uuid": "n1-uuid"}
    assert wish(lessee=A).describe() == "offer of node n1 to project %s from now to no end" % A


def uuids(offers):
    return [o.uuid for o in offers]


def test_withdrawing_takes_the_owners_available_offers_of_the_nodes_narrowed_by_the_options():
    existing = [
        offer(uuid="x", lessee=A, lessee_name="tenant-a", start=t(1), end=t(2)),
        offer(uuid="y", start=t(3), end=t(4)),
        offer(uuid="z", node="n2"),
        offer(uuid="gone", status="deleted"),
        offer(uuid="theirs", project_id=B),
    ]
    assert uuids(M.plan_withdraw(existing, ["n1-uuid"], OWNER)) == ["x", "y"]
    assert uuids(M.plan_withdraw(existing, ["n1-uuid"], OWNER, lessee="tenant-a")) == ["x"]
    assert uuids(M.plan_withdraw(existing, ["n1-uuid"], OWNER, start=t(3))) == ["y"]
    assert uuids(M.plan_withdraw(existing, ["n1-uuid"], OWNER, end=t(2))) == ["x"]
    assert uuids(M.plan_withdraw(existing, ["n1-uuid", "n2-uuid"], OWNER)) == ["x", "y", "z"]


# ------------------------------------------------------------------ claims


def test_an_offer_is_claimable_within_one_of_its_availabilities():
    record = offer_record(start=t(-1), end=t(10))
    record["availabilities"] = [[esi(t(-1)), esi(t(2))], [esi(t(4)), esi(t(10))]]
    split = M.parse_offer(record)
    assert M.claimable(split, None, None, NOW)
    assert M.claimable(split, None, t(2), NOW)
    assert not M.claimable(split, None, t(3), NOW)  # runs into the lease at t(2)..t(4)
    assert not M.claimable(split, t(2), None, NOW)
    assert M.claimable(split, t(4), t(10), NOW)
    assert not M.claimable(offer(start=t(1)), None, None, NOW)  # starts later: a claim now is outside
    assert not M.claimable(offer(status="deleted"), None, None, NOW)


def test_the_first_claimable_offer_by_node_name_is_chosen():
    offers = [
        offer(uuid="c", node="n3"),
        offer(uuid="b", node="n2", start=t(1)),
        offer(uuid="a", node="n1", resource_class="other"),
    ]
    assert M.choose_offer(offers, "rc", None, None, None, NOW).uuid == "c"
    assert M.choose_offer(offers, "rc", None, t(1), t(2), NOW).uuid == "b"
    assert M.choose_offer(offers, None, "n1", None, None, NOW).uuid == "a"
    assert M.choose_offer(offers, "rc", "n1", None, None, NOW) is None


def test_a_held_lease_is_the_callers_own_and_still_held():
    leases = [
        lease(uuid="b", project=B),
        lease(uuid="old", status="deleted"),
        lease(uuid="mine", offer_uuid="o-2", node="n2"),
    ]
    assert M.held_lease(leases, A, offer_uuid="o-2").uuid == "mine"
    assert M.held_lease(leases, A, node="n2").uuid == "mine"
    assert M.held_lease(leases, A, offer_uuid="o-1") is None
    assert M.held_lease(leases, A, node="n2", end=t(5)) is None
    assert [x.uuid for x in M.leases_to_end(leases, A)] == ["mine"]
    assert M.leases_to_end(leases, A, node="n1") == []


def test_a_named_claim_keeps_only_the_lease_of_its_name():
    """Two claims of one resource class with different names hold two leases: a claim finds only its own lease,
    a claim without a name any lease that matches (the second run of an unnamed claim)."""
    leases = [lease(uuid="web-0", name="a-web-0"), lease(uuid="plain", node="n2")]
    assert M.held_lease(leases, A, resource_class="rc", name="a-web-0").uuid == "web-0"
    assert M.held_lease(leases, A, resource_class="rc", name="a-web-1") is None
    assert M.held_lease(leases, A, resource_class="rc").uuid == "web-0"
    assert M.held_lease([lease(uuid="b", project=B, name="a-web-1")], A, name="a-web-1") is None
    assert [x.uuid for x in M.leases_to_end(leases, A, name="a-web-0")] == ["web-0"]
    assert [x.uuid for x in M.leases_to_end(leases, A, resource_class="rc")] == ["web-0", "plain"]
    assert M.lease_view(leases[0])["name"] == "a-web-0" and M.lease_view(leases[1])["name"] is None


def test_a_claim_body_leaves_out_what_esi_leap_defaults():
    assert M.claim_body(None, None) == {}
    assert M.claim_body(t(1), t(2)) == {"start_time": "2026-05-01T13:00:00", "end_time": "2026-05-01T14:00:00"}
    assert M.claim_body(None, None, "a-web-0") == {"name": "a-web-0"}


def test_a_wait_for_a_lease_stops_when_it_cannot_become_active():
    assert M.lease_failed(lease(status="created")) is None
    assert "status error" in M.lease_failed(lease(status="error"))
    assert "ended before" in M.lease_failed(lease(status="deleted"))


# ------------------------------------------------------------------ errors


def body(text):
    return {"faultcode": "Server", "faultstring": text, "debuginfo": None}


@pytest.mark.parametrize(
    "status, text, cls, words",
    [
        (500, "Time conflict for ironic_node 1f2e.", Conflict, "overlaps another offer or lease of the node"),
        (409, "Conflict", Conflict, "overlaps another offer or lease of the node"),
        (
            500,
            "Offer 9 has no availabilities at given time range 2026-05-01 10:00:00, 2026-05-02 10:00:00.",
            Conflict,
            "not available for that window",
        ),
        (500, "No project named nobody.", NotFound, "knows no such project"),
        (403, "Access was denied to offer 9.", Forbidden, "does not allow it to these credentials"),
        (404, "Offer with name or uuid 9 not found.", NotFound, "does not exist"),
        (
            500,
            "Attempted to create an offer resource with an invalid Start Time and End Time. Start Time must be "
            "strictly less than End Time. Got a, b.",
            InvalidInput,
            "refused the window",
        ),
        (503, "down", BackendError, "ESI-Leap: down (HTTP 503)"),
    ],
)
def test_esi_leap_errors_become_the_collections_with_esi_leaps_words(status, text, cls, words):
    error = M.esi_error("offer of node n1", status, M.esi_message(body(text)))
    assert error.__class__ is cls
    assert error.message.startswith("offer of node n1: ")
    assert words in error.message and text in error.message
    assert error.details["status"] == status


@given(st.integers(min_value=400, max_value=599), st.text(max_size=200))
def test_mapping_any_error_answer_names_the_object_and_never_raises(status, text):
    error = M.esi_error("lease l-1", status, text)
    assert isinstance(error, TenancyError) and error.message.startswith("lease l-1: ")


def test_error_bodies_are_read_as_esi_leap_and_others_write_them():
    assert M.esi_message(b'{"faultcode": "Client", "faultstring": "nope", "debuginfo": null}') == "nope"
    assert M.esi_message('{"message": "kube"}') == "kube"
    assert M.esi_message(b"<html>bad gateway</html>") == "<html>bad gateway</html>"
    assert M.esi_message(b"") is None


def test_an_offer_esi_leap_started_within_this_second_is_under_way():
    started = offer(start=NOW.replace(microsecond=600000))  # ESI-Leap keeps the microseconds of its "now"
    assert M.plan_offers([wish()], [started], NOW).keep
    assert M.claimable(started, None, None, NOW)


def test_an_offer_under_way_is_claimable_although_esi_leap_starts_its_availability_at_its_own_now():
    record = offer_record(start=t(-1))
    later = NOW + datetime.timedelta(seconds=2, microseconds=5)  # the moment ESI-Leap answered
    record["availabilities"] = [[esi(later), "9999-12-31T23:59:59.999999"]]
    under_way = M.parse_offer(record)
    assert M.claimable(under_way, None, None, NOW)
    assert M.claimable(under_way, NOW, None, NOW)
    future = offer_record(start=t(1))
    assert not M.claimable(M.parse_offer(future), None, None, NOW)
