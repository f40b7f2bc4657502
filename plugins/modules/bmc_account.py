#!/usr/bin/python
# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


DOCUMENTATION = r"""
module: bmc_account
short_description: Short-lived BMC accounts for lessees, on a host's Redfish BMC
version_added: 0.1.0
description:
  - For an administrator. Creates a temporary account with a Redfish role (V(Operator) by default) and an expiry on
    a host's BMC, rotates its password, disables or deletes it, deletes expired ones, and lists the accounts this
    collection created.
  - The collection marks its accounts twice and never touches any other account. Their user names start with
    C(bmt-). With O(host_name), the account is also recorded on the host (BareMetalHost annotation
    C(baremetal.tenancy/bmc-accounts), Ironic node C(driver_info.bmt_bmc_accounts), which tenants can neither read nor
    write) and only accounts whose URI and user name match that record are changed; without O(host_name) only the prefix
    marks them.
  - The expiry is written to the account's C(AccountExpiration) when the BMC's accounts carry that property (the BMC
    then refuses the account afterwards) and is recorded on the host; O(state=pruned) deletes the expired accounts,
    including on BMCs that do not enforce the expiry.
  - Ending a lease or releasing a claim that was granted BMC access deletes the accounts recorded for that
    grantee on the host.
  - BMCs with fixed account slots (no C(POST) on the accounts collection) are handled by writing the account into
    the first empty slot and emptying the slot again on deletion.
  - The password of a new account (or a rotated one) is returned once in RV(password); the task's output is then
    hidden as with C(no_log), and the password is never logged.
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
    details: Reads the BMC (and the host), reports what would change, writes nothing and returns no password.
  diff_mode:
    support: full
    details: Before and after of the account (never a password).
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
    details: The action plugin hides the task's output when the result carries a password.
options:
  host_name:
    description:
      - The host whose BMC gets the account, a C(BareMetalHost) in O(namespace) (O(backend=metal3)) or an Ironic node
        name or UUID (O(backend=ironic)). Its BMC address and credentials are read from the backend and the account
        is recorded on it.
      - Ironic never shows the stored BMC password; give O(bmc_password) with O(backend=ironic).
      - Without O(host_name), give O(bmc_address), O(bmc_username) and O(bmc_password).
    type: str
  namespace:
    description:
      - Namespace of the C(BareMetalHost) (O(backend=metal3) with O(host_name)). Refused with O(backend=ironic).
    type: str
  bmc_address:
    description:
      - Address of the BMC (same forms as M(baremetal.tenancy.host_register)), when O(host_name) is not given or to
        override the one recorded on the host.
      - The environment variable E(BMT_BMC_ADDRESS) is used when the option is not set.
    type: str
  bmc_username:
    description:
      - User name of a BMC account allowed to manage accounts (C(ConfigureUsers)).
      - The environment variable E(BMT_BMC_USERNAME) is used when the option is not set.
    type: str
  bmc_password:
    description:
      - Password of O(bmc_username).
      - The environment variable E(BMT_BMC_PASSWORD) is used when the option is not set.
    type: str
  bmc_validate_certs:
    description:
      - Whether to verify the BMC's TLS certificate (with O(bmc_address)).
    type: bool
    default: true
  bmc_timeout:
    description:
      - Timeout of each Redfish request, in seconds.
    type: int
    default: 30
  username:
    description:
      - User name of the account. Must start with C(bmt-) and be at most 16 characters.
      - Defaults to C(bmt-) followed by a hash of O(grantee).
    type: str
  grantee:
    description:
      - Whom the account is for (a tenant namespace or project); recorded on the host. With O(state=absent) and no
        O(username), every account recorded for this grantee on O(host_name) is deleted.
    type: str
  role:
    description:
      - Redfish role of the account (one of the BMC's roles, usually V(Administrator), V(Operator) or V(ReadOnly)).
    type: str
    default: Operator
  state:
    description:
      - V(present) creates the account (enabled) or brings its role and expiry to what is given.
      - V(disabled) keeps the account but disables it.
      - V(absent) deletes it (on a fixed-slot BMC, empties its slot).
      - V(pruned) deletes every account of the collection on the BMC whose expiry has passed.
      - V(listed) changes nothing and lists the collection's accounts.
    type: str
    choices: [present, disabled, absent, pruned, listed]
    default: present
  expires_at:
    description:
      - When the account expires, an ISO 8601 date-time with a time zone (V(2026-05-01T18:00:00Z)).
    type: str
  expires_in:
    description:
      - How long a new account lives, as seconds or a duration (V(90s), V(30m), V(8h), V(2d), V(1w)). It counts from
        the account's creation, so rerunning the task does not move the expiry of an existing account (give
        O(expires_at) to change it).
      - Mutually exclusive with O(expires_at). Without either, the expiry of an existing account is left alone and
        a new account does not expire.
    type: str
  rotate_password:
    description:
      - With O(state=present), give an existing account a new password (returned in RV(password)).
    type: bool
    default: false
requirements:
  - sushy >= 5.0.0
notes:
  - The BMC administrator's credentials are never returned or logged.
seealso:
  - module: baremetal.tenancy.host_register
"""

EXAMPLES = r"""
- name: Give tenant-a's operators 8 hours of BMC access to the host they lease
  baremetal.tenancy.bmc_account:
    host_name: rack1-u01
    namespace: metal3
    grantee: tenant-a
    role: Operator
    expires_in: 8h
  register: access

- name: Hand the credentials over (the registered result holds them; the task output is hidden)
  ansible.builtin.copy:
    dest: /secure/handover/rack1-u01.txt
    content: "{{ access.username }} {{ access.password }}"
    mode: "0600"
  no_log: true

- name: Rotate the password of an Ironic node's temporary account
  baremetal.tenancy.bmc_account:
    backend: ironic
    cloud: admin
    host_name: node-17
    bmc_password: "{{ vault_bmc_password }}"
    username: bmt-ops-17
    rotate_password: true

- name: Delete expired temporary accounts on a BMC given by address
  baremetal.tenancy.bmc_account:
    bmc_address: redfish://10.0.0.11/redfish/v1/Systems/1
    bmc_username: root
    bmc_password: "{{ vault_bmc_password }}"
    state: pruned

- name: List the accounts the collection made on a host
  baremetal.tenancy.bmc_account:
    host_name: rack1-u01
    namespace: metal3
    state: listed
"""

RETURN = r"""
username:
  description: User name of the account whose password is returned.
  returned: when RV(password) is returned
  type: str
  sample: bmt-3f1a9c0d2e
password:
  description:
    - Password of a new account, or the new password after O(rotate_password=true). Returned once, never again.
    - Its presence hides the task's output like C(no_log); use it from the registered variable.
  returned: when an account was created or its password rotated (not in check mode)
  type: str
account:
  description: The account after the change (in check mode, as it would be), as in RV(accounts).
  returned: when O(state=present) or O(state=disabled) and the account exists
  type: dict
accounts:
  description: The collection's accounts on the BMC after the change (recorded on O(host_name) when given).
  returned: always
  type: list
  elements: dict
  contains:
    username:
      description: User name.
      type: str
    uri:
      description: URI of the account on the BMC (a path, never the BMC's address).
      type: str
      sample: /redfish/v1/AccountService/Accounts/7
    role:
      description: Redfish role.
      type: str
      sample: Operator
    enabled:
      description: Whether the account is enabled.
      type: bool
    locked:
      description: Whether the BMC locked it.
      type: bool
    expires:
      description: Expiry (UTC, ISO 8601), or null.
      type: str
    expired:
      description: Whether the expiry has passed.
      type: bool
    expiry_enforced_by:
      description: V(bmc) when the BMC holds C(AccountExpiration), V(collection) when only the record does, or null.
      type: str
    slot:
      description: Whether the account lives in a fixed slot.
      type: bool
    grantee:
      description: Whom it was made for (with O(host_name)).
      type: str
    created:
      description: When it was created (with O(host_name)).
      type: str
removed:
  description: User names deleted by O(state=pruned) or by O(state=absent) with O(grantee).
  returned: when O(state=pruned), or O(state=absent) without O(username)
  type: list
  elements: str
expiry_enforced_by_bmc:
  description: Whether the BMC's accounts carry C(AccountExpiration).
  returned: always
  type: bool
"""

from ansible.module_utils.basic import env_fallback

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.base import TenancyModule
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.libraries import SUSHY
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.bmc_ledger import IronicHost
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.connection import openstack_connection
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.bmc_ledger import Metal3Host
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.connection import kube_api_client
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import accounts as bmc_access


class BmcAccountModule(TenancyModule):
    object_kind = "bmc_account"
    required_libraries = (SUSHY,)
    argument_spec = dict(
        host_name=dict(type="str"),
        namespace=dict(type="str"),
        bmc_address=dict(type="str", fallback=(env_fallback, ["BMT_BMC_ADDRESS"])),
        bmc_username=dict(type="str", fallback=(env_fallback, ["BMT_BMC_USERNAME"])),
        bmc_password=dict(type="str", no_log=True, fallback=(env_fallback, ["BMT_BMC_PASSWORD"])),
        bmc_validate_certs=dict(type="bool", default=True),
        bmc_timeout=dict(type="int", default=30),
        username=dict(type="str"),
        grantee=dict(type="str"),
        role=dict(type="str", default="Operator"),
        state=dict(type="str", choices=["present", "disabled", "absent", "pruned", "listed"], default="present"),
        expires_at=dict(type="str"),
        expires_in=dict(type="str"),
        rotate_password=dict(type="bool", default=False, no_log=False),
    )
    module_kwargs = dict(
        mutually_exclusive=[("expires_at", "expires_in")],
    )
    backend_options = dict(metal3=("namespace",), ironic=())

    def needed_libraries(self):
        # With only bmc_address, no backend is contacted: its client library is not needed.
        if not self.params.get("host_name"):
            return self.required_libraries
        return super().needed_libraries()

    def _open_host(self, name):
        """The BMC-account ledger of host ``name``, kept by its backend (options checked by validate())."""
        if self.backend == "metal3":
            return Metal3Host(kube_api_client(self.params), self.params["namespace"], name)
        return IronicHost(openstack_connection(self.params), name)

    def run(self):
        bmc_access.run_bmc_account(self, self._open_host)


def main():
    BmcAccountModule()()


if __name__ == "__main__":
    main()
