"""Ironic as one process (API + conductor, ``rpc_transport = none``) on sqlite.

``start_ironic(workdir, keystone_url=..., service_user=...)`` writes ``ironic.conf`` for the
``fake-hardware`` and ``redfish`` hardware types with fast conductor polling,
an (initially empty) policy file that tests may rewrite (oslo.policy re-reads
it when it changes), and starts ``ironic`` on a free loopback port.

- With a Keystone URL and service user it runs with
  ``auth_strategy = keystone``, scope enforcement and the new default policies
  (the way tenants are isolated).
- With ``keystone_url=None`` it runs with ``auth_strategy = noauth``: every caller
  sees and changes every node (the negative control for isolation tests).
- With ``database_url`` (a PostgreSQL URL from :mod:`harness.postgres`) it
  runs on that server database instead of sqlite, for concurrency tests:
  the schema is created there with ``ironic-dbsync create_schema``.
- sqlite runs in WAL mode without synchronous writes, and a writer waits up
  to 30 s for the lock, which lets a few lifecycles run side by side on a
  loaded machine; more than a few still need PostgreSQL.
- ``rbac_service_role_elevated_access`` is on: a token with the role ``service`` on project ``service``
  reaches every node (ESI-Leap's account, :mod:`harness.esi_leap`; Ironic's own user once the switch suites
  give it that role for Neutron, :mod:`harness.ironic_networks`); nobody else holds it.
- the ``neutron`` network interface is enabled beside ``noop`` (the default): with Keystone, a ``[neutron]``
  section lets the service user reach Neutron through the catalog once one is registered
  (:mod:`harness.ironic_networks`); nodes that keep ``noop`` never call it.
- ``[nova] send_power_notifications`` is off: there is no Nova, and each
  power change would otherwise wait for a connection timeout.
- ``[conductor] file_url_allowed_paths`` is ``<workdir>/images`` (created
  empty), as a production Ironic restricts ``file://`` image URLs to its own
  directories: a ``file://`` URL elsewhere fails the deployment.

Ironic starts through a launcher that installs :mod:`harness.ironic_hooks` first (PBKDF2 results remembered in
the process: the Redfish driver derives a key before every request).

The empty database schema (``ironic-dbsync create_schema``, ~3 s alone, ~12 s
of CPU under the suites' load) is made once per machine and Ironic version
under the harness cache directory and copied (on PostgreSQL, dumped and
loaded: :func:`harness.postgres.load_schema`). A small ``http.server`` serves
``[deploy] http_root`` on loopback so virtual-media boots through sushy-tools
can download what Ironic publishes.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import postgres, procs
from .keystone import cache_root

VENV_BIN = Path(sys.executable).parent
# Ironic's own entry point (the ``ironic`` script), after the test bed's hooks (:mod:`harness.ironic_hooks`).
_LAUNCHER = """
import sys
sys.path.insert(0, {harness_parent!r})
from harness import ironic_hooks
ironic_hooks.install()
from ironic.command.singleprocess import main
sys.argv = {argv!r}
sys.exit(main())
"""
CONDUCTOR_HOST = "ironic-test-conductor"
SCHEMA_FORMAT = "1"  # bump when the schema recipe changes

# Interfaces enabled for the two hardware types (fake variants + redfish).
INTERFACES = {
    "bios": "fake,redfish,no-bios",
    "boot": "fake,redfish-virtual-media,redfish-https",
    "console": "no-console",
    "deploy": "fake,ramdisk",
    "firmware": "fake,redfish,no-firmware",
    "inspect": "fake,redfish,no-inspect",
    "management": "fake,redfish",
    "network": "noop,neutron",
    "power": "fake,redfish",
    "raid": "fake,redfish,no-raid",
    "rescue": "fake,no-rescue",
    "storage": "fake,noop",
    "vendor": "fake,redfish,no-vendor",
}

# Conductor timing: react within seconds rather than minutes where a test waits, and idle cheaply elsewhere.
#
# The periodic power sync is off. Ironic 39's Redfish driver derives a session-cache key with PBKDF2-SHA512
# (600,000 rounds) before every Redfish request: 0.4-0.8 s of CPU on these cores, and a sync asks each node's BMC
# up to four times (power, boot mode, secure boot, health). With a 10-s interval the syncs of the test beds' Ironics
# took most of both cores (py-spy: 80 % of every Ironic's samples in that one function) and slowed every other
# service. No test changes a power state behind Ironic's back and waits for Ironic to notice: Ironic learns power
# states from its own power actions, and the harness powers new nodes off through Ironic.
#
# The other periodic tasks are safety nets no test waits for, so they run at a pace that costs little while Ironic
# idles (py-spy of an idle test-bed Ironic: nearly all of its CPU, 9-14 ms a second, was these tasks' queries, and
# PostgreSQL answered each): the callback and inspection time-outs (``check_provision_state_interval``: five tasks,
# each a query) are checked every 10 s, so a stuck deployment or cleaning still fails 120-130 s after it stopped;
# orphaned allocations (of a conductor that went offline; with one conductor, restarted under the same host name,
# none are) every 10 s; rescue time-outs (no test rescues: ``no-rescue``/``fake`` only) every 60 s; and the
# conductor's keepalive every 10 s (Ironic's default; ``heartbeat_timeout`` stays 60 s, and a conductor marks
# itself online when it starts, which is what the harness waits for). Measured side by side on 2026-11-28 (two idle
# stacks, eight nodes each, load ~30): Ironic 12.2 -> 4.1 ms of CPU a second, its PostgreSQL 2.9 -> 1.3.
FAST_CONDUCTOR = {
    "sync_power_state_interval": 0,
    "check_provision_state_interval": 10,
    "check_allocations_interval": 10,
    "check_rescue_state_interval": 60,
    "deploy_callback_timeout": 120,
    "clean_callback_timeout": 120,
    "inspect_wait_timeout": 120,
    "power_state_change_timeout": 30,
    "heartbeat_interval": 10,
    "node_locked_retry_interval": 1,
    "node_locked_retry_attempts": 5,
}


def ironic_version() -> str:
    return importlib.metadata.version("ironic")


@dataclasses.dataclass
class ServiceUser:
    """The Keystone user keystonemiddleware validates tokens with."""

    username: str
    password: str
    project_name: str = "service"


@dataclasses.dataclass
class Ironic:
    service: procs.Service
    proc: procs.Proc
    http_proc: procs.Proc
    root: Path
    config_path: Path
    policy_path: Path  # oslo.policy file; write rules here (YAML/JSON)
    db_path: Path | None  # the sqlite file (None on a server database)
    http_root: Path
    http_url: str
    auth_strategy: str
    database_url: str | None = None

    @property
    def url(self) -> str:
        return self.service.url

    def stop(self) -> None:
        self.proc.stop()
        self.http_proc.stop()

    def restart(self, timeout: float = 120) -> None:
        """Stop Ironic (API and conductor: one process) and start it again on the same port over the same
        database; wait until the API answers and the conductor has registered again."""
        self.proc.restart()
        self.service.pid = self.proc.pid
        procs.wait_http(self.url + "/", timeout, self.proc, ok_statuses=(200,))
        _wait_conductor(self.database_url or self.db_path, timeout, self.proc)


def _config(
    root: Path,
    port: int,
    http_url: str,
    keystone_url: str | None,
    service_user: ServiceUser | None,
    database_url: str | None = None,
) -> str:
    lines = _base_config(root, port, http_url, keystone_url, database_url)
    if keystone_url is not None:
        assert service_user is not None, "keystone auth needs a service user"
        lines += _keystone_config(keystone_url, service_user)
    return "\n".join(lines)


def _base_config(root: Path, port: int, http_url: str, keystone_url: str | None, database_url: str | None) -> list[str]:
    """The lines of ``ironic.conf`` but its Keystone sections."""
    return [
        "[DEFAULT]",
        f"host = {CONDUCTOR_HOST}",
        "rpc_transport = none",
        f"auth_strategy = {'keystone' if keystone_url else 'noauth'}",
        "enabled_hardware_types = fake-hardware,redfish",
        "default_network_interface = noop",
        "use_stderr = true",
        "debug = false",
        # The rule ``service_role`` (role ``service`` on project ``service``) reads and writes every node, as
        # system-scoped readers/members do: ESI-Leap's account (:mod:`harness.esi_leap`) writes lessees with it
        # instead of being system-scoped. Without this option the rule matches nobody; no other test-bed user
        # holds the role ``service`` (Ironic's own user is ``admin`` on project ``service``; the switch suites give
        # it ``service`` too, what Neutron asks of whoever writes a port's binding: harness/ironic_networks.py).
        "rbac_service_role_elevated_access = true",
        *(f"enabled_{kind}_interfaces = {names}" for kind, names in INTERFACES.items()),
        "",
        "[api]",
        "host_ip = 127.0.0.1",
        f"port = {port}",
        f"public_endpoint = http://127.0.0.1:{port}",
        "",
        "[database]",
        # sqlite: a writer waits up to 30 s for the lock (pysqlite's default is 5 s).
        f"connection = {database_url or f'sqlite:///{root}/ironic.sqlite?timeout=30'}",
        *(["max_pool_size = 20", "max_overflow = 40"] if database_url else ["sqlite_synchronous = false"]),
        "",
        "[nova]",
        "send_power_notifications = false",
        "",
        "[dhcp]",
        "dhcp_provider = none",
        "",
        "[conductor]",
        "automated_clean = false",
        f"api_url = http://127.0.0.1:{port}",
        # As a production Ironic: file:// images only from one directory of the conductor
        # (Ironic refuses /etc, /dev, /proc, /sys, /boot and /run whatever this says).
        f"file_url_allowed_paths = {root}/images",
        *(f"{key} = {value}" for key, value in FAST_CONDUCTOR.items()),
        "",
        "[deploy]",
        f"http_root = {root}/httpboot",
        f"http_url = {http_url}",
        "",
        "[redfish]",
        "use_swift = false",
        "auth_type = basic",  # sushy-tools has no SessionService
        "connection_attempts = 3",
        "connection_retry_interval = 1",
        "",
        "[oslo_concurrency]",
        f"lock_path = {root}/locks",
        "",
        "[oslo_policy]",
        "enforce_scope = true",
        "enforce_new_defaults = true",
        f"policy_file = {root}/policy.yaml",
        "",
    ]


def _keystone_config(keystone_url: str, service_user: ServiceUser) -> list[str]:
    """The lines of ``ironic.conf``'s sections that log the service user in to Keystone."""
    password_auth = [
        "auth_type = password",
        f"auth_url = {keystone_url}",
        f"username = {service_user.username}",
        f"password = {service_user.password}",
        f"project_name = {service_user.project_name}",
        "user_domain_name = Default",
        "project_domain_name = Default",
        "region_name = RegionOne",
    ]
    # Ironic's ``neutron`` network interface (a node's choice; the default stays ``noop``) reaches Neutron as its
    # service user, through the catalog's ``network`` endpoint: none until a Neutron registers one
    # (:mod:`harness.neutron`), which only nodes with ``network_interface=neutron`` notice. The provisioning and
    # cleaning networks are the owner's, per node (``driver_info``).
    lines = [
        "[keystone_authtoken]",
        *password_auth,
        f"www_authenticate_uri = {keystone_url}",
        "interface = internal",
        "",
    ]
    lines += ["[neutron]", *password_auth, ""]
    lines += ["[service_catalog]", *password_auth, ""]
    return lines


def _schema_seed() -> Path:
    """An empty Ironic database with the current schema, made once per machine."""
    seed = cache_root() / f"ironic-{ironic_version()}-schema{SCHEMA_FORMAT}.sqlite"
    if seed.exists():
        return seed
    seed.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=seed.parent) as tmp:
        conf = Path(tmp) / "ironic.conf"
        conf.write_text(f"[database]\nconnection = sqlite:///{tmp}/ironic.sqlite\n")
        argv = [str(VENV_BIN / "ironic-dbsync"), "--config-file", str(conf), "create_schema"]
        res = subprocess.run(argv, cwd=tmp, capture_output=True, text=True, check=False)
        if res.returncode != 0:
            raise procs.ServiceStartError(f"{' '.join(argv)} failed:\n{res.stderr[-4000:]}")
        Path(tmp, "ironic.sqlite").replace(seed)  # atomic; last writer wins
    return seed


def start_ironic(
    workdir: str | Path,
    keystone_url: str | None = None,
    service_user: ServiceUser | None = None,
    db_from: Path | None = None,
    timeout: float = 120,
    database_url: str | None = None,
    create_schema: bool = True,
    extra_config: str | None = None,
    auth_label: str | None = None,
) -> Ironic:
    """Start Ironic with its state in ``workdir`` (created).

    ``keystone_url`` (``http://127.0.0.1:PORT/v3``) and ``service_user``
    select ``auth_strategy = keystone``; without them Ironic runs ``noauth``.
    Keystone need not be up yet: tokens are validated on the first request.
    ``db_from``: copy this Ironic sqlite database (consistently, with sqlite's
    backup API) instead of starting from an empty schema.
    ``database_url``: a server database (PostgreSQL) to use instead of
    sqlite; its schema is created here unless ``create_schema=False`` (a copy
    of another Ironic's database).
    ``extra_config``: a second ``--config-file`` read after ``ironic.conf``
    (its options win; ``@IRONIC_URL@`` is replaced by Ironic's URL), for
    example the HTTP basic auth and interfaces Metal3's BMO needs
    (:mod:`harness.baremetal_operator`); ``auth_label`` then names the auth
    strategy it sets.
    """
    root = Path(workdir)
    # httpboot/redfish made beforehand: Ironic's LocalPublisher makes its virtual-media directory at the first
    # publish with a check-then-mkdir, so first deploys at once race and the losers fail "File exists" (seen with
    # 20 hosts of the real operator deploying at once, bench/bmo_controller.py)
    for sub in ("httpboot", "httpboot/redfish", "locks", "images"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    db_path = _prepare_sqlite(root, db_from, database_url)
    policy_path = root / "policy.yaml"
    policy_path.write_text("{}\n")

    http_port, http_proc = _start_httpboot(root)
    http_url = f"http://127.0.0.1:{http_port}"

    port = procs.free_port()
    config_path = root / "ironic.conf"
    config_path.write_text(_config(root, port, http_url, keystone_url, service_user, database_url))
    if database_url and create_schema:
        seed = cache_root() / f"ironic-{ironic_version()}-schema{SCHEMA_FORMAT}.pgsql"
        try:
            postgres.load_schema(database_url, seed, lambda: _create_schema(config_path, root))
        except BaseException:
            http_proc.stop()
            raise
    url = f"http://127.0.0.1:{port}"
    args = ["--config-file", str(config_path)]
    if extra_config:
        extra_path = root / "ironic-extra.conf"
        extra_path.write_text(extra_config.replace("@IRONIC_URL@", url))
        args += ["--config-file", str(extra_path)]
    launcher = _LAUNCHER.format(harness_parent=str(Path(__file__).resolve().parents[1]), argv=["ironic", *args])
    proc = procs.start_process("ironic", [sys.executable, "-c", launcher], root)
    try:
        procs.wait_http(url + "/", timeout, proc, ok_statuses=(200,))
        _wait_conductor(database_url or root / "ironic.sqlite", timeout, proc)
        procs.wait_tcp("127.0.0.1", http_port, 10, http_proc)
    except BaseException:
        proc.stop()
        http_proc.stop()
        raise
    service = procs.Service("ironic", ironic_version(), url, port, proc.pid)
    return Ironic(
        service,
        proc,
        http_proc,
        root,
        config_path,
        policy_path,
        db_path,
        root / "httpboot",
        http_url,
        auth_label or ("keystone" if keystone_url else "noauth"),
        database_url,
    )


def _prepare_sqlite(root: Path, db_from: Path | None, database_url: str | None) -> Path | None:
    """Ironic's sqlite database in ``root``: a copy of ``db_from`` or of the empty schema (None on a server database)."""
    db_path = None if database_url else root / "ironic.sqlite"
    if database_url:
        assert db_from is None, "db_from copies a sqlite database"
    elif db_from is not None:
        with sqlite3.connect(db_from) as src, sqlite3.connect(db_path) as dst:
            src.backup(dst)
            # Forget the source's conductor so we wait for our own to register.
            dst.execute("DELETE FROM conductor_hardware_interfaces")
            dst.execute("UPDATE conductors SET online = 0")
    else:
        shutil.copyfile(_schema_seed(), db_path)
    if db_path is not None:
        # Write-ahead logging: readers no longer block the writer, so parallel
        # lifecycles (and enrolments) rarely meet "database is locked".
        with sqlite3.connect(db_path) as db:
            db.execute("PRAGMA journal_mode=WAL")
    return db_path


def _start_httpboot(root: Path) -> tuple[int, procs.Proc]:
    """Serve ``root/httpboot`` (``[deploy] http_root``) on a free loopback port: the port and the server."""
    http_port = procs.free_port()
    http_proc = procs.start_process(
        "ironic-httpboot",
        [
            sys.executable,
            "-m",
            "http.server",
            "--bind",
            "127.0.0.1",
            "--directory",
            str(root / "httpboot"),
            str(http_port),
        ],
        root,
    )
    return http_port, http_proc


def _create_schema(config_path: Path, root: Path) -> None:
    argv = [str(VENV_BIN / "ironic-dbsync"), "--config-file", str(config_path), "create_schema"]
    res = subprocess.run(argv, cwd=root, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise procs.ServiceStartError(f"{' '.join(argv)} failed:\n{res.stderr[-4000:]}")


_CONDUCTOR_QUERY = (
    "SELECT DISTINCT hardware_type FROM conductor_hardware_interfaces"
    " JOIN conductors ON conductors.id = conductor_id"
    " WHERE conductors.online = {true} AND conductors.hostname = {param}"
)


def _registered_types(db: Path | str) -> set[str]:
    """Hardware types the conductor registered, from sqlite or PostgreSQL."""
    if isinstance(db, str) and db.startswith("postgresql"):
        from urllib.parse import urlsplit

        import psycopg2

        url = urlsplit(db)
        try:
            conn = psycopg2.connect(
                host=url.hostname, port=url.port, user=url.username, dbname=url.path.lstrip("/"), connect_timeout=5
            )
        except psycopg2.Error:
            return set()
        try:
            with conn.cursor() as cur:
                cur.execute(_CONDUCTOR_QUERY.format(true="true", param="%s"), (CONDUCTOR_HOST,))
                return {r[0] for r in cur.fetchall()}
        except psycopg2.Error:
            return set()
        finally:
            conn.close()
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            rows = conn.execute(_CONDUCTOR_QUERY.format(true="1", param="?"), (CONDUCTOR_HOST,)).fetchall()
        return {r[0] for r in rows}
    except sqlite3.Error:
        return set()


def _wait_conductor(db: Path | str, timeout: float, proc: procs.Proc) -> None:
    """Wait until the conductor has registered both hardware types.

    The API answers before the conductor finishes starting; node creation
    fails with "no valid host" until then.
    """
    deadline = procs.StartDeadline(timeout, proc)
    while True:
        if _registered_types(db) >= {"fake-hardware", "redfish"}:
            return
        if deadline.expired() or not proc.alive():
            raise procs.ServiceStartError(
                f"ironic conductor not registered after {deadline.describe()}\n{proc.log_tail()}"
            )
        time.sleep(0.3)
