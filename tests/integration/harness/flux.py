"""Flux's source-controller, kustomize-controller and helm-controller, out of cluster.

The binaries and their CRDs are built by ``scripts/build-flux.sh`` (``make
flux``) into ``$BMT_CACHE_DIR/flux-<version>-hc<commit>/{bin,crds}``. Here
they run as processes on this machine against the harness kube-apiserver
(:class:`harness.kube.KubeEnv`), each with the identity the Flux install
gives it in a cluster: its ServiceAccount (a token from the TokenRequest API
in its kubeconfig) and that ServiceAccount's rights.

The shared Flux is installed by the collection's ``flux_install`` role
(``ansible-playbook``, as an owner runs it): CRDs, ServiceAccounts, RBAC,
Deployments and the admission policy on tenants' source URLs. No pod runs in
the test bed, so each controller is then started as a process with exactly
the arguments, ServiceAccount and environment of the Deployment the role
applied, read back from the apiserver (:func:`deployment_process`); only the
listen and storage addresses, which a pod has to itself, are replaced by
loopback ones. A Deployment that lacks a lockdown flag is refused
(:class:`LockdownMissing`, the rule of ``tenancy_posture``), so no GitOps test
runs on a Flux that is not locked down.

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

from ansible_collections.baremetal.tenancy.plugins.module_utils.posture import checks as posture_checks

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


class FluxMissing(RuntimeError):
    """The Flux controllers have not been built (run ``make flux``)."""


class LockdownMissing(RuntimeError):
    """A controller's Deployment lacks a multi-tenancy lockdown flag: the harness does not start it."""


#: flags whose values a pod has to itself (its own network and disk): replaced by loopback ones and a work directory
LOCAL_FLAGS = ("--health-addr", "--metrics-addr", "--storage-path", "--storage-addr", "--storage-adv-addr")
#: the one play of the role, as an owner writes it
FLUX_INSTALL_PLAY = [
    {
        "name": "Flux, locked down",
        "hosts": "localhost",
        "connection": "local",
        "gather_facts": False,
        "roles": [{"role": "baremetal.tenancy.flux_install"}],
    }
]


def _expand(value: str, env: dict[str, str]) -> str:
    """Kubernetes' ``$(VAR)`` references in an argument, from the container's environment."""
    for name, val in env.items():
        value = value.replace("$(%s)" % name, val)
    return value


def deployment_process(deployment: dict, controller: str) -> tuple[list[str], str, dict[str, str]]:
    """The arguments, ServiceAccount and environment of ``controller``'s container in ``deployment`` (a dict as
    the apiserver returns it). Raises :class:`LockdownMissing` when the arguments lack a lockdown flag."""
    meta = deployment.get("metadata") or {}
    where = "Deployment %s/%s" % (meta.get("namespace"), meta.get("name"))
    container = posture_checks.controller_container(deployment, controller)
    if container is None:
        raise LockdownMissing("%s: no container for %s" % (where, controller))
    args = list(container.get("args") or [])
    problems = posture_checks.lockdown_problems(controller, args)
    if problems:
        raise LockdownMissing("%s: %s" % (where, "; ".join(problems)))
    pod = deployment["spec"]["template"]["spec"]
    account = pod.get("serviceAccountName") or "default"
    fields = {
        "metadata.namespace": meta.get("namespace"),
        "metadata.name": "%s-local" % controller,
        "spec.serviceAccountName": account,
    }
    env: dict[str, str] = {}
    for item in container.get("env") or []:
        if "value" in item:
            env[item["name"]] = _expand(item.get("value") or "", env)
            continue
        path = ((item.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")
        if path not in fields:
            raise RuntimeError("%s: env %s: only values and fieldRefs %s are supported" % (where, item, list(fields)))
        env[item["name"]] = str(fields[path])
    return [_expand(a, env) for a in args], account, env


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
        allowed_source_urls: list[str] | None = None,
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
        # the shared Flux: the URLs tenants' sources may point at (flux_install's admission policy)
        self.allowed_source_urls = list(allowed_source_urls or [])
        self.deployments: dict[str, dict] = {}  # the shared Flux: controller -> its Deployment as applied
        self._reapplied = 0  # allow_source_urls' runs of the role

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> FluxEnv:
        try:
            t0 = time.monotonic()
            if not self.tenant:
                self._start_from_role()
                return self
            with self.kube_env.api("admin") as admin:
                self.install_crds(admin)
                self._grant_tenant_rbac(admin)
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

    def role_variables(self) -> dict:
        """What the harness gives the flux_install role: the CRDs it built, and the test bed's differences from a
        cluster (one replica of each, out of cluster: no leader election, no wait for pods that never run; no
        notification-controller; the sharding selector that leaves a tenant's dedicated objects to its own Flux)."""
        return {
            "flux_install_crds_dir": str(self.directory / "crds"),
            "flux_install_namespace": NAMESPACE,
            "flux_install_leader_election": False,
            "flux_install_watch_label_selector": f"!{SHARD_LABEL}",
            "flux_install_allowed_source_urls": self.allowed_source_urls,
            "flux_install_wait": False,
        }

    def _apply_role(self, workdir: Path) -> None:
        run = run_playbook(
            FLUX_INSTALL_PLAY, self.kube_env.ansible_env("admin"), workdir, extra_vars=self.role_variables()
        )
        if not run.ok:
            raise RuntimeError(
                "flux_install failed (rc %s):\n%s\n%s" % (run.rc, run.stdout[-4000:], run.stderr[-2000:])
            )

    def allow_source_urls(self, urls: list[str]) -> None:
        """Apply the flux_install role again with ``urls`` as ``flux_install_allowed_source_urls``, as an owner does
        to let tenants' sources (a Helm chart repository, say) come from another server. Only the admission policy
        changes: the Deployments are the same, so the running controllers stay as they are."""
        self.allowed_source_urls = list(urls)
        self._reapplied += 1
        self._apply_role(self.workdir / f"flux-install-{self._reapplied}")

    def _start_from_role(self) -> None:
        """Apply the flux_install role, read its Deployments back and start each controller as they say."""
        from kubernetes import client

        t0 = time.monotonic()
        self._apply_role(self.workdir / "flux-install")
        self.timings["flux_install role"] = time.monotonic() - t0
        with self.kube_env.api("admin") as admin:
            apps = client.AppsV1Api(admin)
            for name in self.wanted:
                raw = apps.read_namespaced_deployment(name, NAMESPACE)
                self.deployments[name] = admin.sanitize_for_serialization(raw)
            processes = {name: deployment_process(self.deployments[name], name) for name in self.wanted}
            kubeconfigs = {name: self._kubeconfig(admin, processes[name][1]) for name in self.wanted}
        for name in self.wanted:
            args, _account, env = processes[name]
            self._run_as_deployed(name, kubeconfigs[name], args, env)

    def _run_as_deployed(self, name: str, kubeconfig: Path, args: list[str], env: dict[str, str]) -> Controller:
        """Start ``name`` with the Deployment's ``args`` and ``env``; only :data:`LOCAL_FLAGS` get loopback values."""
        health_port, metrics_port = free_port(), free_port()
        local = {"--health-addr": f"{LOOPBACK}:{health_port}", "--metrics-addr": f"{LOOPBACK}:{metrics_port}"}
        if name == "source-controller":
            storage_port = free_port()
            self.artifact_url = f"http://{LOOPBACK}:{storage_port}"
            storage = self.workdir / name / "storage"
            storage.mkdir(parents=True, exist_ok=True)
            local.update(
                {
                    "--storage-path": str(storage),
                    "--storage-addr": f"{LOOPBACK}:{storage_port}",
                    "--storage-adv-addr": f"{LOOPBACK}:{storage_port}",
                }
            )
        argv = []
        for arg in args:
            flag = arg.partition("=")[0]
            argv.append(f"{flag}={local.pop(flag)}" if flag in local else arg)
        argv += [f"{flag}={value}" for flag, value in local.items()]  # flags the Deployment left to their defaults
        tmp = self.workdir / name / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        process_env = dict(env, KUBECONFIG=str(kubeconfig), TMPDIR=str(tmp), HOME=str(self.workdir / name))
        return self._start(name, [str(self.directory / "bin" / name), *argv], process_env, health_port)

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
        """A kubeconfig holding a TokenRequest token of the ServiceAccount ``controller`` (of this Flux's namespace)."""
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
        return self._start(name, argv, env, health_port)

    def _start(self, name: str, argv: list[str], env: dict[str, str], health_port: int) -> Controller:
        health_url = f"http://{LOOPBACK}:{health_port}"
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


def wait_ready(
    api,
    kind: str,
    namespace: str,
    name: str,
    *,
    status: str = "True",
    timeout: float = 300,
    message: str | None = None,
) -> dict:
    """Wait until the Flux object's ``Ready`` condition has ``status`` for its current generation.

    The generation is the condition's own ``observedGeneration`` (status.observedGeneration when it has none);
    a wait for ``True`` also waits for status.observedGeneration, written after the conditions. A wait for
    ``False`` names the failure it waits for: ``message``, text the condition's message must hold (any case). Flux
    also says ``False`` on the way there (a HelmRelease whose HelmChart is not built yet: "HelmChart ... is not
    ready: latest generation of object has not been reconciled"), and a wait that took that for the failure read it
    too early.

    Returns the object. A timeout raises with the last condition seen.
    """
    if status != "True" and not message:
        raise ValueError("a wait for Ready=%s names the failure it waits for (message=...)" % status)
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
        generation = (obj.get("metadata") or {}).get("generation")
        observed = last.get("observedGeneration", (obj.get("status") or {}).get("observedGeneration"))
        current = observed == generation
        if status == "True":
            # Flux's patch helper writes the conditions first and the rest of the status (observedGeneration,
            # lastAppliedRevision, artifact) in a second request: a read between the two sees Ready=True
            # without what the reconciliation applied. A success moves status.observedGeneration: wait for it.
            current = current and (obj.get("status") or {}).get("observedGeneration") == generation
        expected = message is None or message.lower() in (last.get("message") or "").lower()
        if obj and current and last.get("status") == status and expected:
            return obj
        if time.monotonic() > deadline:
            want = status if message is None else f"{status} ({message!r})"
            raise TimeoutError(f"{kind} {namespace}/{name}: Ready is not {want} after {timeout:.0f}s; last: {last}")
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


#: the operator repositories made in this session, in order (operator_repository)
_OPERATOR_REPOSITORIES: list[str] = []


def operator_repository(api, git_server, name: str, checkout: Path, interval: str = "10s") -> Path:
    """The cluster operator's repository ``name`` on ``git_server`` (created with a README), applied by the shared
    Flux from ``flux-system/<name>`` (a GitRepository and a pruning Kustomization), and a clone of it at
    ``checkout``, where the tenant_gitops role commits. Waits until Flux has applied it once; returns the clone.

    The Kustomization names the controller's own ServiceAccount (cluster-admin): the platform's reconciliation.
    Without it ``--default-service-account`` would make it flux-system's powerless ``default``.

    The Kustomizations of the repositories made before this one (by earlier modules: one operator repository per
    module) are suspended first: two repositories that both hold tenant_namespace's cluster-wide admission policies
    would otherwise take them from each other at every interval, and a test reading which Kustomization applied them
    would see whichever reconciled last (a full run at load 30 saw it)."""
    from kubernetes import client

    from .git_server import git

    custom = client.CustomObjectsApi(api)
    group, version, plural = FLUX_KINDS["Kustomization"]
    for earlier in _OPERATOR_REPOSITORIES:
        if earlier != name:
            custom.patch_namespaced_custom_object(
                group, version, NAMESPACE, plural, earlier, {"spec": {"suspend": True}}
            )
    if name not in _OPERATOR_REPOSITORIES:
        _OPERATOR_REPOSITORIES.append(name)
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
