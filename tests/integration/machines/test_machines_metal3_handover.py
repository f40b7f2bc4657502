"""A host changes hands on Metal3: the next tenant finds nothing of the previous one, checked by logging in.

Everything above the hardware is real (``metal3_machines``): the apiserver,
Metal3's baremetal-operator, Ironic on PostgreSQL, FakeIPA as the agent, and
the hosts are test-bed machines (sshd in a network namespace over a disk of
their own). Hosts go the ``direct`` route: FakeIPA's ``write_image`` hands the
config drive (the tenant's user data) to the machine, its erasing clean steps
wipe the machine's disk. Tenants act with their own kubeconfigs through the
collection (``host_claim``, ``host_claim_info``, ``host_release``); the owner's
binder (``metal3_bind_claims.yml``) runs in the background with the binder's
credentials, as an owner runs it.

Ordered steps (one module, the hosts move from step to step):

1. tenant A claims three hosts (``keep``: cleaned as configured; ``dirty``: the
   owner switched its cleaning off; ``broken``: its disk cannot be erased) and
   tenant B one (``other``), each with its own SSH key in its user data. Each
   logs in on its hosts and leaves traces; neither key opens the other
   tenant's host, under any user (invariant 6: keys never cross tenants);
2. A releases its three hosts: ``keep`` is cleaned (the machine's disk wiped by
   the agent's clean step) and back in the pool; ``dirty`` is back without
   cleaning; ``broken``'s cleaning fails: the host stays out of the pool, the
   owner reads the reason on the BareMetalHost and in ``host_bind``'s result,
   and a claim for it stays pending;
3. the owner's ``host_bind`` names ``dirty`` as a host handed to tenants without
   cleaning, in its result and a warning;
4. B claims ``keep`` and ``dirty``: on ``keep`` B finds no trace of A (file,
   root-owned file, user, host name) and A's key logs in as nobody; on ``dirty``
   (the negative control) the same checks see A's traces.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import threading
import time

import pytest
from fixtures_machines import binder_loop
from fixtures_metal3 import SHARING_ANNOTATION, sharing_value
from harness import cloud_config

pytestmark = [pytest.mark.machines, pytest.mark.real_bmo]

TENANT_A, TENANT_B = "mh-a", "mh-b"
# machine index of the metal3_machines stack -> host name (label slot=<name>); machine 0 is test_machines_agent's
HOSTS = {"keep": 1, "dirty": 2, "broken": 3, "other": 4}
DISK_FAILURE = "disk /dev/sda: secure erase failed, the drive reports a locked security state"
TRACES = (
    "id -u tenant-a >/dev/null 2>&1 && echo user:tenant-a; "
    "test -e /home/tenant-a/notes && echo file:notes; "
    "test -e /srv/left-by-a && echo file:/srv/left-by-a; "
    "echo hostname:$(hostname)"
)
LOGIN_USERS = ("tenant-a", "tenant-b", cloud_config.DEFAULT_USER, "root")
TIMINGS: dict[str, float] = {}


@dataclasses.dataclass
class Handover:
    env: object  # fixtures_metal3.Metal3Env on the machines stack
    bed: object  # harness.metal3_machines.Metal3Machines
    keys: dict  # tenant namespace -> (private key path, public key)
    addresses: dict = dataclasses.field(default_factory=dict)  # claim name -> the address the tenant sees

    def machine(self, host: str):
        return self.bed.machine(HOSTS[host])


def user_data(user: str, key: str, hostname: str) -> str:
    config = {
        "hostname": hostname,
        "users": ["default", {"name": user, "ssh_authorized_keys": [key]}],
        "ssh_authorized_keys": [key],
    }
    return "#cloud-config\n" + json.dumps(config)


def keypair(directory, name: str) -> tuple[str, str]:
    path = directory / f"id_{name}"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"{name}@test", "-f", str(path)], check=True)
    return str(path), path.with_suffix(".pub").read_text().strip()


@pytest.fixture(scope="module")
def handover(metal3_machines, metal3_env, tmp_path_factory):
    bed = metal3_machines
    workdir = tmp_path_factory.mktemp("handover")
    env = dataclasses.replace(metal3_env, workdir=workdir, operator=bed.stack, pool=None, watched=(bed.namespace,))
    env.tenant_namespace(TENANT_A, "tenant-a")
    env.tenant_namespace(TENANT_B, "tenant-b")
    keys = {TENANT_A: keypair(workdir, "tenant-a"), TENANT_B: keypair(workdir, "tenant-b")}
    t0 = time.monotonic()
    with env.api() as api:
        for name, index in HOSTS.items():
            bed.create_host(
                api,
                name,
                index,
                cleaning="disabled" if name == "dirty" else "metadata",
                labels={"slot": name},
                annotations={SHARING_ANNOTATION: sharing_value({"matches": "mh-.*"})},
            )
        bed.wait_state(api, list(HOSTS), "available")
    TIMINGS["hosts available"] = time.monotonic() - t0
    with binder_loop(env.kube, [TENANT_A, TENANT_B], workdir / "binder"):
        yield Handover(env, bed, keys)
    print("hand-over on Metal3 through FakeIPA:", {k: round(v, 1) for k, v in TIMINGS.items()})


def secret_step(namespace: str, identity: str, name: str, data: str) -> dict:
    return {
        "name": f"secret {name}",
        "as": identity,
        "kubernetes.core.k8s": {
            "definition": {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": name, "namespace": namespace},
                "stringData": {"userData": data},
            }
        },
    }


def claim_tasks(h: Handover, namespace: str, identity: str, user: str, claims: dict[str, str], hostname: str):
    """Tasks: the tenant's user-data Secret, then its claims (claim name -> host slot), created first and then
    waited for together (ready), then the tenant's view of them."""
    secret = f"{user}-user-data"
    image = h.bed.image()
    image = {"url": image["url"], "checksum": image["checksum"], "checksum_type": "sha256", "format": "raw"}
    common = dict(namespace=namespace, image=image, user_data_secret=secret, online=True)
    steps = [secret_step(namespace, identity, secret, user_data(user, h.keys[namespace][1], hostname))]
    for name, slot in claims.items():
        steps.append(
            {
                "name": f"claim {name}",
                "as": identity,
                "baremetal.tenancy.host_claim": dict(common, name=name, host_selector={"matchLabels": {"slot": slot}}),
            }
        )
    for name, slot in claims.items():
        steps.append(
            {
                "name": f"ready {name}",
                "as": identity,
                "baremetal.tenancy.host_claim": dict(
                    common,
                    name=name,
                    host_selector={"matchLabels": {"slot": slot}},
                    wait=True,
                    wait_for="ready",
                    wait_timeout=900,
                ),
            }
        )
    return steps


def claim_and_wait(h: Handover, namespace: str, identity: str, user: str, claims: dict[str, str], hostname: str):
    run = h.env.steps(claim_tasks(h, namespace, identity, user, claims, hostname), identity=identity, timeout=1200)
    return check_ready(h, run, claims)


def check_ready(h: Handover, run, claims: dict[str, str]):
    """Each claim is ready on its host; records the address the tenant sees (``host_claim``'s view)."""
    assert run.ok, run.explain()
    for name, slot in claims.items():
        view = run.result(f"ready {name}")["claim"]
        assert view["ready"] is True and view["host"] == slot, view
        (address,) = [a["address"] for a in view["addresses"] if a["type"] == "InternalIP"]
        assert address == h.machine(slot).ip  # what the hardware reports reaches the tenant
        h.addresses[name] = address
        h.machine(slot).wait_running(True, timeout=120)  # the BMC is On: the machine follows within seconds
    return run


def login(h: Handover, slot: str, namespace: str, user: str, command: str = "true", claim: str | None = None):
    key = h.keys[namespace][0]
    machine = h.machine(slot)
    return machine.ssh(user, key, command, address=h.addresses.get(claim) if claim else None)


def refused_everywhere(h: Handover, slot: str, namespace: str) -> list[str]:
    """The users as whom ``namespace``'s key logs in on ``slot`` (empty: refused as every user)."""
    opened = []
    for user in LOGIN_USERS:
        result = login(h, slot, namespace, user)
        if result.returncode != 255 or "Permission denied" not in result.stderr:
            opened.append(f"{user}: rc {result.returncode} {result.stderr.strip()[:200]}")
    return opened


def test_1_tenants_claim_log_in_and_keys_never_cross(handover):
    h = handover
    t0 = time.monotonic()
    # Both tenants at once: the hosts provision in parallel.
    runs = {}

    def claim(namespace, identity, user, claims, hostname):
        runs[namespace] = h.env.steps(
            claim_tasks(h, namespace, identity, user, claims, hostname), identity=identity, timeout=1200
        )

    tenant_b = threading.Thread(
        target=claim, args=(TENANT_B, "tenant-b", "tenant-b", {"b-other": "other"}, "host-of-b")
    )
    tenant_b.start()
    claim_and_wait(
        h, TENANT_A, "tenant-a", "tenant-a", {"a-keep": "keep", "a-dirty": "dirty", "a-broken": "broken"}, "host-of-a"
    )
    tenant_b.join(timeout=1300)
    check_ready(h, runs[TENANT_B], {"b-other": "other"})
    TIMINGS["claimed and provisioned"] = time.monotonic() - t0

    for claim_name, slot in (("a-keep", "keep"), ("a-dirty", "dirty"), ("a-broken", "broken")):
        wrote = login(h, slot, TENANT_A, "tenant-a", "hostname; echo private > ~/notes && cat ~/notes", claim_name)
        assert wrote.returncode == 0, (wrote.stderr, h.machine(slot).describe())
        assert wrote.stdout.split() == ["host-of-a", "private"]
        as_root = login(
            h, slot, TENANT_A, cloud_config.DEFAULT_USER, "echo a was here | sudo -n tee /srv/left-by-a", claim_name
        )
        assert as_root.returncode == 0, as_root.stderr
        assert refused_everywhere(h, slot, TENANT_B) == []
    mine = login(h, "other", TENANT_B, "tenant-b", "hostname", "b-other")
    assert mine.returncode == 0 and mine.stdout.strip() == "host-of-b", (mine, h.machine("other").describe())
    assert refused_everywhere(h, "other", TENANT_A) == []
    assert "tenant-a" not in (h.machine("other").disk / "etc" / "passwd").read_text()


def test_2_release_cleans_and_a_failed_cleaning_keeps_the_host_out_of_the_pool(handover):
    h = handover
    broken = h.machine("broken")
    broken.wipe_failure = DISK_FAILURE
    events_before = {slot: list(h.machine(slot).events) for slot in ("keep", "dirty", "broken")}
    t0 = time.monotonic()
    run = h.env.steps(
        [
            {
                "name": f"release {name}",
                "as": "tenant-a",
                "baremetal.tenancy.host_release": {"name": name, "namespace": TENANT_A},
            }
            for name in ("a-keep", "a-dirty", "a-broken")
        ],
        identity="tenant-a",
    )
    assert run.ok, run.explain()
    with h.env.api() as api:
        hosts = h.bed.wait_hosts(
            api,
            ["keep", "dirty"],
            lambda host: (
                host is not None
                and (host.get("status") or {}).get("provisioning", {}).get("state") == "available"
                and not host["spec"].get("consumerRef")
            ),
            "back in the pool",
            timeout=900,
        )
        TIMINGS["released (cleaned)"] = time.monotonic() - t0
        failed = h.bed.wait_hosts(
            api,
            ["broken"],
            lambda host: host is not None and (host.get("status") or {}).get("errorMessage"),
            "in error",
            timeout=900,
        )["broken"]
    new_events = {slot: h.machine(slot).events[len(before) :] for slot, before in events_before.items()}
    assert "wipe erase_devices_metadata" in new_events["keep"], new_events
    assert not [e for e in new_events["dirty"] if e.startswith("wipe")], new_events  # cleaning off: never wiped
    assert f"wipe refused: {DISK_FAILURE}" in new_events["broken"], new_events
    assert all("consumerRef" not in hosts[name]["spec"] for name in ("keep", "dirty"))
    # The owner reads why on the host ...
    status = failed["status"]
    assert DISK_FAILURE in status["errorMessage"], status
    assert failed["spec"]["consumerRef"]["name"] == "a-broken"  # still bound: out of the pool
    assert h.env.claim(TENANT_A, "a-keep") is None and h.env.claim(TENANT_A, "a-dirty") is None
    assert h.env.claim(TENANT_A, "a-broken")["metadata"]["deletionTimestamp"]
    # ... and in the binder's result; a claim for that host stays pending.
    # (baremetal-operator retries the cleaning, clearing the error while it runs: a pass may fall in between)
    deadline = time.monotonic() + 300
    while True:
        result = h.env.bind([TENANT_A])
        (releasing,) = [c for c in result["claims"] if c["name"] == "a-broken"]
        assert releasing["action"] == "releasing", releasing
        if releasing["reason"] == "DeprovisioningFailed" or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert DISK_FAILURE in releasing["message"], releasing
    run = h.env.steps(
        [
            {
                "name": "claim the broken host",
                "as": "tenant-b",
                "baremetal.tenancy.host_claim": {
                    "name": "b-broken",
                    "namespace": TENANT_B,
                    "host_selector": {"matchLabels": {"slot": "broken"}},
                },
            }
        ],
        identity="tenant-b",
    )
    assert run.ok, run.explain()
    result = h.env.bind([TENANT_B])
    (pending,) = [c for c in result["claims"] if c["name"] == "b-broken"]
    assert pending["action"] == "pending", pending


def test_3_the_owner_is_warned_about_hosts_without_cleaning(handover):
    h = handover
    run = h.env.playbook("binder", [{"name": "bind", "baremetal.tenancy.host_bind": {"namespaces": [TENANT_B]}}])
    result = run.result("bind")
    assert result["cleaning_disabled"] == [f"{h.bed.namespace}/dirty"], result["cleaning_disabled"]
    warnings = " ".join(result.get("warnings") or [])
    assert f"automatedCleaningMode disabled ({h.bed.namespace}/dirty)" in warnings, warnings


def test_4_the_next_tenant_finds_nothing_of_the_previous_one_unless_cleaning_is_off(handover):
    h = handover
    t0 = time.monotonic()
    claim_and_wait(h, TENANT_B, "tenant-b", "tenant-b", {"b-keep": "keep", "b-dirty": "dirty"}, "host-of-b")
    TIMINGS["next tenant provisioned"] = time.monotonic() - t0
    found = {}
    for claim_name, slot in (("b-keep", "keep"), ("b-dirty", "dirty")):
        result = login(h, slot, TENANT_B, "tenant-b", TRACES, claim_name)
        assert result.returncode == 0, (result.stderr, h.machine(slot).describe())
        left = result.stdout.split()
        for user in LOGIN_USERS:
            if login(h, slot, TENANT_A, user).returncode == 0:
                left.append(f"login:{user}")
        found[slot] = left
    assert found["keep"] == ["hostname:host-of-b"]
    # Negative control: the owner switched cleaning off on this host, and A's traces reach B.
    assert found["dirty"] == [
        "user:tenant-a",
        "file:notes",
        "file:/srv/left-by-a",
        "hostname:host-of-b",
        "login:tenant-a",
        f"login:{cloud_config.DEFAULT_USER}",
    ]
