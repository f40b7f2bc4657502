# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The spool between the event source ``metal3_events`` (``worker: true``) and a long-running ``host_bind``.

Why: each ``binder_pass`` event of ``binder.yml`` is a new ``ansible-playbook`` (5-7 s of
start-up on loaded cores, longer than the pass itself), and a claim created during a pass
waits for it and the next one. With ``worker: true`` the source asks once for a worker
(``binder_worker`` event; the playbook ``metal3_bind_worker`` runs ``host_bind`` with
``worker_spool``) and hands it each pass through this spool directory instead of an event;
the module's process runs one binder pass after the other with the same code and options
as a ``host_bind`` run, its client and connections warm.

The protocol (all files JSON, written to a temporary name and renamed, so a reader never
sees half a file):

- ``request-<id>.json`` ``{id, namespaces, host_namespaces, done_file}``: written by the
  source when the pass coalescer asks for a pass (never a second while one runs);
- a worker takes a request by renaming it to ``taken-<id>.json`` (one of several workers
  wins the rename), runs the pass, writes ``{id, ok, settled}`` to ``done_file`` (what the
  playbook ``metal3_bind_event`` writes) and removes the taken file;
- ``worker.alive`` is touched by a live worker every second: the source asks for a new
  worker when it is older than its ``worker_timeout``;
- ``source.alive`` is touched by the source every second: a worker whose source has been
  silent for :data:`SOURCE_TIMEOUT` seconds ends its run (a SIGKILLed ``ansible-rulebook``
  leaves the playbooks that ansible-runner started in their own sessions behind);
- the source removes the directory when it stops: the worker then ends its run.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable
from typing import Any

ALIVE = "worker.alive"
SOURCE_ALIVE = "source.alive"
SOURCE_TIMEOUT = 30.0
_REQUEST_RE = re.compile(r"request-(\d+)\.json\Z")


def write_json(path: str, value: Any) -> None:
    """Write ``value`` to ``path`` atomically (a temporary file in the same directory, then a rename)."""
    temporary = "%s.tmp-%d" % (path, os.getpid())
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(value, handle)
    os.replace(temporary, path)


def put_request(spool: str, request: dict) -> str:
    """Hand the pass ``request`` (with an ``id``) to the workers of ``spool``; returns the file written."""
    path = os.path.join(spool, "request-%d.json" % int(request["id"]))
    write_json(path, request)
    return path


def take_request(spool: str) -> dict | None:
    """The oldest waiting request, taken (renamed) by this worker, or ``None``."""
    try:
        names = os.listdir(spool)
    except FileNotFoundError:
        return None
    waiting = sorted((int(match.group(1)), name) for name in names for match in [_REQUEST_RE.match(name)] if match)
    for ident, name in waiting:
        taken = os.path.join(spool, "taken-%d.json" % ident)
        try:
            os.rename(os.path.join(spool, name), taken)
        except FileNotFoundError:
            continue  # another worker took it
        try:
            with open(taken, encoding="utf-8") as handle:
                request = json.load(handle)
        finally:
            os.unlink(taken)
        return request if isinstance(request, dict) else None
    return None


def _age(path: str, now: float | None) -> float | None:
    try:
        return (time.time() if now is None else now) - os.stat(path).st_mtime
    except FileNotFoundError:
        return None


def worker_age(spool: str, now: float | None = None) -> float | None:
    """Seconds since a worker last said it was alive, or ``None`` (no worker ever did)."""
    return _age(os.path.join(spool, ALIVE), now)


def touch(path: str) -> None:
    with open(path, "a", encoding="utf-8"):
        os.utime(path)


def source_alive(spool: str) -> None:
    """The source says it is alive (call it about every second)."""
    touch(os.path.join(spool, SOURCE_ALIVE))


class _Heartbeat(threading.Thread):
    def __init__(self, spool: str, every: float):
        super().__init__(name="host_bind worker heartbeat", daemon=True)
        self.spool, self.every, self.stopped = spool, every, threading.Event()

    def run(self):
        path = os.path.join(self.spool, ALIVE)
        while not self.stopped.is_set() and os.path.isdir(self.spool):
            try:
                touch(path)
            except OSError:
                return
            self.stopped.wait(self.every)


def serve(
    spool: str,
    run_pass: Callable[[dict], dict],
    poll: float = 0.02,
    heartbeat: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
    source_timeout: float = SOURCE_TIMEOUT,
) -> dict:
    """Run ``run_pass(request) -> host_bind report`` for each request of ``spool`` until the directory goes
    (or the source has been silent for ``source_timeout`` seconds).

    A pass that raises is reported ``ok: false`` to the source (which asks again after its
    back-off) and the worker goes on. Returns ``{passes, failed, changed, errors}``: the
    count of passes, of failed ones, whether any pass changed something, and the last
    failures (at most 10, as text).
    """
    if os.path.isdir(spool):
        touch(os.path.join(spool, ALIVE))  # alive from the start, not once the heartbeat thread first runs
    beat = _Heartbeat(spool, heartbeat)
    beat.start()
    summary = {"passes": 0, "failed": 0, "changed": False, "errors": []}
    try:
        while os.path.isdir(spool):
            request = take_request(spool)
            if request is None:
                silent = _age(os.path.join(spool, SOURCE_ALIVE), None)
                if silent is not None and silent > source_timeout:
                    summary["errors"] = (summary["errors"] + ["the event source went silent; the worker stops"])[-10:]
                    break
                sleep(poll)
                continue
            ok, settled = True, False
            try:
                report = run_pass(request)
                settled = report.get("settled") is True
                summary["changed"] = summary["changed"] or bool(report.get("changed"))
            except Exception as exc:  # pylint: disable=broad-except
                ok = False
                summary["failed"] += 1
                summary["errors"] = (summary["errors"] + ["pass %s: %s" % (request.get("id"), exc)])[-10:]
            summary["passes"] += 1
            done_file = request.get("done_file")
            if done_file and os.path.isdir(os.path.dirname(done_file)):
                write_json(done_file, {"id": request.get("id"), "ok": ok, "settled": settled})
    finally:
        beat.stopped.set()
    return summary
