# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A claim parsed once (claim.parsed), and the binder's use of the records: validated once per version."""

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder import planner
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import identity as identity_module
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import parsed as parsed_module
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.identity import validate_claim
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.parsed import as_parsed, parse_claim
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.binder_world import (
    binder,
    pass_state,
    world,
)
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.metal3_objects import make_claim


def test_a_valid_claim_is_parsed_into_a_read_only_record():
    claim = make_claim("web-1", spec={"online": True, "hostSelector": {"matchLabels": {"kind": "m"}}})
    record = parse_claim(claim)
    assert (record.namespace, record.name, record.uid, record.resource_version) == (
        "tenant-a",
        "web-1",
        "uid-tenant-a-web-1",
        "11",
    )
    assert record.dialect == "proposal" and record.error is None and record.obj is claim
    assert dict(record.spec) == validate_claim(claim) and record.valid_spec() is record.spec
    assert record.selector == validate_claim(claim)["hostSelector"]
    with pytest.raises(TypeError):
        record.spec["online"] = False
    assert as_parsed(record) is record and as_parsed(claim) == record


def test_an_invalid_claim_keeps_its_error_and_raises_it_where_the_spec_is_needed():
    claim = make_claim("web-1", spec={"hostSelector": 5})
    record = parse_claim(claim)
    assert record.spec is None and record.selector is None
    with pytest.raises(InvalidInput) as exc:
        validate_claim(claim)
    assert record.error.message == exc.value.message
    with pytest.raises(InvalidInput) as again:
        record.valid_spec()
    assert again.value.message == exc.value.message and again.value is not record.error


def test_a_record_stands_for_one_version_of_its_claim():
    claim = make_claim("web-1")
    record = parse_claim(claim)
    newer = make_claim("web-1")
    newer["metadata"]["resourceVersion"] = "12"
    same = make_claim("web-1")
    unversioned = make_claim("web-1")
    del unversioned["metadata"]["resourceVersion"]
    assert record.is_version_of(claim) and record.is_version_of(same)
    assert not record.is_version_of(newer) and not record.is_version_of(unversioned)
    assert not record.is_version_of(make_claim("web-1", uid="other"))


def test_a_record_as_read_by_another_copy_of_its_version():
    claim = make_claim("web-1", spec={"online": True})
    record = parse_claim(claim)
    assert record.as_read(claim) is record
    copy = make_claim("web-1", spec={"online": True}, labels={"other": "x"})
    again = record.as_read(copy)
    assert again.obj is copy and again.spec is record.spec and again[:-1] == record[:-1]


def test_the_planner_takes_records_or_dicts_alike():
    claims = [make_claim("web-1"), make_claim("web-2", spec={"hostSelector": 5})]
    namespaces = {"tenant-a": {}}
    assert planner.plan_pass([parse_claim(c) for c in claims], [], namespaces, "b1") == planner.plan_pass(
        claims, [], namespaces, "b1"
    )


def test_a_pass_validates_each_claim_version_once(monkeypatch):
    fake = world(hosts=3, claims=2)
    calls = []

    def counting(claim):
        calls.append(claim["metadata"]["name"])
        return validate_claim(claim)

    monkeypatch.setattr(parsed_module, "validate_claim", counting)
    everywhere = []
    normalise = identity_module.normalise_spec

    def counting_everywhere(dialect, spec, name, namespace=None):
        everywhere.append(name)
        return normalise(dialect, spec, name, namespace)

    # every validation of a claim dict (identity.validate_claim, whoever calls it) goes through normalise_spec
    monkeypatch.setattr(identity_module, "normalise_spec", counting_everywhere)
    report = binder(fake).run()
    assert report["summary"]["bound"] == 2
    # once when read, once more after each bind's commit (a newer version of the claim) for its data copies and
    # the downward patch; nothing but claim.parsed validates
    assert sorted(calls) == ["c0", "c0", "c1", "c1"] and sorted(everywhere) == sorted(calls)


def test_the_pass_state_hands_out_the_record_it_read():
    state = pass_state(world(hosts=1, claims=1))
    (claim,) = state.read(sweep=False, watch=False)
    assert state.parsed(claim) is state.parsed(claim) and state.parsed(claim).obj is claim
    newer = dict(claim, metadata=dict(claim["metadata"], resourceVersion="999"))
    assert state.parsed(newer).obj is newer
