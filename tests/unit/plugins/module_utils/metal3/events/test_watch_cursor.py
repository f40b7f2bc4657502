# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Following a collection for good (metal3/events/watch_cursor.py): list, resume from resourceVersion, relist after 410."""

from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.events import watch_cursor as wc


def obj(name, version, namespace="ns"):
    return {"metadata": {"namespace": namespace, "name": name, "resourceVersion": version}}


def test_starts_with_a_list_then_watches_from_its_version():
    cursor = wc.WatchCursor()
    assert cursor.next_step() == (wc.LIST, None)
    cursor.listed("100")
    assert cursor.next_step() == (wc.WATCH, "100")


def test_a_dropped_watch_resumes_from_the_last_version_seen():
    cursor = wc.WatchCursor()
    cursor.listed("100")
    assert cursor.event({"type": "ADDED", "object": obj("a", "101")}) == "ADDED"
    assert cursor.event({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "150"}}}) is None
    delay = cursor.failed(None)  # connection dropped
    assert delay > 0
    assert cursor.next_step() == (wc.WATCH, "150")
    cursor.ended()
    assert cursor.next_step() == (wc.WATCH, "150")


def test_410_gone_relists_whether_answered_or_sent_in_the_stream():
    cursor = wc.WatchCursor()
    cursor.listed("100")
    assert cursor.failed(410) == 0.0
    assert cursor.next_step() == (wc.LIST, None)
    cursor.listed("300")
    assert cursor.event({"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}) is None
    assert cursor.next_step() == (wc.LIST, None)
    assert cursor.counts["relists"] == 2


def test_other_stream_errors_resume_the_watch():
    cursor = wc.WatchCursor()
    cursor.listed("100")
    cursor.event({"type": "ERROR", "object": {"code": 500}})
    assert cursor.next_step() == (wc.WATCH, "100")


def test_backoff_grows_and_is_capped():
    delays = [wc.backoff(n) for n in range(0, 12)]
    assert delays[0] == 0.0
    assert delays[1:] == sorted(delays[1:])
    assert max(delays) == wc.MAX_BACKOFF


def test_a_list_without_version_lists_again():
    cursor = wc.WatchCursor()
    cursor.listed(None)
    assert cursor.next_step() == (wc.LIST, None)


def test_relist_changes_are_what_a_watch_would_have_delivered():
    known = {("ns", "a"): obj("a", "1"), ("ns", "b"): obj("b", "2"), ("ns", "c"): obj("c", "3")}
    items = [obj("a", "1"), obj("b", "5"), obj("d", "6")]
    changes = wc.relist_changes(known, items)
    assert [(kind, o["metadata"]["name"]) for kind, o in changes] == [
        ("MODIFIED", "b"),
        ("ADDED", "d"),
        ("DELETED", "c"),
    ]


names = st.sampled_from(["a", "b", "c", "d", "e"])
versions = st.sampled_from(["1", "2", "3"])


@given(
    before=st.dictionaries(names, versions),
    after=st.dictionaries(names, versions),
)
def test_applying_relist_changes_gives_the_new_listing(before, after):
    known = dict((("ns", n), obj(n, v)) for n, v in before.items())
    items = [obj(n, v) for n, v in after.items()]
    state = dict(known)
    for kind, o in wc.relist_changes(known, items):
        key = wc.object_key(o)
        if kind == "DELETED":
            assert key in state
            del state[key]
        else:
            assert (kind == "ADDED") == (key not in state)
            state[key] = o
    assert state == dict((wc.object_key(o), o) for o in items)
