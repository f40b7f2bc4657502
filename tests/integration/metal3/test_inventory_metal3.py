"""The ``claimed_hosts`` inventory plugin on a real kube-apiserver (backend metal3).

Each tenant runs ``ansible-inventory`` / ``ansible-playbook`` with its own
kubeconfig (``K8S_AUTH_KUBECONFIG``), the way a user or AWX does; the claims
were bound to BareMetalHosts carrying BMC addresses and Secrets
(``fixtures_inventory.inventory_metal3``), real hosts of Metal3's
baremetal-operator: the ready claims' hosts were provisioned (a live ISO) by
the operator, then powered off through their claims; the claim that is not
ready has the image too but stays powered off, so its host stays available.
"""

from __future__ import annotations

import math
import os

import pytest
from fixtures_inventory import (
    ALL_HOST_VARIABLES,
    FAIL_ON_ERROR,
    INJECTED,
    example_source,
    inventory,
    kube_proxy,
    kubeconfig_via,
    members,
    plugin_errors,
    scan,
    write_source,
)
from harness.ansible import run_inventory, run_playbook
from harness.procs import free_port

pytestmark = pytest.mark.real_bmo


def expected_names(env, identity: str) -> dict[str, object]:
    """Expected host name -> ClaimedHost (qualified when the tenant lists several namespaces)."""
    qualify = len(env.namespaces[identity]) > 1
    return {("%s.%s" % (h.claim, h.namespace) if qualify else h.claim): h for h in env.hosts[identity]}


def test_each_tenant_sees_exactly_its_claimed_hosts(inventory_metal3, tmp_path):
    env = inventory_metal3
    for identity in ("tenant-a", "tenant-b"):
        # tenant-a asks for every host variable (so the scan below covers them all), tenant-b takes the default set.
        every = identity == "tenant-a"
        source = write_source(
            tmp_path / ("%s.claimed_hosts.yml" % identity),
            namespaces=env.namespaces[identity],
            **({"host_variables": ALL_HOST_VARIABLES} if every else {}),
        )
        data, text = inventory(source, env.env(identity), tmp_path, "-vvv")
        expected = expected_names(env, identity)
        hostvars = data["_meta"]["hostvars"]
        assert set(hostvars) == set(expected), identity
        assert members(data, "claimed_hosts") == set(expected)
        for name, host in expected.items():
            variables = hostvars[name]
            assert variables["ansible_host"] == host.address, name
            assert variables["tenancy_name"] == host.claim and variables["tenancy_namespace"] == host.namespace
            assert variables["tenancy_backend"] == "metal3" and variables["tenancy_host"] == host.host
            assert variables["tenancy_ready"] is host.ready
            assert variables["tenancy_conditions"] == {
                "AssociateBMH": "True",
                "Ready": "True" if host.ready else "False",
            }
            assert variables["tenancy_labels"]["app"] == host.claim
            assert variables["tenancy_labels"]["topology.kubernetes.io/zone"].startswith("zone-")
            assert variables["tenancy_host_class"] == host.host_class
            assert variables["tenancy_annotations"] == {
                "export.hostclaim.metal3.io/rack": variables["tenancy_annotations"]["export.hostclaim.metal3.io/rack"],
                "export.hostclaim.metal3.io/motd": INJECTED,
            }
            assert variables["tenancy_image"]["url"] == env.image_url
            assert variables["tenancy_online"] is False and variables["tenancy_powered_on"] is False
            if every:
                assert variables["tenancy_associated"] is True and variables["tenancy_uid"]
                assert {c["type"]: c["status"] for c in variables["tenancy_condition_details"]} == variables[
                    "tenancy_conditions"
                ]
                assert all(c["reason"] and c["message"] for c in variables["tenancy_condition_details"])
                assert {"type": "Hostname", "address": "%s.hosts.example.test" % host.host} in variables[
                    "tenancy_addresses"
                ]
                assert [nic["name"] for nic in variables["tenancy_nics"]] == ["eno1", "eno2"]
                assert variables["tenancy_boot_mac_address"] == variables["tenancy_nics"][0]["MAC"]
            else:  # the default set
                assert {name[len("tenancy_") :] for name in variables if name.startswith("tenancy_")} == {
                    "name",
                    "namespace",
                    "backend",
                    "host",
                    "host_class",
                    "online",
                    "powered_on",
                    "ready",
                    "conditions",
                    "labels",
                    "annotations",
                    "image",
                }
            assert name in members(data, "tenancy_namespace_" + host.namespace.replace("-", "_"))
            assert name in members(data, "tenancy_ready" if host.ready else "tenancy_not_ready")
            if host.host_class:
                assert name in members(data, "tenancy_class_" + host.host_class)
        for pending in env.unbound[identity]:
            assert not any(pending == n or n.startswith(pending + ".") for n in hostvars)
        # No BMC address, host part, Secret name or credential anywhere in what the tenant saw (-vvv included).
        assert scan(text, env.bmc_values) == []
        assert "bmc-vendor" not in text and "bmc-note" not in text
    # Hosts of the other tenant never show up: the two name sets are each exactly the tenant's own.
    assert {h.namespace for h in env.hosts["tenant-b"]}.isdisjoint({h.namespace for h in env.hosts["tenant-a"]})


def test_playbook_runs_against_a_plugin_group(inventory_metal3, tmp_path):
    env = inventory_metal3
    source = write_source(
        tmp_path / "claimed_hosts.yml", namespaces=env.namespaces["tenant-a"], compose={"ansible_connection": "'local'"}
    )
    play = [
        {
            "name": "on my ready hosts",
            "hosts": "tenancy_ready",
            "gather_facts": False,
            "tasks": [
                {"name": "reach the host", "ansible.builtin.ping": {}},
                {
                    "name": "read an API value",
                    "ansible.builtin.set_fact": {
                        "motd": "{{ tenancy_annotations['export.hostclaim.metal3.io/motd'] }}",
                        "where": "{{ ansible_host }}",
                    },
                },
            ],
        }
    ]
    run = run_playbook(play, env.env("tenant-a"), tmp_path / "run", inventory=str(source))
    assert run.ok, run.explain()
    tasks = {task["task"]["name"]: task["hosts"] for task in run.report["plays"][0]["tasks"]}
    ready = {name for name, host in expected_names(env, "tenant-a").items() if host.ready}
    assert set(tasks["reach the host"]) == ready and ready
    assert all(result["ping"] == "pong" for result in tasks["reach the host"].values())
    for name, result in tasks["read an API value"].items():
        # The API value is data, never a template: the lookup in it did not run.
        assert result["ansible_facts"]["motd"] == INJECTED
        assert result["ansible_facts"]["where"] == expected_names(env, "tenant-a")[name].address


def test_cache_hit_makes_no_api_request(inventory_metal3, tmp_path):
    env = inventory_metal3
    kube_env = env.metal3.kube
    page_size = 2
    with kube_proxy(kube_env) as proxy:
        run_env = dict(
            env.env("tenant-a"),
            K8S_AUTH_KUBECONFIG=str(
                kubeconfig_via(kube_env, "tenant-a", proxy.url, tmp_path / "tenant-a-proxy.kubeconfig")
            ),
        )
        source = write_source(
            tmp_path / "cached.claimed_hosts.yml",
            namespaces=env.namespaces["tenant-a"],
            page_size=page_size,
            cache=True,
            cache_plugin="ansible.builtin.jsonfile",
            cache_connection=str(tmp_path / "cache"),
            cache_timeout=3600,
        )
        first, dummy = inventory(source, run_env, tmp_path)
        # One paginated list per namespace, nothing per host.
        claims_per_ns = {
            ns: sum(1 for h in env.hosts["tenant-a"] if h.namespace == ns) for ns in env.namespaces["tenant-a"]
        }
        claims_per_ns["inv-a"] += len(env.unbound["tenant-a"])
        expected_requests = sum(math.ceil(n / page_size) for n in claims_per_ns.values())
        paths = proxy.paths()
        assert len(paths) == expected_requests, paths
        assert all(p.startswith("/apis/metal3.io/v1alpha1/namespaces/inv-a") and "limit=2" in p for p in paths), paths
        assert set(first["_meta"]["hostvars"]) == set(expected_names(env, "tenant-a"))

        proxy.reset()
        second, _dummy = inventory(source, run_env, tmp_path)
        assert proxy.paths() == []
        assert second["_meta"]["hostvars"] == first["_meta"]["hostvars"]

        proxy.reset()
        inventory(source, run_env, tmp_path, "--flush-cache")
        assert len(proxy.paths()) == expected_requests

        # Another identity with the same source file does not read tenant-a's cache: it asks the API, which refuses.
        proxy.reset()
        other_env = dict(
            env.env("tenant-b"),
            K8S_AUTH_KUBECONFIG=str(
                kubeconfig_via(kube_env, "tenant-b", proxy.url, tmp_path / "tenant-b-proxy.kubeconfig")
            ),
            **FAIL_ON_ERROR,
        )
        proc = run_inventory(source, other_env, tmp_path)
        assert proc.returncode != 0 and "forbidden" in proc.stderr.lower(), proc.stderr
        assert proxy.paths(), "tenant-b was answered from tenant-a's cache"
        assert "web.inv-a" not in proc.stdout


def test_strict_fails_on_a_bad_compose_expression_and_lenient_does_not(inventory_metal3, tmp_path):
    env = inventory_metal3
    bad = {"broken": "tenancy_labels['no-such-label'].value", "good": "tenancy_name | upper"}
    strict = write_source(tmp_path / "strict.claimed_hosts.yml", namespaces=["inv-b"], compose=bad, strict=True)
    proc = run_inventory(strict, dict(env.env("tenant-b"), **FAIL_ON_ERROR), tmp_path)
    assert proc.returncode != 0
    assert "Could not set broken for host" in proc.stderr, proc.stderr
    lenient = write_source(tmp_path / "lenient.claimed_hosts.yml", namespaces=["inv-b"], compose=bad, strict=False)
    data, _dummy = inventory(lenient, dict(env.env("tenant-b"), **FAIL_ON_ERROR), tmp_path)
    hostvars = data["_meta"]["hostvars"]
    assert set(hostvars) == set(expected_names(env, "tenant-b"))
    assert all("broken" not in v and v["good"] == v["tenancy_name"].upper() for v in hostvars.values())


@pytest.mark.parametrize(
    "case", ["unknown backend", "no namespaces", "missing credentials", "unreachable API", "forbidden namespace"]
)
def test_bad_configuration_gives_one_clear_error_line(inventory_metal3, tmp_path, case):
    env = inventory_metal3
    run_env = dict(env.env("tenant-b"), **FAIL_ON_ERROR)
    options: dict = {"namespaces": ["inv-b"]}
    if case == "unknown backend":
        options["backend"] = "openshift"
        expected = ["option backend", "'openshift' is not one of metal3, ironic"]
    elif case == "no namespaces":
        options = {}
        expected = ["option namespaces", "required with backend metal3"]
    elif case == "missing credentials":
        run_env.pop("K8S_AUTH_KUBECONFIG")
        run_env["HOME"] = str(tmp_path / "empty-home")
        os.makedirs(run_env["HOME"], exist_ok=True)
        expected = ["Kubernetes credentials", "none found"]
    elif case == "unreachable API":
        run_env.pop("K8S_AUTH_KUBECONFIG")
        port = free_port()
        run_env.update(
            K8S_AUTH_HOST="https://127.0.0.1:%d" % port, K8S_AUTH_API_KEY="not-a-token", K8S_AUTH_VERIFY_SSL="false"
        )
        expected = ["Kubernetes API https://127.0.0.1:%d" % port, "cannot connect", "Connection refused"]
    else:
        options["namespaces"] = ["inv-a"]
        expected = ["HostClaims in namespace inv-a", "HTTP 403"]
    source = write_source(tmp_path / "bad.claimed_hosts.yml", **options)
    proc = run_inventory(source, run_env, tmp_path)
    assert proc.returncode != 0
    text = proc.stdout + proc.stderr
    assert "Traceback" not in text
    messages = plugin_errors(proc)
    assert len(messages) == 1, text
    message = messages.pop()
    for word in expected:
        assert word in message, (word, message)
    assert "not-a-token" not in text


def test_examples_work_as_written(inventory_metal3, tmp_path):
    env = inventory_metal3
    namespaces = env.namespaces["tenant-a"]
    names = set(expected_names(env, "tenant-a"))
    source = example_source("inventory/tenant-a.claimed_hosts.yml", tmp_path, namespaces=namespaces)
    data, dummy = inventory(source, env.env("tenant-a"), tmp_path)
    assert set(data["_meta"]["hostvars"]) == names
    assert all(v["ansible_user"] == "ubuntu" for v in data["_meta"]["hostvars"].values())
    assert members(data, "zone_zone_0") | members(data, "zone_zone_1") == names
    assert members(data, "app_web") == {n for n in names if n.startswith("web.")}
    assert members(data, "powered_off") == names

    cached = example_source(
        "inventory/cached.claimed_hosts.yml",
        tmp_path / "cached",
        namespaces=namespaces,
        cache_connection=str(tmp_path / "cache"),
    )
    data, _dummy = inventory(cached, env.env("tenant-a"), tmp_path)
    assert set(data["_meta"]["hostvars"]) == {"%s-%s" % tuple(n.split(".")) for n in names}

    # AWX: the source file as it is (but for the namespace), with only what AWX's Kubernetes bearer token
    # credential injects in the environment.
    kube_env = env.metal3.kube
    awx_env = {k: v for k, v in env.env("tenant-a").items() if k != "K8S_AUTH_KUBECONFIG"}
    awx_env.update(
        K8S_AUTH_HOST=kube_env.server,
        K8S_AUTH_API_KEY=kube_env.tokens["tenant-a"],
        K8S_AUTH_VERIFY_SSL="True",
        K8S_AUTH_SSL_CA_CERT=str(kube_env.ca_file),
        HOME=str(tmp_path),
    )
    awx = example_source("awx/inventories/tenant-a.claimed_hosts.yml", tmp_path / "awx", namespaces=["inv-a"])
    data, text = inventory(awx, awx_env, tmp_path)
    assert set(data["_meta"]["hostvars"]) == {h.claim for h in env.hosts["tenant-a"] if h.namespace == "inv-a"}
    assert kube_env.tokens["tenant-a"] not in text


def test_host_claim_info_and_the_inventory_give_the_same_values_for_the_same_claim(inventory_metal3, tmp_path):
    """One claim view (metal3/claim/view.py): the module's record and the inventory's host variables agree."""
    env = inventory_metal3
    identity, namespace = "tenant-a", "inv-a"
    source = write_source(
        tmp_path / "same.claimed_hosts.yml", namespaces=[namespace], host_variables=ALL_HOST_VARIABLES
    )
    data, _text = inventory(source, env.env(identity), tmp_path)
    hostvars = data["_meta"]["hostvars"]
    run = run_playbook(
        [
            {
                "name": "read the claims",
                "hosts": "localhost",
                "connection": "local",
                "gather_facts": False,
                "tasks": [
                    {
                        "name": "info",
                        "baremetal.tenancy.host_claim_info": {"backend": "metal3", "namespace": namespace},
                    }
                ],
            }
        ],
        env.env(identity),
        tmp_path / "info",
    )
    assert run.ok, run.explain()
    claims = {claim["name"]: claim for claim in run.result("info")["claims"]}
    bound = [h for h in env.hosts[identity] if h.namespace == namespace]
    assert bound and set(hostvars) == {h.claim for h in bound}
    assert set(claims) == {h.claim for h in bound} | set(env.unbound[identity])
    compared = set()
    for host in bound:
        claim, variables = claims[host.claim], hostvars[host.claim]
        for key, value in variables.items():
            name = key[len("tenancy_") :]
            if not key.startswith("tenancy_") or name == "host_class":
                continue
            if name == "conditions":
                assert value == {c["type"]: c["status"] for c in claim["conditions"]}, host.claim
            elif name == "condition_details":
                assert value == claim["conditions"], host.claim
            else:
                assert value == claim[name], (host.claim, name)
            compared.add(name)
    assert compared >= {"name", "namespace", "host", "ready", "labels", "annotations", "image", "addresses", "nics"}
    # an unbound claim: the module shows it without a host, the inventory has no such host
    assert claims["pending"]["host"] is None and "pending" not in hostvars
