"""What the test-bed machines take from a config drive (``harness/cloud_config.py``, pure: no services).

Cheap, so in the default integration session: the machines' own suite
(``test_machines.py``, marker ``machines``) proves the plan applied on a machine.
"""

from __future__ import annotations

import json

import pytest
from harness import cloud_config

KEY_A = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA a@example"
KEY_B = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB b@example"


def test_default_user_gets_top_level_and_meta_data_keys():
    plan = cloud_config.plan(
        {"uuid": "u-1", "hostname": "web-1.example.org", "public_keys": {"b": KEY_B}},
        f"#cloud-config\nssh_authorized_keys: ['{KEY_A}']\n",
    )
    assert plan.instance_id == "u-1"
    assert plan.hostname == "web-1"
    assert [(u.name, u.ssh_authorized_keys, u.homedir, u.sudo) for u in plan.users] == [
        ("debian", [KEY_A, KEY_B], "/home/debian", ["ALL=(ALL) NOPASSWD:ALL"])
    ]
    assert plan.interfaces == [] and plan.ignored == []


def test_users_list_without_default_and_cloud_config_hostname_wins():
    user_data = "#cloud-config\n" + json.dumps(
        {
            "hostname": "from-user-data",
            "users": [
                {"name": "app", "ssh_authorized_keys": [KEY_A], "groups": "adm, www-data", "sudo": "ALL=(ALL) ALL"},
                "ops",
            ],
            "ssh_authorized_keys": [KEY_B],  # the default user's, and there is none
            "packages": ["nginx"],
        }
    )
    plan = cloud_config.plan({"hostname": "from-meta-data"}, user_data)
    assert plan.hostname == "from-user-data"
    assert [(u.name, u.ssh_authorized_keys, u.groups, u.sudo) for u in plan.users] == [
        ("app", [KEY_A], ["adm", "www-data"], ["ALL=(ALL) ALL"]),
        ("ops", [], [], []),
    ]
    assert plan.ignored == ["user_data key packages"]
    assert plan.instance_id.startswith("iid-")  # no uuid: a hash of the content


def test_network_data_static_link_drops_dhcp_and_keeps_routes():
    network_data = {
        "links": [
            {"id": "a", "type": "phy", "ethernet_mac_address": "52:54:00:AA:00:01"},
            {"id": "b", "type": "phy", "ethernet_mac_address": "52:54:00:aa:00:02"},
        ],
        "networks": [
            {
                "id": "n1",
                "link": "a",
                "type": "ipv4",
                "ip_address": "10.9.0.5",
                "netmask": "255.255.255.0",
                "routes": [{"network": "0.0.0.0", "netmask": "0.0.0.0", "gateway": "10.9.0.1"}],
            },
            {"id": "n2", "link": "b", "type": "ipv4_dhcp"},
        ],
        "services": [],
    }
    plan = cloud_config.plan({"uuid": "u"}, None, network_data)
    first, second = plan.interfaces
    assert (first.mac, first.dhcp, first.addresses, first.routes) == (
        "52:54:00:aa:00:01",
        False,
        ["10.9.0.5/24"],
        [{"to": "default", "via": "10.9.0.1"}],
    )
    assert (second.mac, second.dhcp, second.addresses) == ("52:54:00:aa:00:02", True, [])
    assert cloud_config.Plan.from_json(plan.to_json()) == plan


def test_scripts_are_not_run():
    plan = cloud_config.plan({"uuid": "u"}, "#!/bin/sh\nrm -rf /\n")
    assert [u.name for u in plan.users] == ["debian"]
    assert plan.ignored == ["user_data in another format than #cloud-config ('#!/bin/sh')"]


@pytest.mark.parametrize(
    ("meta_data", "user_data", "network_data", "message"),
    [
        (None, "#cloud-config\n[1, 2]\n", None, "user_data: #cloud-config must be a YAML mapping"),
        (None, "#cloud-config\nusers: [{name: 'Bad Name'}]\n", None, "user_data users[0]: name 'Bad Name'"),
        ({"hostname": "no_underscores"}, None, None, "meta_data hostname: 'no_underscores' is not a valid host name"),
        (None, "#cloud-config\nusers: [{name: a, ssh_authorized_keys: 5}]\n", None, "users[0]: ssh_authorized_keys"),
        (None, "#cloud-config\nusers: [{name: a, sudo: {x: 1}}]\n", None, "users[0]: sudo must be a sudoers rule"),
        (None, None, {"links": [{"id": "b", "type": "bond"}]}, "network_data links[0]: link type 'bond'"),
        (None, None, {"links": [], "networks": [{"link": "x", "type": "ipv4"}]}, "networks[0]: link 'x' is not"),
        (
            None,
            None,
            {
                "links": [{"id": "a", "ethernet_mac_address": "52:54:00:00:00:01"}],
                "networks": [{"link": "a", "type": "ipv4", "ip_address": "10.0.0.300/24"}],
            },
            "network_data networks[0]:",
        ),
    ],
)
def test_bad_config_drive_names_the_part(meta_data, user_data, network_data, message):
    with pytest.raises(cloud_config.ConfigDriveError) as err:
        cloud_config.plan(meta_data, user_data, network_data)
    assert message in str(err.value)
