"""The Event-Driven Ansible lease keeper on leases ESI-Leap holds: ``ansible-rulebook`` running
``extensions/eda/rulebooks/lease_keeper.yml`` beside the session's Keystone, Ironic and ESI-Leap (marker ``esi``).

The source (``baremetal.tenancy.ironic_leases``) polls as the owner (``infra``: the project that owns the nodes and
offers them): Ironic's nodes, and, since the catalog has ESI-Leap's ``lease`` service, ESI-Leap's active leases and
its events. For a node whose ``properties.lease_uuid`` names an active lease of its ``lessee`` it emits the same
``lease_warning`` / ``lease_ending`` as for leases in node fields (``provider: esi_leap``), and the playbook
``ironic_lease_event.yml`` runs ``host_offer_expire``:

- tenant-a claims an offer with a lease ending 360 s later (ESI-Leap keeps a lease's end; its deployment and the
  keeper's start come after the claim), deploys the node, and reads with its own credentials the same end-of-lease
  notice a lease in node fields gets, before the end; at the end ESI-Leap's manager ends the lease (the lessee goes,
  the node is undeployed), never before the end, and the keeper's ending run removes the notice;
- tenant-a also claims ek-2 and never deploys it: ESI-Leap's end leaves its allocation and ``instance_info``, and the
  keeper's ending run removes both, so that the node is free for the next lessee;
- tenant-b's lease, ending in 50 minutes, is warned of at once; tenant-b ends it early (ESI-Leap's event
  ``esi_leap.lease.delete.end``) and the keeper removes its notice, which announces nothing any more.

Deadlines: at load 20-30 the deployment took 90 s and the rulebook 70 s to its first poll, which leaves the warning's
run (about 40 s to start) more than two minutes before the end; the ending is asked 60 s ahead. The lateness of
ESI-Leap's end and of the notice's removal is printed, not asserted.
"""

from __future__ import annotations

import calendar
import time

import pytest
from harness.ansible import localhost_play, run_playbook
from harness.rulebook import Rulebook

pytestmark = pytest.mark.esi

NOTICE_KEY = "baremetal_tenancy_lease_notice"
MICROVERSION = "1.78"
MD5 = "9f6c1a0f5e2b4c8d7a3e1f0b2c4d6e8f"
RC = "esi-keeper"
LEASE_SECONDS = 360  # tenant-a's lease: from the claim to its end
WAIT = 180
FIRST_POLL = "following "
#: polls every second; endings asked 60 s ahead (a playbook took up to 40 s to start at load 30); every lease
#: ending within the hour is warned of at once
KEEPER_VARS = {
    "lease_keeper_interval": 1,
    "lease_keeper_lead_time": 60,
    "lease_keeper_warn_ahead": 3600,
    "lease_keeper_retry": 60,
}


def iso(timestamp: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(timestamp))


def read_node(conn, node, fields="uuid,name,lessee,provision_state,properties"):
    response = conn.baremetal.get("/nodes/%s?fields=%s" % (node, fields), microversion=MICROVERSION, raise_exc=False)
    if response.status_code == 404:
        return None
    assert response.status_code == 200, response.text
    return response.json()


def task(name, module, **args):
    return {"name": name, "baremetal.tenancy.%s" % module: args}


def wait_for(what, check, timeout, output=lambda: ""):
    deadline = time.time() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.time() < deadline, "%s: not after %d s\n%s" % (what, timeout, output()[-6000:])
        time.sleep(0.2)


@pytest.fixture(scope="module")
def leased(openstack_env, enroll_node, esi_leap_env, ironic_tenancy_policy, tmp_path_factory):
    """ek-0 offered to tenant-a and ek-1 to tenant-b; tenant-a claims (a lease ending LEASE_SECONDS after the claim)
    and deploys ek-0, tenant-b claims ek-1 for 50 minutes."""
    for name in ("ek-0", "ek-1", "ek-2"):
        enroll_node(name, resource_class=RC)
    workdir = tmp_path_factory.mktemp("esi-keeper")
    offer = run_playbook(
        localhost_play(
            [
                task("offer ek-0", "host_offer", nodes=["ek-0", "ek-2"], lessee="tenant-a"),
                task("offer ek-1", "host_offer", nodes=["ek-1"], lessee="tenant-b"),
            ]
        ),
        openstack_env.ansible_env("infra"),
        workdir / "offer",
    )
    assert offer.ok, offer.explain()
    claim_b = run_playbook(
        localhost_play(
            [task("claim", "host_offer_claim", node="ek-1", end=iso(time.time() + 3000), wait=True, wait_timeout=WAIT)]
        ),
        openstack_env.ansible_env("tenant-b"),
        workdir / "claim-b",
    )
    assert claim_b.ok, claim_b.explain()
    end_a = time.time() + LEASE_SECONDS
    claim_a = run_playbook(
        localhost_play(
            [
                task("claim", "host_offer_claim", node="ek-0", end=iso(end_a), wait=True, wait_timeout=WAIT),
                task("claim ek-2", "host_offer_claim", node="ek-2", end=iso(end_a), wait=True, wait_timeout=WAIT),
                {  # ek-2 claimed and never deployed: an allocation, which ESI-Leap's end leaves
                    "name": "allocate",
                    "baremetal.tenancy.host_claim": {
                        "backend": "ironic",
                        "name": "ek-idle",
                        "resource_class": RC,
                        "candidate_nodes": ["ek-2"],
                    },
                },
                {
                    "name": "deploy",
                    "baremetal.tenancy.host_claim": {
                        "backend": "ironic",
                        "name": "ek-claim",
                        "resource_class": RC,
                        "candidate_nodes": ["ek-0"],
                        "image": {"url": "http://images.example.com/os.img", "checksum": MD5},
                        "wait": True,
                        "wait_timeout": WAIT,
                    },
                },
            ]
        ),
        openstack_env.ansible_env("tenant-a"),
        workdir / "claim-a",
    )
    assert claim_a.ok, claim_a.explain()
    return {
        "a": claim_a.result("claim")["lease"],
        "b": claim_b.result("claim")["lease"],
        "claimed_at": time.time(),
        "deploy": claim_a.result("deploy")["claim"],
        "idle": claim_a.result("allocate")["claim"],
    }


def test_esi_leap_leases_are_warned_of_and_ended_by_esi_leap_and_early_ends_lose_their_notice(
    leased, openstack_env, tmp_path
):
    env = openstack_env
    admin = env.admin_conn
    tenant_a, tenant_b = env.tenants["tenant-a"], env.tenants["tenant-b"]
    lease_a, lease_b = leased["a"], leased["b"]
    end = calendar.timegm(time.strptime(lease_a["end"], "%Y-%m-%dT%H:%M:%SZ"))
    assert leased["deploy"]["provision_state"] == "active"
    assert read_node(admin, "ek-0")["lessee"] == tenant_a.project_id
    print("\nESI-Leap keeper: lease of ek-0 ends %.0f s after the claim and the deployment" % (end - time.time()))

    rulebook = Rulebook("baremetal.tenancy.lease_keeper", KEEPER_VARS, env.ansible_env("infra"), tmp_path / "rb")
    try:
        rulebook.wait_for_line(FIRST_POLL)
        assert "ESI-Leap leases" in rulebook.output

        # tenant-a reads the notice on its node with its own credentials, long before the end
        notice = wait_for(
            "tenant-a's notice",
            lambda: (read_node(tenant_a.conn(), "ek-0")["properties"] or {}).get(NOTICE_KEY),
            max(5, end - time.time() - 1),
            lambda: rulebook.output,
        )
        seen = time.time()
        assert (notice["lease"], notice["project"], notice["end"]) == (
            lease_a["uuid"],
            tenant_a.project_id,
            lease_a["end"],
        )
        assert lease_a["end"] in notice["message"] and set(notice) == {"lease", "project", "end", "warned", "message"}

        # tenant-b's lease, 50 minutes long, is warned of at once; tenant-b ends it early
        notice_b = wait_for(
            "tenant-b's notice",
            lambda: (read_node(admin, "ek-1")["properties"] or {}).get(NOTICE_KEY),
            WAIT,
            lambda: rulebook.output,
        )
        assert notice_b["lease"] == lease_b["uuid"] and notice_b["project"] == tenant_b.project_id
        ended_early = run_playbook(
            localhost_play([task("end", "host_offer_claim", state="absent", lease=lease_b["uuid"], wait=True)]),
            env.ansible_env("tenant-b"),
            tmp_path / "end-b",
        )
        assert ended_early.ok, ended_early.explain()
        wait_for(
            "the notice of tenant-b's ended lease removed",
            lambda: NOTICE_KEY not in (read_node(admin, "ek-1")["properties"] or {}),
            WAIT,
            lambda: rulebook.output,
        )
        node_b = read_node(admin, "ek-1")
        assert node_b["lessee"] is None and "lease_uuid" not in node_b["properties"]

        # the end: ESI-Leap's manager ends the lease (never before its end), the keeper removes the notice
        def lessee_gone():
            return read_node(admin, "ek-0", fields="uuid,lessee")["lessee"] is None

        wait_for("ESI-Leap ending ek-0's lease", lessee_gone, max(0, end - time.time()) + WAIT, lambda: rulebook.output)
        ended_at = time.time()
        wait_for(
            "the notice of ek-0 removed",
            lambda: NOTICE_KEY not in (read_node(admin, "ek-0")["properties"] or {}),
            WAIT,
            lambda: rulebook.output,
        )
        print(
            "ESI-Leap keeper: tenant-a read the notice %.0f s before the end; ESI-Leap ended the lease %.1f s after"
            " it; the notice was gone %.1f s after it" % (end - seen, ended_at - end, time.time() - end)
        )
        assert ended_at >= end - 1, "ended %.1f s before the end" % (end - ended_at)  # ESI-Leap: whole seconds
        wait_for(
            "ek-0 undeployed by ESI-Leap",
            lambda: read_node(admin, "ek-0")["provision_state"] == "available",
            WAIT,
        )
        node = read_node(admin, "ek-0")
        assert node["lessee"] is None and "lease_uuid" not in node["properties"]
        assert read_node(tenant_a.conn(), "ek-0") is None
        # ek-2, claimed and never deployed: ESI-Leap ended its lease too and left the allocation; the keeper's ending
        # run removed it (and instance_info), so the next lessee's claim can have the node
        assert leased["idle"]["host"] == "ek-2"

        def ek2_free():
            found = read_node(admin, "ek-2", fields="lessee,instance_uuid,instance_info")
            return found["lessee"] is None and found["instance_uuid"] is None and not found["instance_info"]

        wait_for("ek-2's allocation removed by the keeper", ek2_free, WAIT, lambda: rulebook.output)
        gone = admin.baremetal.get("/allocations/ek-idle", microversion=MICROVERSION, raise_exc=False)
        assert gone.status_code == 404, gone.text
        output = rulebook.output
        assert "warning: node ek-0, ESI-Leap lease %s" % lease_a["uuid"] in output
        assert "ending: node ek-0, ESI-Leap lease %s" % lease_a["uuid"] in output
        assert "ESI-Leap ended lease %s" % lease_b["uuid"] in output
    finally:
        rulebook.kill()
