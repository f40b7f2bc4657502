"""The Metal3 half of `make demo`: the HostClaim proposal on the real baremetal-operator.

The story, step by step, is in the docstring of scripts/demo/__main__.py. Here:

- the services: a Kubernetes control plane (etcd, kube-apiserver with RBAC
  and one static-token user per identity, kube-controller-manager: the
  integration tests' ``harness.kube.KubeEnv``) and beside it what a Metal3
  cluster runs (``harness.baremetal_operator.start_metal3``): Metal3's
  baremetal-operator built from source with its own CRDs and validating
  webhooks (without its HostClaim dialect: the collection installs the
  proposal's), Ironic as Metal3 runs it (HTTP basic auth), sushy-tools BMCs
  (and FakeIPA, which the live-ISO route here does not use);
- the actors: the cluster admin (the owner), the binder and two tenants,
  ``harness.kube.IDENTITIES`` ``admin``, ``binder``, ``tenant-a`` (alice) and
  ``tenant-b`` (bob), each running ansible-playbook with its own kubeconfig;
  the tenants are bound (by the tenant_namespace role) to the aggregated
  tenant ClusterRole in their namespace only;
- the hosts are enrolled with ``host_register`` (backend metal3) from their
  sushy-tools BMCs, given as ``redfish-virtualmedia+http://`` addresses: the
  BareMetalHosts keep that driver, so the operator boots them from virtual
  media (Metal3's Ironic here enables only ``redfish-virtual-media``, not
  ``ipxe``). The live-ISO route has no agent to inspect or clean a host:
  host_register's ``inspection: redfish`` hands the operator what the BMC
  reported over Redfish instead of an agent's inspection, and
  ``automated_cleaning: false`` turns cleaning off (the demo fails if a host
  was inspected);
- the sharing policy is written by the host_pool role and read by the binder:
  the demo never looks at where it is stored;
- the timings come from :class:`Watcher`, the narrator (the admin, reading
  only), which lists the hosts and claims every half second: per claim from the
  change that asked for the deployment (the claim's image seen) to the host's
  ``provisioned`` and to the claim's ``Ready``, from the release (the claim's
  deletion seen) to the host back in ``available`` with no consumer, and per
  host the time in each of the operator's states.

:func:`run` starts the services (:class:`Services`, which stops what it started, also on failure), runs the
:class:`Story`'s steps in the order of :meth:`Story.steps` and returns its tables.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import yaml
from harness import baremetal_operator as bmo_harness
from harness import kube as kube_harness
from harness import sushy as sushy_harness
from harness.ansible import VENV_BIN, ansible_env, run_inventory, run_playbook

from .common import PLAYBOOKS, DemoError, Tables, say, seconds
from .metal3_web import WebStep

INFRA = kube_harness.INFRA_NAMESPACE  # the BareMetalHosts' namespace, where the operator runs
HOSTS = {"server-0": "small", "server-1": "large", "server-2": "small"}  # sushy-tools systems of 32, 64, 32 GiB
SHARE = "p-.*"  # the owner's policy: the namespaces whose whole name matches it may claim the hosts
ADMITTED, REFUSED = "p-alice", "bob"
# namespace -> person, identity (harness.kube.IDENTITIES: its kubeconfig), host classes it may claim
TENANTS = {
    ADMITTED: ("alice", "tenant-a", ["small", "large"]),
    REFUSED: ("bob", "tenant-b", ["small"]),
}
CLAIMS = {ADMITTED: {"web-0": "small", "db-0": "large"}, REFUSED: {"batch-0": "small"}}  # claim -> host class
BINDER_INTERVAL = 2  # seconds between the background binder's passes (metal3_bind_claims.yml's default)
TIMEOUT = 300  # seconds a host may take to reach a state
GROUP, VERSION = "metal3.io", "v1alpha1"
REBOOT_ANNOTATION = "reboot.metal3.io"


def plain(value):
    """A value of ``ansible-inventory --list`` output without the ``__ansible_unsafe`` wrapping."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def localhost(name: str, tasks: list[dict]) -> list[dict]:
    return [{"name": name, "hosts": "localhost", "connection": "local", "gather_facts": False, "tasks": tasks}]


class Watcher(threading.Thread):
    """The narrator's eye, as the cluster admin: every half second, each host's provisioning state, power,
    reboot annotation, consumer and error, and each claim's image, readiness, deletion and existence, each
    change with the time it was seen. It only reads."""

    def __init__(self, kube_env, claim_namespaces):
        super().__init__(name="demo-watcher", daemon=True)
        self.kube_env = kube_env
        self.claim_namespaces = list(claim_namespaces)
        self.events: list[tuple[float, str, str, object]] = []  # (time, object, field, value)
        self._last: dict[tuple[str, str], object] = {}
        self._halt = threading.Event()
        self.problem: str | None = None

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=10)

    def _note(self, at: float, key: str, fields: dict) -> None:
        for field, value in fields.items():
            if (key, field) not in self._last or self._last[(key, field)] != value:
                self._last[(key, field)] = value
                self.events.append((at, key, field, value))

    def _look(self, custom, api_exception) -> None:
        at = time.monotonic()
        for host in custom.list_namespaced_custom_object(GROUP, VERSION, INFRA, "baremetalhosts")["items"]:
            status = host.get("status") or {}
            self._note(
                at,
                "host/" + host["metadata"]["name"],
                {
                    "state": (status.get("provisioning") or {}).get("state") or None,
                    "powered": status.get("poweredOn"),
                    "reboot": REBOOT_ANNOTATION in (host["metadata"].get("annotations") or {}),
                    "consumer": (host["spec"].get("consumerRef") or {}).get("name"),
                    "error": status.get("errorMessage") or None,
                },
            )
        for namespace in self.claim_namespaces:
            try:
                claims = custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "hostclaims")["items"]
            except api_exception as exc:
                if exc.status != 404:  # 404: no HostClaim CRD yet
                    raise
                continue
            present = set()
            for claim in claims:
                key = f"claim/{namespace}/{claim['metadata']['name']}"
                present.add(key)
                conditions = {c.get("type"): c for c in (claim.get("status") or {}).get("conditions") or []}
                self._note(
                    at,
                    key,
                    {
                        "exists": True,
                        "image": bool(claim["spec"].get("image")),
                        "ready": (conditions.get("Ready") or {}).get("status") == "True",
                        "deleting": bool(claim["metadata"].get("deletionTimestamp")),
                    },
                )
            for key, field in list(self._last):
                if field == "exists" and key.startswith(f"claim/{namespace}/") and key not in present:
                    self._note(at, key, {"exists": False})

    def run(self) -> None:
        from kubernetes import client
        from kubernetes.client.rest import ApiException

        with self.kube_env.api("admin") as api:
            custom = client.CustomObjectsApi(api)
            while not self._halt.is_set():
                try:
                    self._look(custom, ApiException)
                    self.problem = None
                except Exception as exc:  # keep watching; the steps' own checks fail the demo
                    self.problem = repr(exc)
                self._halt.wait(0.5)

    def when(self, key: str, field: str, value, after: float = 0.0) -> float | None:
        """When ``key``'s ``field`` was first seen taking ``value`` at or after ``after`` (None: not yet)."""
        for at, k, f, v in list(self.events):
            if at >= after and k == key and f == field and v == value:
                return at
        return None

    def now(self, key: str, field: str):
        return self._last.get((key, field))

    def states(self, host: str) -> list[tuple[float, str]]:
        """The host's provisioning states with the time each was first seen, from ``created`` (first listed)."""
        seen: list[tuple[float, str]] = []
        for at, key, field, value in list(self.events):
            if key != f"host/{host}":
                continue
            if not seen:
                seen.append((at, "created"))
            if field == "state" and value and value != seen[-1][1]:
                seen.append((at, value))
        return seen


class BinderLoop:
    """playbooks/metal3_bind_claims.yml as the binder, a pass every few seconds, in the background."""

    def __init__(self, kube_env, workdir: Path):
        workdir.mkdir(parents=True, exist_ok=True)
        self.log = workdir / "metal3_bind_claims-loop.log"
        loop = {"reconcile_until_quiet": False, "reconcile_passes": 100000, "reconcile_interval": BINDER_INTERVAL}
        argv = [
            str(VENV_BIN / "ansible-playbook"),
            "-i",
            "localhost,",
            str(PLAYBOOKS / "metal3_bind_claims.yml"),
            "-e",
            json.dumps(loop),
        ]
        with self.log.open("w") as out:
            self.proc = subprocess.Popen(
                argv,
                env=ansible_env(kube_env.ansible_env("binder"), workdir),
                cwd=str(workdir),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stop() ends it and the module it runs
            )

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        for sig, grace in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
            if self.proc.poll() is not None:
                return
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                continue


class Story:
    """The Metal3 story: each step runs the collection's playbooks with one actor's kubeconfig."""

    def __init__(self, kube_env, stack, watcher: Watcher, workdir: Path):
        self.kube = kube_env
        self.stack = stack
        self.watcher = watcher
        self.workdir = workdir
        self.binder: BinderLoop | None = None
        self.bmc_of = dict(zip(HOSTS, stack.bmcs))
        self.bound: dict[str, str] = {}  # claim -> host
        self.rows: dict[str, dict] = {}  # claim -> table row
        self.enrolled_at = 0.0
        self._runs = 0
        self._lock = threading.Lock()

    # -- running things ---------------------------------------------------------

    def play(
        self,
        plays,
        identity: str,
        extra_vars: dict | None = None,
        inventory: str | None = None,
        env: dict | None = None,
    ):
        """Run a playbook (a path or a list of plays) as ``identity`` (its kubeconfig, or ``env``); fail the demo
        with its output if it fails. Returns the run and its seconds."""
        with self._lock:
            self._runs += 1
            number = self._runs
        label = Path(plays).stem if isinstance(plays, (str, Path)) else "play"
        started = time.monotonic()
        run = run_playbook(
            plays,
            env or self.kube.ansible_env(identity),
            self.workdir / f"{number:02d}-{label}-{identity}",
            extra_vars=extra_vars,
            inventory=inventory,
            timeout=1800,
        )
        if not run.ok:
            raise DemoError(f"{label} as {identity} failed:\n{run.explain()}")
        return run, time.monotonic() - started

    def start_binder(self) -> None:
        self.binder = BinderLoop(self.kube, self.workdir / "binder-loop")

    def stop_binder(self) -> None:
        if self.binder is not None:
            self.binder.stop()

    def wait(self, what: str, predicate, timeout: float = TIMEOUT) -> float:
        """Poll ``predicate()`` (a time, or None) until it gives a time; fail the demo after ``timeout``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = predicate()
            if found is not None:
                return found
            if self.binder is not None and not self.binder.alive():
                raise DemoError(f"{what}: the background binder stopped, see {self.binder.log}")
            time.sleep(0.25)
        detail = f" (watcher: {self.watcher.problem})" if self.watcher.problem else ""
        raise DemoError(
            f"{what}: not seen after {timeout:.0f}s{detail}\n--- baremetal-operator log ---\n{self.stack.log_tail(40)}"
        )

    # -- the steps ----------------------------------------------------------------

    def steps(self) -> list:
        return [
            self.owner,
            self.posture,
            self.claim,
            self.bind,
            self.deploy,
            self.inventory,
            self.reboot,
            self.release,
            self.refused,
            self.deploy_web,
            self.pool,
        ]

    def owner(self) -> None:
        """1. HostClaim support, the servers, the tenants and the sharing policy."""
        self._install()
        self._enrol()
        self._onboard()

    def _install(self) -> None:
        binder_user = {
            "kind": "User",
            "name": kube_harness.IDENTITIES["binder"].user,
            "apiGroup": "rbac.authorization.k8s.io",
        }
        setup = {
            "name": "HostClaim support",
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            "roles": [
                {
                    "role": "baremetal.tenancy.hostclaim_setup",
                    "vars": {
                        "hostclaim_setup_infra_namespace": INFRA,
                        "hostclaim_setup_binder_subjects": [binder_user],
                    },
                }
            ],
        }
        _run, took = self.play([setup], "admin")
        say(
            "owner: installed HostClaim support (role hostclaim_setup: the HostClaim CRD beside the operator's CRDs, "
            f"binder and tenant RBAC) in {took:.1f}s"
        )

    def _enrol(self) -> None:
        self.enrolled_at = time.monotonic()
        _run, took = self.play(
            enrol_play(len(HOSTS)),
            "admin",
            {
                "bmc_hosts": [
                    {
                        "name": name,
                        "address": "redfish-virtualmedia+" + bmc.base_url + bmc.system_id,
                        "username": bmc.username,
                        "password": bmc.password,
                    }
                    for name, bmc in self.bmc_of.items()
                ]
            },
        )
        available = [self.watcher.when(f"host/{name}", "state", "available", after=self.enrolled_at) for name in HOSTS]
        inspected = [name for name in HOSTS if "inspecting" in [state for _at, state in self.watcher.states(name)]]
        if inspected:
            raise DemoError(f"inspected although host_register asked for inspection redfish: {', '.join(inspected)}")
        say(
            f"owner: enrolled {', '.join(HOSTS)} from their sushy-tools BMCs with host_register "
            "(redfish-virtualmedia+http:// addresses: virtual media; inspection redfish: the hardware Redfish reported, "
            "no agent; no automated cleaning); the operator registered them, available after "
            + ", ".join(seconds(at - self.enrolled_at if at else None) for at in available)
            + f" (play {took:.1f}s)"
        )

    def _onboard(self) -> None:
        classes = sorted(set(HOSTS.values()))
        _run, took = self.play(
            PLAYBOOKS / "metal3_onboard_tenants.yml",
            "admin",
            {
                "tenant_namespace_tenants": [
                    {"name": ns, "users": [kube_harness.IDENTITIES[identity].user], "host_classes": allowed}
                    for ns, (_person, identity, allowed) in TENANTS.items()
                ],
                "host_pool_namespace": INFRA,
                "host_pool_hosts": [
                    {"names": [n for n, c in HOSTS.items() if c == cls], "class": cls, "share": {"matches": SHARE}}
                    for cls in classes
                ],
            },
        )
        say(
            "owner: onboarded "
            + ", ".join(
                f"{ns} for {person} (classes {', '.join(allowed)})" for ns, (person, _i, allowed) in TENANTS.items()
            )
            + " (role tenant_namespace), classified "
            + ", ".join(" and ".join(n for n in HOSTS if HOSTS[n] == c) + f" {c}" for c in classes)
            + f" and shared every host with the namespaces matching {SHARE} (role host_pool) in {took:.1f}s"
        )

    def posture(self) -> None:
        """1b. The owner checks the cluster's tenancy posture (tenancy_posture, as a scheduled job would)."""
        check = {
            "name": "Tenancy posture",
            "baremetal.tenancy.tenancy_posture": {"flux_controllers": [], "fail_on_deviation": True},
            "register": "posture",
        }
        run, took = self.play(localhost("Tenancy posture", [check]), "admin")
        result = run.result("Tenancy posture")
        say(
            f"owner: tenancy posture: {len(result['deviations'])} deviations in tenants "
            f"{', '.join(result['tenants'])} (quota, default-deny NetworkPolicy, Pod Security, bindings of "
            f"{', '.join(result['required_policies'])}) and every host's sharing policy; not served here: "
            f"{', '.join(result['not_served']) or 'nothing'} (module tenancy_posture, {took:.1f}s)"
        )

    def claim(self) -> None:
        """2. Both tenants claim hosts by selector, at the same time."""

        def claim_as(namespace: str):
            return self.play(
                PLAYBOOKS / "metal3_claim_hosts.yml",
                TENANTS[namespace][1],
                {
                    "claim_namespace": namespace,
                    "claim_hosts": [
                        {"name": name, "host_selector": {"matchLabels": {"infra-kind": cls}}, "online": False}
                        for name, cls in CLAIMS[namespace].items()
                    ],
                },
            )

        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            futures = {ns: pool.submit(claim_as, ns) for ns in TENANTS}
            for ns, future in futures.items():
                _run, took = future.result()
                say(
                    f"{TENANTS[ns][0]}: claimed "
                    + ", ".join(f"{name} (infra-kind={cls})" for name, cls in CLAIMS[ns].items())
                    + f" in namespace {ns} (metal3_claim_hosts.yml) in {took:.1f}s"
                )

    def bind(self) -> None:
        """3. The binder binds; then it keeps running in the background."""
        run, took = self.play(PLAYBOOKS / "metal3_bind_claims.yml", "binder")
        last_pass = run.result("Bind, sync and release until a pass changes nothing")
        actions = {(c["namespace"], c["name"]): c for c in last_pass["claims"]}
        for ns, claims in CLAIMS.items():
            for name in claims:
                action = actions.get((ns, name)) or {}
                if ns == ADMITTED and not action.get("host"):
                    raise DemoError(f"{ns}/{name} was not bound: {action.get('reason')}: {action.get('message')}")
                if ns == REFUSED and (action.get("host") or action.get("action") != "pending"):
                    raise DemoError(f"{ns}/{name} should stay pending; the binder says {action}")
                if action.get("host"):
                    self.bound[name] = action["host"]
        pending = [actions[(REFUSED, name)] for name in CLAIMS[REFUSED]]
        say(
            "binder: bound "
            + ", ".join(f"{ADMITTED}/{name} -> {host}" for name, host in self.bound.items())
            + "; "
            + ", ".join(f"{REFUSED}/{a['name']} pending ({a['reason']})" for a in pending)
            + f" (metal3_bind_claims.yml, {last_pass.get('attempts', 1)} passes, {took:.1f}s)"
        )
        self.start_binder()
        say(f"binder: metal3_bind_claims.yml now runs in the background, a pass every {BINDER_INTERVAL}s")

    def deploy(self) -> None:
        """4. The admitted tenant's claims get a live ISO, user-data Secrets and online: true."""
        person, identity, _classes = TENANTS[ADMITTED]
        secrets = {
            "name": "Write the user-data Secrets",
            "kubernetes.core.k8s": {
                "namespace": "{{ claim_namespace }}",
                "definition": {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": "{{ item.user_data_secret }}"},
                    "stringData": {"userData": "{{ item.cloud_config }}"},
                },
            },
            "loop": "{{ claim_hosts }}",
            "loop_control": {"label": "{{ item.user_data_secret }}"},
        }
        started = time.monotonic()
        run, took = self.play(
            [
                *localhost("User-data Secrets", [secrets]),
                {"import_playbook": "baremetal.tenancy.metal3_claim_hosts", "vars": {"claim_wait": False}},
                {
                    "import_playbook": "baremetal.tenancy.metal3_claim_hosts",
                    "vars": {"claim_wait": True, "claim_wait_for": "ready", "claim_wait_timeout": 2 * TIMEOUT},
                },
            ],
            identity,
            {
                "claim_namespace": ADMITTED,
                "claim_hosts": [
                    {
                        "name": name,
                        "image": bmo_harness.live_iso_image(self.stack.live_iso_url),
                        "user_data_secret": f"{name}-user-data",
                        "cloud_config": f"#cloud-config\nhostname: {name}\n",
                        "online": True,
                    }
                    for name in CLAIMS[ADMITTED]
                ],
            },
        )
        views = {r["claim"]["name"]: r["claim"] for r in run.result("Create or update the claims")["results"]}
        for name, host in self.bound.items():
            view = views[name]
            if not (view["ready"] and view["provisioning_state"] == "provisioned" and view["powered_on"]):
                raise DemoError(f"{ADMITTED}/{name} is not ready: {view}")
            status, system = self.stack.sushy.request("GET", self.bmc_of[host].system_id)
            if status != 200 or system.get("PowerState") != "On":
                raise DemoError(f"{host}'s BMC answers {status}, power {system.get('PowerState')}: not powered on")
            key = f"claim/{ADMITTED}/{name}"
            asked = self.watcher.when(key, "image", True, after=started)
            provisioned = self.watcher.when(f"host/{host}", "state", "provisioned", after=started)
            ready = self.watcher.when(key, "ready", True, after=started)
            self.rows[name] = {
                "tenant": f"{person} ({ADMITTED})",
                "claim": name,
                "host": host,
                "state": "provisioned",
                "provisioned_s": provisioned - asked if asked and provisioned else None,
                "ready_s": ready - asked if asked and ready else None,
            }
        say(
            f"{person}: gave {', '.join(self.rows)} a live ISO, a user-data Secret and online: true; the operator "
            "provisioned and powered "
            + ", ".join(
                f"{r['host']} in {seconds(r['provisioned_s'])} (claim ready in {seconds(r['ready_s'])})"
                for r in self.rows.values()
            )
            + f"; the BMCs say On (metal3_claim_hosts.yml twice, the second waiting: {took:.1f}s)"
        )

    def inventory(self) -> None:
        """5. Each tenant's claimed_hosts inventory, and a play against its hosts."""
        for ns, (person, identity, _classes) in TENANTS.items():
            source = self.workdir / f"{person}.claimed_hosts.yml"
            source.write_text(
                yaml.safe_dump(
                    {
                        "plugin": "baremetal.tenancy.claimed_hosts",
                        "backend": "metal3",
                        "namespaces": [ns],
                        "compose": {"ansible_connection": "'local'"},
                    }
                )
            )
            started = time.monotonic()
            listing = run_inventory(source, self.kube.ansible_env(identity), self.workdir)
            if listing.returncode != 0:
                raise DemoError(
                    f"ansible-inventory as {identity} failed:\n{listing.stdout[-3000:]}{listing.stderr[-3000:]}"
                )
            data = plain(json.loads(listing.stdout))
            listed = sorted((data.get("claimed_hosts") or {}).get("hosts") or [])
            hostvars = (data.get("_meta") or {}).get("hostvars") or {}
            expected = sorted(name for name in CLAIMS[ns] if name in self.bound)
            if listed != expected:
                raise DemoError(f"{person}'s inventory lists {listed}, expected {expected}")
            tasks = [
                {"name": "Reach the host", "ansible.builtin.ping": {}},
                {
                    "name": "Say where it runs",
                    "ansible.builtin.debug": {"msg": "{{ inventory_hostname }} runs on {{ tenancy_host }}"},
                },
            ]
            run, _took = self.play(
                [{"name": "My hosts", "hosts": "claimed_hosts", "gather_facts": False, "tasks": tasks}],
                identity,
                inventory=str(source),
            )
            ran_on = sorted((run.report or {}).get("stats") or {})
            if ran_on != expected:
                raise DemoError(f"{person}'s play ran on {ran_on}, expected {expected}")
            took = time.monotonic() - started
            if listed:
                say(
                    f"{person}: the claimed_hosts inventory lists "
                    + ", ".join(
                        f"{h} (on {hostvars[h]['tenancy_host']}, ready {hostvars[h]['tenancy_ready']})" for h in listed
                    )
                    + f"; a play ran on {len(ran_on)} hosts (ansible_connection=local) in {took:.1f}s"
                )
            else:
                say(f"{person}: the claimed_hosts inventory lists no host; the play matched none ({took:.1f}s)")

    def reboot(self) -> None:
        """6. A reboot through the claim's reserved annotation, done by the operator."""
        person, identity, _classes = TENANTS[ADMITTED]
        name = next(iter(self.bound))
        host = self.bound[name]
        started = time.monotonic()
        self.play(
            localhost(
                "Reboot",
                [
                    {
                        "name": "Reboot my host",
                        "baremetal.tenancy.host_claim": {
                            "namespace": ADMITTED,
                            "name": name,
                            "annotations": {"host.metal3.io/reboot": '{"mode": "hard"}'},
                        },
                    }
                ],
            ),
            identity,
        )
        key = f"host/{host}"
        passed = self.wait(
            f"{REBOOT_ANNOTATION} on {host}", lambda: self.watcher.when(key, "reboot", True, after=started)
        )

        def rebooted() -> float | None:
            cleared = self.watcher.when(key, "reboot", False, after=passed)
            if cleared is None or self.watcher.now(key, "powered") is not True:
                return None
            return max(cleared, self.watcher.when(key, "powered", True, after=passed) or cleared)

        done = self.wait(f"the reboot of {host}", rebooted)
        off = self.watcher.when(key, "powered", False, after=passed)
        say(
            f"{person}: rebooted {name} (host_claim, annotation host.metal3.io/reboot, mode hard): the binder passed "
            f"it to {host} as {REBOOT_ANNOTATION} in {passed - started:.1f}s, the operator "
            + (f"powered it off (+{off - passed:.1f}s) and on again" if off else "power-cycled it")
            + f" and cleared it: done in {done - started:.1f}s"
        )

    def release(self) -> None:
        """7. Release: the hosts are deprovisioned and return to available."""
        person, identity, _classes = TENANTS[ADMITTED]
        started = time.monotonic()
        run, took = self.play(
            PLAYBOOKS / "metal3_release_hosts.yml",
            identity,
            {
                "claim_namespace": ADMITTED,
                "release_claims": list(CLAIMS[ADMITTED]),
                "release_wait_timeout": 2 * TIMEOUT,
            },
        )
        for item in run.result("Release the claims")["results"]:
            row = self.rows[item["item"]]
            if not item.get("released") or item.get("host") != row["host"]:
                raise DemoError(f"the release of {ADMITTED}/{item['item']} says {item}")
            key, host = f"claim/{ADMITTED}/{item['item']}", f"host/{row['host']}"
            asked = self.watcher.when(key, "deleting", True, after=started) or self.watcher.when(
                key, "exists", False, after=started
            )
            available = self.watcher.when(host, "state", "available", after=asked or started)
            freed = self.watcher.when(host, "consumer", None, after=asked or started)
            if not (available and freed):
                raise DemoError(f"{row['host']} did not come back: state {self.watcher.now(host, 'state')}")
            row["state"] = "released"
            row["released_s"] = max(available, freed) - asked if asked else None
        say(
            f"{person}: released "
            + ", ".join(
                f"{name} ({r['host']} available {seconds(r.get('released_s'))} later)" for name, r in self.rows.items()
            )
            + f": the binder had the operator deprovision them, then let them go (metal3_release_hosts.yml, {took:.1f}s)"
        )

    def refused(self) -> None:
        """8. The refused namespace's claim stays pending; its reason; bob withdraws it."""
        person, identity, _classes = TENANTS[REFUSED]
        run, _took = self.play(
            localhost(
                "My claims", [{"name": "Read my claims", "baremetal.tenancy.host_claim_info": {"namespace": REFUSED}}]
            ),
            identity,
        )
        free = [n for n in HOSTS if self.watcher.now(f"host/{n}", "state") == "available"]
        for view in run.result("Read my claims")["claims"]:
            condition = next((c for c in view["conditions"] if c.get("type") == "AssociateBMH"), {})
            if view["host"] or view["associated"]:
                raise DemoError(f"{REFUSED}/{view['name']} got a host: {view}")
            say(
                f"{person}: {view['name']} is still pending with {len(free)} hosts available: "
                f"{condition.get('reason')}: {condition.get('message')}"
            )
            self.rows[view["name"]] = {
                "tenant": f"{person} ({REFUSED})",
                "claim": view["name"],
                "host": "-",
                "state": f"pending ({condition.get('reason')}), withdrawn",
            }
        _run, took = self.play(
            PLAYBOOKS / "metal3_release_hosts.yml",
            identity,
            {"claim_namespace": REFUSED, "release_claims": list(CLAIMS[REFUSED]), "release_wait_timeout": TIMEOUT},
        )
        say(f"{person}: withdrew {', '.join(CLAIMS[REFUSED])} (metal3_release_hosts.yml) in {took:.1f}s")

    def deploy_web(self) -> None:
        """9. alice's examples/deploy_web.yml over SSH on test-bed machines (scripts/demo/metal3_web.py)."""
        WebStep(self).run()

    def pool(self) -> None:
        """The end: every host available and bound to nothing, no claim left."""
        from kubernetes import client

        self.stop_binder()
        with self.kube.api("admin") as api:
            custom = client.CustomObjectsApi(api)
            hosts = custom.list_namespaced_custom_object(GROUP, VERSION, INFRA, "baremetalhosts")["items"]
            left = [
                f"{ns}/{c['metadata']['name']}"
                for ns in TENANTS
                for c in custom.list_namespaced_custom_object(GROUP, VERSION, ns, "hostclaims")["items"]
            ]
        pool = {
            h["metadata"]["name"]: (
                ((h.get("status") or {}).get("provisioning") or {}).get("state"),
                (h["spec"].get("consumerRef") or {}).get("name"),
            )
            for h in hosts
        }
        described = ", ".join(
            f"{n}: {state}" + (f" (bound to {consumer})" if consumer else "")
            for n, (state, consumer) in sorted(pool.items())
        )
        if sorted(pool) != sorted(HOSTS) or any(state != "available" or consumer for state, consumer in pool.values()):
            raise DemoError(f"the pool is not back: {described}")
        if left:
            raise DemoError(f"claims left: {', '.join(left)}")
        say(f"pool: {described}; no claim left")

    def tables(self) -> Tables:
        headers = ["tenant", "claim", "host", "state", "claim->provisioned", "claim->ready", "release->available"]
        lines = [
            [
                r["tenant"],
                r["claim"],
                r["host"],
                r["state"],
                seconds(r.get("provisioned_s")),
                seconds(r.get("ready_s")),
                seconds(r.get("released_s")),
            ]
            for r in self.rows.values()
        ]
        states = []
        for host in HOSTS:
            seen = self.watcher.states(host)
            spent = [f"{state} {later - at:.1f}s" for (at, state), (later, _next) in zip(seen, seen[1:])]
            states.append([host, " -> ".join([*spent, seen[-1][1]]) if seen else "-"])
        return [(headers, lines), (["host", "baremetal-operator states, time in each"], states)]


def enrol_play(count: int) -> list[dict]:
    """The owner registers the servers from their BMCs (host_register; the live-ISO route: hardware from Redfish,
    no agent inspection, no automated cleaning), then waits until the operator has registered them."""
    registered = (
        "enrolled.resources | map(attribute='status', default={}) | map(attribute='provisioning', default={})"
        f" | map(attribute='state', default='') | select('equalto', 'available') | list | length == {count}"
    )
    return localhost(
        "Enrol the servers",
        [
            {
                "name": "BareMetalHosts and their BMC credentials, from the BMCs",
                "baremetal.tenancy.host_register": {
                    "backend": "metal3",
                    "namespace": INFRA,
                    "hosts": "{{ bmc_hosts }}",
                    "inspection": "redfish",
                    "automated_cleaning": False,
                    "allow_partial": False,
                },
            },
            {
                "name": "Wait until the operator has registered them",
                "kubernetes.core.k8s_info": {
                    "api_version": f"{GROUP}/{VERSION}",
                    "kind": "BareMetalHost",
                    "namespace": INFRA,
                },
                "register": "enrolled",
                "until": registered,
                "retries": TIMEOUT,
                "delay": 1,
            },
        ],
    )


@dataclasses.dataclass
class Services:
    """What the half starts: Kubernetes, then Ironic, sushy-tools and baremetal-operator, and the narrator's
    :class:`Watcher`. :meth:`stop` stops whatever of it started."""

    kube_env: object = None
    stack: object = None
    watcher: Watcher | None = None

    def start(self, workdir: Path) -> None:
        from kubernetes import client

        self.kube_env = kube_harness.KubeEnv(workdir / "kube")
        self.kube_env.start()
        with self.kube_env.api("admin") as api:  # the operator's namespace, as a Metal3 install has it
            client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=INFRA)))
        self.stack = bmo_harness.start_metal3(
            self.kube_env, workdir / "metal3", systems=sushy_harness.default_systems(len(HOSTS))
        )
        for service in [*self.kube_env.services, *self.stack.services]:
            say(f"  {service.summary()}")
        self.watcher = Watcher(self.kube_env, TENANTS)
        self.watcher.start()

    def stop(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()
        say("stopping the services")
        if self.stack is not None:
            self.stack.stop()
        if self.kube_env is not None:
            self.kube_env.stop()


def missing() -> str | None:
    """What the half needs and is not there (a message), else None: `make kube` and `make bmo`'s builds."""
    try:
        kube_harness.require_binaries()
        bmo_harness.require_bmo()
    except (kube_harness.KubeBinariesMissing, bmo_harness.BmoMissing) as exc:
        return f"{exc}"
    return None


def run(args, workdir: Path) -> Tables:
    """Kubernetes, Ironic, sushy-tools and the real baremetal-operator; the HostClaim story; its tables."""
    workdir.mkdir(parents=True, exist_ok=True)
    say(
        "starting etcd, kube-apiserver and kube-controller-manager, then Ironic, sushy-tools and baremetal-operator ..."
    )
    services = Services()
    story = None
    try:
        services.start(workdir)
        story = Story(services.kube_env, services.stack, services.watcher, workdir)
        for step in story.steps():
            step()
        return story.tables()
    finally:
        if story is not None:
            story.stop_binder()
        services.stop()
