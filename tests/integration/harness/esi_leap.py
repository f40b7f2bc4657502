"""ESI-Leap (offers, leases and the manager that writes them onto Ironic nodes) beside a running Keystone + Ironic.

TEST FIXTURE ONLY: nothing here is part of the collection. ``start_esi_leap(env, workdir)`` takes an
:class:`harness.openstack.OpenStackEnv` whose Ironic runs on PostgreSQL and adds, without restarting anything:

- in Keystone: the user ``esi-leap`` with the role ``service`` on project ``service`` (what it shows Ironic) and the
  system role ``reader`` (what it shows Keystone: it lists projects and walks ``parent_id``, which Keystone's
  scoped policies allow a system reader); the roles ESI-Leap's in-code policy knows, ``esi_leap_owner`` (given to
  the owner project's users: they may offer and lease their nodes) and ``esi_leap_lessee`` (given to the tenants'
  users: they may list and claim offers); the ``lease`` service with public and internal endpoints (the service
  type ESI-Leap's clients look up);
- a database ``esi_leap`` on the environment's PostgreSQL (``esi-leap-dbsync create_schema``);
- ``esi-leap-api`` (oslo.service: a parent and one worker, one process group) and the manager, on loopback, from
  ESI-Leap's own venv (``scripts/build-esi-leap.sh``: its pins conflict with the project's; it talks to Keystone
  and Ironic over HTTP only).

**Project-scoped towards Ironic, never system-scoped.** ESI-Leap calls Ironic with its ``[ironic]`` credentials,
and its ``/v1/nodes`` calls Ironic with the user's token plus its own as ``X-Service-Token``: were that service
token system-scoped, Ironic would treat the request as system-scoped and show any tenant every node. The account
here is scoped to project ``service`` with the role ``service``, and the harness's Ironic runs with
``rbac_service_role_elevated_access`` (:mod:`harness.ironic`), which lets exactly that role in exactly that project
read and update every node (to write ``lessee`` and ``properties/lease_uuid``), while a tenant's ``/v1/nodes`` shows
only its own nodes.

Three work-arounds, none a change to ESI-Leap's files:

- **Configuration read twice**: ESI-Leap's policy enforcer re-parses the configuration with no arguments (it
  calls ``CONF([], project="esi-leap")``), which drops ``--config-file`` and reads only the default locations;
  the first policy check then answers 500 ("value required for option auth-url in group [keystone_authtoken]").
  Each run has its own ``HOME`` and writes its one configuration file at ``$HOME/.esi-leap/esi-leap.conf``, the
  first default location, and passes that same file as ``--config-file``: both reads see the same file.
- **Manager tick**: the manager's jobs (fulfil leases, expire leases, cancel leases, expire offers) run every
  ``EVENT_INTERVAL`` = 60 s, a module constant with no option. The manager starts through :func:`launch_manager`,
  which sets that constant from ``$ESI_LEAP_EVENT_INTERVAL`` (the harness: 1 s) before calling ESI-Leap's own
  ``main()``. The launcher imports ``esi_leap.cmd`` first: it monkey-patches with eventlet, and a manager that
  imports its service module before that deadlocks at its first tick.
- **Database connections the manager never gives back**: ESI-Leap's queries (``model_query`` in
  ``esi_leap/db/sqlalchemy/api.py``) run after the session that made them was closed, so each one begins a new
  transaction on a pooled connection that nothing ends: every pass of every job leaves one. Most are given back
  when the garbage collector frees their session, but about one every 30 s stays checked out, ``idle in
  transaction`` in PostgreSQL, for good (measured on 2026-11-28: 55 after 20 minutes, all from the manager's
  jobs; the API, whose requests do the same, had kept 4). When the pool (5 + 50 overflow) was empty, each job
  waited 30 s for a connection and died with ``QueuePool limit of size 5 overflow 50 reached`` (oslo.service ends
  a periodic job at its first uncaught exception): the manager fulfilled no lease any more and every new lease
  stayed ``created``, about 20 minutes into a session, whatever the tests did. :func:`launch_manager` runs each
  of the four jobs so that the database sessions it began are closed when it returns (nothing of a finished pass
  still uses them), which gives their connections back. Each process tells PostgreSQL its name
  (``application_name``: :data:`MANAGER_APP`, :data:`API_APP`), so :meth:`EsiLeap.manager_stuck_transactions`
  finds the manager's connections left in a transaction.

``EsiLeap.stop()`` ends the manager, then the API's process group (SIGTERM: the parent stops its worker). Each run
takes a fresh port: oslo.service binds with ``SO_REUSEPORT``, so a stale instance on a reused port would share
the traffic silently (a port free to bind without ``SO_REUSEPORT`` has no such listener).

This module is imported in ESI-Leap's venv too (by the manager's launcher): at its top it imports only the
standard library and :mod:`harness.procs`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from . import postgres, procs
from .keystone import cache_root

if TYPE_CHECKING:
    from .openstack import OpenStackEnv, Project
    from .postgres import Postgres

VERSION = "1.0.0"  # the build script's default (scripts/build-esi-leap.sh)
SERVICE_TYPE = "lease"
SERVICE_USER = "esi-leap"
SERVICE_PROJECT = "service"  # Ironic's rbac_service_project_name (its default)
OWNER_ROLE = "esi_leap_owner"
LESSEE_ROLE = "esi_leap_lessee"
DEFAULT_TICK = 1  # seconds between the manager's jobs (ESI-Leap's own: 60)
HARNESS_PARENT = Path(__file__).resolve().parent.parent  # tests/integration
# Logged by the manager at each fulfilment pass: the first one shows its jobs run.
_MANAGER_TICK_LINE = "Checking for leases to fulfill"
# The manager's periodic jobs (esi_leap/manager/service.py), each a green thread of its own.
MANAGER_JOBS = ("_fulfill_leases", "_expire_leases", "_cancel_leases", "_expire_offers")
DATABASE = "esi_leap"
# What each process tells PostgreSQL it is (libpq reads $PGAPPNAME): pg_stat_activity's application_name.
MANAGER_APP = "esi-leap-manager"
API_APP = "esi-leap-api"
# The manager's INFO lines at every pass of its jobs: left out of the log excerpt a failing test shows.
_ROUTINE = ("Checking for ", "outlasted interval")


def venv_dir() -> Path:
    """ESI-Leap's venv: ``$BMT_ESI_LEAP_DIR`` (the Makefile sets it), else the build script's default."""
    override = os.environ.get("BMT_ESI_LEAP_DIR")
    if override:
        return Path(override)
    cache = os.environ.get("BMT_CACHE_DIR") or Path.home() / ".cache" / "baremetal-tenancy"
    return Path(cache) / f"esi-leap-{VERSION}"


def venv_version(venv: Path) -> str:
    """The esi-leap version installed in ``venv`` (from its dist-info directory)."""
    found = sorted(venv.glob("lib/python*/site-packages/esi_leap-*.dist-info"))
    return found[-1].name[len("esi_leap-") : -len(".dist-info")] if found else "unknown"


def launch_manager() -> None:
    """Run ESI-Leap's manager with the tick from ``$ESI_LEAP_EVENT_INTERVAL``, each job closing the database
    sessions it began (in ESI-Leap's venv; module docstring)."""
    import esi_leap.cmd  # noqa: F401  (first: eventlet's monkey-patching)
    from esi_leap.cmd import manager
    from esi_leap.manager import service

    service.EVENT_INTERVAL = float(os.environ.get("ESI_LEAP_EVENT_INTERVAL", "60"))
    _close_sessions_after_each_pass(service.ManagerService)
    sys.argv[0] = "esi-leap-manager"
    sys.exit(manager.main())


def _close_sessions_after_each_pass(manager_class) -> None:
    """Wrap the manager's jobs so that every SQLAlchemy session a pass began is closed when the pass returns.

    Each job runs in a green thread of its own (oslo.service's looping call), so the sessions that began a
    transaction in that green thread during the pass are the pass's own: an ``after_begin`` listener records
    them (a strong reference: the garbage collector never gets one with its connection), and the pass's end
    closes them, which gives their connections back to the pool. Runs in ESI-Leap's venv, after eventlet's
    monkey-patching (``threading.local`` is then local to a green thread).
    """
    import functools
    import logging
    import threading

    from sqlalchemy import event
    from sqlalchemy.orm import Session

    log = logging.getLogger("harness.esi_leap")
    begun = threading.local()

    def remember(session, transaction, connection):
        sessions = getattr(begun, "sessions", None)
        if sessions is not None:
            sessions.append(session)

    event.listen(Session, "after_begin", remember)

    def closing(job):
        @functools.wraps(job)
        def one_pass(self):
            begun.sessions = []
            try:
                return job(self)
            finally:
                sessions, begun.sessions = begun.sessions, None
                left_open = 0
                for session in dict.fromkeys(sessions):  # once each, in order
                    try:
                        left_open += session.in_transaction()
                        session.close()
                    except Exception:  # a pass must not end its job (oslo.service stops it)
                        log.exception("harness: closing a database session of %s failed", job.__name__)
                if left_open:  # every pass (debug: not in the harness's logs)
                    log.debug(
                        "harness: %s left %d database session(s) in a transaction: closed", job.__name__, left_open
                    )

        return one_pass

    for name in MANAGER_JOBS:
        setattr(manager_class, name, closing(getattr(manager_class, name)))


@dataclasses.dataclass
class ServiceAccount:
    username: str
    password: str
    user_id: str


@dataclasses.dataclass
class EsiLeap:
    service: procs.Service  # the API
    api_proc: procs.Proc
    manager_proc: procs.Proc
    root: Path
    config_path: Path
    account: ServiceAccount
    tick: float
    database_url: str
    startup_seconds: float
    postgres: Postgres

    @property
    def url(self) -> str:
        return self.service.url

    def manager_stuck_transactions(self, older_than: float = 60) -> list[tuple[int, float, str]]:
        """The manager's database connections idle inside a transaction for more than ``older_than`` seconds:
        (backend pid, seconds, the last query's start), oldest first. A pass of its jobs lasts under a second at
        the harness's tick (seconds at load 30), so any such connection is one it took and never gave back."""
        conn = self.postgres.connect(DATABASE)
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute(
                    "SELECT pid, extract(epoch FROM now() - state_change)::float, left(query, 120)"
                    " FROM pg_stat_activity WHERE datname = %s AND application_name = %s"
                    " AND state = 'idle in transaction' AND now() - state_change > make_interval(secs => %s)"
                    " ORDER BY state_change",
                    (DATABASE, MANAGER_APP, older_than),
                )
                return list(cur.fetchall())
        finally:
            conn.close()

    def manager_report(self, lines: int = 40) -> str:
        """For a failing test: whether the manager runs, its last ``lines`` log lines other than the routine ones
        of every pass, the last pass of each job and its connections left in a transaction."""
        try:
            text = self.manager_proc.log_path.read_text(errors="replace").splitlines()
        except OSError as exc:
            return f"<cannot read {self.manager_proc.log_path}: {exc}>"
        state = "running" if self.manager_proc.alive() else f"exited with {self.manager_proc.popen.returncode}"
        out = [f"esi-leap-manager ({state}), {self.manager_proc.log_path}:"]
        for marker in ("leases to fulfill", "expiring leases", "leases to cancel", "expiring offers"):
            last = next((line[:23] for line in reversed(text) if f"Checking for {marker}" in line), "never")
            out.append(f"  last pass 'Checking for {marker}': {last}")
        try:
            stuck = self.manager_stuck_transactions()
            out.append(f"  connections idle in a transaction for more than 60 s: {len(stuck)}")
        except Exception as exc:  # a report must not fail
            out.append(f"  connections: <cannot ask PostgreSQL: {exc}>")
        notable = [line for line in text if not any(r in line for r in _ROUTINE)]
        return "\n".join(out + notable[-lines:])

    @contextlib.contextmanager
    def manager_held(self, timeout: float = 120) -> Iterator[None]:
        """The manager stopped for the block, then started again on the same configuration and waited for until
        its jobs tick. Its API keeps answering meanwhile, but no lease is fulfilled, expired or cancelled: the
        tests' way of holding a lease whose end has passed still while a keeper reads it, with no race against the
        manager's tick."""
        self.manager_proc.stop()
        try:
            yield
        finally:
            logged = self.manager_proc.log_path.stat().st_size
            self.manager_proc.restart()
            _wait_log(self.manager_proc, _MANAGER_TICK_LINE, timeout, offset=logged)

    def stop(self) -> None:
        self.manager_proc.stop()
        self.api_proc.stop()


# --- Keystone -------------------------------------------------------------------------------------------------


def _role_id(conn, name: str) -> str:
    role = conn.identity.find_role(name, ignore_missing=True)
    return (role or conn.identity.create_role(name=name)).id


def _provision_keystone(env: OpenStackEnv, api_url: str, owners, lessees) -> ServiceAccount:
    conn = env.admin_conn
    project = conn.identity.find_project(SERVICE_PROJECT, domain_id="default", ignore_missing=False)
    password = secrets.token_urlsafe(16)
    user = conn.identity.create_user(
        name=SERVICE_USER, password=password, domain_id="default", default_project_id=project.id
    )
    conn.identity.assign_project_role_to_user(project.id, user.id, _role_id(conn, "service"))
    conn.identity.assign_system_role_to_user(user, _role_id(conn, "reader"), "all")
    for projects, role in ((owners, OWNER_ROLE), (lessees, LESSEE_ROLE)):
        role_id = _role_id(conn, role)
        for tenant in projects:
            for auth in tenant.credentials.values():
                member = conn.identity.find_user(auth["username"], domain_id="default", ignore_missing=False)
                conn.identity.assign_project_role_to_user(tenant.project_id, member.id, role_id)
    service = conn.identity.create_service(name="esi-leap", type=SERVICE_TYPE)
    for interface in ("public", "internal"):
        conn.identity.create_endpoint(service_id=service.id, interface=interface, url=api_url, region_id="RegionOne")
    return ServiceAccount(SERVICE_USER, password, user.id)


# --- configuration --------------------------------------------------------------------------------------------


def _auth_section(name: str, keystone_url: str, account: ServiceAccount, scope: list[str]) -> list[str]:
    return [
        f"[{name}]",
        "auth_type = password",
        f"auth_url = {keystone_url}",
        f"username = {account.username}",
        f"password = {account.password}",
        "user_domain_name = Default",
        *scope,
        "region_name = RegionOne",
    ]


def _config(root: Path, port: int, keystone_url: str, account: ServiceAccount, database_url: str) -> str:
    project_scope = [f"project_name = {SERVICE_PROJECT}", "project_domain_name = Default"]
    lines = [
        "[DEFAULT]",
        "transport_url = fake://",  # the manager's RPC server, which nothing calls: no broker
        "host = esi-leap-test",
        "use_stderr = true",
        "debug = false",
        "",
        "[api]",
        "host_ip = 127.0.0.1",
        f"port = {port}",
        f"public_endpoint = http://127.0.0.1:{port}",
        "api_workers = 1",
        "",
        "[database]",
        f"connection = {database_url}",
        "",
        "[oslo_concurrency]",
        f"lock_path = {root}/locks",  # offers and leases take a lock per node
        "",
        "[pecan]",
        "auth_enable = true",
        "",
        *_auth_section("keystone_authtoken", keystone_url, account, project_scope),
        f"www_authenticate_uri = {keystone_url}",
        "",
        # Towards Ironic: project-scoped (role service on project service), never system-scoped.
        *_auth_section("ironic", keystone_url, account, project_scope),
        "valid_interfaces = public",
        "",
        # Towards Keystone only: project lookups by name and id, the project list (a system reader).
        *_auth_section("keystone", keystone_url, account, ["system_scope = all"]),
        "valid_interfaces = public",
        "",
    ]
    return "\n".join(lines)


# --- start ----------------------------------------------------------------------------------------------------


def _wait_log(proc: procs.Proc, text: str, timeout: float, offset: int = 0) -> None:
    """Wait until ``text`` is in ``proc``'s log after its first ``offset`` bytes."""
    deadline = procs.StartDeadline(timeout, proc)
    while text not in proc.log_path.read_bytes()[offset:].decode(errors="replace"):
        if not proc.alive() or deadline.expired():
            state = "running" if proc.alive() else f"exited with {proc.popen.returncode}"
            raise procs.ServiceStartError(
                f"{proc.name}: no {text!r} in its log after {deadline.describe()} ({state})\n{proc.log_tail()}"
            )
        time.sleep(0.2)


def _wait_policy(url: str, env: OpenStackEnv, timeout: float, proc: procs.Proc) -> None:
    """One authenticated request that goes through ESI-Leap's policy (the check the configuration bug breaks)."""
    from keystoneauth1 import session
    from keystoneauth1.identity import v3

    sess = session.Session(auth=v3.Password(**env.keystone_server.admin_auth("project")))
    deadline = procs.StartDeadline(timeout, proc)
    while True:
        status = sess.get(url + "/v1/offers", raise_exc=False).status_code
        if status == 200:
            return
        if not proc.alive() or deadline.expired():
            raise procs.ServiceStartError(
                f"esi-leap-api: GET /v1/offers answers {status} after {deadline.describe()}\n{proc.log_tail()}"
            )
        time.sleep(0.2)


def _create_schema(venv: Path, args: list[str], root: Path, home: Path) -> None:
    """``esi-leap-dbsync create_schema`` on the configured database."""
    dbsync = subprocess.run(
        [str(venv / "bin" / "esi-leap-dbsync"), *args, "create_schema"],
        cwd=root,
        env={**os.environ, "HOME": str(home)},
        capture_output=True,
        text=True,
        check=False,
    )
    if dbsync.returncode != 0:
        raise procs.ServiceStartError(f"esi-leap-dbsync create_schema failed:\n{dbsync.stderr[-4000:]}")


def _start_manager(venv: Path, args: list[str], root: Path, run_env: dict[str, str], tick: float) -> procs.Proc:
    """The manager, through :func:`launch_manager` (ESI-Leap's ``esi-leap-manager`` main, patched)."""
    launcher = (
        "import esi_leap.cmd, sys; sys.path.insert(0, %r); "
        "from harness.esi_leap import launch_manager; launch_manager()" % str(HARNESS_PARENT)
    )
    return procs.start_process(
        "esi-leap-manager",
        [str(venv / "bin" / "python"), "-c", launcher, *args],
        root,
        env={**run_env, "ESI_LEAP_EVENT_INTERVAL": str(tick), "PGAPPNAME": MANAGER_APP},
    )


def start_esi_leap(
    env: OpenStackEnv,
    workdir: str | Path,
    owners: list[Project] | None = None,
    lessees: list[Project] | None = None,
    tick: float = DEFAULT_TICK,
    timeout: float = 120,
) -> EsiLeap:
    """Start ESI-Leap's API and manager beside ``env`` (its Keystone, Ironic and PostgreSQL), state in ``workdir``.

    ``owners`` (default: the infra project) get ``esi_leap_owner``, ``lessees`` (default: every tenant)
    ``esi_leap_lessee`` for all their users. ``tick``: seconds between the manager's jobs.
    """
    started_at = time.monotonic()
    venv = venv_dir()
    if not (venv / "bin" / "esi-leap-api").exists():
        raise procs.ServiceStartError(f"ESI-Leap is not built in {venv}: run `make esi-leap`")
    if env.postgres_server is None:
        raise procs.ServiceStartError(
            "ESI-Leap runs on the environment's PostgreSQL: start it with database=postgresql"
        )
    root = Path(workdir)
    home = root / "home"
    (home / ".esi-leap").mkdir(parents=True, exist_ok=True)
    (root / "locks").mkdir(parents=True, exist_ok=True)
    port = procs.free_port()
    url = f"http://127.0.0.1:{port}"
    owners = [env.infra] if owners is None else owners
    lessees = list(env.tenants.values()) if lessees is None else lessees
    account = _provision_keystone(env, url, owners, lessees)
    database_url = env.postgres_server.create_database(DATABASE)
    # The one configuration file, where the policy's re-parse finds it too (module docstring).
    config_path = home / ".esi-leap" / "esi-leap.conf"
    config_path.write_text(_config(root, port, env.keystone_server.auth_url, account, database_url))
    config_path.chmod(0o600)
    args = ["--config-file", str(config_path)]
    seed = cache_root() / f"esi-leap-{venv_version(venv)}-schema.pgsql"
    postgres.load_schema(database_url, seed, lambda: _create_schema(venv, args, root, home))
    run_env = {"HOME": str(home)}
    api = procs.start_process(
        "esi-leap-api", [str(venv / "bin" / "esi-leap-api"), *args], root, env={**run_env, "PGAPPNAME": API_APP}
    )
    manager = _start_manager(venv, args, root, run_env, tick)
    try:
        procs.wait_http(url + "/", timeout, api, ok_statuses=(200,))
        _wait_policy(url, env, timeout, api)
        _wait_log(manager, _MANAGER_TICK_LINE, timeout)
    except BaseException:
        manager.stop()
        api.stop()
        raise
    service = procs.Service("esi-leap", venv_version(venv), url, port, api.pid)
    return EsiLeap(
        service,
        api,
        manager,
        root,
        config_path,
        account,
        tick,
        database_url,
        time.monotonic() - started_at,
        env.postgres_server,
    )
