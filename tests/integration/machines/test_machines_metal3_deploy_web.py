"""``examples/deploy_web.yml`` on Metal3: a tenant's inventory-driven deployment, over SSH, on machines.

The tenant runs the example as a user would: ``ansible-playbook -i
examples/inventory/deploy_web.metal3.claimed_hosts.yml examples/deploy_web.yml``
with its own kubeconfig (``K8S_AUTH_KUBECONFIG``), its namespace
(``BMT_CLAIM_NAMESPACES``) and its SSH key. The owner's binder runs in the
background. The playbook claims two hosts with the tenant's key in their user
data, waits until the real baremetal-operator has provisioned them (``direct``
deploy through FakeIPA, which hands the config drive to the test-bed
machines), reads the ``claimed_hosts`` inventory again and, over SSH to the
addresses the hardware reports, installs and starts a small web service on
each host and fetches each host's page from the other. A second run changes
nothing. Then ``examples/ready_hosts.yml`` runs on the inventory's
``tenancy_ready`` group: it reaches both hosts over SSH and each one's line
names its claim, its BareMetalHost and its address.
"""

from __future__ import annotations

import dataclasses
import time

import pytest
from fixtures_machines import binder_loop
from fixtures_metal3 import SHARING_ANNOTATION, sharing_value
from harness.ansible import REPO_ROOT, run_playbook

pytestmark = [pytest.mark.machines, pytest.mark.real_bmo]

NAMESPACE = "mw-a"
HOSTS = {"web-host-0": 5, "web-host-1": 6}  # machine indexes of the metal3_machines stack
PLAYBOOK = REPO_ROOT / "examples" / "deploy_web.yml"
INVENTORY = REPO_ROOT / "examples" / "inventory" / "deploy_web.metal3.claimed_hosts.yml"
READY_HOSTS = REPO_ROOT / "examples" / "ready_hosts.yml"


def test_deploy_web_on_metal3_through_the_inventory_over_ssh(metal3_machines, metal3_env, ssh_keypair, tmp_path):
    bed = metal3_machines
    env = dataclasses.replace(metal3_env, workdir=tmp_path, operator=bed.stack, pool=None, watched=(bed.namespace,))
    env.tenant_namespace(NAMESPACE, "tenant-a")
    key, pub = ssh_keypair("tenant-a")
    timings = {}
    t0 = time.monotonic()
    with env.api() as api:
        for name, index in HOSTS.items():
            bed.create_host(
                api,
                name,
                index,
                labels={"pool": "web"},
                annotations={SHARING_ANNOTATION: sharing_value({"matches": "mw-.*"})},
            )
        bed.wait_state(api, list(HOSTS), "available")
    timings["hosts available"] = time.monotonic() - t0
    image = bed.image()
    variables = {
        "backend": "metal3",
        "deploy_web_namespace": NAMESPACE,
        "deploy_web_image": {
            "url": image["url"],
            "checksum": image["checksum"],
            "checksum_type": "sha256",
            "format": "raw",
        },
        "deploy_web_host_selector": {"matchLabels": {"pool": "web"}},
        "deploy_web_public_key": pub,
        "deploy_web_known_hosts": str(tmp_path / "known_hosts"),
        "deploy_web_wait_timeout": 900,
    }
    tenant = dict(env.kube.ansible_env("tenant-a"), BMT_CLAIM_NAMESPACES=NAMESPACE, ANSIBLE_PRIVATE_KEY_FILE=key)
    with binder_loop(env.kube, [NAMESPACE], tmp_path / "binder"):
        t1 = time.monotonic()
        run = run_playbook(
            PLAYBOOK, tenant, tmp_path / "first", extra_vars=variables, inventory=str(INVENTORY), timeout=1500
        )
        timings["first run"] = time.monotonic() - t1
        assert run.ok, run.explain()
        t2 = time.monotonic()
        again = run_playbook(
            PLAYBOOK, tenant, tmp_path / "again", extra_vars=variables, inventory=str(INVENTORY), timeout=900
        )
        timings["second run"] = time.monotonic() - t2
        assert again.ok, again.explain()

    fetched = run.host_results("Fetch the other hosts' pages from this host")
    assert sorted(fetched) == ["web-0", "web-1"], fetched
    for host, result in fetched.items():
        (peer,) = result["results"]
        other = "web-1" if host == "web-0" else "web-0"
        assert peer["item"] == other and peer["status"] == 200 and peer["content"] == f"deploy_web on {other}\n"
    # The hosts the claims got are the machines: each serves its page, written over SSH on its own disk.
    assert sorted(run.host_results("Write the page that names the host")) == ["web-0", "web-1"]
    for index in HOSTS.values():
        machine = bed.machine(index)
        page = machine.disk / "srv" / "deploy-web" / "index.html"
        assert page.read_text() in ("deploy_web on web-0\n", "deploy_web on web-1\n")
        served = machine.ssh(
            "debian", key, "exec 3<>/dev/tcp/127.0.0.1/8080 && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3"
        )
        assert served.returncode == 0 and page.read_text() in served.stdout, served
    stats = again.report["stats"]
    assert sum(s.get("changed", 0) for s in stats.values()) == 0, stats

    # examples/ready_hosts.yml on the tenancy_ready group of the same inventory, over SSH as the image's default
    # user, with the host keys deploy_web accepted (strict checking: the same machines answer).
    t3 = time.monotonic()
    ready = run_playbook(
        READY_HOSTS,
        tenant,
        tmp_path / "ready",
        extra_vars={
            "ansible_user": "debian",
            "ansible_ssh_common_args": "-o UserKnownHostsFile=%s" % (tmp_path / "known_hosts"),
            # The harness points the interpreter and remote temp at the controller's; the hosts use their own.
            "ansible_python_interpreter": "auto_silent",
            "ansible_remote_tmp": "~/.ansible/tmp",
        },
        inventory=str(INVENTORY),
        timeout=600,
    )
    timings["ready_hosts"] = time.monotonic() - t3
    assert ready.ok, ready.explain()
    reached = ready.host_results("Wait until SSH answers")
    assert sorted(reached) == ["web-0", "web-1"], reached
    assert all(not r.get("failed") and "elapsed" in r for r in reached.values()), reached
    shown = ready.host_results("Show what the inventory knows about the host")
    bound = {name: env.claim(NAMESPACE, name)["metadata"]["labels"]["hostclaim.metal3.io/host"] for name in shown}
    assert sorted(bound.values()) == sorted(HOSTS), bound
    for name, result in shown.items():
        address = bed.machine(HOSTS[bound[name]]).ip
        expected = f"{name} is claim {NAMESPACE}/{name} on host {bound[name]}, reached at {address}, class none"
        assert result["msg"] == expected, (result, expected)
    assert set(ready.report["stats"]) == {"web-0", "web-1"}, ready.report["stats"]
    print("deploy_web on Metal3 through FakeIPA:", {k: round(v, 1) for k, v in timings.items()})
