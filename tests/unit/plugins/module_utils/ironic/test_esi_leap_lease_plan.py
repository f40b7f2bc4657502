# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""host_lease's decisions on ESI-Leap's leases: kept, refused, chosen, ended, and the views (pure)."""

import datetime

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import Conflict
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import esi_leap_lease_plan as P
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import esi_leap_model as M

UTC = datetime.timezone.utc
NOW = datetime.datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)
A = "a" * 32
B = "b" * 32


def t(hours):
    return NOW + datetime.timedelta(hours=hours)


def lease(uuid="l-1", project=A, node="n1", status="active", start=None, end=None):
    return M.Lease(
        uuid=uuid,
        offer_uuid=None,
        node_uuid=node + "-uuid",
        node=node,
        resource_class="rc",
        project=project,
        project_name=None,
        owner="o" * 32,
        owner_name="infra",
        start=start if start is not None else t(-1),
        end=end,
        status=status,
    )


def node(name="n1", lessee=None, state="available", rc="rc", traits=(), **extra):
    return dict(
        uuid=name + "-uuid",
        name=name,
        lessee=lessee,
        provision_state=state,
        resource_class=rc,
        traits=list(traits),
        **extra,
    )


@pytest.mark.parametrize(
    "item, expected",
    [
        (lease(), P.ACTIVE),
        (lease(status="created"), P.ACTIVE),  # the manager has not ticked yet: the window says active
        (lease(status="created", start=t(1)), P.PENDING),
        (lease(status="active", start=t(0.01)), P.ACTIVE),  # fulfilled: ESI-Leap's clock ran ahead of the run's
        (lease(end=t(-0.5)), P.EXPIRED),
        (lease(status="deleted"), P.EXPIRED),
        (lease(status="expired"), P.EXPIRED),
        (lease(status="error"), P.EXPIRED),
        (lease(status="wait cancel"), P.EXPIRED),
    ],
)
def test_status_from_the_window_and_esi_leap_status(item, expected):
    assert P.status(item, NOW) == expected
    assert P.lease_view(item, NOW)["status"] == expected


def test_the_view_has_host_lease_shape_and_esi_leap_status():
    view = P.lease_view(lease(start=t(-1).replace(microsecond=123), end=t(2)), NOW)
    assert view == {
        "id": "l-1",
        "node": "n1",
        "node_uuid": "n1-uuid",
        "project": A,
        "start": "2026-05-01T11:00:00Z",
        "end": "2026-05-01T14:00:00Z",
        "status": "active",
        "esi_leap_status": "active",
    }


@pytest.mark.parametrize(
    "start, end, found",
    [
        (None, None, True),  # under way, any end
        (None, t(5), True),
        (None, t(6), False),  # another end
        (t(-1), t(5), True),
        (t(-2), t(5), False),  # another start
        (t(1), None, False),
    ],
)
def test_a_lease_as_asked_is_kept(start, end, found):
    held = lease(end=t(5))
    assert (P.matching([held], A, start, end, NOW) is held) is found


def test_a_pending_lease_is_not_the_one_of_a_lease_from_now():
    assert P.matching([lease(start=t(1))], A, None, None, NOW) is None


def test_ended_and_other_projects_leases_are_never_kept():
    assert P.matching([lease(status="deleted"), lease(project=B)], A, None, None, NOW) is None


def test_plan_keeps_creates_and_refuses_the_first_node_that_cannot_be_leased():
    plan = P.plan_present([node("n1", lessee=A), node("n2")], [lease()], A, None, None, NOW)
    assert [(n["name"], held.uuid) for n, held in plan.keep] == [("n1", "l-1")]
    assert [n["name"] for n in plan.create] == ["n2"]
    with pytest.raises(Conflict) as info:
        P.plan_present([node("n2"), node("n1", lessee=A)], [lease()], B, None, None, NOW)
    assert info.value.obj == "node n1"
    assert "ESI-Leap lease l-1 of project %s" % A in info.value.cause and "nothing was leased" in info.value.cause


def test_a_later_window_that_does_not_overlap_is_leased_beside_a_lease():
    plan = P.plan_present([node("n1", lessee=A)], [lease(end=t(2))], B, t(3), t(4), NOW)
    assert [n["name"] for n in plan.create] == ["n1"]


def test_a_lessee_no_lease_explains_blocks_a_lease():
    with pytest.raises(Conflict) as info:
        P.plan_present([node("n1", lessee=B)], [], A, t(1), t(2), NOW)
    assert "lessee %s, set outside ESI-Leap" % B in info.value.cause


def test_a_lease_from_now_needs_a_free_node_a_later_one_does_not():
    busy = node("n1", state="active", instance_uuid="i-1")
    with pytest.raises(Conflict) as info:
        P.plan_present([busy], [], A, None, None, NOW)
    assert info.value.obj == "node n1" and "provision state active, claimed" in info.value.cause
    assert [n["name"] for n in P.plan_present([busy], [], A, t(1), t(2), NOW).create] == ["n1"]


def test_choose_counts_what_is_leased_and_picks_free_nodes_by_name():
    nodes = [node("n3"), node("n2", traits=["X"]), node("n1", lessee=A), node("n4", rc="other"), node("n0")]
    plan = P.choose_nodes(nodes, [lease()], A, None, None, NOW, 2, "rc")
    assert [n["name"] for n, _held in plan.keep] == ["n1"] and [n["name"] for n in plan.create] == ["n0"]
    plan = P.choose_nodes(nodes, [lease()], A, None, None, NOW, 1, "rc", ["X"])
    assert plan.keep == [] and [n["name"] for n in plan.create] == ["n2"]
    plan = P.choose_nodes(nodes, [lease()], A, None, None, NOW, 1, "rc")
    assert [n["name"] for n, _held in plan.keep] == ["n1"] and plan.create == []


def test_choose_skips_busy_leased_and_maintained_nodes_and_refuses_too_few():
    nodes = [node("n1", lessee=B), node("n2", state="active"), node("n3", maintenance=True), node("n4")]
    with pytest.raises(Conflict) as info:
        P.choose_nodes(nodes, [lease(project=B)], A, None, None, NOW, 2, "rc")
    assert info.value.obj == "lease of 2 node(s) to project %s" % A
    assert "only 1 node(s) of resource class rc are free" in info.value.cause


def test_the_body_of_a_direct_lease():
    assert P.lease_body("n1-uuid", A, None, None) == {
        "resource_type": "ironic_node",
        "resource_uuid": "n1-uuid",
        "project_id": A,
    }
    body = P.lease_body("n1-uuid", A, t(1), t(2))
    assert (body["start_time"], body["end_time"]) == ("2026-05-01T13:00:00", "2026-05-01T14:00:00")


def test_leases_to_end_narrow_by_node_project_and_id():
    items = [lease("l-1"), lease("l-2", project=B), lease("l-3", node="n2"), lease("l-4", status="deleted")]
    assert [x.uuid for x in P.leases_to_end(items, None, A, None)] == ["l-1", "l-3"]
    assert [x.uuid for x in P.leases_to_end(items, {"n1-uuid"}, None, None)] == ["l-1", "l-2"]
    assert [x.uuid for x in P.leases_to_end(items, None, None, "l-2")] == ["l-2"]
    assert P.leases_to_end(items, None, None, "l-4") == []


def test_planned_view_is_active_from_now_and_pending_later():
    assert P.planned_view(node(), A, None, None, NOW)["status"] == "active"
    view = P.planned_view(node(), A, t(1), t(2), NOW)
    assert view["status"] == "pending" and view["id"] is None and view["start"] == "2026-05-01T13:00:00Z"


@pytest.mark.parametrize(
    "state, owner, expected",
    [
        ("available", False, ["/instance_info"]),
        ("available", True, ["/instance_info", "/instance_uuid"]),
        ("active", True, []),  # ESI-Leap undeploys it, which clears both
        ("deploy failed", False, []),
    ],
)
def test_leftovers_of_the_lessee_on_a_node_that_is_not_deployed(state, owner, expected):
    item = node(state=state, lessee=A, instance_info={"image_source": "x"}, instance_uuid="i-1")
    assert [op["path"] for op in P.leftover_patch(item, A, owner)] == expected
    assert all(op["op"] == "remove" for op in P.leftover_patch(item, A, owner))


def test_no_leftover_patch_for_another_lessee_or_a_clean_node():
    assert P.leftover_patch(node(lessee=B, instance_info={"x": 1}), A, True) == []
    assert P.leftover_patch(node(lessee=A), A, True) == []
    assert P.leftover_patch(None, A, True) == []


@pytest.mark.parametrize(
    "state, lessee, expected",
    [
        ("available", A, "i-1"),  # allocated, never deployed: the lessee's own claim goes with the lease
        ("active", A, None),  # ESI-Leap undeploys it, which removes the allocation
        ("deploy failed", A, None),
        ("available", B, None),  # another lessee's node
    ],
)
def test_the_lessees_allocation_on_a_node_that_is_not_deployed(state, lessee, expected):
    assert P.leftover_allocation(node(state=state, lessee=lessee, instance_uuid="i-1"), A) == expected
    assert P.leftover_allocation(node(state=state, lessee=lessee), A) is None
    assert P.leftover_allocation(None, A) is None
