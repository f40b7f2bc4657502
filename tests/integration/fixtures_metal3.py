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
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from harness import kube
from harness.ansible import PlaybookRun, localhost_play, run_playbook
from harness.bmo import PlaysBareMetalOperator
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
    ) -> dict:
        """A BareMetalHost with its BMC Secret, registered (status written by the plays-BMO helper).

        ``policy`` is the sharing policy, written as host_share writes it: the annotation
        ``baremetal.tenancy/host-claim-namespaces`` as compact JSON (a string is written as it is, valid or
        not). ``legacy_policy`` is written where earlier releases kept it, ``spec.hostClaimNamespaces``.
        The BMC user and password default to ``bmcuser-<name>`` and ``bmc-password-<name>``.
        """
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
                "bmc": {"address": self.bmc_address(name), "credentialsName": secret},
            }
            annotations = dict(annotations or {})
            if policy is not None:
                annotations[SHARING_ANNOTATION] = policy if isinstance(policy, str) else sharing_value(policy)
            if legacy_policy is not None:
                spec["hostClaimNamespaces"] = legacy_policy
            body = {
                "apiVersion": "%s/%s" % (GROUP, VERSION),
                "kind": "BareMetalHost",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "labels": labels or {},
                    "annotations": annotations,
                },
                "spec": spec,
            }
            client.CustomObjectsApi(api).create_namespaced_custom_object(
                GROUP, VERSION, namespace, "baremetalhosts", body
            )
            operator = PlaysBareMetalOperator(api, [namespace])
            return operator.register(namespace, name, state=state, index=index, hostname=hostname)

    @staticmethod
    def bmc_address(name: str) -> str:
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
            values += [
                address,
                address.split("://")[1].split("/")[0],
                "%s-bmc-secret" % name,
                "bmcuser-%s" % name,
                "bmc-password-%s" % name,
            ]
        return values

    def bmo(self, api, namespaces: Sequence[str]) -> PlaysBareMetalOperator:
        return PlaysBareMetalOperator(api, list(namespaces))

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

    def delete_hosts(self, namespace: str) -> None:
        with self.api() as api:
            custom = client.CustomObjectsApi(api)
            for host in custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "baremetalhosts")["items"]:
                _ignore(
                    404,
                    custom.delete_namespaced_custom_object,
                    GROUP,
                    VERSION,
                    namespace,
                    "baremetalhosts",
                    host["metadata"]["name"],
                )


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


@pytest.fixture(scope="session")
def metal3_env(kube_env, tmp_path_factory):
    """HostClaim CRDs, binder and tenant RBAC installed by the hostclaim_setup role (run twice)."""
    workdir = tmp_path_factory.mktemp("metal3")
    env_vars = {"hostclaim_setup_binder_subjects": BINDER_SUBJECTS}
    runs = []
    for attempt in range(2):
        run = run_playbook(setup_play(env_vars), kube_env.ansible_env("admin"), workdir / ("setup-%d" % attempt))
        assert run.ok, run.explain()
        runs.append(run)
    with kube_env.api("admin") as api:
        rbac = client.RbacAuthorizationV1Api(api)
        _ignore(404, rbac.delete_cluster_role_binding, "baremetal-binder-first-slice")
        deadline = time.monotonic() + 60
        while not (rbac.read_cluster_role(TENANT_CLUSTERROLE).rules or []):
            assert time.monotonic() < deadline, "the aggregated tenant ClusterRole got no rules"
            time.sleep(0.2)
    return Metal3Env(kube_env, workdir, runs)


changed_count = _changed_count
