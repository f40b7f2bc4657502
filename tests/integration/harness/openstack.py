"""The OpenStack half of the harness: Keystone + Ironic + sushy-tools together.

``start_openstack(workdir)`` starts the three services on loopback (Keystone
and Ironic boot concurrently), then creates in Keystone:

- project ``service`` with user ``ironic`` (admin role) for keystonemiddleware;
- project ``infra``, the owner of the node pool, with ``infra-member`` and
  ``infra-manager`` users;
- tenant projects (default ``tenant-a``, ``tenant-b``), each with a
  ``<tenant>-member`` user (role ``member``) and a ``<tenant>-manager`` user
  (role ``manager``), with per-run passwords;
- the ``baremetal`` service with public and internal endpoints.

It writes a ``clouds.yaml`` with one cloud per identity (``admin``,
``admin-project``, ``infra``, ``infra-manager``, ``tenant-a``,
``tenant-a-manager``, ...). Node enrolment helpers (as admin) take nodes of the
``fake-hardware`` and ``redfish`` types to ``available``.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import secrets
import time
from pathlib import Path

import openstack
import yaml

from . import procs
from .ironic import Ironic, ServiceUser, start_ironic
from .keystone import REGION, Keystone, start_keystone
from .postgres import Postgres, start_postgres
from .sushy import Bmc, SushyEmulator, start_sushy

DEFAULT_TENANTS = ("tenant-a", "tenant-b")
INFRA_PROJECT = "infra"
IRONIC_SERVICE_USER = "ironic"  # keystonemiddleware's user, and Ironic's for Neutron ([neutron])
ROLES = ("member", "manager")

# Hardware properties for fake nodes (fake hardware reports none itself).
DEFAULT_PROPERTIES = {"cpus": 8, "memory_mb": 32768, "local_gb": 100, "cpu_arch": "x86_64"}


def connect(auth: dict, **kwargs) -> openstack.connection.Connection:
    """An openstacksdk connection for a keystoneauth ``password`` auth dict."""
    return openstack.connection.Connection(
        auth_type="password",
        auth=dict(auth),
        region_name=REGION,
        identity_interface="public",
        interface="public",
        **kwargs,
    )


@dataclasses.dataclass
class Project:
    """A Keystone project with one user per role (``member``, ``manager``)."""

    name: str
    project_id: str
    credentials: dict[str, dict]  # role -> keystoneauth password auth dict
    _conns: dict = dataclasses.field(default_factory=dict, repr=False)

    @property
    def member(self) -> dict:
        return self.credentials["member"]

    @property
    def manager(self) -> dict:
        return self.credentials["manager"]

    def cloud_name(self, role: str = "member") -> str:
        """Its cloud in clouds.yaml: ``<project>`` or ``<project>-<role>``."""
        return self.name if role == "member" else f"{self.name}-{role}"

    def conn(self, role: str = "member") -> openstack.connection.Connection:
        """A (cached) project-scoped connection as the user with ``role``."""
        if role not in self._conns:
            self._conns[role] = connect(self.credentials[role])
        return self._conns[role]


@dataclasses.dataclass
class OpenStackEnv:
    workdir: Path
    keystone_server: Keystone
    ironic_server: Ironic
    sushy_server: SushyEmulator
    admin_conn: openstack.connection.Connection  # system-scoped admin
    infra: Project
    tenants: dict[str, Project]
    clouds_yaml: Path
    startup_seconds: float
    postgres_server: Postgres | None = None

    # Service records (name, version, url, port, pid) for reports.
    @property
    def keystone(self) -> procs.Service:
        return self.keystone_server.service

    @property
    def ironic(self) -> procs.Service:
        return self.ironic_server.service

    @property
    def sushy(self) -> procs.Service:
        return self.sushy_server.service

    @property
    def services(self) -> list[procs.Service]:
        extra = [self.postgres_server.service] if self.postgres_server else []
        return [self.keystone, self.ironic, self.sushy, *extra]

    @property
    def bmcs(self) -> list[Bmc]:
        return self.sushy_server.bmcs

    @property
    def policy_path(self) -> Path:
        """Ironic's oslo.policy file (initially ``{}``); rules written here apply live."""
        return self.ironic_server.policy_path

    def settle_policy(self) -> None:
        """Make Ironic re-read its policy file now, with one request alone.

        oslo.policy re-reads a changed file on the next request: it replaces
        its rule table with the file's rules, then adds the in-code defaults
        back. Requests racing through that window get a 500 naming a rule
        (``'baremetal:node:get'``, a KeyError). Call this after writing the
        file and before sending concurrent requests.
        """
        list(self.admin_conn.baremetal.nodes(limit=1))

    @property
    def infra_project_id(self) -> str:
        return self.infra.project_id

    def ansible_env(self, cloud: str, clouds_yaml: Path | None = None) -> dict[str, str]:
        """Environment for ``ansible-playbook`` (openstack.cloud) as ``cloud``.

        ``OS_CLIENT_CONFIG_FILE`` and ``OS_CLOUD`` select the identity.
        Merge into ``os.environ`` for the subprocess.
        """
        return {"OS_CLIENT_CONFIG_FILE": str(clouds_yaml or self.clouds_yaml), "OS_CLOUD": cloud}

    def write_clouds_yaml(self, path: Path, baremetal_endpoint_override: str | None = None) -> Path:
        """Write a clouds.yaml for every identity to ``path``.

        ``baremetal_endpoint_override`` sends Ironic calls to another URL while
        still authenticating with Keystone (e.g. to a ``noauth`` Ironic).
        """
        clouds = {
            "admin": self._cloud(self.keystone_server.admin_auth("system")),
            "admin-project": self._cloud(self.keystone_server.admin_auth("project")),
        }
        for project in [self.infra, *self.tenants.values()]:
            for role in ROLES:
                clouds[project.cloud_name(role)] = self._cloud(project.credentials[role])
        if baremetal_endpoint_override:
            for cloud in clouds.values():
                cloud["baremetal_endpoint_override"] = baremetal_endpoint_override
        path.write_text(yaml.safe_dump({"clouds": clouds}, sort_keys=False))
        path.chmod(0o600)
        return path

    @staticmethod
    def _cloud(auth: dict) -> dict:
        return {
            "auth_type": "password",
            "auth": dict(auth),
            "region_name": REGION,
            "identity_api_version": 3,
            "interface": "public",
        }

    def stop(self) -> None:
        """Stop the processes this environment started (and only those).

        Ironic goes first: while the BMC emulator or Keystone it talks to are
        gone, its periodic tasks retry and delay its graceful shutdown (~2 s)
        until the SIGKILL deadline. The other two then stop together.
        """
        self.ironic_server.stop()
        servers = [self.keystone_server, self.sushy_server]
        if self.postgres_server is not None:
            servers.append(self.postgres_server)
        with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
            futures = [pool.submit(server.stop) for server in servers]
            for future in futures:
                future.result()


# --- Keystone provisioning ---------------------------------------------------


def _create_project(conn, name: str, description: str = "") -> str:
    return conn.identity.create_project(name=name, domain_id="default", description=description).id


def _create_user(
    conn, project_id: str, username: str, role: str, auth_url: str, project_name: str, password: str | None = None
) -> dict:
    """Create ``username`` with ``role`` on the project; return its auth dict.

    The password is random unless given.
    """
    password = password or secrets.token_urlsafe(16)
    user = conn.identity.create_user(
        name=username, password=password, domain_id="default", default_project_id=project_id
    )
    role_id = conn.identity.find_role(role, ignore_missing=False).id
    conn.identity.assign_project_role_to_user(project_id, user.id, role_id)
    return {
        "auth_url": auth_url,
        "username": username,
        "password": password,
        "user_domain_name": "Default",
        "project_name": project_name,
        "project_domain_name": "Default",
    }


def _create_project_with_users(conn, name: str, auth_url: str) -> Project:
    project_id = _create_project(conn, name)
    creds = {role: _create_user(conn, project_id, f"{name}-{role}", role, auth_url, name) for role in ROLES}
    return Project(name, project_id, creds)


def _register_baremetal(conn, url: str) -> None:
    service = conn.identity.create_service(name="ironic", type="baremetal")
    for interface in ("public", "internal"):
        conn.identity.create_endpoint(service_id=service.id, interface=interface, url=url, region_id=REGION)


# --- start / stop -------------------------------------------------------------


def _start_ironic_with_db(
    workdir: Path,
    keystone_url: str,
    service_user: ServiceUser,
    database: str,
    timeout: float,
    extra_config: str | None = None,
) -> tuple[Ironic, Postgres | None]:
    if database == "sqlite":
        return start_ironic(
            workdir / "ironic", keystone_url, service_user, None, timeout, extra_config=extra_config
        ), None
    if database != "postgresql":
        raise ValueError(f"database must be sqlite or postgresql, not {database!r}")
    pg = start_postgres(workdir / "postgres", timeout)
    try:
        url = pg.create_database("ironic")
        ironic = start_ironic(
            workdir / "ironic", keystone_url, service_user, None, timeout, database_url=url, extra_config=extra_config
        )
        return ironic, pg
    except BaseException:
        pg.stop()
        raise


def start_openstack(
    workdir: str | Path,
    tenants=DEFAULT_TENANTS,
    sushy_systems: list[dict] | None = None,
    timeout: float = 120,
    database: str = "sqlite",
    ironic_config: str | None = None,
    sushy_notification_url: str | None = None,
) -> OpenStackEnv:
    """Start Keystone, Ironic and sushy-tools under ``workdir``; provision tenants.

    ``database``: ``sqlite`` (default) or ``postgresql`` for Ironic.
    ``ironic_config``: extra Ironic options (an ini text read after the
    harness's own, see :func:`harness.ironic.start_ironic`), for example
    ``[api] max_limit`` to make Ironic's pages small.
    ``sushy_notification_url``: where the systems with ``external_notifier: True`` announce their
    power changes (FakeIPA, :mod:`harness.ironic_machines`).
    On failure everything already started is stopped again.
    """
    started_at = time.monotonic()
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    keystone_port = procs.free_port()
    keystone_url = f"http://127.0.0.1:{keystone_port}/v3"
    service_user = ServiceUser(IRONIC_SERVICE_USER, secrets.token_urlsafe(16))

    started, postgres = _start_servers(
        workdir,
        keystone_port,
        keystone_url,
        service_user,
        sushy_systems,
        timeout,
        database,
        ironic_config,
        sushy_notification_url,
    )
    keystone, ironic, sushy = (
        next(s for s in started if isinstance(s, cls)) for cls in (Keystone, Ironic, SushyEmulator)
    )

    try:
        admin_conn, infra, tenant_projects = _provision(keystone, ironic, keystone_url, service_user, tenants)
        env = OpenStackEnv(
            workdir,
            keystone,
            ironic,
            sushy,
            admin_conn,
            infra,
            tenant_projects,
            workdir / "clouds.yaml",
            time.monotonic() - started_at,
            postgres,
        )
        env.write_clouds_yaml(env.clouds_yaml)
        return env
    except BaseException:
        for server in started:
            server.stop()
        raise


def _start_servers(
    workdir: Path,
    keystone_port: int,
    keystone_url: str,
    service_user: ServiceUser,
    sushy_systems: list[dict] | None,
    timeout: float,
    database: str,
    ironic_config: str | None,
    sushy_notification_url: str | None,
) -> tuple[list, Postgres | None]:
    """Start Keystone, Ironic (with its PostgreSQL server, if any) and sushy-tools.

    Returns every server started (the PostgreSQL server before Ironic) and the PostgreSQL server
    (None on sqlite). If one fails to start the others are stopped and its error raised."""
    # Keystone and Ironic boot concurrently: Ironic only contacts Keystone
    # when it validates the first token.
    started: list = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
        futures = {
            "keystone": pool.submit(start_keystone, workdir / "keystone", keystone_port, timeout),
            "ironic": pool.submit(
                _start_ironic_with_db, workdir, keystone_url, service_user, database, timeout, ironic_config
            ),
            "sushy": pool.submit(
                start_sushy, workdir / "sushy", sushy_systems, timeout, notification_url=sushy_notification_url
            ),
        }
        errors = []
        postgres = None
        for name, future in futures.items():
            try:
                result = future.result()
            except Exception as exc:  # collect, stop the others, re-raise
                errors.append(exc)
                continue
            if name == "ironic":
                result, postgres = result
                if postgres is not None:
                    started.append(postgres)
            started.append(result)
    if errors:
        for server in started:
            server.stop()
        raise errors[0]
    return started, postgres


def _provision(keystone: Keystone, ironic: Ironic, keystone_url: str, service_user: ServiceUser, tenants):
    """Create Ironic's service user and endpoint, the infra project and the tenants' projects with their users.

    Returns a system-scoped admin connection that sees the baremetal endpoint, the infra project and the
    tenants' projects by name."""
    admin = connect(keystone.admin_auth("system"))
    # The service user keystonemiddleware logs in as.
    service_project = _create_project(admin, service_user.project_name)
    _create_user(
        admin,
        service_project,
        service_user.username,
        "admin",
        keystone_url,
        service_user.project_name,
        service_user.password,
    )
    _register_baremetal(admin, ironic.url)
    infra = _create_project_with_users(admin, INFRA_PROJECT, keystone_url)
    tenant_projects = {name: _create_project_with_users(admin, name, keystone_url) for name in tenants}
    # Log every user in once, one after the other: Keystone records the
    # day's last_active_at on a user's first login of the day, and on
    # sqlite ten tenants logging in at the same moment would otherwise
    # meet "database is locked" there.
    for project in [infra, *tenant_projects.values()]:
        for role in ROLES:
            project.conn(role).authorize()
    # A fresh connection sees the catalog with the baremetal endpoint.
    admin_conn = connect(keystone.admin_auth("system"))
    # Fails early if the catalog or Ironic is wrong, and is Ironic's first
    # policy check: Ironic builds its policy enforcer lazily and publishes
    # it before registering the rules (ironic.common.policy.init_enforcer),
    # so requests racing on a fresh Ironic can get a 500 naming a rule
    # ("baremetal:node:get"). One request alone first warms it.
    list(admin_conn.baremetal.nodes(limit=1))
    return admin_conn, infra, tenant_projects


# --- nodes --------------------------------------------------------------------


def wait_for_node(conn, node_id: str, timeout: float = 60, **expected):
    """Poll (every 0.2 s) until the node's fields equal ``expected``; return it.

    (openstacksdk's own ``wait=True`` polls every 2 s.) While waiting for a
    provision state, fails early once the node has settled (no target state)
    with a ``last_error`` or in a ``... failed`` state.
    """
    deadline = time.monotonic() + timeout
    while True:
        node = conn.baremetal.get_node(node_id)
        if all(getattr(node, key) == value for key, value in expected.items()):
            return node
        settled = not node.target_provision_state
        if (
            "provision_state" in expected
            and settled
            and (node.last_error or (node.provision_state or "").endswith("failed"))
        ):
            raise RuntimeError(f"node {node.name} stopped in {node.provision_state}: {node.last_error}")
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"node {node.name} not {expected} after {timeout}s: "
                f"power={node.power_state} state={node.provision_state} "
                f"error={node.last_error}"
            )
        time.sleep(0.2)


def _make_available(conn, node, traits) -> object:
    """Power off (fake nodes start with power_state None), manage, provide."""
    conn.baremetal.set_node_power_state(node, "power off")
    wait_for_node(conn, node.id, power_state="power off")
    conn.baremetal.set_node_provision_state(node, "manage")
    wait_for_node(conn, node.id, provision_state="manageable")
    if traits:
        conn.baremetal.set_node_traits(node, list(traits))
    conn.baremetal.set_node_provision_state(node, "provide")
    return wait_for_node(conn, node.id, provision_state="available")


def enroll_fake_node(
    conn,
    name: str,
    resource_class: str,
    owner: str,
    lessee: str | None = None,
    traits=(),
    properties: dict | None = None,
):
    """Enrol a ``fake-hardware`` node (as admin) and take it to ``available``."""
    node = conn.baremetal.create_node(
        name=name,
        driver="fake-hardware",
        resource_class=resource_class,
        owner=owner,
        lessee=lessee,
        properties=properties or dict(DEFAULT_PROPERTIES),
    )
    return _make_available(conn, node, traits)


def enroll_redfish_node(
    conn,
    bmc: Bmc,
    name: str,
    resource_class: str,
    owner: str,
    lessee: str | None = None,
    traits=(),
    properties: dict | None = None,
):
    """Enrol a ``redfish`` node for a sushy-tools BMC, with one port per NIC,
    and take it to ``available`` (verification talks to the emulator)."""
    node = conn.baremetal.create_node(
        name=name,
        driver="redfish",
        resource_class=resource_class,
        owner=owner,
        lessee=lessee,
        driver_info=bmc.driver_info,
        properties=properties or dict(DEFAULT_PROPERTIES),
    )
    for mac in bmc.macs:
        conn.baremetal.create_port(node_id=node.id, address=mac)
    return _make_available(conn, node, traits)


def start_noauth_ironic(env: OpenStackEnv, workdir: str | Path, timeout: float = 120) -> Ironic:
    """A second Ironic with ``auth_strategy = noauth`` over a snapshot of the
    first one's database (same nodes, same owners/lessees): the negative
    control showing that isolation comes from Keystone-authenticated policy."""
    if env.postgres_server is not None:
        # A snapshot of the PostgreSQL database, without the first conductor's registration.
        name = "ironic_noauth_%d" % int(time.time() * 1000)
        url = env.postgres_server.clone_database("ironic", name)
        env.postgres_server.execute(
            name, "DELETE FROM conductor_hardware_interfaces; UPDATE conductors SET online = false"
        )
        server = start_ironic(workdir, keystone_url=None, timeout=timeout, database_url=url, create_schema=False)
    else:
        server = start_ironic(workdir, keystone_url=None, db_from=env.ironic_server.db_path, timeout=timeout)
    procs.record_service(dataclasses.replace(server.service, name="ironic (noauth control)"))
    return server
