# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The spool between the event source and host_bind_worker (metal3/events/worker.py)."""

import json
import os
import shutil

from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.events import worker as bw


def request(spool, ident, namespaces=("a",)):
    return {
        "id": ident,
        "namespaces": list(namespaces),
        "host_namespaces": None,
        "done_file": str(spool / ("pass-%d.json" % ident)),
    }


def test_requests_are_taken_oldest_first_and_once(tmp_path):
    for ident in (10, 2, 7):
        bw.put_request(str(tmp_path), request(tmp_path, ident))
    assert [bw.take_request(str(tmp_path))["id"] for dummy in range(3)] == [2, 7, 10]
    assert bw.take_request(str(tmp_path)) is None
    assert sorted(os.listdir(tmp_path)) == []  # taken files are removed, no temporary left


def test_the_worker_runs_each_pass_reports_its_end_and_stops_with_the_spool(tmp_path):
    spool = tmp_path / "spool"
    spool.mkdir()
    bw.put_request(str(spool), request(spool, 1, ["a", "b"]))
    bw.put_request(str(spool), request(spool, 2))
    seen, done = [], []

    def one_pass(req):
        seen.append((req["id"], req["namespaces"]))
        if req["id"] == 2:
            done.append(json.loads((spool / "pass-1.json").read_text()))
            raise RuntimeError("apiserver gone")
        return {"changed": True, "settled": True}

    sleeps = []

    def sleep(seconds):
        sleeps.append(seconds)
        assert bw.worker_age(str(spool)) is not None  # the heartbeat says the worker is alive
        shutil.rmtree(spool)  # the source stopped

    summary = bw.serve(str(spool), one_pass, sleep=sleep)
    assert seen == [(1, ["a", "b"]), (2, ["a"])]
    assert done == [{"id": 1, "ok": True, "settled": True}]
    assert summary["passes"] == 2 and summary["failed"] == 1 and summary["changed"] is True
    assert summary["errors"] == ["pass 2: apiserver gone"]
    assert len(sleeps) == 1 and not spool.exists()


def test_a_failed_pass_is_reported_not_ok(tmp_path):
    spool = tmp_path / "spool"
    spool.mkdir()
    bw.put_request(str(spool), request(spool, 5))
    results = []

    def one_pass(req):
        raise ValueError("boom")

    def sleep(seconds):
        results.append(json.loads((spool / "pass-5.json").read_text()))
        shutil.rmtree(spool)

    bw.serve(str(spool), one_pass, sleep=sleep)
    assert results == [{"id": 5, "ok": False, "settled": False}]


def test_no_worker_yet_has_no_age(tmp_path):
    assert bw.worker_age(str(tmp_path)) is None


def test_a_worker_whose_source_went_silent_stops(tmp_path):
    spool = tmp_path / "spool"
    spool.mkdir()
    bw.source_alive(str(spool))
    old = os.stat(spool / bw.SOURCE_ALIVE).st_mtime - 100
    os.utime(spool / bw.SOURCE_ALIVE, (old, old))
    summary = bw.serve(str(spool), lambda req: {}, sleep=lambda seconds: None, source_timeout=30)
    assert summary["passes"] == 0 and summary["errors"] == ["the event source went silent; the worker stops"]
    assert spool.exists()
