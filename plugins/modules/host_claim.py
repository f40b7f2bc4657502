#!/usr/bin/python
# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


DOCUMENTATION = r"""
module: host_claim
short_description: Claim a bare-metal host as a tenant, deploy it and power it
version_added: 0.1.0
description:
  - Creates, updates or deletes a tenant's claim on a host of the pool, with the tenant's own credentials.
  - With O(backend=metal3), the claim is a C(HostClaim) in the tenant's namespace; an administrator's binder
    (M(baremetal.tenancy.host_bind)) associates it with a C(BareMetalHost) the tenant cannot see.
  - With O(backend=metal3), both HostClaim APIs are spoken (O(dialect)), with the same options where they mean the same
    thing; an option the cluster's dialect cannot say is refused with one error naming the claim and the field, and
    nothing changes.
  - With O(backend=ironic), the claim is an Ironic allocation owned by the tenant's project, named O(name) so that
    reruns find it; Ironic picks a node the project owns or leases, and the module deploys O(image) on it with a
    config drive built from O(user_data), O(network_data) and O(meta_data).
  - The result describes the claim and the host's addresses and NICs; it never carries a BMC address or credential.
author:
  - Baremetal Tenancy Contributors (@baremetal-tenancy)
extends_documentation_fragment:
  - baremetal.tenancy.backend
  - baremetal.tenancy.dialect
  - baremetal.tenancy.kubernetes_auth
  - baremetal.tenancy.openstack_auth
  - baremetal.tenancy.tls
  - baremetal.tenancy.wait
  - baremetal.tenancy.attributes
  - baremetal.tenancy.attributes.platform
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
options:
  name:
    description:
      - Name of the claim (the C(HostClaim), or the Ironic allocation).
    type: str
    required: true
  namespace:
    description:
      - The tenant's namespace that holds the C(HostClaim). Required with O(backend=metal3).
    type: str
  state:
    description:
      - V(present) creates or updates the claim; V(absent) deletes it (see M(baremetal.tenancy.host_release) to wait for the host's return).
      - With V(absent) and O(wait=true), waits until the claim is gone.
    type: str
    choices: [present, absent]
    default: present
  online:
    description:
      - Whether the host should be powered on. Left unchanged when not given (a new claim starts powered off).
      - With O(backend=metal3), C(spec.online) on the proposal's dialect, C(spec.poweredOn) on baremetal-operator's.
      - With O(backend=ironic), Ironic powers a node on at the end of a deployment; O(online=false) powers it off
        once the deployment is over (with O(wait=true), or on a later run).
    type: bool
  host_selector:
    description:
      - Labels the host must carry (O(backend=metal3)). Same shape as a Kubernetes label selector.
      - On baremetal-operator's dialect the operators are written as its validating webhook spells them (V(in),
        V(notin), V(exists) and V(!) for V(DoesNotExist)); a claim that already says the same in another spelling is
        left as it is.
    type: dict
    suboptions:
      matchLabels:
        description: Labels and values the host must carry.
        type: dict
      matchExpressions:
        description: Expressions with C(key), C(operator) (V(In), V(NotIn), V(Exists), V(DoesNotExist)) and C(values).
        type: list
        elements: dict
  resource_class:
    description:
      - Resource class of the node to claim (O(backend=ironic)). Required when creating an Ironic claim.
    type: str
  traits:
    description:
      - Traits the node must have (O(backend=ironic)).
    type: list
    elements: str
  candidate_nodes:
    description:
      - Names or UUIDs of the nodes the allocation may pick from (O(backend=ironic)).
    type: list
    elements: str
  image:
    description:
      - The image to write on the host. Without it the host is claimed but not deployed.
    type: dict
    suboptions:
      url:
        description: URL of the image.
        type: str
        required: true
      checksum:
        description: Checksum of the image, or URL of a checksum file. Required unless O(image.format=live-iso).
        type: str
      checksum_type:
        description: Algorithm of O(image.checksum).
        type: str
        choices: [md5, sha256, sha512, auto]
        default: auto
      format:
        description: Disk format of the image.
        type: str
        choices: [raw, qcow2, vdi, vmdk, live-iso]
  networks:
    description:
      - The tenant's own Neutron networks the host is attached to (O(backend=ironic), a node with Ironic's
        C(neutron) network interface), made with M(baremetal.tenancy.tenant_network).
      - For each network the module makes a port of the caller's project named C(bmt-<claim>-<network>) (its
        C(device_id) the node) and attaches it to the node as a VIF before the deployment; when Ironic deploys the
        node it binds the port and networking-generic-switch moves the node's switch port to the network's VLAN.
      - A network the caller's project does not have (another tenant's is not shown) is an error naming it, and
        nothing changes. Releasing the claim detaches the VIFs and deletes the ports.
      - A network removed from the list stays attached until the claim is released.
      - A node that carries a VIF which is not the claim's (Ironic binds every VIF of a node it deploys) is not
        deployed. The error names the node and the networks, and the allocation is undone.
      - When the deployment fails, the error names each network the host is not on with its port's status (the
        port is C(ACTIVE) once the switch has moved the host's switch port to the network); a rerun deploys again.
    type: list
    elements: dict
    suboptions:
      network:
        description: Name or ID of a network of the caller's project.
        type: str
        required: true
      fixed_ip:
        description: The host's address on the network (in one of its subnets); without it Neutron picks one.
        type: str
  file_url_allowed_prefixes:
    description:
      - Directories on the Ironic conductor under which O(image.url) and a checksum URL may be C(file://) URLs
        (O(backend=ironic)). A C(file://) URL names a file of the conductor (its configuration, its credentials), so
        without this option (there is no default) a tenant claim with one is refused before anything changes. The
        path is compared after C(..) and repeated slashes are resolved; C(%) escapes and other hosts are refused.
      - Set it where the owner decides, for example in an AWX job template's locked variables. The boundary Ironic
        itself enforces is C([conductor] file_url_allowed_paths) in C(ironic.conf), which should list the same
        directories.
    type: list
    elements: str
  user_data_secret:
    description:
      - Name of a Secret in O(namespace) that holds cloud-init user-data (O(backend=metal3)).
      - "Written as C(spec.userData: {name: <Secret>}), the HostClaim proposal's form (the same for
        O(network_data_secret) and O(meta_data_secret)); a claim that already names the same Secret as a plain string
        is left as it is. An empty string removes the reference."
      - "On baremetal-operator's dialect, C(spec.userData: {name: <Secret>, namespace: <namespace>}), its form; the
        Secret is always in the claim's namespace."
    type: str
  network_data_secret:
    description:
      - Name of a Secret in O(namespace) that holds network-data (O(backend=metal3)).
    type: str
  meta_data_secret:
    description:
      - Name of a Secret in O(namespace) that holds meta-data (O(backend=metal3)).
    type: str
  user_data:
    description:
      - Cloud-init user-data put in the config drive (O(backend=ironic)).
      - Text starting with C(#cloud-config) must be a valid YAML mapping.
    type: str
  network_data:
    description:
      - Network-data (OpenStack C(network_data.json) shape) put in the config drive (O(backend=ironic)).
    type: dict
  meta_data:
    description:
      - Extra meta-data put in the config drive (O(backend=ironic)).
    type: dict
  node_reuse:
    description:
      - Name under which a released host is kept for this namespace, so that a later claim with the same name gets
        the same host (O(backend=metal3)).
      - The proposal's dialect only; baremetal-operator's HostClaim has no C(nodeReuse) and the option is refused.
    type: str
  credentials:
    description:
      - Name of a Secret of the claim's namespace holding, under the key C(kubeconfig) (or C(value)), a kubeconfig for
        the cluster where the hosts are (O(backend=metal3); C(spec.credentials)). The owner's binder then relays the
        claim to that cluster, with that kubeconfig only, and brings its host and status back (see
        M(baremetal.tenancy.host_bind)); the claim is read and released as any other.
      - Set when the claim is created, never after. Adding, changing or removing it on an existing claim is refused
        (the collection's HostClaim CRD refuses it too), since a relayed claim pointed elsewhere, or a bound claim
        relayed, would leave its first claim behind; delete the claim and create it again. An empty string on a
        new claim means none.
      - While a claim relayed with it exists, the Secret carries the finalizer
        C(relay.hostclaim.metal3.io/credentials), so a Secret deleted first stays until the last such claim is
        released.
      - The kubeconfig must use a token or an embedded client certificate, and its context must name the namespace of
        that cluster where the claim goes.
      - The proposal's dialect only; baremetal-operator's HostClaim has no C(credentials) and the option is refused.
    type: str
  in_namespace:
    description:
      - The only namespace whose C(BareMetalHosts) may be bound to the claim (C(spec.hostSelector.inNamespace)).
      - Baremetal-operator's dialect only (the proposal's has no such field and the option is refused there). An
        empty string removes it.
    type: str
  failure_domain:
    description:
      - The claim's failure domain (C(spec.failureDomain)); hosts labelled
        C(infrastructure.cluster.x-k8s.io/failure-domain) with this value are preferred.
      - Baremetal-operator's dialect only (refused on the proposal's). An empty string removes it.
    type: str
  custom_deploy:
    description:
      - Name of a custom deploy method of the deploy ramdisk (C(spec.customDeploy.method)), in place of O(image).
      - Baremetal-operator's dialect only (refused on the proposal's). An empty string removes it.
    type: str
  annotations:
    description:
      - Annotations to set on the C(HostClaim) (O(backend=metal3)); a null value removes the annotation. Others are kept.
      - >-
        The reserved domain C(host.metal3.io) acts on the host through the binder. V(host.metal3.io/reboot) (an empty
        value, or JSON with C(mode) V(hard) or V(soft) and a boolean C(force)) reboots it once, then the binder removes
        the annotation; V(host.metal3.io/reboot.<name>) powers it off until the annotation is removed;
        V(host.metal3.io/inspect) (an empty value) inspects it again.
      - Keys of the C(hostclaim.metal3.io) domain belong to the binder and are refused.
      - With O(backend=ironic) only V(host.metal3.io/reboot) is accepted, any other key is refused. Each run that
        gives it reboots the claimed node once through Ironic's C(rebooting) power target (C(soft rebooting) with
        C(mode) V(soft)), after any deployment of the same run; RV(rebooted) says so. Nothing is stored on the node.
    type: dict
  wait_for:
    description:
      - What O(wait=true) waits for. V(associated) waits until a host is bound, V(ready) until the host is
        provisioned (deployed) and its power matches O(online).
      - With O(backend=ironic), V(associated) returns once Ironic has allocated a node (a deployment started by the
        same run goes on), V(ready) once the node is C(active) and its power matches O(online). The module polls
        Ironic itself, at a short interval that grows to one second.
    type: str
    choices: [associated, ready]
    default: ready
notes:
  - Tenants need no access to C(BareMetalHosts), BMC Secrets or other tenants' namespaces or projects.
  - With O(backend=ironic), the credentials must be scoped to the tenant's project. Ironic's default policy lets
    a lessee deploy only with the C(manager) or C(admin) role; the C(baremetal.tenancy.ironic_tenancy) role's
    policy file lets C(member) do it too.
  - With O(backend=ironic), allocation names are unique in the whole Ironic; a name another project uses is
    refused with a clear error (that project's allocation is neither shown nor changed).
  - With O(backend=ironic), an allocation Ironic leaves C(allocating) for 120 seconds (its conductor's worker
    died, for instance when Ironic's database went away mid-way, and nothing in Ironic takes it up again) is
    deleted and created again with the same name, resource class, traits and candidate nodes, with a warning,
    as often as O(wait_timeout) allows. The same holds for such an allocation left by an earlier run.
  - With O(backend=ironic), the module records in the node's C(instance_info) a digest of the config drive
    (C(baremetal_tenancy_drive_digest)), since Ironic never shows a config drive back, and the static addresses of
    O(network_data) (C(baremetal_tenancy_addresses)); changing O(image), O(user_data), O(network_data) or
    O(meta_data) of a deployed claim rebuilds the node.
"""

EXAMPLES = r"""
- name: Claim a large host in my namespace and wait until it is bound
  baremetal.tenancy.host_claim:
    name: worker-0
    namespace: tenant-a
    host_selector:
      matchLabels:
        infra-kind: large
    online: false
    wait: true
    wait_for: associated

- name: Deploy my image with my cloud-init and power it on
  baremetal.tenancy.host_claim:
    name: worker-0
    namespace: tenant-a
    image:
      url: http://images.example.com/ubuntu-24.04.qcow2
      checksum: http://images.example.com/ubuntu-24.04.qcow2.sha256sum
      checksum_type: sha256
      format: qcow2
    user_data_secret: worker-0-user-data
    online: true
    wait: true

- name: Claim a host of one namespace and failure domain on baremetal-operator's own HostClaim
  baremetal.tenancy.host_claim:
    name: worker-1
    namespace: tenant-a
    dialect: bmo
    host_selector:
      matchLabels:
        infra-kind: large
    in_namespace: metal3
    failure_domain: rack-2
    online: false

- name: Reboot my host once (the binder passes the annotation to the BareMetalHost)
  baremetal.tenancy.host_claim:
    name: worker-0
    namespace: tenant-a
    annotations:
      host.metal3.io/reboot: ""

- name: Deploy an Ironic node on my private network (its switch port moves to my VLAN)
  baremetal.tenancy.host_claim:
    backend: ironic
    name: web-1
    resource_class: baremetal-large
    networks:
      - network: tenant-a-private
        fixed_ip: 10.20.0.11
    image:
      url: http://images.example.com/live.iso
      format: live-iso
    wait: true

- name: Reboot my Ironic host once (Ironic's reboot power target)
  baremetal.tenancy.host_claim:
    backend: ironic
    name: web-0
    annotations:
      host.metal3.io/reboot: ""

- name: Claim and deploy an Ironic node with my project's credentials
  baremetal.tenancy.host_claim:
    backend: ironic
    cloud: tenant-a
    name: db-0
    resource_class: baremetal-large
    traits: [CUSTOM_NVME]
    image:
      url: http://images.example.com/debian-13.qcow2
      checksum: 9f6c1a0f5e2b4c8d7a3e1f0b2c4d6e8f
      checksum_type: md5
    user_data: |
      #cloud-config
      ssh_authorized_keys: [ssh-ed25519 AAAA... me@example.com]
    online: true
    wait: true
"""

RETURN = r"""
dialect:
  description: The HostClaim dialect spoken, V(proposal) or V(bmo) (see O(dialect)).
  returned: with O(backend=metal3)
  type: str
  sample: bmo
claim:
  description: The claim after the change (in check mode, as it would be).
  returned: when O(state=present)
  type: dict
  contains:
    name:
      description: Name of the claim.
      type: str
      sample: worker-0
    namespace:
      description: Namespace of the claim (O(backend=metal3)), or the project ID (O(backend=ironic)).
      type: str
      sample: tenant-a
    backend:
      description: The backend.
      type: str
      sample: metal3
    host:
      description:
        - Name of the bound host, or null while none is bound.
        - With O(backend=metal3) it is the host the binder recorded in the claim's status, and only while the binding
          label C(hostclaim.metal3.io/host) agrees with it (the rule the C(claimed_hosts) inventory uses too); a label
          edited by hand gives null until the binder's next pass sets it back.
        - On baremetal-operator's dialect it is the name in the claim's C(status.bareMetalHost), which only the
          binder can write.
      type: str
      sample: host-07
    online:
      description: The requested power state (C(spec.online), or C(spec.poweredOn) on baremetal-operator's dialect).
      type: bool
    powered_on:
      description: Whether the host is powered on, when known.
      type: bool
    associated:
      description:
        - Whether a host is bound to the claim (the C(AssociateBMH) condition, or C(Associated) on
          baremetal-operator's dialect).
      type: bool
    ready:
      description:
        - Whether the host is provisioned and its power matches O(online).
        - With O(backend=ironic), a node in maintenance is never ready; M(baremetal.tenancy.host_claim_info) (which
          requests no power and no image) reports a claim ready once its node is deployed, as the C(claimed_hosts)
          inventory does.
      type: bool
    provisioning_state:
      description:
        - Provisioning state of the host as the tenant may see it (for example V(provisioned)), O(backend=metal3).
        - Derived from the claim's C(Ready) condition (V(available), V(provisioning), V(provisioned),
          V(deprovisioning), V(error), ...), null while no host is bound. On baremetal-operator's dialect, from its
          C(Provisioned) condition.
        - With O(backend=ironic) see RV(claim.provision_state).
      type: str
    provision_state:
      description:
        - The node's Ironic provision state (for example V(active), V(deploying), V(available)), O(backend=ironic);
          null while no node is allocated.
        - The same value as the C(provision_state) host variable of the C(claimed_hosts) inventory.
      type: str
    image:
      description: The image of the claim (with O(backend=metal3) C(url), C(checksum), C(checksumType) and C(format)).
      type: dict
    addresses:
      description:
        - Addresses of the host, each with C(type) and C(address).
        - With O(backend=ironic), only the owner's record (C(addresses) in the node's C(extra)), as the C(claimed_hosts)
          inventory reads it; addresses of the claim's own network-data are not reported.
        - On baremetal-operator's dialect, from the binder's C(hostclaim.metal3.io/host-status) annotation of the claim,
          read only while C(status.bareMetalHost) names a host (the same for RV(claim.nics) and
          RV(claim.boot_mac_address)).
      type: list
      elements: dict
    nics:
      description: NICs of the host, each with C(name), C(MAC) and C(ip).
      type: list
      elements: dict
    boot_mac_address:
      description: MAC address the host boots from.
      type: str
    conditions:
      description:
        - Conditions of the claim (C(AssociateBMH), C(Ready)) with C(status), C(reason) and C(message).
        - On baremetal-operator's dialect C(Associated), C(Synchronized), C(Provisioned) and C(Ready).
        - With O(backend=ironic), C(Allocated) and C(Ready).
      type: list
      elements: dict
    labels:
      description: Labels of the claim (O(backend=metal3)), including those imported from the host.
      type: dict
    annotations:
      description:
        - Annotations of the claim in the C(export.hostclaim.metal3.io) domain (O(backend=metal3)), those the
          infrastructure administrator exports from the host; other annotations are not returned (they may copy
          anything, for example C(kubectl.kubernetes.io/last-applied-configuration)).
        - The same record as the C(claimed_hosts) inventory's host variables.
      type: dict
    uid:
      description: UID of the claim (O(backend=metal3)).
      type: str
    node_reuse:
      description: The claim's C(nodeReuse) (O(backend=metal3)); null on baremetal-operator's dialect.
      type: str
    host_selector:
      description: The claim's C(hostSelector) (O(backend=metal3)), as written (with C(inNamespace) on baremetal-operator's
        dialect).
      type: dict
    deleting:
      description: Whether the claim is being deleted, its host being released (O(backend=metal3)).
      type: bool
    traits:
      description: Traits of the node (O(backend=ironic)).
      type: list
      elements: str
    networks:
      description:
        - With O(networks), each network of the claim and the host's addresses on it, from the caller's own port
          (never a field of the port's binding, which names the switch port).
      type: list
      elements: dict
      contains:
        network:
          description: Name of the network.
          type: str
        network_id:
          description: ID of the network.
          type: str
        addresses:
          description: The host's IP addresses on the network.
          type: list
          elements: str
        mac_address:
          description: MAC address of the port (the node's NIC once attached).
          type: str
rebooted:
  description: Whether the run rebooted the node (O(backend=ironic), V(host.metal3.io/reboot) in O(annotations); in check
    mode, whether it would).
  returned: with O(backend=ironic) and O(state=present)
  type: bool
"""

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.auth import WAIT_SPEC
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.backend_options import INSTEAD, ONLY_FOR
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.base import TenancyModule
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.claim_backends import claim_backend
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.dialect import DIALECT_CHOICES


class HostClaimModule(TenancyModule):
    object_kind = "host claim"
    argument_spec = dict(
        name=dict(type="str", required=True),
        namespace=dict(type="str"),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        online=dict(type="bool"),
        host_selector=dict(
            type="dict",
            options=dict(
                matchLabels=dict(type="dict"),
                matchExpressions=dict(type="list", elements="dict"),
            ),
        ),
        resource_class=dict(type="str"),
        traits=dict(type="list", elements="str"),
        candidate_nodes=dict(type="list", elements="str"),
        image=dict(
            type="dict",
            options=dict(
                url=dict(type="str", required=True),
                checksum=dict(type="str"),
                checksum_type=dict(type="str", choices=["md5", "sha256", "sha512", "auto"], default="auto"),
                format=dict(type="str", choices=["raw", "qcow2", "vdi", "vmdk", "live-iso"]),
            ),
        ),
        networks=dict(
            type="list",
            elements="dict",
            options=dict(network=dict(type="str", required=True), fixed_ip=dict(type="str")),
        ),
        file_url_allowed_prefixes=dict(type="list", elements="str"),
        user_data_secret=dict(type="str", no_log=False),
        network_data_secret=dict(type="str", no_log=False),
        meta_data_secret=dict(type="str", no_log=False),
        user_data=dict(type="str"),
        network_data=dict(type="dict"),
        meta_data=dict(type="dict"),
        node_reuse=dict(type="str"),
        credentials=dict(type="str", no_log=False),
        in_namespace=dict(type="str"),
        failure_domain=dict(type="str"),
        custom_deploy=dict(type="str"),
        dialect=dict(type="str", choices=list(DIALECT_CHOICES), default="auto"),
        annotations=dict(type="dict"),
        wait_for=dict(type="str", choices=["associated", "ready"], default="ready"),
        **WAIT_SPEC,
    )
    module_kwargs = dict(
        required_if=[("backend", "metal3", ("namespace",))],
    )
    backend_options = ONLY_FOR
    backend_instead = INSTEAD

    def run(self):
        backend = claim_backend(self.backend)
        backend.run_host_claim(self)


def main():
    HostClaimModule()()


if __name__ == "__main__":
    main()
