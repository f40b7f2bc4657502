"""baremetal-operator's own HostClaim controller (v0.14, ``--hostclaims``), observed on the real operator.

The collection speaks BMO's HostClaim dialect too (metal3/claim_dialect.py,
metal3/deploy_policy.py) and documents where its binder differs from upstream's
controller. This module runs upstream's controller, on a cluster of its own
with BMO's own CRDs (HostClaim with ``spec.poweredOn``, HostDeployPolicy),
webhooks and a real host, and shows each difference from the operator itself:

- a ``HostDeployPolicy`` whose ``nameMatches`` is ``prod`` lets a claim of the
  namespace ``not-prod`` bind the host (Go's unanchored ``regexp.MatchString``).
  The collection's model of upstream (``unanchored=True``) admits it too, and
  its own reading (a whole-name match, the default) refuses it, saying why;
- a tenant tells the dialect from the API server's OpenAPI document (it
  may not read CRDs);
- deleting a claim only clears the host's ``consumerRef``: a host provisioned
  for that claim stays ``provisioned``, powered on, with the last tenant's
  image, and, not being ``available``, is never offered to a claim again
  (stranded, not cleaned).
"""

from __future__ import annotations

import sys

import pytest
from fixtures_bmo import create_hosts, wait_for
from harness import baremetal_operator as bmo
from harness.ansible import collections_root
from kubernetes import client

# The collection's own pure model of upstream's policy semantics, checked against the operator here.
if str(collections_root()) not in sys.path:
    sys.path.append(str(collections_root()))
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3 import claim_dialect, deploy_policy
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.client import KubeIO

pytestmark = pytest.mark.real_bmo

INFRA = "bd-infra"
GROUP, VERSION = "metal3.io", "v1alpha1"


@pytest.fixture(scope="module")
def upstream(bmo_dialect):
    """The BMO-dialect cluster (fixtures_bmo.bmo_dialect) with this suite's host up-0 available."""
    env, stack = bmo_dialect
    with env.api("admin") as api:
        create_hosts(api, stack, INFRA, {"up-0": (0, "upstream")})
    return env, stack


def test_upstream_binds_by_unanchored_name_matches_and_strands_the_host_at_release(upstream):
    env, stack = upstream
    policy = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "HostDeployPolicy",
        "metadata": {"name": "prod-only", "namespace": INFRA},
        "spec": {"hostClaimNamespaces": {"nameMatches": "prod"}},
    }
    claim = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "HostClaim",
        "metadata": {"name": "web", "namespace": "not-prod"},
        "spec": {"poweredOn": False, "hostSelector": {"matchLabels": {"pool": "upstream"}}},
    }
    with env.api("admin") as api:
        custom = client.CustomObjectsApi(api)
        custom.create_namespaced_custom_object(GROUP, VERSION, INFRA, "hostdeploypolicies", policy)
        # a claim as a user writes it with kubectl, in BMO's shape
        custom.create_namespaced_custom_object(GROUP, VERSION, "not-prod", "hostclaims", claim)

        def read_claim():
            return custom.get_namespaced_custom_object(GROUP, VERSION, "not-prod", "hostclaims", "web")

        bound = wait_for(
            "associated by upstream's controller",
            read_claim,
            lambda c: (c.get("status") or {}).get("bareMetalHost") == {"namespace": INFRA, "name": "up-0"},
            stack,
        )
        assert "metal3.io/hostclaim" in bound["metadata"]["finalizers"]
        associated = {c["type"]: c for c in bound["status"]["conditions"]}["Associated"]
        assert (associated["status"], associated["reason"]) == ("True", "BareMetalHostAssociated")
        host = custom.get_namespaced_custom_object(GROUP, VERSION, INFRA, "baremetalhosts", "up-0")
        assert host["spec"]["consumerRef"]["name"] == "web" and host["spec"]["consumerRef"]["namespace"] == "not-prod"

    # The collection's model of upstream agrees with what the operator did; its own reading refuses.
    assert deploy_policy.evaluate_namespace([policy], INFRA, "not-prod", {}, unanchored=True).allowed
    refused = deploy_policy.evaluate_namespace([policy], INFRA, "not-prod", {})
    assert not refused.allowed and deploy_policy.ANCHORING_NOTE in refused.reason

    with env.api("admin") as api:
        custom = client.CustomObjectsApi(api)
        # Upstream passes nothing down (its update step is a stub): the owner provisions the host by hand,
        # as the tenant's deployment would have been.
        custom.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            INFRA,
            "baremetalhosts",
            "up-0",
            {"spec": {"image": bmo.live_iso_image(stack.live_iso_url), "online": True}},
        )
        bmo.wait_hosts(
            api,
            stack,
            INFRA,
            ["up-0"],
            lambda h: bmo.host_state(h) == "provisioned" and (h.get("status") or {}).get("poweredOn") is True,
            "provisioned and powered on",
            300,
        )
        # The tenant releases the claim; upstream's controller clears consumerRef and drops its finalizer ...
        custom.delete_namespaced_custom_object(GROUP, VERSION, "not-prod", "hostclaims", "web")

        def gone():
            try:
                read_claim()
            except client.exceptions.ApiException as exc:
                if exc.status == 404:
                    return True
                raise
            return False

        wait_for("deleted", gone, bool, stack)
        host = custom.get_namespaced_custom_object(GROUP, VERSION, INFRA, "baremetalhosts", "up-0")
    # ... and nothing else: the host keeps the last tenant's image, provisioned and powered on, and no claim
    # can have it (upstream offers only available hosts): stranded, never cleaned.
    assert not host["spec"].get("consumerRef")
    assert host["spec"]["image"]["url"] == stack.live_iso_url and host["spec"]["online"] is True
    assert bmo.host_state(host) == "provisioned"


def test_a_tenant_tells_the_dialect_from_the_openapi_document(upstream):
    """What the collection's modules read to choose the dialect, with a tenant's rights (no CRD access)."""
    env, _stack = upstream
    with env.api("tenant-a") as api:
        document = KubeIO(api).hostclaim_openapi()
    assert claim_dialect.openapi_dialect(document) == claim_dialect.BMO
    assert {"poweredOn", "failureDomain"} <= set(claim_dialect.openapi_spec_fields(document))
