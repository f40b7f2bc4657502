# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a pass reads to keep BMC data out of imported metadata (binder_state): credentials Secrets, read or listed once."""

import json

from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.binder_world import (
    INFRA,
    binder,
    credentialed_world,
    hosts_labelled_with_their_bmc_user,
    pass_state,
    world,
)
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.metal3_objects import (
    make_claim,
    make_host,
    ref_to,
)


def test_labels_repeating_the_bmc_credentials_are_withheld_and_reported_to_the_owner():
    fake = credentialed_world({"example.com/owner": "opsadmin", "example.com/pin": "Kx7pQ2vR9wLm", "rack": "r7"})
    report = binder(fake).run()
    claim = fake.get("hostclaims", "tenant-a", "c0")
    assert claim["metadata"]["labels"]["rack"] == "r7"
    assert (
        "example.com/owner" not in claim["metadata"]["labels"] and "example.com/pin" not in claim["metadata"]["labels"]
    )
    assert report["withheld"] == [
        {
            "host": "infra/h0",
            "claim": "tenant-a/c0",
            "kind": "label",
            "key": "example.com/owner",
            "reason": "the value repeats the BMC user name",
        },
        {
            "host": "infra/h0",
            "claim": "tenant-a/c0",
            "kind": "label",
            "key": "example.com/pin",
            "reason": "the value repeats the BMC password",
        },
    ]
    assert report["claims"][0]["withheld"] == report["withheld"]
    assert "opsadmin" not in json.dumps(report) and "Kx7pQ2vR9wLm" not in json.dumps(report)
    assert "opsadmin" not in json.dumps(claim)
    # one read of the credentials Secret per pass and host
    again = binder(fake).run()
    assert again["changed"] is False and again["withheld"] == report["withheld"]
    assert again["requests"]["get"] == 1


def test_an_unreadable_credentials_secret_imports_nothing():
    fake = credentialed_world({"rack": "r7"})
    original = fake.request

    def refuse_secret(method, url, **kwargs):
        if method == "GET" and url.endswith("/secrets/h0-bmc"):
            return type("R", (), {"status": 403, "reason": "Forbidden", "data": b'{"message": "no"}'})()
        return original(method, url, **kwargs)

    fake.request = refuse_secret
    report = binder(fake).run()
    claim = fake.get("hostclaims", "tenant-a", "c0")
    assert report["claims"][0]["action"] == "bound"
    assert "rack" not in claim["metadata"]["labels"] and "kind" not in claim["metadata"]["labels"]
    assert sorted(item["key"] for item in report["withheld"]) == ["kind", "rack"]
    assert all("could not be read" in item["reason"] for item in report["withheld"])


def test_a_host_without_metadata_to_import_costs_no_secret_read():
    fake = world(hosts=1)
    fake.get("baremetalhosts", INFRA, "h0")["metadata"]["labels"] = {"metal3.io/internal": "x"}
    fake.get("hostclaims", "tenant-a", "c0")["spec"]["hostSelector"] = {}
    report = binder(fake).run()
    assert report["claims"][0]["action"] == "bound" and report["withheld"] == []
    assert not [r for r in fake.requests if "/secrets/" in r[1]]


def test_many_bindings_cost_one_secret_list_per_namespace_not_one_read_each():
    fake = world(hosts=5, claims=5)
    hosts_labelled_with_their_bmc_user(fake, 5)
    first = binder(fake).run()
    assert first["summary"]["bound"] == 5
    # The pass that binds them lists too: the hosts it may pick are known before it picks.
    binding = fake.requests[-first["requests"]["total"] :]
    assert not [r for r in binding if "/secrets/" in r[1]], [r[1] for r in binding if "/secrets/" in r[1]]
    assert [r for r in binding if r[1] == "/api/v1/namespaces/infra/secrets"]
    again = binder(fake).run()
    assert again["changed"] is False and again["requests"]["get"] == 0
    requests = fake.requests[-again["requests"]["total"] :]
    assert not [r for r in requests if "/secrets/" in r[1]]  # no read per host...
    assert [r for r in requests if r[1] == "/api/v1/namespaces/infra/secrets"]  # ...one (paginated) list instead
    assert len(again["withheld"]) == 5 and all(item["key"] == "owner" for item in again["withheld"])
    claims = [fake.get("hostclaims", "tenant-a", "c%d" % index) for index in range(5)]
    assert all("owner" not in claim["metadata"]["labels"] for claim in claims)


def test_one_pending_claim_among_many_free_hosts_reads_one_secret_not_the_namespace():
    fake = world(hosts=6, claims=1)
    hosts_labelled_with_their_bmc_user(fake, 6)
    report = binder(fake).run()
    assert report["summary"]["bound"] == 1
    requests = fake.requests[-report["requests"]["total"] :]
    assert not [r for r in requests if r[1] == "/api/v1/namespaces/infra/secrets"]
    assert len([r for r in requests if "/secrets/" in r[1]]) == 1


def test_a_newer_host_replaces_the_old_one_in_place_and_only_its_index_entries_change():
    """A pass replaces hosts one at a time (binders side by side): the view and its indexes follow each one."""
    claim, other = make_claim("web-1"), make_claim("web-2")
    hosts = [make_host("h%d" % number) for number in range(4)]
    hosts[3] = make_host("h3", consumer=ref_to(other))
    state = pass_state(world(hosts=0))
    state.set_hosts(hosts)
    assert state.bound_hosts(claim) == [] and [h["metadata"]["name"] for h in state.bound_hosts(other)] == ["h3"]

    taken = make_host("h1", consumer=ref_to(claim), resource_version="101")
    state.replace_host(taken)
    assert [h["metadata"]["name"] for h in state.hosts] == ["h0", "h1", "h2", "h3"]
    assert state.hosts[1] is taken and state.host_index[(INFRA, "h1")] is taken
    assert state.bound_hosts(claim) == [taken]
    assert [h["metadata"]["name"] for h in state.bound_hosts(other)] == ["h3"]
    assert state.labelled_hosts("h1") == [taken]

    released = make_host("h1", resource_version="102")
    state.replace_host(released)
    assert state.bound_hosts(claim) == [] and state.labelled_hosts("h1") == [released]

    moved = make_host("h3", resource_version="103")  # its claim's host released, another host appears
    state.replace_host(moved)
    state.replace_host(make_host("h9", consumer=ref_to(other)))
    assert state.bound_hosts(other) == [state.host_index[(INFRA, "h9")]]
    assert [h["metadata"]["name"] for h in state.hosts] == ["h0", "h1", "h2", "h3", "h9"]
    assert state.labelled_hosts("h9") == [state.host_index[(INFRA, "h9")]] and state.labelled_hosts("h8") == []
