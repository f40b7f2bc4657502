# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

import threading
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.parallel import beside, parallel_map


@given(st.lists(st.integers()), st.integers(min_value=1, max_value=8))
def test_results_keep_the_order_of_the_items(items, workers):
    assert parallel_map(lambda x: x * 2, items, workers) == [x * 2 for x in items]


def test_runs_on_several_threads():
    seen = set()
    barrier = threading.Barrier(3, timeout=5)

    def work(item):
        seen.add(threading.get_ident())
        barrier.wait()
        return item

    assert parallel_map(work, [1, 2, 3], 3) == [1, 2, 3]
    assert len(seen) == 3


def test_one_worker_runs_inline():
    assert parallel_map(lambda x: threading.get_ident(), [1, 2], 1) == [threading.get_ident()] * 2


def boom(item):
    if item % 2:
        raise ValueError("odd %s" % item)
    return item


def test_errors_return_in_place_of_results():
    results = parallel_map(boom, [0, 1, 2, 3], 2, errors="return")
    assert results[0] == 0 and results[2] == 2
    assert [str(r) for r in (results[1], results[3])] == ["odd 1", "odd 3"]


def test_errors_raise_the_first_in_item_order_after_all_ran():
    done = []

    def work(item):
        done.append(item)
        return boom(item)

    with pytest.raises(ValueError, match="odd 1"):
        parallel_map(work, [0, 1, 2, 3], 4)
    assert sorted(done) == [0, 1, 2, 3]


def test_rejects_an_unknown_error_mode():
    with pytest.raises(ValueError):
        parallel_map(str, [1], 1, errors="ignore")


def test_beside_runs_then_once_the_background_is_ready_and_before_it_ends():
    order, release = [], threading.Event()

    def background(ready):
        order.append("started")
        ready.set()
        # ends only once ``then`` ran: a ``then`` that waited for the end would wait in vain
        assert release.wait(timeout=10)
        order.append("ended")
        return "hosts"

    def then():
        order.append("then")
        release.set()
        return "claims"

    assert beside(background, then) == ("hosts", "claims")
    assert order == ["started", "then", "ended"]


def test_beside_runs_then_when_the_background_ends_without_setting_ready():
    assert beside(lambda ready: 1, lambda: 2) == (1, 2)


@pytest.mark.parametrize("after_ready", [False, True])
def test_beside_a_background_failure(after_ready):
    ran, then_ran = [], threading.Event()

    def background(ready):
        if after_ready:  # fails once ``then`` has run
            ready.set()
            assert then_ran.wait(timeout=10)
        raise LookupError("hosts")

    def then():
        ran.append("then")
        then_ran.set()

    with pytest.raises(LookupError, match="hosts"):
        beside(background, then)
    # before it was ready: nothing else is run; after: ``then`` ran and the background's error is still raised
    assert ran == (["then"] if after_ready else [])


def test_beside_raises_then_s_error_once_the_background_ended():
    ended, failing = [], threading.Event()

    def background(ready):
        ready.set()
        assert failing.wait(timeout=10)
        time.sleep(0.05)  # still running when ``then`` has failed
        ended.append(True)
        return 1

    def then():
        failing.set()
        raise KeyError("claims")

    with pytest.raises(KeyError):
        beside(background, then)
    assert ended == [True]
