"""Metal3's real baremetal-operator (BMO), out of cluster, for the integration tests.

TEST FIXTURE ONLY: nothing here is part of the collection.

BMO is built by ``scripts/build-bmo.sh`` (``make bmo``) from the pinned source
snapshot in ``../shared/vendor/`` into ``$BMT_BMO_DIR`` (binary ``bmo`` with
the Ironic provisioner linked in, BMO's own CRDs under ``config/crds`` and its
webhook manifest under ``config/webhook``; the script says why the provisioner
is not a plugin there).

:func:`start_metal3` starts, on 127.0.0.1, what a Metal3 cluster runs beside
the apiserver of a :class:`harness.kube.KubeEnv`:

- **Ironic** (the harness's :func:`harness.ironic.start_ironic`) with
  ``auth_strategy = http_basic``, as Metal3's ironic-image runs it (BMO does
  not speak Keystone), and the options BMO needs that the Keystone harness
  does not set (measured 2026-11-23 with this BMO and Ironic 39):

  * boot ``redfish-virtual-media`` (BMO picks it for
    ``redfish-virtualmedia+http://`` BMC addresses), deploy ``ramdisk`` for
    live ISOs and ``direct``/``custom-agent`` (BMO sets them per image), inspect
    ``agent``/``no-inspect``;
  * ``[service_catalog] auth_type = none`` with ``endpoint_override`` (without
    it Ironic answers "Couldn't get the URL of the Ironic API service");
  * ``[agent] require_tls = false``, ``[api] ramdisk_heartbeat_timeout = 10``,
    ``[deploy] erase_devices_priority = 0`` (as Metal3's ironic-image);
  * ``[agent] post_deploy_get_power_state_retries = 1`` (and a 1 s interval):
    FakeIPA never carries out the soft power-off Ironic asks for after writing
    the image, and the default waited 30 s or more per deployment before the
    hard power-off;
- **sushy-tools** Redfish BMCs, one fake system per host (the harness's
  :func:`harness.sushy.start_sushy`);
- **BMO's CRDs** from its source (not a stand-in), except the ``HostClaim``
  CRD when the collection's own (the proposal's) dialect is tested;
- **BMO** itself: ``--namespace <infra>``, ``--health-addr 127.0.0.1:<port>``,
  ``--metrics-addr 0`` (off), ``--dev``; environment ``IRONIC_ENDPOINT``,
  ``METAL3_AUTH_ROOT_DIR`` (``ironic/username`` and ``ironic/password``: HTTP
  basic), ``DEPLOY_KERNEL_URL``/``DEPLOY_RAMDISK_URL``/``DEPLOY_ISO_URL``
  (small files served by Ironic's HTTP root; nothing boots them),
  ``PROVISIONER_PLUGIN_DIR`` (BMO's log names the plugin path it would
  have opened), ``POD_NAMESPACE`` and
  ``IRONIC_CACERT_FILE`` etc. pointing at paths that do not exist (plain HTTP);
- **BMO's validating webhooks**: BMO serves them on
  ``127.0.0.1:<port>`` (``BMO_WEBHOOK_HOST``, a patch of the build) with
  a certificate for 127.0.0.1 signed by the harness CA (read from
  ``$TMPDIR/k8s-webhook-server/serving-certs``, controller-runtime's default),
  and a ``ValidatingWebhookConfiguration`` built from BMO's own manifest points
  the apiserver at that URL with the CA bundle. So a write BMO rejects is
  rejected through the apiserver, as in a cluster.

Hosts are provisioned with a live ISO (``image.format: live-iso``: BMO uses
Ironic's ``ramdisk`` deploy, no agent) and inspection disabled
(``inspect.metal3.io: disabled``), the route measured at about 8 s from
creation to ``available`` and 18 s to ``provisioned``. :func:`host_manifest`
writes such a host. Hosts that are test-bed machines (``machine_bus``) go the
``direct`` route instead (``host_manifest(agent=True)``): :func:`disk_image`
serves a raw image with its sha256, FakeIPA writes it and hands the config
drive to the machine (:mod:`harness.fake_ipa_hooks`).
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import os
import secrets
import shutil
import threading
import time
from pathlib import Path

import yaml

from . import procs
from .fake_ipa import FakeIpa, start_fake_ipa
from .ironic import Ironic, start_ironic
from .kube import INFRA_NAMESPACE, KubeEnv
from .sushy import Bmc, SushyEmulator, default_systems, start_sushy

BMO_COMMIT = "02aa5059e"
STARTUP_TIMEOUT = 60
# Hosts the operator reconciles at once (BMO_CONCURRENCY; its default is the number of CPUs, between 2 and 8).
CONCURRENCY = 4
# BMO's HostClaim dialect CRDs: left out when the proposal's HostClaim is tested.
BMO_CLAIM_CRDS = ("metal3.io_hostclaims.yaml", "metal3.io_hostdeploypolicies.yaml")
# The webhooks of resources whose CRD is not installed are not registered
# (failurePolicy Fail would refuse writes to a same-named CRD of another shape).
WEBHOOK_CONFIG_NAME = "baremetal-operator-validating-webhook"
IRONIC_USER = "metal3"


class BmoMissing(RuntimeError):
    """The baremetal-operator has not been built (run ``make bmo``)."""


def bmo_dir() -> Path:
    """Where ``make bmo`` put the binary and BMO's manifests."""
    explicit = os.environ.get("BMT_BMO_DIR")
    if explicit:
        return Path(explicit)
    cache = Path(os.environ.get("BMT_CACHE_DIR") or Path.home() / ".cache" / "baremetal-tenancy")
    return cache / f"bmo-{BMO_COMMIT}"


def require_bmo(directory: Path | None = None) -> Path:
    directory = directory or bmo_dir()
    missing = [p for p in ("bmo", "config/crds") if not (directory / p).exists()]
    if missing:
        raise BmoMissing(f"baremetal-operator not built in {directory} (missing {', '.join(missing)}): run `make bmo`")
    return directory


# --------------------------------------------------------------------------
# Ironic, the way Metal3 runs it
# --------------------------------------------------------------------------


def _ironic_overrides(htpasswd: Path) -> str:
    """An extra ``--config-file`` for :func:`start_ironic` (``@IRONIC_URL@`` is filled in)."""
    return "\n".join(
        [
            "[DEFAULT]",
            "auth_strategy = http_basic",
            f"http_basic_auth_user_file = {htpasswd}",
            "enabled_boot_interfaces = redfish-virtual-media,fake",
            "enabled_deploy_interfaces = direct,ramdisk,custom-agent,fake",
            "default_deploy_interface = direct",
            "enabled_inspect_interfaces = redfish,agent,no-inspect,fake",
            "",
            "[service_catalog]",
            "auth_type = none",
            "endpoint_override = @IRONIC_URL@",
            "",
            "[inspector]",
            "callback_endpoint_override = @IRONIC_URL@/v1/continue_inspection",
            "",
            "[agent]",
            "require_tls = false",
            # After the image is written Ironic asks the agent to power off and polls the power state (6 x 5 s by
            # default) before it forces the power off: FakeIPA runs a command only when Ironic polls the agent's
            # commands, which it does not do then, so every deployment waited the whole time.
            "post_deploy_get_power_state_retries = 1",
            "post_deploy_get_power_state_retry_interval = 1",
            "",
            "[api]",
            "ramdisk_heartbeat_timeout = 10",
            "",
            "[deploy]",
            "erase_devices_priority = 0",
            "",
            "[conductor]",
            # BMO learns power states from Ironic's own power actions; a periodic sync only locks the
            # nodes (NodeLocked for BMO's calls) and costs each node up to four Redfish requests of
            # 0.4-0.8 s of CPU each (harness.ironic.FAST_CONDUCTOR says why): off.
            "sync_power_state_interval = 0",
            "",
        ]
    )


def start_metal3_ironic(workdir: Path, database_url: str | None = None) -> tuple[Ironic, str]:
    """Ironic with HTTP basic auth for BMO; returns it and the user's password."""
    import bcrypt  # a dependency of sushy-tools, in the test venv

    workdir.mkdir(parents=True, exist_ok=True)
    password = secrets.token_urlsafe(16)
    htpasswd = workdir / "ironic-htpasswd"
    htpasswd.write_text(f"{IRONIC_USER}:{bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()}\n")
    ironic = start_ironic(
        workdir / "ironic", database_url=database_url, extra_config=_ironic_overrides(htpasswd), auth_label="http_basic"
    )
    return ironic, password


# --------------------------------------------------------------------------
# CRDs and webhooks
# --------------------------------------------------------------------------


def bmo_crds(directory: Path, claim_dialect: str = "proposal") -> list[dict]:
    """BMO's CRDs; with ``claim_dialect="proposal"`` without BMO's HostClaim/HostDeployPolicy."""
    skip = BMO_CLAIM_CRDS if claim_dialect == "proposal" else ()
    docs = []
    for path in sorted((directory / "config" / "crds").glob("*.yaml")):
        if path.name in skip:
            continue
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    return docs


def install_crds(api, crds: list[dict], timeout: float = 60) -> None:
    """Create (or replace) each CRD and wait until the apiserver serves it."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    ext = client.ApiextensionsV1Api(api)
    for crd in crds:
        name = crd["metadata"]["name"]
        try:
            ext.create_custom_resource_definition(crd)
        except ApiException as exc:
            if exc.status != 409:
                raise
            current = ext.read_custom_resource_definition(name)
            body = copy.deepcopy(crd)
            body["metadata"]["resourceVersion"] = current.metadata.resource_version
            ext.replace_custom_resource_definition(name, body)
    deadline = time.monotonic() + timeout
    for crd in crds:
        name = crd["metadata"]["name"]
        while True:
            conditions = ext.read_custom_resource_definition(name).status.conditions or []
            if any(c.type == "Established" and c.status == "True" for c in conditions):
                break
            if time.monotonic() > deadline:
                raise procs.ServiceStartError(f"CRD {name} not established after {timeout:.0f}s")
            time.sleep(0.2)


def webhook_configuration(directory: Path, url: str, ca_pem: bytes, resources: set[str]) -> dict:
    """BMO's own ValidatingWebhookConfiguration, pointed at ``url`` instead of a Service.

    Only the webhooks of ``resources`` (plural names of installed CRDs) are kept.
    """
    manifest = next(
        d
        for d in yaml.safe_load_all((directory / "config" / "webhook" / "manifests.yaml").read_text())
        if d and d.get("kind") == "ValidatingWebhookConfiguration"
    )
    config = copy.deepcopy(manifest)
    config["metadata"] = {"name": WEBHOOK_CONFIG_NAME}
    kept = []
    for hook in config["webhooks"]:
        if not set(r for rule in hook["rules"] for r in rule["resources"]) <= resources:
            continue
        path = hook["clientConfig"]["service"]["path"]
        hook["clientConfig"] = {"url": url.rstrip("/") + path, "caBundle": base64.b64encode(ca_pem).decode()}
        hook["timeoutSeconds"] = 10
        kept.append(hook)
    config["webhooks"] = kept
    return config


def register_webhooks(api, config: dict) -> None:
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    adm = client.AdmissionregistrationV1Api(api)
    try:
        adm.create_validating_webhook_configuration(config)
    except ApiException as exc:
        if exc.status != 409:
            raise
        current = adm.read_validating_webhook_configuration(config["metadata"]["name"])
        body = copy.deepcopy(config)
        body["metadata"]["resourceVersion"] = current.metadata.resource_version
        adm.replace_validating_webhook_configuration(config["metadata"]["name"], body)


# --------------------------------------------------------------------------
# The operator
# --------------------------------------------------------------------------


@dataclasses.dataclass
class Metal3:
    """Ironic + BMCs + BMO (+ webhooks) beside a KubeEnv's apiserver."""

    kube: KubeEnv
    ironic: Ironic
    ironic_password: str
    sushy: SushyEmulator
    proc: procs.Proc
    service: procs.Service
    namespace: str
    webhook_url: str | None
    workdir: Path
    live_iso_url: str
    fake_ipa: FakeIpa
    systems: list[dict]  # the sushy-tools systems, in the order of ``bmcs``
    timings: dict[str, float]
    postgres: object | None = None  # Ironic's PostgreSQL server, when start_metal3 started one

    @property
    def services(self) -> list[procs.Service]:
        return [self.ironic.service, self.sushy.service, self.fake_ipa.service, self.service]

    @property
    def bmcs(self) -> list[Bmc]:
        return self.sushy.bmcs

    def log_tail(self, lines: int = 60) -> str:
        return self.proc.log_tail(lines)

    def ironic_log_tail(self, lines: int = 40) -> str:
        return self.ironic.proc.log_tail(lines)

    def logs(self, lines: int = 40) -> str:
        """BMO's and Ironic's log tails, for a failure message."""
        return (
            f"--- baremetal-operator log ---\n{self.log_tail(lines)}\n--- ironic log ---\n{self.ironic_log_tail(lines)}"
        )

    def ironic_log_count(self, *texts: str) -> int:
        """How many lines of Ironic's log contain every one of ``texts``."""
        lines = self.ironic.proc.log_path.read_text(errors="replace").splitlines()
        return sum(all(text in line for text in texts) for line in lines)

    def stop(self) -> None:
        if self.webhook_url:
            try:
                from kubernetes import client

                with self.kube.api("admin") as api:
                    client.AdmissionregistrationV1Api(api).delete_validating_webhook_configuration(WEBHOOK_CONFIG_NAME)
            except Exception:
                pass
        self.proc.stop(timeout=20)
        self.ironic.stop()
        self.fake_ipa.stop()
        self.sushy.stop()
        if self.postgres is not None:
            self.postgres.stop()


def _write_webhook_certs(kube: KubeEnv, tmpdir: Path) -> None:
    """controller-runtime's default CertDir: ``$TMPDIR/k8s-webhook-server/serving-certs``."""
    cert_dir = tmpdir / "k8s-webhook-server" / "serving-certs"
    cert_dir.mkdir(parents=True, exist_ok=True)
    # The apiserver's serving certificate is for 127.0.0.1 and signed by the harness CA.
    shutil.copyfile(kube.pki.serving_cert, cert_dir / "tls.crt")
    shutil.copyfile(kube.pki.serving_key, cert_dir / "tls.key")
    (cert_dir / "tls.key").chmod(0o600)


def start_metal3(
    kube: KubeEnv,
    workdir: str | Path,
    *,
    systems: list[dict] | None = None,
    namespace: str = INFRA_NAMESPACE,
    claim_dialect: str = "proposal",
    webhooks: bool = True,
    hostclaims_controller: bool = False,
    database_url: str | None = None,
    directory: Path | None = None,
    accounts: list[dict] | None = None,
    notify: int | None = None,
    postgresql: bool = False,
    machine_bus: Path | None = None,
) -> Metal3:
    """Start Ironic, sushy-tools and BMO for ``kube``'s apiserver; install BMO's CRDs.

    ``claim_dialect``: ``"proposal"`` leaves BMO's HostClaim and HostDeployPolicy
    CRDs out (the collection installs its own HostClaim); ``"bmo"`` installs them.
    ``hostclaims_controller``: run BMO with ``--hostclaims`` (its own HostClaim
    controller, off by default upstream).
    ``namespace``: BMO's ``--namespace`` (``WATCH_NAMESPACE``): one namespace, a
    comma-separated list, or ``""`` for every namespace. ``POD_NAMESPACE`` (the
    provisioner's and leader election's namespace) is its first entry, or
    :data:`INFRA_NAMESPACE`.
    ``accounts``: extra BMC accounts (``username``/``password``/``role``) in the
    emulator's AccountService, for hosts with BMC credentials of their own.
    ``notify``: only the first ``notify`` systems announce power changes to
    FakeIPA (agent route); ``None``: all of them.
    ``postgresql``: Ironic on a private PostgreSQL server (several hosts move at
    once: sqlite answers "database is locked"), stopped with the stack.
    ``machine_bus``: a :class:`harness.machines.TestBed`'s bus directory: FakeIPA's
    deploy and clean steps then act on the test-bed machines of the systems.
    """
    directory = require_bmo(directory)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    t0 = time.monotonic()

    crds = bmo_crds(directory, claim_dialect)
    with kube.api("admin") as api:
        install_crds(api, crds)
    timings["bmo crds"] = time.monotonic() - t0

    t1 = time.monotonic()
    systems, ipa_port, sushy = _start_bmcs(workdir, systems, notify, accounts)
    started = _Started(sushy)
    pod_namespace = next((n for n in namespace.split(",") if n), INFRA_NAMESPACE)
    try:
        _start_ironic_and_agent(started, workdir, ipa_port, database_url, postgresql, machine_bus, timings, t1)
        ironic = started.ironic
        _write_deploy_images(ironic)
        bmo = _BmoOptions(directory, namespace, pod_namespace, webhooks, hostclaims_controller)
        proc, health_port, webhook_url = _start_bmo(kube, workdir, bmo, ironic, started.ironic_password, crds, timings)
    except BaseException:
        started.stop()
        raise
    service = procs.Service(
        "baremetal-operator", BMO_COMMIT, f"http://{procs.LOOPBACK}:{health_port}", health_port, proc.pid
    )
    return Metal3(
        kube,
        ironic,
        started.ironic_password,
        sushy,
        proc,
        service,
        namespace,
        webhook_url,
        workdir,
        f"{ironic.http_url}/live.iso",
        started.fake_ipa,
        systems,
        timings,
        started.postgres,
    )


def _start_bmcs(
    workdir: Path, systems: list[dict] | None, notify: int | None, accounts: list[dict] | None
) -> tuple[list[dict], int, SushyEmulator]:
    """sushy-tools with ``systems`` (default: :func:`default_systems`) and ``accounts``; returns the systems as
    configured, FakeIPA's port (where they announce their power changes) and the emulator."""
    # Every system announces its power changes to FakeIPA, the agent of the hosts
    # that boot the deploy ramdisk (inspection, cleaning and the direct deploy:
    # harness.fake_ipa_hooks; test_machines_agent).
    systems = [
        dict(s, external_notifier=notify is None or i < notify) for i, s in enumerate(systems or default_systems())
    ]
    ipa_port = procs.free_port()
    sushy = start_sushy(
        workdir / "sushy", systems, notification_url=f"http://{procs.LOOPBACK}:{ipa_port}", accounts=accounts
    )
    return systems, ipa_port, sushy


@dataclasses.dataclass
class _Started:
    """The servers :func:`start_metal3` started so far: stopped again if a later one fails."""

    sushy: SushyEmulator
    ironic: Ironic | None = None
    ironic_password: str | None = None
    fake_ipa: FakeIpa | None = None
    postgres: object | None = None

    def stop(self) -> None:
        self.sushy.stop()
        for started in (self.ironic, self.fake_ipa, self.postgres):
            if started is not None:
                started.stop()


def _start_ironic_and_agent(
    started: _Started,
    workdir: Path,
    ipa_port: int,
    database_url: str | None,
    postgresql: bool,
    machine_bus: Path | None,
    timings: dict[str, float],
    t1: float,
) -> None:
    """Ironic (on a PostgreSQL server of its own with ``postgresql``) and FakeIPA, recorded in ``started``."""
    sushy = started.sushy
    if postgresql and database_url is None:
        from .postgres import start_postgres

        started.postgres = start_postgres(workdir / "postgres")
        database_url = started.postgres.create_database("ironic_metal3")
        timings["postgresql"] = time.monotonic() - t1
    started.ironic, started.ironic_password = start_metal3_ironic(workdir, database_url)
    timings["ironic"] = time.monotonic() - t1
    started.fake_ipa = start_fake_ipa(
        workdir / "fake-ipa",
        ipa_port,
        started.ironic.url,
        sushy.base_url,
        sushy.username,
        sushy.password,
        machine_bus=machine_bus,
    )


def _write_deploy_images(ironic: Ironic) -> None:
    """Deploy kernel/ramdisk/ISO: BMO requires the URLs; nothing boots them
    (FakeIPA plays the agent they would start)."""
    for name in ("ipa.kernel", "ipa.initramfs", "ipa.iso", "live.iso"):
        (ironic.http_root / name).write_bytes(b"\0" * 4096)


@dataclasses.dataclass
class _BmoOptions:
    """How :func:`start_metal3` runs BMO (see its docstring)."""

    directory: Path  # the BMO checkout (its ``bmo`` binary, CRDs and webhook manifests)
    namespace: str
    pod_namespace: str
    webhooks: bool
    hostclaims_controller: bool


def _start_bmo(
    kube: KubeEnv,
    workdir: Path,
    bmo: _BmoOptions,
    ironic: Ironic,
    ironic_password: str,
    crds: list[dict],
    timings: dict[str, float],
) -> tuple[procs.Proc, int, str | None]:
    """Run BMO against ``ironic``, wait until it is ready (and its webhooks registered).

    Returns the process, its health port and the webhook URL (None without webhooks); stops BMO if it fails."""
    auth_root = workdir / "metal3-auth"
    (auth_root / "ironic").mkdir(parents=True, exist_ok=True)
    (auth_root / "ironic" / "username").write_text(IRONIC_USER)
    (auth_root / "ironic" / "password").write_text(ironic_password)
    tmpdir = workdir / "bmo-tmp"
    tmpdir.mkdir(exist_ok=True)
    webhook_port = procs.free_port() if bmo.webhooks else 0
    if bmo.webhooks:
        _write_webhook_certs(kube, tmpdir)
    health_port = procs.free_port()
    env = _bmo_env(kube, workdir, bmo, ironic, auth_root, tmpdir)
    argv = [
        str(bmo.directory / "bmo"),
        "--namespace",
        bmo.namespace,
        "--webhook-port",
        str(webhook_port),
        "--health-addr",
        f"{procs.LOOPBACK}:{health_port}",
        "--metrics-addr",
        "0",
        "--dev",
    ]
    if bmo.hostclaims_controller:
        argv.append("--hostclaims")
    t2 = time.monotonic()
    proc = procs.start_process("baremetal-operator", argv, workdir, env=env)
    try:
        procs.wait_http(f"http://{procs.LOOPBACK}:{health_port}/readyz", STARTUP_TIMEOUT, proc)
        webhook_url = None
        if bmo.webhooks:
            procs.wait_tcp(procs.LOOPBACK, webhook_port, STARTUP_TIMEOUT, proc)
            webhook_url = f"https://{procs.LOOPBACK}:{webhook_port}"
            resources = {c["spec"]["names"]["plural"] for c in crds}
            config = webhook_configuration(bmo.directory, webhook_url, kube.pki.ca_cert.read_bytes(), resources)
            with kube.api("admin") as api:
                register_webhooks(api, config)
    except BaseException:
        proc.stop()
        raise
    timings["baremetal-operator"] = time.monotonic() - t2
    return proc, health_port, webhook_url


def _bmo_env(
    kube: KubeEnv, workdir: Path, bmo: _BmoOptions, ironic: Ironic, auth_root: Path, tmpdir: Path
) -> dict[str, str]:
    """BMO's environment: Ironic's endpoint and credentials, the deploy image URLs, no TLS files."""
    http = ironic.http_url
    missing = str(workdir / "no-such-file")
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(workdir),
        "TMPDIR": str(tmpdir),
        "KUBECONFIG": str(kube.kubeconfig("admin")),
        "IRONIC_ENDPOINT": f"{ironic.url}/v1/",
        "METAL3_AUTH_ROOT_DIR": str(auth_root),
        "DEPLOY_KERNEL_URL": f"{http}/ipa.kernel",
        "DEPLOY_RAMDISK_URL": f"{http}/ipa.initramfs",
        "DEPLOY_ISO_URL": f"{http}/ipa.iso",
        "PROVISIONER_PLUGIN_DIR": str(bmo.directory),
        "POD_NAMESPACE": bmo.pod_namespace,
        "IRONIC_CACERT_FILE": missing,
        "IRONIC_CLIENT_CERT_FILE": missing,
        "IRONIC_CLIENT_PRIVATE_KEY_FILE": missing,
        "BMO_WEBHOOK_HOST": procs.LOOPBACK,
        "BMO_CONCURRENCY": str(CONCURRENCY),
    }


# --------------------------------------------------------------------------
# Hosts
# --------------------------------------------------------------------------


def bmc_secret(
    name: str, bmc: Bmc, namespace: str = INFRA_NAMESPACE, username: str | None = None, password: str | None = None
) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": "Opaque",
        "stringData": {
            "username": username if username is not None else bmc.username,
            "password": password if password is not None else bmc.password,
        },
    }


def host_manifest(
    name: str,
    bmc: Bmc,
    credentials: str,
    namespace: str = INFRA_NAMESPACE,
    labels: dict | None = None,
    agent: bool = False,
) -> dict:
    """A BareMetalHost for a sushy-tools system, booted over Redfish virtual media.

    ``agent=False``: inspection disabled, no cleaning (the live-ISO route, no agent).
    ``agent=True``: agent inspection and metadata cleaning through FakeIPA.
    """
    annotations = {} if agent else {"inspect.metal3.io": "disabled"}
    return {
        "apiVersion": "metal3.io/v1alpha1",
        "kind": "BareMetalHost",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {}), "annotations": annotations},
        "spec": {
            "online": False,
            "bootMACAddress": bmc.macs[0],
            "bootMode": "UEFI",
            "automatedCleaningMode": "metadata" if agent else "disabled",
            "bmc": {
                "address": "redfish-virtualmedia+" + bmc.base_url + bmc.system_id,
                "credentialsName": credentials,
                "disableCertificateVerification": True,
            },
        },
    }


def disk_image(stack: Metal3, name: str = "disk.img", size: int = 1 << 20) -> dict:
    """``spec.image`` of a raw whole-disk image served by Ironic's HTTP root, with its sha256: BMO
    uses Ironic's ``direct`` deploy, the agent (FakeIPA) writes it and gets the config drive."""
    import hashlib

    path = stack.ironic.http_root / name
    if not path.exists():
        data = b"test-bed disk image\n".ljust(size, b"\0")
        # a name of this thread's own: tenants claiming in threads at once each write one
        tmp = path.with_name(f".{name}.{os.getpid()}.{threading.get_ident()}")
        tmp.write_bytes(data)
        tmp.replace(path)
    checksum = hashlib.sha256(path.read_bytes()).hexdigest()
    return {"url": f"{stack.ironic.http_url}/{name}", "checksum": checksum, "checksumType": "sha256", "format": "raw"}


def live_iso_image(url: str) -> dict:
    """``spec.image`` of a live ISO: BMO uses Ironic's ramdisk deploy (no agent, no checksum)."""
    return {"url": url, "format": "live-iso"}


def hardware_details(index: int, hostname: str | None = None, nics: list[dict] | None = None) -> dict:
    """What inspection would have found, for the ``inspect.metal3.io/hardwaredetails``
    annotation (BMO takes it into ``status.hardware`` when inspection is disabled):
    two NICs (the first one the boot NIC, with an address) and a host name."""
    details: dict = {
        "nics": nics
        if nics is not None
        else [
            {"name": "eno1", "mac": boot_mac(index), "ip": "192.0.2.%d" % (index % 250 + 1)},
            {"name": "eno2", "mac": "52:54:00:20:%02x:%02x" % (index // 256, index % 256)},
        ]
    }
    if hostname:
        details["hostname"] = hostname
    return details


def boot_mac(index: int) -> str:
    return "52:54:00:10:%02x:%02x" % (index // 256, index % 256)


def host_state(host: dict | None) -> str | None:
    return (((host or {}).get("status") or {}).get("provisioning") or {}).get("state")


# --------------------------------------------------------------------------
# A pool of BMCs for tests that create hosts on demand
# --------------------------------------------------------------------------


@dataclasses.dataclass
class PoolSlot:
    """One sushy-tools system with a BMC account of its own."""

    bmc: Bmc
    username: str
    password: str

    @property
    def address(self) -> str:
        """The BMH ``spec.bmc.address``: Redfish virtual media over plain HTTP."""
        return "redfish-virtualmedia+" + self.bmc.base_url + self.bmc.system_id


def pool_accounts(count: int, prefix: str = "bmc") -> list[dict]:
    """``count`` Administrator accounts (short names: the emulator allows 16 characters)."""
    return [
        {
            "username": f"{prefix}{i:02d}{secrets.token_hex(3)}",
            "password": secrets.token_urlsafe(12),
            "role": "Administrator",
        }
        for i in range(count)
    ]


class BmcPool:
    """Hands out the stack's sushy-tools systems to hosts by name, and takes them back.

    A system is bound to a host name from the first :meth:`slot` call until
    :meth:`release` (after BMO deleted the host and its Ironic node).
    """

    def __init__(self, stack: Metal3, first: int, accounts: list[dict]):
        import threading

        self.stack = stack
        bmcs = stack.bmcs[first:]
        self._free = [PoolSlot(b, a["username"], a["password"]) for b, a in zip(bmcs, accounts)]
        self._used: dict[str, PoolSlot] = {}
        self._lock = threading.Lock()
        self._emulators: dict[str, SushyEmulator] = {}

    def dedicated(self, name: str, username: str, password: str) -> PoolSlot:
        """A BMC of its own for host ``name`` (an emulator with one system and one account), for
        credentials the shared emulator cannot hold: a user name another host uses with another
        password, or a password shorter than its AccountService allows (a real BMC's rules differ)."""
        with self._lock:
            slot = self._used.get(name)
            if slot is not None and (slot.username, slot.password) == (username, password):
                return slot
            assert slot is None, f"host {name} already has a BMC: reserve its credentials first"
            system = default_systems(1)[0]
            system["name"] = f"own-{name}"
            system["nics"] = [{"mac": "52:54:02:00:00:%02x" % (len(self._emulators) % 256), "ip": "192.0.2.250"}]
            emulator = start_sushy(
                self.stack.workdir / f"sushy-{name}",
                [system],
                accounts=[{"username": username, "password": password, "role": "Administrator"}],
            )
            self._emulators[name] = emulator
            slot = self._used[name] = PoolSlot(emulator.bmcs[0], username, password)
            return slot

    def emulator_of(self, name: str) -> SushyEmulator:
        return self._emulators.get(name) or self.stack.sushy

    def stop(self) -> None:
        for emulator in self._emulators.values():
            emulator.stop()

    def slot(self, name: str) -> PoolSlot:
        with self._lock:
            if name not in self._used:
                if not self._free:
                    raise AssertionError(f"no sushy-tools system left for host {name}: enlarge the pool")
                self._used[name] = self._free.pop(0)
            return self._used[name]

    def known(self, name: str) -> bool:
        return name in self._used

    def release(self, name: str) -> None:
        with self._lock:
            slot = self._used.pop(name, None)
            emulator = self._emulators.pop(name, None)
            if emulator is not None:
                emulator.stop()
            elif slot is not None:
                self._free.append(slot)


# --------------------------------------------------------------------------
# Waiting for the operator
# --------------------------------------------------------------------------


def wait_hosts(
    api,
    stack: Metal3,
    namespace: str,
    names,
    predicate,
    what: str,
    timeout: float = 120,
    interval: float = 0.5,
) -> dict[str, dict]:
    """Poll the hosts until ``predicate(host)`` holds for each; fail with BMO's and Ironic's logs."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    custom = client.CustomObjectsApi(api)
    pending = list(names)
    done: dict[str, dict] = {}
    last: dict[str, dict | None] = {}
    deadline = time.monotonic() + timeout
    while pending:
        for name in list(pending):
            try:
                host = custom.get_namespaced_custom_object("metal3.io", "v1alpha1", namespace, "baremetalhosts", name)
            except ApiException as exc:
                if exc.status != 404:
                    raise
                host = None
            last[name] = host
            if predicate(host):
                done[name] = host
                pending.remove(name)
        if not pending:
            break
        if time.monotonic() > deadline:
            lines = []
            for name in pending:
                host = last.get(name) or {}
                status = host.get("status") or {}
                lines.append(
                    f"{namespace}/{name}: state {host_state(host)!r}, poweredOn {status.get('poweredOn')!r}, "
                    f"error {status.get('errorType')!r}: {status.get('errorMessage')!r}, "
                    f"annotations {sorted((host.get('metadata') or {}).get('annotations') or {})}"
                )
            raise AssertionError(f"not {what} after {timeout:.0f}s:\n" + "\n".join(lines) + "\n" + stack.logs())
        time.sleep(interval)
    return done
