# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""host_register's I/O: read BMCs, then create or update hosts on metal3 or ironic.

The module calls :func:`run_host_register`.  Every host is handled on its
own: a failure (unreachable BMC, wrong credentials, not Redfish, a name
taken by another system, an Ironic refusal) is recorded in that host's
result and never stops the others.  Reads are separate from writes, so check
mode reads the BMCs and the backend and writes nothing.

metal3 needs a Kubernetes client with rights on BareMetalHosts and Secrets in
the infrastructure namespace; ironic a system-scoped (admin) connection.
"""

import threading
import time

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    BackendError,
    Conflict,
    InvalidInput,
    TenancyError,
    WaitTimeout,
    from_exception,
    wrap_errors,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.params import check_timeout
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.connection import IRONIC_MICROVERSION
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import classify as classify_mod
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import client as redfish
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import registration_model as reg

BMH_GROUP, BMH_VERSION, BMH_PLURAL = "metal3.io", "v1alpha1", "baremetalhosts"
NODE_FIELDS = (
    "uuid",
    "name",
    "driver",
    "driver_info",
    "resource_class",
    "owner",
    "properties",
    "extra",
    "provision_state",
    "target_provision_state",
    "last_error",
    "traits",
    "maintenance",
)

POLL = 1.0
RETRIES = 8


def _transient(response):
    """Whether an Ironic answer is worth retrying as it is."""
    status = response.status_code
    if status == 503:
        return True
    if status not in (409, 500):
        return False
    text = (response.text or "").lower()
    if status == 409:
        return "locked" in text or "reserved" in text
    return "database is locked" in text


def _pool_map(func, items, workers):
    """``[func(item) for item in items]`` on up to ``workers`` threads; order kept.

    Exceptions are returned in place of results (each host fails alone).
    """
    results = [None] * len(items)
    index = [0]
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                i = index[0]
                index[0] += 1
            if i >= len(items):
                return
            try:
                results[i] = func(items[i])
            except Exception as exc:  # pylint: disable=broad-except
                results[i] = exc

    threads = [threading.Thread(target=worker) for unused in range(max(1, min(workers, len(items))))]
    for thread in threads:
        thread.daemon = True
        thread.start()
    for thread in threads:
        thread.join()
    return results


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
        self.classification = None
        self.error = None
        self.status = None
        self.changed = False
        self.before = None
        self.after = None
        self.ref = None
        self.warning = None

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


def read_bmc(job, rules, timeout):
    """Read the system behind ``job``'s BMC and classify it (no writes)."""
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
        job.system_path, job.document = bmc.system_document()
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


class Metal3Registrar:
    def __init__(self, api_client, namespace, check_mode, host_claim_namespaces=None):
        from kubernetes import client as k8s_client

        self.custom = k8s_client.CustomObjectsApi(api_client)
        self.core = k8s_client.CoreV1Api(api_client)
        self.api_client = api_client
        self.namespace = namespace
        self.check_mode = check_mode
        self.claim_namespaces = host_claim_namespaces
        with wrap_errors("BareMetalHosts in namespace %s" % namespace):
            listing = self.custom.list_namespaced_custom_object(BMH_GROUP, BMH_VERSION, namespace, BMH_PLURAL)
        self.by_name = dict((h["metadata"]["name"], h) for h in listing.get("items", []))
        self.by_uuid = {}
        for host in self.by_name.values():
            uuid = reg.normal_uuid((host["metadata"].get("annotations") or {}).get(reg.SYSTEM_UUID_ANNOTATION))
            if uuid:
                self.by_uuid[uuid] = host

    def _secret(self, name):
        from kubernetes.client.exceptions import ApiException

        try:
            secret = self.core.read_namespaced_secret(name, self.namespace)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return self.api_client.sanitize_for_serialization(secret)

    def register(self, job):
        uuid = reg.normal_uuid(job.facts["uuid"])
        existing = self.by_uuid.get(uuid)
        name = existing["metadata"]["name"] if existing else reg.host_name(job.spec.get("name"), job.facts, "metal3")
        job.name = name
        obj = "BareMetalHost %s/%s" % (self.namespace, name)
        if existing is None and name in self.by_name:
            raise Conflict(
                obj,
                "exists for another system (its %s is %r, this BMC's system is %s)"
                % (
                    reg.SYSTEM_UUID_ANNOTATION,
                    (self.by_name[name]["metadata"].get("annotations") or {}).get(reg.SYSTEM_UUID_ANNOTATION),
                    uuid,
                ),
            )
        if existing is not None and job.spec.get("name") and job.spec["name"] != name:
            job.warning = "system %s is already registered as %s; name %s ignored" % (uuid, name, job.spec["name"])
        secret_name = ((existing or {}).get("spec", {}).get("bmc") or {}).get("credentialsName") or reg.secret_name(
            name
        )
        desired = reg.desired_bmh(
            name,
            self.namespace,
            job.facts,
            job.classification.labels,
            redfish.bmh_address(job.base_url, job.system_path),
            secret_name,
            validate_certs=job.spec.get("validate_certs", True),
            boot_mac_address=job.spec.get("boot_mac_address"),
            host_claim_namespaces=self.claim_namespaces,
        )
        spec = job.spec
        with wrap_errors("Secret %s/%s" % (self.namespace, secret_name)):
            secret = self._secret(secret_name)
            secret_change = secret is None or reg.secret_differs(secret, spec["username"], spec["password"])
            if secret_change and not self.check_mode:
                body = reg.desired_secret(secret_name, self.namespace, spec["username"], spec["password"])
                if secret is None:
                    self.core.create_namespaced_secret(self.namespace, body)
                else:
                    body["metadata"]["resourceVersion"] = secret["metadata"]["resourceVersion"]
                    body["metadata"]["labels"] = dict(
                        secret["metadata"].get("labels") or {}, **body["metadata"]["labels"]
                    )
                    self.core.replace_namespaced_secret(secret_name, self.namespace, body)
        job.before = reg.bmh_view(existing)
        with wrap_errors(obj):
            if existing is None:
                job.after = reg.bmh_view(desired)
                job.status = "registered"
                job.changed = True
                if not self.check_mode:
                    created = self.custom.create_namespaced_custom_object(
                        BMH_GROUP, BMH_VERSION, self.namespace, BMH_PLURAL, desired
                    )
                    self.by_name[name] = self.by_uuid[uuid] = created
            else:
                patch = reg.bmh_patch(existing, desired, self.claim_namespaces is not None)
                from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import (
                    apply_merge_patch,
                )

                after = apply_merge_patch(existing, patch) if patch else existing
                job.after = reg.bmh_view(after)
                job.changed = bool(patch) or secret_change
                job.status = "updated" if job.changed else "unchanged"
                if patch and not self.check_mode:
                    patch.setdefault("metadata", {})["resourceVersion"] = existing["metadata"]["resourceVersion"]
                    self.custom.patch_namespaced_custom_object(
                        BMH_GROUP, BMH_VERSION, self.namespace, BMH_PLURAL, name, patch
                    )
        if secret_change and job.after is not None:
            job.after = dict(job.after, credentials="<changed>")
        job.ref = dict(bareMetalHost=name, namespace=self.namespace)


# ------------------------------------------------------------------ phase 2: ironic


def _raise_for(response, obj):
    from openstack import exceptions as os_exc

    try:
        os_exc.raise_from_response(response)
    except Exception as exc:
        raise from_exception(obj, exc)


class IronicRegistrar:
    def __init__(
        self,
        connect,
        check_mode,
        owner=None,
        default_resource_class=reg.DEFAULT_RESOURCE_CLASS,
        interfaces=None,
        update_password=False,
        wait_timeout=600,
    ):
        self.connect = connect
        self.local = threading.local()
        self.check_mode = check_mode
        self.owner = owner
        self.default_resource_class = default_resource_class
        self.interfaces = interfaces or {}
        self.update_password = update_password
        self.wait_timeout = check_timeout(wait_timeout)
        conn = self.conn()
        with wrap_errors("Ironic nodes"):
            response = conn.baremetal.get("/nodes?fields=uuid,name,driver,extra", microversion=IRONIC_MICROVERSION)
            _raise_for(response, "Ironic nodes")
            nodes = response.json().get("nodes", [])
        self.by_uuid, self.by_name = {}, {}
        for node in nodes:
            uuid = reg.normal_uuid((node.get("extra") or {}).get(reg.SYSTEM_UUID_KEY)) or reg.normal_uuid(
                node.get("uuid")
            )
            self.by_uuid.setdefault(uuid, node)
            if node.get("name"):
                self.by_name[node["name"]] = node
        self.lock = threading.Lock()

    def conn(self):
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = self.connect()
        return conn

    def _req(self, method, path, obj, **kwargs):
        """One Ironic request; a node locked by the conductor (409) or a busy
        database (503, or 500 "database is locked" on sqlite) is retried."""
        conn = self.conn()
        for attempt in range(RETRIES + 1):
            with wrap_errors(obj):
                response = getattr(conn.baremetal, method)(path, microversion=IRONIC_MICROVERSION, **kwargs)
                if attempt < RETRIES and _transient(response):
                    time.sleep(min(0.5 * (attempt + 1), 3))
                    continue
                _raise_for(response, obj)
                return response.json() if response.content else {}

    def _get_node(self, ident, obj):
        return self._req("get", "/nodes/%s" % ident, obj)

    def register(self, job):
        uuid = reg.normal_uuid(job.facts["uuid"])
        with self.lock:
            existing = self.by_uuid.get(uuid)
        name = (
            existing["name"]
            if existing and existing.get("name")
            else reg.host_name(job.spec.get("name"), job.facts, "ironic")
        )
        job.name = name
        obj = "node %s" % name
        if existing is None and name in self.by_name:
            raise Conflict(obj, "exists for another system (node %s)" % self.by_name[name]["uuid"])
        if existing is not None and existing.get("driver") != "redfish":
            raise Conflict(obj, "uses driver %s, not redfish: host_register leaves it alone" % existing.get("driver"))
        info = reg.driver_info(
            job.base_url,
            job.system_path,
            job.spec["username"],
            job.spec["password"],
            job.spec.get("validate_certs", True),
        )
        desired = reg.desired_node(
            name, job.facts, job.classification, info, self.owner, self.default_resource_class, self.interfaces
        )
        job.ref = dict(node=name, node_uuid=(existing or {}).get("uuid") or uuid)
        if existing is None:
            traits = reg.node_traits([], [], job.classification.traits)
            job.before = {}
            job.after = reg.node_view(
                dict(desired, provision_state="available"), traits, reg.missing_ports(job.facts, [])
            )
            job.changed = True
            job.status = "registered"
            if self.check_mode:
                return
            node = self._req("post", "/nodes", obj, json=desired)
            with self.lock:
                self.by_uuid[uuid] = self.by_name[name] = node
            job.ref["node_uuid"] = node["uuid"]
            self._finish(job, node, traits, [], obj)
            return
        node = self._get_node(existing["uuid"], obj)
        ops = reg.node_patch(node, desired, self.update_password)
        ports = self._req("get", "/ports?node_uuid=%s&fields=address" % node["uuid"], obj).get("ports", [])
        have_macs = [p["address"] for p in ports]
        previously = (node.get("extra") or {}).get(reg.MANAGED_TRAITS_KEY) or []
        traits = reg.node_traits(node.get("traits") or [], previously, job.classification.traits)
        steps = reg.provision_steps(node.get("provision_state"))
        missing = reg.missing_ports(job.facts, have_macs)
        trait_change = sorted(node.get("traits") or []) != traits
        job.before = reg.node_view(node, node.get("traits"), have_macs)
        job.after = reg.node_view(
            dict(node, **dict((k, v) for k, v in desired.items() if k not in ("driver_info",))),
            traits,
            have_macs + missing,
        )
        job.after["driver_info"] = job.before["driver_info"]
        if steps:
            job.after["provision_state"] = "available"
        job.changed = bool(ops or missing or trait_change or steps)
        job.status = "updated" if job.changed else "unchanged"
        if self.check_mode or not job.changed:
            return
        if ops:
            node = self._req("patch", "/nodes/%s" % node["uuid"], obj, json=ops)
        self._finish(job, node, traits if trait_change else None, have_macs, obj)

    def _finish(self, job, node, traits, have_macs, obj):
        for mac in reg.missing_ports(job.facts, have_macs):
            self._req("post", "/ports", "port %s of %s" % (mac, obj), json={"node_uuid": node["uuid"], "address": mac})
        if traits is not None:
            self._req("put", "/nodes/%s/traits" % node["uuid"], obj, json={"traits": traits})
        steps = reg.provision_steps(node.get("provision_state"))
        if steps is None:
            return
        for action, reached in steps:
            self._req("put", "/nodes/%s/states/provision" % node["uuid"], obj, json={"target": action})
            self._wait(node["uuid"], reached, obj)

    def _wait(self, uuid, state, obj):
        """Poll the node until it settles in ``state``: 1 s, then backing off to 3 s
        (Ironic's API and conductor often share one process: polls slow it down)."""
        deadline = time.monotonic() + self.wait_timeout
        polls = 0
        while True:
            polls += 1
            node = self._req("get", "/nodes/%s?fields=provision_state,target_provision_state,last_error" % uuid, obj)
            if node.get("provision_state") == state and not node.get("target_provision_state"):
                return node
            if not node.get("target_provision_state") and node.get("last_error"):
                raise BackendError(
                    obj,
                    "stopped in %s on the way to %s: %s"
                    % (node.get("provision_state"), state, _scrub(node.get("last_error"))),
                )
            if time.monotonic() > deadline:
                raise WaitTimeout(
                    obj, "not %s after %ss (now %s)" % (state, self.wait_timeout, node.get("provision_state"))
                )
            time.sleep(min(POLL * (1 + polls // 3), 3.0))


def _scrub(text):
    """Ironic errors may quote the BMC URL: keep the cause, drop URLs."""
    import re

    return re.sub(r"[a-z][a-z0-9+.-]*://\S+", "<bmc>", str(text or ""))[:500]


# ------------------------------------------------------------------ entry point


def host_spec_problem(spec):
    """Validate one host entry of the input; raise InvalidInput."""
    redfish.parse_bmc_address(spec.get("address"))
    if spec.get("boot_mac_address"):
        reg.boot_mac({}, spec["boot_mac_address"])
    if spec.get("labels"):
        classify_mod.compile_rule(0, {"name": "labels of this host", "labels": spec["labels"]})


def run_host_register(mod, connect_backend):
    """The whole host_register run; ``connect_backend()`` returns the backend's registrar."""
    params = mod.params
    rules = classify_mod.compile_rules(params.get("rules"))
    timeout = params.get("bmc_timeout") or 30
    jobs = [HostJob(i, spec) for i, spec in enumerate(params["hosts"])]
    for job in jobs:
        try:
            host_spec_problem(job.spec)
        except TenancyError as err:
            job.fail(InvalidInput(job.label, err.message))
    todo = [j for j in jobs if j.error is None]
    for job, outcome in zip(todo, _pool_map(lambda j: read_bmc(j, rules, timeout), todo, params["workers"])):
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
        workers = params["workers"] if isinstance(registrar, IronicRegistrar) else 1

        def register(job):
            registrar.register(job)
            return job

        for job, outcome in zip(readable, _pool_map(register, readable, workers)):
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
