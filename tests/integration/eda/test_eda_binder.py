"""The Event-Driven Ansible binder: ``ansible-rulebook`` running ``extensions/eda/rulebooks/binder.yml``.

The rulebook's source (``baremetal.tenancy.metal3_events``) follows HostClaims and
BareMetalHosts of a real kube-apiserver and asks for coalesced ``host_bind``
passes (``playbooks/metal3_bind_event.yml``), as the binder identity. Shown here:

- 50 claims created over 10 s by 3 tenants (each with its own credentials) are all
  bound, none twice and no host twice, in far fewer passes than claims (one
  pass per burst, the passes one after the other);
- a rulebook killed (SIGKILL, its playbooks with it) and started again binds the
  claims created while it was down: none is lost;
- an API server restarted under the running rulebook (the watches drop, and
  come back on the same address) is followed again: claims created while it was
  down are bound once it is back;
- ``binder_worker.yml`` (the same source with ``worker: true``) binds claims with
  one long-running ``host_bind_worker`` started once, not a playbook per pass.

The cluster runs the proposal's HostClaim CRD and the collection's own BareMetalHost
CRD with no operator (``metal3_env``): the test writes the hosts' status
(``available``) as the operator would, once, before any claim exists. The rulebook
talks to an API server of its own on the session's etcd, so that restarting it
leaves the session's API server alone.
"""

from __future__ import annotations

import re
import time

import pytest
from harness import rulebook as harness_rulebook
from kubernetes import client

INFRA = "eda-infra"
TENANTS = {"eda-a": "tenant-a", "eda-b": "tenant-b", "eda-c": "tenant-c"}
HOSTS = 70
GROUP, VERSION = "metal3.io", "v1alpha1"
MERGE = "application/merge-patch+json"
SELECTOR = {"matchLabels": {"suite": "eda"}}
#: the source's log line for each pass it asks for (ansible-rulebook -v logs at INFO)
PASS_LINE = re.compile(r"binder pass (\d+) for ")


@pytest.fixture(scope="module")
def eda(metal3_env, tmp_path_factory):
    env = metal3_env
    env.tenant_namespace(INFRA, None)
    for namespace, identity in TENANTS.items():
        env.tenant_namespace(namespace, identity)
    names = ["eda-h%02d" % index for index in range(HOSTS)]
    with env.api() as api:
        custom = client.CustomObjectsApi(api)
        for index, name in enumerate(names):
            env.create_host(INFRA, name, index=900 + index, policy={"matches": "eda-.*"}, labels={"suite": "eda"})
            custom.patch_namespaced_custom_object_status(
                GROUP,
                VERSION,
                INFRA,
                "baremetalhosts",
                name,
                {"status": {"provisioning": {"state": "available"}, "operationalStatus": "OK", "poweredOn": False}},
                _content_type=MERGE,
            )
    apiserver = env.kube.start_apiserver("eda-apiserver")
    state = {"apiserver": apiserver}
    yield env, state, tmp_path_factory.mktemp("eda")
    if state.get("rulebook") is not None:
        state["rulebook"].kill()
    state["apiserver"].stop()
    for namespace in TENANTS:
        env.forget_claims(namespace)
    env.delete_hosts(INFRA)


class Rulebook(harness_rulebook.Rulebook):
    """``binder.yml`` (or ``binder_worker.yml``) as the binder identity, on the test's own API server."""

    def __init__(self, env, apiserver, workdir, rulebook="baremetal.tenancy.binder"):
        variables = {"binder_namespaces": sorted(TENANTS), "binder_host_namespaces": [INFRA], "binder_resync": 0}
        super().__init__(rulebook, variables, apiserver.ansible_env("binder"), workdir)

    def passes(self) -> list[int]:
        return [int(match.group(1)) for match in PASS_LINE.finditer(self.output)]


def create_claims(env, names, spread: float):
    """Create claims ``names`` (round-robin over the tenants, as each tenant) over ``spread`` seconds."""
    tenants = sorted(TENANTS)
    for number, name in enumerate(names):
        namespace = tenants[number % len(tenants)]
        env.create_claim(namespace, name, {"online": False, "hostSelector": SELECTOR}, identity=TENANTS[namespace])
        if spread:
            time.sleep(spread / len(names))


def bindings(env):
    """(claims by key, host name -> consumer key) as the admin reads them."""
    claims = dict(
        ((c["metadata"]["namespace"], c["metadata"]["name"]), c) for namespace in TENANTS for c in env.claims(namespace)
    )
    consumers = {}
    for host in env.hosts(INFRA):
        ref = host["spec"].get("consumerRef")
        if ref:
            consumers[host["metadata"]["name"]] = (ref["namespace"], ref["name"], ref.get("uid"))
    return claims, consumers


def bound_claims(env):
    """The claims bound as their tenant sees it: the host points at the claim, and the claim carries the binding label
    and the AssociateBMH condition (the binder writes the claim's status last: a claim between its commit and its
    status write is not bound yet)."""
    claims, consumers = bindings(env)
    bound = set()
    for host, (namespace, name, uid) in consumers.items():
        claim = claims.get((namespace, name))
        if claim is None or claim["metadata"]["uid"] != uid:
            continue
        conditions = (claim.get("status") or {}).get("conditions") or []
        associated = any(
            (c.get("type"), c.get("status"), c.get("message")) == ("AssociateBMH", "True", "bound to host %s" % host)
            for c in conditions
        )
        if associated and (claim["metadata"].get("labels") or {}).get("hostclaim.metal3.io/host") == host:
            bound.add((namespace, name))
    return bound


def wait_bound(env, rulebook, count: int, timeout: float = 240) -> set:
    deadline = time.monotonic() + timeout
    while True:
        bound = bound_claims(env)
        if len(bound) >= count:
            return bound
        assert rulebook.proc.poll() is None, "the rulebook ended:\n" + rulebook.output[-6000:]
        assert time.monotonic() < deadline, "%d of %d claims bound\n%s" % (len(bound), count, rulebook.output[-6000:])
        time.sleep(0.5)


def assert_one_host_per_claim(env, expected: int):
    claims, consumers = bindings(env)
    assert len(claims) == expected
    keys = [(namespace, name) for namespace, name, dummy in consumers.values()]
    assert len(keys) == len(set(keys)) == expected, "a claim bound to two hosts"
    for host, (namespace, name, uid) in consumers.items():
        claim = claims[(namespace, name)]
        assert claim["metadata"]["uid"] == uid
        assert claim["metadata"]["labels"]["hostclaim.metal3.io/host"] == host
        associate = dict((c["type"], c) for c in claim["status"]["conditions"])["AssociateBMH"]
        assert (associate["status"], associate["message"]) == ("True", "bound to host %s" % host)


def assert_passes_in_order(rulebook):
    passes = rulebook.passes()
    assert passes, rulebook.output[-4000:]
    assert passes == list(range(1, len(passes) + 1)), passes


def test_fifty_claims_from_three_tenants_are_bound_once_each_in_few_passes(eda):
    env, state, workdir = eda
    rulebook = Rulebook(env, state["apiserver"], workdir / "first")
    state["rulebook"] = rulebook
    create_claims(env, ["c%02d" % number for number in range(50)], spread=10)
    wait_bound(env, rulebook, 50)
    assert_one_host_per_claim(env, 50)
    assert_passes_in_order(rulebook)
    assert len(rulebook.passes()) < 50, "one pass per claim: %s" % rulebook.passes()
    for value in env.bmc_values(INFRA, ["eda-h%02d" % index for index in range(HOSTS)]):
        assert value not in rulebook.output
    print("\neda binder: 50 claims over 10 s, %d passes" % len(rulebook.passes()))


def test_a_killed_and_restarted_rulebook_loses_no_claim(eda):
    env, state, workdir = eda
    state.pop("rulebook").kill()
    create_claims(env, ["k%02d" % number for number in range(6)], spread=0)
    rulebook = Rulebook(env, state["apiserver"], workdir / "second")
    state["rulebook"] = rulebook
    wait_bound(env, rulebook, 56)
    assert_one_host_per_claim(env, 56)
    assert_passes_in_order(rulebook)


def test_the_watches_follow_an_api_server_restart(eda):
    env, state, dummy = eda
    rulebook = state["rulebook"]
    apiserver = state["apiserver"]
    port = apiserver.service.port
    apiserver.stop()
    create_claims(env, ["r%02d" % number for number in range(6)], spread=0)  # through the session's API server
    time.sleep(2)  # the source finds its API server gone and keeps retrying
    state["apiserver"] = env.kube.start_apiserver("eda-apiserver", port=port)
    wait_bound(env, rulebook, 62)
    assert_one_host_per_claim(env, 62)
    assert_passes_in_order(rulebook)
    rulebook.kill()


def test_the_worker_rulebook_binds_with_one_long_running_worker(eda):
    env, state, workdir = eda
    if state.get("rulebook") is not None:
        state.pop("rulebook").kill()
    rulebook = Rulebook(env, state["apiserver"], workdir / "worker", rulebook="baremetal.tenancy.binder_worker")
    state["rulebook"] = rulebook
    create_claims(env, ["w%02d" % number for number in range(8)], spread=2)
    wait_bound(env, rulebook, 70)
    assert_one_host_per_claim(env, 70)
    assert_passes_in_order(rulebook)
    assert len(rulebook.passes()) >= 2, rulebook.output[-4000:]  # the startup pass and the burst's
    # One worker for every pass: one binder_worker event, one playbook, and no per-pass playbook.
    assert rulebook.output.count("asking for a binder worker") == 1, rulebook.output[-4000:]
    assert rulebook.output.count("PLAY [A binder worker for an Event-Driven Ansible event]") == 1
    assert "One binder pass for an Event-Driven Ansible event" not in rulebook.output
    for value in env.bmc_values(INFRA, ["eda-h%02d" % index for index in range(HOSTS)]):
        assert value not in rulebook.output
    rulebook.kill()
