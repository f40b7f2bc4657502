# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""host_offer, host_offer_info and host_offer_claim's runs on an in-memory ESI-Leap and Ironic (no network):
check mode writes nothing, reruns change nothing, one refusal leaves nothing created, a tenant ends only its own
leases. The real services are exercised by tests/integration/esi/test_esi_leap_offers.py."""

import itertools

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    Conflict,
    Forbidden,
    InvalidInput,
    NotFound,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import esi_leap_model as M
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import esi_leap_offers as R
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.lease_model import utcnow
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.fake_module import FakeModule

OWNER = "o" * 32
A = "a" * 32
B = "b" * 32
NAMES = {OWNER: "infra", A: "tenant-a", B: "tenant-b"}


class FakeIronic:
    def __init__(self, project, nodes):
        self.project = project
        self.nodes = nodes  # uuid -> node
        self.vifs = {}  # node UUID: attached VIFs
        self.vifs_forbidden = False  # the owner's policy keeps VIFs to the owner
        self.allocations = {}  # uuid -> allocation (its owner: the project that made it)
        self.patches = []

    def get_allocation(self, ident, fields=()):
        allocation = self.allocations.get(ident)
        return allocation if allocation is not None and allocation["owner"] == self.project else None

    def delete_allocation(self, ident, label=None):
        assert self.allocations[ident]["owner"] == self.project, "deleted another project's allocation"
        del self.allocations[ident]
        for node in self.nodes.values():
            if node.get("instance_uuid") == ident:
                node["instance_uuid"] = None

    def patch_node(self, ident, ops, label=None):
        self.patches.append((ident, ops))

    def detach_vifs(self, ident, label=None):
        if self.vifs_forbidden:
            raise Forbidden("node %s" % label, "Access was denied to the following resource (HTTP 403)")
        return self.vifs.pop(ident, [])

    def require_project(self, what):
        return self.project

    def _visible(self, node):
        return self.project in (node["owner"], node.get("lessee"))

    def get_node(self, ident, fields=(), missing_ok=False):
        for node in self.nodes.values():
            if ident in (node["uuid"], node["name"]) and self._visible(node):
                return {key: node.get(key) for key in fields}
        assert missing_ok
        return None

    def list_nodes(self, fields=(), owner=None, resource_class=None):
        return [
            {key: node.get(key) for key in fields}
            for node in self.nodes.values()
            if self._visible(node) and node["owner"] == owner and resource_class in (None, node["resource_class"])
        ]

    def poll(self, fetch, done, timeout, what, failed=None, describe=None, service=None):
        value = fetch()
        assert done(value), describe(value)
        return value


class FakeEsiLeap:
    """ESI-Leap's rules that the runs meet: offers and claims, overlaps refused, offers for one project."""

    def __init__(self, project, ironic, state=None):
        self.project = project
        self.ironic = ironic
        self.state = state if state is not None else {"offers": {}, "leases": {}, "ids": itertools.count(1)}
        self.writes = []

    def as_project(self, project):
        return FakeEsiLeap(project, FakeIronic(project, self.ironic.nodes), self.state)

    def _offer_record(self, record):
        node = self.ironic.nodes[record["resource_uuid"]]
        out = dict(record, resource=node["name"], resource_class=node["resource_class"])
        out["project"] = NAMES.get(record["project_id"])
        out["lessee"] = NAMES.get(record.get("lessee_id"))
        out["availabilities"] = [[record["start_time"], record["end_time"]]]
        return out

    def _may_see(self, record):
        return record.get("lessee_id") in (None, self.project) or record["project_id"] == self.project

    def list_offers(self, project_id=None, resource_class=None):
        out = []
        for record in self.state["offers"].values():
            offer = M.parse_offer(self._offer_record(record))
            if record["status"] != "available" or not self._may_see(record):
                continue
            if project_id not in (None, record["project_id"]) or resource_class not in (None, offer.resource_class):
                continue
            out.append(offer)
        return out

    def get_offer(self, uuid, obj=None):
        record = self.state["offers"].get(uuid)
        if record is None:
            return None
        if not self._may_see(record):
            raise M.esi_error("offer %s" % uuid, 403, "Access was denied to offer %s." % uuid)
        return M.parse_offer(self._offer_record(record))

    def create_offer(self, wish):
        self.writes.append(("create", wish.node))
        now = utcnow()
        for record in self.state["offers"].values():
            offer = M.parse_offer(self._offer_record(record))
            if offer.status == "available" and offer.node_uuid == wish.node_uuid:
                if M.overlaps(offer.start, offer.end, wish.start, wish.end, now):
                    raise M.esi_error(wish.describe(), 500, "Time conflict for ironic_node %s." % wish.node_uuid)
        uuid = "offer-%d" % next(self.state["ids"])
        lessee = {"tenant-a": A, "tenant-b": B}.get(wish.lessee, wish.lessee)
        self.state["offers"][uuid] = {
            "uuid": uuid,
            "resource_uuid": wish.node_uuid,
            "project_id": self.project,
            "lessee_id": lessee,
            "start_time": M.esi_time(wish.start or now),
            "end_time": M.esi_time(wish.end) if wish.end else "9999-12-31T23:59:59.999999",
            "status": "available",
        }
        return M.parse_offer(self._offer_record(self.state["offers"][uuid]))

    def delete_offer(self, uuid, obj=None):
        self.writes.append(("delete", uuid))
        self.state["offers"][uuid]["status"] = "deleted"

    def claim_offer(self, uuid, body, obj=None):
        self.writes.append(("claim", uuid))
        record = self.state["offers"][uuid]
        lease_uuid = "lease-%d" % next(self.state["ids"])
        self.state["leases"][lease_uuid] = {
            "uuid": lease_uuid,
            "offer_uuid": uuid,
            "resource_uuid": record["resource_uuid"],
            "project_id": self.project,
            "owner_id": record["project_id"],
            "start_time": body.get("start_time") or M.esi_time(utcnow()),
            "end_time": body.get("end_time") or record["end_time"],
            "status": "created",
        }
        return self.get_lease(lease_uuid)

    def _lease(self, record):
        node = self.ironic.nodes[record["resource_uuid"]]
        return M.parse_lease(dict(record, resource=node["name"], resource_class=node["resource_class"]))

    def list_leases(self):
        return [
            self._lease(r)
            for r in self.state["leases"].values()
            if self.project in (r["project_id"], r["owner_id"]) and r["status"] in M.HELD
        ]

    def get_lease(self, uuid, obj=None, missing_ok=False):
        record = self.state["leases"].get(uuid)
        if record is None:
            return None
        if self.project not in (record["project_id"], record["owner_id"]):
            raise M.esi_error(obj or "lease %s" % uuid, 403, "Access was denied to lease %s." % uuid)
        return self._lease(record)

    def delete_lease(self, uuid, obj=None):
        self.writes.append(("end", uuid))
        self.state["leases"][uuid]["status"] = "deleted"

    def fulfil(self):
        """The manager's tick: created leases become active and their node's lessee."""
        for record in self.state["leases"].values():
            if record["status"] == "created":
                record["status"] = "active"
                self.ironic.nodes[record["resource_uuid"]]["lessee"] = record["project_id"]

    def poll(self, fetch, done, timeout, what, failed=None, describe=None, service=None):
        self.fulfil()
        value = fetch()
        assert done(value), describe(value)
        return value


def node(name, owner=OWNER, rc="rc", properties=None):
    return {
        "uuid": name + "-uuid",
        "name": name,
        "owner": owner,
        "lessee": None,
        "resource_class": rc,
        "properties": properties or {"cpus": 4},
    }


@pytest.fixture
def pool():
    nodes = {
        n["uuid"]: n
        for n in (
            node("n1"),
            node("n2", properties={"cpus": 16, "cpu_arch": "x86_64"}),
            node("n3", rc="big", properties={"cpus": 16, "cpu_arch": "x86_64", "secret_bmc": "x"}),
            node("other", owner=B, properties={"cpus": 16}),
        )
    }
    ironic = FakeIronic(OWNER, nodes)
    return ironic, FakeEsiLeap(OWNER, ironic)


def offer_params(**params):
    base = dict(state="present", nodes=None, resource_class=None, properties=None, start=None, end=None, lessee=None)
    base.update(params)
    return base


def run_offer(pool, check_mode=False, **params):
    mod = FakeModule(check_mode=check_mode, **offer_params(**params))
    R.run_host_offer(mod, *pool)
    return mod.result


def claim_params(**params):
    base = dict(
        state="present",
        offer=None,
        resource_class=None,
        node=None,
        start=None,
        end=None,
        lease=None,
        wait=False,
        wait_timeout=60,
    )
    base.update(params)
    return base


def run_claim(esi, check_mode=False, **params):
    mod = FakeModule(check_mode=check_mode, **claim_params(**params))
    R.run_host_offer_claim(mod, esi.ironic, esi)
    return mod.result


# ------------------------------------------------------------------ host_offer


def test_check_mode_writes_nothing_then_offers_are_made_once(pool):
    esi = pool[1]
    check = run_offer(pool, check_mode=True, nodes=["n1", "n2"], lessee="tenant-a", end="2099-01-01T00:00:00Z")
    assert check["changed"] is True and esi.writes == []
    assert [(a["node"], a["offer"], a["action"]) for a in check["actions"]] == [
        ("n1", None, "created"),
        ("n2", None, "created"),
    ]
    made = run_offer(pool, nodes=["n1", "n2"], lessee="tenant-a", end="2099-01-01T00:00:00Z")
    assert made["changed"] is True and [o["lessee"] for o in made["offers"]] == [A, A]
    assert made["diff"]["before"] == {} and sorted(made["diff"]["after"]) == ["n1", "n2"]
    again = run_offer(pool, nodes=["n1", "n2"], lessee="tenant-a", end="2099-01-01T00:00:00Z")
    assert again["changed"] is False and again["actions"] == []
    assert sorted(o["uuid"] for o in again["offers"]) == sorted(o["uuid"] for o in made["offers"])
    assert len(esi.writes) == 2


def test_a_node_the_owner_does_not_own_is_one_error_and_nothing_is_offered(pool):
    with pytest.raises(NotFound) as error:
        run_offer(pool, nodes=["n1", "other"])
    assert error.value.message.startswith("option nodes: node other: is not a node of project %s" % OWNER)
    assert pool[1].writes == []


def test_a_refused_offer_withdraws_the_ones_the_run_made_before_it(pool):
    run_offer(pool, nodes=["n2"], end="2099-01-01T00:00:00Z")
    esi = pool[1]
    esi.writes.clear()
    mod = FakeModule(**offer_params(nodes=["n1", "n2"], start="2098-01-01T00:00:00Z"))
    with pytest.raises(Conflict) as error:
        R.run_host_offer(mod, *pool)
    assert mod.result["changed"] is False
    message = error.value.message
    assert message.startswith("offer of node n2 to every project from 2098-01-01T00:00:00Z to no end: ESI-Leap refused")
    assert "Time conflict" in message and "was undone" in message
    assert esi.writes[0] == ("create", "n1") and esi.writes[-1][0] == "delete"
    assert [o.node for o in esi.list_offers()] == ["n2"]


def test_check_mode_refuses_an_overlap_as_esi_leap_would(pool):
    run_offer(pool, nodes=["n1"], start="2098-01-01T00:00:00Z", end="2098-02-01T00:00:00Z")
    with pytest.raises(Conflict, match="ESI-Leap would refuse it: its window overlaps offer offer-1"):
        run_offer(pool, check_mode=True, nodes=["n1"], start="2098-01-15T00:00:00Z")


def test_offers_by_resource_class_and_their_withdrawal(pool):
    made = run_offer(pool, resource_class="rc")
    assert [o["node"] for o in made["offers"]] == ["n1", "n2"]
    check = run_offer(pool, check_mode=True, state="absent", resource_class="rc")
    assert check["changed"] is True and len(pool[1].list_offers()) == 2
    gone = run_offer(pool, state="absent", nodes=["n1"])
    assert [(a["node"], a["action"]) for a in gone["actions"]] == [("n1", "withdrawn")]
    assert gone["offers"][0]["status"] == "deleted" and gone["diff"]["after"] == {}
    assert run_offer(pool, state="absent", nodes=["n1"])["changed"] is False
    with pytest.raises(NotFound, match="owns no node of this resource class"):
        run_offer(pool, resource_class="none")


def test_offers_by_properties_alone_with_a_class_or_of_named_nodes(pool):
    made = run_offer(pool, check_mode=True, properties={"cpus": "16", "cpu_arch": "x86_64"})
    assert [a["node"] for a in made["actions"]] == ["n2", "n3"]  # "16" matches 16; not tenant-b's node
    assert "secret_bmc" not in repr(made) and "cpus" not in repr(made)
    assert [
        a["node"] for a in run_offer(pool, check_mode=True, resource_class="big", properties={"cpus": 16})["actions"]
    ] == ["n3"]
    with pytest.raises(NotFound, match="owns no node of resource class rc with these properties"):
        run_offer(pool, resource_class="rc", properties={"cpus": 8})
    with pytest.raises(InvalidInput) as error:
        run_offer(pool, nodes=["n2", "n1"], properties={"cpus": 16})
    assert error.value.message.startswith("option nodes: node n1: does not match option properties: its property cpus")
    with pytest.raises(InvalidInput, match="node n2: does not match option properties: has no property gpu"):
        run_offer(pool, nodes=["n2"], properties={"gpu": "a100"})
    assert pool[1].writes == []


def test_properties_mismatch_names_the_key_never_the_nodes_value():
    assert M.properties_mismatch({"cpus": 8, "arch": "x"}, {"cpus": "8"}) is None
    assert M.properties_mismatch({"cpus": 8}, None) is None
    assert M.properties_mismatch(None, {"cpus": 8}) == "has no property cpus"
    assert M.properties_mismatch({"cpus": 4}, {"cpus": 8}) == "its property cpus is not 8"
    assert M.properties_mismatch({"caps": ["a"]}, {"caps": ["a"]}) is None


def test_a_bad_window_is_refused_before_any_request(pool):
    with pytest.raises(InvalidInput, match="option end: must be after start"):
        run_offer((None, None), nodes=["n1"], start="2026-05-02", end="2026-05-01")


# ------------------------------------------------------------------ host_offer_info and host_offer_claim


def test_a_tenant_sees_claims_and_ends_its_lease_and_a_second_claim_finds_it(pool):
    run_offer(pool, nodes=["n1"], lessee="tenant-a")
    run_offer(pool, nodes=["n2"])
    tenant_a = pool[1].as_project(A)
    info = FakeModule(resource_class=None, node=None, available=True)
    R.run_host_offer_info(info, tenant_a.ironic, tenant_a)
    assert sorted(o["node"] for o in info.result["offers"]) == ["n1", "n2"]
    assert all(o["claimable"] for o in info.result["offers"]) and info.result["leases"] == []

    check = run_claim(tenant_a, check_mode=True, node="n1")
    assert check["changed"] is True and check["lease"]["uuid"] is None and tenant_a.writes == []
    claimed = run_claim(tenant_a, node="n1", wait=True)
    assert claimed["changed"] is True and claimed["lease"]["status"] == "active"
    assert pool[0].nodes["n1-uuid"]["lessee"] == A
    again = run_claim(tenant_a, node="n1", wait=True)
    assert again["changed"] is False and again["lease"]["uuid"] == claimed["lease"]["uuid"]
    assert again["offer"] is None

    tenant_a.ironic.vifs = {"n1-uuid": ["port-of-a"]}
    ended = run_claim(tenant_a, state="absent", node="n1")
    assert ended["changed"] is True and ended["ended"] == [claimed["lease"]["uuid"]]
    assert tenant_a.ironic.vifs == {}, "the tenant's VIFs stayed attached after its lease"
    assert run_claim(tenant_a, state="absent", node="n1")["changed"] is False


def test_a_tenant_the_owner_keeps_from_vifs_ends_its_lease_and_is_told_its_vifs_stay(pool):
    run_offer(pool, nodes=["n1"], lessee="tenant-a")
    tenant_a = pool[1].as_project(A)
    run_claim(tenant_a, node="n1", wait=True)
    tenant_a.ironic.vifs = {"n1-uuid": ["attached-by-the-owner"]}
    tenant_a.ironic.vifs_forbidden = True
    mod = FakeModule(**claim_params(state="absent", node="n1"))
    R.run_host_offer_claim(mod, tenant_a.ironic, tenant_a)
    assert mod.result["changed"] is True and len(mod.result["ended"]) == 1
    assert tenant_a.ironic.vifs == {"n1-uuid": ["attached-by-the-owner"]}
    assert mod.warnings == [
        "node n1: its VIFs stay attached (Access was denied to the following resource (HTTP 403)): the owner's "
        "policy keeps VIFs to the owner, who must detach them before the node is leased again"
    ], mod.warnings


def test_tenant_b_can_neither_claim_an_offer_for_tenant_a_nor_end_its_lease(pool):
    made = run_offer(pool, nodes=["n1"], lessee="tenant-a")
    uuid = made["offers"][0]["uuid"]
    tenant_b = pool[1].as_project(B)
    with pytest.raises(Forbidden) as error:
        run_claim(tenant_b, offer=uuid)
    assert error.value.message.startswith("offer %s: is not offered to project %s" % (uuid, B))
    with pytest.raises(NotFound, match="offers of node n1: none is available to project"):
        run_claim(tenant_b, node="n1")
    lease = run_claim(pool[1].as_project(A), offer=uuid)["lease"]["uuid"]
    with pytest.raises(Forbidden, match="lease %s: ESI-Leap does not allow it" % lease):
        run_claim(tenant_b, state="absent", lease=lease)
    assert tenant_b.writes == []
    assert pool[1].state["leases"][lease]["status"] == "created"


def test_a_claim_needs_something_to_choose_by(pool):
    with pytest.raises(InvalidInput, match="give the offer to claim"):
        run_claim(pool[1].as_project(A))
    with pytest.raises(NotFound, match="offer nope: does not exist"):
        run_claim(pool[1].as_project(A), offer="nope")


def test_a_tenant_ending_its_lease_deletes_its_claim_of_a_node_never_deployed(pool):
    """ESI-Leap leaves an allocation on a node that is not deployed: the node would stay allocated, so no next
    lessee's claim could get it. The tenant deletes its own allocation (as a release does), never another's."""
    run_offer(pool, nodes=["n1"], lessee="tenant-a")
    tenant_a = pool[1].as_project(A)
    run_claim(tenant_a, node="n1", wait=True)
    nodes = pool[0].nodes
    nodes["n1-uuid"]["instance_uuid"] = "alloc-a"
    tenant_a.ironic.allocations = {"alloc-a": {"uuid": "alloc-a", "name": "a-db-0", "owner": A}}
    ended = run_claim(tenant_a, state="absent", node="n1")
    assert ended["changed"] is True and tenant_a.ironic.allocations == {}
    assert nodes["n1-uuid"]["instance_uuid"] is None

    run_offer(pool, nodes=["n2"], lessee="tenant-a")
    run_claim(tenant_a, node="n2", wait=True)
    nodes["n2-uuid"]["instance_uuid"] = "alloc-owner"
    tenant_a.ironic.allocations = {"alloc-owner": {"uuid": "alloc-owner", "name": "owners", "owner": OWNER}}
    run_claim(tenant_a, state="absent", node="n2")
    assert list(tenant_a.ironic.allocations) == ["alloc-owner"], "a tenant deleted an allocation not its own"
