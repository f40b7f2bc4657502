# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


DOCUMENTATION = r"""
name: claimed_hosts
short_description: The hosts a tenant has claimed, as an inventory
version_added: 0.1.0
description:
  - Builds an inventory of the hosts a tenant has claimed, read with the tenant's own credentials.
  - With O(backend=metal3), the C(HostClaims) of O(namespaces) that are bound to a host, that is the binder recorded the host
    (condition C(AssociateBMH) true, C(bound to host <name>)) and the binding label C(hostclaim.metal3.io/host) agrees,
    the rule M(baremetal.tenancy.host_claim_info) uses; a claim whose label disagrees with the record (a tenant can edit
    labels) is left out until the binder sets the label back.
    With O(backend=ironic), the claims (allocations) of the caller's project that hold a node.
  - With O(backend=metal3), claims of baremetal-operator's own C(HostClaim) (v0.14 and later; a claim whose spec has
    C(poweredOn)) are read the same way with no option, each by its shape. The host is the one in the claim's
    C(status.bareMetalHost) (with condition C(Associated) true), the requested power C(spec.poweredOn), the provisioning
    state from condition C(Provisioned), and addresses, NICs and boot MAC come from the binder's
    C(hostclaim.metal3.io/host-status) annotation of the claim, read only while C(status.bareMetalHost) is set.
  - Uses a YAML configuration file whose name is C(claimed_hosts.yml) or C(claimed_hosts.yaml), or ends with
    C(.claimed_hosts.yml) or C(.claimed_hosts.yaml) (the names AWX writes for an inventory source).
  - Every credential can come from environment variables, so the file needs no secret (AWX injects credentials that way).
  - The number of API requests does not grow with the number of hosts. With O(backend=metal3), one paginated list per
    namespace. With O(backend=ironic), paginated lists filtered by the server (the project's nodes with an instance,
    and ports when O(host_variables) has C(nics) or C(boot_mac_address)), each asking only for the fields the
    inventory uses. A node that M(baremetal.tenancy.host_claim) deployed names its claim; for the other claimed
    nodes the allocations are read, one by one up to 25, else the project's allocation list (Ironic answers that
    list with one node lookup per allocation, so it is read only when needed). With a system-scoped token, every
    allocation.
  - The name a node carries for its claim (C(instance_info.baremetal_tenancy_claim)) is trusted only on a node the
    project leases (or owns and leases to nobody), so only the project itself or the node's owner wrote it, and only
    when it names the allocation Ironic recorded on the node (C(instance_uuid)) and the project.
  - Every value read from an API is marked unsafe, so it is never templated.
  - BMC addresses, BMC credentials and the names of their Secrets never reach the inventory. With O(backend=ironic)
    no node field that can carry them (C(driver_info), C(last_error), C(maintenance_reason), C(extra) other than
    C(addresses)) is requested or kept.
  - Host variables, all named with O(hostvar_prefix) (default C(tenancy_)); O(host_variables) chooses which are set.
    C(name), C(namespace) (with O(backend=ironic) the project ID), C(backend), C(host) (the bound host or node),
    C(host_class), C(online) (the requested power, O(backend=metal3)), C(powered_on), C(associated), C(ready),
    C(conditions) (the status of each condition by type - C(AssociateBMH) and C(Ready) with O(backend=metal3), or
    C(Associated), C(Synchronized), C(Provisioned) and C(Ready) on baremetal-operator's C(HostClaim),
    C(Allocated) and C(Ready) with O(backend=ironic)), C(condition_details) (the conditions as a list, each with
    C(type), C(status), C(reason), C(message) and C(lastTransitionTime)), C(labels) (the claim's labels, including
    those imported from the host), C(annotations) (those the infrastructure administrator exports, in the
    C(export.hostclaim.metal3.io) domain), C(image), C(addresses), C(nics) and C(boot_mac_address).
    O(backend=metal3) only - C(uid). O(backend=ironic) only - C(project_id), C(project_name), C(node_uuid),
    C(allocation_uuid), C(resource_class), C(traits), C(provision_state), C(power_state) and C(maintenance).
  - A host is ready when its C(Ready) condition is true; with O(backend=ironic), when the node is C(active) with no
    provision state change under way and not in maintenance (a claimed but undeployed node cannot run a playbook).
  - Addresses of an Ironic claim are read only from C(addresses) in the node's C(extra), the owner's record (the
    C(baremetal.tenancy.ironic_tenancy) policy lets only the owner write it). Fields a tenant can write - the node's
    C(instance_info), the allocation's C(extra) - are never read for an address, so no tenant chooses another's (or
    its own) C(ansible_host). The record is a list of C(type)/C(address) mappings, or of strings taken as V(InternalIP).
  - C(ansible_host) is the first address that matches O(address_types) then O(address_families), see there.
  - Default groups (O(default_groups)) - O(group) holds every host; C(<group_prefix>namespace_<namespace>) (with
    O(backend=ironic) C(<group_prefix>project_<project name or ID>)); C(<group_prefix>ready) or
    C(<group_prefix>not_ready); C(<group_prefix>class_<host class>) for hosts that have a host class (see
    O(host_class_label)). In these names every character other than a letter, a digit or C(_) becomes C(_).
author:
  - Baremetal Tenancy Contributors (@baremetal-tenancy)
requirements:
  - kubernetes >= 28.1.0 (backend V(metal3))
  - openstacksdk >= 4.0.0 (backend V(ironic))
extends_documentation_fragment:
  - ansible.builtin.constructed
  - ansible.builtin.inventory_cache
options:
  plugin:
    description: Marks the file as a source for this plugin.
    type: str
    required: true
    choices: [baremetal.tenancy.claimed_hosts]
  backend:
    description:
      - The control plane that holds the claims, V(metal3) or V(ironic).
      - Any other value is an error.
    type: str
    default: metal3
  namespaces:
    description:
      - The namespaces whose C(HostClaims) make the inventory (O(backend=metal3)); required with that backend.
      - A tenant can list C(HostClaims) only in its own namespaces.
      - The environment variable E(BMT_CLAIM_NAMESPACES) (names separated by commas) is used when the option is not
        set, so that one source file serves every tenant (an AWX source's environment variables).
    type: list
    elements: str
    env:
      - name: BMT_CLAIM_NAMESPACES
  hostname:
    description:
      - A template for the host names, evaluated with the host variables of each host (named with O(hostvar_prefix)).
      - When not set, the name of the claim (with O(backend=ironic), the allocation's name, else the node's name, else
        its UUID), qualified as C(<name>.<namespace>) (C(<name>.<project>)) according to O(qualify_host_names).
      - Two hosts that get one name are an error.
    type: str
  qualify_host_names:
    description:
      - When default host names carry the namespace (O(backend=ironic), the project name, or ID if the name is unknown).
      - V(auto) qualifies them when O(backend=metal3) lists more than one namespace, where two claims can have one name;
        names then stay the same whatever claims exist. Ironic allocation names are unique, so V(auto) does not
        qualify them.
    type: str
    choices: [auto, always, never]
    default: auto
  hostvar_prefix:
    description:
      - The prefix of the names of the host variables this plugin sets (except C(ansible_host)).
    type: str
    default: tenancy_
  host_variables:
    description:
      - The host variables to set, named without O(hostvar_prefix) (see above for what each holds). A name that
        exists only with the other backend is ignored.
      - Every value costs time with many hosts (Ansible visits and tags each value an inventory sets, and
        C(ansible-inventory --list) writes each one out), so the default leaves out C(condition_details),
        C(addresses), C(nics), C(boot_mac_address), C(associated), C(uid), C(project_id), C(node_uuid),
        C(allocation_uuid), C(resource_class) and C(power_state).
      - The host variables of O(compose), O(groups), O(keyed_groups) and O(hostname) are those set here.
    type: list
    elements: str
    choices: [name, namespace, backend, host, host_class, online, powered_on, associated, ready, conditions,
              condition_details, labels, annotations, image, addresses, nics, boot_mac_address, uid, project_id,
              project_name, node_uuid, allocation_uuid, resource_class, traits, provision_state, power_state,
              maintenance]
    default: [name, namespace, backend, host, host_class, online, powered_on, ready, conditions, labels, annotations,
              image, project_name, traits, provision_state, maintenance]
  address_types:
    description:
      - The address types to choose C(ansible_host) from, most preferred first (for example V(ExternalIP),
        V(InternalIP), V(Hostname), V(InternalDNS), V(ExternalDNS)). V(*) matches any type.
      - For each type in turn, the families of O(address_families) are tried in turn.
      - An Ironic address without a type is of type V(InternalIP).
    type: list
    elements: str
    default: [ExternalIP, InternalIP]
  address_families:
    description:
      - The address families to choose C(ansible_host) from, most preferred first, within each type of O(address_types).
      - V(hostname) is a DNS name.
    type: list
    elements: str
    choices: [ipv4, ipv6, hostname]
    default: [ipv4, ipv6]
  network:
    description:
      - With O(backend=ironic), the name or ID of a Neutron network of the caller's project (its private network,
        see M(baremetal.tenancy.tenant_network)). C(ansible_host) is the host's address on it, read from the
        caller's own port attached to the node (the port's C(device_id) names the node, a field only the project
        itself and the owner can write), and the owner's addresses are not used. A host without a port on the
        network has no address.
      - A network the project does not have is an error naming it.
    type: str
  jump_host:
    description:
      - A host to reach the hosts through with SSH's C(ProxyJump), for example the tenant's gateway on its private
        network (V(ubuntu@gateway.example.com:2222)). Every host gets C(ansible_ssh_common_args) set to
        C(-o ProxyJump=) followed by it.
    type: str
  hosts_without_address:
    description:
      - What to do with a host that has no address matching O(address_types) and O(address_families).
      - V(keep) adds it without C(ansible_host) (Ansible then connects to its inventory name, or set one with O(compose)).
      - V(skip) leaves it out of the inventory.
    type: str
    choices: [keep, skip]
    default: keep
  only_ready:
    description:
      - Only add the hosts that are ready (see above).
    type: bool
    default: false
  group:
    description:
      - The group that holds every host of this source.
    type: str
    default: claimed_hosts
  default_groups:
    description:
      - Whether to add hosts to the default groups per namespace (or project), readiness and host class.
      - O(keyed_groups) and O(groups) build any other group.
    type: bool
    default: true
  group_prefix:
    description:
      - The prefix of the default group names.
    type: str
    default: tenancy_
  host_class_label:
    description:
      - The label of a C(HostClaim) that names the class of its host (O(backend=metal3)); it gives C(host_class) and
        the C(class_) groups. With O(backend=ironic) the class is the node's resource class.
      - Set to an empty string for no host class.
    type: str
    default: baremetal.tenancy/host-class
  page_size:
    description:
      - How many objects each list request asks for.
    type: int
    default: 500
  api_timeout:
    description:
      - Timeout of each API request, in seconds.
    type: int
    default: 60
    env:
      - name: OS_API_TIMEOUT
  kubeconfig:
    description:
      - Path to a kubeconfig file (O(backend=metal3)).
      - When neither O(kubeconfig) nor O(host) is set, C(~/.kube/config) or E(KUBECONFIG), then the in-cluster service
        account, are used.
    type: path
    env:
      - name: K8S_AUTH_KUBECONFIG
  context:
    description:
      - The kubeconfig context to use.
    type: str
    env:
      - name: K8S_AUTH_CONTEXT
  host:
    description:
      - URL of the Kubernetes API server; with O(api_key) it replaces O(kubeconfig). AWX's Kubernetes credential sets
        E(K8S_AUTH_HOST).
    type: str
    env:
      - name: K8S_AUTH_HOST
  api_key:
    description:
      - Bearer token for O(host).
    type: str
    env:
      - name: K8S_AUTH_API_KEY
  client_cert:
    description:
      - Path to a client certificate for O(host).
    type: path
    aliases: [cert_file]
    env:
      - name: K8S_AUTH_CERT_FILE
  client_key:
    description:
      - Path to the key of O(client_cert).
    type: path
    aliases: [key_file]
    env:
      - name: K8S_AUTH_KEY_FILE
  ca_cert:
    description:
      - CA bundle that signs the API server's certificate.
      - When not set, E(K8S_AUTH_SSL_CA_CERT) (O(backend=metal3)) or E(OS_CACERT) (O(backend=ironic)) is used.
    type: path
    aliases: [ssl_ca_cert, cacert]
  validate_certs:
    description:
      - Whether to verify the API server's TLS certificate.
      - When not set, E(K8S_AUTH_VERIFY_SSL) (O(backend=metal3)) or E(OS_VERIFY) (O(backend=ironic)) is used.
    type: bool
    aliases: [verify_ssl]
  cloud:
    description:
      - Name of a cloud in C(clouds.yaml), or a dict of connection settings (O(backend=ironic)).
      - E(OS_CLIENT_CONFIG_FILE) locates C(clouds.yaml), as AWX's OpenStack credential sets it. When neither
        O(cloud) nor O(auth) is set and that file holds exactly one cloud, that cloud is used.
      - Tenants use credentials scoped to their own project; with a system-scoped token the allocations of every
        project are listed.
    type: raw
    env:
      - name: OS_CLOUD
  auth:
    description:
      - Authentication settings for openstacksdk (C(auth_url), C(username), C(password), C(project_name), ...).
      - When not set, built from the E(OS_AUTH_URL), E(OS_USERNAME), E(OS_PASSWORD), E(OS_PROJECT_NAME),
        E(OS_PROJECT_ID), E(OS_USER_DOMAIN_NAME), E(OS_PROJECT_DOMAIN_NAME), E(OS_SYSTEM_SCOPE), E(OS_TOKEN),
        E(OS_APPLICATION_CREDENTIAL_ID) and E(OS_APPLICATION_CREDENTIAL_SECRET) environment variables.
    type: dict
  auth_type:
    description:
      - The keystoneauth plugin, for example V(password), V(token), V(v3applicationcredential).
    type: str
    env:
      - name: OS_AUTH_TYPE
  region_name:
    description:
      - Region of the cloud.
    type: str
    env:
      - name: OS_REGION_NAME
  interface:
    description:
      - Endpoint interface of the service catalog.
    type: str
    choices: [admin, internal, public]
    aliases: [endpoint_type]
    env:
      - name: OS_INTERFACE
notes:
  - Credential options may be templates (for example a vaulted variable given with C(-e)); values that come from
    environment variables or from the APIs are never templated.
  - The cache key includes a digest of the backend, the namespaces and the credentials (and of the kubeconfig or
    C(clouds.yaml) file they name), so two tenants that share an inventory file never read each other's cache.
seealso:
  - module: baremetal.tenancy.host_claim
  - module: baremetal.tenancy.host_claim_info
"""

EXAMPLES = r"""
# tenant-a.claimed_hosts.yml: the claims of two namespaces, credentials from K8S_AUTH_KUBECONFIG.
plugin: baremetal.tenancy.claimed_hosts
namespaces: [tenant-a, tenant-a-ci]

---
# claimed_hosts.yml: ready hosts only, IPv6 first, connect as the image's user.
plugin: baremetal.tenancy.claimed_hosts
namespaces: [tenant-a]
only_ready: true
address_types: ['*']
address_families: [ipv6, ipv4]
hosts_without_address: skip
compose:
  ansible_user: "'ubuntu'"
keyed_groups:
  - key: tenancy_labels['topology.kubernetes.io/zone'] | default('none')
    prefix: zone

---
# Only the host variables the playbooks use, and every address (fewer values: faster with thousands of hosts).
plugin: baremetal.tenancy.claimed_hosts
namespaces: [tenant-a]
host_variables: [name, namespace, ready, conditions, labels, addresses]
groups:
  degraded: tenancy_conditions.Ready | default('Unknown') != 'True'

---
# Ironic, with the project-scoped credentials of OS_CLOUD/OS_CLIENT_CONFIG_FILE (or OS_AUTH_URL and friends).
plugin: baremetal.tenancy.claimed_hosts
backend: ironic
keyed_groups:
  - key: tenancy_traits
    prefix: trait

---
# Ironic hosts on my private network, reached through my gateway on it.
plugin: baremetal.tenancy.claimed_hosts
backend: ironic
network: tenant-a-private
jump_host: root@gateway.tenant-a.example.com

---
# Cache for an hour: a second run makes no API request.
plugin: baremetal.tenancy.claimed_hosts
namespaces: [tenant-a]
hostname: "{{ tenancy_name }}-{{ tenancy_host_class | default('any', true) }}"
cache: true
cache_plugin: ansible.builtin.jsonfile
cache_connection: ~/.cache/ansible-inventory
cache_timeout: 3600
"""

import hashlib
import json
import os

from ansible.errors import AnsibleError, AnsibleParserError
from ansible.module_utils.errors import AnsibleFallbackNotFound
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable
from ansible.utils.vars import combine_vars

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.auth import openstack_auth_from_env
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.cyclic_gc import cyclic_gc_paused
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput, TenancyError
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.params import check_at_least
from ansible_collections.baremetal.tenancy.plugins.plugin_utils import inventory_model as model
from ansible_collections.baremetal.tenancy.plugins.plugin_utils.unsafe import HAS_DATA_TAGGING, make_unsafe

FILE_NAMES = ("claimed_hosts.yml", "claimed_hosts.yaml")
FILE_SUFFIXES = (".claimed_hosts.yml", ".claimed_hosts.yaml")
KUBE_OPTIONS = ("kubeconfig", "context", "host", "api_key", "client_cert", "client_key")
OPENSTACK_OPTIONS = ("cloud", "auth", "auth_type", "region_name", "interface", "api_timeout")
TLS_ENV = {
    "metal3": (("ca_cert", "K8S_AUTH_SSL_CA_CERT"), ("validate_certs", "K8S_AUTH_VERIFY_SSL")),
    "ironic": (("ca_cert", "OS_CACERT"), ("validate_certs", "OS_VERIFY")),
}
MODEL_OPTIONS = (
    "backend",
    "namespaces",
    "qualify_host_names",
    "hostvar_prefix",
    "address_types",
    "address_families",
    "jump_host",
    "hosts_without_address",
    "only_ready",
    "default_groups",
    "group_prefix",
    "host_class_label",
    "host_variables",
)
CLOUDS_YAML = ("clouds.yaml", "~/.config/openstack/clouds.yaml", "/etc/openstack/clouds.yaml")


def _one_line(text):
    return " ".join(str(text).split())


def _file_digest(path):
    """sha256 of a local file's content, or ``None`` when it cannot be read (never an API request)."""
    if not path:
        return None
    try:
        with open(os.path.expanduser(path), "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return None


def _clouds_yaml_paths():
    configured = os.environ.get("OS_CLIENT_CONFIG_FILE")
    return [configured] if configured else list(CLOUDS_YAML)


def _only_cloud():
    """The name of the only cloud of the clouds.yaml in use, or ``None``."""
    import yaml  # a dependency of ansible-core

    for path in _clouds_yaml_paths():
        try:
            with open(os.path.expanduser(path)) as handle:
                clouds = (yaml.safe_load(handle) or {}).get("clouds")
        except (OSError, ValueError, AttributeError, yaml.YAMLError):
            continue
        if isinstance(clouds, dict) and len(clouds) == 1:
            return next(iter(clouds))
        return None
    return None


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):
    NAME = "baremetal.tenancy.claimed_hosts"

    def verify_file(self, path):
        """Accept ``claimed_hosts.y(a)ml`` and ``*.claimed_hosts.y(a)ml``."""
        if not super().verify_file(path):
            return False
        return os.path.basename(path) in FILE_NAMES or path.endswith(FILE_SUFFIXES)

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache)
        self._read_config_data(path)
        try:
            with cyclic_gc_paused():
                self._parse(path, cache)
        except TenancyError as exc:
            raise AnsibleParserError(
                "%s: %s" % (self.NAME, _one_line(exc.message))
            ) from None  # one line: no chained cause

    # -- options ---------------------------------------------------------

    def _templated(self, value):
        """Template option values written in the source file (trusted); others are returned as they are."""
        if isinstance(value, str) and "{{" in value:
            try:
                return self.templar.template(value)
            except AnsibleError as exc:
                raise InvalidInput("option template %r" % value, _one_line(exc)) from None
        if isinstance(value, dict):
            return dict((key, self._templated(item)) for key, item in value.items())
        return value

    def _auth_params(self, backend):
        names = KUBE_OPTIONS if backend == "metal3" else OPENSTACK_OPTIONS
        self.templar.available_variables = self._vars
        params = dict((name, self._templated(self.get_option(name))) for name in (*names, "ca_cert", "validate_certs"))
        for name, variable in TLS_ENV[backend]:
            value = os.environ.get(variable)
            if params[name] is None and value:
                params[name] = boolean(value, strict=False) if name == "validate_certs" else value
        if backend == "ironic":
            if not params.get("auth"):
                try:
                    params["auth"] = openstack_auth_from_env()
                except AnsibleFallbackNotFound:
                    params["auth"] = None
            if not params.get("cloud") and not params.get("auth"):
                params["cloud"] = _only_cloud()
        return params

    def _identity_digest(self, backend, params, ports):
        """Digest of everything that decides what the APIs return to this caller (secrets included, hashed)."""
        identity = {
            "backend": backend,
            "namespaces": sorted(self.get_option("namespaces") or []),
            "params": params,
            "ports": ports,
            "network": self.get_option("network"),
        }
        if backend == "metal3":
            kubeconfig = (
                params.get("kubeconfig") or (os.environ.get("KUBECONFIG") or "~/.kube/config").split(os.pathsep)[0]
            )
            identity["files"] = [kubeconfig, _file_digest(kubeconfig)]
        else:
            identity["files"] = [[path, _file_digest(path)] for path in _clouds_yaml_paths()]
        text = json.dumps(identity, sort_keys=True, default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]

    # -- parse -------------------------------------------------------------

    def _parse(self, path, cache):
        backend = self.get_option("backend")
        if backend not in model.BACKENDS:
            raise InvalidInput("option backend", "%r is not one of %s" % (backend, ", ".join(model.BACKENDS)))
        for option in ("page_size", "api_timeout"):
            check_at_least(self.get_option(option), option)
        params = self._auth_params(backend)
        ports = backend == "ironic" and model.needs_ports(self.get_option("host_variables"))
        use_cache = bool(self.get_option("cache"))
        cache_key = (
            "%s_%s" % (self.get_cache_key(path), self._identity_digest(backend, params, ports)) if use_cache else None
        )
        records = None
        if use_cache and cache:
            try:
                records = self._cache[cache_key]
            except KeyError:
                records = None
            if not isinstance(records, list):
                records = None
            else:
                self.display.vvv("%s: %d claims from the cache, no API request" % (self.NAME, len(records)))
        preparer = model.HostPreparer(self._model_options())  # an unknown host variable fails before any request
        entries = None
        if records is None:
            # Imported here: on a cache hit no client library is even loaded.
            from ansible_collections.baremetal.tenancy.plugins.plugin_utils.inventory_api import fetch_records

            # Decoded JSON holds plain strings, which data tagging never templates: each record is prepared as its
            # page arrives, while the API server prepares the next one.
            entries = [] if HAS_DATA_TAGGING else None
            records, requests = fetch_records(
                backend,
                params,
                self.get_option("namespaces"),
                self.get_option("page_size"),
                self.get_option("api_timeout"),
                ports,
                network=self.get_option("network"),
                on_record=None if entries is None else (lambda record: entries.append(preparer.entry(record))),
            )
            self.display.vvv("%s: %d claimed hosts read with %d API requests" % (self.NAME, len(records), requests))
            if use_cache:
                self._cache[cache_key] = records
        if entries is None:
            # Values restored from a cache file (or read on a core without data tagging) are made unsafe first.
            entries = (preparer.entry(record) for record in make_unsafe(records))
        self._populate(model.sort_entries(entry for entry in entries if entry is not None))

    def _host_name(self, template, variables, entry):
        self.templar.available_variables = combine_vars(variables, self._vars)
        try:
            name = self.templar.template(template)
        except AnsibleError as exc:
            raise InvalidInput(
                "option hostname", "cannot name %s: %s" % (model.describe(entry["record"]), _one_line(exc))
            ) from None
        return name if isinstance(name, str) else None

    def _model_options(self):
        return dict((name, self.get_option(name)) for name in MODEL_OPTIONS)

    def _populate(self, entries):
        """Add the hosts of ``entries`` (``inventory_model.HostPreparer`` entries, sorted) to the inventory."""
        template = self.get_option("hostname")
        named = []
        for entry in entries:
            variables = entry["hostvars"]
            name = self._host_name(template, variables, entry) if template else entry["name"]
            named.append((name, variables, entry))
        model.check_unique_names((name, entry["record"]) for name, dummy, entry in named)

        group = model.safe_group_name(self.get_option("group"))
        if group:
            self.inventory.add_group(group)
        strict = self.get_option("strict")
        compose, groups, keyed = self.get_option("compose"), self.get_option("groups"), self.get_option("keyed_groups")
        # Linear in the number of hosts whatever their count (see bench/inventory.py): each group is added once,
        # each host joins its groups with one add_child apiece, and Constructable's templating runs only when
        # compose, groups or keyed_groups is set.
        # The inventory's methods are looked up once (self.inventory is a proxy in ansible-core 2.19).
        add_host, set_variable = self.inventory.add_host, self.inventory.set_variable
        add_group, add_child = self.inventory.add_group, self.inventory.add_child
        created = set()
        for name, variables, entry in named:
            add_host(name, group=group)
            for key, value in variables.items():
                set_variable(name, key, value)
            for default_group in entry["groups"]:
                if default_group not in created:
                    created.add(default_group)
                    add_group(default_group)
                add_child(default_group, name)
            if compose or groups or keyed:
                host_vars = self.inventory.get_host(name).get_vars()
                self._set_composite_vars(compose, host_vars, name, strict=strict)
                self._add_host_to_composed_groups(groups, host_vars, name, strict=strict)
                self._add_host_to_keyed_groups(keyed, host_vars, name, strict=strict)
