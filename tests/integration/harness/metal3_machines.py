"""Metal3's real baremetal-operator whose hosts are test-bed machines: the stack the machine suites and the demo share.

TEST FIXTURE ONLY. :func:`start` makes a :class:`harness.machines.TestBed`,
sushy-tools systems addressed on it that announce their power changes to
FakeIPA, FakeIPA acting on the machines (config drive on ``write_image``, wipe
on the erasing clean steps; :mod:`harness.fake_ipa_hooks`), Ironic on
PostgreSQL and BMO watching ``namespaces`` (created here; no webhooks: another
stack of the cluster may hold BMO's webhook configuration). Hosts go the
``direct`` route: a raw disk image with its sha256 served by Ironic's HTTP
root, metadata cleaning, and no agent inspection unless asked (what it would
find is in BMO's hardwaredetails annotation).
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

from . import baremetal_operator, sushy
from . import machines as machines_harness


@dataclasses.dataclass
class Metal3Machines:
    stack: baremetal_operator.Metal3
    bed: machines_harness.TestBed
    machines: list[machines_harness.Machine]
    namespace: str

    def image(self) -> dict:
        """``spec.image`` of the raw disk image (the ``direct`` route through FakeIPA)."""
        return baremetal_operator.disk_image(self.stack)

    def machine(self, index: int) -> machines_harness.Machine:
        return self.machines[index]

    def host_manifest(
        self,
        name: str,
        index: int,
        *,
        cleaning: str = "metadata",
        labels: dict | None = None,
        annotations: dict | None = None,
        inspect: bool = False,
    ) -> dict:
        """A BareMetalHost of machine ``index`` on the agent route; ``cleaning``: its
        ``automatedCleaningMode`` (``metadata``, or ``disabled`` as an owner may set it).
        ``inspect=False``: no agent inspection, what it would find in BMO's hardwaredetails annotation
        (at load 30 FakeIPA posted its inspection data before Ironic waited for it, and inspection
        failed); cleaning and the deploy still go through the agent."""
        bmc = self.stack.bmcs[index]
        manifest = baremetal_operator.host_manifest(
            name, bmc, f"{name}-bmc", namespace=self.namespace, labels=labels, agent=True
        )
        manifest["spec"]["automatedCleaningMode"] = cleaning
        if not inspect:
            # What inspection would report: the machine's NIC and the address the test bed gives it.
            machine = self.bed.machine(bmc.name)
            nics = [{"name": nic.ifname, "mac": nic.mac, "ip": nic.ip} for nic in machine.nics]
            manifest["metadata"]["annotations"].update(
                {
                    "inspect.metal3.io": "disabled",
                    "inspect.metal3.io/hardwaredetails": json.dumps(
                        baremetal_operator.hardware_details(index, nics=nics)
                    ),
                }
            )
        manifest["metadata"]["annotations"].update(annotations or {})
        return manifest

    def create_host(self, api, name: str, index: int, **kwargs) -> dict:
        """Create the host (and its BMC Secret) of machine ``index``; returns the object created."""
        from kubernetes import client

        secret = baremetal_operator.bmc_secret(f"{name}-bmc", self.stack.bmcs[index], namespace=self.namespace)
        client.CoreV1Api(api).create_namespaced_secret(self.namespace, secret)
        return client.CustomObjectsApi(api).create_namespaced_custom_object(
            "metal3.io", "v1alpha1", self.namespace, "baremetalhosts", self.host_manifest(name, index, **kwargs)
        )

    def wait_hosts(self, api, names, predicate, what: str, timeout: float = 600) -> dict[str, dict]:
        return baremetal_operator.wait_hosts(api, self.stack, self.namespace, names, predicate, what, timeout)

    def wait_state(self, api, names, state: str, timeout: float = 600) -> dict[str, dict]:
        return self.wait_hosts(api, names, lambda h: baremetal_operator.host_state(h) == state, state, timeout)

    def stop(self) -> None:
        try:
            self.bed.stop()
        finally:
            self.stack.stop()


def start(kube_env, workdir: Path, count: int, namespaces: tuple[str, ...]) -> Metal3Machines:
    """The stack with ``count`` machines (``machine-<n>``, one NIC each), BMO watching ``namespaces``
    (the first one is :attr:`Metal3Machines.namespace`). Stops what it started if it fails."""
    from kubernetes import client

    bed = machines_harness.TestBed(workdir / "bed")
    stack = None
    try:
        t0 = time.monotonic()
        systems = sushy.default_systems(count)
        for number, system in enumerate(systems):
            system["name"] = f"machine-{number}"
            system["nics"] = [{"mac": f"52:54:03:00:00:{number:02x}"}]
        bed.address_systems(systems)
        with kube_env.api("admin") as api:
            for namespace in namespaces:
                client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
        stack = baremetal_operator.start_metal3(
            kube_env,
            workdir / "metal3",
            systems=systems,
            namespace=",".join(namespaces),
            webhooks=False,
            postgresql=True,
            machine_bus=bed.bus,
        )
        machine_list = bed.add_machines(stack.bmcs)
        stack.timings["machines"] = time.monotonic() - t0
        return Metal3Machines(stack, bed, machine_list, namespaces[0])
    except BaseException:
        bed.stop()
        if stack is not None:
            stack.stop()
        raise
