"""Every module: bad input fails clearly and changes nothing; check mode writes nothing; a second run changes nothing.

Bad input (tenant and binder runs): unknown selector operator, a claim naming
a Secret that does not exist, an image without checksum, a negative
timeout, a namespace that does not exist, an option of the other backend.

Idempotence and check mode: host_claim (create, update), host_claim_info,
host_bind (bind, then release), host_release: check mode first (reports the
change, writes nothing), then the real run (changed), then the same run again
(not changed); diff mode shows before and after.

The host is a real BareMetalHost of Metal3's baremetal-operator (``metal3_bmo_env``):
the image the binder passes down (the stack's live ISO) is deployed at once, so the
test waits for the operator between the binder's passes: provisioned (one pass
brings that up to the claim, the next changes nothing), then, after the release,
deprovisioned to available (one pass finishes the release, the next changes nothing).
"""

from __future__ import annotations

import pytest
from fixtures_machines import binder_loop
from harness import baremetal_operator as bmo
from harness.ansible import REPO_ROOT, run_playbook

pytestmark = pytest.mark.real_bmo

INFRA = "mod-infra"
NS = "mod-a"
SELECTOR = {"matchLabels": {"suite": "modules"}}
IMAGE = {}  # the stack's live ISO (filled in by the ``world`` fixture): no checksum needed


@pytest.fixture(scope="module")
def world(metal3_bmo_env):
    env = metal3_bmo_env
    IMAGE.update(bmo.live_iso_image(env.operator.live_iso_url))
    env.tenant_namespace(INFRA, None)
    env.tenant_namespace(NS, "tenant-a")
    env.create_host(INFRA, "mod-h1", index=400, policy={"matches": "mod-.*"}, labels={"suite": "modules"}, wait=False)
    env.wait_host(INFRA, "mod-h1", state="available", timeout=300)
    yield env
    env.forget_claims(NS)
    env.delete_hosts(INFRA)


def claim(task, name="web", namespace=NS, who="tenant-a", **args):
    return {
        "name": task,
        "as": who,
        "ignore_errors": True,
        "baremetal.tenancy.host_claim": dict(dict(name=name, namespace=namespace), **args),
    }


def written(host):
    """What a client can write to a host (the operator writes its status on its own)."""
    meta = host["metadata"]
    return meta["generation"], meta.get("labels"), meta.get("annotations"), host["spec"]


def test_bad_input_fails_clearly_and_changes_nothing(world):
    env = world
    host_before = written(env.host(INFRA, "mod-h1"))
    env.steps([claim("existing", name="kept", host_selector=SELECTOR)])
    kept_before = env.claim(NS, "kept")["metadata"]["resourceVersion"]
    near = {"matchExpressions": [{"key": "suite", "operator": "Near", "values": ["modules"]}]}
    run = env.steps(
        [
            claim("unknown operator", host_selector=near),
            claim("missing secret", host_selector=SELECTOR, user_data_secret="no-such-secret"),
            claim("missing secret on update", name="kept", network_data_secret="no-such-secret"),
            claim(
                "image without checksum",
                host_selector=SELECTOR,
                image={"url": "https://images.example.com/os.qcow2", "format": "qcow2"},
            ),
            claim("negative timeout", host_selector=SELECTOR, wait=True, wait_timeout=-1),
            claim("namespace missing (tenant)", namespace="mod-nope", host_selector=SELECTOR),
            claim("namespace missing (admin)", namespace="mod-nope", who="admin", host_selector=SELECTOR),
            claim("ironic option", host_selector=SELECTOR, resource_class="baremetal"),
            claim("reserved annotation", annotations={"hostclaim.metal3.io/host": "mod-h1"}),
            {
                "name": "release negative timeout",
                "as": "tenant-a",
                "ignore_errors": True,
                "baremetal.tenancy.host_release": {"name": "kept", "namespace": NS, "wait": True, "wait_timeout": -5},
            },
            {
                "name": "info missing namespace",
                "as": "tenant-a",
                "ignore_errors": True,
                "baremetal.tenancy.host_claim_info": {},
            },
            {
                "name": "bind missing namespace",
                "as": "binder",
                "ignore_errors": True,
                "baremetal.tenancy.host_bind": {"namespaces": ["mod-nope"]},
            },
            {
                "name": "bind name without namespace",
                "as": "binder",
                "ignore_errors": True,
                "baremetal.tenancy.host_bind": {"name": "web"},
            },
            {
                "name": "bind zero workers",
                "as": "binder",
                "ignore_errors": True,
                "baremetal.tenancy.host_bind": {"workers": 0},
            },
        ]
    )
    expected = {
        "unknown operator": (
            "InvalidInput",
            "HostClaim mod-a/web: option host_selector: spec.hostSelector.matchExpressions[0]: unknown operator 'Near'",
        ),
        "missing secret": (
            "InvalidInput",
            "HostClaim mod-a/web: option user_data_secret: spec.userData: Secret 'no-such-secret' was not found in namespace mod-a",
        ),
        "missing secret on update": (
            "InvalidInput",
            "HostClaim mod-a/kept: option network_data_secret: spec.networkData: Secret 'no-such-secret' was not found",
        ),
        "image without checksum": (
            "InvalidInput",
            "HostClaim mod-a/web: option image: spec.image: a checksum is required unless format is live-iso",
        ),
        "negative timeout": ("InvalidInput", "option wait_timeout: must be zero or more seconds, got -1"),
        "namespace missing (tenant)": ("Forbidden", "HostClaim mod-nope/web: "),
        "namespace missing (admin)": ("InvalidInput", "namespace mod-nope: does not exist"),
        "ironic option": ("InvalidInput", "option resource_class: is for backend ironic"),
        "reserved annotation": (
            "InvalidInput",
            "option annotations: key 'hostclaim.metal3.io/host' is reserved for the binder",
        ),
        "release negative timeout": ("InvalidInput", "option wait_timeout: must be zero or more seconds, got -5"),
        "info missing namespace": ("InvalidInput", "option namespace: namespace or namespaces is required"),
        "bind missing namespace": ("InvalidInput", "option namespaces: namespace(s) mod-nope do not exist"),
        "bind name without namespace": (
            "InvalidInput",
            "option name: 'web' needs exactly one namespace in namespaces, got none",
        ),
        "bind zero workers": ("InvalidInput", "option workers: must be 1 or more, got 0"),
    }
    for task, (error_type, message) in expected.items():
        result = run.result(task)
        assert result.get("failed") is True, (task, result)
        assert result["changed"] is False, task
        assert result["error_type"] == error_type, (task, result["msg"])
        assert result["msg"].startswith(message), (task, result["msg"])
    assert "forbidden" in run.result("namespace missing (tenant)")["msg"]
    # nothing changed
    assert [c["metadata"]["name"] for c in env.claims(NS)] == ["kept"]
    assert env.claim(NS, "kept")["metadata"]["resourceVersion"] == kept_before
    assert written(env.host(INFRA, "mod-h1")) == host_before
    env.forget_claims(NS)


def info(task, **args):
    return {"name": task, "as": "tenant-a", "baremetal.tenancy.host_claim_info": dict(namespace=NS, **args)}


def changes(run):
    assert run.ok, run.explain()
    return dict((name, run.result(name)["changed"]) for name in run.tasks)


def test_check_mode_then_run_then_run_again(world):
    """Each module: check mode, then the run, then the run again; the real operator moves the host
    between the binder's passes (provisioned after the update, available after the release)."""
    env = world
    host_rv = env.host(INFRA, "mod-h1")["metadata"]["resourceVersion"]
    bind = {"as": "binder", "baremetal.tenancy.host_bind": {"namespaces": [NS]}}
    create = dict(host_selector=SELECTOR, online=False)
    update = dict(image=IMAGE, online=True)
    release = {"as": "tenant-a", "baremetal.tenancy.host_release": {"name": "web", "namespace": NS, "node_reuse": "w"}}
    # 1. claim, bind, update, pass the update down: the operator starts deploying at once
    run = env.steps(
        [
            dict(claim("create (check)", **create), check_mode=True, diff=True),
            info("nothing yet"),
            dict(claim("create", **create), diff=True),
            claim("create again", **create),
            dict(bind, name="bind (check)", check_mode=True, diff=True),
            info("still unbound", name="web"),
            dict(bind, name="bind", diff=True),
            dict(bind, name="bind again"),
            dict(claim("update (check)", **update), check_mode=True, diff=True),
            info("not updated", name="web"),
            claim("update", **update),
            claim("update again", **update),
            dict(bind, name="pass update down"),
        ]
    )
    assert changes(run) == {
        "create (check)": True,
        "nothing yet": False,
        "create": True,
        "create again": False,
        "bind (check)": True,
        "still unbound": False,
        "bind": True,
        "bind again": False,
        "update (check)": True,
        "not updated": False,
        "update": True,
        "update again": False,
        "pass update down": True,
    }
    # check mode wrote nothing
    assert run.result("nothing yet")["claims"] == []
    assert run.result("still unbound")["claims"][0]["associated"] is False
    assert run.result("bind (check)")["claims"][0]["action"] == "bound"
    assert run.result("not updated")["claims"][0]["image"] is None
    # diffs
    diff = run.result("create (check)")["diff"]
    assert diff["before"] == {} and diff["after"]["spec"]["hostSelector"] == SELECTOR
    assert run.result("update (check)")["diff"]["after"]["spec"]["image"]["url"] == IMAGE["url"]
    assert run.result("update (check)")["diff"]["before"]["spec"].get("image") is None
    bind_diff = run.result("bind")["diff"]
    assert bind_diff == {
        "before": {"bindings": {"%s/web" % NS: None}},
        "after": {"bindings": {"%s/web" % NS: "%s/mod-h1" % INFRA}},
    }
    host = env.host(INFRA, "mod-h1")
    assert host["spec"]["image"]["url"] == IMAGE["url"] and host["spec"]["online"] is True

    # 2. provisioned: one pass brings that up to the claim, the next changes nothing; release
    env.wait_host(INFRA, "mod-h1", state="provisioned", powered=True, timeout=300)
    run = env.steps(
        [
            dict(bind, name="bring provisioned up"),
            dict(bind, name="bring provisioned up again"),
            info("info"),
            info("info again"),
            dict(release, name="release (check)", check_mode=True, diff=True),
            info("not released", name="web"),
            dict(release, name="release", diff=True),
            dict(release, name="release again"),
            dict(bind, name="deprovision (check)", check_mode=True),
            dict(bind, name="deprovision"),
        ]
    )
    assert changes(run) == {
        "bring provisioned up": True,
        "bring provisioned up again": False,
        "info": False,
        "info again": False,
        "release (check)": True,
        "not released": False,
        "release": True,
        "release again": False,
        "deprovision (check)": True,
        "deprovision": True,
    }
    (view,) = run.result("info")["claims"]
    assert view["ready"] is True and view["provisioning_state"] == "provisioned" and view["powered_on"] is True
    assert run.result("not released")["claims"][0]["deleting"] is False
    release_diff = run.result("release (check)")["diff"]
    assert release_diff["before"]["metadata"]["name"] == "web" and release_diff["after"] == {}
    assert run.result("deprovision (check)")["claims"][0]["action"] == "releasing"
    assert run.result("deprovision")["claims"][0]["action"] == "releasing"
    host = env.host(INFRA, "mod-h1")
    assert "image" not in host["spec"] and host["spec"]["online"] is False
    assert host["spec"]["consumerRef"]["name"] == "web"  # still bound while the operator deprovisions

    # 3. available again: one pass finishes the release, the next changes nothing
    env.wait_host(INFRA, "mod-h1", state="available", powered=False, timeout=300)
    run = env.steps(
        [
            dict(bind, name="release pass (check)", check_mode=True),
            dict(bind, name="release pass"),
            dict(bind, name="release pass again"),
            dict(release, name="release once gone"),
            claim("delete once gone", state="absent"),
            claim(
                "wait times out",
                name="lonely",
                host_selector={"matchLabels": {"suite": "none"}},
                wait=True,
                wait_for="associated",
                wait_timeout=1,
            ),
        ]
    )
    assert changes(run) == {
        "release pass (check)": True,
        "release pass": True,
        "release pass again": False,
        "release once gone": False,
        "delete once gone": False,
        "wait times out": True,
    }
    assert run.result("release pass (check)")["claims"][0]["action"] == "released"
    assert run.result("release pass")["claims"][0]["action"] == "released"
    timed_out = run.result("wait times out")
    assert timed_out["failed"] and timed_out["error_type"] == "WaitTimeout"
    assert timed_out["msg"] == "HostClaim mod-a/lonely: not bound to a host after 1 seconds"
    # after all: the host is free and labelled for reuse
    host = env.host(INFRA, "mod-h1")
    assert (
        "consumerRef" not in host["spec"]
        and host["metadata"]["labels"]["infrastructure.cluster.x-k8s.io/node-reuse"] == "%s.w" % NS
    )
    assert int(host["metadata"]["resourceVersion"]) > int(host_rv)
    assert env.claim(NS, "web") is None


# --------------------------------------------------------------------------- examples/module_defaults.yml

EXAMPLE_NS = "tenant-a"  # the example's namespace
EXAMPLE_HOST = "mod-small"


def test_module_defaults_example_claims_with_the_kubeconfig_of_the_action_group(world, tmp_path):
    """``examples/module_defaults.yml`` as a tenant runs it: no kubeconfig in the environment, only
    ``$HOME/.kube/tenant-a.kubeconfig``, which ``module_defaults`` (group/baremetal.tenancy.all) gives every
    module of the collection. A host labelled ``infra-kind: small`` shared with tenant-a is free; the owner's
    binder runs in the background, so the claim's ``wait_for: associated`` returns once it is bound."""
    env = world
    env.tenant_namespace(EXAMPLE_NS, "tenant-a")
    env.create_host(
        INFRA,
        EXAMPLE_HOST,
        index=401,
        policy={"matches": EXAMPLE_NS},
        labels={"infra-kind": "small", "suite": "modules-example"},
        wait=False,
    )
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    (home / ".kube" / "tenant-a.kubeconfig").write_text(env.kube.kubeconfig("tenant-a").read_text())
    # The tenant's environment without any Kubernetes credentials: only module_defaults names the kubeconfig.
    tenant = {k: v for k, v in env.kube.ansible_env("tenant-a").items() if k != "K8S_AUTH_KUBECONFIG"}
    tenant["HOME"] = str(home)
    try:
        env.wait_host(INFRA, EXAMPLE_HOST, state="available", timeout=300)
        with binder_loop(env.kube, [EXAMPLE_NS], tmp_path / "binder"):
            run = run_playbook(REPO_ROOT / "examples" / "module_defaults.yml", tenant, tmp_path / "example")
        assert run.ok, run.explain()
        claimed = run.result("Claim a host")
        assert claimed["changed"] is True
        claim = env.claim(EXAMPLE_NS, "web-0")
        assert claim["spec"]["hostSelector"] == {"matchLabels": {"infra-kind": "small"}}
        assert claim["metadata"]["labels"]["hostclaim.metal3.io/host"] == EXAMPLE_HOST
        host = env.host(INFRA, EXAMPLE_HOST)
        assert host["spec"]["consumerRef"]["namespace"] == EXAMPLE_NS
        assert host["spec"]["consumerRef"]["name"] == "web-0"
        assert host["spec"]["consumerRef"]["uid"] == claim["metadata"]["uid"]
        # What the play listed and showed: the tenant's one claim, bound to that host.
        (listed,) = run.result("List my claims")["claims"]
        assert listed["name"] == "web-0" and listed["host"] == EXAMPLE_HOST and listed["associated"] is True
        shown = run.result("Show them")["examples_claims.claims"]
        assert [(c["name"], c["host"]) for c in shown] == [("web-0", EXAMPLE_HOST)]
        # Nothing but module_defaults led the modules to a kubeconfig.
        assert "K8S_AUTH_KUBECONFIG" not in tenant and "KUBECONFIG" not in tenant
        assert sorted(p.name for p in (home / ".kube").iterdir()) == ["tenant-a.kubeconfig"]
    finally:
        env.forget_claims(EXAMPLE_NS)
        env.delete_hosts(INFRA, [EXAMPLE_HOST])
