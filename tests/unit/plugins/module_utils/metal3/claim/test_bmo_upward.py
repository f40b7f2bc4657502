# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""bmo_upward: the status host_bind writes on a claim of baremetal-operator's dialect."""

import json

from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import bmo_controller as bmo
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import bmo_upward

NOW, LATER = "2026-11-25T03:00:00Z", "2026-11-25T03:05:00Z"


def _claim(powered=True, status=None, generation=2):
    return {
        "metadata": {"namespace": "t", "name": "web", "generation": generation, "finalizers": [bmo.FINALIZER]},
        "spec": {"poweredOn": powered},
        "status": status or {},
    }


def _host(state="provisioned", powered=True, **status):
    return {
        "metadata": {"namespace": "infra", "name": "h1"},
        "spec": {"bootMACAddress": "aa:bb:cc:dd:ee:01"},
        "status": dict({"provisioning": {"state": state}, "poweredOn": powered}, **status),
    }


def _conditions(status):
    return dict((c["type"], (c["status"], c["reason"])) for c in status["conditions"])


def test_a_provisioned_powered_host_makes_every_condition_and_ready_true():
    status = bmo_upward.bound_status(_claim(), _host(), NOW)
    assert status["bareMetalHost"] == {"namespace": "infra", "name": "h1"} and status["poweredOn"] is True
    assert _conditions(status) == {
        "Associated": ("True", "BareMetalHostAssociated"),
        "Synchronized": ("True", "ConfigurationSynced"),
        "Provisioned": ("True", "Provisioned"),
        "Ready": ("True", "InfoReported"),
    }
    assert [c["type"] for c in status["conditions"]] == ["Ready", "Associated", "Provisioned", "Synchronized"]
    assert {c["observedGeneration"] for c in status["conditions"]} == {2}
    assert status["lastUpdated"] == NOW


def test_nothing_moves_when_nothing_changed_and_transition_times_are_kept():
    first = bmo_upward.bound_status(_claim(), _host(), NOW)
    again = bmo_upward.bound_status(_claim(status=first), _host(), LATER)
    assert again == first
    powered_off = bmo_upward.bound_status(_claim(status=first), _host(powered=False), LATER)
    times = dict((c["type"], c["lastTransitionTime"]) for c in powered_off["conditions"])
    assert times["Associated"] == NOW and times["Provisioned"] == LATER and powered_off["lastUpdated"] == LATER
    assert _conditions(powered_off)["Provisioned"] == ("False", "PowerChanging")


def test_a_sync_problem_is_synchronized_false_and_shows_in_ready():
    status = bmo_upward.bound_status(
        _claim(), _host(), NOW, ("UserDataSecretSyncFailure", "Secret ud (spec.userData) was not found")
    )
    assert _conditions(status)["Synchronized"] == ("False", "UserDataSecretSyncFailure")
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "False" and "* Synchronized: Secret ud (spec.userData) was not found" in ready["message"]


def test_a_host_error_never_quotes_the_bmc():
    host = _host(state="provisioned", errorType="power management error", errorMessage="bmc 10.0.0.9 refused user-x7")
    status = bmo_upward.bound_status(_claim(), host, NOW)
    assert _conditions(status)["Provisioned"] == ("False", "HostError")
    assert "10.0.0.9" not in json.dumps(status) and "user-x7" not in json.dumps(status)


def test_an_unbound_claim_says_what_upstream_says_and_drops_the_host_parts():
    bound = bmo_upward.bound_status(_claim(), _host(), NOW)
    for reason in bmo_upward.NO_HOST_REASONS:
        status = bmo_upward.unbound_status(_claim(status=bound), reason, "no host is shared with namespace t", LATER)
        associated = next(c for c in status["conditions"] if c["type"] == "Associated")
        assert (associated["status"], associated["reason"], associated["message"]) == (
            "False",
            bmo.NO_HOST_REASON,
            bmo.NO_HOST_MESSAGE,
        )
        assert set(_conditions(status)) == {"Associated", "Ready"}
        assert "bareMetalHost" not in status and "poweredOn" not in status
    invalid = bmo_upward.unbound_status(_claim(), "InvalidSpec", "HostClaim t/web: spec.image.url: bad", NOW)
    assert _conditions(invalid)["Associated"] == ("False", "InvalidSpec")


def test_upstreams_own_write_on_the_binders_status_changes_nothing():
    """What upstream's controller computes for a claim the binder bound (a take-over back) is a fixed point."""
    status = bmo_upward.bound_status(_claim(), _host(), NOW)
    claim = _claim(status=status)
    import datetime

    later = datetime.datetime(2026, 11, 25, 4, 0, tzinfo=datetime.timezone.utc)
    write = bmo.controller_write(claim, None, later)
    assert write["status"] == dict(status) and write["finalizers"] == [bmo.FINALIZER]


def test_a_deleted_claim_held_by_another_finalizer_shows_upstreams_deleting_status():
    status = bmo_upward.deleted_status(_claim(status=bmo_upward.bound_status(_claim(), _host(), NOW)), LATER)
    assert "bareMetalHost" not in status
    assert _conditions(status)["Associated"] == ("False", bmo.DELETING_REASON)


def test_the_host_status_annotation_leaves_bmc_data_out():
    host = _host(
        hardware={"nics": [{"name": "eth0", "mac": "aa:bb", "ip": "192.0.2.7"}, {"name": "bmc", "ip": "10.0.0.9"}]}
    )
    value = json.loads(bmo_upward.host_status_annotation(host, ["10.0.0.9"]))
    assert value == {
        "addresses": [{"type": "InternalIP", "address": "192.0.2.7"}],
        "nics": [{"name": "eth0", "MAC": "aa:bb", "ip": "192.0.2.7"}],
        "bootMACAddress": "aa:bb:cc:dd:ee:01",
    }
    bare = {"metadata": {"name": "h"}, "spec": {}, "status": {}}
    assert bmo_upward.host_status_annotation(bare) is None
