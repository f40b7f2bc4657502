"""HostClaims relayed from two management clusters to a host cluster on the real baremetal-operator (issue 39).

The host cluster is the session's BMO-dialect cluster (``fixtures_bmo.bmo_dialect_rbac``): baremetal-operator's own
HostClaim CRD and webhooks, the real operator provisioning its hosts through Ironic, and ``host_bind`` (the binder
identity) as its claims' controller, as in ``test_bmo_hostclaim_upstream``'s binder side. Two hosts, ``rb-0`` and
``rb-1``, wait in ``rb-infra`` (watched by the operator); a HostDeployPolicy there admits the namespaces
``rb-hosts-a`` and ``rb-hosts-b``, each the home of one ServiceAccount (``mgmt-a``, ``mgmt-b``) bound to the tenant
HostClaim role of its namespace only.

Two management clusters, both in the proposal's dialect without an operator: the session's Metal3 cluster (``a``)
and one started here (``b``, set up by the same ``hostclaim_setup`` role). In each, tenant-a writes a claim named
``web`` with ``host_claim``'s ``credentials``, whose Secret holds a kubeconfig with its ServiceAccount's token; in
``a`` the kubeconfig's server is a TCP proxy in front of the host cluster (:mod:`harness.fault_proxy`), so that the
host cluster can be down for ``a`` and back.

Steps, in order: each claim is relayed into its own namespace by its own identity (BMO's dialect: ``poweredOn``,
the image, the user data copied), and neither identity reads the other's; the host cluster binds both, the real
operator provisions ``a``'s with its image and power, and the binding and readiness come back to each management
cluster with the host's exported metadata (``host_claim_info`` and the ``claimed_hosts`` inventory list only the
cluster's own claim); a reboot asked
in ``a`` reaches the host; the host cluster down: ``a``'s pass gives one reason and changes nothing remote while
``b``'s goes on, and once it is back ``a``'s power change reaches the host; ``host_release`` in each cluster ends
with the remote claims gone and ``a``'s host deprovisioned; the EDA binders of both clusters serve a new claim of
``b`` from claim to release with no pass run by hand (the management cluster's polling its relayed claims), and
neither binder's log holds the kubeconfig; nothing either tenant read, in either cluster, holds a BMC address, BMC
credential, the credentials' token or the host cluster's address.

Runs only under ``-m real_bmo`` (``make test-bmo``).
"""

from __future__ import annotations

import base64
import json
import time

import pytest
import requests
import yaml
from fixtures_bmo import create_hosts
from fixtures_inventory import inventory
from fixtures_metal3 import GROUP, MERGE, SETUP_VARS, VERSION, Metal3Env, setup_play
from harness import baremetal_operator as bmo
from harness import kube
from harness.ansible import run_playbook
from harness.fault_proxy import FaultProxy
from harness.rulebook import Rulebook
from kubernetes import client

ORIGIN_UID_LABEL = "relay.hostclaim.metal3.io/origin-uid"  # the relay's label: the local claim's uid
EXPORTED = "export.hostclaim.metal3.io/rack"  # a host annotation the binders import onto the claim

pytestmark = pytest.mark.real_bmo

INFRA = "rb-infra"  # in fixtures_bmo.BMO_DIALECT_NAMESPACES: the operator provisions its hosts
HOSTS = {"rb-0": (18, "relay-bmo"), "rb-1": (19, "relay-bmo")}  # name -> (BMC of the BMO-dialect stack, pool label)
TENANT_NS, CLAIM, SECRET = "rb-tenant", "web", "hosts-kubeconfig"
#: the piece of the tenant ClusterRole with the HostClaim and Secret rights, bound to each ServiceAccount there
TENANT_PIECE = "baremetal-tenancy-tenant-hostclaims"
SIDES = ("a", "b")


def b64(text: str | bytes) -> str:
    return base64.b64encode(text.encode() if isinstance(text, str) else text).decode("ascii")


class Side:
    """One management cluster, the namespace and ServiceAccount its relay uses in the host cluster, and all its
    tenant read."""

    def __init__(self, name: str, mgmt: Metal3Env, server: str):
        self.name, self.mgmt, self.server = name, mgmt, server
        self.hosts_ns, self.account = "rb-hosts-%s" % name, "mgmt-%s" % name
        self.token = ""
        self.seen: list = []  # every result, claim, inventory and event the tenant read here

    def kubeconfig(self, ca: bytes) -> str:
        cluster = {"server": self.server, "certificate-authority-data": b64(ca)}
        return yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "hosts", "cluster": cluster}],
                "users": [{"name": self.account, "user": {"token": self.token}}],
                "contexts": [
                    {"name": "hosts", "context": {"cluster": "hosts", "user": self.account, "namespace": self.hosts_ns}}
                ],
                "current-context": "hosts",
            }
        )

    def bind(self) -> dict:
        result = self.mgmt.bind([TENANT_NS])
        self.seen += [result, self.claim()]
        [entry] = result["claims"]
        return entry

    def claim(self) -> dict | None:
        return self.mgmt.claim(TENANT_NS, CLAIM)

    def tenant(self, tasks: list[dict]):
        run = self.mgmt.playbook("tenant-a", tasks)
        assert run.ok, run.explain()
        self.seen += [run.result(task["name"]) for task in tasks]
        return run

    def condition(self, ctype: str) -> dict:
        return next(c for c in self.claim()["status"]["conditions"] if c["type"] == ctype)


class World:
    def __init__(self, hosts: Metal3Env, stack, proxy: FaultProxy, sides: dict[str, Side], workdir):
        self.hosts, self.stack, self.proxy, self.sides, self.workdir = hosts, stack, proxy, sides, workdir

    def host_bind(self) -> dict:
        return self.hosts.bind([side.hosts_ns for side in self.sides.values()])

    def remote_claims(self, side: Side, token: str | None = None) -> list[dict] | int:
        """The claims of ``side``'s host namespace as ``token`` (default: ``side``'s own identity) reads them
        from the host cluster; the HTTP status when it may not."""
        answer = requests.get(
            "%s/apis/%s/%s/namespaces/%s/hostclaims" % (self.hosts.kube.server, GROUP, VERSION, side.hosts_ns),
            headers={"Authorization": "Bearer " + (token or side.token)},
            verify=str(self.hosts.kube.ca_file),
            timeout=30,
        )
        if answer.status_code != 200:
            return answer.status_code
        items = answer.json()["items"]
        if token is None:
            side.seen.append(items)
        return items

    def host_of(self, side: Side) -> str:
        [remote] = self.remote_claims(side)
        return remote["status"]["bareMetalHost"]["name"]

    def wait_host(self, name: str, what: str, predicate) -> None:
        with self.hosts.api() as api:
            bmo.wait_hosts(api, self.stack, INFRA, [name], predicate, what, 300)


def host_cluster_identity(api, side: Side) -> None:
    core = client.CoreV1Api(api)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=side.hosts_ns)))
    core.create_namespaced_service_account(
        side.hosts_ns, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name=side.account))
    )
    client.RbacAuthorizationV1Api(api).create_namespaced_role_binding(
        side.hosts_ns,
        client.V1RoleBinding(
            metadata=client.V1ObjectMeta(name="management-cluster-%s" % side.name),
            role_ref=client.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=TENANT_PIECE),
            subjects=[client.RbacV1Subject(kind="ServiceAccount", name=side.account, namespace=side.hosts_ns)],
        ),
    )
    request = client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(audiences=["https://kubernetes.default.svc"], expiration_seconds=3600)
    )
    side.token = core.create_namespaced_service_account_token(side.account, side.hosts_ns, request).status.token


def management_claim(side: Side, ca: bytes, image: dict | None) -> None:
    """tenant-a's kubeconfig and cloud-init Secrets, then its claim through host_claim, in ``side``'s cluster."""
    side.mgmt.tenant_namespace(TENANT_NS, "tenant-a")
    with side.mgmt.api("tenant-a") as api:
        core = client.CoreV1Api(api)
        for name, data in (
            (SECRET, {"kubeconfig": side.kubeconfig(ca)}),
            ("cloud-init", {"userData": "#cloud-config\n"}),
        ):
            core.create_namespaced_secret(
                TENANT_NS, client.V1Secret(metadata=client.V1ObjectMeta(name=name), string_data=data)
            )
    options = {
        "namespace": TENANT_NS,
        "name": CLAIM,
        "online": image is not None,
        "credentials": SECRET,
        "host_selector": {"matchLabels": {"pool": "relay-bmo"}},
        "user_data_secret": "cloud-init",
    }
    if image is not None:
        options["image"] = image
    side.tenant([{"name": "claim", "baremetal.tenancy.host_claim": options}])


@pytest.fixture(scope="module")
def world(bmo_dialect_rbac, metal3_bmo_env, tmp_path_factory):
    env, stack = bmo_dialect_rbac
    workdir = tmp_path_factory.mktemp("relay-bmo")
    hosts = Metal3Env(env, workdir / "host-cluster-runs", [])
    proxy = FaultProxy("127.0.0.1", int(env.server.rsplit(":", 1)[1]))
    mgmt_b = kube.KubeEnv(workdir / "management-b")
    sides = {}
    try:
        mgmt_b.start()
        with mgmt_b.api("admin") as admin:
            kube.setup_namespaces(admin)
        setup = run_playbook(setup_play(SETUP_VARS), mgmt_b.ansible_env("admin"), workdir / "management-b-setup")
        assert setup.ok, setup.explain()
        sides = {
            "a": Side("a", metal3_bmo_env, proxy.url("https")),
            "b": Side("b", Metal3Env(mgmt_b, workdir / "management-b-runs", [setup]), env.server),
        }
        with env.api("admin") as api:
            for side in sides.values():
                host_cluster_identity(api, side)
            policy = {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "HostDeployPolicy",
                "metadata": {"name": "relayed", "namespace": INFRA},
                "spec": {"hostClaimNamespaces": {"nameMatches": "^rb-hosts-[ab]$"}},
            }
            client.CustomObjectsApi(api).create_namespaced_custom_object(
                GROUP, VERSION, INFRA, "hostdeploypolicies", policy
            )
            create_hosts(api, stack, INFRA, HOSTS)
            for name in HOSTS:  # what the owner exports of a host to the claim bound to it
                client.CustomObjectsApi(api).patch_namespaced_custom_object(
                    GROUP,
                    VERSION,
                    INFRA,
                    "baremetalhosts",
                    name,
                    {"metadata": {"annotations": {EXPORTED: "rack-of-%s" % name}}},
                    _content_type=MERGE,
                )
        ca = env.ca_file.read_bytes()
        management_claim(sides["a"], ca, bmo.live_iso_image(stack.live_iso_url))
        management_claim(sides["b"], ca, None)
        yield World(hosts, stack, proxy, sides, workdir)
    finally:
        for side in sides.values():
            side.mgmt.forget_claims(TENANT_NS)
        proxy.stop()
        mgmt_b.stop()


def test_1_each_claim_is_relayed_by_its_own_identity_in_bmo_s_dialect(world):
    for side in world.sides.values():
        entry = side.bind()
        assert entry["action"] == "relayed", entry
        [remote] = world.remote_claims(side)
        assert remote["spec"]["hostSelector"] == {"matchLabels": {"pool": "relay-bmo"}}, remote
        assert remote["spec"]["poweredOn"] is (side.name == "a") and "credentials" not in remote["spec"]
        with world.hosts.api() as api:
            copied = client.CoreV1Api(api).read_namespaced_secret(remote["spec"]["userData"]["name"], side.hosts_ns)
        assert base64.b64decode(copied.data["userData"]).decode() == "#cloud-config\n"
    a, b = world.sides["a"], world.sides["b"]
    image = world.remote_claims(a)[0]["spec"]["image"]
    assert {key: image.get(key) for key in ("url", "format")} == bmo.live_iso_image(world.stack.live_iso_url), image
    assert "image" not in world.remote_claims(b)[0]["spec"]
    # neither management cluster's identity reads the other's namespace
    assert world.remote_claims(a, token=b.token) == 403 and world.remote_claims(b, token=a.token) == 403


def test_2_the_operator_provisions_the_host_and_the_binding_comes_back_to_each_cluster(world):
    bound = world.host_bind()
    assert sorted(c["action"] for c in bound["claims"]) == ["bound", "bound"], bound
    a, b = world.sides["a"], world.sides["b"]
    host_a, host_b = world.host_of(a), world.host_of(b)
    assert {host_a, host_b} == set(HOSTS)
    world.wait_host(
        host_a,
        "provisioned and powered on",
        lambda h: bmo.host_state(h) == "provisioned" and (h.get("status") or {}).get("poweredOn") is True,
    )
    world.host_bind()  # the host cluster's claims learn the provisioning
    for side, host, ready in ((a, host_a, "True"), (b, host_b, "False")):
        entry = side.bind()
        assert entry["action"] == "relayed", entry
        assert side.condition("AssociateBMH")["message"] == "bound to host %s" % host
        assert side.condition("Ready")["status"] == ready, side.claim()["status"]
        # the host's exported metadata came up to the remote claim and back to the local one
        assert side.claim()["metadata"]["annotations"].get(EXPORTED) == "rack-of-%s" % host
        run = side.tenant([{"name": "info", "baremetal.tenancy.host_claim_info": {"namespace": TENANT_NS}}])
        [record] = run.result("info")["claims"]
        assert (record["name"], record["host"]) == (CLAIM, host), record
        source = world.workdir / ("%s.claimed_hosts.yml" % side.name)
        source.write_text(yaml.safe_dump({"plugin": "baremetal.tenancy.claimed_hosts", "namespaces": [TENANT_NS]}))
        data, text = inventory(source, side.mgmt.kube.ansible_env("tenant-a"), world.workdir)
        assert list(data["_meta"]["hostvars"]) == [CLAIM], data
        assert data["_meta"]["hostvars"][CLAIM]["tenancy_host"] == host
        side.seen.append(text)
    assert a.claim()["status"]["poweredOn"] is True


def test_3_a_reboot_asked_in_the_management_cluster_reaches_the_host(world):
    a = world.sides["a"]
    with a.mgmt.api("tenant-a") as api:
        client.CustomObjectsApi(api).patch_namespaced_custom_object(
            GROUP,
            VERSION,
            TENANT_NS,
            "hostclaims",
            CLAIM,
            {"metadata": {"annotations": {"reboot.metal3.io": ""}}},
            _content_type=MERGE,
        )
    assert a.bind()["action"] == "relayed"
    assert "reboot.metal3.io" in world.remote_claims(a)[0]["metadata"]["annotations"]
    host = world.host_of(a)
    world.host_bind()
    world.wait_host(
        host,
        "rebooted",
        lambda h: (
            bmo.host_state(h) == "provisioned"
            and (h.get("status") or {}).get("poweredOn") is True
            and "reboot.metal3.io" not in (h["metadata"].get("annotations") or {})
        ),
    )


def test_4_the_host_cluster_down_then_back(world):
    a, b = world.sides["a"], world.sides["b"]
    [before] = world.remote_claims(a)
    world.proxy.set("refuse")
    try:
        a.tenant(
            [
                {
                    "name": "power off",
                    "baremetal.tenancy.host_claim": {"namespace": TENANT_NS, "name": CLAIM, "online": False},
                }
            ]
        )
        entry = a.bind()
        assert (entry["action"], entry["reason"]) == ("pending", "RemoteUnreachable"), entry
        ready = a.condition("Ready")
        assert (ready["status"], ready["reason"]) == ("False", "RemoteUnreachable") and SECRET in ready["message"]
        assert a.condition("AssociateBMH")["message"] == "bound to host %s" % world.host_of(a)  # the last known host
        [during] = world.remote_claims(a)
        assert during["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
        assert b.bind()["action"] == "relayed"  # the other management cluster reaches it meanwhile
    finally:
        world.proxy.set("pass")
    assert a.bind()["action"] == "relayed"
    assert world.remote_claims(a)[0]["spec"]["poweredOn"] is False
    host = world.host_of(a)
    world.host_bind()
    world.wait_host(host, "powered off", lambda h: (h.get("status") or {}).get("poweredOn") is False)


def test_5_host_release_in_each_cluster_ends_with_the_remote_claims_gone(world):
    a, b = world.sides["a"], world.sides["b"]
    host_a = world.host_of(a)
    for side in (a, b):
        side.tenant([{"name": "release", "baremetal.tenancy.host_release": {"namespace": TENANT_NS, "name": CLAIM}}])
        assert side.bind()["action"] == "releasing"
        [remote] = world.remote_claims(side)
        assert remote["metadata"].get("deletionTimestamp")
    world.host_bind()  # b's host goes back at once; a's is deprovisioned first
    world.wait_host(host_a, "deprovisioned", lambda h: bmo.host_state(h) == "available")
    world.host_bind()
    for side in (a, b):
        assert world.remote_claims(side) == []
        assert side.bind()["action"] == "released"
        assert side.claim() is None
    for name in HOSTS:
        assert not world.hosts.host(INFRA, name)["spec"].get("consumerRef")


def test_6_the_eda_binders_of_both_clusters_serve_a_relayed_claim_with_no_pass_run_by_hand(world):
    """The binder rulebook in each cluster. The host cluster's starts once the management cluster's has settled on
    the relayed claim (no pass left to run there): its binding then comes back only by the management cluster's
    poll of namespaces with relayed claims (``binder_relay_poll``), as no watch there sees the host cluster."""
    b = world.sides["b"]
    rulebooks = []
    try:
        management = Rulebook(
            "baremetal.tenancy.binder",
            {"binder_namespaces": [TENANT_NS], "binder_resync": 0, "binder_relay_poll": 2},
            b.mgmt.kube.ansible_env("binder"),
            world.workdir / "eda-management-b",
        )
        rulebooks.append(management)
        claim = {"namespace": TENANT_NS, "name": "app", "online": False, "credentials": SECRET}
        claim["host_selector"] = {"matchLabels": {"pool": "relay-bmo"}}
        b.tenant([{"name": "claim app", "baremetal.tenancy.host_claim": claim}])
        uid = b.mgmt.claim(TENANT_NS, "app")["metadata"]["uid"]

        def remote_app() -> dict:
            found = [c for c in world.remote_claims(b) if c["metadata"]["labels"].get(ORIGIN_UID_LABEL) == uid]
            return found[0] if found else {}

        wait_until(
            "app relayed", lambda: remote_app() and not remote_app().get("status", {}).get("bareMetalHost"), rulebooks
        )
        management.wait_for_line("settled=True")
        rulebooks.append(
            Rulebook(
                "baremetal.tenancy.binder",
                {"binder_namespaces": [b.hosts_ns], "binder_host_namespaces": [INFRA], "binder_resync": 0},
                world.hosts.kube.ansible_env("binder"),
                world.workdir / "eda-host-cluster",
            )
        )

        def app_bound():
            app = b.mgmt.claim(TENANT_NS, "app") or {}
            conditions = (app.get("status") or {}).get("conditions") or []
            return any(c["type"] == "AssociateBMH" and c["status"] == "True" for c in conditions)

        wait_until("app bound, back in the management cluster", app_bound, rulebooks)
        assert remote_app()["status"]["bareMetalHost"]["namespace"] == INFRA
        b.tenant([{"name": "release app", "baremetal.tenancy.host_release": {"namespace": TENANT_NS, "name": "app"}}])
        wait_until("app released", lambda: b.mgmt.claim(TENANT_NS, "app") is None, rulebooks)
        assert remote_app() == {}
        # the kubeconfig is in no log: neither its token nor its server in either binder's output
        for rulebook in rulebooks:
            assert b.token not in rulebook.output and b64(b.token) not in rulebook.output
        assert b.server not in management.output
    finally:
        for rulebook in rulebooks:
            rulebook.kill()


def wait_until(what: str, predicate, rulebooks, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        for rulebook in rulebooks:
            assert rulebook.proc.poll() is None, "a rulebook ended:\n" + rulebook.output[-4000:]
        assert time.monotonic() < deadline, "not %s after %d s:\n%s" % (
            what,
            timeout,
            "\n".join(r.output[-3000:] for r in rulebooks),
        )
        time.sleep(0.5)


def test_7_nothing_either_tenant_read_holds_bmc_data_the_token_or_the_host_cluster(world):
    with_events = []
    for side in world.sides.values():
        with side.mgmt.api() as api:
            events = client.CoreV1Api(api).list_namespaced_event(TENANT_NS).items
        with_events.append([side.seen, [e.to_dict() for e in events]])
    haystack = json.dumps(with_events, default=str)
    needles = [world.hosts.kube.server, world.proxy.url("https")]
    for side in world.sides.values():
        needles += [side.token, b64(side.token)]
    for name, (index, _pool) in HOSTS.items():
        bmc, spec = world.stack.bmcs[index], world.hosts.host(INFRA, name)["spec"]["bmc"]
        needles += [bmc.base_url.split("://")[1], bmc.username, bmc.password, bmc.uuid]
        needles += [spec["address"], spec["credentialsName"]]  # as the operator's host holds them
    assert all(side.seen for side in world.sides.values())
    assert [needle[:16] for needle in needles if needle in haystack] == []
    # the scan can fail: the credentials Secret itself holds the token
    assert all(side.token in side.kubeconfig(b"") for side in world.sides.values())
