# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""baremetal.tenancy.metal3_events: an Event-Driven Ansible source following HostClaims and BareMetalHosts.

What it does:

* lists HostClaims (both dialects: the Metal3 proposal's and
  baremetal-operator v0.14's, which share ``hostclaims.metal3.io``) and
  BareMetalHosts, then follows each collection with a watch, resumed from the
  last ``resourceVersion`` after a dropped watch (an API server restart
  included) and listed again after ``410 Gone`` (the difference with what it
  knew is delivered as the changes a watch would have delivered);
* emits, when ``object_events`` is true, one event per change:
  ``{hostclaim: {change, namespace, name, dialect, state, host, ready,
  reason}}`` and ``{baremetalhost: {change, namespace, name, state,
  powered_on, consumer, free, deleting}}``: names and states only, never BMC
  data, labels, annotations, specs or statuses;
* emits ``{binder_pass: {id, namespaces, host_namespaces, changes,
  done_file}}`` when claim namespaces need a ``host_bind`` pass: one pass for
  a storm of changes (after ``debounce`` seconds without a change, or
  ``max_delay`` after the first), one at startup for every namespace with
  claims, one every ``resync`` seconds, one every ``relay_poll`` seconds for
  the namespaces with claims relayed to another cluster (``spec.credentials``:
  what that cluster does reaches the claim only by a pass, as no watch here
  sees it), and never a second pass while one
  runs: with ``wait_for_pass`` (default) the next ``binder_pass`` waits until
  the pass wrote ``{"ok": .., "settled": ..}`` to ``done_file`` (the playbook
  ``baremetal.tenancy.metal3_bind_event`` does) or ``pass_timeout`` passed.
  A failed pass is asked for again after a back-off, an unsettled one at once;
* with ``worker`` true, emits no ``binder_pass`` events: it emits one
  ``{binder_worker: {spool, namespaces, host_namespaces}}`` event (the
  rulebook ``binder_worker.yml`` runs the playbook
  ``baremetal.tenancy.metal3_bind_worker``: the module ``host_bind_worker``,
  one process for many passes) and hands each pass to it as a request file in
  ``spool`` (the same coalescing, the same done-file handshake); it asks for a
  new worker when the worker's heartbeat is older than ``worker_timeout``
  seconds (60), and removes ``spool`` when it stops, which ends the worker.

Options (each auth option falls back to the environment variable the modules
read): ``kubeconfig`` (K8S_AUTH_KUBECONFIG), ``context`` (K8S_AUTH_CONTEXT),
``host`` (K8S_AUTH_HOST), ``api_key`` (K8S_AUTH_API_KEY), ``client_cert``
(K8S_AUTH_CERT_FILE), ``client_key`` (K8S_AUTH_KEY_FILE), ``ca_cert``
(K8S_AUTH_SSL_CA_CERT), ``validate_certs`` (K8S_AUTH_VERIFY_SSL);
``namespaces`` and ``host_namespaces`` (default: all), ``debounce`` (0.1 s),
``max_delay`` (1 s), ``pass_timeout`` (900 s), ``retry_delay`` (1 s),
``wait_for_pass`` (true), ``object_events`` (true), ``resync`` (600 s, 0:
never), ``relay_poll`` (30 s, 0: never), ``watch_timeout`` (300 s),
``worker`` (false), ``worker_timeout`` (60 s).  The credentials need ``list`` and
``watch`` on ``hostclaims`` and ``baremetalhosts`` (the binder's ClusterRole
of ``baremetal.tenancy.hostclaim_setup`` has them).

Example (``extensions/eda/rulebooks/binder.yml``)::

    - name: HostClaim binder
      hosts: localhost
      sources:
        - baremetal.tenancy.metal3_events:
            object_events: false
      rules:
        - name: Run a binder pass
          condition: event.binder_pass is defined
          action:
            run_playbook:
              name: baremetal.tenancy.metal3_bind_event
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path


def _importable() -> None:
    """ansible-rulebook runs this file with runpy: put the collection's ``ansible_collections`` tree on the path."""
    here = Path(os.path.abspath(__file__))  # not resolved: the collection may be a link to a checkout
    if len(here.parents) > 7 and here.parents[6].name == "ansible_collections":
        root = str(here.parents[7])
        if root not in sys.path:
            sys.path.append(root)


_importable()

# pylint: disable=wrong-import-position
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import TenancyError
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import (
    API_VERSION,
    CLAIMS,
    HOSTS,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.client import KubeIO, api_path
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.connection import (
    kube_api_client,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.events.changes import (
    DELETED,
    LISTED,
    TenancyState,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.events.options import (
    source_options,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.events.pass_coalescer import (
    PassCoalescer,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.events.watch_cursor import (
    LIST,
    WatchCursor,
    object_key,
    relist_changes,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.events.worker import (
    put_request,
    source_alive,
    worker_age,
)

LOG = logging.getLogger("baremetal.tenancy.metal3_events")
TICK = 0.05
USER_AGENT = "baremetal.tenancy-metal3_events"


class Follower(threading.Thread):
    """Lists one collection, then follows it with watches for good; hands every change to ``deliver``."""

    def __init__(self, io, kind, path, what, deliver, stop, watch_timeout):
        super().__init__(name="follow %s" % what, daemon=True)
        self.io, self.kind, self.path, self.what = io, kind, path, what
        self.deliver, self.stop, self.watch_timeout = deliver, stop, watch_timeout
        self.cursor = WatchCursor()
        self.known = {}
        self.response = None

    def run(self):
        while not self.stop.is_set():
            step, version = self.cursor.next_step()
            try:
                if step == LIST:
                    self._list()
                else:
                    self._watch(version)
            except TenancyError as exc:
                status = exc.details.get("status")
                delay = self.cursor.failed(status if isinstance(status, int) else None)
                LOG.warning(
                    "%s: %s; %s in %.1f s", self.what, exc, "listing again" if status == 410 else "retrying", delay
                )
                self.stop.wait(delay)
            except Exception as exc:  # pylint: disable=broad-except
                delay = self.cursor.failed(None)
                LOG.warning("%s: %s: %s; retrying in %.1f s", self.what, type(exc).__name__, exc, delay)
                self.stop.wait(delay)

    def _list(self):
        first = self.cursor.counts["lists"] == 0
        items = self.io.list_items(self.path, self.what)
        changes = [(LISTED, obj) for obj in items] if first else relist_changes(self.known, items)
        self.known = dict((object_key(obj), obj) for obj in items)
        self.cursor.listed(self.io.list_versions.get(self.path))
        self.deliver(self.kind, changes, True)

    def _opened(self, response):
        self.response = response

    def _watch(self, version):
        for event in self.io.watch_events(self.path, version, self.what, self.watch_timeout, on_open=self._opened):
            if self.stop.is_set():
                return
            change = self.cursor.event(event)
            if self.cursor.must_list:
                LOG.info("%s: 410 Gone in the watch; listing again", self.what)
                return
            if change:
                obj = event["object"]
                if change == DELETED:
                    self.known.pop(object_key(obj), None)
                else:
                    self.known[object_key(obj)] = obj
                self.deliver(self.kind, [(change, obj)], False)
        self.cursor.ended()

    def shutdown(self):
        response = self.response
        if response is not None:
            try:
                response.shutdown()
            except Exception:  # pylint: disable=broad-except
                pass


def _read_done(path):
    """The pass result the playbook wrote (``None``: not yet)."""
    try:
        with open(path, encoding="utf-8") as handle:
            result = json.load(handle)
    except (OSError, ValueError):
        return None
    return result if isinstance(result, dict) else {"ok": False}


async def main(queue: asyncio.Queue, args: dict):
    """Follow HostClaims and BareMetalHosts; put object events and coalesced ``binder_pass`` events on ``queue``."""
    options = source_options(args)
    io = KubeIO(kube_api_client(options["auth"]), user_agent=USER_AGENT)
    tenancy = TenancyState(options["namespaces"], options["host_namespaces"])
    coalescer = PassCoalescer(
        debounce=options["debounce"],
        max_delay=options["max_delay"],
        pass_timeout=options["pass_timeout"],
        retry_delay=options["retry_delay"],
    )
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue = asyncio.Queue()
    stop = threading.Event()

    def deliver(kind, changes, listed):
        loop.call_soon_threadsafe(inbox.put_nowait, (kind, changes, listed))

    followers = [
        Follower(io, "claim", api_path(API_VERSION, CLAIMS), "HostClaims", deliver, stop, options["watch_timeout"]),
        Follower(io, "host", api_path(API_VERSION, HOSTS), "BareMetalHosts", deliver, stop, options["watch_timeout"]),
    ]
    done_dir = tempfile.mkdtemp(prefix="baremetal-tenancy-eda-")
    listed = set()
    worker_asked = None  # when the last binder_worker event was emitted (monotonic)
    said_alive = float("-inf")  # when the source last touched source.alive for its worker (monotonic)
    resync = options["resync"]
    next_resync = time.monotonic() + resync if resync else None
    relay_poll = options["relay_poll"]
    next_relay_poll = time.monotonic() + relay_poll if relay_poll else None
    try:
        for follower in followers:
            follower.start()
        while True:
            try:
                item = await asyncio.wait_for(inbox.get(), timeout=TICK)
            except asyncio.TimeoutError:
                item = None
            while item is not None:
                kind, changes, was_list = item
                now = time.monotonic()
                for change, obj in changes:
                    event, needed = tenancy.change(kind, change, obj)
                    if event is not None and options["object_events"]:
                        await queue.put(event)
                    coalescer.add(needed, now)
                if was_list:
                    listed.add(kind)
                item = inbox.get_nowait() if not inbox.empty() else None
            now = time.monotonic()
            running = coalescer.running
            if running is not None and running.get("done_file"):
                result = _read_done(running["done_file"])
                if result is not None:
                    ok, settled = result.get("ok") is True, result.get("settled") is True
                    LOG.info("binder pass %d ended: ok=%s settled=%s", running["id"], ok, settled)
                    coalescer.finished(running["id"], ok, settled, now)
                    try:
                        os.unlink(running["done_file"])
                    except OSError:
                        pass
            if next_resync is not None and now >= next_resync:
                coalescer.add(tenancy.claim_namespaces(), now)
                next_resync = now + resync
            if next_relay_poll is not None and now >= next_relay_poll:
                coalescer.add(tenancy.relayed_namespaces(), now)
                next_relay_poll = now + relay_poll
            if listed != {"claim", "host"}:
                continue  # the first pass waits for both listings
            if options["worker"]:
                if now - said_alive >= 1:
                    source_alive(done_dir)
                    said_alive = now
                age = worker_age(done_dir)
                stale = age is None or age > options["worker_timeout"]
                if stale and (worker_asked is None or now - worker_asked > options["worker_timeout"]):
                    worker_asked = now
                    LOG.info("asking for a binder worker (spool %s)", done_dir)
                    spool_event = {
                        "spool": done_dir,
                        "namespaces": options["namespaces"],
                        "host_namespaces": options["host_namespaces"],
                    }
                    await queue.put({"binder_worker": spool_event})
            request = coalescer.take(now)
            if request is None:
                continue
            done_file = os.path.join(done_dir, "pass-%d.json" % request["id"]) if options["wait_for_pass"] else None
            coalescer.running["done_file"] = done_file
            event = dict(request, host_namespaces=options["host_namespaces"], done_file=done_file)
            LOG.info(
                "binder pass %d for %s (%d changes)",
                request["id"],
                ", ".join(request["namespaces"]),
                request["changes"],
            )
            if options["worker"]:
                put_request(done_dir, event)
            else:
                await queue.put({"binder_pass": event})
            if done_file is None:
                coalescer.finished(request["id"], ok=True, settled=True, now=now)
    finally:
        stop.set()
        for follower in followers:
            follower.shutdown()
        shutil.rmtree(done_dir, ignore_errors=True)


if __name__ == "__main__":
    # A quick look at what the source emits: python metal3_events.py (K8S_AUTH_* in the environment).

    class _Printer:
        async def put(self, event):
            print(json.dumps(event), flush=True)

    asyncio.run(main(_Printer(), {"wait_for_pass": False}))
