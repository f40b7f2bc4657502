#!/usr/bin/python
# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


DOCUMENTATION = r"""
module: host_bind_worker
short_description: Run M(baremetal.tenancy.host_bind) passes for the EDA event source, one process for many passes
version_added: 0.1.0
description:
  - A long-running binder for the Event-Driven Ansible rulebook C(binder_worker.yml). The event source
    C(baremetal.tenancy.metal3_events) with C(worker=true) asks once for a worker (a C(binder_worker) event whose
    playbook C(baremetal.tenancy.metal3_bind_worker) runs this module) and then hands it each coalesced pass through the
    spool directory O(spool) instead of starting an C(ansible-playbook) per pass (5-7 s of start-up on loaded cores).
  - Each pass is a M(baremetal.tenancy.host_bind) pass with the same options and the same code, for the claim
    namespaces the source asks for (O(namespaces) when a request names none); the client and its connections stay
    open between passes. At the end of each pass
    the module writes C({id, ok, settled}) to the pass's done file, as the playbook C(baremetal.tenancy.metal3_bind_event)
    does, so the source asks for the next pass only then. A pass that fails is reported to the source, which asks
    again after its back-off; the worker goes on.
  - The module returns when the source removes O(spool) (the rulebook stopped). While it runs it touches
    C(worker.alive) in O(spool) every second; the source asks for a new worker when that stops.
author:
  - Baremetal Tenancy Contributors (@baremetal-tenancy)
extends_documentation_fragment:
  - baremetal.tenancy.bind_pass
  - baremetal.tenancy.kubernetes_auth
  - baremetal.tenancy.tls
  - baremetal.tenancy.attributes
  - baremetal.tenancy.attributes.platform
attributes:
  check_mode:
    support: none
    details: A worker writes (Ansible skips it in check mode); run M(baremetal.tenancy.host_bind) in check mode to see
      what a pass would do.
  diff_mode:
    support: none
options:
  spool:
    description:
      - The spool directory of the event source (the C(spool) of its C(binder_worker) event).
    type: path
    required: true
notes:
  - Needs the binder's credentials (the ClusterRole that the C(baremetal.tenancy.hostclaim_setup) role creates), never a
    tenant's.
seealso:
  - module: baremetal.tenancy.host_bind
"""

EXAMPLES = r"""
- name: Serve the binder passes the event source asks for (playbook metal3_bind_worker)
  baremetal.tenancy.host_bind_worker:
    spool: "{{ ansible_eda.event.binder_worker.spool }}"
    host_namespaces: "{{ ansible_eda.event.binder_worker.host_namespaces or omit }}"
"""

RETURN = r"""
passes:
  description: How many passes the worker ran.
  returned: always
  type: int
  sample: 42
failed:
  description: How many of them failed (each was reported to the event source, which asked again).
  returned: always
  type: int
  sample: 0
errors:
  description: The last failures (at most 10), as text.
  returned: always
  type: list
  elements: str
"""

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.base import TenancyModule
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.options import (
    BIND_SPEC,
    check_bind_options,
    make_binder,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.client import KubeIO
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.connection import kube_api_client
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.events.worker import serve


class HostBindWorkerModule(TenancyModule):
    object_kind = "host_bind_worker"
    backends = ("metal3",)
    module_kwargs = dict(supports_check_mode=False)  # a worker writes: Ansible skips it in check mode
    argument_spec = dict(
        ((key, value) for key, value in BIND_SPEC.items() if key != "name"), spool=dict(type="path", required=True)
    )

    def run(self):
        params = dict(self.params, name=None)
        check_bind_options(params)
        io = KubeIO(kube_api_client(params))

        def one_pass(request):
            scope = {}
            if request.get("namespaces"):
                scope["namespaces"] = list(request["namespaces"])
            if request.get("host_namespaces"):
                scope["host_namespaces"] = list(request["host_namespaces"])
            return make_binder(io, params, False, **scope).run()

        summary = serve(params["spool"], one_pass)
        self.changed(summary.pop("changed"))
        self.result.update(summary)


def main():
    HostBindWorkerModule()()


if __name__ == "__main__":
    main()
