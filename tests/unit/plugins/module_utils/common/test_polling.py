# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

import pytest

from ansible_collections.baremetal.tenancy.plugins.module_utils.common import polling
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    BackendError,
    NotFound,
    WaitTimeout,
)


class Clock:
    """A fake monotonic clock that advances only when the poller sleeps."""

    def __init__(self):
        self.now = 100.0
        self.sleeps = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


def run(values, timeout=10, **kwargs):
    clock = Clock()
    seq = iter(values)
    result = polling.poll(
        lambda: next(seq),
        kwargs.pop("done", lambda v: v == "done"),
        timeout,
        "thing x",
        sleep=clock.sleep,
        clock=clock,
        **kwargs,
    )
    return result, clock


def test_returns_the_value_that_satisfies_the_condition():
    result, clock = run(["a", "b", "done"])
    assert result == "done"
    assert len(clock.sleeps) == 2


def test_first_intervals_are_short_then_grow_to_the_longest():
    clock = Clock()
    with pytest.raises(WaitTimeout):
        polling.poll(lambda: "x", lambda v: False, 30, "thing x", sleep=clock.sleep, clock=clock)
    fast = [s for s in clock.sleeps if s == polling.FIRST]
    assert len(fast) >= int(polling.FAST_SECONDS / polling.FIRST) - 1
    assert max(clock.sleeps) == polling.LONGEST
    assert clock.sleeps == sorted(clock.sleeps[:-1]) + clock.sleeps[-1:]


def test_timeout_names_the_object_and_where_it_stands():
    with pytest.raises(WaitTimeout) as err:
        run(["a"] * 1000, timeout=2, describe=lambda v: "state %s" % v)
    assert err.value.message == "thing x: not done after 2 seconds: state a"


def test_timeout_names_the_service_that_was_to_finish():
    with pytest.raises(WaitTimeout) as err:
        run(["a"] * 1000, timeout=2, describe=lambda v: "state %s" % v, service="Ironic")
    assert err.value.message == "thing x: not done by Ironic after 2 seconds: state a"


def test_zero_timeout_looks_once():
    with pytest.raises(WaitTimeout):
        run(["a", "done"], timeout=0)


def test_failed_stops_early_with_its_reason():
    with pytest.raises(BackendError) as err:
        run(["a", "broken", "done"], failed=lambda v: "it broke" if v == "broken" else None)
    assert err.value.message == "thing x: it broke"


def test_an_object_that_disappears_ends_the_wait_at_once():
    with pytest.raises(NotFound) as err:
        run(["a", None, "done"], timeout=3600, gone="was deleted while waiting")
    assert err.value.message == "thing x: was deleted while waiting"


def test_none_is_an_ordinary_value_without_gone():
    result, _dummy = run([None, None, "done"])
    assert result == "done"


def test_never_sleeps_past_the_deadline():
    clock = Clock()
    with pytest.raises(WaitTimeout):
        polling.poll(lambda: 1, lambda v: False, 1.5, "t", sleep=clock.sleep, clock=clock)
    assert clock.now == pytest.approx(101.5)


def _reads(answers):
    """A fetch answering each of ``answers`` in turn; an exception is raised."""
    seq = iter(answers)

    def fetch():
        answer = next(seq)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return fetch


def _away():
    return BackendError("Kubernetes API https://k", "cannot connect: refused", {"service_unreachable": True})


def test_a_service_away_for_a_while_does_not_end_the_wait():
    clock = Clock()
    fetch = _reads(["a", _away(), _away(), "done"])
    assert polling.poll(fetch, lambda v: v == "done", 60, "thing x", sleep=clock.sleep, clock=clock) == "done"
    assert min(clock.sleeps[1:]) >= 0.5


def test_a_service_away_until_the_deadline_fails_with_its_error_and_the_wait():
    clock = Clock()
    with pytest.raises(BackendError) as err:
        polling.poll(_reads(["a"] + [_away()] * 100), lambda v: False, 5, "thing x", sleep=clock.sleep, clock=clock)
    assert err.value.message == (
        "Kubernetes API https://k: cannot connect: refused (still so when the wait of 5 seconds ran out)"
    )
    assert clock.now == pytest.approx(105)


def test_other_errors_end_the_wait_at_once():
    clock = Clock()
    with pytest.raises(BackendError) as err:
        polling.poll(
            _reads([BackendError("node n", "HTTP 500"), "done"]), bool, 60, "thing x", sleep=clock.sleep, clock=clock
        )
    assert err.value.message == "node n: HTTP 500" and clock.sleeps == []


def _starting():
    return BackendError("HostClaim t/c", "forbidden (HTTP 403)", {"status": 403})


def test_a_service_starting_again_is_read_again_for_a_while():
    clock = Clock()
    fetch = _reads(["a", _away(), _starting(), _starting(), "done"])
    assert polling.poll(fetch, lambda v: v == "done", 60, "thing x", sleep=clock.sleep, clock=clock) == "done"


def test_a_403_without_an_outage_before_it_ends_the_wait():
    clock = Clock()
    with pytest.raises(BackendError) as err:
        polling.poll(_reads(["a", _starting(), "done"]), lambda v: v == "done", 60, "t", sleep=clock.sleep, clock=clock)
    assert err.value.message == "HostClaim t/c: forbidden (HTTP 403)"


def test_a_403_long_after_the_outage_ends_the_wait():
    clock = Clock()
    answers = ["a", _away()] + ["b"] * 100 + [_starting(), "done"]
    with pytest.raises(BackendError):
        polling.poll(_reads(answers), lambda v: v == "done", 600, "t", sleep=clock.sleep, clock=clock)
    assert clock.now - 100 > polling.COMING_BACK
