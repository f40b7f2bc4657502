"""host_bind on baremetal-operator's own HostClaim dialect: four binders at once, tampered bindings, and no BMC
data in what tenants read, on the real operator with BMO's CRDs and webhooks (fixtures_bmo.bmo_dialect).

The proposal's dialect has the same suites (test_metal3_concurrency, test_metal3_security). Here the claims are
in BMO's shape (``spec.poweredOn``), written as kubectl writes them, the hosts are shared by a HostDeployPolicy,
and the tenants' namespaces are ones upstream's own HostClaim controller does not watch (it runs on the same
cluster for test_bmo_hostclaim_upstream).

- four ``metal3_bind_claims.yml`` processes race over 16 claims of three tenants for 12 real hosts, twice: every
  host bound at most once, to an existing claim (uid), no claim twice, ``status.bareMetalHost`` and
  ``Associated`` agree with ``consumerRef``, the other claims wait with upstream's own words, and every claim
  carries upstream's finalizer;
- a tenant's forged binding label and host-status annotation are erased, never honoured; a tenant cannot write
  a claim's status (where the binding lives), read hosts, policies or the hosts' Secrets;
- nothing a tenant reads of its claims repeats BMC data (address, its host part, credentials Secret, user,
  password, system id), in any spelling; a host exporting its BMC's system id, address or port
  (``export.hostclaim.metal3.io/oob-system``) has them withheld (reported to the owner by kind), never on
  the claim, in host_claim_info (``-vvv`` too) or the inventory, while an innocent exported annotation crosses.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest
from fixtures_bmo import create_hosts, tenant_namespace
from fixtures_inventory import ALL_HOST_VARIABLES, inventory, scan, write_source
from harness.ansible import REPO_ROOT, VENV_BIN, ansible_env, localhost_play, run_playbook
from kubernetes import client

pytestmark = pytest.mark.real_bmo

GROUP, VERSION = "metal3.io", "v1alpha1"
INFRA = "bc-infra"
TENANTS = {"bc-a": "tenant-a", "bc-b": "tenant-b", "bc-c": "tenant-c"}
HOSTS, CLAIMS, BINDERS, REPETITIONS = 12, 16, 4, 2
FIRST_BMC = 4
MERGE = "application/merge-patch+json"
NAMES = ["bc-h%02d" % index for index in range(HOSTS)]
EXPORT = "export.hostclaim.metal3.io/"


@pytest.fixture(scope="module")
def pool(bmo_dialect_rbac, tmp_path_factory):
    env, stack = bmo_dialect_rbac
    with env.api("admin") as api:
        for namespace, identity in TENANTS.items():
            tenant_namespace(api, namespace, identity)
        client.CustomObjectsApi(api).create_namespaced_custom_object(
            GROUP,
            VERSION,
            INFRA,
            "hostdeploypolicies",
            {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "HostDeployPolicy",
                "metadata": {"name": "tenants", "namespace": INFRA},
                "spec": {"hostClaimNamespaces": {"names": sorted(TENANTS)}},
            },
        )
        create_hosts(api, stack, INFRA, dict((name, (FIRST_BMC + i, "concurrency")) for i, name in enumerate(NAMES)))
    return env, stack, tmp_path_factory.mktemp("bc")


def claims_of(env, namespace, identity="admin"):
    with env.api(identity) as api:
        return client.CustomObjectsApi(api).list_namespaced_custom_object(GROUP, VERSION, namespace, "hostclaims")[
            "items"
        ]


def hosts_of(env):
    with env.api("admin") as api:
        return client.CustomObjectsApi(api).list_namespaced_custom_object(GROUP, VERSION, INFRA, "baremetalhosts")[
            "items"
        ]


def create_claim(env, namespace, name, identity="admin", **spec):
    body = {"poweredOn": False, "hostSelector": {"matchLabels": {"pool": "concurrency"}}}
    body.update(spec)
    with env.api(identity) as api:
        client.CustomObjectsApi(api).create_namespaced_custom_object(
            GROUP,
            VERSION,
            namespace,
            "hostclaims",
            {"apiVersion": f"{GROUP}/{VERSION}", "kind": "HostClaim", "metadata": {"name": name}, "spec": body},
        )


def reset(env):
    """Drop every claim (finalizers removed) and free every host, as the admin."""
    with env.api("admin") as api:
        objects = client.CustomObjectsApi(api)
        for namespace in TENANTS:
            for claim in claims_of(env, namespace):
                name = claim["metadata"]["name"]
                objects.patch_namespaced_custom_object(
                    GROUP, VERSION, namespace, "hostclaims", name, {"metadata": {"finalizers": None}}
                )
                objects.delete_namespaced_custom_object(GROUP, VERSION, namespace, "hostclaims", name)
        for host in hosts_of(env):
            if host["spec"].get("consumerRef"):
                objects.patch_namespaced_custom_object(
                    GROUP, VERSION, INFRA, "baremetalhosts", host["metadata"]["name"], {"spec": {"consumerRef": None}}
                )
    deadline = time.monotonic() + 30
    while any(claims_of(env, namespace) for namespace in TENANTS):
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
    workdir.mkdir(parents=True, exist_ok=True)
    run_env = ansible_env(env.ansible_env("binder"), workdir)
    run_env.update(ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_JSON_INDENT="0")
    return subprocess.Popen(
        argv, env=run_env, cwd=str(workdir), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def bind(env, workdir, name="bind"):
    task = {"name": name, "baremetal.tenancy.host_bind": {"namespaces": sorted(TENANTS), "host_namespaces": [INFRA]}}
    run = run_playbook(localhost_play([task]), env.ansible_env("binder"), workdir / name)
    assert run.ok, run.explain()
    return run.result(name)


def conditions(claim):
    return dict((c["type"], c) for c in (claim.get("status") or {}).get("conditions") or [])


def test_four_binders_at_once_on_bmos_dialect(pool):
    env, _stack, workdir = pool
    for repetition in range(REPETITIONS):
        reset(env)
        for number in range(CLAIMS):
            create_claim(env, sorted(TENANTS)[number % 3], "r%d-c%02d" % (repetition, number))
        binders = [start_binder(env, number, workdir / ("r%d-b%d" % (repetition, number))) for number in range(BINDERS)]
        outputs = [binder.communicate(timeout=600) for binder in binders]
        for binder, (stdout, stderr) in zip(binders, outputs):
            assert binder.returncode == 0, stdout[-4000:] + stderr[-2000:]
        claims = dict(
            ((c["metadata"]["namespace"], c["metadata"]["name"]), c)
            for namespace in TENANTS
            for c in claims_of(env, namespace)
        )
        assert len(claims) == CLAIMS
        refs = [h["spec"]["consumerRef"] for h in hosts_of(env) if h["spec"].get("consumerRef")]
        assert len(refs) == HOSTS and len(set((r["namespace"], r["name"]) for r in refs)) == HOSTS
        bound_to = {}
        for host in hosts_of(env):
            ref = host["spec"].get("consumerRef")
            if ref:
                assert claims[(ref["namespace"], ref["name"])]["metadata"]["uid"] == ref["uid"]
                bound_to[(ref["namespace"], ref["name"])] = host["metadata"]["name"]
        for key, claim in claims.items():
            assert claim["metadata"]["finalizers"] == ["metal3.io/hostclaim"]
            associated = conditions(claim)["Associated"]
            if key in bound_to:
                assert claim["status"]["bareMetalHost"] == {"namespace": INFRA, "name": bound_to[key]}
                assert (associated["status"], associated["reason"]) == ("True", "BareMetalHostAssociated")
            else:
                assert "bareMetalHost" not in claim["status"]
                assert (associated["status"], associated["reason"], associated["message"]) == (
                    "False",
                    "NoBareMetalHost",
                    "No available host found: requeuing.",
                )
        assert len(bound_to) == HOSTS
    reset(env)


def test_a_forged_binding_is_erased_and_tenants_reach_nothing_of_the_owner(pool):
    env, stack, workdir = pool
    create_claim(env, "bc-b", "victim", identity="tenant-b")
    create_claim(env, "bc-a", "forger", identity="tenant-a", hostSelector={"matchLabels": {"pool": "nowhere"}})
    first = bind(env, workdir, "first")
    assert first["errors"] == []
    victim_host = next(c["host"] for c in first["claims"] if c["name"] == "victim")
    forged = {
        "metadata": {
            "labels": {"hostclaim.metal3.io/host": victim_host},
            "annotations": {
                "hostclaim.metal3.io/host-status": json.dumps(
                    {"addresses": [{"type": "InternalIP", "address": "192.0.2.66"}]}
                )
            },
        }
    }
    with env.api("tenant-a") as api:
        objects = client.CustomObjectsApi(api)
        objects.patch_namespaced_custom_object(GROUP, VERSION, "bc-a", "hostclaims", "forger", forged)
        # the binding itself lives in the status, which tenants cannot write
        with pytest.raises(client.exceptions.ApiException) as refused:
            objects.patch_namespaced_custom_object_status(
                GROUP,
                VERSION,
                "bc-a",
                "hostclaims",
                "forger",
                {"status": {"bareMetalHost": {"namespace": INFRA, "name": victim_host}}},
            )
        assert refused.value.status == 403
        for call in (
            lambda: objects.list_namespaced_custom_object(GROUP, VERSION, INFRA, "baremetalhosts"),
            lambda: objects.list_namespaced_custom_object(GROUP, VERSION, INFRA, "hostdeploypolicies"),
            lambda: objects.list_namespaced_custom_object(GROUP, VERSION, INFRA, "hardwaredata"),
            lambda: client.CoreV1Api(api).list_namespaced_secret(INFRA),
            lambda: objects.list_namespaced_custom_object(GROUP, VERSION, "bc-b", "hostclaims"),
        ):
            with pytest.raises(client.exceptions.ApiException) as denied:
                call()
            assert denied.value.status == 403
    # the victim's host exports its BMC's system id (three spellings), address and port, and an innocent value
    bmc = stack.bmcs[FIRST_BMC + NAMES.index(victim_host)]
    exported = {
        EXPORT + "oob-system": bmc.uuid,
        EXPORT + "oob-system-upper": bmc.uuid.replace("-", "").upper(),
        EXPORT + "oob-address": bmc.address.split("://")[1],
        EXPORT + "oob-port": bmc.base_url.rsplit(":", 1)[1],
        EXPORT + "asset": "serial 9100012, row 8",
    }
    with env.api("admin") as api:
        client.CustomObjectsApi(api).patch_namespaced_custom_object(
            GROUP, VERSION, INFRA, "baremetalhosts", victim_host, {"metadata": {"annotations": exported}}
        )
    second = bind(env, workdir, "second")
    assert second["errors"] == []
    reasons = dict(
        (item["key"], item["reason"]) for item in second["withheld"] if item["host"] == "%s/%s" % (INFRA, victim_host)
    )
    assert (
        reasons[EXPORT + "oob-system"] == reasons[EXPORT + "oob-system-upper"] == "the value repeats the BMC system id"
    )
    assert reasons[EXPORT + "oob-address"] == "the value repeats the BMC address"
    assert reasons[EXPORT + "oob-port"] == "the value repeats the BMC address port"
    assert not [item for item in second["withheld"] if bmc.uuid in json.dumps(item)]
    _exported_bmc_data_never_reaches_the_tenant(env, workdir, bmc)
    forger = next(c for c in claims_of(env, "bc-a", "tenant-a") if c["metadata"]["name"] == "forger")
    assert "hostclaim.metal3.io/host" not in (forger["metadata"].get("labels") or {})
    assert "hostclaim.metal3.io/host-status" not in (forger["metadata"].get("annotations") or {})
    assert "bareMetalHost" not in forger["status"]
    with env.api("admin") as api:
        host = client.CustomObjectsApi(api).get_namespaced_custom_object(
            GROUP, VERSION, INFRA, "baremetalhosts", victim_host
        )
    assert host["spec"]["consumerRef"]["namespace"] == "bc-b"

    # nothing tenants read of their claims repeats BMC data (the binder's matcher: every spelling)
    values = []
    for index in range(FIRST_BMC, FIRST_BMC + HOSTS):
        values += bmc_needles(stack.bmcs[index])
    values += ["%s-bmc" % name for name in NAMES]
    for namespace, identity in (("bc-a", "tenant-a"), ("bc-b", "tenant-b")):
        assert scan(json.dumps(claims_of(env, namespace, identity)), values) == [], namespace
    reset(env)


def bmc_needles(bmc):
    """A BMC's data as the scans look for it: address, ``127.0.0.1:<port>`` (every service of the test bed listens
    on 127.0.0.1: not the host part alone), the system id (any spelling), user, password, and the port as a whole
    value."""
    port = bmc.base_url.rsplit(":", 1)[1]
    return [bmc.address, bmc.base_url.split("://")[1], bmc.uuid, bmc.username, bmc.password, ("BMC address port", port)]


def _exported_bmc_data_never_reaches_the_tenant(env, workdir, bmc):
    """host_bind imported the innocent annotation onto the victim's claim and none of the BMC's: not on the stored
    claim, not in host_claim_info's result or its -vvv output, not in the inventory."""
    needles = bmc_needles(bmc)
    victim = next(c for c in claims_of(env, "bc-b", "tenant-b") if c["metadata"]["name"] == "victim")
    annotations = victim["metadata"].get("annotations") or {}
    assert annotations.get(EXPORT + "asset") == "serial 9100012, row 8"
    assert not [key for key in annotations if key.startswith(EXPORT + "oob-")], annotations
    assert scan(json.dumps(victim), needles) == []
    task = {"name": "info", "baremetal.tenancy.host_claim_info": {"namespace": "bc-b", "name": "victim"}}
    run = run_playbook(localhost_play([task]), env.ansible_env("tenant-b"), workdir / "info-b")
    assert run.ok, run.explain()
    view = run.result("info")["claims"][0]
    assert view["annotations"].get(EXPORT + "asset") == "serial 9100012, row 8"
    assert scan(json.dumps(run.result("info")), needles) == []
    verbose = run_playbook(
        localhost_play([task]), env.ansible_env("tenant-b"), workdir / "info-b-vvv", verbosity=3, callback="default"
    )
    assert verbose.ok, verbose.explain()
    assert "AnsiballZ" in verbose.stdout and "serial 9100012, row 8" in verbose.stdout
    assert scan(verbose.stdout + verbose.stderr, needles) == []
    source = write_source(
        workdir / "inv-b" / "b.claimed_hosts.yml", namespaces=["bc-b"], host_variables=ALL_HOST_VARIABLES
    )
    data, text = inventory(source, env.ansible_env("tenant-b"), workdir / "inv-b")
    assert data["_meta"]["hostvars"]["victim"]["tenancy_annotations"][EXPORT + "asset"] == "serial 9100012, row 8"
    assert scan(text, needles) == []
