"""pytest plugin: test-bed machines behind sushy-tools BMCs (``harness/machines.py``).

Marker
------
``machines``: the test starts machines (network namespaces, a bridge, sshd:
root and Debian's ``openssh-server`` needed). Not in the default
integration sessions yet; ``make test-machines`` runs them.

Fixtures
--------
``machine_bed`` (module)
    A sushy-tools emulator with three systems (one of them with two NICs)
    whose NIC addresses come from a :class:`harness.machines.TestBed`, and a
    machine per system, all off. ``.emulator``, ``.bed``, ``.machines``
    (list), ``.power(machine, on)`` (through Redfish, then waits until the
    machine has followed).
``metal3_machines`` (session)
    Metal3's real baremetal-operator whose hosts are machines
    (:class:`Metal3Machines`): a test bed, sushy-tools systems addressed on it
    that announce their power changes to FakeIPA, FakeIPA acting on the
    machines (config drive on ``write_image``, wipe on the erasing clean
    steps), Ironic on PostgreSQL, BMO watching :data:`MACHINE_NAMESPACES`
    (no webhooks: another stack of the session may hold BMO's webhook
    configuration). Hosts go the ``direct`` route: agent inspection, a raw
    disk image with its sha256 served by Ironic's HTTP root, metadata cleaning.
``ssh_keypair`` (function factory)
    ``ssh_keypair(name)`` -> ``(private key path, public key text)``, a new
    ed25519 key pair per call.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import subprocess
import time

import pytest
from harness import baremetal_operator, procs
from harness import machines as machines_harness
from harness import sushy as sushy_harness
from harness.ansible import REPO_ROOT, VENV_BIN, ansible_env
from kubernetes import client

# The namespaces of the hosts that are machines (BMO's watch list of the machines stack).
MACHINE_NAMESPACES = ("bmt-machines-infra",)
MACHINE_SYSTEMS = 8  # 0: test_machines_agent, 1-4: the hand-over suite, 5-6: deploy_web


def pytest_configure(config):
    config.addinivalue_line("markers", "machines: starts test-bed machines (root, openssh-server; make test-machines)")
    config.addinivalue_line(
        "markers",
        "pending: a machine suite written under heavy load that has not passed whole yet (make test-pending; joins"
        " make test once it has)",
    )


@dataclasses.dataclass
class MachineBed:
    emulator: sushy_harness.SushyEmulator
    bed: machines_harness.TestBed
    machines: list[machines_harness.Machine]

    def power(self, machine: machines_harness.Machine, on: bool, timeout: float = 60) -> None:
        """Power the machine's BMC on or off through Redfish and wait until the machine follows."""
        reset = "On" if on else "ForceOff"
        status, body = self.emulator.request(
            "POST", machine.bmc.system_id + "/Actions/ComputerSystem.Reset", body={"ResetType": reset}
        )
        assert status in (200, 204), body
        machine.wait_running(on, timeout)

    def stop(self) -> None:
        self.bed.stop()
        self.emulator.stop()


@pytest.fixture(scope="module")
def machine_bed(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("machines")
    bed = machines_harness.TestBed(workdir / "bed")
    emulator = None
    try:
        systems = sushy_harness.default_systems(2) + sushy_harness.profile_systems(
            {"medium": 1}, prefix="machine", first_index=300
        )
        bed.address_systems(systems)
        emulator = sushy_harness.start_sushy(workdir / "sushy", systems)
        procs.record_service(
            procs.Service(
                f"sushy-tools (test-bed machines on {bed.bridge} {bed.subnet})",
                emulator.service.version,
                emulator.base_url,
                emulator.service.port,
                emulator.proc.pid,
            )
        )
        machine_list = bed.add_machines(emulator.bmcs)
        yield MachineBed(emulator, bed, machine_list)
    finally:
        bed.stop()
        if emulator is not None:
            emulator.stop()


@dataclasses.dataclass
class Metal3Machines:
    """The machines stack: see the module documentation."""

    stack: baremetal_operator.Metal3
    bed: machines_harness.TestBed
    machines: list[machines_harness.Machine]
    namespace: str = MACHINE_NAMESPACES[0]

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
        secret = baremetal_operator.bmc_secret(f"{name}-bmc", self.stack.bmcs[index], namespace=self.namespace)
        client.CoreV1Api(api).create_namespaced_secret(self.namespace, secret)
        return client.CustomObjectsApi(api).create_namespaced_custom_object(
            "metal3.io", "v1alpha1", self.namespace, "baremetalhosts", self.host_manifest(name, index, **kwargs)
        )

    def wait_hosts(self, api, names, predicate, what: str, timeout: float = 600) -> dict[str, dict]:
        return baremetal_operator.wait_hosts(api, self.stack, self.namespace, names, predicate, what, timeout)

    def wait_state(self, api, names, state: str, timeout: float = 600) -> dict[str, dict]:
        return self.wait_hosts(api, names, lambda h: baremetal_operator.host_state(h) == state, state, timeout)


@contextlib.contextmanager
def binder_loop(kube_env, namespaces, workdir):
    """The owner's binder running in the background while the block runs, as an owner runs it:
    ``metal3_bind_claims.yml`` with the binder's credentials, one pass a second over ``namespaces``."""
    workdir.mkdir(parents=True, exist_ok=True)
    variables = {
        "reconcile_namespaces": list(namespaces),
        "reconcile_until_quiet": False,
        "reconcile_passes": 3000,
        "reconcile_interval": 1,
    }
    argv = [str(VENV_BIN / "ansible-playbook"), "-i", "localhost,"]
    argv += [str(REPO_ROOT / "playbooks" / "metal3_bind_claims.yml"), "-e", json.dumps(variables)]
    with open(workdir / "binder.log", "w") as log:
        background = subprocess.Popen(
            argv,
            env=ansible_env(kube_env.ansible_env("binder"), workdir),
            cwd=str(workdir),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        yield background
    finally:
        background.terminate()
        background.wait(timeout=60)


@pytest.fixture(scope="session")
def metal3_machines(kube_env, tmp_path_factory):
    try:
        baremetal_operator.require_bmo()
    except baremetal_operator.BmoMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    workdir = tmp_path_factory.mktemp("metal3-machines")
    bed = machines_harness.TestBed(workdir / "bed")
    stack = None
    try:
        t0 = time.monotonic()
        systems = sushy_harness.default_systems(MACHINE_SYSTEMS)
        for number, system in enumerate(systems):
            system["name"] = f"machine-{number}"
            system["nics"] = [{"mac": f"52:54:03:00:00:{number:02x}"}]
        bed.address_systems(systems)
        with kube_env.api("admin") as api:
            for namespace in MACHINE_NAMESPACES:
                client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
        stack = baremetal_operator.start_metal3(
            kube_env,
            workdir / "metal3",
            systems=systems,
            namespace=",".join(MACHINE_NAMESPACES),
            webhooks=False,
            postgresql=True,
            machine_bus=bed.bus,
        )
        machine_list = bed.add_machines(stack.bmcs)
        stack.timings["machines"] = time.monotonic() - t0
        for service in stack.services:
            procs.record_service(service)
        yield Metal3Machines(stack, bed, machine_list)
    finally:
        bed.stop()
        if stack is not None:
            stack.stop()


@pytest.fixture
def ssh_keypair(tmp_path):
    def make(name: str) -> tuple[str, str]:
        path = tmp_path / f"id_{name}"
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"{name}@test", "-f", str(path)], check=True
        )
        return str(path), path.with_suffix(".pub").read_text().strip()

    return make
