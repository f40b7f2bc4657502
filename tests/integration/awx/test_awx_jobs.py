"""The shipped AWX objects (extensions/awx/) run the way AWX runs them, on the session's real services.

For every job, a private data directory is rendered from the shipped credential types and job templates
(``harness.awx_job``: credential injectors into ``env/envvars`` and files, survey answers into
``env/extravars``, the inventory its source's last update imported into ``inventory/hosts``, the
collection's playbooks as ``project/``) and handed to ``ansible-runner``. Inventory updates run
``ansible-inventory --list --export`` on the shipped source files through ``ansible-runner`` too, with the
source's credential and environment variables, as AWX's inventory updates do.

Actors: the owner (the cluster administrator's and the binder's Kubernetes credentials, the system
administrator's OpenStack credential and a BMC credential) and two tenants, each with its own Kubernetes
token and its own project's OpenStack user. Metal3 runs on the cluster without baremetal-operator
(``metal3_env``: no host becomes available, so claims stay pending and the binder says why); Ironic on the
session's Keystone and Ironic, where ``inventory_ironic`` gave each tenant claimed nodes.

The steps share the module's jobs and run in order; the last one scans every job's artifacts
(``job_events``, ``stdout``) and every inventory update's output for each secret the jobs were given.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest
import yaml
from harness import awx_job
from harness.ansible import REPO_ROOT, VENV_BIN, ansible_env
from harness.awx import (
    BMC,
    CREDENTIAL_TYPES,
    NAMESPACES,
    SOURCES,
    TEMPLATES,
    Awx,
    kube_credential,
    openstack_credential,
)
from harness.kube import IDENTITIES
from kubernetes import client


@pytest.fixture(scope="module")
def awx(metal3_env, inventory_ironic, tmp_path_factory):
    """The module's AWX: the owner's and both tenants' credentials, and the secrets they hold."""
    kube_env = metal3_env.kube
    openstack = inventory_ironic.openstack
    bmc = openstack.bmcs[1]  # the redfish node's BMC (inventory_ironic)
    state = Awx(tmp_path_factory.mktemp("awx"))
    state.kube = {identity: kube_credential(kube_env, identity) for identity in ("admin", "binder", *NAMESPACES)}
    state.openstack = {
        tenant: openstack_credential(openstack.tenants[tenant].credentials["member"]) for tenant in NAMESPACES
    }
    state.openstack["owner"] = openstack_credential(openstack.keystone_server.admin_auth("system"))
    state.bmc = (BMC, {"bmc_username": bmc.username, "bmc_password": bmc.password, "bmc_address": bmc.address})
    state.secrets = [kube_env.tokens[i] for i in ("admin", "binder", *NAMESPACES)]
    state.secrets += [c[1]["password"] for c in state.openstack.values()]
    state.bmc_secrets = [v for v in inventory_ironic.bmc_values if v]
    state.secrets += state.bmc_secrets
    state.metal3 = metal3_env
    state.ironic = inventory_ironic
    yield state
    for namespace in NAMESPACES.values():
        if _exists(metal3_env, namespace):
            metal3_env.forget_claims(namespace)


def _exists(metal3_env, namespace: str) -> bool:
    with metal3_env.api() as api:
        return any(n.metadata.name == namespace for n in client.CoreV1Api(api).list_namespace().items)


def _claims(metal3_env, namespace: str) -> dict[str, dict]:
    return {c["metadata"]["name"]: c for c in metal3_env.claims(namespace)}


def test_owner_onboards_two_tenants_through_the_onboard_template(awx):
    for tenant, namespace in NAMESPACES.items():
        job = awx.launch(
            "baremetal.tenancy onboard tenant (Metal3)",
            [awx.kube["admin"]],
            {"tenant": namespace, "tenant_user": IDENTITIES[tenant].user, "tenant_host_classes": "small"},
            {},
        )
        assert job.status == "successful", job.stdout[-3000:]
    with awx.metal3.api() as api:
        rbac = client.RbacAuthorizationV1Api(api)
        for tenant, namespace in NAMESPACES.items():
            subjects = [s.name for b in rbac.list_namespaced_role_binding(namespace).items for s in b.subjects or []]
            assert IDENTITIES[tenant].user in subjects
            assert IDENTITIES[next(t for t in NAMESPACES if t != tenant)].user not in subjects


def test_each_tenant_claims_in_its_namespace_and_not_in_the_other(awx):
    for tenant, namespace in NAMESPACES.items():
        job = awx.launch(
            "baremetal.tenancy claim hosts (Metal3)",
            [awx.kube[tenant]],
            {"claim_namespace": namespace, "claim_name": "web", "claim_labels": "infra-kind=small"},
            {},
        )
        assert job.status == "successful", job.stdout[-3000:]
        claim = _claims(awx.metal3, namespace)["web"]
        assert claim["spec"]["hostSelector"]["matchLabels"] == {"infra-kind": "small"}
        assert claim["spec"]["online"] is False
    intrusion = awx.launch(
        "baremetal.tenancy claim hosts (Metal3)",
        [awx.kube["tenant-a"]],
        {"claim_namespace": NAMESPACES["tenant-b"], "claim_name": "intruder"},
        {},
    )
    assert intrusion.status == "failed" and "forbidden" in intrusion.stdout.lower()
    assert "intruder" not in _claims(awx.metal3, NAMESPACES["tenant-b"])


def test_survey_answers_are_checked_before_any_job_runs(awx):
    with pytest.raises(awx_job.AwxDataError, match="survey answer claim_online"):
        awx.launch(
            "baremetal.tenancy claim hosts (Metal3)",
            [awx.kube["tenant-a"]],
            {"claim_namespace": "awx-a", "claim_name": "x", "claim_online": "yes"},
            {},
        )


def test_reconcile_template_runs_binder_passes_that_say_why_claims_wait(awx):
    job = awx.launch(
        "baremetal.tenancy reconcile claims (Metal3)",
        [awx.kube["binder"]],
        {"reconcile_namespaces": ",".join(NAMESPACES.values()), "reconcile_passes": 2, "reconcile_interval": 0},
        {},
    )
    assert job.status == "successful", job.stdout[-3000:]
    for namespace in NAMESPACES.values():
        status = _claims(awx.metal3, namespace)["web"].get("status") or {}
        assert status.get("conditions"), (namespace, status)  # the binder wrote why the claim waits


def test_metal3_inventory_source_serves_each_tenant_its_namespace_only(awx):
    for tenant, namespace in NAMESPACES.items():
        update = awx.update("claimed hosts (Metal3)", awx.kube[tenant], {"BMT_CLAIM_NAMESPACES": namespace})
        assert update.rc == 0, update.output[-3000:]
        assert awx_job.listed_hosts(update.listing) == set()  # pending claims have no host yet
    other = awx.update("claimed hosts (Metal3)", awx.kube["tenant-a"], {"BMT_CLAIM_NAMESPACES": NAMESPACES["tenant-b"]})
    assert other.rc != 0 and "forbidden" in other.output.lower()


def test_each_ironic_job_sees_exactly_its_tenants_hosts(awx):
    claims = {t: {c.allocation for c in awx.ironic.claims[t]} for t in NAMESPACES}
    nodes = {t: {c.node for c in awx.ironic.claims[t]} for t in NAMESPACES}
    for tenant in NAMESPACES:
        update = awx.update("claimed hosts (Ironic)", awx.openstack[tenant])
        assert update.rc == 0, update.output[-3000:]
        assert awx_job.listed_hosts(update.listing) == claims[tenant]
        job = awx.launch("baremetal.tenancy show my hosts (Ironic)", [awx.openstack[tenant]], {}, update.listing)
        assert job.status == "successful", job.stdout[-3000:]
        # the job's inventory is exactly the tenant's hosts, and so is what its credential shows it
        script = job.directory / "inventory" / "hosts"
        inventory = json.loads(subprocess.run([str(script)], capture_output=True, text=True, check=True).stdout)
        assert awx_job.listed_hosts(inventory) == claims[tenant]
        shown = next(m for m in job.debug_messages() if isinstance(m, dict) and "claims" in m)
        assert {line.split(" -> ")[0] for line in shown["claims"]} == claims[tenant]
        assert set(shown["visible_nodes"]) == nodes[tenant]


def test_owner_expires_leases_with_its_openstack_and_bmc_credentials(awx):
    update = awx.update("claimed hosts (Ironic)", awx.openstack["owner"])
    assert update.rc == 0, update.output[-3000:]
    every = {c.allocation for claims in awx.ironic.claims.values() for c in claims}
    assert every <= awx_job.listed_hosts(update.listing)  # the owner sees both tenants' hosts
    job = awx.launch(
        "baremetal.tenancy expire leases (Ironic)",
        [awx.openstack["owner"], awx.bmc],
        {"expire_nodes": ",".join(c.node for claims in awx.ironic.claims.values() for c in claims)},
        update.listing,
    )
    assert job.status == "successful", job.stdout[-3000:]
    # the nodes are leased by their lessee field, without lease records: nothing is due, nothing changes
    assert job.stats.get("changed") == {}, job.stdout[-3000:]
    assert "End expired leases and start due ones" in job.stdout


def test_tenants_release_and_the_owner_offboards_them(awx):
    for tenant, namespace in NAMESPACES.items():
        job = awx.launch(
            "baremetal.tenancy release hosts (Metal3)",
            [awx.kube[tenant]],
            {"claim_namespace": namespace, "release_claims": "web", "release_wait": "false"},
            {},
        )
        assert job.status == "successful", job.stdout[-3000:]
    for namespace in NAMESPACES.values():
        job = awx.launch("baremetal.tenancy offboard tenant (Metal3)", [awx.kube["admin"]], {"tenant": namespace}, {})
        assert job.status == "successful", job.stdout[-3000:]
        assert _claims(awx.metal3, namespace) == {}
    with awx.metal3.api() as api:
        for namespace in NAMESPACES.values():
            ns = [n for n in client.CoreV1Api(api).list_namespace().items if n.metadata.name == namespace]
            assert not ns or ns[0].metadata.deletion_timestamp, namespace


def test_no_secret_appears_in_any_job_artifacts_or_inventory_update(awx):
    assert len(awx.jobs) >= 10 and len(awx.updates) >= 5
    # the scan can fail: each token and password was handed to some job, in its private data directory
    given = "\n".join(awx.private_files)
    handed = [*(c[1]["bearer_token"] for c in awx.kube.values()), *(c[1]["password"] for c in awx.openstack.values())]
    assert [s for s in [*handed, awx.bmc[1]["bmc_password"]] if s not in given] == []
    for job in awx.jobs:
        text = job.artifacts_text()
        assert [s for s in awx.secrets if s in text] == [], job.name
    for update in awx.updates:
        assert [s for s in awx.secrets if s in update.output] == [], update.source
    # Tokens and passwords travel in files, never in the environment, which ansible-runner records in
    # artifacts/command (AWX deletes the private data directory after the job): only the BMC credential,
    # read from the environment by host_lease and bmc_account, is there.
    for job in awx.jobs:
        command = (job.directory / "artifacts" / "job" / "command").read_text()
        leaked = [s for s in awx.secrets if s in command]
        assert leaked == [] or ("expire" in job.name and set(leaked) <= set(awx.bmc_secrets)), (job.name, leaked)


# --------------------------------------------------------------------------- examples/awx/configure_awx.yml

CONFIGURE_AWX = REPO_ROOT / "examples" / "awx" / "configure_awx.yml"
KIND_OF = {
    "baremetal.tenancy Kubernetes": "kubernetes",
    "baremetal.tenancy OpenStack": "openstack",
    "baremetal.tenancy BMC": "bmc",
}
# The secret of each credential kind, as the example's awx-site.yml names it (<kind>.<variable>) and the input it fills.
SECRET_INPUTS = {
    "kubernetes": ("token_env", "bearer_token"),
    "openstack": ("password_env", "password"),
    "bmc": ("password_env", "bmc_password"),
}


def _configure_awx(workdir: Path, secrets: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """``ansible-playbook examples/awx/configure_awx.yml`` as its header shows it, with the secrets in the environment."""
    argv = [str(VENV_BIN / "ansible-playbook"), "-i", "localhost,", str(CONFIGURE_AWX), *args]
    env = dict(
        ansible_env({k: v for k, v in os.environ.items() if not k.startswith("CONTROLLER_")}, workdir), **secrets
    )
    return subprocess.run(argv, env=env, cwd=str(workdir), capture_output=True, text=True, timeout=600, check=False)


def test_configure_awx_example_plans_the_objects_the_awx_harness_runs(tmp_path):
    """configure_awx.yml with ``awx_plan_only``: no controller, and the objects it would create are those the
    jobs above are rendered from (harness.awx_job): the shipped credential types, each actor's credentials with
    inputs its type takes, the job templates of its audience whose credential types it has (in the template's
    order, as a job's private data directory needs them), a claimed_hosts source per backend it has a credential
    for; the secrets named by *_env are never read, printed or written."""
    secrets = {
        name: "secret-%s-%s" % (name.lower(), os.urandom(6).hex())
        for name in (
            "OWNER_K8S_TOKEN",
            "OWNER_OS_PASSWORD",
            "OWNER_BMC_PASSWORD",
            "TENANT_A_K8S_TOKEN",
            "TENANT_A_OS_PASSWORD",
            "TENANT_B_K8S_TOKEN",
        )
    }
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\nMIIB-test-ca\n-----END CERTIFICATE-----\n")
    kube = {"host": "https://k8s.example.com:6443", "ca_cert": "{{ lookup('file', '%s') }}" % ca}
    site = {
        "awx_scm_url": "https://git.example.com/platform/baremetal.tenancy.git",
        "awx_owner": {
            "organization": "infra",
            "kubernetes": dict(kube, token_env="OWNER_K8S_TOKEN"),
            "namespaces": ["tenant-a", "tenant-b"],
            "openstack": {
                "auth_url": "https://keystone.example.com/v3",
                "username": "admin",
                "system_scope": "all",
                "password_env": "OWNER_OS_PASSWORD",
            },
            "bmc": {"username": "root", "password_env": "OWNER_BMC_PASSWORD"},
        },
        "awx_tenants": [
            {
                "name": "tenant-a",
                "organization": "tenant-a",
                "namespaces": ["tenant-a"],
                "kubernetes": dict(kube, token_env="TENANT_A_K8S_TOKEN"),
                "openstack": {
                    "auth_url": "https://keystone.example.com/v3",
                    "username": "alice",
                    "project_name": "tenant-a",
                    "password_env": "TENANT_A_OS_PASSWORD",
                },
            },
            # Metal3 only: no OpenStack credential, so no Ironic source and no Ironic template
            {
                "name": "tenant-b",
                "organization": "tenant-b",
                "namespaces": ["tenant-b", "tenant-b-ci"],
                "kubernetes": dict(kube, token_env="TENANT_B_K8S_TOKEN", insecure=True),
            },
        ],
    }
    (tmp_path / "awx-site.yml").write_text(yaml.safe_dump(site, sort_keys=False))
    plan_file = tmp_path / "awx-plan.yml"

    syntax = _configure_awx(tmp_path, secrets, "--syntax-check")
    assert syntax.returncode == 0, syntax.stdout + syntax.stderr
    run = _configure_awx(
        tmp_path, secrets, "-e", "@awx-site.yml", "-e", "awx_plan_only=true", "-e", "awx_plan_file=awx-plan.yml"
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-3000:]
    for task in ("Create the credential types", "Create the credentials", "Create the job templates"):
        assert any(line.startswith("skipping") for line in run.stdout.split("TASK [%s" % task, 1)[1].splitlines()[1:3])
    plan = yaml.safe_load(plan_file.read_text())
    assert "Show the objects AWX gets" in run.stdout and '"job_templates": [' in run.stdout
    # secrets: never in the output nor in the plan (the plan names their variables)
    assert [s for s in secrets.values() if s in run.stdout + run.stderr + plan_file.read_text()] == []
    actors = {"owner": dict(site["awx_owner"], audience="owner")}
    actors.update({t["name"]: dict(t, audience="tenant") for t in site["awx_tenants"]})

    # credential types: the shipped ones, as the harness renders them
    assert {t["name"]: t for t in plan["credential_types"]} == CREDENTIAL_TYPES
    # projects: one per organization
    assert sorted((p["organization"], p["scm_url"]) for p in plan["projects"]) == sorted(
        (a["organization"], site["awx_scm_url"]) for a in actors.values()
    )
    # credentials: one per kind each actor has; inputs AWX takes for the type; the secret from its variable
    credentials = {c["name"]: c for c in plan["credentials"]}
    assert sorted(credentials) == sorted(
        "%s %s" % (name, kind) for name, actor in actors.items() for kind in SECRET_INPUTS if kind in actor
    )
    for name, credential in credentials.items():
        actor_name, kind = name.rsplit(" ", 1)
        actor = actors[actor_name]
        assert credential["organization"] == actor["organization"]
        credential_type = CREDENTIAL_TYPES[credential["credential_type"]]
        assert KIND_OF[credential_type["name"]] == kind
        variable, secret_input = SECRET_INPUTS[kind]
        assert credential["inputs_from_env"] == {secret_input: actor[kind][variable]}
        assert secret_input not in credential["inputs"]
        # what AWX gets once the secret is read: inputs of the type, rendered by AWX's injectors
        inputs = dict(credential["inputs"], **{secret_input: secrets[actor[kind][variable]]})
        injected = awx_job.render_credential(credential_type, inputs, lambda label: str(tmp_path / label))
        if kind == "kubernetes":
            assert inputs["ca_cert"] == ca.read_text().rstrip("\n") and inputs["insecure"] is (actor_name == "tenant-b")
            assert injected.env["K8S_AUTH_KUBECONFIG"] and inputs["bearer_token"] in "".join(injected.files.values())
    # inventories and their sources: per backend the actor has a credential for, with its namespaces for Metal3
    assert sorted((i["organization"], i["name"]) for i in plan["inventories"]) == sorted(
        (a["organization"], "%s claimed hosts" % n) for n, a in actors.items()
    )
    sources = {(s["inventory"], s["name"]): s for s in plan["inventory_sources"]}
    expected_sources = {
        ("%s claimed hosts" % n, source["name"])
        for n, a in actors.items()
        for source in SOURCES.values()
        if KIND_OF[source["credential_type"]] in a
    }
    assert set(sources) == expected_sources
    assert ("tenant-b claimed hosts", "claimed hosts (Ironic)") not in sources
    for (inventory, name), source in sources.items():
        actor_name = inventory[: -len(" claimed hosts")]
        shipped = SOURCES[name]
        assert (REPO_ROOT / source["source_path"]).is_file() and source["source_path"] == shipped["source_path"]
        assert credentials[source["credential"]]["credential_type"] == shipped["credential_type"]
        assert source["credential"].startswith(actor_name + " ")
        if shipped["backend"] == "metal3":
            assert source["source_vars"] == {"BMT_CLAIM_NAMESPACES": ",".join(actors[actor_name]["namespaces"])}
        else:
            assert source["source_vars"] == {}
    # job templates: those of each actor's audience whose credential types it has, each with the actor's
    # credentials in the template's order (what harness.awx_job.job_private_data_dir requires of a job)
    templates = {(t["organization"], t["name"]): t for t in plan["job_templates"]}
    expected_templates = {
        (a["organization"], t["name"])
        for a in actors.values()
        for t in TEMPLATES.values()
        if t["audience"] == a["audience"] and all(KIND_OF[c] in a for c in t["credential_types"])
    }
    assert set(templates) == expected_templates
    assert ("tenant-b", "baremetal.tenancy show my hosts (Ironic)") not in templates
    assert ("infra", "baremetal.tenancy expire leases (Ironic)") in templates
    # ESI-Leap: the owner's offers, and a claim for the tenant with an OpenStack credential only
    assert ("infra", "baremetal.tenancy offer hosts (ESI-Leap)") in templates
    assert ("tenant-a", "baremetal.tenancy claim an offer (ESI-Leap)") in templates
    assert ("tenant-b", "baremetal.tenancy claim an offer (ESI-Leap)") not in templates
    assert ("tenant-a", "baremetal.tenancy offer hosts (ESI-Leap)") not in templates
    for (organization, name), template in templates.items():
        shipped = TEMPLATES[name]
        awx_job.check_job_template(shipped, list(CREDENTIAL_TYPES), list(SOURCES))
        assert [credentials[c]["credential_type"] for c in template["credentials"]] == shipped["credential_types"]
        assert {credentials[c]["organization"] for c in template["credentials"]} == {organization}
        assert template["playbook"] == shipped["playbook"] and (REPO_ROOT / template["playbook"]).is_file()
        assert template["job_type"] == shipped.get("job_type", "run")
        assert template["survey_enabled"] == shipped.get("survey_enabled", False)
        assert template["survey_spec"] == shipped.get("survey_spec", {})
        # the template's inventory holds the source the harness imports its hosts from
        assert (template["inventory"], shipped["inventory_source"]) in sources
        assert any(
            i["name"] == template["inventory"] and i["organization"] == organization for i in plan["inventories"]
        )


def test_configure_awx_example_without_plan_only_goes_to_the_controller(tmp_path):
    """Without ``awx_plan_only`` the awx.awx tasks run: with CONTROLLER_HOST on a closed port of 127.0.0.1 the
    first one fails to connect (refused), and the secret the credentials would read appears nowhere."""
    secrets = {"T_K8S_TOKEN": "secret-token-%s" % os.urandom(6).hex()}
    site = {
        "awx_scm_url": "https://git.example.com/platform/baremetal.tenancy.git",
        "awx_tenants": [
            {
                "name": "t",
                "organization": "t",
                "kubernetes": {"host": "https://k8s.example.com", "token_env": "T_K8S_TOKEN"},
            }
        ],
    }
    (tmp_path / "awx-site.yml").write_text(yaml.safe_dump(site))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    secrets.update(CONTROLLER_HOST="http://127.0.0.1:%d" % port, CONTROLLER_USERNAME="admin", CONTROLLER_PASSWORD="x")
    run = _configure_awx(tmp_path, secrets, "-e", "@awx-site.yml")
    assert run.returncode != 0
    failed = run.stdout.split("TASK [Create the credential types]", 1)[1]
    assert "failed: [localhost]" in failed and "Connection refused" in failed, run.stdout[-3000:]
    assert secrets["T_K8S_TOKEN"] not in run.stdout + run.stderr
