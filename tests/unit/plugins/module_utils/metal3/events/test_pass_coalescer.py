# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One binder pass for a storm of changes, never two at once (metal3/events/pass_coalescer.py)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.events.pass_coalescer import PassCoalescer


def test_a_storm_is_one_pass_once_quiet():
    c = PassCoalescer(debounce=0.1, max_delay=1.0)
    for i in range(50):
        c.add(["t%d" % (i % 3)], now=i * 0.01)
        assert c.take(now=i * 0.01) is None
    request = c.take(now=0.49 + 0.2)
    assert request == {"id": 1, "namespaces": ["t0", "t1", "t2"], "changes": 50}
    assert c.take(now=10) is None


def test_a_steady_stream_still_gets_a_pass_after_max_delay():
    c = PassCoalescer(debounce=0.1, max_delay=1.0)
    now = 0.0
    request = None
    while request is None:
        c.add(["t"], now)
        now += 0.05
        request = c.take(now)
    assert 1.0 <= now < 1.1


def test_never_a_second_pass_while_one_runs_and_exactly_one_after():
    c = PassCoalescer(debounce=0.1, max_delay=1.0)
    c.add(["a"], 0)
    first = c.take(1)
    for i in range(100):
        c.add(["b" if i % 2 else "a"], 1 + i * 0.1)
        assert c.take(1 + i * 0.1 + 0.5) is None
    assert c.finished(first["id"], ok=True, settled=True, now=20)
    second = c.take(20)
    assert second["namespaces"] == ["a", "b"]
    assert c.take(21) is None


def test_an_unknown_or_stale_end_is_ignored():
    c = PassCoalescer()
    c.add(["a"], 0)
    request = c.take(5)
    assert not c.finished(request["id"] + 1, ok=True, settled=True, now=6)
    assert c.running is not None


def test_a_failed_pass_is_retried_after_a_growing_backoff():
    c = PassCoalescer(debounce=0.1, max_delay=1.0, retry_delay=1.0)
    c.add(["a"], 0)
    request = c.take(1)
    c.finished(request["id"], ok=False, settled=False, now=2)
    assert c.take(2.5) is None
    again = c.take(3.0)
    assert again["namespaces"] == ["a"]
    c.finished(again["id"], ok=False, settled=False, now=3)
    assert c.take(4.5) is None
    assert c.take(5.0) is not None


def test_an_unsettled_pass_is_asked_again_at_once():
    c = PassCoalescer(debounce=0.1, max_delay=1.0)
    c.add(["a"], 0)
    request = c.take(1)
    c.finished(request["id"], ok=True, settled=False, now=2)
    assert c.take(2)["namespaces"] == ["a"]


def test_a_pass_that_never_ends_times_out():
    c = PassCoalescer(pass_timeout=60)
    c.add(["a"], 0)
    c.take(1)
    c.add(["b"], 2)
    assert c.take(30) is None
    assert c.take(62) is None  # timed out at 62: taken as failed, retried after retry_delay
    assert c.running is None
    assert c.take(63.5)["namespaces"] == ["a", "b"]


def test_bad_settings_are_refused():
    with pytest.raises(ValueError):
        PassCoalescer(debounce=2, max_delay=1)


@given(st.lists(st.tuples(st.sampled_from("abc"), st.floats(0, 0.5), st.booleans()), min_size=1, max_size=60))
def test_every_namespace_changed_is_in_a_pass_and_passes_never_overlap(steps):
    c = PassCoalescer(debounce=0.1, max_delay=1.0)
    now = 0.0
    wanted, covered = set(), set()
    for namespace, gap, end in steps:
        now += gap
        c.add([namespace], now)
        wanted.add(namespace)
        request = c.take(now)
        if request:
            covered |= set(request["namespaces"])
        if end and c.running:
            c.finished(c.running["id"], ok=True, settled=True, now=now)
        if c.running is not None:
            assert c.take(now) is None
    if c.running:
        c.finished(c.running["id"], ok=True, settled=True, now=now)
    final = c.take(now + 2)
    if final:
        covered |= set(final["namespaces"])
    assert covered == wanted
