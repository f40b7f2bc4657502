"""Security invariants of the HostClaim system, on the real apiserver with real RBAC identities.

- a binding label a tenant edits to point at another tenant's host is erased
  (or set back) by the binder and never honoured: the other host keeps its
  consumerRef and nothing of it reaches the forger;
- tenant identities are refused on BareMetalHosts, on ``hostclaims/status``,
  on the infrastructure namespace's Secrets and on other tenants'
  namespaces (through the modules too, with a clear message);
- no BMC address, host part, credentials Secret name, user or password
  appears in any claim, in any module result, or in the ``-vvv`` output of
  tenant runs, although the hosts carry them in labels, annotations and
  error messages that the binder reads.
"""

from __future__ import annotations

import sys

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from harness.ansible import collections_root

INFRA = "sec-infra"
NS_A, NS_B = "sec-a", "sec-b"
BINDING_LABEL = "hostclaim.metal3.io/host"
SELECTOR = {"matchLabels": {"suite": "sec"}}
HOSTS = ("sec-h1", "sec-h2", "sec-h3")


def find_bmc_data(obj, values):
    sys.path.insert(0, str(collections_root()))
    from ansible_collections.baremetal.tenancy.plugins.module_utils.claim_sync import find_bmc_data as scan

    return scan(obj, values)


@pytest.fixture(scope="module")
def sec(metal3_env):
    env = metal3_env
    env.tenant_namespace(INFRA, None)
    env.tenant_namespace(NS_A, "tenant-a")
    env.tenant_namespace(NS_B, "tenant-b")
    for index, name in enumerate(HOSTS, start=200):
        policy = {"matches": NS_A} if name == "sec-h1" else {"matches": NS_B}
        # BMC data planted where the binder reads: labels, annotations (an exported domain too)
        env.create_host(INFRA, name, index=index, policy=policy, hostname="%s.example.com" % name,
                        labels={"suite": "sec", "example.com/creds": "%s-bmc-secret" % name},
                        annotations={"export.hostclaim.metal3.io/bmc": env.bmc_address(name),
                                     "export.hostclaim.metal3.io/login": "bmcuser-%s" % name,
                                     "export.hostclaim.metal3.io/console": "ipmi://10.9.8.7"})
    yield env
    env.forget_claims(NS_A)
    env.forget_claims(NS_B)
    env.delete_hosts(INFRA)


def claim(name, namespace, who, **args):
    return {"name": "claim %s" % name, "as": who,
            "baremetal.tenancy.host_claim": dict(dict(name=name, namespace=namespace, host_selector=SELECTOR), **args)}


def bind(task="bind"):
    return {"name": task, "as": "binder", "baremetal.tenancy.host_bind": {"namespaces": [NS_A, NS_B]}}


def forge(name, namespace, who, host):
    return {"name": "forge %s" % name, "as": who, "kubernetes.core.k8s": {
        "state": "patched", "api_version": "metal3.io/v1alpha1", "kind": "HostClaim", "namespace": namespace,
        "name": name, "definition": {"metadata": {"labels": {BINDING_LABEL: host}}}}}


def test_forged_binding_label_is_erased_and_never_honoured(sec):
    env = sec
    run = env.steps([
        claim("app", NS_A, "tenant-a"),
        claim("app", NS_B, "tenant-b"),
        bind("bind"),
        # tenant-b points its bound claim, and a new claim, at tenant-a's host
        forge("app", NS_B, "tenant-b", "sec-h1"),
        claim("loner", NS_B, "tenant-b", host_selector={"matchLabels": {"suite": "sec", "nothing": "here"}}),
        forge("loner", NS_B, "tenant-b", "sec-h1"),
        {"name": "forged info", "as": "tenant-b", "baremetal.tenancy.host_claim_info": {"namespace": NS_B}},
        bind("bind after forgery"),
    ])
    assert run.ok, run.explain()
    bound = dict(((c["namespace"], c["name"]), c["host"]) for c in run.result("bind")["claims"])
    assert bound[(NS_A, "app")] == "sec-h1"
    host_b = bound[(NS_B, "app")]
    assert host_b in ("sec-h2", "sec-h3")
    # while forged, the tenant's own view does not show the forged host
    views = dict((v["name"], v) for v in run.result("forged info")["claims"])
    assert views["app"]["labels"][BINDING_LABEL] == "sec-h1"
    assert views["app"]["host"] is None and views["loner"]["host"] is None
    # the binder sets the label back from consumerRef, and erases the one of the unbound claim
    after = dict(((c["namespace"], c["name"]), c) for c in run.result("bind after forgery")["claims"])
    assert after[(NS_B, "app")]["host"] == host_b and after[(NS_B, "loner")]["action"] == "pending"
    assert env.claim(NS_B, "app")["metadata"]["labels"][BINDING_LABEL] == host_b
    assert BINDING_LABEL not in env.claim(NS_B, "loner")["metadata"].get("labels", {})
    assert env.host(INFRA, "sec-h1")["spec"]["consumerRef"]["namespace"] == NS_A
    loner = env.claim(NS_B, "loner")
    assert loner["status"]["addresses"] == [] and "bootMACAddress" not in loner["status"]


def _status_patch(api, namespace, name):
    return client.CustomObjectsApi(api).patch_namespaced_custom_object_status(
        "metal3.io", "v1alpha1", namespace, "hostclaims", name,
        {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Forged"}]}},
        _content_type="application/merge-patch+json")


def test_tenants_are_refused_outside_their_claims(sec):
    env = sec
    env.steps([claim("probe", NS_A, "tenant-a")])
    # raw API, with the tenant's own token
    with env.api("tenant-a") as api:
        custom = client.CustomObjectsApi(api)
        core = client.CoreV1Api(api)
        refused = [
            lambda: custom.list_namespaced_custom_object("metal3.io", "v1alpha1", INFRA, "baremetalhosts"),
            lambda: custom.list_cluster_custom_object("metal3.io", "v1alpha1", "baremetalhosts"),
            lambda: custom.get_namespaced_custom_object("metal3.io", "v1alpha1", INFRA, "baremetalhosts", "sec-h1"),
            lambda: custom.list_namespaced_custom_object("metal3.io", "v1alpha1", NS_A, "baremetalhosts"),
            lambda: _status_patch(api, NS_A, "probe"),
            lambda: core.read_namespaced_secret("sec-h1-bmc-secret", INFRA),
            lambda: custom.list_namespaced_custom_object("metal3.io", "v1alpha1", NS_B, "hostclaims"),
            lambda: core.list_namespaced_secret(NS_B),
            lambda: core.read_namespace(NS_A),
        ]
        for attempt in refused:
            with pytest.raises(ApiException) as exc:
                attempt()
            assert exc.value.status == 403
        # and what it may do
        assert custom.list_namespaced_custom_object("metal3.io", "v1alpha1", NS_A, "hostclaims")["items"]
    # through the modules: one clear message naming the object
    run = env.steps([
        dict(claim("intruder", NS_B, "tenant-a"), ignore_errors=True),
        {"name": "read b", "as": "tenant-a", "ignore_errors": True,
         "baremetal.tenancy.host_claim_info": {"namespace": NS_B}},
        {"name": "release b", "as": "tenant-a", "ignore_errors": True,
         "baremetal.tenancy.host_release": {"name": "app", "namespace": NS_B}},
        {"name": "bind as tenant", "as": "tenant-a", "ignore_errors": True,
         "baremetal.tenancy.host_bind": {"namespaces": [NS_A]}},
        dict(claim("stranger", NS_A, "tenant-c"), ignore_errors=True),
    ])
    for task, obj in (("claim intruder", "HostClaim %s/intruder" % NS_B), ("read b", "HostClaims in namespace %s" % NS_B),
                      ("release b", "HostClaim %s/app" % NS_B), ("claim stranger", "HostClaim %s/stranger" % NS_A)):
        result = run.result(task)
        assert result["failed"] and result["error_type"] == "Forbidden", (task, result)
        assert result["msg"].startswith(obj + ": ") and "forbidden" in result["msg"], result["msg"]
    assert run.result("bind as tenant")["error_type"] == "Forbidden"
    assert env.claim(NS_B, "intruder") is None and env.claim(NS_A, "stranger") is None
    assert env.claim(NS_B, "app")["metadata"].get("deletionTimestamp") is None


def test_no_bmc_data_reaches_tenants(sec, tmp_path):
    env = sec
    values = env.bmc_values(INFRA, HOSTS) + ["10.9.8.7"]
    with env.api() as api:
        bmo = env.bmo(api, [INFRA])
        # tenant-a deploys; its host then reports an error that quotes the BMC
        run = env.steps([claim("app", NS_A, "tenant-a", online=True, image={
            "url": "https://images.example.com/os.img", "checksum": "a" * 64, "checksum_type": "sha256"}), bind()])
        assert run.ok, run.explain()
        bmo.settle()
        client.CustomObjectsApi(api).patch_namespaced_custom_object_status(
            "metal3.io", "v1alpha1", INFRA, "baremetalhosts", "sec-h1",
            {"status": {"errorType": "power management error",
                        "errorMessage": "Failed to get power state of %s as %s/%s" % tuple(values[0:1] + values[3:5])}},
            _content_type="application/merge-patch+json")
    tasks = [
        bind("bind"),
        claim("app", NS_A, "tenant-a"),
        {"name": "info", "as": "tenant-a", "baremetal.tenancy.host_claim_info": {"namespace": NS_A}},
        {"name": "info one", "as": "tenant-a", "baremetal.tenancy.host_claim_info": {"namespace": NS_A, "name": "app"}},
        claim("temp", NS_A, "tenant-a"),
        bind("bind temp"),
        {"name": "release", "as": "tenant-a",
         "baremetal.tenancy.host_release": {"name": "temp", "namespace": NS_A, "node_reuse": "t"}},
    ]
    run = env.steps(tasks)
    assert run.ok, run.explain()
    app = run.result("info one")["claims"][0]
    assert app["ready"] is False
    ready = [c for c in app["conditions"] if c["type"] == "Ready"][0]
    assert ready["reason"] == "HostError" and "power management error" in ready["message"]
    # module results of the tenant tasks (the binder's own results are admin-side)
    for task in ("claim app", "info", "info one", "claim temp", "release"):
        assert find_bmc_data(run.result(task), values) == [], task
    # every claim as stored
    for namespace in (NS_A, NS_B):
        for stored in env.claims(namespace):
            assert find_bmc_data(stored, values) == [], stored["metadata"]["name"]
            assert "export.hostclaim.metal3.io/bmc" not in stored["metadata"].get("annotations", {})
            assert "example.com/creds" not in stored["metadata"].get("labels", {})
    # the -vvv output of tenant runs, with the default (human) callback
    tenant_tasks = [dict((k, v) for k, v in task.items() if k != "as") for task in tasks if task["as"] == "tenant-a"]
    verbose = env.playbook("tenant-a", tenant_tasks, verbosity=3, callback="default")
    assert verbose.ok, verbose.explain()
    assert "AnsiballZ" in verbose.stdout  # really -vvv
    text = verbose.stdout + verbose.stderr
    leaks = [value for value in values if value.lower() in text.lower()]
    assert leaks == []
