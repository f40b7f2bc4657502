"""The ESI-Leap job templates run as AWX runs them (issue 37, item 2): the owner's offer, a tenant's claim.

Marker ``esi``. ``extensions/awx/job_templates.yml``'s ``offer hosts (ESI-Leap)`` (audience owner) and ``claim an
offer (ESI-Leap)`` (audience tenant) are launched through the AWX harness of ``test_awx_jobs.py`` (the private data
directory AWX writes: the credential's injected environment, the survey's answers as extra variables, the project's
playbook; ansible-runner runs it), each with the project-scoped OpenStack credential of its actor, against the
session's Keystone, Ironic and ESI-Leap (:mod:`fixtures_esi`):

- the owner (``infra``) offers a node to tenant-a from the survey's plain answers;
- tenant-a claims it from the survey (claim name and node): ESI-Leap makes tenant-a the node's lessee and the claim
  (an Ironic allocation named after it) holds the node; the lease carries the claim's name;
- tenant-b's launch of the same template for that node fails naming it, and changes nothing;
- tenant-a ends its lease by the claim's name (``esi_end_leases.yml``): its claim of the node (never deployed) is
  deleted with it; the owner withdraws the offer.
"""

from __future__ import annotations

import openstack
import pytest
from harness.ansible import REPO_ROOT, run_playbook
from harness.awx import Awx, openstack_credential

pytestmark = pytest.mark.esi

OFFER = "baremetal.tenancy offer hosts (ESI-Leap)"
CLAIM = "baremetal.tenancy claim an offer (ESI-Leap)"
NODE = "ep-awx"
WAIT = 180


@pytest.fixture(scope="module")
def node(enroll_node, esi_leap_env, ironic_tenancy_policy):
    return enroll_node(NODE, resource_class="esi-awx")


def test_the_owner_offers_and_a_tenant_claims_through_the_job_templates(node, openstack_env, esi_api, tmp_path):
    awx = Awx(tmp_path / "awx")
    owner = openstack_credential(openstack_env.infra.credentials["member"])
    tenant_a = openstack_credential(openstack_env.tenants["tenant-a"].credentials["member"])
    tenant_b = openstack_credential(openstack_env.tenants["tenant-b"].credentials["member"])
    offer = awx.launch(OFFER, [owner], {"offer_nodes": NODE, "offer_lessee": "tenant-a"}, {})
    assert offer.status == "successful", offer.stdout[-3000:]
    [made] = esi_api(openstack_env.infra).get("/v1/offers", params={"resource_uuid": node.id}).json()["offers"]
    assert made["lessee_id"] == openstack_env.tenants["tenant-a"].project_id

    claim = awx.launch(CLAIM, [tenant_a], {"claim_name": "ep-awx-claim", "claim_node": NODE}, {})
    assert claim.status == "successful", claim.stdout[-3000:]
    admin = openstack_env.admin_conn.baremetal
    held = admin.get_node(node.id)
    assert held.lessee == openstack_env.tenants["tenant-a"].project_id
    assert admin.get_allocation(held.allocation_id).name == "ep-awx-claim"
    leases = esi_api(openstack_env.tenants["tenant-a"]).get("/v1/leases", params={"resource_uuid": node.id}).json()
    assert [lease["name"] for lease in leases["leases"]] == ["ep-awx-claim"]

    refused = awx.launch(CLAIM, [tenant_b], {"claim_name": "ep-awx-b", "claim_node": NODE}, {})
    assert refused.status == "failed"
    assert "offers of node %s: none is available to project" % NODE in refused.stdout, refused.stdout[-3000:]
    assert admin.get_node(node.id).lessee == openstack_env.tenants["tenant-a"].project_id

    end = run_playbook(
        REPO_ROOT / "playbooks" / "esi_end_leases.yml",
        openstack_env.ansible_env("tenant-a"),
        tmp_path / "end",
        extra_vars={"end_leases": [{"name": "ep-awx-claim"}], "end_lease_wait_timeout": WAIT},
    )
    assert end.ok, end.explain()
    # the claim never deployed the node: ESI-Leap leaves its allocation, the tenant's end deletes it (the node would
    # stay allocated to a lease that is over, and no next lessee's claim could get it)
    with pytest.raises(openstack.exceptions.NotFoundException):
        admin.get_allocation(held.allocation_id)
    assert admin.get_node(node.id).instance_id is None  # openstacksdk's name for instance_uuid
    withdraw = run_playbook(
        REPO_ROOT / "playbooks" / "esi_offer_hosts.yml",
        openstack_env.ansible_env("infra"),
        tmp_path / "withdraw",
        extra_vars={"offers": [{"nodes": [NODE], "state": "absent"}]},
    )
    assert withdraw.ok, withdraw.explain()
