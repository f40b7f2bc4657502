# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""How a pass reads (pass_state.read): the claims after the hosts' snapshot, beside the hosts' later pages."""

import threading
from urllib.parse import parse_qs, urlparse

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import Forbidden
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.binder_world import (
    binder,
    bound,
    world,
)


def _listing(url, plural):
    """Whether ``url`` lists ``plural`` (no object name), and its ``continue`` token."""
    parsed = urlparse(url)
    parts = parsed.path.strip("/").split("/")
    lists = parts[-1] == plural
    return lists, parse_qs(parsed.query).get("continue", [None])[0]


def _record(fake, on_request):
    original = fake.request

    def request(method, url, **kwargs):
        response = on_request(method, url)
        return response if response is not None else original(method, url, **kwargs)

    fake.request = request


@pytest.mark.parametrize("host_namespaces", [None, ["infra"], ["infra", "tenant-b"]])
def test_claims_are_listed_after_the_hosts_first_page_while_their_later_pages_come(host_namespaces):
    fake = world(hosts=5, claims=2, page=2)  # three pages of hosts
    events, claims_listed, waited = [], threading.Event(), []

    def on_request(method, url):
        hosts, token = _listing(url, "baremetalhosts")
        if method == "GET" and hosts:
            events.append(("hosts", token))
            if token and not waited:
                # a later page of hosts is answered only once the claims are listed: a pass that read the claims
                # after the last page of hosts would wait here in vain
                waited.append(claims_listed.wait(timeout=10))
        elif method == "GET" and _listing(url, "hostclaims")[0]:
            events.append(("claims", None))
            claims_listed.set()

    _record(fake, on_request)
    report = binder(fake, host_namespaces=host_namespaces).run()
    assert waited == [True]
    # the first page of every host list (its snapshot) before the claims
    assert events.index(("claims", None)) > max(i for i, event in enumerate(events) if event == ("hosts", None))
    assert [e for e in events if e[0] == "hosts"].count(("hosts", None)) == len(host_namespaces or [None])
    assert report["summary"]["bound"] == 2 and len(bound(fake)) == 2


@pytest.mark.parametrize("page", [1, 2, 10])
def test_a_host_list_that_fails_stops_the_pass_before_the_claims_are_read(page):
    fake = world(hosts=5, claims=1, page=page)
    claims_read = []

    def on_request(method, url):
        hosts, token = _listing(url, "baremetalhosts")
        if hosts and (token or page == 10):
            return type("R", (), {"status": 403, "reason": "Forbidden", "data": b'{"message": "no way"}'})()
        if _listing(url, "hostclaims")[0]:
            claims_read.append(url)
        return None

    _record(fake, on_request)
    with pytest.raises(Forbidden) as exc:
        binder(fake).run()
    assert exc.value.message == "BareMetalHosts (all namespaces): no way (HTTP 403)"
    assert not any(path.endswith("/baremetalhosts") for method, path, body in fake.requests if method != "GET")
    if page == 10:  # the first page failed: nothing else was read
        assert claims_read == []
    assert bound(fake) == {}
