"""What FakeIPA (the deploy ramdisk) and the test-bed machines (the hardware) tell each other, through files.

TEST FIXTURE ONLY. FakeIPA runs in a process of its own (:mod:`harness.fake_ipa`)
and the machines in the test session (:mod:`harness.machines`). When a real
agent writes an image or erases disks, it acts on the machine it runs on; here
it writes a request into the machine's directory of a shared **bus directory**
and waits until the machine has done it:

``<bus>/<system uuid>/``
    made by the machine when it is created: a system without it has no machine,
    and the agent's disk steps do nothing there (the fleets of the other suites).
``agent``
    the agent ramdisk is booted on the system (FakeIPA writes it when it boots
    the agent on a power-on from a non-disk device, removes it on power-off):
    the machine's own OS is not running meanwhile, so no SSH answers from its
    disk while Ironic inspects, cleans or deploys it.
``request-<id>.json`` / ``reply-<id>.json``
    one operation: ``{"op": "config_drive", "config_drive": <base64 of the ISO>}``
    (the ``write_image`` deploy step: the machine applies it at its next boot, as
    cloud-init would) or ``{"op": "wipe", "step": <clean step>}``
    (``erase_devices``/``erase_devices_metadata``); the reply is ``{"ok": true}``
    or ``{"ok": false, "error": <reason>}``, and the agent's step fails with that reason.

Standard library only: FakeIPA's process imports it too. Every file is
written to a temporary name and renamed, so a reader never sees half of one.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from pathlib import Path

AGENT = "agent"
REPLY_TIMEOUT = 120  # seconds the agent waits for the machine (a wipe halts it and copies /etc)


def system_key(system_id: str) -> str:
    """The directory name of a system: the last part of ``/redfish/v1/Systems/<uuid>`` (or the uuid)."""
    return system_id.rstrip("/").rsplit("/", 1)[-1]


def write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(path)


# -- the agent's side ------------------------------------------------------------


def has_machine(bus: Path, key: str) -> bool:
    return (bus / key).is_dir()


def set_agent(bus: Path, key: str, booted: bool) -> None:
    """Mark the agent ramdisk booted (or not) on the system's machine, if it has one."""
    if not has_machine(bus, key):
        return
    marker = bus / key / AGENT
    if booted:
        marker.touch()
    else:
        marker.unlink(missing_ok=True)


def ask(bus: Path, key: str, request: dict, timeout: float = REPLY_TIMEOUT) -> str | None:
    """Send ``request`` to the system's machine and wait for its reply.

    Returns ``None`` when done (or when the system has no machine), else the machine's reason.
    """
    if not has_machine(bus, key):
        return None
    rid = uuid.uuid4().hex[:12]
    reply = bus / key / f"reply-{rid}.json"
    write_json(bus / key / f"request-{rid}.json", request)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if reply.exists():
            answer = json.loads(reply.read_text())
            reply.unlink(missing_ok=True)
            return None if answer.get("ok") else str(answer.get("error") or "the machine failed")
        time.sleep(0.2)
    (bus / key / f"request-{rid}.json").unlink(missing_ok=True)
    return f"the machine did not answer {request.get('op')!r} within {timeout:.0f} s"


# -- the machine's side ----------------------------------------------------------


def agent_booted(directory: Path) -> bool:
    return (directory / AGENT).exists()


def requests(directory: Path) -> list[tuple[Path, dict]]:
    """The pending requests in a machine's directory, oldest first, as ``(reply path, request)``."""
    pending = []
    for path in sorted(directory.glob("request-*.json"), key=lambda p: p.stat().st_mtime):
        try:
            request = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # removed by the agent after its timeout
        path.unlink(missing_ok=True)
        pending.append((path.with_name(path.name.replace("request-", "reply-", 1)), request))
    return pending


def answer(reply: Path, error: str | None) -> None:
    write_json(reply, {"ok": True} if error is None else {"ok": False, "error": error})
