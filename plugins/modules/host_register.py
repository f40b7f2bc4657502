#!/usr/bin/python
# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


DOCUMENTATION = r"""
module: host_register
short_description: Enrol hosts from their BMCs and classify them from what Redfish reports
version_added: 0.1.0
description:
  - For an administrator. Reads each given BMC over Redfish (system UUID, manufacturer and model, CPU count and
    model, memory, NICs with their MACs, boot mode, power state), classifies the system with ordered rules
    (JMESPath predicates over the Redfish system document) and creates or updates the host on the chosen backend.
  - With O(backend=metal3), the host is a C(BareMetalHost) in O(namespace) with its BMC credentials C(Secret)
    named C(<name>-bmc-secret). The host gets C(bmc.address) in the form baremetal-operator expects, C(bootMACAddress)
    (the first NIC), C(bootMode), the labels of the classification and, when given, O(host_claim_namespaces).
  - With O(backend=ironic), the host is a node with the C(redfish) hardware type (its UUID is the system UUID),
    one port per NIC, C(resource_class) and traits from the classification, O(owner), C(properties) (cpus,
    memory_mb, cpu_arch, boot mode capability), taken through C(manage) to C(available).
  - Hosts are matched by their system UUID, so reruns update the same host. Labels and traits that the rules
    no longer give are removed; labels and traits set by others are kept.
  - Every BMC is handled on its own. An unreachable BMC, rejected credentials, an endpoint that is not Redfish or
    a host the backend refuses is reported in RV(failed_hosts) and RV(hosts) and does not stop the other hosts.
  - The result never carries a BMC address or credential.
author:
  - baremetal.tenancy contributors (@baremetal-tenancy)
extends_documentation_fragment:
  - baremetal.tenancy.backend
  - baremetal.tenancy.kubernetes_auth
  - baremetal.tenancy.openstack_auth
  - baremetal.tenancy.tls
  - baremetal.tenancy.attributes
  - baremetal.tenancy.attributes.platform
attributes:
  check_mode:
    support: full
    details: Reads the BMCs and the backend, reports what would change, writes nothing.
  diff_mode:
    support: full
    details: Per host, before and after of the fields the module manages (never a credential or BMC address;
      on Metal3 the address's scheme, as V(redfish-virtualmedia+http), is shown).
options:
  hosts:
    description:
      - The BMCs to register, one system each.
    type: list
    elements: dict
    required: true
    suboptions:
      address:
        description:
          - Address of the BMC, in baremetal-operator's form (V(redfish://bmc.example.com/redfish/v1/Systems/1),
            V(redfish+http://127.0.0.1:8000/redfish/v1/Systems/<uuid>), V(idrac-redfish://...)) or a plain
            V(https://bmc.example.com) URL when the BMC has only one system.
          - The Redfish schemes are those of baremetal-operator (V(redfish), V(redfish-virtualmedia),
            V(redfish-uefihttp), V(idrac-redfish), V(idrac-virtualmedia), V(ilo5-redfish), V(ilo5-virtualmedia),
            each also with V(+https) or V(+http)). Another scheme fails that host, with an error naming it, before
            its BMC is read; nothing is written for it.
          - With O(backend=metal3) the scheme's driver family is kept in the BareMetalHost's C(bmc.address), with
            V(+http) for plain HTTP, so baremetal-operator picks the boot interface it implies; for example
            V(redfish-virtualmedia+http://127.0.0.1:8000/redfish/v1/Systems/<uuid>) boots from virtual media.
            A plain V(https://) or V(http://) URL is written V(redfish://) or V(redfish+http://). A host already
            registered with another scheme gets its C(bmc.address) updated, which baremetal-operator's webhook
            refuses unless the host is C(registering) or detached.
          - With O(backend=ironic) only the BMC's URL and system are used (the C(redfish) hardware type); the
            scheme's driver family is ignored, set the node's boot interface with O(interfaces).
        type: str
        required: true
      username:
        description: User name of a BMC account with administrator rights.
        type: str
        required: true
      password:
        description: Password of O(hosts[].username).
        type: str
        required: true
      name:
        description:
          - Name of the host (BareMetalHost or Ironic node).
          - Defaults to C(host-) and 16 hexadecimal digits of a digest of the system UUID, never the UUID itself,
            which many BMCs use as their Redfish system id (BMC data, which must not reach tenants).
          - A system already registered keeps its name.
        type: str
      validate_certs:
        description: Whether to verify the BMC's TLS certificate.
        type: bool
        default: true
      boot_mac_address:
        description: MAC address the host boots from, instead of the first NIC's.
        type: str
      labels:
        description: Labels for this host on top of those of the classification (they win over the rules).
        type: dict
      nics:
        description:
          - The switch port of each NIC (O(backend=ironic)), recorded as the C(local_link_connection) of the NIC's
            Ironic port, which Ironic's C(neutron) network interface hands to Neutron when it binds a port, and
            networking-generic-switch uses to find the switch and the port to move to the tenant's VLAN.
          - A NIC given here wins over what the BMC reports over LLDP (Redfish C(Port) resources of the chassis'
            network adapters, C(Ethernet.LLDPReceive)); NICs not given take the BMC's, where it reports them.
          - A MAC the BMC does not report fails the host, naming the MAC; a bad MAC, a MAC given twice or a link
            Ironic would refuse fails the task before any BMC is read.
          - Ironic changes a port's switch port only while the node is enrolled, manageable or in maintenance - an
            V(available) node is put into maintenance for the change and taken out again; a deployed node whose switch
            ports differ fails with an error naming its state, and nothing is written for it.
          - Switch data is the owner's; nothing of it reaches a tenant through the collection's tenant modules or
            inventory.
        type: list
        elements: dict
        suboptions:
          mac:
            description: MAC address of the NIC, as the BMC reports it.
            type: str
            required: true
          switch_id:
            description: The switch's ID, its MAC address (LLDP chassis ID) or an OpenFlow datapath ID.
            type: str
            required: true
          port_id:
            description: The switch's name of the port (LLDP port ID), for example V(Ethernet1/7).
            type: str
            required: true
          switch_info:
            description:
              - The switch's name; with networking-generic-switch, the name of its C([genericswitch:<name>]) section.
            type: str
  rules:
    description:
      - Ordered classification rules. Each is a dict with C(name) (optional), C(when) (a JMESPath expression over the
        Redfish C(ComputerSystem) document with its C(Processors) and C(EthernetInterfaces) collections expanded into
        C(Members); a rule without C(when) matches every host), C(labels), C(resource_class), C(traits) and C(stop).
      - Every matching rule contributes; a label or the resource class comes from the first matching rule that sets
        it; traits accumulate; a matching rule with C(stop=true) ends the evaluation.
      - For example C(MemorySummary.TotalSystemMemoryGiB >= `256` && ProcessorSummary.Count >= `64`).
    type: list
    elements: dict
    default: []
  namespace:
    description:
      - Infrastructure namespace of the C(BareMetalHosts) and their Secrets. Required with O(backend=metal3), refused
        with O(backend=ironic).
    type: str
  host_claim_namespaces:
    description:
      - Which tenant namespaces may claim the hosts (O(backend=metal3)), written as the annotation
        C(baremetal.tenancy/host-claim-namespaces) (the policy as compact JSON, which M(baremetal.tenancy.host_bind) reads);
        a leftover C(spec.hostClaimNamespaces), where the policy lived before and which is no longer read, is removed
        in the same patch.
      - Left as it is on existing hosts when not given; new hosts are then not shared. V({}) (neither key set) stops
        sharing (the annotation is removed).
      - An invalid policy (a bad RE2 pattern or label entry) fails the task before any BMC is read.
    type: dict
    suboptions:
      matches:
        description: RE2 regular expression the whole namespace name must match.
        type: str
      withLabel:
        description: C(key) or C(key=value) labels of which the namespace must carry one.
        type: list
        elements: str
  inspection:
    description:
      - How the hardware of the hosts is inspected (O(backend=metal3)), written as C(spec.inspectionMode).
      - V(agent) is baremetal-operator's own inspection (the host boots ironic-python-agent once it is registered).
      - V(redfish) disables that inspection and hands baremetal-operator what the BMC reported over Redfish instead
        (vendor, product and serial number, CPU architecture, model and count, memory, NICs with their MACs), in the
        annotation C(inspect.metal3.io/hardwaredetails) of a new host, which the operator takes into the host's
        C(status.hardware) and then removes. On an existing host only C(spec.inspectionMode) is set.
      - Left as it is when not given (new hosts get the operator's default, V(agent)).
    type: str
    choices: [agent, redfish]
  automated_cleaning:
    description:
      - Whether the host's disks are cleaned each time it is deprovisioned, before another tenant can have it. On
        O(backend=metal3) C(spec.automatedCleaningMode) (V(true) is V(metadata), V(false) V(disabled)); on
        O(backend=ironic) the node's C(automated_clean).
      - Left as it is when not given (the operator's or the conductor's default applies to new hosts).
      - Turn it off only where something else wipes the hosts between tenants.
    type: bool
  owner:
    description:
      - Project (ID or name) that owns the nodes (O(backend=ironic)), usually the infrastructure project.
      - Resolved in Keystone before any BMC is read (see O(verify_projects)); a project Keystone does not know is an
        error naming it, and nothing changes.
    type: str
  verify_projects:
    description:
      - Whether O(owner) is looked up in Keystone (O(backend=ironic)). Set V(false) only where the credentials cannot
        read projects; O(owner) must then be a project ID, used as given, and RV(project_check) says V(skipped).
    type: bool
    default: true
  default_resource_class:
    description:
      - Resource class of nodes no rule gives one (O(backend=ironic)).
    type: str
    default: baremetal
  interfaces:
    description:
      - Hardware interfaces of new and existing nodes (O(backend=ironic)), for example C(boot_interface) set to
        V(redfish-virtual-media) and C(deploy_interface) set to V(ramdisk). Keys must end with C(_interface).
      - C(network_interface) set to V(neutron) puts the nodes on Neutron's networks (tenant VLANs with
        networking-generic-switch), with the switch ports of O(hosts[].nics) or those the BMC reports.
    type: dict
  update_password:
    description:
      - With O(backend=ironic), Ironic never shows the stored BMC password, so it cannot be compared.
        V(on_create) sets it on new nodes only; V(always) writes it on every run (and reports a change).
      - With O(backend=metal3) the Secret is compared and updated when it differs, whatever this option says.
    type: str
    choices: [always, on_create]
    default: on_create
  workers:
    description:
      - How many BMCs are read, and Ironic nodes enrolled, at the same time.
    type: int
    default: 4
  bmc_timeout:
    description:
      - Timeout of each Redfish request, in seconds (connection attempts use at most 15).
    type: int
    default: 30
  wait_timeout:
    description:
      - How long an Ironic node may take to reach each state on its way to C(available), in seconds.
    type: int
    default: 600
  allow_partial:
    description:
      - When V(true), BMCs that fail are reported in RV(failed_hosts) (and as warnings) and the task succeeds with the
        others registered. When V(false), the task fails after handling every BMC if any of them failed.
    type: bool
    default: true
requirements:
  - sushy >= 5.0.0
  - jmespath >= 1.0.0
notes:
  - The BMC credentials are never returned or logged; the Secret's contents are compared without being shown.
"""

EXAMPLES = r"""
- name: Register three BMCs as BareMetalHosts, classified by size, shareable with tenant namespaces
  baremetal.tenancy.host_register:
    namespace: metal3
    hosts:
      - address: redfish://10.0.0.11/redfish/v1/Systems/1
        username: "{{ bmc_user }}"
        password: "{{ bmc_password }}"
        name: rack1-u01
      - address: redfish://10.0.0.12/redfish/v1/Systems/1
        username: "{{ bmc_user }}"
        password: "{{ bmc_password }}"
      - address: https://10.0.0.13
        username: "{{ bmc_user }}"
        password: "{{ bmc_password }}"
    rules:
      - name: large
        when: "MemorySummary.TotalSystemMemoryGiB >= `256` && ProcessorSummary.Count >= `64`"
        labels:
          infra-kind: large
        resource_class: baremetal-large
        stop: true
      - name: medium
        when: "MemorySummary.TotalSystemMemoryGiB >= `128`"
        labels:
          infra-kind: medium
      - name: default
        labels:
          infra-kind: small
    host_claim_namespaces:
      withLabel: [baremetal.tenancy/tenant]
  register: registration

- name: Show the BMCs that could not be registered
  ansible.builtin.debug:
    var: registration.failed_hosts

- name: Enrol the same BMCs as Ironic nodes owned by the infrastructure project
  baremetal.tenancy.host_register:
    backend: ironic
    cloud: admin
    owner: infra
    hosts: "{{ bmcs }}"
    rules:
      - when: "MemorySummary.TotalSystemMemoryGiB >= `256`"
        resource_class: baremetal-large
        traits: [CUSTOM_LARGE_MEMORY]
      - when: "contains(Processors.Members[].Model, 'EPYC 9454')"
        traits: [CUSTOM_GENOA]
    interfaces:
      boot_interface: redfish-virtual-media
      deploy_interface: ramdisk
"""

RETURN = r"""
hosts:
  description: One entry per BMC of O(hosts), in the same order.
  returned: always
  type: list
  elements: dict
  contains:
    index:
      description: Position of the BMC in O(hosts).
      type: int
      sample: 0
    name:
      description: Name of the host (null when its BMC could not be read and no name was given).
      type: str
      sample: rack1-u01
    status:
      description: V(registered) (created), V(updated), V(unchanged) or V(failed).
      type: str
      sample: registered
    changed:
      description: Whether this host was (or in check mode would be) changed.
      type: bool
    uuid:
      description: System UUID reported by the BMC.
      type: str
      returned: when the BMC was read
    facts:
      description: What Redfish reports (C(manufacturer), C(model), C(serial_number), C(cpus), C(cpu_cores),
        C(cpu_threads), C(cpu_model), C(cpu_arch), C(memory_gib), C(nics) with C(name) and C(mac), C(boot_mode),
        C(power_state), C(uuid)).
      type: dict
      returned: when the BMC was read
    labels:
      description: Labels given by the classification (and O(hosts[].labels)).
      type: dict
      returned: when the BMC was read
    resource_class:
      description: Resource class given by the classification (null when no rule gave one).
      type: str
      returned: when the BMC was read
    traits:
      description: Traits given by the classification.
      type: list
      elements: str
      returned: when the BMC was read
    matched_rules:
      description: Names (or C(#index)) of the rules that matched, in order.
      type: list
      elements: str
      returned: when the BMC was read
    unevaluable_rules:
      description: Rules whose expression could not be evaluated on this system (for example C(length(null))); they
        did not match.
      type: list
      elements: str
      returned: when the BMC was read
    bareMetalHost:
      description: Name of the C(BareMetalHost) (O(backend=metal3)).
      type: str
      returned: when registered on metal3
    namespace:
      description: Namespace of the C(BareMetalHost) (O(backend=metal3)).
      type: str
      returned: when registered on metal3
    node:
      description: Name of the Ironic node (O(backend=ironic)).
      type: str
      returned: when registered on ironic
    node_uuid:
      description: UUID of the Ironic node (O(backend=ironic)).
      type: str
      returned: when registered on ironic
    switch_ports:
      description:
        - The switch port recorded for each NIC (O(backend=ironic)) - C(mac), C(switch_id), C(port_id), C(switch_info)
          and C(source), V(owner) (O(hosts[].nics)) or V(bmc) (LLDP over Redfish). NICs without one are not listed.
      type: list
      elements: dict
      returned: when registered on ironic
    error:
      description: Why this BMC failed (never its address or credentials).
      type: str
      returned: when RV(hosts[].status=failed)
      sample: "BMC #3: BMC unreachable: connection refused"
    error_kind:
      description: V(unreachable), V(unauthorized), V(forbidden), V(not_redfish), V(not_found), V(bad_request),
        V(error), or the error class (V(InvalidInput), V(Conflict), V(BackendError), V(WaitTimeout)).
      type: str
      returned: when RV(hosts[].status=failed)
registered:
  description: Names of the hosts registered, updated or found unchanged.
  returned: always
  type: list
  elements: str
failed_hosts:
  description: The BMCs that failed, each with C(index), C(name), C(error) and C(error_kind).
  returned: always
  type: list
  elements: dict
project_check:
  description: How O(owner) was checked in Keystone - V(verified) or V(skipped) (O(verify_projects=false)); null
    without O(owner).
  returned: with O(backend=ironic)
  type: str
  sample: verified
"""

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.base import TenancyModule
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.libraries import JMESPATH, SUSHY
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.connection import openstack_connection
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.projects import PROJECT_SKIPPED, resolve_project
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.registration import IronicRegistrar
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.registration_model import owner_links
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.connection import kube_api_client
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.registration import Metal3Registrar
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.registration_model import (
    claim_namespaces_problems,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish.registration import run_host_register


class HostRegisterModule(TenancyModule):
    object_kind = "host_register"
    required_libraries = (SUSHY,)
    argument_spec = dict(
        hosts=dict(
            type="list",
            elements="dict",
            required=True,
            options=dict(
                address=dict(type="str", required=True),
                username=dict(type="str", required=True),
                password=dict(type="str", required=True, no_log=True),
                name=dict(type="str"),
                validate_certs=dict(type="bool", default=True),
                boot_mac_address=dict(type="str"),
                labels=dict(type="dict"),
                nics=dict(
                    type="list",
                    elements="dict",
                    options=dict(
                        mac=dict(type="str", required=True),
                        switch_id=dict(type="str", required=True),
                        port_id=dict(type="str", required=True),
                        switch_info=dict(type="str"),
                    ),
                ),
            ),
        ),
        rules=dict(type="list", elements="dict", default=[]),
        namespace=dict(type="str"),
        host_claim_namespaces=dict(
            type="dict",
            options=dict(
                matches=dict(type="str"),
                withLabel=dict(type="list", elements="str"),
            ),
        ),
        inspection=dict(type="str", choices=["agent", "redfish"]),
        automated_cleaning=dict(type="bool"),
        owner=dict(type="str"),
        verify_projects=dict(type="bool", default=True),
        default_resource_class=dict(type="str", default="baremetal"),
        interfaces=dict(type="dict"),
        update_password=dict(type="str", choices=["always", "on_create"], default="on_create", no_log=False),
        workers=dict(type="int", default=4),
        bmc_timeout=dict(type="int", default=30),
        wait_timeout=dict(type="int", default=600),
        allow_partial=dict(type="bool", default=True),
    )
    module_kwargs = dict(
        required_if=[("backend", "metal3", ("namespace",))],
    )
    backend_options = dict(
        metal3=("namespace", "host_claim_namespaces", "inspection"),
        ironic=("owner", "interfaces", "hosts[].nics"),
    )

    def needed_libraries(self):
        """sushy always; jmespath only when a rule has a ``when`` expression."""
        needed = super().needed_libraries()
        if any(isinstance(rule, dict) and rule.get("when") is not None for rule in self.params.get("rules") or []):
            needed += (JMESPATH,)
        return needed

    def _check(self):
        params = self.params
        if params["workers"] < 1:
            raise InvalidInput("option workers", "must be at least 1, got %s" % params["workers"])
        if params["bmc_timeout"] < 1:
            raise InvalidInput("option bmc_timeout", "must be at least 1 second, got %s" % params["bmc_timeout"])
        for key in params.get("interfaces") or {}:
            if not key.endswith("_interface"):
                raise InvalidInput("option interfaces", "key %s does not end with _interface" % key)
        for index, host in enumerate(params["hosts"]):
            try:
                owner_links(host.get("nics"))
            except InvalidInput as err:
                raise InvalidInput("option hosts[%d].%s" % (index, err.obj), err.cause) from None
        problems = claim_namespaces_problems(params.get("host_claim_namespaces"))
        if problems:
            raise InvalidInput("option host_claim_namespaces", "; ".join(problems))

    def _registrar(self):
        params = self.params
        if self.backend == "metal3":
            return Metal3Registrar(
                kube_api_client(params),
                params["namespace"],
                self.check_mode,
                params.get("host_claim_namespaces"),
                params.get("inspection"),
                params.get("automated_cleaning"),
            )
        owner = self._owner
        conns = [self._conn]

        def connect():
            return conns.pop() if conns else openstack_connection(params)

        return IronicRegistrar(
            connect,
            self.check_mode,
            owner,
            params["default_resource_class"],
            params.get("interfaces"),
            params["update_password"] == "always",
            params["wait_timeout"],
            params.get("automated_cleaning"),
        )

    def _resolve_owner(self):
        """Resolve option owner in Keystone once, before any BMC is read (bad input changes nothing)."""
        params = self.params
        self._conn = openstack_connection(params)
        self._owner, check = resolve_project(
            self._conn, params.get("owner"), verify=params["verify_projects"], option="owner"
        )
        self.result["project_check"] = check
        if check == PROJECT_SKIPPED:
            self.warn("project %s was not checked in Keystone (verify_projects=false)" % self._owner)

    def run(self):
        self._check()
        if self.backend == "ironic":
            self._resolve_owner()
        run_host_register(self, self._registrar)


def main():
    HostRegisterModule()()


if __name__ == "__main__":
    main()
