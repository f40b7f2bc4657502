# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The relay in host_bind's pass (relay.runner through binder.run), on two in-memory API servers: the management
cluster and the host cluster.  The integration test (test_metal3_relay.py) runs two real API servers."""

import base64
import json

import yaml

from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3 import client as m3client
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import BINDING_LABEL, FINALIZER
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder import run as metal3
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import identity
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.view import claim_record
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.relay import remote as model
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.fake_kube import (
    BMO_OPENAPI,
    FakeApiClient,
    FakeKube,
    _error,
)

TOKEN = "tenant-a-token-0123456789abcdef"
REMOTE_NS = "hosts-a"


def b64(text):
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def kubeconfig(user=None, namespace=REMOTE_NS):
    return yaml.safe_dump(
        {
            "clusters": [{"name": "hosts", "cluster": {"server": "https://hosts.example:6443"}}],
            "users": [{"name": "t", "user": user or {"token": TOKEN}}],
            "contexts": [{"name": "c", "context": {"cluster": "hosts", "user": "t", "namespace": namespace}}],
            "current-context": "c",
        }
    )


class HostCluster(FakeKube):
    """The host cluster; ``revoked`` answers 401 to everything, ``down`` refuses connections."""

    revoked = False

    def request(self, method, url, headers=None, body=None, **kwargs):
        if self.revoked:
            self.requests.append((method, url, None))
            return _error(401, "Unauthorized")
        return super().request(method, url, headers=headers, body=body, **kwargs)


def worlds(spec=None, secret_text=None, host_openapi=None):
    local = FakeKube()
    local.add("namespaces", {"metadata": {"name": "tenant-a", "labels": {}}})
    local.add(
        "secrets",
        {
            "metadata": {"name": "hosts-kubeconfig", "namespace": "tenant-a"},
            "data": {"kubeconfig": b64(secret_text if secret_text is not None else kubeconfig())},
        },
    )
    local.add("secrets", {"metadata": {"name": "cloud-init", "namespace": "tenant-a"}, "data": {"userData": b64("#!")}})
    claim_spec = {"online": False, "credentials": "hosts-kubeconfig", "userData": {"name": "cloud-init"}}
    claim_spec.update(spec or {})
    local.add(
        "hostclaims",
        {
            "apiVersion": "metal3.io/v1alpha1",
            "kind": "HostClaim",
            "metadata": {"name": "web", "namespace": "tenant-a"},
            "spec": claim_spec,
        },
    )
    hosts = HostCluster()
    if host_openapi is not None:
        hosts.openapi = host_openapi
    return local, hosts


def run(local, hosts, seen=None, **kwargs):
    def clients(access):
        if seen is not None:
            seen.append(access)
        return m3client.KubeIO(FakeApiClient(hosts))

    binder = metal3.Binder(m3client.KubeIO(FakeApiClient(local)), workers=1, relay_clients=clients, **kwargs)
    return binder.run()


def local_claim(local):
    return local.get("hostclaims", "tenant-a", "web")


def remote_claims(hosts):
    return [obj for (plural, ns, dummy), obj in hosts.objects.items() if plural == "hostclaims" and ns == REMOTE_NS]


def remote_writes(hosts):
    return [request for request in hosts.requests if request[0] != "GET"]


def bind_remotely(hosts, host="h7"):
    """What the host cluster's binder does: label, finalizer, status."""
    remote = remote_claims(hosts)[0]
    name = remote["metadata"]["name"]
    hosts.write(
        "hostclaims",
        REMOTE_NS,
        name,
        {
            "metadata": {"labels": {BINDING_LABEL: host}, "finalizers": [FINALIZER]},
            "status": {
                "addresses": [{"type": "InternalIP", "address": "192.0.2.7"}],
                "poweredOn": False,
                "conditions": [
                    {
                        "type": "AssociateBMH",
                        "status": "True",
                        "reason": "Associated",
                        "message": "bound to host " + host,
                    },
                    {"type": "Ready", "status": "False", "reason": "NotProvisioned", "message": "set spec.image"},
                ],
            },
        },
    )
    return name


def test_a_claim_with_credentials_is_relayed_with_its_data_and_comes_back_pending():
    local, hosts = worlds()
    seen = []
    result = run(local, hosts, seen)
    assert [access.namespace for access in seen] == [REMOTE_NS] and seen[0].token == TOKEN
    [remote] = remote_claims(hosts)
    assert "credentials" not in remote["spec"] and remote["metadata"]["labels"][model.ORIGIN_UID_LABEL]
    copy = hosts.get("secrets", REMOTE_NS, remote["metadata"]["name"] + "-userdata")
    assert copy["data"] == {"userData": b64("#!")}
    claim = local_claim(local)
    assert FINALIZER in claim["metadata"]["finalizers"]
    associate = claim["status"]["conditions"][0]
    assert (associate["type"], associate["status"], associate["reason"]) == ("AssociateBMH", "False", "RemotePending")
    assert result["summary"]["relayed"] == 1 and result["claims"][0]["action"] == "relayed"
    assert result["relay_requests"]["create"] == 2
    again = run(local, hosts)
    assert not again["changed"] and again["relay_requests"]["writes"] == 0


def test_the_remote_binding_status_and_changes_go_both_ways():
    local, hosts = worlds()
    run(local, hosts)
    name = bind_remotely(hosts)
    result = run(local, hosts)
    claim = local_claim(local)
    record = claim_record(claim)
    assert record["host"] == "h7" and record["addresses"] == [{"type": "InternalIP", "address": "192.0.2.7"}]
    assert claim["metadata"]["annotations"][model.REMOTE_ANNOTATION] == "%s/%s" % (REMOTE_NS, name)
    assert result["bindings"]["after"]["tenant-a/web"] == "%s/h7" % REMOTE_NS
    local.write(
        "hostclaims",
        "tenant-a",
        "web",
        {"spec": {"online": True}, "metadata": {"annotations": {"reboot.metal3.io": ""}}},
    )
    result = run(local, hosts)
    remote = hosts.get("hostclaims", REMOTE_NS, name)
    assert remote["spec"]["online"] is True and remote["metadata"]["annotations"]["reboot.metal3.io"] == ""
    assert result["bindings"]["before"]["tenant-a/web"] == "%s/h7" % REMOTE_NS
    local.write("hostclaims", "tenant-a", "web", {"metadata": {"annotations": {"reboot.metal3.io": None}}})
    run(local, hosts)
    assert "reboot.metal3.io" not in hosts.get("hostclaims", REMOTE_NS, name)["metadata"]["annotations"]


def test_a_bmo_host_cluster_gets_its_own_dialect():
    local, hosts = worlds(host_openapi=BMO_OPENAPI)
    run(local, hosts)
    [remote] = remote_claims(hosts)
    assert remote["spec"]["poweredOn"] is False
    assert remote["spec"]["userData"] == {"name": remote["metadata"]["name"] + "-userdata", "namespace": REMOTE_NS}


def test_node_reuse_on_a_bmo_host_cluster_is_one_reason_and_nothing_remote():
    local, hosts = worlds(spec={"nodeReuse": "pool"}, host_openapi=BMO_OPENAPI)
    result = run(local, hosts)
    assert remote_writes(hosts) == [] and result["claims"][0]["reason"] == model.REMOTE_SPEC_UNSUPPORTED
    assert local_claim(local)["status"]["conditions"][0]["reason"] == model.REMOTE_SPEC_UNSUPPORTED


def test_check_mode_writes_nothing_in_either_cluster():
    local, hosts = worlds()
    before = json.dumps(sorted((str(k), v) for k, v in local.objects.items()), sort_keys=True)
    result = run(local, hosts, check_mode=True)
    assert result["changed"] and remote_writes(hosts) == []
    assert json.dumps(sorted((str(k), v) for k, v in local.objects.items()), sort_keys=True) == before


def test_a_missing_credentials_secret_is_one_reason_and_the_host_cluster_is_never_asked():
    local, hosts = worlds()
    del local.objects[("secrets", "tenant-a", "hosts-kubeconfig")]
    seen = []
    result = run(local, hosts, seen)
    assert seen == [] and hosts.requests == []
    assert result["claims"][0]["reason"] == model.CREDENTIALS_NOT_FOUND
    assert local_claim(local)["status"]["conditions"][0]["reason"] == model.CREDENTIALS_NOT_FOUND


def test_the_credentials_secret_is_read_from_the_claims_own_namespace_only():
    local, hosts = worlds()
    del local.objects[("secrets", "tenant-a", "hosts-kubeconfig")]
    local.add("namespaces", {"metadata": {"name": "tenant-b", "labels": {}}})
    local.add(
        "secrets",
        {"metadata": {"name": "hosts-kubeconfig", "namespace": "tenant-b"}, "data": {"kubeconfig": b64(kubeconfig())}},
    )
    run(local, hosts)
    reads = [path for method, path, dummy in local.requests if method == "GET" and "/secrets/" in path]
    assert reads and all("/namespaces/tenant-a/" in path for path in reads)
    assert hosts.requests == []


def test_an_exec_kubeconfig_is_refused_before_any_client_exists():
    local, hosts = worlds(secret_text=kubeconfig(user={"exec": {"command": "touch", "args": ["/tmp/relay-pwned"]}}))
    seen = []
    result = run(local, hosts, seen)
    assert seen == [] and hosts.requests == []
    assert (
        result["claims"][0]["reason"] == model.CREDENTIALS_INVALID
        and "runs a command" in result["claims"][0]["message"]
    )


def test_a_revoked_token_keeps_the_host_visible_with_one_reason_and_writes_nothing_remote():
    local, hosts = worlds()
    run(local, hosts)
    bind_remotely(hosts)
    run(local, hosts)
    hosts.revoked = True
    hosts.requests = []
    local.write("hostclaims", "tenant-a", "web", {"spec": {"online": True}})
    result = run(local, hosts)
    assert remote_writes(hosts) == [] and hosts.requests  # asked, refused, nothing written
    claim = local_claim(local)
    ready = next(c for c in claim["status"]["conditions"] if c["type"] == "Ready")
    assert ready["reason"] == model.REMOTE_UNAUTHORIZED and "hosts-kubeconfig" in ready["message"]
    assert claim_record(claim)["host"] == "h7"
    assert result["claims"][0]["reason"] == model.REMOTE_UNAUTHORIZED
    hosts.revoked = False
    run(local, hosts)
    assert (
        next(c for c in local_claim(local)["status"]["conditions"] if c["type"] == "Ready")["reason"]
        == "NotProvisioned"
    )


def test_the_token_appears_in_no_result_claim_or_status():
    local, hosts = worlds()
    results = [run(local, hosts)]
    bind_remotely(hosts)
    results.append(run(local, hosts))
    hosts.revoked = True
    results.append(run(local, hosts))
    text = json.dumps(results, default=str) + json.dumps(local_claim(local)) + json.dumps(remote_claims(hosts))
    assert TOKEN not in text and b64(TOKEN) not in text and "hosts.example" not in text


def test_a_same_named_remote_claim_of_someone_else_is_left_alone():
    local, hosts = worlds()
    claim = local_claim(local)
    name = model.remote_claim_name("tenant-a", "web", claim["metadata"]["uid"])
    hosts.add(
        "hostclaims", {"metadata": {"name": name, "namespace": REMOTE_NS, "labels": {}}, "spec": {"online": True}}
    )
    before = json.dumps(hosts.get("hostclaims", REMOTE_NS, name), sort_keys=True)
    result = run(local, hosts)
    assert json.dumps(hosts.get("hostclaims", REMOTE_NS, name), sort_keys=True) == before
    assert result["claims"][0]["reason"] == model.REMOTE_NAME_TAKEN


def test_deleting_the_claim_deletes_the_remote_and_waits_for_its_release():
    local, hosts = worlds()
    run(local, hosts)
    name = bind_remotely(hosts)
    run(local, hosts)
    local.request("DELETE", "https://x/apis/metal3.io/v1alpha1/namespaces/tenant-a/hostclaims/web")
    result = run(local, hosts)
    assert result["claims"][0]["action"] == "releasing" and local_claim(local) is not None
    assert hosts.get("hostclaims", REMOTE_NS, name)["metadata"]["deletionTimestamp"]
    assert hosts.get("secrets", REMOTE_NS, name + "-userdata") is not None
    result = run(local, hosts)  # the host cluster still cleans the host
    assert result["claims"][0]["action"] == "releasing" and local_claim(local) is not None
    hosts.write("hostclaims", REMOTE_NS, name, {"metadata": {"finalizers": None}})  # its binder let it go
    del hosts.objects[("hostclaims", REMOTE_NS, name)]
    result = run(local, hosts)
    assert result["claims"][0]["action"] == "released"
    assert local_claim(local) is None and hosts.get("secrets", REMOTE_NS, name + "-userdata") is None


def test_a_revoked_token_holds_the_release_with_one_reason():
    local, hosts = worlds()
    run(local, hosts)
    local.request("DELETE", "https://x/apis/metal3.io/v1alpha1/namespaces/tenant-a/hostclaims/web")
    hosts.revoked = True
    hosts.requests = []
    result = run(local, hosts)
    assert result["claims"][0]["action"] == "releasing" and result["claims"][0]["reason"] == model.REMOTE_UNAUTHORIZED
    assert local_claim(local) is not None and remote_writes(hosts) == []


def test_the_remote_client_sends_the_token_only_in_its_header_and_keeps_certificates_private():
    import os
    import stat

    from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.relay.kubeconfig import RemoteAccess
    from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.relay.runner import RemoteClients

    clients = RemoteClients()
    io = clients(RemoteAccess("https://hosts.example:6443", REMOTE_NS, token=TOKEN))
    assert io.headers(None)["authorization"] == "Bearer " + TOKEN and io.base == "https://hosts.example:6443"
    assert io.configuration.verify_ssl is True
    pem = b"-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n"
    key = b"-----BEGIN PRIVATE KEY-----\ny\n-----END PRIVATE KEY-----\n"
    same = RemoteAccess("https://h:6443", REMOTE_NS, None, pem, key, pem, "kube.example")
    io = clients(same)
    assert clients(same).pool.connection_pool_kw["key_file"] != io.pool.connection_pool_kw["key_file"]  # two claims
    pool = io.pool.connection_pool_kw
    for path in (pool["cert_file"], pool["key_file"]):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert open(pool["key_file"], "rb").read() == key and pool["ca_cert_data"] == pem.decode()
    assert pool["server_hostname"] == "kube.example" and "authorization" not in io.headers(None)
    directory = os.path.dirname(pool["key_file"])
    clients.close()
    assert not os.path.exists(directory)


def test_a_kubeconfig_namespace_that_does_not_exist_there_is_one_reason():
    local, hosts = worlds(secret_text=kubeconfig(namespace="nowhere"))

    original = hosts.request

    def refuse_writes(method, url, headers=None, body=None, **kwargs):
        if method == "POST" and "/namespaces/nowhere/" in url:
            hosts.requests.append((method, url, None))
            return _error(404, 'namespaces "nowhere" not found')
        return original(method, url, headers=headers, body=body, **kwargs)

    hosts.request = refuse_writes
    result = run(local, hosts)
    assert result["claims"][0]["reason"] == model.REMOTE_NAMESPACE_NOT_FOUND, result["claims"]
    assert "namespace nowhere of the host cluster" in result["claims"][0]["message"]


def credentials_finalizers(local):
    secret = local.get("secrets", "tenant-a", "hosts-kubeconfig")
    return None if secret is None else secret["metadata"].get("finalizers") or []


def release_everything(local, hosts):
    """The host cluster's binder lets every remote claim go; then one pass."""
    for remote in remote_claims(hosts):
        name = remote["metadata"]["name"]
        if remote["metadata"].get("deletionTimestamp"):
            hosts.write("hostclaims", REMOTE_NS, name, {"metadata": {"finalizers": None}})
            hosts.objects.pop(("hostclaims", REMOTE_NS, name), None)
    return run(local, hosts)


def test_the_credentials_secret_is_held_while_its_claim_lives_and_goes_after_the_release():
    local, hosts = worlds()
    run(local, hosts)
    assert credentials_finalizers(local) == [model.CREDENTIALS_FINALIZER]
    # the tenant deletes the Secret first: it stays, deleting, and the relay keeps working with it
    local.request("DELETE", "https://x/api/v1/namespaces/tenant-a/secrets/hosts-kubeconfig")
    assert local.get("secrets", "tenant-a", "hosts-kubeconfig")["metadata"]["deletionTimestamp"]
    bind_remotely(hosts)
    local.write("hostclaims", "tenant-a", "web", {"spec": {"online": True}})
    result = run(local, hosts)
    assert result["claims"][0]["action"] == "relayed" and remote_claims(hosts)[0]["spec"]["online"] is True
    assert credentials_finalizers(local) == [model.CREDENTIALS_FINALIZER]  # not written again while deleting
    local.request("DELETE", "https://x/apis/metal3.io/v1alpha1/namespaces/tenant-a/hostclaims/web")
    assert run(local, hosts)["claims"][0]["action"] == "releasing"
    assert credentials_finalizers(local) == [model.CREDENTIALS_FINALIZER]  # still needed: the remote claim is there
    result = release_everything(local, hosts)
    assert result["claims"][0]["action"] == "released"
    assert local_claim(local) is None and credentials_finalizers(local) is None  # the Secret's deletion ended


def test_a_credentials_secret_of_two_claims_is_let_go_after_the_last_release():
    local, hosts = worlds()
    second = json.loads(json.dumps(local_claim(local)))
    second["metadata"] = {"name": "db", "namespace": "tenant-a"}
    local.add("hostclaims", second)
    run(local, hosts)
    assert credentials_finalizers(local) == [model.CREDENTIALS_FINALIZER]
    local.request("DELETE", "https://x/apis/metal3.io/v1alpha1/namespaces/tenant-a/hostclaims/web")
    run(local, hosts)
    release_everything(local, hosts)
    assert local_claim(local) is None and credentials_finalizers(local) == [model.CREDENTIALS_FINALIZER]
    local.request("DELETE", "https://x/apis/metal3.io/v1alpha1/namespaces/tenant-a/hostclaims/db")
    run(local, hosts)
    release_everything(local, hosts)
    assert local.get("hostclaims", "tenant-a", "db") is None and credentials_finalizers(local) == []


def test_a_relay_pass_validates_each_local_claim_version_once(monkeypatch):
    local, hosts = worlds()
    second = json.loads(json.dumps(local_claim(local)))
    second["metadata"] = {"name": "db", "namespace": "tenant-a"}
    local.add("hostclaims", second)
    calls = []
    real = identity.normalise_spec

    def counting(dialect, spec, name, namespace=None):
        calls.append(name)
        return real(dialect, spec, name, namespace)

    # every validation of a claim dict (identity.validate_claim, whoever calls it) goes through normalise_spec
    monkeypatch.setattr(identity, "normalise_spec", counting)
    result = run(local, hosts)
    assert result["summary"]["relayed"] == 2
    # once each when the pass read it: the credentials, the remote claim and the data Secrets come from the record
    assert sorted(calls) == ["db", "web"]
    local.request("DELETE", "https://x/apis/metal3.io/v1alpha1/namespaces/tenant-a/hostclaims/web")
    del calls[:]
    result = run(local, hosts)
    assert sorted((claim["name"], claim["action"]) for claim in result["claims"]) == [
        ("db", "relayed"),
        ("web", "released"),
    ]
    # the deleted claim's record, and the other claim of the namespace (looked at for its credentials Secret) is the
    # record the pass read
    assert sorted(calls) == ["db", "web"] and credentials_finalizers(local) == [model.CREDENTIALS_FINALIZER]
