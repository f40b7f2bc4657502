"""Neutron (ML2, VLAN networks, networking-generic-switch) on PostgreSQL, served by gunicorn on 127.0.0.1.

TEST FIXTURE ONLY: the network service of the test bed, configuring the switch of :mod:`harness.switch`.
Neutron, networking-generic-switch (NGS) and their gunicorn live in a virtualenv of their own
(``make neutron``: ``scripts/build-neutron.sh``, built on the project's pins); the harness talks to it over HTTP.

``start_neutron(workdir, keystone, admin_conn, postgres, switch)`` adds Neutron to a running Keystone (it does not
start one) and a running PostgreSQL:

- **Keystone**: user ``neutron`` (roles ``admin`` and ``service`` on project ``service``, which must exist), whose
  password keystonemiddleware validates tokens with, and the ``network`` service with public and internal
  endpoints;
- **database** ``neutron`` on ``postgres``: Neutron's alembic migrations fail on PostgreSQL 15 (a MySQL-only
  ``ALTER TABLE ... CONVERT TO CHARACTER SET``), so the schema is made from the models and stamped at the heads
  of every installed branch, as Neutron's own tests do. That takes ~20 s, so it is done once per machine into a
  *seed* (a ``pg_dump`` under the cache directory, keyed by the Neutron version) that each run loads: ~1 s.
  PostgreSQL rather than sqlite: sqlite answers "database is locked" to three port updates at once;
- **configuration**: ML2 with the ``vlan`` (tenant networks, :data:`VLAN_RANGE` on :data:`PHYSNET`) and ``flat``
  type drivers and NGS's ``genericswitch`` mechanism driver, whose one switch :data:`SWITCH_INFO` is ``switch``
  reached over SSH (``netmiko_ovs_linux``) and puts unbound ports in the switch's quarantine VLAN
  (``ngs_port_default_vlan``); ``transport_url = fake://`` (no message queue, no agents: only NGS acts on the
  network); no notifications to Nova; new policy defaults with scope checks; a test-bed timer: NGS retries an SSH
  connection that fails for 30 s, every 2 s (``ngs_ssh_connect_timeout``, ``ngs_ssh_connect_interval``; its
  defaults 60 s and 10 s), so that a switch refusing or hanging fails a port binding in half a minute;
  NGS's locks (``[ngs_coordination] backend_url``) in tooz's ``file://`` driver under the run directory, as ESI
  runs NGS with etcd: one SSH session to the switch at a time (``ngs_max_connections``, 1); without a backend NGS
  ignores that limit and opens a session per port at once;
- **policy**: the file :attr:`Neutron.policy_path` starts empty (Neutron's defaults). The owner's policy (who may
  write a port's binding, the switch-port fields ``binding:host_id`` and ``binding:profile``; requests a service
  makes on a caller's behalf reading the owner's networks) is the ``ironic_tenancy`` role's, which
  ``fixtures_networks`` runs into that file before any test (:func:`harness.ironic_networks.run_owner_role`):
  Neutron re-reads the file when it changes;
- gunicorn (one worker, eight threads) imports a shim: oslo.config would otherwise parse gunicorn's command
  line. Ready once an admin token lists networks through it.

:meth:`Neutron.stop` stops gunicorn; the database goes with the PostgreSQL server.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import subprocess
import tempfile
import time
from pathlib import Path

from . import procs
from .keystone import REGION, Keystone, cache_root
from .postgres import Postgres, load_schema
from .switch import BRIDGE, Switch

NEUTRON_VERSION = "29.0.0"  # the default venv's (the Makefile's, scripts/build-neutron.sh)
SCHEMA_FORMAT = "1"  # bump when the seed recipe below changes
PHYSNET = "physnet1"
VLAN_RANGE = (100, 199)
SWITCH_INFO = "bmt-switch"  # the NGS switch section, what local_link_information's switch_info names
SWITCH_ID = "00:00:00:00:00:01"  # the switch_id of local_link_information (NGS looks the switch up by switch_info)
SERVICE_PROJECT = "service"

_WSGI_SHIM = """\
import sys
sys.argv = [sys.argv[0]]
from neutron.wsgi.api import application  # noqa: E402,F401
"""

# Run by the Neutron venv's Python: every model imported, the tables created from them.
_CREATE_SCHEMA = """\
import sys
import sqlalchemy
from neutron.db.migration.models import head
head.get_metadata().create_all(sqlalchemy.create_engine(sys.argv[1]))
"""


class NeutronMissing(RuntimeError):
    """Neutron's virtualenv has not been built (run ``make neutron``)."""


def neutron_dir() -> Path:
    """The virtualenv ``make neutron`` built (``$BMT_NEUTRON_DIR``, else the default under the cache)."""
    explicit = os.environ.get("BMT_NEUTRON_DIR")
    if explicit:
        return Path(explicit)
    cache = Path(os.environ.get("BMT_CACHE_DIR") or Path.home() / ".cache" / "baremetal-tenancy")
    return cache / f"neutron-{NEUTRON_VERSION}"


def neutron_version(venv: Path) -> str:
    """The Neutron version the venv was built with (its build stamp's first words: ``neutron <version> ...``)."""
    words = (venv / ".built").read_text().split()
    return words[1] if words[:1] == ["neutron"] else "unknown"


def require_neutron(directory: Path | None = None) -> Path:
    directory = directory or neutron_dir()
    wanted = ("bin/gunicorn", "bin/neutron-db-manage", "etc/neutron/api-paste.ini", ".built")
    missing = [p for p in wanted if not (directory / p).exists()]
    if missing:
        raise NeutronMissing(f"Neutron not built in {directory} (missing {', '.join(missing)}): run `make neutron`")
    return directory


@dataclasses.dataclass
class Neutron:
    service: procs.Service
    proc: procs.Proc
    root: Path
    policy_path: Path
    venv: Path
    seconds: float  # start-up time (database, Keystone objects, gunicorn until ready)
    keystone: Keystone | None = None  # for restart()'s readiness check

    @property
    def url(self) -> str:
        return self.service.url

    def stop(self) -> None:
        self.proc.stop()

    def restart(self, timeout: float = 120) -> None:
        """Stop Neutron (SIGTERM: gunicorn ends its worker, requests under way included) and start it again on the
        same port, database and configuration; wait until an authenticated request is answered."""
        started = time.monotonic()
        self.proc.restart()
        self.service.pid = self.proc.pid
        procs.wait_http(self.url + "/", timeout, self.proc, ok_statuses=(200,))
        _wait_api(self.keystone, self.url, max(10.0, timeout - (time.monotonic() - started)), self.proc)


def _config(root: Path, venv: Path, port: int, keystone_url: str, password: str, database_url: str) -> str:
    return f"""\
[DEFAULT]
core_plugin = ml2
service_plugins =
auth_strategy = keystone
bind_host = 127.0.0.1
bind_port = {port}
api_paste_config = {venv}/etc/neutron/api-paste.ini
transport_url = fake://
notify_nova_on_port_status_changes = false
notify_nova_on_port_data_changes = false
dhcp_agent_notification = false
allow_overlapping_ips = true
host = bmt-neutron
use_stderr = true
debug = false
api_workers = 1
rpc_workers = 0
rpc_state_report_workers = 0

[database]
connection = {database_url}

[oslo_concurrency]
lock_path = {root}/locks

[oslo_policy]
enforce_scope = true
enforce_new_defaults = true
policy_file = {root}/policy.yaml

[keystone_authtoken]
auth_type = password
auth_url = {keystone_url}
www_authenticate_uri = {keystone_url}
username = neutron
password = {password}
project_name = {SERVICE_PROJECT}
user_domain_name = Default
project_domain_name = Default
region_name = {REGION}
interface = internal
"""


def _ml2_config(switch: Switch, root: Path) -> str:
    low, high = VLAN_RANGE
    return f"""\
[ngs_coordination]
backend_url = file://{root / "ngs-locks"}

[ml2]
type_drivers = vlan,flat
tenant_network_types = vlan
mechanism_drivers = genericswitch
extension_drivers = port_security

[ml2_type_vlan]
network_vlan_ranges = {PHYSNET}:{low}:{high}

[ml2_type_flat]
flat_networks = {PHYSNET}

[genericswitch:{SWITCH_INFO}]
device_type = netmiko_ovs_linux
ip = 127.0.0.1
port = {switch.ssh_port}
username = root
key_file = {switch.ssh_key}
ngs_ovs_bridge = {BRIDGE}
ngs_port_default_vlan = {switch.quarantine_vlan}
ngs_mac_address = {SWITCH_ID}
ngs_ssh_connect_timeout = 30
ngs_ssh_connect_interval = 2
"""


def local_link_information(port: str) -> list[dict]:
    """A port's ``binding:profile`` ``local_link_information`` for switch port ``port`` (what Ironic copies
    from its port's ``local_link_connection``)."""
    return [{"switch_info": SWITCH_INFO, "switch_id": SWITCH_ID, "port_id": port}]


# --- database -------------------------------------------------------------------


def _run(argv: list[str], cwd: str | Path | None = None) -> None:
    result = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=cwd)
    if result.returncode != 0:
        raise procs.ServiceStartError(f"{' '.join(argv[:6])}... failed ({result.returncode}): {result.stderr[-4000:]}")


def _create_schema(venv: Path, url: str, scratch: Path) -> None:
    """Neutron's schema on the database at ``url``, made from the models and stamped at the heads (module docstring)."""
    with tempfile.TemporaryDirectory(dir=scratch, prefix="neutron-schema.") as tmp:
        conf = Path(tmp, "neutron.conf")
        conf.write_text(f"[database]\nconnection = {url}\n")
        _run([str(venv / "bin" / "python"), "-c", _CREATE_SCHEMA, url], tmp)
        _run([str(venv / "bin" / "neutron-db-manage"), "--config-file", str(conf), "stamp", "heads"], tmp)


def create_database(postgres: Postgres, venv: Path, name: str = "neutron") -> str:
    """Database ``name`` with Neutron's schema, from the seed (made first if this machine has none:
    :func:`harness.postgres.load_schema`)."""
    seed = cache_root() / f"neutron-{neutron_version(venv)}-schema{SCHEMA_FORMAT}.sql"
    url = postgres.create_database(name)
    load_schema(url, seed, lambda: _create_schema(venv, url, seed.parent))
    return url


# --- Keystone -------------------------------------------------------------------


def _register(admin_conn, password: str, url: str) -> None:
    """User ``neutron`` (admin and service on project service) and the ``network`` endpoints."""
    identity = admin_conn.identity
    project = identity.find_project(SERVICE_PROJECT, domain_id="default", ignore_missing=False)
    user = identity.create_user(name="neutron", password=password, domain_id="default", default_project_id=project.id)
    for role in ("admin", "service"):
        identity.assign_project_role_to_user(project, user, identity.find_role(role, ignore_missing=False))
    service = identity.create_service(name="neutron", type="network")
    for interface in ("public", "internal"):
        identity.create_endpoint(service_id=service.id, interface=interface, url=url, region_id=REGION)


# --- start ----------------------------------------------------------------------


def start_neutron(
    workdir: str | Path,
    keystone: Keystone,
    admin_conn,
    postgres: Postgres,
    switch: Switch,
    timeout: float = 120,
) -> Neutron:
    """Start Neutron with its state in ``workdir`` (created): see the module documentation.

    ``admin_conn``: a system-scoped admin connection to ``keystone`` (it creates the user and the endpoints).
    """
    started = time.monotonic()
    venv = require_neutron()
    root = Path(workdir)
    root.mkdir(parents=True, exist_ok=True)
    (root / "locks").mkdir(exist_ok=True)
    database_url = create_database(postgres, venv)
    port = procs.free_port()
    url = f"http://127.0.0.1:{port}"
    password = secrets.token_urlsafe(16)
    _register(admin_conn, password, url)
    (root / "neutron.conf").write_text(_config(root, venv, port, keystone.auth_url, password, database_url))
    (root / "ml2_conf.ini").write_text(_ml2_config(switch, root))
    policy_path = root / "policy.yaml"
    policy_path.write_text("{}\n")  # the owner's role writes the rules
    (root / "neutron_wsgi_shim.py").write_text(_WSGI_SHIM)
    argv = [str(venv / "bin" / "gunicorn"), "--bind", f"127.0.0.1:{port}", "--workers", "1", "--threads", "8"]
    argv += ["--no-control-socket", "--chdir", str(root), "--timeout", "120", "neutron_wsgi_shim:application"]
    env = {
        "OS_NEUTRON_CONFIG_DIR": str(root),
        "OS_NEUTRON_CONFIG_FILES": "neutron.conf;ml2_conf.ini",
        # The venv's own programs first (NGS, netmiko); nothing from the project's venv.
        "PATH": f"{venv / 'bin'}:/usr/sbin:/usr/bin:/sbin:/bin",
        "VIRTUAL_ENV": str(venv),
    }
    proc = procs.start_process("neutron", argv, root, env=env)
    try:
        procs.wait_http(url + "/", timeout, proc, ok_statuses=(200,))
        _wait_api(keystone, url, max(10.0, timeout - (time.monotonic() - started)), proc)
    except BaseException:
        proc.stop()
        raise
    service = procs.Service("neutron (ml2 + networking-generic-switch)", neutron_version(venv), url, port, proc.pid)
    return Neutron(service, proc, root, policy_path, venv, time.monotonic() - started, keystone)


def _wait_api(keystone: Keystone, url: str, timeout: float, proc: procs.Proc) -> None:
    """One authenticated request: keystonemiddleware, the policy and the database all answer."""
    from keystoneauth1 import exceptions, session
    from keystoneauth1.identity import v3

    sess = session.Session(auth=v3.Password(**keystone.admin_auth("project")))
    deadline = procs.StartDeadline(timeout, proc)
    while True:
        try:
            response = sess.get(url + "/v2.0/networks", raise_exc=False)
            if response.status_code == 200:
                return
            last = f"HTTP {response.status_code}: {response.text[:500]}"
        except exceptions.ClientException as exc:
            last = repr(exc)
        if deadline.expired() or not proc.alive():
            raise procs.ServiceStartError(f"neutron at {url} after {deadline.describe()}: {last}\n{proc.log_tail()}")
        time.sleep(0.3)
