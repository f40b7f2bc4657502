"""Lease windows on the real Ironic, through host_lease and the shipped playbooks.

- An overlapping lease is refused with a message naming the lease it
  overlaps, and nothing changes.
- Leases chosen by resource class, traits and count: a rerun changes nothing;
  asking for more than is free leases nothing.
- A lease whose end has passed is ended by ``playbooks/ironic_expire_leases.yml`` the
  way ESI-Leap ends one: the tenant's deployed host is undeployed, its
  allocation goes, ``lessee``, ``instance_info`` and the lease record are
  cleared and the node is ``available`` again; a lease whose start has come
  begins in the same run. Check mode first changes nothing; a second run
  changes nothing.
"""

from __future__ import annotations

import time

from harness.ansible import REPO_ROOT, localhost_play, run_playbook

LEASES_KEY = "baremetal_tenancy_leases"
MD5 = "9f6c1a0f5e2b4c8d7a3e1f0b2c4d6e8f"


def allocation_gone(conn, name):
    return conn.baremetal.get("/allocations/%s" % name, microversion="1.78", raise_exc=False).status_code == 404


def iso(seconds_from_now):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + seconds_from_now))


def move_lease(admin, node, **times):
    """The owner moves the start or end of ``node``'s only lease record."""
    leases = admin.get_node(node).properties[LEASES_KEY]
    assert len(leases) == 1, leases
    leases[0].update(times)
    admin.patch_node(node, [{"op": "add", "path": "/properties/%s" % LEASES_KEY, "value": leases}])


def lease_task(name, **args):
    return {"name": name, "baremetal.tenancy.host_lease": args, "ignore_errors": True}


def test_overlap_refused_and_count_selection(openstack_env, enroll_node, tmp_path):
    a = openstack_env.tenants["tenant-a"].project_id
    b = openstack_env.tenants["tenant-b"].project_id
    admin = openstack_env.admin_conn.baremetal
    enroll_node("il-ov-0", resource_class="rc-ov")
    for i in range(3):
        enroll_node("il-cnt-%d" % i, resource_class="rc-cnt", traits=["CUSTOM_GPU"] if i < 2 else [])
    b_until = iso(3600)
    play = localhost_play(
        [
            lease_task("b for an hour", project=b, nodes=["il-ov-0"], end=b_until),
            lease_task("a overlapping", project=a, nodes=["il-ov-0"], start=iso(1800), end=iso(7200)),
            lease_task("a after b (check)", project=a, nodes=["il-ov-0"], start=b_until, end=iso(7200)),
            lease_task(
                "two gpu nodes to a (check)", project=a, resource_class="rc-cnt", traits=["CUSTOM_GPU"], count=2
            ),
            lease_task("two gpu nodes to a", project=a, resource_class="rc-cnt", traits=["CUSTOM_GPU"], count=2),
            lease_task("two gpu nodes to a again", project=a, resource_class="rc-cnt", traits=["CUSTOM_GPU"], count=2),
            lease_task("one more gpu node to b", project=b, resource_class="rc-cnt", traits=["CUSTOM_GPU"], count=1),
            lease_task("list a", state="query", project=a, resource_class="rc-cnt"),
            lease_task("end a", state="absent", project=a, nodes=["il-cnt-0", "il-cnt-1"]),
            lease_task("end a again", state="absent", project=a, nodes=["il-cnt-0", "il-cnt-1"]),
        ]
    )
    play[0]["tasks"][2]["check_mode"] = True
    play[0]["tasks"][3]["check_mode"] = True
    run = run_playbook(play, openstack_env.ansible_env("admin"), tmp_path, diff=True)
    assert run.ok, run.explain()

    first = run.result("b for an hour")
    assert first["changed"] is True and first["leases"][0]["end"] == b_until
    refused = run.result("a overlapping")
    assert refused["failed"] is True and refused["changed"] is False and refused["error_type"] == "Conflict"
    lease_id = first["leases"][0]["id"]
    assert refused["msg"].startswith("node il-ov-0: a lease to project %s from " % a)
    assert "overlaps lease %s of project %s" % (lease_id, b) in refused["msg"]
    node = admin.get_node("il-ov-0")
    assert [x["id"] for x in node.properties[LEASES_KEY]] == [lease_id] and node.lessee == b
    adjacent = run.result("a after b (check)")
    assert adjacent["changed"] is True and adjacent["actions"][0]["action"] == "created"
    assert [x["project"] for x in adjacent["diff"]["after"]["il-ov-0"]] == [b, a]

    check = run.result("two gpu nodes to a (check)")
    assert check["changed"] is True and sorted(x["node"] for x in check["actions"]) == ["il-cnt-0", "il-cnt-1"]
    chosen = run.result("two gpu nodes to a")
    assert chosen["changed"] is True and sorted(x["node"] for x in chosen["actions"]) == ["il-cnt-0", "il-cnt-1"]
    assert run.result("two gpu nodes to a again")["changed"] is False
    short = run.result("one more gpu node to b")
    assert (
        short["failed"] is True
        and "only 0 node(s) of resource class rc-cnt with traits CUSTOM_GPU are free" in short["msg"]
        and "nothing was leased" in short["msg"]
    )
    listed = run.result("list a")
    assert listed["changed"] is False
    assert sorted((x["node"], x["status"]) for x in listed["leases"]) == [
        ("il-cnt-0", "active"),
        ("il-cnt-1", "active"),
    ]
    ended = run.result("end a")
    assert ended["changed"] is True and sorted(x["action"] for x in ended["actions"]) == ["ended", "ended"]
    assert run.result("end a again")["changed"] is False
    for name in ("il-cnt-0", "il-cnt-1", "il-cnt-2"):
        node = admin.get_node(name)
        assert node.lessee is None and LEASES_KEY not in node.properties


def test_expired_lease_is_ended_and_the_host_returns(openstack_env, enroll_node, ironic_tenancy_policy, tmp_path):
    a = openstack_env.tenants["tenant-a"].project_id
    b = openstack_env.tenants["tenant-b"].project_id
    admin = openstack_env.admin_conn.baremetal
    enroll_node("il-exp-0", resource_class="rc-exp")
    enroll_node("il-exp-1", resource_class="rc-exp-next")
    # Both leases are written ten minutes out and moved by the owner once tenant-a's claim is deployed (below): the
    # test never races the wall clock, however long a playbook takes to start on loaded cores.
    lease = run_playbook(
        REPO_ROOT / "playbooks" / "ironic_lease_hosts.yml",
        openstack_env.ansible_env("admin"),
        tmp_path / "lease",
        extra_vars={
            "leases": [
                {"project": a, "nodes": ["il-exp-0"], "end": iso(600)},
                {"project": "tenant-b", "nodes": ["il-exp-1"], "start": iso(600)},
            ]
        },
    )
    assert lease.ok, lease.explain()
    assert admin.get_node("il-exp-0").lessee == a
    assert admin.get_node("il-exp-1").lessee is None  # starts later

    claim = run_playbook(
        localhost_play(
            [
                {
                    "name": "claim",
                    "baremetal.tenancy.host_claim": {
                        "backend": "ironic",
                        "name": "il-exp",
                        "resource_class": "rc-exp",
                        "wait": True,
                        "image": {"url": "http://images.example.com/os.img", "checksum": MD5},
                    },
                }
            ]
        ),
        openstack_env.ansible_env("tenant-a"),
        tmp_path / "claim",
    )
    assert claim.ok, claim.explain()
    assert claim.result("claim")["claim"]["provision_state"] == "active"

    # The owner moves tenant-a's end and tenant-b's start to the past second (the records host_lease present writes).
    now = iso(-1)
    move_lease(admin, "il-exp-0", end=now)
    move_lease(admin, "il-exp-1", start=now)
    expire = REPO_ROOT / "playbooks" / "ironic_expire_leases.yml"
    nodes = {"expire_nodes": ["il-exp-0", "il-exp-1"], "expire_wait_timeout": 300}
    check = run_playbook(expire, openstack_env.ansible_env("admin"), tmp_path / "check", extra_vars=nodes, check=True)
    assert check.ok, check.explain()
    planned = check.result("End expired leases and start due ones")
    assert planned["changed"] is True
    assert sorted((x["node"], x["action"]) for x in planned["actions"]) == [
        ("il-exp-0", "ended"),
        ("il-exp-1", "started"),
    ]
    assert admin.get_node("il-exp-0").provision_state == "active"  # check mode changed nothing

    run = run_playbook(expire, openstack_env.ansible_env("admin"), tmp_path / "expire", extra_vars=nodes)
    assert run.ok, run.explain()
    done = run.result("End expired leases and start due ones")
    assert sorted((x["node"], x["project"], x["action"]) for x in done["actions"]) == [
        ("il-exp-0", a, "ended"),
        ("il-exp-1", b, "started"),
    ]
    node = admin.get_node("il-exp-0")
    assert node.provision_state == "available" and node.lessee is None and node.instance_info == {}
    assert node.allocation_id is None and node.instance_id is None and LEASES_KEY not in node.properties
    assert allocation_gone(openstack_env.admin_conn, "il-exp")
    assert admin.get_node("il-exp-1").lessee == b

    again = run_playbook(expire, openstack_env.ansible_env("admin"), tmp_path / "again", extra_vars=nodes)
    assert again.ok, again.explain()
    assert again.result("End expired leases and start due ones")["changed"] is False
    # tenant-a no longer sees the node or the claim.
    view = run_playbook(
        localhost_play(
            [{"name": "info", "baremetal.tenancy.host_claim_info": {"backend": "ironic", "name": "il-exp"}}]
        ),
        openstack_env.ansible_env("tenant-a"),
        tmp_path / "view",
    )
    assert view.ok and view.result("info")["claims"] == []
