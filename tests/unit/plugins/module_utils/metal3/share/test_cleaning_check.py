# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The owner's warning about hosts handed to tenants whose disks are not cleaned between them (cleaning_check)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import SHARING_ANNOTATION
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share import cleaning_check as cc


def host(name, cleaning="disabled", namespace="infra", shared=False, consumer_kind=None):
    bmh = {"metadata": {"name": name, "namespace": namespace, "annotations": {}}, "spec": {"online": False}}
    if cleaning is not None:
        bmh["spec"]["automatedCleaningMode"] = cleaning
    if shared:
        bmh["metadata"]["annotations"][SHARING_ANNOTATION] = '{"matches":".*"}'
    if consumer_kind:
        bmh["spec"]["consumerRef"] = {"kind": consumer_kind, "name": "c", "namespace": "t"}
    return bmh


def policy(namespace):
    return {
        "apiVersion": "metal3.io/v1alpha1",
        "kind": "HostDeployPolicy",
        "metadata": {"name": "p", "namespace": namespace},
    }


@pytest.mark.parametrize(
    "bmh, policies, expected",
    [
        (host("shared", shared=True), [], ["infra/shared"]),
        (host("bound", consumer_kind="HostClaim"), [], ["infra/bound"]),
        (host("in-policy-ns"), [policy("infra")], ["infra/in-policy-ns"]),
        # the owner's own hosts: shared with nobody, bound to something else (a Machine of Cluster API)
        (host("private"), [policy("other")], []),
        (host("machine", consumer_kind="Metal3Machine"), [], []),
        # cleaning on, or left to the operator's default (metadata)
        (host("cleaned", cleaning="metadata", shared=True), [], []),
        (host("default", cleaning=None, shared=True), [], []),
    ],
)
def test_which_hosts_are_reported(bmh, policies, expected):
    assert cc.uncleaned_hosts([bmh], policies) == expected


def test_names_are_sorted_and_the_warning_lists_ten():
    hosts = [host("h%02d" % i, shared=True) for i in reversed(range(12))]
    names = cc.uncleaned_hosts(hosts)
    assert names == ["infra/h%02d" % i for i in range(12)]
    warning = cc.cleaning_warning(names)
    assert warning.startswith(
        "12 BareMetalHost(s) handed to tenants have spec.automatedCleaningMode disabled (infra/h00, "
    )
    assert "infra/h09 and 2 more)" in warning and "infra/h10" not in warning
    assert "reach the next tenant" in warning


ANY = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=8)
    | st.sampled_from(["disabled", "HostClaim", "infra"]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=10,
)


@given(spec=ANY, metadata=ANY, policies=st.lists(ANY, max_size=3))
def test_malformed_objects_never_raise(spec, metadata, policies):
    bmh = {"spec": spec, "metadata": metadata}
    names = cc.uncleaned_hosts([bmh], policies)
    if names:
        assert spec["automatedCleaningMode"] == "disabled"
        assert names == ["%s/%s" % (metadata.get("namespace"), metadata.get("name"))]
