"""Tenant offboarding (role tenant_namespace, state absent) on a real kube-apiserver.

A tenant onboarded with ``playbooks/metal3_onboard_tenants.yml`` (hosts shared with it
by the host_pool role) claims hosts with its own identity through
``baremetal.tenancy.host_claim``: one claim deployed (image, user-data Secret,
powered on), one bound without an image, one pending (no host matches).
Metal3's real baremetal-operator (``metal3_bmo_env``) registers the hosts and
provisions the deployed claim's image (the stack's live ISO, over Redfish
virtual media). Then ``playbooks/metal3_offboard_tenants.yml`` runs as the
administrator, first in check mode (nothing may change), then for real while
the operator deprovisions: every claim is released through the collection's
modules (host_release evicts, host_bind finishes the releases), every host
comes back unconsumed, deprovisioned and powered off, the binder's Secret
copies are gone, and so is the namespace.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures_metal3 import changed_count
from harness import baremetal_operator, kube
from harness.ansible import run_playbook
from kubernetes import client

REPO = Path(__file__).resolve().parents[3]
ONBOARD = REPO / "playbooks" / "metal3_onboard_tenants.yml"
OFFBOARD = REPO / "playbooks" / "metal3_offboard_tenants.yml"
TENANT = "t6-off"
INFRA = "t6-infra-off"
HOSTS = ["off-0", "off-1", "off-2"]
RACK = "t6-rack"
COPY_NAMESPACE_LABEL = "hostclaim.metal3.io/claim-namespace"

pytestmark = pytest.mark.real_bmo


@pytest.fixture(scope="module")
def tenant_with_claims(metal3_bmo_env, tmp_path_factory):
    """t6-off onboarded, three claims: deployed (provisioned by the operator), bound without image, pending."""
    metal3_env = metal3_bmo_env
    workdir = tmp_path_factory.mktemp("t6-offboard")
    with metal3_env.api() as api:
        kube._create_or_keep(
            client.CoreV1Api(api).create_namespace, client.V1Namespace(metadata=client.V1ObjectMeta(name=INFRA))
        )
    for index, name in enumerate(HOSTS):
        metal3_env.create_host(INFRA, name, index=620 + index, wait=False)
    metal3_env.wait_hosts(INFRA, HOSTS, state="available", timeout=300)
    image = baremetal_operator.live_iso_image(metal3_env.operator.live_iso_url)
    extra = {
        "tenant_namespace_tenants": [
            {"name": TENANT, "users": [kube.IDENTITIES["tenant-a"].user], "host_classes": ["small"]}
        ],
        "host_pool_namespace": INFRA,
        "host_pool_hosts": [
            {"names": HOSTS, "class": "small", "labels": {"rack": RACK}, "share": {"tenants": [TENANT]}}
        ],
    }
    run = run_playbook(ONBOARD, metal3_env.kube.ansible_env("admin"), workdir / "onboard", extra_vars=extra)
    assert run.ok, run.explain()

    # The rack label keeps these claims on this module's hosts: other suites' hosts shared with every
    # tenant (and of class small) are not theirs to take.
    small = {"matchLabels": {"infra-kind": "small", "rack": RACK}}
    tasks = [
        {
            "name": "user-data",
            "kubernetes.core.k8s": {
                "state": "present",
                "definition": {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": "deployed-user-data", "namespace": TENANT},
                    "stringData": {"userData": "#cloud-config\n{}\n"},
                },
            },
        },
        {
            "name": "deployed",
            "baremetal.tenancy.host_claim": {
                "name": "deployed",
                "namespace": TENANT,
                "host_selector": small,
                "image": image,
                "user_data_secret": "deployed-user-data",
                "online": True,
            },
        },
        {
            "name": "bound",
            "baremetal.tenancy.host_claim": {"name": "bound", "namespace": TENANT, "host_selector": small},
        },
        {
            "name": "pending",
            "baremetal.tenancy.host_claim": {
                "name": "pending",
                "namespace": TENANT,
                "host_selector": {"matchLabels": {"infra-kind": "small", "rack": "nowhere"}},
            },
        },
    ]
    run = metal3_env.playbook("tenant-a", tasks)
    assert run.ok, run.explain()

    # The binder binds the claims and passes the image down; the operator provisions the host at once.
    bound = metal3_env.bind([TENANT])
    deployed = {c["name"]: c["host"] for c in bound["claims"]}["deployed"]
    metal3_env.wait_host(INFRA, deployed, state="provisioned", powered=True, timeout=300)
    metal3_env.bind([TENANT])
    hosts = metal3_env.hosts(INFRA)
    consumed = {h["spec"]["consumerRef"]["name"]: h for h in hosts if h["spec"].get("consumerRef")}
    assert sorted(consumed) == ["bound", "deployed"], [h["spec"].get("consumerRef") for h in hosts]
    assert consumed["deployed"]["status"]["provisioning"]["state"] == "provisioned"
    assert consumed["deployed"]["status"]["poweredOn"] is True
    assert _copies(metal3_env), "the binder copied no Secret into the host namespace"
    yield workdir
    if metal3_env.claim(TENANT, "deployed") is not None:  # the test failed before offboarding
        metal3_env.forget_claims(TENANT)
    metal3_env.delete_hosts(INFRA)


def _copies(metal3_env):
    with metal3_env.api() as api:
        return (
            client.CoreV1Api(api)
            .list_namespaced_secret(INFRA, label_selector="%s=%s" % (COPY_NAMESPACE_LABEL, TENANT))
            .items
        )


def test_offboarding_releases_every_host_and_removes_the_tenant(tenant_with_claims, metal3_bmo_env):
    workdir = tenant_with_claims
    metal3_env = metal3_bmo_env
    admin_env = metal3_env.kube.ansible_env("admin")
    before = {h["metadata"]["name"]: h["spec"].get("consumerRef") for h in metal3_env.hosts(INFRA)}

    # Check mode: reports, changes nothing.
    check = run_playbook(OFFBOARD, admin_env, workdir / "check", extra_vars={"tenant": TENANT}, check=True)
    assert check.ok, check.explain()
    assert changed_count(check) > 0
    assert sorted(c["metadata"]["name"] for c in metal3_env.claims(TENANT)) == ["bound", "deployed", "pending"]
    assert {h["metadata"]["name"]: h["spec"].get("consumerRef") for h in metal3_env.hosts(INFRA)} == before
    with metal3_env.api() as api:
        assert client.RbacAuthorizationV1Api(api).list_namespaced_role_binding(TENANT).items

    # For real, while the baremetal-operator deprovisions the deployed host.
    run = run_playbook(OFFBOARD, admin_env, workdir / "offboard", extra_vars={"tenant": TENANT})
    assert run.ok, run.explain()
    evicted = run.result("baremetal.tenancy.tenant_namespace : Evict every claim of the tenant")
    assert sorted(r["tenant_namespace_claim"]["metadata"]["name"] for r in evicted["results"]) == [
        "bound",
        "deployed",
        "pending",
    ]
    assert all(r["released"] for r in evicted["results"])

    with metal3_env.api() as api:
        assert not kube.namespace_exists(api, TENANT)
    for host in metal3_env.hosts(INFRA):
        name, spec, status = host["metadata"]["name"], host["spec"], host.get("status") or {}
        assert not spec.get("consumerRef"), (name, spec.get("consumerRef"))
        assert status["provisioning"]["state"] == "available", (name, status["provisioning"])
        assert not spec.get("image") and not spec.get("userData"), (name, spec)
        assert status.get("poweredOn") is False, name
        # Still shared and classified: back in the pool for the next tenant.
        assert host["metadata"]["labels"]["infra-kind"] == "small"
    assert _copies(metal3_env) == []

    # Offboarding again changes nothing.
    again = run_playbook(OFFBOARD, admin_env, workdir / "again", extra_vars={"tenant": TENANT})
    assert again.ok, again.explain()
    assert changed_count(again) == 0, again.explain()
