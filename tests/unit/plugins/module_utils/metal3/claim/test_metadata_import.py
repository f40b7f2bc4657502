# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Host -> claim metadata (metadata_import): labels and exported annotations imported and tracked; reserved or sensitive ones never."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.common import merge_patch as mpatch
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3 import api as m3api
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import bmc_data, downward, metadata_import
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.metal3_objects import (
    BMC_ADDRESS,
    BMC_IP,
    BMC_PASSWORD,
    BMC_SECRET,
    make_host,
    prune_empty,
)


def test_labels_are_imported_and_tracked():
    host_labels = {"infra-kind": "medium", "example.com/rack": "r1", "topology.kubernetes.io/zone": "z1"}
    result = metadata_import.import_metadata({"labels": {"app": "web"}}, {"labels": host_labels})
    assert result["labels"]["set"] == {
        "infra-kind": "medium",
        "example.com/rack": "r1",
        "topology.kubernetes.io/zone": "z1",
    }
    assert result["labels"]["remove"] == []
    tracked = json.loads(result["annotations"]["set"][m3api.IMPORTED_LABELS])
    assert tracked == ["example.com/rack", "infra-kind", "topology.kubernetes.io/zone"]
    assert result["patch"]["metadata"]["labels"] == result["labels"]["set"]
    assert m3api.IMPORTED_ANNOTATIONS not in result["annotations"]["set"]


@pytest.mark.parametrize(
    "key,value",
    [
        ("infrastructure.cluster.x-k8s.io/node-reuse", "tenant-b.md-0"),
        ("cluster.x-k8s.io/cluster-name", "tenant-b-cluster"),
        ("baremetalhost.metal3.io/detached", ""),
        ("metal3.io/uuid", "x"),
        ("hostclaim.metal3.io/host", "h9"),
        ("hostclaim.metal3.io/imported-labels", ""),
        ("host.metal3.io/reboot", ""),
        ("kubernetes.io/hostname", "n1"),
        ("node-role.kubernetes.io/master", ""),
        ("machine.openshift.io/zone", "z"),
        ("bmc-address", "10.1.2.3"),
        ("example.com/bmc", "x"),
        ("rack", "ipmi-10.1.2.3"),
        ("mgmt", "idrac-r12"),
        ("vendor", "ilo5"),
        ("example.com/credentials", "x"),
        ("password", "x"),
        ("x", "redfish"),
        ("Bad Key", "x"),
    ],
)
def test_sensitive_or_reserved_labels_are_not_imported(key, value):
    result = metadata_import.import_metadata({}, {"labels": {key: value}})
    assert result["labels"]["set"] == {} and result["patch"] == {}


def test_annotations_are_imported_only_from_the_allow_list():
    host_annotations = {
        "export.hostclaim.metal3.io/rack-position": "u12",
        "export.hostclaim.metal3.io/notes": "see https://wiki.example.com/h1",
        "kubectl.kubernetes.io/last-applied-configuration": json.dumps({"spec": {"bmc": {"address": BMC_ADDRESS}}}),
        "example.com/owner": "team-a",
        "team": "a",
        "baremetalhost.metal3.io/status": '{"x": 1}',
        "inspect.metal3.io/hardwaredetails": "{}",
    }
    result = metadata_import.import_metadata({}, {"annotations": host_annotations})
    imported = dict((k, v) for k, v in result["annotations"]["set"].items() if not k.startswith("hostclaim.metal3.io/"))
    assert imported == {
        "export.hostclaim.metal3.io/rack-position": "u12",
        "export.hostclaim.metal3.io/notes": "see https://wiki.example.com/h1",
    }
    assert json.loads(result["annotations"]["set"][m3api.IMPORTED_ANNOTATIONS]) == sorted(imported)


@pytest.mark.parametrize(
    "value",
    [
        BMC_ADDRESS,
        "ipmi://10.1.2.3",
        "idrac-virtualmedia://10.1.2.3/redfish/v1/Systems/1",
        "https://admin:pw@10.1.2.3/",
        "console at ilo4-host",
        "the BMC is 10.1.2.3",
        "password: x",
        "libvirt://host",
        "x" * (metadata_import.MAX_IMPORTED_VALUE + 1),
        "token abc",
        "see secret h1-bmc",
    ],
)
def test_sensitive_annotation_values_are_not_imported(value):
    result = metadata_import.import_metadata({}, {"annotations": {"export.hostclaim.metal3.io/notes": value}})
    assert result["patch"] == {}


def test_other_export_domains_can_be_configured():
    host_meta = {"annotations": {"example.com/owner": "team-a", "export.hostclaim.metal3.io/x": "y"}}
    result = metadata_import.import_metadata({}, host_meta, annotation_domains=("example.com",))
    assert result["annotations"]["set"]["example.com/owner"] == "team-a"
    assert "export.hostclaim.metal3.io/x" not in result["annotations"]["set"]


def test_the_sharing_policy_is_never_imported_even_from_an_allowed_domain():
    host_meta = {"annotations": {m3api.SHARING_ANNOTATION: '{"withLabel":["team=b"]}', "baremetal.tenancy/x": "y"}}
    result = metadata_import.import_metadata({}, host_meta, annotation_domains=("baremetal.tenancy",))
    assert result["annotations"]["set"]["baremetal.tenancy/x"] == "y"
    assert m3api.SHARING_ANNOTATION not in result["annotations"]["set"]
    assert m3api.SHARING_ANNOTATION not in json.dumps(result["patch"])


def test_vanished_keys_are_removed():
    first = metadata_import.import_metadata(
        {}, {"labels": {"a": "1", "b": "2"}, "annotations": {"export.hostclaim.metal3.io/n": "x"}}
    )
    claim_meta = mpatch.apply_merge_patch({"labels": {"app": "web"}}, first["patch"]["metadata"])
    second = metadata_import.import_metadata(claim_meta, {"labels": {"a": "1"}})
    assert second["labels"] == {"set": {}, "remove": ["b"]}
    assert second["annotations"]["remove"] == sorted([m3api.IMPORTED_ANNOTATIONS, "export.hostclaim.metal3.io/n"])
    assert second["annotations"]["set"] == {m3api.IMPORTED_LABELS: '["a"]'}
    claim_meta = mpatch.apply_merge_patch(claim_meta, second["patch"]["metadata"])
    assert claim_meta["labels"] == {"app": "web", "a": "1"}
    assert claim_meta["annotations"] == {m3api.IMPORTED_LABELS: '["a"]'}


def test_unbinding_removes_every_import():
    first = metadata_import.import_metadata(
        {}, {"labels": {"a": "1"}, "annotations": {"export.hostclaim.metal3.io/n": "x"}}
    )
    claim_meta = mpatch.apply_merge_patch({"labels": {"app": "web"}}, first["patch"]["metadata"])
    claim_meta = mpatch.apply_merge_patch(
        claim_meta, metadata_import.import_metadata(claim_meta, None)["patch"]["metadata"]
    )
    assert prune_empty(claim_meta) == {"labels": {"app": "web"}}


def test_value_that_became_sensitive_is_removed():
    first = metadata_import.import_metadata({}, {"labels": {"rack": "r1"}})
    claim_meta = mpatch.apply_merge_patch({}, first["patch"]["metadata"])
    second = metadata_import.import_metadata(claim_meta, {"labels": {"rack": "bmc-r1"}})
    assert second["labels"]["remove"] == ["rack"]


def test_tampered_imported_values_are_restored():
    first = metadata_import.import_metadata({}, {"labels": {"infra-kind": "medium"}})
    claim_meta = mpatch.apply_merge_patch({}, first["patch"]["metadata"])
    claim_meta["labels"]["infra-kind"] = "large"
    assert metadata_import.import_metadata(claim_meta, {"labels": {"infra-kind": "medium"}})["labels"]["set"] == {
        "infra-kind": "medium"
    }


def test_tampered_tracking_cannot_remove_protected_keys():
    claim_meta = {
        "labels": {m3api.BINDING_LABEL: "h1", "app": "web"},
        "annotations": {
            m3api.IMPORTED_LABELS: json.dumps([m3api.BINDING_LABEL, "app"]),
            m3api.IMPORTED_ANNOTATIONS: json.dumps([m3api.IMPORTED_LABELS, "host.metal3.io/reboot.fw"]),
            "host.metal3.io/reboot.fw": "",
        },
    }
    result = metadata_import.import_metadata(claim_meta, {"labels": {}})
    assert result["labels"]["remove"] == ["app"]  # the tenant's own label, its own choice
    assert m3api.BINDING_LABEL not in result["labels"]["remove"]
    assert "host.metal3.io/reboot.fw" not in result["annotations"]["remove"]


@pytest.mark.parametrize("raw", ["not json", '{"a": 1}', "5", '[1, "a"]', None])
def test_malformed_tracking_is_tolerated(raw):
    claim_meta = {"labels": {"a": "1"}, "annotations": {m3api.IMPORTED_LABELS: raw} if raw is not None else {}}
    result = metadata_import.import_metadata(claim_meta, {"labels": {"a": "1"}})
    assert result["annotations"]["set"].get(m3api.IMPORTED_LABELS, '["a"]') == '["a"]'


def test_import_is_idempotent_example():
    host_meta = {"labels": {"a": "1", "bmc-ip": BMC_IP}, "annotations": {"export.hostclaim.metal3.io/n": "x"}}
    first = metadata_import.import_metadata({}, host_meta)
    claim_meta = mpatch.apply_merge_patch({}, first["patch"]["metadata"])
    assert metadata_import.import_metadata(claim_meta, host_meta)["patch"] == {}


HOST_LABEL_KEYS = st.sampled_from(
    [
        "a",
        "b",
        "example.com/rack",
        "bmc-ip",
        "infrastructure.cluster.x-k8s.io/node-reuse",
        "hostclaim.metal3.io/host",
        "topology.kubernetes.io/zone",
        "vendor",
    ]
)


HOST_LABEL_VALUES = st.sampled_from(["", "x", "r1", BMC_IP, "ilo5", "tenant-b.md-0", BMC_SECRET])


HOST_ANNOTATION_KEYS = st.sampled_from(
    [
        "export.hostclaim.metal3.io/n",
        "export.hostclaim.metal3.io/m",
        "team",
        "kubectl.kubernetes.io/last-applied-configuration",
        "baremetalhost.metal3.io/status",
    ]
)


HOST_ANNOTATION_VALUES = st.sampled_from(
    [
        "",
        "x",
        BMC_ADDRESS,
        "https://%s/" % BMC_IP,
        "password=" + BMC_PASSWORD,
        "u12",
        "ipmi://10.0.0.1",
        json.dumps({"bmc": BMC_ADDRESS}),
    ]
)


HOST_META = st.fixed_dictionaries(
    {
        "labels": st.dictionaries(HOST_LABEL_KEYS, HOST_LABEL_VALUES, max_size=5),
        "annotations": st.dictionaries(HOST_ANNOTATION_KEYS, HOST_ANNOTATION_VALUES, max_size=4),
    }
)


@settings(max_examples=300)
@given(HOST_META, HOST_META)
def test_import_properties(first_meta, second_meta):
    claim_meta = {"labels": {"app": "web", m3api.BINDING_LABEL: "h1"}, "annotations": {"note": "tenant"}}
    bmc_values = bmc_data.bmc_values_of(make_host())
    for host_meta in (first_meta, second_meta):
        result = metadata_import.import_metadata(claim_meta, host_meta, bmc_values=bmc_values)
        if result["patch"]:
            claim_meta = mpatch.apply_merge_patch(claim_meta, result["patch"]["metadata"])
        # idempotent
        assert metadata_import.import_metadata(claim_meta, host_meta, bmc_values=bmc_values)["patch"] == {}
        # nothing sensitive or reserved ever lands on the claim
        assert bmc_data.find_bmc_data(result, [BMC_IP, BMC_ADDRESS, BMC_PASSWORD, BMC_SECRET, "ilo5", "ipmi"]) == []
        labels = claim_meta.get("labels") or {}
        assert "infrastructure.cluster.x-k8s.io/node-reuse" not in labels
        assert labels[m3api.BINDING_LABEL] == "h1" and labels["app"] == "web"
        assert (claim_meta.get("annotations") or {}).get("note") == "tenant"
        for key in ("kubectl.kubernetes.io/last-applied-configuration", "team", "baremetalhost.metal3.io/status"):
            assert key not in (claim_meta.get("annotations") or {})
        # claim reflects exactly the importable part of the current host metadata
        imported = set(downward.tracked_keys(claim_meta.get("annotations"), m3api.IMPORTED_LABELS))
        assert imported == set(
            k for k, v in host_meta["labels"].items() if metadata_import.label_importable(k, v, bmc_values)
        )
        for key in imported:
            assert labels[key] == host_meta["labels"][key]


def _old_has_import_candidates(host_meta):
    """The definition before the policy checks were split out: any verdict other than ``NOT_IMPORTED``."""
    return any(
        metadata_import.label_verdict(k, v) != metadata_import.NOT_IMPORTED
        for k, v in (host_meta.get("labels") or {}).items()
    ) or any(
        metadata_import.annotation_verdict(k, v) != metadata_import.NOT_IMPORTED
        for k, v in (host_meta.get("annotations") or {}).items()
    )


@settings(max_examples=300)
@given(HOST_META, HOST_META, st.booleans())
def test_an_offer_computed_once_imports_as_the_host_itself(first_meta, claim_source, blocked):
    """``import_metadata`` with the host's ``host_offer`` (computed once per host version by a pass) is
    ``import_metadata`` with the host's metadata, on any claim; ``has_import_candidates`` is the policy alone."""
    bmc_values = bmc_data.bmc_values_of(make_host())
    reason = "blocked" if blocked else None
    claim_meta = metadata_import.import_metadata({}, claim_source, bmc_values=bmc_values)["patch"].get("metadata", {})
    offer = metadata_import.host_offer(first_meta, bmc_values=bmc_values, blocked=reason)
    direct = metadata_import.import_metadata(claim_meta, first_meta, bmc_values=bmc_values, blocked=reason)
    assert metadata_import.import_metadata(claim_meta, None, offer=offer) == direct
    assert metadata_import.has_import_candidates(first_meta) == _old_has_import_candidates(first_meta)
