"""The owner's roles on baremetal-operator's own HostClaim dialect (v0.14), on the real operator.

On a cluster that serves BMO's HostClaim and HostDeployPolicy CRDs (fixtures_bmo.bmo_dialect: BMO's CRDs,
webhooks and its own HostClaim controller, ``--hostclaims``), through ``ansible-playbook`` with the cluster
administrator (the owner):

- ``host_pool`` writes the namespace's sharing (``host_pool_share``) as the collection's labelled
  HostDeployPolicies (one per ``withLabel`` entry; ``matches`` anchored); check mode writes nothing; a second
  run is unchanged and writes nothing; a new sharing deletes the policies no longer wanted; an owner's own
  hand-written policy is never touched;
- a per-host ``share`` fails with one error naming the entry and the cause, and changes nothing;
- with the policy host_pool wrote (``nameMatches: ^(?:ow-prod)$``), BMO's OWN controller binds a claim of
  ``ow-prod`` and leaves a claim of ``not-ow-prod`` unbound although a host is free; an owner's hand-written
  policy ``nameMatches: ow-prod`` (upstream's unanchored search) then lets BMO bind ``not-ow-prod``: the
  anchoring is what makes BMO's controller and the collection (deploy_policy, host_bind's reading) agree;
- ``hostclaim_setup`` and ``tenant_namespace`` on that cluster: the tenant reads no HostDeployPolicy,
  BareMetalHost or HardwareData (anywhere), the host-class ValidatingAdmissionPolicy and the
  ``count/hostclaims.metal3.io`` quota hold for claims in BMO's shape.
"""

from __future__ import annotations

import sys

import pytest
from fixtures_bmo import bmo_dialect_setup_vars, create_hosts, wait_for
from harness import kube
from harness.ansible import collections_root, localhost_play, run_playbook
from kubernetes import client

if str(collections_root()) not in sys.path:
    sys.path.append(str(collections_root()))
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share import deploy_policy

pytestmark = pytest.mark.real_bmo

INFRA = "ow-infra"
PROD, NOT_PROD = "ow-prod", "not-ow-prod"
TENANT_NS = "ow-tenant"
GROUP, VERSION = "metal3.io", "v1alpha1"
POLICIES = "hostdeploypolicies"
HOSTS = {"ow-0": (16, "owner"), "ow-1": (17, "owner")}  # BMCs 16 and 17 of the bmo_dialect stack
POOL_TASK = "baremetal.tenancy.host_pool : Label and share the hosts"
MANAGED = {"app.kubernetes.io/managed-by": "baremetal.tenancy"}
HANDWRITTEN = {
    "apiVersion": f"{GROUP}/{VERSION}",
    "kind": "HostDeployPolicy",
    "metadata": {"name": "owners-own", "namespace": INFRA},
    "spec": {"hostClaimNamespaces": {"names": ["nobody-here"]}},
}


@pytest.fixture(scope="module")
def owner(bmo_dialect, tmp_path_factory):
    """The BMO-dialect cluster with this suite's hosts available and an owner's hand-written policy."""
    env, stack = bmo_dialect
    with env.api("admin") as api:
        create_hosts(api, stack, INFRA, HOSTS)
        client.CustomObjectsApi(api).create_namespaced_custom_object(GROUP, VERSION, INFRA, POLICIES, HANDWRITTEN)
    return env, stack, tmp_path_factory.mktemp("owner")


def _pool(env, workdir, share, hosts=None, check=False, diff=False):
    play = localhost_play(
        [],
        roles=[
            {
                "role": "baremetal.tenancy.host_pool",
                "vars": {
                    "host_pool_namespace": INFRA,
                    "host_pool_share": share,
                    "host_pool_hosts": hosts if hosts is not None else [{"names": list(HOSTS), "class": "small"}],
                },
            }
        ],
    )
    return run_playbook(play, env.ansible_env("admin"), workdir, check=check, diff=diff)


def _policies(env):
    with env.api("admin") as api:
        items = client.CustomObjectsApi(api).list_namespaced_custom_object(GROUP, VERSION, INFRA, POLICIES)["items"]
    return dict((p["metadata"]["name"], p) for p in items)


def _host(env, name):
    with env.api("admin") as api:
        return client.CustomObjectsApi(api).get_namespaced_custom_object(GROUP, VERSION, INFRA, "baremetalhosts", name)


def test_host_pool_writes_the_namespaces_sharing_as_labelled_policies(owner):
    env, _stack, workdir = owner
    handwritten_version = _policies(env)["owners-own"]["metadata"]["resourceVersion"]
    share = {"all_tenants": True, "with_labels": ["team=blue"]}

    check = _pool(env, workdir / "check", share, check=True, diff=True)
    assert check.ok, check.explain()
    checked = check.result(POOL_TASK)
    assert checked["changed"] and checked["dialect"] == "bmo" and checked["requests"]["writes"] == 0
    assert [(c["policy"], c["action"]) for c in checked["policies"]] == [
        ("baremetal-tenancy-sharing-0", "create"),
        ("baremetal-tenancy-sharing-1", "create"),
    ]
    assert set(checked["diff"]["after"]["policies"]) == {"baremetal-tenancy-sharing-0", "baremetal-tenancy-sharing-1"}
    assert checked["diff"]["before"]["policies"] == {}
    assert set(_policies(env)) == {"owners-own"}  # check mode wrote nothing

    first = _pool(env, workdir / "first", share)
    assert first.ok, first.explain()
    assert first.result(POOL_TASK)["changed"]
    policies = _policies(env)
    assert set(policies) == {"owners-own", "baremetal-tenancy-sharing-0", "baremetal-tenancy-sharing-1"}
    assert policies["baremetal-tenancy-sharing-0"]["spec"]["hostClaimNamespaces"] == {
        "hasLabels": [{"name": "baremetal.tenancy/tenant"}]
    }
    assert policies["baremetal-tenancy-sharing-1"]["spec"]["hostClaimNamespaces"] == {
        "hasLabels": [{"name": "team", "value": "blue"}]
    }
    assert all(policies[f"baremetal-tenancy-sharing-{n}"]["metadata"]["labels"] == MANAGED for n in (0, 1))
    assert all(_host(env, name)["metadata"]["labels"]["infra-kind"] == "small" for name in HOSTS)
    # no per-host sharing annotation on this dialect
    assert all(
        "baremetal.tenancy/host-claim-namespaces" not in (_host(env, n)["metadata"].get("annotations") or {})
        for n in HOSTS
    )

    second = _pool(env, workdir / "second", share)
    assert second.ok, second.explain()
    again = second.result(POOL_TASK)
    assert not again["changed"] and again["policies"] == [] and again["requests"]["writes"] == 0
    assert _policies(env) == policies

    # A new sharing: the policies no longer wanted go, the owner's own stays as it was.
    third = _pool(env, workdir / "third", {"matches": PROD})
    assert third.ok, third.explain()
    assert sorted((c["policy"], c["action"]) for c in third.result(POOL_TASK)["policies"]) == [
        ("baremetal-tenancy-sharing", "create"),
        ("baremetal-tenancy-sharing-0", "delete"),
        ("baremetal-tenancy-sharing-1", "delete"),
    ]
    policies = _policies(env)
    assert set(policies) == {"owners-own", "baremetal-tenancy-sharing"}
    assert policies["baremetal-tenancy-sharing"]["spec"]["hostClaimNamespaces"] == {"nameMatches": "^(?:ow-prod)$"}
    assert policies["owners-own"]["metadata"]["resourceVersion"] == handwritten_version


def test_a_per_host_share_fails_naming_the_entry_and_changes_nothing(owner):
    env, _stack, workdir = owner
    before = _policies(env)
    hosts_before = dict((name, _host(env, name)["metadata"]) for name in HOSTS)
    run = _pool(
        env,
        workdir / "per-host",
        {"matches": PROD},
        hosts=[{"names": ["ow-0"], "labels": {"rack": "r1"}}, {"names": ["ow-1"], "share": {"all_tenants": True}}],
    )
    assert not run.ok
    result = run.result(POOL_TASK)
    assert result.get("failed")
    assert result["msg"].startswith("hosts[1]: share: "), result["msg"]
    assert "baremetal-operator's HostClaim" in result["msg"] and "HostDeployPolicy" in result["msg"], result["msg"]
    assert _policies(env) == before
    for name in HOSTS:
        meta = _host(env, name)["metadata"]
        assert meta["labels"] == hosts_before[name]["labels"] and "rack" not in meta["labels"]


def _claim(namespace, name, selector):
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "HostClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"poweredOn": False, "hostSelector": {"matchLabels": selector}},
    }


def _read_claim(env, namespace, name):
    with env.api("admin") as api:
        return client.CustomObjectsApi(api).get_namespaced_custom_object(GROUP, VERSION, namespace, "hostclaims", name)


def _associated(claim):
    for condition in (claim.get("status") or {}).get("conditions") or []:
        if condition["type"] == "Associated":
            return condition
    return None


def test_bmos_own_controller_admits_exactly_what_the_anchored_policy_says(owner):
    """BMO's controller with the policy host_pool wrote (^(?:ow-prod)$) and the owner's own that admits nobody."""
    env, stack, workdir = owner
    assert set(_policies(env)) == {"owners-own", "baremetal-tenancy-sharing"}
    with env.api("admin") as api:
        custom = client.CustomObjectsApi(api)
        for namespace in (PROD, NOT_PROD):
            custom.create_namespaced_custom_object(
                GROUP, VERSION, namespace, "hostclaims", _claim(namespace, "web", {"pool": "owner"})
            )
    bound = wait_for(
        "bound by BMO's controller",
        lambda: _read_claim(env, PROD, "web"),
        lambda c: ((c.get("status") or {}).get("bareMetalHost") or {}).get("namespace") == INFRA,
        stack,
    )
    taken = bound["status"]["bareMetalHost"]["name"]
    refused = wait_for(
        "refused by BMO's controller",
        lambda: _read_claim(env, NOT_PROD, "web"),
        lambda c: (_associated(c) or {}).get("status") == "False",
        stack,
    )
    # One host is still free and selected; only the policies keep not-ow-prod out.
    free = next(name for name in HOSTS if name != taken)
    assert not _host(env, free)["spec"].get("consumerRef")
    assert not (refused.get("status") or {}).get("bareMetalHost")
    assert _associated(refused)["reason"] == "NoBareMetalHost"
    # the collection's reading of the same policies, both ways, agrees
    policies = list(_policies(env).values())
    assert deploy_policy.evaluate_namespace(policies, INFRA, PROD, {}).allowed
    assert not deploy_policy.evaluate_namespace(policies, INFRA, NOT_PROD, {}).allowed
    assert not deploy_policy.evaluate_namespace(policies, INFRA, NOT_PROD, {}, unanchored=True).allowed

    # The owner writes the pattern by hand as upstream's documentation reads it: BMO's unanchored search
    # admits not-ow-prod, which the collection refuses (and says why).
    unanchored = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "HostDeployPolicy",
        "metadata": {"name": "owners-unanchored", "namespace": INFRA},
        "spec": {"hostClaimNamespaces": {"nameMatches": PROD}},
    }
    with env.api("admin") as api:
        client.CustomObjectsApi(api).create_namespaced_custom_object(GROUP, VERSION, INFRA, POLICIES, unanchored)
        # BMO requeues an unbound claim; a new generation makes it look again at once
        client.CustomObjectsApi(api).patch_namespaced_custom_object(
            GROUP, VERSION, NOT_PROD, "hostclaims", "web", {"spec": {"poweredOn": True}}
        )
    now_bound = wait_for(
        "bound by BMO's controller under the unanchored policy",
        lambda: _read_claim(env, NOT_PROD, "web"),
        lambda c: (c.get("status") or {}).get("bareMetalHost") == {"namespace": INFRA, "name": free},
        stack,
        timeout=180,
    )
    assert _associated(now_bound)["status"] == "True"
    refusal = deploy_policy.evaluate_namespace([unanchored], INFRA, NOT_PROD, {})
    assert not refusal.allowed and deploy_policy.ANCHORING_NOTE in refusal.reason
    assert deploy_policy.evaluate_namespace([unanchored], INFRA, NOT_PROD, {}, unanchored=True).allowed

    # host_pool again: nothing to change, both hand-written policies untouched.
    versions = dict((name, p["metadata"]["resourceVersion"]) for name, p in _policies(env).items())
    run = _pool(env, workdir / "after-handwritten", {"matches": PROD})
    assert run.ok, run.explain()
    assert not run.result(POOL_TASK)["changed"]
    assert dict((name, p["metadata"]["resourceVersion"]) for name, p in _policies(env).items()) == versions


def test_tenant_namespace_and_rbac_on_the_bmo_dialect(owner):
    env, _stack, workdir = owner
    tenant_user = kube.IDENTITIES["tenant-a"].user
    play = localhost_play(
        [],
        roles=[
            # the variables every suite on this cluster uses (the binder identity stays bound for the others)
            {"role": "baremetal.tenancy.hostclaim_setup", "vars": bmo_dialect_setup_vars()},
            {
                "role": "baremetal.tenancy.tenant_namespace",
                "vars": {
                    "tenant_namespace_tenants": [
                        {
                            "name": TENANT_NS,
                            "users": [tenant_user],
                            "host_classes": ["small"],
                            "quota": {"hostclaims": 2},
                        }
                    ]
                },
            },
        ],
    )
    first = run_playbook(play, env.ansible_env("admin"), workdir / "tenants")
    assert first.ok, first.explain()
    assert (
        first.result("baremetal.tenancy.hostclaim_setup : Settle the dialect")["ansible_facts"][
            "hostclaim_setup_dialect_in_use"
        ]
        == "bmo"
    )
    second = run_playbook(play, env.ansible_env("admin"), workdir / "tenants-again")
    assert second.ok, second.explain()
    changed = [
        name
        for name, result in second.tasks.items()
        if name.startswith("baremetal.tenancy.tenant_namespace") and result.get("changed")
    ]
    assert changed == [], changed

    with env.api("tenant-a") as api:
        review = client.AuthorizationV1Api(api)

        def may(verb, resource, namespace):
            body = client.V1SelfSubjectAccessReview(
                spec=client.V1SelfSubjectAccessReviewSpec(
                    resource_attributes=client.V1ResourceAttributes(
                        group=GROUP, resource=resource, verb=verb, namespace=namespace
                    )
                )
            )
            return review.create_self_subject_access_review(body).status.allowed

        assert may("create", "hostclaims", TENANT_NS) and may("list", "hostclaims", TENANT_NS)  # the control
        for namespace in (TENANT_NS, INFRA):
            for resource in (POLICIES, "baremetalhosts", "hardwaredata"):
                for verb in ("get", "list", "watch"):
                    assert not may(verb, resource, namespace), (verb, resource, namespace)
        assert not may("update", "hostclaims/status", TENANT_NS)
        custom = client.CustomObjectsApi(api)
        with pytest.raises(client.exceptions.ApiException) as denied:
            custom.list_namespaced_custom_object(GROUP, VERSION, INFRA, POLICIES)
        assert denied.value.status == 403

        # claims in BMO's shape: the host-class policy and the quota hold for them
        with pytest.raises(client.exceptions.ApiException) as refused:
            custom.create_namespaced_custom_object(
                GROUP, VERSION, TENANT_NS, "hostclaims", _claim(TENANT_NS, "big", {"infra-kind": "large"})
            )
        assert refused.value.status in (403, 422) and "may not use" in refused.value.body, refused.value.body
        unpinned = _claim(TENANT_NS, "any", {"pool": "owner"})
        with pytest.raises(client.exceptions.ApiException) as refused:
            custom.create_namespaced_custom_object(GROUP, VERSION, TENANT_NS, "hostclaims", unpinned)
        assert "must select its host class" in refused.value.body, refused.value.body
        # BMO's own spellings of In (its webhook refuses "In"): an allowed class passes, another does not
        for operator, values in (("in", ["large"]), ("=", ["large"]), ("!=", ["large"]), ("notin", ["large"])):
            claim = _claim(TENANT_NS, "by-expression", {"pool": "owner"})
            claim["spec"]["hostSelector"]["matchExpressions"] = [
                {"key": "infra-kind", "operator": operator, "values": values}
            ]
            with pytest.raises(client.exceptions.ApiException) as refused:
                custom.create_namespaced_custom_object(GROUP, VERSION, TENANT_NS, "hostclaims", claim)
            assert refused.value.status in (403, 422), (operator, refused.value.body)
        custom.create_namespaced_custom_object(
            GROUP, VERSION, TENANT_NS, "hostclaims", _claim(TENANT_NS, "one", {"infra-kind": "small"})
        )
        two = _claim(TENANT_NS, "two", {"pool": "owner"})
        two["spec"]["hostSelector"]["matchExpressions"] = [{"key": "infra-kind", "operator": "in", "values": ["small"]}]
        custom.create_namespaced_custom_object(GROUP, VERSION, TENANT_NS, "hostclaims", two)
        with pytest.raises(client.exceptions.ApiException) as over:
            custom.create_namespaced_custom_object(
                GROUP, VERSION, TENANT_NS, "hostclaims", _claim(TENANT_NS, "three", {"infra-kind": "small"})
            )
        assert over.value.status == 403 and "exceeded quota" in over.value.body, over.value.body
