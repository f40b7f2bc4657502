"""The binder killed at random points: ``host_bind`` under SIGKILL, then one clean pass.

A small pool (collection's CRDs, no operator: ``metal3_env``; the test writes the hosts'
status ``available`` once, as the operator would) and two tenants whose claims come and go.
Each round:

1. the tenants change things (as themselves): new claims (some with an image, user-data
   and network-data Secrets, which the binder copies next to the host), deleted claims
   (their finalizer keeps them until the binder releases the host), ``online`` flipped on
   bound claims; every third round the cluster admin force-deletes a bound claim (drops its
   finalizer: the sweep must release the host);
2. an ``ansible-playbook`` running ``host_bind`` as the binder is killed with SIGKILL (its
   process group: the playbook, its worker and the module, as a cancelled job or an OOM kill
   ends them) at a random delay: mostly while the module runs (after its process appears), a
   few before it starts;
3. which phase the kill hit is read from what the killed pass wrote (admin reads before and
   after): nothing (start-up, lists), ``bind`` (a host's ``consumerRef`` or a claim's binding),
   ``sync`` (power or image passed down), ``copy`` (Secret copies made), ``release``
   (a deleted claim's host let go, its finalizer removed), ``sweep`` (a host of a vanished
   claim let go, orphan copies deleted); a kill that left a host pointing at a claim that does
   not record it was caught mid-bind;
4. one clean pass, which must report no error, after which the invariants hold:
   no host bound to two claims, no claim bound to two hosts; no ``consumerRef`` to a claim
   that no longer exists; no claim marked bound (label or ``AssociateBMH``) without the host's
   ``consumerRef``; no Secret copy without its claim; no deleted claim still held by its
   finalizer (the hosts are ``available`` at once, so one pass releases them).

At the end the kills per phase are printed; the test asserts at least 50 kills landed while the
playbook ran and that kills hit several phases.
"""

from __future__ import annotations

import collections
import json
import random
import time
from pathlib import Path

import pytest
from fixtures_faults import KillablePlaybook, has_traceback, saved_result
from harness.ansible import localhost_play
from harness.kube import call_ignoring as _ignore
from kubernetes import client

pytestmark = pytest.mark.faults

INFRA = "kb-infra"
TENANTS = {"kb-a": "tenant-a", "kb-b": "tenant-b"}
HOSTS = 16
MAX_CLAIMS = 14
KILLS = 52
GROUP, VERSION = "metal3.io", "v1alpha1"
MERGE = "application/merge-patch+json"
SELECTOR = {"matchLabels": {"suite": "kb"}}
BINDING_LABEL = "hostclaim.metal3.io/host"
COPY_UID_LABEL = "hostclaim.metal3.io/claim-uid"
FINALIZER = "hostclaim.metal3.io/release"
IMAGE = {
    "url": "http://images.example.com/os.qcow2",
    "checksum": "9f6c1a0f5e2b4c8d7a3e1f0b2c4d6e8f",
    "checksumType": "md5",
    "format": "qcow2",
}
PHASES = ("start-up", "bind", "mid-bind", "sync", "copy", "release", "sweep")


@pytest.fixture(scope="module")
def pool(metal3_env, tmp_path_factory):
    yield from make_pool(metal3_env, tmp_path_factory.mktemp("binder-kill"))


def make_pool(env, workdir: Path):
    """The pool (yields ``(env, workdir)``; deleted after), for the fixture of each suite that uses it."""
    env.tenant_namespace(INFRA, None)
    for namespace, identity in TENANTS.items():
        env.tenant_namespace(namespace, identity)
    with env.api() as api:
        core = client.CoreV1Api(api)
        for namespace in TENANTS:
            for name, key in (("ud", "userData"), ("nd", "networkData")):
                _ignore(
                    409,
                    core.create_namespaced_secret,
                    namespace,
                    client.V1Secret(metadata=client.V1ObjectMeta(name=name), string_data={key: "#cloud-config\n{}\n"}),
                )
        custom = client.CustomObjectsApi(api)
        for index in range(HOSTS):
            name = "kb-h%02d" % index
            env.create_host(INFRA, name, index=1200 + index, policy={"matches": "kb-.*"}, labels={"suite": "kb"})
            custom.patch_namespaced_custom_object_status(
                GROUP,
                VERSION,
                INFRA,
                "baremetalhosts",
                name,
                {"status": {"provisioning": {"state": "available"}, "operationalStatus": "OK", "poweredOn": False}},
                _content_type=MERGE,
            )
    yield env, workdir
    for namespace in TENANTS:
        env.forget_claims(namespace)
    env.delete_hosts(INFRA)


# -- the pass --------------------------------------------------------------------------------------


class BindPass(KillablePlaybook):
    """One ``ansible-playbook`` running ``host_bind`` as the binder (killable); its result in ``result.json``.
    ``apiserver``: an API server of the session's etcd other than the main one (its ``ansible_env``)."""

    def __init__(self, env, workdir: Path, apiserver=None):
        task = {
            "name": "bind",
            "baremetal.tenancy.host_bind": {"namespaces": sorted(TENANTS), "host_namespaces": [INFRA]},
        }
        super().__init__(
            localhost_play(saved_result(task, "bound", workdir / "result.json")),
            (apiserver or env.kube).ansible_env("binder"),
            workdir,
        )

    def result(self, timeout: float = 300) -> dict:
        rc = self.wait(timeout)
        output = self.output
        assert rc == 0, "the clean pass failed (rc %s):\n%s" % (rc, output[-6000:])
        assert not has_traceback(output), output[-6000:]
        return json.loads((self.workdir / "result.json").read_text())


# -- reading the pool as the admin ----------------------------------------------------------------


def read_pool(env):
    """(claims by (namespace, name), hosts by name, Secret copies in the infra namespace)."""
    claims = {}
    for namespace in TENANTS:
        for claim in env.claims(namespace):
            claims[(namespace, claim["metadata"]["name"])] = claim
    hosts = {h["metadata"]["name"]: h for h in env.hosts(INFRA)}
    with env.api() as api:
        copies = {
            s.metadata.name: s
            for s in client.CoreV1Api(api).list_namespaced_secret(INFRA, label_selector=COPY_UID_LABEL).items
        }
    return claims, hosts, copies


def associated_host(claim):
    for condition in (claim.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "AssociateBMH" and condition.get("status") == "True":
            return (condition.get("message") or "").replace("bound to host ", "")
    return None


def violations(env) -> list[str]:
    """The invariants of a settled pool, each broken one in words."""
    claims, hosts, copies = read_pool(env)
    problems = []
    uids = {c["metadata"]["uid"]: key for key, c in claims.items()}
    holders = collections.defaultdict(list)
    for name, host in hosts.items():
        ref = host["spec"].get("consumerRef")
        if not ref:
            continue
        key = (ref.get("namespace"), ref.get("name"))
        claim = claims.get(key)
        if claim is None or claim["metadata"]["uid"] != ref.get("uid"):
            problems.append("host %s points at claim %s/%s that no longer exists" % (name, *key))
            continue
        holders[key].append(name)
    for key, names in holders.items():
        if len(names) > 1:
            problems.append("claim %s/%s is bound to hosts %s" % (*key, names))
    marked = collections.defaultdict(list)
    for key, claim in claims.items():
        label = (claim["metadata"].get("labels") or {}).get(BINDING_LABEL)
        recorded = associated_host(claim)
        for host in {label, recorded} - {None}:
            marked[host].append(key)
            ref = (hosts.get(host) or {}).get("spec", {}).get("consumerRef") or {}
            if (ref.get("namespace"), ref.get("name"), ref.get("uid")) != (*key, claim["metadata"]["uid"]):
                problems.append("claim %s/%s is marked bound to %s, which does not point at it" % (*key, host))
        if claim["metadata"].get("deletionTimestamp"):
            problems.append("deleted claim %s/%s is still held by %s" % (*key, claim["metadata"].get("finalizers")))
    for host, keys in marked.items():
        if len(set(keys)) > 1:
            problems.append("host %s is marked bound by claims %s" % (host, sorted(set(keys))))
    for name, secret in copies.items():
        if (secret.metadata.labels or {}).get(COPY_UID_LABEL) not in uids:
            problems.append("Secret copy %s/%s has no claim" % (INFRA, name))
    return problems


# -- what a pass wrote ----------------------------------------------------------------------------


def pass_phases(before, after) -> set[str]:
    """The kinds of writes between two reads of the pool (no one but the binder wrote in between)."""
    claims0, hosts0, copies0 = before
    claims1, hosts1, copies1 = after
    phases = set()
    for name, host in hosts1.items():
        old = hosts0.get(name)
        if old is None:
            continue
        ref0, ref1 = old["spec"].get("consumerRef"), host["spec"].get("consumerRef")
        if ref1 and ref1 != ref0:
            phases.add("bind")
        if ref0 and not ref1:
            key = (ref0.get("namespace"), ref0.get("name"))
            phases.add(
                "sweep" if key not in claims0 or not claims0[key]["metadata"].get("deletionTimestamp") else "release"
            )
        if ref0 and ref1 == ref0:
            fields = ("online", "image", "userData", "networkData")
            if any(old["spec"].get(f) != host["spec"].get(f) for f in fields):
                phases.add("sync")
    for key, claim in claims1.items():
        old = claims0.get(key)
        if old is None:
            continue
        if (old["metadata"].get("labels") or {}).get(BINDING_LABEL) != (claim["metadata"].get("labels") or {}).get(
            BINDING_LABEL
        ) or associated_host(old) != associated_host(claim):
            phases.add("bind")
    for key, claim in claims0.items():
        if claim["metadata"].get("deletionTimestamp") and (
            key not in claims1 or FINALIZER not in (claims1[key]["metadata"].get("finalizers") or [])
        ):
            phases.add("release")
    if set(copies1) - set(copies0):
        phases.add("copy")
    for name in set(copies0) - set(copies1):
        uid = (copies0[name].metadata.labels or {}).get(COPY_UID_LABEL)
        live = {c["metadata"]["uid"]: c for c in claims0.values()}
        phases.add("release" if uid in live else "sweep")
    return phases


def half_bound(state) -> bool:
    """A host points at a live claim that does not record it: a bind cut between its writes."""
    claims, hosts, dummy = state
    for name, host in hosts.items():
        ref = host["spec"].get("consumerRef")
        claim = claims.get((ref.get("namespace"), ref.get("name"))) if ref else None
        if claim is not None and not claim["metadata"].get("deletionTimestamp") and associated_host(claim) != name:
            return True
    return False


# -- the tenants' churn ---------------------------------------------------------------------------


def churn(env, rng: random.Random, round_number: int) -> None:
    claims, dummy, dummy2 = read_pool(env)
    live = [key for key, c in claims.items() if not c["metadata"].get("deletionTimestamp")]
    bound = [key for key in live if associated_host(claims[key])]
    for key in rng.sample(live, min(len(live), rng.randint(1, 3))):
        with env.api(TENANTS[key[0]]) as api:
            _ignore(
                404,
                client.CustomObjectsApi(api).delete_namespaced_custom_object,
                GROUP,
                VERSION,
                key[0],
                "hostclaims",
                key[1],
            )
    for key in rng.sample(bound, min(len(bound), 2)):
        if key not in claims:
            continue
        with env.api(TENANTS[key[0]]) as api:
            _ignore(
                404,
                client.CustomObjectsApi(api).patch_namespaced_custom_object,
                GROUP,
                VERSION,
                key[0],
                "hostclaims",
                key[1],
                {"spec": {"online": not claims[key]["spec"].get("online")}},
                _content_type=MERGE,
            )
    if round_number % 3 == 2 and bound:
        namespace, name = rng.choice(bound)
        with env.api() as api:
            custom = client.CustomObjectsApi(api)
            _ignore(
                404,
                custom.patch_namespaced_custom_object,
                GROUP,
                VERSION,
                namespace,
                "hostclaims",
                name,
                {"metadata": {"finalizers": None}},
                _content_type=MERGE,
            )
            _ignore(404, custom.delete_namespaced_custom_object, GROUP, VERSION, namespace, "hostclaims", name)
    room = MAX_CLAIMS - len(live) + 2
    for number in range(rng.randint(2, 4) if room > 0 else 0):
        namespace = rng.choice(sorted(TENANTS))
        spec = {"online": rng.random() < 0.5, "hostSelector": SELECTOR}
        if rng.random() < 0.6:
            spec.update(image=IMAGE, userData={"name": "ud"}, networkData={"name": "nd"}, online=True)
        env.create_claim(namespace, "r%02d-%d" % (round_number, number), spec, identity=TENANTS[namespace])


# -- the test -------------------------------------------------------------------------------------


def test_a_binder_killed_at_random_points_is_repaired_by_one_clean_pass(pool):
    env, workdir = pool
    rng = random.Random(1717)
    churn(env, rng, 0)
    first = BindPass(env, workdir / "warm-up")
    started = time.monotonic()
    assert first.wait_module("host_bind")
    # the kill window: the module's process, from its start (AnsiballZ, imports) to its end (the pass written)
    module_seconds = first.module_seconds("host_bind")
    result = first.result()
    print(
        "\nwarm-up pass: %.1f s (module process %.2f s, pass %.2f s), %s"
        % (time.monotonic() - started, module_seconds, result["timings"]["total"], result["summary"])
    )
    assert not violations(env)

    hits = collections.Counter()
    kills = []
    late = 0
    round_number = 0
    while len(kills) < KILLS:
        round_number += 1
        assert round_number < KILLS * 2, "too many passes ended before their kill: %d" % late
        churn(env, rng, round_number)
        before = read_pool(env)
        killed = BindPass(env, workdir / ("kill-%03d" % round_number))
        in_module = rng.random() < 0.85
        if in_module:
            killed.wait_module("host_bind")
            time.sleep(rng.uniform(0, module_seconds))
        else:
            time.sleep(rng.uniform(0, 1.5))
        module_ended = in_module and not killed.module_running("host_bind")
        if not killed.kill() or module_ended:
            # the pass was over: not a kill in any phase (the next round's passes repair what it left)
            late += 1
            continue
        after_kill = read_pool(env)
        phases = pass_phases(before, after_kill) or {"start-up"}
        if half_bound(after_kill) and not half_bound(before):
            phases.add("mid-bind")
        hits.update(phases)
        cleaner = BindPass(env, workdir / ("clean-%03d" % round_number))
        cleaner.wait_module("host_bind")
        seconds = cleaner.module_seconds("host_bind")
        clean = cleaner.result()
        assert not clean["errors"], clean["errors"]
        problems = violations(env)
        kills.append({"round": round_number, "phases": sorted(phases), "problems": problems})
        assert not problems, "after kill %d (phases %s), one clean pass left: %s" % (
            len(kills),
            sorted(phases),
            problems,
        )
        if seconds:
            module_seconds = 0.7 * module_seconds + 0.3 * seconds

    print("binder kills: %d (%d more passes had ended before their kill: not counted)" % (len(kills), late))
    print("kills per phase: " + ", ".join("%s %d" % (phase, hits[phase]) for phase in PHASES))
    (workdir / "kills.json").write_text(json.dumps({"kills": kills, "per_phase": dict(hits)}, indent=1))
    assert len(kills) >= 50
    assert len([phase for phase in PHASES if hits[phase] and phase != "start-up"]) >= 3, hits
