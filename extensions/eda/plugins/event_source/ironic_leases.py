# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""baremetal.tenancy.ironic_leases: an Event-Driven Ansible source following the ends of Ironic leases.

What it does:

* polls Ironic every ``interval`` seconds for the nodes (name, UUID, lessee,
  provision state, ``properties``: the lease records and the lease notice,
  see ``host_lease``) and the allocations (name, UUID, state, node) the
  credentials see, through the collection's one Ironic client;
* emits ``{lease_warning: {...}}`` for a node whose lessee's lease ends
  within ``warn_ahead`` seconds and that carries no notice of that end yet,
  and ``{lease_ending: {...}}`` once the end is within ``lead_time`` seconds
  (or has passed): the playbook ``baremetal.tenancy.ironic_lease_event``
  (rulebook ``lease_keeper.yml``) writes the notice, or waits for the end
  and ends the lease, with ``host_lease state=expired``;
* each event has ``node``, ``node_uuid``, ``provision_state``, ``lease``,
  ``project``, ``end`` (ISO 8601, UTC), ``seconds_left``, ``allocation``
  (``{name, uuid, state}`` or null), ``warn_before`` and, for an ending,
  ``lead_time``: names and states only, never BMC data (nothing of
  ``driver_info``, ``extra`` or ``instance_info`` is read);
* emits an event once, again after ``retry`` seconds if its effect is still
  missing (the notice, or the end of the lease); resumes cleanly after a
  restart: the warnings given are read back from the nodes, and the endings
  under way are asked for again (the playbook reads the node at the end, so
  a second run finds nothing left to do);
* a failed poll (Ironic or Keystone unreachable) is logged and retried at the
  next interval; the connection is made again.

Options (each auth option falls back to the environment variable the modules
read): ``cloud`` (OS_CLOUD; clouds.yaml found through OS_CLIENT_CONFIG_FILE
as AWX's OpenStack credential sets it), ``auth`` (OS_AUTH_URL, OS_USERNAME,
OS_PASSWORD, OS_PROJECT_NAME, OS_SYSTEM_SCOPE and the other OS_* auth
variables), ``auth_type`` (OS_AUTH_TYPE), ``region_name`` (OS_REGION_NAME),
``interface`` (OS_INTERFACE), ``api_timeout`` (OS_API_TIMEOUT), ``ca_cert``
(OS_CACERT), ``validate_certs`` (OS_VERIFY); ``interval`` (5 s between polls),
``lead_time`` (30 s: how long before an end the ending is asked for; more
than an ``ansible-playbook`` start, 5-7 s on loaded cores; at least
``interval``), ``warn_ahead`` (3600 s: how long before an end the lessee is
warned; at least ``lead_time``), ``retry`` (60 s), ``nodes`` (names or UUIDs
to follow; default every node the credentials see), ``resource_class`` (only
nodes of this class).  The credentials are the pool owner's: a system reader
or a member of the project owning the nodes (``host_lease`` needs the same to
end the leases).

Example (``extensions/eda/rulebooks/lease_keeper.yml``)::

    - name: Ironic lease keeper
      hosts: localhost
      execution_strategy: parallel
      sources:
        - baremetal.tenancy.ironic_leases:
            interval: 5
            lead_time: 30
            warn_ahead: 3600
      rules:
        - name: End a lease at its end
          condition: event.lease_ending is defined
          action:
            run_playbook:
              name: baremetal.tenancy.ironic_lease_event
"""

from __future__ import annotations

import asyncio
import datetime
import json
import logging
import os
import sys
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
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.client import Ironic
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.esi_leap_client import EsiLeap, lease_endpoint
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.esi_leap_keeper import (
    EsiLeaseTracker,
    ended_leases,
    last_event_id,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.lease_events import (
    ENDING,
    SOURCE_ALLOCATION_FIELDS,
    SOURCE_NODE_FIELDS,
    LeaseTracker,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.lease_source_options import (
    source_options,
)

LOG = logging.getLogger("baremetal.tenancy.ironic_leases")


class PoolReader:
    """Reads the nodes and allocations the source follows (blocking: run in a worker thread)."""

    def __init__(self, options):
        self.options = options
        self.client = None
        self.esi = None
        self.esi_checked = False
        self.last_event = None  # the ID of the last ESI-Leap event read (None: none yet)
        self.started = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())  # events before the start are not read

    def read_esi(self):
        """ESI-Leap's active leases and the ends its events report since the last poll, or ``None`` where the
        catalog has no ESI-Leap (looked up once per connection)."""
        if not self.esi_checked:
            self.esi_checked = True
            endpoint = lease_endpoint(self.client.conn)
            self.esi = EsiLeap(self.client.conn, endpoint) if endpoint else None
        if self.esi is None:
            return None
        leases = self.esi.list_leases(status="active")
        since = (
            [("last_event_id", self.last_event)] if self.last_event is not None else [("last_event_time", self.started)]
        )
        page = self.esi.request("get", "/events", "ESI-Leap events", params=since)
        events = (page or {}).get("events") or []
        self.last_event = last_event_id(events, self.last_event)
        return leases, ended_leases(events)

    def read(self):
        if self.client is None:
            self.client = Ironic.from_params(self.options["auth"])
        try:
            if self.options["nodes"]:
                found = [
                    self.client.get_node(ident, fields=SOURCE_NODE_FIELDS, missing_ok=True)
                    for ident in self.options["nodes"]
                ]
                nodes = [node for node in found if node is not None]  # a node deleted since has no lease to end
            else:
                nodes = self.client.list_nodes(fields=SOURCE_NODE_FIELDS, resource_class=self.options["resource_class"])
            allocations = self.client.list_allocations(fields=SOURCE_ALLOCATION_FIELDS)
            esi = self.read_esi()
        except Exception:
            self.client = None  # a new connection (and token) next time
            self.esi_checked = False
            raise
        return nodes, allocations, esi


async def main(queue: asyncio.Queue, args: dict):
    """Poll Ironic every ``interval`` seconds; put ``lease_warning`` and ``lease_ending`` events on ``queue``."""
    options = source_options(args)
    tracker = LeaseTracker(options["warn_ahead"], options["lead_time"], options["retry"])
    esi_tracker = EsiLeaseTracker(options["warn_ahead"], options["lead_time"], options["retry"])
    reader = PoolReader(options)
    loop = asyncio.get_running_loop()
    reported = set()
    polls = 0
    while True:
        started = time.monotonic()
        try:
            nodes, allocations, esi = await loop.run_in_executor(None, reader.read)
        except Exception as exc:  # pylint: disable=broad-except
            LOG.warning("reading Ironic: %s: %s; retrying in %.1f s", type(exc).__name__, exc, options["interval"])
        else:
            polls += 1
            if polls == 1:
                LOG.info(
                    "following %d nodes and %d allocations%s every %.1f s (lead time %.1f s, warnings %.1f s ahead)",
                    len(nodes),
                    len(allocations),
                    " and %d ESI-Leap leases" % len(esi[0]) if esi is not None else "",
                    options["interval"],
                    options["lead_time"],
                    options["warn_ahead"],
                )
            now = datetime.datetime.now(datetime.timezone.utc)
            events, problems = tracker.poll(nodes, allocations, now)
            if esi is not None:
                leases, ended = esi
                for uuid, when in sorted(ended.items()):
                    LOG.info("ESI-Leap ended lease %s at %s", uuid, when)
                events += esi_tracker.poll_esi(nodes, leases, allocations, now, ended)
            for problem in problems:
                if problem not in reported:
                    LOG.warning("%s", problem)
            reported = set(problems)
            for event in events:
                kind = next(iter(event))
                body = event[kind]
                LOG.info(
                    "%s: node %s, %slease %s of project %s ends at %s (in %.1f s)",
                    "ending" if kind == ENDING else "warning",
                    body["node"],
                    "ESI-Leap " if body.get("provider") else "",
                    body["lease"],
                    body["project"],
                    body["end"],
                    body["seconds_left"],
                )
                await queue.put(event)
        await asyncio.sleep(max(0.0, options["interval"] - (time.monotonic() - started)))


if __name__ == "__main__":
    # A quick look at what the source emits: python ironic_leases.py (OS_CLOUD in the environment).

    class _Printer:
        async def put(self, event):
            print(json.dumps(event), flush=True)

    asyncio.run(main(_Printer(), {"interval": 2}))
