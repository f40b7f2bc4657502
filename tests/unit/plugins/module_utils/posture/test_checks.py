# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The tenancy posture checks (posture/checks.py): each deviation is found, named by its object, and nothing that
follows the model is reported; malformed objects never raise."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share import sharing_policy as sp
from ansible_collections.baremetal.tenancy.plugins.module_utils.posture import checks as c

NS = "flux-system"
LOCKED = {
    c.KUSTOMIZE: ["--no-cross-namespace-refs=true", "--default-service-account=default", "--no-remote-bases=true"],
    c.HELM: ["--no-cross-namespace-refs=true", "--default-service-account=default"],
}


def deployment(name, args, namespace=NS, container="manager", extra_containers=()):
    containers = [{"name": container, "args": args}, *list(extra_containers)]
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"template": {"spec": {"containers": containers}}},
    }


def objects_of(deviations):
    return sorted((d.check, d.kind, d.namespace, d.name) for d in deviations)


# -- flags ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args,expected",
    [
        (["--a=1", "--b"], {"--a": "1", "--b": "true"}),
        (["--a=1", "--a=2"], {"--a": "2"}),
        (["-v", "value", "--x="], {"--x": ""}),
        (None, {}),
        ("--a=1", {}),
        ([1, None, "--ok=yes"], {"--ok": "yes"}),
    ],
)
def test_flags_are_parsed_as_pflag_reads_them(args, expected):
    assert c.parse_flags(args) == expected


def test_a_locked_down_controller_has_no_problem():
    for controller, args in LOCKED.items():
        assert c.lockdown_problems(controller, args) == []
    assert c.lockdown_problems(c.SOURCE, []) == []


@pytest.mark.parametrize("flag", LOCKED[c.KUSTOMIZE])
def test_each_missing_lockdown_flag_of_kustomize_controller_is_named(flag):
    args = [a for a in LOCKED[c.KUSTOMIZE] if a != flag]
    problems = c.lockdown_problems(c.KUSTOMIZE, args)
    assert problems == ["%s is not set" % flag.partition("=")[0]]


@pytest.mark.parametrize(
    "arg,problem",
    [
        ("--no-cross-namespace-refs=false", "--no-cross-namespace-refs is 'false', not 'true'"),
        ("--default-service-account=", "--default-service-account is not set"),
    ],
)
def test_a_lockdown_flag_turned_off_later_is_a_problem(arg, problem):
    assert c.lockdown_problems(c.HELM, LOCKED[c.HELM] + [arg]) == [problem]


def test_a_bare_boolean_flag_counts_and_case_does_not_matter():
    args = ["--no-cross-namespace-refs", "--default-service-account=x", "--no-remote-bases=TRUE"]
    assert c.lockdown_problems(c.KUSTOMIZE, args) == []


def test_flux_deviations_name_the_deployment_and_the_flag():
    deployments = [
        deployment(c.KUSTOMIZE, LOCKED[c.KUSTOMIZE][:2]),
        deployment(c.HELM, LOCKED[c.HELM]),
        deployment(c.HELM, [], namespace="elsewhere"),
    ]
    out = c.flux_controller_deviations(deployments, NS)
    assert out == [c.Deviation("flux_lockdown", "Deployment", NS, c.KUSTOMIZE, "--no-remote-bases is not set")]
    assert c.as_dict(out[0])["object"] == "Deployment flux-system/kustomize-controller"


def test_a_missing_controller_and_a_deployment_without_its_container_are_deviations():
    other = deployment(c.HELM, LOCKED[c.HELM], container="a", extra_containers=[{"name": "b"}])
    out = c.flux_controller_deviations([other], NS)
    assert [(d.name, d.cause) for d in out] == [
        (c.KUSTOMIZE, "the Flux controller is not installed"),
        (c.HELM, "no controller container"),
    ]


def test_the_container_is_found_by_the_controller_name_or_as_the_only_one():
    by_name = deployment(c.HELM, ["--x"], container=c.HELM, extra_containers=[{"name": "sidecar"}])
    assert c.controller_container(by_name, c.HELM)["args"] == ["--x"]
    only = deployment(c.HELM, ["--y"], container="whatever")
    assert c.controller_container(only, c.HELM)["args"] == ["--y"]
    assert c.controller_container({"spec": None}, c.HELM) is None


# -- tenants' Flux objects ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url,allowed,expected",
    [
        ("https://git.example.com/team-a/fleet.git", ["https://git.example.com/team-a"], True),
        ("https://git.example.com/team-a", ["https://git.example.com/team-a"], True),
        ("https://git.example.com/team-ab/x.git", ["https://git.example.com/team-a"], False),
        ("https://git.example.com/team-a.evil.io/x", ["https://git.example.com/team-a"], False),
        ("https://git.example.com.evil.io/x", ["https://git.example.com"], False),
        ("https://git.example.com/x", ["https://git.example.com/"], True),
        ("https://git.example.com/x", [], False),
        ("https://git.example.com/x", [""], False),
        ("", ["https://git.example.com"], False),
        (None, ["https://git.example.com"], False),
        ("oci://ghcr.io/team-a/charts/web", ["oci://ghcr.io/team-a"], True),
    ],
)
def test_a_source_url_is_allowed_only_equal_to_or_under_an_entry(url, allowed, expected):
    assert c.url_allowed(url, allowed) is expected


def flux_object(kind, name, namespace, **spec):
    return {"kind": kind, "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def test_tenant_reconcilers_without_a_service_account_or_with_a_foreign_source_are_reported():
    objects = [
        flux_object(
            "Kustomization", "good", "t", serviceAccountName="r", sourceRef={"kind": "GitRepository", "name": "s"}
        ),
        flux_object("Kustomization", "same-ns", "t", serviceAccountName="r", sourceRef={"name": "s", "namespace": "t"}),
        flux_object("Kustomization", "no-sa", "t", sourceRef={"kind": "GitRepository", "name": "s"}),
        flux_object(
            "Kustomization",
            "cross",
            "t",
            serviceAccountName="r",
            sourceRef={"kind": "GitRepository", "name": "s", "namespace": "flux-system"},
        ),
        flux_object(
            "HelmRelease",
            "chart",
            "t",
            chart={"spec": {"sourceRef": {"kind": "HelmRepository", "name": "h", "namespace": "o"}}},
        ),
        flux_object(
            "HelmRelease",
            "ref",
            "t",
            serviceAccountName="r",
            chartRef={"kind": "OCIRepository", "name": "o", "namespace": "o"},
        ),
        flux_object("Kustomization", "not-a-tenant", "platform"),
        {"kind": "HelmRelease", "metadata": {"name": "broken", "namespace": "t"}, "spec": "nonsense"},
    ]
    out = c.reconciler_deviations(objects, ["t"])
    assert objects_of(out) == [
        ("tenant_cross_namespace_source", "HelmRelease", "t", "chart"),
        ("tenant_cross_namespace_source", "HelmRelease", "t", "ref"),
        ("tenant_cross_namespace_source", "Kustomization", "t", "cross"),
        ("tenant_service_account", "HelmRelease", "t", "broken"),
        ("tenant_service_account", "HelmRelease", "t", "chart"),
        ("tenant_service_account", "Kustomization", "t", "no-sa"),
    ]
    cross = next(d for d in out if d.name == "cross")
    assert "spec.sourceRef" in cross.cause and "flux-system" in cross.cause


def test_a_named_service_account_must_be_the_expected_one_when_given():
    objects = [flux_object("Kustomization", "k", "t", serviceAccountName="other")]
    assert c.reconciler_deviations(objects, ["t"]) == []
    out = c.reconciler_deviations(objects, ["t"], service_account="gitops-reconciler")
    assert [d.cause for d in out] == ["spec.serviceAccountName is 'other', not 'gitops-reconciler'"]


def test_tenant_sources_outside_the_allowed_urls_are_reported_with_per_tenant_additions():
    sources = [
        flux_object("GitRepository", "ok", "t", url="https://git.example.com/all/x.git"),
        flux_object("HelmRepository", "own", "t", url="https://charts.example.com/t/index"),
        flux_object("OCIRepository", "bad", "t", url="oci://evil.example.com/x"),
        flux_object("GitRepository", "nourl", "t"),
        flux_object("GitRepository", "own-elsewhere", "u", url="https://charts.example.com/t/index"),
        flux_object("GitRepository", "platform", "flux-system", url="https://anything"),
    ]
    out = c.source_deviations(
        sources, ["t", "u"], ["https://git.example.com/all"], {"t": ["https://charts.example.com/t"]}
    )
    assert objects_of(out) == [
        ("tenant_source_url", "GitRepository", "t", "nourl"),
        ("tenant_source_url", "GitRepository", "u", "own-elsewhere"),
        ("tenant_source_url", "OCIRepository", "t", "bad"),
    ]


# -- tenant namespaces ---------------------------------------------------------------------------------------

LABEL = "baremetal.tenancy/tenant"


def namespace(name, **labels):
    return {"kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def in_ns(kind, name, ns, spec=None):
    return {"kind": kind, "metadata": {"name": name, "namespace": ns}, "spec": spec or {}}


DENY = {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}


def binding(name, policy, selector="absent"):
    spec = {"policyName": policy}
    if selector != "absent":
        spec["matchResources"] = {"namespaceSelector": selector} if selector is not None else None
    return {"metadata": {"name": name}, "spec": spec}


def test_tenant_namespaces_are_those_with_the_label_sorted():
    found = c.tenant_namespaces([namespace("b", **{LABEL: "b"}), namespace("x"), namespace("a", **{LABEL: "a"})], LABEL)
    assert [n["metadata"]["name"] for n in found] == ["a", "b"]


@pytest.mark.parametrize(
    "spec,expected",
    [
        (DENY, True),
        ({"podSelector": {"matchLabels": {}}, "policyTypes": ["Egress", "Ingress"]}, True),
        ({"podSelector": {}, "policyTypes": ["Ingress"]}, False),
        ({"podSelector": {"matchLabels": {"a": "b"}}, "policyTypes": ["Ingress", "Egress"]}, False),
        ({"podSelector": {}, "policyTypes": ["Ingress", "Egress"], "egress": [{}]}, False),
        ({"policyTypes": ["Ingress", "Egress"]}, False),
        ({"podSelector": "all", "policyTypes": ["Ingress", "Egress"]}, False),
    ],
)
def test_default_deny_is_every_pod_both_directions_no_rule(spec, expected):
    assert c.is_default_deny({"spec": spec}) is expected


@pytest.mark.parametrize(
    "selector,labels,expected",
    [
        ("absent", {}, True),
        ({"matchExpressions": [{"key": LABEL, "operator": "Exists"}]}, {LABEL: "a"}, True),
        ({"matchExpressions": [{"key": LABEL, "operator": "Exists"}]}, {}, False),
        ({"matchLabels": {"x": "y"}}, {"x": "y"}, True),
        ({"matchLabels": {"x": "y"}}, {"x": "z"}, False),
        ({"matchExpressions": [{"key": "x", "operator": "Bogus"}]}, {"x": "y"}, False),
        (None, {}, True),
    ],
)
def test_a_binding_covers_the_namespaces_its_selector_selects(selector, labels, expected):
    ns = {"metadata": {"name": "n", "labels": labels}}
    assert c.binding_covers(binding("b", "p", selector), ns) is expected


def test_namespace_deviations_find_each_missing_control_by_namespace():
    good = namespace("good", **{LABEL: "good", c.POD_SECURITY_ENFORCE: "restricted"})
    bare = namespace("bare", **{LABEL: "bare"})
    privileged = namespace("priv", **{LABEL: "priv", c.POD_SECURITY_ENFORCE: "privileged"})
    quotas = [in_ns("ResourceQuota", "q", "good"), in_ns("ResourceQuota", "q", "priv")]
    netpols = [
        in_ns("NetworkPolicy", "deny", "good", DENY),
        in_ns("NetworkPolicy", "allow", "priv", {"podSelector": {}}),
    ]
    policies = [{"metadata": {"name": "p1"}}]
    bindings = [
        binding("b1", "p1", {"matchLabels": {LABEL: "good"}}),
        binding("b2", "p1", {"matchLabels": {LABEL: "priv"}}),
    ]
    out = c.namespace_deviations([good, bare, privileged], quotas, netpols, policies, bindings, ["p1", "gone"])
    assert objects_of(out) == [
        ("namespace_admission_binding", "Namespace", None, "bare"),
        ("namespace_admission_binding", "ValidatingAdmissionPolicy", None, "gone"),
        ("namespace_network_policy", "Namespace", None, "bare"),
        ("namespace_network_policy", "Namespace", None, "priv"),
        ("namespace_pod_security", "Namespace", None, "bare"),
        ("namespace_pod_security", "Namespace", None, "priv"),
        ("namespace_quota", "Namespace", None, "bare"),
    ]
    causes = {(d.check, d.name): d.cause for d in out}
    assert "is not set" in causes[("namespace_pod_security", "bare")]
    assert "'privileged'" in causes[("namespace_pod_security", "priv")]
    assert "p1" in causes[("namespace_admission_binding", "bare")]


def test_a_binding_of_another_policy_does_not_count():
    ns = namespace("n", **{LABEL: "n", c.POD_SECURITY_ENFORCE: "baseline"})
    out = c.namespace_deviations(
        [ns],
        [in_ns("ResourceQuota", "q", "n")],
        [in_ns("NetworkPolicy", "d", "n", DENY)],
        [{"metadata": {"name": "p1"}}, {"metadata": {"name": "p2"}}],
        [binding("b", "p2")],
        ["p1"],
    )
    assert objects_of(out) == [("namespace_admission_binding", "Namespace", None, "n")]


# -- Metal3 -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pattern,expected",
    [
        ("^(?:team-.*)$", True),
        ("^team-a$", True),
        ("^(a|b)$", True),
        ("^[a|b]$", True),
        ("^a\\|b$", True),
        ("team", False),
        ("^team", False),
        ("team$", False),
        ("^a$|^b$", False),
        ("^a|b$", False),
        ("^a\\$", False),
        ("^a\\\\$", True),
        ("^", False),
        ("", False),
        (None, False),
        (42, False),
    ],
)
def test_an_anchored_pattern_is_caret_body_dollar_without_top_level_alternation(pattern, expected):
    assert c.is_anchored(pattern) is expected


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet="ab|()^$.*", max_size=8),
    st.lists(st.text(alphabet="ab-", max_size=5), min_size=1, max_size=5),
)
def test_an_anchored_pattern_searched_unanchored_matches_only_whole_names(pattern, names):
    """The property BMO relies on: whatever is_anchored accepts, an unanchored search admits only full matches."""
    try:
        compiled = re.compile(pattern)
    except re.error:
        return
    if not c.is_anchored(pattern):
        return
    for name in names:
        assert (compiled.search(name) is not None) == (compiled.fullmatch(name) is not None), (pattern, name)


def test_unanchored_deploy_policies_are_reported_by_policy():
    policies = [
        in_ns("HostDeployPolicy", "loose", "infra", {"hostClaimNamespaces": {"nameMatches": "team"}}),
        in_ns("HostDeployPolicy", "tight", "infra", {"hostClaimNamespaces": {"nameMatches": "^(?:team-.*)$"}}),
        in_ns("HostDeployPolicy", "names", "infra", {"hostClaimNamespaces": {"names": ["a"]}}),
        in_ns("HostDeployPolicy", "empty", "infra", {}),
        in_ns("HostDeployPolicy", "odd", "infra", {"hostClaimNamespaces": "x"}),
    ]
    out = c.deploy_policy_deviations(policies)
    assert objects_of(out) == [("deploy_policy_anchoring", "HostDeployPolicy", "infra", "loose")]
    assert "'team'" in out[0].cause


def host(name, ns, annotation=None):
    meta = {"name": name, "namespace": ns}
    if annotation is not None:
        meta["annotations"] = {c.SHARING_ANNOTATION: annotation}
    return {"metadata": meta, "spec": {}}


def test_hosts_without_a_valid_sharing_policy_are_reported():
    hosts = [
        host("shared", "a", '{"matches":"team-.*"}'),
        host("invalid", "a", '{"matches":"("}'),
        host("bare", "a"),
        host("by-policy", "b"),
        host("policy-without-constraints", "c"),
    ]
    policies = [
        in_ns("HostDeployPolicy", "p", "b", {"hostClaimNamespaces": {"names": ["x"]}}),
        in_ns("HostDeployPolicy", "p", "c", {}),
    ]
    out = c.host_deviations(hosts, policies, sp.policy_problems)
    assert objects_of(out) == [
        ("host_sharing", "BareMetalHost", "a", "bare"),
        ("host_sharing", "BareMetalHost", "a", "invalid"),
        ("host_sharing", "BareMetalHost", "c", "policy-without-constraints"),
    ]
    assert "invalid" in next(d for d in out if d.name == "invalid").cause


# -- the report ------------------------------------------------------------------------------------------


def test_the_report_orders_by_check_and_counts_every_check():
    deviations = [
        c.Deviation("host_sharing", "BareMetalHost", "a", "h", "x"),
        c.Deviation("flux_lockdown", "Deployment", NS, c.KUSTOMIZE, "y"),
        c.Deviation("namespace_quota", "Namespace", None, "t", "z"),
    ]
    out = c.report(deviations)
    assert [d["check"] for d in out["deviations"]] == ["flux_lockdown", "namespace_quota", "host_sharing"]
    assert out["ok"] is False
    assert set(out["counts"]) == set(c.CHECKS)
    assert out["counts"]["flux_lockdown"] == 1 and out["counts"]["tenant_source_url"] == 0
    assert out["deviations"][1]["object"] == "Namespace t"
    assert c.report([]) == {"deviations": [], "counts": dict.fromkeys(c.CHECKS, 0), "ok": True}


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.text(max_size=4) | st.integers(),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from(
                    [
                        "metadata",
                        "spec",
                        "name",
                        "namespace",
                        "args",
                        "template",
                        "containers",
                        "url",
                        "sourceRef",
                        "hostClaimNamespaces",
                        "nameMatches",
                        "labels",
                        "annotations",
                    ]
                ),
                inner,
                max_size=4,
            )
        ),
        max_leaves=12,
    )
)
def test_no_check_raises_on_malformed_objects(junk):
    """Whatever the API hands back, a check reports or passes; it never raises."""
    items = [junk] if isinstance(junk, dict) else []
    c.flux_controller_deviations(items, NS)
    c.reconciler_deviations(items, ["t", None])
    c.source_deviations(items, ["t", None], ["https://x"])
    c.deploy_policy_deviations(items)
    c.host_deviations(items, items, lambda h: ["bad"])
    c.namespace_deviations(c.tenant_namespaces(items, LABEL) + items, items, items, items, items, ["p"])
