"""pytest plugin: what the fault suites (marker ``faults``, ``make test-faults``) share.

Loaded from ``tests/integration/conftest.py`` (``pytest_plugins``).

- marker ``faults``: suites that break things on purpose (bad input, processes killed
  mid-way, services slowed or cut off). They run on the session fixtures of the other
  suites (``metal3_env``, ``openstack_env``), never on stacks of their own.
- :func:`kube_snapshot` / :func:`ironic_snapshot`: every API object a module, role or
  the inventory plugin could write, read as the administrator, normalised so that two
  snapshots compare equal unless somebody wrote (fields controllers update on their
  own, such as a quota's usage, are left out). :func:`snapshot_diff` names what
  changed.
- :func:`has_traceback`: a Python traceback in some output.
- :class:`KillablePlaybook`: ``ansible-playbook`` in a process group of its own, to be
  killed with SIGKILL while its module runs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path

import yaml
from harness import procs
from harness.ansible import VENV_BIN, ansible_env
from harness.kube import call_ignoring as _ignore
from kubernetes import client


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "faults: breaks things on purpose: bad input, killed processes, slow services (make test-faults)"
    )
    config.addinivalue_line(
        "markers",
        "bad_input: the bad-input matrix, a fault suite that make integration runs in a session of its own (faults_input)",
    )


def has_traceback(*texts: str) -> bool:
    return any("Traceback (most recent call last)" in (text or "") for text in texts)


# --------------------------------------------------------------------------
# Kubernetes
# --------------------------------------------------------------------------

#: (group, version, plural) of the custom objects the collection writes
CUSTOM = (
    ("metal3.io", "v1alpha1", "hostclaims"),
    ("metal3.io", "v1alpha1", "baremetalhosts"),
    ("metal3.io", "v1alpha1", "hostdeploypolicies"),
)
#: metadata fields nobody's intent is in
_VOLATILE_META = ("resourceVersion", "managedFields", "generation")


def _normal(obj: dict, keep_status: bool) -> str:
    obj = dict(obj)
    meta = dict(obj.get("metadata") or {})
    for key in _VOLATILE_META:
        meta.pop(key, None)
    obj["metadata"] = meta
    if not keep_status:
        obj.pop("status", None)
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def _key(obj: dict, kind: str) -> str:
    meta = obj.get("metadata") or {}
    return "%s %s/%s" % (kind, meta.get("namespace") or "-", meta.get("name"))


def kube_snapshot(api: client.ApiClient) -> dict[str, str]:
    """Every object of the kinds the collection writes (its roles included), as the admin reads them.

    Custom objects keep their status (the binder writes claim status); built-in kinds
    drop theirs (controllers update it). Objects being deleted are marked, so that a
    namespace some earlier test deleted and that vanishes meanwhile is not a change."""
    out: dict[str, str] = {}
    custom = client.CustomObjectsApi(api)
    for group, version, plural in CUSTOM:
        listing = _ignore(404, custom.list_cluster_custom_object, group, version, plural)
        for obj in (listing or {}).get("items", []):
            out[_key(obj, plural)] = _normal(obj, keep_status=True)
    sanitize = api.sanitize_for_serialization
    core = client.CoreV1Api(api)
    rbac = client.RbacAuthorizationV1Api(api)
    net = client.NetworkingV1Api(api)
    ext = client.ApiextensionsV1Api(api)
    adm = client.AdmissionregistrationV1Api(api)
    listings = {
        "namespace": core.list_namespace,
        "secret": core.list_secret_for_all_namespaces,
        "serviceaccount": core.list_service_account_for_all_namespaces,
        "resourcequota": core.list_resource_quota_for_all_namespaces,
        "limitrange": core.list_limit_range_for_all_namespaces,
        "rolebinding": rbac.list_role_binding_for_all_namespaces,
        "role": rbac.list_role_for_all_namespaces,
        "clusterrole": rbac.list_cluster_role,
        "clusterrolebinding": rbac.list_cluster_role_binding,
        "networkpolicy": net.list_network_policy_for_all_namespaces,
        "crd": ext.list_custom_resource_definition,
        "validatingadmissionpolicy": adm.list_validating_admission_policy,
        "validatingadmissionpolicybinding": adm.list_validating_admission_policy_binding,
    }
    for kind, lister in listings.items():
        for item in lister().items:
            obj = sanitize(item)
            out[_key(obj, kind)] = _normal(obj, keep_status=False)
            if (obj.get("metadata") or {}).get("deletionTimestamp"):
                out[_key(obj, kind)] = "deleting"
    return out


# --------------------------------------------------------------------------
# OpenStack (Keystone, Ironic) and BMCs
# --------------------------------------------------------------------------

_NODE_FIELDS = (
    "name",
    "owner",
    "lessee",
    "provision_state",
    "target_provision_state",
    "instance_info",
    "instance_id",
    "allocation_id",
    "extra",
    "properties",
    "traits",
    "resource_class",
    "is_maintenance",
    "description",
    "driver",
    "deploy_interface",
    "boot_interface",
)


def ironic_snapshot(env, files: Iterable[Path] = (), emulators: Iterable = ()) -> dict[str, str]:
    """Nodes, allocations and ports (admin view), Keystone projects, users and role assignments,
    the contents of ``files`` (Ironic's policy file) and the accounts of the BMC ``emulators``."""
    conn = env.admin_conn
    out: dict[str, str] = {}

    def put(key: str, value) -> None:
        out[key] = hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()

    for node in conn.baremetal.nodes(details=True):
        put("node %s" % node.id, {f: getattr(node, f, None) for f in _NODE_FIELDS})
        put("node %s driver_info" % node.id, node.driver_info)
    for allocation in conn.baremetal.allocations():
        put("allocation %s" % allocation.id, allocation.to_dict(computed=False))
    for port in conn.baremetal.ports(details=True):
        put("port %s" % port.id, {"address": port.address, "node": port.node_id, "extra": port.extra})
    for project in conn.identity.projects():
        put("project %s" % project.id, {"name": project.name, "enabled": project.is_enabled, "tags": project.tags})
    for user in conn.identity.users():
        put("user %s" % user.id, {"name": user.name, "enabled": user.is_enabled, "project": user.default_project_id})
    assignments = sorted(
        json.dumps(a.to_dict(computed=False), sort_keys=True, default=str) for a in conn.identity.role_assignments()
    )
    put("role assignments", assignments)
    for path in files:
        put("file %s" % path, Path(path).read_text() if Path(path).exists() else None)
    for emulator in emulators:
        for account in emulator.accounts():
            put("bmc %s account %s" % (emulator.base_url, account.get("Id")), account.get("@odata.etag") or account)
    return out


def snapshot_diff(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """What changed between two snapshots: ``+ key`` created, ``- key`` deleted, ``~ key`` changed.
    Objects that were being deleted in ``before`` are not changes."""
    changes = []
    for key in sorted(set(before) | set(after)):
        if before.get(key) == "deleting":
            continue
        if key not in before:
            changes.append("+ " + key)
        elif key not in after:
            changes.append("- " + key)
        elif before[key] != after[key]:
            changes.append("~ " + key)
    return changes


# --------------------------------------------------------------------------
# A playbook that can be killed
# --------------------------------------------------------------------------


class KillablePlaybook:
    """``ansible-playbook`` on localhost, its output in ``workdir/output.log``.

    :meth:`kill` sends SIGKILL to the playbook and every process under it (its worker and the
    module's process, as a cancelled job, an OOM kill or a lost machine end them);
    :meth:`module_running` tells when the module's own process (``AnsiballZ_<module>``) runs."""

    def __init__(self, plays: list, env: dict, workdir: Path):
        workdir.mkdir(parents=True, exist_ok=True)
        path = workdir / "play.yml"
        path.write_text(yaml.safe_dump(plays, sort_keys=False))
        self.workdir = workdir
        self._log = open(workdir / "output.log", "w", encoding="utf-8")
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [str(VENV_BIN / "ansible-playbook"), "-i", "localhost,", str(path)],
            env=ansible_env(env, workdir, zygote=False),  # the module's process in the tree it kills
            cwd=str(workdir),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    @property
    def output(self) -> str:
        return (self.workdir / "output.log").read_text()

    def tree(self) -> list[int]:
        """The playbook's process and all its descendants (ansible's workers call ``setsid``: a process group
        does not hold them)."""
        return procs.process_tree(self.proc.pid)

    def module_running(self, module: str) -> bool:
        """Whether the module's own process runs (:func:`procs.runs_ansible_module`: an interpreter whose script is
        its ``AnsiballZ_<module>.py``). Not the shells the worker runs around it (the ``chmod`` before it, the one
        that starts it, the ``rm`` after), whose commands name that file too: a match on those would say the module
        runs before it started, then not, then again."""
        return any(procs.runs_ansible_module(pid, module) for pid in self.tree()[1:])

    def wait_module(self, module: str, timeout: float = 180) -> bool:
        """Wait until the module's process runs (``True``; its start in ``module_started``) or the playbook
        ended (``False``)."""
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None:
            if self.module_running(module):
                self.module_started = time.monotonic()
                return True
            assert time.monotonic() < deadline, "module %s did not start in %s s" % (module, timeout)
            time.sleep(0.02)
        return False

    def kill(self) -> bool:
        """SIGKILL the whole group; ``True`` when the playbook was still running."""
        alive = self.proc.poll() is None
        if alive:
            # stop the whole tree first (nothing forks any more), then kill every process in it
            stopped: set[int] = set()
            while True:
                tree = set(self.tree()) - stopped
                if not tree:
                    break
                for pid in tree:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGSTOP)
                stopped |= tree
            for pid in stopped:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        self.proc.wait(timeout=60)
        self._log.close()
        return alive

    def wait(self, timeout: float = 900) -> int:
        rc = self.proc.wait(timeout=timeout)
        self.ended = time.monotonic()
        self._log.close()
        return rc

    def module_seconds(self, module: str, timeout: float = 900) -> float | None:
        """After :meth:`wait_module`: wait until the module's process has ended, and return how long it ran."""
        started = getattr(self, "module_started", None)
        if started is None:
            return None
        deadline = time.monotonic() + timeout
        while self.module_running(module):
            assert time.monotonic() < deadline, "module %s still runs after %s s" % (module, timeout)
            time.sleep(0.02)
        return time.monotonic() - started


def saved_result(task: dict, register: str, path: Path) -> list[dict]:
    """``task`` registered as ``register``, then a task writing that result as JSON to ``path``."""
    return [
        dict(task, register=register),
        {
            "name": "save %s" % register,
            "ansible.builtin.copy": {"dest": str(path), "content": "{{ %s | to_json }}" % register},
            "no_log": True,
        },
    ]
