"""Tenants on hosts ESI-Leap leased: host_claim, host_claim_info, the claimed_hosts inventory and host_release, and
what a tenant can and cannot do to ESI-Leap's leases and to what ESI-Leap writes on the nodes.

Marker ``esi`` (``make test-esi``). ESI-Leap's API and manager (a 1-s tick) beside the session's Keystone and Ironic
(:mod:`fixtures_esi`), Ironic's policy from the ``ironic_tenancy`` role. The owner leases ``et-1`` to tenant-a and
``et-2`` to tenant-b through ESI-Leap (host_lease, ``lease_provider: esi_leap``); every tenant step is an
``ansible-playbook`` or ``ansible-inventory`` run with the tenant's own credentials. What each test proves:

- tenant-a claims and deploys its ESI-Leap-leased host, a rerun changes nothing, host_claim_info and the inventory
  show it (to tenant-a only), host_release gives it back (the lease stays), as on node-field leases;
- tenant-a sees its own lease (host_offer_info) and tenant-b neither sees nor ends it, nor leases tenant-a's host
  (one error each, nothing changed);
- what ESI-Leap writes is trusted only where a tenant cannot write it: tenant-b cannot write ``lessee`` or
  ``properties.lease_uuid`` (nor ``owner``, ``extra``) on its own node (Ironic answers 403), and what it may write
  there (``instance_info``) changes neither tenant-a's view nor the owner's decisions;
- ending the lease early leaves nothing of the tenant on the node: ESI-Leap undeploys it, and ``lessee``,
  ``properties.lease_uuid``, ``instance_uuid``, ``instance_info`` and the tenant's ``extra`` are gone; the tenant's
  claim and inventory host go with them.
"""

from __future__ import annotations

import pytest
from fixtures_inventory import inventory, write_source
from harness.ansible import localhost_play, run_playbook

pytestmark = pytest.mark.esi

RC = "esi-tenants"
WAIT = 300
MD5 = "9f6c1a0f5e2b4c8d7a3e1f0b2c4d6e8f"
IMAGE = {"url": "http://images.example.com/debian-13.qcow2", "checksum": MD5, "checksum_type": "md5", "format": "qcow2"}
MICRO = {"X-OpenStack-Ironic-API-Version": "1.78"}


def task(title: str, module: str, **args) -> dict:
    return {"name": title, "baremetal.tenancy.%s" % module: args, "ignore_errors": True}


def claim(name: str = "et-web", **args) -> dict:
    return dict(backend="ironic", name=name, resource_class=RC, image=IMAGE, online=False, wait=True, **args)


@pytest.fixture(scope="module")
def leased(esi_leap_env, openstack_env, enroll_node, ironic_tenancy_policy, tenant_a, tenant_b, tmp_path_factory):
    """et-1 leased to tenant-a, et-2 to tenant-b, by the owner through ESI-Leap (the manager set the lessees)."""
    nodes = {name: enroll_node(name, resource_class=RC) for name in ("et-1", "et-2")}
    owner = dict(cloud="infra", lease_provider="esi_leap", verify_projects=False, wait=True, wait_timeout=WAIT)
    play = localhost_play(
        [
            task("lease et-1 to a", "host_lease", project=tenant_a.project_id, nodes=["et-1"], **owner),
            task("lease et-2 to b", "host_lease", project=tenant_b.project_id, nodes=["et-2"], **owner),
        ]
    )
    run = run_playbook(play, openstack_env.ansible_env("infra"), tmp_path_factory.mktemp("esi-t-lease"))
    assert run.ok, run.explain()
    leases = {
        name: run.result("lease %s to %s" % (name, who))["leases"][0]["id"]
        for name, who in (("et-1", "a"), ("et-2", "b"))
    }
    return {"nodes": nodes, "leases": leases}


@pytest.fixture(scope="module")
def a_run(leased, openstack_env, tmp_path_factory):
    play = localhost_play(
        [
            task("claim", "host_claim", **claim(wait_timeout=WAIT)),
            task("claim again", "host_claim", **claim(wait_timeout=WAIT)),
            task("info", "host_claim_info", backend="ironic"),
            task("my leases", "host_offer_info", resource_class=RC),
        ]
    )
    return run_playbook(play, openstack_env.ansible_env("tenant-a"), tmp_path_factory.mktemp("esi-t-a"))


@pytest.fixture(scope="module")
def b_run(a_run, leased, openstack_env, tenant_b, tmp_path_factory):
    lease_a = leased["leases"]["et-1"]
    play = localhost_play(
        [
            task("b info", "host_claim_info", backend="ironic"),
            task("b releases a's claim", "host_release", backend="ironic", name="et-web"),
            task("b leases", "host_offer_info", resource_class=RC),
            task("b ends a's lease", "host_offer_claim", state="absent", lease=lease_a),
            task(
                "b leases a's host",
                "host_lease",
                lease_provider="esi_leap",
                verify_projects=False,
                project=tenant_b.project_id,
                nodes=["et-1"],
            ),
        ]
    )
    return run_playbook(play, openstack_env.ansible_env("tenant-b"), tmp_path_factory.mktemp("esi-t-b"))


def test_tenant_a_claims_its_esi_leap_leased_host_as_on_node_fields(a_run, leased, openstack_env, tenant_a):
    made = a_run.result("claim")
    assert made.get("failed") is not True, a_run.explain()
    assert made["changed"] is True
    node = openstack_env.admin_conn.baremetal.get_node(leased["nodes"]["et-1"].id)
    assert node.provision_state == "active" and node.lessee == tenant_a.project_id
    assert node.instance_info["baremetal_tenancy_claim"]["name"] == "et-web"
    assert node.properties["lease_uuid"] == leased["leases"]["et-1"]
    again = a_run.result("claim again")
    assert again["changed"] is False, a_run.explain()
    info = a_run.result("info")
    assert [(c["name"], c["host"]) for c in info["claims"]] == [("et-web", "et-1")]


def test_tenant_a_sees_its_own_lease_only(a_run, b_run, leased, tenant_a):
    mine = a_run.result("my leases")["leases"]
    assert [(view["uuid"], view["node"], view["project"]) for view in mine] == [
        (leased["leases"]["et-1"], "et-1", tenant_a.project_id)
    ]
    theirs = b_run.result("b leases")["leases"]
    assert [view["uuid"] for view in theirs] == [leased["leases"]["et-2"]]


def test_tenant_b_can_neither_see_release_end_nor_lease_tenant_a_s_host(
    b_run, a_run, leased, openstack_env, tenant_a, esi_api
):
    assert b_run.result("b info")["claims"] == [], b_run.explain()
    release = b_run.result("b releases a's claim")
    # as on node-field leases: tenant-b sees no such claim, so there is nothing of its own to release
    assert release.get("failed") is not True and release["changed"] is False and release["released"] is False
    end = b_run.result("b ends a's lease")
    assert end["failed"] is True and end["changed"] is False
    assert end["msg"].startswith("lease %s: " % leased["leases"]["et-1"])
    lease = b_run.result("b leases a's host")
    assert lease["failed"] is True and lease["changed"] is False
    assert lease["msg"].startswith("option nodes: node et-1: ")
    node = openstack_env.admin_conn.baremetal.get_node(leased["nodes"]["et-1"].id)
    assert node.lessee == tenant_a.project_id and node.provision_state == "active"
    resp = esi_api(tenant_a).get("/v1/leases/%s" % leased["leases"]["et-1"])
    assert resp.status_code == 200 and resp.json()["status"] == "active"


def test_the_inventory_shows_the_host_to_tenant_a_only(a_run, openstack_env, tmp_path):
    seen = {}
    for tenant in ("tenant-a", "tenant-b"):
        source = write_source(tmp_path / ("%s.claimed_hosts.yml" % tenant), backend="ironic")
        data, _text = inventory(source, openstack_env.ansible_env(tenant), tmp_path)
        seen[tenant] = {
            name: variables["tenancy_host"] for name, variables in data.get("_meta", {}).get("hostvars", {}).items()
        }
    assert "et-1" in seen["tenant-a"].values()
    assert "et-1" not in seen["tenant-b"].values() and "et-2" not in seen["tenant-a"].values()


def test_what_esi_leap_writes_a_tenant_cannot_write_and_its_writes_change_nothing_of_others(
    b_run, leased, openstack_env, tenant_a, tenant_b, tmp_path
):
    b_ironic = tenant_b.conn().baremetal
    et2 = leased["nodes"]["et-2"].id
    for path, value in (
        ("/lessee", tenant_a.project_id),
        ("/properties/lease_uuid", leased["leases"]["et-1"]),
        ("/owner", tenant_b.project_id),
        ("/extra/lease_uuid", leased["leases"]["et-1"]),
    ):
        resp = b_ironic.patch(
            "/nodes/%s" % et2, json=[{"op": "add", "path": path, "value": value}], headers=MICRO, raise_exc=False
        )
        assert resp.status_code == 403, (path, resp.status_code, resp.text)
    # what tenant-b may write on its own node, instance_info, dressed up as tenant-a's lease and claim
    resp = b_ironic.patch(
        "/nodes/%s" % et2,
        json=[
            {"op": "add", "path": "/instance_info/lease_uuid", "value": leased["leases"]["et-1"]},
            {"op": "add", "path": "/instance_info/lessee", "value": tenant_a.project_id},
        ],
        headers=MICRO,
        raise_exc=False,
    )
    assert resp.status_code == 200, resp.text
    node = openstack_env.admin_conn.baremetal.get_node(et2)
    assert node.lessee == tenant_b.project_id and node.properties["lease_uuid"] == leased["leases"]["et-2"]
    # tenant-a's view and the owner's decisions are unchanged: a's inventory does not show et-2, the owner's
    # host_lease still finds et-1 leased to tenant-a (a rerun changes nothing) and et-2 to tenant-b
    source = write_source(tmp_path / "tenant-a.claimed_hosts.yml", backend="ironic")
    data, _text = inventory(source, openstack_env.ansible_env("tenant-a"), tmp_path)
    assert "et-2" not in {v["tenancy_host"] for v in data.get("_meta", {}).get("hostvars", {}).values()}
    owner = dict(cloud="infra", lease_provider="esi_leap", verify_projects=False)
    play = localhost_play(
        [
            task("a's lease", "host_lease", project=tenant_a.project_id, nodes=["et-1"], **owner),
            task("b's lease", "host_lease", project=tenant_b.project_id, nodes=["et-2"], **owner),
            task("query", "host_lease", state="query", nodes=["et-1", "et-2"], **owner),
        ]
    )
    run = run_playbook(play, openstack_env.ansible_env("infra"), tmp_path / "owner")
    assert run.ok, run.explain()
    assert run.result("a's lease")["changed"] is False and run.result("b's lease")["changed"] is False
    assert sorted((v["node"], v["project"], v["id"]) for v in run.result("query")["leases"]) == [
        ("et-1", tenant_a.project_id, leased["leases"]["et-1"]),
        ("et-2", tenant_b.project_id, leased["leases"]["et-2"]),
    ]


@pytest.fixture(scope="module")
def released(b_run, openstack_env, tmp_path_factory):
    """tenant-a releases its claim (the lease stays), claims again, then the owner ends tenant-a's lease early."""
    play = localhost_play(
        [
            task("release", "host_release", backend="ironic", name="et-web", wait=True, wait_timeout=WAIT),
            task("release again", "host_release", backend="ironic", name="et-web"),
            task("claim anew", "host_claim", **claim(wait_timeout=WAIT)),
        ]
    )
    return run_playbook(play, openstack_env.ansible_env("tenant-a"), tmp_path_factory.mktemp("esi-t-release"))


def test_host_release_gives_the_host_back_and_the_lease_stays(released, leased, openstack_env, tenant_a):
    release = released.result("release")
    assert release.get("failed") is not True and release["changed"] is True, released.explain()
    assert released.result("release again")["changed"] is False
    anew = released.result("claim anew")
    assert anew.get("failed") is not True and anew["changed"] is True, released.explain()
    node = openstack_env.admin_conn.baremetal.get_node(leased["nodes"]["et-1"].id)
    assert node.lessee == tenant_a.project_id and node.provision_state == "active"


def test_an_ended_lease_leaves_nothing_of_the_tenant_on_the_node(
    released, leased, openstack_env, tenant_a, esi_api, tmp_path
):
    et1 = leased["nodes"]["et-1"].id
    before = openstack_env.admin_conn.baremetal.get_node(et1)
    assert before.instance_info and before.instance_id  # the tenant's instance is there
    owner = dict(cloud="infra", lease_provider="esi_leap", verify_projects=False)
    play = localhost_play(
        [
            task(
                "end",
                "host_lease",
                state="absent",
                project=tenant_a.project_id,
                nodes=["et-1"],
                wait=True,
                wait_timeout=WAIT,
                **owner,
            )
        ]
    )
    run = run_playbook(play, openstack_env.ansible_env("infra"), tmp_path / "end")
    assert run.ok, run.explain()
    assert [a["action"] for a in run.result("end")["actions"]] == ["ended"]
    node = openstack_env.admin_conn.baremetal.get_node(et1)
    assert node.lessee is None and "lease_uuid" not in node.properties
    assert node.provision_state == "available" and node.instance_id is None
    assert node.instance_info == {}
    assert node.extra == {}, node.extra
    assert esi_api(tenant_a).get("/v1/leases/%s" % leased["leases"]["et-1"]).json()["status"] == "deleted"
    play = localhost_play([task("info", "host_claim_info", backend="ironic")])
    tenant_run = run_playbook(play, openstack_env.ansible_env("tenant-a"), tmp_path / "a-after")
    assert tenant_run.result("info")["claims"] == [], tenant_run.explain()


def test_a_tenant_ends_its_own_lease_early_as_with_openstack_esi_lease_delete(
    leased, openstack_env, tenant_b, esi_api, tmp_path
):
    lease = leased["leases"]["et-2"]
    play = localhost_play(
        [
            task("b ends its lease", "host_offer_claim", state="absent", lease=lease, wait=True, wait_timeout=WAIT),
            task("b ends it again", "host_offer_claim", state="absent", lease=lease),
            task("b's leases after", "host_offer_info", resource_class=RC),
        ]
    )
    run = run_playbook(play, openstack_env.ansible_env("tenant-b"), tmp_path / "b-end")
    ended = run.result("b ends its lease")
    assert ended.get("failed") is not True and ended["changed"] is True and ended["ended"] == [lease], run.explain()
    assert run.result("b ends it again")["changed"] is False
    assert run.result("b's leases after")["leases"] == []
    node = openstack_env.admin_conn.baremetal.get_node(leased["nodes"]["et-2"].id)
    assert node.lessee is None and "lease_uuid" not in node.properties
    # what tenant-b wrote in instance_info (the trust test above) went with its lease's end: nothing of it is left
    assert node.instance_info == {} and node.instance_id is None, node.instance_info
    assert esi_api(tenant_b).get("/v1/leases/%s" % lease).json()["status"] == "deleted"
