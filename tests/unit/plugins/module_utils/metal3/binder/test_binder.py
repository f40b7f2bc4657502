# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One binder pass (binder): read, plan, execute, report; refused before any write when its input is wrong."""

import gc

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    InvalidInput,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import (
    BINDING_LABEL,
    FINALIZER,
    SHARING_ANNOTATION,
)
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.binder_world import (
    INFRA,
    binder,
    bound,
    world,
)


def test_a_pass_binds_commits_and_writes_status_in_three_writes():
    fake = world()
    report = binder(fake, binder_id="b1").run()
    (action,) = report["claims"]
    assert action["action"] == "bound" and action["writes"] == 3
    claim = fake.get("hostclaims", "tenant-a", "c0")
    assert claim["metadata"]["labels"][BINDING_LABEL] == action["host"]
    assert claim["metadata"]["finalizers"] == [FINALIZER]
    assert report["requests"]["patch"] == 3 and report["changed"] is True
    again = binder(fake, binder_id="b1").run()
    assert again["changed"] is False and again["claims"][0]["action"] == "unchanged"
    assert again["requests"]["writes"] == 0


def test_hosts_with_invalid_or_legacy_policies_are_reported_and_not_bound():
    fake = world(hosts=4, claims=3)
    fake.write("baremetalhosts", INFRA, "h0", {"metadata": {"annotations": {SHARING_ANNOTATION: "{not json"}}})
    fake.write("baremetalhosts", INFRA, "h1", {"metadata": {"annotations": {SHARING_ANNOTATION: None}}})
    fake.write("baremetalhosts", INFRA, "h1", {"spec": {"hostClaimNamespaces": {"matches": "tenant-.*"}}})
    fake.write("baremetalhosts", INFRA, "h2", {"spec": {"hostClaimNamespaces": {"matches": "nobody"}}})  # annotated
    report = binder(fake, binder_id="b1").run()
    assert sorted(bound(fake).values()) == ["h2", "h3"]
    assert [c["action"] for c in report["claims"]].count("pending") == 1
    (problem,) = report["host_problems"]
    assert problem["host"] == "infra/h0"
    assert problem["problems"] == [
        "BareMetalHost infra/h0: annotation %s: the value is not valid JSON "
        "(Expecting property name enclosed in double quotes at character 1): '{not json'" % SHARING_ANNOTATION
    ]
    assert report["legacy_policies"] == ["infra/h1"]


def test_hosts_handed_to_tenants_without_cleaning_are_reported_and_still_bound():
    fake = world(hosts=3, claims=1)
    for name in ("h0", "h1", "h2"):
        fake.write("baremetalhosts", INFRA, name, {"spec": {"automatedCleaningMode": "disabled"}})
    fake.write("baremetalhosts", INFRA, "h2", {"metadata": {"annotations": {SHARING_ANNOTATION: None}}})  # not shared
    fake.write("baremetalhosts", INFRA, "h1", {"spec": {"automatedCleaningMode": "metadata"}})
    report = binder(fake, binder_id="b1").run()
    assert report["cleaning_disabled"] == ["infra/h0"]
    assert report["summary"]["bound"] == 1


def test_missing_namespace_is_refused_before_any_write():
    fake = world()
    with pytest.raises(InvalidInput) as exc:
        binder(fake, namespaces=["tenant-a", "nope"]).run()
    assert exc.value.message == "option namespaces: namespace(s) nope do not exist"
    assert not [r for r in fake.requests if r[0] != "GET"]


@pytest.mark.parametrize("fails", [False, True])
def test_a_pass_runs_with_the_cyclic_collector_paused_and_restores_it(fails, monkeypatch):
    fake = world()
    seen = []
    pass_binder = binder(fake, binder_id="b1", namespaces=["tenant-a", "nope"] if fails else None)
    read = pass_binder.state.read

    def reading(*args, **kwargs):
        seen.append(gc.isenabled())
        return read(*args, **kwargs)

    monkeypatch.setattr(pass_binder.state, "read", reading)
    gc.enable()
    try:
        if fails:
            with pytest.raises(InvalidInput):
                pass_binder.run()
        else:
            assert pass_binder.run()["summary"]["bound"] == 1
        assert seen == [False] and gc.isenabled()
    finally:
        gc.enable()
