# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import Conflict, InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import lease_model as L

UTC = datetime.timezone.utc
NOW = datetime.datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)
A = "a" * 32
B = "b" * 32


def t(hours):
    return NOW + datetime.timedelta(hours=hours)


def lease(project, start, end, lease_id=None):
    return L.make_lease(project, start, end, NOW - datetime.timedelta(days=1), lease_id or L.new_lease_id())


def node(leases=(), lessee=None, name="n1", **extra):
    props = {"cpus": 8}
    if leases:
        props[L.LEASES_KEY] = list(leases)
    base = {
        "uuid": name + "-uuid",
        "name": name,
        "lessee": lessee,
        "properties": props,
        "provision_state": "available",
        "target_provision_state": None,
        "instance_uuid": None,
        "maintenance": False,
        "resource_class": "rc",
        "traits": [],
    }
    base.update(extra)
    return base


# ------------------------------------------------------------------ times


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2026-05-01T12:00:00Z", NOW),
        ("2026-05-01T12:00:00z", NOW),
        ("2026-05-01 12:00:00", NOW),
        ("2026-05-01T12:00", NOW),
        ("2026-05-01T14:00:00+02:00", NOW),
        ("2026-05-01T07:30:00-0430", NOW),
        ("2026-05-01T12:00:00.123456Z", NOW.replace(microsecond=123456)),
        ("2026-05-01", NOW.replace(hour=0)),
        (NOW, NOW),
        (NOW.replace(tzinfo=None), NOW),
        (None, None),
        ("", None),
    ],
)
def test_parse_time(text, expected):
    assert L.parse_time(text) == expected


@pytest.mark.parametrize("text", ["tomorrow", "2026-13-01T00:00:00Z", "2026-02-30", "12:00", 5, "2026-05-01T25:00"])
def test_parse_time_refuses(text):
    with pytest.raises(InvalidInput) as info:
        L.parse_time(text, "option end")
    assert info.value.obj == "option end"


def test_format_time():
    assert L.format_time(NOW.replace(microsecond=999)) == "2026-05-01T12:00:00Z"
    assert L.format_time("2026-05-01T14:00:00+02:00") == "2026-05-01T12:00:00Z"
    assert L.format_time(None) is None


# ------------------------------------------------------------------ windows

TIMES = st.one_of(st.none(), st.integers(min_value=-50, max_value=50).map(t))


@given(TIMES, TIMES, TIMES, TIMES)
def test_overlap_is_symmetric(a, b, c, d):
    assert L.overlaps(a, b, c, d) == L.overlaps(c, d, a, b)


@given(st.integers(-20, 20), st.integers(1, 10), st.integers(-20, 20), st.integers(1, 10))
def test_overlap_matches_instants(a0, alen, b0, blen):
    """Half-open windows overlap exactly when they share an (hourly) instant."""
    shared = set(range(a0, a0 + alen)) & set(range(b0, b0 + blen))
    assert L.overlaps(t(a0), t(a0 + alen), t(b0), t(b0 + blen)) == bool(shared)


def test_open_windows():
    assert L.overlaps(t(0), None, t(100), t(101))
    assert not L.overlaps(t(0), t(1), t(1), None)
    assert L.overlaps(None, None, t(5), t(6))


def test_status():
    assert L.status(lease(A, t(1), t(2)), NOW) == L.PENDING
    assert L.status(lease(A, t(-1), t(2)), NOW) == L.ACTIVE
    assert L.status(lease(A, t(0), None), NOW) == L.ACTIVE
    assert L.status(lease(A, t(-2), t(0)), NOW) == L.EXPIRED


# ------------------------------------------------------------------ records


@pytest.mark.parametrize(
    "raw, words",
    [
        ("x", "is not a list"),
        (["x"], "has no project"),
        ([{"project": A}], "has no valid id"),
        ([{"project": A, "id": "XYZ"}], "has no valid id"),
        ([{"project": A, "id": "abcdefabcdef"}], "has no start"),
        ([{"project": A, "id": "abcdefabcdef", "start": "soon"}], "ISO 8601"),
        ([{"project": A, "id": "abcdefabcdef", "start": "2026-05-02", "end": "2026-05-01"}], "ends before it starts"),
    ],
)
def test_malformed_lease_lists_are_reported(raw, words):
    bad = node()
    bad["properties"][L.LEASES_KEY] = raw
    with pytest.raises(InvalidInput) as info:
        L.node_leases(bad)
    assert words in info.value.message
    assert "node n1" in info.value.message


def test_records_are_normalised():
    raw = node([{"id": "abcdefabcdef", "project": A, "start": "2026-05-01T14:00:00+02:00", "end": None}])
    assert L.node_leases(raw)[0]["start"] == "2026-05-01T12:00:00Z"
    assert L.node_leases(node()) == []


# ------------------------------------------------------------------ plan_lease


def test_lease_now_sets_the_lessee():
    plan = L.plan_lease(node(), A, None, t(24), NOW)
    assert plan["action"] == "create"
    assert plan["set_lessee"] == A
    assert plan["lease"]["start"] == "2026-05-01T12:00:00Z" and plan["lease"]["end"] == "2026-05-02T12:00:00Z"
    assert plan["leases"] == [plan["lease"]]


def test_rerun_finds_the_lease():
    first = L.plan_lease(node(), A, None, t(24), NOW)
    leased = node(first["leases"], lessee=A)
    again = L.plan_lease(leased, A, None, t(24), NOW + datetime.timedelta(minutes=5))
    assert again["action"] == "none" and again["set_lessee"] is None
    assert again["leases"] == first["leases"]


def test_future_lease_leaves_the_lessee_alone():
    plan = L.plan_lease(node(), A, t(2), t(4), NOW)
    assert plan["action"] == "create" and plan["set_lessee"] is None
    again = L.plan_lease(node(plan["leases"]), A, t(2), t(4), NOW)
    assert again["action"] == "none"


def test_moving_the_end():
    current = lease(A, t(-1), t(5), "aaaaaaaaaaaa")
    plan = L.plan_lease(node([current], lessee=A), A, None, t(10), NOW)
    assert plan["action"] == "update"
    assert plan["lease"]["id"] == "aaaaaaaaaaaa" and plan["lease"]["end"] == L.format_time(t(10))
    assert plan["set_lessee"] is None


def test_moving_the_end_into_another_lease_is_refused():
    mine = lease(A, t(-1), t(5), "aaaaaaaaaaaa")
    theirs = lease(B, t(6), t(9), "bbbbbbbbbbbb")
    with pytest.raises(Conflict) as info:
        L.plan_lease(node([mine, theirs], lessee=A), A, None, t(7), NOW)
    assert "bbbbbbbbbbbb" in info.value.cause and B in info.value.cause


def test_overlap_is_refused_with_the_other_lease():
    theirs = lease(B, t(-1), t(5), "bbbbbbbbbbbb")
    with pytest.raises(Conflict) as info:
        L.plan_lease(node([theirs], lessee=B), A, t(4), t(8), NOW)
    message = info.value.message
    assert message.startswith("node n1:")
    assert "overlaps lease bbbbbbbbbbbb of project %s" % B in message
    assert "2026-05-01T17:00:00Z" in message  # the other lease's end


def test_adjacent_leases_are_fine():
    theirs = lease(B, t(-1), t(5))
    plan = L.plan_lease(node([theirs], lessee=B), A, t(5), t(8), NOW)
    assert plan["action"] == "create" and plan["set_lessee"] is None
    assert [x["project"] for x in plan["leases"]] == [B, A]


def test_expired_leases_do_not_block():
    old = lease(B, t(-5), t(-1))
    plan = L.plan_lease(node([old]), A, None, None, NOW)
    assert plan["action"] == "create"


def test_unmanaged_lessee_blocks_others_but_not_itself():
    with pytest.raises(Conflict) as info:
        L.plan_lease(node(lessee=B), A, t(1), t(2), NOW)
    assert "set outside host_lease" in info.value.cause
    adopt = L.plan_lease(node(lessee=A), A, None, None, NOW)
    assert adopt["action"] == "create" and adopt["set_lessee"] is None


@pytest.mark.parametrize(
    "start, end, words",
    [
        (None, t(-1), "has passed"),
        (t(3), t(2), "ends"),
        (t(3), t(3), "ends"),
    ],
)
def test_bad_windows(start, end, words):
    with pytest.raises(InvalidInput) as info:
        L.plan_lease(node(), A, start, end, NOW)
    assert words in info.value.cause


# ------------------------------------------------------------------ reconcile / end


def test_reconcile_ends_an_expired_lease():
    old = lease(A, t(-5), t(-1))
    plan = L.plan_reconcile(node([old], lessee=A), NOW)
    assert plan["expired"] == [old] and plan["end_lessee"] == A
    assert plan["start"] is None and plan["leases"] == []


def test_reconcile_starts_a_due_lease():
    due = lease(B, t(-1), t(3))
    plan = L.plan_reconcile(node([due]), NOW)
    assert plan["start"] == due and plan["end_lessee"] is None and plan["expired"] == []


def test_reconcile_hands_over():
    old = lease(A, t(-5), t(-1))
    due = lease(B, t(-1), None)
    plan = L.plan_reconcile(node([old, due], lessee=A), NOW)
    assert plan["end_lessee"] == A and plan["start"] == due and plan["leases"] == [due]


def test_reconcile_keeps_a_renewed_lessee():
    old = lease(A, t(-5), t(-1))
    renewed = lease(A, t(-1), t(4))
    plan = L.plan_reconcile(node([old, renewed], lessee=A), NOW)
    assert plan["end_lessee"] is None and plan["start"] is None and plan["expired"] == [old]


def test_reconcile_is_blocked_by_an_unmanaged_lessee():
    due = lease(B, t(-1), t(3))
    plan = L.plan_reconcile(node([due], lessee=A), NOW)
    assert plan["start"] is None and "set outside host_lease" in plan["blocked"]


def test_reconcile_of_an_up_to_date_node_does_nothing():
    current = lease(A, t(-1), t(3))
    plan = L.plan_reconcile(node([current], lessee=A), NOW)
    assert plan == {"expired": [], "end_lessee": None, "start": None, "blocked": None, "leases": [current]}


def test_end_by_project():
    mine = lease(A, t(-1), t(3))
    later = lease(A, t(5), t(6))
    theirs = lease(B, t(7), t(8))
    plan = L.plan_end(node([mine, later, theirs], lessee=A), A, NOW)
    assert plan["removed"] == [mine, later] and plan["end_lessee"] == A and plan["leases"] == [theirs]


def test_end_one_pending_lease_keeps_access():
    mine = lease(A, t(-1), t(3))
    later = lease(A, t(5), t(6), "cccccccccccc")
    plan = L.plan_end(node([mine, later], lessee=A), None, NOW, lease_id="cccccccccccc")
    assert plan["removed"] == [later] and plan["end_lessee"] is None


def test_end_an_unmanaged_lessee():
    plan = L.plan_end(node(lessee=B), B, NOW)
    assert plan["removed"] == [] and plan["end_lessee"] == B
    assert L.plan_end(node(lessee=B), A, NOW)["end_lessee"] is None


# ------------------------------------------------------------------ choose_nodes


def pool(count, **extra):
    return [node(name="n%d" % i, **extra) for i in range(count)]


def test_choose_by_count_is_deterministic():
    nodes = list(reversed(pool(4)))
    already, chosen = L.choose_nodes(nodes, A, None, None, NOW, 2, "rc")
    assert already == [] and [n["name"] for n in chosen] == ["n0", "n1"]


def test_choose_counts_what_is_already_leased():
    nodes = pool(3)
    nodes[2] = node([lease(A, t(-1), None)], lessee=A, name="n2")
    already, chosen = L.choose_nodes(nodes, A, None, None, NOW, 2, "rc")
    assert [n["name"] for n in already] == ["n2"] and [n["name"] for n in chosen] == ["n0"]
    already, chosen = L.choose_nodes(nodes, A, None, None, NOW, 1, "rc")
    assert [n["name"] for n in already] == ["n2"] and chosen == []


def test_choose_skips_unsuitable_nodes():
    nodes = [
        node(name="busy", provision_state="active", instance_uuid="x"),
        node(name="maint", maintenance=True),
        node(name="other-rc", resource_class="big"),
        node(name="no-trait"),
        node(name="leased", lessee=B),
        node(name="later", leases=[lease(B, t(1), t(2))]),
        node(name="good", traits=["CUSTOM_GPU"]),
    ]
    for n in nodes[:-1]:
        n["traits"] = n.get("traits") or []
    nodes[5]["traits"] = ["CUSTOM_GPU"]
    _already, chosen = L.choose_nodes(nodes, A, None, None, NOW, 1, "rc", ["CUSTOM_GPU"])
    assert [n["name"] for n in chosen] == ["good"]
    with pytest.raises(Conflict) as info:
        L.choose_nodes(nodes, A, None, None, NOW, 2, "rc", ["CUSTOM_GPU"])
    assert "only 1 node(s)" in info.value.cause and "nothing was leased" in info.value.cause
    # A lease that starts later may take a node that is busy now.
    later = [node(name="busy", provision_state="active", instance_uuid="x")]
    assert len(L.choose_nodes(later, A, t(10), t(11), NOW, 1, "rc")[1]) == 1


# ------------------------------------------------------------------ properties

WINDOWS = st.lists(
    st.tuples(
        st.sampled_from([A, B, "c" * 32]),
        st.one_of(st.none(), st.integers(-10, 20)),
        st.one_of(st.none(), st.integers(1, 15)),
    ),
    max_size=12,
)


@settings(max_examples=300)
@given(WINDOWS)
def test_applied_plans_never_overlap(requests):
    """Whatever sequence of requests the owner makes, the leases kept on a node
    never overlap, and the node's lessee is the project of its active lease."""
    current = node()
    for project, start_h, length in requests:
        start = None if start_h is None else t(start_h)
        end = None if length is None else (start or NOW) + datetime.timedelta(hours=length)
        try:
            plan = L.plan_lease(current, project, start, end, NOW)
        except (Conflict, InvalidInput):
            continue
        current = node(plan["leases"], lessee=plan["set_lessee"] or current["lessee"])
        kept = [x for x in L.node_leases(current) if L.status(x, NOW) != L.EXPIRED]
        for i, first in enumerate(kept):
            for second in kept[i + 1 :]:
                assert not L.overlaps(*(L.window(first) + L.window(second))), (first, second)
        active = [x for x in kept if L.status(x, NOW) == L.ACTIVE]
        assert len(active) <= 1
        if active:
            assert current["lessee"] == active[0]["project"]


@settings(max_examples=200)
@given(WINDOWS, st.integers(0, 30))
def test_reconcile_is_idempotent(requests, later_h):
    current = node()
    for project, start_h, length in requests:
        start = None if start_h is None else t(start_h)
        end = None if length is None else (start or NOW) + datetime.timedelta(hours=length)
        try:
            plan = L.plan_lease(current, project, start, end, NOW)
        except (Conflict, InvalidInput):
            continue
        current = node(plan["leases"], lessee=plan["set_lessee"] or current["lessee"])
    when = t(later_h)
    plan = L.plan_reconcile(current, when)
    lessee = current["lessee"]
    if plan["end_lessee"]:
        lessee = None
    if plan["start"]:
        lessee = plan["start"]["project"]
    after = node(plan["leases"], lessee=lessee)
    again = L.plan_reconcile(after, when)
    assert again["expired"] == [] and again["start"] is None and again["end_lessee"] is None


def test_lease_views():
    record = lease(A, t(-1), None, "aaaaaaaaaaaa")
    view = L.lease_view(node([record]), record, NOW)
    assert view == {
        "id": "aaaaaaaaaaaa",
        "node": "n1",
        "node_uuid": "n1-uuid",
        "project": A,
        "start": "2026-05-01T11:00:00Z",
        "end": None,
        "status": "active",
    }
    assert L.unmanaged_view(node(lessee=B))["status"] == L.UNMANAGED


def test_choose_does_not_count_a_lease_with_another_end():
    """An open-ended lease of the project is not "the same request" as one that ends: that node is
    not taken again (its window would overlap) and its end is not moved."""
    nodes = pool(2)
    nodes[0] = node([lease(A, t(-1), None)], lessee=A, name="n0")
    already, chosen = L.choose_nodes(nodes, A, None, t(5), NOW, 1, "rc")
    assert already == [] and [n["name"] for n in chosen] == ["n1"]
    with pytest.raises(Conflict):
        L.choose_nodes(nodes, A, None, t(5), NOW, 2, "rc")


def test_a_window_must_end_after_it_starts():
    assert L.validate_window(None, None) == (None, None)
    assert L.validate_window("2026-05-01T12:00:00Z", "2026-05-02") == (NOW, t(12))
    with pytest.raises(InvalidInput) as error:
        L.validate_window("2026-05-01T12:00:00Z", "2026-05-01T11:00:00Z")
    assert error.value.message.startswith("option end: must be after start (2026-05-01T12:00:00Z)")
    with pytest.raises(InvalidInput, match="option start: must be an ISO 8601"):
        L.validate_window("tomorrow", None)


OPTIONS = {"warn_before": None, "lead_time": None, "count": None, "start": None, "end": None, "nodes": []}


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"warn_before": -1}, "option warn_before: must be 0 or more seconds, got -1"),
        ({"lead_time": -5}, "option lead_time: must be 0 or more seconds, got -5"),
        ({"count": 0}, "option count: must be 1 or more, got 0"),
        ({"start": "2026-05-02", "end": "2026-05-01"}, "option end: must be after start (2026-05-02T00:00:00Z)"),
        ({"end": "soon"}, "option end: must be an ISO 8601"),
    ],
)
def test_every_host_lease_run_refuses_bad_options_before_it_reads_anything(changes, message):
    with pytest.raises(InvalidInput) as error:
        L.check_run_options(dict(OPTIONS, **changes))
    assert error.value.message.startswith(message)


def test_good_options_give_the_window():
    params = dict(OPTIONS, warn_before=0, lead_time=60, count=1, start="2026-05-01T12:00:00Z", end="2026-05-02")
    assert L.check_run_options(params) == (NOW, t(12))
    assert L.check_run_options(OPTIONS) == (None, None)


def test_state_present_needs_a_project_and_the_nodes_or_how_many():
    with pytest.raises(InvalidInput, match="option project: is required with state present"):
        L.check_present_options(dict(OPTIONS, nodes=["n1"]), None)
    with pytest.raises(InvalidInput, match="host_lease: give the nodes to lease"):
        L.check_present_options(OPTIONS, A)
    L.check_present_options(dict(OPTIONS, nodes=["n1"]), A)
    L.check_present_options(dict(OPTIONS, count=2), A)
