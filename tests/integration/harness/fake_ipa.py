"""FakeIPA: Metal3's stand-in for ironic-python-agent, so real Ironic runs its agent flows.

TEST FIXTURE ONLY: nothing here is part of the collection.

There is no machine to boot here. FakeIPA (``metal3-io/utility-images``,
``fake-ipa/``; pinned snapshot in ``../shared/vendor/``, Metal3's own tool
for its scale tests) plays the agent of every sushy-tools system: sushy-tools
announces each power change of a system with ``external_notifier: True`` to
FakeIPA (``EXTERNAL_NOTIFICATION_URL``); on power-on FakeIPA waits a simulated
boot time, posts inspection data (the system's NICs and addresses) to
Ironic's ``continue_inspection``, looks the node up, heartbeats, and answers
Ironic's agent commands for inspection, cleaning and ``direct`` deployment.
Ironic's own agent code paths run unchanged.

:func:`start_fake_ipa` unpacks the snapshot once per machine into the harness
cache (checked against its sha256) and runs it on 127.0.0.1 with Flask's
debugger and reloader off (its ``main()`` asks for both) and the patches of
:mod:`harness.fake_ipa_hooks`: the agent keeps the token Ironic gave it across
its boots, its errors carry ``faultstring``, and, with a test bed's bus
directory, its ``write_image`` and disk-erasing steps act on the test-bed
machines (config drive delivered, disk wiped).

Measured (2026-11-23, notes/real-services.md): the simulated boot must take
6-8 s; with 1-2 s the inspection data reaches Ironic before the node is in
``inspect wait`` (404) and FakeIPA never retries.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import sys
import tarfile
import threading
from pathlib import Path

from . import procs
from .keystone import cache_root

SNAPSHOT = "metal3-utility-images-ff1d62ee3.tar.gz"
SNAPSHOT_SHA256 = "f9ee81233897b78115a7c855f1e25693550697239766596eff08e4156f17335b"
BOOT_TIME = (6, 8)  # seconds, min and max
REPO_ROOT = Path(__file__).resolve().parents[3]


@dataclasses.dataclass
class FakeIpa:
    service: procs.Service
    proc: procs.Proc
    url: str  # EXTERNAL_NOTIFICATION_URL for sushy-tools

    def stop(self) -> None:
        self.proc.stop()

    def log_tail(self, lines: int = 60) -> str:
        return self.proc.log_tail(lines)


def vendor_dir() -> Path:
    return Path(os.environ.get("BMT_VENDOR_DIR") or REPO_ROOT.parent / "shared" / "vendor")


def source_dir() -> Path:
    """The unpacked ``fake-ipa`` directory (made once per machine)."""
    target = cache_root() / f"fake-ipa-{SNAPSHOT_SHA256[:12]}"
    if (target / "fake-ipa" / "fake_ipa" / "main.py").exists():
        return target / "fake-ipa"
    archive = vendor_dir() / SNAPSHOT
    if not archive.exists():
        raise procs.ServiceStartError(f"{archive}: FakeIPA source snapshot not found (set BMT_VENDOR_DIR)")
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != SNAPSHOT_SHA256:
        raise procs.ServiceStartError(f"{archive}: sha256 {digest} differs from the pinned snapshot")
    tmp = target.with_name(target.name + f".tmp{os.getpid()}.{threading.get_ident()}")
    with tarfile.open(archive) as tar:
        tar.extractall(tmp, filter="data")  # the snapshot holds fake-ipa/ only
    found = next(tmp.rglob("fake_ipa/main.py")).parent.parent
    target.mkdir(parents=True, exist_ok=True)
    found.replace(target / "fake-ipa")
    shutil.rmtree(tmp, ignore_errors=True)
    return target / "fake-ipa"


_LAUNCHER = """
import sys
sys.path.insert(0, {src!r})
sys.path.insert(0, {harness_parent!r})
import flask
_run = flask.Flask.run
def run(self, *args, **kwargs):
    kwargs.update(debug=False, use_reloader=False)
    return _run(self, *args, **kwargs)
flask.Flask.run = run
from harness import fake_ipa_hooks
fake_ipa_hooks.install({bus!r})
from fake_ipa.main import main
sys.argv = ["fake-ipa", "--config", {config!r}]
sys.exit(main())
"""


def start_fake_ipa(
    workdir: str | Path,
    port: int,
    ironic_url: str,
    redfish_url: str,
    redfish_user: str,
    redfish_password: str,
    timeout: float = 30,
    machine_bus: str | Path | None = None,
) -> FakeIpa:
    """Run FakeIPA on ``port`` (the emulator's ``notification_url`` names it) for
    the systems of the sushy-tools emulator at ``redfish_url``.

    ``machine_bus``: the bus directory of a :class:`harness.machines.TestBed`
    (``TestBed.bus``): the agent's disk steps then act on the systems' machines
    (:mod:`harness.fake_ipa_hooks`)."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    src = source_dir()
    config = workdir / "fake-ipa.conf"
    settings = {
        "FAKE_IPA_API_URL": ironic_url,
        "FAKE_IPA_INSPECTION_CALLBACK_URL": f"{ironic_url}/v1/continue_inspection",
        "FAKE_IPA_ADVERTISE_ADDRESS_IP": procs.LOOPBACK,
        "FAKE_IPA_ADVERTISE_ADDRESS_PORT": port,
        "SUSHY_FAKE_IPA_LISTEN_IP": procs.LOOPBACK,
        "SUSHY_FAKE_IPA_LISTEN_PORT": port,
        "FAKE_IPA_INSECURE": True,
        "FAKE_IPA_MIN_BOOT_TIME": BOOT_TIME[0],
        "FAKE_IPA_MAX_BOOT_TIME": BOOT_TIME[1],
        "FAKE_IPA_REDFISH_URL": redfish_url,
        "FAKE_IPA_REDFISH_USER": redfish_user,
        "FAKE_IPA_REDFISH_PASSWORD": redfish_password,
    }
    config.write_text("".join(f"{key} = {value!r}\n" for key, value in settings.items()))
    launcher = _LAUNCHER.format(
        src=str(src),
        harness_parent=str(Path(__file__).resolve().parents[1]),
        bus=None if machine_bus is None else str(machine_bus),
        config=str(config),
    )
    proc = procs.start_process("fake-ipa", [sys.executable, "-c", launcher], workdir)
    url = f"http://{procs.LOOPBACK}:{port}"
    procs.wait_tcp(procs.LOOPBACK, port, timeout, proc)
    return FakeIpa(procs.Service("fake-ipa", SNAPSHOT_SHA256[:9], url, port, proc.pid), proc, url)
