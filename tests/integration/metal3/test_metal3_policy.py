"""The sharing annotation ``baremetal.tenancy/host-claim-namespaces`` decides which namespaces may claim a host.

The policy is compact JSON (RE2 ``matches``, full-name match; ``withLabel``),
written here as host_share writes it.

One host_bind pass (binder identity, through ansible-playbook) over claims
from many namespaces, each claim selecting the hosts of one policy case:

- ``.*`` shares with anyone; ``n1|n2`` with n1 and n2 only (not n3, not n12);
  a refused claim stays pending while a host of its policy is still free;
- ``p-.*`` is a prefix rule: ``p-a`` may, ``xp-a`` may not (a substring
  search would accept it);
- ``withLabel: [gold]`` needs the label with any value, ``[tier=gold]`` the
  exact value; ``matches`` with ``withLabel`` needs both;
- an invalid pattern, or a value that is not JSON, shares nothing and is
  reported (result and warning, naming the host and the annotation);
- a pathological pattern (``(a+)+$`` against a 62-character name, which a
  backtracking engine would take ages on) is decided in milliseconds.

The hosts are real BareMetalHosts registered by Metal3's baremetal-operator
(``metal3_bmo_env``), created at once. BMO's CRD has no
``spec.hostClaimNamespaces`` (the API server prunes it), so a host still
shared there, the earlier releases' way, only exists where the cluster's CRD
was extended; the binder's ``legacy_policies`` report on such a host is
covered by ``tests/unit`` (binder) and host_share's migration by
``test_host_share``.
"""

from __future__ import annotations

import sys
import time

import pytest
from fixtures_metal3 import SHARING_ANNOTATION
from harness.ansible import collections_root

pytestmark = pytest.mark.real_bmo

INFRA = "pol-infra"
PATHOLOGICAL_NS = "a" * 60 + "-b"
NAMESPACES = {
    "n1": {},
    "n2": {},
    "n3": {},
    "n12": {},
    "p-a": {},
    "xp-a": {},
    "lab-gold": {"gold": "yes"},
    "lab-plain": {},
    "lab-tier-gold": {"tier": "gold"},
    "lab-tier-silver": {"tier": "silver"},
    PATHOLOGICAL_NS: {},
}
# case -> (policy, number of hosts)
CASES = {
    "any": ({"matches": ".*"}, 1),
    "n1n2": ({"matches": "n1|n2"}, 3),
    "prefix": ({"matches": "p-.*"}, 2),
    "key": ({"withLabel": ["gold"]}, 2),
    "keyvalue": ({"withLabel": ["tier=gold"]}, 2),
    "both": ({"matches": "lab-.*", "withLabel": ["tier=gold"]}, 2),
    "invalid": ({"matches": "("}, 1),
    "notjson": ("{matches: .*}", 1),
    "pathological": ({"matches": "(a+)+$"}, 1),
}
# (case, namespace, expected): claims are created in this order (oldest first)
CLAIMS = [
    ("any", "n3", "bound"),
    ("n1n2", "n3", "refused"),
    ("n1n2", "n12", "refused"),
    ("n1n2", "n1", "bound"),
    ("n1n2", "n2", "bound"),
    ("prefix", "xp-a", "refused"),
    ("prefix", "p-a", "bound"),
    ("key", "lab-plain", "refused"),
    ("key", "lab-gold", "bound"),
    ("keyvalue", "lab-tier-silver", "refused"),
    ("keyvalue", "lab-tier-gold", "bound"),
    ("both", "lab-gold", "refused"),
    ("both", "n1", "refused"),
    ("both", "lab-tier-gold", "bound"),
    ("invalid", "n1", "refused"),
    ("notjson", "n1", "refused"),
    ("pathological", PATHOLOGICAL_NS, "refused"),
]


@pytest.fixture(scope="module")
def policy_world(metal3_bmo_env):
    env = metal3_bmo_env
    env.tenant_namespace(INFRA, None)
    for namespace, labels in NAMESPACES.items():
        env.tenant_namespace(namespace, None, labels)
    index = 100
    names = []
    for case, (policy, count) in CASES.items():
        for number in range(count):
            index += 1
            names.append("pol-%s-%d" % (case, number))
            env.create_host(
                INFRA, names[-1], index=index, policy=policy, labels={"suite": "policy", "case": case}, wait=False
            )
    for number, (case, namespace, _dummy) in enumerate(CLAIMS):
        env.create_claim(
            namespace,
            "claim-%s-%02d" % (case, number),
            {"hostSelector": {"matchLabels": {"suite": "policy", "case": case}}},
        )
        time.sleep(0.01)
    env.wait_hosts(INFRA, names, state="available", timeout=420)
    yield env
    for namespace in NAMESPACES:
        env.forget_claims(namespace)
    env.delete_hosts(INFRA)


def test_namespace_policies(policy_world):
    env = policy_world
    run = env.playbook(
        "binder",
        [
            {
                "name": "bind",
                "baremetal.tenancy.host_bind": {"namespaces": sorted(NAMESPACES), "host_namespaces": [INFRA]},
            }
        ],
    )
    assert run.ok, run.explain()
    result = run.result("bind")
    by_claim = dict(((c["namespace"], c["name"]), c) for c in result["claims"])
    for number, (case, namespace, expected) in enumerate(CLAIMS):
        action = by_claim[(namespace, "claim-%s-%02d" % (case, number))]
        if expected == "bound":
            assert action["action"] == "bound", (case, namespace, action)
            assert action["host"].startswith("pol-%s-" % case)
        else:
            # refused although a host of its case is still free (checked below); the only host shared with
            # every namespace is the ".*" one, of another case: so no shared host matches the selector
            assert action["action"] == "pending", (case, namespace, action)
            assert action["reason"] == "NoMatchingHost", (case, namespace, action)
            assert action["message"] == "no host shared with namespace %s matches hostSelector" % namespace
            claim = env.claim(namespace, "claim-%s-%02d" % (case, number))
            condition = next(c for c in claim["status"]["conditions"] if c["type"] == "AssociateBMH")
            assert (condition["status"], condition["reason"]) == ("False", "NoMatchingHost")
            assert "pol-" not in condition["message"]  # never names a host
    free = dict((case, 0) for case in CASES)
    for host in env.hosts(INFRA):
        if not host["spec"].get("consumerRef"):
            free[host["metadata"]["labels"]["case"]] += 1
    for case, _namespace, expected in CLAIMS:
        if expected == "refused":
            assert free[case] > 0, case
    # the invalid pattern and the value that is no JSON are reported, in the result and as warnings,
    # each naming the host and the annotation
    problems = dict((p["host"], p["problems"]) for p in result["host_problems"])
    assert sorted(problems) == ["%s/pol-invalid-0" % INFRA, "%s/pol-notjson-0" % INFRA]
    (invalid,) = problems["%s/pol-invalid-0" % INFRA]
    assert invalid.startswith("BareMetalHost %s/pol-invalid-0: annotation %s: " % (INFRA, SHARING_ANNOTATION))
    assert "is not a valid RE2 pattern" in invalid
    (notjson,) = problems["%s/pol-notjson-0" % INFRA]
    assert notjson == (
        "BareMetalHost %s/pol-notjson-0: annotation %s: the value is not valid JSON "
        "(Expecting property name enclosed in double quotes at character 1): '{matches: .*}'"
        % (INFRA, SHARING_ANNOTATION)
    )
    assert any("pol-invalid-0" in warning and "RE2" in warning for warning in result["warnings"])
    assert notjson in result["warnings"]
    assert result["legacy_policies"] == []
    # the pathological pattern did not slow the pass down
    assert result["timings"]["plan"] < 2.0, result["timings"]


def test_pathological_pattern_is_decided_in_milliseconds():
    """The binder's own evaluation, in process: RE2 is linear where a backtracking engine is exponential."""
    sys.path.insert(0, str(collections_root()))
    from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share import (
        sharing_policy as namespace_policy,
    )

    namespace_policy.clear_cache()
    started = time.perf_counter()
    decision = namespace_policy.evaluate({"matches": "(a+)+$"}, PATHOLOGICAL_NS, {})
    elapsed = time.perf_counter() - started
    assert decision.allowed is False
    assert elapsed < 0.05, elapsed
    for pattern, namespace, allowed in (
        ("p-.*", "p-a", True),
        ("p-.*", "xp-a", False),
        ("n1|n2", "n12", False),
        ("(a+)+$", "a" * 63, True),
    ):
        assert namespace_policy.evaluate({"matches": pattern}, namespace, {}).allowed is allowed
