"""What both halves of `make demo` share (scripts/demo.py, scripts/demo_metal3.py).

The progress lines (:func:`say`, one per step, with the seconds since the
start and the half that runs), the error that fails a step
(:class:`DemoError`), the tables, and the integration-test harness on
``sys.path`` (``tests/integration/harness`` starts and stops the services).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PLAYBOOKS = REPO / "playbooks"
if str(REPO / "tests" / "integration") not in sys.path:
    sys.path.insert(0, str(REPO / "tests" / "integration"))

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
