"""The ESI-Leap playbooks through ansible-playbook: the owner's offers and a tenant's claim and deployment.

Marker ``esi`` (``make test-esi``). ESI-Leap's API and manager (a 1-s tick) beside the session's Keystone and
Ironic (:mod:`fixtures_esi`), Ironic's policy the ``ironic_tenancy`` role's (a tenant's ``member`` deploys).
Every step runs a shipped playbook as a user runs it, with the acting project's own credentials:

1. the owner (``infra``) runs ``playbooks/esi_offer_hosts.yml`` with a list of offers: one node for tenant-a, the
   nodes of a resource class with some Ironic properties for tenant-a (the node without them is not offered), and
   with the plain variables the AWX survey sets (comma-separated text) one node for tenant-b; a rerun changes
   nothing;
2. tenant-a runs ``playbooks/esi_claim_offer.yml``: it claims the offer of its node, ESI-Leap's manager makes it the
   node's ``lessee``, and host_claim deploys that very node (active, powered on, the image in ``instance_info``);
   a rerun changes nothing; tenant-b's run of the same playbook for tenant-a's node fails naming it and makes
   nothing;
3. tenant-a ends its lease with ``playbooks/esi_end_leases.yml`` (ESI-Leap removes the lessee and undeploys the
   node) and the owner withdraws the rest with the offer playbook's ``state: absent``.
"""

from __future__ import annotations

import json
import time

import pytest
from harness.ansible import REPO_ROOT, run_playbook

pytestmark = pytest.mark.esi

RC = "esi-play"
WAIT = 180  # seconds for a module's wait (the manager ticks every second; the suite runs at load 10-30)
IMAGE = {
    "url": "http://images.example.com/debian-13.qcow2",
    "checksum": "9f6c1a0f5e2b4c8d7a3e1f0b2c4d6e8f",
    "checksum_type": "md5",
    "format": "qcow2",
}
BIG = {"cpus": 32, "memory_mb": 65536, "local_gb": 100, "cpu_arch": "x86_64"}
OFFER_HOSTS = REPO_ROOT / "playbooks" / "esi_offer_hosts.yml"
CLAIM_OFFER = REPO_ROOT / "playbooks" / "esi_claim_offer.yml"
END_LEASES = REPO_ROOT / "playbooks" / "esi_end_leases.yml"


def offers_of(esi_api, owner, node_id: str, status: str = "available") -> list[dict]:
    resp = esi_api(owner).get("/v1/offers", params={"resource_uuid": node_id, "status": status})
    assert resp.status_code == 200, resp.text
    return resp.json()["offers"]


def item_results(run, task: str) -> list[dict]:
    return run.result(task)["results"]


def changed(run) -> int:
    return sum(stats.get("changed", 0) for stats in run.report["stats"].values())


@pytest.fixture(scope="module")
def nodes(enroll_node, esi_leap_env, ironic_tenancy_policy):
    """Four nodes of the owner: ep-1 (any), ep-2 (for tenant-b), ep-big-1/2 with 32 CPUs; ep-small of the class."""
    out = {name: enroll_node(name, resource_class=RC) for name in ("ep-1", "ep-2", "ep-small")}
    for name in ("ep-big-1", "ep-big-2"):
        out[name] = enroll_node(name, resource_class=RC, properties=dict(BIG))
    return out


@pytest.fixture(scope="module")
def offered(nodes, openstack_env, tmp_path_factory):
    """The owner's runs: a list of offers, a rerun, and one offer from the survey's plain variables."""
    env = openstack_env.ansible_env("infra")
    offers = [
        {"nodes": ["ep-1"], "lessee": "tenant-a"},
        {"resource_class": RC, "properties": {"cpus": 32, "cpu_arch": "x86_64"}, "lessee": "tenant-a"},
    ]
    workdir = tmp_path_factory.mktemp("esi-offer-hosts")
    started = time.monotonic()
    first = run_playbook(OFFER_HOSTS, env, workdir, extra_vars={"offers": offers})
    seconds = time.monotonic() - started
    again = run_playbook(OFFER_HOSTS, env, workdir, extra_vars={"offers": offers})
    survey = run_playbook(
        OFFER_HOSTS,
        env,
        workdir,
        extra_vars={"offer_nodes": "ep-2, ", "offer_lessee": "tenant-b", "offer_end": "2099-01-01T00:00:00Z"},
    )
    return {"first": first, "again": again, "survey": survey, "seconds": seconds}


@pytest.fixture(scope="module")
def claimed(offered, openstack_env, tmp_path_factory):
    """tenant-a's claim and deployment of ep-1's offer, its rerun, and tenant-b's attempt at the same node."""
    claims = [{"name": "ep-a-web", "node": "ep-1", "image": IMAGE, "online": True}]
    workdir = tmp_path_factory.mktemp("esi-claim-offer")
    out = workdir / "claims.json"
    extra = {"offer_claims": claims, "offer_claim_wait_timeout": WAIT, "offer_claims_out": str(out)}
    env_a = openstack_env.ansible_env("tenant-a")
    started = time.monotonic()
    first = run_playbook(CLAIM_OFFER, env_a, workdir, extra_vars=extra)
    seconds = time.monotonic() - started
    written = json.loads(out.read_text()) if out.exists() else None
    again = run_playbook(CLAIM_OFFER, env_a, workdir, extra_vars=extra)
    b_claims = [{"name": "ep-b-web", "node": "ep-1", "image": IMAGE}]
    tenant_b = run_playbook(
        CLAIM_OFFER,
        openstack_env.ansible_env("tenant-b"),
        workdir,
        extra_vars={"offer_claims": b_claims, "offer_claim_wait_timeout": WAIT},
    )
    return {"first": first, "again": again, "tenant_b": tenant_b, "written": written, "seconds": seconds}


@pytest.fixture(scope="module")
def ended(claimed, openstack_env, tmp_path_factory):
    """tenant-a ends its lease; the owner withdraws every offer of the nodes with the playbook."""
    lease = claimed["written"]["leases"][0]["uuid"]
    workdir = tmp_path_factory.mktemp("esi-end")
    tenant = run_playbook(
        END_LEASES,
        openstack_env.ansible_env("tenant-a"),
        workdir,
        extra_vars={"end_leases": [{"lease": lease}], "end_lease_wait_timeout": WAIT},
    )
    withdraw = run_playbook(
        OFFER_HOSTS,
        openstack_env.ansible_env("infra"),
        workdir,
        extra_vars={"offers": [{"state": "absent", "nodes": ["ep-1", "ep-2", "ep-big-1", "ep-big-2", "ep-small"]}]},
    )
    return {"tenant": tenant, "withdraw": withdraw, "lease": lease}


# ------------------------------------------------------------------ 1. the owner's offers


def test_the_owner_offers_by_node_and_by_class_with_properties(offered, esi_api, openstack_env, nodes):
    first = offered["first"]
    assert first.ok, first.explain()
    results = item_results(first, "Offer the hosts, or withdraw the offers")
    assert [sorted(o["node"] for o in r["offers"]) for r in results] == [["ep-1"], ["ep-big-1", "ep-big-2"]]
    assert all(r["changed"] for r in results)
    tenant_a = openstack_env.tenants["tenant-a"].project_id
    infra = openstack_env.infra
    for name in ("ep-1", "ep-big-1", "ep-big-2"):
        assert [o["lessee_id"] for o in offers_of(esi_api, infra, nodes[name].id)] == [tenant_a], name
    assert offers_of(esi_api, infra, nodes["ep-small"].id) == []  # of the class, without the properties
    shown = json.dumps([r["offers"] for r in results] + [r["actions"] for r in results])
    assert "cpus" not in shown and "memory_mb" not in shown  # the properties only choose the nodes
    again = offered["again"]
    assert again.ok, again.explain()
    assert changed(again) == 0
    print("esi_offer_hosts.yml, three offers: %.1f s" % offered["seconds"])


def test_the_survey_variables_make_one_offer(offered, esi_api, openstack_env, nodes):
    survey = offered["survey"]
    assert survey.ok, survey.explain()
    [result] = item_results(survey, "Offer the hosts, or withdraw the offers")
    assert result["changed"] is True and [o["node"] for o in result["offers"]] == ["ep-2"]
    [offer] = offers_of(esi_api, openstack_env.infra, nodes["ep-2"].id)
    assert offer["lessee_id"] == openstack_env.tenants["tenant-b"].project_id
    assert offer["end_time"].startswith("2099-01-01T00:00:00")


# ------------------------------------------------------------------ 2. the tenant's claim and deployment


def test_tenant_a_claims_the_offer_and_deploys_that_node(claimed, openstack_env, nodes):
    first = claimed["first"]
    assert first.ok, first.explain()
    tenant_a = openstack_env.tenants["tenant-a"].project_id
    [lease] = claimed["written"]["leases"]
    [claim] = claimed["written"]["claims"]
    assert lease["node"] == "ep-1" and lease["project"] == tenant_a and lease["status"] == "active"
    assert claim["name"] == "ep-a-web" and claim["host"] == "ep-1" and claim["provision_state"] == "active"
    node = openstack_env.admin_conn.baremetal.get_node(nodes["ep-1"].id)
    assert node.lessee == tenant_a and node.properties["lease_uuid"] == lease["uuid"]
    assert node.provision_state == "active" and node.power_state == "power on"
    assert node.instance_info["image_source"] == IMAGE["url"]
    assert node.instance_info["baremetal_tenancy_claim"]["name"] == "ep-a-web"
    print("esi_claim_offer.yml, claim to deployed: %.1f s" % claimed["seconds"])


def test_a_rerun_of_the_claim_changes_nothing(claimed, esi_api, openstack_env, nodes):
    again = claimed["again"]
    assert again.ok, again.explain()
    # the async launch of the deployment always says changed: what the modules did is in their results
    assert [r["changed"] for r in item_results(again, "Claim the offers")] == [False]
    assert [r["changed"] for r in item_results(again, "Wait for the deployments")] == [False]
    leases = esi_api(openstack_env.infra).get("/v1/leases", params={"resource_uuid": nodes["ep-1"].id}).json()
    assert [x["uuid"] for x in leases["leases"]] == [claimed["written"]["leases"][0]["uuid"]]


def test_tenant_b_claims_no_offer_made_for_tenant_a(claimed, openstack_env, nodes):
    run = claimed["tenant_b"]
    assert not run.ok
    [failure] = run.failures()
    assert failure.startswith(
        "Claim the offers: offers of node ep-1: none is available to project %s"
        % openstack_env.tenants["tenant-b"].project_id
    ), failure
    assert "Claim and deploy the leased nodes" not in run.tasks
    node = openstack_env.admin_conn.baremetal.get_node(nodes["ep-1"].id)
    assert node.lessee == openstack_env.tenants["tenant-a"].project_id
    assert node.instance_info["baremetal_tenancy_claim"]["name"] == "ep-a-web"


# ------------------------------------------------------------------ 3. the end


def test_the_lease_ends_and_the_owner_withdraws_the_offers(ended, esi_api, openstack_env, nodes):
    assert ended["tenant"].ok, ended["tenant"].explain()
    [result] = item_results(ended["tenant"], "End the leases")
    assert result["changed"] is True and result["ended"] == [ended["lease"]], result
    withdraw = ended["withdraw"]
    assert withdraw.ok, withdraw.explain()
    [result] = item_results(withdraw, "Offer the hosts, or withdraw the offers")
    assert sorted(a["node"] for a in result["actions"]) == ["ep-1", "ep-2", "ep-big-1", "ep-big-2"]
    assert {a["action"] for a in result["actions"]} == {"withdrawn"}
    for name in ("ep-1", "ep-2", "ep-big-1", "ep-big-2"):
        assert offers_of(esi_api, openstack_env.infra, nodes[name].id) == []
    admin = openstack_env.admin_conn.baremetal
    deadline = time.monotonic() + WAIT
    node = admin.get_node(nodes["ep-1"].id)
    while node.provision_state != "available" and time.monotonic() < deadline:
        time.sleep(1)
        node = admin.get_node(nodes["ep-1"].id)
    # ESI-Leap removed the lessee and undeployed the node (fake hardware: cleaning off, straight to available)
    assert node.lessee is None and "lease_uuid" not in node.properties
    assert node.provision_state == "available", node.provision_state


# ------------------------------------------------------------------ 4. two claims of one resource class

PAIR = "esi-pair"


@pytest.fixture(scope="module")
def pair(enroll_node, esi_leap_env, ironic_tenancy_policy, openstack_env, tmp_path_factory):
    """Two nodes of one class offered to tenant-b; tenant-b claims two offers of the class in one run of
    esi_claim_offer.yml, runs it again, ends both leases by name (esi_end_leases.yml); the owner withdraws."""
    for name in ("ep-pair-1", "ep-pair-2"):
        enroll_node(name, resource_class=PAIR)
    workdir = tmp_path_factory.mktemp("esi-pair")
    infra = openstack_env.ansible_env("infra")
    offered = run_playbook(
        OFFER_HOSTS, infra, workdir, extra_vars={"offers": [{"resource_class": PAIR, "lessee": "tenant-b"}]}
    )
    assert offered.ok, offered.explain()
    env_b = openstack_env.ansible_env("tenant-b")
    out = workdir / "claims.json"
    claims = [{"name": "ep-pair-a", "resource_class": PAIR}, {"name": "ep-pair-b", "resource_class": PAIR}]
    extra = {"offer_claims": claims, "offer_claim_wait_timeout": WAIT, "offer_claims_out": str(out)}
    first = run_playbook(CLAIM_OFFER, env_b, workdir, extra_vars=extra)
    written = json.loads(out.read_text()) if out.exists() else None
    again = run_playbook(CLAIM_OFFER, env_b, workdir, extra_vars=extra)
    end = run_playbook(
        END_LEASES,
        env_b,
        workdir,
        extra_vars={"end_leases": [{"name": c["name"]} for c in claims], "end_lease_wait_timeout": WAIT},
    )
    withdraw = run_playbook(
        OFFER_HOSTS, infra, workdir, extra_vars={"offers": [{"resource_class": PAIR, "state": "absent"}]}
    )
    return {"first": first, "written": written, "again": again, "end": end, "withdraw": withdraw}


def test_two_claims_of_one_class_lease_two_nodes_each_named_after_its_claim(pair):
    assert pair["first"].ok, pair["first"].explain()
    leases, claims = pair["written"]["leases"], pair["written"]["claims"]
    assert sorted(lease["node"] for lease in leases) == ["ep-pair-1", "ep-pair-2"]
    assert [lease["name"] for lease in leases] == ["ep-pair-a", "ep-pair-b"]
    assert {c["name"]: c["host"] for c in claims} == {lease["name"]: lease["node"] for lease in leases}
    again = pair["again"]
    assert again.ok, again.explain()
    assert [r["changed"] for r in item_results(again, "Claim the offers")] == [False, False]
    assert [r["lease"]["uuid"] for r in item_results(again, "Claim the offers")] == [x["uuid"] for x in leases]


def test_leases_are_ended_by_name(pair):
    end = pair["end"]
    assert end.ok, end.explain()
    ended = [r["ended"] for r in item_results(end, "End the leases")]
    assert ended == [[x["uuid"]] for x in pair["written"]["leases"]]
    assert pair["withdraw"].ok, pair["withdraw"].explain()
