# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""ironic/claims.py: an allocation Ironic stopped working on (``allocating`` for good) is created again."""

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common import polling
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import WaitTimeout
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import claims
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.writes import Writes
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.fake_module import FakeModule as Mod


class Ironic:
    """Allocations by uuid; ``stalled`` ones stay ``allocating``, others are filled ``fill_after`` seconds
    after their creation (the clock moves only when the module sleeps)."""

    def __init__(self, stalled=1, fill_after=3.0):
        self.time = 0.0
        self.allocations = {}
        self.stalled = stalled
        self.fill_after = fill_after
        self.calls = []
        self.created = 0

    def clock(self):
        return self.time

    def sleep(self, seconds):
        self.time += seconds

    def poll(self, fetch, done, timeout, what, **kwargs):
        return polling.poll(fetch, done, timeout, what, sleep=self.sleep, clock=self.clock, **kwargs)

    def create_allocation(self, name, resource_class, traits=None, candidate_nodes=None):
        self.calls.append(("create", name, resource_class, tuple(traits or ()), tuple(candidate_nodes or ())))
        self.created += 1
        uuid = "alloc-%d" % self.created
        self.allocations[uuid] = {
            "uuid": uuid,
            "name": name,
            "resource_class": resource_class,
            "traits": list(traits or []),
            "candidate_nodes": list(candidate_nodes or []),
            "state": "allocating",
            "node_uuid": None,
            "created": self.time,
            "stalled": self.stalled > 0,
        }
        self.stalled -= 1
        return dict(self.allocations[uuid])

    def delete_allocation(self, uuid, label):
        self.calls.append(("delete", uuid))
        del self.allocations[uuid]

    def get_allocation(self, uuid):
        allocation = self.allocations.get(uuid)
        if allocation is None:
            return None
        if not allocation["stalled"] and self.time - allocation["created"] >= self.fill_after:
            allocation.update(state="active", node_uuid="node-1")
        return dict(allocation)

    def get_node(self, uuid, missing_ok=False, fields=None):
        return {"uuid": uuid, "name": uuid, "provision_state": "available", "instance_info": {}}


def request(**extra):
    values = dict(
        name="web-0",
        obj="claim web-0",
        resource_class="baremetal",
        traits=["CUSTOM_GPU"],
        candidates=None,
        image=None,
        drive=None,
        digest=None,
        addresses=[],
        online=None,
        reboot=None,
        wait_ready=False,
        wait=True,
        wait_timeout=600,
    )
    values.update(extra)
    return claims.ClaimRequest(**values)


def test_a_stalled_allocation_is_deleted_and_created_again_with_the_same_fields():
    ironic, mod = Ironic(stalled=1), Mod()
    writes = Writes(mod, ironic)
    first = ironic.create_allocation("web-0", "baremetal", traits=["CUSTOM_GPU"], candidate_nodes=["n-1", "n-2"])
    filled = claims._settle_allocation(writes, request(resource_class=None, traits=None), first, 600)
    assert filled["state"] == "active" and filled["uuid"] == "alloc-2"
    # Recreated from the stalled allocation itself (a rerun may name the claim only).
    assert ironic.calls[1:] == [
        ("delete", "alloc-1"),
        ("create", "web-0", "baremetal", ("CUSTOM_GPU",), ("n-1", "n-2")),
    ]
    assert claims.ALLOCATION_STALL <= ironic.time < claims.ALLOCATION_STALL + 60
    assert len(mod.warnings) == 1 and "alloc-1" in mod.warnings[0] and "created again" in mod.warnings[0]
    assert mod.result["changed"] is True


def test_an_allocation_filled_in_time_is_left_alone():
    ironic, mod = Ironic(stalled=0), Mod()
    writes = Writes(mod, ironic)
    first = ironic.create_allocation("web-0", "baremetal")
    assert claims._settle_allocation(writes, request(), first, 600)["uuid"] == "alloc-1"
    assert [call[0] for call in ironic.calls] == ["create"] and mod.warnings == []
    assert mod.result["changed"] is False


@pytest.mark.parametrize("stalled", [2, 3])
def test_it_is_created_again_as_often_as_the_timeout_allows(stalled):
    ironic, mod = Ironic(stalled=stalled), Mod()
    first = ironic.create_allocation("web-0", "baremetal")
    filled = claims._settle_allocation(Writes(mod, ironic), request(), first, 600)
    assert filled["state"] == "active" and filled["uuid"] == "alloc-%d" % (stalled + 1)
    assert len(mod.warnings) == stalled


def test_within_a_short_timeout_the_wait_ends_naming_the_state_and_nothing_is_deleted():
    ironic, mod = Ironic(stalled=1), Mod()
    first = ironic.create_allocation("web-0", "baremetal")
    with pytest.raises(WaitTimeout) as caught:
        claims._settle_allocation(Writes(mod, ironic), request(), first, claims.ALLOCATION_STALL)
    assert "still allocating" in caught.value.cause and caught.value.obj == "claim web-0"
    assert [call[0] for call in ironic.calls] == ["create"] and list(ironic.allocations) == ["alloc-1"]


def test_a_rerun_finds_the_stalled_allocation_of_a_killed_run_and_finishes_the_claim():
    ironic, mod = Ironic(stalled=1), Mod()
    left = ironic.create_allocation("web-0", "baremetal")
    claim = claims.ClaimState(left, None)
    claims._allocate(Writes(mod, ironic), "tenant-a", request(resource_class=None, traits=None), claim)
    assert claim.allocation["uuid"] == "alloc-2" and claim.node["uuid"] == "node-1"
    assert list(ironic.allocations) == ["alloc-2"]


def test_check_mode_reports_the_re_creation_and_writes_nothing():
    ironic, mod = Ironic(stalled=1), Mod(check_mode=True)
    left = ironic.create_allocation("web-0", "baremetal")
    claim = claims.ClaimState(left, None)
    writes = Writes(mod, ironic)
    claims._allocate(writes, "tenant-a", request(traits=None), claim)
    assert claim.node is None and claim.allocation["state"] == "allocating"
    assert writes.would == ["delete allocation web-0", "create allocation web-0"]
    assert list(ironic.allocations) == ["alloc-1"] and mod.result["changed"] is True
