"""The ``claimed_hosts`` inventory plugin on a real Ironic behind a real Keystone (backend ironic).

Each tenant runs ``ansible-inventory`` with its own project-scoped cloud
(``OS_CLIENT_CONFIG_FILE`` + ``OS_CLOUD``), as AWX's OpenStack credential
does. The nodes were claimed by allocations of the tenants' projects
(``fixtures_inventory.inventory_ironic``); one is a ``redfish`` node whose
BMC address and credentials live in its ``driver_info``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from fixtures_inventory import (
    ALL_HOST_VARIABLES,
    FAIL_ON_ERROR,
    CountingProxy,
    example_source,
    inventory,
    ironic_clouds_via,
    members,
    plugin_errors,
    scan,
    write_source,
)
from harness.ansible import localhost_play, run_inventory, run_playbook
from harness.procs import free_port


def expected(env, tenant: str) -> dict:
    return {claim.allocation: claim for claim in env.claims[tenant]}


def test_each_project_sees_exactly_its_claimed_nodes(inventory_ironic, tmp_path):
    env = inventory_ironic
    seen = {}
    for tenant in ("tenant-a", "tenant-b"):
        every = tenant == "tenant-a"  # every host variable (all scanned below), tenant-b the default set
        source = write_source(
            tmp_path / ("%s.claimed_hosts.yml" % tenant),
            backend="ironic",
            **({"host_variables": ALL_HOST_VARIABLES} if every else {}),
        )
        data, text = inventory(source, env.env(tenant), tmp_path, "-vvv")
        claims = expected(env, tenant)
        hostvars = data["_meta"]["hostvars"]
        assert set(hostvars) == set(claims), tenant
        seen[tenant] = set(hostvars)
        project = env.openstack.tenants[tenant]
        for name, claim in claims.items():
            variables = hostvars[name]
            assert variables["tenancy_backend"] == "ironic"
            assert variables["tenancy_namespace"] == project.project_id
            assert variables["tenancy_project_name"] == tenant and variables["tenancy_host"] == claim.node
            assert variables["tenancy_host_class"] == claim.resource_class
            assert variables["tenancy_ready"] is claim.ready
            assert variables["tenancy_provision_state"] == ("active" if claim.ready else "available")
            assert variables["tenancy_conditions"] == {"Allocated": "True", "Ready": "True" if claim.ready else "False"}
            if every:
                assert variables["tenancy_project_id"] == project.project_id
                assert variables["tenancy_node_uuid"] == claim.node_uuid
                assert variables["tenancy_resource_class"] == claim.resource_class
                assert {c["type"]: c["status"] for c in variables["tenancy_condition_details"]} == variables[
                    "tenancy_conditions"
                ]
                assert variables["tenancy_nics"] and all(nic["MAC"] for nic in variables["tenancy_nics"])
                assert variables["tenancy_boot_mac_address"] in [nic["MAC"] for nic in variables["tenancy_nics"]]
            else:  # the default set
                assert {name[len("tenancy_") :] for name in variables if name.startswith("tenancy_")} == {
                    "name",
                    "namespace",
                    "backend",
                    "host",
                    "host_class",
                    "online",
                    "powered_on",
                    "ready",
                    "conditions",
                    "labels",
                    "annotations",
                    "image",
                    "project_name",
                    "traits",
                    "provision_state",
                    "maintenance",
                }
            if claim.ready:
                assert variables["tenancy_image"]["url"] == "http://images.example.test/os.qcow2"
            assert name in members(data, "claimed_hosts")
            assert name in members(data, "tenancy_project_" + tenant.replace("-", "_"))
            assert name in members(data, "tenancy_ready" if claim.ready else "tenancy_not_ready")
            assert name in members(data, "tenancy_class_" + claim.resource_class.replace("-", "_"))
        # Address preference: types first (ExternalIP before InternalIP), then families.
        if tenant == "tenant-a":
            assert hostvars["inv-web"]["ansible_host"] == "2001:db8::11"
            assert hostvars["inv-db"]["ansible_host"] == "198.51.100.12"
        else:
            assert "ansible_host" not in hostvars["inv-web-b"]
        assert scan(text, env.bmc_values) == []
        assert "203.0.113.9" not in text  # the tenant's own address record (allocation extra) is never read
        for word in ("bmc_hint", "driver_info", "redfish_password", "Redacted"):
            assert word not in text
    assert seen["tenant-a"].isdisjoint(seen["tenant-b"])


def test_address_preference_and_filters(inventory_ironic, tmp_path):
    env = inventory_ironic
    source = write_source(
        tmp_path / "pref.claimed_hosts.yml",
        backend="ironic",
        address_types=["*"],
        address_families=["ipv4"],
        only_ready=True,
        hostvar_prefix="bm_",
        hostname="{{ bm_host }}",
        default_groups=False,
    )
    data, _dummy = inventory(source, env.env("tenant-a"), tmp_path)
    hostvars = data["_meta"]["hostvars"]
    ready = [c for c in env.claims["tenant-a"] if c.ready]
    assert set(hostvars) == {c.node for c in ready}
    web = hostvars["inv-node-a1"]
    assert web["ansible_host"] == "198.51.100.11" and web["bm_name"] == "inv-web"
    assert not any(group.startswith("tenancy_") for group in data)


def test_bounded_requests_and_cache_hit_without_request(inventory_ironic, tmp_path):
    env = inventory_ironic
    openstack = env.openstack
    keystone_base = openstack.keystone.url.rsplit("/v3", 1)[0]
    with CountingProxy(keystone_base) as keystone, CountingProxy(openstack.ironic.url) as ironic:
        clouds = ironic_clouds_via(openstack, keystone.url, ironic.url, tmp_path / "clouds.yaml")
        run_env = {"OS_CLIENT_CONFIG_FILE": str(clouds), "OS_CLOUD": "tenant-a"}
        source = write_source(
            tmp_path / "cached.claimed_hosts.yml",
            backend="ironic",
            cache=True,
            cache_plugin="ansible.builtin.jsonfile",
            cache_connection=str(tmp_path / "cache"),
        )
        first, dummy = inventory(source, run_env, tmp_path)
        assert set(first["_meta"]["hostvars"]) == set(expected(env, "tenant-a"))
        lists = [p for p in ironic.paths() if p.split("?")[0].startswith(("/v1/allocations", "/v1/nodes"))]
        others = [p for p in ironic.paths() if p not in lists]
        # One node list (everything fits a page), filtered by the server, with only the fields needed; no ports
        # list, as the default host variables have no NICs. inv-web's node names its claim (host_claim's key);
        # inv-db's carries none, so its allocation alone is read.
        project_id = openstack.tenants["tenant-a"].project_id
        inv_db = openstack.admin_conn.baremetal.get_allocation("inv-db").id
        assert sorted(p.split("?")[0] for p in lists) == ["/v1/allocations/" + inv_db, "/v1/nodes"], ironic.paths()
        query = {p.split("?")[0]: p.split("?")[1] for p in lists}
        assert "project=%s" % project_id in query["/v1/nodes"] and "associated=true" in query["/v1/nodes"]
        assert all("fields=" in q for q in query.values())
        assert "driver_info" not in query["/v1/nodes"] and "last_error" not in query["/v1/nodes"]
        assert "allocation_uuid" not in query["/v1/nodes"]  # Ironic would look each node's allocation up
        assert all(p.rstrip("/") in ("", "/v1") for p in others), others  # version discovery only
        assert len(keystone.paths()) >= 1

        keystone.reset()
        ironic.reset()
        second, dummy = inventory(source, run_env, tmp_path)
        assert keystone.paths() == [] and ironic.paths() == []
        assert second["_meta"]["hostvars"] == first["_meta"]["hostvars"]

        # Asking for NICs adds one ports list (and misses the cache written without them).
        ironic.reset()
        nics_source = write_source(
            tmp_path / "nics.claimed_hosts.yml",
            backend="ironic",
            cache=True,
            cache_plugin="ansible.builtin.jsonfile",
            cache_connection=str(tmp_path / "cache"),
            host_variables=["name", "nics"],
        )
        third, _dummy = inventory(nics_source, run_env, tmp_path)
        lists = sorted(p.split("?")[0] for p in ironic.paths() if p.split("?")[0].startswith("/v1/") and "?" in p)
        assert lists == ["/v1/allocations/" + inv_db, "/v1/nodes", "/v1/ports"], ironic.paths()
        assert all(variables["tenancy_nics"] for variables in third["_meta"]["hostvars"].values())


@pytest.mark.parametrize("case", ["unknown cloud", "missing credentials", "unreachable API"])
def test_bad_configuration_gives_one_clear_error_line(inventory_ironic, tmp_path, case):
    env = inventory_ironic
    run_env = dict(env.env("tenant-a"), **FAIL_ON_ERROR)
    password = None
    if case == "unknown cloud":
        run_env["OS_CLOUD"] = "no-such-cloud"
        expected_words = ["OpenStack cloud no-such-cloud", "no-such-cloud"]
    elif case == "missing credentials":
        run_env.pop("OS_CLOUD")
        expected_words = ["OpenStack credentials", "none found"]
    else:
        clouds = yaml.safe_load(Path(env.openstack.clouds_yaml).read_text())
        port = free_port()
        auth = clouds["clouds"]["tenant-a"]["auth"]
        auth["auth_url"] = "http://127.0.0.1:%d/v3" % port
        path = tmp_path / "clouds.yaml"
        path.write_text(yaml.safe_dump({"clouds": {"tenant-a": clouds["clouds"]["tenant-a"]}}))
        run_env["OS_CLIENT_CONFIG_FILE"] = str(path)
        password = auth["password"]
        expected_words = ["127.0.0.1:%d" % port]
    source = write_source(tmp_path / "bad.claimed_hosts.yml", backend="ironic")
    proc = run_inventory(source, run_env, tmp_path)
    assert proc.returncode != 0
    text = proc.stdout + proc.stderr
    assert "Traceback" not in text
    messages = plugin_errors(proc)
    assert len(messages) == 1, text
    message = messages.pop()
    for word in expected_words:
        assert word in message, (word, message)
    if password:
        assert password not in text


def test_examples_work_as_written(inventory_ironic, tmp_path):
    env = inventory_ironic
    source = example_source("inventory/ironic.claimed_hosts.yml", tmp_path)
    data, dummy = inventory(source, env.env("tenant-a"), tmp_path)
    # only ready hosts, any address type with IPv4 first, hosts without an address left out
    assert data["_meta"]["hostvars"]["inv-web"]["ansible_host"] == "198.51.100.11"
    assert set(data["_meta"]["hostvars"]) == {c.allocation for c in env.claims["tenant-a"] if c.ready and c.address}

    # AWX: the OpenStack credential writes a clouds.yaml with one cloud (AWX names it devstack) and sets
    # OS_CLIENT_CONFIG_FILE only; the plugin uses that cloud.
    clouds = yaml.safe_load(Path(env.openstack.clouds_yaml).read_text())
    awx_clouds = tmp_path / "awx-clouds.yaml"
    awx_clouds.write_text(yaml.safe_dump({"clouds": {"devstack": clouds["clouds"]["tenant-a"]}}))
    awx = example_source("awx/inventories/tenant-a-ironic.claimed_hosts.yml", tmp_path / "awx")
    data, _dummy = inventory(awx, {"OS_CLIENT_CONFIG_FILE": str(awx_clouds)}, tmp_path)
    assert set(data["_meta"]["hostvars"]) == {c.allocation for c in env.claims["tenant-a"] if c.ready}


def test_host_claim_info_and_the_inventory_show_the_same_claims(inventory_ironic, tmp_path):
    """One claim view: host_claim_info and ansible-inventory give the same values for each claim, a node in
    maintenance included (neither calls it ready)."""
    env = inventory_ironic
    admin = env.openstack.admin_conn
    held = next(c for c in env.claims["tenant-a"] if c.ready)
    admin.baremetal.set_node_maintenance(held.node_uuid, reason="one claim view")
    try:
        source = write_source(tmp_path / "view.claimed_hosts.yml", backend="ironic", host_variables=ALL_HOST_VARIABLES)
        data, _dummy = inventory(source, env.env("tenant-a"), tmp_path)
        info_task = {"name": "info", "baremetal.tenancy.host_claim_info": {"backend": "ironic"}, "register": "info"}
        run = run_playbook(localhost_play([info_task]), env.env("tenant-a"), tmp_path / "info")
    finally:
        admin.baremetal.unset_node_maintenance(held.node_uuid)
    assert run.ok, run.explain()
    claims = {c["name"]: c for c in run.result("info")["claims"] if c["host"]}
    hostvars = data["_meta"]["hostvars"]
    assert set(claims) == set(hostvars) == set(expected(env, "tenant-a"))
    for name, variables in hostvars.items():
        claim = claims[name]
        for key in (
            "namespace",
            "host",
            "online",
            "powered_on",
            "ready",
            "provision_state",
            "image",
            "addresses",
            "nics",
            "boot_mac_address",
            "traits",
            "labels",
        ):
            assert variables["tenancy_" + key] == claim[key], (name, key, variables["tenancy_" + key], claim[key])
        assert variables["tenancy_conditions"] == {c["type"]: c["status"] for c in claim["conditions"]}
        assert variables["tenancy_condition_details"] == claim["conditions"]
    assert claims[held.allocation]["ready"] is False
    assert claims[held.allocation]["conditions"][1]["reason"] == "Maintenance"
    assert hostvars[held.allocation]["tenancy_maintenance"] is True
    # Deployed, so ready but for the maintenance; the undeployed claim is not ready either, on both sides.
    assert claims[held.allocation]["provision_state"] == "active"
    assert all(c["ready"] is False for c in claims.values())
