# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The ironic side of host_claim, host_claim_info and host_release.

Each entry point takes the running module (a TenancyModule): it reads
``mod.params``, honours ``mod.check_mode``, reports with ``mod.changed()``
and ``mod.set_diff()``, and fills ``mod.result``.

A claim is an allocation owned by the caller's project and named like the
claim.  Ironic picks the node among those the project owns or leases; the
module then deploys the image with a config drive and sets the power.  The
caller's credentials must be scoped to its project.

Checks that can be made before any write are made first (option values,
config drive content, a node with the resource class and traits exists for
the project, the candidate nodes are visible), so that bad input changes
nothing.  An allocation that Ironic cannot fill is deleted again before the
error is reported.

host_claim runs in named phases (:func:`run_host_claim`): validate, resolve
the project, allocate, deploy, power, wait, report.  Every write passes
through :class:`ironic.writes.Writes`, which simulates it in check mode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    BackendError,
    Conflict,
    Forbidden,
    InvalidInput,
    NotFound,
    TenancyError,
    WaitTimeout,
    undo_after,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.params import check_timeout
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic import network_model
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.claim_view import claim_view
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.client import (
    Ironic,
    node_settled,
    node_where,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.configdrive import (
    build_configdrive,
    configdrive_digest,
    network_addresses,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.model import (
    CLAIM_KEY,
    DEPLOYING_STATES,
    FAILED_DEPLOY_STATES,
    UNDEPLOYABLE_STATES,
    UNDEPLOYING_STATES,
    allocation_mismatch,
    candidate_problems,
    claim_marker,
    cleaning_failed,
    deploy_action,
    desired_instance_info,
    diff_view,
    image_of,
    node_label,
    power_action,
    power_word,
    reboot_request,
    validate_file_prefixes,
    validate_image,
    validate_name,
    validate_traits,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.neutron import (
    Neutron,
    claim_ports,
    resolve_claim_networks,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.ironic.writes import Writes

# instance_info keys Ironic writes itself for the allocation (the allocation's
# traits, for deploy templates) and that a deployment keeps.
IRONIC_INSTANCE_KEYS = ("traits",)


def _client(mod):
    return Ironic.from_params(mod.params)


def _obj(name):
    return "claim %s" % name


# ------------------------------------------------------------------ reading


def _read_claim(client, name):
    """``(allocation, node)`` of the claim ``name``; either may be ``None``."""
    allocation = client.get_allocation(name)
    node = None
    if allocation and allocation.get("node_uuid"):
        node = client.get_node(allocation["node_uuid"], missing_ok=True)
    return allocation, node


def _ports(client, node):
    if node is None:
        return []
    return client.list_ports(node=node["uuid"])


#: seconds an allocation may stay ``allocating`` before it counts as stalled.  Ironic fills an allocation in one
#: conductor worker within seconds; when that worker dies (its database went away mid-way: the worker cannot even
#: record the failure), nothing in Ironic resumes the allocation while the conductor itself lives on.
ALLOCATION_STALL = 120.0


def _wait_allocation(client, allocation, timeout, name):
    """Wait until Ironic has processed ``allocation`` (``active`` or ``error``)."""
    return client.poll(
        lambda: client.get_allocation(allocation["uuid"]),
        lambda a: a is None or a.get("state") != "allocating",
        timeout,
        _obj(name),
        describe=lambda a: "the allocation is still %s" % (a or {}).get("state"),
    )


def _settle_allocation(writes, request, allocation, timeout):
    """Wait until Ironic has processed ``allocation``; an allocation still ``allocating`` after
    :data:`ALLOCATION_STALL` seconds is deleted and created again (as many times as ``timeout`` allows).

    Deleting it is safe whatever the stalled worker does next: Ironic records an allocation's node in the
    same transaction as the allocation itself, so a worker that comes back after the delete fails to save
    and leaves no node associated, and one that saved first left an allocation the delete releases under
    the node's lock.  Returns the allocation (``None`` when it disappeared)."""
    attempts, attempt = max(1, math.ceil(timeout / ALLOCATION_STALL)), 0
    while True:
        last = attempt == attempts - 1
        try:
            return _wait_allocation(
                writes.client,
                allocation,
                timeout - ALLOCATION_STALL * attempt if last else ALLOCATION_STALL,
                request.name,
            )
        except WaitTimeout:
            if last:
                raise
            writes.mod.warn(
                "claim %s: Ironic left allocation %s allocating for %d seconds (its conductor stopped working on "
                "it); it was deleted and created again" % (request.name, allocation["uuid"], ALLOCATION_STALL)
            )
            writes.delete_allocation(allocation["uuid"], request.name)
            allocation = writes.create_allocation(
                request.name,
                allocation.get("resource_class") or request.resource_class,
                traits=allocation.get("traits") or request.traits,
                candidate_nodes=allocation.get("candidate_nodes") or request.candidates,
            )
            if writes.check_mode:
                return allocation
        attempt += 1


def _check_candidates(client, project, resource_class, traits, candidates, obj):
    """Before creating an allocation: is there any node it could get?"""
    nodes = client.list_nodes(fields=("uuid", "name", "traits", "resource_class"), resource_class=resource_class)
    problem = candidate_problems(nodes, resource_class, traits)
    if problem:
        raise InvalidInput(obj, "resource class %s: %s (project %s)" % (resource_class, problem, project))
    if candidates:
        known = dict((n["uuid"], n) for n in nodes)
        known.update(dict((n["name"], n) for n in nodes if n.get("name")))
        for ident in candidates:
            if ident in known:
                continue
            found = client.get_node(ident, fields=("uuid", "name", "resource_class"), missing_ok=True)
            if found is None:
                raise NotFound(
                    obj,
                    "option candidate_nodes: node %s does not exist or is neither owned by nor leased to "
                    "project %s" % (ident, project),
                )
            raise InvalidInput(
                obj,
                "option candidate_nodes: node %s has resource class %s, not %s"
                % (ident, found.get("resource_class"), resource_class),
            )


def _create_allocation(writes, project, request):
    """Create the allocation and wait until Ironic filled it; an allocation it
    cannot fill is deleted again.  In check mode: the allocation as created."""
    obj = request.obj
    try:
        allocation = writes.create_allocation(
            request.name, request.resource_class, traits=request.traits, candidate_nodes=request.candidates
        )
    except Conflict as exc:
        if "already exists" in exc.cause:
            raise Conflict(
                obj,
                "the name is already used by an allocation that project %s cannot see; allocation "
                "names are unique in the whole Ironic: choose another claim name" % project,
            ) from exc
        raise
    if writes.check_mode:
        return allocation
    return _filled_allocation(writes, project, request, allocation, max(request.wait_timeout, 30))


def _filled_allocation(writes, project, request, allocation, timeout):
    """``allocation`` once Ironic filled it (:func:`_settle_allocation`); one Ironic could not fill is deleted."""
    obj = request.obj
    allocation = _settle_allocation(writes, request, allocation, timeout)
    if allocation is None:
        raise NotFound(obj, "the allocation disappeared while Ironic processed it")
    if writes.check_mode and allocation.get("state") == "allocating":
        return allocation  # created again, in check mode only
    if allocation.get("state") == "error":
        reason = allocation.get("last_error") or "no reason given"
        writes.delete_allocation(allocation["uuid"], request.name)
        raise Conflict(
            obj,
            "Ironic could not allocate a node of resource class %s to project %s: %s (nothing was "
            "kept)" % (request.resource_class, project, reason),
        )
    return allocation


# ------------------------------------------------------------------ host_claim


@dataclass(frozen=True)
class ClaimRequest:
    """What host_claim was asked for, validated (phase 1)."""

    name: str
    obj: str
    resource_class: str | None
    traits: list | None
    candidates: list | None
    image: dict | None
    drive: str | None
    digest: str | None
    addresses: list
    online: bool | None
    reboot: str | None
    wait_ready: bool
    wait: bool
    wait_timeout: float
    networks: tuple = ()


@dataclass
class ClaimState:
    """The claim as read, then as the phases leave it."""

    allocation: dict | None
    node: dict | None
    deploying: bool = False
    deferred_power: str | None = None
    created: bool = False  # this run created the allocation (undone when a later write fails)
    resolved: list | None = None  # the claim's networks, resolved before any write
    ports_created: list | None = None  # Neutron ports this run created (deleted when a later write fails)
    network_views: list | None = None


def _validate_claim_params(mod) -> ClaimRequest:
    """Phase 1, validate: every check that needs no Ironic, so bad input changes nothing."""
    p = mod.params
    obj = _obj(p["name"])
    validate_name(p["name"])
    check_timeout(p["wait_timeout"])
    traits = validate_traits(p["traits"], obj) if p["traits"] is not None else None
    image = validate_image(p["image"], obj, validate_file_prefixes(p.get("file_url_allowed_prefixes"), obj))
    drive = None
    digest = None
    if image is not None:
        drive, warnings = build_configdrive(p["name"], p["user_data"], p["network_data"], p["meta_data"])
        for warning in warnings:
            mod.warn(warning)
        digest = configdrive_digest(drive)
    elif any(p.get(k) is not None for k in ("user_data", "network_data", "meta_data")):
        # Validate anyway: bad input is reported even when it is not used yet.
        build_configdrive(p["name"], p["user_data"], p["network_data"], p["meta_data"])
        mod.warn("user_data, network_data and meta_data are only used when an image is deployed (option image)")
    if p["resource_class"] is not None and not p["resource_class"].strip():
        raise InvalidInput(obj, "option resource_class must not be empty")
    networks = network_model.validate_claim_networks(p.get("networks"), obj)
    reboot = reboot_request(p.get("annotations"), obj)
    if reboot and p["online"] is False:
        raise InvalidInput(
            obj, "a reboot (annotation host.metal3.io/reboot) powers the node on: it cannot go with online: false"
        )
    return ClaimRequest(
        name=p["name"],
        obj=obj,
        resource_class=p["resource_class"],
        traits=traits,
        candidates=p["candidate_nodes"],
        image=image,
        drive=drive,
        digest=digest,
        addresses=network_addresses(p["network_data"]) if image is not None else [],
        online=p["online"],
        reboot=reboot,
        wait_ready=bool(p["wait"] and p["wait_for"] == "ready"),
        wait=bool(p["wait"]),
        wait_timeout=p["wait_timeout"],
        networks=tuple(networks),
    )


def _image_view(image):
    return dict((k, v) for k, v in image.items() if v is not None) if image else None


def _allocate(writes, project, request, claim):
    """Phase 3, allocate: keep a matching allocation, start again after a
    failed one, or create one (Ironic picks the node)."""
    client, obj = writes.client, request.obj
    allocation = claim.allocation
    if allocation is not None:
        mismatch = allocation_mismatch(allocation, request.resource_class, request.traits)
        if mismatch:
            raise InvalidInput(
                obj, "the claim exists with %s; an allocation cannot change: release the claim first" % mismatch
            )
        if allocation.get("state") == "error":
            # A failed allocation left by an interrupted run: start again.
            writes.delete_allocation(allocation["uuid"], request.name)
            claim.allocation = claim.node = allocation = None
    if allocation is None:
        if not request.resource_class:
            raise InvalidInput(obj, "option resource_class is required to create the claim")
        _check_candidates(client, project, request.resource_class, request.traits, request.candidates, obj)
        claim.allocation = _create_allocation(writes, project, request)
        claim.created = not writes.check_mode
        claim.node = None if writes.check_mode else client.get_node(claim.allocation["node_uuid"])
        return
    if allocation.get("state") == "allocating":
        # Left by a run that ended before Ironic filled it (or stalled in Ironic: created again).
        claim.allocation = _filled_allocation(writes, project, request, allocation, request.wait_timeout)
        if writes.check_mode and claim.allocation.get("state") == "allocating":
            claim.node = None
            return
        if claim.allocation.get("node_uuid"):
            claim.node = client.get_node(claim.allocation["node_uuid"], missing_ok=True)
    if claim.node is None:
        raise NotFound(
            obj,
            "the node of the claim cannot be read with the credentials of project %s "
            "(its lease may have ended)" % project,
        )


def _deploy_image(writes, project, request, claim):
    """Phase 4, deploy: write the image and config drive and start the deployment when the node lacks them."""
    node = claim.node
    if request.image is None:
        return
    desired = desired_instance_info(request.image, request.digest, request.addresses)
    action = deploy_action(node, desired)
    if action != "none":
        desired[CLAIM_KEY] = claim_marker(request.name, (claim.allocation or {}).get("uuid"), project)
        claim.node = _deploy(writes, node, desired, request.drive, action)
    claim.deploying = (
        action != "none"
        or node.get("provision_state") in DEPLOYING_STATES
        or node.get("target_provision_state") == "active"
    )


def _set_power(mod, writes, request, claim):
    """Phase 5, power: set the requested power, or leave it to the wait when a deployment runs."""
    if request.online is None:
        return
    if claim.deploying:
        # Ironic refuses power changes during a deployment (and powers the
        # node on at its end): the wait applies it afterwards.
        mod.changed(request.online is False)
        claim.deferred_power = power_word(request.online)
        return
    target = power_action(claim.node, request.online)
    if target:
        claim.node = writes.set_power_state(claim.node, target)


def _wait(mod, writes, request, claim):
    """Phase 6, wait: until the node is ready (``wait_for: ready``), then the reboot asked for."""
    if not writes.check_mode:
        if request.wait_ready:
            claim.node = _wait_ready(mod, writes, claim.node, request.image, request.online, claim.deferred_power)
        else:
            if claim.deferred_power == "power off":
                mod.warn(
                    "claim %s: the node is being deployed; it is powered off once the deployment is over, "
                    "on a later run (or with wait: true)" % request.name
                )
            claim.node = writes.client.get_node(claim.node["uuid"])
    if request.reboot:
        claim.node = _reboot(mod, writes, claim.node, request, claim.deploying and not request.wait_ready)


def _report(mod, client, project, request, claim, before):
    """Phase 7, report: the diff and the claim record (:func:`claim_view.claim_view`)."""
    allocation, node = claim.allocation, claim.node
    after = diff_view(allocation, node)
    if mod.check_mode:
        # What Ironic shows only once the deployment and power change are over.
        if request.image is not None:
            after["image"] = _image_view(request.image)
            after["config_drive"] = request.digest
        if request.online is not None:
            after["online"] = request.online
    mod.set_diff(before, after)
    want_image = request.image is not None or image_of((node or {}).get("instance_info") or {}) is not None
    mod.result["claim"] = claim_view(
        request.name, project, allocation, node, _ports(client, node), online=request.online, want_image=want_image
    )


def run_host_claim(mod: Any) -> None:
    """host_claim with backend ironic: validate, resolve the project, allocate, deploy, power, wait, report."""
    p = mod.params
    if p["state"] == "absent":
        validate_name(p["name"])
        check_timeout(p["wait_timeout"])
        _release(mod, wait=p["wait"])
        return
    request = _validate_claim_params(mod)
    mod.result["rebooted"] = False
    client = _client(mod)
    project = client.require_project(request.obj)
    writes = Writes(mod, client)
    allocation, node = _read_claim(client, request.name)
    claim = ClaimState(allocation, node)
    before = diff_view(allocation, node)
    _refuse_reboot_with_deployment(request, claim)
    neutron = None
    if request.networks:
        neutron = Neutron(client.conn)
        claim.resolved = resolve_claim_networks(neutron, project, list(request.networks), request.obj)
    _allocate(writes, project, request, claim)
    if claim.node is not None:
        _deploy_and_power(mod, writes, project, request, claim, neutron)
        try:
            _wait(mod, writes, request, claim)
        except BackendError as error:
            if neutron is not None:
                _say_networks_off(neutron, project, request, claim, error)
            raise
    _report(mod, client, project, request, claim, before)
    if neutron is not None:
        mod.result["claim"]["networks"] = _network_views(writes, neutron, project, request, claim)


def _deploys(request, claim):
    """Whether the node of the claim is deployed by this run or is being deployed (read before any write)."""
    node = claim.node
    if node is None:
        return request.image is not None  # a new allocation: its node is deployed with the image
    if node.get("provision_state") in DEPLOYING_STATES or node.get("target_provision_state") == "active":
        return True
    if request.image is None:
        return False
    return deploy_action(node, desired_instance_info(request.image, request.digest, request.addresses)) != "none"


def _refuse_reboot_with_deployment(request, claim):
    """Before any write: a reboot cannot go with a deployment the run does not wait for (Ironic refuses power
    changes while it deploys), so a run asked for both would allocate and deploy, then fail."""
    if request.reboot and not request.wait_ready and _deploys(request, claim):
        raise InvalidInput(
            request.obj,
            "annotation host.metal3.io/reboot: the node is deployed by this run (or is being deployed) and cannot "
            "be rebooted before the deployment is over: add wait: true (with wait_for: ready), or reboot on a "
            "later run",
        )


def _deploy_and_power(mod, writes, project, request, claim, neutron=None):
    """Phases 4 and 5 (the claim's networks attached first); when one of their writes fails, an allocation this run
    created is undone, and the ports it created."""
    try:
        if neutron is not None:
            _attach_networks(writes, neutron, project, request, claim)
        _deploy_image(writes, project, request, claim)
        _set_power(mod, writes, request, claim)
    except Exception as exc:
        if claim.created:
            _undo_claim(writes, request, claim, exc)
        raise


def _undo_claim(writes, request, claim, error):
    """A write after the allocation this run created failed: what the run wrote on the node (``instance_info``,
    ``instance_name``) is cleared and the allocation deleted, so the node goes back to the pool (best effort;
    the error says what is left behind)."""

    def undo():
        for port_id in claim.ports_created or ():
            writes.client.detach_vif(claim.node["uuid"], port_id, node_label(claim.node))
            Neutron(writes.client.conn).delete_port(port_id, request.obj)
        node = writes.client.get_node(claim.node["uuid"], missing_ok=True)
        if node is not None and node.get("provision_state") == "available" and not node.get("target_provision_state"):
            writes.clear_instance(node)
        writes.delete_allocation(claim.allocation["uuid"], request.name)

    what = "allocation %s (node %s)" % (request.name, node_label(claim.node))
    return undo_after(error, what, undo)


def _attach_networks(writes, neutron, project, request, claim):
    """Phase 4a: the caller's port on each network of the claim (made when missing, named after the claim, its
    ``device_id`` the node) attached to the node as a VIF, before the deployment (Ironic binds the VIFs when it
    deploys, and networking-generic-switch moves the node's switch port to the network's VLAN)."""
    node = claim.node
    label = node_label(node)
    if writes.check_mode and not node.get("uuid"):
        return
    vifs = set(writes.client.list_vifs(node["uuid"], label))
    own = {port["id"] for port in claim_ports(neutron, project, request.name, node["uuid"], request.obj)}
    if vifs - own:
        # Ironic binds every VIF of the node when it deploys: another's would put the host on another's network.
        raise Conflict(
            "node %s" % label,
            "carries %d network attachment(s) that are not this claim's (left by an earlier lease?): it is not "
            "deployed onto network %s until the owner detaches them"
            % (len(vifs - own), ", ".join(item["network"].get("name") or "?" for item in claim.resolved or ())),
        )
    claim.ports_created = []
    for item in claim.resolved or ():
        network = item["network"]
        obj = "%s, network %s" % (request.obj, network.get("name"))
        name = network_model.claim_port_name(request.name, network.get("name"))
        found = neutron.ports(obj, project_id=project, network_id=network["id"], name=name)
        port = found[0] if found else None
        if port is not None and item["fixed_ip"] and item["fixed_ip"] not in network_model.port_addresses(port):
            raise InvalidInput(
                obj,
                "the claim's port has address %s, not %s; an address cannot change: release the claim first"
                % (", ".join(network_model.port_addresses(port)) or "none", item["fixed_ip"]),
            )
        if port is not None and port.get("device_id") != node["uuid"]:
            if writes.change("port %s names node %s" % (name, label)):
                port = neutron.update_port(port["id"], {"device_id": node["uuid"]}, obj)
        if port is None:
            body = {"network_id": network["id"], "name": name, "device_id": node["uuid"]}
            if item["fixed_ip"]:
                body["fixed_ips"] = [{"ip_address": item["fixed_ip"]}]
            if not writes.change("create port %s" % name):
                continue
            port = neutron.create_port(body, obj)
            claim.ports_created.append(port["id"])
        if port["id"] not in vifs and writes.change("attach port %s to node %s" % (name, label)):
            writes.client.attach_vif(node["uuid"], port["id"], label)


def _say_networks_off(neutron, project, request, claim, error):
    """A deployment with networks failed: its error also names the claim's networks the host is not on (Ironic
    fails it when networking-generic-switch cannot move the switch port, and shows why to the owner only)."""
    try:
        ports = claim_ports(neutron, project, request.name, (claim.node or {}).get("uuid"), request.obj)
    except TenancyError as exc:  # Neutron itself may be the trouble
        names = ", ".join(item["network"].get("name") or "?" for item in claim.resolved or ())
        error.cause = "%s; whether the host is on network %s is not known: %s" % (error.cause, names, exc.cause)
        return
    off = network_model.networks_off(claim.resolved, ports)
    if off:
        error.cause = "%s; %s" % (error.cause, off)


def _network_views(writes, neutron, project, request, claim):
    """The claim's ``networks`` result: each network and the host's addresses on it (no port binding)."""
    node = claim.node or {}
    ports = {}
    if node.get("uuid"):
        for port in claim_ports(neutron, project, request.name, node["uuid"], request.obj):
            ports[port.get("network_id")] = port
    views = []
    for item in claim.resolved or ():
        network = item["network"]
        port = ports.get(network["id"])
        if port is None and writes.check_mode and item["fixed_ip"]:
            port = {"fixed_ips": [{"ip_address": item["fixed_ip"]}]}
        views.append(network_model.claim_network_view(network, port))
    return views


def _detach_networks(writes, project, name, node):
    """Before a claimed node is undeployed or given back: every VIF is detached from it (Ironic unbinds the port,
    networking-generic-switch moves the switch port out of the tenant's VLAN) and the ports ``host_claim`` made for
    the claim are deleted. A node whose VIFs the caller may not read has none to detach for it."""
    label = node_label(node)
    try:
        vifs = writes.client.list_vifs(node["uuid"], label)
    except (Forbidden, NotFound):
        return
    if not vifs:
        return
    for vif in vifs:
        if writes.change("detach VIF %s from node %s" % (vif, label)):
            writes.client.detach_vif(node["uuid"], vif, label)
    neutron = Neutron(writes.client.conn)
    for port in claim_ports(neutron, project, name, node["uuid"], _obj(name)):
        if writes.change("delete port %s" % port.get("name")):
            neutron.delete_port(port["id"], _obj(name))


def _deploy(writes, node, desired, drive, action):
    """Write the deployment and start it.  ``instance_info`` is made exactly
    what this claim asks for (plus the keys Ironic itself keeps there): any
    other key - left by an earlier holder of the node who deleted its
    allocation without undeploying, since a lessee may write any key - would
    otherwise steer this deployment (``kernel``, ``ramdisk``, ``boot_iso``...)."""
    current = node.get("instance_info") or {}
    ops = []
    for key, value in sorted(desired.items()):
        ops.append({"op": "add", "path": "/instance_info/%s" % key, "value": value})
    for key in sorted(current):
        if key not in desired and key not in IRONIC_INSTANCE_KEYS:
            ops.append({"op": "remove", "path": "/instance_info/%s" % key})
    target = {"deploy": "active", "redeploy": "active", "rebuild": "rebuild"}[action]
    return writes.deploy(node, ops, target, drive, desired)


def _wait_ready(mod, writes, node, image, online, deferred_power):
    """Wait until the node is deployed (with an image) and its power follows
    ``online``; apply a power change that had to wait for the deployment."""
    client = writes.client
    timeout = mod.params["wait_timeout"]
    label = node_label(node)
    uuid = node["uuid"]
    obj = "node %s" % label

    def fetch():
        return client.get_node(uuid)

    if image is not None:
        node = client.poll(
            fetch,
            lambda n: node_settled(n, provision_state="active"),
            timeout,
            obj,
            failed=_deploy_failed,
            describe=node_where,
        )
    if online is not None:
        if deferred_power and node.get("power_state") != deferred_power and not node.get("target_power_state"):
            writes.set_power_state(node, deferred_power)
        node = client.poll(
            fetch, lambda n: node_settled(n, power_state=power_word(online)), timeout, obj, describe=node_where
        )
    return node


def _reboot(mod, writes, node, request, deploying):
    """Reboot the claimed node once (Ironic's ``rebooting`` / ``soft rebooting``
    power target); with ``wait``, until it is powered on again."""
    client = writes.client
    label = node_label(node)
    if deploying or (not writes.check_mode and (node.get("target_provision_state") or node.get("target_power_state"))):
        raise Conflict(
            "node %s" % label,
            "cannot be rebooted while %s; rerun once it is done (or with wait: true)" % node_where(node),
        )
    mod.result["rebooted"] = True
    writes.set_power_state(node, request.reboot)
    if writes.check_mode:
        return node
    if request.wait:
        return client.poll(
            lambda: client.get_node(node["uuid"]),
            lambda n: node_settled(n, power_state="power on"),
            request.wait_timeout,
            "node %s" % label,
            describe=node_where,
        )
    return client.get_node(node["uuid"])


def _deploy_failed(node):
    if node is None:
        return "the node disappeared"
    if node.get("provision_state") in FAILED_DEPLOY_STATES:  # whatever its target says (model.FAILURE_STATES)
        return "the deployment failed (Ironic shows the reason to the owner only; rerun to retry)"
    return None


def _tidy_undeployed(mod, writes, node):
    """A claimed node that was never deployed goes back powered off and
    without anything the tenant could write on it: all of ``instance_info``
    (not only the keys this collection sets: a tenant may write any key, and
    the next tenant or the owner must not read it) and ``instance_name``.
    Best effort (the allocation is removed either way; the end of the lease
    clears them too), with a warning when Ironic refuses."""
    label = node_label(node)
    if node.get("provision_state") == "available" and not node.get("target_provision_state"):
        try:
            writes.clear_instance(node)
        except (Forbidden, Conflict) as exc:
            mod.warn(
                "node %s: what the claim wrote on the node could not be cleared (%s); the owner clears it when "
                "the lease ends" % (label, exc.cause)
            )
    if (
        node.get("power_state") == "power on"
        and node.get("provision_state") == "available"
        and not node.get("target_power_state")
    ):
        writes.set_power_state(node, "power off")


# ------------------------------------------------------------------ host_claim_info


def claim_info(mod: Any) -> list[dict]:
    p = mod.params
    client = _client(mod)
    project = client.require_project("host claims")
    if p.get("name"):
        validate_name(p["name"])
        allocation, node = _read_claim(client, p["name"])
        if allocation is None:
            return []
        return [claim_view(p["name"], project, allocation, node, _ports(client, node))]
    allocations = client.list_allocations()
    nodes = dict((n["uuid"], n) for n in client.list_nodes()) if allocations else {}
    ports = {}
    if allocations:
        for port in client.list_ports():
            ports.setdefault(port.get("node_uuid"), []).append(port)
    claims = []
    for allocation in sorted(allocations, key=lambda a: (a.get("name") or "", a.get("uuid"))):
        node = nodes.get(allocation.get("node_uuid"))
        claims.append(
            claim_view(
                allocation.get("name") or allocation["uuid"],
                project,
                allocation,
                node,
                ports.get(allocation.get("node_uuid"), []),
            )
        )
    return claims


# ------------------------------------------------------------------ host_release


def run_host_release(mod: Any) -> None:
    p = mod.params
    validate_name(p["name"])
    check_timeout(p["wait_timeout"])
    _release(mod, wait=p["wait"])


def _release(mod, wait):
    p = mod.params
    name = p["name"]
    obj = _obj(name)
    client = _client(mod)
    project = client.require_project(obj)
    allocation, node = _read_claim(client, name)
    mod.result["released"] = allocation is not None
    mod.result["host"] = node_label(node) if node is not None else None
    if allocation is None:
        mod.set_diff(diff_view(None, None), {})
        return
    mod.result["claim"] = claim_view(name, project, allocation, node, _ports(client, node))
    mod.set_diff(diff_view(allocation, node), {})
    mod.changed()  # releasing an existing claim is a change, even when Ironic is already undeploying it
    writes = Writes(mod, client)
    timeout = p["wait_timeout"]
    if (
        not writes.check_mode
        and node is not None
        and (node.get("provision_state") in DEPLOYING_STATES or node.get("target_provision_state") == "active")
        and node.get("provision_state") not in FAILED_DEPLOY_STATES  # stopped, its target notwithstanding
    ):
        # A deployment cannot be interrupted: let it finish, then undeploy.
        node = client.poll(
            lambda: client.get_node(node["uuid"]),
            lambda n: not n.get("target_provision_state") or n.get("provision_state") == "wait call-back",
            max(timeout, 60),
            "node %s" % node_label(node),
            describe=node_where,
        )
    if node is not None:
        _detach_networks(writes, project, name, node)
    if node is not None and node.get("provision_state") in UNDEPLOYABLE_STATES:
        # Undeploying (cleaning) also removes the allocation.
        writes.undeploy(node)
    elif node is not None and (
        node.get("provision_state") in UNDEPLOYING_STATES or node.get("target_provision_state") == "available"
    ):
        pass  # already on its way back
    else:
        if node is not None:
            _tidy_undeployed(mod, writes, node)
        writes.delete_allocation(allocation["uuid"], name)
    if not wait or writes.check_mode:
        return
    client.poll(
        lambda: client.get_allocation(allocation["uuid"]),
        lambda a: a is None,
        timeout,
        obj,
        describe=lambda a: "the allocation is still there (%s)" % (a or {}).get("state"),
    )
    if node is not None:

        def fetch():
            return client.get_node(node["uuid"], missing_ok=True)

        def back(n):
            # Gone from view (the lease ended meanwhile) counts as returned.
            return n is None or (node_settled(n, provision_state="available") and not n.get("target_power_state"))

        def failed(n):
            if cleaning_failed(n):
                return "cleaning failed: the owner must repair the node"
            return None

        client.poll(fetch, back, timeout, "node %s" % node_label(node), failed=failed, describe=node_where)
