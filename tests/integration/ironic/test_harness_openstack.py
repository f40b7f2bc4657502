"""First slice on OpenStack: Ironic tenant isolation, driven by ansible-playbook.

Against real Keystone + Ironic (+ sushy-tools for one redfish node):

1. a tenant's project-scoped token lists only the nodes it owns or leases;
2. a lessee cannot change a node's ``owner`` (403);
3. negative control: the same listing against an Ironic with
   ``auth_strategy = noauth`` (same database) returns nodes outside the
   tenant, so the isolation assertion of test 1 would fail without Keystone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from harness import openstack as openstack_harness

ANSIBLE_PLAYBOOK = str(Path(sys.executable).parent / "ansible-playbook")
PREFIX = "iso-"  # names of the nodes this module enrols

LIST_NODES = """\
- name: List the bare-metal nodes visible to this identity
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Read nodes through openstack.cloud
      openstack.cloud.baremetal_node_info:
        cloud: "{{ lookup('ansible.builtin.env', 'OS_CLOUD') }}"
      register: listing

    - name: Save the listing for the test
      ansible.builtin.copy:
        dest: "{{ out }}"
        content: "{{ listing.nodes | to_json }}"
"""

# A lessee tries to take ownership; the play itself asserts the 403.
PATCH_OWNER = """\
- name: A lessee tries to change the owner of a node it leases
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Log in (project-scoped token)
      openstack.cloud.auth:
        cloud: "{{ lookup('ansible.builtin.env', 'OS_CLOUD') }}"
      register: auth

    - name: Find the bare-metal endpoint in the catalog
      ansible.builtin.uri:
        url: "{{ auth_url }}/auth/catalog"
        headers:
          X-Auth-Token: "{{ auth.auth_token }}"
      register: catalog

    - name: PATCH owner
      ansible.builtin.uri:
        url: "{{ ironic_url }}/v1/nodes/{{ node }}"
        method: PATCH
        headers:
          X-Auth-Token: "{{ auth.auth_token }}"
          X-OpenStack-Ironic-API-Version: "1.65"
        body_format: json
        body:
          - op: replace
            path: /owner
            value: "{{ new_owner }}"
        status_code: [200, 403]
      vars:
        ironic_url: >-
          {{ (catalog.json.catalog | selectattr('type', 'equalto', 'baremetal') | first).endpoints
             | selectattr('interface', 'equalto', 'public') | map(attribute='url') | first }}
      register: patch

    - name: Ironic refused it
      ansible.builtin.assert:
        that:
          - patch.status == 403
        fail_msg: "lessee PATCH of owner answered {{ patch.status }}: {{ patch.content | default('') }}"

    - name: Save the answer for the test
      ansible.builtin.copy:
        dest: "{{ out }}"
        content: "{{ {'status': patch.status, 'body': patch.json | default(patch.content | default(''))} | to_json }}"
"""


def run_playbook(tmp_path: Path, name: str, text: str, env: dict, extra_vars: dict) -> Path:
    """Write ``text`` as a playbook and run it with ansible-playbook; return the
    path of the ``out`` file the play writes. Fails with ansible's output."""
    playbook = tmp_path / f"{name}.yml"
    playbook.write_text(text)
    out = tmp_path / f"{name}.out.json"
    ansible_dir = tmp_path / "ansible"
    run_env = dict(os.environ)
    run_env.update(env)
    run_env.update(
        {
            # Keep ansible's state in the test's temp dir, not in ~/.ansible.
            "ANSIBLE_HOME": str(ansible_dir),
            "ANSIBLE_LOCAL_TEMP": str(ansible_dir / "tmp"),
            "ANSIBLE_REMOTE_TEMP": str(ansible_dir / "remote-tmp"),
            "ANSIBLE_LOCALHOST_WARNING": "false",
            "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false",
            "ANSIBLE_NOCOLOR": "1",
        }
    )
    argv = [ANSIBLE_PLAYBOOK, str(playbook), "-e", json.dumps({**extra_vars, "out": str(out)})]
    res = subprocess.run(argv, env=run_env, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 0, f"ansible-playbook {name} failed:\n{res.stdout}\n{res.stderr}"
    return out


def visible_nodes(tmp_path: Path, env: dict) -> list[dict]:
    """``{name, owner, lessee}`` of every node the identity in ``env`` can list."""
    out = run_playbook(tmp_path, f"list-{env['OS_CLOUD']}", LIST_NODES, env, {})
    return [{key: node.get(key) for key in ("name", "owner", "lessee")} for node in json.loads(out.read_text())]


@pytest.fixture(scope="module")
def pool(openstack_env, enroll_node):
    """Nodes owned by infra (leased to a, leased to b, not leased), one owned
    by tenant-a, and one redfish node (a sushy-tools BMC) leased to tenant-a."""
    a = openstack_env.tenants["tenant-a"].project_id
    b = openstack_env.tenants["tenant-b"].project_id
    nodes = {
        "iso-leased-a": enroll_node("iso-leased-a", lessee=a),
        "iso-leased-b": enroll_node("iso-leased-b", lessee=b),
        "iso-unleased": enroll_node("iso-unleased"),
        "iso-owned-a": enroll_node("iso-owned-a", owner=a),
        "iso-redfish-a": enroll_node("iso-redfish-a", lessee=a, bmc=openstack_env.bmcs[0]),
    }
    return nodes


def test_tenant_lists_only_owned_or_leased_nodes(openstack_env, pool, tmp_path):
    tenant_a = openstack_env.tenants["tenant-a"]
    seen = visible_nodes(tmp_path, openstack_env.ansible_env(tenant_a.cloud_name("member")))

    ours = {n["name"] for n in seen if n["name"].startswith(PREFIX)}
    assert ours == {"iso-leased-a", "iso-owned-a", "iso-redfish-a"}
    # Whatever other tests enrolled: tenant-a sees nothing it neither owns nor leases.
    foreign = [n for n in seen if tenant_a.project_id not in (n["owner"], n["lessee"])]
    assert foreign == []

    tenant_b = openstack_env.tenants["tenant-b"]
    seen_b = visible_nodes(tmp_path, openstack_env.ansible_env(tenant_b.cloud_name("member")))
    assert {n["name"] for n in seen_b if n["name"].startswith(PREFIX)} == {"iso-leased-b"}

    # The system-scoped admin cloud sees the whole pool.
    seen_admin = visible_nodes(tmp_path, openstack_env.ansible_env("admin"))
    assert {n["name"] for n in seen_admin if n["name"].startswith(PREFIX)} == set(pool)


def test_lessee_cannot_change_owner(openstack_env, pool, tmp_path):
    tenant_a = openstack_env.tenants["tenant-a"]
    node = pool["iso-leased-a"]
    out = run_playbook(
        tmp_path,
        "patch-owner",
        PATCH_OWNER,
        openstack_env.ansible_env(tenant_a.cloud_name("member")),
        {"auth_url": openstack_env.keystone.url, "node": node.id, "new_owner": tenant_a.project_id},
    )
    answer = json.loads(out.read_text())
    assert answer["status"] == 403
    # Ironic names the policy rule that refused it.
    assert "Access was denied to the following resource: baremetal:node:update:owner" in json.dumps(answer["body"])
    # And nothing changed.
    after = openstack_env.admin_conn.baremetal.get_node(node.id)
    assert after.owner == openstack_env.infra_project_id
    assert after.lessee == tenant_a.project_id


def test_isolation_depends_on_keystone_auth(openstack_env, pool, tmp_path):
    """Negative control: with ``auth_strategy = noauth`` the very same listing
    (same credentials, same nodes) returns other tenants' and unleased nodes,
    so the isolation assertion above would fail."""
    noauth = openstack_harness.start_noauth_ironic(openstack_env, tmp_path / "ironic-noauth")
    try:
        clouds = openstack_env.write_clouds_yaml(
            tmp_path / "clouds-noauth.yaml", baremetal_endpoint_override=noauth.url
        )
        tenant_a = openstack_env.tenants["tenant-a"]
        seen = visible_nodes(tmp_path, openstack_env.ansible_env(tenant_a.cloud_name("member"), clouds))
    finally:
        noauth.stop()

    ours = {n["name"] for n in seen if n["name"].startswith(PREFIX)}
    assert ours == set(pool), "noauth Ironic should show every node"
    assert ours != {"iso-leased-a", "iso-owned-a", "iso-redfish-a"}
    assert {"iso-leased-b", "iso-unleased"} <= ours
