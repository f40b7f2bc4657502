# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The two HostClaim dialects (metal3/claim/dialect.py): which one a CRD is, the option that forces one,
reading baremetal-operator's claims into the model, writing the model in either dialect (and refusing what
a dialect lacks), and a round trip through both for every spec both can say."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import BackendError, InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import dialect as cd

NS = "tenant-a"
IMAGE = {"url": "http://images.example/os.qcow2", "checksum": "http://images.example/os.sha256"}


def crd(fields, annotation=None, storage=True):
    meta = {"name": cd.CRD_NAME}
    if annotation:
        meta["annotations"] = {cd.SCHEMA_ANNOTATION: annotation}
    props = dict((f, {"type": "string"}) for f in fields)
    version = {
        "name": "v1alpha1",
        "storage": storage,
        "schema": {"openAPIV3Schema": {"properties": {"spec": {"properties": props}}}},
    }
    return {"metadata": meta, "spec": {"versions": [version]}}


BMO_CRD = crd(cd.BMO_SPEC_FIELDS)
PROPOSAL_CRD = crd(["online", "kind", "hostSelector", "image", "nodeReuse"], annotation=cd.PROPOSAL_SCHEMA)


def test_crd_dialect():
    assert cd.crd_dialect(BMO_CRD) == cd.BMO
    assert cd.crd_dialect(PROPOSAL_CRD) == cd.PROPOSAL
    assert cd.crd_dialect(crd(["online", "hostSelector"])) == cd.PROPOSAL  # an earlier release's, unannotated
    assert cd.crd_dialect(crd(["poweredOn", "online"])) is None
    assert cd.crd_dialect(crd(["poweredOn", "somethingElse"])) is None
    assert cd.crd_dialect(None) is None and cd.crd_dialect({}) is None


def openapi(fields):
    props = dict((f, {"type": "string"}) for f in fields)
    return {"components": {"schemas": {cd.OPENAPI_SCHEMA: {"properties": {"spec": {"properties": props}}}}}}


def test_openapi_dialect():
    assert cd.openapi_dialect(openapi(cd.BMO_SPEC_FIELDS)) == cd.BMO
    assert cd.openapi_dialect(openapi(["online", "kind", "nodeReuse"])) == cd.PROPOSAL
    assert cd.openapi_dialect(openapi(["replicas"])) is None
    assert cd.openapi_spec_fields(openapi(["replicas"])) == ["replicas"]
    assert cd.openapi_dialect({"components": {"schemas": {"io.metal3.v1alpha1.BareMetalHost": {}}}}) is None
    assert cd.openapi_spec_fields({"components": {"schemas": {}}}) is None and cd.openapi_dialect(None) is None


def test_resolve_dialect():
    assert cd.resolve_dialect("auto", cd.crd_dialect(BMO_CRD)) == cd.BMO
    assert cd.resolve_dialect("bmo", cd.BMO) == cd.BMO
    assert cd.resolve_dialect("proposal", cd.crd_dialect(PROPOSAL_CRD)) == cd.PROPOSAL
    with pytest.raises(InvalidInput) as err:
        cd.resolve_dialect("proposal", cd.BMO)
    assert "option dialect: is proposal but the cluster serves the bmo HostClaim" in err.value.message
    with pytest.raises(BackendError) as err:
        cd.resolve_dialect("auto", None)
    assert "serves none" in err.value.message and "hostclaim_setup" in err.value.message
    with pytest.raises(BackendError) as err:
        cd.resolve_dialect("bmo", None, ["replicas"])
    assert "is of neither dialect (spec fields replicas)" in err.value.message


def test_a_bmo_claim_reads_into_the_model():
    spec = {
        "poweredOn": True,
        "image": IMAGE,
        "userData": {"name": "ud", "namespace": NS},
        "networkData": {"name": "nd"},
        "hostSelector": {
            "matchLabels": {"infra-kind": "small"},
            "matchExpressions": [
                {"key": "rack", "operator": "in", "values": ["r1", "r2"]},
                {"key": "gpu", "operator": "!", "values": []},
                {"key": "tier", "operator": "==", "values": ["gold"]},
                {"key": "zone", "operator": "Exists", "values": []},
            ],
            "inNamespace": "infra",
        },
        "failureDomain": "fd-1",
        "consumerRef": {"kind": "Metal3Machine", "name": "m"},
    }
    model = cd.normalise_bmo_spec(spec, "web", NS)
    assert model["online"] is True and model["kind"] == "baremetal"
    assert model["userData"] == "ud" and model["networkData"] == "nd" and model["metaData"] is None
    assert (model["inNamespace"], model["failureDomain"], model["customDeploy"]) == ("infra", "fd-1", None)
    assert model["nodeReuse"] is None and model["credentials"] is None
    assert model["hostSelector"]["matchExpressions"] == [
        {"key": "rack", "operator": "In", "values": ["r1", "r2"]},
        {"key": "gpu", "operator": "DoesNotExist", "values": []},
        {"key": "tier", "operator": "In", "values": ["gold"]},
        {"key": "zone", "operator": "Exists", "values": []},
    ]
    assert model["image"]["url"] == IMAGE["url"]


@pytest.mark.parametrize(
    "spec,fragment",
    [
        ({"userData": {"name": "ud", "namespace": "tenant-b"}}, "Secret tenant-b/ud is not in the claim's namespace"),
        ({"metaData": "md"}, "spec.metaData: must be a Secret reference"),
        ({"poweredOn": "yes"}, "spec.poweredOn: must be true or false"),
        ({"online": True}, "unknown field(s) 'online'"),
        ({"nodeReuse": "x"}, "unknown field(s) 'nodeReuse'"),
        ({"hostSelector": {"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}}, "operator 'DoesNotExist'"),
        ({"hostSelector": {"matchExpressions": [{"key": "a", "operator": "gt", "values": ["1"]}]}}, "operator 'gt'"),
        ({"hostSelector": {"matchExpressions": [{"key": "a", "operator": "=", "values": ["1", "2"]}]}}, "one value"),
        ({"hostSelector": {"inNamespace": "Not_A_Namespace"}}, "spec.hostSelector.inNamespace"),
        ({"customDeploy": {"method": ""}}, "spec.customDeploy.method"),
        ({"customDeploy": {"method": "x"}, "image": IMAGE}, "image and customDeploy are alternatives"),
        ({"failureDomain": "bad value!"}, "spec.failureDomain"),
        ({"image": {"url": "ftp://x/os.img"}}, "spec.image"),
    ],
)
def test_a_bad_bmo_claim_is_one_error_naming_claim_and_field(spec, fragment):
    with pytest.raises(InvalidInput) as err:
        cd.normalise_bmo_spec(dict({"poweredOn": False}, **spec), "web", NS)
    assert err.value.message.startswith("HostClaim %s/web: " % NS)
    assert fragment in err.value.message


def test_what_a_dialect_lacks_is_refused_on_write():
    proposal = cd.normalise_spec(
        cd.PROPOSAL, {"online": True, "nodeReuse": "pool", "credentials": {"name": "c"}}, "w", NS
    )
    with pytest.raises(InvalidInput) as err:
        cd.wire_spec(cd.BMO, proposal, "w", NS)
    assert "nodeReuse, credentials cannot be set on a baremetal-operator HostClaim" in err.value.message
    bmo = cd.normalise_spec(
        cd.BMO, {"poweredOn": True, "failureDomain": "fd", "customDeploy": {"method": "m"}}, "w", NS
    )
    with pytest.raises(InvalidInput) as err:
        cd.wire_spec(cd.PROPOSAL, bmo, "w", NS)
    assert "failureDomain, customDeploy cannot be set on a proposal HostClaim" in err.value.message
    assert cd.lacking(cd.PROPOSAL, {"inNamespace": "infra"}) == ["hostSelector.inNamespace"]


def test_bmo_wire_shape():
    model = cd.normalise_spec(
        cd.PROPOSAL,
        {
            "online": True,
            "image": IMAGE,
            "userData": {"name": "ud"},
            "hostSelector": {"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]},
        },
        "w",
        NS,
    )
    wire = cd.wire_spec(cd.BMO, model, "w", NS)
    assert wire["poweredOn"] is True and "online" not in wire and "kind" not in wire
    assert wire["userData"] == {"name": "ud", "namespace": NS}
    # selection's spelling: DoesNotExist is written as "!"
    assert wire["hostSelector"] == {"matchExpressions": [{"key": "gpu", "operator": "!", "values": []}]}
    # the image as set, without the model's unset fields (no nulls on the wire)
    assert wire["image"] == dict((k, v) for k, v in IMAGE.items() if v is not None)
    assert None not in wire["image"].values()


def test_bmo_wire_operators_are_those_its_webhook_accepts():
    """baremetal-operator's webhook compares the operator as written with selection's constants ("in", not "In")."""
    model = cd.normalise_spec(
        cd.PROPOSAL,
        {
            "hostSelector": {
                "matchExpressions": [
                    {"key": "a", "operator": "In", "values": ["x"]},
                    {"key": "b", "operator": "NotIn", "values": ["y"]},
                    {"key": "c", "operator": "Exists"},
                    {"key": "d", "operator": "DoesNotExist"},
                ]
            }
        },
        "w",
        NS,
    )
    wire = cd.wire_spec(cd.BMO, model, "w", NS)
    operators = [expr["operator"] for expr in wire["hostSelector"]["matchExpressions"]]
    assert operators == ["in", "notin", "exists", "!"]
    assert all(isinstance(expr["values"], list) for expr in wire["hostSelector"]["matchExpressions"])
    assert cd.wire_spec(cd.BMO, cd.normalise_spec(cd.BMO, {"poweredOn": False}, "w", NS), "w", NS) == {
        "poweredOn": False
    }


LABEL = st.sampled_from(["a", "rack", "x.io/t"])
VALUE = st.sampled_from(["v", "r1", "gold"])
EXPRESSION = st.one_of(
    st.builds(
        lambda k, op, vs: {"key": k, "operator": op, "values": vs},
        LABEL,
        st.sampled_from(["In", "NotIn"]),
        st.lists(VALUE, min_size=1, max_size=2, unique=True),
    ),
    st.builds(lambda k, op: {"key": k, "operator": op}, LABEL, st.sampled_from(["Exists", "DoesNotExist"])),
)
COMMON_SPEC = st.fixed_dictionaries(
    {},
    optional={
        "online": st.booleans(),
        "image": st.just(IMAGE),
        "userData": st.just({"name": "ud"}),
        "networkData": st.just({"name": "nd"}),
        "metaData": st.just({"name": "md"}),
        "hostSelector": st.fixed_dictionaries(
            {},
            optional={
                "matchLabels": st.dictionaries(LABEL, VALUE, max_size=2),
                "matchExpressions": st.lists(EXPRESSION, max_size=3),
            },
        ),
    },
)


@given(COMMON_SPEC)
def test_what_both_dialects_say_survives_a_round_trip_through_either(spec):
    model = cd.normalise_spec(cd.PROPOSAL, spec, "w", NS)
    for dialect in cd.DIALECTS:
        again = cd.normalise_spec(dialect, cd.wire_spec(dialect, model, "w", NS), "w", NS)
        assert again == model
