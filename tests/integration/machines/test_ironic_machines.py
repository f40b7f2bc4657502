"""Tenants on Ironic nodes that are machines a playbook logs into (issue 16, the Ironic backend).

One stack for the module (:mod:`harness.ironic_machines`): Keystone, Ironic on
PostgreSQL with automated cleaning on, sushy-tools, FakeIPA as the agent and six
test-bed machines, enrolled by the admin (``direct`` deploy, the owner's address
record) and leased by the owner with ``host_lease`` (``ironic_lease_hosts.yml``).
Every tenant step runs ``ansible-playbook`` with the tenant's own project-scoped
credentials; what is on a machine is checked by logging in over SSH.

1. ``examples/deploy_web.yml`` with the ``claimed_hosts`` inventory: tenant-a claims two
   hosts with its key, deploys a web service on them over SSH and each reaches the other;
2. a tenant's SSH key never reaches another tenant's machine (logins tried both ways);
3. hand-over: what tenant-a left on a host (file, user, keys, host name) is gone when
   tenant-b gets the same node after cleaning (the agent's clean step wiped the disk);
4. negative control: on a node whose cleaning the owner switched off, tenant-b finds it
   all, and the owner's ``host_lease`` and ``host_share`` warn, naming the node;
5. a release whose cleaning fails leaves the node out of the pool (``clean failed``, in
   maintenance) with the reason in ``last_error`` for the owner.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request

import pytest
from fixtures_openstack import apply_tenancy_policy
from harness import cloud_config, procs
from harness.ansible import REPO_ROOT, localhost_play, run_playbook
from harness.ironic_machines import enroll_all, start_ironic_machines
from harness.openstack import connect

pytestmark = pytest.mark.machines

PLAYBOOKS = REPO_ROOT / "playbooks"
EXAMPLE = REPO_ROOT / "examples" / "deploy_web.yml"
INVENTORY = REPO_ROOT / "examples" / "inventory" / "deploy_web.ironic.claimed_hosts.yml"
WEB_CLASS, B_CLASS, HANDOVER_CLASS = "baremetal-web", "baremetal-b", "baremetal-handover"
# node name -> (machine index, resource class, lessee, automated_clean)
NODES = {
    "web-node-0": (0, WEB_CLASS, "tenant-a", True),
    "web-node-1": (1, WEB_CLASS, "tenant-a", True),
    "b-node": (2, B_CLASS, "tenant-b", True),
    "handover-node": (3, HANDOVER_CLASS, "tenant-a", True),
    "no-clean-node": (4, HANDOVER_CLASS, "tenant-a", False),  # the owner switched cleaning off
    "clean-fails-node": (5, HANDOVER_CLASS, "tenant-a", True),
}
DEFAULT_USER = cloud_config.DEFAULT_USER
WAIT = 900  # seconds: a deployment or a cleaning boots the agent (6-8 s) on loaded cores


def keypair(directory, name: str) -> tuple[str, str]:
    path = directory / f"id_{name}"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"{name}@test", "-f", str(path)], check=True)
    return str(path), path.with_suffix(".pub").read_text().strip()


def play(stack, name: str, cloud: str, workdir, extra_vars: dict):
    run = run_playbook(PLAYBOOKS / name, stack.env.ansible_env(cloud), workdir, extra_vars=extra_vars, timeout=WAIT)
    assert run.ok, run.explain()
    return run


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("ironic-machines")
    started = time.monotonic()
    stack = start_ironic_machines(workdir / "stack", count=len(NODES))
    try:
        for service in stack.services:
            procs.record_service(service)
        apply_tenancy_policy(stack.env, workdir / "policy")
        stack.nodes = enroll_all(
            stack,
            [
                {"index": index, "name": name, "resource_class": rc, "automated_clean": clean}
                for name, (index, rc, unused_lessee, clean) in NODES.items()
            ],
            timeout=WAIT,
        )
        # The owner leases the nodes to the tenants (host_lease, as in production).
        leases = [
            {"project": project, "nodes": [n for n, spec in NODES.items() if spec[2] == project]}
            for project in ("tenant-a", "tenant-b")
        ]
        stack.lease_run = play(stack, "ironic_lease_hosts.yml", "admin", workdir / "lease", {"leases": leases})
        stack.ready_seconds = time.monotonic() - started
        stack.workdir = workdir
        yield stack
    finally:
        stack.stop()


def node_of(stack, name: str) -> int:
    return NODES[name][0]


def machine_of(stack, node_name: str):
    return stack.machines[node_of(stack, node_name)]


def claims(stack, cloud: str, workdir, items: list[dict]) -> dict[str, dict]:
    """Claim and deploy with ironic_claim_hosts.yml as ``cloud``; returns claim name -> claim."""
    run = play(stack, "ironic_claim_hosts.yml", cloud, workdir, {"claims": items, "claim_wait_timeout": WAIT})
    return {item["claim"]["name"]: item["claim"] for item in run.result("Wait for the claims")["results"]}


def release(stack, cloud: str, workdir, names: list[str]):
    return run_playbook(
        PLAYBOOKS / "ironic_release_hosts.yml",
        stack.env.ansible_env(cloud),
        workdir,
        extra_vars={"releases": names, "release_wait_timeout": WAIT},
        timeout=WAIT,
    )


def user_data(user: str, key: str, hostname: str) -> str:
    """cloud-config: the image's default user and ``user`` with ``key``, and the host name."""
    config = {
        "hostname": hostname,
        "users": ["default", {"name": user, "ssh_authorized_keys": [key]}],
        "ssh_authorized_keys": [key],
    }
    return "#cloud-config\n" + json.dumps(config)


def page(address: str, port: int = 8080) -> str:
    with urllib.request.urlopen(f"http://{address}:{port}/", timeout=10) as resp:
        return resp.read().decode()


# --------------------------------------------------------------------------- 1. deploy_web


@pytest.fixture(scope="module")
def web(stack, tmp_path_factory):
    """tenant-a runs examples/deploy_web.yml with the claimed_hosts inventory (the test reads its outcome)."""
    workdir = tmp_path_factory.mktemp("deploy-web")
    key, pub = keypair(workdir, "tenant-a")
    (workdir / "id_tenant-a.pub").write_text(pub + "\n")
    extra = {
        "backend": "ironic",
        "deploy_web_prefix": "a-",
        "deploy_web_image": stack.image(),
        "deploy_web_resource_class": WEB_CLASS,
        "deploy_web_public_key_file": str(workdir / "id_tenant-a.pub"),
        "deploy_web_known_hosts": str(workdir / "known_hosts"),
        "deploy_web_wait_timeout": WAIT,
        "ansible_ssh_private_key_file": key,
        # The harness points Ansible's remote temp at the controller's work directory; hosts use their own.
        "ansible_remote_tmp": "~/.ansible/tmp",
    }
    started = time.monotonic()
    first = run_playbook(
        EXAMPLE,
        stack.env.ansible_env("tenant-a"),
        workdir / "first",
        extra_vars=extra,
        inventory=str(INVENTORY),
        callback="default",
        timeout=2 * WAIT,
    )
    took = time.monotonic() - started
    again = run_playbook(
        EXAMPLE,
        stack.env.ansible_env("tenant-a"),
        workdir / "again",
        extra_vars=extra,
        inventory=str(INVENTORY),
        callback="default",
        timeout=2 * WAIT,
    )
    return {"first": first, "again": again, "key": key, "pub": pub, "seconds": took}


def test_deploy_web_runs_over_ssh_through_the_claimed_hosts_inventory(stack, web):
    first = web["first"]
    assert first.ok, first.explain()
    print(f"deploy_web (claim, deploy, SSH play) took {web['seconds']:.0f}s")
    # No local connection anywhere: the service was installed on the machines themselves.
    for path in (EXAMPLE, INVENTORY):
        assert "ansible_connection" not in path.read_text(), path
    answers = {}
    for name in ("web-node-0", "web-node-1"):
        machine = machine_of(stack, name)
        answers[name] = page(machine.ip)
        hostname = machine.ssh(DEFAULT_USER, web["key"], "hostname")
        assert hostname.returncode == 0, hostname.stderr
        assert answers[name] == f"deploy_web on {hostname.stdout.strip()}\n"
        served = machine.ssh(DEFAULT_USER, web["key"], "cat /srv/deploy-web/index.html; test -x /opt/deploy-web/serve")
        assert served.returncode == 0 and served.stdout == answers[name], served
    assert sorted(answers.values()) == ["deploy_web on a-web-0\n", "deploy_web on a-web-1\n"]
    # Each host fetched the other's page (the play's check ran once per host).
    assert first.stdout.count("a-web-0 -> a-web-1") == 1 and first.stdout.count("a-web-1 -> a-web-0") == 1, first.stdout


def test_deploy_web_a_second_time_changes_nothing(web):
    again = web["again"]
    assert again.ok, again.explain()
    recap = again.stdout[again.stdout.index("PLAY RECAP") :]
    for host in ("a-web-0", "a-web-1", "localhost"):
        line = next(line for line in recap.splitlines() if line.startswith(host))
        assert "changed=0" in line and "failed=0" in line, recap


# --------------------------------------------------------------------------- 2. keys


def test_a_tenants_key_never_reaches_another_tenants_machine(stack, web, tmp_path):
    assert web["first"].ok, "needs tenant-a's web hosts"
    key_b, pub_b = keypair(tmp_path, "tenant-b")
    got = claims(
        stack,
        "tenant-b",
        tmp_path / "claim",
        [
            {
                "name": "b-app-0",
                "resource_class": B_CLASS,
                "image": stack.image(),
                "user_data": user_data("tenant-b", pub_b, "b-app-0"),
                "online": True,
            }
        ],
    )
    assert got["b-app-0"]["host"] == "b-node"
    b_machine = machine_of(stack, "b-node")
    b_machine.wait_running(True, WAIT)
    login = b_machine.ssh("tenant-b", key_b, "hostname")
    assert login.stdout.strip() == "b-app-0", (login.returncode, login.stderr, b_machine.describe())
    a_machines = [machine_of(stack, "web-node-0"), machine_of(stack, "web-node-1")]
    # Positive controls: each key opens its own tenant's machines.
    for machine in a_machines:
        assert machine.ssh(DEFAULT_USER, web["key"], "true").returncode == 0
    refused = []
    for machine in a_machines:
        for user in (DEFAULT_USER, "root", "tenant-b"):
            result = machine.ssh(user, key_b, "true")
            refused.append((machine.name, user, result.returncode, "Permission denied" in result.stderr))
    for user in (DEFAULT_USER, "root", "tenant-b", "tenant-a"):
        result = b_machine.ssh(user, web["key"], "true")
        refused.append((b_machine.name, user, result.returncode, "Permission denied" in result.stderr))
    assert all(rc == 255 and denied for unused_m, unused_u, rc, denied in refused), refused
    # Nor is the other tenant's key anywhere on a disk.
    for machine, other in [*((m, pub_b) for m in a_machines), (b_machine, web["pub"])]:
        grep = subprocess.run(
            ["grep", "-rlF", other.split()[1], str(machine.disk)], check=False, capture_output=True, text=True
        )
        assert grep.stdout == "", (machine.name, grep.stdout)


# --------------------------------------------------------------------------- 3-4. hand-over

TRACES = (
    "id -u tenant-a >/dev/null 2>&1 && echo user:tenant-a; "
    "test -e /home/tenant-a/notes && echo file:notes; "
    "test -e /srv/secret && echo file:/srv/secret; "
    "echo hostname:$(hostname)"
)


def hand_over(stack, node: str, workdir) -> dict:
    """tenant-a uses ``node`` and releases it; the owner moves the node's lease to tenant-b, who claims it
    and logs in. Returns what tenant-b finds of tenant-a, the owner's lease run and the machine's events."""
    machine = machine_of(stack, node)
    key_a, pub_a = keypair(workdir, "tenant-a")
    key_b, pub_b = keypair(workdir, "tenant-b")
    claim_a = f"a-{node}"
    got = claims(
        stack,
        "tenant-a",
        workdir / "claim-a",
        [
            {
                "name": claim_a,
                "resource_class": HANDOVER_CLASS,
                "candidate_nodes": [node],
                "image": stack.image(),
                "user_data": user_data("tenant-a", pub_a, "host-of-a"),
                "online": True,
            }
        ],
    )
    assert got[claim_a]["host"] == node
    machine.wait_running(True, WAIT)
    wrote = machine.ssh("tenant-a", key_a, "echo private > ~/notes && cat ~/notes")
    assert wrote.stdout.strip() == "private", wrote.stderr
    as_root = machine.ssh(DEFAULT_USER, key_a, "echo tenant a was here | sudo -n tee /srv/secret")
    assert as_root.returncode == 0, as_root.stderr
    events_before = len(machine.events)
    released = release(stack, "tenant-a", workdir / "release-a", [claim_a])
    assert released.ok, released.explain()
    events = machine.events[events_before:]
    lease_run = play(
        stack,
        "ironic_lease_hosts.yml",
        "admin",
        workdir / "lease",
        {
            "leases": [
                {"project": "tenant-a", "nodes": [node], "state": "absent"},
                {"project": "tenant-b", "nodes": [node]},
            ]
        },
    )
    claim_b = f"b-{node}"
    got = claims(
        stack,
        "tenant-b",
        workdir / "claim-b",
        [
            {
                "name": claim_b,
                "resource_class": HANDOVER_CLASS,
                "candidate_nodes": [node],
                "image": stack.image(),
                "user_data": user_data("tenant-b", pub_b, "host-of-b"),
                "online": True,
            }
        ],
    )
    assert got[claim_b]["host"] == node
    machine.wait_running(True, WAIT)
    found = machine.ssh("tenant-b", key_b, TRACES)
    assert found.returncode == 0, found.stderr
    left = found.stdout.split()
    for user in ("tenant-a", DEFAULT_USER, "root"):
        if machine.ssh(user, key_a, "true").returncode == 0:
            left.append(f"login:{user}")
    on_disk = subprocess.run(
        ["grep", "-rlF", pub_a.split()[1], str(machine.disk)], check=False, capture_output=True, text=True
    )
    if on_disk.stdout:
        left.append("key-on-disk")
    # (The node stays with tenant-b: no later test uses it.)
    return {"left": left, "lease_run": lease_run, "events": events}


def said(run) -> str:
    """Everything a run printed, whitespace collapsed (warnings are wrapped to the terminal's width)."""
    return " ".join((run.stdout + run.stderr).split())


def lease_item(run, project: str) -> dict:
    return next(
        r for r in run.result("Lease the hosts, or end the leases")["results"] if r["item"]["project"] == project
    )


def test_hand_over_through_cleaning_leaves_nothing_of_the_previous_tenant(stack, tmp_path):
    started = time.monotonic()
    outcome = hand_over(stack, "handover-node", tmp_path)
    print(f"hand-over with cleaning took {time.monotonic() - started:.0f}s; machine events {outcome['events']}")
    assert outcome["left"] == ["hostname:host-of-b"]
    # The wipe came from the agent's clean step, on the release.
    assert "wipe erase_devices_metadata" in outcome["events"], outcome["events"]
    assert lease_item(outcome["lease_run"], "tenant-b")["cleaning_off"] == []


def test_without_cleaning_the_next_tenant_finds_the_previous_one_and_the_owner_is_warned(stack, tmp_path):
    """Negative control of the hand-over test: the owner switched cleaning off on the node."""
    node = "no-clean-node"
    assert stack.env.admin_conn.baremetal.get_node(node).is_automated_clean_enabled is False
    # The owner's lease of the node to tenant-a (the module fixture) already warned, naming it.
    first_lease = lease_item(stack.lease_run, "tenant-a")
    assert first_lease["cleaning_off"] == [node], first_lease
    assert f"automated cleaning is off (automated_clean: false) on node {node}, leased to a tenant" in said(
        stack.lease_run
    )
    outcome = hand_over(stack, node, tmp_path)
    assert outcome["left"] == [
        "user:tenant-a",
        "file:notes",
        "file:/srv/secret",
        "hostname:host-of-b",
        "login:tenant-a",
        f"login:{DEFAULT_USER}",
        "key-on-disk",
    ]
    assert not [e for e in outcome["events"] if e.startswith("wipe")], outcome["events"]
    assert lease_item(outcome["lease_run"], "tenant-b")["cleaning_off"] == [node]
    # host_share (what the ironic_tenancy role runs for ironic_tenancy_nodes) warns too.
    share = run_playbook(
        localhost_play(
            [
                {
                    "name": "Put the nodes in the pool",
                    "baremetal.tenancy.host_share": {
                        "backend": "ironic",
                        "hosts": [{"names": [node, "handover-node"], "owner": "infra"}],
                    },
                    "register": "shared",
                }
            ]
        ),
        stack.env.ansible_env("admin"),
        tmp_path / "share",
    )
    assert share.ok, share.explain()
    result = share.result("Put the nodes in the pool")
    assert result["cleaning_off"] == [node] and result["changed"] is False
    assert f"automated cleaning is off (automated_clean: false) on node {node}, put in the pool" in said(share)


# --------------------------------------------------------------------------- 5. cleaning fails


def test_a_release_whose_cleaning_fails_keeps_the_node_out_of_the_pool(stack, tmp_path):
    node = "clean-fails-node"
    machine = machine_of(stack, node)
    unused_key, pub_a = keypair(tmp_path, "tenant-a")
    claims(
        stack,
        "tenant-a",
        tmp_path / "claim",
        [
            {
                "name": "a-fails-0",
                "resource_class": HANDOVER_CLASS,
                "candidate_nodes": [node],
                "image": stack.image(),
                "user_data": user_data("tenant-a", pub_a, "host-of-a"),
                "online": True,
            }
        ],
    )
    reason = "disk /dev/sda: secure erase refused by the drive (test)"
    machine.wipe_failure = reason
    try:
        released = release(stack, "tenant-a", tmp_path / "release", ["a-fails-0"])
        # The tenant learns that its release did not complete, not why (last_error is the owner's).
        assert not released.ok
        assert "cleaning failed: the owner must repair the node" in released.stdout, released.explain()
        assert "secure erase refused" not in released.stdout + released.stderr
        # The owner (a member of the project that owns the node, its own credentials) sees the state and the reason.
        owner = connect(stack.env.infra.member)
        seen = owner.baremetal.get_node(node)
        assert seen.provision_state == "clean failed", seen.provision_state
        assert seen.is_maintenance is True
        assert "secure erase refused" in (seen.last_error or "") + (seen.maintenance_reason or ""), seen.last_error
        # Out of the pool: the tenant's new claim on it gets no node.
        again = run_playbook(
            PLAYBOOKS / "ironic_claim_hosts.yml",
            stack.env.ansible_env("tenant-a"),
            tmp_path / "claim-again",
            extra_vars={
                "claims": [{"name": "a-fails-1", "resource_class": HANDOVER_CLASS, "candidate_nodes": [node]}],
                "claim_wait_timeout": 60,
            },
            timeout=WAIT,
        )
        assert not again.ok
    finally:
        machine.wipe_failure = None
