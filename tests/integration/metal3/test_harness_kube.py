"""The Kubernetes harness works, and tenant isolation holds on it.

Runs real etcd + kube-apiserver (RBAC, static tokens) +
kube-controller-manager. Access checks go through ``ansible-playbook`` and
``kubernetes.core.k8s_info``/``k8s`` exactly as a user would run them, with
the identity's kubeconfig in ``K8S_AUTH_KUBECONFIG``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from harness import kube
from kubernetes import client
from kubernetes.client.exceptions import ApiException

BMH_API = {"api_version": "metal3.io/v1alpha1", "kind": "BareMetalHost"}
INFRA = kube.INFRA_NAMESPACE


# --------------------------------------------------------------------------
# Running playbooks
# --------------------------------------------------------------------------


def ansible_playbook_path() -> str:
    """ansible-playbook next to this Python (the venv), else on PATH."""
    candidate = Path(sys.executable).with_name("ansible-playbook")
    if candidate.exists():
        return str(candidate)
    found = shutil.which("ansible-playbook")
    assert found, "ansible-playbook not found"
    return found


def run_probes(tmp_path: Path, env: dict[str, str], probes: dict[str, dict]) -> dict[str, dict]:
    """Run each probe as one task of a localhost playbook; return the results.

    ``probes`` maps a probe name (an identifier) to ``{module: args}``. Every
    task runs with ``ignore_errors`` and is registered; a last task writes all
    registered results to a JSON file, which is returned as a dict.
    """
    results_file = tmp_path / "results.json"
    tasks = []
    for name, task in probes.items():
        tasks.append({"name": name, **task, "register": name, "ignore_errors": True})
    collected = ", ".join(f"'{name}': {name}" for name in probes)
    tasks.append(
        {
            "name": "write results",
            "ansible.builtin.copy": {"content": "{{ {%s} | to_json }}" % collected, "dest": str(results_file)},
        }
    )
    playbook = tmp_path / "probes.yml"
    playbook.write_text(
        yaml.safe_dump(
            [
                {
                    "hosts": "localhost",
                    "connection": "local",
                    "gather_facts": False,
                    # the controller's Python (the venv), which has the kubernetes client
                    "vars": {"ansible_python_interpreter": "{{ ansible_playbook_python }}"},
                    "tasks": tasks,
                }
            ]
        )
    )
    proc = subprocess.run(
        [ansible_playbook_path(), "-i", "localhost,", str(playbook)],
        env={**env, "ANSIBLE_NOCOLOR": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode == 0, f"ansible-playbook failed:\n{proc.stdout}\n{proc.stderr}"
    return json.loads(results_file.read_text())


def names(result: dict) -> list[str]:
    """Object names in a k8s_info result."""
    return sorted(r["metadata"]["name"] for r in result.get("resources", []))


def assert_forbidden(result: dict, user: str = "tenant-a-user") -> None:
    """The task failed because RBAC refused ``user``: HTTP 403 Forbidden."""
    text = json.dumps(result)
    assert result.get("failed"), f"expected the task to fail, got {text[:2000]}"
    msg = str(result.get("msg", ""))
    assert "403" in msg and "Forbidden" in msg, msg[:2000]
    assert "is forbidden: User" in msg and user in msg, msg[:2000]


# --------------------------------------------------------------------------
# Probes
# --------------------------------------------------------------------------


def infra_probes(seed: kube.SeededHost) -> dict[str, dict]:
    """Read the seeded BMH and BMC Secret in the infrastructure namespace."""
    return {
        "list_bmh": {"kubernetes.core.k8s_info": {**BMH_API, "namespace": seed.namespace}},
        "get_bmh": {"kubernetes.core.k8s_info": {**BMH_API, "namespace": seed.namespace, "name": seed.bmh_name}},
        "list_secrets": {"kubernetes.core.k8s_info": {"kind": "Secret", "namespace": seed.namespace}},
        "get_bmc_secret": {
            "kubernetes.core.k8s_info": {"kind": "Secret", "namespace": seed.namespace, "name": seed.secret_name}
        },
    }


def assert_infra_hidden(results: dict[str, dict]) -> None:
    """The tenant-isolation assertion: every infrastructure read is refused."""
    for probe in ("list_bmh", "get_bmh", "list_secrets", "get_bmc_secret"):
        assert_forbidden(results[probe])


def configmap(namespace: str, name: str = "tenant-probe") -> dict:
    return {
        "kubernetes.core.k8s": {
            "state": "present",
            "definition": {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": namespace},
                "data": {"written-by": "tenant-a"},
            },
        }
    }


def own_namespace_probes() -> dict[str, dict]:
    """tenant-a writes and reads in tenant-a, then tries tenant-b."""
    return {
        "write_own": configmap("tenant-a"),
        "read_own": {
            "kubernetes.core.k8s_info": {"kind": "ConfigMap", "namespace": "tenant-a", "name": "tenant-probe"}
        },
        "list_own_secrets": {"kubernetes.core.k8s_info": {"kind": "Secret", "namespace": "tenant-a"}},
        "write_other": configmap("tenant-b"),
        "read_other": {"kubernetes.core.k8s_info": {"kind": "ConfigMap", "namespace": "tenant-b"}},
        "list_other_secrets": {"kubernetes.core.k8s_info": {"kind": "Secret", "namespace": "tenant-b"}},
    }


@pytest.fixture(scope="module")
def tenant_a_results(kube_env, kube_minimal_bmh, tmp_path_factory):
    """One ansible-playbook run as tenant-a with every tenant probe."""
    probes = {**infra_probes(kube_minimal_bmh), **own_namespace_probes()}
    return run_probes(tmp_path_factory.mktemp("tenant-a"), kube_env.ansible_env("tenant-a"), probes)


# --------------------------------------------------------------------------
# Tests: the harness itself
# --------------------------------------------------------------------------


def test_missing_binaries_say_run_make_kube(tmp_path, monkeypatch):
    monkeypatch.setenv("BMT_KUBE_BIN", str(tmp_path))
    with pytest.raises(kube.KubeBinariesMissing, match=r"run `make kube`|Run `make kube`"):
        kube.require_binaries()


def test_services_are_real_pinned_and_on_loopback(kube_env):
    for service in (kube_env.etcd, kube_env.apiserver, kube_env.controller_manager):
        assert service.url.split("//")[1].startswith("127.0.0.1:"), service
        assert service.pid and service.port
    assert kube_env.apiserver.version == kube.kube_version()
    assert kube_env.controller_manager.version == kube.kube_version()
    assert kube_env.etcd.version.startswith("3.6."), kube_env.etcd.version
    with kube_env.api("admin") as admin:
        info = client.VersionApi(admin).get_code()
    assert info.git_version == kube.kube_version()


@pytest.mark.parametrize("identity", ["admin", "binder", "tenant-a", "tenant-b", "tenant-c"])
def test_kubeconfig_per_identity_authenticates_as_that_user(kube_env, identity):
    path = kube_env.kubeconfig(identity)
    assert path.is_file() and oct(path.stat().st_mode & 0o777) == "0o600"
    assert kube_env.ansible_env(identity)["K8S_AUTH_KUBECONFIG"] == str(path)
    with kube_env.api(identity) as api:
        review = client.AuthenticationV1Api(api).create_self_subject_review(
            client.V1SelfSubjectReview(api_version="authentication.k8s.io/v1", kind="SelfSubjectReview")
        )
    user = review.status.user_info
    assert user.username == kube.IDENTITIES[identity].user
    assert set(kube.IDENTITIES[identity].groups) <= set(user.groups)


def test_anonymous_requests_are_refused(kube_env):
    """No token: the API answers 401/403, never data."""
    import ssl
    import urllib.error
    import urllib.request

    context = ssl.create_default_context(cafile=str(kube_env.ca_file))
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(f"{kube_env.server}/api/v1/namespaces/{INFRA}/secrets", context=context, timeout=10)
    assert err.value.code in (401, 403)


# --------------------------------------------------------------------------
# Tests: the controller-manager runs the controllers the suites rely on
# --------------------------------------------------------------------------


def wait_for(predicate, timeout: float = 90, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.5)


def test_namespace_deletion_completes(kube_env):
    """The namespace controller empties and removes a deleted namespace."""
    name = "bmt-delete-probe"
    with kube_env.api("admin") as admin:
        core = client.CoreV1Api(admin)
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
        core.create_namespaced_config_map(name, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="x")))
        core.delete_namespace(name)

        def gone():
            try:
                core.read_namespace(name)
                return False
            except ApiException as exc:
                return exc.status == 404

        wait_for(gone, what=f"namespace {name} to be deleted")


def test_resource_quota_status_and_garbage_collection(kube_env):
    """The resourcequota controller fills status; the garbage collector
    deletes a dependent whose owner is gone."""
    ns = "bmt-controllers-probe"
    with kube_env.api("admin") as admin:
        core = client.CoreV1Api(admin)
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
        try:
            core.create_namespaced_resource_quota(
                ns,
                client.V1ResourceQuota(
                    metadata=client.V1ObjectMeta(name="q"),
                    spec=client.V1ResourceQuotaSpec(hard={"configmaps": "10"}),
                ),
            )
            owner = core.create_namespaced_config_map(
                ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="owner"))
            )
            ref = client.V1OwnerReference(api_version="v1", kind="ConfigMap", name="owner", uid=owner.metadata.uid)
            core.create_namespaced_config_map(
                ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="dependent", owner_references=[ref]))
            )
            wait_for(
                lambda: (core.read_namespaced_resource_quota("q", ns).status.used or {}).get("configmaps"),
                what="resource quota usage",
            )
            core.delete_namespaced_config_map("owner", ns)
            wait_for(
                lambda: "dependent" not in [c.metadata.name for c in core.list_namespaced_config_map(ns).items],
                what="garbage collection of the dependent ConfigMap",
            )
        finally:
            core.delete_namespace(ns)


# --------------------------------------------------------------------------
# Tests: tenant isolation through ansible-playbook
# --------------------------------------------------------------------------


def test_tenant_cannot_read_infrastructure(tenant_a_results):
    assert_infra_hidden(tenant_a_results)


def test_admin_reads_infrastructure(kube_env, kube_minimal_bmh, tmp_path):
    seed = kube_minimal_bmh
    results = run_probes(tmp_path, kube_env.ansible_env("admin"), infra_probes(seed))
    for probe, result in results.items():
        assert not result.get("failed"), (probe, result)
    assert seed.bmh_name in names(results["list_bmh"])
    assert names(results["get_bmh"]) == [seed.bmh_name]
    assert results["get_bmh"]["resources"][0]["spec"]["bmc"]["credentialsName"] == seed.secret_name
    assert seed.secret_name in names(results["list_secrets"])
    assert names(results["get_bmc_secret"]) == [seed.secret_name]


def test_tenant_reads_and_writes_only_its_own_namespace(tenant_a_results):
    r = tenant_a_results
    for probe in ("write_own", "read_own", "list_own_secrets"):
        assert not r[probe].get("failed"), (probe, r[probe])
    assert r["write_own"]["changed"] is True
    assert names(r["read_own"]) == ["tenant-probe"]
    for probe in ("write_other", "read_other", "list_other_secrets"):
        assert_forbidden(r[probe])


def test_isolation_assertion_fails_with_rbac_off(kube_env, kube_minimal_bmh, tmp_path):
    """Negative control: on an apiserver over the same etcd with
    --authorization-mode=AlwaysAllow, the tenant reads the BMC Secret and
    the isolation assertion above fails."""
    seed = kube_minimal_bmh
    open_apiserver = kube_env.start_apiserver("kube-apiserver-alwaysallow", authorization_mode="AlwaysAllow")
    try:
        results = run_probes(tmp_path, open_apiserver.ansible_env("tenant-a"), infra_probes(seed))
    finally:
        open_apiserver.stop()
    with pytest.raises(AssertionError):
        assert_infra_hidden(results)
    assert names(results["get_bmc_secret"]) == [seed.secret_name]
    assert names(results["get_bmh"]) == [seed.bmh_name]
