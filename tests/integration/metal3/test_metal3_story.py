"""The HostClaim proposal's user story, end to end, on the real kube-apiserver.

Tenant steps run ``ansible-playbook`` with tenant-a's kubeconfig (bound only to
the aggregated tenant ClusterRole in its namespace); binder steps run
``host_bind`` with the binder identity (bound only to the binder ClusterRole).
Metal3's real baremetal-operator moves the hosts (``metal3_bmo_env``): Ironic
deploys a live ISO over Redfish virtual media on sushy-tools BMCs, powers,
reboots and deprovisions; the test only waits for the operator's states.

claim (online: false) -> bound, status and labels filled from the host ->
Secrets, image, online: true -> image, power and Secret copies on the host ->
ready -> reboot annotation reaches the host -> release: deprovisioned,
consumerRef cleared, copies removed, node-reuse label set -> a new claim with
the same nodeReuse gets the same host -> release with wait through the
``metal3_release_hosts`` playbook while ``metal3_bind_claims.yml`` runs.
"""

from __future__ import annotations

import base64
import subprocess
import time

import pytest
from harness.ansible import REPO_ROOT, VENV_BIN, ansible_env, run_playbook
from kubernetes import client

pytestmark = pytest.mark.real_bmo

INFRA = "story-infra"
NS = "story-a"
SELECTOR = {"matchLabels": {"infra-kind": "medium", "suite": "story"}}
IMAGE = {}  # the stack's live ISO (filled in by the ``story`` fixture): Ironic's ramdisk deploy, no agent
REUSE_LABEL = "infrastructure.cluster.x-k8s.io/node-reuse"
BINDING_LABEL = "hostclaim.metal3.io/host"


@pytest.fixture(scope="module")
def story(metal3_bmo_env):
    env = metal3_bmo_env
    IMAGE.update(url=env.operator.live_iso_url, format="live-iso")
    env.tenant_namespace(INFRA, None)
    env.tenant_namespace(NS, "tenant-a")
    annotations = {
        "export.hostclaim.metal3.io/rack-position": "u12",
        "export.hostclaim.metal3.io/mgmt": env.bmc_address("story-h1"),
        "internal.example.com/note": "not exported",
    }
    names = ("story-h1", "story-h2")
    for index, name in enumerate(names, start=1):
        env.create_host(
            INFRA,
            name,
            index=index,
            hostname="node-%d" % index,
            annotations=annotations,
            labels={"infra-kind": "medium", "suite": "story", "example.com/rack": "r1"},
            policy={"matches": "story-.*"},
            wait=False,
        )
    env.wait_hosts(INFRA, names, state="available", hardware=True, timeout=300)
    yield env
    env.forget_claims(NS)
    env.delete_hosts(INFRA)


def run_ok(env, steps, **kwargs):
    run = env.steps(steps, **kwargs)
    assert run.ok, run.explain()
    return run


def claim_step(task, name="web", **args):
    return {"name": task, "as": "tenant-a", "baremetal.tenancy.host_claim": dict(name=name, namespace=NS, **args)}


def bind_step(task):
    return {"name": task, "as": "binder", "baremetal.tenancy.host_bind": {"namespaces": [NS]}}


def conditions(claim):
    return dict((c["type"], c) for c in claim["status"]["conditions"])


def test_user_story(story):
    env = story
    # 1. the tenant claims a medium host, powered off, to be kept for reuse as "web"; the binder binds it
    run = run_ok(
        env,
        [
            claim_step("claim", host_selector=SELECTOR, online=False, node_reuse="web"),
            claim_step("claim again", host_selector=SELECTOR, online=False, node_reuse="web"),
            bind_step("bind"),
            bind_step("bind again"),
            {"name": "info", "as": "tenant-a", "baremetal.tenancy.host_claim_info": {"namespace": NS}},
        ],
    )
    assert run.result("claim")["changed"] is True
    assert run.result("claim again")["changed"] is False
    assert run.result("bind again")["changed"] is False
    result = run.result("bind")
    assert result["changed"] is True
    (action,) = result["claims"]
    assert action["action"] == "bound" and action["writes"] == 3
    host_name = action["host"]
    host = env.host(INFRA, host_name)
    claim = env.claim(NS, "web")
    assert claim["spec"] == {"online": False, "kind": "baremetal", "hostSelector": SELECTOR, "nodeReuse": "web"}
    assert host["spec"]["consumerRef"] == {
        "apiVersion": "metal3.io/v1alpha1",
        "kind": "HostClaim",
        "namespace": NS,
        "name": "web",
        "uid": claim["metadata"]["uid"],
    }
    assert claim["metadata"]["labels"][BINDING_LABEL] == host_name
    assert claim["metadata"]["finalizers"] == ["hostclaim.metal3.io/release"]
    # status and metadata come up from the host
    status = claim["status"]
    index = 1 if host_name == "story-h1" else 2
    assert {"type": "InternalIP", "address": "192.0.2.%d" % (index + 1)} in status["addresses"]
    assert {"type": "Hostname", "address": "node-%d" % index} in status["addresses"]
    assert status["bootMACAddress"] == host["spec"]["bootMACAddress"]
    assert [n["name"] for n in status["nics"]] == ["eno1", "eno2"]
    assert conditions(claim)["AssociateBMH"]["status"] == "True"
    assert conditions(claim)["Ready"]["reason"] == "NotProvisioned"
    labels = claim["metadata"]["labels"]
    assert labels["infra-kind"] == "medium" and labels["example.com/rack"] == "r1"
    annotations = claim["metadata"]["annotations"]
    assert annotations["export.hostclaim.metal3.io/rack-position"] == "u12"
    assert "export.hostclaim.metal3.io/mgmt" not in annotations  # carries the BMC address
    assert "internal.example.com/note" not in annotations  # not an exported domain
    assert annotations["hostclaim.metal3.io/imported-labels"] == '["example.com/rack","infra-kind","suite"]'
    # the tenant sees it
    (view,) = run.result("info")["claims"]
    assert view["host"] == host_name and view["associated"] is True and view["ready"] is False
    assert view["provisioning_state"] == "available" and view["online"] is False
    assert view["labels"]["infra-kind"] == "medium"

    # 2. the tenant adds its Secrets, an image and online: true; the binder passes them down
    secrets = [
        {
            "name": "secret %s" % name,
            "as": "tenant-a",
            "kubernetes.core.k8s": {
                "definition": {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": name, "namespace": NS},
                    "stringData": {"value": value},
                }
            },
        }
        for name, value in (("web-user-data", "#cloud-config\nhostname: web\n"), ("web-network-data", '{"links": []}'))
    ]
    claim_args = dict(
        image=IMAGE, user_data_secret="web-user-data", network_data_secret="web-network-data", online=True
    )
    check = dict(claim_step("claim in check mode", **claim_args), check_mode=True)
    run = run_ok(env, [*secrets, claim_step("claim", **claim_args), check, bind_step("bind"), bind_step("bind again")])
    assert run.result("claim")["changed"] is True
    assert run.result("claim in check mode")["changed"] is False
    assert run.result("bind")["claims"][0]["action"] == "updated"
    # the operator starts provisioning at once: a second pass may only bring its new state up to the claim
    again = run.result("bind again")["claims"][0]
    assert again["action"] in ("unchanged", "updated"), again
    # host_claim writes the proposal's form of the Secret references
    spec = env.claim(NS, "web")["spec"]
    assert spec["userData"] == {"name": "web-user-data"} and spec["networkData"] == {"name": "web-network-data"}
    host = env.host(INFRA, host_name)
    uid = claim["metadata"]["uid"]
    assert host["spec"]["online"] is True
    assert host["spec"]["image"] == {"url": IMAGE["url"], "format": "live-iso", "checksumType": "auto"}
    assert host["spec"]["userData"] == {"name": "hostclaim-%s-userdata" % uid, "namespace": INFRA}
    assert host["spec"]["networkData"] == {"name": "hostclaim-%s-networkdata" % uid, "namespace": INFRA}
    with env.api() as api:
        core = client.CoreV1Api(api)
        copy = core.read_namespaced_secret("hostclaim-%s-userdata" % uid, INFRA)
        assert base64.b64decode(copy.data["value"]).decode() == "#cloud-config\nhostname: web\n"
        assert copy.metadata.labels["hostclaim.metal3.io/claim-uid"] == uid
        assert copy.metadata.owner_references[0].name == host_name
        assert core.read_namespaced_secret("hostclaim-%s-networkdata" % uid, INFRA).data

        # 3. the operator provisions the host; the claim becomes ready (a wait for it returns at once);
        #    a reboot annotation on the claim reaches the host as reboot.metal3.io, and the operator
        #    power cycles the host (and removes it)
        env.wait_host(INFRA, host_name, state="provisioned", powered=True, timeout=300)
        power_offs = env.power_offs(INFRA, host_name)
        run = run_ok(
            env,
            [
                bind_step("bind"),
                claim_step("wait ready", wait=True, wait_for="ready", wait_timeout=30, **claim_args),
                claim_step("reboot", annotations={"host.metal3.io/reboot": ""}),
                bind_step("pass reboot down"),
            ],
        )
        ready = run.result("wait ready")
        assert ready["changed"] is False
        view = ready["claim"]
        assert view["ready"] is True and view["powered_on"] is True and view["provisioning_state"] == "provisioned"
        assert view["host"] == host_name and view["boot_mac_address"] == host["spec"]["bootMACAddress"]
        assert run.result("reboot")["changed"] is True
        assert run.result("pass reboot down")["changed"] is True
        assert "host.metal3.io/reboot" not in env.claim(NS, "web")["metadata"]["annotations"]
        env.wait_host(INFRA, host_name, without_annotation="reboot.metal3.io", powered=True, timeout=180)
        assert env.power_offs(INFRA, host_name) == power_offs + 1  # one power cycle

        # 4. deleting the claim deprovisions the host, then releases it with the node-reuse label
        run = run_ok(
            env,
            [
                bind_step("nothing to do"),
                {
                    "name": "release",
                    "as": "tenant-a",
                    "baremetal.tenancy.host_release": {"name": "web", "namespace": NS},
                },
                bind_step("deprovision"),
            ],
        )
        assert run.result("nothing to do")["changed"] is False
        assert run.result("release")["host"] == host_name
        assert run.result("deprovision")["claims"][0]["action"] == "releasing"
        host = env.host(INFRA, host_name)
        assert "image" not in host["spec"] and host["spec"]["online"] is False and "userData" not in host["spec"]
        assert host["spec"]["consumerRef"]["name"] == "web"  # still bound while it is cleaned
        assert env.claim(NS, "web")["metadata"]["deletionTimestamp"]
        host = env.wait_host(INFRA, host_name, state="available", powered=False, timeout=300)
        assert not (host["status"]["provisioning"].get("image") or {}).get("url")  # BMO keeps {"url": ""}

        # 5. the binder finishes the release; a new claim with the same nodeReuse gets the same host
        run = run_ok(
            env,
            [
                bind_step("finish release"),
                claim_step("claim again for reuse", name="web-2", host_selector=SELECTOR, node_reuse="web"),
                {
                    "name": "host labelled for reuse",
                    "as": "admin",
                    "kubernetes.core.k8s_info": {
                        "api_version": "metal3.io/v1alpha1",
                        "kind": "BareMetalHost",
                        "namespace": INFRA,
                        "name": host_name,
                    },
                },
                bind_step("bind for reuse"),
            ],
        )
        assert run.result("finish release")["claims"][0]["action"] == "released"
        labelled = run.result("host labelled for reuse")["resources"][0]
        assert "consumerRef" not in labelled["spec"]
        assert labelled["metadata"]["labels"][REUSE_LABEL] == "%s.web" % NS
        names = [s.metadata.name for s in client.CoreV1Api(api).list_namespaced_secret(INFRA).items]
        assert not [n for n in names if n.startswith("hostclaim-")]
    assert env.claim(NS, "web") is None
    (action,) = run.result("bind for reuse")["claims"]
    assert action["name"] == "web-2" and action["host"] == host_name
    host = env.host(INFRA, host_name)
    assert host["spec"]["consumerRef"]["name"] == "web-2"
    assert REUSE_LABEL not in host["metadata"]["labels"]  # spent


def test_claim_and_release_playbooks_wait_while_the_reconcile_playbook_runs(story, tmp_path):
    """metal3_claim_hosts.yml (wait for ready) and metal3_release_hosts.yml (wait for the pool) return once
    metal3_bind_claims.yml (binder, in the background) and the baremetal-operator have done their part."""
    env = story
    argv = [
        str(VENV_BIN / "ansible-playbook"),
        "-i",
        "localhost,",
        str(REPO_ROOT / "playbooks" / "metal3_bind_claims.yml"),
        "-e",
        '{"reconcile_namespaces": ["%s"], "reconcile_until_quiet": false, "reconcile_passes": 600, '
        '"reconcile_interval": 1}' % NS,
    ]
    background = subprocess.Popen(
        argv,
        env=ansible_env(env.kube.ansible_env("binder"), tmp_path),
        cwd=str(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        claimed = run_playbook(
            REPO_ROOT / "playbooks" / "metal3_claim_hosts.yml",
            env.kube.ansible_env("tenant-a"),
            tmp_path / "claim",
            extra_vars={
                "claim_namespace": NS,
                "claim_wait": True,
                "claim_wait_for": "ready",
                "claim_wait_timeout": 300,
                "claim_hosts": [{"name": "db", "host_selector": SELECTOR, "image": IMAGE, "online": True}],
            },
        )
        assert claimed.ok, claimed.explain()
        (result,) = claimed.result("Create or update the claims")["results"]
        view = result["claim"]
        assert view["ready"] is True and view["provisioning_state"] == "provisioned" and view["powered_on"] is True
        host_name = view["host"]
        assert env.host(INFRA, host_name)["spec"]["consumerRef"]["name"] == "db"
        started = time.monotonic()
        release = run_playbook(
            REPO_ROOT / "playbooks" / "metal3_release_hosts.yml",
            env.kube.ansible_env("tenant-a"),
            tmp_path / "release",
            extra_vars={"claim_namespace": NS, "release_claims": ["db"], "release_wait_timeout": 300},
        )
        elapsed = time.monotonic() - started
        assert release.ok, release.explain()
        assert release.result("Release the claims")["results"][0]["host"] == host_name
        assert env.claim(NS, "db") is None
        host = env.host(INFRA, host_name)
        assert "consumerRef" not in host["spec"] and "image" not in host["spec"]
        assert host["status"]["provisioning"]["state"] == "available"
        assert elapsed < 300
    finally:
        background.terminate()
        background.wait(timeout=30)


# The two example claims of the Metal3 HostClaim proposal (metal3-docs, design/hostclaim-multitenancy.md, "User
# Stories"), in the proposal's shape: Secret references as ``{name: ...}``, ``kind: baremetal`` and
# ``kind: baremetalhost``.  The second example's ``hostSelector: ...`` is a placeholder in the proposal: it gets the
# first example's selector here; its ``credentials`` (hosts defined in another cluster) is kept on a third claim,
# which the CRD must accept and the binder leaves pending as unsupported.
PROPOSAL_NS, PROPOSAL_INFRA = "proposal-user1", "proposal-infra"
PROPOSAL_CLAIMS = """\
apiVersion: metal3.io/v1alpha1
kind: HostClaim
metadata:
  name: my-host
spec:
  online: true
  image:
    checksum: https://url_image.qcow2.md5
    url: https://url_image.qcow2
    format: qcow2
  userData:
    name: my-user-data
  networkData:
    name: my-network-data
  kind: baremetal
  hostSelector:
    matchLabels:
      infra-kind: medium
---
apiVersion: metal3.io/v1alpha1
kind: HostClaim
metadata:
  name: host-claim-yyyy
spec:
  kind: baremetalhost
  userData:
    name: user-data-yyyy
  hostSelector:
    matchLabels:
      infra-kind: medium
  image:
    checksum: https://image_url.qcow2.md5
    format: qcow2
    url: https://image_url.qcow2.md5
  online: true
---
apiVersion: metal3.io/v1alpha1
kind: HostClaim
metadata:
  name: host-claim-remote
spec:
  kind: baremetalhost
  credentials: bmh-cluster-credentials
  userData:
    name: user-data-yyyy
  hostSelector:
    matchLabels:
      infra-kind: medium
  online: true
"""
# Not the proposal's: a reference into another namespace (the BareMetalHost's own userData shape). The schema
# cannot type the references, so the apiserver accepts it; the binder must not follow it.
FOREIGN_REFERENCE = """\
apiVersion: metal3.io/v1alpha1
kind: HostClaim
metadata:
  name: foreign-ref
spec:
  userData:
    name: my-user-data
    namespace: proposal-infra
  hostSelector:
    matchLabels:
      infra-kind: medium
"""


@pytest.fixture(scope="module")
def proposal(metal3_bmo_env):
    env = metal3_bmo_env
    env.tenant_namespace(PROPOSAL_INFRA, None)
    env.tenant_namespace(PROPOSAL_NS, "tenant-a")
    names = ("proposal-h1", "proposal-h2")
    for index, name in enumerate(names, start=21):
        env.create_host(
            PROPOSAL_INFRA,
            name,
            index=index,
            labels={"infra-kind": "medium"},
            policy={"matches": PROPOSAL_NS},
            wait=False,
        )
    env.wait_hosts(PROPOSAL_INFRA, names, state="available", timeout=300)
    yield env
    env.forget_claims(PROPOSAL_NS)
    env.delete_hosts(PROPOSAL_INFRA)


def test_the_proposals_example_claims_apply_and_bind(proposal, tmp_path):
    env = proposal
    manifest = tmp_path / "proposal-claims.yml"
    manifest.write_text(PROPOSAL_CLAIMS + "---\n" + FOREIGN_REFERENCE)
    secrets = [
        {
            "name": "secret %s" % name,
            "kubernetes.core.k8s": {
                "namespace": PROPOSAL_NS,
                "definition": {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": name},
                    "stringData": {"value": "#cloud-config\n" if "user" in name else "{}"},
                },
            },
        }
        for name in ("my-user-data", "my-network-data", "user-data-yyyy")
    ]
    # as the tenant, the way it would run kubectl apply -f
    run = env.playbook(
        "tenant-a",
        [
            *secrets,
            {
                "name": "apply the proposal's claims",
                "kubernetes.core.k8s": {"namespace": PROPOSAL_NS, "src": str(manifest), "apply": True},
            },
        ],
    )
    assert run.ok, run.explain()
    run = env.steps(
        [
            {"name": "bind", "as": "binder", "baremetal.tenancy.host_bind": {"namespaces": [PROPOSAL_NS]}},
            {"name": "bind again", "as": "binder", "baremetal.tenancy.host_bind": {"namespaces": [PROPOSAL_NS]}},
            {"name": "info", "as": "tenant-a", "baremetal.tenancy.host_claim_info": {"namespace": PROPOSAL_NS}},
        ]
    )
    assert run.ok, run.explain()
    actions = dict((c["name"], c) for c in run.result("bind")["claims"])
    assert actions["my-host"]["action"] == "bound" and actions["host-claim-yyyy"]["action"] == "bound", actions
    assert {actions["my-host"]["host"], actions["host-claim-yyyy"]["host"]} == {"proposal-h1", "proposal-h2"}
    # the proposal's remote claim is relayed to the cluster its credentials name: without that Secret, one reason
    remote = actions["host-claim-remote"]
    assert remote["action"] == "pending" and remote["reason"] == "CredentialsNotFound", remote
    assert "bmh-cluster-credentials" in remote["message"] and remote["host"] is None, remote
    foreign = actions["foreign-ref"]
    assert foreign["action"] == "pending" and foreign["reason"] == "InvalidSpec" and foreign["host"] is None
    assert 'HostClaim %s/foreign-ref: spec.userData: only "name" is allowed' % PROPOSAL_NS in foreign["message"]
    # the operator starts deploying the two bound claims' images at once: a second pass only brings that up
    assert set(c["action"] for c in run.result("bind again")["claims"]) <= {"unchanged", "updated", "pending"}
    views = dict((v["name"], v) for v in run.result("info")["claims"])
    for name in ("my-host", "host-claim-yyyy"):
        assert views[name]["host"] == actions[name]["host"] and views[name]["associated"] is True
        claim = env.claim(PROPOSAL_NS, name)
        host = env.host(PROPOSAL_INFRA, actions[name]["host"])
        uid = claim["metadata"]["uid"]
        # the tenant's {name: ...} references reach the host as the binder's copies
        assert host["spec"]["userData"] == {"name": "hostclaim-%s-userdata" % uid, "namespace": PROPOSAL_INFRA}
        assert host["spec"]["online"] is True and host["spec"]["image"]["format"] == "qcow2"
    assert env.claim(PROPOSAL_NS, "my-host")["spec"]["userData"] == {"name": "my-user-data"}
    my_host = env.host(PROPOSAL_INFRA, actions["my-host"]["host"])
    assert my_host["spec"]["networkData"]["namespace"] == PROPOSAL_INFRA
    assert views["host-claim-remote"]["host"] is None
