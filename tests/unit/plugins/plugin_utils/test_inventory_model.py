# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


import copy
import ipaddress
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.common import claim_record as record
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import claim_view as ironic_view
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import model as ironic_model
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import view as metal3_view
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.bmc_data import find_bmc_data
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.upward import upward_status
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.view import bound_host
from ansible_collections.baremetal.tenancy.plugins.plugin_utils import inventory_model as m
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.metal3_objects import (
    BMC_ADDRESS,
    BMC_IP,
    BMC_PASSWORD,
    BMC_SECRET,
    BMC_USER,
    BMC_VALUES,
    make_claim,
    make_host,
    ref_to,
)

NOW = "2026-03-01T10:00:00Z"
IMAGE = {
    "url": "https://images.example.com/os.qcow2",
    "checksum": "a" * 64,
    "checksumType": "sha256",
    "format": "qcow2",
}


def bound_claim(name="web-1", namespace="tenant-a", ready=True, labels=None, annotations=None, **status_extra):
    """A claim as the binder leaves it: status from upward_status of a host carrying BMC data."""
    claim = make_claim(
        name=name,
        namespace=namespace,
        spec={"online": False, "image": IMAGE},
        labels=dict(labels or {}, **{m.BINDING_LABEL: "h-1"}),
        annotations=annotations,
    )
    host = make_host(
        name="h-1",
        consumer=ref_to(claim),
        state="provisioned" if ready else "available",
        nics=[
            {"name": "eno1", "mac": "52:54:00:00:00:01", "ip": "192.0.2.10"},
            {"name": "eno2", "mac": "52:54:00:00:00:02"},
        ],
        hostname="h-1.example.test",
    )
    claim["status"] = upward_status(host, None, NOW, claim)
    claim["status"].update(status_extra)
    return claim


# ------------------------------------------------------------------ addresses


@pytest.mark.parametrize(
    "address, family",
    [
        ("192.0.2.1", "ipv4"),
        ("0.0.0.0", "ipv4"),
        ("255.255.255.255", "ipv4"),
        ("256.1.1.1", None),
        ("01.2.3.4", None),
        ("1.2.3", None),
        ("::1", "ipv6"),
        ("2001:db8::1", "ipv6"),
        ("fe80::1%eth0", "ipv6"),
        ("2001:db8::g", None),
        ("host-1.example.com", "hostname"),
        ("host-1.example.com.", "hostname"),
        ("h", "hostname"),
        ("-h.example.com", None),
        ("h-.example.com", None),
        ("a..b", None),
        ("a b", None),
        ("a.123", None),
        ("", None),
        (None, None),
        (42, None),
        ("x" * 64, None),
        ("%s.com" % ("a" * 63), "hostname"),
        ("a." * 127 + "b", None),
    ],
)
def test_address_family(address, family):
    assert record.address_family(address) == family


@given(st.ip_addresses())
def test_address_family_agrees_with_ipaddress(ip):
    assert record.address_family(str(ip)) == "ipv%d" % ip.version


@given(st.text(max_size=40))
def test_address_family_never_fails_and_ip_answers_agree(text):
    family = record.address_family(text)
    assert family in (None, "ipv4", "ipv6", "hostname")
    if family in ("ipv4", "ipv6"):
        assert ipaddress.ip_address(text.split("%")[0]).version == int(family[-1])
    if family == "hostname":
        assert re.match(r"[A-Za-z0-9.-]+\Z", text)


def test_normalise_addresses():
    raw = [
        {"type": "ExternalIP", "address": " 203.0.113.5 "},
        "192.0.2.1",
        {"address": "192.0.2.2"},
        {"type": "", "address": "192.0.2.3"},
        {"type": "InternalIP", "address": "192.0.2.1"},
        {"type": "X"},
        {"address": 7},
        5,
        None,
        {"type": "X", "address": ""},
    ]
    assert record.normalise_addresses(raw) == [
        {"type": "ExternalIP", "address": "203.0.113.5"},
        {"type": "InternalIP", "address": "192.0.2.1"},
        {"type": "InternalIP", "address": "192.0.2.2"},
        {"type": "InternalIP", "address": "192.0.2.3"},
    ]
    assert record.normalise_addresses("192.0.2.9") == [{"type": "InternalIP", "address": "192.0.2.9"}]
    assert record.normalise_addresses({"type": "Hostname", "address": "h"}) == [{"type": "Hostname", "address": "h"}]
    assert (
        record.normalise_addresses(None) == record.normalise_addresses(3) == record.normalise_addresses({"a": 1}) == []
    )
    assert record.normalise_addresses(["192.0.2.1"], default_type="ExternalIP") == [
        {"type": "ExternalIP", "address": "192.0.2.1"}
    ]


ADDRESSES = [
    {"type": "InternalIP", "address": "2001:db8::10"},
    {"type": "InternalIP", "address": "192.0.2.10"},
    {"type": "Hostname", "address": "h-1.example.test"},
    {"type": "ExternalIP", "address": "2001:db8:1::10"},
    {"type": "InternalIP", "address": "192.0.2.11"},
]


@pytest.mark.parametrize(
    "types, families, expected",
    [
        (
            record.DEFAULT_ADDRESS_TYPES,
            record.DEFAULT_ADDRESS_FAMILIES,
            "2001:db8:1::10",
        ),  # ExternalIP first, even IPv6 only
        (["InternalIP"], ["ipv4", "ipv6"], "192.0.2.10"),
        (["InternalIP"], ["ipv6", "ipv4"], "2001:db8::10"),
        (["*"], ["ipv4"], "192.0.2.10"),
        (["*"], ["ipv6", "ipv4"], "2001:db8::10"),
        (["Hostname", "InternalIP"], ["ipv4", "ipv6"], "192.0.2.10"),  # a Hostname is not an IP
        (["Hostname", "InternalIP"], ["hostname", "ipv4"], "h-1.example.test"),
        (["ExternalIP"], ["ipv4"], None),
        (["NoSuchType"], ["ipv4", "ipv6", "hostname"], None),
        ([], [], "192.0.2.10"),  # no preference: any type, families in the order ipv4, ipv6, hostname
        ([], ["ipv4"], "192.0.2.10"),
    ],
)
def test_select_address(types, families, expected):
    assert record.select_address(ADDRESSES, types, families) == expected


def test_select_address_ignores_junk():
    assert (
        record.select_address([None, "x", {"type": "InternalIP"}, {"type": "InternalIP", "address": "not an ip!"}])
        is None
    )
    assert record.select_address(None) is None


def test_select_address_works_out_families_only_for_wanted_types(monkeypatch):
    asked = []
    family = record.address_family
    monkeypatch.setattr(record, "address_family", lambda address: asked.append(address) or family(address))
    addresses = [
        {"type": "Hostname", "address": "h-1.example.test"},
        {"type": "InternalIP", "address": "192.0.2.10"},
        {"type": "InternalDNS", "address": "h-1.example.test"},
    ]
    assert record.select_address(addresses, ["ExternalIP", "InternalIP"], ["ipv6", "ipv4"]) == "192.0.2.10"
    assert asked == ["192.0.2.10"]  # once, though two families were tried; never for the other types


def eager_select_address(addresses, types, families):
    """The rule as it reads: every address's family worked out first."""
    types = list(types or ()) or ["*"]
    families = list(families or ()) or list(record.ADDRESS_FAMILIES)
    known = [(e.get("type"), e.get("address"), record.address_family(e.get("address"))) for e in addresses]
    for wanted_type in types:
        for family in families:
            for entry_type, address, entry_family in known:
                if entry_family == family and wanted_type in ("*", entry_type):
                    return address
    return None


address_entries = st.lists(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["InternalIP", "ExternalIP", "Hostname", "Other"]),
            "address": st.one_of(st.ip_addresses().map(str), st.sampled_from(["h.example.test", "bad address", ""])),
        }
    ),
    max_size=6,
)


@settings(max_examples=200)
@given(
    address_entries,
    st.lists(st.sampled_from(["InternalIP", "ExternalIP", "Hostname", "*"]), max_size=3),
    st.lists(st.sampled_from(record.ADDRESS_FAMILIES), min_size=1, max_size=3, unique=True),
)
def test_select_address_properties(addresses, types, families):
    chosen = record.select_address(addresses, types, families)
    assert chosen == eager_select_address(addresses, types, families)
    wanted = [
        a
        for a in addresses
        if record.address_family(a["address"]) in families and (not types or "*" in types or a["type"] in types)
    ]
    if not wanted:
        assert chosen is None
        return
    # The spec: rank each address by the first (type, family) pair of the preference it matches; the chosen address
    # is the first, in list order, of those with the best rank.
    order = [(t, f) for t in (types or ["*"]) for f in families]

    def rank(entry):
        return min(
            i
            for i, (t, f) in enumerate(order)
            if (t == "*" or t == entry["type"]) and f == record.address_family(entry["address"])
        )

    best = min(rank(a) for a in wanted)
    assert chosen == next(a["address"] for a in wanted if rank(a) == best)


# ----------------------------------------------------------------- conditions


def test_conditions():
    raw = [
        {"type": "Ready", "status": "True", "reason": "R", "message": "m", "lastTransitionTime": NOW, "x": 1},
        {"status": "True"},
        "junk",
        {"type": "AssociateBMH", "status": "False", "reason": 5},
    ]
    conditions = record.normalise_conditions(raw)
    assert conditions == [
        {"type": "Ready", "status": "True", "reason": "R", "message": "m", "lastTransitionTime": NOW},
        {"type": "AssociateBMH", "status": "False"},
    ]
    assert record.condition_status(conditions, "Ready") == "True"
    assert record.condition_status(conditions, "AssociateBMH") == "False"
    assert record.condition_status(conditions, "Other") is None
    assert record.normalise_conditions("x") == record.normalise_conditions(None) == []


# --------------------------------------------------------------------- metal3


def test_metal3_record_of_a_bound_ready_claim():
    claim = bound_claim(
        labels={"app": "web", "baremetal.tenancy/host-class": "large"},
        annotations={
            "export.hostclaim.metal3.io/rack": "r1",
            "sub.export.hostclaim.metal3.io/x": "y",
            "other.example.com/z": "no",
            "export.hostclaim.metal3.io/n": 5,
        },
        poweredOn=False,
    )
    record = metal3_view.metal3_record(claim)
    assert record["backend"] == "metal3" and record["name"] == "web-1" and record["namespace"] == "tenant-a"
    assert record["uid"] == "uid-tenant-a-web-1" and record["host"] == "h-1"
    assert record["associated"] is True and record["ready"] is True
    assert record["online"] is False and record["powered_on"] is False
    assert [c["type"] for c in record["conditions"]] == ["AssociateBMH", "Ready"]
    assert record["labels"]["app"] == "web"
    assert record["annotations"] == {"export.hostclaim.metal3.io/rack": "r1", "sub.export.hostclaim.metal3.io/x": "y"}
    assert record["image"] == IMAGE
    assert {"type": "InternalIP", "address": "192.0.2.10"} in record["addresses"]
    assert {"type": "Hostname", "address": "h-1.example.test"} in record["addresses"]
    assert record["nics"] == [
        {"name": "eno1", "MAC": "52:54:00:00:00:01", "ip": "192.0.2.10"},
        {"name": "eno2", "MAC": "52:54:00:00:00:02"},
    ]
    json.dumps(record)  # what the cache stores


def test_metal3_record_not_ready_and_defaults():
    claim = bound_claim(ready=False)
    claim["spec"] = {"online": "yes"}
    claim["status"]["poweredOn"] = "on"
    record = metal3_view.metal3_record(claim)
    assert record["ready"] is False and record["online"] is False and record["powered_on"] is None
    assert record["image"] is None


@pytest.mark.parametrize(
    "mutate",
    [
        lambda c: c.pop("status"),
        lambda c: c["status"].update(conditions=[]),
        lambda c: c["status"].update(conditions=[{"type": "AssociateBMH", "status": "False"}]),
        lambda c: c["status"].update(conditions="junk"),
        lambda c: c["metadata"].pop("name"),
    ],
)
def test_metal3_record_of_an_unbound_claim_is_none(mutate):
    claim = bound_claim()
    mutate(claim)
    assert metal3_view.metal3_record(claim) is None


def test_metal3_record_of_junk_is_none():
    assert (
        metal3_view.metal3_record(None) is None
        and metal3_view.metal3_record("x") is None
        and metal3_view.metal3_record({}) is None
    )


@pytest.mark.parametrize("label", ["other-host", None, ""])
def test_metal3_record_fails_closed_when_the_label_disagrees_with_the_binders_record(label):
    """Issue 12, defect 2: the host comes from what the binder recorded, as for host_claim_info (one rule)."""
    claim = bound_claim()
    assert metal3_view.metal3_record(claim)["host"] == "h-1" == bound_host(claim)
    if label is None:
        claim["metadata"]["labels"].pop(m.BINDING_LABEL)
    else:
        claim["metadata"]["labels"][m.BINDING_LABEL] = label
    assert metal3_view.metal3_record(claim) is None and bound_host(claim) is None


@settings(max_examples=200)
@given(label=st.text(max_size=30))
def test_metal3_record_host_is_never_taken_from_the_label(label):
    claim = bound_claim()
    claim["metadata"]["labels"][m.BINDING_LABEL] = label
    record = metal3_view.metal3_record(claim)
    assert record is None or record["host"] == "h-1"


def test_metal3_record_carries_no_bmc_data_whatever_the_claim_holds():
    claim = bound_claim()
    # Things a tampered or foreign object could hold: none is read.
    claim["spec"]["bmc"] = {"address": BMC_ADDRESS, "credentialsName": BMC_SECRET}
    claim["status"]["errorMessage"] = "cannot reach %s as %s/%s" % (BMC_IP, BMC_USER, BMC_PASSWORD)
    claim["status"]["hardware"] = {"bmc": BMC_ADDRESS}
    claim["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = json.dumps(claim["spec"])
    claim["spec"]["image"]["extra"] = BMC_PASSWORD
    claim["status"]["nics"][0]["bmc"] = BMC_IP
    claim["status"]["conditions"][0]["bmc"] = BMC_SECRET
    record = metal3_view.metal3_record(claim)
    assert find_bmc_data(record, BMC_VALUES) == []


# --------------------------------------------------------------------- ironic

PROJECT = "p-1"
NODE = {
    "uuid": "n-uuid-1",
    "name": "node-1",
    "provision_state": "active",
    "target_provision_state": None,
    "power_state": "power on",
    "maintenance": False,
    "resource_class": "large",
    "traits": ["CUSTOM_B", "CUSTOM_A"],
    "instance_info": {
        "image_source": "http://images.example.com/os.qcow2",
        "image_checksum": "c" * 32,
        "image_disk_format": "qcow2",
        "configdrive": "******",
        "baremetal_tenancy_addresses": [{"type": "InternalIP6", "address": "2001:db8::5"}],
    },
    "extra": {"addresses": ["198.51.100.7"], "bmc": BMC_ADDRESS},
    "owner": "infra",
    "lessee": PROJECT,
    "instance_uuid": "a-uuid-1",
    # fields the inventory never asks for, present here to prove they are not kept
    "driver_info": {"redfish_address": BMC_ADDRESS, "redfish_password": BMC_PASSWORD},
    "last_error": "cannot reach %s" % BMC_IP,
    "maintenance_reason": BMC_USER,
}
ALLOCATION = {
    "uuid": "a-uuid-1",
    "name": "db-0",
    "node_uuid": "n-uuid-1",
    "state": "active",
    "owner": PROJECT,
    "extra": {"addresses": [{"type": "ExternalIP", "address": "203.0.113.7"}], "note": BMC_SECRET},
}
PORTS = [
    {"uuid": "p2", "address": "52:54:00:00:00:0b", "node_uuid": "n-uuid-1", "pxe_enabled": False},
    {"uuid": "p1", "address": "52:54:00:00:00:0a", "node_uuid": "n-uuid-1", "pxe_enabled": True},
    {"uuid": "p3", "address": "52:54:00:00:00:0c", "node_uuid": "other"},
    {"uuid": "p4", "node_uuid": "n-uuid-1"},
]


def test_ironic_record_joins_allocation_node_and_ports():
    records = ironic_view.ironic_records([ALLOCATION], [NODE], PORTS, {PROJECT: "tenant-a"})
    assert len(records) == 1
    record = records[0]
    assert record["backend"] == "ironic" and record["name"] == "db-0"
    assert record["namespace"] == record["project_id"] == PROJECT and record["project_name"] == "tenant-a"
    assert record["host"] == "node-1" and record["node_uuid"] == "n-uuid-1" and record["allocation_uuid"] == "a-uuid-1"
    assert record["ready"] is True and record["powered_on"] is True and record["power_state"] == "power on"
    assert record["traits"] == ["CUSTOM_A", "CUSTOM_B"] and record["resource_class"] == "large"
    assert [c["type"] for c in record["conditions"]] == ["Allocated", "Ready"]
    assert record["image"] == {"url": "http://images.example.com/os.qcow2", "checksum": "c" * 32, "format": "qcow2"}
    # only the owner's record (node extra): instance_info and allocation extra are tenant-written
    assert record["addresses"] == [{"type": "InternalIP", "address": "198.51.100.7"}]
    assert record["nics"] == [
        {"name": "p1", "MAC": "52:54:00:00:00:0a", "ip": None},
        {"name": "p2", "MAC": "52:54:00:00:00:0b", "ip": None},
    ]
    assert record["boot_mac_address"] == "52:54:00:00:00:0a"
    assert record["labels"] == {} and record["online"] is None
    assert find_bmc_data(record, BMC_VALUES) == []
    json.dumps(record)


def test_ironic_addresses_key_is_the_one_host_claim_writes():
    assert m.IRONIC_ADDRESSES_KEY == ironic_model.ADDRESSES_KEY


def test_ironic_addresses_come_from_the_owner_record_only():
    planted = [{"type": "ExternalIP", "address": "203.0.113.66"}]
    node = dict(
        NODE,
        instance_info={"baremetal_tenancy_addresses": planted},
        extra={"addresses": [{"type": "InternalIP6", "address": "2001:db8::5"}, "198.51.100.7", "198.51.100.7"]},
    )
    allocation = dict(ALLOCATION, extra={"addresses": planted})
    assert ironic_view.ironic_addresses(allocation, node) == [
        {"type": "InternalIP", "address": "2001:db8::5"},
        {"type": "InternalIP", "address": "198.51.100.7"},
    ]
    assert ironic_view.ironic_addresses(allocation, dict(node, extra={})) == []


def test_ironic_fields_never_ask_for_bmc_data():
    for fields in (m.IRONIC_ALLOCATION_FIELDS, m.IRONIC_NODE_FIELDS, m.IRONIC_PORT_FIELDS):
        assert not set(fields) & {
            "driver_info",
            "driver_internal_info",
            "last_error",
            "maintenance_reason",
            "properties",
            "bios_interface",
            "local_link_connection",
        }


@pytest.mark.parametrize(
    "changes, ready, reason",
    [
        ({}, True, "Provisioned"),
        ({"maintenance": True}, False, "Maintenance"),
        ({"provision_state": "available"}, False, "Provisioning"),
        ({"provision_state": "active", "target_provision_state": "deleted"}, False, "Provisioning"),
        ({"provision_state": "deploying", "target_provision_state": "active"}, False, "Provisioning"),
        ({"provision_state": "deploy failed"}, False, "DeployFailed"),
        ({"provision_state": None}, False, "Provisioning"),
    ],
)
def test_ironic_ready(changes, ready, reason):
    node = dict(NODE, **changes)
    assert ironic_view.claim_ready(ALLOCATION, node)[:2] == (ready, reason)
    rec = ironic_view.ironic_records([ALLOCATION], [node])[0]
    assert rec["ready"] is ready
    assert record.condition_status(rec["conditions"], "Ready") == ("True" if ready else "False")


def test_ironic_records_skip_unbound_and_invisible():
    pending = dict(ALLOCATION, uuid="a2", node_uuid=None, state="allocating")
    invisible = dict(ALLOCATION, uuid="a3", node_uuid="somebody-elses")
    assert ironic_view.ironic_records([pending, invisible, "junk"], [NODE, {"name": "no-uuid"}, None]) == []
    assert ironic_view.ironic_records(None, None) == []


def test_ironic_record_names_and_defaults():
    unnamed = dict(ALLOCATION, name=None)
    bare_node = {"uuid": "n-uuid-1", "traits": "junk", "power_state": None}
    record = ironic_view.ironic_records([unnamed], [bare_node])[0]
    assert record["name"] == "n-uuid-1" and record["host"] == "n-uuid-1"
    assert record["traits"] == [] and record["powered_on"] is None and record["image"] is None
    assert record["nics"] == [] and record["boot_mac_address"] is None and record["project_name"] is None
    named_node = ironic_view.ironic_records([unnamed], [dict(bare_node, name="node-9")])[0]
    assert named_node["name"] == "node-9"
    no_pxe = ironic_view.ironic_records([ALLOCATION], [NODE], [dict(p, pxe_enabled=False) for p in PORTS[:2]])[0]
    assert no_pxe["boot_mac_address"] == "52:54:00:00:00:0a"


def test_ironic_live_iso_image():
    node = dict(NODE, instance_info={"boot_iso": "http://images.example.com/live.iso"})
    expected = {"url": "http://images.example.com/live.iso", "format": "live-iso"}
    assert ironic_view.ironic_records([ALLOCATION], [node])[0]["image"] == expected


# ------------------------------------------------------------------ entries


@given(st.text(max_size=30))
def test_safe_group_name(text):
    safe = m.safe_group_name(text)
    if text == "":
        assert safe is None
    else:
        assert re.match(r"[A-Za-z_][A-Za-z0-9_]*\Z", safe)
        assert len(safe) in (len(text), len(text) + 1)


def test_safe_group_name_examples():
    assert m.safe_group_name("tenancy_namespace_tenant-a") == "tenancy_namespace_tenant_a"
    assert m.safe_group_name("9lives") == "_9lives"
    assert m.safe_group_name(None) is None


def metal3(name, namespace, ready=True, labels=None, addresses=None):
    return {
        "backend": "metal3",
        "name": name,
        "namespace": namespace,
        "ready": ready,
        "labels": labels or {},
        "addresses": addresses if addresses is not None else [{"type": "InternalIP", "address": "192.0.2.1"}],
    }


def ironic(name, project="p-1", project_name="tenant-a", ready=True, resource_class="large"):
    return {
        "backend": "ironic",
        "name": name,
        "namespace": project,
        "project_id": project,
        "project_name": project_name,
        "ready": ready,
        "resource_class": resource_class,
        "node_uuid": "u-" + name,
        "addresses": [],
    }


@pytest.mark.parametrize(
    "mode, backend, namespaces, expected",
    [
        ("auto", "metal3", ["a"], False),
        ("auto", "metal3", ["a", "b"], True),
        ("auto", "metal3", ["a", "a"], False),
        ("auto", "ironic", None, False),
        ("always", "ironic", None, True),
        ("always", "metal3", ["a"], True),
        ("never", "metal3", ["a", "b"], False),
    ],
)
def test_should_qualify(mode, backend, namespaces, expected):
    assert m.should_qualify(mode, backend, namespaces) is expected


def test_default_host_name():
    assert m.default_host_name(metal3("web", "ns-a")) == "web"
    assert m.default_host_name(metal3("web", "ns-a"), True) == "web.ns-a"
    assert m.default_host_name(ironic("db"), True) == "db.tenant-a"
    assert m.default_host_name(ironic("db", project_name=None), True) == "db.p-1"
    assert m.default_host_name(dict(metal3("web", "ns"), namespace=None), True) == "web"


def test_host_class():
    assert m.host_class(metal3("w", "n", labels={m.DEFAULT_HOST_CLASS_LABEL: "big"})) == "big"
    assert m.host_class(metal3("w", "n", labels={"kind": "big"}), "kind") == "big"
    assert m.host_class(metal3("w", "n", labels={"kind": "big"}), "") is None
    assert m.host_class(metal3("w", "n")) is None
    assert m.host_class(ironic("d")) == "large"


def test_hostvars_default_names():
    variables = m.hostvars(metal3_view.metal3_record(bound_claim()), "bm_")
    assert set(variables) == set(
        "bm_" + name for name in m.DEFAULT_HOST_VARIABLES if name not in m.BACKEND_VARIABLES["ironic"]
    )
    variables = m.hostvars(ironic_view.ironic_records([ALLOCATION], [NODE])[0])
    assert set(variables) == set("tenancy_" + name for name in m.DEFAULT_HOST_VARIABLES)
    assert "ansible_host" not in variables


def test_every_host_variable_of_each_backend():
    for rec in (metal3_view.metal3_record(bound_claim()), ironic_view.ironic_records([ALLOCATION], [NODE])[0]):
        other = [name for backend, names in m.BACKEND_VARIABLES.items() if backend != rec["backend"] for name in names]
        names = m.variable_names(rec["backend"], m.HOST_VARIABLES)
        assert set(names) == set(m.HOST_VARIABLES) - set(other)
        variables = m.hostvars(rec, "v_", names=names)
        assert set(variables) == set("v_" + name for name in names)
        for name in names:  # every variable other than the computed ones is the record's field
            if name not in ("host_class", "conditions", "condition_details"):
                assert variables["v_" + name] == rec[name], name
        assert variables["v_condition_details"] == rec["conditions"]
        assert variables["v_conditions"] == dict((c["type"], c["status"]) for c in rec["conditions"])
        assert variables["v_conditions"]["Ready"] == ("True" if rec["ready"] else "False")


def test_variable_names():
    assert m.variable_names("metal3", ["uid", "traits", "name", "uid"]) == ("uid", "name")  # no ironic-only, no twice
    assert m.variable_names("ironic", ["uid", "traits", "conditions"]) == ("traits", "conditions")
    with pytest.raises(InvalidInput) as caught:
        m.variable_names("metal3", ["name", "bmc_address"])
    assert caught.value.obj == "option host_variables" and "'bmc_address'" in caught.value.cause


def test_needs_ports():
    assert not m.needs_ports() and not m.needs_ports(None) and not m.needs_ports(m.DEFAULT_HOST_VARIABLES)
    assert m.needs_ports(["name", "nics"]) and m.needs_ports(["boot_mac_address"])
    assert m.needs_ports(m.HOST_VARIABLES)


def test_condition_map():
    conditions = [{"type": "Ready", "status": "False"}, {"type": "Ready", "status": "True"}, {"type": "X"}]
    assert m.condition_map(conditions) == {"Ready": "False", "X": None}  # the first of a type, as condition_status
    assert m.condition_map(conditions)["Ready"] == record.condition_status(conditions, "Ready")
    assert m.condition_map(None) == {}


def test_prepare_hosts_host_variables():
    records = [metal3("web", "a")]
    entries = m.prepare_hosts(records, {"backend": "metal3", "host_variables": ["name", "addresses", "traits"]})
    assert entries[0]["hostvars"] == {
        "tenancy_name": "web",
        "tenancy_addresses": records[0]["addresses"],
        "ansible_host": "192.0.2.1",
    }
    with pytest.raises(InvalidInput):
        m.prepare_hosts(records, {"backend": "metal3", "host_variables": ["name", "password"]})


def test_default_groups():
    assert m.default_groups(metal3("w", "ns-a", labels={m.DEFAULT_HOST_CLASS_LABEL: "x.large"})) == [
        "tenancy_namespace_ns_a",
        "tenancy_ready",
        "tenancy_class_x_large",
    ]
    assert m.default_groups(metal3("w", "ns-a", ready=False), "g_") == ["g_namespace_ns_a", "g_not_ready"]
    assert m.default_groups(ironic("d")) == ["tenancy_project_tenant_a", "tenancy_ready", "tenancy_class_large"]
    assert m.default_groups(ironic("d", project_name=None, resource_class=None)) == [
        "tenancy_project_p_1",
        "tenancy_ready",
    ]


def test_default_groups_memo_gives_the_same_names():
    memo = {}
    records = [
        metal3("w", "ns-a", labels={m.DEFAULT_HOST_CLASS_LABEL: "x.large"}),
        metal3("v", "ns-a", labels={m.DEFAULT_HOST_CLASS_LABEL: "x.large"}),
        metal3("u", "ns-a", ready=False),
        metal3("t", "ns-b"),
        ironic("d"),
        ironic("e", project_name=None, resource_class=None),
    ]
    for one in records * 2:
        assert m.default_groups(one, "g_", memo=memo) == m.default_groups(one, "g_")
    assert len(memo) == 5  # w and v share their groups
    first, second = m.default_groups(records[0], "g_", memo=memo), m.default_groups(records[1], "g_", memo=memo)
    first.append("changed")
    assert second == ["g_namespace_ns_a", "g_ready", "g_class_x_large"]  # each caller gets its own list


def test_prepare_hosts_defaults():
    records = [metal3("web", "b"), metal3("db", "a", ready=False, addresses=[]), metal3("web", "a")]
    entries = m.prepare_hosts(records, {"backend": "metal3", "namespaces": ["a", "b"]})
    assert [e["name"] for e in entries] == ["db.a", "web.a", "web.b"]  # sorted by namespace, name
    assert "ansible_host" not in entries[0]["hostvars"]  # kept without an address by default
    assert entries[1]["hostvars"]["ansible_host"] == "192.0.2.1"
    assert entries[1]["hostvars"]["tenancy_name"] == "web"
    assert entries[0]["groups"] == ["tenancy_namespace_a", "tenancy_not_ready"]
    assert entries[2]["record"] is records[0]


def test_prepare_hosts_options():
    records = [metal3("web", "a"), metal3("db", "a", ready=False), metal3("cache", "a", addresses=[])]
    options = {
        "backend": "metal3",
        "namespaces": ["a"],
        "only_ready": True,
        "hosts_without_address": "skip",
        "default_groups": False,
        "hostvar_prefix": "x_",
        "address_types": ["ExternalIP"],
    }
    assert m.prepare_hosts(records, options) == []
    options["address_types"] = ["*"]
    entries = m.prepare_hosts(records, options)
    assert [e["name"] for e in entries] == ["web"] and entries[0]["groups"] == []
    assert "x_name" in entries[0]["hostvars"]
    assert [e["name"] for e in m.prepare_hosts(records, dict(options, qualify_host_names="always"))] == ["web.a"]


@pytest.mark.parametrize(
    "options",
    [
        {"backend": "metal3", "namespaces": ["a", "b"]},
        {"backend": "metal3", "only_ready": True, "hosts_without_address": "skip", "address_types": ["*"]},
        {"backend": "metal3", "default_groups": False, "qualify_host_names": "always"},
    ],
)
def test_records_prepared_one_at_a_time_then_sorted_are_prepare_hosts(options):
    records = [
        metal3("web", "b"),
        metal3("db", "a", ready=False, addresses=[]),
        metal3("web", "a"),
        metal3("web", "a", ready=False),  # an equal sort key: the order of the records decides, in both
        metal3("cache", "a", addresses=[]),
    ]
    preparer = m.HostPreparer(options)
    one_by_one = [preparer.entry(one) for one in records]
    assert m.sort_entries(entry for entry in one_by_one if entry is not None) == m.prepare_hosts(records, options)
    assert all(entry is None or entry["record"] is one for entry, one in zip(one_by_one, records))


def test_host_preparer_rejects_an_unknown_host_variable_before_any_record():
    with pytest.raises(InvalidInput, match="password"):
        m.HostPreparer({"backend": "metal3", "host_variables": ["name", "password"]})


def test_prepare_hosts_does_not_change_records():
    records = [metal3_view.metal3_record(bound_claim())]
    before = copy.deepcopy(records)
    m.prepare_hosts(records, {})
    assert records == before


def test_check_unique_names():
    a, b = metal3("web", "a"), metal3("web", "b")
    m.check_unique_names([("web.a", a), ("web.b", b)])
    with pytest.raises(InvalidInput) as error:
        m.check_unique_names([("web", a), ("web", b)])
    assert "host name 'web'" in error.value.message
    assert "HostClaim a/web" in error.value.message and "HostClaim b/web" in error.value.message
    with pytest.raises(InvalidInput, match="empty name"):
        m.check_unique_names([("", a)])
    with pytest.raises(InvalidInput, match="allocation d"):
        m.check_unique_names([(None, ironic("d"))])


def test_jump_host_gives_every_host_a_proxy_jump():
    records = [metal3("web", "a"), metal3("cache", "a", addresses=[])]
    entries = m.prepare_hosts(records, {"backend": "metal3", "jump_host": "root@10.20.0.1:2222"})
    assert [e["hostvars"]["ansible_ssh_common_args"] for e in entries] == ["-o ProxyJump=root@10.20.0.1:2222"] * 2
    plain = m.prepare_hosts(records, {"backend": "metal3"})
    assert all("ansible_ssh_common_args" not in e["hostvars"] for e in plain)
