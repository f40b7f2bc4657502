"""Keystone (sqlite, fernet tokens) served by gunicorn on 127.0.0.1.

Bootstrapping Keystone (``keystone-manage db_sync``, ``fernet_setup``,
``credential_setup``, ``bootstrap``) takes ~15 s, so it is done once per
machine into a *seed* directory under ``~/.cache/baremetal-tenancy/`` (or
``$BAREMETAL_TENANCY_CACHE``), keyed by the Keystone version. Each run copies
the seed (a few hundred KB) into its own temporary directory, rewrites the
identity endpoint to the run's port and starts gunicorn: ~3 s.

The admin password is fixed in the seed: it is a throwaway credential of a
server that only ever listens on loopback. Everything a test creates (projects,
users with per-run passwords) is created per run through the API.
"""

from __future__ import annotations

import dataclasses
import grp
import importlib.metadata
import os
import pwd
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import procs

ADMIN_USER = "admin"
ADMIN_PASSWORD = "keystone-admin-loopback-test"  # seeded; loopback only
REGION = "RegionOne"
SEED_FORMAT = "1"  # bump when the seed recipe below changes
_SEED_PLACEHOLDER_URL = "http://127.0.0.1:5000/v3"
VENV_BIN = Path(sys.executable).parent

# Imported by gunicorn instead of keystone.wsgi.api: oslo.config would parse
# gunicorn's own command line and the worker would die in a loop.
_WSGI_SHIM = """\
import sys
sys.argv = [sys.argv[0]]
from keystone.wsgi.api import application  # noqa: E402,F401
"""


def keystone_version() -> str:
    return importlib.metadata.version("keystone")


def cache_root() -> Path:
    default = Path.home() / ".cache" / "baremetal-tenancy"
    return Path(os.environ.get("BAREMETAL_TENANCY_CACHE", default))


def _config(root: Path) -> str:
    """keystone.conf for a Keystone whose state lives in ``root``."""
    return f"""\
[DEFAULT]
debug = false
use_stderr = true

[database]
connection = sqlite:///{root}/keystone.db

[token]
provider = fernet

[fernet_tokens]
key_repository = {root}/fernet-keys

[fernet_receipts]
key_repository = {root}/fernet-keys

[credential]
key_repository = {root}/credential-keys

[cache]
enabled = true
backend = dogpile.cache.memory

[identity]
password_hash_rounds = 4

[oslo_policy]
enforce_scope = true
enforce_new_defaults = true
"""


def _manage(root: Path, *args: str) -> None:
    """Run ``keystone-manage`` against the config in ``root``; raise with output."""
    argv = [str(VENV_BIN / "keystone-manage"), "--config-file", str(root / "keystone.conf"), *args]
    res = subprocess.run(argv, cwd=root, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise procs.ServiceStartError(
            f"{' '.join(argv)} failed ({res.returncode}):\n{res.stdout}\n{res.stderr[-4000:]}"
        )


def _build_seed(root: Path) -> None:
    """Bootstrap a Keystone database and key repositories in ``root``."""
    (root / "keystone.conf").write_text(_config(root))
    user = pwd.getpwuid(os.getuid()).pw_name
    group = grp.getgrgid(os.getgid()).gr_name
    _manage(root, "db_sync")
    _manage(root, "fernet_setup", "--keystone-user", user, "--keystone-group", group)
    _manage(root, "credential_setup", "--keystone-user", user, "--keystone-group", group)
    _manage(
        root,
        "bootstrap",
        "--bootstrap-username",
        ADMIN_USER,
        "--bootstrap-password",
        ADMIN_PASSWORD,
        "--bootstrap-project-name",
        "admin",
        "--bootstrap-role-name",
        "admin",
        "--bootstrap-service-name",
        "keystone",
        "--bootstrap-region-id",
        REGION,
        "--bootstrap-admin-url",
        _SEED_PLACEHOLDER_URL,
        "--bootstrap-public-url",
        _SEED_PLACEHOLDER_URL,
        "--bootstrap-internal-url",
        _SEED_PLACEHOLDER_URL,
    )
    (root / "keystone.conf").unlink()  # paths in it are this directory's


def ensure_seed() -> Path:
    """Return the seed directory, building it first if this machine has none.

    Built in a private directory and renamed into place, so concurrent test
    sessions never see a half-built seed.
    """
    seed = cache_root() / f"keystone-{keystone_version()}-seed{SEED_FORMAT}"
    if (seed / "keystone.db").exists():
        return seed
    seed.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=seed.name + ".", dir=seed.parent))
    try:
        _build_seed(building)
        try:
            building.rename(seed)
        except OSError:  # another session won the race; use theirs
            pass
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return seed


@dataclasses.dataclass
class Keystone:
    service: procs.Service
    proc: procs.Proc
    root: Path
    auth_url: str  # http://127.0.0.1:PORT/v3
    admin_password: str = ADMIN_PASSWORD

    def admin_auth(self, scope: str = "system") -> dict:
        """keystoneauth ``password`` auth dict for the bootstrap admin.

        ``scope="system"`` gives a system-scoped token (``system_scope: all``),
        ``scope="project"`` one scoped to the ``admin`` project.
        """
        auth = {
            "auth_url": self.auth_url,
            "username": ADMIN_USER,
            "password": self.admin_password,
            "user_domain_name": "Default",
        }
        if scope == "system":
            auth["system_scope"] = "all"
        else:
            auth.update(project_name="admin", project_domain_name="Default")
        return auth

    def stop(self) -> None:
        self.proc.stop()

    def restart(self, timeout: float = 120) -> None:
        """Stop Keystone and start it again on the same port over the same database and keys; wait until it
        issues tokens."""
        self.proc.restart()
        self.service.pid = self.proc.pid
        procs.wait_http(self.auth_url, timeout, self.proc, ok_statuses=(200,))
        _wait_token(self.auth_url, timeout, self.proc)


def start_keystone(workdir: str | Path, port: int | None = None, timeout: float = 120) -> Keystone:
    """Start Keystone with its state in ``workdir`` (created).

    ``port``: the loopback port to listen on (default: a free one).
    """
    root = Path(workdir)
    seed = ensure_seed()
    shutil.copytree(seed, root, dirs_exist_ok=True)
    (root / "keystone.conf").write_text(_config(root))
    (root / "keystone_wsgi_shim.py").write_text(_WSGI_SHIM)

    port = port or procs.free_port()
    url = f"http://127.0.0.1:{port}/v3"
    # The identity endpoints in the seed carry a placeholder port.
    with sqlite3.connect(root / "keystone.db") as db:
        db.execute("UPDATE endpoint SET url = ? WHERE url = ?", (url, _SEED_PLACEHOLDER_URL))

    argv = [
        str(VENV_BIN / "gunicorn"),
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        "1",
        "--threads",
        "8",
        "--no-control-socket",
        "--chdir",
        str(root),
        "--timeout",
        "120",
        "keystone_wsgi_shim:application",
    ]
    env = {"OS_KEYSTONE_CONFIG_FILES": str(root / "keystone.conf")}
    proc = procs.start_process("keystone", argv, root, env=env)
    started = time.monotonic()
    procs.wait_http(url, timeout, proc, ok_statuses=(200,))
    remaining = max(5.0, timeout - (time.monotonic() - started))
    _wait_token(url, remaining, proc)
    service = procs.Service("keystone", keystone_version(), url, port, proc.pid)
    return Keystone(service, proc, root, url)


def _wait_token(url: str, timeout: float, proc: procs.Proc) -> None:
    """Issue one admin token: proves the database and fernet keys work."""
    from keystoneauth1 import exceptions, session
    from keystoneauth1.identity import v3

    auth = v3.Password(
        auth_url=url, username=ADMIN_USER, password=ADMIN_PASSWORD, user_domain_name="Default", system_scope="all"
    )
    deadline = procs.StartDeadline(timeout, proc)
    while True:
        try:
            session.Session(auth=auth).get_token()
            return
        except exceptions.ClientException as exc:
            if deadline.expired() or not proc.alive():
                raise procs.ServiceStartError(
                    f"keystone at {url} issues no token after {deadline.describe()}: {exc}\n{proc.log_tail()}"
                ) from exc
            time.sleep(0.3)
