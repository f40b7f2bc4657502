"""pytest plugin: where a session's wall time goes, per fixture and per test file.

Loaded from ``tests/integration/conftest.py`` (``pytest_plugins``). At the end of a session it prints two
tables (and writes them as JSON to ``$BMT_TIMINGS_DIR/timings-<session>.json`` when that variable is set, the
session's name from ``BMT_SESSION``, which scripts/integration-sessions.sh sets):

- fixtures: each fixture's setups and teardowns (how many, total and longest seconds), for every scope; a
  session fixture's setup is the time its services took to start, counted once however many tests use it;
- files: each test file's wall time from its first test's setup to its last test's teardown (the module
  fixtures it started included, the session fixtures it was the first to use too: those are in the first
  table on their own).

Wall time: the sessions run side by side, so each figure includes waiting for the others. The files' table
also gives each file's CPU seconds: the pytest process's own and those of the child processes that ended while
the file ran (every ``ansible-playbook`` and ``ansible-inventory`` it ran, with their modules, also those the
session's module zygote forked; the services its module fixtures started and stopped) -- what the file costs the machine whatever else runs beside it. The last
test's teardown, where the session's fixtures stop their services (whose CPU is counted when they end), is a row of
its own.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections import defaultdict
from pathlib import Path

import pytest
from harness.ansible import zygote_cpu_seconds

_FIXTURES: dict[tuple[str, str], dict[str, float]] = defaultdict(
    lambda: {"setups": 0, "setup_s": 0.0, "setup_max_s": 0.0, "teardowns": 0, "teardown_s": 0.0}
)
_TEARDOWN_STARTS: dict[int, float] = {}
_FILES: dict[str, dict[str, float]] = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    start = time.monotonic()
    yield
    entry = _FIXTURES[(fixturedef.argname, fixturedef.scope)]
    seconds = time.monotonic() - start
    entry["setups"] += 1
    entry["setup_s"] += seconds
    entry["setup_max_s"] = max(entry["setup_max_s"], seconds)
    # Finalizers run last in, first out: this one, added after the fixture's own (its code after yield), runs
    # before it, and pytest_fixture_post_finalizer (pytest's first finalizer) after it.
    fixturedef.addfinalizer(lambda: _TEARDOWN_STARTS.__setitem__(id(fixturedef), time.monotonic()))


def pytest_fixture_post_finalizer(fixturedef, request):
    start = _TEARDOWN_STARTS.pop(id(fixturedef), None)
    if start is not None:
        entry = _FIXTURES[(fixturedef.argname, fixturedef.scope)]
        entry["teardowns"] += 1
        entry["teardown_s"] += time.monotonic() - start


def cpu_seconds() -> float:
    """User + system CPU of this process and of its children that have ended (and were waited for), and of the
    module processes the session's module zygote ran that have ended (``harness.ansible.zygote_cpu_seconds``)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime + zygote_cpu_seconds()


#: CPU seconds of the last test's teardown, where the session's fixtures stop their services (reaped then: counted
#: there, in a row of their own rather than in the last file's)
_LAST_TEARDOWN = {"cpu_s": 0.0}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    cpu = cpu_seconds()
    yield
    if nextitem is None:
        _LAST_TEARDOWN["cpu_s"] = cpu_seconds() - cpu


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start, cpu = time.monotonic(), cpu_seconds()
    yield
    entry = _FILES.setdefault(item.nodeid.split("::", 1)[0], {"tests": 0, "start": start, "end": start, "cpu_s": 0.0})
    entry["tests"] += 1
    entry["end"] = time.monotonic()
    entry["cpu_s"] += cpu_seconds() - cpu - (_LAST_TEARDOWN["cpu_s"] if nextitem is None else 0.0)


def pytest_terminal_summary(terminalreporter):
    if not _FILES:
        return
    fixtures = sorted(
        ({"fixture": name, "scope": scope, **entry} for (name, scope), entry in _FIXTURES.items()),
        key=lambda f: -(f["setup_s"] + f["teardown_s"]),
    )
    files = sorted(
        (
            {"file": path, "tests": e["tests"], "wall_s": e["end"] - e["start"], "cpu_s": e["cpu_s"]}
            for path, e in _FILES.items()
        ),
        key=lambda f: -f["wall_s"],
    )
    write = terminalreporter.write_line
    terminalreporter.section("wall time by fixture (setup + teardown, all scopes; the 25 longest)")
    write("%-36s %-8s %6s %9s %9s %9s" % ("fixture", "scope", "setups", "setup s", "max s", "teardown s"))
    for f in fixtures[:25]:
        write(
            "%-36s %-8s %6d %9.1f %9.1f %9.1f"
            % (f["fixture"], f["scope"], f["setups"], f["setup_s"], f["setup_max_s"], f["teardown_s"])
        )
    terminalreporter.section("wall time (first setup to last teardown) and CPU (pytest + ended children) by test file")
    for f in files:
        write("%-60s %4d tests %8.1f s wall %8.1f s CPU" % (f["file"], f["tests"], f["wall_s"], f["cpu_s"]))
    write(
        "%-60s %4s       %8s        %8.1f s CPU"
        % ("(session's services, stopped at the end)", "", "", _LAST_TEARDOWN["cpu_s"])
    )
    write(
        "%-60s %4d tests %8s        %8.1f s CPU"
        % ("all", sum(f["tests"] for f in files), "", sum(f["cpu_s"] for f in files) + _LAST_TEARDOWN["cpu_s"])
    )
    directory = os.environ.get("BMT_TIMINGS_DIR")
    if directory:
        name = os.environ.get("BMT_SESSION") or "session"
        path = Path(directory) / ("timings-%s.json" % name)
        path.parent.mkdir(parents=True, exist_ok=True)
        document = {
            "session": name,
            "fixtures": fixtures,
            "files": files,
            "final_teardown_cpu_s": _LAST_TEARDOWN["cpu_s"],
        }
        path.write_text(json.dumps(document, indent=1) + "\n")
