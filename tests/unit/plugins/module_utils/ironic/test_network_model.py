# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import network_model as NM

PROJECT = "p" * 32


def subnet(**extra):
    base = {"name": "hosts", "cidr": "10.20.0.0/24"}
    base.update(extra)
    return base


# -- names ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["", "  ", None, 3, " lead", "trail ", "x" * 256])
def test_a_bad_network_name_is_refused_naming_it(name):
    with pytest.raises(InvalidInput) as error:
        NM.validate_network_name(name)
    assert "name" in error.value.cause and repr(name) in error.value.obj


def test_a_good_network_name_is_kept():
    assert NM.validate_network_name("tenant-a private") == "tenant-a private"


# -- subnets -------------------------------------------------------------------------------------


def test_subnets_are_normalised_and_sorted():
    got = NM.validate_subnets(
        "net",
        [
            subnet(name="b", cidr="10.21.0.0/24", gateway_ip="10.21.0.1", enable_dhcp=True),
            subnet(name="a", cidr="fd00::/64", allocation_pools=[{"start": "fd00::10", "end": "fd00::20"}]),
        ],
    )
    assert got == [
        {
            "name": "a",
            "cidr": "fd00::/64",
            "ip_version": 6,
            "enable_dhcp": False,
            "allocation_pools": [{"start": "fd00::10", "end": "fd00::20"}],
        },
        {"name": "b", "cidr": "10.21.0.0/24", "ip_version": 4, "enable_dhcp": True, "gateway_ip": "10.21.0.1"},
    ]


@pytest.mark.parametrize(
    "bad, words",
    [
        (subnet(cidr="10.20.0.1/24"), ("cidr", "10.20.0.1/24")),
        (subnet(cidr="10.20.0.0/33"), ("cidr", "10.20.0.0/33")),
        (subnet(cidr=None), ("cidr", "None")),
        (subnet(gateway_ip="10.99.0.1"), ("gateway_ip", "10.99.0.1")),
        (subnet(gateway_ip="gateway"), ("gateway_ip", "gateway")),
        (subnet(allocation_pools=[{"start": "10.20.0.50", "end": "10.20.0.10"}]), ("allocation pool", "10.20.0.50")),
        (subnet(allocation_pools=[{"start": "10.20.0.5", "end": "10.21.0.10"}]), ("allocation pool", "10.21.0.10")),
        (subnet(allocation_pools=[{"start": "x", "end": "10.20.0.10"}]), ("allocation_pools start", "'x'")),
        (subnet(name=""), ("subnets[0]", "name")),
    ],
)
def test_a_bad_subnet_is_refused_naming_the_field_and_value(bad, words):
    with pytest.raises(InvalidInput) as error:
        NM.validate_subnets("net", [bad])
    message = error.value.message
    assert "network net" in message
    for word in words:
        assert word in message, (word, message)


def test_a_subnet_named_twice_is_refused():
    with pytest.raises(InvalidInput, match="subnet hosts is listed more than once"):
        NM.validate_subnets("net", [subnet(), subnet(cidr="10.30.0.0/24")])


def test_no_subnets_is_fine():
    assert NM.validate_subnets("net", None) == []


def test_subnet_changes_are_the_differences_only():
    wanted = NM.validate_subnets("net", [subnet(gateway_ip="10.20.0.1", enable_dhcp=True)])[0]
    current = {"cidr": "10.20.0.0/24", "gateway_ip": "10.20.0.254", "enable_dhcp": False, "allocation_pools": []}
    assert NM.subnet_changes(wanted, current, "s") == {"gateway_ip": "10.20.0.1", "enable_dhcp": True}
    same = dict(current, gateway_ip="10.20.0.1", enable_dhcp=True)
    assert NM.subnet_changes(wanted, same, "s") == {}


def test_pools_compare_as_sets():
    pools = [{"start": "10.20.0.10", "end": "10.20.0.19"}, {"start": "10.20.0.30", "end": "10.20.0.39"}]
    wanted = NM.validate_subnets("net", [subnet(allocation_pools=pools)])[0]
    current = {"cidr": "10.20.0.0/24", "enable_dhcp": False, "allocation_pools": list(reversed(pools))}
    assert NM.subnet_changes(wanted, current, "s") == {}
    assert NM.subnet_changes(wanted, dict(current, allocation_pools=pools[:1]), "s") == {"allocation_pools": pools}


def test_a_different_cidr_is_an_error_not_a_change():
    wanted = NM.validate_subnets("net", [subnet()])[0]
    with pytest.raises(InvalidInput, match="cidr cannot change"):
        NM.subnet_changes(wanted, {"cidr": "10.30.0.0/24"}, "network net, subnet hosts")


# -- views ---------------------------------------------------------------------------------------


def test_the_network_view_has_no_segment_and_no_provider_field():
    network = {
        "id": "n1",
        "name": "net",
        "project_id": PROJECT,
        "status": "ACTIVE",
        "provider:segmentation_id": 123,
        "provider:physical_network": "physnet1",
        "provider_segmentation_id": 123,
    }
    view = NM.network_view(network, [dict(subnet(), id="s1", ip_version=4, gateway_ip=None, enable_dhcp=False)])
    assert set(view) == {"id", "name", "project_id", "status", "subnets"}
    assert "123" not in repr(view) and "physnet" not in repr(view)
    assert NM.network_view(None) is None


def test_the_claim_network_view_never_carries_a_binding():
    port = {
        "fixed_ips": [{"ip_address": "10.20.0.11", "subnet_id": "s"}],
        "mac_address": "52:54:00:00:00:01",
        "binding:profile": {"local_link_information": [{"switch_info": "sw", "port_id": "eth7"}]},
        "binding:host_id": "node",
    }
    view = NM.claim_network_view({"id": "n1", "name": "net"}, port)
    assert view == {
        "network": "net",
        "network_id": "n1",
        "addresses": ["10.20.0.11"],
        "mac_address": "52:54:00:00:00:01",
    }
    assert NM.claim_network_view({"id": "n1", "name": "net"}, None)["addresses"] == []


# -- a claim's networks -------------------------------------------------------------------------


def test_claim_networks_are_checked():
    assert NM.validate_claim_networks([{"network": "a"}, {"network": "b", "fixed_ip": "10.0.0.5"}], "claim c") == [
        {"network": "a", "fixed_ip": None},
        {"network": "b", "fixed_ip": "10.0.0.5"},
    ]
    assert NM.validate_claim_networks(None, "claim c") == []


@pytest.mark.parametrize(
    "networks, words",
    [
        ([{"network": ""}], ("networks[0]", "network")),
        ([{"network": "a", "fixed_ip": "10.0.0.300"}], ("fixed_ip", "10.0.0.300")),
        ([{"network": "a"}, {"network": "a"}], ("network a", "more than once")),
        ([None], ("networks[0]",)),
    ],
)
def test_bad_claim_networks_are_refused(networks, words):
    with pytest.raises(InvalidInput) as error:
        NM.validate_claim_networks(networks, "claim c")
    assert error.value.obj == "claim c"
    for word in words:
        assert word in error.value.cause


def test_fixed_ip_must_be_in_a_subnet():
    subnets = [{"cidr": "10.20.0.0/24"}, {"cidr": "fd00::/64"}]
    assert NM.fixed_ip_problem("10.20.0.9", subnets) is None
    assert NM.fixed_ip_problem("fd00::9", subnets) is None
    assert NM.fixed_ip_problem(None, subnets) is None
    assert "in none of its subnets" in NM.fixed_ip_problem("10.21.0.9", subnets)
    assert NM.fixed_ip_problem(None, []) == "the network has no subnet"


def test_the_claim_port_name_starts_with_the_claims_prefix():
    name = NM.claim_port_name("web-0", "private")
    assert name == "bmt-web-0-private"
    assert name.startswith(NM.claim_port_name("web-0", ""))


# -- the inventory's link from a port to a node -------------------------------------------------


def test_only_the_callers_ports_that_name_a_node_count():
    mine = {"device_id": "node-1", "project_id": PROJECT, "fixed_ips": [{"ip_address": "10.0.0.1"}]}
    theirs = {"device_id": "node-2", "project_id": "other", "fixed_ips": [{"ip_address": "10.0.0.2"}]}
    unlinked = {"device_id": "", "project_id": PROJECT, "fixed_ips": [{"ip_address": "10.0.0.3"}]}
    no_address = {"device_id": "node-3", "project_id": PROJECT, "fixed_ips": []}
    got = NM.tenant_ports_by_node([mine, theirs, unlinked, no_address, "junk"], PROJECT)
    assert list(got) == ["node-1"]


@given(
    st.lists(
        st.fixed_dictionaries(
            {
                "device_id": st.sampled_from(["", "n1", "n2"]),
                "project_id": st.sampled_from([PROJECT, "other", None]),
                "fixed_ips": st.lists(st.fixed_dictionaries({"ip_address": st.sampled_from(["10.0.0.1", ""])})),
            }
        )
    )
)
def test_another_projects_port_never_gives_an_address(ports):
    for node, port in NM.tenant_ports_by_node(ports, PROJECT).items():
        assert port["project_id"] == PROJECT and port["device_id"] == node and NM.port_addresses(port)


def _resolved(*names):
    return [{"network": {"id": "id-" + name, "name": name}, "subnets": [], "fixed_ip": None} for name in names]


def test_networks_off_names_each_network_the_host_is_not_on():
    ports = [
        {"network_id": "id-a", "status": "ACTIVE"},
        {"network_id": "id-b", "status": "DOWN"},
        {"network_id": "id-other", "status": "DOWN"},
    ]
    text = NM.networks_off(_resolved("a", "b", "c"), ports)
    assert text == ("the switch has not put the host on networks b (its port is DOWN), c (the claim has no port on it)")
    assert NM.networks_off(_resolved("b"), ports) == "the switch has not put the host on network b (its port is DOWN)"
    assert NM.networks_off(_resolved("a"), ports) is None
    assert NM.networks_off([], ports) is None and NM.networks_off(None, []) is None
    assert "without a status" in NM.networks_off(_resolved("a"), [{"network_id": "id-a"}])


@given(st.lists(st.sampled_from(["ACTIVE", "DOWN", "BUILD", None]), max_size=5))
def test_networks_off_is_none_exactly_when_every_port_is_active(statuses):
    names = ["n%d" % i for i in range(len(statuses))]
    ports = [{"network_id": "id-" + name, "status": status} for name, status in zip(names, statuses)]
    text = NM.networks_off(_resolved(*names), ports)
    assert (text is None) == all(status == "ACTIVE" for status in statuses)
    for name, status in zip(names, statuses):
        assert (" %s (" % name in (text or "")) == (status != "ACTIVE")
