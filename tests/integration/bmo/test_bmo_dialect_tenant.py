"""The tenant's modules on baremetal-operator's own HostClaim (v0.14), through ``ansible-playbook`` (issue 15).

On the BMO-dialect cluster (``fixtures_bmo.bmo_dialect``: BMO's HostClaim CRD,
its validating webhooks, BMO itself), a tenant with rights on claims and
Secrets of its own namespace only (no CRDs, no hosts) runs host_claim,
host_claim_info and host_release with ``dialect: auto``:

- the modules tell the dialect from the OpenAPI document and write BMO's
  shape (``spec.poweredOn``, Secret references ``{name, namespace}``,
  selection's operators, ``inNamespace``, ``failureDomain``), which BMO's
  webhook accepts (it refuses ``In``, as a claim written by hand shows, and a
  bad reboot annotation, which shows the webhook sees the collection's writes);
- check mode writes nothing and shows the diff; a second run changes nothing;
  an update writes ``poweredOn`` only;
- what BMO's dialect lacks (``node_reuse``) and a forced ``proposal`` dialect
  are one clear error each, naming the claim and the field, nothing changed;
- host_claim_info reads the claim, host_release deletes it.

The namespace is not one BMO watches (its own ``--hostclaims`` controller
leaves these claims alone): binding BMO claims is host_bind's (another suite).
"""

from __future__ import annotations

import pytest
from harness.ansible import localhost_play, run_playbook
from harness.kube import IDENTITIES
from kubernetes import client
from kubernetes.client.exceptions import ApiException

pytestmark = pytest.mark.real_bmo

NS = "bt-tenant"  # not in BMO_DIALECT_NAMESPACES: BMO's own claim controller does not reconcile it
GROUP, VERSION = "metal3.io", "v1alpha1"
TENANT = "tenant-a"
IMAGE = {
    "url": "http://images.example.com/os.qcow2",
    "checksum": "http://images.example.com/os.qcow2.sha256sum",
    "checksum_type": "sha256",
    "format": "qcow2",
}
CLAIM = {
    "name": "web",
    "namespace": NS,
    "online": False,
    "host_selector": {
        "matchLabels": {"pool": "tenant"},
        "matchExpressions": [
            {"key": "rack", "operator": "In", "values": ["r1", "r2"]},
            {"key": "gpu", "operator": "DoesNotExist"},
        ],
    },
    "in_namespace": "bd-infra",
    "failure_domain": "fd-1",
    "image": IMAGE,
    "user_data_secret": "web-user-data",
}


@pytest.fixture(scope="module")
def tenant(bmo_dialect, tmp_path_factory):
    """The tenant's namespace with a Role on claims and Secrets only (what hostclaim_setup's tenant role grants)."""
    env, _stack = bmo_dialect
    with env.api("admin") as api:
        client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NS)))
        rbac = client.RbacAuthorizationV1Api(api)
        verbs = ["get", "list", "watch", "create", "update", "patch", "delete"]
        rbac.create_namespaced_role(
            NS,
            client.V1Role(
                metadata=client.V1ObjectMeta(name="tenant"),
                rules=[
                    client.V1PolicyRule(api_groups=[GROUP], resources=["hostclaims"], verbs=verbs),
                    client.V1PolicyRule(api_groups=[""], resources=["secrets"], verbs=verbs),
                ],
            ),
        )
        rbac.create_namespaced_role_binding(
            NS,
            client.V1RoleBinding(
                metadata=client.V1ObjectMeta(name="tenant"),
                role_ref=client.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="Role", name="tenant"),
                subjects=[
                    client.RbacV1Subject(
                        api_group="rbac.authorization.k8s.io", kind="User", name=IDENTITIES[TENANT].user
                    )
                ],
            ),
        )
    with env.api(TENANT) as api:
        client.CoreV1Api(api).create_namespaced_secret(
            NS,
            client.V1Secret(
                metadata=client.V1ObjectMeta(name="web-user-data"), string_data={"userData": "#cloud-config\n{}\n"}
            ),
        )
    return env, tmp_path_factory.mktemp("bmo-dialect-tenant")


def play(env, workdir, tasks):
    run = run_playbook(localhost_play(tasks), env.ansible_env(TENANT), workdir)
    assert run.report is not None, run.explain()
    return run


def task(name, module, args, **keywords):
    return dict({"name": name, "ignore_errors": True, f"baremetal.tenancy.{module}": args}, **keywords)


def read_claim(env, name="web"):
    with env.api("admin") as api:
        try:
            return client.CustomObjectsApi(api).get_namespaced_custom_object(GROUP, VERSION, NS, "hostclaims", name)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise


def test_tenant_modules_speak_baremetal_operators_dialect(tenant):
    env, workdir = tenant

    # check mode: the change and its diff, nothing written
    run = play(env, workdir / "check", [task("claim", "host_claim", CLAIM, check_mode=True, diff=True)])
    result = run.result("claim")
    assert result["changed"] is True and not result.get("failed"), run.explain()
    assert result["dialect"] == "bmo"
    assert result["diff"]["before"] == {} and result["diff"]["after"]["spec"]["poweredOn"] is False
    assert read_claim(env) is None

    # the real run: BMO's shape, accepted by BMO's webhook; the same run again changes nothing
    run = play(
        env,
        workdir / "create",
        [task("claim", "host_claim", CLAIM), task("again", "host_claim", CLAIM)],
    )
    created, again = run.result("claim"), run.result("again")
    assert created["changed"] is True and not created.get("failed"), run.explain()
    assert again["changed"] is False and not again.get("failed"), run.explain()
    assert created["dialect"] == again["dialect"] == "bmo"
    claim = read_claim(env)
    assert claim["spec"] == {
        "poweredOn": False,
        "hostSelector": {
            "matchLabels": {"pool": "tenant"},
            "matchExpressions": [
                {"key": "rack", "operator": "in", "values": ["r1", "r2"]},
                {"key": "gpu", "operator": "!", "values": []},
            ],
            "inNamespace": "bd-infra",
        },
        "failureDomain": "fd-1",
        "image": {
            "url": IMAGE["url"],
            "checksum": IMAGE["checksum"],
            "checksumType": "sha256",
            "format": "qcow2",
        },
        "userData": {"name": "web-user-data", "namespace": NS},
    }
    view = created["claim"]
    assert (view["name"], view["namespace"], view["host"], view["online"]) == ("web", NS, None, False)
    assert view["associated"] is False and view["addresses"] == [] and view["node_reuse"] is None
    assert view["host_selector"] == claim["spec"]["hostSelector"]
    version = claim["metadata"]["resourceVersion"]

    # BMO's webhook is in the path of these writes: it refuses a bad reboot annotation the collection passes on,
    # and the capitalised operator that the collection no longer writes (a claim written by hand)
    run = play(
        env,
        workdir / "webhook",
        [task("bad reboot", "host_claim", {"name": "web", "namespace": NS, "annotations": {"reboot.metal3.io": "{"}})],
    )
    refused = run.result("bad reboot")
    assert refused["failed"] is True and "hostclaim.metal3.io" in refused["msg"], refused
    assert "failed to unmarshal the data from the reboot.metal3.io annotation" in refused["msg"], refused
    with env.api("admin") as api, pytest.raises(ApiException) as err:
        client.CustomObjectsApi(api).create_namespaced_custom_object(
            GROUP,
            VERSION,
            NS,
            "hostclaims",
            {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "HostClaim",
                "metadata": {"name": "by-hand"},
                "spec": {
                    "poweredOn": False,
                    "hostSelector": {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]},
                },
            },
        )
    assert "invalid operation In" in err.value.body
    assert read_claim(env)["metadata"]["resourceVersion"] == version

    # what BMO's dialect lacks, and a forced dialect the cluster does not serve: one error each, nothing changed
    run = play(
        env,
        workdir / "errors",
        [
            task("node reuse", "host_claim", dict(CLAIM, node_reuse="keep")),
            task("forced proposal", "host_claim", dict(CLAIM, dialect="proposal", online=True)),
            task("release keeping", "host_release", {"name": "web", "namespace": NS, "node_reuse": "keep"}),
        ],
    )
    for name in ("node reuse", "release keeping"):
        failed = run.result(name)
        assert failed["failed"] is True and failed["error_type"] == "InvalidInput", failed
        assert failed["msg"] == (
            f"HostClaim {NS}/web: nodeReuse cannot be set on a baremetal-operator HostClaim (this cluster's dialect)"
        )
    forced = run.result("forced proposal")
    assert forced["failed"] is True and forced["msg"].startswith(
        "option dialect: is proposal but the cluster serves the bmo HostClaim"
    ), forced
    assert read_claim(env)["metadata"]["resourceVersion"] == version

    # an update: poweredOn only, with its diff; then host_claim_info reads the claim
    on = dict(CLAIM, online=True)
    run = play(
        env,
        workdir / "update",
        [
            task("power on (check)", "host_claim", on, check_mode=True, diff=True),
            task("power on", "host_claim", on, diff=True),
            task("power on again", "host_claim", on),
            task("info", "host_claim_info", {"namespace": NS}),
        ],
    )
    check, update, again = run.result("power on (check)"), run.result("power on"), run.result("power on again")
    assert check["changed"] is True and update["changed"] is True and again["changed"] is False, run.explain()
    assert update["diff"]["before"]["spec"]["poweredOn"] is False and update["diff"]["after"]["spec"]["poweredOn"]
    after = read_claim(env)
    assert after["spec"]["poweredOn"] is True
    assert dict(after["spec"], poweredOn=False) == claim["spec"]
    info = run.result("info")
    assert info["dialect"] == "bmo" and [c["name"] for c in info["claims"]] == ["web"], info
    assert info["claims"][0]["online"] is True and info["claims"][0]["host"] is None
    assert info["claims"][0]["image"]["url"] == IMAGE["url"]

    # host_release: check mode keeps the claim, the real run deletes it (no binder holds it), again nothing
    release = {"name": "web", "namespace": NS}
    run = play(
        env,
        workdir / "release",
        [
            task("release (check)", "host_release", release, check_mode=True),
            task("release", "host_release", dict(release, wait=True, wait_timeout=60)),
            task("release again", "host_release", release),
        ],
    )
    check, released, again = run.result("release (check)"), run.result("release"), run.result("release again")
    assert check["changed"] is True and check["released"] is True, run.explain()
    assert released["changed"] is True and released["released"] is True and released["host"] is None
    assert released["dialect"] == "bmo" and released["claim"]["online"] is True
    assert again["changed"] is False and again["released"] is False
    assert read_claim(env) is None
