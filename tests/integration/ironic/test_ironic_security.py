"""Cross-tenant and bad-input defences on the real Ironic (issue 12, Ironic side).

Keystone + Ironic (PostgreSQL) + sushy-tools from the session harness, Ironic's
policy file written by the ``ironic_tenancy`` role (fixture
``ironic_tenancy_policy``); every user step runs ``ansible-playbook`` with the
user's own credentials. Raw API calls play the hostile tenant (what a tenant
can do without the collection's modules) and check what Ironic really holds.

What each test proves:

- a lessee cannot plant the next tenant's ``ansible_host``: it cannot write
  node ``extra``; what it could write on the node is gone when its lease ends;
  the next tenant's inventory takes ``ansible_host`` from the owner's record
  only (defect 1);
- a claim's name that host_claim leaves on a node for the inventory, rewritten
  by the lessee to name another project (the node's owner), does not reach
  that project's inventory (issue 20's node-list reading);
- the sweep: as a lessee (``member``), every node field, every port field and
  every node sub-resource write is tried; only a reviewed allow-list passes
  Ironic's policy (defect 1's class);
- releasing a claim clears everything the tenant could write on the node
  (defect 1, part b), and a deployment carries nothing an earlier holder of
  the node left in ``instance_info`` (same class);
- a tenant cannot deploy a file of the conductor: ``host_claim`` refuses
  ``file://`` URLs unless the owner allows a path prefix, and Ironic itself
  refuses to read ``/etc`` when the module is bypassed (defect 3);
- ``host_lease`` and ``host_register`` refuse a project Keystone does not know,
  naming it, and change nothing (defect 4);
- a non-admin owner project (its ``member`` user) powers and deploys its own
  node and leases one to a tenant (``verify_projects: false`` because its
  credentials cannot read other projects, which the result says);
- a tenant reboots its Ironic host with ``host_claim`` (the ``host.metal3.io/reboot``
  annotation, as with Metal3): Ironic's ``rebooting`` power target.
"""

from __future__ import annotations

import json
import time
import uuid

import pytest
from fixtures_inventory import inventory, write_source
from harness.ansible import localhost_play, run_playbook
from harness.openstack import enroll_redfish_node, wait_for_node

MD5 = "9f6c1a0f5e2b4c8d7a3e1f0b2c4d6e8f"
IMAGE = {"url": "http://images.example.com/os.qcow2", "checksum": MD5, "checksum_type": "md5", "format": "qcow2"}
PLANTED = "203.0.113.66"
UNKNOWN_PROJECT = "0123456789abcdef0123456789abcdef"
LATEST = "1.109"  # Ironic 39's newest microversion: every field the API knows

# What a lessee (``member``) may write under the ironic_tenancy policy, reviewed:
# the deployment (instance_info and its display name instance_name, both cleared
# when the claim or the lease ends), power and the provision state (deploy/undeploy).
ALLOWED_NODE_PATHS = {"instance_info", "instance_name"}
ALLOWED_PORT_PATHS: set[str] = set()
ALLOWED_ACTIONS = {"power", "provision:deploy"}


def task(title, module, args, **extra):
    t = {"name": title, module: dict(args)}
    t.update(extra)
    return t


def lease(title, **args):
    return task(title, "baremetal.tenancy.host_lease", args, ignore_errors=True)


def claim(title, **args):
    return task(title, "baremetal.tenancy.host_claim", dict(backend="ironic", **args), ignore_errors=True)


def tenant_env(env, tenant, role="member"):
    return env.ansible_env(env.tenants[tenant].cloud_name(role))


def raw(conn, method, path, body=None):
    """One Ironic call as ``conn``'s user: (status, text)."""
    kwargs = {"microversion": LATEST, "raise_exc": False}
    if body is not None:
        kwargs["json"] = body
    response = getattr(conn.baremetal, method)(path, **kwargs)
    return response.status_code, response.text


# ---------------------------------------------------------------------------------------------
# defect 1: the next tenant's ansible_host


def test_lessee_cannot_plant_the_next_tenants_address(openstack_env, enroll_node, ironic_tenancy_policy, tmp_path):
    a = openstack_env.tenants["tenant-a"]
    b = openstack_env.tenants["tenant-b"]
    admin = openstack_env.admin_conn.baremetal
    node = enroll_node("isec-plant-0", resource_class="rc-plant")
    # The owner's record of the host's address (an owner member may write extra).
    owner = openstack_env.infra.conn("member")
    status, text = raw(
        owner,
        "patch",
        "/nodes/%s" % node.id,
        [{"op": "add", "path": "/extra/addresses", "value": [{"type": "InternalIP", "address": "192.0.2.77"}]}],
    )
    assert status == 200, text

    admin_env = openstack_env.ansible_env("admin")
    run = run_playbook(
        localhost_play([lease("lease to a", project=a.project_id, nodes=["isec-plant-0"])]),
        admin_env,
        tmp_path / "lease-a",
    )
    assert run.ok and run.result("lease to a")["changed"] is True, run.explain()

    # tenant-a, holding the lease, tries to plant an address for whoever comes next.
    hostile = a.conn("member")
    extra_status, dummy = raw(
        hostile,
        "patch",
        "/nodes/%s" % node.id,
        [{"op": "add", "path": "/extra/addresses", "value": [{"type": "ExternalIP", "address": PLANTED}]}],
    )
    info_status, _dummy = raw(
        hostile,
        "patch",
        "/nodes/%s" % node.id,
        [
            {
                "op": "add",
                "path": "/instance_info/baremetal_tenancy_addresses",
                "value": [{"type": "ExternalIP", "address": PLANTED}],
            },
            {"op": "add", "path": "/instance_name", "value": "planted-by-a"},
        ],
    )

    run = run_playbook(
        localhost_play(
            [
                lease("end a", state="absent", project=a.project_id, nodes=["isec-plant-0"]),
                lease("lease to b", project=b.project_id, nodes=["isec-plant-0"]),
            ]
        ),
        admin_env,
        tmp_path / "rotate",
    )
    assert run.ok and run.result("end a")["changed"] is True, run.explain()
    assert run.result("lease to b")["changed"] is True, run.result("lease to b")

    deployed = run_playbook(
        localhost_play(
            [claim("claim", name="isec-next", resource_class="rc-plant", image=IMAGE, wait=True, wait_timeout=300)]
        ),
        tenant_env(openstack_env, "tenant-b"),
        tmp_path / "claim-b",
    )
    assert deployed.ok and deployed.result("claim")["claim"]["ready"] is True, deployed.explain()

    source = write_source(tmp_path / "b.claimed_hosts.yml", backend="ironic")
    data, text = inventory(source, tenant_env(openstack_env, "tenant-b"), tmp_path)
    fresh = admin.get_node(node.id)
    observed = {
        "lessee PATCH extra": extra_status,
        "planted address in the next tenant's inventory": PLANTED in text,
        "planted address left on the node": PLANTED in json.dumps([fresh.extra, fresh.instance_info]),
        "ansible_host of the next tenant": data["_meta"]["hostvars"].get("isec-next", {}).get("ansible_host"),
    }
    assert observed == {
        "lessee PATCH extra": 403,
        "planted address in the next tenant's inventory": False,
        "planted address left on the node": False,
        "ansible_host of the next tenant": "192.0.2.77",
    }, observed
    # The lessee could write instance_info and instance_name (its deployment); the lease end cleared them.
    assert info_status == 200
    assert fresh.instance_info.get("baremetal_tenancy_addresses") is None
    status, text = raw(openstack_env.admin_conn, "get", "/nodes/%s?fields=instance_name" % node.id)
    assert json.loads(text)["instance_name"] != "planted-by-a"


# ---------------------------------------------------------------------------------------------
# defect 1's class: the sweep of every field a lessee might write


def _node_field_value(field, node):
    """A well-formed value for ``field`` (the node's own value where it has one: a no-op if admitted)."""
    current = node.get(field)
    specials = {
        "extra": ("/extra/sweep", "x"),
        "instance_info": ("/instance_info/sweep", "x"),
        "properties": ("/properties/sweep", "x"),
        "driver_info": ("/driver_info/sweep", "x"),
        "description": ("/description", "sweep"),
        "instance_name": ("/instance_name", "sweep"),
        "instance_uuid": ("/instance_uuid", str(uuid.uuid4())),
        "chassis_uuid": ("/chassis_uuid", str(uuid.uuid4())),
        "protected": ("/protected", True),
        "protected_reason": ("/protected_reason", "sweep"),
        "retired_reason": ("/retired_reason", "sweep"),
        "shard": ("/shard", "sweep"),
        "parent_node": ("/parent_node", node["uuid"]),
        "automated_clean": ("/automated_clean", True),
        "network_data": ("/network_data", {"links": [], "networks": [], "services": []}),
        "maintenance": ("/maintenance", False),
        "retired": ("/retired", False),
        "disable_power_off": ("/disable_power_off", False),
        "conductor_group": ("/conductor_group", current or ""),
    }
    if field in specials:
        return specials[field]
    return "/" + field, current


def _sweep_node(conn, admin, node_id, fields):
    node = json.loads(raw(admin, "get", "/nodes/%s" % node_id)[1])
    writable = {}
    for field in sorted(fields):
        path, value = _node_field_value(field, node)
        status, dummy = raw(conn, "patch", "/nodes/%s" % node_id, [{"op": "add", "path": path, "value": value}])
        if status != 403:
            writable[field] = status
    # automated_clean false is its own rule (disable_cleaning).
    status, _dummy = raw(
        conn, "patch", "/nodes/%s" % node_id, [{"op": "add", "path": "/automated_clean", "value": False}]
    )
    if status != 403:
        writable["automated_clean=false"] = status
    return writable


def _sweep_port(conn, admin, port_id, fields):
    port = json.loads(raw(admin, "get", "/ports/%s" % port_id)[1])
    values = {
        "extra": ("/extra/sweep", "x"),
        "local_link_connection": ("/local_link_connection", {}),
        "physical_network": ("/physical_network", "sweep"),
        "portgroup_uuid": ("/portgroup_uuid", str(uuid.uuid4())),
        "name": ("/name", "sweep"),
        "description": ("/description", "sweep"),
        "vendor": ("/vendor", "sweep"),
        "category": ("/category", "sweep"),
        "is_smartnic": ("/is_smartnic", False),
        "available_for_dynamic_portgroup": ("/available_for_dynamic_portgroup", False),
    }
    writable = {}
    for field in sorted(fields):
        path, value = values.get(field, ("/" + field, port.get(field)))
        status, _dummy = raw(conn, "patch", "/ports/%s" % port_id, [{"op": "add", "path": path, "value": value}])
        if status != 403:
            writable[field] = status
    return writable


def _sweep_actions(conn, node_id, port_id, mac_base):
    """Every other write on the node and its children: (name, method, path, body)."""
    n = "/nodes/%s" % node_id
    actions = [
        ("power", "put", n + "/states/power", {"target": "power off"}),
        ("provision:deploy", "put", n + "/states/provision", {"target": "active"}),
        (
            "provision:clean_steps",
            "put",
            n + "/states/provision",
            {"target": "clean", "clean_steps": [{"interface": "deploy", "step": "erase_devices_metadata"}]},
        ),
        (
            "provision:service_steps",
            "put",
            n + "/states/provision",
            {"target": "service", "service_steps": [{"interface": "deploy", "step": "erase_devices_metadata"}]},
        ),
        ("maintenance", "put", n + "/maintenance", {"reason": "sweep"}),
        ("traits:set", "put", n + "/traits", {"traits": ["CUSTOM_SWEEP"]}),
        ("traits:add", "put", n + "/traits/CUSTOM_SWEEP", None),
        ("traits:delete", "delete", n + "/traits", None),
        ("boot_device", "put", n + "/management/boot_device", {"boot_device": "pxe"}),
        ("boot_mode", "put", n + "/states/boot_mode", {"target": "uefi"}),
        ("secure_boot", "put", n + "/states/secure_boot", {"target": False}),
        ("inject_nmi", "put", n + "/management/inject_nmi", {}),
        ("raid", "put", n + "/states/raid", {"logical_disks": []}),
        ("console", "put", n + "/states/console", {"enabled": False}),
        ("vif:attach", "post", n + "/vifs", {"id": str(uuid.uuid4())}),
        (
            "vmedia:attach",
            "post",
            n + "/vmedia",
            {"device_type": "cdrom", "image_url": "http://images.example.com/x.iso"},
        ),
        ("vmedia:detach", "delete", n + "/vmedia", None),
        ("port:create", "post", "/ports", {"node_uuid": node_id, "address": "52:54:00:5e:e9:%02x" % (mac_base + 1)}),
        ("port:delete", "delete", "/ports/%s" % port_id, None),
        (
            "portgroup:create",
            "post",
            "/portgroups",
            {"node_uuid": node_id, "address": "52:54:00:5e:e9:%02x" % (mac_base + 2)},
        ),
        (
            "volume:connector",
            "post",
            "/volume/connectors",
            {"node_uuid": node_id, "type": "iqn", "connector_id": "iqn.2026-11.test:sweep"},
        ),
        (
            "volume:target",
            "post",
            "/volume/targets",
            {"node_uuid": node_id, "volume_type": "iscsi", "boot_index": 0, "volume_id": "sweep"},
        ),
        ("node:delete", "delete", n, None),
    ]
    writable = {}
    for name, method, path, body in actions:
        status, _dummy = raw(conn, method, path, body)
        if status != 403:
            writable[name] = status
    return writable


def test_a_claim_name_forged_on_a_node_reaches_no_other_tenants_inventory(
    openstack_env, enroll_node, ironic_tenancy_policy, tmp_path
):
    """A node that tenant-a owns and leases to tenant-b: tenant-b (the lessee, who may write instance_info)
    rewrites the claim key host_claim left on it to name tenant-a's project. tenant-a's inventory lists the
    node (it owns it) but must not take tenant-b's claim for its own; tenant-b still sees its claim, by the
    allocation's true name."""
    a = openstack_env.tenants["tenant-a"]
    b = openstack_env.tenants["tenant-b"]
    admin = openstack_env.admin_conn.baremetal
    node = enroll_node("isec-forge-0", resource_class="rc-forge", owner=a.project_id, lessee=b.project_id)
    deployed = run_playbook(
        localhost_play([claim("claim", name="isec-forge", resource_class="rc-forge", image=IMAGE, wait=True)]),
        tenant_env(openstack_env, "tenant-b"),
        tmp_path / "claim-b",
    )
    assert deployed.ok and deployed.result("claim")["claim"]["ready"] is True, deployed.explain()
    allocation = admin.get_node(node.id).instance_id
    forged = {"name": "forged-by-b", "allocation": allocation, "project": a.project_id}
    status, text = raw(
        b.conn("member"),
        "patch",
        "/nodes/%s" % node.id,
        [{"op": "add", "path": "/instance_info/baremetal_tenancy_claim", "value": forged}],
    )
    assert status == 200, text
    assert admin.get_node(node.id).instance_info["baremetal_tenancy_claim"] == forged

    source = write_source(tmp_path / "forge.claimed_hosts.yml", backend="ironic")
    a_data, a_text = inventory(source, tenant_env(openstack_env, "tenant-a"), tmp_path)
    b_data, dummy = inventory(source, tenant_env(openstack_env, "tenant-b"), tmp_path)
    observed = {
        "tenant-a's hosts": sorted(h for h in a_data["_meta"]["hostvars"] if "forge" in h),
        "forged name anywhere in tenant-a's inventory": "forged-by-b" in a_text,
        "tenant-b's hosts": sorted(h for h in b_data["_meta"]["hostvars"] if "forge" in h),
    }
    assert observed == {
        "tenant-a's hosts": [],
        "forged name anywhere in tenant-a's inventory": False,
        "tenant-b's hosts": ["isec-forge"],
    }, observed
    released = run_playbook(
        localhost_play([claim("release", name="isec-forge", state="absent", wait=True)]),
        tenant_env(openstack_env, "tenant-b"),
        tmp_path / "release-b",
    )
    assert released.ok, released.explain()


@pytest.mark.parametrize("role", ["member", "manager"])
def test_lessee_write_sweep(openstack_env, enroll_node, ironic_tenancy_policy, role):
    """As the lessee's member, then its manager (Ironic's defaults give a lessee's manager and admin more)."""
    from ironic.api.controllers.v1.node import PATCH_ALLOWED_FIELDS as NODE_FIELDS
    from ironic.api.controllers.v1.port import PATCH_ALLOWED_FIELDS as PORT_FIELDS

    a = openstack_env.tenants["tenant-a"]
    admin = openstack_env.admin_conn
    index = ["member", "manager"].index(role)
    node = enroll_node("isec-sweep-%s" % role, resource_class="rc-sweep", lessee=a.project_id)
    port = admin.baremetal.create_port(node_id=node.id, address="52:54:00:5e:e9:%02x" % (index * 16))
    hostile = a.conn(role)

    node_writable = _sweep_node(hostile, admin, node.id, NODE_FIELDS)
    port_writable = _sweep_port(hostile, admin, port.id, PORT_FIELDS)
    action_writable = _sweep_actions(hostile, node.id, port.id, index * 16)
    # field -> HTTP status of the attempt (anything but 403 passed the policy)
    print("lessee (%s) may write node fields: %s" % (role, dict(sorted(node_writable.items()))))
    print("lessee (%s) may write port fields: %s" % (role, dict(sorted(port_writable.items()))))
    print("lessee (%s) may do: %s" % (role, dict(sorted(action_writable.items()))))
    assert {"node": set(node_writable), "port": set(port_writable), "actions": set(action_writable)} == {
        "node": ALLOWED_NODE_PATHS,
        "port": ALLOWED_PORT_PATHS,
        "actions": ALLOWED_ACTIONS,
    }, (node_writable, port_writable, action_writable)
    # The owner still administers its node (the rules were narrowed to it, not closed).
    owner = openstack_env.infra.conn("member")
    status, text = raw(
        owner,
        "patch",
        "/nodes/%s" % node.id,
        [
            {"op": "add", "path": "/extra/owner-note", "value": "x"},
            {"op": "add", "path": "/description", "value": "owner"},
        ],
    )
    assert status == 200, text


# ---------------------------------------------------------------------------------------------
# defect 1, part b: a released claim leaves nothing the tenant wrote


def test_release_clears_what_the_tenant_wrote(openstack_env, enroll_node, ironic_tenancy_policy, tmp_path):
    a = openstack_env.tenants["tenant-a"]
    admin = openstack_env.admin_conn
    nodes = [enroll_node("isec-rel-%d" % i, resource_class="rc-rel", lessee=a.project_id) for i in range(2)]
    env = tenant_env(openstack_env, "tenant-a")
    run = run_playbook(
        localhost_play(
            [
                claim("claim %d" % i, name="isec-rel-%d" % i, resource_class="rc-rel", candidate_nodes=[nodes[i].id])
                for i in range(2)
            ]
        ),
        env,
        tmp_path / "claim",
    )
    assert run.ok, run.explain()
    hostile = a.conn("member")
    for node in nodes:  # what the tenant could write on a claimed node, beyond the modules
        status, text = raw(
            hostile,
            "patch",
            "/nodes/%s" % node.id,
            [
                {
                    "op": "add",
                    "path": "/instance_info/baremetal_tenancy_addresses",
                    "value": [{"type": "ExternalIP", "address": PLANTED}],
                },
                {"op": "add", "path": "/instance_info/planted", "value": "x"},
                {"op": "add", "path": "/instance_name", "value": "planted-by-a"},
            ],
        )
        assert status == 200, text
    released = run_playbook(
        localhost_play(
            [
                task(
                    "release 0",
                    "baremetal.tenancy.host_release",
                    {"backend": "ironic", "name": "isec-rel-0", "wait": True},
                ),
                claim("absent 1", name="isec-rel-1", state="absent", wait=True),
            ]
        ),
        env,
        tmp_path / "release",
    )
    assert released.ok, released.explain()
    left = {}
    for node in nodes:
        status, text = raw(admin, "get", "/nodes/%s?fields=instance_info,instance_name,instance_uuid" % node.id)
        fields = json.loads(text)
        left[node.name] = {k: v for k, v in fields.items() if v not in (None, {}, "") and k != "links"}
    assert left == {"isec-rel-0": {}, "isec-rel-1": {}}, left


def test_a_deployment_carries_nothing_an_earlier_holder_left(
    openstack_env, enroll_node, ironic_tenancy_policy, tmp_path
):
    """Same class, found on review: a tenant that deletes its allocation itself (no release, no undeploy) leaves
    instance_info keys behind; the next deployment of the node - here the owner's own claim - must not carry them."""
    a = openstack_env.tenants["tenant-a"]
    admin = openstack_env.admin_conn
    node = enroll_node("isec-left-0", resource_class="rc-left", lessee=a.project_id)
    hostile = a.conn("member")
    status, text = raw(hostile, "post", "/allocations", {"name": "isec-left-a", "resource_class": "rc-left"})
    assert status == 201, text
    wait_for_node(admin, node.id, instance_id=json.loads(text)["uuid"])
    status, text = raw(
        hostile,
        "patch",
        "/nodes/%s" % node.id,
        [
            {"op": "add", "path": "/instance_info/kernel", "value": "http://evil.example.com/vmlinuz"},
            {"op": "add", "path": "/instance_info/planted", "value": "x"},
        ],
    )
    assert status == 200, text
    assert raw(hostile, "delete", "/allocations/isec-left-a")[0] == 204
    owner_env = openstack_env.ansible_env(openstack_env.infra.cloud_name("member"))
    run = run_playbook(
        localhost_play(
            [
                claim(
                    "owner deploys",
                    name="isec-left-owner",
                    resource_class="rc-left",
                    candidate_nodes=["isec-left-0"],
                    image=IMAGE,
                    wait=True,
                    wait_timeout=300,
                )
            ]
        ),
        owner_env,
        tmp_path / "owner",
    )
    assert run.ok and run.result("owner deploys")["claim"]["ready"] is True, run.explain()
    info = admin.baremetal.get_node(node.id).instance_info
    assert info["image_source"] == IMAGE["url"]
    assert sorted(set(info) & {"kernel", "planted"}) == [], info


# ---------------------------------------------------------------------------------------------
# defect 3: conductor-local files


def test_tenant_cannot_deploy_conductor_files(openstack_env, enroll_node, ironic_tenancy_policy, tmp_path):
    a = openstack_env.tenants["tenant-a"]
    admin = openstack_env.admin_conn
    enroll_node("isec-file-0", resource_class="rc-file", lessee=a.project_id)
    env = tenant_env(openstack_env, "tenant-a")
    conf = {"url": "file:///etc/ironic/ironic.conf", "format": "live-iso"}
    run = run_playbook(
        localhost_play(
            [
                claim("conductor file", name="isec-file", resource_class="rc-file", image=conf, wait=True),
                claim(
                    "traversal",
                    name="isec-file",
                    resource_class="rc-file",
                    file_url_allowed_prefixes=["/var/lib/ironic"],
                    image={"url": "file:///var/lib/ironic/../../../etc/passwd", "format": "live-iso"},
                ),
            ]
        ),
        env,
        tmp_path / "claim",
    )
    refused = run.result("conductor file")
    assert refused.get("failed") is True and refused["changed"] is False, refused
    assert refused["msg"].startswith("claim isec-file: image.url file:///etc/ironic/ironic.conf"), refused["msg"]
    assert "file_url_allowed_prefixes" in refused["msg"]
    traversal = run.result("traversal")
    assert traversal.get("failed") is True and "not under" in traversal["msg"], traversal
    assert admin.baremetal.get_node("isec-file-0").provision_state == "available"
    assert admin.baremetal.get_node("isec-file-0").instance_info == {}
    assert not [al for al in admin.baremetal.allocations() if al.name == "isec-file"]

    # The module bypassed: the tenant asks Ironic directly, on a node whose deploy really reads the image.
    bmc = openstack_env.bmcs[2]
    node = enroll_redfish_node(admin, bmc, "isec-file-rf", "rc-file-rf", openstack_env.infra_project_id, a.project_id)
    admin.baremetal.update_node(node, deploy_interface="ramdisk", boot_interface="redfish-virtual-media")
    hostile = a.conn("member")
    status, text = raw(hostile, "post", "/allocations", {"name": "isec-file-raw", "resource_class": "rc-file-rf"})
    assert status == 201, text
    wait_for_node(admin, node.id, instance_id=json.loads(text)["uuid"])
    status, text = raw(
        hostile,
        "patch",
        "/nodes/%s" % node.id,
        [{"op": "add", "path": "/instance_info/boot_iso", "value": "file:///etc/ironic/ironic.conf"}],
    )
    assert status == 200, text
    status, text = raw(hostile, "put", "/nodes/%s/states/provision" % node.id, {"target": "active"})
    assert status in (202, 400), (status, text)
    ironic_log = openstack_env.ironic_server.proc.log_path
    if status == 202:  # refused when the conductor fetches the image: the deployment fails
        deadline = time.monotonic() + 180
        node = admin.baremetal.get_node(node.id)
        while node.provision_state not in ("deploy failed", "active") and time.monotonic() < deadline:
            time.sleep(0.5)
            node = admin.baremetal.get_node(node.id)
        refusal = [
            line
            for line in ironic_log.read_text(errors="replace").splitlines()
            if "/etc/ironic/ironic.conf" in line and "not permitted" in line
        ]
        assert node.provision_state == "deploy failed" and refusal, (node.provision_state, node.last_error)
    else:
        assert "not permitted" in text, text


# ---------------------------------------------------------------------------------------------
# defect 4: unknown projects


def test_lease_and_register_refuse_unknown_projects(openstack_env, enroll_node, tmp_path):
    admin = openstack_env.admin_conn.baremetal
    enroll_node("isec-ghost-0", resource_class="rc-ghost")
    bmc = openstack_env.bmcs[3]
    run = run_playbook(
        localhost_play(
            [
                lease("unknown id", project=UNKNOWN_PROJECT, nodes=["isec-ghost-0"]),
                lease("unknown name", project="no-such-project", nodes=["isec-ghost-0"]),
                task(
                    "register for an unknown owner",
                    "baremetal.tenancy.host_register",
                    {
                        "backend": "ironic",
                        "owner": UNKNOWN_PROJECT,
                        "hosts": [{"address": bmc.address, "username": bmc.username, "password": bmc.password}],
                    },
                    ignore_errors=True,
                    check_mode=True,
                ),
            ]
        ),
        openstack_env.ansible_env("admin"),
        tmp_path / "ghost",
    )
    unknown = run.result("unknown id")
    assert unknown.get("failed") is True and unknown["changed"] is False, unknown
    assert unknown["msg"] == "option project: project %s: does not exist in Keystone" % UNKNOWN_PROJECT, unknown["msg"]
    by_name = run.result("unknown name")
    assert by_name.get("failed") is True and by_name["msg"] == (
        "option project: project no-such-project: does not exist in Keystone"
    )
    assert admin.get_node("isec-ghost-0").lessee is None
    register = run.result("register for an unknown owner")
    assert register.get("failed") is True and register["changed"] is False, register
    assert register["msg"] == "option owner: project %s: does not exist in Keystone" % UNKNOWN_PROJECT, register["msg"]


# ---------------------------------------------------------------------------------------------
# a non-admin owner project: power, deploy, lease


def test_non_admin_owner_powers_deploys_and_leases(openstack_env, enroll_node, ironic_tenancy_policy, tmp_path):
    a = openstack_env.tenants["tenant-a"]
    admin = openstack_env.admin_conn.baremetal
    for i in range(2):
        enroll_node("isec-own-%d" % i, resource_class="rc-own")
    owner_env = openstack_env.ansible_env(openstack_env.infra.cloud_name("member"))
    run = run_playbook(
        localhost_play(
            [
                claim(
                    "owner deploys its node",
                    name="isec-own",
                    resource_class="rc-own",
                    candidate_nodes=["isec-own-0"],
                    image=IMAGE,
                    online=True,
                    wait=True,
                    wait_timeout=300,
                ),
                claim("owner powers it off", name="isec-own", online=False, wait=True),
                lease("lease by id, verified", project=a.project_id, nodes=["isec-own-1"]),
                lease("lease by id, unverified", project=a.project_id, nodes=["isec-own-1"], verify_projects=False),
                lease("lease again", project=a.project_id, nodes=["isec-own-1"], verify_projects=False),
            ]
        ),
        owner_env,
        tmp_path / "owner",
    )
    deployed = run.result("owner deploys its node")
    assert deployed.get("failed") is not True and deployed["claim"]["ready"] is True, deployed
    node = admin.get_node("isec-own-0")
    assert node.provision_state == "active" and node.owner == openstack_env.infra_project_id
    assert run.result("owner powers it off")["claim"]["powered_on"] is False
    assert admin.get_node("isec-own-0").power_state == "power off"
    verified = run.result("lease by id, verified")
    assert verified.get("failed") is True and verified["changed"] is False, verified
    assert (
        verified["msg"].startswith("option project: project %s: " % a.project_id)
        and "verify_projects" in verified["msg"]
    )
    leased = run.result("lease by id, unverified")
    assert leased.get("failed") is not True and leased["changed"] is True, leased
    assert leased["project_check"] == "skipped"
    assert run.result("lease again")["changed"] is False
    assert admin.get_node("isec-own-1").lessee == a.project_id
    # The tenant sees and can claim the leased node.
    mine = run_playbook(
        localhost_play([claim("claim", name="isec-own-a", resource_class="rc-own", wait=True)]),
        tenant_env(openstack_env, "tenant-a"),
        tmp_path / "tenant",
    )
    assert mine.ok and mine.result("claim")["claim"]["host"] == "isec-own-1", mine.explain()


# ---------------------------------------------------------------------------------------------
# a tenant reboots its host


def _reboots(openstack_env, node_id):
    log = openstack_env.ironic_server.proc.log_path.read_text(errors="replace")
    return sum(1 for line in log.splitlines() if node_id in line and "by rebooting" in line)


def test_tenant_reboots_its_ironic_host(openstack_env, enroll_node, ironic_tenancy_policy, tmp_path):
    a = openstack_env.tenants["tenant-a"]
    node = enroll_node("isec-reboot-0", resource_class="rc-reboot", lessee=a.project_id)
    env = tenant_env(openstack_env, "tenant-a")
    reboot = {"host.metal3.io/reboot": ""}
    run = run_playbook(
        localhost_play(
            [
                claim(
                    "deploy",
                    name="isec-reboot",
                    resource_class="rc-reboot",
                    image=IMAGE,
                    online=True,
                    wait=True,
                    wait_timeout=300,
                ),
                claim("hold refused", name="isec-reboot", annotations={"host.metal3.io/reboot.mine": ""}),
            ]
        ),
        env,
        tmp_path / "deploy",
    )
    assert run.result("deploy")["claim"]["ready"] is True, run.result("deploy")
    hold = run.result("hold refused")
    assert hold.get("failed") is True and "host.metal3.io/reboot.mine" in hold["msg"], hold
    before = _reboots(openstack_env, node.id)
    play = localhost_play([claim("reboot (check)", name="isec-reboot", annotations=reboot)])
    play[0]["tasks"][0]["check_mode"] = True
    check = run_playbook(play, env, tmp_path / "check")
    assert check.result("reboot (check)")["changed"] is True, check.result("reboot (check)")
    assert _reboots(openstack_env, node.id) == before
    rebooted = run_playbook(
        localhost_play([claim("reboot", name="isec-reboot", annotations=reboot, wait=True, online=True)]),
        env,
        tmp_path / "rebooted",
    )
    result = rebooted.result("reboot")
    assert result.get("failed") is not True and result["changed"] is True and result["rebooted"] is True, result
    assert _reboots(openstack_env, node.id) == before + 1
    assert openstack_env.admin_conn.baremetal.get_node(node.id).power_state == "power on"
