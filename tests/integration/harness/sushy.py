"""sushy-tools Redfish BMC emulator (fake driver) for the integration tests.

``start_sushy(workdir)`` writes a config with several fake systems, an
htpasswd file (bcrypt) for HTTP basic auth and a private state directory, then
runs the emulator through :func:`launch` (below), which patches the fake
driver for tests before calling sushy-tools' own ``main()``:

- power changes apply at once (upstream waits a random 1-11 s);
- systems may carry ``memory_gb``, ``cpus`` and ``cpu_model`` keys, served as
  ``MemorySummary``/``ProcessorSummary`` and a ``Processors`` collection
  (upstream's fake driver reports none).

Each fake system is described by a :class:`Bmc` with its addresses and
credentials, in the forms Ironic (``driver_info``) and Metal3
(``redfish+http://...``) expect.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import secrets
import sys
import uuid as uuidlib
from pathlib import Path

from . import procs

HARNESS_PARENT = Path(__file__).resolve().parent.parent  # tests/integration


@dataclasses.dataclass
class Bmc:
    """One emulated BMC (= one fake system)."""

    name: str
    uuid: str
    base_url: str  # http://127.0.0.1:PORT
    username: str
    password: str
    macs: list[str]

    @property
    def system_id(self) -> str:
        return f"/redfish/v1/Systems/{self.uuid}"

    @property
    def address(self) -> str:
        """Metal3 BMH style: ``redfish+http://127.0.0.1:PORT/redfish/v1/Systems/<uuid>``."""
        return "redfish+" + self.base_url + self.system_id

    @property
    def driver_info(self) -> dict:
        """``driver_info`` for an Ironic node with the ``redfish`` hardware type."""
        return {
            "redfish_address": self.base_url,
            "redfish_system_id": self.system_id,
            "redfish_username": self.username,
            "redfish_password": self.password,
            "redfish_verify_ca": False,
        }


@dataclasses.dataclass
class SushyEmulator:
    service: procs.Service
    proc: procs.Proc
    bmcs: list[Bmc]
    config_path: Path
    username: str
    password: str

    def bmc(self, name: str) -> Bmc:
        return next(b for b in self.bmcs if b.name == name)

    def stop(self) -> None:
        self.proc.stop()


def default_systems(count: int = 4) -> list[dict]:
    """``count`` fake systems, powered off, each with one NIC and some hardware."""
    systems = []
    for i in range(count):
        systems.append({
            "uuid": str(uuidlib.uuid4()),
            "name": f"bmc-{i}",
            "power_state": "Off",
            "external_notifier": False,
            "nics": [{"mac": f"52:54:00:00:{i // 256:02x}:{i % 256:02x}",
                      "ip": f"192.0.2.{10 + i}"}],
            # Extensions served by launch(); larger machines for odd indexes.
            "memory_gb": 64 if i % 2 else 32,
            "cpus": 16 if i % 2 else 8,
            "cpu_model": "Fake CPU",
        })
    return systems


def _htpasswd_line(username: str, password: str) -> str:
    import bcrypt  # a dependency of sushy-tools itself

    # Few rounds: the emulator checks the hash on every request.
    hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()
    return f"{username}:{hashed}\n"


def start_sushy(workdir: str | Path, systems: list[dict] | None = None,
                timeout: float = 60) -> SushyEmulator:
    """Start the emulator in ``workdir`` (created) on a free loopback port."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    systems = systems if systems is not None else default_systems()
    port = procs.free_port()
    username, password = "admin", secrets.token_urlsafe(12)

    auth_file = workdir / "htpasswd"
    auth_file.write_text(_htpasswd_line(username, password))
    state_dir = workdir / "state"
    state_dir.mkdir(exist_ok=True)
    config_path = workdir / "emulator.conf"
    # The config file is Python (Flask from_pyfile); repr() of JSON-ish data is valid.
    config_path.write_text(
        f"SUSHY_EMULATOR_LISTEN_IP = '127.0.0.1'\n"
        f"SUSHY_EMULATOR_LISTEN_PORT = {port}\n"
        f"SUSHY_EMULATOR_FAKE_DRIVER = True\n"
        f"SUSHY_EMULATOR_STATE_DIR = {str(state_dir)!r}\n"
        f"SUSHY_EMULATOR_AUTH_FILE = {str(auth_file)!r}\n"
        f"SUSHY_EMULATOR_FAKE_SYSTEMS = {systems!r}\n"
    )
    launcher = (
        "import sys; sys.path.insert(0, %r); "
        "from harness.sushy import launch; launch()" % str(HARNESS_PARENT)
    )
    proc = procs.start_process(
        "sushy-emulator",
        [sys.executable, "-c", launcher, "--config", str(config_path)],
        workdir,
    )
    base_url = f"http://127.0.0.1:{port}"
    # Unauthenticated requests get 401 once the server is up.
    procs.wait_http(base_url + "/redfish/v1/", timeout, proc)
    bmcs = [
        Bmc(s["name"], s["uuid"], base_url, username, password,
            [n["mac"] for n in s.get("nics", [])])
        for s in systems
    ]
    service = procs.Service("sushy-tools", importlib.metadata.version("sushy-tools"),
                            base_url, port, proc.pid)
    return SushyEmulator(service, proc, bmcs, config_path, username, password)


# --- runs inside the emulator process -------------------------------------

def launch() -> None:
    """Patch the fake driver for tests, then run ``sushy-emulator`` main()."""
    from sushy_tools import error
    from sushy_tools.emulator import main
    from sushy_tools.emulator.resources.systems import fakedriver

    class _NoDelay:
        """Stands in for the ``random`` module: power changes apply at once."""

        @staticmethod
        def randint(a, b):
            return 0

    fakedriver.random = _NoDelay()

    def _field(key):
        def getter(self, identity):
            value = self._get(identity).get(key)
            if value is None:
                raise error.NotSupportedError("Not implemented")
            return value
        return getter

    def get_processors(self, identity):
        system = self._get(identity)
        if not system.get("cpus"):
            raise error.NotSupportedError("Not implemented")
        return [{"id": "CPU0", "Id": "CPU0", "socket": "CPU 0",
                 "vendor": "Fake", "model": system.get("cpu_model", "Fake CPU"),
                 "cores": system["cpus"], "threads": system["cpus"]}]

    fakedriver.FakeDriver.get_total_memory = _field("memory_gb")
    fakedriver.FakeDriver.get_total_cpus = _field("cpus")
    fakedriver.FakeDriver.get_processors = get_processors
    sys.argv[0] = "sushy-emulator"
    main.main()
