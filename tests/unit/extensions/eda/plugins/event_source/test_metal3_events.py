# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The event source plugin's loop (extensions/eda/plugins/event_source/metal3_events.py) on a scripted API server.

The plugin file is loaded as a module of its own, as ansible-rulebook loads it; its
client is replaced by a fake that answers lists and watches from a script:
a watch that ends is resumed from the last resourceVersion, a ``410 Gone``
makes a new list whose difference is delivered, and a second ``binder_pass``
waits until the first one's ``done_file`` is written.  No event carries BMC data.
"""

import asyncio
import importlib.util
import json
import queue
import time
from pathlib import Path

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import BackendError
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.metal3_objects import (
    BMC_VALUES,
    make_claim,
    make_host,
)

PLUGIN = Path(__file__).resolve().parents[6] / "extensions" / "eda" / "plugins" / "event_source" / "metal3_events.py"


def versioned(obj, version):
    obj["metadata"]["resourceVersion"] = version
    return obj


class ScriptedIO:
    """Lists and watches of HostClaims and BareMetalHosts, as the test scripts them."""

    def __init__(self, *args, **kwargs):
        self.list_versions = {}
        self.watches = []  # (kind, resourceVersion) of every watch started
        self.claim_lists = [
            ([versioned(make_claim("a", "t1"), "10")], "10"),
            (
                [
                    versioned(make_claim("a", "t1"), "10"),
                    versioned(make_claim("b", "t2"), "11"),
                    versioned(make_claim("c", "t3"), "19"),
                ],
                "20",
            ),
        ]
        self.host_items = [versioned(make_host("h1"), "5"), versioned(make_host("h2", state="provisioning"), "6")]
        self.later_claims = queue.Queue()

    def list_items(self, path, what):
        if "hostclaims" in path:
            items, version = self.claim_lists.pop(0)
        else:
            items, version = self.host_items, "6"
        self.list_versions[path] = version
        return items

    def watch_events(self, path, version, obj, timeout_seconds=300, on_open=None):
        kind = "claims" if "hostclaims" in path else "hosts"
        self.watches.append((kind, version))
        if kind == "claims" and version == "10":
            yield {"type": "ADDED", "object": versioned(make_claim("b", "t2"), "11")}
            return  # the server ends the watch: resumed from 11
        if kind == "claims" and version == "11":
            raise BackendError("HostClaims", "too old resource version (HTTP 410)", {"status": 410})
        if kind == "claims":
            try:
                yield self.later_claims.get(timeout=0.05)
            except queue.Empty:
                return
            return
        time.sleep(0.05)
        yield {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": version}}}


def load_main(io):
    """The plugin's ``main`` with its client replaced (the file runs as a module of its own, as runpy runs it:
    ansible-test's collection path hook claims every path, so ``runpy.run_path`` itself cannot be used here)."""
    spec = importlib.util.spec_from_file_location("metal3_events_under_test", str(PLUGIN))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.KubeIO = lambda *args, **kwargs: io
    module.kube_api_client = lambda params: None
    return module.main


async def until(seen, wanted, timeout=10.0):
    """The first event of ``seen`` that is ``wanted``, waiting for it."""
    deadline = time.monotonic() + timeout
    while True:
        found = [event for event in seen if wanted(event)]
        if found:
            return found[0]
        assert time.monotonic() < deadline, seen
        await asyncio.sleep(0.01)


def test_resume_relist_and_one_pass_at_a_time():
    io = ScriptedIO()
    main = load_main(io)
    seen = []

    async def scenario():
        class Recorder:
            async def put(self, event):
                seen.append(event)

        task = asyncio.create_task(main(Recorder(), {"debounce": 0.05, "max_delay": 0.2, "resync": 0}))
        try:
            first = await until(seen, lambda e: e.get("binder_pass", {}).get("id") == 1)
            await until(seen, lambda e: e.get("hostclaim", {}).get("name") == "c")
            assert first["binder_pass"]["id"] == 1
            done_file = first["binder_pass"]["done_file"]
            # while pass 1 runs, changes wait: no second pass
            io.later_claims.put({"type": "ADDED", "object": versioned(make_claim("d", "t4"), "21")})
            await until(seen, lambda e: e.get("hostclaim", {}).get("name") == "d")
            await asyncio.sleep(0.5)
            assert [e for e in seen if "binder_pass" in e] == [first]
            with open(done_file, "w", encoding="utf-8") as handle:
                json.dump({"id": 1, "ok": True, "settled": True}, handle)
            second = await until(seen, lambda e: e.get("binder_pass", {}).get("id") == 2)
            assert second["binder_pass"]["id"] == 2
            assert "t4" in second["binder_pass"]["namespaces"]
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    asyncio.run(scenario())
    claims = [e["hostclaim"] for e in seen if "hostclaim" in e]
    assert [(c["name"], c["change"]) for c in claims] == [
        ("a", "LISTED"),
        ("b", "ADDED"),
        ("c", "ADDED"),  # from the list after 410 Gone (b unchanged: not delivered again)
        ("d", "ADDED"),
    ]
    assert ("claims", "10") in io.watches and ("claims", "11") in io.watches and ("claims", "20") in io.watches
    hosts = [e["baremetalhost"] for e in seen if "baremetalhost" in e]
    assert sorted((h["name"], h["free"]) for h in hosts) == [("h1", True), ("h2", False)]
    text = json.dumps(seen)
    assert not [value for value in BMC_VALUES if value in text]


class QuietIO(ScriptedIO):
    """One listing (a claim relayed to another cluster in t9, a local one in t1), then watches with no change."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        relayed = make_claim("r", "t9", spec={"online": False, "credentials": "hosts-kubeconfig"})
        self.claim_lists = [([versioned(relayed, "10"), versioned(make_claim("a", "t1"), "10")], "10")]

    def watch_events(self, path, version, obj, timeout_seconds=300, on_open=None):
        self.watches.append(("claims" if "hostclaims" in path else "hosts", version))
        time.sleep(0.05)
        yield {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": version}}}


def run_quiet_source(relay_poll, steps):
    """Run the source on :class:`QuietIO` with ``relay_poll`` while ``steps(seen, finish)`` (a coroutine) runs;
    returns every event it emitted. ``finish(binder_pass)`` reports a pass as done and settled."""
    main = load_main(QuietIO())
    seen = []

    async def finish(binder_pass):
        with open(binder_pass["done_file"], "w", encoding="utf-8") as handle:
            json.dump({"id": binder_pass["id"], "ok": True, "settled": True}, handle)

    async def scenario():
        class Recorder:
            async def put(self, event):
                seen.append(event)

        args = {"debounce": 0.01, "max_delay": 0.05, "resync": 0, "relay_poll": relay_poll, "object_events": False}
        task = asyncio.create_task(main(Recorder(), args))
        try:
            await steps(seen, finish)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    asyncio.run(scenario())
    return seen


def binder_pass(seen, pass_id):
    return until(seen, lambda e: e.get("binder_pass", {}).get("id") == pass_id)


def test_namespaces_with_relayed_claims_get_a_pass_every_relay_poll_without_a_change():
    async def steps(seen, finish):
        first = (await binder_pass(seen, 1))["binder_pass"]
        assert first["namespaces"] == ["t1", "t9"]  # the listing's pass
        await finish(first)
        second = (await binder_pass(seen, 2))["binder_pass"]
        assert second["namespaces"] == ["t9"]  # only the relayed claim's namespace, with no change seen
        await finish(second)
        third = (await binder_pass(seen, 3))["binder_pass"]
        assert third["namespaces"] == ["t9"]

    seen = run_quiet_source(0.3, steps)
    assert "hosts-kubeconfig" not in json.dumps(seen)
    assert all(e["binder_pass"]["namespaces"] != ["t1"] for e in seen if "binder_pass" in e)


def test_relay_poll_0_asks_for_no_pass_without_a_change():
    async def steps(seen, finish):
        await finish((await binder_pass(seen, 1))["binder_pass"])
        await asyncio.sleep(0.8)

    seen = run_quiet_source(0, steps)
    assert [e["binder_pass"]["id"] for e in seen if "binder_pass" in e] == [1]
