# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.common import tenant_rules as tr
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput

QUOTA = ("hostclaims", "secrets")
PSA = ("enforce", "warn")


def refused(tenants):
    with pytest.raises(InvalidInput) as info:
        tr.check_tenants(tenants, QUOTA, PSA)
    return info.value.message


def test_good_tenants_pass_and_their_names_come_back():
    tenants = [
        {
            "name": "team-a",
            "host_classes": ["small", "Large_1"],
            "network_allows": [{"name": "web"}],
            "quota": {"hostclaims": 2},
        },
        {"name": "b", "pod_security": {"enforce": "privileged"}},
    ]
    assert tr.check_tenants(tenants, QUOTA, PSA) == ["team-a", "b"]


@pytest.mark.parametrize(
    "tenants, expected",
    [
        ([{"name": "Bad_Name"}], "tenants[0] (Bad_Name): tenant name 'Bad_Name' must consist of lower case"),
        ([{}], "tenants[0]: tenant name None must be a non-empty string"),
        ([{"name": "a" * 64}], "tenant name %r must be at most 63 characters" % ("a" * 64)),
        (
            [{"name": "ok"}, {"name": "c", "host_classes": ["bad class"]}],
            "tenants[1] (c): host class value 'bad class'",
        ),
        ([{"name": "c", "host_classes": [""]}], "tenants[0] (c): host class must not be empty"),
        ([{"name": "c", "host_classes": "small"}], "tenants[0] (c): host_classes must be a list"),
        ([{"name": "c", "network_allows": [{"name": "Web"}]}], "tenants[0] (c): network allow name 'Web'"),
        ([{"name": "c", "network_allows": [{"name": "w" * 33}]}], "must be at most 32 characters"),
        ([{"name": "c", "network_allows": ["web"]}], "network_allows entries must be mappings"),
        (
            [{"name": "c", "quota": {"hostclaim": 3}}],
            "tenants[0] (c): quota has unknown key(s) hostclaim (known: hostclaims, secrets)",
        ),
        ([{"name": "c", "pod_security": {"audit": "x"}}], "tenants[0] (c): pod_security has unknown key(s) audit"),
        ([{"name": "c", "quota": 3}], "tenants[0] (c): quota must be a mapping"),
        ([{"name": "c"}, {"name": "c"}], "tenants[1] (c): tenant c is listed twice (first as tenants[0])"),
        (["c"], "tenants[0]: must be a mapping"),
    ],
)
def test_a_bad_tenant_is_one_error_naming_it_and_the_cause(tenants, expected):
    message = refused(tenants)
    assert expected in message, message


def test_tenants_must_be_a_list():
    assert refused({"name": "a"}) == "option tenants: must be a list of tenants"


@pytest.mark.parametrize(
    "prefix, ok",
    [
        ("host-class.baremetal.tenancy/", True),
        ("example.com/", True),
        ("x/", True),
        ("Example.com/", False),
        ("a", False),
        ("/", False),
        ("a.b", False),
        (3, False),
    ],
)
def test_label_prefix(prefix, ok):
    assert (tr.label_prefix_problem(prefix) is None) is ok


def test_check_choices():
    assert tr.check_choices(["Deny"], tr.POLICY_ACTIONS, "policy_actions") == ["Deny"]
    with pytest.raises(InvalidInput, match=r"option policy_actions: unknown value.s. Block"):
        tr.check_choices(["Deny", "Block"], tr.POLICY_ACTIONS, "policy_actions")


def test_check_id_ranges_accepts_ranges_within_the_bounds():
    ranges = [{"min": 1024, "max": 65535}, {"min": 80, "max": 80}]
    assert tr.check_id_ranges(ranges, "allowed_ports", "port") is ranges
    assert tr.check_id_ranges([{"min": 0, "max": 2147483647}], "g", "group")


@pytest.mark.parametrize(
    ("ranges", "kind", "message"),
    [
        ([], "port", r"option p: must be a non-empty list"),
        ({"min": 1, "max": 2}, "port", r"option p: must be a non-empty list"),
        (["80"], "port", r"option p\[0\]: must be a dict with exactly the keys min and max"),
        ([{"min": 1}], "port", r"option p\[0\]: must be a dict with exactly the keys"),
        ([{"min": 1, "max": 2, "step": 1}], "port", r"option p\[0\]: must be a dict with exactly the keys"),
        ([{"min": "1", "max": 2}], "port", r"option p\[0\]: min and max must be integers"),
        ([{"min": True, "max": 2}], "port", r"option p\[0\]: min and max must be integers"),
        (
            [{"min": 1, "max": 2}, {"min": 9, "max": 8}],
            "port",
            r"option p\[1\]: needs 1 <= min <= max <= 65535, got min 9, max 8",
        ),
        ([{"min": 0, "max": 80}], "port", r"option p\[0\]: needs 1 <= min"),
        ([{"min": 1, "max": 65536}], "port", r"needs 1 <= min <= max <= 65535"),
        ([{"min": -1, "max": 5}], "group", r"needs 0 <= min <= max <= 2147483647"),
        ([{"min": 1, "max": 2147483648}], "group", r"needs 0 <= min"),
    ],
)
def test_check_id_ranges_refuses_bad_ranges(ranges, kind, message):
    with pytest.raises(InvalidInput, match=message):
        tr.check_id_ranges(ranges, "p", kind)


# The role's former Jinja patterns, kept here as the reference the rules must agree with.
TENANT_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
CLASS_RE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
ALLOW_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$")
TEXT = st.text(alphabet="abAB09-_./ z", max_size=70)


@settings(max_examples=500)
@given(TEXT)
def test_rules_agree_with_the_former_patterns(text):
    assert (tr.tenant_name_problem(text) is None) == bool(TENANT_RE.fullmatch(text))
    assert (tr.host_class_problem(text) is None) == bool(CLASS_RE.fullmatch(text))
    assert (tr.network_allow_name_problem(text) is None) == bool(ALLOW_RE.fullmatch(text))


@pytest.mark.parametrize("name", [*tr.RESERVED_NAMESPACES, "kube-anything", "openshift-config"])
def test_a_namespace_of_kubernetes_or_of_the_infrastructure_is_no_tenant(name):
    message = refused([{"name": "ok"}, {"name": name}])
    assert message.startswith("tenants[1] (%s): tenant name %r is a reserved namespace (" % (name, name)), message


@given(st.sampled_from(("kube-", "openshift-")), st.from_regex(r"[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?", fullmatch=True))
@settings(max_examples=50, deadline=None)
def test_every_name_with_a_reserved_prefix_is_refused(prefix, rest):
    assert "the prefix %s is reserved" % prefix in tr.reserved_namespace_problem(prefix + rest)


@pytest.mark.parametrize(
    "name", ["team-a", "kube", "kubesystem", "defaults", "metal3-team", "my-flux-system", "a-kube-b"]
)
def test_names_near_the_reserved_ones_are_tenants(name):
    assert tr.check_tenants([{"name": name}]) == [name]


def test_an_owner_reserves_more_namespaces():
    with pytest.raises(InvalidInput) as info:
        tr.check_tenants([{"name": "team-a"}, {"name": "bmh-infra"}], reserved=["bmh-infra"])
    assert info.value.message == (
        "tenants[1] (bmh-infra): tenant name 'bmh-infra' is a reserved namespace (listed in reserved_namespaces)"
    )
    assert tr.check_tenants([{"name": "team-a"}], reserved=["bmh-infra"]) == ["team-a"]


@pytest.mark.parametrize(
    "reserved, expected",
    [
        ("infra", "option reserved_namespaces: must be a list of namespace names"),
        (["infra", "Bad_NS"], "option reserved_namespaces: entry 1 ('Bad_NS') must consist of lower case"),
        ([""], "option reserved_namespaces: entry 0 ('') must be a non-empty string"),
    ],
)
def test_reserved_namespaces_must_be_namespace_names(reserved, expected):
    with pytest.raises(InvalidInput) as info:
        tr.check_reserved(reserved)
    assert info.value.message.startswith(expected), info.value.message
