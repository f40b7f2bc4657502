"""What the halves of `make demo` share (scripts/demo/ironic.py, esi.py, metal3.py).

The progress lines (:func:`say`, one per step, with the seconds since the
start and the half that runs), the error that fails a step
(:class:`DemoError`), the tables, the live ISO and the enrolment variables.
(The package's ``__init__`` puts the integration-test harness on ``sys.path``.)
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PLAYBOOKS = REPO / "playbooks"

STARTED = time.monotonic()
HALF = [""]  # the half running now, shown on each progress line


class DemoError(RuntimeError):
    """A step did not do what it should: the demo fails with this message."""


def say(message: str) -> None:
    prefix = f"{HALF[0]} | " if HALF[0] else ""
    print(f"[{time.monotonic() - STARTED:6.1f}s] {prefix}{message}", flush=True)


def seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}s"


def print_table(headers: list[str], lines: list[list[str]]) -> None:
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(headers)]
    print()
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip())
    print("  ".join("-" * w for w in widths))
    for line in lines:
        print("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip())
    print()


def genisoimage_missing() -> str | None:
    """The message when genisoimage (for :func:`live_iso`) is not installed, else None."""
    if shutil.which("genisoimage") is None:
        return "genisoimage is missing: run `make system` (scripts/install-system-packages.sh)"
    return None


Tables = list[tuple[list[str], list[list[str]]]]  # what a half returns: (headers, lines) per table


def live_iso(http_root: Path) -> str:
    """A tiny bootable-looking ISO for the ramdisk deploy (virtual media) in ``http_root``; returns its name."""
    src = Path(tempfile.mkdtemp(prefix="demo-iso-"))
    try:
        (src / "README.txt").write_text("baremetal.tenancy demo live image\n")
        subprocess.run(
            ["genisoimage", "-quiet", "-o", str(http_root / "demo-live.iso"), "-V", "DEMO", str(src)], check=True
        )
    finally:
        shutil.rmtree(src, ignore_errors=True)
    return "demo-live.iso"


def enroll_vars(bmcs, prefix: str, interfaces: dict | None = None, nics=None) -> dict:
    """ironic_enroll_hosts.yml's variables for the demo's BMCs: nodes ``<prefix><i>`` of the project ``infra``,
    64-GiB systems ``baremetal-large`` and the rest ``baremetal-small``, booted from virtual media with the
    ``ramdisk`` deploy (plus ``interfaces``); ``nics(bmc)``: a host's ``nics`` (its switch ports), if given."""
    hosts = [
        {
            "name": f"{prefix}{i}",
            "address": bmc.address,
            "username": bmc.username,
            "password": bmc.password,
            "validate_certs": False,
            **({"nics": nics(bmc)} if nics else {}),
        }
        for i, bmc in enumerate(bmcs)
    ]
    large = {"name": "large", "when": "MemorySummary.TotalSystemMemoryGiB >= `64`", "resource_class": "baremetal-large"}
    return {
        "enroll_hosts": hosts,
        "enroll_owner": "infra",
        "enroll_rules": [large],
        "enroll_default_resource_class": "baremetal-small",
        "enroll_interfaces": {
            "boot_interface": "redfish-virtual-media",
            "deploy_interface": "ramdisk",
            **(interfaces or {}),
        },
    }
