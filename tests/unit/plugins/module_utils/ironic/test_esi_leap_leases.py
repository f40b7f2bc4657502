# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""host_lease ending an ESI-Leap lease: what the lessee left on the node goes first (its VIFs, and on a node that is
not deployed its instance_info and allocation), before ESI-Leap's manager takes the lessee away."""

import datetime

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import esi_leap_leases as L
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import esi_leap_model as M
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.fake_module import FakeModule

UTC = datetime.timezone.utc
NOW = datetime.datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)
A = "a" * 32
B = "b" * 32


def lease(project=A, status="active", start_in_hours=-1):
    return M.Lease(
        uuid="l-1",
        offer_uuid=None,
        node_uuid="n1-uuid",
        node="n1",
        resource_class="rc",
        project=project,
        project_name=None,
        owner="o" * 32,
        owner_name="infra",
        start=NOW + datetime.timedelta(hours=start_in_hours),
        end=None,
        status=status,
    )


class FakeIronic:
    def __init__(self, node):
        self.node = node
        self.vifs = ["port-of-the-lessee"]
        self.calls = []

    def get_node(self, ident, fields=(), missing_ok=False):
        return {key: self.node.get(key) for key in fields}

    def detach_vifs(self, ident, label=None):
        self.calls.append(("detach vifs", ident))
        vifs, self.vifs = self.vifs, []
        return vifs

    def patch_node(self, ident, ops, label=None):
        self.calls.append(("patch", ident, [op["path"] for op in ops]))


def clear(node, item):
    ironic = FakeIronic(node)
    run = L.EsiLeaseRun(FakeModule(), ironic, None, now=NOW)
    run._clear_leftovers(item, "n1")
    return ironic


@pytest.mark.parametrize("state", ["active", "available"])
def test_the_lessees_vifs_go_first_deployed_or_not(state):
    node = {"uuid": "n1-uuid", "name": "n1", "lessee": A, "provision_state": state, "instance_info": {"x": 1}}
    ironic = clear(node, lease())
    assert ironic.calls[0] == ("detach vifs", "n1-uuid") and ironic.vifs == []
    # the rest of the tenant's on a node that is not deployed (a deployed one is undeployed by ESI-Leap)
    patches = [call for call in ironic.calls if call[0] == "patch"]
    assert patches == ([] if state == "active" else [("patch", "n1-uuid", ["/instance_info"])])


def test_another_lessees_node_and_a_pending_lease_are_left_alone():
    node = {"uuid": "n1-uuid", "name": "n1", "lessee": B, "provision_state": "available", "instance_info": {"x": 1}}
    assert clear(node, lease()).calls == []  # the node's lessee is not the lease's project: nothing of it is touched
    mine = dict(node, lessee=A)
    assert clear(mine, lease(status="created", start_in_hours=1)).calls == []  # not begun: nothing of A's there yet
