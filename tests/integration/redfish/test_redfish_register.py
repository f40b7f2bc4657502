"""host_register against 20 emulated BMCs of three hardware profiles, on both backends.

Driven through ansible-playbook. Each backend test registers the fleet plus
three bad BMCs (unreachable, wrong password, not Redfish) in one run, then
checks with direct API reads that:

- every good BMC became a host with the classes the rules give its profile
  (worked out by the test from the profile figures, not by the module);
- the three bad BMCs are reported with their own error kind, the task did
  not fail, and no host was created for them;
- on Metal3, a BMC given with another driver (``redfish-virtualmedia+http://``
  ...) keeps it in the BareMetalHost's ``bmc.address``; one given with a
  scheme that is no driver of baremetal-operator fails alone, before its BMC
  is read, with an error naming it and its scheme;
- a rerun changes nothing; a check-mode run before it writes nothing;
- on Metal3 every write goes through baremetal-operator's own BareMetalHost
  CRD and its validating webhook (the ``real_bmo`` session; the fleet's
  namespace is not one the operator reconciles, so its 20 hosts are not
  registered with Ironic: test_redfish_claims has a host that is). The
  migration of a policy left in ``spec.hostClaimNamespaces`` by earlier
  releases cannot happen there (BMO's CRD prunes the field): it is
  test_host_share's, on the collection's own CRD;
- no BMC password is in any result, nor in the ``-vvv`` output.
"""

from __future__ import annotations

import base64
import json
import sys

import pytest
from fixtures_redfish import PROFILE_COUNTS, RULES, expected
from harness.ansible import collections_root, localhost_play, run_playbook
from kubernetes import client

NAMESPACE = "bmt-fleet"
SHARING = "baremetal.tenancy/host-claim-namespaces"
GROUP, VERSION = "metal3.io", "v1alpha1"
BAD = {"unreachable": "unreachable", "wrong-password": "unauthorized", "not-redfish": "not_redfish"}


def _register_task(args: dict, name: str = "register") -> dict:
    return {"name": name, "baremetal.tenancy.host_register": args, "register": "reg"}


def _check_bad(result: dict, extra: tuple = ()) -> None:
    failed = {f["name"]: f for f in result["failed_hosts"]}
    assert set(failed) == set(BAD) | set(extra), result["failed_hosts"]
    for name, kind in BAD.items():
        assert failed[name]["error_kind"] == kind, failed[name]
        assert failed[name]["error"].startswith("BMC #"), failed[name]
    assert "unreachable" in failed["unreachable"]["error"]
    assert "HTTP 401" in failed["wrong-password"]["error"]
    assert "not a Redfish service" in failed["not-redfish"]["error"]
    assert len(result["registered"]) == 20


def default_name(uuid):
    """host_register's default host name for a system UUID (the collection's own rule)."""
    sys.path.insert(0, str(collections_root()))
    from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish.registration_model import (
        default_name as name,
    )

    return name(uuid)


def _assert_no_secret(text: str, fleet) -> None:
    for secret in fleet.secrets:
        assert secret not in text


def _assert_no_address(result: dict, fleet) -> None:
    """The module returns no BMC address (only the caller's own input, under invocation, has them)."""
    returned = {k: v for k, v in result.items() if k != "invocation"}
    assert fleet.emulator.base_url.split("//")[1] not in json.dumps(returned)


@pytest.fixture(scope="module")
def fleet_namespace(kube_env, metal3_bmo_env):
    with kube_env.api("admin") as api:
        core = client.CoreV1Api(api)
        try:
            core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE)))
        except client.exceptions.ApiException as exc:
            if exc.status != 409:
                raise
    return NAMESPACE


# Fleet hosts given with another Metal3 driver than plain Redfish: the BareMetalHost keeps it.
DRIVERS = {0: "redfish-virtualmedia", 1: "redfish-uefihttp", 2: "idrac-virtualmedia"}
# A good BMC given with a scheme that is no driver of baremetal-operator: refused before it is read.
BAD_SCHEME = "bad-scheme"


def _check_bad_scheme(result: dict) -> None:
    failed = {f["name"]: f for f in result["failed_hosts"]}[BAD_SCHEME]
    assert failed["error_kind"] == "InvalidInput", failed
    assert (
        f"({BAD_SCHEME}): BMC address: scheme 'redfish-virtualmedium+http' is not a Redfish scheme" in (failed["error"])
    ), failed
    entry = next(h for h in result["hosts"] if h["name"] == BAD_SCHEME)
    assert entry["status"] == "failed" and "uuid" not in entry  # its BMC was not read


@pytest.mark.real_bmo
def test_register_fleet_on_metal3(kube_env, fleet_namespace, redfish_fleet, tmp_path):
    hosts = redfish_fleet.host_entries()
    for i, driver in DRIVERS.items():
        hosts[i]["address"] = hosts[i]["address"].replace("redfish+http://", driver + "+http://", 1)
    bad_scheme = dict(redfish_fleet.host_entries()[3], name=BAD_SCHEME)
    bad_scheme["address"] = bad_scheme["address"].replace("redfish+http://", "redfish-virtualmedium+http://", 1)
    hosts.append(bad_scheme)
    args = {
        "namespace": fleet_namespace,
        "hosts": hosts,
        "rules": RULES,
        "host_claim_namespaces": {"matches": "tenant-[a-z]+"},
        "workers": 4,
    }
    env = kube_env.ansible_env("admin")

    # Check mode first: reads everything, writes nothing.
    check = run_playbook(localhost_play([_register_task(args)]), env, tmp_path / "check", check=True, diff=True)
    assert check.ok, check.explain()
    res = check.result("register")
    assert res["changed"] is True
    _check_bad(res, (BAD_SCHEME,))
    _check_bad_scheme(res)
    assert all(h["status"] == "registered" for h in res["hosts"] if h["name"] not in (*BAD, BAD_SCHEME))
    with kube_env.api("admin") as api:
        items = client.CustomObjectsApi(api).list_namespaced_custom_object(
            GROUP, VERSION, fleet_namespace, "baremetalhosts"
        )["items"]
    assert items == []

    run = run_playbook(localhost_play([_register_task(args)]), env, tmp_path / "first", diff=True)
    assert run.ok, run.explain()
    res = run.result("register")
    assert res["changed"] is True
    _check_bad(res, (BAD_SCHEME,))
    _check_bad_scheme(res)
    _assert_no_secret(run.stdout + run.stderr, redfish_fleet)
    _assert_no_address(res, redfish_fleet)

    with kube_env.api("admin") as api:
        custom = client.CustomObjectsApi(api)
        core = client.CoreV1Api(api)
        hosts = {
            h["metadata"]["name"]: h
            for h in custom.list_namespaced_custom_object(GROUP, VERSION, fleet_namespace, "baremetalhosts")["items"]
        }
        assert set(hosts) == {"fleet-%02d" % i for i in range(20)}
        by_profile = {}
        for i, bmc in enumerate(redfish_fleet.good):
            host = hosts["fleet-%02d" % i]
            want = expected(bmc.profile)
            by_profile[bmc.profile] = by_profile.get(bmc.profile, 0) + 1
            labels = host["metadata"]["labels"]
            assert labels == want["labels"], (bmc.profile, labels)
            spec = host["spec"]
            # redfish+http://127.0.0.1:PORT/redfish/v1/Systems/<uuid>, or the driver it was given with
            driver = DRIVERS.get(i, "redfish")
            assert spec["bmc"]["address"] == f"{driver}+{bmc.base_url}/redfish/v1/Systems/{bmc.uuid}"
            if i not in DRIVERS:
                assert spec["bmc"]["address"] == bmc.address
            assert spec["bootMACAddress"] == bmc.macs[0]
            assert spec["bootMode"] == "UEFI"
            assert spec["online"] is False
            assert "hostClaimNamespaces" not in spec
            assert host["metadata"]["annotations"][SHARING] == '{"matches":"tenant-[a-z]+"}'
            assert host["metadata"]["annotations"]["baremetal.tenancy/system-uuid"] == bmc.uuid
            secret = core.read_namespaced_secret(spec["bmc"]["credentialsName"], fleet_namespace)
            assert base64.b64decode(secret.data["username"]).decode() == bmc.username
            assert base64.b64decode(secret.data["password"]).decode() == bmc.password
        assert by_profile == PROFILE_COUNTS
        # The facts the module read match the emulator's figures.
        facts = {h["name"]: h["facts"] for h in res["hosts"] if h["status"] != "failed"}
        large = next(i for i, b in enumerate(redfish_fleet.good) if b.profile == "large")
        assert facts["fleet-%02d" % large]["memory_gib"] == 512
        assert facts["fleet-%02d" % large]["cpus"] == 96
        assert facts["fleet-%02d" % large]["manufacturer"] == "Fabrikam"
        assert facts["fleet-%02d" % large]["cpu_model"] == "Fake EPYC 9454"
        assert len(facts["fleet-%02d" % large]["nics"]) == 2
        # Labels set by someone else survive a rerun; ours are restored.
        name = "fleet-%02d" % large
        custom.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            fleet_namespace,
            "baremetalhosts",
            name,
            {"metadata": {"labels": {"rack": "r7", "infra-kind": "tampered"}}},
        )
        # The sharing annotation removed by hand: the rerun writes it again.
        unshared = "fleet-%02d" % (1 if large == 0 else 0)
        custom.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            fleet_namespace,
            "baremetalhosts",
            unshared,
            {"metadata": {"annotations": {SHARING: None}}},
        )

    rerun = run_playbook(localhost_play([_register_task(args)]), env, tmp_path / "rerun", diff=True)
    assert rerun.ok, rerun.explain()
    res = rerun.result("register")
    statuses = {h["name"]: h["status"] for h in res["hosts"]}
    assert statuses.pop(name) == "updated"
    assert statuses.pop(unshared) == "updated"
    assert statuses.pop(BAD_SCHEME) == "failed"
    assert {s for n, s in statuses.items() if n not in BAD} == {"unchanged"}
    with kube_env.api("admin") as api:
        custom = client.CustomObjectsApi(api)
        labels = custom.get_namespaced_custom_object(GROUP, VERSION, fleet_namespace, "baremetalhosts", name)[
            "metadata"
        ]["labels"]
        shared = custom.get_namespaced_custom_object(GROUP, VERSION, fleet_namespace, "baremetalhosts", unshared)
    assert labels == {"rack": "r7", **expected("large")["labels"]}
    assert shared["metadata"]["annotations"][SHARING] == '{"matches":"tenant-[a-z]+"}'

    # Third run: nothing at all changes; -vvv with the human callback shows no BMC secret.
    third = run_playbook(
        localhost_play([_register_task(args)]), env, tmp_path / "third", verbosity=3, callback="default"
    )
    assert third.rc == 0, third.explain()
    assert "changed=0" in third.stdout
    _assert_no_secret(third.stdout + third.stderr, redfish_fleet)


def test_register_fleet_on_ironic(openstack_env, redfish_fleet, tmp_path):
    conn = openstack_env.admin_conn
    args = {
        "backend": "ironic",
        "cloud": "admin",
        "owner": "infra",
        "hosts": redfish_fleet.host_entries(names=False),
        "rules": RULES,
        "workers": 4,
        "wait_timeout": 300,
    }
    env = openstack_env.ansible_env("admin")

    check = run_playbook(localhost_play([_register_task(args)]), env, tmp_path / "check", check=True)
    assert check.ok, check.result("register").get("msg")
    _check_bad(check.result("register"))
    uuids = {b.uuid for b in redfish_fleet.good}
    assert not [n for n in conn.baremetal.nodes(fields=["uuid"]) if n.id in uuids]

    run = run_playbook(localhost_play([_register_task(args)]), env, tmp_path / "first")
    assert run.ok, run.explain()
    res = run.result("register")
    assert res["changed"] is True
    failed = {f["index"]: f["error_kind"] for f in res["failed_hosts"]}
    assert failed == {20: "unreachable", 21: "unauthorized", 22: "not_redfish"}, res["failed_hosts"]
    assert not [h for h in res["hosts"][:20] if h["status"] != "registered"], res["hosts"]
    _assert_no_secret(run.stdout + run.stderr, redfish_fleet)
    _assert_no_address(res, redfish_fleet)

    counts = {}
    for bmc in redfish_fleet.good:
        node = conn.baremetal.get_node(bmc.uuid)
        want = expected(bmc.profile)
        counts[bmc.profile] = counts.get(bmc.profile, 0) + 1
        assert node.name == default_name(bmc.uuid)  # no name given: never the system id
        assert bmc.uuid.replace("-", "") not in node.name.replace("-", "")
        assert node.driver == "redfish"
        assert node.provision_state == "available", (node.name, node.provision_state, node.last_error)
        assert node.resource_class == want["resource_class"]
        assert sorted(node.traits) == sorted(want["traits"])
        assert node.owner == openstack_env.infra_project_id
        assert node.driver_info["redfish_address"] == bmc.base_url
        assert node.driver_info["redfish_system_id"] == bmc.system_id
        assert node.properties["memory_mb"] == sushy_profile(bmc)["memory_gb"] * 1024
        assert node.properties["cpus"] == sushy_profile(bmc)["cpus"]
        ports = sorted(p.address for p in conn.baremetal.ports(node_uuid=node.id, fields=["address"]))
        assert ports == sorted(bmc.macs)
    assert counts == PROFILE_COUNTS
    assert conn.baremetal.find_node(redfish_fleet.wrong_password.uuid) is None

    # Rerun at -vvv with the human callback: nothing changes, no BMC secret is shown.
    rerun = run_playbook(
        localhost_play([_register_task(args)]), env, tmp_path / "rerun", verbosity=3, callback="default", diff=True
    )
    assert rerun.rc == 0, rerun.explain()
    assert "changed=0" in rerun.stdout
    assert rerun.stdout.count('"status": "unchanged"') == 20
    _assert_no_secret(rerun.stdout + rerun.stderr, redfish_fleet)


def sushy_profile(bmc):
    from harness.sushy import PROFILES

    return PROFILES[bmc.profile]


@pytest.mark.real_bmo
def test_bad_input_fails_cleanly_and_changes_nothing(kube_env, fleet_namespace, redfish_fleet, tmp_path):
    """An invalid rule is one clear error naming the rule; no BMC is contacted, nothing is written."""
    bad_rules = [{"name": "broken", "when": "MemorySummary.TotalSystemMemoryGiB >= "}]
    entries = [{"address": redfish_fleet.good[0].address, "username": "admin", "password": "x1", "name": "never-made"}]
    run = run_playbook(
        localhost_play([_register_task({"namespace": fleet_namespace, "hosts": entries, "rules": bad_rules})]),
        kube_env.ansible_env("admin"),
        tmp_path,
    )
    res = run.result("register")
    assert res.get("failed") is True
    assert "classification rule 'broken'" in res["msg"] and "JMESPath" in res["msg"]
    with kube_env.api("admin") as api:
        names = [
            h["metadata"]["name"]
            for h in client.CustomObjectsApi(api).list_namespaced_custom_object(
                GROUP, VERSION, fleet_namespace, "baremetalhosts"
            )["items"]
        ]
    assert "never-made" not in names


# Ironic answers at most PAGE_LIMIT items per list; the fleet below is larger.
PAGE_LIMIT = 3
PAGED_FLEET = {"small": 4, "medium": 2, "large": 2}


@pytest.fixture(scope="module")
def small_page_openstack(tmp_path_factory):
    """Its own Keystone + Ironic + sushy-tools, Ironic with ``[api] max_limit`` = PAGE_LIMIT."""
    from harness import openstack as openstack_harness
    from harness import sushy as sushy_harness

    systems = sushy_harness.profile_systems(PAGED_FLEET, prefix="paged", first_index=300)
    env = openstack_harness.start_openstack(
        tmp_path_factory.mktemp("openstack-small-pages"),
        tenants=(),
        sushy_systems=systems,
        database="postgresql",
        ironic_config="[api]\nmax_limit = %d\n" % PAGE_LIMIT,
    )
    try:
        yield env
    finally:
        env.stop()


def test_a_fleet_larger_than_one_ironic_page_registers_without_duplicates(small_page_openstack, tmp_path):
    env = small_page_openstack
    conn = env.admin_conn
    bmcs = env.bmcs
    assert len(bmcs) > 2 * PAGE_LIMIT
    # Ironic really pages: a raw list asking for more gets PAGE_LIMIT items and a next link.
    first_page = conn.baremetal.get("/nodes?limit=100", microversion="1.78").json()
    assert first_page["nodes"] == []
    args = {
        "backend": "ironic",
        "cloud": "admin",
        "owner": "infra",
        "hosts": [{"address": b.address, "username": b.username, "password": b.password} for b in bmcs],
        "rules": RULES,
        "workers": 4,
        "wait_timeout": 300,
    }
    play = localhost_play([_register_task(args)])
    first = run_playbook(play, env.ansible_env("admin"), tmp_path / "first")
    assert first.ok, first.explain()
    assert {h["status"] for h in first.result("register")["hosts"]} == {"registered"}
    page = conn.baremetal.get("/nodes?limit=100&fields=uuid", microversion="1.78").json()
    assert len(page["nodes"]) == PAGE_LIMIT and page.get("next"), page

    # The second run finds every node, on every page: nothing is created or changed.
    second = run_playbook(play, env.ansible_env("admin"), tmp_path / "second")
    assert second.ok, second.explain()
    res = second.result("register")
    assert res["changed"] is False, res["hosts"]
    assert [h["status"] for h in res["hosts"]] == ["unchanged"] * len(bmcs)
    nodes = list(conn.baremetal.nodes(fields=["uuid", "name", "extra"]))
    assert len(nodes) == len(bmcs)
    systems = [(n.extra or {}).get("system_uuid") for n in nodes]
    assert sorted(systems) == sorted(b.uuid for b in bmcs)
    assert len({n.name for n in nodes}) == len(bmcs)
