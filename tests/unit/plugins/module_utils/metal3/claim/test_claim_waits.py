# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""host_claim's and host_release's waits on a HostClaim (metal3): one wait loop, ended at once by a deleted claim."""

from __future__ import annotations

import time

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import NotFound, WaitTimeout
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import tenant as mc
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.client import KubeIO
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.fake_kube import (
    FakeApiClient,
    FakeKube,
)

CLAIM_PATH = "/apis/metal3.io/v1alpha1/namespaces/t1/hostclaims/c1"


class StubModule:
    """The part of TenancyModule the metal3 entry points use."""

    def __init__(self, **params):
        self.params = dict(
            state="present",
            namespace="t1",
            name="c1",
            wait=True,
            wait_for="associated",
            wait_timeout=300,
            online=None,
            host_selector=None,
            image=None,
            annotations=None,
            node_reuse=None,
            user_data_secret=None,
            network_data_secret=None,
            meta_data_secret=None,
        )
        self.params.update(params)
        self.check_mode = False
        self.result: dict = {}

    def changed(self):
        self.result["changed"] = True

    def set_diff(self, before, after):
        self.result["diff"] = {"before": before, "after": after}


@pytest.fixture
def fake(monkeypatch):
    fake = FakeKube()
    fake.add("namespaces", {"metadata": {"name": "t1"}})
    monkeypatch.setattr(mc, "_client", lambda mod: KubeIO(FakeApiClient(fake)))
    return fake


def delete_on_read(fake, after_reads):
    """Another actor deletes the claim just before its ``after_reads``-th read (of an existing claim)."""
    reads = [0]

    def predicate(method, path, body):
        if method != "GET" or path != CLAIM_PATH or fake.get("hostclaims", "t1", "c1") is None:
            return False
        reads[0] += 1
        return reads[0] >= after_reads

    def delete(fake):
        del fake.objects[("hostclaims", "t1", "c1")]

    fake.hooks.append((predicate, delete))


@pytest.mark.parametrize("wait_for", ["associated", "ready"])
def test_a_claim_deleted_during_the_wait_fails_at_once_with_a_clear_error(fake, wait_for):
    delete_on_read(fake, after_reads=2)
    started = time.monotonic()
    with pytest.raises(NotFound) as err:
        mc.run_host_claim(StubModule(wait_for=wait_for))
    assert time.monotonic() - started < 5, "the wait ran on towards its 300 s timeout"
    assert err.value.message.startswith("HostClaim t1/c1: was deleted while waiting for it (still not ")


def test_a_claim_never_bound_times_out_naming_the_claim(fake):
    with pytest.raises(WaitTimeout) as err:
        mc.run_host_claim(StubModule(wait_timeout=1))
    assert err.value.message == "HostClaim t1/c1: not bound to a host after 1 seconds"


def test_waiting_for_a_release_ends_when_the_claim_is_gone(fake):
    fake.add("hostclaims", {"metadata": {"name": "c1", "namespace": "t1", "finalizers": ["x"]}, "spec": {}})
    delete_on_read(fake, after_reads=2)
    mod = StubModule()
    started = time.monotonic()
    mc.run_host_release(mod)
    assert time.monotonic() - started < 5
    assert mod.result["released"] is True and mod.result["changed"] is True
