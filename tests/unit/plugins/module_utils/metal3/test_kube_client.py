# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""KubeIO, the one Kubernetes client: paged lists, request counts, errors that name the object."""

import threading
from types import SimpleNamespace

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
    FakeConfiguration,
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


class StreamingResponse:
    """A watch response whose stream blocks until it is shut down; every call on it recorded in ``calls``."""

    status = 200

    def __init__(self, calls):
        self.calls = calls
        self.woken = threading.Event()
        self.reading = threading.Event()

    def stream(self, _size):
        yield b'{"type": "ADDED", "object": {"metadata": {"namespace": "infra", "name": "h0", "resourceVersion": "7"}}}\n'
        self.reading.set()
        self.woken.wait(10)
        self.calls.append(("eof", threading.current_thread().name))

    def shutdown(self):
        self.calls.append(("shutdown", threading.current_thread().name))
        self.woken.set()

    def close(self):
        self.calls.append(("close", threading.current_thread().name))

    def release_conn(self):
        self.calls.append(("release_conn", threading.current_thread().name))


class WatchPool:
    def __init__(self, response):
        self.response = response

    def request(self, *_args, **_kwargs):
        return self.response


@pytest.mark.parametrize("rounds", [1, 3])
def test_a_stopped_watch_is_closed_then_released_by_its_own_thread_before_stop_returns(rounds):
    # the class of defect: a watch's connection handed back to the pool while another thread still closes its
    # response made a later request of the same client fail (ValueError: I/O operation on closed file)
    pool = WatchPool(None)
    io = m3client.KubeIO(
        SimpleNamespace(rest_client=SimpleNamespace(pool_manager=pool), configuration=FakeConfiguration())
    )
    for _round in range(rounds):
        calls = []
        response = StreamingResponse(calls)
        pool.response = response
        watcher = io.watch("/apis/metal3.io/v1alpha1/baremetalhosts", "5")
        assert response.reading.wait(10)
        assert watcher.newer({"metadata": {"namespace": "infra", "name": "h0", "resourceVersion": "6"}})[0] == "ADDED"
        watcher.stop()
        assert not watcher._thread.is_alive()
        names = [name for name, _thread in calls]
        assert names == ["shutdown", "eof", "close", "release_conn"]
        reader = calls[1][1]
        assert reader.startswith("watch ") and calls[2][1] == calls[3][1] == reader


def test_a_watch_stopped_before_the_answer_ends_when_the_answer_comes():
    calls = []
    response = StreamingResponse(calls)
    gate = threading.Event()

    class SlowPool:
        def request(self, *_args, **_kwargs):
            gate.wait(10)
            return response

    io = m3client.KubeIO(
        SimpleNamespace(rest_client=SimpleNamespace(pool_manager=SlowPool()), configuration=FakeConfiguration())
    )
    watcher = io.watch("/apis/metal3.io/v1alpha1/baremetalhosts", "5")
    threading.Timer(0.2, gate.set).start()
    watcher.stop()
    assert not watcher._thread.is_alive()
    assert [name for name, _thread in calls] == ["close", "release_conn"]
