"""pytest plugin: emulated BMC fleets for the Redfish suites (host_register, bmc_account).

Fixtures
--------
``redfish_fleet`` (session)
    A sushy-tools emulator with 21 systems of three hardware profiles
    (small x8, medium x7, large x5 registered with the right credentials,
    plus one more small system used with a wrong password), a port with
    nothing listening, and a plain web server that is not Redfish.
    ``.good`` (BMCs to register), ``.wrong_password``, ``.unreachable_url``,
    ``.plain_url``, ``.host_entries()`` (the ``hosts`` option of
    host_register, good and bad entries), ``.expected(profile)``.

Everything here is test fixture; the emulator's extensions live in
``harness/sushy.py``.
"""

from __future__ import annotations

import dataclasses

import pytest
from harness import procs
from harness import sushy as sushy_harness

PROFILE_COUNTS = {"small": 8, "medium": 7, "large": 5}

# The rules the suites classify with (ordered; see plugins/module_utils/redfish/classify.py).
RULES = [
    {"name": "fabrikam", "when": "Manufacturer == 'Fabrikam'", "labels": {"vendor": "fabrikam"}},
    {
        "name": "large",
        "when": "MemorySummary.TotalSystemMemoryGiB >= `256` && ProcessorSummary.Count >= `64`",
        "labels": {"infra-kind": "large"},
        "resource_class": "baremetal-large",
        "traits": ["CUSTOM_LARGE"],
        "stop": True,
    },
    {
        "name": "medium",
        "when": "MemorySummary.TotalSystemMemoryGiB >= `128`",
        "labels": {"infra-kind": "medium"},
        "resource_class": "baremetal-medium",
    },
    {"name": "dual-nic", "when": "length(EthernetInterfaces.Members) >= `2`", "traits": ["CUSTOM_DUAL_NIC"]},
    {"name": "default", "labels": {"infra-kind": "small"}, "resource_class": "baremetal-small"},
]


def expected(profile: str) -> dict:
    """What RULES must give a system of ``profile``, worked out from the profile's figures
    independently of the module (the test's own reading of the rules)."""
    hw = sushy_harness.PROFILES[profile]
    labels, traits, rc = {}, [], None
    if hw["manufacturer"] == "Fabrikam":
        labels["vendor"] = "fabrikam"
    if hw["memory_gb"] >= 256 and hw["cpus"] >= 64:
        return {
            "labels": {**labels, "infra-kind": "large"},
            "resource_class": "baremetal-large",
            "traits": ["CUSTOM_LARGE"],
        }
    if hw["memory_gb"] >= 128:
        labels["infra-kind"], rc = "medium", "baremetal-medium"
    if hw["nics"] >= 2:
        traits.append("CUSTOM_DUAL_NIC")
    labels.setdefault("infra-kind", "small")
    return {"labels": labels, "resource_class": rc or "baremetal-small", "traits": traits}


@dataclasses.dataclass
class Fleet:
    emulator: sushy_harness.SushyEmulator
    good: list[sushy_harness.Bmc]
    wrong_password: sushy_harness.Bmc
    unreachable_url: str
    plain_url: str
    plain_proc: procs.Proc

    def host_entries(self, names: bool = True) -> list[dict]:
        """host_register's ``hosts``: the 20 good BMCs, then unreachable, wrong password, not Redfish."""
        entries = [
            {
                "address": b.address,
                "username": b.username,
                "password": b.password,
                **({"name": "fleet-%02d" % i} if names else {}),
            }
            for i, b in enumerate(self.good)
        ]
        entries += [
            {
                "address": "redfish+" + self.unreachable_url + "/redfish/v1/Systems/1",
                "username": "admin",
                "password": "whatever-1",
                "name": "unreachable",
            },
            {
                "address": self.wrong_password.address,
                "username": self.wrong_password.username,
                "password": "not-the-password",
                "name": "wrong-password",
            },
            {
                "address": "redfish+" + self.plain_url + "/redfish/v1/Systems/1",
                "username": "admin",
                "password": "whatever-2",
                "name": "not-redfish",
            },
        ]
        return entries

    @property
    def secrets(self) -> list[str]:
        """Every password a run must never show."""
        return [self.emulator.password, "not-the-password", "whatever-1", "whatever-2"]

    def stop(self) -> None:
        self.emulator.stop()
        self.plain_proc.stop()


@pytest.fixture(scope="session")
def redfish_fleet(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("redfish-fleet")
    systems = sushy_harness.profile_systems(PROFILE_COUNTS, prefix="fleet", first_index=100)
    systems += sushy_harness.profile_systems({"small": 1}, prefix="locked", first_index=190)
    emulator = sushy_harness.start_sushy(workdir / "sushy", systems)
    procs.record_service(
        procs.Service(
            "sushy-tools (redfish fleet, 21 systems)",
            emulator.service.version,
            emulator.base_url,
            emulator.service.port,
            emulator.proc.pid,
        )
    )
    plain_proc, plain_url = sushy_harness.start_plain_http(workdir / "plain")
    fleet = Fleet(
        emulator, emulator.bmcs[:20], emulator.bmcs[20], f"http://127.0.0.1:{procs.free_port()}", plain_url, plain_proc
    )
    try:
        yield fleet
    finally:
        fleet.stop()
