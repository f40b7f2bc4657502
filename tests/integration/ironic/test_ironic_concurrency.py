"""Ten tenants claim at the same time against a pool with exactly enough nodes.

Ironic runs on PostgreSQL here (fixture ``openstack_pg_env``): with sqlite,
parallel lifecycles answer "database is locked". The owner leases one node
of the pool to each of the ten tenant projects with ``host_lease`` (by
resource class and count), then the ten tenants run ``ironic_claim_hosts.yml``
at once, each with its own project-scoped credentials: every claim must
succeed, deployed, on a distinct node leased to the claimer's project, and
the claims must leave no error behind.
"""

from __future__ import annotations

import concurrent.futures
import json

from harness import openstack as openstack_harness
from harness.ansible import REPO_ROOT, localhost_play, run_playbook

MD5 = "9f6c1a0f5e2b4c8d7a3e1f0b2c4d6e8f"


def test_ten_tenants_claim_at_once(openstack_pg_env, tmp_path):
    env = openstack_pg_env
    admin = env.admin_conn
    tenants = sorted(env.tenants)
    assert len(tenants) == 10
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        list(
            pool.map(
                lambda i: openstack_harness.enroll_fake_node(admin, "cc-%02d" % i, "rc-pool", env.infra_project_id),
                range(len(tenants)),
            )
        )

    leases = localhost_play(
        [
            {
                "name": "lease one node to each tenant",
                "baremetal.tenancy.host_lease": {"project": "{{ item }}", "resource_class": "rc-pool", "count": 1},
                "loop": [env.tenants[t].project_id for t in tenants],
            }
        ]
    )
    run = run_playbook(leases, env.ansible_env("admin"), tmp_path / "lease")
    assert run.ok, run.explain()
    leased = {}
    for item in run.result("lease one node to each tenant")["results"]:
        assert item["changed"] is True
        leased[item["item"]] = item["leases"][0]["node"]
    assert len(set(leased.values())) == 10

    def claim(tenant):
        out = tmp_path / ("%s.json" % tenant)
        result = run_playbook(
            REPO_ROOT / "playbooks" / "ironic_claim_hosts.yml",
            env.ansible_env(env.tenants[tenant].cloud_name("member")),
            tmp_path / tenant,
            extra_vars={
                "claims_out": str(out),
                "claim_wait_timeout": 600,
                "claims": [
                    {
                        "name": "cc-claim-%s" % tenant,
                        "resource_class": "rc-pool",
                        "online": True,
                        "image": {"url": "http://images.example.com/os.img", "checksum": MD5},
                        "user_data": "#cloud-config\nhostname: %s\n" % tenant,
                    }
                ],
            },
        )
        return tenant, result, out

    with concurrent.futures.ThreadPoolExecutor(max_workers=len(tenants)) as pool:
        results = list(pool.map(claim, tenants))

    hosts = {}
    for tenant, result, out in results:
        assert result.ok, "%s: %s" % (tenant, result.explain())
        (claimed,) = json.loads(out.read_text())
        assert claimed["ready"] is True and claimed["provision_state"] == "active", claimed
        hosts[tenant] = claimed["host"]
    assert len(set(hosts.values())) == 10, hosts
    for tenant, host in hosts.items():
        project = env.tenants[tenant].project_id
        assert leased[project] == host
        node = admin.baremetal.get_node(host)
        assert node.lessee == project and node.provision_state == "active" and node.power_state == "power on"
        allocation = admin.baremetal.get_allocation("cc-claim-%s" % tenant)
        assert allocation.owner == project and allocation.node_id == node.id and allocation.state == "active"
    assert not [a.name for a in admin.baremetal.allocations() if a.state != "active"]
