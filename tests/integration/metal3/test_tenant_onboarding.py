"""Tenant onboarding (roles tenant_namespace and host_pool) on a real kube-apiserver.

Everything is checked by what the apiserver itself enforces, with the
tenants' own identities (tenant-a-user, tenant-b-user of the harness):

- RBAC: each tenant's RoleBindings (aggregated ``baremetal-tenancy-tenant``
  role, plus the workload role) work in its namespace and nowhere else; a
  SubjectAccessReview sweep over every namespaced resource and verb finds
  nothing tenant A may do in tenant B's namespace;
- ResourceQuota admission: the third claim of a tenant whose quota is 2 is
  refused, and ``baremetal.tenancy.host_claim``'s error names the quota;
- Pod Security Admission and the ValidatingAdmissionPolicies: privileged,
  foreign-registry, hostPath (and in a namespace where Pod Security only
  warns, also host-port, root and no-seccomp) pods are refused, a compliant
  pod is admitted; with the opt-in controls on (narrow ranges), a container
  port, a runAsGroup, fsGroup or supplementalGroups entry out of range, and a
  missing or Unconfined AppArmor profile (field or legacy annotation) are
  refused, each by a message naming the field, and pods at the ranges' ends
  are admitted; a claim of a host class the tenant's namespace does not
  allow is refused;
- NetworkPolicies: no CNI runs here, so nothing enforces traffic rules; what
  the apiserver does hold is tested: the objects exist with the right shape,
  and tenants can neither delete nor change them (nor their quota, LimitRange
  or RoleBindings, nor their namespace's labels);
- both roles converge twice through ``playbooks/metal3_onboard_tenants.yml`` with
  zero changes the second time.

Tenant namespaces are ``t6-a`` and ``t6-b`` (not the harness's
``tenant-a``/``tenant-b``, where the harness grants the built-in ``admin``
role). Hosts live in ``t6-infra``: real BareMetalHosts that Metal3's
baremetal-operator registers (``metal3_bmo_env``); the second pool run must
write nothing although the operator keeps updating their status.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures_metal3 import changed_count, sharing
from harness import kube
from harness.ansible import run_playbook
from kubernetes import client

pytestmark = pytest.mark.real_bmo

REPO = Path(__file__).resolve().parents[3]
ONBOARD = REPO / "playbooks" / "metal3_onboard_tenants.yml"
INFRA = "t6-infra"
A, B = "t6-a", "t6-b"
ROLES = ["baremetal-tenancy-tenant", "baremetal-tenancy-tenant-workloads"]
TENANTS = [
    {
        "name": A,
        "users": [kube.IDENTITIES["tenant-a"].user],
        "host_classes": ["small"],
        "quota": {"hostclaims": 2},
        "cluster_roles": ROLES,
    },
    # Pod Security only warns and audits here: the admission policies alone must refuse.
    {
        "name": B,
        "users": [kube.IDENTITIES["tenant-b"].user],
        "host_classes": ["small", "large"],
        "pod_security": {"enforce": "privileged"},
        "cluster_roles": ROLES,
        "network_allows": [
            {
                "name": "web",
                "spec": {
                    "podSelector": {"matchLabels": {"app": "web"}},
                    "policyTypes": ["Ingress"],
                    "ingress": [{"ports": [{"port": 8080}]}],
                },
            }
        ],
    },
]
HOSTS = {"small-0": "small", "small-1": "small", "large-0": "large"}
POOL = [
    {"names": ["small-0", "small-1"], "class": "small", "share": {"all_tenants": True}},
    {"names": ["large-0"], "class": "large", "share": {"tenants": [B]}},
]
CONTROLS = ["no-privileged", "allowed-registries", "no-host-path", "no-host-ports", "run-as-non-root", "seccomp"]
# The controls off by default, enforced here with narrow ranges so that each bound is tested.
OPT_IN = ["allowed-ports", "group-ids", "apparmor"]
POLICIES = sorted("baremetal-tenancy-" + p for p in [*CONTROLS, *OPT_IN, "claim-host-class"])
ADMISSION = {
    "tenant_namespace_pod_controls": CONTROLS + OPT_IN,
    "tenant_namespace_allowed_ports": [{"min": 8080, "max": 8080}, {"min": 9000, "max": 9099}],
    "tenant_namespace_group_ranges": {
        "run_as_group": [{"min": 1000, "max": 1999}],
        "fs_group": [{"min": 2000, "max": 2999}],
        "supplemental_groups": [{"min": 1000, "max": 2999}],
    },
}
APPARMOR = "container.apparmor.security.beta.kubernetes.io/"


@pytest.fixture(scope="module")
def onboarded(metal3_bmo_env, tmp_path_factory):
    """The onboarding playbook, run twice (on real hosts BMO registered); returns both runs."""
    env = metal3_bmo_env
    workdir = tmp_path_factory.mktemp("t6-onboard")
    with env.api() as api:
        kube._create_or_keep(
            client.CoreV1Api(api).create_namespace, client.V1Namespace(metadata=client.V1ObjectMeta(name=INFRA))
        )
    existing = {h["metadata"]["name"] for h in env.hosts(INFRA)}
    for index, name in enumerate(HOSTS):
        if name not in existing:
            env.create_host(INFRA, name, index=600 + index, wait=False)
    env.wait_hosts(INFRA, list(HOSTS), state="available", timeout=300)
    extra = {"tenant_namespace_tenants": TENANTS, "host_pool_namespace": INFRA, "host_pool_hosts": POOL, **ADMISSION}
    runs = []
    for attempt in range(2):
        run = run_playbook(ONBOARD, env.kube.ansible_env("admin"), workdir / str(attempt), extra_vars=extra)
        assert run.ok, run.explain()
        runs.append(run)
    yield runs
    for namespace in (A, B):
        env.forget_claims(namespace)
    env.delete_hosts(INFRA)


def tenant_run(metal3_bmo_env, identity, tasks):
    """Run ``tasks`` as ``identity``; every task ignores errors so all results come back."""
    return metal3_bmo_env.playbook(identity, [dict(t, ignore_errors=True) for t in tasks])


def pod(name, namespace, **changes):
    """A pod that the restricted Pod Security level and every policy admit, then ``changes`` applied."""
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "securityContext": {
                "runAsNonRoot": True,
                "runAsUser": 1000,
                "seccompProfile": {"type": "RuntimeDefault"},
                "appArmorProfile": {"type": "RuntimeDefault"},
            },
            "containers": [
                {
                    "name": "app",
                    "image": "registry.k8s.io/pause:3.10",
                    "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
                }
            ],
        },
    }
    spec, container = body["spec"], body["spec"]["containers"][0]
    if changes.get("privileged"):
        container["securityContext"] = {"privileged": True}
    if changes.get("image"):
        container["image"] = changes["image"]
    if changes.get("host_path"):
        spec["volumes"] = [{"name": "root", "hostPath": {"path": "/"}}]
        container["volumeMounts"] = [{"name": "root", "mountPath": "/host"}]
    if changes.get("host_port"):
        container["ports"] = [{"containerPort": 8080, "hostPort": 8080}]
    if changes.get("root"):  # root only: the pod's other settings stay, so one policy refuses it
        spec["securityContext"].pop("runAsNonRoot")
        spec["securityContext"]["runAsUser"] = 0
    if changes.get("no_seccomp"):
        del spec["securityContext"]["seccompProfile"]
    if "port" in changes:
        container["ports"] = [{"containerPort": changes["port"]}]
    for key, field in (("group", "runAsGroup"), ("fs_group", "fsGroup"), ("supplemental", "supplementalGroups")):
        if key in changes:
            spec["securityContext"][field] = changes[key]
    if "container_group" in changes:
        container["securityContext"]["runAsGroup"] = changes["container_group"]
    if "apparmor" in changes:  # the pod's profile type, or None for none
        spec["securityContext"].pop("appArmorProfile")
        if changes["apparmor"]:
            spec["securityContext"]["appArmorProfile"] = {"type": changes["apparmor"]}
    if "container_apparmor" in changes:
        container["securityContext"]["appArmorProfile"] = changes["container_apparmor"]
    if "annotation" in changes:  # the legacy annotation, instead of the pod's field
        spec["securityContext"].pop("appArmorProfile")
        body["metadata"]["annotations"] = {APPARMOR + "app": changes["annotation"]}
    return body


# --------------------------------------------------------------------------
# Onboarding itself
# --------------------------------------------------------------------------


def test_roles_converge_twice_with_zero_changes(onboarded, metal3_bmo_env):
    first, second = onboarded
    assert changed_count(first) > 0
    assert changed_count(second) == 0, second.explain()
    # Both roles really ran in the second pass (not skipped): their last tasks are there.
    last_tenant_task = (
        "baremetal.tenancy.tenant_namespace : Wait until the apiserver enforces every tenant quota (usage computed)"
    )
    last_pool_task = "baremetal.tenancy.host_pool : Label and share the hosts"
    assert last_tenant_task in second.tasks and last_pool_task in second.tasks
    assert first.result(last_pool_task)["changed"]
    assert not second.result(last_pool_task)["changed"]
    assert second.result(last_pool_task)["requests"]["writes"] == 0  # nothing to patch: no write at all
    hosts = {h["metadata"]["name"]: h for h in metal3_bmo_env.hosts(INFRA)}
    assert hosts["small-0"]["metadata"]["labels"]["infra-kind"] == "small"
    assert sharing(hosts["small-0"]) == {"withLabel": ["baremetal.tenancy/tenant"]}
    assert sharing(hosts["large-0"]) == {"withLabel": ["baremetal.tenancy/tenant=%s" % B]}


def test_namespace_objects_have_the_expected_shape(onboarded, metal3_bmo_env):
    with metal3_bmo_env.api() as api:
        core, rbac, net = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api), client.NetworkingV1Api(api)
        labels_a = core.read_namespace(A).metadata.labels
        labels_b = core.read_namespace(B).metadata.labels
        assert labels_a["baremetal.tenancy/tenant"] == A
        assert labels_a["host-class.baremetal.tenancy/small"] == "true"
        assert "host-class.baremetal.tenancy/large" not in labels_a
        for mode in ("enforce", "audit", "warn"):
            assert labels_a["pod-security.kubernetes.io/" + mode] == "restricted"
            assert labels_a["pod-security.kubernetes.io/%s-version" % mode] == "latest"
        assert labels_b["pod-security.kubernetes.io/enforce"] == "privileged"
        assert labels_b["pod-security.kubernetes.io/warn"] == "restricted"

        bindings = rbac.list_namespaced_role_binding(A).items
        assert sorted(b.metadata.name for b in bindings) == ROLES
        for binding in bindings:
            assert binding.role_ref.kind == "ClusterRole"
            assert [(s.kind, s.name) for s in binding.subjects] == [("User", "tenant-a-user")]

        quota = core.read_namespaced_resource_quota("baremetal-tenancy", A)
        assert quota.spec.hard["count/hostclaims.metal3.io"] == "2"
        assert quota.status.hard == quota.spec.hard  # enforced by the apiserver already
        limits = core.read_namespaced_limit_range("baremetal-tenancy", A).spec.limits[0]
        assert limits.type == "Container" and limits.default_request["cpu"] == "100m"

        policies = {p.metadata.name: p for p in net.list_namespaced_network_policy(A).items}
        assert sorted(policies) == ["baremetal-tenancy-allow-dns", "baremetal-tenancy-default-deny"]
        deny = policies["baremetal-tenancy-default-deny"].spec
        assert deny.pod_selector.match_labels is None and deny.pod_selector.match_expressions is None
        assert sorted(deny.policy_types) == ["Egress", "Ingress"] and not deny.ingress and not deny.egress
        dns = policies["baremetal-tenancy-allow-dns"].spec
        assert dns.policy_types == ["Egress"] and len(dns.egress) == 1
        assert sorted((p.protocol, p.port) for p in dns.egress[0].ports) == [("TCP", 53), ("UDP", 53)]
        assert dns.egress[0].to[0].namespace_selector.match_labels == {"kubernetes.io/metadata.name": "kube-system"}
        assert dns.egress[0].to[0].pod_selector.match_labels == {"k8s-app": "kube-dns"}
        extra = net.read_namespaced_network_policy("baremetal-tenancy-allow-web", B).spec
        assert extra.ingress[0].ports[0].port == 8080

        admission = client.AdmissionregistrationV1Api(api)
        vaps = {
            p.metadata.name: p
            for p in admission.list_validating_admission_policy().items
            if p.metadata.name.startswith("baremetal-tenancy-")
        }
        assert sorted(vaps) == POLICIES
        for policy in vaps.values():
            assert policy.spec.failure_policy == "Fail"
            assert not (
                policy.status and policy.status.type_checking and policy.status.type_checking.expression_warnings
            )
        bindings = {
            b.metadata.name: b
            for b in admission.list_validating_admission_policy_binding().items
            if b.metadata.name.startswith("baremetal-tenancy-")
        }
        assert sorted(bindings) == POLICIES
        for binding in bindings.values():
            assert binding.spec.validation_actions == ["Deny"]
            expr = binding.spec.match_resources.namespace_selector.match_expressions
            assert [(e.key, e.operator) for e in expr] == [("baremetal.tenancy/tenant", "Exists")]


# --------------------------------------------------------------------------
# Quota
# --------------------------------------------------------------------------


def claim_task(name, namespace, selector=None, **extra):
    args = {"name": name, "namespace": namespace, "host_selector": selector or {"matchLabels": {"infra-kind": "small"}}}
    args.update(extra)
    return {"name": name, "baremetal.tenancy.host_claim": args}


def test_third_claim_is_refused_by_the_quota_and_the_error_names_it(onboarded, metal3_bmo_env):
    tasks = [claim_task("quota-%d" % i, A) for i in range(3)]
    # A class t6-a may not use: refused by the host-class policy, and not counted.
    tasks.insert(1, claim_task("class-large-in-a", A, {"matchLabels": {"infra-kind": "large"}}))
    run = tenant_run(metal3_bmo_env, "tenant-a", tasks)
    first, second, third = (run.result("quota-%d" % i) for i in range(3))
    refused = run.result("class-large-in-a")
    assert refused.get("failed") and "selects host class large, which namespace t6-a may not use" in refused["msg"]
    assert not first.get("failed") and first["changed"], run.explain()
    assert not second.get("failed") and second["changed"], run.explain()
    assert third.get("failed"), run.explain()
    message = third["msg"]
    assert "HostClaim" in message and "quota-2" in message, message
    assert "exceeded quota: baremetal-tenancy" in message, message
    assert "count/hostclaims.metal3.io=2" in message, message
    assert sorted(c["metadata"]["name"] for c in metal3_bmo_env.claims(A)) == ["quota-0", "quota-1"]
    with metal3_bmo_env.api() as api:
        used = client.CoreV1Api(api).read_namespaced_resource_quota("baremetal-tenancy", A).status.used
    assert used["count/hostclaims.metal3.io"] == "2"


# --------------------------------------------------------------------------
# Admission: claims
# --------------------------------------------------------------------------


def test_claims_may_only_select_allowed_host_classes(onboarded, metal3_bmo_env):
    refused = {
        "class-medium": {"matchLabels": {"infra-kind": "medium"}},
        "class-in-foreign": {"matchExpressions": [{"key": "infra-kind", "operator": "In", "values": ["small", "gpu"]}]},
        "class-notin": {"matchExpressions": [{"key": "infra-kind", "operator": "NotIn", "values": ["tiny"]}]},
        "class-unpinned": {"matchLabels": {"rack": "r1"}},
    }
    admitted = {
        "class-large": {"matchLabels": {"infra-kind": "large"}},
        "class-in": {"matchExpressions": [{"key": "infra-kind", "operator": "In", "values": ["small", "large"]}]},
    }
    # (The same "large" class is refused in t6-a, which only allows "small": see the quota test.)
    run = tenant_run(metal3_bmo_env, "tenant-b", [claim_task(n, B, s) for n, s in {**refused, **admitted}.items()])
    for name in refused:
        result = run.result(name)
        assert result.get("failed"), (name, run.explain())
        assert "ValidatingAdmissionPolicy 'baremetal-tenancy-claim-host-class'" in result["msg"], result["msg"]
        assert "allowed: [" in result["msg"]
    assert "selects host class medium" in run.result("class-medium")["msg"]
    for name in admitted:
        assert not run.result(name).get("failed"), (name, run.explain())
    assert sorted(c["metadata"]["name"] for c in metal3_bmo_env.claims(B)) == sorted(admitted)


# --------------------------------------------------------------------------
# Admission: pods
# --------------------------------------------------------------------------


def pod_task(body):
    return {"name": body["metadata"]["name"], "kubernetes.core.k8s": {"state": "present", "definition": body}}


def test_pod_admission_refuses_unsafe_pods_and_admits_compliant_ones(onboarded, metal3_bmo_env):
    refused_a = {  # restricted Pod Security enforces first; the registry policy is the collection's own
        "priv": (dict(privileged=True), "violates PodSecurity"),
        "registry": (
            dict(image="docker.io/library/busybox:1.37"),
            "ValidatingAdmissionPolicy 'baremetal-tenancy-allowed-registries'",
        ),
        "lookalike": (
            dict(image="registry.k8s.io.evil.example/pause:3.10"),
            "ValidatingAdmissionPolicy 'baremetal-tenancy-allowed-registries'",
        ),
        "hostpath": (dict(host_path=True), "violates PodSecurity"),
        "port": (dict(port=80), "ValidatingAdmissionPolicy 'baremetal-tenancy-allowed-ports'"),
        "unconfined": (dict(apparmor="Unconfined"), "violates PodSecurity"),
        "noapparmor": (dict(apparmor=None), "ValidatingAdmissionPolicy 'baremetal-tenancy-apparmor'"),
    }
    refused_b = {  # Pod Security only warns in t6-b: each ValidatingAdmissionPolicy refuses on its own
        "priv": (dict(privileged=True), "ValidatingAdmissionPolicy 'baremetal-tenancy-no-privileged'"),
        "registry": (
            dict(image="docker.io/library/busybox:1.37"),
            "ValidatingAdmissionPolicy 'baremetal-tenancy-allowed-registries'",
        ),
        "hostpath": (dict(host_path=True), "ValidatingAdmissionPolicy 'baremetal-tenancy-no-host-path'"),
        "hostport": (dict(host_port=True), "ValidatingAdmissionPolicy 'baremetal-tenancy-no-host-ports'"),
        "root": (dict(root=True), "ValidatingAdmissionPolicy 'baremetal-tenancy-run-as-non-root'"),
        "noseccomp": (dict(no_seccomp=True), "ValidatingAdmissionPolicy 'baremetal-tenancy-seccomp'"),
        # The opt-in controls: each refusal names the field.
        "port": (dict(port=8081), "ports[].containerPort must be within the allowed ports (8080-8080, 9000-9099)"),
        "port-high": (dict(port=9100), "ValidatingAdmissionPolicy 'baremetal-tenancy-allowed-ports'"),
        "group": (dict(group=0), "spec.securityContext.runAsGroup 0 is outside the allowed group IDs (1000-1999)"),
        "container-group": (
            dict(container_group=2000),
            "securityContext.runAsGroup must be within the allowed group IDs (1000-1999); refused containers: app",
        ),
        "fsgroup": (
            dict(fs_group=1000),
            "spec.securityContext.fsGroup 1000 is outside the allowed group IDs (2000-2999)",
        ),
        "supplemental": (
            dict(supplemental=[1000, 0, 3000]),
            "spec.securityContext.supplementalGroups must be within the allowed group IDs (1000-2999); refused: 0, 3000",
        ),
        "noapparmor": (dict(apparmor=None), "an AppArmor profile is required (securityContext.appArmorProfile.type"),
        "unconfined": (
            dict(apparmor="Unconfined"),
            "spec.securityContext.appArmorProfile.type Unconfined is not allowed in tenant namespaces",
        ),
        "unconfined-container": (
            dict(container_apparmor={"type": "Unconfined"}),
            "ValidatingAdmissionPolicy 'baremetal-tenancy-apparmor'",
        ),
        "unconfined-annotation": (
            dict(annotation="unconfined"),
            "ValidatingAdmissionPolicy 'baremetal-tenancy-apparmor'",
        ),
    }
    admitted_b = {  # within every range, and the other ways to name an AppArmor profile
        "ports-ok": dict(port=9099),
        "groups-ok": dict(group=1999, container_group=1000, fs_group=2000, supplemental=[1000, 2999]),
        "annotation-ok": dict(annotation="runtime/default"),
        "localhost-ok": dict(container_apparmor={"type": "Localhost", "localhostProfile": "tenant-profile"}),
    }
    try:
        for identity, namespace, refused in (("tenant-a", A, refused_a), ("tenant-b", B, refused_b)):
            admitted = {"compliant": {}, **(admitted_b if namespace == B else {})}
            tasks = [pod_task(pod(name, namespace, **changes)) for name, changes in admitted.items()]
            tasks += [pod_task(pod(name, namespace, **changes)) for name, (changes, dummy) in refused.items()]
            run = tenant_run(metal3_bmo_env, identity, tasks)
            for name in admitted:
                assert not run.result(name).get("failed"), (namespace, name, run.explain())
            for name, (_dummy, expected) in refused.items():
                result = run.result(name)
                assert result.get("failed"), (namespace, name, run.explain())
                assert expected in result["msg"], (namespace, name, result["msg"])
            with metal3_bmo_env.api() as api:
                names = [p.metadata.name for p in client.CoreV1Api(api).list_namespaced_pod(namespace).items]
            assert sorted(names) == sorted(admitted), (namespace, names)
    finally:
        with metal3_bmo_env.api() as api:
            core = client.CoreV1Api(api)
            for namespace in (A, B):
                core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)


# --------------------------------------------------------------------------
# Isolation
# --------------------------------------------------------------------------

# A sample through ansible-playbook; test_rbac_sweep_every_resource_and_verb asks about everything.
READ_KINDS = [
    ("metal3.io/v1alpha1", "HostClaim"),
    ("v1", "Secret"),
    ("v1", "Pod"),
    ("v1", "Event"),
    ("networking.k8s.io/v1", "NetworkPolicy"),
]


def test_tenant_a_cannot_read_or_write_anything_in_tenant_b(onboarded, metal3_bmo_env):
    tasks = []
    for namespace in (A, B):
        for api_version, kind in READ_KINDS:
            tasks.append(
                {
                    "name": "read %s %s" % (namespace, kind),
                    "kubernetes.core.k8s_info": {"api_version": api_version, "kind": kind, "namespace": namespace},
                }
            )
    tasks += [
        claim_task("intruder", B),
        {
            "name": "write secret",
            "kubernetes.core.k8s": {
                "state": "present",
                "definition": {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": "intruder", "namespace": B},
                    "stringData": {"x": "y"},
                },
            },
        },
        {
            "name": "delete netpol",
            "kubernetes.core.k8s": {
                "state": "absent",
                "api_version": "networking.k8s.io/v1",
                "kind": "NetworkPolicy",
                "namespace": B,
                "name": "baremetal-tenancy-default-deny",
            },
        },
        pod_task(pod("intruder", B)),
        {"name": "read claims of B by the module", "baremetal.tenancy.host_claim_info": {"namespace": B}},
    ]
    run = tenant_run(metal3_bmo_env, "tenant-a", tasks)
    for _api_version, kind in READ_KINDS:
        own = run.result("read %s %s" % (A, kind))
        assert not own.get("failed"), ("positive control: tenant A reads its own %s" % kind, run.explain())
        other = run.result("read %s %s" % (B, kind))
        assert other.get("failed") and "403" in other["msg"], (kind, other)
    for name in ("intruder", "write secret", "delete netpol", "read claims of B by the module"):
        result = run.result(name)
        assert result.get("failed"), (name, run.explain())
        assert "403" in result["msg"] or "orbidden" in result["msg"], (name, result["msg"])
    with metal3_bmo_env.api() as api:
        assert "baremetal-tenancy-default-deny" in [
            p.metadata.name for p in client.NetworkingV1Api(api).list_namespaced_network_policy(B).items
        ]
        assert not [c for c in metal3_bmo_env.claims(B) if c["metadata"]["name"] == "intruder"]


def _namespaced_resources(api):
    """Every namespaced resource (and subresource) the apiserver serves: (group, resource, subresource)."""
    listings = [("", client.CoreV1Api(api).get_api_resources())]
    custom = client.CustomObjectsApi(api)
    for group in client.ApisApi(api).get_api_versions().groups:
        version = group.preferred_version
        listings.append((group.name, custom.get_api_resources(group.name, version.version)))
    found = set()
    for group, listing in listings:
        for res in listing.resources:
            if res.namespaced:
                resource, _dummy, sub = res.name.partition("/")
                found.add((group, resource, sub))
    return sorted(found)


def _allowed(authz, user, groups, namespace, group, resource, sub, verb):
    review = client.V1SubjectAccessReview(
        spec=client.V1SubjectAccessReviewSpec(
            user=user,
            groups=groups,
            resource_attributes=client.V1ResourceAttributes(
                namespace=namespace, group=group, resource=resource, subresource=sub or None, verb=verb
            ),
        )
    )
    return authz.create_subject_access_review(review).status.allowed


VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")


def test_rbac_sweep_every_resource_and_verb(onboarded, metal3_bmo_env):
    """The apiserver's own authorizer, asked about every namespaced resource and verb."""
    ident = kube.IDENTITIES["tenant-a"]
    groups = [*list(ident.groups), "system:authenticated"]
    with metal3_bmo_env.api() as api:
        authz = client.AuthorizationV1Api(api)
        resources = _namespaced_resources(api)
        assert ("metal3.io", "hostclaims", "") in resources and ("", "secrets", "") in resources
        allowed_in_b = [
            (g, r, s, v) for g, r, s in resources for v in VERBS if _allowed(authz, ident.user, groups, B, g, r, s, v)
        ]
        assert allowed_in_b == [], allowed_in_b

        def can(verb, group, resource, sub=""):
            return _allowed(authz, ident.user, groups, A, group, resource, sub, verb)

        # Positive controls in its own namespace: the sweep could have found something.
        assert can("create", "metal3.io", "hostclaims") and can("delete", "", "secrets") and can("list", "", "events")
        assert can("create", "", "pods")
        # What tenants must never do, even at home.
        assert not can("update", "metal3.io", "hostclaims", "status")
        assert not can("patch", "metal3.io", "hostclaims", "status")
        for verb in ("create", "update", "patch", "delete"):
            for group, resource in (
                ("networking.k8s.io", "networkpolicies"),
                ("", "resourcequotas"),
                ("", "limitranges"),
                ("rbac.authorization.k8s.io", "rolebindings"),
                ("rbac.authorization.k8s.io", "roles"),
            ):
                assert not can(verb, group, resource), (verb, resource)
        assert not can("create", "", "pods", "ephemeralcontainers")
        assert not can("get", "metal3.io", "baremetalhosts")
        for verb in ("update", "patch", "delete"):  # namespace labels (Pod Security, host classes) are the admin's
            review = client.V1SubjectAccessReview(
                spec=client.V1SubjectAccessReviewSpec(
                    user=ident.user,
                    groups=groups,
                    resource_attributes=client.V1ResourceAttributes(group="", resource="namespaces", name=A, verb=verb),
                )
            )
            assert not authz.create_subject_access_review(review).status.allowed


def test_tenant_cannot_loosen_its_own_namespace(onboarded, metal3_bmo_env):
    def k8s(task_name, **args):
        return {"name": task_name, "kubernetes.core.k8s": args}

    tasks = [
        k8s(
            "relabel namespace",
            state="patched",
            kind="Namespace",
            name=A,
            definition={
                "metadata": {
                    "labels": {
                        "pod-security.kubernetes.io/enforce": "privileged",
                        "host-class.baremetal.tenancy/large": "true",
                    }
                }
            },
        ),
        k8s(
            "delete netpol",
            state="absent",
            api_version="networking.k8s.io/v1",
            kind="NetworkPolicy",
            namespace=A,
            name="baremetal-tenancy-default-deny",
        ),
        k8s(
            "open netpol",
            state="patched",
            api_version="networking.k8s.io/v1",
            kind="NetworkPolicy",
            namespace=A,
            name="baremetal-tenancy-default-deny",
            definition={"spec": {"policyTypes": ["Ingress"]}},
        ),
        k8s(
            "raise quota",
            state="patched",
            kind="ResourceQuota",
            namespace=A,
            name="baremetal-tenancy",
            definition={"spec": {"hard": {"count/hostclaims.metal3.io": "100"}}},
        ),
        k8s("delete limits", state="absent", kind="LimitRange", namespace=A, name="baremetal-tenancy"),
        {
            "name": "grant self",
            "kubernetes.core.k8s": {
                "state": "present",
                "definition": {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "RoleBinding",
                    "metadata": {"name": "more", "namespace": A},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
                    "subjects": [{"kind": "User", "name": "tenant-a-user", "apiGroup": "rbac.authorization.k8s.io"}],
                },
            },
        },
    ]
    run = tenant_run(metal3_bmo_env, "tenant-a", tasks)
    for task in tasks:
        result = run.result(task["name"])
        assert result.get("failed") and ("403" in result["msg"] or "orbidden" in result["msg"]), (task["name"], result)
    with metal3_bmo_env.api() as api:
        net = client.NetworkingV1Api(api)
        deny = net.read_namespaced_network_policy("baremetal-tenancy-default-deny", A)
        assert sorted(deny.spec.policy_types) == ["Egress", "Ingress"]
        labels = client.CoreV1Api(api).read_namespace(A).metadata.labels
        assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
        assert "host-class.baremetal.tenancy/large" not in labels


def test_bad_input_is_refused_before_any_change(onboarded, metal3_bmo_env, tmp_path):
    bad = [
        ({"name": "Bad_Name"}, "tenants[0] (Bad_Name): tenant name 'Bad_Name' must consist of lower case"),
        ({"name": "t6-c", "quota": {"hostclaim": 3}}, "tenants[0] (t6-c): quota has unknown key(s) hostclaim"),
        ({"name": "t6-c", "host_classes": ["bad class"]}, "tenants[0] (t6-c): host class value 'bad class'"),
        ({"name": "t6-c", "network_allows": [{"name": "Web"}]}, "tenants[0] (t6-c): network allow name 'Web'"),
    ]
    play = [
        {
            "name": "bad",
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            "roles": [{"role": "baremetal.tenancy.tenant_namespace"}],
        }
    ]
    for index, (tenant, expected) in enumerate(bad):
        run = run_playbook(
            play,
            metal3_bmo_env.kube.ansible_env("admin"),
            tmp_path / str(index),
            extra_vars={"tenant_namespace_tenants": [tenant]},
        )
        assert not run.ok
        assert expected in run.stdout, run.explain()
    with metal3_bmo_env.api() as api:
        names = [n.metadata.name for n in client.CoreV1Api(api).list_namespace().items]
    assert "t6-c" not in names


def test_check_mode_changes_nothing(onboarded, metal3_bmo_env, tmp_path):
    tenants = [dict(TENANTS[0], quota={"hostclaims": 5}), TENANTS[1], {"name": "t6-check", "users": ["nobody"]}]
    run = run_playbook(
        ONBOARD,
        metal3_bmo_env.kube.ansible_env("admin"),
        tmp_path,
        check=True,
        diff=True,
        extra_vars={
            "tenant_namespace_tenants": tenants,
            "host_pool_namespace": INFRA,
            "host_pool_hosts": [{"names": ["small-0"], "class": "medium"}],
        },
    )
    assert run.ok, run.explain()
    assert changed_count(run) > 0
    with metal3_bmo_env.api() as api:
        core = client.CoreV1Api(api)
        assert "t6-check" not in [n.metadata.name for n in core.list_namespace().items]
        hard = core.read_namespaced_resource_quota("baremetal-tenancy", A).spec.hard
        assert hard["count/hostclaims.metal3.io"] == "2"
    small = next(h for h in metal3_bmo_env.hosts(INFRA) if h["metadata"]["name"] == "small-0")
    assert small["metadata"]["labels"]["infra-kind"] == "small"


def test_role_removes_what_a_tenant_no_longer_has(onboarded, metal3_bmo_env, tmp_path):
    """Dropping the workload role, the web allow, a host class and pod controls removes them.

    Last test of the module: it leaves t6-b without them and the cluster without the seccomp policy.
    """
    dropped = {"baremetal-tenancy-" + c for c in ["seccomp", *OPT_IN]}
    kept = [p for p in POLICIES if p not in dropped]
    changed = [dict(TENANTS[1], cluster_roles=ROLES[:1], network_allows=[], host_classes=["small"])]
    play = [
        {
            "name": "update",
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            "roles": [{"role": "baremetal.tenancy.tenant_namespace"}],
        }
    ]
    run = run_playbook(
        play,
        metal3_bmo_env.kube.ansible_env("admin"),
        tmp_path / "update",
        # The defaults but seccomp: the opt-in controls go too (the session's other suites do not expect them).
        extra_vars={"tenant_namespace_tenants": [TENANTS[0], *changed], "tenant_namespace_pod_controls": CONTROLS[:-1]},
    )
    assert run.ok, run.explain()
    with metal3_bmo_env.api() as api:
        admission = client.AdmissionregistrationV1Api(api)
        remaining = sorted(
            p.metadata.name
            for p in admission.list_validating_admission_policy().items
            if p.metadata.name.startswith("baremetal-tenancy-")
        )
        assert remaining == kept
        remaining = sorted(
            b.metadata.name
            for b in admission.list_validating_admission_policy_binding().items
            if b.metadata.name.startswith("baremetal-tenancy-")
        )
        assert remaining == kept
        core, rbac, net = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api), client.NetworkingV1Api(api)
        assert [b.metadata.name for b in rbac.list_namespaced_role_binding(B).items] == ROLES[:1]
        assert "baremetal-tenancy-allow-web" not in [
            p.metadata.name for p in net.list_namespaced_network_policy(B).items
        ]
        assert "host-class.baremetal.tenancy/large" not in core.read_namespace(B).metadata.labels
        # Tenant A's objects were not touched.
        assert sorted(b.metadata.name for b in rbac.list_namespaced_role_binding(A).items) == ROLES
