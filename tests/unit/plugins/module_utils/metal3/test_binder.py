# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""KubeIO and the binder's race handling, on an in-memory API (the integration tests use the real one)."""

import base64
import json

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    BackendError,
    Conflict,
    Forbidden,
    InvalidInput,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3 import binder as metal3
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3 import client as m3client
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import (
    BINDING_LABEL,
    FINALIZER,
    NODE_REUSE_LABEL,
)
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.fake_kube import (
    FakeApiClient,
    FakeKube,
)

INFRA = "infra"


def world(hosts=3, claims=1, page=2):
    fake = FakeKube(page=page)
    for name in (INFRA, "tenant-a", "tenant-b"):
        fake.add("namespaces", {"metadata": {"name": name, "labels": {}}})
    for index in range(hosts):
        fake.add(
            "baremetalhosts",
            {
                "apiVersion": "metal3.io/v1alpha1",
                "kind": "BareMetalHost",
                "metadata": {"name": "h%d" % index, "namespace": INFRA, "labels": {"kind": "m"}},
                "spec": {
                    "online": False,
                    "hostClaimNamespaces": {"matches": "tenant-.*"},
                    "bmc": {"address": "redfish://10.1.1.1/x", "credentialsName": "h%d-bmc" % index},
                },
                "status": {"provisioning": {"state": "available"}, "operationalStatus": "OK", "poweredOn": False},
            },
        )
    for index in range(claims):
        fake.add(
            "hostclaims",
            {
                "apiVersion": "metal3.io/v1alpha1",
                "kind": "HostClaim",
                "metadata": {"name": "c%d" % index, "namespace": "tenant-a"},
                "spec": {"online": False, "hostSelector": {"matchLabels": {"kind": "m"}}},
            },
        )
    return fake


def binder(fake, **kwargs):
    return metal3.Binder(m3client.KubeIO(FakeApiClient(fake)), workers=1, **kwargs)


def bound(fake):
    return dict(
        (obj["spec"]["consumerRef"]["name"], name)
        for (plural, dummy, name), obj in fake.objects.items()
        if plural == "baremetalhosts" and obj["spec"].get("consumerRef")
    )


# ------------------------------------------------------------------ KubeIO


def test_lists_follow_continue_tokens_and_count_requests():
    fake = world(hosts=5)
    io = m3client.KubeIO(FakeApiClient(fake))
    assert sorted(h["metadata"]["name"] for h in io.list_hosts()) == ["h0", "h1", "h2", "h3", "h4"]
    assert io.counts["list"] == 3
    assert io.figures()["total"] == 3 and io.figures()["writes"] == 0


def test_errors_name_the_object():
    fake = world()
    io = m3client.KubeIO(FakeApiClient(fake))
    assert io.get_claim("tenant-a", "nope") is None
    stale = {"metadata": {"resourceVersion": "1"}, "spec": {"online": True}}
    with pytest.raises(Conflict) as exc:
        io.patch_host(INFRA, "h0", stale)
    assert exc.value.obj == "BareMetalHost infra/h0" and "has been modified" in exc.value.cause
    original = fake.request

    def forbidden(method, url, **kwargs):
        original(method, url, **kwargs)
        return type("R", (), {"status": 403, "reason": "Forbidden", "data": b'{"message": "no way"}'})()

    fake.request = forbidden
    with pytest.raises(Forbidden) as exc:
        io.list_claims(["tenant-b"])
    assert exc.value.message == "HostClaims in namespace tenant-b: no way (HTTP 403)"


# ------------------------------------------------------------------ passes


def test_a_pass_binds_commits_and_writes_status_in_three_writes():
    fake = world()
    report = binder(fake, binder_id="b1").run()
    (action,) = report["claims"]
    assert action["action"] == "bound" and action["writes"] == 3
    claim = fake.get("hostclaims", "tenant-a", "c0")
    assert claim["metadata"]["labels"][BINDING_LABEL] == action["host"]
    assert claim["metadata"]["finalizers"] == [FINALIZER]
    assert report["requests"]["patch"] == 3 and report["changed"] is True
    again = binder(fake, binder_id="b1").run()
    assert again["changed"] is False and again["claims"][0]["action"] == "unchanged"
    assert again["requests"]["writes"] == 0


def test_check_mode_writes_nothing():
    fake = world()
    before = repr(sorted(fake.objects.items()))
    report = binder(fake, check_mode=True).run()
    assert report["changed"] is True and report["claims"][0]["action"] == "bound"
    assert report["requests"]["writes"] == 0
    assert repr(sorted(fake.objects.items())) == before


def test_host_taken_meanwhile_moves_on_to_the_next_candidate():
    fake = world(hosts=3)
    b = binder(fake, binder_id="b1")
    first = {}

    def first_host_patch(method, path, body):
        if method == "PATCH" and "/baremetalhosts/" in path and not first:
            first["path"] = path
            return True
        return False

    # the host the plan chose is taken by someone else just before our write
    fake.hooks.append(
        (
            first_host_patch,
            lambda f: f.write(
                "baremetalhosts",
                INFRA,
                first["path"].rsplit("/", 1)[1],
                {
                    "spec": {
                        "consumerRef": {
                            "apiVersion": "metal3.io/v1alpha1",
                            "kind": "HostClaim",
                            "namespace": "tenant-b",
                            "name": "x",
                        }
                    }
                },
            ),
        )
    )
    report = b.run()
    (action,) = report["claims"]
    assert action["action"] == "bound"
    assert first["path"].rsplit("/", 1)[1] != action["host"]
    assert report["requests"]["conflicts"] >= 1


def test_losing_the_commit_race_undoes_the_host():
    fake = world(hosts=3)
    chosen = binder(fake, binder_id="b1", check_mode=True).run()["claims"][0]["host"]
    winner = sorted(set(["h0", "h1", "h2"]) - set([chosen]))[0]

    def other_binder_commits(f):
        # another binder bound the claim to another host and committed first
        f.write(
            "baremetalhosts",
            INFRA,
            winner,
            {
                "spec": {
                    "consumerRef": {
                        "apiVersion": "metal3.io/v1alpha1",
                        "kind": "HostClaim",
                        "namespace": "tenant-a",
                        "name": "c0",
                        "uid": f.get("hostclaims", "tenant-a", "c0")["metadata"]["uid"],
                    }
                }
            },
        )
        f.write("hostclaims", "tenant-a", "c0", {"metadata": {"labels": {BINDING_LABEL: winner}}})

    def commit(method, path, body):
        return method == "PATCH" and path.endswith("/hostclaims/c0") and BINDING_LABEL in str(body)

    fake.hooks.append((commit, other_binder_commits))
    report = binder(fake, binder_id="b1").run()
    (action,) = report["claims"]
    assert action["action"] == "lost" and action["host"] == chosen
    assert bound(fake) == {"c0": winner}  # our consumerRef was taken back
    assert fake.get("hostclaims", "tenant-a", "c0")["metadata"]["labels"][BINDING_LABEL] == winner
    assert "consumerRef" not in fake.get("baremetalhosts", INFRA, chosen)["spec"]
    # the next pass simply adopts the winner's binding
    assert binder(fake, binder_id="b1").run()["claims"][0]["host"] == winner


def test_a_pending_claim_gets_a_condition_and_no_forged_label():
    fake = world(hosts=1, claims=2)
    fake.write("hostclaims", "tenant-a", "c1", {"metadata": {"labels": {BINDING_LABEL: "h0"}}})
    report = binder(fake).run()
    actions = dict((a["name"], a) for a in report["claims"])
    assert sorted(a["action"] for a in actions.values()) == ["bound", "pending"]
    pending = next(a for a in actions.values() if a["action"] == "pending")
    assert pending["reason"] == "NoAvailableHost"
    claim = fake.get("hostclaims", "tenant-a", pending["name"])
    assert BINDING_LABEL not in (claim["metadata"].get("labels") or {})
    condition = next(c for c in claim["status"]["conditions"] if c["type"] == "AssociateBMH")
    assert condition["reason"] == "NoAvailableHost" and condition["status"] == "False"


def test_release_in_two_steps_and_sweep():
    fake = world(hosts=2, claims=1)
    fake.write(
        "hostclaims",
        "tenant-a",
        "c0",
        {
            "spec": {
                "nodeReuse": "web",
                "image": {"url": "https://x/os.img", "checksum": "a" * 64, "checksumType": "sha256"},
                "online": True,
            }
        },
    )
    binder(fake).run()
    host = bound(fake)["c0"]
    fake.write("baremetalhosts", INFRA, host, {"status": {"provisioning": {"state": "provisioned"}, "poweredOn": True}})
    # the tenant deletes its claim
    fake.request("DELETE", "https://x/apis/metal3.io/v1alpha1/namespaces/tenant-a/hostclaims/c0")
    first = binder(fake).run()
    assert first["claims"][0]["action"] == "releasing"
    assert "image" not in fake.get("baremetalhosts", INFRA, host)["spec"]
    assert bound(fake) == {"c0": host}
    assert binder(fake).run()["changed"] is False  # waiting for the operator
    fake.write("baremetalhosts", INFRA, host, {"status": {"provisioning": {"state": "available"}, "poweredOn": False}})
    second = binder(fake).run()
    assert second["claims"][0]["action"] == "released"
    assert bound(fake) == {}
    assert fake.get("baremetalhosts", INFRA, host)["metadata"]["labels"][NODE_REUSE_LABEL] == "tenant-a.web"
    assert fake.get("hostclaims", "tenant-a", "c0") is None
    # a host bound to a claim that vanished is swept
    fake.write(
        "baremetalhosts",
        INFRA,
        "h1",
        {
            "spec": {
                "consumerRef": {
                    "apiVersion": "metal3.io/v1alpha1",
                    "kind": "HostClaim",
                    "namespace": "tenant-b",
                    "name": "ghost",
                    "uid": "u",
                }
            }
        },
    )
    swept = binder(fake).run()
    assert [(s["name"], s["host"], s["reason"]) for s in swept["swept"]] == [("ghost", "h1", "ClaimGone")]
    assert bound(fake) == {}


def _granted_and_deleted(fake):
    """c0 bound to a host carrying a BMC account granted to tenant-a, then deleted by the tenant."""
    binder(fake).run()
    host = bound(fake)["c0"]
    ledger = '[{"username": "bmt-1", "uri": "/redfish/v1/AccountService/Accounts/3", "grantee": "tenant-a"}]'
    fake.write("baremetalhosts", INFRA, host, {"metadata": {"annotations": {"baremetal.tenancy/bmc-accounts": ledger}}})
    fake.request("DELETE", "https://x/apis/metal3.io/v1alpha1/namespaces/tenant-a/hostclaims/c0")
    return host


def test_release_deletes_the_tenants_bmc_accounts_first(monkeypatch):
    fake = world(hosts=2, claims=1)
    host = _granted_and_deleted(fake)
    calls = []

    def revoke(backend, name, namespace=None, api_client=None, grantee=None, **kwargs):
        # the host is still bound while its accounts go
        calls.append((backend, namespace, name, grantee, bound(fake)))
        fake.write(
            "baremetalhosts", namespace, name, {"metadata": {"annotations": {"baremetal.tenancy/bmc-accounts": None}}}
        )
        return dict(removed=["bmt-1"], dropped=[], changed=True)

    monkeypatch.setattr(metal3.bmc_access, "revoke_host_accounts", revoke)
    check = binder(fake, check_mode=True).run()
    assert calls == [] and check["claims"][0]["bmc_accounts_removed"] == ["bmt-1"] and bound(fake) == {"c0": host}
    done = binder(fake).run()
    assert calls == [("metal3", INFRA, host, "tenant-a", {"c0": host})]
    assert done["claims"][0]["action"] == "released" and done["claims"][0]["bmc_accounts_removed"] == ["bmt-1"]
    assert bound(fake) == {}


def test_a_bmc_that_refuses_keeps_the_host_bound_until_a_later_pass(monkeypatch):
    fake = world(hosts=2, claims=1)
    host = _granted_and_deleted(fake)

    def refuse(*args, **kwargs):
        raise BackendError("BMC of BareMetalHost infra/%s" % host, "cannot connect")

    monkeypatch.setattr(metal3.bmc_access, "revoke_host_accounts", refuse)
    result = binder(fake).run()
    outcome = result["claims"][0]
    assert (outcome["action"], outcome["reason"]) == ("releasing", "BMCAccountsNotRevoked")
    assert "cannot connect" in outcome["message"] and bound(fake) == {"c0": host}
    assert fake.get("hostclaims", "tenant-a", "c0") is not None  # the finalizer stays


def test_missing_namespace_is_refused_before_any_write():
    fake = world()
    with pytest.raises(InvalidInput) as exc:
        binder(fake, namespaces=["tenant-a", "nope"]).run()
    assert exc.value.message == "option namespaces: namespace(s) nope do not exist"
    assert not [r for r in fake.requests if r[0] != "GET"]


# ------------------------------------------------------------------ BMC data in host metadata (issue 12, defect 5)


def _b64(text):
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def _credentialed_world(labels):
    fake = world(hosts=1)
    host = fake.get("baremetalhosts", INFRA, "h0")
    host["metadata"]["labels"].update(labels)
    fake.add(
        "secrets",
        {
            "metadata": {"name": "h0-bmc", "namespace": INFRA},
            "data": {"username": _b64("opsadmin"), "password": _b64("Kx7pQ2vR9wLm")},
        },
    )
    return fake


def test_labels_repeating_the_bmc_credentials_are_withheld_and_reported_to_the_owner():
    fake = _credentialed_world({"example.com/owner": "opsadmin", "example.com/pin": "Kx7pQ2vR9wLm", "rack": "r7"})
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
    fake = _credentialed_world({"rack": "r7"})
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


def _hosts_labelled_with_their_bmc_user(fake, count):
    """Each host's credentials Secret, and a label repeating its BMC user (to be withheld)."""
    for index in range(count):
        fake.add(
            "secrets",
            {
                "metadata": {"name": "h%d-bmc" % index, "namespace": INFRA},
                "data": {"username": _b64("opsadmin"), "password": _b64("Kx7pQ2vR9wLm")},
            },
        )
        fake.get("baremetalhosts", INFRA, "h%d" % index)["metadata"]["labels"]["owner"] = "opsadmin"


def test_many_bindings_cost_one_secret_list_per_namespace_not_one_read_each():
    fake = world(hosts=5, claims=5)
    _hosts_labelled_with_their_bmc_user(fake, 5)
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
    _hosts_labelled_with_their_bmc_user(fake, 6)
    report = binder(fake).run()
    assert report["summary"]["bound"] == 1
    requests = fake.requests[-report["requests"]["total"] :]
    assert not [r for r in requests if r[1] == "/api/v1/namespaces/infra/secrets"]
    assert len([r for r in requests if "/secrets/" in r[1]]) == 1
