# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The lease keeper on ESI-Leap's leases (ironic/esi_leap_keeper.py, pure; ironic/esi_leap_expire.py on fakes):
which lease ends a node's access, the notice (the same as for leases in node fields), the events, and the run of
host_offer_expire (warned, ended once ESI-Leap ended the lease, deferred, check mode). The real services are
exercised by tests/integration/esi/test_eda_esi_leap_keeper.py."""

import dataclasses
import datetime
import json

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import esi_leap_expire as X
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import esi_leap_keeper as K
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import esi_leap_model as E
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import lease_model as L
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import lease_notice as N
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.lease_events import ENDING, WARNING
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.fake_module import FakeModule

UTC = datetime.timezone.utc
NOW = datetime.datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)
A, B = "a" * 32, "b" * 32


def at(seconds):
    return NOW + datetime.timedelta(seconds=seconds)


def lease(uuid="l-1", project=A, end_in=60, status="active"):
    return E.Lease(
        uuid=uuid,
        offer_uuid="o-1",
        node_uuid="n1-uuid",
        node="n1",
        resource_class="rc",
        project=project,
        project_name=None,
        owner="o" * 32,
        owner_name=None,
        start=at(-3600),
        end=at(end_in) if end_in is not None else None,
        status=status,
    )


def node(lessee=A, lease_uuid="l-1", notice=None, **properties):
    props = dict(properties, cpus=8, driver_secret="x")
    if lease_uuid:
        props[K.LEASE_UUID_KEY] = lease_uuid
    if notice:
        props[N.NOTICE_KEY] = notice
    return {"uuid": "n1-uuid", "name": "n1", "lessee": lessee, "provision_state": "active", "properties": props}


# ------------------------------------------------------------------ which lease, which notice


def test_the_ending_lease_is_the_active_lease_of_the_lessee_named_by_lease_uuid():
    record = K.ending_lease(node(), lease())
    assert record == {"id": "l-1", "project": A, "start": L.format_time(at(-3600)), "end": L.format_time(at(60))}
    assert K.ending_lease(node(lease_uuid="other"), lease()) is None  # not the lease the node names
    assert K.ending_lease(node(lessee=B), lease()) is None  # a lease of another project than the lessee
    assert K.ending_lease(node(lessee=None), lease()) is None
    assert K.ending_lease(node(), lease(status="expired")) is None
    assert K.ending_lease(node(), lease(end_in=None)) is None  # no end, nothing to announce
    assert K.ending_lease(node(), None) is None


def test_the_notice_is_the_one_host_lease_writes_and_is_kept_once_written():
    notice, changed = K.plan_notice(node(), lease(end_in=60), NOW, 120)
    assert changed and notice == N.make_notice(K.lease_record(lease(end_in=60)), NOW)
    assert set(notice) == {"lease", "project", "end", "warned", "message"}
    assert K.plan_notice(node(notice=notice), lease(end_in=60), at(5), 120) == (notice, False)
    assert K.plan_notice(node(), lease(end_in=600), NOW, 120) == (None, False)  # not within warn_before
    assert K.plan_notice(node(), lease(end_in=-1), NOW, 120) == (None, False)  # past: ended, not announced
    # a notice of a lease that is over goes
    assert K.plan_notice(node(lessee=None, lease_uuid=None, notice=notice), None, NOW, 120) == (None, True)


def test_esi_nodes_are_those_esi_leap_leases_or_with_a_notice_and_no_lease_record():
    assert K.is_esi_node(node())
    assert not K.is_esi_node(node(lease_uuid=None))
    assert K.is_esi_node(node(lease_uuid=None, notice={"lease": "l-1"}))
    record = L.make_lease(A, at(-60), at(60), NOW)
    assert not K.is_esi_node(node(lease_uuid=None, notice={"lease": "x"}, **{L.LEASES_KEY: [record]}))
    assert not K.is_esi_node(node(lease_uuid=None, notice={"lease": "x"}, **{L.LEASES_KEY: "broken"}))


def test_events_say_which_leases_esi_leap_ended_and_where_to_read_on():
    events = [
        {"id": 4, "event_type": "esi_leap.lease.fulfill.end", "object_uuid": "l-2", "event_time": "t0"},
        {"id": 7, "event_type": K.ENDED_EVENT, "object_uuid": "l-1", "event_time": "2026-05-01T12:00:01"},
        {"id": 5, "event_type": K.ENDED_EVENT, "object_uuid": None},
    ]
    assert K.ended_leases(events) == {"l-1": "2026-05-01T12:00:01"}
    assert K.last_event_id(events, None) == 7 and K.last_event_id(events, 9) == 9 and K.last_event_id([], 3) == 3


# ------------------------------------------------------------------ the source's events


def test_warning_then_ending_then_the_notice_of_an_ended_lease():
    tracker = K.EsiLeaseTracker(warn_ahead=60, lead_time=15, retry=30)
    allocation = {"uuid": "al-1", "name": "web", "state": "active", "node_uuid": "n1-uuid"}
    events = tracker.poll_esi([node()], [lease(end_in=30)], [allocation], NOW)
    assert [next(iter(e)) for e in events] == [WARNING]
    body = events[0][WARNING]
    assert body["provider"] == "esi_leap" and body["lease"] == "l-1" and body["project"] == A
    assert body["seconds_left"] == 30 and body["allocation"] == {"name": "web", "uuid": "al-1", "state": "active"}
    assert "driver_secret" not in json.dumps(events) and "cpus" not in json.dumps(events)
    assert tracker.poll_esi([node()], [lease(end_in=30)], [], at(1)) == []  # asked for already
    notice = N.make_notice(K.lease_record(lease(end_in=30)), NOW)
    assert tracker.poll_esi([node(notice=notice)], [lease(end_in=30)], [], at(5)) == []  # warned: nothing
    events = tracker.poll_esi([node(notice=notice)], [lease(end_in=30)], [], at(16))
    assert [next(iter(e)) for e in events] == [ENDING] and events[0][ENDING]["lead_time"] == 15
    # ESI-Leap ended it: the node has no lease_uuid nor lessee, the notice is still there; the ending's run is at it
    gone = node(lessee=None, lease_uuid=None, notice=notice)
    assert tracker.poll_esi([gone], [], [], at(31), ended={"l-1": "2026-05-01T12:00:31"}) == []
    # still there a retry later (the run failed, or the source restarted): asked again, to remove it
    events = tracker.poll_esi([gone], [], [], at(61), ended={"l-1": "2026-05-01T12:00:31"})
    assert [next(iter(e)) for e in events] == [ENDING]
    assert events[0][ENDING]["lease"] == "l-1" and events[0][ENDING]["ended_at"] == "2026-05-01T12:00:31"
    assert events[0][ENDING]["seconds_left"] == 0.0
    assert tracker.poll_esi([gone], [], [], at(62)) == []  # once per retry
    fresh = K.EsiLeaseTracker(warn_ahead=60, lead_time=15, retry=30)  # a restarted source asks at once
    assert [next(iter(e)) for e in fresh.poll_esi([gone], [], [], at(62))] == [ENDING]
    assert tracker.poll_esi([node(lease_uuid=None, lessee=None)], [], [], at(33)) == []  # nothing left: no event


def test_nodes_leased_in_their_fields_or_by_another_project_are_not_the_esi_keepers():
    tracker = K.EsiLeaseTracker(warn_ahead=60, lead_time=15, retry=30)
    record = L.make_lease(A, at(-60), at(20), NOW)
    fields = {"uuid": "f-uuid", "name": "f", "lessee": A, "properties": {L.LEASES_KEY: [record]}}
    assert tracker.poll_esi([fields, node(lessee=B)], [lease(end_in=20)], [], NOW) == []


# ------------------------------------------------------------------ host_offer_expire's run on fakes


class FakeIronic:
    def __init__(self, nodes):
        self.nodes = {n["uuid"]: n for n in nodes}
        self.patches = []
        self.on_poll = None
        self.vifs = {}  # node UUID: attached VIFs

    def detach_vifs(self, ident, label=None):
        return self.vifs.pop(ident, [])

    def get_node(self, ident, fields=(), missing_ok=False):
        for n in self.nodes.values():
            if ident in (n["uuid"], n["name"]):
                return json.loads(json.dumps({k: n.get(k) for k in fields}))
        assert missing_ok
        return None

    def list_nodes(self, fields=()):
        return [self.get_node(uuid, fields) for uuid in self.nodes]

    def patch_node(self, ident, ops, label=None):
        self.patches.append((ident, ops))
        for op in ops:
            parts = op["path"].split("/")[1:]
            target = self.nodes[ident]["properties"] if parts[0] == "properties" else self.nodes[ident]
            if op["op"] == "remove":
                target.pop(parts[-1])
            else:
                target[parts[-1]] = op["value"]

    def poll(self, fetch, done, timeout, what, describe=None, service=None):
        if self.on_poll:
            self.on_poll()
        value = fetch()
        if not done(value):
            from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import WaitTimeout

            raise WaitTimeout(what, "not done after %s seconds: %s" % (timeout, describe(value)))
        return value


class FakeEsi:
    def __init__(self, leases):
        self.leases = {x.uuid: x for x in leases}

    def get_lease(self, uuid, missing_ok=False):
        return self.leases.get(uuid)


def params(**extra):
    base = dict(nodes=None, warn_before=None, lead_time=0, wait=True, wait_timeout=60)
    base.update(extra)
    return base


def run(ironic, esi, check_mode=False, **extra):
    mod = FakeModule(check_mode=check_mode, **params(**extra))
    slept = []
    X.run_host_offer_expire(mod, ironic, esi, sleep=slept.append)
    return mod.result, slept


def test_a_warning_writes_the_notice_once():
    end = datetime.datetime.now(UTC).replace(microsecond=0) + datetime.timedelta(seconds=600)
    live = dataclasses.replace(lease(), end=end)
    ironic = FakeIronic([node()])
    check, dummy = run(ironic, FakeEsi([live]), check_mode=True, warn_before=3600)
    assert check["changed"] and [a["action"] for a in check["actions"]] == ["warned"] and ironic.patches == []
    done, dummy = run(ironic, FakeEsi([live]), warn_before=3600)
    assert done["actions"] == [{"node": "n1", "lease": "l-1", "project": A, "action": "warned"}]
    notice = ironic.nodes["n1-uuid"]["properties"][N.NOTICE_KEY]
    assert notice["lease"] == "l-1" and notice["end"] == L.format_time(end)
    assert done["diff"] == {"before": {}, "after": {"n1": notice}}
    again, dummy = run(ironic, FakeEsi([live]), warn_before=3600)
    assert again["changed"] is False and again["actions"] == []


def test_an_ending_waits_for_the_end_and_for_esi_leap_then_removes_the_notice():
    end = datetime.datetime.now(UTC).replace(microsecond=0) + datetime.timedelta(seconds=20)
    live = dataclasses.replace(lease(), end=end)
    ironic = FakeIronic([node()])

    def esi_leap_ends_it():
        props = ironic.nodes["n1-uuid"]["properties"]
        props.pop(K.LEASE_UUID_KEY)
        ironic.nodes["n1-uuid"]["lessee"] = None

    ironic.on_poll = esi_leap_ends_it
    ironic.vifs = {"n1-uuid": ["port-of-a"]}  # ESI-Leap 1.0.0 leaves them attached
    result, slept = run(ironic, FakeEsi([live]), lead_time=30)
    assert [a["action"] for a in result["actions"]] == ["warned", "ended"]
    assert ironic.vifs == {}, "the ended lessee's VIFs are still attached"
    assert 18 <= slept[0] <= 20  # waited until the end
    assert N.NOTICE_KEY not in ironic.nodes["n1-uuid"]["properties"]
    assert all(op["path"] == "/properties/%s" % N.NOTICE_KEY for dummy, ops in ironic.patches for op in ops)
    assert result["deferred"] == []


ALLOCATION = "alloc-of-a"


@pytest.mark.parametrize(
    "before, after, removed",
    [
        # claimed, never deployed: ESI-Leap's end leaves the allocation and instance_info
        ({}, {}, ["/instance_uuid", "/instance_info"]),
        ({}, {"instance_info": {}}, ["/instance_uuid"]),
        # deployed: ESI-Leap undeployed it (cleaning, then available without the allocation)
        ({"provision_state": "active"}, {"provision_state": "cleaning"}, []),
        ({"provision_state": "active"}, {"instance_uuid": None}, []),
        # the node is leased again, or holds another allocation now: never the next lessee's
        ({}, {"lessee": B}, []),
        ({}, {"instance_uuid": "alloc-of-someone-else"}, []),
        # the node was not the project's, or it is not available (the owner's business)
        ({"lessee": B}, {}, []),
        ({}, {"provision_state": "manageable"}, []),
        ({"instance_uuid": None}, {}, []),
    ],
)
def test_what_a_lessee_left_on_a_node_it_never_deployed_goes_after_the_end(before, after, removed):
    was = dict({"lessee": A, "provision_state": "available", "instance_uuid": ALLOCATION}, **before)
    now = dict({"lessee": None, "provision_state": "available", "instance_uuid": ALLOCATION}, **after)
    now.setdefault("instance_info", {"image_source": "http://images.example.com/of-a.qcow2"})
    assert [op["path"] for op in K.left_after_end(was, now, A)] == removed
    assert all(op["op"] == "remove" for op in K.left_after_end(was, now, A))


def test_an_ending_of_a_never_deployed_node_removes_the_lessee_s_allocation():
    end = datetime.datetime.now(UTC).replace(microsecond=0)
    live = dataclasses.replace(lease(), end=end)
    claimed = dict(node(), provision_state="available", instance_uuid=ALLOCATION, instance_info={"image_source": "x"})
    ironic = FakeIronic([claimed])

    def esi_leap_ends_it():
        ironic.nodes["n1-uuid"]["properties"].pop(K.LEASE_UUID_KEY)
        ironic.nodes["n1-uuid"]["lessee"] = None

    ironic.on_poll = esi_leap_ends_it
    result, dummy = run(ironic, FakeEsi([live]), lead_time=30)
    assert result["actions"][-1] == {
        "node": "n1",
        "lease": "l-1",
        "project": A,
        "action": "ended",
        "allocation_removed": ALLOCATION,
    }
    assert "instance_uuid" not in ironic.nodes["n1-uuid"] and "instance_info" not in ironic.nodes["n1-uuid"]
    # a deployed node's ending removes nothing but the notice (ESI-Leap's undeployment took the allocation)
    deployed = FakeIronic([dict(node(), instance_uuid=ALLOCATION)])
    deployed.on_poll = lambda: deployed.nodes["n1-uuid"].update(lessee=None, provision_state="deleting")
    result, dummy = run(deployed, FakeEsi([live]), lead_time=30)
    assert (
        "allocation_removed" not in result["actions"][-1] and deployed.nodes["n1-uuid"]["instance_uuid"] == ALLOCATION
    )


def test_an_ending_esi_leap_has_not_seen_to_is_deferred_and_check_mode_does_not_wait():
    live = lease(end_in=None)
    live = dataclasses.replace(live, end=datetime.datetime.now(UTC).replace(microsecond=0))
    ironic = FakeIronic([node()])
    result, dummy = run(ironic, FakeEsi([live]), lead_time=30, wait=False)
    assert [a["action"] for a in result["actions"]] == ["warned"]
    assert (
        result["deferred"][0]["node"] == "n1" and "ESI-Leap has not ended lease l-1" in result["deferred"][0]["reason"]
    )
    check, slept = run(FakeIronic([node()]), FakeEsi([live]), check_mode=True, lead_time=30)
    assert slept == [] and check["deferred"][0]["reason"].startswith("check mode")


def test_the_notice_of_a_lease_ended_early_goes_and_bad_input_is_refused():
    notice = N.make_notice(K.lease_record(lease()), NOW)
    ironic = FakeIronic([node(lessee=None, lease_uuid=None, notice=notice)])
    result, dummy = run(ironic, FakeEsi([]), nodes=["n1"])
    assert result["actions"] == [{"node": "n1", "lease": "l-1", "project": A, "action": "ended"}]
    assert N.NOTICE_KEY not in ironic.nodes["n1-uuid"]["properties"]
    with pytest.raises(InvalidInput, match="option lead_time: must be 0 seconds or more, not -1"):
        run(None, None, lead_time=-1)
    with pytest.raises(Exception, match="option nodes: node nope: does not exist"):
        run(FakeIronic([]), FakeEsi([]), nodes=["nope"])
