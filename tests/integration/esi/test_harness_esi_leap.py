"""ESI-Leap in the test bed: offers, claims and leases against the session's real Keystone and Ironic.

Marker ``esi`` (``make test-esi``; ``make integration`` runs it in its session ``esi``). ESI-Leap's API and manager
(a 1-s manager tick) run beside the shared ``openstack_env`` (:mod:`fixtures_esi`); every step is a REST call
with the acting project's own credentials, and what ESI-Leap writes is read back from Ironic as the
administrator.

The owner (project ``infra``, role ``esi_leap_owner``) offers its nodes; the tenants (``tenant-a``,
``tenant-b``, role ``esi_leap_lessee``) list and claim offers. These tests hold ESI-Leap and the harness to:

- a tenant cannot offer a node;
- an offer made for tenant-a only is listed to, readable by and claimable by tenant-a only (an open offer, the
  control, is listed to both);
- a claim becomes the node's ``lessee`` and ``properties.lease_uuid`` at the manager's next tick, and tenant-a
  then sees that node, in Ironic and in ESI-Leap's ``/v1/nodes``;
- tenant-b can neither read nor end tenant-a's lease (it can end its own: the control);
- a lease whose end passes is expired by the manager, which removes ``lessee`` and ``lease_uuid``;
- tenants never see the owner's other nodes through ``/v1/nodes``: ESI-Leap's account towards Ironic is
  project-scoped (the role ``service`` on project ``service`` with Ironic's ``rbac_service_role_elevated_access``),
  where a system-scoped one would show every tenant every node (``harness/esi_leap.py``);
- the manager gives its database connections back: ESI-Leap 1.0.0's left about one every 30 s in a transaction
  until its pool was empty and its jobs died, 20 minutes into a session (every new lease then stayed
  ``created``); the harness's launcher closes the sessions each pass began (``harness/esi_leap.py``).

Waits poll the state with a deadline; the two fixed waits, where the point is that nothing happens, are counted
in manager ticks read from its log.
"""

from __future__ import annotations

import datetime
import time

import pytest

pytestmark = pytest.mark.esi

NODES = ("reserved", "open", "expiring", "refused")
WAIT = 60  # seconds: deadline of each poll (the manager ticks every second)


def _utc(seconds: float = 0) -> str:
    """A time as ESI-Leap takes it: naive UTC, to the second."""
    moment = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%S")


def _json(resp, status: int = 200):
    assert resp.status_code == status, f"{resp.request.method} {resp.url}: {resp.status_code} {resp.text}"
    return resp.json() if resp.content else None


def _wait_node(conn, node_id: str, what: str, predicate, timeout: float = WAIT):
    """Poll the node (as ``conn``) until ``predicate(node)``; return it."""
    deadline = time.monotonic() + timeout
    while True:
        node = conn.baremetal.get_node(node_id)
        if predicate(node):
            return node
        if time.monotonic() > deadline:
            raise AssertionError(
                f"node {node.name}: not {what} after {timeout}s (lessee={node.lessee}, properties={node.properties})"
            )
        time.sleep(0.2)


def _wait_lease(api, uuid: str, status: str, timeout: float = WAIT) -> dict:
    """Poll the lease (as ``api``'s project) until its status is ``status``; return it. The manager writes Ironic
    first and the lease's status after, so the node can show the lease a moment before the lease does."""
    deadline = time.monotonic() + timeout
    while True:
        lease = _json(api.get(f"/v1/leases/{uuid}"))
        if lease["status"] == status:
            return lease
        assert time.monotonic() < deadline, f"lease {uuid}: {lease['status']}, not {status} after {timeout}s"
        time.sleep(0.2)


def _leased_to(project_id: str, lease_uuid: str):
    return lambda node: node.lessee == project_id and node.properties.get("lease_uuid") == lease_uuid


def _released(node) -> bool:
    return node.lessee is None and "lease_uuid" not in node.properties


def _node_uuids(api) -> set[str]:
    return {node["uuid"] for node in _json(api.get("/v1/nodes"))["nodes"]}


def _offer_uuids(api) -> set[str]:
    return {offer["uuid"] for offer in _json(api.get("/v1/offers"))["offers"]}


def _wait_ticks(esi_leap_env, count: int, timeout: float = WAIT) -> None:
    """Wait until the manager has started ``count`` more cancel passes (its log says so at each tick)."""
    line = "Checking for leases to cancel"  # the manager's INFO line, one per tick
    log = esi_leap_env.manager_proc.log_path
    target = log.read_text(errors="replace").count(line) + count
    deadline = time.monotonic() + timeout
    while log.read_text(errors="replace").count(line) < target:
        assert esi_leap_env.manager_proc.alive(), esi_leap_env.manager_proc.log_tail()
        assert time.monotonic() < deadline, f"the manager did not tick {count} times in {timeout}s"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def nodes(enroll_node):
    """The owner's nodes (``fake-hardware``, available), by their part in this module."""
    return {key: enroll_node(f"esi-{key}") for key in NODES}


def _offer(esi_api, infra, node, **fields) -> dict:
    return _json(esi_api(infra).post("/v1/offers", json={"resource_uuid": node.id, **fields}), 201)


@pytest.fixture(scope="module")
def reserved_offer(esi_api, infra, tenant_a, nodes):
    """The owner's offer of one node for tenant-a only."""
    return _offer(esi_api, infra, nodes["reserved"], lessee_id=tenant_a.project_id)


@pytest.fixture(scope="module")
def open_offer(esi_api, infra, nodes):
    """The owner's offer of one node to every tenant."""
    return _offer(esi_api, infra, nodes["open"])


@pytest.fixture(scope="module")
def lease_a(esi_api, openstack_env, tenant_a, reserved_offer, nodes):
    """tenant-a's claim of the reserved offer, once the manager has fulfilled it."""
    lease = _json(esi_api(tenant_a).post(f"/v1/offers/{reserved_offer['uuid']}/claim", json={}), 201)
    _wait_node(
        openstack_env.admin_conn,
        nodes["reserved"].id,
        "leased to tenant-a",
        _leased_to(tenant_a.project_id, lease["uuid"]),
    )
    return lease


def test_the_lease_service_answers_through_the_catalog(esi_api, esi_leap_env, infra):
    api = esi_api(infra)
    assert api.get_endpoint() == esi_leap_env.url
    assert "offers" in _json(api.get("/v1/offers"))


def test_a_tenant_cannot_offer_a_node(esi_api, infra, tenant_a, nodes):
    node = nodes["refused"]
    resp = esi_api(tenant_a).post("/v1/offers", json={"resource_uuid": node.id})
    assert resp.status_code == 403, resp.text
    offers = _json(esi_api(infra).get("/v1/offers", params={"resource_uuid": node.id, "status": "any"}))["offers"]
    assert offers == []


def test_tenants_do_not_see_the_owners_nodes(esi_api, openstack_env, infra, tenant_a, tenant_b, nodes):
    ours = {node.id for node in nodes.values()}
    # The control: the owner lists them all through the same call.
    assert ours <= _node_uuids(esi_api(infra))
    for tenant in (tenant_a, tenant_b):
        assert _node_uuids(esi_api(tenant)) & ours == set(), tenant.name
        assert {node.id for node in tenant.conn().baremetal.nodes()} & ours == set(), tenant.name


def test_an_offer_for_tenant_a_is_listed_to_tenant_a_only(esi_api, tenant_a, tenant_b, reserved_offer, open_offer):
    assert {reserved_offer["uuid"], open_offer["uuid"]} <= _offer_uuids(esi_api(tenant_a))
    seen_by_b = _offer_uuids(esi_api(tenant_b))
    assert open_offer["uuid"] in seen_by_b
    assert reserved_offer["uuid"] not in seen_by_b


def test_tenant_b_can_neither_read_nor_claim_an_offer_for_tenant_a(esi_api, infra, tenant_b, reserved_offer):
    api = esi_api(tenant_b)
    uuid = reserved_offer["uuid"]
    assert api.get(f"/v1/offers/{uuid}").status_code == 403
    resp = api.post(f"/v1/offers/{uuid}/claim", json={})
    assert resp.status_code == 403, resp.text
    leases = _json(esi_api(infra).get("/v1/leases", params={"offer_uuid": uuid, "status": "any"}))["leases"]
    assert leases == []


def test_a_claim_makes_tenant_a_the_lessee(esi_api, openstack_env, tenant_a, nodes, lease_a):
    node = openstack_env.admin_conn.baremetal.get_node(nodes["reserved"].id)
    assert node.lessee == tenant_a.project_id
    assert node.properties["lease_uuid"] == lease_a["uuid"]
    assert node.owner == openstack_env.infra.project_id
    lease = _wait_lease(esi_api(tenant_a), lease_a["uuid"], "active")
    assert lease["project_id"] == tenant_a.project_id


def test_tenant_a_sees_its_leased_node_and_no_other(esi_api, tenant_a, nodes, lease_a):
    ours = {node.id for node in nodes.values()}
    leased = nodes["reserved"].id
    assert _node_uuids(esi_api(tenant_a)) & ours == {leased}
    assert {node.id for node in tenant_a.conn().baremetal.nodes()} & ours == {leased}


def test_tenant_b_can_neither_see_nor_end_tenant_a_lease(
    esi_api, esi_leap_env, openstack_env, tenant_a, tenant_b, nodes, lease_a
):
    api = esi_api(tenant_b)
    uuid = lease_a["uuid"]
    assert api.get(f"/v1/leases/{uuid}").status_code == 403
    assert uuid not in {lease["uuid"] for lease in _json(api.get("/v1/leases"))["leases"]}
    resp = api.delete(f"/v1/leases/{uuid}")
    assert resp.status_code == 403, resp.text
    _wait_ticks(esi_leap_env, 2)  # a cancellation would have reached Ironic by now
    assert _json(esi_api(tenant_a).get(f"/v1/leases/{uuid}"))["status"] == "active"
    node = openstack_env.admin_conn.baremetal.get_node(nodes["reserved"].id)
    assert _leased_to(tenant_a.project_id, uuid)(node)


def test_tenant_b_ends_its_own_lease(esi_api, openstack_env, tenant_b, open_offer, nodes):
    api = esi_api(tenant_b)
    lease = _json(api.post(f"/v1/offers/{open_offer['uuid']}/claim", json={}), 201)
    admin = openstack_env.admin_conn
    _wait_node(admin, nodes["open"].id, "leased to tenant-b", _leased_to(tenant_b.project_id, lease["uuid"]))
    assert api.delete(f"/v1/leases/{lease['uuid']}").status_code in (200, 204)
    _wait_node(admin, nodes["open"].id, "released", _released)


def test_a_lease_whose_end_passes_is_expired(esi_api, openstack_env, infra, tenant_a, nodes):
    node_id = nodes["expiring"].id
    # Times to the second, as ESI-Leap compares them: a claim may not start before its offer.
    start = _utc()
    offer = _offer(esi_api, infra, nodes["expiring"], lessee_id=tenant_a.project_id, start_time=start)
    # Long enough for the manager to fulfil it first on a loaded machine (it ticks every second).
    end = _utc(15)
    api = esi_api(tenant_a)
    lease = _json(api.post(f"/v1/offers/{offer['uuid']}/claim", json={"start_time": start, "end_time": end}), 201)
    admin = openstack_env.admin_conn
    _wait_node(admin, node_id, "leased to tenant-a", _leased_to(tenant_a.project_id, lease["uuid"]))
    _wait_node(admin, node_id, "released at the lease's end", _released, timeout=WAIT + 15)
    assert _utc() >= end, "released before the lease's end"
    _wait_lease(api, lease["uuid"], "expired")
    assert node_id not in {node.id for node in tenant_a.conn().baremetal.nodes()}


def test_the_manager_gives_its_database_connections_back(esi_leap_env):
    # 60 passes of each job (a minute at the 1-s tick): without the launcher's closing, one or two of its
    # connections would be left in a transaction in that time alone, on top of those of the session so far.
    _wait_ticks(esi_leap_env, 60, timeout=240)
    # a pass takes well under a second here (no lease to fulfil): 20 s in a transaction is a connection never given back
    stuck = esi_leap_env.manager_stuck_transactions(older_than=20)
    assert stuck == [], esi_leap_env.manager_report()
