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
``ssh_keypair`` (function factory)
    ``ssh_keypair(name)`` -> ``(private key path, public key text)``, a new
    ed25519 key pair per call.
"""

from __future__ import annotations

import dataclasses
import subprocess

import pytest
from harness import machines as machines_harness
from harness import procs
from harness import sushy as sushy_harness


def pytest_configure(config):
    config.addinivalue_line("markers", "machines: starts test-bed machines (root, openssh-server; make test-machines)")
    config.addinivalue_line(
        "markers",
        "handover: a host handed from one tenant to the next through cleaning (make test-handover; not in make test"
        " until it has passed on a quiet machine)",
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


@pytest.fixture
def ssh_keypair(tmp_path):
    def make(name: str) -> tuple[str, str]:
        path = tmp_path / f"id_{name}"
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"{name}@test", "-f", str(path)], check=True
        )
        return str(path), path.with_suffix(".pub").read_text().strip()

    return make
