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
    (:class:`harness.metal3_machines.Metal3Machines`, which the demo starts
    too): :data:`MACHINE_SYSTEMS` machines, BMO watching
    :data:`MACHINE_NAMESPACES`; hosts go the ``direct`` route through FakeIPA.
``ssh_keypair`` (function factory)
    ``ssh_keypair(name)`` -> ``(private key path, public key text)``, a new
    ed25519 key pair per call.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import subprocess

import pytest
from harness import baremetal_operator, procs
from harness import machines as machines_harness
from harness import metal3_machines as metal3_machines_harness
from harness import sushy as sushy_harness
from harness.ansible import REPO_ROOT, VENV_BIN, ansible_env

# The namespaces of the hosts that are machines (BMO's watch list of the machines stack).
MACHINE_NAMESPACES = ("bmt-machines-infra",)
MACHINE_SYSTEMS = 8  # 0: test_machines_agent, 1-4: the hand-over suite, 5-6: deploy_web


def pytest_configure(config):
    config.addinivalue_line("markers", "machines: starts test-bed machines (root, openssh-server; make test-machines)")
    config.addinivalue_line(
        "markers",
        "pending: a suite that has not passed whole in a full make test yet (make test-pending runs the machine"
        " ones, make test-gitops any GitOps one; it joins make test once it has)",
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
    stack = metal3_machines_harness.start(
        kube_env, tmp_path_factory.mktemp("metal3-machines"), MACHINE_SYSTEMS, MACHINE_NAMESPACES
    )
    try:
        for service in stack.stack.services:
            procs.record_service(service)
        yield stack
    finally:
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
