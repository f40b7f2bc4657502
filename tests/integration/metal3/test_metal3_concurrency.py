"""Four binders at once over 40 claims from 3 tenants and 30 hosts, five times.

Each binder is its own ``ansible-playbook`` process running the
``metal3_bind_claims.yml`` playbook (host_bind passes until one changes nothing), with
its own binder id, all started together. Afterwards:

- every host is bound at most once, to a claim that exists, and no claim is
  bound to two hosts;
- exactly 30 claims are bound (label and AssociateBMH agree with consumerRef);
- the other 10 are pending with ``AssociateBMH`` False, reason
  ``NoAvailableHost``, saying the matching hosts are consumed.

The 30 hosts are real BareMetalHosts of Metal3's baremetal-operator
(``metal3_bmo_env``), registered at once and ``available``; the claims carry no
image and stay ``online: false``, so the operator keeps reconciling the hosts
(and may write their status) while the binders race for them, and nothing is
provisioned. Between repetitions the admin frees every host (consumerRef
removed), as before.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest
from harness.ansible import REPO_ROOT, VENV_BIN, ansible_env
from kubernetes import client

INFRA = "cc-infra"
TENANTS = {"cc-a": "tenant-a", "cc-b": "tenant-b", "cc-c": "tenant-c"}
HOSTS, CLAIMS, BINDERS, REPETITIONS = 30, 40, 4, 5
MERGE = "application/merge-patch+json"


pytestmark = pytest.mark.real_bmo


@pytest.fixture(scope="module")
def pool(metal3_bmo_env):
    env = metal3_bmo_env
    env.tenant_namespace(INFRA, None)
    for namespace, identity in TENANTS.items():
        env.tenant_namespace(namespace, identity)
    names = ["cc-h%02d" % index for index in range(HOSTS)]
    for index, name in enumerate(names):
        env.create_host(
            INFRA, name, index=300 + index, policy={"matches": "cc-.*"}, labels={"suite": "concurrency"}, wait=False
        )
    env.wait_hosts(INFRA, names, state="available", timeout=600)
    yield env
    for namespace in TENANTS:
        env.forget_claims(namespace)
    env.delete_hosts(INFRA)


def reset(env):
    """Between repetitions: drop every claim and free every host, as the admin."""
    for namespace in TENANTS:
        env.forget_claims(namespace)
    with env.api() as api:
        custom = client.CustomObjectsApi(api)
        for host in env.hosts(INFRA):
            if host["spec"].get("consumerRef"):
                custom.patch_namespaced_custom_object(
                    "metal3.io",
                    "v1alpha1",
                    INFRA,
                    "baremetalhosts",
                    host["metadata"]["name"],
                    {"spec": {"consumerRef": None}},
                    _content_type=MERGE,
                )
    for namespace in TENANTS:
        deadline = time.monotonic() + 30
        while env.claims(namespace):
            assert time.monotonic() < deadline
            time.sleep(0.2)


def start_binder(env, number, workdir):
    extra = {
        "reconcile_namespaces": sorted(TENANTS),
        "reconcile_host_namespaces": [INFRA],
        "reconcile_passes": 10,
        "reconcile_interval": 0,
        "reconcile_binder_id": "binder-%d" % number,
    }
    argv = [
        str(VENV_BIN / "ansible-playbook"),
        "-i",
        "localhost,",
        str(REPO_ROOT / "playbooks" / "metal3_bind_claims.yml"),
        "-e",
        json.dumps(extra),
    ]
    run_env = ansible_env(env.kube.ansible_env("binder"), workdir)
    run_env.update(ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_JSON_INDENT="0")
    return subprocess.Popen(
        argv, env=run_env, cwd=str(workdir), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def passes_of(stdout):
    report = json.loads(stdout[stdout.index("{") :])
    for play in report["plays"]:
        for task in play["tasks"]:
            if task["task"]["name"].startswith("Bind, sync and release until"):
                result = task["hosts"]["localhost"]
                return result.get("attempts", 1), result
    raise AssertionError("no reconcile task in the report")


def test_four_binders_at_once(pool, tmp_path):
    env = pool
    figures = []
    for repetition in range(REPETITIONS):
        reset(env)
        for number in range(CLAIMS):
            namespace = sorted(TENANTS)[number % 3]
            env.create_claim(
                namespace,
                "r%d-c%02d" % (repetition, number),
                {"hostSelector": {"matchLabels": {"suite": "concurrency"}}},
            )
        started = time.monotonic()
        binders = [
            start_binder(env, number, tmp_path / ("r%d-b%d" % (repetition, number))) for number in range(BINDERS)
        ]
        outputs = [binder.communicate(timeout=600) for binder in binders]
        elapsed = time.monotonic() - started
        for binder, (stdout, stderr) in zip(binders, outputs):
            assert binder.returncode == 0, stdout[-4000:] + stderr[-2000:]
        passes = [passes_of(stdout)[0] for stdout, dummy in outputs]
        figures.append((repetition, round(elapsed, 1), passes))

        claims = dict(
            ((c["metadata"]["namespace"], c["metadata"]["name"]), c)
            for namespace in TENANTS
            for c in env.claims(namespace)
        )
        assert len(claims) == CLAIMS
        hosts = env.hosts(INFRA)
        refs = [
            (h["spec"]["consumerRef"]["namespace"], h["spec"]["consumerRef"]["name"], h["spec"]["consumerRef"]["uid"])
            for h in hosts
            if h["spec"].get("consumerRef")
        ]
        # every host bound at most once (one consumerRef), each to an existing claim, no claim twice
        assert len(refs) == HOSTS
        assert len(set((ns, name) for ns, name, dummy in refs)) == HOSTS
        for namespace, name, uid in refs:
            assert claims[(namespace, name)]["metadata"]["uid"] == uid
        bound_to = dict(
            ((h["spec"]["consumerRef"]["namespace"], h["spec"]["consumerRef"]["name"]), h["metadata"]["name"])
            for h in hosts
            if h["spec"].get("consumerRef")
        )
        bound, pending = 0, 0
        for key, claim in claims.items():
            conditions = dict((c["type"], c) for c in claim["status"]["conditions"])
            label = claim["metadata"].get("labels", {}).get("hostclaim.metal3.io/host")
            if key in bound_to:
                bound += 1
                assert label == bound_to[key]
                assert conditions["AssociateBMH"]["status"] == "True"
                assert conditions["AssociateBMH"]["message"] == "bound to host %s" % bound_to[key]
            else:
                pending += 1
                assert label is None
                associate = conditions["AssociateBMH"]
                assert (associate["status"], associate["reason"]) == ("False", "NoAvailableHost"), associate
                assert associate["message"] == "all hosts matching hostSelector are consumed"
        assert (bound, pending) == (HOSTS, CLAIMS - HOSTS)
    # binding alone provisions nothing: the operator kept every host available and powered off
    names = [h["metadata"]["name"] for h in env.hosts(INFRA)]
    env.wait_hosts(INFRA, names, state="available", powered=False, timeout=30)
    print("\nconcurrency (repetition, seconds, passes per binder):", figures)
