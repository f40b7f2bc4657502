"""``host_share``, the owner's side of sharing, run through ansible-playbook on both backends.

Metal3 (real kube-apiserver, real BareMetalHosts of Metal3's baremetal-operator,
``real_bmo``): the owner classifies and shares BareMetalHosts (the policy in the
annotation ``baremetal.tenancy/host-claim-namespaces``); check mode shows the
change (with --diff) and writes nothing; the real run writes only the hosts
that change and a second run writes nothing at all; a bad entry and a name
that is no host each fail with one error naming the entry, and nothing
changes; a tenant's credentials are refused by the API server (positive
control: the same task as the admin succeeds). No BMC value appears in any
output.

Metal3, migration (a cluster without the operator, not ``real_bmo``): a host shared by an earlier
release, in ``spec.hostClaimNamespaces``, is migrated in the same patch as its
annotation. Such a host exists only where no baremetal-operator runs (the
bundled BareMetalHost CRD): BMO's CRD has no such field (the apiserver prunes
it), and where an earlier release added it, BMO's typed writes drop it at the
first reconcile (test_metal3_operator.py::test_bmo_drops_a_spec_field_its_types_lack).
So this one test runs where such hosts exist: on the collection's own CRD,
with no operator (the hosts are objects only; nobody writes their status).

Ironic (real Keystone and Ironic): the same for node owners, with the
project given by name and resolved in Keystone; an unknown node or project
fails before any write; a tenant project's credentials change nothing.
"""

from __future__ import annotations

import pytest
from fixtures_metal3 import sharing
from harness.ansible import localhost_play, run_playbook

INFRA = "hs-infra"
LEGACY_INFRA = "hs-legacy-infra"
TENANT = "baremetal.tenancy/tenant"
SHARING = "baremetal.tenancy/host-claim-namespaces"
ENTRIES = [
    {"names": ["hs-0", "hs-1"], "class": "small", "share": {"all_tenants": True}},
    {"selector": {"rack": "r7"}, "class": "large", "labels": {"gpu": True}, "share": {"tenants": ["team-b"]}},
]


def share_task(args, name="share", **task):
    return dict({"name": name, "baremetal.tenancy.host_share": args}, **task)


@pytest.fixture(scope="module")
def pool(metal3_bmo_env):
    env = metal3_bmo_env
    env.tenant_namespace(INFRA, None)
    hosts = {"hs-0": {}, "hs-1": {}, "hs-2": {"rack": "r7"}}
    for index, (name, labels) in enumerate(hosts.items()):
        env.create_host(INFRA, name, labels=labels, index=700 + index, wait=False)
    env.wait_hosts(INFRA, list(hosts), state="available", timeout=300)
    yield env
    # Hosts shared with every tenant must not outlive the module: later suites' claims would take them.
    env.delete_hosts(INFRA)


def snapshot(env):
    """What a client can write to each host (the operator writes its status on its own)."""
    return {
        h["metadata"]["name"]: (
            h["metadata"]["generation"],
            h["metadata"].get("labels"),
            h["metadata"].get("annotations"),
            h["spec"],
        )
        for h in env.hosts(INFRA)
    }


def no_bmc_values(env, run):
    text = run.stdout + run.stderr
    for value in env.bmc_values(INFRA, ["hs-0", "hs-1", "hs-2"]):
        assert value not in text, value


@pytest.mark.real_bmo
def test_metal3_check_mode_shows_the_change_and_writes_nothing(pool):
    before = snapshot(pool)
    run = pool.playbook("admin", [share_task({"namespace": INFRA, "hosts": ENTRIES})], check=True, diff=True)
    assert run.ok, run.explain()
    result = run.result("share")
    assert result["changed"]
    assert sorted(change["host"] for change in result["changes"]) == ["hs-0", "hs-1", "hs-2"]
    assert result["diff"]["after"]["hosts"]["hs-2"]["labels"] == {"rack": "r7", "infra-kind": "large", "gpu": "true"}
    assert result["diff"]["after"]["hosts"]["hs-2"]["sharing"] == {"withLabel": [TENANT + "=team-b"]}
    assert result["diff"]["before"]["hosts"]["hs-1"] == {"labels": {}, "sharing": None}
    assert result["diff"]["after"]["hosts"]["hs-1"] == {
        "labels": {"infra-kind": "small"},
        "sharing": {"withLabel": [TENANT]},
    }
    assert result["requests"]["writes"] == 0
    assert snapshot(pool) == before
    no_bmc_values(pool, run)


@pytest.mark.real_bmo
def test_metal3_tenant_credentials_are_refused_and_change_nothing(pool):
    before = snapshot(pool)
    run = pool.playbook("tenant-a", [share_task({"namespace": INFRA, "hosts": ENTRIES}, ignore_errors=True)])
    result = run.result("share")
    assert result.get("failed") and "BareMetalHosts in namespace %s" % INFRA in result["msg"], result
    assert "403" in result["msg"] or "forbidden" in result["msg"], result["msg"]
    assert snapshot(pool) == before


@pytest.mark.real_bmo
def test_metal3_bad_entry_fails_with_one_error_naming_it_and_changes_nothing(pool):
    before = snapshot(pool)
    cases = [
        (
            [ENTRIES[0], {"name": "hs-2", "share": {"tenants": ["Team_B"]}}],
            "hosts[1]: share.tenants: tenant name 'Team_B'",
        ),
        ([ENTRIES[0], {"name": "hs-2", "labels": {"bad key": "x"}}], "hosts[1]: labels: key 'bad key'"),
        ([ENTRIES[0], {"name": "hs-2", "share": {"tenant": ["b"]}}], "hosts[1]: share has unknown key(s) tenant"),
        ([ENTRIES[0], {"name": "hs-2", "share": {"matches": "("}}], "hosts[1]: share.matches '(' is not a valid RE2"),
        (
            [ENTRIES[0], {"names": ["hs-9"], "class": "x"}, {"selector": {"rack": "r9"}, "class": "x"}],
            "hosts[1]: no BareMetalHost named hs-9 in namespace %s; hosts[2]: no BareMetalHost in namespace %s "
            'carries the labels {"rack": "r9"}. Nothing was changed' % (INFRA, INFRA),
        ),
    ]
    tasks = [
        share_task({"namespace": INFRA, "hosts": hosts}, name="case %d" % i, ignore_errors=True)
        for i, (hosts, _expected) in enumerate(cases)
    ]
    run = pool.playbook("admin", tasks)
    for index, (_hosts, expected) in enumerate(cases):
        result = run.result("case %d" % index)
        assert result.get("failed"), result
        assert expected in result["msg"], result["msg"]
    assert snapshot(pool) == before


@pytest.mark.real_bmo
def test_metal3_share_then_a_second_run_writes_nothing(pool):
    run = pool.playbook(
        "admin",
        [
            share_task({"namespace": INFRA, "hosts": ENTRIES}, name="first"),
            share_task({"namespace": INFRA, "hosts": ENTRIES}, name="second"),
        ],
    )
    assert run.ok, run.explain()
    first, second = run.result("first"), run.result("second")
    assert first["changed"] and first["requests"]["writes"] == 3 and first["requests"]["list"] == 1
    assert not second["changed"] and second["requests"]["writes"] == 0 and second["changes"] == []
    hosts = {h["metadata"]["name"]: h for h in pool.hosts(INFRA)}
    assert hosts["hs-0"]["metadata"]["labels"]["infra-kind"] == "small"
    assert hosts["hs-0"]["metadata"]["annotations"][SHARING] == '{"withLabel":["baremetal.tenancy/tenant"]}'
    assert sharing(hosts["hs-1"]) == {"withLabel": [TENANT]}
    assert hosts["hs-2"]["metadata"]["labels"] == {"rack": "r7", "infra-kind": "large", "gpu": "true"}
    assert sharing(hosts["hs-2"]) == {"withLabel": [TENANT + "=team-b"]}
    assert hosts["hs-2"]["spec"]["bmc"]["credentialsName"] == "hs-2-bmc-secret"

    stop = pool.playbook(
        "admin", [share_task({"namespace": INFRA, "hosts": [{"name": "hs-2", "share": {}, "labels": {"gpu": None}}]})]
    )
    assert stop.ok, stop.explain()
    host = pool.host(INFRA, "hs-2")
    assert sharing(host) is None and "gpu" not in host["metadata"]["labels"]
    no_bmc_values(pool, run)


@pytest.fixture(scope="module")
def legacy_pool(metal3_env):
    """Hosts on the collection's own CRD, no operator (BMO's CRD prunes ``spec.hostClaimNamespaces``):
    hs-l1 shared by an earlier release."""
    metal3_env.tenant_namespace(LEGACY_INFRA, None)
    metal3_env.create_host(LEGACY_INFRA, "hs-l0", index=710)
    metal3_env.create_host(LEGACY_INFRA, "hs-l1", index=711, legacy_policy={"withLabel": [TENANT]})
    yield metal3_env
    metal3_env.delete_hosts(LEGACY_INFRA)


def test_metal3_legacy_field_is_migrated_in_the_same_patch(legacy_pool):
    """Not real_bmo: only the collection's own BareMetalHost CRD keeps
    ``spec.hostClaimNamespaces``; BMO's CRD prunes it, and BMO's own writes drop it where it was added
    (test_metal3_operator.py), so no such host can be staged on the real operator. Units cover the same
    patch (tests/unit/plugins/module_utils/metal3/share/test_share.py)."""
    env = legacy_pool
    assert env.host(LEGACY_INFRA, "hs-l1")["spec"]["hostClaimNamespaces"] == {"withLabel": [TENANT]}
    entries = [{"names": ["hs-l0", "hs-l1"], "class": "small", "share": {"all_tenants": True}}]
    args = {"namespace": LEGACY_INFRA, "hosts": entries}
    run = env.playbook(
        "admin",
        [
            share_task(args, name="check", check_mode=True, diff=True),
            share_task(args, name="first"),
            share_task(args, name="second"),
        ],
    )
    assert run.ok, run.explain()
    check = run.result("check")
    # the migration shows: the old field before, the annotation after; check mode writes nothing
    assert check["diff"]["before"]["hosts"]["hs-l1"] == {
        "labels": {},
        "sharing": None,
        "legacy_sharing": {"withLabel": [TENANT]},
    }
    assert check["diff"]["after"]["hosts"]["hs-l1"] == {
        "labels": {"infra-kind": "small"},
        "sharing": {"withLabel": [TENANT]},
    }
    assert check["requests"]["writes"] == 0
    first, second = run.result("first"), run.result("second")
    # hs-l1's old field went in the same patch as its annotation (2 writes for 2 hosts)
    assert first["changed"] and first["requests"]["writes"] == 2
    assert not second["changed"] and second["requests"]["writes"] == 0
    hosts = {h["metadata"]["name"]: h for h in env.hosts(LEGACY_INFRA)}
    assert sharing(hosts["hs-l1"]) == {"withLabel": [TENANT]}
    assert not [name for name, host in hosts.items() if "hostClaimNamespaces" in host["spec"]]


# --------------------------------------------------------------------------- ironic


@pytest.fixture(scope="module")
def nodes(openstack_env, enroll_node):
    for name in ("hs-node-0", "hs-node-1"):
        enroll_node(name, resource_class="rc-share")
    return openstack_env


def owners(env):
    conn = env.admin_conn
    return {name: conn.baremetal.get_node(name).owner for name in ("hs-node-0", "hs-node-1")}


def ironic_run(env, cloud, tasks, tmp_path, **kwargs):
    return run_playbook(localhost_play(tasks), env.ansible_env(cloud), tmp_path, **kwargs)


def test_ironic_owner_set_by_project_name_check_mode_then_twice(nodes, tmp_path):
    tenant_id = nodes.tenants["tenant-a"].project_id
    infra_id = nodes.infra_project_id
    assert owners(nodes) == {"hs-node-0": infra_id, "hs-node-1": infra_id}
    hosts = [{"names": ["hs-node-0", "hs-node-1"], "owner": "tenant-a"}, {"name": "hs-node-1", "owner": "infra"}]
    args = {"backend": "ironic", "hosts": hosts}

    check = ironic_run(nodes, "admin", [share_task(args)], tmp_path / "check", check=True, diff=True)
    assert check.ok, check.explain()
    result = check.result("share")
    assert result["changed"] and result["requests"]["writes"] == 0
    assert result["changes"] == [{"host": "hs-node-0", "before": {"owner": infra_id}, "after": {"owner": tenant_id}}]
    assert result["diff"]["after"] == {"hosts": {"hs-node-0": {"owner": tenant_id}}}
    assert owners(nodes) == {"hs-node-0": infra_id, "hs-node-1": infra_id}

    run = ironic_run(
        nodes, "admin", [share_task(args, name="first"), share_task(args, name="second")], tmp_path / "run"
    )
    assert run.ok, run.explain()
    assert run.result("first")["changed"] and run.result("first")["requests"]["writes"] == 1
    assert {p["project"]: p["check"] for p in run.result("first")["projects"]} == {
        "tenant-a": "verified",
        "infra": "verified",
    }
    assert not run.result("second")["changed"] and run.result("second")["requests"]["writes"] == 0
    assert owners(nodes) == {"hs-node-0": tenant_id, "hs-node-1": infra_id}

    back = ironic_run(
        nodes,
        "admin",
        [share_task({"backend": "ironic", "hosts": [{"name": "hs-node-0", "owner": infra_id}]})],
        tmp_path / "back",
    )
    assert back.ok, back.explain()
    assert owners(nodes) == {"hs-node-0": infra_id, "hs-node-1": infra_id}


def test_ironic_bad_input_and_tenant_credentials_change_nothing(nodes, tmp_path):
    before = owners(nodes)
    cases = [
        (
            "admin",
            [{"name": "hs-node-0", "owner": "tenant-a"}, {"name": "hs-node-9", "owner": "tenant-a"}],
            "hosts[1]: no node hs-node-9 in Ironic. Nothing was changed",
        ),
        (
            "admin",
            [{"name": "hs-node-0", "owner": "no-such-project"}],
            "option owner: project no-such-project: does not exist in Keystone",
        ),
        (
            "admin",
            [{"name": "hs-node-0", "owner": "tenant-a", "share": {}}],
            "hosts[0]: share only work with backend metal3",
        ),
        ("tenant-a", [{"name": "hs-node-0", "owner": "tenant-a"}], None),
        ("infra-manager", [{"name": "hs-node-0", "owner": "tenant-a"}], None),
    ]
    for index, (cloud, hosts, expected) in enumerate(cases):
        run = ironic_run(
            nodes, cloud, [share_task({"backend": "ironic", "hosts": hosts}, ignore_errors=True)], tmp_path / str(index)
        )
        result = run.result("share")
        assert result.get("failed"), (cloud, result)
        if expected:
            assert expected in result["msg"], result["msg"]
        assert owners(nodes) == before, (cloud, result)
