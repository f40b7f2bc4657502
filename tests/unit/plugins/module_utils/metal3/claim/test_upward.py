# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Host -> claim status (upward): conditions, readiness, addresses; never errorMessage or BMC data."""

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import Conflict
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3 import api as m3api
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import bmc_data, upward
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.metal3_objects import (
    BMC_ADDRESS,
    BMC_IP,
    BMC_PASSWORD,
    BMC_VALUES,
    LATER,
    NOW,
    make_claim,
    make_host,
    ref_to,
)


def host_for_status(**kwargs):
    claim = make_claim()
    return claim, make_host(consumer=ref_to(claim), **kwargs)


def conditions(status):
    return dict((c["type"], c) for c in status["conditions"])


def test_upward_status_of_a_provisioned_host():
    claim, host = host_for_status(state="provisioned", online=True, powered_on=True, hostname="node-1")
    host["status"]["hardware"]["nics"].append({"name": "ens4", "mac": "52:54:00:01:00:06", "ip": "fe80::1%ens4"})
    host["status"]["hardware"]["nics"].append({"name": "ens5", "mac": "52:54:00:01:00:07"})
    claim["spec"]["online"] = True
    status = upward.upward_status(host, None, NOW, claim)
    assert status["addresses"] == [
        {"type": "InternalIP", "address": "192.168.133.33"},
        {"type": "InternalIP", "address": "fe80::1%ens4"},
        {"type": "Hostname", "address": "node-1"},
        {"type": "InternalDNS", "address": "node-1"},
    ]
    assert status["bootMACAddress"] == "52:54:00:01:00:05"
    assert status["nics"] == [
        {"name": "ens3", "MAC": "52:54:00:01:00:05", "ip": "192.168.133.33"},
        {"name": "ens4", "MAC": "52:54:00:01:00:06", "ip": "fe80::1%ens4"},
        {"name": "ens5", "MAC": "52:54:00:01:00:07"},
    ]
    conds = conditions(status)
    assert conds["AssociateBMH"]["status"] == "True" and conds["AssociateBMH"]["reason"] == "Associated"
    assert conds["Ready"] == {
        "type": "Ready",
        "status": "True",
        "reason": "Provisioned",
        "message": "the host is provisioned and powered on",
        "lastTransitionTime": NOW,
    }
    assert status["lastUpdated"] == NOW
    assert status["poweredOn"] is True
    assert set(status) == {"addresses", "bootMACAddress", "nics", "conditions", "poweredOn", "lastUpdated"}


@pytest.mark.parametrize(
    "host_args,online,reason,ready",
    [
        ({"state": "provisioned", "powered_on": False}, False, "Provisioned", "True"),
        ({"state": "provisioned", "powered_on": False}, True, "PowerChanging", "False"),
        ({"state": "provisioned", "powered_on": True}, False, "PowerChanging", "False"),
        ({"state": "provisioning"}, True, "Provisioning", "False"),
        ({"state": "deprovisioning"}, True, "Deprovisioning", "False"),
        ({"state": "available"}, False, "NotProvisioned", "False"),
        ({"state": "ready"}, False, "NotProvisioned", "False"),
        ({"state": "inspecting"}, False, "HostNotReady", "False"),
        ({"state": "provisioned", "powered_on": True, "deleting": True}, True, "HostDeleting", "False"),
        (
            {"state": "provisioned", "powered_on": True, "annotations": {"baremetalhost.metal3.io/paused": ""}},
            True,
            "HostPaused",
            "False",
        ),
        ({"state": "provisioned", "error_type": "power management error"}, True, "HostError", "False"),
    ],
)
def test_ready_condition(host_args, online, reason, ready):
    claim, host = host_for_status(**host_args)
    claim["spec"]["online"] = online
    cond = conditions(upward.upward_status(host, None, NOW, claim))["Ready"]
    assert (cond["status"], cond["reason"]) == (ready, reason)
    assert cond["message"]


def test_ready_uses_host_online_without_claim():
    _dummy, host = host_for_status(state="provisioned", online=True, powered_on=True)
    assert conditions(upward.upward_status(host, None, NOW))["Ready"]["status"] == "True"


def test_error_message_never_goes_up():
    message = "Failed to get power state for node: %s user %s password %s" % (BMC_ADDRESS, "admin", BMC_PASSWORD)
    dummy, host = host_for_status(state="provisioned", error_type="power management error", error_message=message)
    status = upward.upward_status(host, None, NOW)
    assert bmc_data.find_bmc_data(status, BMC_VALUES) == []
    assert "power management error" in conditions(status)["Ready"]["message"]
    _dummy, host = host_for_status(state="provisioned", error_type="made up %s" % BMC_IP, error_message=message)
    status = upward.upward_status(host, None, NOW)
    assert bmc_data.find_bmc_data(status, BMC_VALUES) == []


def test_unknown_states_are_not_echoed():
    _dummy, host = host_for_status(state="weird %s" % BMC_IP)
    assert bmc_data.find_bmc_data(upward.upward_status(host, None, NOW), BMC_VALUES) == []


def test_upward_status_never_carries_bmc_data():
    claim, host = host_for_status(state="provisioned", powered_on=True, online=True, hostname="node-1")
    status = upward.upward_status(host, None, NOW, claim)
    assert bmc_data.find_bmc_data(host, BMC_VALUES)  # the fixture does carry BMC data
    assert bmc_data.find_bmc_data(status, BMC_VALUES) == []


def test_transition_times_and_last_updated_only_move_on_change():
    claim, host = host_for_status(state="provisioning")
    first = upward.upward_status(host, None, NOW, claim)
    again = upward.upward_status(host, first, LATER, claim)
    assert again == first
    host["status"]["provisioning"]["state"] = "deprovisioning"
    second = upward.upward_status(host, again, LATER, claim)
    # still False: reason and message change, the transition time does not
    assert conditions(second)["Ready"]["reason"] == "Deprovisioning"
    assert conditions(second)["Ready"]["lastTransitionTime"] == NOW
    assert second["lastUpdated"] == LATER
    host["status"]["provisioning"]["state"] = "provisioned"
    third = upward.upward_status(host, second, "2026-03-01T12:00:00Z", claim)
    assert conditions(third)["Ready"]["status"] == "True"
    assert conditions(third)["Ready"]["lastTransitionTime"] == "2026-03-01T12:00:00Z"
    assert conditions(third)["AssociateBMH"]["lastTransitionTime"] == NOW


def test_upward_status_refuses_a_host_not_bound_to_the_claim():
    claim = make_claim(labels={m3api.BINDING_LABEL: "h1"})
    other = make_claim(name="other", namespace="tenant-b")
    with pytest.raises(Conflict):
        upward.upward_status(make_host(consumer=ref_to(other), state="provisioned"), None, NOW, claim)
    with pytest.raises(Conflict):
        upward.upward_status(make_host(state="available"), None, NOW, claim)


def test_tampered_status_is_replaced():
    claim, host = host_for_status(state="provisioning")
    forged = {
        "conditions": [
            {"type": "Ready", "status": "True", "reason": "Forged", "lastTransitionTime": "x"},
            {"type": "Owned", "status": "True"},
        ],
        "addresses": [{"type": "InternalIP", "address": "1.2.3.4"}],
        "bmc": "x",
        "lastUpdated": "x",
    }
    status = upward.upward_status(host, forged, NOW, claim)
    assert conditions(status)["Ready"]["status"] == "False"
    assert set(conditions(status)) == {"Ready", "AssociateBMH"}
    assert status["addresses"] == [{"type": "InternalIP", "address": "192.168.133.33"}]
    assert "bmc" not in status and status["lastUpdated"] == NOW


def test_pending_and_unbound_status():
    bound = upward.upward_status(host_for_status(state="provisioned")[1], None, NOW)
    status = upward.pending_status(
        bound, "NoMatchingHost", "no host shared with namespace tenant-a matches hostSelector", LATER
    )
    assert status["addresses"] == [] and status["nics"] == [] and "bootMACAddress" not in status
    conds = conditions(status)
    assert conds["AssociateBMH"]["status"] == "False" and conds["AssociateBMH"]["reason"] == "NoMatchingHost"
    assert conds["AssociateBMH"]["lastTransitionTime"] == LATER
    assert conds["Ready"]["status"] == "False"
    assert (
        upward.pending_status(status, "NoMatchingHost", conds["AssociateBMH"]["message"], "2027-01-01T00:00:00Z")
        == status
    )
    unbound = upward.upward_status(None, None, NOW)
    assert conditions(unbound)["AssociateBMH"]["reason"] == "NotBound"
