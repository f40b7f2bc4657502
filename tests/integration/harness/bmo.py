"""The test plays the baremetal-operator: BareMetalHosts move through their states here.

Metal3's baremetal-operator does not run in the tests. Where a test needs a
BareMetalHost to be registered, provisioned, powered, rebooted or cleaned, it
calls :class:`PlaysBareMetalOperator`, which writes the host's ``status`` (and
removes the one-shot annotations) as the cluster admin, the way the operator
would react to the spec the binder wrote. Nothing else in the tests writes a
host's status.

What one :meth:`PlaysBareMetalOperator.step` does to each host, as the
operator would (one state transition per step, so tests can observe the
intermediate states):

- ``available``/``ready`` with ``spec.image`` and a ``consumerRef`` ->
  ``provisioning``;
- ``provisioning`` -> ``provisioned`` (``status.provisioning.image`` = the
  image), power follows ``spec.online``;
- ``provisioned`` without ``spec.image`` -> ``deprovisioning``;
  ``deprovisioning`` -> ``available``, powered off;
- ``provisioned``: ``status.poweredOn`` follows ``spec.online``;
- ``reboot.metal3.io`` (one-shot, empty or JSON value): recorded in
  :attr:`reboots`, annotation removed; ``inspect.metal3.io``: recorded in
  :attr:`inspections`, annotation removed.
"""

from __future__ import annotations

import contextlib
import threading
import time

from kubernetes import client
from kubernetes.client.exceptions import ApiException

GROUP, VERSION, PLURAL = "metal3.io", "v1alpha1", "baremetalhosts"
MERGE = "application/merge-patch+json"
REBOOT = "reboot.metal3.io"
INSPECT = "inspect.metal3.io"


def default_nics(index: int) -> list[dict]:
    return [
        {
            "name": "eno1",
            "mac": "52:54:00:10:%02x:%02x" % (index // 256, index % 256),
            "ip": "192.0.2.%d" % (index % 250 + 1),
        },
        {"name": "eno2", "mac": "52:54:00:20:%02x:%02x" % (index // 256, index % 256)},
    ]


class PlaysBareMetalOperator:
    """Moves BareMetalHosts through their provisioning states, as the cluster admin."""

    def __init__(self, api, namespaces: list[str]):
        self.api = api
        self.custom = client.CustomObjectsApi(api)
        self.namespaces = list(namespaces)
        self.reboots: list[tuple[str, str, str]] = []  # (namespace, host, value)
        self.inspections: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    # -- registration --------------------------------------------------------
    def register(
        self,
        namespace: str,
        name: str,
        *,
        state: str = "available",
        nics: list[dict] | None = None,
        hostname: str | None = None,
        index: int = 1,
        operational: str = "OK",
        error: str | None = None,
    ) -> dict:
        """Inspection done: write the status of a freshly created host."""
        hardware = {"nics": nics if nics is not None else default_nics(index)}
        if hostname:
            hardware["hostname"] = hostname
        status = {
            "operationalStatus": operational,
            "poweredOn": False,
            "provisioning": {"state": state, "ID": "ironic-%s-%s" % (namespace, name)},
            "hardware": hardware,
        }
        if error:
            status["errorType"] = "registration error"
            status["errorMessage"] = error
        return self._status(namespace, name, status)

    def _status(self, namespace: str, name: str, status: dict) -> dict:
        return self.custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, namespace, PLURAL, name, {"status": status}, _content_type=MERGE
        )

    # -- one reconcile ---------------------------------------------------------
    def step(self) -> int:
        """One state transition for every host that needs one; returns how many hosts changed."""
        changed = 0
        for namespace in self.namespaces:
            hosts = self.custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)["items"]
            for host in hosts:
                try:
                    changed += self._reconcile(host)
                except ApiException as exc:
                    if exc.status not in (404, 409):
                        raise
        return changed

    def _reconcile(self, host: dict) -> int:
        meta, spec = host["metadata"], host.get("spec") or {}
        status = host.get("status") or {}
        namespace, name = meta["namespace"], meta["name"]
        annotations = meta.get("annotations") or {}
        changed = 0
        removed = {}
        for key in list(annotations):
            if key == REBOOT:
                with self._lock:
                    self.reboots.append((namespace, name, annotations[key]))
                removed[key] = None
            elif key == INSPECT:
                with self._lock:
                    self.inspections.append((namespace, name))
                removed[key] = None
        if removed:
            self.custom.patch_namespaced_custom_object(
                GROUP,
                VERSION,
                namespace,
                PLURAL,
                name,
                {"metadata": {"annotations": removed, "resourceVersion": meta["resourceVersion"]}},
                _content_type=MERGE,
            )
            changed += 1
        state = (status.get("provisioning") or {}).get("state")
        online = spec.get("online") is True
        holds = [k for k in annotations if k.startswith(REBOOT + "/")]
        new: dict = {}
        if state in ("available", "ready") and spec.get("image") and spec.get("consumerRef"):
            new = {"provisioning": {"state": "provisioning"}}
        elif state == "provisioning":
            if spec.get("image"):
                new = {
                    "provisioning": {"state": "provisioned", "image": spec["image"]},
                    "poweredOn": online and not holds,
                }
            else:
                new = {"provisioning": {"state": "deprovisioning", "image": None}}
        elif state == "provisioned" and not spec.get("image"):
            new = {"provisioning": {"state": "deprovisioning"}}
        elif state == "deprovisioning":
            new = {"provisioning": {"state": "available", "image": None}, "poweredOn": False}
        elif state == "provisioned" and status.get("poweredOn") != (online and not holds):
            new = {"poweredOn": online and not holds}
        if new:
            self._status(namespace, name, new)
            changed += 1
        return changed

    def settle(self, max_steps: int = 20) -> int:
        """Step until nothing changes; returns the number of steps that changed something."""
        steps = 0
        for _dummy in range(max_steps):
            if not self.step():
                return steps
            steps += 1
        raise AssertionError("the hosts did not settle in %d steps" % max_steps)

    @contextlib.contextmanager
    def running(self, interval: float = 0.3):
        """Run :meth:`step` in a background thread while the block runs."""
        stop = threading.Event()
        errors: list[BaseException] = []

        def loop():
            while not stop.is_set():
                try:
                    self.step()
                except BaseException as exc:
                    errors.append(exc)
                    return
                stop.wait(interval)

        thread = threading.Thread(target=loop, name="plays-bmo", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            stop.set()
            thread.join(timeout=30)
        if errors:
            raise errors[0]

    # -- reading ---------------------------------------------------------------
    def host(self, namespace: str, name: str) -> dict:
        return self.custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)

    def wait_state(self, namespace: str, name: str, state: str, timeout: float = 30) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            host = self.host(namespace, name)
            if ((host.get("status") or {}).get("provisioning") or {}).get("state") == state:
                return host
            if time.monotonic() > deadline:
                raise AssertionError(
                    "host %s/%s not %s after %ss: %s" % (namespace, name, state, timeout, host.get("status"))
                )
            time.sleep(0.2)
