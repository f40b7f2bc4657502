# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The API reads of the ``claimed_hosts`` inventory, with the tenant's credentials.

The number of requests does not depend on the number of hosts:

* metal3: one paginated list (``limit`` + ``continue``) of HostClaims per
  namespace, namespaces read in parallel, through the modules' own client
  (``metal3/client.py`` KubeIO).  The JSON body is decoded directly (no model
  deserialisation by the kubernetes client, which is only used to load the
  credentials and its connection pool).
* ironic, with a project-scoped token: one or two paginated lists (``limit``
  + ``marker``), read in parallel, each asking only for the fields the
  inventory uses and filtered by the server: the project's nodes with an
  instance (``associated=true``, ``project``) and, only when NICs or boot MAC
  addresses are wanted, the ports (only those of visible nodes). A claimed
  node names its claim (``claim_view.claims_on_nodes``); the allocations are
  read only for the nodes that cannot - one by one when they are few, else
  the project's allocation list. Ironic answers an allocation list with one
  node lookup per allocation (5-8 s for 1,000 here), a node list without
  ``allocation_uuid`` with none. With a system-scoped token (no project),
  every allocation and every claimed node, as before.
  openstacksdk's own listing would filter ``owner``/``lessee`` on the client
  after fetching every visible node, so the raw API is used.

Every failure becomes a TenancyError naming what was read and the cause.
The client libraries are imported only for the backend in use (importing
openstacksdk or kubernetes costs about a second each).
"""

from typing import NamedTuple

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    Forbidden,
    InvalidInput,
    TenancyError,
    shorten,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.parallel import parallel_map
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.selectors import dns1123_label_problem
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import claim_view as ironic_view
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import view as metal3_view
from ansible_collections.baremetal.tenancy.plugins.plugin_utils import inventory_model as model

DEFAULT_PAGE_SIZE = 500
DEFAULT_TIMEOUT = 60
MAX_PARALLEL = 4
# Ironic: allocations of claimed nodes that do not name their claim are read one by one up to this many (in
# ALLOCATION_READERS threads), else the project's whole allocation list is read.
ALLOCATION_READS_BEFORE_LIST = 25
ALLOCATION_READERS = 4
USER_AGENT = "baremetal.tenancy-claimed_hosts"


def _check_namespaces(namespaces):
    if not namespaces:
        raise InvalidInput(
            "option namespaces",
            "required with backend metal3: list the namespaces whose HostClaims "
            "make the inventory (a tenant can list only its own)",
        )
    for namespace in namespaces:
        problem = dns1123_label_problem(namespace)
        if problem:
            raise InvalidInput("option namespaces", "namespace %r %s" % (namespace, problem))


class KubeClaims:
    """Lists HostClaims through the collection's one Kubernetes client (:class:`metal3.client.KubeIO`) as raw JSON."""

    def __init__(self, params, timeout=DEFAULT_TIMEOUT):
        from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.client import KubeIO
        from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.connection import kube_api_client

        self.io = KubeIO(kube_api_client(params), timeout=(min(timeout, 30), timeout), user_agent=USER_AGENT)

    @property
    def requests(self):
        return self.io.figures()["total"]

    def records(self, namespaces, page_size=DEFAULT_PAGE_SIZE, on_record=None):
        """Records of the bound HostClaims of every listed namespace.

        One paginated list per namespace (the next page asked for while this
        one is converted), namespaces read in parallel.  ``on_record`` is
        called with each record as its page is converted (from the reading
        threads), so what the caller makes of it overlaps the next page.
        """
        from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import API_VERSION, CLAIMS

        _check_namespaces(namespaces)
        convert = metal3_view.metal3_record
        if on_record is not None:

            def convert(claim):
                record = metal3_view.metal3_record(claim)
                if record is not None:
                    on_record(record)
                return record

        return self.io.list_namespaced(
            API_VERSION,
            CLAIMS,
            "HostClaims",
            sorted(set(namespaces)),
            page_size=page_size,
            workers=MAX_PARALLEL,
            convert=convert,
            hint_404="is the HostClaim CRD installed?",
        )


class _Listing(NamedTuple):
    """One Ironic list the inventory reads."""

    resource: str
    params: list
    fields: tuple
    page_size: int


class IronicClaims:
    """Lists the caller's allocations, their nodes and ports through the one Ironic client."""

    def __init__(self, params):
        from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.client import Ironic
        from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.connection import openstack_connection
        from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.projects import token_project

        try:
            self.conn = openstack_connection(params)
        except TenancyError as error:
            raise shorten(error) from None
        self.client = Ironic(self.conn)
        self.project_id, self.project_name = token_project(self.conn)

    @property
    def requests(self):
        return self.client.requests

    def _list(self, listing):
        try:
            return self.client.list(
                listing.resource,
                "Ironic %s" % listing.resource,
                listing.params,
                listing.fields,
                limit=listing.page_size,
            )
        except TenancyError as error:
            raise shorten(error) from None

    def _allocation(self, uuid):
        try:
            return self.client.get_allocation(uuid, fields=model.IRONIC_ALLOCATION_FIELDS)
        except Forbidden:  # another project's
            return None
        except TenancyError as error:
            raise shorten(error) from None

    def _allocations_of(self, unknown, page_size):
        """The project's allocations among ``unknown`` (UUIDs): read one by one when few, else listed."""
        if not unknown:
            return []
        if len(unknown) > ALLOCATION_READS_BEFORE_LIST:
            listing = _Listing("allocations", [("owner", self.project_id)], model.IRONIC_ALLOCATION_FIELDS, page_size)
            return self._list(listing)
        found = parallel_map(self._allocation, sorted(set(unknown)), workers=ALLOCATION_READERS)
        return ironic_view.owned_allocations(found, self.project_id)

    def network_addresses(self, network):
        """``{node UUID: addresses}`` from the caller's own ports on its ``network`` (``device_id`` names the node)."""
        from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import network_model
        from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.neutron import Neutron

        obj = "option network"
        if not self.project_id:
            raise InvalidInput(obj, "needs credentials scoped to the tenant's project")
        try:
            neutron = Neutron(self.conn)
            found = neutron.find_network(network, self.project_id, obj)
            if found is None or found.get("project_id") != self.project_id:
                raise InvalidInput(obj, "network %s does not exist or is not project %s's" % (network, self.project_id))
            ports = neutron.ports(obj, project_id=self.project_id, network_id=found["id"])
        except TenancyError as error:
            raise shorten(error) from None
        self.client.requests += neutron.requests
        by_node = network_model.tenant_ports_by_node(ports, self.project_id)
        return dict(
            (node, [{"type": "InternalIP", "address": a} for a in network_model.port_addresses(port)])
            for node, port in by_node.items()
        )

    def records(self, page_size=DEFAULT_PAGE_SIZE, ports=True):
        """Records of the project's claims that hold a node (the lists read in parallel).

        Without ``ports`` the ports list is not read (records then have no NICs
        and no boot MAC address): Ironic looks each port's node up to answer it.
        """
        node_params = [("associated", "true")]
        if self.project_id:
            node_params.append(("project", self.project_id))
        lists = [_Listing("nodes", node_params, model.IRONIC_NODE_FIELDS, page_size)]
        if ports:
            lists.append(_Listing("ports", [], model.IRONIC_PORT_FIELDS, page_size))
        if not self.project_id:
            lists.append(_Listing("allocations", [], model.IRONIC_ALLOCATION_FIELDS, page_size))
        results = parallel_map(self._list, lists, workers=len(lists))
        nodes, port_list = results[0], results[1] if ports else []
        if self.project_id:
            allocations, unknown = ironic_view.claims_on_nodes(nodes, self.project_id)
            allocations += self._allocations_of(unknown, page_size)
        else:
            allocations = results[-1]
        names = {self.project_id: self.project_name} if self.project_id else {}
        return ironic_view.ironic_records(allocations, nodes, port_list, names)


def fetch_records(
    backend,
    params,
    namespaces=None,
    page_size=DEFAULT_PAGE_SIZE,
    timeout=DEFAULT_TIMEOUT,
    ports=True,
    on_record=None,
    network=None,
):
    """``(records, requests)`` for ``backend`` with the credentials in ``params`` (``ports``: see IronicClaims).

    ``on_record``, when given, is called once with each record: with metal3 as its page arrives (see
    ``KubeClaims.records``), with ironic once the lists are joined.
    """
    if backend == "metal3":
        _check_namespaces(namespaces)
        reader = KubeClaims(params, timeout)
        records = reader.records(namespaces, page_size, on_record)
    elif backend == "ironic":
        reader = IronicClaims(dict(params, api_timeout=params.get("api_timeout") or timeout))
        records = reader.records(page_size, ports)
        if network:
            addresses = reader.network_addresses(network)
            for record in records:
                record["addresses"] = addresses.get(record.get("node_uuid"), [])
        for record in records if on_record is not None else ():
            on_record(record)
    else:
        raise InvalidInput("option backend", "%r is not one of %s" % (backend, ", ".join(model.BACKENDS)))
    return records, reader.requests
