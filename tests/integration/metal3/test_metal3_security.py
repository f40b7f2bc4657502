"""Security invariants of the HostClaim system, on the real apiserver with real RBAC identities.

- a binding label a tenant edits to point at another tenant's host is erased
  (or set back) by the binder and never honoured: the other host keeps its
  consumerRef and nothing of it reaches the forger;
- tenant identities are refused on BareMetalHosts, on ``hostclaims/status``,
  on the infrastructure namespace's Secrets and on other tenants'
  namespaces (through the modules too, with a clear message);
- no BMC address, host part, credentials Secret name, user or password
  appears in any claim, in any module result, or in the ``-vvv`` output of
  tenant runs, although the hosts carry them in labels, annotations and
  error messages that the binder reads.
"""

from __future__ import annotations

import sys

import pytest
from harness.ansible import collections_root
from kubernetes import client
from kubernetes.client.exceptions import ApiException

pytestmark = pytest.mark.real_bmo

INFRA = "sec-infra"
NS_A, NS_B = "sec-a", "sec-b"
BINDING_LABEL = "hostclaim.metal3.io/host"
SELECTOR = {"matchLabels": {"suite": "sec"}}
HOSTS = ("sec-h1", "sec-h2", "sec-h3")


def find_bmc_data(obj, values):
    sys.path.insert(0, str(collections_root()))
    from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.bmc_data import find_bmc_data as scan

    return scan(obj, values)


def host_needles(env, namespace, names):
    """``bmc_needles`` of the real hosts, as the binder computes them: the address and each component of it (system
    id, port, ...), the credentials Secret name, user and password, plus the system id's other spellings. The host
    part alone is left out: in the test bed every service (the live ISO's web server too) listens on 127.0.0.1, as
    the BMC does; the address, ``127.0.0.1:<port>`` and the system id still identify this BMC."""
    sys.path.insert(0, str(collections_root()))
    from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import bmc_data

    needles = []
    for name in names:
        host = env.host(namespace, name)
        user, secret = env.bmc_username(name), env.pool.slot(name).password
        needles += [n for n in bmc_data.bmc_needles(host, user, secret) if n[0] != bmc_data.BMC_HOST]
        parts = bmc_data.address_parts(host["spec"]["bmc"]["address"])
        needles.append("%s:%s" % (parts["host"], parts["port"]))
        system = parts["segments"][-1]
        needles += [system.upper(), system.replace("-", "")]
    return needles


@pytest.fixture(scope="module")
def sec(metal3_bmo_env):
    env = metal3_bmo_env
    env.tenant_namespace(INFRA, None)
    env.tenant_namespace(NS_A, "tenant-a")
    env.tenant_namespace(NS_B, "tenant-b")
    for index, name in enumerate(HOSTS, start=200):
        policy = {"matches": NS_A} if name == "sec-h1" else {"matches": NS_B}
        # BMC data planted where the binder reads: labels, annotations (an exported domain too)
        env.create_host(
            INFRA,
            name,
            index=index,
            policy=policy,
            hostname="%s.example.com" % name,
            labels={"suite": "sec", "example.com/creds": "%s-bmc-secret" % name},
            annotations={
                "export.hostclaim.metal3.io/bmc": env.bmc_address(name),
                "export.hostclaim.metal3.io/login": env.bmc_username(name),
                "export.hostclaim.metal3.io/console": "ipmi://10.9.8.7",
            },
            wait=False,
        )
    env.wait_hosts(INFRA, HOSTS, state="available", timeout=300)
    yield env
    env.forget_claims(NS_A)
    env.forget_claims(NS_B)
    env.delete_hosts(INFRA)


def claim(name, namespace, who, **args):
    return {
        "name": "claim %s" % name,
        "as": who,
        "baremetal.tenancy.host_claim": dict(dict(name=name, namespace=namespace, host_selector=SELECTOR), **args),
    }


def bind(task="bind"):
    return {"name": task, "as": "binder", "baremetal.tenancy.host_bind": {"namespaces": [NS_A, NS_B]}}


def forge(name, namespace, who, host):
    return {
        "name": "forge %s" % name,
        "as": who,
        "kubernetes.core.k8s": {
            "state": "patched",
            "api_version": "metal3.io/v1alpha1",
            "kind": "HostClaim",
            "namespace": namespace,
            "name": name,
            "definition": {"metadata": {"labels": {BINDING_LABEL: host}}},
        },
    }


def test_forged_binding_label_is_erased_and_never_honoured(sec):
    env = sec
    run = env.steps(
        [
            claim("app", NS_A, "tenant-a"),
            claim("app", NS_B, "tenant-b"),
            bind("bind"),
            # tenant-b points its bound claim, and a new claim, at tenant-a's host
            forge("app", NS_B, "tenant-b", "sec-h1"),
            claim("loner", NS_B, "tenant-b", host_selector={"matchLabels": {"suite": "sec", "nothing": "here"}}),
            forge("loner", NS_B, "tenant-b", "sec-h1"),
            {"name": "forged info", "as": "tenant-b", "baremetal.tenancy.host_claim_info": {"namespace": NS_B}},
            bind("bind after forgery"),
        ]
    )
    assert run.ok, run.explain()
    bound = dict(((c["namespace"], c["name"]), c["host"]) for c in run.result("bind")["claims"])
    assert bound[(NS_A, "app")] == "sec-h1"
    host_b = bound[(NS_B, "app")]
    assert host_b in ("sec-h2", "sec-h3")
    # while forged, the tenant's own view does not show the forged host
    views = dict((v["name"], v) for v in run.result("forged info")["claims"])
    assert views["app"]["labels"][BINDING_LABEL] == "sec-h1"
    assert views["app"]["host"] is None and views["loner"]["host"] is None
    # the binder sets the label back from consumerRef, and erases the one of the unbound claim
    after = dict(((c["namespace"], c["name"]), c) for c in run.result("bind after forgery")["claims"])
    assert after[(NS_B, "app")]["host"] == host_b and after[(NS_B, "loner")]["action"] == "pending"
    assert env.claim(NS_B, "app")["metadata"]["labels"][BINDING_LABEL] == host_b
    assert BINDING_LABEL not in env.claim(NS_B, "loner")["metadata"].get("labels", {})
    assert env.host(INFRA, "sec-h1")["spec"]["consumerRef"]["namespace"] == NS_A
    loner = env.claim(NS_B, "loner")
    assert loner["status"]["addresses"] == [] and "bootMACAddress" not in loner["status"]


def _status_patch(api, namespace, name):
    return client.CustomObjectsApi(api).patch_namespaced_custom_object_status(
        "metal3.io",
        "v1alpha1",
        namespace,
        "hostclaims",
        name,
        {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Forged"}]}},
        _content_type="application/merge-patch+json",
    )


def test_tenants_are_refused_outside_their_claims(sec):
    env = sec
    env.steps([claim("probe", NS_A, "tenant-a")])
    # raw API, with the tenant's own token
    with env.api("tenant-a") as api:
        custom = client.CustomObjectsApi(api)
        core = client.CoreV1Api(api)
        refused = [
            lambda: custom.list_namespaced_custom_object("metal3.io", "v1alpha1", INFRA, "baremetalhosts"),
            lambda: custom.list_cluster_custom_object("metal3.io", "v1alpha1", "baremetalhosts"),
            lambda: custom.get_namespaced_custom_object("metal3.io", "v1alpha1", INFRA, "baremetalhosts", "sec-h1"),
            lambda: custom.list_namespaced_custom_object("metal3.io", "v1alpha1", NS_A, "baremetalhosts"),
            lambda: _status_patch(api, NS_A, "probe"),
            lambda: core.read_namespaced_secret("sec-h1-bmc-secret", INFRA),
            lambda: custom.list_namespaced_custom_object("metal3.io", "v1alpha1", NS_B, "hostclaims"),
            lambda: core.list_namespaced_secret(NS_B),
            lambda: core.read_namespace(NS_A),
        ]
        for attempt in refused:
            with pytest.raises(ApiException) as exc:
                attempt()
            assert exc.value.status == 403
        # and what it may do
        assert custom.list_namespaced_custom_object("metal3.io", "v1alpha1", NS_A, "hostclaims")["items"]
    # through the modules: one clear message naming the object
    run = env.steps(
        [
            dict(claim("intruder", NS_B, "tenant-a"), ignore_errors=True),
            {
                "name": "read b",
                "as": "tenant-a",
                "ignore_errors": True,
                "baremetal.tenancy.host_claim_info": {"namespace": NS_B},
            },
            {
                "name": "release b",
                "as": "tenant-a",
                "ignore_errors": True,
                "baremetal.tenancy.host_release": {"name": "app", "namespace": NS_B},
            },
            {
                "name": "bind as tenant",
                "as": "tenant-a",
                "ignore_errors": True,
                "baremetal.tenancy.host_bind": {"namespaces": [NS_A]},
            },
            dict(claim("stranger", NS_A, "tenant-c"), ignore_errors=True),
        ]
    )
    for task, obj in (
        ("claim intruder", "HostClaim %s/intruder" % NS_B),
        ("read b", "HostClaims in namespace %s" % NS_B),
        ("release b", "HostClaim %s/app" % NS_B),
        ("claim stranger", "HostClaim %s/stranger" % NS_A),
    ):
        result = run.result(task)
        assert result["failed"] and result["error_type"] == "Forbidden", (task, result)
        assert result["msg"].startswith(obj + ": ") and "forbidden" in result["msg"], result["msg"]
    assert run.result("bind as tenant")["error_type"] == "Forbidden"
    assert env.claim(NS_B, "intruder") is None and env.claim(NS_A, "stranger") is None
    assert env.claim(NS_B, "app")["metadata"].get("deletionTimestamp") is None


def test_no_bmc_data_reaches_tenants(sec, tmp_path):
    env = sec
    values = [*env.bmc_values(INFRA, HOSTS), "10.9.8.7", *host_needles(env, INFRA, HOSTS)]
    # tenant-a deploys
    run = env.steps(
        [
            claim(
                "app",
                NS_A,
                "tenant-a",
                online=True,
                image={"url": env.operator.live_iso_url, "format": "live-iso"},
            ),
            bind(),
        ]
    )
    assert run.ok, run.explain()
    env.wait_host(INFRA, "sec-h1", state="provisioned", powered=True, timeout=300)
    # its BMC then refuses the operator's credentials: powering the host off fails, and the operator
    # reports Ironic's error, which quotes the BMC's URL
    with env.bmc_password_changed("sec-h1"):
        run = env.steps([claim("app", NS_A, "tenant-a", online=False), bind("power off")])
        assert run.ok, run.explain()
        failed = env.wait_host(INFRA, "sec-h1", error_type="power management error", timeout=180)
        assert find_bmc_data(failed["status"]["errorMessage"], values), failed["status"]["errorMessage"]
        _tenant_view_of_a_host_error(env, values)
    env.steps([claim("app", NS_A, "tenant-a", online=True), bind("power on")])
    env.wait_host(INFRA, "sec-h1", powered=True, timeout=180)


def _tenant_view_of_a_host_error(env, values):
    tasks = [
        bind("bind"),
        claim("app", NS_A, "tenant-a", online=False),
        {"name": "info", "as": "tenant-a", "baremetal.tenancy.host_claim_info": {"namespace": NS_A}},
        {"name": "info one", "as": "tenant-a", "baremetal.tenancy.host_claim_info": {"namespace": NS_A, "name": "app"}},
        claim("temp", NS_A, "tenant-a"),
        bind("bind temp"),
        {
            "name": "release",
            "as": "tenant-a",
            "baremetal.tenancy.host_release": {"name": "temp", "namespace": NS_A, "node_reuse": "t"},
        },
    ]
    run = env.steps(tasks)
    assert run.ok, run.explain()
    app = run.result("info one")["claims"][0]
    assert app["ready"] is False
    ready = next(c for c in app["conditions"] if c["type"] == "Ready")
    assert ready["reason"] == "HostError" and "power management error" in ready["message"]
    # module results of the tenant tasks (the binder's own results are admin-side)
    for task in ("claim app", "info", "info one", "claim temp", "release"):
        assert find_bmc_data(run.result(task), values) == [], task
    # every claim as stored
    for namespace in (NS_A, NS_B):
        for stored in env.claims(namespace):
            assert find_bmc_data(stored, values) == [], stored["metadata"]["name"]
            assert "export.hostclaim.metal3.io/bmc" not in stored["metadata"].get("annotations", {})
            assert "example.com/creds" not in stored["metadata"].get("labels", {})
    # the -vvv output of tenant runs, with the default (human) callback
    tenant_tasks = [dict((k, v) for k, v in task.items() if k != "as") for task in tasks if task["as"] == "tenant-a"]
    verbose = env.playbook("tenant-a", tenant_tasks, verbosity=3, callback="default")
    assert verbose.ok, verbose.explain()
    assert "AnsiballZ" in verbose.stdout  # really -vvv
    text = verbose.stdout + verbose.stderr
    assert find_bmc_data(text, values) == []


def test_inventory_and_info_never_show_a_forged_host(sec, tmp_path):
    """Defect 2 of issue 12: both readers take the host from the binder's record, never from the label alone."""
    from fixtures_inventory import inventory, write_source

    env = sec
    run = env.steps(
        [
            claim("reader", NS_B, "tenant-b"),
            bind("bind"),
            {
                "name": "honest info",
                "as": "tenant-b",
                "baremetal.tenancy.host_claim_info": {"namespace": NS_B, "name": "reader"},
            },
        ]
    )
    assert run.ok, run.explain()
    honest = run.result("honest info")["claims"][0]["host"]
    assert honest in ("sec-h2", "sec-h3")
    source = write_source(tmp_path / "b.claimed_hosts.yml", namespaces=[NS_B])
    data, dummy = inventory(source, env.kube.ansible_env("tenant-b"), tmp_path)
    assert data["_meta"]["hostvars"]["reader"]["tenancy_host"] == honest
    # tenant-b forges the label of its bound claim (its AssociateBMH condition stays True until the next pass)
    run = env.steps(
        [
            forge("reader", NS_B, "tenant-b", "sec-h1"),
            {"name": "forged info", "as": "tenant-b", "baremetal.tenancy.host_claim_info": {"namespace": NS_B}},
            {
                "name": "forged info one",
                "as": "tenant-b",
                "baremetal.tenancy.host_claim_info": {"namespace": NS_B, "name": "reader"},
            },
        ]
    )
    assert run.ok, run.explain()
    assert env.claim(NS_B, "reader")["metadata"]["labels"][BINDING_LABEL] == "sec-h1"
    for task in ("forged info", "forged info one"):
        view = next(v for v in run.result(task)["claims"] if v["name"] == "reader")
        assert view["host"] is None, (task, view["host"])  # the label disagrees with the record: no host
    for every in (False, True):
        options = {"host_variables": ["name", "host", "labels", "conditions"]} if every else {}
        source = write_source(tmp_path / ("forged-%s.claimed_hosts.yml" % every), namespaces=[NS_B], **options)
        data, _text = inventory(source, env.kube.ansible_env("tenant-b"), tmp_path)
        hostvars = data["_meta"]["hostvars"]
        assert all(v.get("tenancy_host") != "sec-h1" for v in hostvars.values()), hostvars
        assert "reader" not in hostvars  # fails closed: not a host while label and record disagree
    # the binder sets the label back; both readers agree again
    run = env.steps(
        [
            bind("bind"),
            {
                "name": "info",
                "as": "tenant-b",
                "baremetal.tenancy.host_claim_info": {"namespace": NS_B, "name": "reader"},
            },
        ]
    )
    assert run.ok, run.explain()
    assert run.result("info")["claims"][0]["host"] == honest
    data, _dummy = inventory(
        write_source(tmp_path / "after.claimed_hosts.yml", namespaces=[NS_B]),
        env.kube.ansible_env("tenant-b"),
        tmp_path,
    )
    assert data["_meta"]["hostvars"]["reader"]["tenancy_host"] == honest


# ---------------------------------------------------------------- defect 5: BMC credentials in host metadata

META_INFRA, NS_META = "secm-infra", "secm-a"
META_HOSTS = ("secm-h1", "secm-h2")
# BMC credentials that no deny-list word catches (the old rules only knew the address and the Secret name)
META_USER, META_PASSWORD = "opsadmin", "Kx7pQ2vR9wLm"
OOB_KEYS = ("oob-system", "oob-system-upper", "oob-address", "oob-port")  # the BMC's system id, address and port
SHORT_PASSWORD = "q7"  # a weak 2-character password: withheld only where it is a whole value or word


@pytest.fixture(scope="module")
def meta_hosts(metal3_bmo_env):
    env = metal3_bmo_env
    env.tenant_namespace(META_INFRA, None)
    env.tenant_namespace(NS_META, "tenant-a")
    for index, name in enumerate(META_HOSTS, start=230):
        password = META_PASSWORD if name == "secm-h1" else SHORT_PASSWORD
        env.reserve_bmc(name, META_USER, password)  # a BMC each: one user name, two passwords
        address = env.bmc_address(name)
        host_part = address.split("://")[1].split("/")[0]
        bmc_ip = host_part.split(":")[0]
        system = env.pool.slot(name).bmc.uuid  # the Redfish system id, the last segment of the address
        env.create_host(
            META_INFRA,
            name,
            index=index,
            policy={"matches": NS_META},
            username=META_USER,
            password=password,
            hostname="%s.example.com" % name,
            labels={
                "suite": "secm",
                "example.com/owner": META_USER,
                "example.com/rack": "r7",
                "example.com/pin": password,
                "example.com/team": "q7team",
            },
            annotations={
                "export.hostclaim.metal3.io/contact": "ask %s on call" % META_USER,
                "export.hostclaim.metal3.io/note": "pw=%s" % password,
                "export.hostclaim.metal3.io/mgmt": "reach %s" % host_part,
                "export.hostclaim.metal3.io/secret-ref": "%s-bmc-secret" % name,
                "export.hostclaim.metal3.io/motd": "welcome, q7 racks are cold",
                "export.hostclaim.metal3.io/rack": "r7",
                # the BMC's system id, as an operator would export it, and in other spellings
                "export.hostclaim.metal3.io/oob-system": system,
                "export.hostclaim.metal3.io/oob-system-upper": system.replace("-", "").upper(),
                "export.hostclaim.metal3.io/oob-address": address.split("://")[1],
                "export.hostclaim.metal3.io/oob-port": host_part.split(":")[1],
                "export.hostclaim.metal3.io/asset": "serial 9100012, row 8",  # innocent: crosses
            },
            # secm-h1's hardware reports a NIC on the BMC's own address: not for the tenant either
            nics=[
                {"name": "eno1", "mac": "52:54:00:30:00:01", "ip": "192.0.2.231"},
                {"name": "bmc0", "mac": "52:54:00:30:00:02", "ip": bmc_ip},
            ]
            if name == "secm-h1"
            else None,
            wait=False,
        )
    env.wait_hosts(META_INFRA, META_HOSTS, state="available", hardware=True, timeout=300)
    yield env
    env.forget_claims(NS_META)
    env.delete_hosts(META_INFRA)


def test_host_metadata_repeating_bmc_credentials_is_withheld_and_reported(meta_hosts, tmp_path):
    """Defect 5 of issue 12: no label or exported annotation carrying the BMC user, password, address, host
    part or Secret name reaches the claim; the binder's result names what it withheld (never the value)."""
    from fixtures_inventory import ALL_HOST_VARIABLES, inventory, scan, write_source

    env = meta_hosts
    selector = {"matchLabels": {"suite": "secm"}}
    run = env.steps(
        [
            {
                "name": "claim one",
                "as": "tenant-a",
                "baremetal.tenancy.host_claim": {"name": "one", "namespace": NS_META, "host_selector": selector},
            },
            {
                "name": "claim two",
                "as": "tenant-a",
                "baremetal.tenancy.host_claim": {"name": "two", "namespace": NS_META, "host_selector": selector},
            },
            {"name": "bind", "as": "binder", "baremetal.tenancy.host_bind": {"namespaces": [NS_META]}},
            {"name": "bind again", "as": "binder", "baremetal.tenancy.host_bind": {"namespaces": [NS_META]}},
            {"name": "info", "as": "tenant-a", "baremetal.tenancy.host_claim_info": {"namespace": NS_META}},
        ]
    )
    assert run.ok, run.explain()
    secrets = [META_USER, META_PASSWORD]
    for name in META_HOSTS:
        address = env.bmc_address(name)
        secrets += [address, address.split("://")[1].split("/")[0], "%s-bmc-secret" % name]
    # the weak password of secm-h2 is withheld as a whole value or word only: secm-h1's claim may say "q7 racks"
    secrets += [n for n in host_needles(env, META_INFRA, META_HOSTS) if n != ("BMC password", SHORT_PASSWORD)]
    claims = dict((c["metadata"]["name"], c) for c in env.claims(NS_META))
    assert set(claims) == {"one", "two"}
    for stored in claims.values():
        labels, annotations = stored["metadata"].get("labels", {}), stored["metadata"].get("annotations", {})
        assert scan(str(stored), secrets) == [], stored["metadata"]["name"]
        assert labels.get(BINDING_LABEL) in META_HOSTS
        # what carries nothing of the BMC is still imported
        assert labels["example.com/rack"] == "r7" and annotations["export.hostclaim.metal3.io/rack"] == "r7"
        assert annotations["export.hostclaim.metal3.io/asset"] == "serial 9100012, row 8"
        for key in ("example.com/owner", "example.com/pin"):
            assert key not in labels, key
        for key in ("contact", "note", "mgmt", "secret-ref", *OOB_KEYS):
            assert "export.hostclaim.metal3.io/" + key not in annotations, key
        short = labels[BINDING_LABEL] == "secm-h2"
        if not short:  # the NIC on the BMC's address is left out, the others are there
            assert [nic["name"] for nic in stored["status"]["nics"]] == ["eno1"]
            assert {"type": "InternalIP", "address": "192.0.2.231"} in stored["status"]["addresses"]
        # the short password is withheld as a whole value or word, not wherever its two letters occur
        assert labels["example.com/team"] == "q7team"
        assert ("export.hostclaim.metal3.io/motd" in annotations) is not short
    assert scan(str(run.result("info")), secrets) == []
    data, text = inventory(
        write_source(tmp_path / "secm.claimed_hosts.yml", namespaces=[NS_META], host_variables=ALL_HOST_VARIABLES),
        env.kube.ansible_env("tenant-a"),
        tmp_path,
    )
    assert set(data["_meta"]["hostvars"]) == {"one", "two"}
    assert scan(text, secrets) == []
    for variables in data["_meta"]["hostvars"].values():
        exported = variables["tenancy_annotations"]
        assert exported["export.hostclaim.metal3.io/asset"] == "serial 9100012, row 8"
        assert not [key for key in OOB_KEYS if "export.hostclaim.metal3.io/" + key in exported]
    # -vvv output of the tenant's reads, with the default (human) callback
    verbose = env.playbook(
        "tenant-a",
        [
            {"name": "info", "baremetal.tenancy.host_claim_info": {"namespace": NS_META}},
            {"name": "info one", "baremetal.tenancy.host_claim_info": {"namespace": NS_META, "name": "one"}},
        ],
        verbosity=3,
        callback="default",
    )
    assert verbose.ok, verbose.explain()
    assert "AnsiballZ" in verbose.stdout and "serial 9100012, row 8" in verbose.stdout
    assert scan(verbose.stdout + verbose.stderr, secrets) == []
    # the owner is told, per host and key, without the value
    for task in ("bind", "bind again"):
        result = run.result(task)
        withheld = result["withheld"]
        assert scan(str(withheld), secrets) == [], withheld
        by_host = {}
        for item in withheld:
            assert set(item) == {"host", "claim", "kind", "key", "reason"}, item
            by_host.setdefault(item["host"], set()).add((item["kind"], item["key"]))
        for host in META_HOSTS:
            expected = {
                ("label", "example.com/owner"),
                ("label", "example.com/pin"),
                ("annotation", "export.hostclaim.metal3.io/contact"),
                ("annotation", "export.hostclaim.metal3.io/note"),
                ("annotation", "export.hostclaim.metal3.io/mgmt"),
                ("annotation", "export.hostclaim.metal3.io/secret-ref"),
                *(("annotation", "export.hostclaim.metal3.io/" + key) for key in OOB_KEYS),
            }
            if host == "secm-h2":
                expected.add(("annotation", "export.hostclaim.metal3.io/motd"))
            else:
                expected |= {("status", "addresses"), ("status", "nics")}
            assert by_host["%s/%s" % (META_INFRA, host)] == expected, (host, by_host)
        # by kind, never by value
        reasons = dict((item["key"], item["reason"]) for item in withheld if item["host"] == "%s/secm-h1" % META_INFRA)
        assert reasons["export.hostclaim.metal3.io/oob-system"] == "the value repeats the BMC system id"
        assert reasons["export.hostclaim.metal3.io/oob-system-upper"] == "the value repeats the BMC system id"
        assert reasons["export.hostclaim.metal3.io/oob-address"] == "the value repeats the BMC address"
        assert reasons["export.hostclaim.metal3.io/oob-port"] == "the value repeats the BMC address port"
