"""The ironic_tenancy role against the real Keystone and Ironic.

One run creates a project with two users (member; manager), sets a
node's owner and writes a policy file (here to a scratch path: the live one
is written by the ``ironic_tenancy_policy`` fixture through the same role,
and every tenant test of the suite relies on it). Then: the users really log
in with project-scoped tokens holding their roles, the owner changed in
Ironic, the policy file holds the rules the variables ask for; a second run
changes nothing; a check-mode run with another owner reports the change and
makes none.
"""

from __future__ import annotations

import yaml
from harness import openstack as openstack_harness
from harness.ansible import localhost_play, run_playbook


def role_play(**role_vars):
    return localhost_play([], roles=[{"role": "baremetal.tenancy.ironic_tenancy", "vars": role_vars}])


def test_role_projects_users_owner_and_policy(openstack_env, enroll_node, tmp_path):
    enroll_node("ir-owned-0", resource_class="rc-role")
    policy = tmp_path / "policy.yaml"
    role_vars = dict(
        ironic_tenancy_cloud="admin",
        ironic_tenancy_policy_file=str(policy),
        ironic_tenancy_lessee_deploy_roles=["member"],
        ironic_tenancy_policy_rules={"baremetal:node:get:last_error": "rule:baremetal_tenancy:node_reader"},
        ironic_tenancy_projects=[
            {
                "name": "ir-tenant",
                "description": "role test",
                "users": [
                    {"name": "ir-alice", "password": "ir-alice-password-1"},
                    {"name": "ir-bob", "password": "ir-bob-password-1", "roles": ["manager"]},
                ],
            }
        ],
        ironic_tenancy_nodes=[{"name": "ir-owned-0", "owner": "ir-tenant"}],
    )
    env = openstack_env.ansible_env("admin")
    first = run_playbook(role_play(**role_vars), env, tmp_path / "first")
    assert first.ok, first.explain()
    assert first.report["stats"]["localhost"]["changed"] >= 5
    assert "ir-alice-password-1" not in first.stdout + first.stderr

    admin = openstack_env.admin_conn
    project = admin.identity.find_project("ir-tenant", ignore_missing=False)
    assert project.description == "role test"
    auth = {
        "auth_url": openstack_env.keystone.url,
        "user_domain_name": "Default",
        "project_name": "ir-tenant",
        "project_domain_name": "Default",
    }
    alice = openstack_harness.connect(dict(auth, username="ir-alice", password="ir-alice-password-1"))
    assert alice.current_project_id == project.id
    assert "member" in alice.session.auth.get_access(alice.session).role_names
    bob = openstack_harness.connect(dict(auth, username="ir-bob", password="ir-bob-password-1"))
    assert "manager" in bob.session.auth.get_access(bob.session).role_names
    assert admin.baremetal.get_node("ir-owned-0").owner == project.id

    rules = yaml.safe_load(policy.read_text())
    assert rules["baremetal:node:update_instance_info"] == "rule:baremetal_tenancy:node_deployer"
    assert rules["baremetal_tenancy:node_lessee_deployer"] == "(role:member) and project_id:%(node.lessee)s"
    assert rules["baremetal:allocation:create_restricted"] == "rule:baremetal_tenancy:system_member"
    assert rules["baremetal:node:get:last_error"] == "rule:baremetal_tenancy:node_reader"
    # Node writes a lessee does not need are the owner's (issue 12); a lessee never writes owner, lessee or driver_info.
    for name in (
        "baremetal:node:update",
        "baremetal:node:update_extra",
        "baremetal:node:vif:attach",
        "baremetal:node:set_maintenance",
        "baremetal:node:vmedia:attach",
    ):
        assert rules[name] == "rule:baremetal_tenancy:node_admin", name
    assert "lessee" not in rules["baremetal_tenancy:node_admin"]
    # oslo.policy lets an override of a rule's deprecated name stand for the rule: every
    # rule whose deprecated name the file overrides is written out too, the ones that
    # guard BMC data with Ironic's own default.
    from ironic.common import policy as ironic_policy

    defaults = {rule.name: rule for rule in ironic_policy.list_policies()}
    for name, default in defaults.items():
        deprecated = getattr(default, "deprecated_rule", None)
        if deprecated is not None and deprecated.name in rules:
            assert name in rules, name
    for name in (
        "baremetal:node:get:filter_threshold",
        "baremetal:node:get:driver_info",
        "baremetal:node:get:driver_internal_info",
        "baremetal:node:history:get",
        "baremetal:node:update:owner",
        "baremetal:node:update:lessee",
        "baremetal:node:update:driver_info",
        "baremetal:node:update:properties",
        "baremetal:node:update:instance_uuid",
        "baremetal:node:update:network_data",
        "baremetal:node:update:name",
        "baremetal:node:update:retired",
        "baremetal:node:update:driver_interfaces",
        "baremetal:node:update:chassis_uuid",
        "baremetal:node:update:conductor_group",
        "baremetal:node:set_boot_device",
        "baremetal:volume:view_target_properties",
    ):
        assert rules[name] == defaults[name].check_str, name

    second = run_playbook(role_play(**role_vars), env, tmp_path / "second")
    assert second.ok, second.explain()
    assert second.report["stats"]["localhost"]["changed"] == 0
    assert second.result("baremetal.tenancy.ironic_tenancy : Set the owner of the nodes")["requests"]["writes"] == 0

    moved = dict(role_vars)
    moved.update(
        {
            "ironic_tenancy_nodes": [{"name": "ir-owned-0", "owner": "infra"}],
            "ironic_tenancy_lessee_deploy_roles": ["manager"],
        }
    )
    check = run_playbook(role_play(**moved), env, tmp_path / "check", check=True, diff=True)
    assert check.ok, check.explain()
    changed = sorted(name.split(" : ")[-1] for name, result in check.tasks.items() if result.get("changed"))
    assert changed == ["Set the owner of the nodes", "Write the owner/lessee policy file for Ironic"], changed
    owners = check.result("baremetal.tenancy.ironic_tenancy : Set the owner of the nodes")
    infra = admin.identity.find_project("infra", ignore_missing=False)
    assert owners["changes"] == [
        {"host": "ir-owned-0", "before": {"owner": project.id}, "after": {"owner": infra.id}}
    ], owners
    assert owners["requests"]["writes"] == 0
    assert admin.baremetal.get_node("ir-owned-0").owner == project.id
    assert yaml.safe_load(policy.read_text()) == rules
