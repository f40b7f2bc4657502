# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Argument handling of host_bind and of the metal3 side of host_claim, host_claim_info and host_release.

Bad options must fail with one clear message BEFORE any client is built, so
nothing can change; the pure helpers that turn options into patches and
claims into results are checked here too.
"""

import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.baremetal.tenancy.plugins.module_utils.common import merge_patch as mpatch
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder import options as bind_options
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import tenant as mc
from ansible_collections.baremetal.tenancy.plugins.modules import host_bind, host_claim, host_claim_info, host_release


@pytest.fixture(autouse=True)
def no_client(monkeypatch):
    """Any attempt to reach a cluster fails the test."""

    def refuse(params):
        raise AssertionError("a Kubernetes client was built")

    monkeypatch.setattr(mc, "kube_api_client", refuse)
    monkeypatch.setattr(host_bind, "kube_api_client", refuse)


def run(module_class, args, capsys):
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exit_info:
            module_class()()
    return exit_info.value.code, json.loads(capsys.readouterr().out)


def failure(module_class, args, capsys):
    rc, out = run(module_class, args, capsys)
    assert rc == 1 and out["failed"] is True and out.get("changed", False) is False
    return out


@pytest.mark.parametrize(
    "args,message",
    [
        ({"wait": True, "wait_timeout": -1}, "option wait_timeout: must be zero or more seconds, got -1"),
        ({"resource_class": "large"}, "option resource_class: is for backend ironic"),
        (
            {"user_data": "#cloud-config"},
            "option user_data: is for backend ironic; with backend metal3 use user_data_secret",
        ),
        (
            {"file_url_allowed_prefixes": ["/var/lib/images"]},
            "option file_url_allowed_prefixes: is for backend ironic; with backend metal3 use an http or https image URL",
        ),
        (
            {"candidate_nodes": ["n1"]},
            "option candidate_nodes: is for backend ironic; with backend metal3 use host_selector",
        ),
        ({"namespace": "Not_A_Namespace"}, "option namespace: namespace name 'Not_A_Namespace' must consist of"),
        ({"name": "UPPER"}, "option name: claim name 'UPPER' must consist of"),
        (
            {"annotations": {"hostclaim.metal3.io/host": "h1"}},
            "option annotations: key 'hostclaim.metal3.io/host' is reserved",
        ),
        ({"annotations": {"bad key": "x"}}, "option annotations: key "),
    ],
)
def test_host_claim_refuses_bad_options_before_any_request(capsys, args, message):
    full = dict({"name": "web", "namespace": "tenant-a"}, **args)
    out = failure(host_claim.HostClaimModule, full, capsys)
    assert out["msg"].startswith(message), out["msg"]
    assert out["error_type"] == "InvalidInput"


@pytest.mark.parametrize(
    "module_class", [host_claim.HostClaimModule, host_claim_info.HostClaimInfoModule, host_release.HostReleaseModule]
)
def test_the_dialect_option_has_three_choices(capsys, module_class):
    out = failure(module_class, {"name": "web", "namespace": "tenant-a", "dialect": "v1"}, capsys)
    assert "value of dialect must be one of: auto, proposal, bmo" in out["msg"]


@pytest.mark.parametrize("option", ["in_namespace", "failure_domain", "custom_deploy"])
def test_bmo_only_options_are_refused_with_backend_ironic(capsys, option):
    out = failure(host_claim.HostClaimModule, {"name": "web", "backend": "ironic", option: "x"}, capsys)
    assert out["msg"].startswith("option %s: is for backend metal3" % option), out["msg"]


def test_host_claim_requires_a_namespace_with_metal3(capsys):
    out = failure(host_claim.HostClaimModule, {"name": "web"}, capsys)
    assert "namespace" in out["msg"]


def test_host_release_refuses_bad_options(capsys):
    out = failure(host_release.HostReleaseModule, {"name": "web", "namespace": "tenant-a", "wait_timeout": -5}, capsys)
    assert out["msg"] == "option wait_timeout: must be zero or more seconds, got -5"
    out = failure(
        host_release.HostReleaseModule, {"name": "web", "namespace": "tenant-a", "node_reuse": "x" * 60}, capsys
    )
    assert out["msg"].startswith("HostClaim tenant-a/web: option node_reuse: spec.nodeReuse:")


def test_host_claim_info_needs_a_namespace(capsys):
    out = failure(host_claim_info.HostClaimInfoModule, {}, capsys)
    assert out["msg"] == "option namespace: namespace or namespaces is required with backend metal3"


@pytest.mark.parametrize(
    "args,message",
    [
        ({"name": "web"}, "option name: 'web' needs exactly one namespace in namespaces, got none"),
        (
            {"name": "web", "namespaces": ["a", "b"]},
            "option name: 'web' needs exactly one namespace in namespaces, got a, b",
        ),
        ({"workers": 0}, "option workers: must be 1 or more, got 0"),
        ({"namespaces": ["Bad"]}, "option namespaces: namespace name 'Bad' must consist of"),
        ({"host_namespaces": ["-x"]}, "option host_namespaces: namespace name '-x' must consist of"),
    ],
)
def test_host_bind_refuses_bad_options_before_any_request(capsys, args, message):
    out = failure(host_bind.HostBindModule, args, capsys)
    assert out["msg"].startswith(message), out["msg"]


def test_host_bind_reports_the_pass(capsys, monkeypatch):
    report = {
        "changed": True,
        "binder_id": "b",
        "claims": [{"name": "c", "action": "bound"}],
        "swept": [],
        "errors": [],
        "host_problems": [
            {"host": "infra/h1", "problems": ["BareMetalHost infra/h1: annotation x: matches is not valid"]}
        ],
        "legacy_policies": ["infra/h2"],
        "cleaning_disabled": ["infra/h3"],
        "summary": {"bound": 1},
        "requests": {"total": 5},
        "timings": {"total": 0.1},
        "bindings": {"before": {"ns/c": None}, "after": {"ns/c": "infra/h1"}},
    }
    monkeypatch.setattr(host_bind, "kube_api_client", lambda params: object())
    monkeypatch.setattr(host_bind, "KubeIO", lambda client: None)

    class FakeBinder:
        def __init__(self, io, **kwargs):
            assert kwargs["check_mode"] is True and kwargs["namespaces"] == ["ns"]

        def run(self):
            return dict(report)

    monkeypatch.setattr(bind_options, "Binder", FakeBinder)
    warned = []
    monkeypatch.setattr(host_bind.HostBindModule, "warn", lambda self, message: warned.append(message))
    rc, out = run(
        host_bind.HostBindModule, {"namespaces": ["ns"], "_ansible_check_mode": True, "_ansible_diff": True}, capsys
    )
    assert rc == 0 and out["changed"] is True
    assert out["diff"] == {"before": {"bindings": {"ns/c": None}}, "after": {"bindings": {"ns/c": "infra/h1"}}}
    assert out["claims"] == report["claims"] and "bindings" not in out
    assert warned[0] == "BareMetalHost infra/h1: annotation x: matches is not valid"
    assert warned[1].startswith("1 BareMetalHost(s) carry spec.hostClaimNamespaces") and "(infra/h2)" in warned[1]
    assert warned[2].startswith(
        "1 BareMetalHost(s) handed to tenants have spec.automatedCleaningMode disabled (infra/h3)"
    )
    assert len(warned) == 3 and out["legacy_policies"] == ["infra/h2"] and out["cleaning_disabled"] == ["infra/h3"]


# ------------------------------------------------------------------ pure helpers


def test_spec_changes_replace_selector_and_image_and_leave_the_rest():
    existing = {
        "online": False,
        "kind": "baremetal",
        "userData": "old",
        "hostSelector": {"matchLabels": {"a": "1", "b": "2"}},
        "image": {"url": "http://x/old.img", "checksum": "c" * 32, "checksumType": "md5"},
    }
    params = {
        "online": True,
        "host_selector": {"matchLabels": {"a": "1"}, "matchExpressions": None},
        "image": {"url": "http://x/live.iso", "checksum": None, "checksum_type": "auto", "format": "live-iso"},
        "user_data_secret": None,
        "network_data_secret": "net",
        "meta_data_secret": None,
        "node_reuse": None,
    }
    changes = mc.spec_changes(params, existing)
    assert changes == {
        "online": True,
        "hostSelector": {"matchLabels": {"a": "1", "b": None}},
        "image": {"url": "http://x/live.iso", "checksum": None, "checksumType": "auto", "format": "live-iso"},
        "networkData": {"name": "net"},
    }


@pytest.mark.parametrize(
    "existing,wanted,change",
    [
        (None, "ud", {"name": "ud"}),  # the proposal's form for a new reference
        ("ud", "ud", "ud"),  # an equal reference in the plain form is left as it is (no change)
        ({"name": "ud"}, "ud", {"name": "ud"}),
        ("old", "ud", {"name": "ud"}),
        ({"name": "old"}, "ud", {"name": "ud"}),
        ({"name": "old"}, "", None),  # an empty option removes the reference
    ],
)
def test_secret_references_use_the_proposals_form(existing, wanted, change):
    existing_spec = {"userData": existing} if existing is not None else {}
    changes = mc.spec_changes({"user_data_secret": wanted}, existing_spec)
    assert changes == {"userData": change}
    assert mc.secret_ref_name(mpatch.apply_merge_patch(existing_spec, changes).get("userData")) == (wanted or None)
    assert mc.spec_changes({}, existing) == {}


def test_annotation_changes():
    assert mc.annotation_changes(
        {"annotations": {"host.metal3.io/reboot": "", "x.example.com/n": 3, "gone": None}}
    ) == {"gone": None, "host.metal3.io/reboot": "", "x.example.com/n": "3"}
    assert mc.annotation_changes({}) == {}


def claim_with(label=None, message="bound to host h1", status="True"):
    claim = {
        "metadata": {"name": "web", "namespace": "tenant-a", "labels": {}},
        "spec": {"online": True, "image": {"url": "http://x"}},
        "status": {
            "poweredOn": True,
            "bootMACAddress": "m",
            "addresses": [{"type": "InternalIP", "address": "1.2.3.4"}],
            "conditions": [
                {"type": "AssociateBMH", "status": status, "reason": "Associated", "message": message},
                {"type": "Ready", "status": "True", "reason": "Provisioned", "message": "ok"},
            ],
        },
    }
    if label:
        claim["metadata"]["labels"]["hostclaim.metal3.io/host"] = label
    return claim


def test_claim_view_shape_and_bound_host():
    view = mc.claim_view(claim_with("h1"))
    assert set(view) >= {
        "name",
        "namespace",
        "backend",
        "host",
        "online",
        "powered_on",
        "associated",
        "ready",
        "provisioning_state",
        "image",
        "addresses",
        "nics",
        "boot_mac_address",
        "conditions",
        "labels",
    }
    assert (view["host"], view["associated"], view["ready"], view["provisioning_state"]) == (
        "h1",
        True,
        True,
        "provisioned",
    )
    assert view["backend"] == "metal3" and view["powered_on"] is True and view["boot_mac_address"] == "m"
    # a label the binder's status does not confirm is not reported
    assert mc.claim_view(claim_with("h2"))["host"] is None
    assert mc.claim_view(claim_with("h1", status="False"))["host"] is None
    assert mc.claim_view(claim_with(None))["host"] is None
    unbound = mc.claim_view({"metadata": {"name": "x", "namespace": "n"}})
    assert unbound["associated"] is False and unbound["provisioning_state"] is None and unbound["conditions"] == []


def test_waiting_for_associated_needs_a_host_every_reader_reports():
    """wait_for=associated returns a claim whose host is reported: the binder's record and the label agree."""
    recorded = {
        "status": {"conditions": [{"type": "AssociateBMH", "status": "True", "message": "bound to host h1"}]},
        "metadata": {"labels": {"hostclaim.metal3.io/host": "h1"}},
    }
    assert mc.claim_is_bound(recorded) and mc.claim_view(recorded)["host"] == "h1"
    forged = dict(recorded, metadata={"labels": {"hostclaim.metal3.io/host": "h2"}})
    assert not mc.claim_is_bound(forged) and mc.claim_view(forged)["host"] is None
    assert not mc.claim_is_bound(None)


def test_the_module_view_and_the_inventory_record_are_one_record():
    """host_claim_info's claim and the claimed_hosts inventory's record come from one builder (claim_view)."""
    from ansible_collections.baremetal.tenancy.plugins.module_utils.common.claim_record import RECORD_KEYS
    from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import view as cv

    claim = claim_with("h1")
    claim["metadata"]["annotations"] = {
        "export.hostclaim.metal3.io/rack": "r1",
        "kubectl.kubernetes.io/last-applied-configuration": '{"spec": {"bmc": "redfish://10.0.0.1"}}',
    }
    view = mc.claim_view(claim)
    assert view == cv.metal3_record(claim)
    assert set(view) == set(RECORD_KEYS) | set(cv.METAL3_KEYS)
    assert view["annotations"] == {"export.hostclaim.metal3.io/rack": "r1"}
    # an unbound claim has a view (host null) but is no inventory host
    assert mc.claim_view(claim_with("h2"))["host"] is None and cv.metal3_record(claim_with("h2")) is None


def test_the_credentials_option_sets_and_removes_spec_credentials():
    assert mc.spec_changes({"credentials": "hosts-kubeconfig"}, {})["credentials"] == "hosts-kubeconfig"
    assert mc.spec_changes({"credentials": ""}, {"credentials": "hosts-kubeconfig"}) == {"credentials": None}
    assert "credentials" not in mc.spec_changes({}, {"credentials": "hosts-kubeconfig"})


def test_the_credentials_option_is_refused_on_baremetal_operators_dialect_and_with_ironic(capsys):
    from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput

    with pytest.raises(InvalidInput) as caught:
        mc.refuse_what_the_dialect_lacks("bmo", {"credentials": "hosts-kubeconfig"}, "web", "tenant-a")
    assert "credentials" in caught.value.message and "HostClaim tenant-a/web" in caught.value.message
    mc.refuse_what_the_dialect_lacks("proposal", {"credentials": "hosts-kubeconfig"}, "web", "tenant-a")
    out = failure(host_claim.HostClaimModule, {"name": "web", "backend": "ironic", "credentials": "k"}, capsys)
    assert out["msg"].startswith("option credentials: is for backend metal3"), out["msg"]
