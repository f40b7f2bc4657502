"""What baremetal-operator's own HostClaim controller writes on claims, against the collection's model of it.

The binder may act as the controller of BMO's HostClaims (v0.14, ``--hostclaims``) and must then write
the claim's finalizer, ``status.bareMetalHost`` and conditions as BMO's controller does
(metal3/claim/bmo_controller.py). Here BMO's controller runs, on a cluster of its own with BMO's CRDs and two
real hosts, and every write it makes is compared with the model: a claim it binds, a claim it cannot bind
(no matching host), a new generation of a bound claim (transition times kept, observedGeneration moves),
the unbound claim bound later (both conditions flip), and the deletion of a claim held by another
finalizer (the only way to see BMO's last write before the claim is gone).
"""

from __future__ import annotations

import copy
import datetime
import sys
import time

import pytest
from fixtures_bmo import create_hosts, wait_for
from harness.ansible import collections_root
from kubernetes import client

if str(collections_root()) not in sys.path:
    sys.path.append(str(collections_root()))
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import bmo_controller as model

pytestmark = pytest.mark.real_bmo

INFRA = "bs-infra"
TENANT = "bs-tenant"
GROUP, VERSION = "metal3.io", "v1alpha1"
HOSTS = {"bs-0": "status", "bs-1": "later"}  # host -> its pool label
HOLD = "bs.test/hold"


@pytest.fixture(scope="module")
def upstream(bmo_dialect):
    """The BMO-dialect cluster (fixtures_bmo.bmo_dialect) with this suite's two hosts available."""
    env, stack = bmo_dialect
    with env.api("admin") as api:
        create_hosts(api, stack, INFRA, {name: (index + 1, pool) for index, (name, pool) in enumerate(HOSTS.items())})
    return env, stack


def _now():
    return datetime.datetime.now(datetime.timezone.utc)


def _conditions(claim):
    return (claim.get("status") or {}).get("conditions") or []


def _condition(claim, ctype):
    for condition in _conditions(claim):
        if condition["type"] == ctype:
            return condition
    return None


def _shape(conditions):
    """Everything of the conditions but their transition times, in their order."""
    return [(c["type"], c["status"], c["reason"], c["message"], c.get("observedGeneration")) for c in conditions]


def _times(claim):
    return {c["type"]: c["lastTransitionTime"] for c in _conditions(claim)}


def _assert_same_write(written, computed):
    """BMO's write and the model's agree on finalizers, status fields and conditions (times only present)."""
    assert written["metadata"].get("finalizers", []) == computed["finalizers"]
    status = written.get("status") or {}
    assert set(status) == set(computed["status"]), "status fields other than the model's (or missing)"
    assert status.get("bareMetalHost") == computed["status"].get("bareMetalHost")
    assert _shape(status["conditions"]) == _shape(computed["status"]["conditions"])
    assert all(c.get("lastTransitionTime") for c in status["conditions"])


def _as_written(claim):
    return {"finalizers": claim["metadata"].get("finalizers", []), "status": claim.get("status") or {}}


def test_bmo_writes_what_the_model_computes(upstream):
    env, stack = upstream
    host = {name: {"namespace": INFRA, "name": name} for name in HOSTS}
    policy = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "HostDeployPolicy",
        "metadata": {"name": "tenant", "namespace": INFRA},
        "spec": {"hostClaimNamespaces": {"names": [TENANT]}},
    }

    def claim(name, pool):
        return {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "HostClaim",
            "metadata": {"name": name, "namespace": TENANT},
            "spec": {"poweredOn": False, "hostSelector": {"matchLabels": {"pool": pool}}},
        }

    with env.api("admin") as api:
        custom = client.CustomObjectsApi(api)

        def read(name):
            return custom.get_namespaced_custom_object(GROUP, VERSION, TENANT, "hostclaims", name)

        def patch(name, body):
            return custom.patch_namespaced_custom_object(GROUP, VERSION, TENANT, "hostclaims", name, body)

        custom.create_namespaced_custom_object(GROUP, VERSION, INFRA, "hostdeploypolicies", policy)
        created = {
            "bound": custom.create_namespaced_custom_object(
                GROUP, VERSION, TENANT, "hostclaims", claim("bound", "status")
            ),
            "unbound": custom.create_namespaced_custom_object(
                GROUP, VERSION, TENANT, "hostclaims", claim("unbound", "nowhere")
            ),
        }

        # 1. A claim BMO binds, and one it cannot (no host in the pool): the model from the claims as created.
        bound = wait_for(
            "associated with Ready summarized",
            lambda: read("bound"),
            lambda c: (c.get("status") or {}).get("bareMetalHost") and _condition(c, "Ready"),
            stack,
        )
        assert bound["status"]["bareMetalHost"] == host["bs-0"]
        _assert_same_write(bound, model.controller_write(created["bound"], host["bs-0"], _now()))
        # BMO's patch helper (cluster-api's) writes a reconcile's conditions first, then the object (the finalizer),
        # then the rest of the status: a claim read between the first two has the conditions and no finalizer yet.
        # The bound claim's wait ends on status.bareMetalHost, written last; the refused one's on the finalizer.
        unbound = wait_for(
            "refused with Ready summarized",
            lambda: read("unbound"),
            lambda c: (
                (_condition(c, "Associated") or {}).get("reason") == "NoBareMetalHost"
                and _condition(c, "Ready")
                and model.FINALIZER in c["metadata"].get("finalizers", [])
            ),
            stack,
        )
        _assert_same_write(unbound, model.controller_write(created["unbound"], None, _now()))
        # Ready is no type of HostClaim's own (BMO's types list it for BareMetalHosts), Synchronized and
        # Provisioned are never reported, and status.observedGeneration (the patch helper's) is pruned.
        assert [c["type"] for c in _conditions(bound)] == ["Ready", "Associated"]
        assert _condition(bound, "Ready")["message"] == (
            "* Synchronized: Condition not yet reported\n* Provisioned: Condition not yet reported"
        )
        assert "observedGeneration" not in bound["status"]

        # 2. What BMO wrote is a fixed point of the model, transition times included (BMO keeps reconciling).
        time.sleep(1.5)
        for name, computed in (
            ("bound", lambda c: model.associated_status(c, host["bs-0"], _now())),
            ("unbound", lambda c: model.no_host_status(c, _now())),
        ):
            current = read(name)
            assert computed(current) == _as_written(current)

        # 3. A new generation of the bound claim: observedGeneration moves, the transition times stay.
        before = read("bound")
        changed = patch("bound", {"spec": {"poweredOn": True}})
        assert changed["metadata"]["generation"] == 2
        seen = copy.deepcopy(before)
        seen["metadata"]["generation"] = 2
        expected = model.associated_status(seen, host["bs-0"], _now())
        regenerated = wait_for(
            "conditions of generation 2",
            lambda: read("bound"),
            lambda c: all(x.get("observedGeneration") == 2 for x in _conditions(c)),
            stack,
        )
        assert _as_written(regenerated) == expected
        assert _times(regenerated) == _times(before)

        # 4. The unbound claim asks for the other pool: both its conditions flip, at BMO's "now".
        before = read("unbound")
        time.sleep(1.1)  # a flip lands in a later second than the refusal
        start = model.timestamp(_now())
        patch("unbound", {"spec": {"hostSelector": {"matchLabels": {"pool": "later"}}}})
        seen = copy.deepcopy(before)
        seen["metadata"]["generation"] = 2
        later = wait_for(
            "associated after the change",
            lambda: read("unbound"),
            lambda c: (
                (c.get("status") or {}).get("bareMetalHost")
                and (_condition(c, "Associated") or {}).get("status") == "True"
            ),
            stack,
        )
        assert later["status"]["bareMetalHost"] == host["bs-1"]
        _assert_same_write(later, model.associated_status(seen, host["bs-1"], _now()))
        for ctype in ("Ready", "Associated"):
            assert _times(later)[ctype] != _times(before)[ctype]
            assert _times(later)[ctype] >= start  # RFC 3339 in UTC to the second: ordered as text

        # 5. Deleting the bound claim, held by another finalizer so that BMO's last write stays visible.
        before = patch("bound", {"metadata": {"finalizers": [model.FINALIZER, HOLD]}})
        time.sleep(1.1)
        custom.delete_namespaced_custom_object(GROUP, VERSION, TENANT, "hostclaims", "bound")
        released = wait_for(
            "released by BMO",
            lambda: read("bound"),
            lambda c: (
                model.FINALIZER not in c["metadata"].get("finalizers", [])
                and not (c.get("status") or {}).get("bareMetalHost")
            ),
            stack,
        )
        # The API server counts the deletion as a new generation: BMO's conditions carry it.
        assert released["metadata"]["generation"] == before["metadata"]["generation"] + 1
        seen = copy.deepcopy(before)
        seen["metadata"]["generation"] = released["metadata"]["generation"]
        seen["metadata"]["deletionTimestamp"] = released["metadata"]["deletionTimestamp"]
        computed = model.controller_write(seen, host["bs-0"], _now())
        assert computed["finalizers"] == [HOLD]
        _assert_same_write(released, computed)
        for ctype in ("Ready", "Associated"):  # True -> False and Unknown -> False
            assert _times(released)[ctype] != _times(before)[ctype]
        freed = custom.get_namespaced_custom_object(GROUP, VERSION, INFRA, "baremetalhosts", "bs-0")
        assert not freed["spec"].get("consumerRef")
        # ... and BMO stays there while the other finalizer holds the claim: a fixed point again.
        time.sleep(1.5)
        current = read("bound")
        assert model.deleting_status(current, _now()) == _as_written(current)
        patch("bound", {"metadata": {"finalizers": []}})
