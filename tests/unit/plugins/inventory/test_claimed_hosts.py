# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The inventory plugin inside Ansible's inventory machinery, with the API reads replaced by a counter."""

import gc
import json

import pytest
import yaml
from ansible.errors import AnsibleError, AnsibleParserError
from ansible.inventory.data import InventoryData
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader, inventory_loader
from ansible.template import is_trusted_as_template

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import BackendError
from ansible_collections.baremetal.tenancy.plugins.plugin_utils import inventory_api

NAME = "baremetal.tenancy.claimed_hosts"
INJECTED = "{{ lookup('ansible.builtin.pipe', 'id') }}"


def record(name, namespace="ns-a", ready=True, address="192.0.2.1", **extra):
    result = {
        "backend": "metal3",
        "name": name,
        "namespace": namespace,
        "uid": "u-" + name,
        "host": "h-" + name,
        "online": True,
        "powered_on": True,
        "associated": True,
        "ready": ready,
        "conditions": [{"type": "AssociateBMH", "status": "True"}, {"type": "Ready", "status": str(ready)}],
        "labels": {"baremetal.tenancy/host-class": "large", "app": name},
        "annotations": {"export.hostclaim.metal3.io/motd": INJECTED},
        "image": None,
        "addresses": [{"type": "InternalIP", "address": address}] if address else [],
        "nics": [],
        "boot_mac_address": None,
    }
    result.update(extra)
    return result


RECORDS = [record("web"), record("db", ready=False, address=None), record("web", namespace="ns-b", address="192.0.2.2")]


@pytest.fixture
def fetch(monkeypatch):
    """Replace the API reads: returns the list of calls made."""
    calls = []

    def fake(backend, params, namespaces=None, page_size=500, timeout=60, ports=True, on_record=None, network=None):
        calls.append(
            {"backend": backend, "params": params, "namespaces": namespaces, "page_size": page_size, "ports": ports}
        )
        if backend == "ironic":
            records = [record("web", backend="ironic", namespace="p-1", project_id="p-1", resource_class="large")]
        else:
            records = [dict(r) for r in RECORDS if r["namespace"] in namespaces]
        for item in records if on_record is not None else ():
            on_record(item)
        return records, 3

    monkeypatch.setattr(inventory_api, "fetch_records", fake)
    return calls


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    for variable in (
        "K8S_AUTH_KUBECONFIG",
        "K8S_AUTH_HOST",
        "K8S_AUTH_API_KEY",
        "K8S_AUTH_SSL_CA_CERT",
        "K8S_AUTH_VERIFY_SSL",
        "K8S_AUTH_CONTEXT",
        "KUBECONFIG",
        "OS_CLOUD",
        "OS_CLIENT_CONFIG_FILE",
        "OS_AUTH_URL",
        "OS_USERNAME",
        "OS_PASSWORD",
        "OS_PROJECT_NAME",
        "OS_CACERT",
        "OS_VERIFY",
    ):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))


def plugin():
    init_plugin_loader()
    loaded = inventory_loader.get(NAME)
    assert loaded is not None
    return loaded


def parse(tmp_path, use_cache=True, name="claimed_hosts.yml", **options):
    source = tmp_path / name
    source.write_text(yaml.safe_dump(dict({"plugin": NAME, "namespaces": ["ns-a", "ns-b"]}, **options)))
    inventory = InventoryData()
    module = plugin()
    module.parse(inventory, DataLoader(), str(source), cache=use_cache)
    if getattr(module, "_cache", None) is not None and module.get_option("cache"):
        module.update_cache_if_changed()
    return inventory


def host_vars(inventory, name):
    return inventory.get_host(name).get_vars()


@pytest.mark.parametrize(
    "name, accepted",
    [
        ("claimed_hosts.yml", True),
        ("claimed_hosts.yaml", True),
        ("tenant-a.claimed_hosts.yml", True),
        ("x.claimed_hosts.yaml", True),
        ("myclaimed_hosts.yml", False),
        ("claimed_hosts.json", False),
        ("hosts.yml", False),
        ("claimed_hosts.yml.bak", False),
    ],
)
def test_verify_file(tmp_path, name, accepted):
    path = tmp_path / name
    path.write_text("plugin: %s\n" % NAME)
    assert plugin().verify_file(str(path)) is accepted


def test_verify_file_needs_a_readable_file(tmp_path):
    assert plugin().verify_file(str(tmp_path / "claimed_hosts.yml")) is False


def test_hosts_groups_and_variables(tmp_path, fetch, clean_env, monkeypatch):
    monkeypatch.setenv("K8S_AUTH_API_KEY", "secret-token")
    monkeypatch.setenv("K8S_AUTH_HOST", "https://api.example.test")
    inventory = parse(tmp_path)
    assert fetch[0]["backend"] == "metal3" and fetch[0]["namespaces"] == ["ns-a", "ns-b"]
    assert fetch[0]["params"]["api_key"] == "secret-token" and fetch[0]["params"]["host"] == "https://api.example.test"
    assert sorted(inventory.hosts) == ["db.ns-a", "web.ns-a", "web.ns-b"]  # two namespaces: qualified names
    groups = inventory.groups
    assert sorted(h.name for h in groups["claimed_hosts"].get_hosts()) == ["db.ns-a", "web.ns-a", "web.ns-b"]
    assert sorted(h.name for h in groups["tenancy_namespace_ns_a"].get_hosts()) == ["db.ns-a", "web.ns-a"]
    assert [h.name for h in groups["tenancy_not_ready"].get_hosts()] == ["db.ns-a"]
    assert sorted(h.name for h in groups["tenancy_class_large"].get_hosts()) == ["db.ns-a", "web.ns-a", "web.ns-b"]
    web = host_vars(inventory, "web.ns-b")
    assert web["ansible_host"] == "192.0.2.2" and web["tenancy_name"] == "web" and web["tenancy_host_class"] == "large"
    assert "ansible_host" not in host_vars(inventory, "db.ns-a")
    # Every string from the API is untrusted: never templated.
    assert not is_trusted_as_template(web["tenancy_annotations"]["export.hostclaim.metal3.io/motd"])
    assert not is_trusted_as_template(web["ansible_host"])


def test_each_default_group_is_added_once(tmp_path, fetch, clean_env, monkeypatch):
    added = []
    add_group = InventoryData.add_group
    monkeypatch.setattr(InventoryData, "add_group", lambda self, group: added.append(group) or add_group(self, group))
    inventory = parse(tmp_path)
    defaults = [group for group in added if group.startswith("tenancy_")]
    assert sorted(defaults) == sorted(set(defaults)) and "tenancy_class_large" in defaults
    assert sorted(h.name for h in inventory.groups["tenancy_ready"].get_hosts()) == ["web.ns-a", "web.ns-b"]


def test_options_change_names_and_groups(tmp_path, fetch, clean_env):
    inventory = parse(
        tmp_path,
        namespaces=["ns-a"],
        hostname="{{ bm_name }}-{{ bm_host }}",
        only_ready=True,
        group="mine",
        group_prefix="bm_",
        hostvar_prefix="bm_",
        keyed_groups=[{"key": "bm_labels.app", "prefix": "app"}],
        groups={"has_address": "ansible_host is defined"},
        compose={"ansible_user": "'core'"},
    )
    assert list(inventory.hosts) == ["web-h-web"]
    assert set(inventory.groups) >= {"mine", "bm_namespace_ns_a", "bm_ready", "app_web", "has_address"}
    assert host_vars(inventory, "web-h-web")["ansible_user"] == "core"
    assert "claimed_hosts" not in inventory.groups


def test_host_variables_choose_what_is_set(tmp_path, fetch, clean_env):
    inventory = parse(
        tmp_path,
        host_variables=["name", "condition_details", "traits"],
        keyed_groups=[{"key": "tenancy_condition_details | map(attribute='type')", "prefix": "c"}],
    )
    web = host_vars(inventory, "web.ns-a")
    assert sorted(name for name in web if name.startswith("tenancy_")) == ["tenancy_condition_details", "tenancy_name"]
    assert web["tenancy_condition_details"] == RECORDS[0]["conditions"]
    assert "c_AssociateBMH" in inventory.groups and "tenancy_class_large" in inventory.groups  # groups need no variable
    default = host_vars(parse(tmp_path), "web.ns-a")
    assert default["tenancy_conditions"] == {"AssociateBMH": "True", "Ready": "True"}
    assert "tenancy_addresses" not in default and "tenancy_uid" not in default and "tenancy_traits" not in default


def test_ironic_ports_are_read_only_for_nics_or_boot_mac(tmp_path, fetch, clean_env, monkeypatch):
    monkeypatch.setenv("OS_AUTH_URL", "http://keystone.example.test/v3")
    parse(tmp_path, backend="ironic")
    parse(tmp_path, backend="ironic", host_variables=["name", "boot_mac_address"])
    parse(tmp_path, backend="ironic", host_variables=["nics"])
    parse(tmp_path, host_variables=["nics"])  # metal3: NICs come with the claim, nothing more to read
    assert [call["ports"] for call in fetch] == [False, True, True, False]
    # Records cached without ports are never served to a source that wants NICs.
    parse(tmp_path, backend="ironic", **cached_options(tmp_path))
    parse(tmp_path, backend="ironic", host_variables=["nics"], **cached_options(tmp_path))
    parse(tmp_path, backend="ironic", host_variables=["name"], **cached_options(tmp_path))
    assert [call["ports"] for call in fetch[4:]] == [False, True]


def test_documented_host_variables_are_the_model_s():
    from ansible_collections.baremetal.tenancy.plugins.inventory import claimed_hosts
    from ansible_collections.baremetal.tenancy.plugins.plugin_utils import inventory_model

    option = yaml.safe_load(claimed_hosts.DOCUMENTATION)["options"]["host_variables"]
    assert tuple(option["choices"]) == inventory_model.HOST_VARIABLES
    assert tuple(option["default"]) == inventory_model.DEFAULT_HOST_VARIABLES


def test_the_cyclic_collector_is_paused_while_parsing_and_restored(tmp_path, fetch, clean_env, monkeypatch):
    seen = []
    real = inventory_api.fetch_records

    def fetch_and_look(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(inventory_api, "fetch_records", fetch_and_look)
    assert gc.isenabled()
    parse(tmp_path)
    assert seen == [False] and gc.isenabled()
    with pytest.raises(AnsibleError):  # a failed parse restores it too
        parse(tmp_path, host_variables=["bmc_password"])
    assert gc.isenabled()
    gc.disable()
    try:
        parse(tmp_path)
        assert not gc.isenabled(), "a collector the caller had paused stays paused"
    finally:
        gc.enable()


def test_unknown_host_variable_is_an_error(tmp_path, fetch, clean_env):
    with pytest.raises(AnsibleError, match="host_variables") as error:
        parse(tmp_path, host_variables=["name", "bmc_password"])
    assert "bmc_password" in str(error.value)
    assert fetch == []


def test_duplicate_host_names_are_an_error(tmp_path, fetch, clean_env):
    with pytest.raises(AnsibleParserError) as error:
        parse(tmp_path, qualify_host_names="never")
    assert "host name 'web'" in str(error.value) and "HostClaim ns-a/web" in str(error.value)
    assert "HostClaim ns-b/web" in str(error.value)


def test_strict_compose(tmp_path, fetch, clean_env):
    bad = {"broken": "tenancy_labels['none'].x"}
    with pytest.raises(AnsibleError, match="Could not set broken"):
        parse(tmp_path, compose=bad, strict=True)
    inventory = parse(tmp_path, compose=bad, strict=False)
    assert all("broken" not in host.get_vars() for host in inventory.hosts.values())


def test_api_errors_become_one_line(tmp_path, monkeypatch, clean_env):
    def failing(*args, **kwargs):
        raise BackendError("HostClaims in namespace ns-a", "boom\nwith a second line")

    monkeypatch.setattr(inventory_api, "fetch_records", failing)
    with pytest.raises(AnsibleParserError) as error:
        parse(tmp_path)
    assert error.value.message == "%s: HostClaims in namespace ns-a: boom with a second line" % NAME


def test_unknown_backend(tmp_path, fetch, clean_env):
    with pytest.raises(AnsibleParserError, match="option backend: 'k8s' is not one of metal3, ironic"):
        parse(tmp_path, backend="k8s")
    assert fetch == []


def cached_options(tmp_path):
    return dict(
        cache=True,
        cache_plugin="ansible.builtin.jsonfile",
        cache_connection=str(tmp_path / "cache"),
        cache_timeout=3600,
    )


def test_cache_hit_makes_no_read_and_gives_the_same_inventory(tmp_path, fetch, clean_env, monkeypatch):
    monkeypatch.setenv("K8S_AUTH_KUBECONFIG", str(tmp_path / "tenant-a.kubeconfig"))
    (tmp_path / "tenant-a.kubeconfig").write_text("tenant-a")
    first = parse(tmp_path, **cached_options(tmp_path))
    assert len(fetch) == 1 and list((tmp_path / "cache").iterdir())
    second = parse(tmp_path, **cached_options(tmp_path))
    assert len(fetch) == 1
    assert sorted(second.hosts) == sorted(first.hosts)
    assert host_vars(second, "web.ns-a")["tenancy_labels"] == host_vars(first, "web.ns-a")["tenancy_labels"]
    assert not is_trusted_as_template(
        host_vars(second, "web.ns-a")["tenancy_annotations"]["export.hostclaim.metal3.io/motd"]
    )
    # --flush-cache (cache=False) reads again
    parse(tmp_path, use_cache=False, **cached_options(tmp_path))
    assert len(fetch) == 2
    # Options that change the hosts, not the reads, apply to cached data.
    third = parse(tmp_path, only_ready=True, **cached_options(tmp_path))
    assert len(fetch) == 2 and "db.ns-a" not in third.hosts


@pytest.mark.parametrize("change", ["other kubeconfig file", "kubeconfig content", "token", "namespaces"])
def test_cache_is_per_identity(tmp_path, fetch, clean_env, monkeypatch, change):
    kubeconfig = tmp_path / "k.kubeconfig"
    kubeconfig.write_text("tenant-a")
    monkeypatch.setenv("K8S_AUTH_KUBECONFIG", str(kubeconfig))
    parse(tmp_path, **cached_options(tmp_path))
    options = cached_options(tmp_path)
    if change == "other kubeconfig file":
        other = tmp_path / "b.kubeconfig"
        other.write_text("tenant-b")
        monkeypatch.setenv("K8S_AUTH_KUBECONFIG", str(other))
    elif change == "kubeconfig content":
        kubeconfig.write_text("tenant-b")
    elif change == "token":
        monkeypatch.setenv("K8S_AUTH_API_KEY", "another-token")
    else:
        options["namespaces"] = ["ns-a"]
    parse(tmp_path, **options)
    assert len(fetch) == 2


def test_tls_and_openstack_environment_fallbacks(tmp_path, fetch, clean_env, monkeypatch):
    monkeypatch.setenv("K8S_AUTH_SSL_CA_CERT", "/k8s/ca.pem")
    monkeypatch.setenv("K8S_AUTH_VERIFY_SSL", "no")
    monkeypatch.setenv("OS_CACERT", "/os/ca.pem")
    parse(tmp_path)
    assert fetch[-1]["params"]["ca_cert"] == "/k8s/ca.pem" and fetch[-1]["params"]["validate_certs"] is False
    monkeypatch.setenv("OS_AUTH_URL", "http://keystone.example.test/v3")
    monkeypatch.setenv("OS_USERNAME", "u")
    monkeypatch.setenv("OS_PASSWORD", "p")
    parse(tmp_path, backend="ironic")
    params = fetch[-1]["params"]
    assert params["ca_cert"] == "/os/ca.pem" and params["validate_certs"] is None
    assert params["auth"] == {"auth_url": "http://keystone.example.test/v3", "username": "u", "password": "p"}
    assert "kubeconfig" not in params


def test_the_only_cloud_of_clouds_yaml_is_used(tmp_path, fetch, clean_env, monkeypatch):
    clouds = tmp_path / "clouds.yaml"
    clouds.write_text(json.dumps({"clouds": {"devstack": {"auth": {"auth_url": "http://k/v3"}}}}))
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(clouds))
    parse(tmp_path, backend="ironic")
    assert fetch[-1]["params"]["cloud"] == "devstack"
    clouds.write_text(json.dumps({"clouds": {"a": {}, "b": {}}}))
    parse(tmp_path, backend="ironic")
    assert fetch[-1]["params"]["cloud"] is None


def test_credential_options_may_be_templates(tmp_path, fetch, clean_env):
    parse(tmp_path, api_key="{{ 'tok' ~ 'en' }}", host="https://api.example.test")
    assert fetch[-1]["params"]["api_key"] == "token"
