"""A private PostgreSQL cluster on 127.0.0.1 for Ironic under concurrency.

sqlite answers "database is locked" once several Ironic lifecycles run at the
same time; a server database does not. ``start_postgres(workdir)`` runs
Debian's PostgreSQL (``/usr/lib/postgresql/<version>/bin``, installed by
``scripts/install-system-packages.sh``) as a throwaway cluster:

- ``initdb`` refuses to run as root, so as root the cluster runs as the
  ``postgres`` system user (created by the Debian package), else ``nobody``,
  through ``setpriv`` (which execs: the PID we track is the server's). Its
  data directory is a fresh ``/tmp/bmt-pg-*`` directory owned by that user
  (pytest's temp dirs are private to root); as any other user it runs as
  that user.
- It listens on 127.0.0.1 only, on a free port, with no Unix socket in a
  shared place, ``trust`` authentication (loopback, throwaway data) and
  durability off (``fsync``, ``synchronous_commit``, ``full_page_writes``).
- ``stop()`` asks for a fast shutdown (SIGINT) of the process group we
  started, then removes the data directory.

A service's empty schema (``ironic-dbsync create_schema``: about 12 s of CPU
under the suites' load; ESI-Leap's about 5 s) is made once per machine and
version, dumped (``pg_dump``) under the harness cache directory, and loaded
from there with ``psql`` by every later database (:func:`load_schema`).
"""

from __future__ import annotations

import dataclasses
import fcntl
import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path

from . import procs

SUPERUSER = "ironic"


def pg_bin_dir() -> Path:
    """The newest ``/usr/lib/postgresql/<version>/bin`` with ``initdb``."""
    override = os.environ.get("BMT_PG_BIN")
    if override:
        return Path(override)
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0,
    )
    if not found:
        raise procs.ServiceStartError(
            "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): run scripts/install-system-packages.sh"
        )
    return Path(found[-1]).parent


def _client_args(url: str) -> list[str]:
    """The connection options of ``psql`` and ``pg_dump`` for a database's SQLAlchemy URL."""
    parts = urllib.parse.urlsplit(url)
    return ["-h", parts.hostname or "127.0.0.1", "-p", str(parts.port or 5432), "-U", parts.username or SUPERUSER,
            "-d", parts.path.lstrip("/")]  # fmt: skip


def load_schema(url: str, seed: Path, create: Callable[[], None]) -> None:
    """Give the empty database at ``url`` its schema: ``seed`` (a ``pg_dump`` of a database ``create`` made) loaded
    with ``psql`` when it exists; else ``create()`` (a service's own schema command on ``url``), and the result
    dumped into ``seed`` for the next databases. One process at a time makes a seed (a lock beside it): the
    sessions of a run start their stacks at once, and on a new machine the others wait for the first's seed
    instead of each running the schema command. The seed's name must change with what ``create`` makes (the
    service's version)."""
    if not seed.exists():
        seed.parent.mkdir(parents=True, exist_ok=True)
        with open(seed.parent / (seed.name + ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when closed
            if not seed.exists():
                create()
                _dump(url, seed)
                return
    load = subprocess.run(
        [str(pg_bin_dir() / "psql"), *_client_args(url), "-q", "-v", "ON_ERROR_STOP=1", "-f", str(seed)],
        capture_output=True,
        text=True,
        check=False,
    )
    if load.returncode != 0:
        raise procs.ServiceStartError(f"psql -f {seed} failed: {load.stderr[-2000:]}")


def _dump(url: str, seed: Path) -> None:
    """``pg_dump`` of the database at ``url`` into ``seed`` (written aside, then renamed: a reader sees it whole)."""
    with tempfile.TemporaryDirectory(dir=seed.parent) as tmp:
        dump_path = Path(tmp, seed.name)
        dump = subprocess.run(
            [str(pg_bin_dir() / "pg_dump"), *_client_args(url), "--no-owner", "--no-privileges", "-f", str(dump_path)],
            capture_output=True,
            text=True,
            check=False,
        )
        if dump.returncode != 0:
            raise procs.ServiceStartError(f"pg_dump of the new schema failed: {dump.stderr[-2000:]}")
        dump_path.replace(seed)


def _run_as() -> tuple[list[str], pwd.struct_passwd | None]:
    """The argv prefix that drops root (``[]`` when not root) and the user."""
    if os.geteuid() != 0:
        return [], None
    for name in ("postgres", "nobody"):
        try:
            user = pwd.getpwnam(name)
        except KeyError:
            continue
        return [
            "setpriv",
            f"--reuid={user.pw_uid}",
            f"--regid={user.pw_gid}",
            "--init-groups",
            "--reset-env",
            "--",
        ], user
    raise procs.ServiceStartError("running as root and neither a postgres nor a nobody user exists")


@dataclasses.dataclass
class Postgres:
    service: procs.Service
    proc: procs.Proc
    root: Path  # data directory's parent (removed on stop)
    port: int

    def url(self, database: str, driver: str = "postgresql+psycopg2") -> str:
        return f"{driver}://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def connect(self, database: str = "postgres"):
        import psycopg2

        return psycopg2.connect(host="127.0.0.1", port=self.port, user=SUPERUSER, dbname=database, connect_timeout=5)

    def create_database(self, name: str) -> str:
        """Create database ``name``; return its SQLAlchemy URL."""
        conn = self.connect()
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute(f'CREATE DATABASE "{name}"')
        finally:
            conn.close()
        return self.url(name)

    def clone_database(self, source: str, target: str) -> str:
        """Copy database ``source`` (which may be in use) into a new ``target``
        with pg_dump | psql; return the target's SQLAlchemy URL."""
        self.create_database(target)
        bindir = pg_bin_dir()
        dump = subprocess.run(
            [str(bindir / "pg_dump"), *_client_args(self.url(source)), "--no-owner"], capture_output=True, check=False
        )
        if dump.returncode != 0:
            raise procs.ServiceStartError(f"pg_dump {source} failed: {dump.stderr.decode()[-2000:]}")
        load = subprocess.run(
            [str(bindir / "psql"), *_client_args(self.url(target)), "-q", "-v", "ON_ERROR_STOP=1"],
            input=dump.stdout,
            capture_output=True,
            check=False,
        )
        if load.returncode != 0:
            raise procs.ServiceStartError(f"psql {target} failed: {load.stderr.decode()[-2000:]}")
        return self.url(target)

    def execute(self, database: str, sql: str) -> None:
        conn = self.connect(database)
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute(sql)
        finally:
            conn.close()

    def _shutdown(self) -> None:
        if self.proc.alive():
            try:
                os.killpg(self.proc.pid, signal.SIGINT)  # fast shutdown
                self.proc.popen.wait(15)
            except (ProcessLookupError, PermissionError, subprocess.TimeoutExpired):
                pass

    def stop(self) -> None:
        self._shutdown()
        self.proc.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def restart(self, timeout: float = 60) -> None:
        """Fast shutdown (open connections are cut), then the server again on the same port and data
        directory; wait until it accepts connections."""
        self._shutdown()
        self.proc.restart()
        self.service.pid = self.proc.pid
        _wait_ready(self, timeout)


def start_postgres(workdir: str | Path, timeout: float = 60) -> Postgres:
    """Start a private cluster (logs in ``workdir``, data in /tmp/bmt-pg-*)."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    bindir = pg_bin_dir()
    prefix, user = _run_as()
    root = Path(tempfile.mkdtemp(prefix="bmt-pg-"))
    data = root / "data"
    if user is not None:
        os.chown(root, user.pw_uid, user.pw_gid)
    try:
        argv = [
            *prefix,
            str(bindir / "initdb"),
            "-D",
            str(data),
            "-U",
            SUPERUSER,
            "--auth=trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        ]
        res = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=root)
        if res.returncode != 0:
            raise procs.ServiceStartError(f"initdb failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
        port = procs.free_port()
        argv = [
            *prefix,
            str(bindir / "postgres"),
            "-D",
            str(data),
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
            "-k",
            str(root),
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=off",
            "-c",
            "full_page_writes=off",
            "-c",
            "max_connections=400",
            "-c",
            "shared_buffers=64MB",
            "-c",
            "log_min_messages=warning",
        ]
        proc = procs.start_process("postgres", argv, workdir)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    server = Postgres(
        procs.Service("postgresql", bindir.parent.name, f"postgresql://127.0.0.1:{port}", port, proc.pid),
        proc,
        root,
        port,
    )
    try:
        _wait_ready(server, timeout)
    except BaseException:
        server.stop()
        raise
    return server


def _wait_ready(server: Postgres, timeout: float) -> None:
    import psycopg2

    deadline = procs.StartDeadline(timeout, server.proc)
    while True:
        if not server.proc.alive():
            raise procs.ServiceStartError(f"postgres exited\n{server.proc.log_tail()}")
        try:
            server.connect().close()
            return
        except psycopg2.OperationalError as exc:
            if deadline.expired():
                raise procs.ServiceStartError(
                    f"postgres not ready after {deadline.describe()}: {exc}\n{server.proc.log_tail()}"
                ) from exc
        time.sleep(0.2)
