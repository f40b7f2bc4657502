"""A HostClaim relayed to hosts in another cluster (issue 39), on two real API servers.

The management cluster is the session's (``metal3_env``: the collection's CRDs, no operator); the host cluster is a
second etcd + kube-apiserver started here, set up by the same ``hostclaim_setup`` role, where the collection's own
binder (``host_bind`` as the host cluster's binder identity) plays the operator's owner, and the test writes the
hosts' status as baremetal-operator would.  The tenant's identity in the host cluster is a ServiceAccount of one
namespace (``hosts-a``), bound there to the tenant HostClaim role only; its token, in a kubeconfig in a Secret of
the tenant's management namespace, is all the relay uses there.

Steps, in order (a failure at one still reports the next): the claim is mirrored with its data Secret by that
identity; the host cluster binds it and the binding, addresses and conditions come back (``host_claim_info`` and
the ``claimed_hosts`` inventory as the tenant reads them); power and a reboot go down to the host; the
ServiceAccount deleted (token revoked) gives one reason and changes nothing remote, a new token restores the relay;
an unreachable cluster gives its reason; ``host_release`` deletes the claim, the relay deletes the remote claim,
waits for its release, then lets the local claim go; the token, the host cluster's address and the host's BMC
address and credentials Secret appear in no module result, claim, inventory or event.
"""

from __future__ import annotations

import base64
import json
import time

import pytest
import requests
import yaml
from fixtures_inventory import inventory
from fixtures_metal3 import GROUP, MERGE, SETUP_VARS, VERSION, Metal3Env, setup_play
from harness import kube
from harness.ansible import run_playbook
from harness.kube import call_ignoring as _ignore
from kubernetes import client

CREDENTIALS_FINALIZER = "relay.hostclaim.metal3.io/credentials"

TENANT_NS = "relay-a"
HOSTS_NS = "hosts-a"
INFRA = "relay-infra"
HOST = "relay-h1"
SA = "mgmt-a"
CLAIM = "web"
SECRET = "hosts-kubeconfig"
#: the piece of the tenant ClusterRole with the HostClaim and Secret rights (the host cluster runs no controller
#: manager to aggregate it into the whole tenant role)
TENANT_PIECE = "baremetal-tenancy-tenant-hostclaims"
HOST_IP = "192.0.2.41"


def b64(text: str | bytes) -> str:
    raw = text.encode("utf-8") if isinstance(text, str) else text
    return base64.b64encode(raw).decode("ascii")


def tenant_kubeconfig(server: str, ca: bytes, token: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "hosts", "cluster": {"server": server, "certificate-authority-data": b64(ca)}}],
            "users": [{"name": SA, "user": {"token": token}}],
            "contexts": [{"name": "hosts", "context": {"cluster": "hosts", "user": SA, "namespace": HOSTS_NS}}],
            "current-context": "hosts",
        }
    )


class World:
    def __init__(self, mgmt: Metal3Env, hosts: Metal3Env, workdir):
        self.mgmt, self.hosts, self.workdir = mgmt, hosts, workdir
        self.tokens: list[str] = []
        self.results: list[dict] = []
        self.snapshots: list[dict] = []
        self.failed: set[str] = set()

    # -- the host cluster ------------------------------------------------------------
    def new_token(self) -> str:
        with self.hosts.api() as api:
            core = client.CoreV1Api(api)
            _ignore(
                409,
                core.create_namespaced_service_account,
                HOSTS_NS,
                client.V1ServiceAccount(metadata=client.V1ObjectMeta(name=SA)),
            )
            request = client.AuthenticationV1TokenRequest(
                spec=client.V1TokenRequestSpec(audiences=["https://kubernetes.default.svc"], expiration_seconds=3600)
            )
            token = core.create_namespaced_service_account_token(SA, HOSTS_NS, request).status.token
        self.tokens.append(token)
        return token

    def revoke(self) -> None:
        """Delete the service account, and return once the host cluster refuses its last token (twice, a second
        apart): the API server may accept a deleted account's token for a moment (its caches)."""
        with self.hosts.api() as api:
            client.CoreV1Api(api).delete_namespaced_service_account(SA, HOSTS_NS)
        refused, deadline = 0, time.monotonic() + 60
        while refused < 2:
            assert time.monotonic() < deadline, "the host cluster still accepts the revoked token"
            answer = requests.get(
                self.hosts.kube.server + "/api",
                headers={"Authorization": "Bearer " + self.tokens[-1]},
                verify=str(self.hosts.kube.ca_file),
                timeout=10,
            )
            refused = refused + 1 if answer.status_code == 401 else 0
            time.sleep(1)

    def host_bind(self) -> dict:
        result = self.hosts.bind([HOSTS_NS])
        self.results.append(result)
        return result

    def remote_claims(self) -> list[dict]:
        return self.hosts.claims(HOSTS_NS)

    # -- the management cluster ------------------------------------------------------
    def put_kubeconfig(self, text: str) -> None:
        with self.mgmt.api("tenant-a") as api:
            core = client.CoreV1Api(api)
            body = client.V1Secret(metadata=client.V1ObjectMeta(name=SECRET), data={"kubeconfig": b64(text)})
            if _ignore(404, core.read_namespaced_secret, SECRET, TENANT_NS) is None:
                core.create_namespaced_secret(TENANT_NS, body)
            else:
                core.replace_namespaced_secret(SECRET, TENANT_NS, body)

    def credentials(self) -> dict | None:
        """The credentials Secret as the cluster admin reads it (``None``: gone)."""
        with self.mgmt.api() as api:
            secret = _ignore(404, client.CoreV1Api(api).read_namespaced_secret, SECRET, TENANT_NS)
        return None if secret is None else api.sanitize_for_serialization(secret)

    def bind(self) -> dict:
        result = self.mgmt.bind([TENANT_NS])
        self.results.append(result)
        self.snapshots.append(self.claim() or {})
        return result

    def claim(self) -> dict | None:
        return self.mgmt.claim(TENANT_NS, CLAIM)

    def patch_claim(self, patch: dict) -> None:
        with self.mgmt.api("tenant-a") as api:
            client.CustomObjectsApi(api).patch_namespaced_custom_object(
                GROUP, VERSION, TENANT_NS, "hostclaims", CLAIM, patch, _content_type=MERGE
            )

    def condition(self, ctype: str) -> dict:
        return next(c for c in (self.claim() or {}).get("status", {}).get("conditions", []) if c["type"] == ctype)


@pytest.fixture(scope="module")
def world(metal3_env, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("relay")
    hosts_kube = kube.KubeEnv(workdir / "host-cluster")
    hosts_kube.start(controller_manager=False)
    try:
        with hosts_kube.api("admin") as admin:
            kube.setup_namespaces(admin)  # the role puts the binder's ServiceAccount in metal3
        run = run_playbook(setup_play(SETUP_VARS), hosts_kube.ansible_env("admin"), workdir / "host-setup")
        assert run.ok, run.explain()
        hosts = Metal3Env(hosts_kube, workdir / "host-cluster-runs", [run])
        hosts.tenant_namespace(HOSTS_NS, None)
        hosts.tenant_namespace(INFRA, None)
        with hosts.api() as api:
            binding = client.V1RoleBinding(
                metadata=client.V1ObjectMeta(name="management-cluster-a", namespace=HOSTS_NS),
                role_ref=client.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=TENANT_PIECE),
                subjects=[client.RbacV1Subject(kind="ServiceAccount", name=SA, namespace=HOSTS_NS)],
            )
            client.RbacAuthorizationV1Api(api).create_namespaced_role_binding(HOSTS_NS, binding)
            hosts.create_host(INFRA, HOST, index=41, policy={"matches": HOSTS_NS}, labels={"suite": "relay"})
            client.CustomObjectsApi(api).patch_namespaced_custom_object_status(
                GROUP,
                VERSION,
                INFRA,
                "baremetalhosts",
                HOST,
                {
                    "status": {
                        "provisioning": {"state": "available"},
                        "operationalStatus": "OK",
                        "poweredOn": False,
                        "hardware": {"nics": [{"name": "eth0", "mac": "52:54:00:aa:00:41", "ip": HOST_IP}]},
                    }
                },
                _content_type=MERGE,
            )
        world = World(metal3_env, hosts, workdir)
        metal3_env.tenant_namespace(TENANT_NS, "tenant-a")
        world.put_kubeconfig(tenant_kubeconfig(hosts_kube.server, hosts_kube.ca_file.read_bytes(), world.new_token()))
        with metal3_env.api("tenant-a") as api:
            client.CoreV1Api(api).create_namespaced_secret(
                TENANT_NS,
                client.V1Secret(
                    metadata=client.V1ObjectMeta(name="cloud-init"), string_data={"userData": "#cloud-config\n"}
                ),
            )
        # the tenant writes its claim with host_claim's credentials option, as for any claim
        run = metal3_env.playbook(
            "tenant-a",
            [
                {
                    "name": "claim",
                    "baremetal.tenancy.host_claim": {
                        "namespace": TENANT_NS,
                        "name": CLAIM,
                        "online": False,
                        "credentials": SECRET,
                        "host_selector": {"matchLabels": {"suite": "relay"}},
                        "user_data_secret": "cloud-init",
                    },
                }
            ],
        )
        assert run.ok, run.explain()
        world.results.append(run.result("claim"))
        yield world
    finally:
        metal3_env.forget_claims(TENANT_NS)
        hosts_kube.stop()


def test_1_the_claim_is_mirrored_with_its_data_by_the_tenant_identity_only(world):
    result = world.bind()
    [entry] = result["claims"]
    assert entry["action"] == "relayed", entry
    [remote] = world.remote_claims()
    assert remote["spec"]["hostSelector"] == {"matchLabels": {"suite": "relay"}} and "credentials" not in remote["spec"]
    with world.hosts.api() as api:
        secret = client.CoreV1Api(api).read_namespaced_secret(remote["spec"]["userData"]["name"], HOSTS_NS)
        assert base64.b64decode(secret.data["userData"]).decode() == "#cloud-config\n"
    # the ServiceAccount's token is all the relay had there, and its rights end at its namespace
    with world.hosts.api() as api:
        review = client.AuthorizationV1Api(api).create_subject_access_review(
            client.V1SubjectAccessReview(
                spec=client.V1SubjectAccessReviewSpec(
                    user="system:serviceaccount:%s:%s" % (HOSTS_NS, SA),
                    resource_attributes=client.V1ResourceAttributes(
                        group=GROUP, resource="hostclaims", verb="create", namespace=INFRA
                    ),
                )
            )
        )
        assert review.status.allowed is False
    claim = world.claim()
    assert claim["spec"]["credentials"] == SECRET  # written by host_claim's credentials option
    assert world.credentials()["metadata"]["finalizers"] == [CREDENTIALS_FINALIZER]  # held while the claim lives
    # credentials are fixed once the claim exists: host_claim refuses a change before writing, and so does the CRD
    run = world.mgmt.playbook(
        "tenant-a",
        [
            {
                "name": "point elsewhere",
                "baremetal.tenancy.host_claim": {"namespace": TENANT_NS, "name": CLAIM, "credentials": "other"},
                "ignore_errors": True,
            }
        ],
    )
    refused = run.result("point elsewhere")
    assert refused.get("failed") and refused["msg"].startswith("HostClaim %s/%s: " % (TENANT_NS, CLAIM))
    assert "spec.credentials is 'hosts-kubeconfig' and cannot become 'other'" in refused["msg"]
    for patch in ({"spec": {"credentials": "other"}}, {"spec": {"credentials": None}}):
        with pytest.raises(client.exceptions.ApiException) as err:
            world.patch_claim(patch)
        assert err.value.status == 422 and "cannot be added, changed or removed" in err.value.body
    assert world.claim()["spec"]["credentials"] == SECRET
    assert "hostclaim.metal3.io/release" in claim["metadata"]["finalizers"]
    assert world.condition("AssociateBMH")["status"] == "False"


def test_2_the_host_cluster_binds_it_and_the_binding_comes_back(world):
    bound = world.host_bind()
    assert [c["action"] for c in bound["claims"]] == ["bound"], bound
    result = world.bind()
    assert (result["claims"][0]["host"], result["claims"][0]["host_namespace"]) == (HOST, HOSTS_NS)
    assert world.condition("AssociateBMH")["message"] == "bound to host %s" % HOST
    run = world.mgmt.playbook(
        "tenant-a",
        [{"name": "info", "baremetal.tenancy.host_claim_info": {"namespace": TENANT_NS, "name": CLAIM}}],
    )
    info = run.result("info")
    world.results.append(info)
    [record] = info["claims"]
    assert record["host"] == HOST and {"type": "InternalIP", "address": HOST_IP} in record["addresses"]
    # the tenant's inventory lists the relayed claim as any other, at the address the host cluster gave
    source = world.workdir / "relay.claimed_hosts.yml"
    source.write_text(yaml.safe_dump({"plugin": "baremetal.tenancy.claimed_hosts", "namespaces": [TENANT_NS]}))
    data, text = inventory(source, world.mgmt.kube.ansible_env("tenant-a"), world.workdir)  # unsafe markers checked
    hostvars = data["_meta"]["hostvars"]
    assert list(hostvars) == [CLAIM] and hostvars[CLAIM]["ansible_host"] == HOST_IP, hostvars
    world.results.append(text)


def test_3_power_and_a_reboot_go_down_to_the_host(world):
    world.patch_claim({"spec": {"online": True}, "metadata": {"annotations": {"reboot.metal3.io": ""}}})
    world.bind()
    [remote] = world.remote_claims()
    assert remote["spec"]["online"] is True and remote["metadata"]["annotations"]["reboot.metal3.io"] == ""
    world.host_bind()
    host = world.hosts.host(INFRA, HOST)
    assert host["spec"]["online"] is True and "reboot.metal3.io" in host["metadata"]["annotations"]


def test_4_a_revoked_token_gives_one_reason_and_changes_nothing_remote(world):
    world.revoke()
    [before] = world.remote_claims()
    world.patch_claim({"spec": {"online": False}})
    result = world.bind()
    assert result["claims"][0]["reason"] == "RemoteUnauthorized", result["claims"]
    ready = world.condition("Ready")
    assert (ready["status"], ready["reason"]) == ("False", "RemoteUnauthorized") and SECRET in ready["message"]
    assert world.condition("AssociateBMH")["message"] == "bound to host %s" % HOST  # the last known host stays
    [after] = world.remote_claims()
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    # a new token in the Secret: the relay works again and the change follows
    world.put_kubeconfig(
        tenant_kubeconfig(world.hosts.kube.server, world.hosts.kube.ca_file.read_bytes(), world.new_token())
    )
    result = world.bind()
    assert result["claims"][0]["action"] == "relayed", result["claims"]
    assert world.remote_claims()[0]["spec"]["online"] is False


def test_5_an_unreachable_host_cluster_gives_its_reason(world):
    good = world.tokens[-1]
    world.put_kubeconfig(tenant_kubeconfig("https://127.0.0.1:9", world.hosts.kube.ca_file.read_bytes(), good))
    result = world.bind()
    assert result["claims"][0]["reason"] == "RemoteUnreachable", result["claims"]
    world.put_kubeconfig(tenant_kubeconfig(world.hosts.kube.server, world.hosts.kube.ca_file.read_bytes(), good))
    assert world.bind()["claims"][0]["action"] == "relayed"


def test_6_host_release_deletes_the_claim_and_it_waits_for_the_host_cluster_to_release_it(world):
    # the tenant deletes its credentials Secret first: it stays (deleting) until the relay has no more use for it
    with world.mgmt.api("tenant-a") as api:
        client.CoreV1Api(api).delete_namespaced_secret(SECRET, TENANT_NS)
    assert world.credentials()["metadata"]["deletionTimestamp"]
    run = world.mgmt.playbook(
        "tenant-a", [{"name": "release", "baremetal.tenancy.host_release": {"namespace": TENANT_NS, "name": CLAIM}}]
    )
    released = run.result("release")
    world.results.append(released)
    assert released["released"] and released["host"] == HOST, released
    result = world.bind()
    assert result["claims"][0]["action"] == "releasing", result["claims"]
    [remote] = world.remote_claims()
    assert remote["metadata"].get("deletionTimestamp") and world.claim() is not None
    released = world.host_bind()
    assert [c["action"] for c in released["claims"]] == ["released"], released
    assert not world.hosts.host(INFRA, HOST)["spec"].get("consumerRef")
    assert world.remote_claims() == []
    result = world.bind()
    assert result["claims"][0]["action"] == "released", result["claims"]
    assert world.claim() is None and world.credentials() is None  # the Secret's deletion ended with the release
    with world.hosts.api() as api:
        left = client.CoreV1Api(api).list_namespaced_secret(HOSTS_NS).items
    assert [s.metadata.name for s in left if s.metadata.name.startswith(CLAIM + "-")] == []


def test_7_the_kubeconfig_and_the_bmc_appear_in_no_result_claim_inventory_or_event(world):
    with world.mgmt.api() as api:
        events = client.CoreV1Api(api).list_namespaced_event(TENANT_NS).items
    haystack = json.dumps([world.results, world.snapshots, [e.to_dict() for e in events]], default=str)
    needles = list(world.tokens) + [b64(token) for token in world.tokens] + [world.hosts.kube.server]
    bmc = world.hosts.host(INFRA, HOST)["spec"]["bmc"]  # nor the host's BMC address or credentials Secret
    needles += [bmc["address"], bmc["credentialsName"]]
    assert world.tokens and len(world.results) >= 8
    found = [needle[:12] for needle in needles if needle in haystack]
    assert found == []
    # the scan can fail: the Secret itself holds the token
    assert any(token in tenant_kubeconfig("https://x", b"", token) for token in world.tokens)
