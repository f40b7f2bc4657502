"""What a tenant passes down to its host, proved on the real kube-apiserver through ``ansible-playbook``.

- the ``metaData`` Secret: the binder copies it into the host's namespace (always as an ``Opaque`` Secret,
  whatever type the tenant gave its own), points the host at the copy, and deletes the copy when the claim
  is released;
- the refresh-inspection annotation: ``host.metal3.io/inspect`` on the claim becomes ``inspect.metal3.io``
  on the host (once: the binder removes it from the claim) only when the baremetal-operator would honour it
  (an ``available`` host whose inspection is not disabled), and only its empty value crosses; on this
  provisioned host with inspection disabled the request waits on the claim, and the host is left alone
  (the real operator would cycle a disabled host through ``inspecting`` for as long as the annotation
  stays, and inspects a provisioned host only when it is back in the pool);
- the power-off hold: ``host.metal3.io/reboot.<suffix>`` on the claim becomes
  ``reboot.metal3.io/hostclaim-<suffix>`` on the host for as long as the claim carries it; the real
  operator keeps the host powered off meanwhile, and powers it on again once the tenant removes it.

Tenant steps run with tenant-a's kubeconfig, binder steps with the binder identity; Metal3's real
baremetal-operator moves the host (``metal3_bmo_env``), the test waits for its states.
"""

from __future__ import annotations

import base64

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

pytestmark = pytest.mark.real_bmo

INFRA, NS, HOST = "hann-infra", "hann-a", "hann-h1"
SELECTOR = {"matchLabels": {"suite": "hann"}}
META = '{"instance-id": "node-1", "local-hostname": "node-1"}'
HOLD_KEY = "reboot.metal3.io/hostclaim-maint"


@pytest.fixture(scope="module")
def hann(metal3_bmo_env):
    env = metal3_bmo_env
    env.tenant_namespace(INFRA, None)
    env.tenant_namespace(NS, "tenant-a")
    env.create_host(INFRA, HOST, index=41, labels={"suite": "hann"}, policy={"matches": NS})
    yield env
    env.forget_claims(NS)
    env.delete_hosts(INFRA)


def tenant(task, **args):
    return {"name": task, "as": "tenant-a", "baremetal.tenancy.host_claim": dict(name="node", namespace=NS, **args)}


def bind(task):
    return {"name": task, "as": "binder", "baremetal.tenancy.host_bind": {"namespaces": [NS]}}


def run_ok(env, steps):
    run = env.steps(steps)
    assert run.ok, run.explain()
    return run


def annotations_of(obj):
    return obj["metadata"].get("annotations") or {}


def test_meta_data_inspection_and_power_hold(hann):
    env = hann
    # the tenant chose a Secret type for its meta-data: the binder's copy in the owner's namespace ignores it
    secrets = [
        {
            "name": "secret %s" % name,
            "as": "tenant-a",
            "kubernetes.core.k8s": {
                "definition": {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": name, "namespace": NS},
                    "type": kind,
                    "stringData": {"value": value},
                }
            },
        }
        for name, value, kind in (
            ("node-user-data", "#cloud-config\n", "Opaque"),
            ("node-meta", META, "example.com/tenant-chosen"),
        )
    ]
    run = run_ok(
        env,
        [
            *secrets,
            tenant(
                "claim",
                host_selector=SELECTOR,
                image={"url": env.operator.live_iso_url, "format": "live-iso"},
                online=True,
                user_data_secret="node-user-data",
                meta_data_secret="node-meta",
            ),
            bind("bind"),
        ],
    )
    assert run.result("bind")["claims"][0]["host"] == HOST
    claim = env.claim(NS, "node")
    uid = claim["metadata"]["uid"]
    assert claim["spec"]["metaData"] == {"name": "node-meta"}
    copy_name = "hostclaim-%s-metadata" % uid
    host = env.host(INFRA, HOST)
    # 1. meta-data: the host points at the binder's copy in its own namespace, never into the tenant's
    assert host["spec"]["metaData"] == {"name": copy_name, "namespace": INFRA}
    with env.api() as api:
        core = client.CoreV1Api(api)
        copy = core.read_namespaced_secret(copy_name, INFRA)
        assert base64.b64decode(copy.data["value"]).decode() == META
        assert copy.metadata.labels["hostclaim.metal3.io/field"] == "metadata"
        assert copy.type == "Opaque"  # never the tenant's type
        assert copy.metadata.annotations["hostclaim.metal3.io/source"] == "%s/node-meta" % NS
        env.wait_host(INFRA, HOST, state="provisioned", powered=True, timeout=300)

        # 2. refresh inspection: only the empty value crosses, and only to a host the operator would inspect
        run = run_ok(
            env,
            [
                tenant("ask a disabled inspection", annotations={"host.metal3.io/inspect": "disabled"}),
                bind("ignore it"),
            ],
        )
        assert "inspect.metal3.io" not in annotations_of(env.host(INFRA, HOST))
        assert annotations_of(env.claim(NS, "node"))["host.metal3.io/inspect"] == "disabled"
        run = run_ok(
            env,
            [
                tenant("ask an inspection", annotations={"host.metal3.io/inspect": ""}),
                bind("keep it on the claim"),
                bind("nothing more"),
                tenant("withdraw it", annotations={"host.metal3.io/inspect": None}),
            ],
        )
        assert run.result("ask an inspection")["changed"] is True
        assert run.result("nothing more")["changed"] is False
        host = env.host(INFRA, HOST)
        assert "inspect.metal3.io" not in annotations_of(host)  # provisioned, inspection disabled: not passed
        assert host["status"]["provisioning"]["state"] == "provisioned" and host["status"]["poweredOn"] is True
        assert run.result("withdraw it")["changed"] is True

        # 3. power-off hold: held while the claim carries it, released when the tenant removes it
        power_offs = env.power_offs(INFRA, HOST)
        run = run_ok(env, [tenant("hold", annotations={"host.metal3.io/reboot.maint": ""}), bind("pass the hold")])
        host = env.host(INFRA, HOST)
        assert annotations_of(host)[HOLD_KEY] == ""
        assert annotations_of(host)["hostclaim.metal3.io/passed-annotations"] == '["%s"]' % HOLD_KEY
        env.wait_host(INFRA, HOST, powered=False, timeout=180)
        assert env.power_offs(INFRA, HOST) == power_offs + 1
        run = run_ok(
            env,
            [
                bind("status up"),
                bind("hold stays"),
                {
                    "name": "info",
                    "as": "tenant-a",
                    "baremetal.tenancy.host_claim_info": {"namespace": NS, "name": "node"},
                },
            ],
        )
        assert run.result("hold stays")["changed"] is False
        assert HOLD_KEY in annotations_of(env.host(INFRA, HOST))  # not one-shot
        assert run.result("info")["claims"][0]["powered_on"] is False
        assert annotations_of(env.claim(NS, "node"))["host.metal3.io/reboot.maint"] == ""
        run_ok(env, [tenant("end the hold", annotations={"host.metal3.io/reboot.maint": None}), bind("lift it")])
        host = env.host(INFRA, HOST)
        assert HOLD_KEY not in annotations_of(host)
        assert "hostclaim.metal3.io/passed-annotations" not in annotations_of(host)
        env.wait_host(INFRA, HOST, powered=True, state="provisioned", timeout=180)

        # 4. release: deprovisioned, then the meta-data copy is deleted with the binding
        run_ok(
            env,
            [
                {
                    "name": "release",
                    "as": "tenant-a",
                    "baremetal.tenancy.host_release": {"name": "node", "namespace": NS},
                },
                bind("deprovision"),
            ],
        )
        host = env.host(INFRA, HOST)
        assert "metaData" not in host["spec"] and "userData" not in host["spec"]
        core.read_namespaced_secret(copy_name, INFRA)  # kept while the host is cleaned
        env.wait_host(INFRA, HOST, state="available", powered=False, timeout=300)
        run = run_ok(env, [bind("finish")])
        assert run.result("finish")["claims"][0]["action"] == "released"
        with pytest.raises(ApiException) as gone:
            core.read_namespaced_secret(copy_name, INFRA)
        assert gone.value.status == 404
        assert not [s for s in core.list_namespaced_secret(INFRA).items if s.metadata.name.startswith("hostclaim-")]
    assert env.claim(NS, "node") is None
    assert "consumerRef" not in env.host(INFRA, HOST)["spec"]
