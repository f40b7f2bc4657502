"""The owner leases directly through ESI-Leap: host_lease with lease_provider esi_leap, through ansible-playbook.

Marker ``esi`` (``make test-esi``). ESI-Leap's API and manager (a 1-s tick) run beside the session's Keystone and
Ironic (:mod:`fixtures_esi`). The owner (a member of ``infra``, with its own project-scoped credentials) runs
host_lease as it does on node-field leases; ESI-Leap makes the leases and its manager sets and removes the nodes'
``lessee``, read back as the administrator from Ironic and as the owner from ESI-Leap. The results, check mode,
diff, idempotence and errors are those of host_lease on node fields:

1. the owner leases a node to tenant-a (check mode first: nothing made), waits until the manager made tenant-a its
   ``lessee``, and a rerun changes nothing; a lease of the same node to tenant-b is refused naming the lease it
   overlaps, and nothing is made; a later lease of another node is pending; one that overlaps it is refused; a node
   the owner does not own is one error naming it; the provider is found from the catalog (``auto``) and forced
   ``ironic`` is a warning; ``state=expired`` changes nothing (ESI-Leap's manager ends leases);
2. the owner ends the leases: check mode ends nothing, then the ``lessee`` and ``properties.lease_uuid`` go, and a
   rerun changes nothing.
"""

from __future__ import annotations

import time

import pytest
from harness.ansible import localhost_play, run_playbook

pytestmark = pytest.mark.esi

RC = "esi-leases"
NODES = ("el-1", "el-2", "el-3")
WAIT = 120


def iso(seconds_from_now: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + seconds_from_now))


def task(name: str, check: bool = False, **args) -> dict:
    out = {"name": name, "baremetal.tenancy.host_lease": args, "ignore_errors": True}
    if check:
        out["check_mode"] = True
    return out


def leases_of(esi_api, owner, node_id: str, status: str = "any") -> list[dict]:
    resp = esi_api(owner).get("/v1/leases", params={"resource_uuid": node_id, "status": status})
    assert resp.status_code == 200, resp.text
    return resp.json()["leases"]


@pytest.fixture(scope="module")
def nodes(enroll_node, tenant_b):
    out = {name: enroll_node(name, resource_class=RC) for name in NODES}
    out["el-foreign"] = enroll_node("el-foreign", resource_class=RC, owner=tenant_b.project_id)
    return out


@pytest.fixture(scope="module")
def window():
    return {"start": iso(3600), "end": iso(3 * 3600), "overlap_start": iso(2 * 3600), "overlap_end": iso(4 * 3600)}


def owner(**args) -> dict:
    return dict(dict(cloud="infra", lease_provider="esi_leap", verify_projects=False), **args)


@pytest.fixture(scope="module")
def lease_run(esi_leap_env, openstack_env, nodes, window, tenant_a, tenant_b, tmp_path_factory):
    a, b = tenant_a.project_id, tenant_b.project_id
    play = localhost_play(
        [
            task("lease (check)", check=True, **owner(project=a, nodes=["el-1"])),
            task("lease", **owner(project=a, nodes=["el-1"], wait=True, wait_timeout=WAIT)),
            task("lease again", **owner(project=a, nodes=["el-1"], wait=True, wait_timeout=WAIT)),
            task("lease el-1 to b", **owner(project=b, nodes=["el-1", "el-3"])),
            task("lease later", **owner(project=b, nodes=["el-2"], start=window["start"], end=window["end"])),
            task(
                "lease overlapping",
                **owner(project=a, nodes=["el-2"], start=window["overlap_start"], end=window["overlap_end"]),
            ),
            task("lease a node of tenant-b", **owner(project=a, nodes=["el-foreign"])),
            task("expired", **owner(state="expired", nodes=list(NODES))),
            task("query (auto)", cloud="infra", state="query", nodes=list(NODES)),
            task("query (ironic)", cloud="infra", state="query", lease_provider="ironic", nodes=["el-1"]),
        ]
    )
    return run_playbook(play, openstack_env.ansible_env("infra"), tmp_path_factory.mktemp("esi-lease"), diff=True)


@pytest.fixture(scope="module")
def end_run(lease_run, openstack_env, tenant_a, tmp_path_factory):
    a = tenant_a.project_id
    later = lease_run.result("lease later")["leases"][0]["id"]
    play = localhost_play(
        [
            task("end (check)", check=True, **owner(state="absent", project=a, nodes=["el-1"])),
            task("end", **owner(state="absent", project=a, nodes=["el-1"], wait=True, wait_timeout=WAIT)),
            task("end again", **owner(state="absent", project=a, nodes=["el-1"])),
            task("end the later one", **owner(state="absent", lease_id=later)),
        ]
    )
    return run_playbook(play, openstack_env.ansible_env("infra"), tmp_path_factory.mktemp("esi-lease-end"), diff=True)


def test_check_mode_leases_nothing(lease_run, esi_api, infra, nodes, tenant_a):
    check = lease_run.result("lease (check)")
    assert check.get("failed") is not True, lease_run.explain()
    assert check["changed"] is True and check["lease_provider"] == "esi_leap"
    assert [(a["node"], a["lease"], a["action"]) for a in check["actions"]] == [("el-1", None, "created")]
    assert [(v["node"], v["project"], v["status"]) for v in check["leases"]] == [
        ("el-1", tenant_a.project_id, "active")
    ]
    assert check["diff"]["before"] == {"el-1": []} and check["diff"]["after"]["el-1"][0]["id"] is None


def test_the_owner_leases_through_esi_leap_and_the_manager_sets_the_lessee(
    lease_run, esi_api, infra, nodes, tenant_a, openstack_env
):
    made = lease_run.result("lease")
    assert made.get("failed") is not True, lease_run.explain()
    assert made["changed"] is True and made["lease_provider"] == "esi_leap"
    (action,) = made["actions"]
    assert action["action"] == "created" and action["node"] == "el-1" and action["lease"]
    (view,) = made["leases"]
    assert view["id"] == action["lease"] and view["project"] == tenant_a.project_id
    assert view["status"] == "active" and view["esi_leap_status"] == "active"
    # exactly one lease in ESI-Leap (the check-mode run made none), and the node is tenant-a's, written by ESI-Leap
    assert [lease["uuid"] for lease in leases_of(esi_api, infra, nodes["el-1"].id)] == [action["lease"]]
    node = openstack_env.admin_conn.baremetal.get_node(nodes["el-1"].id)
    assert node.lessee == tenant_a.project_id and node.properties["lease_uuid"] == action["lease"]
    assert "baremetal_tenancy_leases" not in node.properties  # no node-field lease record
    again = lease_run.result("lease again")
    assert again["changed"] is False and again["actions"] == [], lease_run.explain()
    assert [v["id"] for v in again["leases"]] == [action["lease"]]


def test_an_overlapping_lease_is_refused_naming_the_lease_and_nothing_is_made(
    lease_run, esi_api, infra, nodes, tenant_b
):
    refused = lease_run.result("lease el-1 to b")
    assert refused["failed"] is True and refused["changed"] is False
    made = lease_run.result("lease")["actions"][0]["lease"]
    assert refused["msg"].startswith("node el-1: a lease to project %s" % tenant_b.project_id)
    assert made in refused["msg"] and "nothing was leased" in refused["msg"]
    assert leases_of(esi_api, infra, nodes["el-3"].id) == []  # el-3, planned after el-1, got nothing


def test_a_later_lease_is_pending_and_an_overlapping_one_is_refused(lease_run, esi_api, infra, nodes, window):
    later = lease_run.result("lease later")
    assert later.get("failed") is not True, lease_run.explain()
    (view,) = later["leases"]
    assert view["status"] == "pending" and (view["start"], view["end"]) == (window["start"], window["end"])
    overlap = lease_run.result("lease overlapping")
    assert overlap["failed"] is True and overlap["changed"] is False
    assert overlap["msg"].startswith("node el-2: ") and view["id"] in overlap["msg"]
    assert [lease["uuid"] for lease in leases_of(esi_api, infra, nodes["el-2"].id)] == [view["id"]]


def test_a_node_the_owner_does_not_own_is_one_error_naming_it(lease_run, esi_api, tenant_b, nodes):
    foreign = lease_run.result("lease a node of tenant-b")
    assert foreign["failed"] is True and foreign["changed"] is False
    assert foreign["msg"].startswith("option nodes: node el-foreign: ")
    assert leases_of(esi_api, tenant_b, nodes["el-foreign"].id) == []


def test_expired_changes_nothing_and_the_provider_comes_from_the_catalog(lease_run, tenant_a, tenant_b):
    expired = lease_run.result("expired")
    assert expired.get("failed") is not True and expired["changed"] is False, lease_run.explain()
    assert sorted((v["node"], v["status"]) for v in expired["leases"]) == [("el-1", "active"), ("el-2", "pending")]
    auto = lease_run.result("query (auto)")
    assert auto["lease_provider"] == "esi_leap" and auto["changed"] is False
    assert sorted((v["node"], v["project"]) for v in auto["leases"]) == [
        ("el-1", tenant_a.project_id),
        ("el-2", tenant_b.project_id),
    ]
    forced = lease_run.result("query (ironic)")
    assert forced["lease_provider"] == "ironic"
    assert any("ESI-Leap neither knows nor ends" in w for w in forced.get("warnings", []))
    # on node fields, ESI-Leap's lessee is a lessee set outside host_lease
    assert [(v["node"], v["status"]) for v in forced["leases"]] == [("el-1", "unmanaged")]


def test_the_owner_ends_the_leases(end_run, lease_run, esi_api, infra, nodes, openstack_env, tenant_a):
    made = lease_run.result("lease")["actions"][0]["lease"]
    check = end_run.result("end (check)")
    assert check.get("failed") is not True and check["changed"] is True, end_run.explain()
    assert [(a["node"], a["lease"], a["action"]) for a in check["actions"]] == [("el-1", made, "ended")]
    ended = end_run.result("end")
    assert ended.get("failed") is not True and ended["changed"] is True, end_run.explain()
    assert ended["diff"]["before"]["el-1"][0]["id"] == made and ended["diff"]["after"] == {"el-1": []}
    node = openstack_env.admin_conn.baremetal.get_node(nodes["el-1"].id)
    assert node.lessee is None and "lease_uuid" not in node.properties
    statuses = {lease["uuid"]: lease["status"] for lease in leases_of(esi_api, infra, nodes["el-1"].id)}
    assert statuses == {made: "deleted"}
    again = end_run.result("end again")
    assert again["changed"] is False and again["actions"] == []
    later = end_run.result("end the later one")
    assert later["changed"] is True and [a["action"] for a in later["actions"]] == ["removed"]
    assert [lease["status"] for lease in leases_of(esi_api, infra, nodes["el-2"].id)] == ["deleted"]
