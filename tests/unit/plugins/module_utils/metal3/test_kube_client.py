# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""KubeIO, the one Kubernetes client: paged lists, request counts, errors that name the object."""

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    BackendError,
    Conflict,
    Forbidden,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3 import client as m3client
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.binder_world import (
    INFRA,
    world,
)
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.fake_kube import (
    FakeApiClient,
)


def test_lists_follow_continue_tokens_and_count_requests():
    fake = world(hosts=5)
    io = m3client.KubeIO(FakeApiClient(fake))
    assert sorted(h["metadata"]["name"] for h in io.list_hosts()) == ["h0", "h1", "h2", "h3", "h4"]
    assert io.counts["list"] == 3
    assert io.figures()["total"] == 3 and io.figures()["writes"] == 0


def test_errors_name_the_object():
    fake = world()
    io = m3client.KubeIO(FakeApiClient(fake))
    assert io.get_claim("tenant-a", "nope") is None
    stale = {"metadata": {"resourceVersion": "1"}, "spec": {"online": True}}
    with pytest.raises(Conflict) as exc:
        io.patch_host(INFRA, "h0", stale)
    assert exc.value.obj == "BareMetalHost infra/h0" and "has been modified" in exc.value.cause
    original = fake.request

    def forbidden(method, url, **kwargs):
        original(method, url, **kwargs)
        return type("R", (), {"status": 403, "reason": "Forbidden", "data": b'{"message": "no way"}'})()

    fake.request = forbidden
    with pytest.raises(Forbidden) as exc:
        io.list_claims(["tenant-b"])
    assert exc.value.message == "HostClaims in namespace tenant-b: no way (HTTP 403)"


@pytest.mark.parametrize(
    "reason, unreachable",
    [
        ("refused", True),  # NewConnectionError: a ConnectTimeoutError by inheritance, not a time-out
        ("dropped", True),
        ("read timeout", False),
        ("connect timeout", False),
    ],
)
def test_a_refused_or_cut_connection_is_unreachable_a_time_out_is_not(reason, unreachable):
    import urllib3

    fake = world()
    io = m3client.KubeIO(FakeApiClient(fake))
    cause = {
        "refused": urllib3.exceptions.NewConnectionError(None, "Failed to establish a new connection: refused"),
        "dropped": urllib3.exceptions.ProtocolError("Connection aborted."),
        "read timeout": urllib3.exceptions.ReadTimeoutError(None, "/", "Read timed out. (read timeout=3)"),
        "connect timeout": urllib3.exceptions.ConnectTimeoutError(None, "timed out"),
    }[reason]

    def failing(method, url, **kwargs):
        raise urllib3.exceptions.MaxRetryError(None, url, cause)

    fake.request = failing
    with pytest.raises(BackendError) as exc:
        io.get_claim("tenant-a", "c")
    assert exc.value.obj.startswith("Kubernetes API ")
    assert exc.value.details.get("service_unreachable", False) is unreachable
