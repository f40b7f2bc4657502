# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""What the ``claimed_hosts`` inventory makes of the claims it lists, pure.

Two steps, both free of I/O and of Ansible:

1. *records*: one plain, JSON-serialisable dict per claimed host, built from
   the API objects (``metal3_record`` for a HostClaim, ``ironic_records`` for
   the allocations of a project joined to their nodes and ports).  Only
   claims bound to a host become records.  Records hold only the fields this
   file names, so nothing else a control plane returns (a node's
   ``driver_info``, ``last_error``, ``maintenance_reason``, other ``extra``
   keys...) can reach the inventory.  Records are what the inventory cache
   stores.
2. *hosts*: ``prepare_hosts`` turns records into inventory entries for the
   current options: default host name, host variables under a prefix,
   ``ansible_host`` chosen by address type and family, default groups.

Rules decided here (the plugin documents them):

* A HostClaim is a host once the binder recorded its host (``AssociateBMH``
  ``True``, ``bound to host <name>``) and the binding label agrees: the one
  rule ``host_claim_info`` uses too: both take the record from
  ``metal3/claim/view.py`` (``claim_record``), this file only presents it.  A label that
  disagrees with the record (a tenant can edit labels) is never honoured: the
  claim is then not a host until the binder's next pass sets the label back.
  An Ironic allocation is a host once it holds a node the caller can see.
* Default host name: the claim's name (the Ironic allocation's name, else the
  node's name, else its UUID).  Qualified as ``<name>.<namespace>`` (Ironic:
  ``<name>.<project name or ID>``) with ``qualify_host_names=always``, or with
  ``auto`` (the default) when a metal3 source lists more than one namespace:
  names are then stable whatever claims exist (Ironic allocation names are
  unique, so ``auto`` never qualifies them).  Two hosts with one name are an
  error, never a silent merge of their variables.
* ``ansible_host``: for each address type in order (``*`` is any type), for
  each family in order (``ipv4``, ``ipv6``, ``hostname``), the first address
  of the claim of that type and family.
* Ironic addresses come only from a field the tenant cannot write:
  ``addresses`` in the node's ``extra``, the owner's record (the
  ``ironic_tenancy`` policy keeps ``baremetal:node:update_extra`` to the
  owner).  The node's ``instance_info`` (a lessee writes it to deploy,
  ``baremetal_tenancy_addresses`` included) and the allocation's ``extra``
  (its owner is the tenant) are never read for an address, so no tenant -
  the current one or an earlier one - chooses ``ansible_host``.  The record
  is a list of ``{type, address}`` (or of plain strings, taken as
  ``InternalIP``); the types ``InternalIP6`` and ``ExternalIP6`` are read as
  ``InternalIP`` and ``ExternalIP``.
* An Ironic host is ready when its node is ``active`` with no provision
  state change under way and not in maintenance, as a metal3 host is ready
  once provisioned: a claimed but undeployed node cannot run a playbook.
* Group names contain only letters, digits and ``_`` (anything else becomes
  ``_``) and never start with a digit.
"""

import re

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.claim_record import (
    DEFAULT_ADDRESS_FAMILIES,
    DEFAULT_ADDRESS_TYPES,
    as_dict,
    as_str,
    select_address,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput

BACKENDS = ("metal3", "ironic")
DEFAULT_HOST_CLASS_LABEL = "baremetal.tenancy/host-class"
DEFAULT_HOSTVAR_PREFIX = "tenancy_"
DEFAULT_GROUP = "claimed_hosts"
DEFAULT_GROUP_PREFIX = "tenancy_"
QUALIFY_MODES = ("auto", "always", "never")
WITHOUT_ADDRESS = ("keep", "skip")

BINDING_LABEL = "hostclaim.metal3.io/host"
IRONIC_ADDRESSES_KEY = "baremetal_tenancy_addresses"  # ironic_model.ADDRESSES_KEY, written by host_claim

# Host variables (without prefix): every one a source can ask for, those set when it does not say, and those
# that exist with one backend only.  ``conditions`` maps each condition type to its status; ``condition_details``
# is the list of conditions with their reasons and messages.
HOST_VARIABLES = (
    "name",
    "namespace",
    "backend",
    "host",
    "host_class",
    "online",
    "powered_on",
    "associated",
    "ready",
    "conditions",
    "condition_details",
    "labels",
    "annotations",
    "image",
    "addresses",
    "nics",
    "boot_mac_address",
    "uid",
    "project_id",
    "project_name",
    "node_uuid",
    "allocation_uuid",
    "resource_class",
    "traits",
    "provision_state",
    "power_state",
    "maintenance",
)
DEFAULT_HOST_VARIABLES = (
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
    "project_name",
    "traits",
    "provision_state",
    "maintenance",
)
# With backend ironic these come from the ports list, which is read only when one of them is wanted.
PORT_VARIABLES = ("nics", "boot_mac_address")
BACKEND_VARIABLES = {
    "metal3": ("uid",),
    "ironic": (
        "project_id",
        "project_name",
        "node_uuid",
        "allocation_uuid",
        "resource_class",
        "traits",
        "provision_state",
        "power_state",
        "maintenance",
    ),
}

# What the Ironic lists ask for: these fields and no other.
IRONIC_ALLOCATION_FIELDS = ("uuid", "name", "node_uuid", "state", "owner", "extra")
IRONIC_NODE_FIELDS = (
    "uuid",
    "name",
    "provision_state",
    "target_provision_state",
    "power_state",
    "maintenance",
    "resource_class",
    "traits",
    "instance_info",
    "extra",
    "owner",
    "lessee",
    "instance_uuid",
)
IRONIC_PORT_FIELDS = ("uuid", "address", "node_uuid", "pxe_enabled")

_UNSAFE_GROUP_CHARS = re.compile(r"[^A-Za-z0-9_]")


# ---------------------------------------------------------------- helpers


# -------------------------------------------------------------- addresses


# ------------------------------------------------------------- conditions


# ------------------------------------------------------------------ metal3


# ------------------------------------------------------------------ ironic


# ------------------------------------------------------------ host entries


def safe_group_name(name):
    """``name`` with every character other than a letter, digit or ``_`` replaced by ``_``."""
    safe = _UNSAFE_GROUP_CHARS.sub("_", name if isinstance(name, str) else "")
    if safe[:1].isdigit():
        safe = "_" + safe
    return safe or None


def describe(record):
    """How messages name the claim behind a record."""
    if record.get("backend") == "ironic":
        return "allocation %s (node %s)" % (record.get("name"), record.get("node_uuid"))
    return "HostClaim %s/%s" % (record.get("namespace"), record.get("name"))


def should_qualify(mode, backend, namespaces=()):
    """Whether default host names carry the namespace/project (see the module docstring)."""
    if mode == "always":
        return True
    if mode == "never":
        return False
    return backend == "metal3" and len(set(namespaces or ())) > 1


def scope_of(record):
    """The namespace, or for Ironic the project name (ID when the name is unknown)."""
    if record.get("backend") == "ironic":
        return record.get("project_name") or record.get("namespace")
    return record.get("namespace")


def default_host_name(record, qualify=False):
    """The claim's name, ``<name>.<namespace or project>`` when qualified."""
    if qualify and scope_of(record):
        return "%s.%s" % (record["name"], scope_of(record))
    return record["name"]


def host_class(record, class_label=DEFAULT_HOST_CLASS_LABEL):
    """Ironic: the node's resource class; metal3: the value of ``class_label`` on the claim."""
    if record.get("backend") == "ironic":
        return record.get("resource_class")
    if not class_label:
        return None
    return as_str(as_dict(record.get("labels")).get(class_label))


def variable_names(backend, wanted=DEFAULT_HOST_VARIABLES):
    """The names of ``wanted`` (host variables without prefix) that exist with ``backend``, in order.

    A name that is not a host variable is an error; one that exists only with the other backend is left out.
    """
    unknown = [name for name in wanted if name not in HOST_VARIABLES]
    if unknown:
        raise InvalidInput(
            "option host_variables",
            "%s: not a host variable (known: %s)"
            % (", ".join(repr(name) for name in unknown), ", ".join(HOST_VARIABLES)),
        )
    other = set(name for kind, names in BACKEND_VARIABLES.items() if kind != backend for name in names)
    seen = set()
    result = []
    for name in wanted:
        if name not in other and name not in seen:
            seen.add(name)
            result.append(name)
    return tuple(result)


def needs_ports(wanted=DEFAULT_HOST_VARIABLES):
    """Whether host variables ``wanted`` need an Ironic node's ports."""
    return any(name in PORT_VARIABLES for name in wanted or DEFAULT_HOST_VARIABLES)


def condition_map(conditions):
    """``{type: status}`` of conditions (the first of a type wins, as in ``condition_status``)."""
    result = {}
    for condition in conditions or ():
        result.setdefault(condition.get("type"), condition.get("status"))
    return result


def hostvars(record, prefix=DEFAULT_HOSTVAR_PREFIX, class_label=DEFAULT_HOST_CLASS_LABEL, names=None):
    """Host variables ``names`` of a record, each prefixed (``ansible_host`` is not set here).

    ``names`` defaults to ``variable_names(<the record's backend>)``.
    """
    if names is None:
        names = variable_names(record.get("backend"))
    result = {}
    for name in names:
        if name == "host_class":
            value = host_class(record, class_label)
        elif name == "conditions":
            value = condition_map(record.get("conditions"))
        elif name == "condition_details":
            value = record.get("conditions") or []
        else:
            value = record.get(name)
        result[prefix + name] = value
    return result


def default_groups(record, prefix=DEFAULT_GROUP_PREFIX, class_label=DEFAULT_HOST_CLASS_LABEL, memo=None):
    """Default group names: namespace (or project), readiness, host class.

    ``memo`` (a dict kept across the records of one inventory) holds the names already made for the same
    backend, scope, readiness and class: thousands of hosts share a few groups, so the names are made once.
    """
    backend, scope, ready = record.get("backend"), scope_of(record), bool(record.get("ready"))
    klass = host_class(record, class_label)
    key = (backend, scope, ready, klass)
    try:
        if memo is not None and key in memo:
            return list(memo[key])
    except TypeError:  # not hashable (never so in records this collection builds)
        memo = None
    scope_kind = "project" if backend == "ironic" else "namespace"
    groups = []
    if scope:
        groups.append("%s%s_%s" % (prefix, scope_kind, scope))
    groups.append(prefix + ("ready" if ready else "not_ready"))
    if klass:
        groups.append("%sclass_%s" % (prefix, klass))
    groups = [safe_group_name(group) for group in groups]
    if memo is not None:
        memo[key] = tuple(groups)
    return groups


def _sort_key(record):
    return (record.get("namespace") or "", record.get("name") or "", record.get("node_uuid") or "")


class HostPreparer:
    """Turns records into inventory entries one at a time, for fixed ``options`` (see :func:`prepare_hosts`).

    The inventory prepares each record as its page of the list arrives, while the API server prepares the next
    page, then sorts the entries (:func:`sort_entries`): the same entries, in the same order, as
    :func:`prepare_hosts`.  An unknown host variable name is an error here, before any request.
    """

    def __init__(self, options):
        self.prefix = options.get("hostvar_prefix", DEFAULT_HOSTVAR_PREFIX)
        self.class_label = options.get("host_class_label", DEFAULT_HOST_CLASS_LABEL)
        self.qualify = should_qualify(
            options.get("qualify_host_names") or "auto", options.get("backend"), options.get("namespaces")
        )
        self.types = options.get("address_types", DEFAULT_ADDRESS_TYPES)
        self.families = options.get("address_families", DEFAULT_ADDRESS_FAMILIES)
        self.skip_without_address = options.get("hosts_without_address") == "skip"
        self.only_ready = bool(options.get("only_ready"))
        self.jump_host = options.get("jump_host")
        wanted = options.get("host_variables") or DEFAULT_HOST_VARIABLES
        self.names = dict((backend, variable_names(backend, wanted)) for backend in BACKENDS)
        self.group_prefix = options.get("group_prefix", DEFAULT_GROUP_PREFIX)
        self.with_groups = options.get("default_groups", True)
        self.group_memo = {}

    def entry(self, record):
        """The entry of ``record`` (``name``, ``hostvars``, ``groups``, ``record``), or ``None`` when left out."""
        if self.only_ready and not record.get("ready"):
            return None
        variables = hostvars(record, self.prefix, self.class_label, self.names.get(record.get("backend")) or ())
        address = select_address(record.get("addresses"), self.types, self.families)
        if address:
            variables["ansible_host"] = address
        elif self.skip_without_address:
            return None
        if self.jump_host:
            variables["ansible_ssh_common_args"] = "-o ProxyJump=%s" % self.jump_host
        groups = (
            default_groups(record, self.group_prefix, self.class_label, self.group_memo) if self.with_groups else []
        )
        return {
            "name": default_host_name(record, self.qualify),
            "hostvars": variables,
            "groups": groups,
            "record": record,
        }


def sort_entries(entries):
    """``entries`` sorted by namespace and name of their records (stable: the order of :func:`prepare_hosts`)."""
    return sorted(entries, key=lambda entry: _sort_key(entry["record"]))


def prepare_hosts(records, options):
    """Inventory entries for ``records`` under ``options`` (a dict; missing keys take the defaults).

    Options: ``backend``, ``namespaces``, ``qualify_host_names``,
    ``hostvar_prefix``, ``address_types``, ``address_families``,
    ``hosts_without_address``, ``only_ready``, ``default_groups``,
    ``group_prefix``, ``host_class_label``, ``host_variables``.  Returns a list of dicts with
    ``name`` (the default host name), ``hostvars``, ``groups`` and ``record``,
    sorted by namespace and name.
    """
    preparer = HostPreparer(options)
    entries = (preparer.entry(record) for record in records or ())
    return sort_entries(entry for entry in entries if entry is not None)


def check_unique_names(named):
    """Raise ``InvalidInput`` if two ``(host name, record)`` pairs share a host name."""
    seen = {}
    for name, record in named:
        if not isinstance(name, str) or not name.strip():
            raise InvalidInput(describe(record), "the host name template gave an empty name")
        if name in seen:
            raise InvalidInput(
                "host name %r" % name,
                "given to both %s and %s; set qualify_host_names=always or a hostname template that "
                "tells them apart" % (describe(seen[name]), describe(record)),
            )
        seen[name] = record
