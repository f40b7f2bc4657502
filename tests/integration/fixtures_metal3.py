"""pytest plugin: HostClaim support on the session's Kubernetes control plane.

Loaded from ``tests/integration/conftest.py`` (``pytest_plugins``).

Session fixture ``metal3_env`` (a :class:`Metal3Env`):

- runs the ``baremetal.tenancy.hostclaim_setup`` role through
  ``ansible-playbook`` as the cluster admin, twice (the second run must
  change nothing), with the binder user as an extra subject of the binder
  ClusterRole;
- takes away the binder user's first-slice ``cluster-admin`` binding, so the
  binder runs with exactly the role's ClusterRole;
- waits until the aggregated tenant ClusterRole has its rules.

Tests create their own tenant namespaces with :meth:`Metal3Env.tenant_namespace`
(the tenant user is bound to the aggregated tenant ClusterRole only, never to
``admin``), their own hosts with :meth:`Metal3Env.create_host`, and drive the
modules through ``ansible-playbook`` with :meth:`Metal3Env.playbook`.

Two kinds of Metal3Env:

- ``metal3_env`` (here): a cluster without baremetal-operator, where the role
  installs the collection's own BareMetalHost CRD. ``create_host`` creates the
  object only: nothing reconciles it. The suites here test the binder alone
  and write the status ``available`` on their hosts themselves, as an operator
  would (eda/test_eda_binder.py, faults/test_faults_binder_kill.py,
  faults/test_faults_service_restarts.py, faults/test_faults_bad_input.py,
  metal3/test_metal3_relay.py's hardware cluster; bench/latency.py and
  bench/bind.py too): a real operator registers each host through Ironic first
  (8-16 s a host here), which their tens of hosts cannot afford. The rest of the
  Metal3 suites run on ``metal3_bmo_env``; test_host_share's migration of
  ``spec.hostClaimNamespaces`` (a field only this CRD keeps) runs here too.
- ``metal3_bmo_env`` (``fixtures_bmo``): the same setup beside Metal3's real
  baremetal-operator (one stack per session). ``create_host`` creates a real
  BareMetalHost on a sushy-tools BMC of its own and waits until BMO reports it
  ``available``; tests wait for BMO's states with :meth:`Metal3Env.wait_host`
  and never write a host's status. Only hosts in the namespaces BMO watches
  (``fixtures_bmo.BMO_NAMESPACES``) can be created this way.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import secrets
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from harness import baremetal_operator, kube
from harness.ansible import PlaybookRun, localhost_play, run_playbook
from harness.kube import call_ignoring as _ignore
from kubernetes import client

TENANT_CLUSTERROLE = "baremetal-tenancy-tenant"
BINDER_CLUSTERROLE = "hostclaim-binder"
GROUP, VERSION = "metal3.io", "v1alpha1"
MERGE = "application/merge-patch+json"
#: where a host's sharing policy lives (compact JSON), as host_share writes it and host_bind reads it
SHARING_ANNOTATION = "baremetal.tenancy/host-claim-namespaces"


def sharing_value(policy: dict) -> str:
    """The annotation value of a sharing policy, as host_share writes it: compact JSON, keys sorted."""
    return json.dumps(policy, sort_keys=True, separators=(",", ":"))


def sharing(host: dict) -> Any:
    """The sharing policy of a BareMetalHost (its annotation, decoded), or ``None`` without one."""
    value = (host["metadata"].get("annotations") or {}).get(SHARING_ANNOTATION)
    return None if value is None else json.loads(value)


@dataclasses.dataclass
class Metal3Env:
    kube: kube.KubeEnv
    workdir: Path
    setup_runs: list[PlaybookRun]
    _count: int = 0
    # The real baremetal-operator stack and its BMC pool (metal3_bmo_env); None: no operator runs.
    operator: baremetal_operator.Metal3 | None = None
    pool: baremetal_operator.BmcPool | None = None
    watched: tuple[str, ...] = ()

    # -- running Ansible -------------------------------------------------------
    def playbook(
        self, identity: str, tasks: Sequence[dict], *, play_vars: dict | None = None, **kwargs: Any
    ) -> PlaybookRun:
        """Run ``tasks`` on localhost with ``identity``'s kubeconfig (``K8S_AUTH_KUBECONFIG``)."""
        self._count += 1
        workdir = self.workdir / ("run-%03d" % self._count)
        return run_playbook(localhost_play(tasks, play_vars), self.kube.ansible_env(identity), workdir, **kwargs)

    def steps(self, steps: Sequence[dict], *, identity: str = "tenant-a", **kwargs: Any) -> PlaybookRun:
        """One playbook whose tasks run as different identities.

        Each step is a task dict with an extra key ``as`` (an identity): its
        kubeconfig is passed as the module's ``kubeconfig`` option, as a user
        holding several kubeconfigs would. Steps without ``as`` run with
        ``identity``'s kubeconfig (``K8S_AUTH_KUBECONFIG``).
        """
        tasks = []
        for step in steps:
            task = dict(step)
            who = task.pop("as", None)
            if who:
                module = next(key for key in task if "." in key and key.count(".") >= 2)
                task[module] = dict(task[module] or {}, kubeconfig=str(self.kube.kubeconfig(who)))
            tasks.append(task)
        return self.playbook(identity, tasks, **kwargs)

    def bind(
        self, namespaces: Sequence[str] | None = None, *, check: bool = False, diff: bool = False, **options: Any
    ) -> dict:
        """One ``host_bind`` pass as the binder identity; returns the task result (asserts it did not fail)."""
        args = dict(options)
        if namespaces:
            args["namespaces"] = list(namespaces)
        run = self.playbook("binder", [{"name": "bind", "baremetal.tenancy.host_bind": args}], check=check, diff=diff)
        result = run.result("bind")
        assert not result.get("failed"), run.explain()
        return result

    # -- objects, as the cluster admin ----------------------------------------------
    def api(self, identity: str = "admin"):
        return self.kube.api(identity)

    def tenant_namespace(self, namespace: str, identity: str | None, labels: dict | None = None) -> None:
        """Create ``namespace`` and bind ``identity``'s user to the aggregated tenant ClusterRole there."""
        with self.api() as api:
            core = client.CoreV1Api(api)
            _ignore(
                409,
                core.create_namespace,
                client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace, labels=labels or {})),
            )
            if identity:
                user = kube.IDENTITIES[identity].user
                binding = client.V1RoleBinding(
                    metadata=client.V1ObjectMeta(name="baremetal-tenant", namespace=namespace),
                    role_ref=client.V1RoleRef(
                        api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=TENANT_CLUSTERROLE
                    ),
                    subjects=[client.RbacV1Subject(api_group="rbac.authorization.k8s.io", kind="User", name=user)],
                )
                _ignore(409, client.RbacAuthorizationV1Api(api).create_namespaced_role_binding, namespace, binding)

    def create_host(
        self,
        namespace: str,
        name: str,
        *,
        labels: dict | None = None,
        policy: dict | str | None = None,
        legacy_policy: dict | None = None,
        index: int = 1,
        state: str = "available",
        annotations: dict | None = None,
        hostname: str | None = None,
        username: str | None = None,
        password: str | None = None,
        wait: bool = True,
        nics: list[dict] | None = None,
        bmc_address: str | None = None,
    ) -> dict:
        """A BareMetalHost with its BMC Secret.

        Without an operator: the object only (no status); the BMC user and
        password are ``bmcuser-<name>`` and ``bmc-password-<name>``, its BMC
        address one that leads nowhere, unless given (``bmc_address``,
        ``username``, ``password``: a BMC that answers, such as a sushy-tools
        system).
        Real operator: a sushy-tools system and BMC account of the pool, live-ISO
        route (inspection disabled, no cleaning); what inspection would find
        (NICs of ``index``, ``hostname``) comes through BMO's
        ``inspect.metal3.io/hardwaredetails`` annotation; ``wait``: until BMO
        reports ``available`` (else see :meth:`wait_hosts`). ``nics``: what inspection
        reports instead of the NICs of ``index``. Explicit ``username``/``password``: a BMC
        of its own (:meth:`reserve_bmc`).
        ``policy`` is the sharing policy, written as host_share writes it: the annotation
        ``baremetal.tenancy/host-claim-namespaces`` as compact JSON (a string is written as it is, valid or
        not). ``legacy_policy`` is written where earlier releases kept it, ``spec.hostClaimNamespaces``.
        """
        if self.operator is not None:
            assert bmc_address is None, "with the operator a host's BMC comes from the pool (reserve_bmc)"
            return self._create_real_host(
                namespace,
                name,
                labels=labels,
                policy=policy,
                legacy_policy=legacy_policy,
                index=index,
                state=state,
                annotations=annotations,
                hostname=hostname,
                username=username,
                password=password,
                wait=wait,
                nics=nics,
            )
        assert nics is None and state == "available", "without an operator a host is an object only"
        with self.api() as api:
            core = client.CoreV1Api(api)
            secret = "%s-bmc-secret" % name
            _ignore(
                409,
                core.create_namespaced_secret,
                namespace,
                client.V1Secret(
                    metadata=client.V1ObjectMeta(name=secret, namespace=namespace),
                    string_data={
                        "username": username or "bmcuser-%s" % name,
                        "password": password or "bmc-password-%s" % name,
                    },
                ),
            )
            spec = {
                "online": False,
                "bootMACAddress": "52:54:00:10:%02x:%02x" % (index // 256, index % 256),
                "bmc": {"address": bmc_address or self.bmc_address(name), "credentialsName": secret},
            }
            body = self._host_body(namespace, name, spec, labels, annotations, policy, legacy_policy)
            return client.CustomObjectsApi(api).create_namespaced_custom_object(
                GROUP, VERSION, namespace, "baremetalhosts", body
            )

    @staticmethod
    def _host_body(
        namespace: str,
        name: str,
        spec: dict,
        labels: dict | None,
        annotations: dict | None,
        policy: dict | str | None,
        legacy_policy: dict | None,
    ) -> dict:
        annotations = dict(annotations or {})
        if policy is not None:
            annotations[SHARING_ANNOTATION] = policy if isinstance(policy, str) else sharing_value(policy)
        if legacy_policy is not None:
            spec["hostClaimNamespaces"] = legacy_policy
        return {
            "apiVersion": "%s/%s" % (GROUP, VERSION),
            "kind": "BareMetalHost",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": labels or {},
                "annotations": annotations or {},
            },
            "spec": spec,
        }

    def reserve_bmc(self, name: str, username: str, password: str) -> None:
        """Give host ``name`` (before its :meth:`bmc_address` is asked) a BMC of its own with these credentials."""
        if self.pool is not None:
            self.pool.dedicated(name, username, password)

    def _create_real_host(
        self,
        namespace,
        name,
        *,
        labels,
        policy,
        legacy_policy,
        index,
        state,
        annotations,
        hostname,
        username,
        password,
        wait,
        nics,
    ) -> dict:
        assert namespace in self.watched, "BMO does not watch %s (fixtures_bmo.BMO_NAMESPACES)" % namespace
        assert state == "available", "real hosts are created available (then provisioned by the test)"
        if username or password:
            slot = self.pool.dedicated(name, username, password)
        else:
            slot = self.pool.slot(name)
        secret = "%s-bmc-secret" % name
        annotations = dict(annotations or {})
        annotations["inspect.metal3.io/hardwaredetails"] = json.dumps(
            baremetal_operator.hardware_details(index, hostname, nics)
        )
        spec = {
            "online": False,
            "bootMACAddress": baremetal_operator.boot_mac(index),
            "bootMode": "UEFI",
            "automatedCleaningMode": "disabled",
            # the field, not the annotation: inspect.metal3.io stays free for re-inspection requests
            "inspectionMode": "disabled",
            "bmc": {"address": slot.address, "credentialsName": secret, "disableCertificateVerification": True},
        }
        body = self._host_body(namespace, name, spec, labels, annotations, policy, legacy_policy)
        with self.api() as api:
            _ignore(
                409,
                client.CoreV1Api(api).create_namespaced_secret,
                namespace,
                client.V1Secret(
                    metadata=client.V1ObjectMeta(name=secret, namespace=namespace),
                    string_data={"username": slot.username, "password": slot.password},
                ),
            )
            created = client.CustomObjectsApi(api).create_namespaced_custom_object(
                GROUP, VERSION, namespace, "baremetalhosts", body
            )
        if not wait:
            return created
        return self.wait_host(namespace, name, state="available")

    def wait_hosts(
        self,
        namespace: str,
        names: Sequence[str],
        *,
        state: str | None = None,
        powered: bool | None = None,
        without_annotation: str | None = None,
        hardware: bool | None = None,
        error_type: str | None = None,
        timeout: float = 120,
    ) -> dict[str, dict]:
        """Wait until the real operator has each host in ``state`` (``status.provisioning.state``),
        powered on/off (``status.poweredOn``), without ``without_annotation`` (BMO removes
        ``reboot.metal3.io`` once it power cycled, ``inspect.metal3.io`` once inspection started).
        Fails with BMO's and Ironic's log tails."""
        assert self.operator is not None, "wait_hosts needs the real operator (metal3_bmo_env)"

        def ready(host):
            if host is None:
                return False
            status = host.get("status") or {}
            if state is not None and baremetal_operator.host_state(host) != state:
                return False
            if powered is not None and status.get("poweredOn") is not powered:
                return False
            if hardware and not (status.get("hardware") or {}).get("nics"):
                return False
            if error_type is not None and status.get("errorType") != error_type:
                return False
            return not (without_annotation and without_annotation in (host["metadata"].get("annotations") or {}))

        what = ", ".join(
            part
            for part in (
                state,
                None if powered is None else ("powered on" if powered else "powered off"),
                without_annotation and "without " + without_annotation,
                error_type and "in " + error_type,
            )
            if part
        )
        with self.api() as api:
            return baremetal_operator.wait_hosts(api, self.operator, namespace, names, ready, what, timeout)

    def wait_host(self, namespace: str, name: str, **conditions: Any) -> dict:
        return self.wait_hosts(namespace, [name], **conditions)[name]

    @contextlib.contextmanager
    def bmc_password_changed(self, name: str):
        """While the block runs, the host's BMC refuses the credentials in its Secret (its account's
        password changed behind the operator's back); restored afterwards."""
        slot = self.pool.slot(name)
        emulator = self.pool.emulator_of(name)
        accounts = [a for a in emulator.accounts() if a["UserName"] == slot.username]
        assert accounts, "no BMC account %s for host %s" % (slot.username, name)
        account = accounts[0]

        def set_password(password):
            status, body = emulator.request("PATCH", account["@odata.id"], body={"Password": password})
            assert status in (200, 204), body

        set_password("Changed-" + secrets.token_hex(4))
        try:
            yield
        finally:
            set_password(slot.password)

    def power_offs(self, namespace: str, name: str) -> int:
        """How many times Ironic powered the host's node off (a reboot by the operator is one more)."""
        node = ((self.host(namespace, name).get("status") or {}).get("provisioning") or {}).get("ID")
        assert node, "%s/%s has no Ironic node yet" % (namespace, name)
        return self.operator.ironic_log_count(node, "Successfully set node", "power state to power off")

    def bmc_address(self, name: str) -> str:
        if self.pool is not None:
            return self.pool.slot(name).address
        return "redfish-virtualmedia+https://10.201.%d.%d/redfish/v1/Systems/%s" % (
            sum(name.encode()) % 250,
            len(name),
            name,
        )

    def bmc_values(self, namespace: str, names: Sequence[str]) -> list[str]:
        """Every BMC value of these hosts (address, its host part, credentials Secret name, user, password)."""
        values = []
        for name in names:
            address = self.bmc_address(name)
            if self.pool is not None:
                slot = self.pool.slot(name)
                values += [address, address.split("://")[1].split("/")[0], "%s-bmc-secret" % name]
                values += [slot.username, slot.password, slot.bmc.uuid]
                continue
            values += [
                address,
                address.split("://")[1].split("/")[0],
                "%s-bmc-secret" % name,
                "bmcuser-%s" % name,
                "bmc-password-%s" % name,
            ]
        return values

    def bmc_username(self, name: str) -> str:
        """The BMC user name in the host's credentials Secret."""
        return self.pool.slot(name).username if self.pool is not None else "bmcuser-%s" % name

    def host(self, namespace: str, name: str) -> dict:
        with self.api() as api:
            return client.CustomObjectsApi(api).get_namespaced_custom_object(
                GROUP, VERSION, namespace, "baremetalhosts", name
            )

    def hosts(self, namespace: str) -> list[dict]:
        with self.api() as api:
            return client.CustomObjectsApi(api).list_namespaced_custom_object(
                GROUP, VERSION, namespace, "baremetalhosts"
            )["items"]

    def claim(self, namespace: str, name: str) -> dict | None:
        with self.api() as api:
            return _ignore(
                404,
                client.CustomObjectsApi(api).get_namespaced_custom_object,
                GROUP,
                VERSION,
                namespace,
                "hostclaims",
                name,
            )

    def claims(self, namespace: str) -> list[dict]:
        with self.api() as api:
            return client.CustomObjectsApi(api).list_namespaced_custom_object(GROUP, VERSION, namespace, "hostclaims")[
                "items"
            ]

    def create_claim(
        self, namespace: str, name: str, spec: dict, identity: str = "admin", labels: dict | None = None
    ) -> dict:
        with self.api(identity) as api:
            body = {
                "apiVersion": "%s/%s" % (GROUP, VERSION),
                "kind": "HostClaim",
                "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
                "spec": spec,
            }
            return client.CustomObjectsApi(api).create_namespaced_custom_object(
                GROUP, VERSION, namespace, "hostclaims", body
            )

    def forget_claims(self, namespace: str) -> None:
        """Delete every claim of ``namespace`` at once (finalizers dropped): test cleanup only."""
        with self.api() as api:
            custom = client.CustomObjectsApi(api)
            for claim in custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "hostclaims")["items"]:
                name = claim["metadata"]["name"]
                _ignore(
                    404,
                    custom.patch_namespaced_custom_object,
                    GROUP,
                    VERSION,
                    namespace,
                    "hostclaims",
                    name,
                    {"metadata": {"finalizers": None}},
                    _content_type=MERGE,
                )
                _ignore(404, custom.delete_namespaced_custom_object, GROUP, VERSION, namespace, "hostclaims", name)

    def delete_hosts(self, namespace: str, names: Sequence[str] | None = None, timeout: float = 180) -> None:
        """Delete the hosts ``names`` (default: every host) of ``namespace``; with the real operator wait
        until BMO let them go (deprovisioned, Ironic node deleted, finalizer removed) and give their BMCs
        back to the pool."""
        with self.api() as api:
            custom = client.CustomObjectsApi(api)
            if names is None:
                names = [
                    h["metadata"]["name"]
                    for h in custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "baremetalhosts")["items"]
                ]
            for name in names:
                _ignore(404, custom.delete_namespaced_custom_object, GROUP, VERSION, namespace, "baremetalhosts", name)
            if self.operator is None:
                return
            baremetal_operator.wait_hosts(api, self.operator, namespace, names, lambda h: h is None, "deleted", timeout)
        for name in names:
            self.pool.release(name)


def _changed_count(run: PlaybookRun) -> int:
    stats = (run.report or {}).get("stats") or {}
    return sum(host.get("changed", 0) for host in stats.values())


def setup_play(extra_vars: dict | None = None) -> list[dict]:
    return [
        {
            "name": "HostClaim support",
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            "vars": dict(extra_vars or {}),
            "roles": [{"role": "baremetal.tenancy.hostclaim_setup"}],
        }
    ]


BINDER_SUBJECTS = [{"kind": "User", "name": kube.IDENTITIES["binder"].user, "apiGroup": "rbac.authorization.k8s.io"}]
#: the role's variables for the session clusters
SETUP_VARS = {"hostclaim_setup_binder_subjects": BINDER_SUBJECTS}


@pytest.fixture(scope="session")
def metal3_env(kube_env, tmp_path_factory):
    """HostClaim CRDs, binder and tenant RBAC installed by the hostclaim_setup role (run once: the second run,
    changing nothing, is test_metal3_setup's, in the one session that reads it)."""
    workdir = tmp_path_factory.mktemp("metal3")
    run = run_playbook(setup_play(SETUP_VARS), kube_env.ansible_env("admin"), workdir / "setup-0")
    assert run.ok, run.explain()
    runs = [run]
    with kube_env.api("admin") as api:
        rbac = client.RbacAuthorizationV1Api(api)
        _ignore(404, rbac.delete_cluster_role_binding, "baremetal-binder-first-slice")
        deadline = time.monotonic() + 60
        while not (rbac.read_cluster_role(TENANT_CLUSTERROLE).rules or []):
            assert time.monotonic() < deadline, "the aggregated tenant ClusterRole got no rules"
            time.sleep(0.2)
    return Metal3Env(kube_env, workdir, runs)


changed_count = _changed_count
