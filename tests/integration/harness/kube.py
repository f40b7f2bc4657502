"""A real Kubernetes control plane for the integration tests.

etcd + kube-apiserver + kube-controller-manager, built from their Go modules
by ``scripts/build-kube-binaries.sh`` (``make kube``) and started here on
127.0.0.1, each on a free port, with every file (data, certificates, tokens,
kubeconfigs, logs) under one temporary directory.

The apiserver authorizes with RBAC and authenticates static bearer tokens, one
per identity in :data:`IDENTITIES` (cluster admin, binder, tenants). Tests get
a kubeconfig file per identity, which is how a user points Ansible at a
cluster (``K8S_AUTH_KUBECONFIG``).

Nothing here fakes or emulates the Kubernetes API.

Main entry points:

- :func:`kube_bin_dir` / :func:`require_binaries`: where the binaries are.
- :class:`KubeEnv`: start/stop the control plane, kubeconfigs, API clients.
- :func:`setup_namespaces`, :func:`grant_first_slice_tenant_rbac`: the test
  tenancy layout (infrastructure namespace ``metal3``, tenant namespaces).
- :func:`install_minimal_bmh_crd`, :func:`seed_minimal_bmh`: a stand-in
  BareMetalHost CRD and one host with its BMC Secret.

``python -m harness.kube`` (from ``tests/integration``) starts the control
plane once, prints the services and start timings, and stops it.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import functools
import ipaddress
import os
import secrets
import shutil
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import yaml

from .procs import (
    LOOPBACK,
    Proc,
    Service,
    ServiceStartError,
    StartDeadline,
    free_port,
    start_process,
    wait_http,
)

KUBE_VERSION_DEFAULT = "v1.36.3"
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager")

# Readiness timeouts: generous, the test machines have 2 cores.
ETCD_TIMEOUT = 60
APISERVER_TIMEOUT = 120
CONTROLLER_MANAGER_TIMEOUT = 120
#: kube-controller-manager's controllers (without their "-controller" suffix) the test bed turns off: nodes, volumes,
#: Services, and workloads no test creates (Deployments and ReplicaSets keep theirs: charts and Flux write them)
IDLE_CONTROLLERS = (
    "cloud-node-lifecycle",
    "cronjob",
    "daemonset",
    "device-taint-eviction",
    "disruption",
    "endpoints",
    "endpointslice",
    "endpointslice-mirroring",
    "ephemeral-volume",
    "horizontal-pod-autoscaler",
    "job",
    "node-ipam",
    "node-lifecycle",
    "node-route",
    "persistentvolume-attach-detach",
    "persistentvolume-binder",
    "persistentvolume-expander",
    "persistentvolume-protection",
    "persistentvolumeclaim-protection",
    "pod-garbage-collector",
    "podcertificaterequest-cleaner",
    "podgroup-protection",
    "replicationcontroller",
    "resourceclaim",
    "resourcepoolstatusrequest",
    "service-cidr",
    "service-lb",
    "statefulset",
    "storage-version-migrator",
    "taint-eviction",
    "ttl-after-finished",
    "ttl",
    "volumeattributesclass-protection",
)

# Test tenancy layout.
INFRA_NAMESPACE = "metal3"
TENANT_NAMESPACES = ("tenant-a", "tenant-b")


@dataclasses.dataclass(frozen=True)
class Identity:
    """A static-token user of the test apiserver."""

    key: str  # what tests call it: kube_env.kubeconfig("tenant-a")
    user: str  # Kubernetes user name
    groups: tuple[str, ...] = ()


# Every identity gets a token and a kubeconfig. "controller-manager" is the
# kube-controller-manager's own identity; with
# --use-service-account-credentials=false it needs every controller's rights,
# hence system:masters.
IDENTITIES: dict[str, Identity] = {
    i.key: i
    for i in (
        Identity("admin", "admin", ("system:masters",)),
        Identity("binder", "baremetal-binder", ("baremetal:binders",)),
        Identity("tenant-a", "tenant-a-user", ("baremetal:tenants",)),
        Identity("tenant-b", "tenant-b-user", ("baremetal:tenants",)),
        # A tenant user with no namespace of its own (not onboarded).
        Identity("tenant-c", "tenant-c-user", ("baremetal:tenants",)),
        Identity("controller-manager", "system:kube-controller-manager", ("system:masters",)),
    )
}


class KubeBinariesMissing(RuntimeError):
    """The Kubernetes binaries have not been built (run ``make kube``)."""


# --------------------------------------------------------------------------
# Binaries
# --------------------------------------------------------------------------


def kube_version() -> str:
    return os.environ.get("KUBE_VERSION") or KUBE_VERSION_DEFAULT


def kube_bin_dir() -> Path:
    """The directory holding etcd, kube-apiserver and kube-controller-manager.

    ``BMT_KUBE_BIN`` wins; otherwise the cache directory that
    ``scripts/build-kube-binaries.sh`` writes:
    ``${BMT_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/baremetal-tenancy}/kube-$KUBE_VERSION/bin``.
    """
    if os.environ.get("BMT_KUBE_BIN"):
        return Path(os.environ["BMT_KUBE_BIN"]).expanduser()
    cache = os.environ.get("BMT_CACHE_DIR")
    if not cache:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
        cache = os.path.join(xdg, "baremetal-tenancy")
    return Path(cache).expanduser() / f"kube-{kube_version()}" / "bin"


def require_binaries(bin_dir: Path | None = None) -> Path:
    """Return the binary directory, or raise :class:`KubeBinariesMissing`."""
    bin_dir = bin_dir or kube_bin_dir()
    missing = [b for b in BINARIES if not os.access(bin_dir / b, os.X_OK)]
    if missing:
        raise KubeBinariesMissing(
            f"Kubernetes binaries missing in {bin_dir}: {', '.join(missing)}. "
            f"Run `make kube` (scripts/build-kube-binaries.sh builds {kube_version()} "
            "from the Go module proxy, once) or point BMT_KUBE_BIN at a directory "
            "holding etcd, kube-apiserver and kube-controller-manager."
        )
    return bin_dir


@functools.cache
def binary_version(path: Path) -> str:
    """The version a binary reports: ``v1.36.3`` or ``3.6.8`` style."""
    out = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=30, check=False).stdout
    first = out.strip().splitlines()[0] if out.strip() else "unknown"
    # "Kubernetes v1.36.3" / "etcd Version: 3.6.8"
    return first.split()[-1]


# --------------------------------------------------------------------------
# Certificates, keys, tokens, kubeconfigs
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Pki:
    """Paths of the generated certificates and keys."""

    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    sa_key: Path  # service-account signing key (private)
    sa_pub: Path  # its public key, for verification


def make_pki(directory: Path) -> Pki:
    """Generate a CA, a serving certificate for 127.0.0.1/localhost signed by
    it, and an RSA service-account signing key pair, as PEM files."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    not_before = now - datetime.timedelta(hours=1)
    not_after = now + datetime.timedelta(days=7)

    ca_key, ca_name, ca_cert = _make_ca(not_before, not_after)
    serving_key, serving_cert = _make_serving_cert(ca_key, ca_name, not_before, not_after)

    # Service-account token signing key pair.
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    pki = Pki(
        ca_cert=directory / "ca.crt",
        ca_key=directory / "ca.key",
        serving_cert=directory / "apiserver.crt",
        serving_key=directory / "apiserver.key",
        sa_key=directory / "sa.key",
        sa_pub=directory / "sa.pub",
    )
    _write_cert(pki.ca_cert, ca_cert)
    _write_key(pki.ca_key, ca_key)
    _write_cert(pki.serving_cert, serving_cert)
    _write_key(pki.serving_key, serving_key)
    _write_key(pki.sa_key, sa_key)
    pki.sa_pub.write_bytes(
        sa_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    return pki


def _make_ca(not_before: datetime.datetime, not_after: datetime.datetime):
    """Certificate authority (also the client CA and the CSR signing CA): its key, name and certificate."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "baremetal-tenancy test CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return ca_key, ca_name, ca_cert


def _make_serving_cert(ca_key, ca_name, not_before: datetime.datetime, not_after: datetime.datetime):
    """Serving certificate for the apiserver on loopback (and the in-cluster
    names, so the "kubernetes" Service's certificate would also verify): its key and certificate."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    serving_key = ec.generate_private_key(ec.SECP256R1())
    sans = [
        x509.DNSName("localhost"),
        x509.DNSName("kubernetes"),
        x509.DNSName("kubernetes.default"),
        x509.DNSName("kubernetes.default.svc"),
        x509.IPAddress(ipaddress.ip_address(LOOPBACK)),
        x509.IPAddress(ipaddress.ip_address("10.0.0.1")),
    ]
    serving_cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
        .issuer_name(ca_name)
        .public_key(serving_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return serving_key, serving_cert


def _write_key(path: Path, key) -> None:
    from cryptography.hazmat.primitives import serialization

    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def _write_cert(path: Path, cert) -> None:
    from cryptography.hazmat.primitives import serialization

    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def write_token_file(path: Path, tokens: dict[str, str]) -> None:
    """Write the apiserver's --token-auth-file: ``token,user,uid,"groups"``."""
    lines = []
    for key, token in tokens.items():
        ident = IDENTITIES[key]
        line = f"{token},{ident.user},{ident.user}"
        if ident.groups:
            line += ',"' + ",".join(ident.groups) + '"'
        lines.append(line)
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o600)


def write_kubeconfig(path: Path, server: str, ca_cert: Path, user: str, token: str) -> Path:
    """A self-contained kubeconfig (CA data inline, bearer token)."""
    ca_data = base64.b64encode(ca_cert.read_bytes()).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "bmt", "cluster": {"server": server, "certificate-authority-data": ca_data}}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": f"{user}@bmt", "context": {"cluster": "bmt", "user": user}}],
        "current-context": f"{user}@bmt",
        "preferences": {},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path


# --------------------------------------------------------------------------
# Waiting for TLS endpoints (procs.wait_http cannot send a token or a CA)
# --------------------------------------------------------------------------


def wait_https(
    url: str,
    timeout: float,
    proc: Proc,
    *,
    ca_file: Path | None = None,
    token: str | None = None,
) -> None:
    """Poll ``url`` until it answers 200. Without ``ca_file`` the server
    certificate is not verified (the controller-manager's is self-signed)."""
    if ca_file is not None:
        context = ssl.create_default_context(cafile=str(ca_file))
    else:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    deadline = StartDeadline(timeout, proc)
    last = "no attempt"
    while True:
        if not proc.alive():
            raise ServiceStartError(
                f"{url}: {proc.name} exited with {proc.popen.returncode}\n"
                f"--- log {proc.log_path} ---\n{proc.log_tail()}"
            )
        try:
            with urllib.request.urlopen(request, timeout=5, context=context) as resp:
                if resp.status == 200:
                    return
                last = f"HTTP {resp.status}"
        except urllib.error.HTTPError as exc:
            last = f"HTTP {exc.code}: {exc.read(2000).decode(errors='replace')}"
        except (OSError, urllib.error.URLError) as exc:
            last = repr(exc)
        if deadline.expired():
            raise ServiceStartError(
                f"{url} not ready after {deadline.describe()}: {last}\n"
                f"--- {proc.name} log {proc.log_path} ---\n{proc.log_tail()}"
            )
        time.sleep(0.25)


# --------------------------------------------------------------------------
# The control plane
# --------------------------------------------------------------------------


@dataclasses.dataclass
class Started:
    """A started service: its process, its record, and how long it took."""

    proc: Proc
    service: Service
    seconds: float  # from exec to ready


class ApiServer:
    """One kube-apiserver: its endpoint and a kubeconfig per identity.

    The main one belongs to :class:`KubeEnv`; tests may start more on the same
    etcd (for example with RBAC off, as a negative control) with
    :meth:`KubeEnv.start_apiserver`.
    """

    def __init__(
        self,
        started: Started,
        workdir: Path,
        ca_file: Path,
        tokens: dict[str, str],
        running: list[Started],
    ):
        self.started = started
        self._running = running  # the owner's list of running services
        self.service = started.service
        self.server = started.service.url
        self.workdir = workdir
        self.ca_file = ca_file
        self.tokens = tokens
        for key in IDENTITIES:
            self.kubeconfig(key)

    def kubeconfig(self, identity: str) -> Path:
        """Path of the kubeconfig file for ``identity`` (written on first use)."""
        ident = IDENTITIES[identity]
        path = self.workdir / "kubeconfigs" / f"{identity}.kubeconfig"
        if not path.exists():
            write_kubeconfig(path, self.server, self.ca_file, ident.user, self.tokens[identity])
        return path

    def api(self, identity: str):
        """A new ``kubernetes.client.ApiClient`` authenticated as ``identity``."""
        from kubernetes import config

        return config.new_client_from_config(config_file=str(self.kubeconfig(identity)))

    def ansible_env(self, identity: str) -> dict[str, str]:
        """The environment for running ``ansible-playbook`` as ``identity``.

        The current environment minus any ambient Kubernetes settings, plus
        ``K8S_AUTH_KUBECONFIG`` (read by kubernetes.core and this collection)
        and a private TMPDIR (kubernetes.core caches API discovery there).
        """
        env = {k: v for k, v in os.environ.items() if not k.startswith("K8S_AUTH_") and k != "KUBECONFIG"}
        tmp = self.workdir / "tmp"
        tmp.mkdir(exist_ok=True)
        env["K8S_AUTH_KUBECONFIG"] = str(self.kubeconfig(identity))
        env["TMPDIR"] = str(tmp)
        return env

    def stop(self) -> None:
        """Stop this apiserver now (the owning KubeEnv will not stop it again)."""
        if self.started in self._running:
            self._running.remove(self.started)
            self.started.proc.stop(timeout=20)


class KubeEnv:
    """etcd + kube-apiserver + kube-controller-manager under ``workdir``.

    Attributes after :meth:`start`: ``etcd``, ``apiserver``,
    ``controller_manager`` (:class:`procs.Service` records), ``server`` (the
    apiserver URL), ``ca_file``, ``tokens`` (identity -> bearer token),
    ``timings`` (service name -> seconds to ready).
    """

    def __init__(self, workdir: str | os.PathLike, bin_dir: Path | None = None, watch_cache: bool = False):
        self.workdir = Path(workdir)
        self.bin_dir = require_binaries(bin_dir)
        self.watch_cache = watch_cache
        self.tokens = {key: secrets.token_hex(24) for key in IDENTITIES}
        self._started: list[Started] = []  # running services, oldest first
        self.history: list[Started] = []  # every service ever started here
        self.main: ApiServer | None = None
        self.etcd: Service | None = None
        self.apiserver: Service | None = None
        self.controller_manager: Service | None = None
        self.timings: dict[str, float] = {}

    # -- lifecycle ---------------------------------------------------------

    def start(self, controller_manager: bool = True) -> KubeEnv:
        """Start the three services, in order, each waited for (``controller_manager=False``: etcd and the
        apiserver only, for a cluster whose tests need no controller, such as the host cluster of a relay)."""
        try:
            self.pki = make_pki(self.workdir / "pki")
            self.token_file = self.workdir / "tokens.csv"
            write_token_file(self.token_file, self.tokens)
            self.etcd = self._start_etcd()
            self.main = self.start_apiserver("kube-apiserver", authorization_mode="RBAC")
            self.apiserver = self.main.service
            if controller_manager:
                self.controller_manager = self._start_controller_manager()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop everything started here, newest first."""
        for started in reversed(self._started):
            started.proc.stop(timeout=20)
        self._started.clear()
        # etcd preallocates large WAL files; keep the logs, drop the data.
        shutil.rmtree(self.workdir / "etcd-data", ignore_errors=True)

    def __enter__(self) -> KubeEnv:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def services(self) -> list[Service]:
        return [s.service for s in self._started]

    # -- conveniences on the main apiserver ---------------------------------

    @property
    def server(self) -> str:
        return self.main.server

    @property
    def ca_file(self) -> Path:
        return self.pki.ca_cert

    def kubeconfig(self, identity: str) -> Path:
        return self.main.kubeconfig(identity)

    def api(self, identity: str):
        return self.main.api(identity)

    def ansible_env(self, identity: str) -> dict[str, str]:
        return self.main.ansible_env(identity)

    # -- services ----------------------------------------------------------

    def _run(self, name: str, binary: str, argv: list[str], url: str, port: int, wait) -> Started:
        """Start ``binary``, call ``wait(proc)``, record and return it."""
        path = self.bin_dir / binary
        t0 = time.monotonic()
        proc = start_process(name, [str(path), *argv], self.workdir / "logs")
        started = Started(proc, Service(name, binary_version(path), url, port, proc.pid), 0.0)
        self._started.append(started)
        self.history.append(started)
        wait(proc)
        started.seconds = time.monotonic() - t0
        self.timings[name] = started.seconds
        return started

    def _start_etcd(self) -> Service:
        client_port, peer_port = free_port(), free_port()
        client_url = f"http://{LOOPBACK}:{client_port}"
        peer_url = f"http://{LOOPBACK}:{peer_port}"
        argv = [
            "--name=bmt",
            f"--data-dir={self.workdir / 'etcd-data'}",
            f"--listen-client-urls={client_url}",
            f"--advertise-client-urls={client_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=bmt={peer_url}",
            "--initial-cluster-state=new",
            "--unsafe-no-fsync",  # test data only: trade durability for speed
            # one member: Raft's heartbeat only keeps it leader of itself (idle CPU 1.08 -> 0.64 % of a core with
            # the default 100 ms); the first election is still at once (etcd advances its election ticks at start)
            "--heartbeat-interval=500",
            "--election-timeout=5000",
            "--log-level=warn",
        ]
        started = self._run(
            "etcd",
            "etcd",
            argv,
            client_url,
            client_port,
            lambda proc: wait_http(f"{client_url}/health", ETCD_TIMEOUT, proc, ok_statuses={200}),
        )
        return started.service

    def start_apiserver(
        self,
        name: str,
        *,
        authorization_mode: str = "RBAC",
        port: int | None = None,
    ) -> ApiServer:
        """Start a kube-apiserver on the shared etcd and wait for /readyz.

        Extra apiservers (for example ``authorization_mode="AlwaysAllow"``)
        share etcd, PKI and tokens with the main one. They are stopped with
        the environment, or earlier with :meth:`ApiServer.stop`. ``port``: the
        port of one stopped before (its clients see a restarted API server).
        """
        port = port or free_port()
        url = f"https://{LOOPBACK}:{port}"
        workdir = self.workdir / name
        workdir.mkdir(parents=True, exist_ok=True)
        argv = [
            f"--etcd-servers={self.etcd.url}",
            f"--bind-address={LOOPBACK}",
            f"--advertise-address={LOOPBACK}",
            f"--secure-port={port}",
            f"--cert-dir={workdir / 'certs'}",
            f"--tls-cert-file={self.pki.serving_cert}",
            f"--tls-private-key-file={self.pki.serving_key}",
            f"--client-ca-file={self.pki.ca_cert}",
            f"--authorization-mode={authorization_mode}",
            f"--token-auth-file={self.token_file}",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={self.pki.sa_pub}",
            f"--service-account-signing-key-file={self.pki.sa_key}",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--allow-privileged=true",
            # The default/kubernetes Endpoints cannot hold a loopback address;
            # nothing here needs them.
            "--endpoint-reconciler-type=none",
            "--profiling=false",
            # A test bed's few objects are read from etcd as fast as from a cache; the watch cache (a reflector,
            # a ring buffer and bookmark timers per resource, ~60 resources) cost an idle API server 2.1 % of a
            # core, 0.9 % without it. Clients see no bookmarks and list from etcd: behaviours a real cluster has
            # too (bookmarks are optional; a watch's resourceVersion may be compacted there as well). A bench may
            # turn it on (``watch_cache``: bench/bind.py's ``BENCH_WATCH_CACHE=1``), as real clusters have it.
            "--watch-cache=%s" % ("true" if self.watch_cache else "false"),
        ]
        admin_token = self.tokens["admin"]
        started = self._run(
            name,
            "kube-apiserver",
            argv,
            url,
            port,
            lambda proc: wait_https(
                f"{url}/readyz", APISERVER_TIMEOUT, proc, ca_file=self.pki.ca_cert, token=admin_token
            ),
        )
        return ApiServer(started, workdir, self.pki.ca_cert, self.tokens, self._started)

    def _start_controller_manager(self) -> Service:
        port = free_port()
        url = f"https://{LOOPBACK}:{port}"
        kubeconfig = self.kubeconfig("controller-manager")
        argv = [
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            # Authenticate callers of its own endpoint by token review only;
            # the apiserver has no request-header (front proxy) CA to look up.
            "--authentication-skip-lookup=true",
            f"--bind-address={LOOPBACK}",
            f"--secure-port={port}",
            f"--cert-dir={self.workdir / 'kube-controller-manager' / 'certs'}",
            "--leader-elect=false",
            "--use-service-account-credentials=false",
            f"--service-account-private-key-file={self.pki.sa_key}",
            f"--root-ca-file={self.pki.ca_cert}",
            f"--cluster-signing-cert-file={self.pki.ca_cert}",
            f"--cluster-signing-key-file={self.pki.ca_key}",
            # every default controller but those of nodes, volumes, Services and the workloads nothing here
            # creates (no node or kubelet runs; only the harness starts processes): idle CPU 0.92 -> 0.37 % of a core
            "--controllers=" + ",".join(["*", *("-%s-controller" % name for name in IDLE_CONTROLLERS)]),
            # short timers in the test bed: a quota created just after a CRD (the hostclaims count of
            # tenant_namespace) gets its usage at the next full quota sync, 5 min by default
            "--resource-quota-sync-period=10s",
            "--profiling=false",
        ]
        started = self._run(
            "kube-controller-manager",
            "kube-controller-manager",
            argv,
            url,
            port,
            lambda proc: self._wait_controllers(proc, url),
        )
        return started.service

    def _wait_controllers(self, proc: Proc, url: str) -> None:
        """Ready means healthy *and* running controllers: the root-CA
        publisher has written ``kube-root-ca.crt`` into ``kube-system``."""
        deadline = time.monotonic() + CONTROLLER_MANAGER_TIMEOUT
        wait_https(f"{url}/healthz", CONTROLLER_MANAGER_TIMEOUT, proc)
        wait_https(
            f"{self.server}/api/v1/namespaces/kube-system/configmaps/kube-root-ca.crt",
            max(1.0, deadline - time.monotonic()),
            proc,
            ca_file=self.pki.ca_cert,
            token=self.tokens["admin"],
        )


# --------------------------------------------------------------------------
# Test tenancy layout (as the cluster admin)
# --------------------------------------------------------------------------


def call_ignoring(status: int, call, *args, **kwargs):
    """Call a kubernetes client method; an answer with HTTP ``status`` gives ``None`` instead of an error."""
    from kubernetes.client.exceptions import ApiException

    try:
        return call(*args, **kwargs)
    except ApiException as exc:
        if exc.status != status:
            raise
        return None


def namespace_exists(api, name: str) -> bool:
    """Whether namespace ``name`` exists, read through ``api`` (a kubernetes ApiClient)."""
    from kubernetes import client

    return call_ignoring(404, client.CoreV1Api(api).read_namespace, name) is not None


def _create_or_keep(create, *args, **kwargs):
    """Call a kubernetes client ``create_*``; an existing object (409) is fine."""
    return call_ignoring(409, create, *args, **kwargs)


def setup_namespaces(api) -> None:
    """Create the infrastructure namespace and the tenant namespaces."""
    from kubernetes import client

    core = client.CoreV1Api(api)
    for name in (INFRA_NAMESPACE, *TENANT_NAMESPACES):
        labels = {"baremetal.tenancy/role": "infrastructure" if name == INFRA_NAMESPACE else "tenant"}
        body = client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels=labels))
        _create_or_keep(core.create_namespace, body)


def grant_first_slice_tenant_rbac(api) -> None:
    """FIRST SLICE ONLY — later issues replace this with the collection's roles.

    - each tenant user gets the built-in ``admin`` ClusterRole through a
      RoleBinding in its own namespace (so: read/write there, nothing
      elsewhere, and in particular nothing in the infrastructure namespace);
    - the binder identity gets ``cluster-admin`` (binding uses admin
      credentials, DESIGN.md).
    """
    from kubernetes import client

    rbac = client.RbacAuthorizationV1Api(api)
    for namespace in TENANT_NAMESPACES:
        user = IDENTITIES[namespace].user
        binding = client.V1RoleBinding(
            metadata=client.V1ObjectMeta(name="tenant-admin", namespace=namespace),
            role_ref=client.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="ClusterRole", name="admin"),
            subjects=[client.RbacV1Subject(api_group="rbac.authorization.k8s.io", kind="User", name=user)],
        )
        _create_or_keep(rbac.create_namespaced_role_binding, namespace, binding)
    binder = client.V1ClusterRoleBinding(
        metadata=client.V1ObjectMeta(name="baremetal-binder-first-slice"),
        role_ref=client.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="ClusterRole", name="cluster-admin"),
        subjects=[
            client.RbacV1Subject(api_group="rbac.authorization.k8s.io", kind="User", name=IDENTITIES["binder"].user)
        ],
    )
    _create_or_keep(rbac.create_cluster_role_binding, binder)


# --------------------------------------------------------------------------
# Minimal BareMetalHost CRD (stand-in until the setup role installs the real one)
# --------------------------------------------------------------------------

BMH_CRD_NAME = "baremetalhosts.metal3.io"


def minimal_bmh_crd() -> dict:
    """A BareMetalHost CRD with an open schema: metal3.io/v1alpha1,
    namespaced, status subresource, spec/status preserving unknown fields."""
    open_object = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": BMH_CRD_NAME},
        "spec": {
            "group": "metal3.io",
            "scope": "Namespaced",
            "names": {
                "kind": "BareMetalHost",
                "listKind": "BareMetalHostList",
                "plural": "baremetalhosts",
                "singular": "baremetalhost",
                "shortNames": ["bmh", "bmhost"],
            },
            "versions": [
                {
                    "name": "v1alpha1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {"spec": open_object, "status": open_object},
                        }
                    },
                }
            ],
        },
    }


def install_minimal_bmh_crd(api, timeout: float = 60) -> None:
    """Create the minimal BareMetalHost CRD and wait until it is Established
    and served. A CRD already present (for example the real one) is kept."""
    from kubernetes import client

    ext = client.ApiextensionsV1Api(api)
    _create_or_keep(ext.create_custom_resource_definition, minimal_bmh_crd())
    custom = client.CustomObjectsApi(api)
    deadline = time.monotonic() + timeout
    while True:
        crd = ext.read_custom_resource_definition(BMH_CRD_NAME)
        conditions = {c.type: c.status for c in (crd.status.conditions or [])} if crd.status else {}
        if conditions.get("Established") == "True":
            try:
                custom.list_namespaced_custom_object("metal3.io", "v1alpha1", INFRA_NAMESPACE, "baremetalhosts")
                return
            except client.exceptions.ApiException as exc:
                if exc.status != 404:
                    raise
        if time.monotonic() > deadline:
            raise TimeoutError(f"CRD {BMH_CRD_NAME} not established after {timeout}s: {conditions}")
        time.sleep(0.2)


@dataclasses.dataclass(frozen=True)
class SeededHost:
    namespace: str
    bmh_name: str
    secret_name: str
    bmc_address: str


def seed_minimal_bmh(api, name: str = "host-0") -> SeededHost:
    """Create one BareMetalHost and its BMC credentials Secret in the
    infrastructure namespace (idempotent)."""
    from kubernetes import client

    secret_name = f"{name}-bmc-secret"
    bmc_address = f"redfish://127.0.0.1:8000/redfish/v1/Systems/{name}"
    core = client.CoreV1Api(api)
    secret = client.V1Secret(
        metadata=client.V1ObjectMeta(name=secret_name, namespace=INFRA_NAMESPACE),
        type="Opaque",
        string_data={"username": "admin", "password": f"bmc-password-{name}"},
    )
    _create_or_keep(core.create_namespaced_secret, INFRA_NAMESPACE, secret)
    bmh = {
        "apiVersion": "metal3.io/v1alpha1",
        "kind": "BareMetalHost",
        "metadata": {"name": name, "namespace": INFRA_NAMESPACE},
        "spec": {
            "online": False,
            "bootMACAddress": "52:54:00:00:00:01",
            "bmc": {"address": bmc_address, "credentialsName": secret_name},
        },
    }
    custom = client.CustomObjectsApi(api)
    _create_or_keep(
        custom.create_namespaced_custom_object, "metal3.io", "v1alpha1", INFRA_NAMESPACE, "baremetalhosts", bmh
    )
    return SeededHost(INFRA_NAMESPACE, name, secret_name, bmc_address)


# --------------------------------------------------------------------------
# Manual run: start once, print services and timings, stop.
# --------------------------------------------------------------------------


def _main() -> None:
    workdir = Path(tempfile.mkdtemp(prefix="bmt-kube-"))
    t0 = time.monotonic()
    try:
        with KubeEnv(workdir) as env:
            total = time.monotonic() - t0
            for started in env.history:
                print(f"{started.service.summary()} ready in {started.seconds:.1f}s")
            print(f"control plane ready in {total:.1f}s (workdir {workdir})")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    _main()
