"""pytest plugin: what the ``claimed_hosts`` inventory suites (and ``bench/inventory.py``) share.

Loaded from ``tests/integration/conftest.py`` (``pytest_plugins``).

- :class:`CountingProxy`: a reverse proxy on 127.0.0.1 that records every
  request (method, path and query) before forwarding it to one upstream
  (HTTP, or HTTPS served with the test apiserver's own certificate, so
  kubeconfigs only change their ``server``). Tests count API requests with
  it: a cached inventory run must make none.
- :func:`seed_claims`: many bound claims at once, status included (no
  hosts), for the benchmark.
- :func:`write_source`: an inventory source file for the plugin;
  :func:`example_source`: a copy of one of ``examples/`` with changes.
- :func:`inventory`: ``ansible-inventory --list`` as a user runs it, failing
  on any unparsed source; checks that every API string in the output is
  marked unsafe, returns the data and everything printed (for leak scans).
  :func:`plugin_errors`: the plugin's distinct error messages in a run.
- module fixture ``inventory_metal3`` (on the real baremetal-operator,
  ``metal3_bmo_env``): tenant namespaces ``inv-a``, ``inv-a2`` (tenant-a)
  and ``inv-b`` (tenant-b) with bound claims on BareMetalHosts of
  ``inv-infra`` (BMC address and Secret set), bound by ``host_bind``, the ready ones provisioned (then
  powered off) by the operator, plus an unbound claim; an :class:`InventoryMetal3`
  describing them.
- session fixture ``inventory_ironic``: Ironic nodes leased to tenant-a and
  tenant-b and claimed by allocations of their projects (one a ``redfish``
  node whose BMC is a sushy-tools emulator), some deployed; an
  :class:`InventoryIronic` describing them.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import http.client
import http.server
import json
import socketserver
import ssl
import sys
import threading
import time
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness import baremetal_operator, kube
from harness import openstack as openstack_harness
from harness.ansible import REPO_ROOT, collections_root, run_inventory
from harness.kube import call_ignoring as _ignore
from kubernetes import client

# The collection's own pure code (upward: the status the binder writes, for the benchmark's seeded claims) importable.
if str(collections_root()) not in sys.path:
    sys.path.append(str(collections_root()))
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3 import api as m3api
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import (
    bmc_data,
    upward,
)
from ansible_collections.baremetal.tenancy.plugins.plugin_utils import inventory_model

GROUP, VERSION = "metal3.io", "v1alpha1"
MERGE = "application/merge-patch+json"
NOW = "2026-03-01T10:00:00Z"
PLUGIN = "baremetal.tenancy.claimed_hosts"
HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailers",
    "transfer-encoding",
    "upgrade",
    "content-length",
}


# --------------------------------------------------------------------------
# Counting reverse proxy
# --------------------------------------------------------------------------


class _ThreadingServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class CountingProxy:
    """Forward every request to ``upstream`` (``http://`` or ``https://host:port``) and record it.

    ``requests`` is the list of ``(method, path?query)`` seen, in order.
    With ``certfile``/``keyfile`` the proxy serves HTTPS; ``ca_file`` verifies
    an HTTPS upstream. Each forwarded request uses a new upstream connection.
    """

    def __init__(
        self, upstream: str, *, certfile: Path | None = None, keyfile: Path | None = None, ca_file: Path | None = None
    ):
        self.upstream = urllib.parse.urlsplit(upstream)
        self.requests: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._server_context = None
        if certfile:
            self._server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            self._server_context.load_cert_chain(str(certfile), str(keyfile))
        self._client_context = ssl.create_default_context(cafile=str(ca_file)) if ca_file else None
        self._server: _ThreadingServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        scheme = "https" if self._server_context else "http"
        return f"{scheme}://127.0.0.1:{self._server.server_address[1]}"

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()

    def paths(self, prefix: str = "") -> list[str]:
        with self._lock:
            return [path for dummy, path in self.requests if path.startswith(prefix)]

    def _upstream_connection(self):
        host, port = self.upstream.hostname, self.upstream.port
        if self.upstream.scheme == "https":
            return http.client.HTTPSConnection(host, port, timeout=120, context=self._client_context)
        return http.client.HTTPConnection(host, port, timeout=120)

    def _handler(self):
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _forward(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                with proxy._lock:
                    proxy.requests.append((self.command, self.path))
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP and k.lower() != "host"}
                headers["Host"] = proxy.upstream.netloc
                upstream = proxy._upstream_connection()
                try:
                    upstream.request(
                        self.command, proxy.upstream.path.rstrip("/") + self.path, body=body, headers=headers
                    )
                    response = upstream.getresponse()
                    data = response.read()
                    self.send_response(response.status, response.reason)
                    for key, value in response.getheaders():
                        if key.lower() not in HOP_BY_HOP:
                            self.send_header(key, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                finally:
                    upstream.close()

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _forward

        return Handler

    def start(self) -> CountingProxy:
        self._server = _ThreadingServer(("127.0.0.1", 0), self._handler())
        if self._server_context:
            self._server.socket = self._server_context.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, name="counting-proxy", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> CountingProxy:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def kube_proxy(kube_env: kube.KubeEnv) -> CountingProxy:
    """A started HTTPS counting proxy in front of the session apiserver."""
    return CountingProxy(
        kube_env.server, certfile=kube_env.pki.serving_cert, keyfile=kube_env.pki.serving_key, ca_file=kube_env.ca_file
    ).start()


def kubeconfig_via(kube_env: kube.KubeEnv, identity: str, server: str, path: Path) -> Path:
    """A copy of ``identity``'s kubeconfig that talks to ``server`` (a proxy)."""
    config = yaml.safe_load(kube_env.kubeconfig(identity).read_text())
    config["clusters"][0]["cluster"]["server"] = server
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


# --------------------------------------------------------------------------
# Inventory sources
# --------------------------------------------------------------------------


def write_source(path: Path, **options: Any) -> Path:
    """Write an inventory source for the plugin (``plugin`` is added)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"plugin": PLUGIN, **options}, sort_keys=False))
    return path


# Every host variable the plugin can set (its option host_variables), named without prefix.
ALL_HOST_VARIABLES = list(inventory_model.HOST_VARIABLES)
PLUGIN_ERROR = PLUGIN + ": "
EXAMPLES = REPO_ROOT / "examples"
FAIL_ON_ERROR = {"ANSIBLE_INVENTORY_UNPARSED_FAILED": "True"}


def inventory(source: Path, env: dict, workdir: Path, *extra: str) -> tuple[dict, str]:
    """``ansible-inventory --list`` output and the whole text it printed (JSON, logs, warnings).

    The output is returned with the unsafe markers removed, after checking that every string the plugin
    took from the API (the ``tenancy_*`` variables and ``ansible_host``) carries one.
    """
    out = workdir / ("%s.json" % source.stem)
    proc = run_inventory(source, dict(env, **FAIL_ON_ERROR), workdir, extra_args=["--output", str(out), *extra])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    text = out.read_text()
    data = json.loads(text)
    for host, variables in data.get("_meta", {}).get("hostvars", {}).items():
        api_values = {k: v for k, v in variables.items() if k.startswith("tenancy_") or k == "ansible_host"}
        assert api_values and trusted_strings(api_values) == [], (host, trusted_strings(api_values))
    return unwrap(data), text + proc.stdout + proc.stderr


def trusted_strings(value, path="") -> list[str]:
    """Paths of the strings in ``ansible-inventory`` output that are NOT marked unsafe."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return []
        return [p for key, item in value.items() for p in trusted_strings(item, "%s.%s" % (path, key))]
    if isinstance(value, list):
        return [p for index, item in enumerate(value) for p in trusted_strings(item, "%s[%d]" % (path, index))]
    return [path] if isinstance(value, str) else []


def unwrap(value):
    """``value`` with ``{"__ansible_unsafe": x}`` replaced by ``x``."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {key: unwrap(item) for key, item in value.items()}
    if isinstance(value, list):
        return [unwrap(item) for item in value]
    return value


def members(data: dict, group: str) -> set[str]:
    return set(data.get(group, {}).get("hosts", []))


def plugin_errors(proc) -> set[str]:
    """The distinct error messages of the plugin (Ansible prints the message again in its cause chain)."""
    text = proc.stdout + proc.stderr
    return {line[line.index(PLUGIN_ERROR) :] for line in text.splitlines() if PLUGIN_ERROR in line}


def example_source(example: str, directory: Path, **changes) -> Path:
    """A copy of an example inventory source with ``changes`` applied (e.g. the test namespaces)."""
    config = yaml.safe_load((EXAMPLES / example).read_text())
    config.update(changes)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / Path(example).name
    path.write_text(yaml.safe_dump(config))
    return path


# --------------------------------------------------------------------------
# Metal3 objects, as the cluster admin
# --------------------------------------------------------------------------


def claim_body(
    namespace: str, name: str, *, online: bool = False, image: dict | None = None, labels: dict | None = None
) -> dict:
    spec: dict = {"online": online}
    if image:
        spec["image"] = image
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "HostClaim",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": spec,
    }


def bound_status(index: int, *, ready: bool = True, host_name: str | None = None) -> dict:
    """The status the binder writes for a claim bound to a registered host (as ``upward_status`` builds it)."""
    host = {
        "metadata": {"name": host_name or "bench-host-%05d" % index, "namespace": "bench-infra"},
        "spec": {
            "bootMACAddress": "52:54:00:%02x:%02x:%02x" % (index >> 16 & 255, index >> 8 & 255, index & 255),
            "online": False,
        },
        "status": {
            "provisioning": {"state": "provisioned" if ready else "available"},
            "poweredOn": False,
            "hardware": {
                "hostname": "node-%05d.example.test" % index,
                "nics": [
                    {
                        "name": "eno1",
                        "mac": "52:54:00:aa:%02x:%02x" % (index >> 8 & 255, index & 255),
                        "ip": "10.%d.%d.%d" % (index >> 16 & 255, index >> 8 & 255, index & 255 or 1),
                    },
                    {"name": "eno2", "mac": "52:54:00:bb:%02x:%02x" % (index >> 8 & 255, index & 255)},
                ],
            },
        },
    }
    status = upward.upward_status(host, None, NOW)
    status["poweredOn"] = False
    return status


def seed_claims(
    api, namespace: str, count: int, *, start: int = 0, workers: int = 8, labels: dict | None = None
) -> None:
    """Create ``count`` bound claims (``c-<index>``) with their status in ``namespace``, in parallel."""
    custom = client.CustomObjectsApi(api)
    image = {
        "url": "http://images.example.test/os.qcow2",
        "checksum": "a" * 64,
        "checksumType": "sha256",
        "format": "qcow2",
    }

    def one(index: int) -> None:
        name = "c-%05d" % index
        body = claim_body(
            namespace, name, image=image, labels=dict(labels or {}, **{m3api.BINDING_LABEL: "bench-host-%05d" % index})
        )
        _ignore(409, custom.create_namespaced_custom_object, GROUP, VERSION, namespace, "hostclaims", body)
        custom.patch_namespaced_custom_object_status(
            GROUP,
            VERSION,
            namespace,
            "hostclaims",
            name,
            {"status": bound_status(index, ready=index % 10 != 0)},
            _content_type=MERGE,
        )

    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        for future in [pool.submit(one, index) for index in range(start, start + count)]:
            future.result()


@dataclasses.dataclass
class ClaimedHost:
    namespace: str
    claim: str
    host: str  # BareMetalHost name
    ready: bool
    address: str | None  # the expected ansible_host
    host_class: str | None


@dataclasses.dataclass
class InventoryMetal3:
    metal3: Any  # fixtures_metal3.Metal3Env
    workdir: Path
    infra: str
    namespaces: dict[str, list[str]]  # identity -> its namespaces
    hosts: dict[str, list[ClaimedHost]]  # identity -> its bound claims
    unbound: dict[str, list[str]]  # identity -> names of its claims without a host
    bmc_values: list[str]
    injected: str  # an exported annotation value that would run a lookup if templated
    image_url: str = ""  # every bound claim's image (the real operator's live ISO)

    def env(self, identity: str) -> dict[str, str]:
        return self.metal3.kube.ansible_env(identity)


HOST_CLASS = "baremetal.tenancy/host-class"
SLOT = "inventory-slot"  # each inventory host's own label, which its claim selects
INJECTED = "{{ lookup('ansible.builtin.pipe', 'echo templated-by-inventory') }}"


def _host_labels(host_class: str | None, zone: str) -> dict:
    labels = {"topology.kubernetes.io/zone": zone, "bmc-vendor": "redfish-lab"}
    if host_class:
        labels[HOST_CLASS] = host_class
    return labels


@pytest.fixture(scope="module")
def inventory_metal3(metal3_bmo_env, tmp_path_factory):
    """Bound claims for tenant-a (two namespaces) and tenant-b on real hosts with BMC data.

    Metal3's real baremetal-operator (``metal3_bmo_env``): the five hosts are created at once and
    registered by BMO (available; NICs and host name through its hardwaredetails annotation), each
    shared with its claim's namespace and labelled with its slot. Each claim carries the stack's live
    ISO and selects its slot's host; ``host_bind`` (the binder identity, through ``ansible-playbook``)
    binds them. BMO provisions a host only while it is to be powered on (``NeedsProvisioning``:
    ``spec.online``), so the ready claims ask for ``online: true`` first; once BMO reports them
    provisioned and powered on, their tenant turns them off (``online: false`` on the claim), the next
    pass passes that down and BMO powers the hosts off; a last pass brings that state up to the claims.
    The claim that is not ready stays ``online: false``: BMO leaves its host available, unprovisioned,
    although the image is there (Ready False). The pending claim selects a slot no host has.
    """
    env = metal3_bmo_env
    workdir = tmp_path_factory.mktemp("inventory-metal3")
    infra = "inv-infra"
    namespaces = {"tenant-a": ["inv-a", "inv-a2"], "tenant-b": ["inv-b"]}
    env.tenant_namespace(infra, None)
    for tenant, names in namespaces.items():
        for namespace in names:
            env.tenant_namespace(namespace, tenant)
    # (identity, namespace, claim, host, ready, host class): "web" exists in two namespaces.
    plan = [
        ("tenant-a", "inv-a", "web", "inv-h1", True, "large"),
        ("tenant-a", "inv-a", "db", "inv-h2", False, "small"),
        ("tenant-a", "inv-a2", "web", "inv-h3", True, None),
        ("tenant-b", "inv-b", "web", "inv-h4", True, "large"),
        ("tenant-b", "inv-b", "cache", "inv-h5", True, None),
    ]
    image = baremetal_operator.live_iso_image(env.operator.live_iso_url)
    first = 501  # host indices (boot MACs, NIC addresses) no other suite of the session uses
    for index, (_identity, _namespace, _name, host_name, _ready, host_class) in enumerate(plan, start=first):
        env.create_host(
            infra,
            host_name,
            labels=dict(_host_labels(host_class, "zone-%d" % (index % 2)), **{SLOT: host_name}),
            index=index,
            annotations={
                "export.hostclaim.metal3.io/rack": "rack-%d" % index,
                "export.hostclaim.metal3.io/motd": INJECTED,
                "internal.example.com/bmc-note": "not exported",
            },
            hostname="%s.hosts.example.test" % host_name,
            wait=False,
            policy={"matches": _namespace},
        )
    env.wait_hosts(infra, [p[3] for p in plan], state="available", hardware=True, timeout=300)
    hosts: dict[str, list[ClaimedHost]] = {identity: [] for identity in namespaces}
    claims = []
    for index, (identity, namespace, name, host_name, ready, host_class) in enumerate(plan, start=first):
        spec = {"online": ready, "image": image, "hostSelector": {"matchLabels": {SLOT: host_name}}}
        claims.append((identity, env.create_claim(namespace, name, spec, identity=identity, labels={"app": name})))
        # eno1 of the host's hardware details has the IP 192.0.2.<index % 250 + 1> (an InternalIP).
        hosts[identity].append(
            ClaimedHost(namespace, name, host_name, ready, "192.0.2.%d" % (index % 250 + 1), host_class)
        )
    unbound = {"tenant-a": ["pending"], "tenant-b": []}
    pending = {"online": False, "hostSelector": {"matchLabels": {SLOT: "no-such-slot"}}}
    env.create_claim("inv-a", "pending", pending, identity="tenant-a")
    claim_namespaces = sorted({p[1] for p in plan})

    def bind_all():
        result = env.bind(claim_namespaces)
        assert result["errors"] == [], result["errors"]
        return result

    first_pass = bind_all()
    bound = sorted((c["namespace"], c["name"], c.get("host")) for c in first_pass["claims"] if c["action"] == "bound")
    assert bound == sorted((p[1], p[2], p[3]) for p in plan), first_pass["claims"]
    ready_hosts = [p[3] for p in plan if p[4]]
    env.wait_hosts(infra, ready_hosts, state="provisioned", powered=True, timeout=300)

    # Each tenant turns its provisioned hosts off through its claims; the binder passes that down.
    for (identity, claim), step in zip(claims, plan):
        if step[4]:
            with env.api(identity) as api:
                client.CustomObjectsApi(api).patch_namespaced_custom_object(
                    GROUP,
                    VERSION,
                    claim["metadata"]["namespace"],
                    "hostclaims",
                    claim["metadata"]["name"],
                    {"spec": {"online": False}},
                    _content_type=MERGE,
                )
    bind_all()
    env.wait_hosts(infra, ready_hosts, state="provisioned", powered=False, timeout=180)
    env.wait_hosts(infra, [p[3] for p in plan if not p[4]], state="available", powered=False, timeout=10)
    bind_all()
    bmc_values = env.bmc_values(infra, [p[3] for p in plan])
    yield InventoryMetal3(env, workdir, infra, namespaces, hosts, unbound, bmc_values, INJECTED, image["url"])
    for namespace in ("inv-a", "inv-a2", "inv-b"):
        env.forget_claims(namespace)
    env.delete_hosts(infra)


# --------------------------------------------------------------------------
# Ironic
# --------------------------------------------------------------------------


@dataclasses.dataclass
class IronicClaim:
    allocation: str  # name
    node: str  # name
    node_uuid: str
    ready: bool
    address: str | None
    resource_class: str


# The switch port the owner records for the inventory's nodes' NICs (each node's port_id gets the node's name).
SWITCH_LINK = {"switch_id": "00:00:5e:00:53:4b", "port_id": "tor-port", "switch_info": "inv-tor-switch"}


@dataclasses.dataclass
class InventoryIronic:
    openstack: Any  # harness.openstack.OpenStackEnv
    workdir: Path
    claims: dict[str, list[IronicClaim]]  # tenant -> its claims
    bmc_values: list[str]  # BMC data and switch data, which no tenant output may carry

    def env(self, tenant: str) -> dict[str, str]:
        return self.openstack.ansible_env(tenant)


def _wait_allocation(conn, allocation_id: str, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while True:
        allocation = conn.baremetal.get_allocation(allocation_id)
        if allocation.state != "allocating":
            assert allocation.state == "active", (
                f"allocation {allocation.name}: {allocation.state} {allocation.last_error}"
            )
            return allocation
        assert time.monotonic() < deadline, f"allocation {allocation.name} still allocating"
        time.sleep(0.2)


def _deploy(admin, node_id: str) -> None:
    """Deploy a node as the admin (fake deploy interface: instant)."""
    admin.baremetal.update_node(
        node_id,
        instance_info={
            "image_source": "http://images.example.test/os.qcow2",
            "image_checksum": "c" * 32,
            "image_disk_format": "qcow2",
        },
    )
    admin.baremetal.set_node_provision_state(node_id, "active")
    openstack_harness.wait_for_node(admin, node_id, timeout=120, provision_state="active")


@pytest.fixture(scope="session")
def inventory_ironic(openstack_env, enroll_node, tmp_path_factory):
    """Nodes leased to tenant-a and tenant-b, claimed by allocations of their projects; some deployed."""
    workdir = tmp_path_factory.mktemp("inventory-ironic")
    admin = openstack_env.admin_conn
    # A BMC of the shared emulator no other suite enrols (test_harness_openstack
    # takes bmcs[0]): Ironic refuses a second port with a MAC it already has.
    bmc = openstack_env.bmcs[1]
    # (tenant, allocation, node, resource class, deploy, address record, redfish)
    plan = [
        ("tenant-a", "inv-web", "inv-node-a1", "inv-large", True, ("allocation", "198.51.100.11"), True),
        ("tenant-a", "inv-db", "inv-node-a2", "inv-small", False, ("node", "198.51.100.12"), False),
        ("tenant-b", "inv-web-b", "inv-node-b1", "inv-large", True, None, False),
    ]
    claims: dict[str, list[IronicClaim]] = {"tenant-a": [], "tenant-b": []}
    switch_ports: list[str] = []
    for tenant, allocation_name, node_name, resource_class, deploy, address, redfish in plan:
        project = openstack_env.tenants[tenant]
        node = enroll_node(
            node_name, resource_class=resource_class, lessee=project.project_id, bmc=bmc if redfish else None
        )
        if not redfish:
            # The owner's record of the NIC's switch port (issue 36): switch data, scanned for like BMC data.
            link = dict(SWITCH_LINK, port_id="%s-%s" % (SWITCH_LINK["port_id"], node_name))
            switch_ports.append(link["port_id"])
            admin.baremetal.create_port(
                node_id=node.id, address="52:54:00:ee:%02x:01" % len(claims[tenant]), local_link_connection=link
            )
        if address and address[0] == "node":
            admin.baremetal.update_node(
                node.id, extra={"addresses": [{"type": "InternalIP", "address": address[1]}], "bmc_hint": bmc.base_url}
            )
        conn = project.conn("member")
        allocation = conn.baremetal.create_allocation(name=allocation_name, resource_class=resource_class)
        allocation = _wait_allocation(conn, allocation.id)
        assert allocation.node_id == node.id
        if address and address[0] == "allocation":
            # The owner records the addresses (node extra); the tenant's own record (allocation extra) would win
            # as an ExternalIP if the inventory read it: it must not (tenants never choose ansible_host).
            admin.baremetal.update_node(
                node.id,
                extra={
                    "addresses": [
                        {"type": "ExternalIP", "address": "2001:db8::11"},
                        {"type": "InternalIP", "address": address[1]},
                    ]
                },
            )
            conn.baremetal.update_allocation(
                allocation.id, extra={"addresses": [{"type": "ExternalIP", "address": "203.0.113.9"}]}
            )
        if deploy:
            _deploy(admin, node.id)
        if allocation_name == "inv-web":
            # As host_claim leaves a node it deployed: the claim's name for the inventory (the other claims
            # show the inventory reading the allocation of a node that carries none).
            admin.baremetal.update_node(
                node.id,
                instance_info=dict(
                    admin.baremetal.get_node(node.id).instance_info,
                    baremetal_tenancy_claim={
                        "name": allocation_name,
                        "allocation": allocation.id,
                        "project": project.project_id,
                    },
                ),
            )
        claims[tenant].append(
            IronicClaim(allocation_name, node_name, node.id, deploy, address[1] if address else None, resource_class)
        )
    bmc_values = [
        bmc.base_url,
        bmc.base_url.split("://")[1],
        bmc.address,
        bmc.username,
        bmc.password,
        bmc.system_id,
        bmc.uuid,  # the Redfish system id alone (scan: with or without dashes, any case)
        # switch data (the owner's local_link_connection of the nodes' ports): the switch's ID and name, the ports
        SWITCH_LINK["switch_id"],
        SWITCH_LINK["switch_info"],
        *switch_ports,
    ]
    return InventoryIronic(openstack_env, workdir, claims, bmc_values)


def ironic_clouds_via(openstack_env, keystone_url: str, ironic_url: str, path: Path) -> Path:
    """A clouds.yaml whose clouds reach Keystone and Ironic through the given URLs (proxies)."""
    clouds = yaml.safe_load(Path(openstack_env.clouds_yaml).read_text())
    real = openstack_env.keystone.url.rsplit("/v3", 1)[0]  # http://127.0.0.1:PORT
    for cloud in clouds["clouds"].values():
        cloud["auth"]["auth_url"] = cloud["auth"]["auth_url"].replace(real, keystone_url)
        cloud["baremetal_endpoint_override"] = ironic_url
    path.write_text(yaml.safe_dump(clouds))
    path.chmod(0o600)
    return path


def scan(text: str, needles: Sequence) -> list:
    """The needles found in ``text``: ``bmc_data.find_bmc_data``'s matcher (the binder's ``bmc_match``), so every
    spelling the binder withholds is looked for (case, percent-encoding, IP notations, a UUID without dashes);
    needles are plain values or ``bmc_needles``' ``(what, value)``."""
    return [needle for needle in needles if needle and bmc_data.find_bmc_data(text, [needle])]
