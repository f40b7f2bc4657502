# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""claim_view.claims_on_nodes: a tenant's Ironic inventory learns its claims from the node list and reads
allocations only for nodes that cannot tell - with the same records as reading every allocation, and never
a claim that another tenant wrote on a node."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import claim_view
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.model import CLAIM_KEY, claim_marker

ME, OTHER, INFRA = "p-me", "p-other", "p-infra"


def node(uuid, instance_uuid=None, lessee=ME, owner=INFRA, marker=None, **extra):
    info = {"image_source": "http://images/x.qcow2"}
    if marker is not None:
        info[CLAIM_KEY] = marker
    fields = {"uuid": uuid, "name": "node-" + uuid, "provision_state": "active", "instance_uuid": instance_uuid}
    fields.update(lessee=lessee, owner=owner, instance_info=info)
    fields.update(extra)
    return fields


def allocation(uuid, name, node_uuid, owner=ME):
    return {"uuid": uuid, "name": name, "node_uuid": node_uuid, "owner": owner, "state": "active"}


def records_by_allocations(allocations, nodes):
    """What the inventory read before: the project's allocations joined to its nodes."""
    mine = [a for a in allocations if a["owner"] == ME]
    return claim_view.ironic_records(mine, nodes, (), {ME: "me"})


def records_by_nodes(allocations, nodes):
    """What it reads now: the nodes, then the allocations of the nodes that cannot tell, by UUID."""
    by_uuid = {a["uuid"]: a for a in allocations}
    told, unknown = claim_view.claims_on_nodes(nodes, ME)
    read = [by_uuid[u] for u in unknown if u in by_uuid]  # an unknown UUID (gone, or not readable) reads as None
    return claim_view.ironic_records(told + claim_view.owned_allocations(read, ME), nodes, (), {ME: "me"})


def by_node(records):
    return sorted(records, key=lambda r: r["node_uuid"])


def test_a_marked_node_tells_its_claim_and_nothing_is_read():
    nodes = [node("n1", "a1", marker=claim_marker("web-1", "a1", ME))]
    told, unknown = claim_view.claims_on_nodes(nodes, ME)
    assert unknown == []
    assert told == [{"uuid": "a1", "name": "web-1", "owner": ME, "state": "active", "node_uuid": "n1"}]
    record = claim_view.ironic_records(told, nodes, (), {ME: "me"})[0]
    assert (record["name"], record["allocation_uuid"], record["project_id"], record["associated"]) == (
        "web-1",
        "a1",
        ME,
        True,
    )


def test_nodes_without_an_instance_are_no_claims():
    assert claim_view.claims_on_nodes([node("n1"), node("n2", ""), {"uuid": None}, "junk", None], ME) == ([], [])
    assert claim_view.claims_on_nodes(None, ME) == ([], [])


def test_every_untrustworthy_marker_sends_the_reader_to_the_allocation():
    honest = claim_marker("web", "a1", ME)
    cases = [
        node("n1", "a1"),  # no marker (deployed before markers, or claimed without an image)
        node("n1", "a1", marker=claim_marker("web", "a-old", ME)),  # an earlier allocation's
        node("n1", "a1", marker=claim_marker("web", "a1", OTHER)),  # another project's
        node("n1", "a1", marker=dict(honest, name="")),
        node("n1", "a1", marker=dict(honest, name=7)),
        node("n1", "a1", marker="web"),
        node("n1", "a1", marker=["web", "a1", ME]),
        # written by another tenant: the node is leased to it, or it is its owner's and leased to it
        node("n1", "a1", lessee=OTHER, marker=honest),
        node("n1", "a1", lessee=OTHER, owner=ME, marker=honest),
        node("n1", "a1", lessee=None, owner=OTHER, marker=honest),
    ]
    for case in cases:
        assert claim_view.claims_on_nodes([case], ME) == ([], ["a1"]), case


def test_an_owned_node_leased_to_nobody_tells_its_claim():
    nodes = [node("n1", "a1", lessee=None, owner=ME, marker=claim_marker("web", "a1", ME))]
    assert claim_view.claims_on_nodes(nodes, ME)[0][0]["name"] == "web"


def test_owned_allocations_keep_the_projects_own():
    read = [allocation("a1", "x", "n1"), allocation("a2", "y", "n2", owner=OTHER), None, "junk"]
    assert claim_view.owned_allocations(read, ME) == [allocation("a1", "x", "n1")]


def test_hand_over_residue_is_not_the_next_tenants_claim():
    """The owner gave the node to ME while OTHER's deployment is still being removed: Ironic still records
    OTHER's allocation on it; the owner removed the claim key in the same patch (leases.end_access_patch),
    and even a key OTHER forged before naming ME cannot be told from ME's own - so it must be gone."""
    residue = node("n1", "a-other", marker=None, provision_state="deleting")
    allocations = [allocation("a-other", "theirs", "n1", owner=OTHER)]
    assert records_by_nodes(allocations, [residue]) == []
    assert records_by_allocations(allocations, [residue]) == []


_uuids = st.sampled_from(["a%d" % i for i in range(6)])


@st.composite
def pools(draw):
    """Nodes a token of ME lists (ME leases them, or owns them), allocations of ME and of others, and markers
    written by whoever may write the node: ME honestly, another tenant anything."""
    nodes, allocations, used = [], [], set()
    for index in range(draw(st.integers(0, 6))):
        uuid = "n%d" % index
        lessee, owner = draw(st.sampled_from([(ME, INFRA), (None, ME), (OTHER, ME), (ME, ME)]))
        writer = lessee or owner
        instance_uuid = None
        if draw(st.booleans()):
            instance_uuid = draw(_uuids.filter(lambda u: u not in used))
            used.add(instance_uuid)
            allocation_owner = writer if draw(st.booleans()) else draw(st.sampled_from([ME, OTHER, INFRA]))
            if writer == ME and lessee is None and owner == ME:
                allocation_owner = ME if allocation_owner == OTHER else allocation_owner
            if draw(st.booleans()):  # else the allocation is gone, or not readable
                allocations.append(allocation(instance_uuid, "claim-" + instance_uuid, uuid, owner=allocation_owner))
        marker = None
        kind = draw(st.sampled_from(["none", "honest", "stale", "forged"]))
        if kind == "honest" and writer == ME and instance_uuid:
            held = [a for a in allocations if a["uuid"] == instance_uuid and a["owner"] == ME]
            if held:
                marker = claim_marker(held[0]["name"], instance_uuid, ME)
        elif kind == "stale" and writer == ME:
            marker = claim_marker("claim-old", "a-old", ME)
        elif kind == "forged" and writer != ME:
            marker = claim_marker(
                draw(st.sampled_from(["forged", "claim-a1"])),
                instance_uuid or draw(_uuids),
                draw(st.sampled_from([ME, OTHER])),
            )
        nodes.append(node(uuid, instance_uuid, lessee=lessee, owner=owner, marker=marker))
    return nodes, allocations


@given(pools())
def test_records_from_nodes_equal_records_from_every_allocation(pool):
    nodes, allocations = pool
    assert by_node(records_by_nodes(allocations, nodes)) == by_node(records_by_allocations(allocations, nodes))
