# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a pass costs in requests, per verb and per claim (the guard of bench/bind.py's figures, issue 42).

The world is bench/bind.py's, small: pending claims without image or data in two namespaces, twice as many free
hosts with addresses, on both HostClaim dialects.  A pass binds every claim in 3 patches (the host's consumerRef,
the claim's commit, the claim's status) and reads nothing but its lists, whose number does not grow with the
claims.  A request a claim starts to cost fails here first, under its verb.

The one request beyond that a pass may make on such a world is the sweep's: a host bound to a claim missing from
the list costs one GET of the claim (the list may predate a claim created and bound since: without the read, the
sweep would release a live binding) and one release patch; without such a host it costs nothing.
"""

import pytest

from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.binder import test_binder_bmo as bmo
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.binder_world import (
    INFRA,
    binder,
    bound,
    world,
)

NAMESPACES = ("tenant-a", "tenant-b")
NICS = [{"name": "eno1", "mac": "52:54:00:00:00:01", "ip": "192.0.2.10"}]
#: requests per bound claim of a pass over claims without image or data (lists and watches: per pass)
PER_CLAIM = {"get": 0, "create": 0, "replace": 0, "patch": 3, "delete": 0}


def proposal_world(claims):
    fake = world(hosts=2 * claims, claims=0, page=1000)
    for index in range(claims):
        fake.add(
            "hostclaims",
            {
                "apiVersion": "metal3.io/v1alpha1",
                "kind": "HostClaim",
                "metadata": {"name": "c%d" % index, "namespace": NAMESPACES[index % len(NAMESPACES)]},
                "spec": {"online": False, "hostSelector": {"matchLabels": {"kind": "m"}}},
            },
        )
    return fake


def bmo_world(claims):
    fake = bmo.bmo_world(hosts=0)
    fake.page = 1000
    fake.add("namespaces", {"metadata": {"name": "tenant-b", "labels": {}}})
    bmo._policy(fake, "infra", "tenants", {"nameMatches": "tenant-.*"})
    for index in range(2 * claims):
        bmo._host(fake, INFRA, "h%d" % index, nics=NICS)
    for index in range(claims):
        bmo._claim(fake, NAMESPACES[index % len(NAMESPACES)], "c%d" % index)
    return fake


WORLDS = {"proposal": proposal_world, "bmo": bmo_world}


def one_pass(dialect, claims):
    fake = WORLDS[dialect](claims)
    report = binder(fake, binder_id="b1").run()
    assert report["dialect"] == dialect and report["errors"] == []
    assert report["summary"]["bound"] == claims and report["summary"]["swept"] == 0
    return fake, report


def per_claim(report):
    bound_claims = report["summary"]["bound"]
    return dict((verb, report["requests"][verb] / bound_claims) for verb in PER_CLAIM)


@pytest.mark.parametrize("dialect", sorted(WORLDS))
def test_a_pass_over_claims_without_data_costs_three_patches_a_claim_and_no_read(dialect):
    small = one_pass(dialect, 4)[1]
    fake, large = one_pass(dialect, 12)
    assert per_claim(small) == PER_CLAIM and per_claim(large) == PER_CLAIM
    assert [outcome["writes"] for outcome in large["claims"]] == [3] * 12
    assert large["requests"]["conflicts"] == 0 and large["requests"]["watch"] == 0
    # lists are per pass: as many at 12 claims as at 4
    assert large["requests"]["list"] == small["requests"]["list"]
    # lists and patches only (the GETs are pages of lists: no object read one by one)
    assert {method for method, dummy, dummy in fake.requests} == {"GET", "PATCH"}
    assert len(bound(fake)) == 12


@pytest.mark.parametrize("dialect", sorted(WORLDS))
def test_a_host_bound_to_a_claim_that_is_gone_costs_one_read_and_one_release(dialect):
    fake = WORLDS[dialect](4)
    ref = {"apiVersion": "metal3.io/v1alpha1", "kind": "HostClaim", "namespace": "raw", "name": "gone"}
    fake.write("baremetalhosts", INFRA, "h7", {"spec": {"consumerRef": ref}})
    report = binder(fake, binder_id="b1").run()
    assert report["summary"]["bound"] == 4 and report["summary"]["swept"] == 1
    assert report["requests"]["get"] == 1 and report["requests"]["patch"] == 4 * 3 + 1
    assert "consumerRef" not in fake.get("baremetalhosts", INFRA, "h7")["spec"]


def test_the_sweeps_read_keeps_a_binding_whose_claim_came_after_the_list():
    """Why the sweep's GET is needed: a claim created (and bound by another binder) after this pass listed the
    claims is not in the list; the read finds it and the host stays bound."""
    fake = proposal_world(4)
    ref = {"apiVersion": "metal3.io/v1alpha1", "kind": "HostClaim", "namespace": "tenant-b", "name": "late"}
    fake.write("baremetalhosts", INFRA, "h7", {"spec": {"consumerRef": ref}})
    late = {
        "apiVersion": "metal3.io/v1alpha1",
        "kind": "HostClaim",
        "metadata": {"name": "late", "namespace": "tenant-b"},
        "spec": {"online": False, "hostSelector": {"matchLabels": {"kind": "m"}}},
    }
    fake.hooks.append(
        (
            lambda method, path, body: method == "GET" and path.endswith("/hostclaims/late"),
            lambda f: f.add("hostclaims", late),
        )
    )
    report = binder(fake, binder_id="b1").run()
    assert report["summary"]["swept"] == 0 and report["requests"]["get"] == 1
    assert fake.get("baremetalhosts", INFRA, "h7")["spec"]["consumerRef"]["name"] == "late"
