"""The hostclaim_setup role on a real kube-apiserver, beside Metal3's baremetal-operator.

- on the session cluster of the real operator (``metal3_bmo_env``: BMO's own
  BareMetalHost CRD installed before the role ran): our HostClaim CRD installed,
  structural, with a status subresource and printer columns; BMO's
  BareMetalHost CRD left exactly as BMO ships it (no spec field added: the
  sharing policy is an annotation); the role is idempotent; the binder and
  tenant ClusterRoles grant what the design says and nothing more;
- on a fresh cluster that already has BMO's real BareMetalHost CRD: the role
  does not write it at all, and a host with the sharing annotation is stored as
  written; with BMO's real HostClaim CRD (its own dialect, ``spec.poweredOn``)
  in place of ours, it keeps that dialect and installs only RBAC (a forced
  ``proposal`` and a CRD of neither dialect are refused, nothing changed).
"""

from __future__ import annotations

import sys
import time

import pytest
from fixtures_metal3 import SETUP_VARS, SHARING_ANNOTATION, changed_count, setup_play
from harness import baremetal_operator as bmo
from harness import kube
from harness.ansible import collections_root, run_playbook
from kubernetes import client

# The collection's own client and dialect detection, run with a tenant's credentials.
if str(collections_root()) not in sys.path:
    sys.path.append(str(collections_root()))
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import Forbidden
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import dialect as claim_dialect
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.client import KubeIO

pytestmark = pytest.mark.real_bmo

CRDS = ("hostclaims.metal3.io", "baremetalhosts.metal3.io")


def bmo_crd(name: str) -> dict:
    """One of BMO's own CRDs, as ``make bmo`` ships them (its HostClaim dialect included)."""
    (crd,) = [c for c in bmo.bmo_crds(bmo.require_bmo(), claim_dialect="bmo") if c["metadata"]["name"] == name]
    return crd


def test_role_installs_structural_crds_and_is_idempotent(metal3_bmo_env):
    env = metal3_bmo_env
    (first,) = env.setup_runs
    second = run_playbook(setup_play(SETUP_VARS), env.kube.ansible_env("admin"), env.workdir / "setup-again")
    assert second.ok, second.explain()
    assert changed_count(first) > 0
    assert changed_count(second) == 0, second.explain()
    with env.api() as api:
        ext = client.ApiextensionsV1Api(api)
        for name in CRDS:
            crd = ext.read_custom_resource_definition(name)
            conditions = {c.type: c.status for c in crd.status.conditions}
            assert conditions["Established"] == "True"
            assert conditions.get("NonStructuralSchema") is None, name
            version = crd.spec.versions[0]
            assert version.name == "v1alpha1" and version.subresources.status is not None
        claim_crd = ext.read_custom_resource_definition("hostclaims.metal3.io")
        columns = [c.name for c in claim_crd.spec.versions[0].additional_printer_columns]
        assert columns == ["Host", "Online", "Associated", "Ready", "Age"]
        spec = claim_crd.spec.versions[0].schema.open_apiv3_schema.properties["spec"].properties
        # the data references take the proposal's {name: ...} or a plain name: untyped, checked by the collection
        assert spec["userData"].type is None and spec["userData"].x_kubernetes_preserve_unknown_fields is True
        assert spec["nodeReuse"].type == "string" and spec["kind"].enum == ["baremetal", "baremetalhost"]
        # BMO's BareMetalHost CRD is as BMO ships it: its columns and spec fields, nothing of ours
        shipped = bmo_crd("baremetalhosts.metal3.io")["spec"]["versions"]
        bmh = ext.read_custom_resource_definition("baremetalhosts.metal3.io")
        assert not (bmh.metadata.annotations or {}).get("baremetal.tenancy/schema")
        assert [v.name for v in bmh.spec.versions] == [v["name"] for v in shipped]
        version = bmh.spec.versions[0]
        assert [c.name for c in version.additional_printer_columns] == [
            c["name"] for c in shipped[0]["additionalPrinterColumns"]
        ]
        bmh_spec = version.schema.open_apiv3_schema.properties["spec"].properties
        assert set(bmh_spec) == set(shipped[0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"])
        assert "hostClaimNamespaces" not in bmh_spec


def _rules(api, name):
    return client.RbacAuthorizationV1Api(api).read_cluster_role(name).rules or []


def _grants(rules, group, resource, verb):
    return any(
        (group in r.api_groups or "*" in r.api_groups)
        and (resource in r.resources or "*" in r.resources)
        and (verb in r.verbs or "*" in r.verbs)
        for r in rules
    )


def test_tenant_role_grants_claims_and_secrets_only(metal3_bmo_env):
    with metal3_bmo_env.api() as api:
        rules = _rules(api, "baremetal-tenancy-tenant")
        for verb in ("get", "list", "watch", "create", "update", "patch", "delete"):
            assert _grants(rules, "metal3.io", "hostclaims", verb)
            assert _grants(rules, "", "secrets", verb)
        for verb in ("get", "list", "update", "patch", "create", "delete"):
            assert not _grants(rules, "metal3.io", "hostclaims/status", verb)
            assert not _grants(rules, "metal3.io", "baremetalhosts", verb)
        assert not _grants(rules, "", "namespaces", "get")


def test_a_tenant_tells_the_dialect_without_reading_crds(metal3_bmo_env):
    """A tenant may not read CRDs, but the API server's OpenAPI document: the proposal's HostClaim here
    (test_bmo_hostclaim_upstream reads baremetal-operator's the same way)."""
    with metal3_bmo_env.api("tenant-a") as api:
        io = KubeIO(api)
        with pytest.raises(Forbidden):
            io.request("get", "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "CRDs")
        document = io.hostclaim_openapi()
    assert claim_dialect.openapi_dialect(document) == claim_dialect.PROPOSAL
    assert "nodeReuse" in claim_dialect.openapi_spec_fields(document)


def test_binder_runs_with_the_binder_clusterrole_only(metal3_bmo_env):
    with metal3_bmo_env.api() as api:
        rbac = client.RbacAuthorizationV1Api(api)
        user = kube.IDENTITIES["binder"].user
        roles = [
            b.role_ref.name
            for b in rbac.list_cluster_role_binding().items
            if any(s.name == user for s in b.subjects or [])
        ]
        assert roles == ["hostclaim-binder"]
        rules = _rules(api, "hostclaim-binder")
        assert _grants(rules, "metal3.io", "hostclaims/status", "patch")
        assert _grants(rules, "metal3.io", "baremetalhosts", "patch")
        assert not _grants(rules, "metal3.io", "baremetalhosts", "delete")
        sa = client.CoreV1Api(api).read_namespaced_service_account("hostclaim-binder", "metal3")
        assert sa.metadata.name == "hostclaim-binder"


# ---------------------------------------------------------------------------
# A cluster that already has Metal3, or another HostClaim controller
# ---------------------------------------------------------------------------


def metal3_bmh_crd() -> dict:
    """BMO's real BareMetalHost CRD, labelled as clusterctl labels what it installs."""
    crd = bmo_crd("baremetalhosts.metal3.io")
    crd["metadata"]["labels"] = {"clusterctl.cluster.x-k8s.io": ""}
    return crd


def bmo_hostclaim_crd() -> dict:
    """BMO's real HostClaim CRD (its own dialect: spec.poweredOn, no annotation of ours)."""
    return bmo_crd("hostclaims.metal3.io")


def wait_established(ext, name):
    deadline = time.monotonic() + 60
    while True:
        crd = ext.read_custom_resource_definition(name)
        if any(c.type == "Established" and c.status == "True" for c in (crd.status.conditions or [])):
            return crd
        assert time.monotonic() < deadline
        time.sleep(0.2)


@pytest.fixture(scope="module")
def other_cluster(tmp_path_factory):
    """A second, fresh control plane (etcd, apiserver, controller-manager) for the pre-existing CRD cases."""
    env = kube.KubeEnv(tmp_path_factory.mktemp("kube-metal3-crds"), kube.require_binaries())
    env.start()
    try:
        with env.api("admin") as api:
            kube.setup_namespaces(api)
        yield env
    finally:
        env.stop()


def test_role_leaves_metal3_crds_alone_and_keeps_bmos_hostclaim_dialect(other_cluster, tmp_path):
    with other_cluster.api("admin") as api:
        ext = client.ApiextensionsV1Api(api)
        ext.create_custom_resource_definition(metal3_bmh_crd())
        installed = wait_established(ext, "baremetalhosts.metal3.io")
    variables = SETUP_VARS
    run = run_playbook(setup_play(variables), other_cluster.ansible_env("admin"), tmp_path / "first")
    assert run.ok, run.explain()
    again = run_playbook(setup_play(variables), other_cluster.ansible_env("admin"), tmp_path / "again")
    assert again.ok and changed_count(again) == 0, again.explain()
    with other_cluster.api("admin") as api:
        ext = client.ApiextensionsV1Api(api)
        bmh = ext.read_custom_resource_definition("baremetalhosts.metal3.io")
        # Metal3's CRD is not touched at all: not one write
        assert bmh.metadata.resource_version == installed.metadata.resource_version
        assert bmh.metadata.labels == {"clusterctl.cluster.x-k8s.io": ""}
        assert not (bmh.metadata.annotations or {}).get("baremetal.tenancy/schema")
        shipped = metal3_bmh_crd()["spec"]["versions"]
        assert [v.name for v in bmh.spec.versions] == [v["name"] for v in shipped]
        assert set(bmh.spec.versions[0].schema.open_apiv3_schema.properties["spec"].properties) == set(
            shipped[0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        )
        # the sharing policy needs no schema: the annotation is stored as written
        custom = client.CustomObjectsApi(api)
        created = custom.create_namespaced_custom_object(
            "metal3.io",
            "v1alpha1",
            "metal3",
            "baremetalhosts",
            {
                "apiVersion": "metal3.io/v1alpha1",
                "kind": "BareMetalHost",
                "metadata": {"name": "shared", "annotations": {SHARING_ANNOTATION: '{"matches":"tenant-.*"}'}},
                "spec": {"online": False},
            },
        )
        assert created["metadata"]["annotations"][SHARING_ANNOTATION] == '{"matches":"tenant-.*"}'
    # state absent removes the binder and tenant RBAC, never the CRDs (that would delete every claim)
    absent = run_playbook(
        setup_play(dict(variables, hostclaim_setup_state="absent")),
        other_cluster.ansible_env("admin"),
        tmp_path / "absent",
    )
    assert absent.ok and changed_count(absent) > 0, absent.explain()
    with other_cluster.api("admin") as api:
        rbac = client.RbacAuthorizationV1Api(api)
        names = [role.metadata.name for role in rbac.list_cluster_role().items]
        assert not [n for n in names if n.startswith("hostclaim-binder") or n.startswith("baremetal-tenancy-tenant")]
        assert client.ApiextensionsV1Api(api).read_custom_resource_definition("hostclaims.metal3.io")
        ext = client.ApiextensionsV1Api(api)
        # now replace our HostClaim CRD by baremetal-operator's own (v0.14): the role keeps that dialect
        _replace_hostclaim_crd(ext, bmo_hostclaim_crd())
        foreign = wait_established(ext, "hostclaims.metal3.io")

    # forced to the proposal's dialect, it refuses and changes nothing
    forced = run_playbook(
        setup_play(dict(variables, hostclaim_setup_dialect="proposal")),
        other_cluster.ansible_env("admin"),
        tmp_path / "forced",
    )
    assert forced.rc != 0
    failure = forced.result(
        "baremetal.tenancy.hostclaim_setup : Refuse a HostClaim CRD of neither dialect, or a dialect the cluster cannot serve"
    )
    assert failure["failed"]
    assert "hostclaim_setup_dialect is proposal but the cluster serves baremetal-operator's HostClaim" in failure["msg"]
    assert changed_count(forced) == 0
    with other_cluster.api("admin") as api:
        assert not _binder_roles(api)

    # auto: BMO's HostClaim stays exactly as shipped; only the binder and tenant RBAC are installed
    for run_name in ("bmo", "bmo-again"):
        kept = run_playbook(setup_play(variables), other_cluster.ansible_env("admin"), tmp_path / run_name)
        assert kept.ok, kept.explain()
        assert (changed_count(kept) > 0) == (run_name == "bmo"), kept.explain()
    with other_cluster.api("admin") as api:
        after = client.ApiextensionsV1Api(api).read_custom_resource_definition("hostclaims.metal3.io")
        assert after.metadata.resource_version == foreign.metadata.resource_version
        assert not (after.metadata.annotations or {}).get("baremetal.tenancy/schema")
        assert _binder_roles(api) == ["hostclaim-binder"]
        rules = _rules(api, "hostclaim-binder")
        assert _grants(rules, "metal3.io", "hostdeploypolicies", "list")
        assert not _grants(rules, "metal3.io", "hostdeploypolicies", "create")
        assert _grants(rules, "metal3.io", "hostclaims/status", "patch")

        # a HostClaim CRD of neither dialect is refused, untouched
        ext = client.ApiextensionsV1Api(api)
        odd = bmo_hostclaim_crd()
        odd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["online"] = {
            "type": "boolean"
        }
        _replace_hostclaim_crd(ext, odd)
        neither = wait_established(ext, "hostclaims.metal3.io")
    refused = run_playbook(setup_play(variables), other_cluster.ansible_env("admin"), tmp_path / "refused")
    assert refused.rc != 0
    failure = refused.result(
        "baremetal.tenancy.hostclaim_setup : Refuse a HostClaim CRD of neither dialect, or a dialect the cluster cannot serve"
    )
    assert "is of neither HostClaim dialect" in failure["msg"] and "refusing to replace it" in failure["msg"]
    with other_cluster.api("admin") as api:
        after = client.ApiextensionsV1Api(api).read_custom_resource_definition("hostclaims.metal3.io")
        assert after.metadata.resource_version == neither.metadata.resource_version


def _binder_roles(api) -> list[str]:
    names = [role.metadata.name for role in client.RbacAuthorizationV1Api(api).list_cluster_role().items]
    return [n for n in names if n.startswith("hostclaim-binder")]


def _replace_hostclaim_crd(ext, crd: dict) -> None:
    """Delete the HostClaim CRD (waiting until it is gone), then create ``crd`` in its place."""
    ext.delete_custom_resource_definition("hostclaims.metal3.io")
    deadline = time.monotonic() + 60
    while True:
        try:
            ext.read_custom_resource_definition("hostclaims.metal3.io")
        except client.exceptions.ApiException as exc:
            assert exc.status == 404
            break
        assert time.monotonic() < deadline
        time.sleep(0.2)
    ext.create_custom_resource_definition(crd)
