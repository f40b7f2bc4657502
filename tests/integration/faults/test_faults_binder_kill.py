"""The binder killed at random points: ``host_bind`` under SIGKILL, then one clean pass.

A small pool (collection's CRDs, no operator: ``metal3_env``; the test writes the hosts'
status ``available`` once, as the operator would) and two tenants whose claims come and go.
Five of the sixteen hosts have a real BMC: a sushy-tools emulator of their own whose
AccountService really authenticates (one keeps its accounts in fixed slots), reached through
a :class:`harness.fault_proxy.FaultProxy`; the others' BMC address leads nowhere. Each round:

1. the owner grants each tenant a BMC account (``bmc_account``'s own code, run in the test's
   process as the admin: ``host_name``, ``namespace``, ``grantee`` the claim's namespace,
   ``expires_in``) on most bound hosts with a real BMC that carry none for it yet; a tenant
   gives back a claim holding such an account granted in an earlier round (every fourth time
   the cluster admin force-deletes it instead: the sweep must revoke);
2. the tenants change things (as themselves): new claims (some with an image, user-data
   and network-data Secrets, which the binder copies next to the host), deleted claims
   (their finalizer keeps them until the binder releases the host), ``online`` flipped on
   bound claims; every third round the cluster admin force-deletes a bound claim (drops its
   finalizer: the sweep must release the host);
3. an ``ansible-playbook`` running ``host_bind`` as the binder is killed with SIGKILL (its
   process group: the playbook, its worker and the module, as a cancelled job or an OOM kill
   ends them) at a random delay: mostly while the module runs (after its process appears), a
   few before it starts; in about a fifth of the rounds with a BMC account to revoke the kill is
   aimed instead: the BMCs hold their answers half a second (the proxy's ``slow-answers``) and
   the kill comes as soon as the BMC (read as its admin) no longer has one of those accounts,
   that is between the Redfish DELETE and the ledger write;
4. which phase the kill hit is read from what the killed pass wrote (admin reads before and
   after, of the API and of the BMCs): nothing (start-up, lists), ``bind`` (a host's
   ``consumerRef`` or a claim's binding), ``sync`` (power or image passed down), ``copy``
   (Secret copies made), ``release`` (a deleted claim's host let go, its finalizer removed),
   ``sweep`` (a host of a vanished claim let go, orphan copies deleted), ``revoke`` (a BMC
   account deleted, from the BMC or from the host's ledger); a kill that left a host pointing at
   a claim that does not record it was caught mid-bind, one that left a ledger recording an
   account its BMC no longer has was caught mid-revoke;
5. one clean pass, which must report no error, after which the invariants hold:
   no host bound to two claims, no claim bound to two hosts; no ``consumerRef`` to a claim
   that no longer exists; no claim marked bound (label or ``AssociateBMH``) without the host's
   ``consumerRef``; no Secret copy without its claim; no deleted claim still held by its
   finalizer (the hosts are ``available`` at once, so one pass releases them); no leaked BMC
   account: on each host with a real BMC, the ledger (annotation
   ``baremetal.tenancy/bmc-accounts``) and the BMC's own accounts with the collection's prefix
   (read as the BMC's admin through Redfish) record the same accounts, each granted to the
   namespace of the live claim bound to that host.

At the end the kills per phase are printed; the test asserts at least 50 kills landed while the
playbook ran, that kills hit several phases, and ``revoke`` at least once.
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import json
import logging
import random
import sys
import time
from pathlib import Path

import pytest
from fixtures_faults import KillablePlaybook, has_traceback, saved_result
from harness import sushy as sushy_harness
from harness.ansible import collections_root, localhost_play
from harness.fault_proxy import FaultProxy
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
PHASES = ("start-up", "bind", "mid-bind", "sync", "copy", "release", "sweep", "revoke", "mid-revoke")
#: the hosts with a real BMC (the others' BMC address leads nowhere)
BMC_HOSTS = ("kb-h00", "kb-h03", "kb-h06", "kb-h09", "kb-h12")
#: of these, the one whose BMC keeps its accounts in fixed slots (a revoked account's slot is emptied)
SLOT_HOST = "kb-h09"
#: where the collection records the BMC accounts it made on a host, and the prefix of their user names
LEDGER = "baremetal.tenancy/bmc-accounts"
PREFIX = "bmt-"
#: seconds the BMCs hold each answer in the rounds whose kill is aimed at a revocation
SLOW_ANSWERS = 0.5
#: share of the rounds with an account to revoke whose kill is aimed at the revocation
AIMED = 0.2


# -- the BMCs -------------------------------------------------------------------------------------


@dataclasses.dataclass
class PoolBmcs:
    """A BMC of its own for each host of ``BMC_HOSTS``: a sushy-tools emulator (one system) behind a proxy."""

    emulators: dict[str, sushy_harness.SushyEmulator]
    proxies: dict[str, FaultProxy]

    def credentials(self, host: str) -> dict:
        """``create_host``'s BMC arguments: the address through the proxy, the BMC's admin user and password."""
        emulator = self.emulators[host]
        system = emulator.bmcs[0]
        address = system.address.replace(emulator.base_url, self.proxies[host].url())
        return {"bmc_address": address, "username": system.username, "password": system.password}

    def accounts(self) -> dict[str, dict[str, str]]:
        """Host -> {user name: URI} of the accounts with the collection's prefix on its BMC (read as the BMC's
        admin through Redfish, not through the proxy)."""
        return {
            host: {
                a["UserName"]: a["@odata.id"].rstrip("/")
                for a in emulator.accounts()
                if str(a.get("UserName") or "").startswith(PREFIX)
            }
            for host, emulator in self.emulators.items()
        }

    def gone(self, host: str, username: str, uri: str) -> bool:
        """Whether the BMC of ``host`` no longer has the account (deleted, or its slot emptied)."""
        status, doc = self.emulators[host].request("GET", uri)
        return status == 404 or (isinstance(doc, dict) and doc.get("UserName") != username)

    def slow_answers(self, seconds: float) -> None:
        """Every BMC holds its answers ``seconds`` (0: answers at once)."""
        for proxy in self.proxies.values():
            proxy.set("slow-answers" if seconds else "pass", seconds)


def _start_bmc(workdir: Path, host: str) -> sushy_harness.SushyEmulator:
    systems = sushy_harness.profile_systems({"small": 1}, prefix=host, first_index=1200 + BMC_HOSTS.index(host))
    return sushy_harness.start_sushy(workdir / host, systems, account_slots=6 if host == SLOT_HOST else None)


@pytest.fixture(scope="module")
def bmcs(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("binder-kill-bmcs")
    with concurrent.futures.ThreadPoolExecutor(len(BMC_HOSTS)) as starting:
        futures = {host: starting.submit(_start_bmc, workdir, host) for host in BMC_HOSTS}
    emulators = {host: f.result() for host, f in futures.items() if f.exception() is None}
    proxies = {}
    try:
        for future in futures.values():
            if future.exception() is not None:
                raise future.exception()
        for host, emulator in emulators.items():
            proxies[host] = FaultProxy("127.0.0.1", emulator.service.port)
        yield PoolBmcs(emulators, proxies)
    finally:
        for proxy in proxies.values():
            proxy.stop()
        for emulator in emulators.values():
            emulator.stop()


@pytest.fixture(scope="module")
def pool(metal3_env, bmcs, tmp_path_factory):
    yield from make_pool(metal3_env, tmp_path_factory.mktemp("binder-kill"), bmcs)


def make_pool(env, workdir: Path, bmcs: PoolBmcs | None = None):
    """The pool (yields ``(env, workdir)``; deleted after), for the fixture of each suite that uses it.
    ``bmcs``: the hosts it names get those BMCs (address and credentials Secret)."""
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
            bmc = bmcs.credentials(name) if bmcs is not None and name in bmcs.emulators else {}
            env.create_host(INFRA, name, index=1200 + index, policy={"matches": "kb-.*"}, labels={"suite": "kb"}, **bmc)
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
    with env.api() as api:
        # the next suite's hosts of the same names get credentials Secrets of their own
        for index in range(HOSTS):
            _ignore(404, client.CoreV1Api(api).delete_namespaced_secret, "kb-h%02d-bmc-secret" % index, INFRA)


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


def ledger(host: dict | None) -> dict[str, dict]:
    """The BMC accounts a host's ledger records: user name -> entry (the test's own reading of the annotation)."""
    text = (((host or {}).get("metadata") or {}).get("annotations") or {}).get(LEDGER)
    return {entry["username"]: entry for entry in json.loads(text)} if text else {}


def bound_claim(claims, name: str, host: dict | None) -> tuple[str, str] | None:
    """The live claim bound to host ``name`` (its ``consumerRef`` names it, and it records the host), or ``None``."""
    ref = ((host or {}).get("spec") or {}).get("consumerRef")
    if not ref:
        return None
    key = (ref.get("namespace"), ref.get("name"))
    claim = claims.get(key)
    if (
        claim is None
        or claim["metadata"]["uid"] != ref.get("uid")
        or claim["metadata"].get("deletionTimestamp")
        or associated_host(claim) != name
    ):
        return None
    return key


def account_problems(claims, hosts, accounts) -> list[str]:
    """The BMC-account invariants, each broken one in words: on each host with a real BMC (``accounts``: the
    BMC's own prefixed accounts, :meth:`PoolBmcs.accounts`), the ledger and the BMC record the same accounts, each
    granted to the namespace of the live claim bound to the host."""
    problems = []
    for name, on_bmc in sorted(accounts.items()):
        recorded = ledger(hosts.get(name))
        holder = bound_claim(claims, name, hosts.get(name))
        for username, entry in sorted(recorded.items()):
            if on_bmc.get(username) != (entry.get("uri") or "").rstrip("/"):
                problems.append(
                    "host %s: its ledger records BMC account %s, which its BMC does not have" % (name, username)
                )
            if holder is None or entry.get("grantee") != holder[0]:
                problems.append(
                    "host %s: BMC account %s of %s leaked (the host is bound to %s)"
                    % (name, username, entry.get("grantee"), "%s/%s" % holder if holder else "no live claim")
                )
        for username in sorted(set(on_bmc) - set(recorded)):
            problems.append("host %s: BMC account %s is recorded by no ledger (leaked)" % (name, username))
    return problems


def pending_revocations(state, accounts) -> list[tuple[str, str, str]]:
    """``(host, user name, URI)`` of the recorded accounts still on their BMC whose grantee no longer holds the
    host (the claim deleted, or gone): what the next pass must revoke."""
    claims, hosts, dummy = state
    pending = []
    for name, on_bmc in sorted(accounts.items()):
        holder = bound_claim(claims, name, hosts.get(name))
        for username, entry in sorted(ledger(hosts.get(name)).items()):
            uri = (entry.get("uri") or "").rstrip("/")
            if on_bmc.get(username) == uri and (holder is None or entry.get("grantee") != holder[0]):
                pending.append((name, username, uri))
    return pending


def half_revoked(state, accounts) -> bool:
    """A ledger records an account its BMC no longer has: a revocation cut between the DELETE and the ledger write."""
    hosts = state[1]
    return any(set(ledger(hosts.get(name))) - set(on_bmc) for name, on_bmc in accounts.items())


def violations(env, bmcs: PoolBmcs | None = None) -> list[str]:
    """The invariants of a settled pool, each broken one in words (with ``bmcs``, those of the BMC accounts too)."""
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
    if bmcs is not None:
        problems.extend(account_problems(claims, hosts, bmcs.accounts()))
    return problems


# -- what a pass wrote ----------------------------------------------------------------------------


def pass_phases(before, after, accounts_before=None, accounts_after=None) -> set[str]:
    """The kinds of writes between two reads of the pool, and of the BMCs' accounts (no one but the binder wrote
    in between)."""
    claims0, hosts0, copies0 = before
    claims1, hosts1, copies1 = after
    phases = set()
    for name, on_bmc in (accounts_before or {}).items():
        deleted = set(on_bmc) - set((accounts_after or {}).get(name) or {})
        if deleted or set(ledger(hosts0.get(name))) - set(ledger(hosts1.get(name))):
            phases.add("revoke")
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


def delete_claim(env, key: tuple[str, str], force: bool = False) -> None:
    """The tenant deletes its claim; ``force``: the cluster admin drops its finalizer and deletes it."""
    namespace, name = key
    with env.api() if force else env.api(TENANTS[namespace]) as api:
        custom = client.CustomObjectsApi(api)
        if force:
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


def churn(env, rng: random.Random, round_number: int) -> None:
    claims, dummy, dummy2 = read_pool(env)
    live = [key for key, c in claims.items() if not c["metadata"].get("deletionTimestamp")]
    bound = [key for key in live if associated_host(claims[key])]
    for key in rng.sample(live, min(len(live), rng.randint(1, 3))):
        delete_claim(env, key)
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
        delete_claim(env, rng.choice(bound), force=True)
    room = MAX_CLAIMS - len(live) + 2
    for number in range(rng.randint(2, 4) if room > 0 else 0):
        namespace = rng.choice(sorted(TENANTS))
        spec = {"online": rng.random() < 0.5, "hostSelector": SELECTOR}
        if rng.random() < 0.6:
            spec.update(image=IMAGE, userData={"name": "ud"}, networkData={"name": "nd"}, online=True)
        env.create_claim(namespace, "r%02d-%d" % (round_number, number), spec, identity=TENANTS[namespace])


# -- the owner's BMC accounts ----------------------------------------------------------------------


def _bmc_account_code():
    """The collection's ``bmc_account`` code (module_utils), the ledger of a BareMetalHost, and the module's option
    defaults."""
    root = str(collections_root())
    if root not in sys.path:
        sys.path.insert(0, root)
    from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.bmc_ledger import Metal3Host
    from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import accounts
    from ansible_collections.baremetal.tenancy.plugins.modules.bmc_account import BmcAccountModule

    return accounts, Metal3Host, {key: spec.get("default") for key, spec in BmcAccountModule.argument_spec.items()}


class _Grant:
    """What ``run_bmc_account`` asks of the ``bmc_account`` module: its options, backend, check mode and result."""

    backend = "metal3"
    check_mode = False

    def __init__(self, params: dict):
        self.params = params
        self.result = {"changed": False}

    def changed(self, value=True) -> None:
        self.result["changed"] = self.result["changed"] or bool(value)

    def set_diff(self, before, after) -> None:
        pass


def grant(env, host: str, grantee: str) -> str:
    """The owner's ``bmc_account`` task (``host_name``, ``namespace``, ``grantee``, ``expires_in``) as the admin, run
    in this process by the module's own code; returns the account's user name (the password is dropped)."""
    accounts, metal3_host, defaults = _bmc_account_code()
    module = _Grant(dict(defaults, host_name=host, namespace=INFRA, grantee=grantee, expires_in="2h"))
    # sushy logs its fallback to basic auth (the emulator has no sessions) at each connection: not in this output
    sushy_log = logging.getLogger("sushy")
    level = sushy_log.level
    sushy_log.setLevel(logging.CRITICAL)
    try:
        with env.api() as api:
            accounts.run_bmc_account(module, lambda name: metal3_host(api, INFRA, name))
    finally:
        sushy_log.setLevel(level)
    username = module.result.get("username") or ""
    assert username.startswith(PREFIX) and module.result["changed"], {
        key: value for key, value in module.result.items() if key != "password"
    }
    return username


def bmc_churn(env, bmcs: PoolBmcs, rng: random.Random, round_number: int) -> int:
    """The owner grants BMC accounts to the tenants, a tenant gives one such claim back; returns the grants.

    On most hosts with a real BMC bound to a live claim whose namespace has no account there yet, the owner grants
    that namespace one. Of the claims holding an account granted in an earlier round, one is deleted (most rounds)
    by its tenant, or every fourth time force-deleted by the cluster admin."""
    claims, hosts, dummy = read_pool(env)
    holding, granted = [], 0
    for name in sorted(bmcs.emulators):
        key = bound_claim(claims, name, hosts.get(name))
        if key is None:
            continue
        if any(entry.get("grantee") == key[0] for entry in ledger(hosts[name]).values()):
            holding.append(key)
        elif rng.random() < 0.8:
            grant(env, name, key[0])
            granted += 1
    if holding and rng.random() < 0.7:
        delete_claim(env, rng.choice(holding), force=round_number % 4 == 0)
    return granted


def wait_for_revocation(bind: KillablePlaybook, bmcs: PoolBmcs, pending, timeout: float = 600) -> bool:
    """Poll the BMCs (as their admin) until one of the ``pending`` accounts is gone (``True``); ``False`` when the
    module ended first."""
    deadline = time.monotonic() + timeout
    looked = time.monotonic()
    while time.monotonic() < deadline:
        if any(bmcs.gone(*account) for account in pending):
            return True
        if time.monotonic() - looked > 0.5:
            if not bind.module_running("host_bind"):
                return False
            looked = time.monotonic()
        time.sleep(0.01)
    return False


# -- the test -------------------------------------------------------------------------------------


def test_a_binder_killed_at_random_points_is_repaired_by_one_clean_pass(pool, bmcs):
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
    assert not violations(env, bmcs)

    hits = collections.Counter()
    kills = []
    late = grants = aimed_kills = 0
    round_number = 0
    while len(kills) < KILLS:
        round_number += 1
        assert round_number < KILLS * 2, "too many passes ended before their kill: %d" % late
        grants += bmc_churn(env, bmcs, rng, round_number)
        churn(env, rng, round_number)
        before = read_pool(env)
        accounts_before = bmcs.accounts()
        pending = pending_revocations(before, accounts_before)
        draw = rng.random()
        aimed = bool(pending) and rng.random() < AIMED
        if aimed:
            # the BMCs answer late: a kill as soon as one of them no longer has an account to revoke lands
            # between the Redfish DELETE and the ledger write
            bmcs.slow_answers(SLOW_ANSWERS)
        try:
            killed = BindPass(env, workdir / ("kill-%03d" % round_number))
            in_module = aimed or draw < 0.85
            if aimed:
                killed.wait_module("host_bind")
                module_ended = not wait_for_revocation(killed, bmcs, pending)
            elif in_module:
                killed.wait_module("host_bind")
                time.sleep(rng.uniform(0, module_seconds))
                module_ended = not killed.module_running("host_bind")
            else:
                time.sleep(rng.uniform(0, 1.5))
                module_ended = False
            if not killed.kill() or module_ended:
                # the pass was over: not a kill in any phase (the next round's passes repair what it left)
                late += 1
                continue
        finally:
            bmcs.slow_answers(0)
        after_kill = read_pool(env)
        accounts_after = bmcs.accounts()
        phases = pass_phases(before, after_kill, accounts_before, accounts_after) or {"start-up"}
        if half_bound(after_kill) and not half_bound(before):
            phases.add("mid-bind")
        if half_revoked(after_kill, accounts_after) and not half_revoked(before, accounts_before):
            phases.add("mid-revoke")
        hits.update(phases)
        aimed_kills += aimed
        cleaner = BindPass(env, workdir / ("clean-%03d" % round_number))
        cleaner.wait_module("host_bind")
        seconds = cleaner.module_seconds("host_bind")
        clean = cleaner.result()
        assert not clean["errors"], clean["errors"]
        problems = violations(env, bmcs)
        kills.append({"round": round_number, "aimed": aimed, "phases": sorted(phases), "problems": problems})
        assert not problems, "after kill %d (phases %s), one clean pass left: %s" % (
            len(kills),
            sorted(phases),
            problems,
        )
        if seconds:
            module_seconds = 0.7 * module_seconds + 0.3 * seconds

    print("binder kills: %d (%d more passes had ended before their kill: not counted)" % (len(kills), late))
    print(
        "BMC accounts granted: %d; kills aimed at a revocation (BMC answers held %.1f s): %d"
        % (grants, SLOW_ANSWERS, aimed_kills)
    )
    print("kills per phase: " + ", ".join("%s %d" % (phase, hits[phase]) for phase in PHASES))
    (workdir / "kills.json").write_text(json.dumps({"kills": kills, "per_phase": dict(hits)}, indent=1))
    assert len(kills) >= 50
    assert len([phase for phase in PHASES if hits[phase] and phase != "start-up"]) >= 3, hits
    assert hits["revoke"] >= 1, hits
