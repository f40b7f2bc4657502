# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Releasing (binder_release): two steps, BMC accounts revoked first, the sweep."""

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    BackendError,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import (
    NODE_REUSE_LABEL,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder import writer as binder_writes
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.release import Release
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.status import ClaimStatuses
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.binder_world import (
    INFRA,
    binder,
    bound,
    granted_and_deleted,
    pass_state,
    world,
)


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
    # cleaning fails: the owner reads why in the pass's result; the host stays bound, out of the pool
    failed = {"errorType": "provisioning error", "errorMessage": "Cleaning failed: disk locked"}
    fake.write("baremetalhosts", INFRA, host, {"status": dict(failed, provisioning={"state": "deprovisioning"})})
    (stuck,) = binder(fake).run()["claims"]
    assert stuck["action"] == "releasing" and stuck["reason"] == "DeprovisioningFailed"
    assert stuck["message"] == (
        "host %s is out of the pool until its owner repairs it: deprovisioning failed "
        "(provisioning error: Cleaning failed: disk locked)" % host
    )
    assert bound(fake) == {"c0": host}
    assert "disk locked" not in str(fake.get("hostclaims", "tenant-a", "c0").get("status"))  # never up to the tenant
    fake.write("baremetalhosts", INFRA, host, {"status": {"errorType": None, "errorMessage": None}})
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


def test_release_deletes_the_tenants_bmc_accounts_first(monkeypatch):
    fake = world(hosts=2, claims=1)
    host = granted_and_deleted(fake)
    calls = []

    def revoke(handle, grantee=None, **kwargs):
        # the host is still bound while its accounts go; the ledger handed over is the BareMetalHost's
        namespace, name = handle.namespace, handle.name
        calls.append((type(handle).__name__, namespace, name, grantee, bound(fake)))
        fake.write(
            "baremetalhosts", namespace, name, {"metadata": {"annotations": {"baremetal.tenancy/bmc-accounts": None}}}
        )
        return dict(removed=["bmt-1"], dropped=[], changed=True)

    monkeypatch.setattr(binder_writes.bmc_access, "revoke_host_accounts", revoke)
    check = binder(fake, check_mode=True).run()
    assert calls == [] and check["claims"][0]["bmc_accounts_removed"] == ["bmt-1"] and bound(fake) == {"c0": host}
    done = binder(fake).run()
    assert calls == [("Metal3Host", INFRA, host, "tenant-a", {"c0": host})]
    assert done["claims"][0]["action"] == "released" and done["claims"][0]["bmc_accounts_removed"] == ["bmt-1"]
    assert bound(fake) == {}


def test_a_bmc_that_refuses_keeps_the_host_bound_until_a_later_pass(monkeypatch):
    fake = world(hosts=2, claims=1)
    host = granted_and_deleted(fake)

    def refuse(*args, **kwargs):
        raise BackendError("BMC of BareMetalHost infra/%s" % host, "cannot connect")

    monkeypatch.setattr(binder_writes.bmc_access, "revoke_host_accounts", refuse)
    result = binder(fake).run()
    outcome = result["claims"][0]
    assert (outcome["action"], outcome["reason"]) == ("releasing", "BMCAccountsNotRevoked")
    assert "cannot connect" in outcome["message"] and bound(fake) == {"c0": host}
    assert fake.get("hostclaims", "tenant-a", "c0") is not None  # the finalizer stays


def duplicate_with_account(fake):
    """c0 bound, then a second host pointing at it too (two binders raced), with a BMC account granted to tenant-a;
    returns (the host c0 keeps: the first by name, the duplicate)."""
    binder(fake).run()
    adopted = bound(fake)["c0"]
    other = next(name for name in ("h0", "h1", "h2") if name != adopted)
    ref = fake.get("baremetalhosts", INFRA, adopted)["spec"]["consumerRef"]
    fake.write("baremetalhosts", INFRA, other, {"spec": {"consumerRef": ref}})
    kept, duplicate = sorted((adopted, other))
    ledger = '[{"username": "bmt-1", "uri": "/redfish/v1/AccountService/Accounts/3", "grantee": "tenant-a"}]'
    fake.write(
        "baremetalhosts", INFRA, duplicate, {"metadata": {"annotations": {"baremetal.tenancy/bmc-accounts": ledger}}}
    )
    return kept, duplicate


def test_a_duplicate_binding_loses_the_tenants_bmc_accounts_before_it_is_released(monkeypatch):
    """The sweep releases the host the claim did not keep, and the BMC accounts granted on it to the claim's
    namespace go first: released without that, the host would go back to the pool with the tenant's account on its
    BMC, and no later pass would revoke it (only hosts still pointing at a claim are revoked)."""
    fake = world(hosts=3, claims=1)
    kept, duplicate = duplicate_with_account(fake)
    calls = []

    def revoke(handle, grantee=None, **kwargs):
        namespace, name = handle.namespace, handle.name
        host = fake.get("baremetalhosts", namespace, name)
        calls.append((name, grantee, (host["spec"].get("consumerRef") or {}).get("name")))
        fake.write(
            "baremetalhosts", namespace, name, {"metadata": {"annotations": {"baremetal.tenancy/bmc-accounts": None}}}
        )
        return dict(removed=["bmt-1"], dropped=[], changed=True)

    monkeypatch.setattr(binder_writes.bmc_access, "revoke_host_accounts", revoke)
    result = binder(fake).run()
    assert calls == [(duplicate, "tenant-a", "c0")]  # while the host still pointed at the claim
    (swept,) = result["swept"]
    assert (swept["host"], swept["reason"], swept.get("bmc_accounts_removed")) == (
        duplicate,
        "DuplicateBinding",
        ["bmt-1"],
    )
    assert not fake.get("baremetalhosts", INFRA, duplicate)["spec"].get("consumerRef")
    assert bound(fake) == {"c0": kept}


def test_a_duplicate_binding_whose_bmc_refuses_stays_bound_until_a_later_pass(monkeypatch):
    fake = world(hosts=3, claims=1)
    kept, duplicate = duplicate_with_account(fake)

    def refuse(*args, **kwargs):
        raise BackendError("BMC of BareMetalHost infra/%s" % duplicate, "cannot connect")

    monkeypatch.setattr(binder_writes.bmc_access, "revoke_host_accounts", refuse)
    (swept,) = binder(fake).run()["swept"]
    assert (swept["host"], swept["action"], swept["reason"]) == (duplicate, "releasing", "BMCAccountsNotRevoked")
    for name in (kept, duplicate):
        assert fake.get("baremetalhosts", INFRA, name)["spec"]["consumerRef"]["name"] == "c0"


def test_the_release_step_alone_sweeps_a_host_whose_claim_is_gone():
    """No binder around it: a pass state, a writer and the release step."""
    fake = world(hosts=2, claims=1)
    binder(fake).run()
    host = bound(fake)["c0"]
    del fake.objects[("hostclaims", "tenant-a", "c0")]
    state = pass_state(fake)
    claims = state.read(sweep=True, watch=False)
    assert claims == []
    writer = binder_writes.Writer(state.io)
    (outcome,) = Release(state, writer, state.io, ClaimStatuses(state, "2026-01-01T00:00:00Z")).sweep_hosts(claims)
    assert (outcome.action, outcome.reason, outcome.host) == ("swept", "ClaimGone", host)
    assert bound(fake) == {} and writer.changed
