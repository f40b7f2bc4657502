"""Metal3's real baremetal-operator in the loop (BMO built from source, real Ironic, sushy-tools BMCs).

These prove the test bed before the Metal3 suites move onto it: BMO's own
CRDs and validating webhooks are live through the apiserver, a host goes
through BMO's real lifecycle (registering -> available -> provisioning ->
provisioned -> deprovisioning -> available), and a BMC that refuses the
credentials ends in BMO's registration error with BMO's own message.

And they measure where the owner's sharing policy can live: BMO's typed
writes drop a spec field its types lack (``spec.hostClaimNamespaces``), while
the annotation ``baremetal.tenancy/host-claim-namespaces`` survives them and
decides what host_bind binds.
"""

from __future__ import annotations

import subprocess
import time
import uuid

import pytest
from harness import baremetal_operator as bmo
from harness.kube import INFRA_NAMESPACE
from kubernetes import client
from kubernetes.client.rest import ApiException

pytestmark = pytest.mark.real_bmo

GROUP, VERSION, PLURAL = "metal3.io", "v1alpha1", "baremetalhosts"
JSON_PATCH = "application/json-patch+json"


def _hosts(api):
    return client.CustomObjectsApi(api)


def _create_host(api, name, bmc, *, password=None, labels=None):
    secret = bmo.bmc_secret(f"{name}-bmc", bmc, password=password)
    client.CoreV1Api(api).create_namespaced_secret(INFRA_NAMESPACE, secret)
    body = bmo.host_manifest(name, bmc, secret["metadata"]["name"], labels=labels)
    return _hosts(api).create_namespaced_custom_object(GROUP, VERSION, INFRA_NAMESPACE, PLURAL, body)


def _get(api, name):
    return _hosts(api).get_namespaced_custom_object(GROUP, VERSION, INFRA_NAMESPACE, PLURAL, name)


def _patch(api, name, body):
    return _hosts(api).patch_namespaced_custom_object(GROUP, VERSION, INFRA_NAMESPACE, PLURAL, name, body)


def _state(host):
    return ((host.get("status") or {}).get("provisioning") or {}).get("state")


def _wait(api, name, predicate, what, stack, timeout=180):
    deadline = time.monotonic() + timeout
    host = None
    while time.monotonic() < deadline:
        host = _get(api, name)
        if predicate(host):
            return host
        time.sleep(0.5)
    status = (host or {}).get("status", {})
    pytest.fail(
        f"{name}: not {what} after {timeout}s (state {_state(host)!r}, "
        f"error {status.get('errorType')!r}: {status.get('errorMessage')!r})\n"
        f"--- baremetal-operator log ---\n{stack.log_tail()}"
    )


def _wait_state(api, name, state, stack, timeout=180):
    return _wait(api, name, lambda h: _state(h) == state, state, stack, timeout)


def test_operator_listens_on_loopback_only(metal3_operator):
    """BMO's webhook and health servers (and nothing else of it) listen on 127.0.0.1."""
    out = subprocess.run(["ss", "-ltnHp"], capture_output=True, text=True, check=True).stdout
    mine = [line.split()[3] for line in out.splitlines() if f"pid={metal3_operator.proc.pid}," in line]
    assert len(mine) == 2, out  # health and webhook; metrics are off
    assert all(addr.startswith("127.0.0.1:") for addr in mine), mine


def test_webhook_rejects_what_bmo_rejects(kube_env, metal3_operator):
    """BMO's webhook is live: an invalid reboot annotation is refused through the apiserver."""
    bmc = metal3_operator.bmcs[3]
    with kube_env.api("admin") as api:
        body = bmo.host_manifest("webhook-probe", bmc, "webhook-probe-bmc")
        body["metadata"]["annotations"]["reboot.metal3.io"] = '{"mode": "sideways"}'
        with pytest.raises(ApiException) as refused:
            _hosts(api).create_namespaced_custom_object(GROUP, VERSION, INFRA_NAMESPACE, PLURAL, body)
        assert refused.value.status in (400, 403, 422), refused.value
        assert "admission webhook" in refused.value.body and "reboot.metal3.io" in refused.value.body, (
            refused.value.body
        )
        body["metadata"]["name"] = str(uuid.uuid4())
        body["metadata"]["annotations"].pop("reboot.metal3.io")
        with pytest.raises(ApiException) as uuid_name:
            _hosts(api).create_namespaced_custom_object(GROUP, VERSION, INFRA_NAMESPACE, PLURAL, body)
        assert "cannot be a UUID" in uuid_name.value.body, uuid_name.value.body


def test_host_goes_through_the_real_lifecycle(kube_env, metal3_operator):
    stack = metal3_operator
    bmc = stack.bmcs[0]
    timings = {}
    with kube_env.api("admin") as api:
        t0 = time.monotonic()
        _create_host(api, "host-0", bmc)
        _wait_state(api, "host-0", "available", stack)
        timings["created->available"] = time.monotonic() - t0

        t1 = time.monotonic()
        _patch(api, "host-0", {"spec": {"image": bmo.live_iso_image(stack.live_iso_url), "online": True}})
        host = _wait_state(api, "host-0", "provisioned", stack)
        host = _wait(api, "host-0", lambda h: h["status"].get("poweredOn") is True, "powered on", stack)
        timings["available->provisioned"] = time.monotonic() - t1
        assert host["status"]["provisioning"]["image"]["url"] == stack.live_iso_url

        # The BMC agrees: the operator powered the system on through Ironic.
        status, system = stack.sushy.request("GET", bmc.system_id)
        assert status == 200 and system["PowerState"] == "On", system

        t2 = time.monotonic()
        _patch(api, "host-0", {"spec": {"image": None, "online": False}})
        _wait_state(api, "host-0", "available", stack)
        timings["provisioned->available"] = time.monotonic() - t2
    print("real BMO lifecycle timings:", {k: round(v, 1) for k, v in timings.items()})


def test_refused_credentials_end_in_bmo_registration_error(kube_env, metal3_operator):
    stack = metal3_operator
    bmc = stack.bmcs[1]
    with kube_env.api("admin") as api:
        _create_host(api, "host-badcreds", bmc, password="not-the-password")
        host = _wait(api, "host-badcreds", lambda h: (h.get("status") or {}).get("errorType"), "in error", stack)
    status = host["status"]
    print("BMO registration error:", status["errorMessage"])
    assert status["errorType"] == "registration error", status
    assert status["operationalStatus"] == "error", status
    # BMO's own words, relaying Ironic's failure to reach the BMC with these credentials.
    assert "credentials" in status["errorMessage"].lower() or "401" in status["errorMessage"], status


def _add_spec_field_to_bmo_crd(api, field, schema):
    """Add ``spec.<field>`` to every version of BMO's BareMetalHost CRD (as earlier releases' hostclaim_setup did);
    returns a function that takes it out again."""
    ext = client.ApiextensionsV1Api(api)
    crd = ext.read_custom_resource_definition("baremetalhosts.metal3.io")
    ops = [
        {
            "op": "add",
            "path": f"/spec/versions/{index}/schema/openAPIV3Schema/properties/spec/properties/{field}",
            "value": schema,
        }
        for index in range(len(crd.spec.versions))
    ]
    ext.patch_custom_resource_definition("baremetalhosts.metal3.io", ops, _content_type=JSON_PATCH)
    time.sleep(2)  # the apiserver serves the new schema after a moment

    def remove():
        ext.patch_custom_resource_definition(
            "baremetalhosts.metal3.io", [{"op": "remove", "path": op["path"]} for op in ops], _content_type=JSON_PATCH
        )

    return remove


def test_bmo_drops_a_spec_field_its_types_lack(kube_env, metal3_operator):
    """Why the sharing policy is an annotation: BMO's own writes drop a spec field its Go types lack.

    Earlier releases kept the policy in ``spec.hostClaimNamespaces`` and added it to BMO's CRD. With the field
    in the CRD, the apiserver keeps it on create; but BMO updates a host with its typed Go object
    (``r.Update(ctx, host)``: adding its finalizer, setting the architecture, clearing annotations), and a field
    its types lack is not in that PUT: the policy is gone after BMO's first reconcile
    (roles/hostclaim_setup/README.md).
    """
    with kube_env.api("admin") as api:
        remove = _add_spec_field_to_bmo_crd(
            api,
            "hostClaimNamespaces",
            {
                "type": "object",
                "properties": {
                    "matches": {"type": "string"},
                    "withLabel": {"type": "array", "items": {"type": "string"}},
                },
            },
        )
        try:
            bmc = metal3_operator.bmcs[2]
            secret = bmo.bmc_secret("host-shared-bmc", bmc)
            client.CoreV1Api(api).create_namespaced_secret(INFRA_NAMESPACE, secret)
            body = bmo.host_manifest("host-shared", bmc, "host-shared-bmc")
            body["spec"]["hostClaimNamespaces"] = {"matches": "tenant-.*"}
            created = _hosts(api).create_namespaced_custom_object(GROUP, VERSION, INFRA_NAMESPACE, PLURAL, body)
            assert created["spec"]["hostClaimNamespaces"] == {"matches": "tenant-.*"}  # the apiserver keeps it
            host = _wait(
                api,
                "host-shared",
                lambda h: "baremetalhost.metal3.io" in (h["metadata"].get("finalizers") or []),
                "finalized by BMO",
                metal3_operator,
                timeout=60,
            )
            assert "hostClaimNamespaces" not in host["spec"], host["spec"]  # ... and BMO's Update dropped it
        finally:
            remove()


SHARING = "baremetal.tenancy/host-claim-namespaces"


def _claim(api, namespace, name, selector):
    body = {
        "apiVersion": "metal3.io/v1alpha1",
        "kind": "HostClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"online": False, "kind": "baremetal", "hostSelector": {"matchLabels": selector}},
    }
    return _hosts(api).create_namespaced_custom_object(GROUP, VERSION, namespace, "hostclaims", body)


def test_sharing_annotation_survives_bmo_and_decides_binding(kube_env, metal3_operator, tmp_path):
    """The sharing policy in the annotation survives BMO's own writes, and host_bind honours it.

    hostclaim_setup leaves BMO's BareMetalHost CRD alone; host_share writes the annotation; BMO registers the
    host (registering -> available) and clears a ``reboot.metal3.io`` annotation with a full typed Update (the
    write that drops unknown spec fields, see the test above); the annotation is still there, and host_bind
    binds a claim from the admitted namespace (tenant-a) to the host and refuses the one from tenant-b.
    """
    from fixtures_metal3 import SETUP_VARS, setup_play
    from harness.ansible import localhost_play, run_playbook

    stack = metal3_operator
    env = kube_env.ansible_env("admin")
    # The session's own settings: the role keeps the binder ClusterRoleBinding's subjects to what it is given,
    # so a run without the binder user would take the other suites' binder rights away.
    setup = setup_play(SETUP_VARS)
    timings = {}
    with kube_env.api("admin") as api:
        ext = client.ApiextensionsV1Api(api)
        crd_before = ext.read_custom_resource_definition("baremetalhosts.metal3.io").metadata.resource_version
        for attempt in range(2):
            run = run_playbook(setup, env, tmp_path / f"setup-{attempt}")
            assert run.ok, run.explain()
        bmh_crd = ext.read_custom_resource_definition("baremetalhosts.metal3.io")
        assert bmh_crd.metadata.resource_version == crd_before  # BMO's CRD: not one write
        assert not (bmh_crd.metadata.annotations or {}).get("baremetal.tenancy/schema")

        bmc = stack.bmcs[5]  # a system of its own: BMO refuses a second host with the same boot MAC
        client.CoreV1Api(api).create_namespaced_secret(INFRA_NAMESPACE, bmo.bmc_secret("host-policy-bmc", bmc))
        _hosts(api).create_namespaced_custom_object(
            GROUP,
            VERSION,
            INFRA_NAMESPACE,
            PLURAL,
            bmo.host_manifest("host-policy", bmc, "host-policy-bmc", labels={"suite": "bmo-policy"}),
        )
        t0 = time.monotonic()
        share = {
            "name": "share",
            "baremetal.tenancy.host_share": {
                "namespace": INFRA_NAMESPACE,
                "hosts": [{"name": "host-policy", "share": {"matches": "tenant-a"}}],
            },
        }
        run = run_playbook(localhost_play([share]), env, tmp_path / "share")
        assert run.ok, run.explain()
        assert run.result("share")["requests"]["writes"] == 1
        assert _get(api, "host-policy")["metadata"]["annotations"][SHARING] == '{"matches":"tenant-a"}'

        host = _wait_state(api, "host-policy", "available", stack)
        timings["shared->available"] = time.monotonic() - t0
        assert "baremetalhost.metal3.io" in host["metadata"]["finalizers"]
        assert host["metadata"]["annotations"][SHARING] == '{"matches":"tenant-a"}'

        # BMO clears the suffixless reboot annotation of a powered-off host with a full typed Update
        t1 = time.monotonic()
        _patch(api, "host-policy", {"metadata": {"annotations": {"reboot.metal3.io": ""}}})
        host = _wait(
            api,
            "host-policy",
            lambda h: "reboot.metal3.io" not in (h["metadata"].get("annotations") or {}),
            "cleared of reboot.metal3.io by BMO",
            stack,
            timeout=120,
        )
        timings["reboot annotation cleared"] = time.monotonic() - t1
        assert host["metadata"]["annotations"][SHARING] == '{"matches":"tenant-a"}'

        _claim(api, "tenant-a", "claim-a", {"suite": "bmo-policy"})
        _claim(api, "tenant-b", "claim-b", {"suite": "bmo-policy"})
        bind = {
            "name": "bind",
            "baremetal.tenancy.host_bind": {
                "namespaces": ["tenant-a", "tenant-b"],
                "host_namespaces": [INFRA_NAMESPACE],
            },
        }
        run = run_playbook(localhost_play([bind]), env, tmp_path / "bind")
        assert run.ok, run.explain()
        result = run.result("bind")
        claims = {(c["namespace"], c["name"]): c for c in result["claims"]}
        assert claims[("tenant-a", "claim-a")]["action"] == "bound", claims
        assert claims[("tenant-a", "claim-a")]["host"] == "host-policy"
        refused = claims[("tenant-b", "claim-b")]
        assert refused["action"] == "pending" and refused["reason"] == "NoSharedHost", refused
        assert result["host_problems"] == [] and result["legacy_policies"] == []
        host = _get(api, "host-policy")
        assert host["spec"]["consumerRef"]["namespace"] == "tenant-a"
        assert host["spec"]["consumerRef"]["name"] == "claim-a"
        assert host["metadata"]["annotations"][SHARING] == '{"matches":"tenant-a"}'

        # the binding lets BMO reconcile the host again; the policy is still there afterwards
        time.sleep(5)
        assert _get(api, "host-policy")["metadata"]["annotations"][SHARING] == '{"matches":"tenant-a"}'
    print("sharing annotation on real BMO:", {k: round(v, 1) for k, v in timings.items()})


def test_agent_route_inspects_and_cleans(kube_env, metal3_operator):
    """Through FakeIPA, Ironic runs its real agent flows for BMO: inspection reports
    the system's NICs and addresses into the host's status, and metadata cleaning
    runs on registration and again on deprovisioning.

    The host is deployed by the live-ISO route here; the ``direct`` deploy through
    FakeIPA (which once failed: a second agent lookup got the masked token, FakeIPA
    answered ``get_partition_uuids`` with 401 and Ironic 39's agent client raised a
    TypeError on an error body without ``faultstring``; harness.fake_ipa_hooks now
    keeps the token and sends ``faultstring``) is test_machines_agent's.
    """
    stack = metal3_operator
    index = 4  # a system of its own: BMO refuses a second host with the same boot MAC
    bmc, system = stack.bmcs[index], stack.systems[index]
    states = []

    def seen(host):
        state = _state(host)
        if state and (not states or states[-1][0] != state):
            states.append((state, time.monotonic()))
        return state

    with kube_env.api("admin") as api:
        secret = bmo.bmc_secret("host-agent-bmc", bmc)
        client.CoreV1Api(api).create_namespaced_secret(INFRA_NAMESPACE, secret)
        t0 = time.monotonic()
        _hosts(api).create_namespaced_custom_object(
            GROUP, VERSION, INFRA_NAMESPACE, PLURAL, bmo.host_manifest("host-agent", bmc, "host-agent-bmc", agent=True)
        )
        host = _wait(api, "host-agent", lambda h: seen(h) == "available", "available", stack, timeout=300)
        nics = host["status"]["hardware"]["nics"]
        assert sorted((n["mac"], n["ip"]) for n in nics) == sorted((n["mac"], n["ip"]) for n in system["nics"]), nics
        assert "inspecting" in [state for state, _at in states], states

        _patch(api, "host-agent", {"spec": {"image": bmo.live_iso_image(stack.live_iso_url), "online": True}})
        _wait(api, "host-agent", lambda h: seen(h) == "provisioned", "provisioned", stack, timeout=300)
        _patch(api, "host-agent", {"spec": {"image": None, "online": False}})
        host = _wait(api, "host-agent", lambda h: seen(h) == "available", "available again", stack, timeout=300)
    assert "deprovisioning" in [state for state, _at in states], states
    node = host["status"]["provisioning"]["ID"]
    cleaned = stack.ironic_log_count(node, 'moved to provision state "clean wait"')
    assert cleaned >= 2, "cleaning ran through the agent on registration and on deprovisioning"
    print("agent route states:", [(s, round(t - t0, 1)) for s, t in states])


def test_metal3_env_hosts_on_the_real_operator(metal3_bmo_env):
    """The Metal3Env of the converted suites: hosts created in parallel on BMCs of the pool,
    hardware details from BMO's annotation, then provisioned (live ISO), rebooted
    (BMO removes ``reboot.metal3.io`` once it power cycled), held off by a
    ``reboot.metal3.io/<suffix>`` annotation and released, deprovisioned and deleted,
    their BMCs back in the pool."""
    env = metal3_bmo_env
    names = ["envh-%d" % n for n in range(3)]
    timings = {}
    t0 = time.monotonic()
    for number, name in enumerate(names):
        env.create_host(INFRA_NAMESPACE, name, index=900 + number, hostname=name, labels={"suite": "env"}, wait=False)
    hosts = env.wait_hosts(INFRA_NAMESPACE, names, state="available", hardware=True)
    timings["created->available (3 at once)"] = time.monotonic() - t0
    host = hosts[names[0]]
    assert host["status"]["hardware"]["hostname"] == names[0]
    assert [n["name"] for n in host["status"]["hardware"]["nics"]] == ["eno1", "eno2"]
    assert "inspect.metal3.io/hardwaredetails" not in (host["metadata"].get("annotations") or {})  # consumed
    assert host["status"]["poweredOn"] is False

    image = bmo.live_iso_image(env.operator.live_iso_url)
    with kube_env_api(env) as api:
        t1 = time.monotonic()
        for name in names[:2]:
            _patch_in(api, INFRA_NAMESPACE, name, {"spec": {"image": image, "online": True}})
        env.wait_hosts(INFRA_NAMESPACE, names[:2], state="provisioned", powered=True)
        timings["available->provisioned, powered on (2 at once)"] = time.monotonic() - t1

        t2 = time.monotonic()
        _patch_in(api, INFRA_NAMESPACE, names[0], {"metadata": {"annotations": {"reboot.metal3.io": ""}}})
        env.wait_host(INFRA_NAMESPACE, names[0], without_annotation="reboot.metal3.io", powered=True)
        timings["reboot"] = time.monotonic() - t2

        t3 = time.monotonic()
        hold = "reboot.metal3.io/hostclaim-test"
        _patch_in(api, INFRA_NAMESPACE, names[1], {"metadata": {"annotations": {hold: ""}}})
        env.wait_host(INFRA_NAMESPACE, names[1], powered=False)
        timings["hold: powered off"] = time.monotonic() - t3
        t4 = time.monotonic()
        _patch_in(api, INFRA_NAMESPACE, names[1], {"metadata": {"annotations": {hold: None}}})
        env.wait_host(INFRA_NAMESPACE, names[1], powered=True)
        timings["hold lifted: powered on"] = time.monotonic() - t4

        t5 = time.monotonic()
        _patch_in(api, INFRA_NAMESPACE, names[0], {"spec": {"image": None, "online": False}})
        host = env.wait_host(INFRA_NAMESPACE, names[0], state="available", powered=False)
        timings["provisioned->available"] = time.monotonic() - t5
        # BMO keeps an empty image record ({"url": ""}) once deprovisioned
        assert not (host["status"]["provisioning"].get("image") or {}).get("url"), host["status"]["provisioning"]
    t6 = time.monotonic()
    env.delete_hosts(INFRA_NAMESPACE, names)
    timings["delete 3 (one provisioned)"] = time.monotonic() - t6
    assert not env.pool.known(names[0])
    print("metal3_bmo_env timings:", {k: round(v, 1) for k, v in timings.items()})


def kube_env_api(env):
    return env.api()


def _patch_in(api, namespace, name, body):
    return _hosts(api).patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, name, body, _content_type="application/merge-patch+json"
    )
