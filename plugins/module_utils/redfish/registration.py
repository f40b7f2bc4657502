# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""host_register's runner: read BMCs (phase 1), then hand each host to its backend's registrar (phase 2).

The module calls :func:`run_host_register`.  Every host is handled on its
own: a failure (unreachable BMC, wrong credentials, not Redfish, a name
taken by another system, an Ironic refusal) is recorded in that host's
result and never stops the others.  Reads are separate from writes, so check
mode reads the BMCs and the backend and writes nothing.

The registrars are :class:`metal3.registration.Metal3Registrar` and
:class:`ironic.registration.IronicRegistrar`; a registrar whose ``parallel``
is true registers several hosts at a time.
"""

from __future__ import annotations

from typing import Any, Callable

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    BackendError,
    InvalidInput,
    TenancyError,
    from_exception,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.parallel import parallel_map
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import classify as classify_mod
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import client as redfish
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import registration_model as reg


class HostJob:
    """One BMC of the input and what became of it."""

    def __init__(self, index, spec):
        self.index = index
        self.spec = spec
        self.name = spec.get("name")
        self.facts = None
        self.document = None
        self.system_path = None
        self.base_url = None
        self.driver = "redfish"  # the address's Metal3 driver family (redfish.bmc_driver)
        self.classification = None
        self.error = None
        self.status = None
        self.changed = False
        self.before = None
        self.after = None
        self.ref = None
        self.warning = None
        self.reported_links = {}  # MAC -> switch port the BMC reported (LLDP), when asked to read them

    @property
    def label(self):
        return "BMC #%d%s" % (self.index, " (%s)" % self.name if self.name else "")

    def fail(self, error):
        self.error = error if isinstance(error, TenancyError) else from_exception(self.label, error)
        self.status = "failed"

    def result(self):
        out = dict(index=self.index, name=self.name, status=self.status, changed=self.changed)
        if self.facts:
            out["uuid"] = self.facts.get("uuid")
            out["facts"] = dict((k, v) for k, v in self.facts.items() if k != "name")
        if self.classification is not None:
            out.update(self.classification.as_dict())
        if self.ref:
            out.update(self.ref)
        if self.error is not None:
            out["error"] = self.error.message
            out["error_kind"] = self.error.details.get("bmc_error") or self.error.__class__.__name__
        return out


# ------------------------------------------------------------------ phase 1: BMCs


def read_bmc(job: HostJob, rules: list, timeout: int, links: bool = False) -> HostJob:
    """Read the system behind ``job``'s BMC and classify it (no writes); ``links``: also the switch ports its NICs
    see over LLDP, where the BMC reports them (:func:`registration_model.lldp_neighbours`)."""
    spec = job.spec
    with redfish.Bmc(
        job.label,
        spec["address"],
        spec["username"],
        spec["password"],
        validate_certs=spec.get("validate_certs", True),
        timeout=timeout,
    ) as bmc:
        job.base_url = bmc.base_url
        job.driver = redfish.bmc_driver(spec["address"])
        job.system_path, job.document = bmc.system_document()
        if links:
            job.reported_links = reg.lldp_neighbours(bmc.network_ports(job.document))
    job.facts = redfish.system_facts(job.document)
    if not reg.normal_uuid(job.facts.get("uuid")):
        raise InvalidInput(job.label, "the system reports no valid UUID (got %r)" % (job.facts.get("uuid"),))
    job.classification = classify_mod.classify(job.document, rules)
    extra = spec.get("labels") or {}
    if extra:
        merged = dict(job.classification.labels)
        merged.update(extra)
        job.classification.labels = merged
    return job


# ------------------------------------------------------------------ phase 2: metal3


# ------------------------------------------------------------------ phase 2: ironic


# ------------------------------------------------------------------ entry point


def host_spec_problem(spec: dict) -> str | None:
    """Validate one host entry of the input; raise InvalidInput."""
    redfish.parse_bmc_address(spec.get("address"))
    if spec.get("boot_mac_address"):
        reg.boot_mac({}, spec["boot_mac_address"])
    if spec.get("labels"):
        classify_mod.compile_rule(0, {"name": "labels of this host", "labels": spec["labels"]})


def run_host_register(mod: Any, connect_backend: Callable[[], Any]) -> None:
    """The whole host_register run; ``connect_backend()`` returns the backend's registrar."""
    params = mod.params
    rules = classify_mod.compile_rules(params.get("rules"))
    timeout = params.get("bmc_timeout") or 30
    links = params.get("backend") == "ironic"
    jobs = [HostJob(i, spec) for i, spec in enumerate(params["hosts"])]
    for job in jobs:
        try:
            host_spec_problem(job.spec)
        except TenancyError as err:
            job.fail(InvalidInput(job.label, err.message))
    todo = [j for j in jobs if j.error is None]
    for job, outcome in zip(
        todo, parallel_map(lambda j: read_bmc(j, rules, timeout, links), todo, params["workers"], errors="return")
    ):
        if isinstance(outcome, Exception):
            job.fail(outcome if isinstance(outcome, TenancyError) else redfish.bmc_error(job.label, outcome))
    readable = [j for j in jobs if j.error is None]
    # Two BMCs of the same system: the first wins, the second is an input error.
    seen = {}
    for job in readable:
        uuid = reg.normal_uuid(job.facts["uuid"])
        if uuid in seen:
            job.fail(InvalidInput(job.label, "is the same system (%s) as BMC #%d" % (uuid, seen[uuid])))
        else:
            seen[uuid] = job.index
    readable = [j for j in jobs if j.error is None]
    if readable:
        registrar = connect_backend()
        workers = params["workers"] if registrar.parallel else 1

        def register(job):
            registrar.register(job)
            return job

        for job, outcome in zip(readable, parallel_map(register, readable, workers, errors="return")):
            if isinstance(outcome, Exception):
                job.fail(outcome)
    results = [j.result() for j in jobs]
    for job in jobs:
        if job.warning:
            mod.warn(job.warning)
        if job.changed:
            mod.changed()
    failed = [r for r in results if r["status"] == "failed"]
    mod.result["hosts"] = results
    mod.result["registered"] = [r["name"] for r in results if r["status"] in ("registered", "updated", "unchanged")]
    mod.result["failed_hosts"] = [
        dict(index=r["index"], name=r["name"], error=r["error"], error_kind=r["error_kind"]) for r in failed
    ]
    mod.set_diff(
        dict((str(j.name or j.index), j.before) for j in jobs if j.status != "failed"),
        dict((str(j.name or j.index), j.after) for j in jobs if j.status != "failed"),
    )
    for item in failed:
        mod.warn("host_register: %s" % item["error"])
    if failed and not params.get("allow_partial", True):
        raise BackendError(
            "host_register",
            "%d of %d BMC(s) failed: %s" % (len(failed), len(results), "; ".join(r["error"] for r in failed)),
        )
