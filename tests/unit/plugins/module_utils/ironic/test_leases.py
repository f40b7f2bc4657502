# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""host_lease's runner against an in-memory stand-in for Ironic (no network).

The stand-in applies the JSON patches the runner sends the way Ironic does,
refuses patches during a transition (409) and records every write, so the
tests can check what a run writes, that check mode writes nothing, and that
a rerun changes nothing.  The real Ironic is in tests/integration.
"""

import copy
import datetime

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import Conflict, InvalidInput, NotFound
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import lease_model as L
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import lease_notice as N
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.leases import LeaseRun
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils import fake_module

UTC = datetime.timezone.utc
NOW = datetime.datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)
A = "a" * 32
B = "b" * 32


def iso(hours):
    return L.format_time(NOW + datetime.timedelta(hours=hours))


class FakeProject:
    def __init__(self, ident):
        self.id = ident


class FakeKeystone:
    """Keystone as a system administrator sees it: every 32-hex ID of these tests exists."""

    current_project_id = None

    def __init__(self, known=None):
        self.identity = self
        self.known = known

    def find_project(self, name, ignore_missing=True):
        if self.known is not None:
            return FakeProject(self.known[name]) if name in self.known else None
        return FakeProject(name) if len(name) == 32 else None


class FakeIronic:
    def __init__(self, nodes):
        self.nodes = dict((n["uuid"], n) for n in nodes)
        self.writes = []
        self.conn = FakeKeystone()
        self.vifs = {}  # node UUID: attached VIFs

    def detach_vifs(self, ident, label=None):
        node = self._find(ident)
        vifs = self.vifs.pop(node["uuid"], [])
        if vifs:
            self.writes.append(("detach vifs", node["name"], vifs))
        return vifs

    def clear_instance_name(self, ident, label=None):
        node = self._find(ident)
        if node.get("instance_name"):
            self.writes.append(("patch", node["name"], [{"op": "remove", "path": "/instance_name"}]))
            node["instance_name"] = None
            return True
        return False

    def _find(self, ident):
        for node in self.nodes.values():
            if ident in (node["uuid"], node["name"]):
                return node
        return None

    def get_node(self, ident, fields=None, missing_ok=False):
        node = self._find(ident)
        return copy.deepcopy(node) if node else None

    def list_nodes(self, fields=None, resource_class=None):
        return [
            copy.deepcopy(n)
            for n in self.nodes.values()
            if resource_class is None or n["resource_class"] == resource_class
        ]

    def patch_node(self, ident, ops, label=None):
        node = self._find(ident)
        if node["target_provision_state"]:
            raise Conflict("node %s" % label, "can not be updated while a state transition is in progress")
        self.writes.append(("patch", node["name"], copy.deepcopy(ops)))
        for op in ops:
            parts = op["path"].strip("/").split("/")
            target = node
            for part in parts[:-1]:
                target = target.setdefault(part, {})
            if op["op"] == "remove":
                target[parts[-1]] = {} if parts[-1] == "instance_info" else None
                if len(parts) > 1:
                    target.pop(parts[-1])
                if parts[-1] == "instance_uuid":
                    node["allocation"] = None
            else:
                target[parts[-1]] = copy.deepcopy(op["value"])

    def set_provision_state(self, ident, target, label=None):
        node = self._find(ident)
        self.writes.append(("provision", node["name"], target))
        assert target == "deleted"
        # Ironic tears down: instance_info and the allocation go, the node is cleaned.
        node.update(provision_state="available", instance_info={}, instance_uuid=None, allocation=None)

    def poll(self, fetch, done, timeout, what, failed=None, describe=None):
        value = fetch()
        assert done(value), value
        return value


class FakeModule(fake_module.FakeModule):
    def __init__(self, check_mode=False, **params):
        base = dict(
            state="present",
            project=None,
            nodes=None,
            resource_class=None,
            traits=None,
            count=None,
            start=None,
            end=None,
            lease_id=None,
            bmc_password=None,
            wait=False,
            wait_timeout=600,
            verify_projects=True,
        )
        base.update(params)
        super().__init__(check_mode, **base)


def node(name, **extra):
    base = {
        "uuid": name + "-uuid",
        "name": name,
        "owner": "o" * 32,
        "lessee": None,
        "properties": {"cpus": 8},
        "provision_state": "available",
        "target_provision_state": None,
        "power_state": "power off",
        "target_power_state": None,
        "maintenance": False,
        "instance_uuid": None,
        "instance_info": {},
        "resource_class": "rc",
        "traits": [],
    }
    base.update(extra)
    return base


class FakeRevoke:
    """Stands for revoke_host_accounts(): the BMC accounts each node has, per lessee."""

    def __init__(self, ironic, accounts=None, error=None):
        self.ironic = ironic
        self.accounts = accounts or {}
        self.error = error
        self.calls = []

    def __call__(self, node_uuid, lessee):
        node = self.ironic.nodes[node_uuid]
        # the accounts go while the lessee is still there
        self.calls.append((node["name"], lessee, node["lessee"]))
        if self.error:
            raise self.error
        removed = self.accounts.pop((node["name"], lessee), [])
        return dict(removed=removed, dropped=[], changed=bool(removed))


def run(ironic, check_mode=False, now=NOW, revoke=None, **params):
    mod = FakeModule(check_mode=check_mode, **params)
    LeaseRun(mod, client=ironic, now=now, revoke=revoke or FakeRevoke(ironic)).run()
    return mod


def test_lease_named_nodes_then_rerun():
    ironic = FakeIronic([node("n1"), node("n2")])
    first = run(ironic, project=A, nodes=["n1", "n2"], end=iso(24))
    assert first.result["changed"] is True
    assert sorted(a["action"] for a in first.result["actions"]) == ["created", "created"]
    assert [w[0] for w in ironic.writes] == ["patch", "patch"]
    assert ironic.nodes["n1-uuid"]["lessee"] == A
    assert [x["project"] for x in first.result["leases"]] == [A, A]
    writes = len(ironic.writes)
    again = run(ironic, now=NOW + datetime.timedelta(minutes=30), project=A, nodes=["n1", "n2"], end=iso(24))
    assert again.result["changed"] is False and len(ironic.writes) == writes
    assert again.result["actions"] == []


def test_leasing_a_node_that_is_never_cleaned_warns_and_names_it():
    ironic = FakeIronic([node("n1", automated_clean=False), node("n2", automated_clean=None), node("n3")])
    mod = run(ironic, project=A, nodes=["n1", "n2", "n3"])
    assert ironic.nodes["n1-uuid"]["lessee"] == A  # the lease is written all the same
    assert mod.result["cleaning_off"] == ["n1"]
    assert len(mod.warnings) == 1
    assert mod.warnings[0].startswith("automated cleaning is off (automated_clean: false) on node n1, leased to a ")
    again = run(ironic, project=A, nodes=["n2", "n3"])
    assert again.result["cleaning_off"] == [] and again.warnings == []


def test_check_mode_writes_nothing_and_shows_the_diff():
    ironic = FakeIronic([node("n1")])
    mod = run(ironic, check_mode=True, project=A, nodes=["n1"])
    assert mod.result["changed"] is True and ironic.writes == []
    assert mod.result["diff"]["before"] == {"n1": []}
    assert [x["project"] for x in mod.result["diff"]["after"]["n1"]] == [A]
    assert mod.result["leases"][0]["status"] == "active"


def test_overlap_refuses_everything():
    ironic = FakeIronic([node("n1"), node("n2")])
    run(ironic, project=B, nodes=["n2"], end=iso(5))
    before = len(ironic.writes)
    with pytest.raises(Conflict) as info:
        run(ironic, project=A, nodes=["n1", "n2"], end=iso(10))
    assert info.value.obj == "node n2" and "overlaps lease" in info.value.cause
    assert len(ironic.writes) == before  # n1 was not leased either


def test_a_lease_that_starts_now_needs_a_free_node():
    ironic = FakeIronic([node("n1", provision_state="active", instance_uuid="x")])
    with pytest.raises(Conflict) as info:
        run(ironic, project=A, nodes=["n1"])
    assert "is in use" in info.value.cause
    run(ironic, project=A, nodes=["n1"], start=iso(2))  # later is fine
    assert ironic.nodes["n1-uuid"]["lessee"] is None


def test_count():
    ironic = FakeIronic([node("n%d" % i) for i in range(3)])
    mod = run(ironic, project=A, resource_class="rc", count=2)
    assert sorted(a["node"] for a in mod.result["actions"]) == ["n0", "n1"]
    assert run(ironic, project=A, resource_class="rc", count=2).result["changed"] is False
    with pytest.raises(Conflict):
        run(ironic, project=B, resource_class="rc", count=2)
    assert ironic.nodes["n2-uuid"]["lessee"] is None


def test_expiry_ends_access_the_esi_leap_way():
    deployed = node(
        "n1",
        lessee=A,
        provision_state="active",
        instance_uuid="alloc-1",
        instance_info={"image_source": "http://x"},
        properties={
            L.LEASES_KEY: [L.make_lease(A, NOW - datetime.timedelta(hours=5), NOW - datetime.timedelta(hours=1), NOW)]
        },
    )
    claimed = node(
        "n2",
        lessee=A,
        instance_uuid="alloc-2",
        instance_info={"traits": []},
        properties={
            L.LEASES_KEY: [L.make_lease(A, NOW - datetime.timedelta(hours=5), NOW - datetime.timedelta(hours=1), NOW)]
        },
    )
    due = node("n3", properties={L.LEASES_KEY: [L.make_lease(B, NOW - datetime.timedelta(minutes=1), None, NOW)]})
    current = node("n4", lessee=B, properties={L.LEASES_KEY: [L.make_lease(B, NOW, None, NOW)]})
    ironic = FakeIronic([deployed, claimed, due, current])
    check = run(ironic, check_mode=True, state="expired")
    assert check.result["changed"] is True and ironic.writes == []
    mod = run(ironic, state="expired", wait=True)
    assert sorted((a["node"], a["action"]) for a in mod.result["actions"]) == [
        ("n1", "ended"),
        ("n2", "ended"),
        ("n3", "started"),
    ]
    n1, n2, n3, n4 = (ironic.nodes["n%d-uuid" % i] for i in range(1, 5))
    # deployed: the patch (lessee, lease record) comes first, then the undeploy
    assert [w[0] for w in ironic.writes if w[1] == "n1"] == ["patch", "provision"]
    assert n1["lessee"] is None and n1["instance_info"] == {} and L.LEASES_KEY not in n1["properties"]
    # claimed, never deployed: instance_uuid removed (Ironic drops the allocation), instance_info cleared
    n2_ops = next(w for w in ironic.writes if w[1] == "n2")[2]
    assert {"op": "remove", "path": "/instance_uuid"} in n2_ops and {"op": "remove", "path": "/instance_info"} in n2_ops
    assert n2["lessee"] is None and n2["instance_uuid"] is None
    assert n3["lessee"] == B
    assert n4["lessee"] == B and [w for w in ironic.writes if w[1] == "n4"] == []
    assert run(ironic, state="expired").result["changed"] is False


def test_ending_access_first_deletes_the_lessees_bmc_accounts():
    leased = node(
        "n1",
        lessee=A,
        properties={
            L.LEASES_KEY: [L.make_lease(A, NOW - datetime.timedelta(hours=5), NOW - datetime.timedelta(hours=1), NOW)]
        },
    )
    other = node("n2", lessee=B, properties={L.LEASES_KEY: [L.make_lease(B, NOW, None, NOW)]})
    ironic = FakeIronic([leased, other])
    revoke = FakeRevoke(ironic, accounts={("n1", A): ["bmt-a1"]})
    assert run(ironic, check_mode=True, state="expired", revoke=revoke).result["changed"] is True
    assert revoke.calls == [] and ironic.writes == []
    mod = run(ironic, state="expired", revoke=revoke)
    assert revoke.calls == [("n1", A, A)]
    assert mod.result["actions"][0]["bmc_accounts_removed"] == ["bmt-a1"]
    assert ironic.nodes["n1-uuid"]["lessee"] is None and ironic.nodes["n2-uuid"]["lessee"] == B


def test_bmc_accounts_that_cannot_be_deleted_keep_the_lessee():
    leased = node(
        "n1",
        lessee=A,
        properties={
            L.LEASES_KEY: [L.make_lease(A, NOW - datetime.timedelta(hours=5), NOW - datetime.timedelta(hours=1), NOW)]
        },
    )
    ironic = FakeIronic([leased])
    refused = InvalidInput("node n1", "Ironic masks driver_info.redfish_password: give the BMC password (bmc_password)")
    mod = run(ironic, state="expired", revoke=FakeRevoke(ironic, error=refused))
    assert ironic.writes == [] and ironic.nodes["n1-uuid"]["lessee"] == A
    assert "bmc_password" in mod.result["deferred"][0]["reason"]
    mod = run(ironic, state="absent", project=A, nodes=["n1"], revoke=FakeRevoke(ironic))
    assert ironic.nodes["n1-uuid"]["lessee"] is None and "bmc_accounts_removed" not in mod.result["actions"][0]


def test_busy_nodes_are_deferred():
    busy = node(
        "n1",
        lessee=A,
        provision_state="deploying",
        target_provision_state="active",
        properties={
            L.LEASES_KEY: [L.make_lease(A, NOW - datetime.timedelta(hours=5), NOW - datetime.timedelta(hours=1), NOW)]
        },
    )
    ironic = FakeIronic([busy])
    mod = run(ironic, state="expired")
    assert ironic.writes == []
    assert mod.result["deferred"][0]["node"] == "n1" and "deploying" in mod.result["deferred"][0]["reason"]
    assert mod.warnings and "n1" in mod.warnings[0]


class Killed(BaseException):
    """The module's process killed (SIGKILL) at a write."""


@pytest.mark.parametrize("rerun", ["absent", "expired"])
def test_a_run_killed_between_ending_access_and_undeploying_is_finished_by_the_next(rerun):
    """The patch that ends a deployed node's lessee marks it; a run killed before the undeployment leaves the node
    deployed with nobody's lease: the next run that writes (absent, expired, present) undeploys it (check mode says
    so); a query only reads."""
    deployed = node(
        "n1",
        lessee=A,
        provision_state="active",
        instance_uuid="alloc-1",
        instance_info={"image_source": "http://x"},
        properties={L.LEASES_KEY: [L.make_lease(A, NOW - datetime.timedelta(hours=5), None, NOW)]},
    )
    ironic = FakeIronic([deployed, node("n2")])
    undeploy = ironic.set_provision_state

    def killed(ident, target, label=None):
        raise Killed()

    ironic.set_provision_state = killed
    with pytest.raises(Killed):
        run(ironic, state="absent", project=A)
    n1 = ironic.nodes["n1-uuid"]
    assert n1["lessee"] is None and n1["provision_state"] == "active" and L.LEASES_KEY not in n1["properties"]
    ironic.set_provision_state = undeploy
    writes = len(ironic.writes)
    assert run(ironic, state="query", project=A).result["changed"] is False and len(ironic.writes) == writes
    check = run(ironic, check_mode=True, state=rerun, project=A)
    assert check.result["changed"] is True and len(ironic.writes) == writes
    assert check.result["actions"] == [{"node": "n1", "lease": None, "project": A, "action": "ended"}]
    finished = run(ironic, state=rerun, project=A, wait=True)
    assert finished.result["changed"] is True
    assert ironic.writes[-1] == ("provision", "n1", "deleted")
    assert n1["provision_state"] == "available" and n1["instance_info"] == {}
    assert run(ironic, state=rerun, project=A).result["changed"] is False


def test_absent_and_query():
    ironic = FakeIronic([node("n1"), node("n2")])
    run(ironic, project=A, nodes=["n1"])
    run(ironic, project=A, nodes=["n2"], start=iso(3), end=iso(4))
    listed = run(ironic, state="query", project=A)
    assert listed.result["changed"] is False
    assert sorted((x["node"], x["status"]) for x in listed.result["leases"]) == [("n1", "active"), ("n2", "pending")]
    ironic.vifs = {"n1-uuid": ["port-of-a"], "n2-uuid": ["port-of-the-next"]}
    first = len(ironic.writes)
    ended = run(ironic, state="absent", project=A)
    assert sorted((a["node"], a["action"]) for a in ended.result["actions"]) == [("n1", "ended"), ("n2", "removed")]
    assert ironic.nodes["n1-uuid"]["lessee"] is None
    # the ended lessee's networks go before anything else (the next lessee's deployment would bind them again);
    # a node whose pending lease was only removed keeps its VIFs (not the ended lessee's)
    writes = [w for w in ironic.writes[first:] if w[1] == "n1"]
    assert writes[0] == ("detach vifs", "n1", ["port-of-a"]), writes
    assert ironic.vifs == {"n2-uuid": ["port-of-the-next"]}
    assert run(ironic, state="absent", project=A).result["changed"] is False


def test_unmanaged_lessees_are_listed_and_can_be_ended():
    ironic = FakeIronic([node("n1", lessee=B)])
    listed = run(ironic, state="query")
    assert listed.result["leases"][0]["status"] == "unmanaged" and listed.result["leases"][0]["project"] == B
    with pytest.raises(Conflict):
        run(ironic, project=A, nodes=["n1"])
    run(ironic, state="absent", project=B, nodes=["n1"])
    assert ironic.nodes["n1-uuid"]["lessee"] is None


@pytest.mark.parametrize(
    "params, words",
    [
        (dict(project=A), "give the nodes to lease"),
        (dict(project=A, nodes=["n1"], count=0), "must be 1 or more"),
        (dict(project=A, nodes=["n1"], start=iso(5), end=iso(2)), "must be after start"),
        (dict(project=A, nodes=["n1"], end="next week"), "ISO 8601"),
        (dict(project=A, nodes=["n1"], wait_timeout=-1), "zero or more seconds"),
        (dict(state="absent"), "needs nodes, project or lease_id"),
    ],
)
def test_bad_input(params, words):
    ironic = FakeIronic([node("n1")])
    with pytest.raises(InvalidInput) as info:
        run(ironic, **params)
    assert words in info.value.message
    assert ironic.writes == []


def test_unknown_project_leases_nothing_and_is_named():
    ironic = FakeIronic([node("n1")])
    ironic.conn = FakeKeystone(known={"tenant-a": A})
    with pytest.raises(NotFound) as info:
        run(ironic, project=B, nodes=["n1"])
    assert info.value.message == "option project: project %s: does not exist in Keystone" % B
    assert ironic.writes == []
    mod = run(ironic, project="tenant-a", nodes=["n1"])
    assert mod.result["project_check"] == "verified" and ironic.nodes["n1-uuid"]["lessee"] == A


def test_unverified_project_is_said_in_the_result():
    ironic = FakeIronic([node("n1")])
    ironic.conn = FakeKeystone(known={})
    mod = run(ironic, project=B, nodes=["n1"], verify_projects=False)
    assert mod.result["project_check"] == "skipped" and mod.result["changed"] is True
    assert any("verify_projects=false" in warning for warning in mod.warnings)
    # a lease of a project deleted since can still be ended
    ended = run(ironic, state="absent", project=B, nodes=["n1"])
    assert ended.result["project_check"] == "unknown" and ended.result["changed"] is True


def test_ending_access_clears_instance_name():
    ironic = FakeIronic([node("n1", lessee=A, instance_name="planted", instance_info={"planted": "x"})])
    run(ironic, state="absent", project=A, nodes=["n1"])
    assert ironic.nodes["n1-uuid"]["instance_name"] is None and ironic.nodes["n1-uuid"]["instance_info"] == {}


# ------------------------------------------------------------------ notices and lead time (the lease keeper)


class FakeClock:
    """The wall clock of a run: sleeping moves it."""

    def __init__(self, now):
        self.time = now
        self.slept = []

    def now(self):
        return self.time

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.time += datetime.timedelta(seconds=seconds)


def leased_until(name, end, project=A, **extra):
    return node(
        name,
        lessee=project,
        properties={L.LEASES_KEY: [L.make_lease(project, NOW - datetime.timedelta(hours=1), end, NOW)]},
        **extra,
    )


def keeper_run(ironic, clock, check_mode=False, **params):
    mod = FakeModule(check_mode=check_mode, state="expired", **params)
    LeaseRun(mod, client=ironic, now=clock.now(), revoke=FakeRevoke(ironic), sleep=clock.sleep, clock=clock.now).run()
    return mod


def test_warn_before_writes_a_notice_the_lessee_can_read_and_keeps_it():
    soon, later = NOW + datetime.timedelta(minutes=30), NOW + datetime.timedelta(hours=5)
    ironic = FakeIronic([leased_until("n1", soon), leased_until("n2", later, project=B)])
    clock = FakeClock(NOW)
    mod = keeper_run(ironic, clock, warn_before=3600)
    assert mod.result["changed"] is True and clock.slept == []
    lease = ironic.nodes["n1-uuid"]["properties"][L.LEASES_KEY][0]
    notice = ironic.nodes["n1-uuid"]["properties"][N.NOTICE_KEY]
    assert notice["lease"] == lease["id"] and notice["project"] == A and notice["end"] == L.format_time(soon)
    assert notice["warned"] == L.format_time(NOW) and L.format_time(soon) in notice["message"]
    assert [(a["node"], a["action"]) for a in mod.result["actions"]] == [("n1", "warned")]
    assert N.NOTICE_KEY not in ironic.nodes["n2-uuid"]["properties"]  # ends in 5 h: not yet
    # only the notice key is written: the lease list is never rewritten for a notice
    assert ironic.writes == [("patch", "n1", [{"op": "add", "path": "/properties/" + N.NOTICE_KEY, "value": notice}])]
    clock.time += datetime.timedelta(minutes=5)
    assert keeper_run(ironic, clock, warn_before=3600).result["changed"] is False  # same end: kept as it is
    assert ironic.nodes["n1-uuid"]["properties"][N.NOTICE_KEY] == notice


def test_a_notice_whose_end_moved_is_replaced_and_one_of_an_ended_lease_dropped():
    ironic = FakeIronic([leased_until("n1", NOW + datetime.timedelta(minutes=30))])
    clock = FakeClock(NOW)
    keeper_run(ironic, clock, warn_before=3600)
    n1 = ironic.nodes["n1-uuid"]
    n1["properties"][L.LEASES_KEY][0]["end"] = L.format_time(NOW + datetime.timedelta(hours=3))
    mod = keeper_run(ironic, clock, warn_before=3600)  # moved beyond the warning: the notice goes
    assert mod.result["changed"] is True and N.NOTICE_KEY not in n1["properties"]
    n1["properties"][L.LEASES_KEY][0]["end"] = L.format_time(NOW + datetime.timedelta(minutes=50))
    keeper_run(ironic, clock, warn_before=3600)
    assert n1["properties"][N.NOTICE_KEY]["end"] == L.format_time(NOW + datetime.timedelta(minutes=50))
    n1["lessee"] = None  # ended by hand: a plain expiry run drops the notice
    assert keeper_run(ironic, clock).result["changed"] is True and N.NOTICE_KEY not in n1["properties"]


def test_lead_time_waits_for_the_end_then_ends_the_lease_and_its_notice():
    end = NOW + datetime.timedelta(seconds=20)
    ironic = FakeIronic(
        [leased_until("n1", end, instance_uuid="alloc-1"), leased_until("n2", NOW + datetime.timedelta(hours=1))]
    )
    clock = FakeClock(NOW)
    check = keeper_run(ironic, clock, check_mode=True, lead_time=30)
    assert check.result["changed"] is True and ironic.writes == [] and clock.slept == []
    assert [(a["node"], a["action"]) for a in check.result["actions"]] == [("n1", "warned"), ("n1", "ended")]
    mod = keeper_run(ironic, clock, lead_time=30)
    assert [(a["node"], a["action"]) for a in mod.result["actions"]] == [("n1", "warned"), ("n1", "ended")]
    assert len(clock.slept) == 1 and clock.time >= end and (clock.time - end).total_seconds() < 1
    n1 = ironic.nodes["n1-uuid"]
    assert n1["lessee"] is None and n1["instance_uuid"] is None
    assert L.LEASES_KEY not in n1["properties"] and N.NOTICE_KEY not in n1["properties"]
    # the notice was written before the end; the end patch removed it with the lessee
    n1_writes = [w[2] for w in ironic.writes if w[1] == "n1"]
    assert n1_writes[0][0]["path"] == "/properties/" + N.NOTICE_KEY and n1_writes[0][0]["op"] == "add"
    assert {"op": "remove", "path": "/properties/" + N.NOTICE_KEY} in n1_writes[1]
    assert {"op": "remove", "path": "/lessee"} in n1_writes[1]
    assert ironic.nodes["n2-uuid"]["lessee"] == A  # ends in an hour: untouched


def test_lead_time_ends_several_leases_each_at_its_own_end():
    ends = [NOW + datetime.timedelta(seconds=s) for s in (5, 12)]
    ironic = FakeIronic([leased_until("n1", ends[1]), leased_until("n2", ends[0], project=B)])
    clock = FakeClock(NOW)
    ended_at = {}
    patch = ironic.patch_node

    def recording_patch(ident, ops, label=None):
        if {"op": "remove", "path": "/lessee"} in ops:
            ended_at[label] = clock.time
        return patch(ident, ops, label)

    ironic.patch_node = recording_patch
    keeper_run(ironic, clock, lead_time=30)
    assert ended_at["n2"] >= ends[0] and (ended_at["n2"] - ends[0]).total_seconds() < 1
    assert ended_at["n1"] >= ends[1] and (ended_at["n1"] - ends[1]).total_seconds() < 1


def test_a_lease_followed_by_another_of_the_same_project_is_not_announced():
    end = NOW + datetime.timedelta(minutes=10)
    first = L.make_lease(A, NOW - datetime.timedelta(hours=1), end, NOW)
    second = L.make_lease(A, end, end + datetime.timedelta(hours=2), NOW)
    ironic = FakeIronic([node("n1", lessee=A, properties={L.LEASES_KEY: [first, second]})])
    assert keeper_run(ironic, FakeClock(NOW), warn_before=3600).result["changed"] is False


@pytest.mark.parametrize("option", ["warn_before", "lead_time"])
def test_negative_warning_or_lead_time_is_refused(option):
    ironic = FakeIronic([leased_until("n1", NOW + datetime.timedelta(minutes=1))])
    with pytest.raises(InvalidInput) as info:
        keeper_run(ironic, FakeClock(NOW), **{option: -1})
    assert info.value.obj == "option %s" % option and ironic.writes == []
