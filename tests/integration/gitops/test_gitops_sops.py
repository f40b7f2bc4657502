"""SOPS-encrypted Secrets in tenants' repositories, one age key per tenant (issue 19, item 3, the SOPS part).

Two tenants are onboarded by the tenant_gitops role (through ansible-playbook,
a commit to an operator repository applied by the real, locked-down Flux),
each with its own repository and ``decryption_secret: sops-age``, so that its
Kustomization decrypts with the age key in a Secret of its own namespace
(Flux's ``--no-cross-namespace-refs`` makes that the only place the key can
be). Each tenant's key pair is made by the real ``age-keygen``; tenant A's
Secret is encrypted by the real ``sops`` for A's key only.

What is shown:

- the repository holds no plaintext, and kustomize-controller decrypts the
  Secret into tenant A's namespace;
- the very same encrypted file committed to tenant B's repository does not
  decrypt there (B's key is not a recipient): B's Kustomization reports the
  decryption failure and no Secret is created in B's namespace;
- offboarding both by Git leaves neither namespace behind.

Runs only under ``-m gitops`` (``make test-gitops``, which builds sops and
age-keygen with ``make gitops-tools``).
"""

from __future__ import annotations

import base64

import pytest
import yaml
from harness import kube, sops_age
from harness.ansible import run_playbook
from harness.flux import operator_repository, ready_condition, tenant_gitops_play, wait_ready
from kubernetes import client

pytestmark = pytest.mark.gitops

FLEET = "fleet-sops"
A, B = "s3-a", "s3-b"
INTERVAL = "10s"
KEY_SECRET = "sops-age"
PLAINTEXT = "s3cr3t-of-tenant-a"


def dump(*docs: dict) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False)


def kustomization_yaml(namespace: str, *resources: str) -> str:
    return dump(
        {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "namespace": namespace,
            "resources": list(resources),
        }
    )


def run_role(kube_env, git_server, workdir, checkout, name: str, state: str = "present"):
    tenants = [
        {
            "name": tenant,
            "repository": {
                "url": git_server.url(f"{tenant}-apps"),
                "interval": INTERVAL,
                "decryption_secret": KEY_SECRET,
            },
        }
        for tenant in (A, B)
    ]
    return run_playbook(
        tenant_gitops_play(state),
        kube_env.ansible_env("admin"),
        workdir / name,
        extra_vars={
            "tenant_gitops_checkout": str(checkout),
            "tenant_gitops_tenants": tenants,
            "tenant_gitops_cluster_path": "",
            "tenant_gitops_interval": INTERVAL,
            "tenant_gitops_flux_kustomization": {"name": FLEET, "namespace": "flux-system"},
            "tenant_gitops_wait_timeout": 300,
        },
    )


@pytest.fixture(scope="module")
def onboarded(admin, kube_env, metal3_env, flux_env, git_server, tmp_path_factory):
    """Both tenants onboarded by Git, each with its age key in its namespace; A's Secret committed to both repos."""
    try:
        sops_age.require_tools()
    except sops_age.ToolsMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    workdir = tmp_path_factory.mktemp("gitops-sops")
    keys = {tenant: sops_age.new_key() for tenant in (A, B)}
    secret = dump(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"}, "stringData": {"password": PLAINTEXT}}
    )
    encrypted = sops_age.encrypt(secret, keys[A][0], "db.enc.yaml")
    for tenant in (A, B):
        git_server.create_repo(f"{tenant}-apps")
        git_server.commit(
            f"{tenant}-apps",
            {"kustomization.yaml": kustomization_yaml(tenant, "db.enc.yaml"), "db.enc.yaml": encrypted},
            "the database password, encrypted for tenant A's age key",
        )
    checkout = operator_repository(admin, git_server, FLEET, workdir / "checkout", INTERVAL)
    run = run_role(kube_env, git_server, workdir, checkout, "onboard")
    assert run.ok, run.explain()
    core = client.CoreV1Api(admin)
    for tenant in (A, B):
        # The operator hands each tenant's private key to its namespace, outside Git.
        body = {"metadata": {"name": KEY_SECRET, "namespace": tenant}, "stringData": {"age.agekey": keys[tenant][1]}}
        kube.call_ignoring(409, core.create_namespaced_secret, tenant, body)
    return {"workdir": workdir, "checkout": checkout, "encrypted": encrypted, "keys": keys}


def test_the_repository_holds_no_plaintext(onboarded):
    text = onboarded["encrypted"]
    assert PLAINTEXT not in text
    doc = yaml.safe_load(text)
    assert doc["stringData"]["password"].startswith("ENC[AES256_GCM,")
    assert [r["recipient"] for r in doc["sops"]["age"]] == [onboarded["keys"][A][0]]


def test_tenant_secret_is_decrypted_in_its_own_namespace(admin, onboarded):
    obj = wait_ready(admin, "Kustomization", A, A)
    assert obj["spec"]["decryption"] == {"provider": "sops", "secretRef": {"name": KEY_SECRET}}
    secret = client.CoreV1Api(admin).read_namespaced_secret("db", A)
    assert base64.b64decode(secret.data["password"]).decode() == PLAINTEXT
    assert secret.metadata.labels["kustomize.toolkit.fluxcd.io/name"] == A


def test_the_same_file_does_not_decrypt_for_another_tenant(admin, onboarded):
    obj = wait_ready(admin, "Kustomization", B, B, status="False", message="decrypt")
    message = ready_condition(obj)["message"]
    assert "decrypt" in message.lower(), message
    assert kube.call_ignoring(404, client.CoreV1Api(admin).read_namespaced_secret, "db", B) is None


def test_offboarding_both_by_git_leaves_no_namespace(admin, kube_env, git_server, onboarded):
    run = run_role(kube_env, git_server, onboarded["workdir"], onboarded["checkout"], "offboard", state="absent")
    assert run.ok, run.explain()
    for tenant in (A, B):
        assert not kube.namespace_exists(admin, tenant), tenant
