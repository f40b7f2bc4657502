"""The collection speaking ESI-Leap: host_offer, host_offer_info and host_offer_claim through ansible-playbook.

Marker ``esi`` (``make test-esi``). ESI-Leap's API and manager (a 1-s tick) run beside the session's Keystone and
Ironic (:mod:`fixtures_esi`); every step is an ``ansible-playbook`` run with the acting project's own credentials
(the owner ``infra``, the tenants ``tenant-a`` and ``tenant-b``: clouds of ``openstack_env``'s clouds.yaml), and
what ESI-Leap and its manager did is read back as the owner from ESI-Leap and as the administrator from Ironic.

The story, in three playbooks whose steps are asserted one test each:

1. the owner offers two nodes to tenant-a: check mode first (changes nothing), then for real, then again (changed
   false); an offer of a node another project owns is one error naming it; a second offer of a node whose window
   overlaps the first is ESI-Leap's refusal, reported as such; a tenant cannot offer a node;
2. tenant-b neither sees the offers made for tenant-a nor claims one (one error each, nothing changed); tenant-a
   lists them, claims one with its own credentials and waits until ESI-Leap's manager made its project the node's
   ``lessee``; a second claim finds the lease already held; a claim outside the offer's window is ESI-Leap's
   refusal; tenant-b cannot end tenant-a's lease;
3. tenant-a ends its lease early (the node's ``lessee`` goes), the owner withdraws the rest, and a rerun changes
   nothing.
"""

from __future__ import annotations

import time

import pytest
from harness.ansible import localhost_play, run_playbook

pytestmark = pytest.mark.esi

RC = "esi-offers"
NODES = ("eo-1", "eo-2", "eo-3")
WAIT = 120  # seconds for a module's wait (the manager ticks every second)


def iso(seconds_from_now: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + seconds_from_now))


def task(name: str, module: str, check: bool = False, register: str | None = None, **args) -> dict:
    out = {"name": name, "baremetal.tenancy.%s" % module: args, "ignore_errors": True}
    if check:
        out["check_mode"] = True
    if register:
        out["register"] = register
    return out


def offers_of(esi_api, owner, node_id: str, status: str = "available") -> list[dict]:
    resp = esi_api(owner).get("/v1/offers", params={"resource_uuid": node_id, "status": status})
    assert resp.status_code == 200, resp.text
    return resp.json()["offers"]


def leases_of(esi_api, owner, node_id: str) -> list[dict]:
    resp = esi_api(owner).get("/v1/leases", params={"resource_uuid": node_id, "status": "any"})
    assert resp.status_code == 200, resp.text
    return resp.json()["leases"]


@pytest.fixture(scope="module")
def nodes(enroll_node, tenant_b):
    """The owner's three nodes, and one node tenant-b owns."""
    out = {name: enroll_node(name, resource_class=RC) for name in NODES}
    out["eo-foreign"] = enroll_node("eo-foreign", resource_class=RC, owner=tenant_b.project_id)
    return out


@pytest.fixture(scope="module")
def window():
    """The window of the owner's offer of eo-3 (in an hour, for two hours) and one overlapping it."""
    return {"start": iso(3600), "end": iso(3 * 3600), "overlap_start": iso(2 * 3600), "overlap_end": iso(4 * 3600)}


@pytest.fixture(scope="module")
def owner_run(esi_leap_env, openstack_env, nodes, window, tmp_path_factory):
    """Playbook 1: the owner's offers (and a tenant's attempt to offer)."""
    two = dict(nodes=["eo-1", "eo-2"], lessee="tenant-a")
    play = localhost_play(
        [
            task("offer two (check)", "host_offer", check=True, **two),
            task("list after check", "host_offer_info", node="eo-1"),
            task("offer two", "host_offer", **two),
            task("offer two again", "host_offer", **two),
            task("offer eo-3 later", "host_offer", nodes=["eo-3"], lessee="tenant-a", **_window(window)),
            task(
                "offer eo-3 overlapping",
                "host_offer",
                nodes=["eo-3"],
                start=window["overlap_start"],
                end=window["overlap_end"],
            ),
            task("offer a node of tenant-b", "host_offer", nodes=["eo-1", "eo-foreign"]),
            task("tenant-a offers", "host_offer", cloud="tenant-a", resource_class=RC),
        ]
    )
    return run_playbook(play, openstack_env.ansible_env("infra"), tmp_path_factory.mktemp("esi-owner"), diff=True)


def _window(window: dict) -> dict:
    return {"start": window["start"], "end": window["end"]}


@pytest.fixture(scope="module")
def tenant_run(owner_run, openstack_env, tmp_path_factory):
    """Playbook 2: tenant-b's attempts, tenant-a's claims."""
    offer = owner_run.result("offer two")["offers"][0]["uuid"]
    later = owner_run.result("offer eo-3 later")["offers"][0]["uuid"]
    play = localhost_play(
        [
            task("b lists", "host_offer_info", cloud="tenant-b", resource_class=RC),
            task("b claims the offer for a", "host_offer_claim", cloud="tenant-b", offer=offer),
            task("b claims by node", "host_offer_claim", cloud="tenant-b", node="eo-1"),
            task("a lists", "host_offer_info", cloud="tenant-a", resource_class=RC, available=True),
            task("a claims (check)", "host_offer_claim", check=True, cloud="tenant-a", node="eo-1"),
            task(
                "a claims",
                "host_offer_claim",
                register="claim",
                cloud="tenant-a",
                node="eo-1",
                wait=True,
                wait_timeout=WAIT,
            ),
            task("a claims again", "host_offer_claim", cloud="tenant-a", node="eo-1", wait=True, wait_timeout=WAIT),
            task("a claims outside the window", "host_offer_claim", cloud="tenant-a", offer=later),
            task(
                "b ends a's lease", "host_offer_claim", cloud="tenant-b", state="absent", lease="{{ claim.lease.uuid }}"
            ),
            task("a lists its leases", "host_offer_info", cloud="tenant-a", node="eo-1"),
        ]
    )
    return run_playbook(play, openstack_env.ansible_env("tenant-a"), tmp_path_factory.mktemp("esi-tenant"))


@pytest.fixture(scope="module")
def end_run(tenant_run, openstack_env, tmp_path_factory):
    """Playbook 3: tenant-a ends its lease early, the owner withdraws its offers."""
    lease = tenant_run.result("a claims")["lease"]["uuid"]
    every = dict(cloud="infra", state="absent", nodes=list(NODES))
    play = localhost_play(
        [
            task("a ends its lease", "host_offer_claim", state="absent", lease=lease, wait=True, wait_timeout=WAIT),
            task("a ends it again", "host_offer_claim", state="absent", lease=lease),
            task("withdraw (check)", "host_offer", check=True, **every),
            task("withdraw", "host_offer", **every),
            task("withdraw again", "host_offer", **every),
        ]
    )
    return run_playbook(play, openstack_env.ansible_env("tenant-a"), tmp_path_factory.mktemp("esi-end"), diff=True)


# ------------------------------------------------------------------ 1. the owner's offers


def test_check_mode_offers_nothing(owner_run):
    check = owner_run.result("offer two (check)")
    assert check.get("failed") is not True, owner_run.explain()
    assert check["changed"] is True
    assert [(a["node"], a["offer"], a["action"]) for a in check["actions"]] == [
        ("eo-1", None, "created"),
        ("eo-2", None, "created"),
    ]
    assert owner_run.result("list after check")["offers"] == []


def test_the_owner_offers_two_nodes_to_tenant_a_once(owner_run, esi_api, infra, tenant_a, nodes):
    made = owner_run.result("offer two")
    assert made.get("failed") is not True, owner_run.explain()
    assert made["changed"] is True and [a["action"] for a in made["actions"]] == ["created", "created"]
    assert [(o["node"], o["lessee"], o["end"], o["status"]) for o in made["offers"]] == [
        ("eo-1", tenant_a.project_id, None, "available"),
        ("eo-2", tenant_a.project_id, None, "available"),
    ]
    assert sorted(made["diff"]["after"]) == ["eo-1", "eo-2"] and made["diff"]["before"] == {}
    again = owner_run.result("offer two again")
    assert again["changed"] is False and again["actions"] == []
    assert [o["uuid"] for o in again["offers"]] == [o["uuid"] for o in made["offers"]]
    for name in ("eo-1", "eo-2"):
        assert [o["uuid"] for o in offers_of(esi_api, infra, nodes[name].id)] == [
            o["uuid"] for o in made["offers"] if o["node"] == name
        ]


def test_no_result_carries_bmc_data(owner_run, tenant_run):
    text = repr(owner_run.report) + repr(tenant_run.report)
    for secret in ("driver_info", "redfish_address", "redfish_password", "ipmi_", "resource_properties"):
        assert secret not in text


def test_an_overlapping_window_is_esi_leaps_refusal(owner_run, esi_api, infra, nodes, window):
    first = owner_run.result("offer eo-3 later")
    assert first["changed"] is True and first["offers"][0]["start"] == window["start"]
    refused = owner_run.result("offer eo-3 overlapping")
    assert refused["failed"] is True and refused["changed"] is False and refused["error_type"] == "Conflict"
    assert refused["msg"].startswith(
        "offer of node eo-3 to every project from %s to %s: ESI-Leap refused it: its window overlaps another offer or "
        "lease of the node (ESI-Leap: Time conflict for ironic_node %s"
        % (window["overlap_start"], window["overlap_end"], nodes["eo-3"].id)
    ), refused["msg"]
    assert [o["uuid"] for o in offers_of(esi_api, infra, nodes["eo-3"].id)] == [first["offers"][0]["uuid"]]


def test_an_offer_of_a_node_the_owner_does_not_own_is_one_clear_error(owner_run, esi_api, infra, nodes):
    refused = owner_run.result("offer a node of tenant-b")
    assert refused["failed"] is True and refused["changed"] is False and refused["error_type"] == "NotFound"
    assert refused["msg"].startswith(
        "option nodes: node eo-foreign: is not a node of project %s: Ironic does not show it" % infra.project_id
    ), refused["msg"]
    assert offers_of(esi_api, infra, nodes["eo-foreign"].id, status="any") == []
    assert len(offers_of(esi_api, infra, nodes["eo-1"].id)) == 1  # nothing more for eo-1 either


def test_a_tenant_cannot_offer_a_node(owner_run):
    refused = owner_run.result("tenant-a offers")
    assert refused["failed"] is True and refused["changed"] is False
    assert "owns no node of this resource class" in refused["msg"], refused["msg"]


# ------------------------------------------------------------------ 2. the tenants' claims


def test_tenant_b_neither_sees_nor_claims_the_offers_for_tenant_a(
    tenant_run, owner_run, esi_api, infra, tenant_b, nodes
):
    assert tenant_run.result("b lists")["offers"] == []
    offer = owner_run.result("offer two")["offers"][0]["uuid"]
    by_uuid = tenant_run.result("b claims the offer for a")
    assert by_uuid["failed"] is True and by_uuid["changed"] is False and by_uuid["error_type"] == "Forbidden"
    assert by_uuid["msg"].startswith("offer %s: is not offered to project %s" % (offer, tenant_b.project_id))
    by_node = tenant_run.result("b claims by node")
    assert by_node["failed"] is True and by_node["changed"] is False
    assert by_node["msg"].startswith("offers of node eo-1: none is available to project %s" % tenant_b.project_id)
    assert all(lease["project_id"] != tenant_b.project_id for lease in leases_of(esi_api, infra, nodes["eo-1"].id))


def test_tenant_a_lists_and_claims_and_becomes_the_lessee(tenant_run, openstack_env, tenant_a, nodes):
    listed = tenant_run.result("a lists")
    assert sorted(o["node"] for o in listed["offers"]) == ["eo-1", "eo-2"]  # eo-3's offer starts later
    assert all(o["claimable"] for o in listed["offers"]) and listed["project"] == tenant_a.project_id
    check = tenant_run.result("a claims (check)")
    assert check["changed"] is True and check["lease"]["uuid"] is None
    claimed = tenant_run.result("a claims")
    assert claimed.get("failed") is not True, tenant_run.explain()
    assert claimed["changed"] is True and claimed["lease"]["status"] == "active"
    assert claimed["lease"]["node"] == "eo-1" and claimed["lease"]["project"] == tenant_a.project_id
    node = openstack_env.admin_conn.baremetal.get_node(nodes["eo-1"].id)
    assert node.lessee == tenant_a.project_id and node.properties["lease_uuid"] == claimed["lease"]["uuid"]
    mine = tenant_run.result("a lists its leases")["leases"]
    assert [(x["uuid"], x["status"]) for x in mine] == [(claimed["lease"]["uuid"], "active")]


def test_a_second_claim_finds_the_lease_already_held(tenant_run, esi_api, infra, nodes):
    first = tenant_run.result("a claims")["lease"]
    again = tenant_run.result("a claims again")
    assert again["changed"] is False and again["lease"]["uuid"] == first["uuid"] and again["offer"] is None
    held = [x for x in leases_of(esi_api, infra, nodes["eo-1"].id) if x["status"] in ("created", "active")]
    assert [x["uuid"] for x in held] == [first["uuid"]]


def test_a_claim_outside_the_offers_window_is_esi_leaps_refusal(tenant_run, owner_run, esi_api, infra, nodes):
    later = owner_run.result("offer eo-3 later")["offers"][0]["uuid"]
    refused = tenant_run.result("a claims outside the window")
    assert refused["failed"] is True and refused["changed"] is False and refused["error_type"] == "Conflict"
    assert refused["msg"].startswith(
        "claim of offer %s (node eo-3): ESI-Leap refused it: the offer is not available" % later
    )
    assert "has no availabilities" in refused["msg"], refused["msg"]
    assert leases_of(esi_api, infra, nodes["eo-3"].id) == []


def test_tenant_b_cannot_end_tenant_a_lease(tenant_run, openstack_env, tenant_a, nodes):
    lease = tenant_run.result("a claims")["lease"]["uuid"]
    refused = tenant_run.result("b ends a's lease")
    assert refused["failed"] is True and refused["changed"] is False and refused["error_type"] == "Forbidden"
    assert refused["msg"].startswith("lease %s: ESI-Leap does not allow it to these credentials" % lease)
    assert openstack_env.admin_conn.baremetal.get_node(nodes["eo-1"].id).lessee == tenant_a.project_id


# ------------------------------------------------------------------ 3. the end


def test_tenant_a_ends_its_lease_early(end_run, tenant_run, openstack_env, nodes):
    lease = tenant_run.result("a claims")["lease"]["uuid"]
    ended = end_run.result("a ends its lease")
    assert ended.get("failed") is not True, end_run.explain()
    assert ended["changed"] is True and ended["ended"] == [lease]
    assert end_run.result("a ends it again")["changed"] is False
    node = openstack_env.admin_conn.baremetal.get_node(nodes["eo-1"].id)
    assert node.lessee is None and "lease_uuid" not in node.properties


def test_the_owner_withdraws_the_rest(end_run, owner_run, esi_api, infra, nodes):
    check = end_run.result("withdraw (check)")
    assert check["changed"] is True and len(check["actions"]) == 3
    withdrawn = end_run.result("withdraw")
    assert withdrawn.get("failed") is not True, end_run.explain()
    assert sorted(a["node"] for a in withdrawn["actions"]) == ["eo-1", "eo-2", "eo-3"]
    assert withdrawn["diff"]["after"] == {}
    assert end_run.result("withdraw again")["changed"] is False
    for name in NODES:
        assert offers_of(esi_api, infra, nodes[name].id) == []
