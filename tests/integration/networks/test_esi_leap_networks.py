"""ESI as it ships, proved on the wire: hosts leased through ESI-Leap's offers onto each tenant's private network, a
lease's end taking its host off that network, and the host's hand-over to the next tenant (issue 36 item 4 and
issue 37 item 4, together).

Marker ``networks`` (the switch session, ``make test-networks``): the session's Keystone and Ironic, Neutron with
networking-generic-switch configuring the userspace switch (``networks_env``, ``ironic_on_switch``), and ESI-Leap's
API and manager beside them (``esi_leap_env``, a 1-s manager tick). The owner (project ``infra``) enrols three
``neutron``-interface nodes that nobody leases and offers them to tenant-a; every owner and tenant step is an
``ansible-playbook`` run with the project's own credentials. A namespace on each node's switch port, with the address
the tenant gives the node, stands for the node's NIC.

- tenant-a claims the three offers itself (``host_offer_claim``), deploys two of the nodes onto its network
  (``host_claim`` with ``networks``) and attaches the third without deploying it: its two hosts reach each other and
  its gateway, tenant-b's gateway reaches neither, and the attached node's switch port stays in quarantine, where it
  reaches nothing;
- the first lease expires (ESI's administrator moves its end to now through ESI-Leap's API, as time would): ESI-Leap's
  manager takes the lessee back and undeploys the node; when the node is ``available`` again its switch port is in
  quarantine, no VIF is attached, nothing of tenant-a's instance is on it, and tenant-a's gateway no longer reaches
  it while it still reaches tenant-a's other host;
- the hand-over: the owner offers that node to tenant-b, which claims the offer and deploys the node onto its own
  network at the address the node had on tenant-a's: tenant-b's gateway reaches it, and there is no path between it
  and tenant-a's network (tenant-a's gateway and other host) either way;
- the attached, never deployed node's lease expires with the lease keeper watching (``host_offer_expire``, the EDA
  lease keeper's module): ESI-Leap ends the lease and leaves tenant-a's VIF attached and its allocation, and the
  keeper detaches the VIF and removes the allocation and ``instance_info``. The manager is held stopped while the
  keeper reads the passed end, so nothing races the manager's tick;
- tenant-a ends its other lease early (``host_offer_claim state=absent``, its ``openstack esi lease delete``): the node
  is undeployed, its switch port back in quarantine, tenant-a's gateway no longer reaches it;
- no module result a tenant got names the switch, a switch port, a binding, a VLAN or a BMC.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import time

import pytest
from fixtures_networks import note
from fixtures_openstack import apply_tenancy_policy
from harness import ironic_networks, procs, traffic
from harness import neutron as neutron_harness
from harness import sushy as sushy_harness
from harness.ansible import localhost_play, run_playbook
from harness.keystone import REGION
from harness.openstack import wait_for_node

pytestmark = pytest.mark.networks

CIDR = "10.249.0.0/24"
RC = "baremetal-esinet"
WAIT = 300
LEASE_SECONDS = 7200  # every lease ends two hours after its claim, unless the test moves its end
NOTICE_KEY = "baremetal_tenancy_lease_notice"


@dataclasses.dataclass(frozen=True)
class NodeSpec:
    node: str
    switch_port: str
    address: str  # on tenant-a's network, and on tenant-b's after the hand-over
    claim: str


WEB, OTHER, IDLE = (
    NodeSpec("esinet-1", "en-n1", "10.249.0.11", "en-web-1"),
    NodeSpec("esinet-2", "en-n2", "10.249.0.12", "en-web-2"),
    NodeSpec("esinet-3", "en-n3", "10.249.0.13", "en-idle"),
)
NODES = (WEB, OTHER, IDLE)
#: tenant -> (its network, its gateway's switch port, the gateway's address)
TENANTS = {
    "tenant-a": ("esi-private-a", "en-gw-a", "10.249.0.1"),
    "tenant-b": ("esi-private-b", "en-gw-b", "10.249.0.2"),
}


@dataclasses.dataclass
class Market:
    workdir: object
    image: dict
    nodes: dict = dataclasses.field(default_factory=dict)  # node name -> the Ironic node
    hosts: dict = dataclasses.field(default_factory=dict)  # node name -> the Endpoint on its switch port
    gateways: dict = dataclasses.field(default_factory=dict)  # tenant -> its gateway's Endpoint
    vlans: dict = dataclasses.field(default_factory=dict)  # tenant -> its network's VLAN
    leases: dict = dataclasses.field(default_factory=dict)  # claim name -> ESI-Leap lease UUID
    outputs: list = dataclasses.field(default_factory=list)  # every tenant's ansible-playbook output
    secrets: set = dataclasses.field(default_factory=set)  # what no tenant output may hold

    def host(self, spec: NodeSpec):
        return self.hosts[spec.node]


def _systems() -> list[dict]:
    systems = sushy_harness.default_systems(len(NODES))
    for index, (system, spec) in enumerate(zip(systems, NODES)):
        system["name"] = spec.node
        system["nics"] = [{"mac": f"52:54:06:00:04:{index:02x}"}]
    return systems


def _iso(timestamp: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(timestamp))


def _task(title: str, module: str, **args) -> dict:
    return {"name": title, f"baremetal.tenancy.{module}": args}


def _play(openstack_env, market: Market, project: str, tasks: list, tag: str):
    run = run_playbook(localhost_play(tasks), openstack_env.ansible_env(project), market.workdir / tag)
    if project != "infra":
        market.outputs.append(run.stdout + run.stderr)
    return run


def _network_task(tenant: str) -> dict:
    network, _port, gateway_ip = TENANTS[tenant]
    return _task(
        "network", "tenant_network", name=network, subnets=[{"name": "hosts", "cidr": CIDR, "gateway_ip": gateway_ip}]
    )


def _offer_claim_task(spec: NodeSpec, claim: str) -> dict:
    end = _iso(time.time() + LEASE_SECONDS)
    return _task(
        f"lease {claim}", "host_offer_claim", node=spec.node, name=claim, end=end, wait=True, wait_timeout=WAIT
    )


def _host_claim_task(market: Market, tenant: str, spec: NodeSpec, claim: str, deploy: bool = True) -> dict:
    args = dict(
        backend="ironic",
        name=claim,
        resource_class=RC,
        candidate_nodes=[spec.node],
        networks=[{"network": TENANTS[tenant][0], "fixed_ip": spec.address}],
    )
    if deploy:
        args.update(image=market.image, wait=True, wait_timeout=WAIT)
    return _task(f"claim {claim}", "host_claim", **args)


def _lease_admin(openstack_env):
    """ESI-Leap's API as ESI's administrator (role ``admin``: the one that may change a lease's end)."""
    from keystoneauth1 import adapter, session
    from keystoneauth1.identity import v3

    auth = v3.Password(**openstack_env.keystone_server.admin_auth("project"))
    return adapter.Adapter(
        session.Session(auth=auth), service_type="lease", interface="public", region_name=REGION, raise_exc=False
    )


def _end_now(openstack_env, lease: str) -> None:
    """Move ``lease``'s end to the past second (``PATCH /v1/leases/<id>``, ESI-Leap's administrator only)."""
    end = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - 1))
    response = _lease_admin(openstack_env).patch(f"/v1/leases/{lease}", json={"end_time": end})
    assert response.status_code == 200, (response.status_code, response.text)


def _assert_nothing_of_the_tenant(openstack_env, networks_env, market: Market, spec: NodeSpec) -> None:
    """``spec``'s node has no lessee, no lease, no instance, no VIF, and its switch port is in quarantine."""
    admin, switch = openstack_env.admin_conn, networks_env.switch
    node = admin.baremetal.get_node(market.nodes[spec.node].id)
    assert node.lessee is None and "lease_uuid" not in node.properties, (node.lessee, node.properties)
    assert node.provision_state == "available", node.provision_state
    assert node.instance_id is None and node.allocation_id is None, (node.instance_id, node.allocation_id)
    assert node.instance_info == {}, node.instance_info
    assert NOTICE_KEY not in node.properties, node.properties
    assert admin.baremetal.list_node_vifs(node) == [], "a VIF of the ended lease is still attached"
    assert switch.port_vlan(spec.switch_port) == switch.quarantine_vlan, switch.port_vlan(spec.switch_port)
    for port in networks_env.admin().network.ports(device_id=node.id):
        assert not port.binding_host_id, f"port {port.name} is still bound to the node"


@pytest.fixture(scope="module")
def market(openstack_env, networks_env, ironic_on_switch, esi_leap_env, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("esi-networks")
    emulator = sushy_harness.start_sushy(workdir / "sushy", _systems())
    procs.record_service(dataclasses.replace(emulator.service, name="sushy-tools (ESI-Leap on tenant networks)"))
    admin, switch = openstack_env.admin_conn, networks_env.switch
    listeners = []
    apply_tenancy_policy(openstack_env, workdir / "lessee-vifs", lessee_vifs=True)
    iso = ironic_networks.live_iso(openstack_env.ironic_server.http_root, workdir)
    bed = Market(workdir, {"url": f"{openstack_env.ironic_server.http_url}/{iso}", "format": "live-iso"})
    bed.secrets = {
        neutron_harness.SWITCH_INFO,
        neutron_harness.SWITCH_ID,
        f":{switch.ssh_port}",
        "local_link",
        "binding_profile",
        "binding:profile",
        "segmentation",
        "driver_info",
        "redfish_",
        *(spec.switch_port for spec in NODES),
        *(bmc.base_url.split("//", 1)[1] for bmc in emulator.bmcs),
        *(bmc.password for bmc in emulator.bmcs),
    }
    try:
        for bmc, spec in zip(emulator.bmcs, NODES):
            bed.hosts[spec.node] = host = switch.add_host(spec.switch_port, spec.address + "/24")
            listeners.append(traffic.serve_tcp(host, workdir))
            bed.nodes[spec.node] = ironic_networks.enroll_switched_node(
                admin, bmc, spec.node, openstack_env.infra_project_id, None, spec.switch_port, ironic_on_switch, RC
            )
        yield bed
    finally:
        errors = []
        lease_api = _lease_admin(openstack_env)
        for lease in bed.leases.values():
            lease_api.delete(f"/v1/leases/{lease}")  # an ended one answers an error: nothing to end
        for node in bed.nodes.values():
            try:  # ESI-Leap has ended the lease and any undeployment it began is over before the owner takes the node
                wait_for_node(admin, node.id, timeout=WAIT, lessee=None, target_provision_state=None)
                ironic_networks.release_node(admin, node, WAIT)
            except Exception as exc:  # release the others, then fail
                errors.append(exc)
        for listener in listeners:
            listener.stop()
        emulator.stop()
        apply_tenancy_policy(openstack_env, workdir / "default")
        if errors:
            raise errors[0]


def test_each_tenant_makes_its_network_and_the_owner_offers_the_nodes_to_tenant_a(openstack_env, networks_env, market):
    owner, switch = networks_env.admin(), networks_env.switch
    for tenant, (_network, gateway_port, gateway_ip) in TENANTS.items():
        run = _play(openstack_env, market, tenant, [_network_task(tenant)], f"network-{tenant}")
        assert run.ok, run.explain()
        network = run.result("network")["network"]
        market.vlans[tenant] = owner.network.get_network(network["id"]).provider_segmentation_id
        market.gateways[tenant] = switch.add_gateway(gateway_port, market.vlans[tenant], gateway_ip + "/24")
    assert len(set(market.vlans.values()) | {switch.quarantine_vlan}) == 3, market.vlans
    offer = _task("offer", "host_offer", nodes=[spec.node for spec in NODES], lessee="tenant-a")
    run = _play(openstack_env, market, "infra", [offer], "offer-a")
    assert run.ok, run.explain()
    assert run.result("offer")["changed"] is True


def test_tenant_a_claims_the_offers_onto_its_network_and_its_hosts_reach_each_other(
    openstack_env, networks_env, market
):
    tasks = [_offer_claim_task(spec, spec.claim) for spec in NODES]
    tasks += [_host_claim_task(market, "tenant-a", spec, spec.claim) for spec in (WEB, OTHER)]
    tasks.append(_host_claim_task(market, "tenant-a", IDLE, IDLE.claim, deploy=False))
    started = time.monotonic()
    run = _play(openstack_env, market, "tenant-a", tasks, "claim-a")
    assert run.ok, run.explain()
    note(f"ESI-Leap offers claimed and two hosts deployed onto the tenant's network: {time.monotonic() - started:.1f}s")
    project = openstack_env.tenants["tenant-a"].project_id
    admin, switch = openstack_env.admin_conn, networks_env.switch
    for spec in NODES:
        market.leases[spec.claim] = run.result(f"lease {spec.claim}")["lease"]["uuid"]
        node = admin.baremetal.get_node(market.nodes[spec.node].id)
        assert node.lessee == project and node.properties.get("lease_uuid") == market.leases[spec.claim], node
    for spec in (WEB, OTHER):
        claim = run.result(f"claim {spec.claim}")["claim"]
        assert claim["provision_state"] == "active" and claim["networks"][0]["addresses"] == [spec.address], claim
        switch.wait_port_vlan(spec.switch_port, market.vlans["tenant-a"])
    idle = admin.baremetal.get_node(market.nodes[IDLE.node].id)
    assert idle.provision_state == "available" and idle.allocation_id, idle  # claimed, attached, never deployed
    assert len(admin.baremetal.list_node_vifs(idle)) == 1
    assert switch.port_vlan(IDLE.switch_port) == switch.quarantine_vlan  # nothing binds a port before a deployment
    gateway_a, gateway_b = market.gateways["tenant-a"], market.gateways["tenant-b"]
    web, other, attached = (market.host(spec) for spec in NODES)
    for source, target in ((gateway_a, web), (gateway_a, other), (web, other), (other, web)):
        traffic.wait_reaches(source, target)
    for source, target in ((gateway_b, web), (gateway_b, other), (attached, gateway_a), (attached, web)):
        traffic.assert_isolated(source, target)


def test_an_expired_lease_takes_the_host_off_the_tenants_network(openstack_env, networks_env, market):
    admin = openstack_env.admin_conn
    node = market.nodes[WEB.node]
    started = time.monotonic()
    _end_now(openstack_env, market.leases[WEB.claim])
    wait_for_node(admin, node.id, timeout=WAIT, lessee=None, provision_state="available")
    note(
        f"an ESI-Leap lease's end until its host is available, off the tenant's network: {time.monotonic() - started:.1f}s"
    )
    _assert_nothing_of_the_tenant(openstack_env, networks_env, market, WEB)
    gateway_a = market.gateways["tenant-a"]
    traffic.wait_reaches(gateway_a, market.host(OTHER))  # the control, at the same moment
    traffic.assert_isolated(gateway_a, market.host(WEB))
    traffic.assert_isolated(market.host(WEB), market.host(OTHER))
    run = _play(openstack_env, market, "tenant-a", [_task("claims", "host_claim_info", backend="ironic")], "info-a")
    assert run.ok, run.explain()
    assert sorted(claim["name"] for claim in run.result("claims")["claims"]) == sorted([OTHER.claim, IDLE.claim])


def test_the_next_tenant_gets_the_host_with_no_path_to_the_last_tenants_network(openstack_env, networks_env, market):
    owner = [
        _task("withdraw", "host_offer", state="absent", nodes=[WEB.node]),
        _task("offer", "host_offer", nodes=[WEB.node], lessee="tenant-b"),
    ]
    run = _play(openstack_env, market, "infra", owner, "offer-b")
    assert run.ok, run.explain()
    claim = "en-b-web"
    tasks = [_offer_claim_task(WEB, claim), _host_claim_task(market, "tenant-b", WEB, claim)]
    run = _play(openstack_env, market, "tenant-b", tasks, "claim-b")
    assert run.ok, run.explain()
    market.leases[claim] = run.result(f"lease {claim}")["lease"]["uuid"]
    assert run.result(f"claim {claim}")["claim"]["provision_state"] == "active"
    networks_env.switch.wait_port_vlan(WEB.switch_port, market.vlans["tenant-b"])
    gateway_a, gateway_b = market.gateways["tenant-a"], market.gateways["tenant-b"]
    web, other = market.host(WEB), market.host(OTHER)
    traffic.wait_reaches(gateway_b, web)
    traffic.wait_reaches(gateway_a, other)  # tenant-a's network is up, at the same moment
    for source, target in ((gateway_a, web), (other, web), (web, gateway_a), (web, other), (gateway_b, other)):
        traffic.assert_isolated(source, target)


def test_the_lease_keeper_sees_an_attached_hosts_expiry_through(openstack_env, networks_env, esi_leap_env, market):
    """ESI-Leap ends the lease of a node it did not deploy without detaching anything; the keeper must."""
    admin = openstack_env.admin_conn
    node = market.nodes[IDLE.node]
    keeper = _task("keeper", "host_offer_expire", nodes=[IDLE.node], lead_time=600, wait=True, wait_timeout=WAIT)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        with esi_leap_env.manager_held():
            _end_now(openstack_env, market.leases[IDLE.claim])
            running = pool.submit(_play, openstack_env, market, "infra", [keeper], "keeper")
            deadline = time.monotonic() + WAIT
            while NOTICE_KEY not in admin.baremetal.get_node(node.id).properties:
                assert not running.done(), running.result().explain()
                assert time.monotonic() < deadline, "the keeper announced no end"
                time.sleep(0.3)
            # the keeper has read the passed end and waits for ESI-Leap: the manager starts again
        run = running.result(timeout=WAIT + 120)
    finally:
        pool.shutdown(wait=False)
    assert run.ok, run.explain()
    actions = run.result("keeper")["actions"]
    assert [a["action"] for a in actions] == ["warned", "ended"], actions
    assert actions[-1]["lease"] == market.leases[IDLE.claim] and actions[-1].get("allocation_removed"), actions
    _assert_nothing_of_the_tenant(openstack_env, networks_env, market, IDLE)
    traffic.assert_isolated(market.host(IDLE), market.gateways["tenant-a"])


def test_a_lease_the_tenant_ends_early_takes_its_host_off_the_network(openstack_env, networks_env, market):
    lease = market.leases[OTHER.claim]
    end = _task("end", "host_offer_claim", state="absent", lease=lease, wait=True, wait_timeout=WAIT)
    run = _play(openstack_env, market, "tenant-a", [end], "end-a")
    assert run.ok, run.explain()
    assert run.result("end")["ended"] == [lease]
    wait_for_node(openstack_env.admin_conn, market.nodes[OTHER.node].id, timeout=WAIT, provision_state="available")
    _assert_nothing_of_the_tenant(openstack_env, networks_env, market, OTHER)
    traffic.wait_reaches(market.gateways["tenant-b"], market.host(WEB))  # the control, at the same moment
    traffic.assert_isolated(market.gateways["tenant-a"], market.host(OTHER))


def test_nothing_of_the_switch_or_the_bmcs_reaches_a_tenant(market):
    assert len(market.outputs) >= 6, len(market.outputs)
    for output in market.outputs:
        leaked = sorted(word for word in market.secrets if word in output)
        assert not leaked, (leaked, output[-2000:])
