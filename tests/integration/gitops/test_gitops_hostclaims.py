"""Bare metal from Git (issue 19, item 3): a tenant's HostClaims committed to its own repository.

The cluster operator onboards tenant ``gh-a`` with the tenant_gitops role
(through ansible-playbook: a commit to the operator's repository, applied by
the real, locked-down Flux), with its own repository and an age key of its own
(``decryption_secret``). The tenant commits two HostClaims and their user-data
Secret, encrypted with the real ``sops`` for its age key, to that repository
(the files of ``examples/gitops/tenant-repo``, with the test's image, rack and
user data);
kustomize-controller applies them as the tenant's reconciler ServiceAccount
(the tenant's rights, in its namespace only) and decrypts the Secret there.
The owner's binder (``metal3_bind_claims.yml`` in the background) binds them;
Metal3's real baremetal-operator provisions the hosts (live ISO, virtual media).

What is shown:

- the claims from Git are bound and provisioned, the decrypted user data
  reaches the host (the binder's copy), and the tenant's view through
  ``host_claim_info`` and the ``claimed_hosts`` inventory, with its own
  kubeconfig, is the same as for claims made by ``host_claim``;
- deleting a claim from Git releases its host (Flux prunes the claim, the
  binder deprovisions the host and lets it go) and leaves the other one;
- offboarding the tenant by Git (tenant_gitops, state absent) with a claim
  still deployed leaves nothing of the tenant behind, and every host is back
  in the pool.

Runs only under ``-m gitops`` (``make test-gitops``; it starts the real
operator too: ``make bmo``).
"""

from __future__ import annotations

import base64
import json

import pytest
import yaml
from fixtures_bmo import wait_for
from fixtures_machines import binder_loop
from harness import baremetal_operator, flux, kube, sops_age
from harness.ansible import REPO_ROOT, localhost_play, run_inventory, run_playbook
from harness.git_server import git
from kubernetes import client

pytestmark = [pytest.mark.gitops, pytest.mark.real_bmo]

TENANT = "gh-a"
INFRA = "gh-infra"  # fixtures_bmo.BMO_NAMESPACES
HOSTS = ["gh-host-0", "gh-host-1"]
RACK = "gh-rack"
CLAIMS = ["web-0", "web-1"]
FLEET = "fleet-hostclaims"
APPS = "gh-a-apps"
INTERVAL = "10s"
KEY_SECRET = "sops-age"
USER_DATA = "#cloud-config\nhostname: from-git\n"
TIMEOUT = 600
EXAMPLE = REPO_ROOT / "examples" / "gitops" / "tenant-repo"


def dump(*docs: dict) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False)


def example(name: str) -> dict:
    """A file of the example tenant repository (examples/gitops/tenant-repo)."""
    return yaml.safe_load((EXAMPLE / name).read_text())


def claim(name: str, image: dict) -> dict:
    """The example's claim, named ``name``, with the test's image and its rack added to the selector."""
    doc = example("web-0.yaml")
    doc["metadata"]["name"] = name
    doc["spec"]["image"] = image
    doc["spec"]["hostSelector"]["matchLabels"]["rack"] = RACK
    return doc


def user_data_secret() -> str:
    """The example's user-data Secret (plain text, to be encrypted) with the test's user data."""
    doc = example("user-data.yaml")
    doc["stringData"]["userData"] = USER_DATA
    return dump(doc)


def tenant_files(claims: list[str], image: dict, encrypted: str) -> dict[str, str]:
    """The tenant repository: the example's kustomization of ``claims`` and the encrypted user data."""
    kustomization = example("kustomization.yaml")
    assert kustomization["resources"] == ["user-data.enc.yaml", "web-0.yaml"], kustomization
    kustomization.update(namespace=TENANT, resources=["user-data.enc.yaml", *(f"{name}.yaml" for name in claims)])
    files = {"kustomization.yaml": dump(kustomization), "user-data.enc.yaml": encrypted}
    files.update((f"{name}.yaml", dump(claim(name, image))) for name in CLAIMS)
    return files


def run_role(env, fixture: dict, name: str, state: str = "present"):
    tenant = {
        "name": TENANT,
        "users": [kube.IDENTITIES["tenant-a"].user],
        "host_classes": ["small"],
        "repository": {"url": fixture["apps_url"], "interval": INTERVAL, "decryption_secret": KEY_SECRET},
    }
    return run_playbook(
        flux.tenant_gitops_play(
            state,
            tenant_gitops_checkout=str(fixture["checkout"]),
            tenant_gitops_tenants=[tenant],
            tenant_gitops_cluster_path="",
            tenant_gitops_interval=INTERVAL,
            tenant_gitops_flux_kustomization={"name": FLEET, "namespace": flux.NAMESPACE},
            tenant_gitops_wait_timeout=300,
        ),
        env.kube.ansible_env("admin"),
        fixture["workdir"] / name,
        timeout=1800,
    )


def is_ready(obj: dict | None) -> bool:
    """Whether the claim exists and its Ready condition is True."""
    conditions = {c["type"]: c for c in ((obj or {}).get("status") or {}).get("conditions") or []}
    return (conditions.get("Ready") or {}).get("status") == "True"


@pytest.fixture(scope="module")
def from_git(metal3_bmo_env, flux_env, git_server, tmp_path_factory):
    """Tenant gh-a onboarded by Git with its age key; its repository holds two claims and their user data."""
    try:
        sops_age.require_tools()
    except sops_age.ToolsMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    env = metal3_bmo_env
    workdir = tmp_path_factory.mktemp("gitops-hostclaims")
    with env.api() as api:
        kube.call_ignoring(
            409, client.CoreV1Api(api).create_namespace, client.V1Namespace(metadata=client.V1ObjectMeta(name=INFRA))
        )
    for index, name in enumerate(HOSTS):
        env.create_host(
            INFRA,
            name,
            index=640 + index,
            wait=False,
            labels={"infra-kind": "small", "rack": RACK},
            policy={"matches": TENANT},  # the annotation host_share writes: namespaces whose whole name matches
        )
    env.wait_hosts(INFRA, HOSTS, state="available", timeout=300)
    public, private = sops_age.new_key()
    encrypted = sops_age.encrypt(user_data_secret(), public, "user-data.enc.yaml")
    image = baremetal_operator.live_iso_image(env.operator.live_iso_url)
    git_server.create_repo(APPS)
    git_server.commit(APPS, tenant_files(CLAIMS, image, encrypted), "two web hosts")
    with env.api() as api:
        checkout = flux.operator_repository(api, git_server, FLEET, workdir / "checkout", INTERVAL)
    fixture = {
        "env": env,
        "workdir": workdir,
        "checkout": checkout,
        "apps_url": git_server.url(APPS),
        "image": image,
        "encrypted": encrypted,
    }
    run = run_role(env, fixture, "onboard")
    assert run.ok, run.explain()
    with env.api() as api:
        # The operator hands the tenant's private key to its namespace, outside Git.
        body = {"metadata": {"name": KEY_SECRET, "namespace": TENANT}, "stringData": {"age.agekey": private}}
        kube.call_ignoring(409, client.CoreV1Api(api).create_namespaced_secret, TENANT, body)
        flux.wait_ready(api, "Kustomization", TENANT, TENANT)
    with binder_loop(env.kube, [TENANT], workdir / "binder"):
        yield fixture


def test_claims_from_git_are_bound_and_provisioned_and_the_tenant_sees_them(from_git):
    env = from_git["env"]
    assert USER_DATA.split("\n")[1] not in from_git["encrypted"]  # the repository holds no plaintext
    for name in CLAIMS:
        obj = wait_for(
            f"claim {TENANT}/{name} ready", lambda name=name: env.claim(TENANT, name), is_ready, env.operator, TIMEOUT
        )
        # applied by Flux, as the tenant's reconciler
        assert obj["metadata"]["labels"]["kustomize.toolkit.fluxcd.io/name"] == TENANT, obj["metadata"]
    hosts = env.wait_hosts(INFRA, HOSTS, state="provisioned", powered=True, timeout=TIMEOUT)
    consumers = sorted(h["spec"]["consumerRef"]["name"] for h in hosts.values())
    assert consumers == CLAIMS, consumers
    # The user data decrypted by kustomize-controller reached the host: the binder's copy of the tenant's Secret.
    with env.api() as api:
        core = client.CoreV1Api(api)
        for host in hosts.values():
            copy = core.read_namespaced_secret(host["spec"]["userData"]["name"], INFRA)
            assert base64.b64decode(copy.data["userData"]).decode() == USER_DATA

    # The tenant's own view, with its kubeconfig: the module and the inventory, as for claims made by host_claim.
    tenant_env = env.kube.ansible_env("tenant-a")
    workdir = from_git["workdir"]
    info = run_playbook(
        localhost_play([{"name": "mine", "baremetal.tenancy.host_claim_info": {"namespace": TENANT}}]),
        tenant_env,
        workdir / "info",
    )
    assert info.ok, info.explain()
    views = {c["name"]: c for c in info.result("mine")["claims"]}
    assert sorted(views) == CLAIMS
    assert all(v["ready"] and v["host"] in HOSTS and v["provisioning_state"] == "provisioned" for v in views.values())
    source = workdir / "tenant.claimed_hosts.yml"
    source.write_text(
        yaml.safe_dump({"plugin": "baremetal.tenancy.claimed_hosts", "backend": "metal3", "namespaces": [TENANT]})
    )
    listed = run_inventory(source, tenant_env, workdir)
    assert listed.returncode == 0, listed.stderr
    hostvars = json.loads(listed.stdout)["_meta"]["hostvars"]
    assert sorted(hostvars) == CLAIMS, sorted(hostvars)


def test_deleting_a_claim_from_git_releases_its_host(from_git):
    env = from_git["env"]
    bound = next(h for h in HOSTS if env.host(INFRA, h)["spec"].get("consumerRef", {}).get("name") == "web-1")
    checkout = from_git["workdir"] / "apps"
    git("clone", "--quiet", from_git["apps_url"], str(checkout))
    (checkout / "web-1.yaml").unlink()
    files = tenant_files(["web-0"], from_git["image"], from_git["encrypted"])
    (checkout / "kustomization.yaml").write_text(files["kustomization.yaml"])
    git("add", "-A", cwd=checkout)
    git("commit", "--quiet", "-m", "one web host is enough", cwd=checkout)
    git("push", "--quiet", "origin", "HEAD:main", cwd=checkout)
    wait_for(
        "web-1 pruned by Flux and released",
        lambda: env.claim(TENANT, "web-1"),
        lambda c: c is None,
        env.operator,
        TIMEOUT,
    )
    released = env.wait_host(INFRA, bound, state="available", timeout=TIMEOUT)
    assert not released["spec"].get("consumerRef"), released["spec"]
    assert is_ready(env.claim(TENANT, "web-0"))  # the other claim stays


def test_offboarding_by_git_leaves_nothing_and_every_host_back_in_the_pool(from_git):
    env = from_git["env"]
    assert is_ready(env.claim(TENANT, "web-0"))  # still deployed when the tenant goes
    run = run_role(env, from_git, "offboard", state="absent")
    assert run.ok, run.explain()
    with env.api() as api:
        assert not kube.namespace_exists(api, TENANT)
        copies = client.CoreV1Api(api).list_namespaced_secret(
            INFRA, label_selector=f"hostclaim.metal3.io/claim-namespace={TENANT}"
        )
        assert copies.items == []
    hosts = env.wait_hosts(INFRA, HOSTS, state="available", timeout=TIMEOUT)
    assert all(not h["spec"].get("consumerRef") for h in hosts.values()), hosts
