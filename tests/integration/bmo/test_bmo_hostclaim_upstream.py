"""baremetal-operator's own HostClaim controller (v0.14, ``--hostclaims``), observed on the real operator.

The collection speaks BMO's HostClaim dialect too (metal3/claim/dialect.py,
metal3/share/deploy_policy.py) and documents where its binder differs from upstream's
controller. This module runs upstream's controller, on a cluster of its own
with BMO's own CRDs (HostClaim with ``spec.poweredOn``, HostDeployPolicy),
webhooks and a real host, and shows each difference from the operator itself:

- a ``HostDeployPolicy`` whose ``nameMatches`` is ``prod`` lets a claim of the
  namespace ``not-prod`` bind the host (Go's unanchored ``regexp.MatchString``).
  The collection's model of upstream (``unanchored=True``) admits it too, and
  its own reading (a whole-name match, the default) refuses it, saying why;
- a tenant tells the dialect from the API server's OpenAPI document (it
  may not read CRDs);
- deleting a claim only clears the host's ``consumerRef``: a host provisioned
  for that claim stays ``provisioned``, powered on, with the last tenant's
  image, and, not being ``available``, is never offered to a claim again
  (stranded, not cleaned).

Side by side, the same dialect with ``host_bind`` as the controller: a claim
written as kubectl YAML is bound, provisioned by the real operator with its
image, user data and power, rebooted, released with the host deprovisioned and
bound again; ``nameMatches`` is matched whole (upstream's reading on demand);
``host_bind`` refuses to run on claims upstream's controller writes; and the EDA
binder rulebook serves a kubectl claim from its creation to a deprovisioned host
with no pass run by hand.
"""

from __future__ import annotations

import base64
import itertools
import sys

import pytest
from fixtures_bmo import create_hosts, tenant_namespace, wait_for
from fixtures_inventory import ALL_HOST_VARIABLES, inventory, write_source
from harness import baremetal_operator as bmo
from harness.ansible import REPO_ROOT, collections_root, localhost_play, run_playbook
from harness.rulebook import Rulebook
from kubernetes import client

# The collection's own pure model of upstream's policy semantics, checked against the operator here.
if str(collections_root()) not in sys.path:
    sys.path.append(str(collections_root()))
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import dialect as claim_dialect
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.client import KubeIO
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share import deploy_policy

pytestmark = pytest.mark.real_bmo

INFRA = "bd-infra"
GROUP, VERSION = "metal3.io", "v1alpha1"


@pytest.fixture(scope="module")
def upstream(bmo_dialect):
    """The BMO-dialect cluster (fixtures_bmo.bmo_dialect) with this suite's host up-0 available."""
    env, stack = bmo_dialect
    with env.api("admin") as api:
        create_hosts(api, stack, INFRA, {"up-0": (0, "upstream")})
    return env, stack


def test_upstream_binds_by_unanchored_name_matches_and_strands_the_host_at_release(upstream):
    env, stack = upstream
    policy = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "HostDeployPolicy",
        "metadata": {"name": "prod-only", "namespace": INFRA},
        "spec": {"hostClaimNamespaces": {"nameMatches": "prod"}},
    }
    claim = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "HostClaim",
        "metadata": {"name": "web", "namespace": "not-prod"},
        "spec": {"poweredOn": False, "hostSelector": {"matchLabels": {"pool": "upstream"}}},
    }
    with env.api("admin") as api:
        custom = client.CustomObjectsApi(api)
        custom.create_namespaced_custom_object(GROUP, VERSION, INFRA, "hostdeploypolicies", policy)
        # a claim as a user writes it with kubectl, in BMO's shape
        custom.create_namespaced_custom_object(GROUP, VERSION, "not-prod", "hostclaims", claim)

        def read_claim():
            return custom.get_namespaced_custom_object(GROUP, VERSION, "not-prod", "hostclaims", "web")

        bound = wait_for(
            "associated by upstream's controller",
            read_claim,
            lambda c: (c.get("status") or {}).get("bareMetalHost") == {"namespace": INFRA, "name": "up-0"},
            stack,
        )
        assert "metal3.io/hostclaim" in bound["metadata"]["finalizers"]
        associated = {c["type"]: c for c in bound["status"]["conditions"]}["Associated"]
        assert (associated["status"], associated["reason"]) == ("True", "BareMetalHostAssociated")
        host = custom.get_namespaced_custom_object(GROUP, VERSION, INFRA, "baremetalhosts", "up-0")
        assert host["spec"]["consumerRef"]["name"] == "web" and host["spec"]["consumerRef"]["namespace"] == "not-prod"

    # The collection's model of upstream agrees with what the operator did; its own reading refuses.
    assert deploy_policy.evaluate_namespace([policy], INFRA, "not-prod", {}, unanchored=True).allowed
    refused = deploy_policy.evaluate_namespace([policy], INFRA, "not-prod", {})
    assert not refused.allowed and deploy_policy.ANCHORING_NOTE in refused.reason

    with env.api("admin") as api:
        custom = client.CustomObjectsApi(api)
        # Upstream passes nothing down (its update step is a stub): the owner provisions the host by hand,
        # as the tenant's deployment would have been.
        custom.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            INFRA,
            "baremetalhosts",
            "up-0",
            {"spec": {"image": bmo.live_iso_image(stack.live_iso_url), "online": True}},
        )
        bmo.wait_hosts(
            api,
            stack,
            INFRA,
            ["up-0"],
            lambda h: bmo.host_state(h) == "provisioned" and (h.get("status") or {}).get("poweredOn") is True,
            "provisioned and powered on",
            300,
        )
        # The tenant releases the claim; upstream's controller clears consumerRef and drops its finalizer ...
        custom.delete_namespaced_custom_object(GROUP, VERSION, "not-prod", "hostclaims", "web")

        def gone():
            try:
                read_claim()
            except client.exceptions.ApiException as exc:
                if exc.status == 404:
                    return True
                raise
            return False

        wait_for("deleted", gone, bool, stack)
        host = custom.get_namespaced_custom_object(GROUP, VERSION, INFRA, "baremetalhosts", "up-0")
    # ... and nothing else: the host keeps the last tenant's image, provisioned and powered on, and no claim
    # can have it (upstream offers only available hosts): stranded, never cleaned.
    assert not host["spec"].get("consumerRef")
    assert host["spec"]["image"]["url"] == stack.live_iso_url and host["spec"]["online"] is True
    assert bmo.host_state(host) == "provisioned"


def test_a_tenant_tells_the_dialect_from_the_openapi_document(upstream):
    """What the collection's modules read to choose the dialect, with a tenant's rights (no CRD access)."""
    env, _stack = upstream
    with env.api("tenant-a") as api:
        document = KubeIO(api).hostclaim_openapi()
    assert claim_dialect.openapi_dialect(document) == claim_dialect.BMO
    assert {"poweredOn", "failureDomain"} <= set(claim_dialect.openapi_spec_fields(document))


# ---------------------------------------------------------------------------------------------------------------
# The same dialect with host_bind as the controller (ansible-playbook, binder and tenant identities). Its claims
# live in namespaces upstream's controller does not watch (bh-prod, not-bh-prod); its host in one it does (bh-infra),
# so that the real operator provisions it.
# ---------------------------------------------------------------------------------------------------------------

BH_INFRA, BH_PROD, BH_NOT_PROD = "bh-infra", "bh-prod", "not-bh-prod"


@pytest.fixture(scope="module")
def binder_side(bmo_dialect_rbac, tmp_path_factory):
    """tenant-a in bh-prod and not-bh-prod, host bh-0 available in bh-infra, and a HostDeployPolicy whose
    nameMatches is ``bh-prod``, on the BMO-dialect cluster after hostclaim_setup."""
    env, stack = bmo_dialect_rbac
    with env.api("admin") as api:
        for namespace in (BH_PROD, BH_NOT_PROD):
            tenant_namespace(api, namespace, "tenant-a")
        client.CustomObjectsApi(api).create_namespaced_custom_object(
            GROUP,
            VERSION,
            BH_INFRA,
            "hostdeploypolicies",
            {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "HostDeployPolicy",
                "metadata": {"name": "prod-only", "namespace": BH_INFRA},
                "spec": {"hostClaimNamespaces": {"nameMatches": BH_PROD}},
            },
        )
        create_hosts(api, stack, BH_INFRA, {"bh-0": (3, "binder")})
    return env, stack, tmp_path_factory.mktemp("bh")


_RUNS = itertools.count(1)


def bind(env, workdir, namespaces, **options):
    """One host_bind pass through ansible-playbook as the binder identity; the task's result (failed or not)."""
    task = {
        "name": "bind",
        "baremetal.tenancy.host_bind": dict(options, namespaces=list(namespaces)),
        "ignore_errors": True,
    }
    run = run_playbook(localhost_play([task]), env.ansible_env("binder"), workdir / ("bind-%02d" % next(_RUNS)))
    return run.result("bind")


def wait_bh0(env, stack, state, powered, what, also=None, timeout=300):
    """Wait until the real operator reports host bh-0 in ``state`` (``None``: any) with power ``powered``."""
    with env.api("admin") as api:
        bmo.wait_hosts(
            api,
            stack,
            BH_INFRA,
            ["bh-0"],
            lambda h: (
                (state is None or bmo.host_state(h) == state)
                and (h.get("status") or {}).get("poweredOn") is powered
                and (also is None or also(h))
            ),
            what,
            timeout,
        )


def kube_object(env, namespace, plural, name, identity="admin"):
    with env.api(identity) as api:
        try:
            return client.CustomObjectsApi(api).get_namespaced_custom_object(GROUP, VERSION, namespace, plural, name)
        except client.exceptions.ApiException as exc:
            if exc.status == 404:
                return None
            raise


def claim_conditions(claim):
    return {c["type"]: (c["status"], c["reason"]) for c in claim["status"]["conditions"]}


def test_host_bind_serves_a_kubectl_claim_end_to_end_and_cleans_the_host_at_release(binder_side):
    """claim (kubectl YAML, BMO's shape) -> bound -> image, userData, poweredOn on the host -> the real operator
    provisions -> reboot -> release -> deprovisioned -> the host is bound again: every write through BMO's webhooks."""
    env, stack, workdir = binder_side
    user_data = base64.b64encode(b"#cloud-config\nhostname: web\n").decode()
    claim = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "HostClaim",
        "metadata": {"name": "web", "namespace": BH_PROD},
        "spec": {
            "poweredOn": True,
            "image": bmo.live_iso_image(stack.live_iso_url),
            "userData": {"name": "web-ud", "namespace": BH_PROD},
            "hostSelector": {"matchLabels": {"pool": "binder"}},
        },
    }
    with env.api("tenant-a") as api:
        client.CoreV1Api(api).create_namespaced_secret(
            BH_PROD, client.V1Secret(metadata=client.V1ObjectMeta(name="web-ud"), data={"userData": user_data})
        )
        client.CustomObjectsApi(api).create_namespaced_custom_object(GROUP, VERSION, BH_PROD, "hostclaims", claim)

    first = bind(env, workdir, [BH_PROD])
    assert not first.get("failed") and first["errors"] == [], first
    assert first["dialect"] == "bmo" and first["claims"][0]["action"] == "bound"
    host = kube_object(env, BH_INFRA, "baremetalhosts", "bh-0")
    assert host["spec"]["consumerRef"]["name"] == "web" and host["spec"]["online"] is True
    assert host["spec"]["image"]["url"] == stack.live_iso_url
    copy_name = host["spec"]["userData"]["name"]
    with env.api("admin") as api:
        copied = client.CoreV1Api(api).read_namespaced_secret(copy_name, BH_INFRA)
    assert copied.data == {"userData": user_data}
    bound = kube_object(env, BH_PROD, "hostclaims", "web", "tenant-a")
    assert bound["metadata"]["finalizers"] == ["metal3.io/hostclaim"]
    assert bound["status"]["bareMetalHost"] == {"namespace": BH_INFRA, "name": "bh-0"}
    assert claim_conditions(bound)["Associated"] == ("True", "BareMetalHostAssociated")
    assert claim_conditions(bound)["Synchronized"] == ("True", "ConfigurationSynced")

    wait_bh0(env, stack, "provisioned", True, "provisioned and powered on")
    ready = bind(env, workdir, [BH_PROD])
    assert ready["errors"] == [] and ready["claims"][0]["action"] == "updated", ready
    claim_now = kube_object(env, BH_PROD, "hostclaims", "web", "tenant-a")
    assert claim_conditions(claim_now)["Provisioned"] == ("True", "Provisioned")
    assert claim_conditions(claim_now)["Ready"] == ("True", "InfoReported")
    assert claim_now["status"]["poweredOn"] is True
    assert bind(env, workdir, [BH_PROD])["settled"] is True

    # a reboot request in BMO's own annotation (its webhook validates it on claims) reaches the host once
    with env.api("tenant-a") as api:
        client.CustomObjectsApi(api).patch_namespaced_custom_object(
            GROUP, VERSION, BH_PROD, "hostclaims", "web", {"metadata": {"annotations": {"reboot.metal3.io": ""}}}
        )
    rebooting = bind(env, workdir, [BH_PROD])
    assert rebooting["errors"] == [], rebooting
    assert "reboot.metal3.io" not in (
        kube_object(env, BH_PROD, "hostclaims", "web")["metadata"].get("annotations") or {}
    )
    wait_bh0(
        env, stack, None, True, "rebooted", lambda h: "reboot.metal3.io" not in (h["metadata"].get("annotations") or {})
    )

    # release: the host is deprovisioned before it goes back (upstream hands it on still provisioned)
    with env.api("tenant-a") as api:
        client.CustomObjectsApi(api).delete_namespaced_custom_object(GROUP, VERSION, BH_PROD, "hostclaims", "web")
    releasing = bind(env, workdir, [BH_PROD])
    assert releasing["claims"][0]["action"] == "releasing", releasing
    held = kube_object(env, BH_INFRA, "baremetalhosts", "bh-0")
    assert held["spec"]["consumerRef"]["name"] == "web" and not held["spec"].get("image")
    wait_bh0(env, stack, "available", False, "deprovisioned")
    released = bind(env, workdir, [BH_PROD])
    assert released["errors"] == [] and released["claims"][0]["action"] == "released", released
    assert kube_object(env, BH_PROD, "hostclaims", "web") is None
    host = kube_object(env, BH_INFRA, "baremetalhosts", "bh-0")
    assert not host["spec"].get("consumerRef") and not host["spec"].get("image") and not host["spec"].get("userData")
    with env.api("admin") as api:
        with pytest.raises(client.exceptions.ApiException) as gone:
            client.CoreV1Api(api).read_namespaced_secret(copy_name, BH_INFRA)
        assert gone.value.status == 404

    # the clean host is bound again, this time claimed and released by the tenant's playbooks (host_claim and
    # host_release, dialect auto); nothing the tenant's modules and inventory return repeats BMC data
    claims = [
        {
            "name": "next",
            "online": False,
            "host_selector": {"matchLabels": {"pool": "binder"}},
            "in_namespace": BH_INFRA,
        }
    ]
    claimed = run_playbook(
        REPO_ROOT / "playbooks" / "metal3_claim_hosts.yml",
        env.ansible_env("tenant-a"),
        workdir / "claim-playbook",
        extra_vars={"claim_namespace": BH_PROD, "claim_hosts": claims},
    )
    assert claimed.ok, claimed.explain()
    written = kube_object(env, BH_PROD, "hostclaims", "next", "tenant-a")
    assert written["spec"]["hostSelector"]["inNamespace"] == BH_INFRA and written["spec"]["poweredOn"] is False
    rebound = bind(env, workdir, [BH_PROD])
    assert rebound["claims"][0]["action"] == "bound" and rebound["claims"][0]["host"] == "bh-0", rebound
    # the tenant's inventory and host_claim_info show the claim bound to bh-0, from the claim alone
    source = write_source(workdir / "bh.claimed_hosts.yml", namespaces=[BH_PROD], host_variables=ALL_HOST_VARIABLES)
    data, inventory_text = inventory(source, env.ansible_env("tenant-a"), workdir)
    assert list(data["_meta"]["hostvars"]) == ["next"], data
    variables = data["_meta"]["hostvars"]["next"]
    assert (variables["tenancy_host"], variables["tenancy_backend"]) == ("bh-0", "metal3"), variables
    seen = tenant_run(
        env,
        workdir,
        [
            ("info", "host_claim_info", {"namespace": BH_PROD}),
        ],
    )
    (record,) = seen.result("info")["claims"]
    assert (record["name"], record["host"]) == ("next", "bh-0"), record
    bmc = stack.bmcs[3]
    leaked = [
        value
        for value in (bmc.address, bmc.base_url.split("://")[1], bmc.username, bmc.password, bmc.uuid, "bh-0-bmc")
        if value in seen.stdout or value in inventory_text
    ]
    assert leaked == []
    released_by_playbook = run_playbook(
        REPO_ROOT / "playbooks" / "metal3_release_hosts.yml",
        env.ansible_env("tenant-a"),
        workdir / "release-playbook",
        extra_vars={"claim_namespace": BH_PROD, "release_claims": ["next"], "release_wait": False},
    )
    assert released_by_playbook.ok, released_by_playbook.explain()
    assert bind(env, workdir, [BH_PROD])["claims"][0]["action"] == "released"
    assert kube_object(env, BH_PROD, "hostclaims", "next") is None


def tenant_run(env, workdir, steps):
    """Tenant-a's modules through ansible-playbook: ``(task name, module, options)``."""
    tasks = [{"name": name, "baremetal.tenancy.%s" % module: options} for name, module, options in steps]
    run = run_playbook(localhost_play(tasks), env.ansible_env("tenant-a"), workdir / ("tenant-%02d" % next(_RUNS)))
    assert run.ok, run.explain()
    return run


def test_host_bind_refuses_the_namespace_upstreams_unanchored_search_admits_and_says_so(binder_side):
    env, _stack, workdir = binder_side
    claim = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "HostClaim",
        "metadata": {"name": "web", "namespace": BH_NOT_PROD},
        "spec": {"poweredOn": False, "hostSelector": {"matchLabels": {"pool": "binder"}}},
    }
    with env.api("tenant-a") as api:
        client.CustomObjectsApi(api).create_namespaced_custom_object(GROUP, VERSION, BH_NOT_PROD, "hostclaims", claim)
    result = bind(env, workdir, [BH_NOT_PROD])
    assert result["errors"] == [] and result["claims"][0]["action"] == "pending", result
    # bh-infra's policy (nameMatches bh-prod), and bd-infra's of the test above (nameMatches prod) if it ran first
    notes = {note["host_namespace"]: note for note in result["anchoring"]}
    assert notes[BH_INFRA]["namespace"] == BH_NOT_PROD
    assert deploy_policy.ANCHORING_NOTE in notes[BH_INFRA]["reason"]
    pending = kube_object(env, BH_NOT_PROD, "hostclaims", "web", "tenant-a")
    # what upstream's controller writes on a claim it cannot serve: its own words, nothing about the policy
    associated = {c["type"]: c for c in pending["status"]["conditions"]}["Associated"]
    assert (associated["status"], associated["reason"], associated["message"]) == (
        "False",
        "NoBareMetalHost",
        "No available host found: requeuing.",
    )
    assert BH_INFRA not in str(pending["status"])
    # the owner who wants upstream's reading asks for it: the same host is then bound
    upstream_reading = bind(env, workdir, [BH_NOT_PROD], unanchored_name_matches=True)
    assert upstream_reading["claims"][0]["action"] == "bound" and upstream_reading["anchoring"] == []
    with env.api("tenant-a") as api:
        client.CustomObjectsApi(api).delete_namespaced_custom_object(GROUP, VERSION, BH_NOT_PROD, "hostclaims", "web")
    assert bind(env, workdir, [BH_NOT_PROD])["claims"][0]["action"] == "released"


def test_host_bind_refuses_to_run_beside_upstreams_controller_and_changes_nothing(binder_side, upstream):
    """A claim in a namespace upstream's controller watches gets its finalizer and status from it within a
    second; host_bind then stops with one error naming the claim and the writer, and writes nothing."""
    env, stack, workdir = binder_side
    claim = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "HostClaim",
        "metadata": {"name": "guard", "namespace": INFRA},
        "spec": {"poweredOn": False, "hostSelector": {"matchLabels": {"pool": "nowhere"}}},
    }
    with env.api("admin") as api:
        custom = client.CustomObjectsApi(api)
        custom.create_namespaced_custom_object(GROUP, VERSION, INFRA, "hostclaims", claim)
        wait_for(
            "written by upstream's controller",
            lambda: custom.get_namespaced_custom_object(GROUP, VERSION, INFRA, "hostclaims", "guard"),
            lambda c: (c.get("status") or {}).get("conditions"),
            stack,
        )
    result = bind(env, workdir, [INFRA])
    assert result.get("failed") is True, result
    assert "HostClaim %s/guard (status written by" % INFRA in result["msg"] and "take_over=true" in result["msg"]
    # upstream's controller may still be writing it; host_bind never did (its writes carry its field manager)
    after = kube_object(env, INFRA, "hostclaims", "guard")
    managers = {entry["manager"] for entry in after["metadata"]["managedFields"]}
    assert "baremetal.tenancy-host_bind" not in managers and len(managers) >= 2, managers
    with env.api("admin") as api:
        client.CustomObjectsApi(api).delete_namespaced_custom_object(GROUP, VERSION, INFRA, "hostclaims", "guard")
        wait_for(
            "deleted by upstream's controller",
            lambda: kube_object(env, INFRA, "hostclaims", "guard"),
            lambda c: c is None,
            stack,
        )


def test_the_eda_binder_serves_a_kubectl_claim_from_claim_to_deprovisioned_host_with_no_pass_by_hand(binder_side):
    """The binder rulebook (``binder.yml``, the binder identity) on BMO's dialect with the real operator: a claim
    written with kubectl is bound, the operator provisions the host and the claim says so, then its deletion
    ends with the host deprovisioned, clean and the claim gone; each pass asked by the rulebook's event source
    (the claim's changes, then the host's as the operator moves it)."""
    env, stack, workdir = binder_side
    claim = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "HostClaim",
        "metadata": {"name": "eda", "namespace": BH_PROD},
        "spec": {
            "poweredOn": True,
            "image": bmo.live_iso_image(stack.live_iso_url),
            "hostSelector": {"matchLabels": {"pool": "binder"}},
        },
    }
    variables = {"binder_namespaces": [BH_PROD], "binder_host_namespaces": [BH_INFRA], "binder_resync": 0}
    rulebook = Rulebook("baremetal.tenancy.binder", variables, env.ansible_env("binder"), workdir / "eda")
    try:
        with env.api("tenant-a") as api:
            client.CustomObjectsApi(api).create_namespaced_custom_object(GROUP, VERSION, BH_PROD, "hostclaims", claim)

        def read():
            assert rulebook.proc.poll() is None, "the rulebook ended:\n" + rulebook.output[-6000:]
            return kube_object(env, BH_PROD, "hostclaims", "eda", "tenant-a")

        provisioned = wait_for(
            "bound, provisioned and said so on the claim",
            read,
            lambda c: (
                c is not None
                and (c.get("status") or {}).get("bareMetalHost") == {"namespace": BH_INFRA, "name": "bh-0"}
                and claim_conditions(c).get("Provisioned") == ("True", "Provisioned")
            ),
            stack,
            timeout=420,
        )
        assert provisioned["status"]["poweredOn"] is True
        with env.api("tenant-a") as api:
            client.CustomObjectsApi(api).delete_namespaced_custom_object(GROUP, VERSION, BH_PROD, "hostclaims", "eda")
        wait_for("released", read, lambda c: c is None, stack, timeout=420)
        host = kube_object(env, BH_INFRA, "baremetalhosts", "bh-0")
        assert bmo.host_state(host) == "available" and not host["spec"].get("consumerRef"), host["spec"]
        assert not host["spec"].get("image")
        assert "binder pass" in rulebook.output
        bmc = stack.bmcs[3]
        assert [v for v in (bmc.address, bmc.password, "bh-0-bmc") if v in rulebook.output] == []
    finally:
        rulebook.kill()
