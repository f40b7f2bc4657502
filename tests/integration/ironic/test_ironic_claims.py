"""Ironic claims end to end: real Keystone tokens, real Ironic policy, ansible-playbook.

Every tenant step runs ``ansible-playbook`` with the tenant's own
project-scoped credentials (``OS_CLOUD`` = ``tenant-a`` / ``tenant-b``, the
``member`` role); Ironic's policy file is the one the ``ironic_tenancy``
role writes (fixture ``ironic_tenancy_policy``). Direct API calls are used
only for setup and to check what Ironic really holds.

What each test proves:

- two tenants claiming at the same time each get only nodes leased to their
  project; the other tenant can neither read, claim, deploy nor release
  them, through the modules (clear errors) or the API (404 from Ironic);
- a lessee cannot change ``owner``, ``lessee``, ``driver_info`` or the lease
  records even with the policy file;
- a ``redfish`` node's power, as its sushy-tools BMC reports it, follows the
  claim's ``online``; no BMC address or credential appears in the ``-vvv``
  output of the tenant's run;
- bad input fails with one clear message and creates nothing;
- check mode changes nothing; a second run reports no change.
"""

from __future__ import annotations

import base64
import concurrent.futures
import json
import urllib.request
from pathlib import Path

import pytest
from harness import sushy as sushy_harness
from harness.ansible import REPO_ROOT, localhost_play, run_playbook

MD5 = "9f6c1a0f5e2b4c8d7a3e1f0b2c4d6e8f"
IMAGE = {"url": "http://images.example.com/debian-13.qcow2", "checksum": MD5, "checksum_type": "md5", "format": "qcow2"}
USER_DATA = "#cloud-config\nhostname: web\nssh_authorized_keys: [ssh-ed25519 AAAAC3Nza me@example.com]\n"


def allocation_gone(conn, name):
    return conn.baremetal.get("/allocations/%s" % name, microversion="1.78", raise_exc=False).status_code == 404


def tenant_env(env, tenant):
    return env.ansible_env(env.tenants[tenant].cloud_name("member"))


def task(name, module, args, **extra):
    t = {"name": name, module: dict(args)}
    t.update(extra)
    return t


def claim_args(name, **extra):
    args = {"backend": "ironic", "name": name}
    args.update(extra)
    return args


# ---------------------------------------------------------------------------------------------
# two tenants, four nodes


@pytest.fixture(scope="module")
def pool(openstack_env, enroll_node, ironic_tenancy_policy, tmp_path_factory):
    """Four fake nodes owned by infra, leased through host_lease: two to each tenant."""
    names = ["ic-2t-%d" % i for i in range(4)]
    for name in names:
        enroll_node(name, resource_class="rc-2t")
    a = openstack_env.tenants["tenant-a"].project_id
    b = openstack_env.tenants["tenant-b"].project_id
    lease = localhost_play(
        [
            task("lease to a", "baremetal.tenancy.host_lease", {"project": a, "nodes": names[:2]}),
            task("lease to b", "baremetal.tenancy.host_lease", {"project": "tenant-b", "nodes": names[2:]}),
            task("lease to a again", "baremetal.tenancy.host_lease", {"project": a, "nodes": names[:2]}),
        ]
    )
    run = run_playbook(lease, openstack_env.ansible_env("admin"), tmp_path_factory.mktemp("lease"))
    assert run.ok, run.explain()
    assert run.result("lease to a")["changed"] is True
    assert run.result("lease to b")["changed"] is True
    assert run.result("lease to a again")["changed"] is False
    return {"a": names[:2], "b": names[2:], "a_id": a, "b_id": b}


def claims_playbook(env, tenant, claims, workdir):
    out = Path(workdir) / ("claims-%s.json" % tenant)
    run = run_playbook(
        REPO_ROOT / "playbooks" / "ironic_claim_hosts.yml",
        tenant_env(env, tenant),
        workdir,
        extra_vars={"claims": claims, "claim_wait_timeout": 300, "claims_out": str(out)},
    )
    return run, out


def test_two_tenants_claim_at_once_and_stay_apart(openstack_env, pool, tmp_path):
    admin = openstack_env.admin_conn
    wanted = {
        "tenant-a": [
            {"name": "ic-a-%d" % i, "resource_class": "rc-2t", "image": IMAGE, "user_data": USER_DATA, "online": True}
            for i in range(2)
        ],
        "tenant-b": [
            {"name": "ic-b-%d" % i, "resource_class": "rc-2t", "image": IMAGE, "online": False} for i in range(2)
        ],
    }
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
        futures = {t: ex.submit(claims_playbook, openstack_env, t, wanted[t], tmp_path / t) for t in wanted}
        runs = {t: f.result() for t, f in futures.items()}
    hosts = {}
    for tenant, (run, out) in runs.items():
        assert run.ok, run.explain()
        claims = json.loads(out.read_text())
        assert sorted(c["name"] for c in claims) == sorted(c["name"] for c in wanted[tenant])
        for claim in claims:
            assert claim["ready"] is True and claim["provision_state"] == "active", claim
            assert claim["namespace"] == openstack_env.tenants[tenant].project_id
            hosts[claim["name"]] = claim["host"]
    # Each tenant got exactly the nodes leased to it, and every claim its own node.
    assert sorted(hosts[n] for n in ("ic-a-0", "ic-a-1")) == pool["a"]
    assert sorted(hosts[n] for n in ("ic-b-0", "ic-b-1")) == pool["b"]
    for name, host in hosts.items():
        node = admin.baremetal.get_node(host)
        project = pool["a_id"] if name.startswith("ic-a") else pool["b_id"]
        assert node.lessee == project and node.provision_state == "active"
        assert node.power_state == ("power on" if name.startswith("ic-a") else "power off")
        assert node.instance_info["image_source"] == IMAGE["url"]
        assert node.instance_info["baremetal_tenancy_drive_digest"].startswith("sha256:")
        # The claim's name for the tenant's inventory, tied to the allocation Ironic recorded and the project.
        assert node.instance_info["baremetal_tenancy_claim"] == {
            "name": name,
            "allocation": node.instance_id,
            "project": project,
        }

    # tenant-b tries every way at tenant-a's hosts, through the modules.
    a_node = hosts["ic-a-0"]
    attempts = localhost_play(
        [
            task(
                "claim a's node",
                "baremetal.tenancy.host_claim",
                claim_args("ic-b-steal", resource_class="rc-2t", candidate_nodes=[a_node], image=IMAGE),
                ignore_errors=True,
            ),
            task(
                "claim a's claim name",
                "baremetal.tenancy.host_claim",
                claim_args("ic-a-0", resource_class="rc-2t", image=IMAGE),
                ignore_errors=True,
            ),
            task("read a's claim", "baremetal.tenancy.host_claim_info", {"backend": "ironic", "name": "ic-a-0"}),
            task("list my claims", "baremetal.tenancy.host_claim_info", {"backend": "ironic"}),
            task("release a's claim", "baremetal.tenancy.host_release", claim_args("ic-a-0", wait=True)),
            task(
                "lease a's node to myself",
                "baremetal.tenancy.host_lease",
                {"project": pool["b_id"], "nodes": [a_node]},
                ignore_errors=True,
            ),
        ]
    )
    run = run_playbook(attempts, tenant_env(openstack_env, "tenant-b"), tmp_path / "attempts")
    assert run.ok, run.explain()
    steal = run.result("claim a's node")
    assert steal["failed"] and steal["changed"] is False
    assert steal["msg"] == (
        "claim ic-b-steal: option candidate_nodes: node %s does not exist or is neither owned by nor "
        "leased to project %s" % (a_node, pool["b_id"])
    )
    same_name = run.result("claim a's claim name")
    assert same_name["failed"] and same_name["error_type"] == "Conflict"
    assert "already used by an allocation that project %s cannot see" % pool["b_id"] in same_name["msg"]
    assert run.result("read a's claim")["claims"] == []
    mine = run.result("list my claims")["claims"]
    assert {c["name"] for c in mine} >= {"ic-b-0", "ic-b-1"}
    assert not {c["name"] for c in mine} & {"ic-a-0", "ic-a-1"}
    assert {c["host"] for c in mine if c["name"].startswith("ic-")} <= set(pool["b"])
    release = run.result("release a's claim")
    assert release["changed"] is False and release["released"] is False
    lease = run.result("lease a's node to myself")
    assert lease["failed"] and lease["error_type"] == "NotFound"
    assert lease["msg"].startswith("option nodes: node %s: does not exist or is not visible" % a_node)

    # ... and through Ironic's API with tenant-b's token: 404 everywhere.
    b_api = openstack_env.tenants["tenant-b"].conn("member").baremetal
    mv = {"microversion": "1.78", "raise_exc": False}
    assert b_api.get("/nodes/%s" % a_node, **mv).status_code == 404
    assert (
        b_api.patch(
            "/nodes/%s" % a_node,
            json=[{"op": "add", "path": "/instance_info/image_source", "value": "http://evil/x"}],
            **mv,
        ).status_code
        == 404
    )
    assert b_api.put("/nodes/%s/states/provision" % a_node, json={"target": "deleted"}, **mv).status_code == 404
    assert b_api.put("/nodes/%s/states/power" % a_node, json={"target": "power off"}, **mv).status_code == 404
    assert b_api.delete("/allocations/ic-a-0", **mv).status_code == 404
    # Nothing of tenant-a's changed.
    node = admin.baremetal.get_node(a_node)
    assert node.provision_state == "active" and node.power_state == "power on"
    assert node.instance_info["image_source"] == IMAGE["url"]
    assert admin.baremetal.get_allocation("ic-a-0").node_id == node.id

    # A lessee cannot change owner, lessee, driver_info or its lease records, even with the policy file.
    a_api = openstack_env.tenants["tenant-a"].conn("member").baremetal
    for path, value in (
        ("/owner", pool["a_id"]),
        ("/lessee", pool["b_id"]),
        ("/driver_info/fake_secret", "x"),
        ("/properties/baremetal_tenancy_leases", []),
        ("/properties/cpus", 1),
    ):
        answer = a_api.patch("/nodes/%s" % a_node, json=[{"op": "add", "path": path, "value": value}], **mv)
        assert answer.status_code == 403, (path, answer.status_code, answer.text)
    after = admin.baremetal.get_node(a_node)
    assert after.owner == openstack_env.infra_project_id and after.lessee == pool["a_id"]
    assert after.driver_info == node.driver_info and after.properties == node.properties

    # The tenants release their hosts; the nodes go back to available, the allocations are gone.
    for tenant, names in (("tenant-a", ["ic-a-0", "ic-a-1"]), ("tenant-b", ["ic-b-0", "ic-b-1"])):
        run = run_playbook(
            REPO_ROOT / "playbooks" / "ironic_release_hosts.yml",
            tenant_env(openstack_env, tenant),
            tmp_path / ("release-" + tenant),
            extra_vars={"releases": names, "release_wait_timeout": 300},
        )
        assert run.ok, run.explain()
        assert all(r["released"] for r in run.result("Wait for the releases")["results"])
    for name, host in hosts.items():
        node = admin.baremetal.get_node(host)
        assert node.provision_state == "available" and node.instance_info == {} and node.allocation_id is None
        assert allocation_gone(admin, name)


# ---------------------------------------------------------------------------------------------
# check mode, diff, idempotence, bad input


def test_check_mode_idempotence_and_diff(openstack_env, enroll_node, ironic_tenancy_policy, tmp_path):
    a = openstack_env.tenants["tenant-a"].project_id
    enroll_node("ic-idem-0", resource_class="rc-idem", lessee=a, traits=["CUSTOM_IDEM"])
    claim = claim_args(
        "ic-idem",
        resource_class="rc-idem",
        traits=["CUSTOM_IDEM"],
        image=IMAGE,
        user_data=USER_DATA,
        network_data={
            "links": [{"id": "eth0", "type": "phy"}],
            "networks": [
                {"id": "n0", "type": "ipv4", "link": "eth0", "ip_address": "192.0.2.50", "netmask": "255.255.255.0"}
            ],
        },
        online=False,
        wait=True,
    )
    rebuilt = dict(claim, user_data=USER_DATA + "packages: [htop]\n")
    play = localhost_play(
        [
            task("claim (check)", "baremetal.tenancy.host_claim", claim, check_mode=True, diff=True),
            task("claim", "baremetal.tenancy.host_claim", claim, diff=True),
            task("claim again", "baremetal.tenancy.host_claim", claim, diff=True),
            task("info", "baremetal.tenancy.host_claim_info", {"backend": "ironic", "name": "ic-idem"}),
            task("new user-data (check)", "baremetal.tenancy.host_claim", rebuilt, check_mode=True, diff=True),
            task("new user-data", "baremetal.tenancy.host_claim", rebuilt),
            task("new user-data again", "baremetal.tenancy.host_claim", rebuilt),
            task("release (check)", "baremetal.tenancy.host_release", claim_args("ic-idem"), check_mode=True),
            task("info after check", "baremetal.tenancy.host_claim_info", {"backend": "ironic", "name": "ic-idem"}),
            task("release", "baremetal.tenancy.host_release", claim_args("ic-idem", wait=True), diff=True),
            task("release again", "baremetal.tenancy.host_release", claim_args("ic-idem", wait=True)),
        ]
    )
    run = run_playbook(play, tenant_env(openstack_env, "tenant-a"), tmp_path)
    assert run.ok, run.explain()
    check = run.result("claim (check)")
    assert check["changed"] is True and check["claim"]["host"] is None
    assert check["diff"]["before"] == {} and check["diff"]["after"]["resource_class"] == "rc-idem"
    first = run.result("claim")
    assert first["changed"] is True and first["claim"]["host"] == "ic-idem-0" and first["claim"]["ready"] is True
    assert first["claim"]["powered_on"] is False and first["claim"]["traits"] == ["CUSTOM_IDEM"]
    # The claim's own network-data (instance_info, tenant-written) is not an address source: only the owner's record.
    assert first["claim"]["addresses"] == []
    assert first["diff"]["after"]["host"] == "ic-idem-0"
    again = run.result("claim again")
    assert again["changed"] is False and again["diff"]["before"] == again["diff"]["after"]
    info = run.result("info")
    assert info["changed"] is False and [c["host"] for c in info["claims"]] == ["ic-idem-0"]
    rebuild_check = run.result("new user-data (check)")
    assert rebuild_check["changed"] is True
    assert rebuild_check["diff"]["before"]["config_drive"] != rebuild_check["diff"]["after"]["config_drive"]
    assert run.result("new user-data")["changed"] is True
    assert run.result("new user-data again")["changed"] is False
    release_check = run.result("release (check)")
    assert release_check["changed"] is True and release_check["released"] is True
    assert run.result("info after check")["claims"][0]["provision_state"] == "active"
    release = run.result("release")
    assert release["changed"] is True and release["host"] == "ic-idem-0"
    assert release["diff"]["after"] == {}
    assert run.result("release again")["changed"] is False
    node = openstack_env.admin_conn.baremetal.get_node("ic-idem-0")
    assert node.provision_state == "available" and node.instance_info == {}
    # The rebuild used the new config drive: the digest Ironic kept changed between the runs.
    assert first["claim"]["image"] == run.result("new user-data")["claim"]["image"]


BAD = [
    (
        "unknown resource class",
        {"resource_class": "rc-nope"},
        "resource class rc-nope: no node owned by or leased to the project has resource class rc-nope",
    ),
    (
        "image without checksum",
        {"image": {"url": "http://images.example.com/os.qcow2"}},
        "image: a checksum is required unless format is live-iso",
    ),
    (
        "user-data that is not YAML",
        {"image": IMAGE, "user_data": "#cloud-config\nusers: [\n  - me\n"},
        "is declared #cloud-config but is not valid YAML",
    ),
    (
        "cloud-config that is a list",
        {"image": IMAGE, "user_data": "#cloud-config\n- one\n- two\n"},
        "is declared #cloud-config but is a YAML list, not a mapping",
    ),
    ("negative timeout", {"wait": True, "wait_timeout": -5}, "must be zero or more seconds, got -5"),
    (
        "bad network data",
        {"image": IMAGE, "network_data": {"networks": [{"id": "n", "type": "ipv4", "link": "x"}]}},
        "refers to link x",
    ),
]


def test_bad_input_fails_clearly_and_changes_nothing(openstack_env, enroll_node, ironic_tenancy_policy, tmp_path):
    a = openstack_env.tenants["tenant-a"].project_id
    enroll_node("ic-bad-0", resource_class="rc-bad", lessee=a)
    tasks = []
    for i, (title, args, _words) in enumerate(BAD):
        base = claim_args("ic-bad-%d" % i, resource_class="rc-bad")
        base.update(args)
        tasks.append(task(title, "baremetal.tenancy.host_claim", base, ignore_errors=True))
    run = run_playbook(localhost_play(tasks), tenant_env(openstack_env, "tenant-a"), tmp_path)
    assert run.ok, run.explain()
    for title, _args, words in BAD:
        result = run.result(title)
        assert result.get("failed") is True, (title, result)
        assert result["changed"] is False
        assert words in result["msg"], (title, result["msg"])
        assert "\n" not in result["msg"]
    admin = openstack_env.admin_conn.baremetal
    assert not [al.name for al in admin.allocations() if (al.name or "").startswith("ic-bad-")]
    node = admin.get_node("ic-bad-0")
    assert node.provision_state == "available" and node.instance_id is None and node.instance_info == {}


# ---------------------------------------------------------------------------------------------
# redfish: power follows the claim; no BMC data in -vvv output


@pytest.fixture(scope="module")
def own_bmc(tmp_path_factory):
    """A sushy-tools emulator of our own: other suites use the shared one's BMCs."""
    systems = sushy_harness.default_systems(1)
    # Ironic refuses a second port with a MAC it knows: not the shared emulator's MACs.
    systems[0]["nics"] = [{"mac": "52:54:00:1c:00:01", "ip": "192.0.2.201"}]
    emulator = sushy_harness.start_sushy(tmp_path_factory.mktemp("ic-sushy"), systems)
    try:
        yield emulator.bmcs[0]
    finally:
        emulator.stop()


def bmc_power(bmc):
    request = urllib.request.Request(bmc.base_url + bmc.system_id)
    token = base64.b64encode(("%s:%s" % (bmc.username, bmc.password)).encode()).decode()
    request.add_header("Authorization", "Basic " + token)
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)["PowerState"]


def test_redfish_power_follows_online_and_no_bmc_data_leaks(
    openstack_env, enroll_node, ironic_tenancy_policy, own_bmc, tmp_path
):
    a = openstack_env.tenants["tenant-a"].project_id
    enroll_node("ic-redfish-0", resource_class="rc-redfish", lessee=a, bmc=own_bmc)
    assert bmc_power(own_bmc) == "Off"
    tenant = tenant_env(openstack_env, "tenant-a")

    def step(online):
        play = localhost_play(
            [
                task(
                    "claim",
                    "baremetal.tenancy.host_claim",
                    claim_args("ic-rf", resource_class="rc-redfish", online=online, wait=True, wait_timeout=180),
                ),
                task("info", "baremetal.tenancy.host_claim_info", {"backend": "ironic", "name": "ic-rf"}),
            ]
        )
        return run_playbook(play, tenant, tmp_path / ("online-%s" % online), verbosity=3, callback="default", diff=True)

    on = step(True)
    assert on.ok, on.explain()
    assert bmc_power(own_bmc) == "On"
    off = step(False)
    assert off.ok, off.explain()
    assert bmc_power(own_bmc) == "Off"
    node = openstack_env.admin_conn.baremetal.get_node("ic-redfish-0")
    assert node.driver == "redfish" and node.power_state == "power off" and node.lessee == a
    # Through the API itself, with the policy in place, the lessee reads no BMC data either.
    lessee = openstack_env.tenants["tenant-a"].conn("member").baremetal
    seen = lessee.get("/nodes/%s" % node.id, microversion="1.78").json()
    assert seen["lessee"] == a and "redfish_address" not in json.dumps(seen), seen.get("driver_info")
    for path in ("/nodes/%s/history", "/nodes/%s/inventory"):
        assert lessee.get(path % node.id, microversion="1.81").status_code in (403, 404), path

    release = run_playbook(
        localhost_play([task("release", "baremetal.tenancy.host_release", claim_args("ic-rf", wait=True))]),
        tenant,
        tmp_path / "release",
        verbosity=3,
        callback="default",
    )
    assert release.ok, release.explain()
    assert allocation_gone(openstack_env.admin_conn, "ic-rf")

    host_port = own_bmc.base_url.split("://", 1)[1]
    secrets_ = [
        own_bmc.password,
        host_port,
        own_bmc.system_id,
        own_bmc.uuid,
        "redfish_address",
        "redfish_password",
        "driver_info",
    ]
    for run in (on, off, release):
        text = run.stdout + run.stderr
        assert "ic-redfish-0" in text  # the scan looks at real output
        assert "<TASK: claim>" in text or "TASK [claim]" in text or "TASK [release]" in text
        for value in secrets_:
            assert value not in text, "%r leaked into the -vvv output" % value
