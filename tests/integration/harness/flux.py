"""Flux's source-controller, kustomize-controller and helm-controller, out of cluster.

The binaries and their CRDs are built by ``scripts/build-flux.sh`` (``make
flux``) into ``$BMT_CACHE_DIR/flux-<version>-hc<commit>/{bin,crds}``. Here
they run as processes on this machine against the harness kube-apiserver
(:class:`harness.kube.KubeEnv`), each with the identity the Flux install
gives it in a cluster: a ServiceAccount in ``flux-system`` (a token from the
TokenRequest API in its kubeconfig), Flux's ``crd-controller`` ClusterRole for
all three and ``cluster-admin`` for the two that apply objects
(kustomize-controller, helm-controller), as Flux's ``cluster-reconciler``
binding does.

Multi-tenancy lockdown, as Flux documents it for a shared Flux:
``--no-cross-namespace-refs`` (a Kustomization or HelmRelease cannot use a
source, a dependency or a secret in another namespace),
``--default-service-account=default`` (an object that names no ServiceAccount
is reconciled as the ``default`` ServiceAccount of its own namespace, never
as the controller) and, on kustomize-controller, ``--no-remote-bases`` (a
kustomization.yaml cannot pull bases from outside its source artifact).

A dedicated Flux for one tenant (``FluxEnv(..., tenant="team-a")``, the
design doc's other implementation): the same controllers running in the
tenant's namespace as ServiceAccounts there, watching only that namespace
(``--watch-all-namespaces=false``), with Flux's objects and the built-in
``admin`` role in that namespace as their only rights, applying as
themselves. Flux's sharding label (``sharding.fluxcd.io/key=<tenant>``)
splits the work: the dedicated controllers watch only objects carrying it,
the shared ones only objects without it.

Every listener is on 127.0.0.1: health, metrics and source-controller's
artifact server (kustomize-controller and helm-controller download artifacts
from the URL source-controller advertises). No leader election, no event
recorder address (there is no notification-controller). Processes are
stopped by PID (:class:`harness.procs.Proc`).

Main entry points:

- :func:`flux_dir` / :func:`require_flux`: where the build is.
- :class:`FluxEnv`: ``start()``/``stop()`` the three controllers on a started
  :class:`~harness.kube.KubeEnv`, ``install_crds()``.
- :func:`wait_ready`: wait for a Flux object's ``Ready`` condition to reach a
  status; returns the object.
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import yaml

from .ansible import run_playbook
from .kube import _create_or_keep, write_kubeconfig
from .procs import LOOPBACK, Proc, Service, free_port, start_process, wait_http

FLUX_VERSION_DEFAULT = "v1.9.6"
HELM_CONTROLLER_COMMIT = "0f61a8607"
CONTROLLERS = ("source-controller", "kustomize-controller", "helm-controller")
NAMESPACE = "flux-system"
# What kustomize-controller and helm-controller impersonate when an object
# names no ServiceAccount: the tenant namespace's own "default".
DEFAULT_SERVICE_ACCOUNT = "default"
# Flux's sharding label: objects carrying it are reconciled by the dedicated Flux of that shard (a tenant).
SHARD_LABEL = "sharding.fluxcd.io/key"

CRD_TIMEOUT = 60
START_TIMEOUT = 180
TOKEN_SECONDS = 24 * 3600

# Flux's crd-controller ClusterRole (flux2 manifests/rbac/controller.yaml), for the groups these three serve.
CRD_CONTROLLER_RULES = [
    {
        "apiGroups": ["source.toolkit.fluxcd.io", "kustomize.toolkit.fluxcd.io", "helm.toolkit.fluxcd.io"],
        "resources": ["*"],
        "verbs": ["*"],
    },
    {
        "apiGroups": [""],
        "resources": ["namespaces", "secrets", "configmaps", "serviceaccounts"],
        "verbs": ["get", "list", "watch"],
    },
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
    {
        "apiGroups": [""],
        "resources": ["configmaps"],
        "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
    },
    {"apiGroups": [""], "resources": ["configmaps/status"], "verbs": ["get", "update", "patch"]},
    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["*"]},
    {"apiGroups": [""], "resources": ["serviceaccounts/token"], "verbs": ["create"]},
]
# The controllers that apply objects get cluster-admin (Flux's cluster-reconciler binding); what they
# apply for a tenant is limited by impersonating the tenant's ServiceAccount, not by their own rights.
RECONCILERS = ("kustomize-controller", "helm-controller")


class FluxMissing(RuntimeError):
    """The Flux controllers have not been built (run ``make flux``)."""


def flux_dir() -> Path:
    """``BMT_FLUX_DIR``, or the directory ``scripts/build-flux.sh`` writes by default."""
    if os.environ.get("BMT_FLUX_DIR"):
        return Path(os.environ["BMT_FLUX_DIR"]).expanduser()
    cache = os.environ.get("BMT_CACHE_DIR")
    if not cache:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
        cache = os.path.join(xdg, "baremetal-tenancy")
    version = os.environ.get("FLUX_VERSION") or FLUX_VERSION_DEFAULT
    return Path(cache).expanduser() / f"flux-{version}-hc{HELM_CONTROLLER_COMMIT}"


def require_flux(directory: Path | None = None, controllers: tuple[str, ...] = CONTROLLERS) -> Path:
    directory = directory or flux_dir()
    missing = [c for c in controllers if not os.access(directory / "bin" / c, os.X_OK)]
    if missing or not list((directory / "crds").glob("*.yaml")):
        raise FluxMissing(
            f"Flux controllers missing in {directory}: {', '.join(missing) or 'CRDs'}. "
            "Run `make flux` (scripts/build-flux.sh) or point BMT_FLUX_DIR at its output."
        )
    return directory


@dataclasses.dataclass
class Controller:
    name: str
    proc: Proc
    service: Service
    health_url: str
    seconds: float


class FluxEnv:
    """The three Flux controllers against ``kube_env``'s apiserver, files under ``workdir``.

    Attributes after :meth:`start`: ``controllers`` (name -> :class:`Controller`),
    ``artifact_url`` (source-controller's artifact server), ``timings``.
    """

    def __init__(
        self,
        kube_env,
        workdir: str | os.PathLike,
        directory: Path | None = None,
        controllers: tuple[str, ...] = CONTROLLERS,
        tenant: str | None = None,
    ):
        self.kube_env = kube_env
        # tenant=None: the shared Flux of the cluster in flux-system, watching every namespace, locked down.
        # tenant=<namespace>: a dedicated Flux for one tenant, running in and watching only that namespace, with
        # rights in that namespace only (Flux's "one Flux per tenant"); it applies as itself.
        self.tenant = tenant
        self.namespace = tenant or NAMESPACE
        self.workdir = Path(workdir)
        self.wanted = tuple(c for c in CONTROLLERS if c in controllers)
        self.directory = require_flux(directory, self.wanted)
        self.controllers: dict[str, Controller] = {}  # running
        self.history: list[Controller] = []  # every controller started here
        self.timings: dict[str, float] = {}
        self.artifact_url = ""

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> FluxEnv:
        try:
            t0 = time.monotonic()
            with self.kube_env.api("admin") as admin:
                self.install_crds(admin)
                if self.tenant:
                    self._grant_tenant_rbac(admin)
                else:
                    self._grant_rbac(admin)
                kubeconfigs = {c: self._kubeconfig(admin, c) for c in self.wanted}
            self.timings["crds and rbac"] = time.monotonic() - t0
            if "source-controller" in self.wanted:
                self._start_source_controller(kubeconfigs)
            lockdown = ["--no-cross-namespace-refs=true", f"--default-service-account={DEFAULT_SERVICE_ACCOUNT}"]
            if self.tenant:
                lockdown = []  # one namespace, its own rights: nothing to impersonate, nothing else to reach
            if "kustomize-controller" in self.wanted:
                self._run("kustomize-controller", kubeconfigs, [*lockdown, "--no-remote-bases=true"])
            if "helm-controller" in self.wanted:
                self._run("helm-controller", kubeconfigs, lockdown)
        except BaseException:
            self.stop()
            raise
        return self

    def _start_source_controller(self, kubeconfigs: dict[str, Path]) -> None:
        storage_port = free_port()
        self.artifact_url = f"http://{LOOPBACK}:{storage_port}"
        storage = self.workdir / "source-controller" / "storage"
        storage.mkdir(parents=True, exist_ok=True)
        self._run(
            "source-controller",
            kubeconfigs,
            [
                f"--storage-path={storage}",
                f"--storage-addr={LOOPBACK}:{storage_port}",
                f"--storage-adv-addr={LOOPBACK}:{storage_port}",
            ],
        )

    def stop(self) -> None:
        for controller in reversed(list(self.controllers.values())):
            controller.proc.stop(timeout=20)
        self.controllers.clear()

    def __enter__(self) -> FluxEnv:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def services(self) -> list[Service]:
        return [c.service for c in self.controllers.values()]

    # -- setup in the cluster -------------------------------------------------

    def install_crds(self, api) -> None:
        """Create the controllers' CRDs (kept if present) and wait until they are Established."""
        from kubernetes import client

        ext = client.ApiextensionsV1Api(api)
        names = []
        for path in sorted((self.directory / "crds").glob("*.yaml")):
            for doc in yaml.safe_load_all(path.read_text()):
                if doc and doc.get("kind") == "CustomResourceDefinition":
                    _create_or_keep(ext.create_custom_resource_definition, doc)
                    names.append(doc["metadata"]["name"])
        deadline = time.monotonic() + CRD_TIMEOUT
        for name in names:
            while True:
                crd = ext.read_custom_resource_definition(name)
                conditions = {c.type: c.status for c in (crd.status.conditions or [])} if crd.status else {}
                if conditions.get("Established") == "True":
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"CRD {name} not established after {CRD_TIMEOUT}s: {conditions}")
                time.sleep(0.2)

    def _grant_rbac(self, api) -> None:
        from kubernetes import client

        core = client.CoreV1Api(api)
        rbac = client.RbacAuthorizationV1Api(api)
        _create_or_keep(core.create_namespace, {"metadata": {"name": NAMESPACE}})
        for name in CONTROLLERS:
            _create_or_keep(core.create_namespaced_service_account, NAMESPACE, {"metadata": {"name": name}})
        _create_or_keep(
            rbac.create_cluster_role,
            {"metadata": {"name": "crd-controller-flux-system"}, "rules": CRD_CONTROLLER_RULES},
        )
        bindings = {
            "crd-controller-flux-system": ("crd-controller-flux-system", CONTROLLERS),
            "cluster-reconciler-flux-system": ("cluster-admin", RECONCILERS),
        }
        for binding, (role, subjects) in bindings.items():
            _create_or_keep(
                rbac.create_cluster_role_binding,
                {
                    "metadata": {"name": binding},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                    "subjects": [{"kind": "ServiceAccount", "name": s, "namespace": NAMESPACE} for s in subjects],
                },
            )

    def _grant_tenant_rbac(self, api) -> None:
        """A dedicated Flux's rights: Flux's objects and the built-in ``admin`` role, in the tenant's namespace only."""
        from kubernetes import client

        rbac = client.RbacAuthorizationV1Api(api)
        core = client.CoreV1Api(api)
        ns = self.namespace
        for name in self.wanted:
            _create_or_keep(core.create_namespaced_service_account, ns, {"metadata": {"name": name}})
        rules = [r for r in CRD_CONTROLLER_RULES if "namespaces" not in r["resources"]]
        rules.append(
            {
                "apiGroups": [""],
                "resources": ["secrets", "configmaps", "serviceaccounts"],
                "verbs": ["get", "list", "watch"],
            }
        )
        _create_or_keep(rbac.create_namespaced_role, ns, {"metadata": {"name": "flux-controllers"}, "rules": rules})
        subjects = [{"kind": "ServiceAccount", "name": c, "namespace": ns} for c in self.wanted]
        for binding, kind, role in (
            ("flux-controllers", "Role", "flux-controllers"),
            ("flux-reconciler", "ClusterRole", "admin"),
        ):
            _create_or_keep(
                rbac.create_namespaced_role_binding,
                ns,
                {
                    "metadata": {"name": binding},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
                    "subjects": subjects,
                },
            )

    def _kubeconfig(self, api, controller: str) -> Path:
        """A kubeconfig holding a TokenRequest token of the controller's ServiceAccount."""
        from kubernetes import client

        core = client.CoreV1Api(api)
        answer = core.create_namespaced_service_account_token(
            controller, self.namespace, {"spec": {"expirationSeconds": TOKEN_SECONDS}}
        )
        path = self.workdir / "kubeconfigs" / f"{controller}.kubeconfig"
        return write_kubeconfig(
            path,
            self.kube_env.server,
            self.kube_env.ca_file,
            f"system:serviceaccount:{self.namespace}:{controller}",
            answer.status.token,
        )

    # -- processes -------------------------------------------------------------

    def _run(self, name: str, kubeconfigs: dict[str, Path], extra: list[str]) -> Controller:
        health_port, metrics_port = free_port(), free_port()
        health_url = f"http://{LOOPBACK}:{health_port}"
        argv = [
            str(self.directory / "bin" / name),
            f"--health-addr={LOOPBACK}:{health_port}",
            f"--metrics-addr={LOOPBACK}:{metrics_port}",
            "--events-addr=",
            "--enable-leader-election=false",
            f"--watch-all-namespaces={'false' if self.tenant else 'true'}",
            # Flux's sharding label: the shared Flux leaves a tenant's dedicated objects to that tenant's Flux.
            f"--watch-label-selector={SHARD_LABEL}={self.tenant}"
            if self.tenant
            else f"--watch-label-selector=!{SHARD_LABEL}",
            "--log-level=info",
            "--log-encoding=json",
            *extra,
        ]
        tmp = self.workdir / name / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        env = {
            "KUBECONFIG": str(kubeconfigs[name]),
            "RUNTIME_NAMESPACE": self.namespace,
            "TMPDIR": str(tmp),
            "HOME": str(self.workdir / name),
        }
        t0 = time.monotonic()
        proc = start_process(name, argv, self.workdir / "logs", env=env)
        service = Service(name, self._version(name), health_url, health_port, proc.pid)
        controller = Controller(name, proc, service, health_url, 0.0)
        self.controllers[name] = controller
        self.history.append(controller)
        wait_http(f"{health_url}/readyz", START_TIMEOUT, proc, ok_statuses={200})
        controller.seconds = time.monotonic() - t0
        self.timings[name] = controller.seconds
        return controller

    def rss_kib(self) -> dict[str, int]:
        """Resident memory of each running controller (VmRSS from /proc, KiB)."""
        sizes = {}
        for name, controller in self.controllers.items():
            for line in Path(f"/proc/{controller.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    sizes[name] = int(line.split()[1])
        return sizes

    def _version(self, name: str) -> str:
        if name == "helm-controller":
            return f"snapshot {HELM_CONTROLLER_COMMIT}"
        return os.environ.get("FLUX_VERSION") or FLUX_VERSION_DEFAULT


# --------------------------------------------------------------------------
# Waiting on Flux objects
# --------------------------------------------------------------------------

FLUX_KINDS = {
    "GitRepository": ("source.toolkit.fluxcd.io", "v1", "gitrepositories"),
    "Kustomization": ("kustomize.toolkit.fluxcd.io", "v1", "kustomizations"),
    "HelmRelease": ("helm.toolkit.fluxcd.io", "v2", "helmreleases"),
    "HelmRepository": ("source.toolkit.fluxcd.io", "v1", "helmrepositories"),
}


def ready_condition(obj: dict) -> dict:
    """The object's ``Ready`` condition (empty if none yet)."""
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return condition
    return {}


def wait_ready(api, kind: str, namespace: str, name: str, *, status: str = "True", timeout: float = 300) -> dict:
    """Wait until the Flux object's ``Ready`` condition has ``status`` for its current generation.

    The generation is the condition's own ``observedGeneration`` (status.observedGeneration when it has none).

    Returns the object. A timeout raises with the last condition seen.
    """
    from kubernetes import client

    group, version, plural = FLUX_KINDS[kind]
    custom = client.CustomObjectsApi(api)
    deadline = time.monotonic() + timeout
    last: dict = {}
    while True:
        try:
            obj = custom.get_namespaced_custom_object(group, version, namespace, plural, name)
        except client.exceptions.ApiException as exc:
            if exc.status != 404:
                raise
            obj = {}
        last = ready_condition(obj)
        # Flux moves status.observedGeneration only when a reconciliation succeeds (or stalls): an object that
        # has always failed keeps -1 there. Each condition carries the generation it was computed for.
        observed = last.get("observedGeneration", (obj.get("status") or {}).get("observedGeneration"))
        current = observed == (obj.get("metadata") or {}).get("generation")
        if obj and current and last.get("status") == status:
            return obj
        if time.monotonic() > deadline:
            raise TimeoutError(f"{kind} {namespace}/{name}: Ready is not {status} after {timeout:.0f}s; last: {last}")
        time.sleep(1)


def request_reconcile(api, kind: str, namespace: str, name: str) -> str:
    """Ask Flux to reconcile the object now, as ``flux reconcile`` does (the ``reconcile.fluxcd.io/requestedAt``
    annotation), instead of waiting out its interval. Returns the stamp, which the controller copies to
    ``status.lastHandledReconcileAt`` once it has handled the request."""
    from kubernetes import client

    group, version, plural = FLUX_KINDS[kind]
    stamp = str(time.time())
    client.CustomObjectsApi(api).patch_namespaced_custom_object(
        group,
        version,
        namespace,
        plural,
        name,
        {"metadata": {"annotations": {"reconcile.fluxcd.io/requestedAt": stamp}}},
    )
    return stamp


def operator_repository(api, git_server, name: str, checkout: Path, interval: str = "10s") -> Path:
    """The cluster operator's repository ``name`` on ``git_server`` (created with a README), applied by the shared
    Flux from ``flux-system/<name>`` (a GitRepository and a pruning Kustomization), and a clone of it at
    ``checkout``, where the tenant_gitops role commits. Waits until Flux has applied it once; returns the clone.

    The Kustomization names the controller's own ServiceAccount (cluster-admin): the platform's reconciliation.
    Without it ``--default-service-account`` would make it flux-system's powerless ``default``."""
    from kubernetes import client

    from .git_server import git

    git_server.create_repo(name)
    git_server.commit(name, {"README.md": f"# {name}: applied by Flux from {NAMESPACE}/{name}\n"}, "init")
    source = {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"interval": interval, "url": git_server.url(name), "ref": {"branch": "main"}},
    }
    sync = {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "interval": interval,
            "retryInterval": interval,
            "path": "./",
            "prune": True,
            "timeout": "2m",
            "sourceRef": {"kind": "GitRepository", "name": name},
            "serviceAccountName": "kustomize-controller",
        },
    }
    custom = client.CustomObjectsApi(api)
    for kind, body in (("GitRepository", source), ("Kustomization", sync)):
        group, version, plural = FLUX_KINDS[kind]
        _create_or_keep(custom.create_namespaced_custom_object, group, version, NAMESPACE, plural, body)
    wait_ready(api, "Kustomization", NAMESPACE, name)
    git("clone", "--quiet", git_server.url(name), str(checkout))
    return checkout


def tenant_gitops_play(state: str = "present", **variables) -> list[dict]:
    """A play that runs the ``tenant_gitops`` role with ``tenant_gitops_state`` and ``variables``."""
    return [
        {
            "name": "tenants by Git",
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            "vars": {"tenant_gitops_state": state, **variables},
            "roles": [{"role": "baremetal.tenancy.tenant_gitops"}],
        }
    ]


#: the role's task that commits to the operator's repository (its result shows what a run committed)
COMMIT_TASK = "baremetal.tenancy.tenant_gitops : Commit the tenants' directories to the operator's repository"


def run_tenant_gitops(
    kube_env,
    checkout: Path,
    workdir: Path,
    fleet: str,
    tenants: list[dict],
    state: str = "present",
    *,
    interval: str = "10s",
    check: bool = False,
    **variables,
):
    """``ansible-playbook`` of :func:`tenant_gitops_play` as the cluster admin: ``tenants`` into the operator's
    repository checked out at ``checkout``, whose Flux Kustomization is ``fleet`` in ``flux-system``; with
    ``check``, in check mode with ``--diff``. ``variables`` are further role variables."""
    role_vars = {
        "tenant_gitops_checkout": str(checkout),
        "tenant_gitops_tenants": tenants,
        "tenant_gitops_interval": interval,
        "tenant_gitops_flux_kustomization": {"name": fleet, "namespace": "flux-system"},
        "tenant_gitops_wait_timeout": 300,
        **variables,
    }
    return run_playbook(
        tenant_gitops_play(state), kube_env.ansible_env("admin"), workdir, extra_vars=role_vars, check=check, diff=check
    )
