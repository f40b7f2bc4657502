# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""An Ironic claim as data: validation, what to deploy, what to report.  Pure.

A claim (``backend: ironic``) is an allocation owned by the tenant's project
and named like the claim, plus what the tenant deployed on the node the
allocation holds.  This file decides, from the dicts the Ironic API returns,
what the deployment should look like (``instance_info``), whether the node
already carries it, and what the module reports; it never talks to Ironic.

What the collection writes into the node's ``instance_info`` besides
Ironic's own keys (all cleared by Ironic when the node is undeployed):

- ``baremetal_tenancy_drive_digest``: ``sha256:...`` of the config drive
  content (Ironic shows a config drive back as ``******``), so a rerun knows
  whether the host carries the requested user-data, network-data and
  meta-data;
- ``baremetal_tenancy_addresses``: the static addresses of the network-data,
  for the claim's ``addresses``;
- ``baremetal_tenancy_claim``: ``{name, allocation, project}`` of the claim that
  deployed the node (:func:`claim_marker`), so that the tenant's inventory can
  name its hosts from the node list without reading every allocation (which
  Ironic answers one node lookup per allocation). The owner removes it in the
  same patch that ends a lessee's access (``leases.end_access_patch``).

Nothing here reads or returns ``driver_info``: the fields requested from
Ironic (:data:`NODE_FIELDS`) leave it out, and the claim view is built from a
fixed list of keys.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.image import (
    image_problem,
)

# The Ironic API microversion of every request the collection makes (written
# only here): 1.60 allocations owned by a project, 1.65 node lessee.
IRONIC_MICROVERSION = "1.78"
# instance_name (a display name next to instance_info) exists from this
# microversion on; it is asked for only to clear it.
INSTANCE_NAME_MICROVERSION = "1.104"

# Fields requested when reading nodes, allocations and ports: nothing else
# travels (never driver_info, which tenants may not read anyway).
NODE_FIELDS = (
    "uuid",
    "name",
    "provision_state",
    "target_provision_state",
    "power_state",
    "target_power_state",
    "instance_info",
    "instance_uuid",
    "resource_class",
    "traits",
    "maintenance",
    "owner",
    "lessee",
    "properties",
    "extra",
)
ALLOCATION_FIELDS = (
    "uuid",
    "name",
    "state",
    "node_uuid",
    "resource_class",
    "traits",
    "candidate_nodes",
    "owner",
    "last_error",
    "extra",
)
PORT_FIELDS = ("uuid", "address", "node_uuid", "pxe_enabled")

CONFIGDRIVE_KEY = "baremetal_tenancy_drive_digest"
ADDRESSES_KEY = "baremetal_tenancy_addresses"
CLAIM_KEY = "baremetal_tenancy_claim"

# Ironic's provision states, grouped by what a claim makes of them.
DEPLOYED_STATES = ("active",)
DEPLOYING_STATES = ("deploying", "wait call-back", "deploy hold")
FAILED_DEPLOY_STATES = ("deploy failed",)
UNDEPLOYING_STATES = ("deleting", "cleaning", "clean wait", "clean hold")
UNDEPLOYABLE_STATES = (
    "active",
    "deploy failed",
    "wait call-back",
    "error",
    "rescue",
    "rescue failed",
    "rescue wait",
    "service failed",
)

CLEAN_FAILED_STATE = "clean failed"
#: Ironic's failure states. Its state machine gives each the target of the transition that failed (``deploy
#: failed`` -> ``active``, ``clean failed`` -> ``available``, ...) and the API shows that target, so a node in one
#: of them has ``target_provision_state`` set although nothing is under way: the state alone says it stopped.
FAILURE_STATES = (
    "deploy failed",
    CLEAN_FAILED_STATE,
    "inspect failed",
    "adopt failed",
    "rescue failed",
    "unrescue failed",
    "service failed",
)


def cleaning_failed(node: Mapping[str, Any] | None) -> bool:
    """Whether ``node``'s cleaning failed: it is out of the pool until the owner repairs it.

    Whatever ``target_provision_state`` says (see :data:`FAILURE_STATES`): after a failed automated cleaning
    Ironic (39) shows the target of the undeployment (``available``) on the node."""
    return bool(node) and node.get("provision_state") == CLEAN_FAILED_STATE


def in_failure_state(node: Mapping[str, Any] | None) -> bool:
    """Whether ``node`` stopped in one of Ironic's :data:`FAILURE_STATES` (whatever its target says)."""
    return bool(node) and node.get("provision_state") in FAILURE_STATES


_LOGICAL_NAME_RE = re.compile(r"[A-Za-z0-9._~-]+\Z")
_UUID_RE = re.compile(r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}\Z")
_TRAIT_RE = re.compile(r"[A-Z][A-Z0-9_]*\Z")

# ------------------------------------------------------------------ validation


def claim_name_problem(name: Any) -> str | None:
    """Why ``name`` cannot name an Ironic allocation, or ``None``.

    Ironic accepts RFC 3986 unreserved characters, at most 255 of them, and
    an allocation's name must not look like a UUID (it would be read as one).
    """
    if not isinstance(name, str) or not name:
        return "must be a non-empty string"
    if len(name) > 255:
        return "must be at most 255 characters"
    if not _LOGICAL_NAME_RE.match(name):
        return 'may contain only letters, digits, ".", "_", "~" and "-"'
    if _UUID_RE.match(name):
        return "must not look like a UUID"
    return None


def validate_name(name: Any, what: str = "claim") -> str:
    problem = claim_name_problem(name)
    if problem:
        raise InvalidInput("%s %r" % (what, name), "name %s" % problem)
    return name


def validate_traits(traits: Collection[str] | None, obj: str) -> list[str]:
    for trait in traits or ():
        if not isinstance(trait, str) or not _TRAIT_RE.match(trait) or len(trait) > 255:
            raise InvalidInput(
                obj,
                "option traits: %r is not a valid trait name (upper case letters, digits and _, "
                "for example CUSTOM_GPU or HW_CPU_X86_AVX2)" % (trait,),
            )
    return sorted(set(traits or ()))


def _clean_path(path):
    """``path`` made absolute and free of ``.``, ``..`` and repeated slashes, or ``None``."""
    if (
        not isinstance(path, str)
        or not path.startswith("/")
        or "%" in path
        or "\\" in path
        or any(ord(char) < 32 for char in path)
    ):
        return None
    return posixpath.normpath("/" + path.lstrip("/"))


def validate_file_prefixes(prefixes: Iterable[str] | None, obj: str) -> list[str]:
    """Check option ``file_url_allowed_prefixes``; returns the prefixes normalised (or ``[]``)."""
    result = []
    for prefix in prefixes or ():
        clean = _clean_path(prefix)
        if clean is None or clean == "/" or ".." in prefix.split("/"):
            raise InvalidInput(
                obj,
                "file_url_allowed_prefixes entry %r must be an absolute directory path other than "
                "/, without .. or %%" % (prefix,),
            )
        result.append(clean)
    return result


def file_url_problem(url: Any, allowed_prefixes: Sequence[str] | None) -> str | None:
    """Why the ``file://`` URL ``url`` may not be given to Ironic for a tenant, or ``None``.

    A ``file://`` URL names a file on the Ironic conductor (its configuration,
    its credentials): a tenant claim may use one only under a directory the
    owner allows (``allowed_prefixes``, normalised by
    :func:`validate_file_prefixes`), after ``..`` and repeated slashes are
    resolved.  Ironic's own ``[conductor] file_url_allowed_paths`` is the
    boundary the conductor enforces; this check refuses early and clearly.
    """
    if not isinstance(url, str) or url.partition("://")[0].lower() != "file":
        return None
    rest = url.partition("://")[2]
    host, slash, path = rest.partition("/")
    if host not in ("", "localhost"):
        return "names host %r: a file:// URL may only name a local path (file:///...)" % host
    clean = _clean_path(slash + path)
    if clean is None:
        return "must be file:/// followed by a plain absolute path (no %-escapes)"
    if not allowed_prefixes:
        return (
            "names a file on the Ironic conductor: file:// URLs are refused for tenant claims unless the owner "
            "allows a directory with option file_url_allowed_prefixes"
        )
    for prefix in allowed_prefixes:
        if clean.startswith(prefix.rstrip("/") + "/"):
            return None
    return "is not under an allowed prefix (%s): %s" % (", ".join(allowed_prefixes), clean)


def validate_image(image: dict | None, obj: str, file_prefixes: Sequence[str] | None = None) -> dict | None:
    """Check the ``image`` option (:func:`common.image.image_problem`, the rule of
    both backends); returns it normalised (or ``None``).

    ``file_prefixes``: the directories under which ``file://`` URLs (image
    and checksum) are allowed (none: ``file://`` is refused).
    """
    if image is None:
        return None
    problem = image_problem(image, "ironic")
    if problem:
        raise InvalidInput(obj, problem)
    url = image.get("url")
    checksum = image.get("checksum") or None
    for where, value in (("image.url", url), ("image.checksum", checksum)):
        problem = file_url_problem(value, file_prefixes)
        if problem:
            raise InvalidInput(obj, "%s %s %s" % (where, value, problem))
    return {
        "url": url,
        "checksum": checksum,
        "checksum_type": image.get("checksum_type") or "auto",
        "format": image.get("format"),
    }


# ------------------------------------------------------------------ deployment


def image_instance_info(image: dict | None) -> dict:
    """The ``instance_info`` keys that deploy ``image`` (see Ironic's deploy guide).

    ``live-iso`` boots the ISO through the ``ramdisk`` deploy interface
    (``boot_iso``); any other format is written to disk (``image_source``),
    verified with ``image_checksum`` or ``image_os_hash_algo`` /
    ``image_os_hash_value``.
    """
    if image is None:
        return {}
    if image.get("format") == "live-iso":
        info = {"boot_iso": image["url"]}
        return info
    info = {"image_source": image["url"]}
    checksum = image.get("checksum")
    kind = image.get("checksum_type") or "auto"
    if checksum and "://" not in checksum and kind in ("sha256", "sha512"):
        info["image_os_hash_algo"] = kind
        info["image_os_hash_value"] = checksum.split(":", 1)[1] if ":" in checksum else checksum
    elif checksum:
        info["image_checksum"] = checksum
    if image.get("format"):
        info["image_disk_format"] = image["format"]
    return info


def desired_instance_info(image: dict | None, configdrive_digest: str | None, addresses: list[dict] | None) -> dict:
    info = image_instance_info(image)
    if configdrive_digest:
        info[CONFIGDRIVE_KEY] = configdrive_digest
    if addresses:
        info[ADDRESSES_KEY] = addresses
    return info


def claim_marker(name: str, allocation_uuid: str, project_id: str) -> dict:
    """What ``instance_info[CLAIM_KEY]`` holds for the claim ``name`` (see the module docstring)."""
    return {"name": name, "allocation": allocation_uuid, "project": project_id}


# The keys whose difference means another deployment (CLAIM_KEY is written with a deployment but never
# triggers one: a node deployed before it existed keeps its deployment).
MANAGED_KEYS = (
    "boot_iso",
    "image_source",
    "image_checksum",
    "image_os_hash_algo",
    "image_os_hash_value",
    "image_disk_format",
    CONFIGDRIVE_KEY,
    ADDRESSES_KEY,
)


def instance_info_differs(current: dict | None, desired: dict) -> list[str]:
    """Keys of the deployment that differ between the node and the request."""
    current = current or {}
    return sorted(key for key in MANAGED_KEYS if current.get(key) != desired.get(key))


def image_of(instance_info: dict | None) -> dict | None:
    """The claim's ``image`` as the node's ``instance_info`` shows it."""
    info = instance_info or {}
    if info.get("boot_iso"):
        return {"url": info["boot_iso"], "format": "live-iso"}
    if not info.get("image_source"):
        return None
    image = {"url": info["image_source"]}
    if info.get("image_os_hash_value"):
        image["checksum"] = info["image_os_hash_value"]
        image["checksum_type"] = info.get("image_os_hash_algo")
    elif info.get("image_checksum"):
        image["checksum"] = info["image_checksum"]
    if info.get("image_disk_format"):
        image["format"] = info["image_disk_format"]
    return image


def deploy_action(node: dict, desired_info: dict) -> str:
    """What the node needs so that it carries ``desired_info``.

    ``none`` (it does, or a deployment of it is under way), ``deploy`` (from
    ``available``), ``redeploy`` (after a failed deployment), ``rebuild``
    (deployed with something else), or raises :class:`InvalidInput` for a
    node in a state where no deployment can start.
    """
    state = node.get("provision_state")
    target = node.get("target_provision_state")
    differs = instance_info_differs(node.get("instance_info"), desired_info)
    if state in DEPLOYED_STATES and not target:
        return "rebuild" if differs else "none"
    if state in FAILED_DEPLOY_STATES:  # its target stays "active" (FAILURE_STATES): nothing is under way
        return "redeploy"
    if state in DEPLOYING_STATES or target == "active":
        if differs:
            raise InvalidInput(
                "node %s" % node_label(node),
                "is being deployed with another image or config drive; wait until it is active, "
                "then rerun to rebuild it",
            )
        return "none"
    if state == "available" and not target:
        return "deploy"
    raise InvalidInput(
        "node %s" % node_label(node),
        "is in provision state %r%s: a deployment cannot start now"
        % (state, " (moving to %r)" % target if target else ""),
    )


def node_label(node: dict | None) -> str:
    node = node or {}
    return node.get("name") or node.get("uuid") or "?"


def power_word(online: bool) -> str:
    return "power on" if online else "power off"


def power_action(node: dict | None, online: bool | None) -> str | None:
    """The power target the node needs for ``online`` (``None``: nothing)."""
    if online is None or node is None:
        return None
    if node.get("target_power_state"):
        target = node["target_power_state"]
        return None if target == power_word(online) else power_word(online)
    return None if node.get("power_state") == power_word(online) else power_word(online)


REBOOT_ANNOTATION = "host.metal3.io/reboot"
REBOOT_TARGETS = {"hard": "rebooting", "soft": "soft rebooting"}  # Ironic's power targets


def reboot_request(annotations: Mapping[str, Any] | None, obj: str) -> str | None:
    """The Ironic power target that ``annotations`` ask for (``rebooting``,
    ``soft rebooting``) or ``None``, the way host_claim reads them with backend
    metal3: :data:`REBOOT_ANNOTATION` with an empty value, or JSON with
    ``mode`` ``hard``/``soft`` (and a boolean ``force``, which Ironic has no
    use for).  Any other key is refused: with backend ironic nothing else acts.
    """
    target = None
    for key in sorted(annotations or {}):
        value = annotations[key]
        if key != REBOOT_ANNOTATION:
            raise InvalidInput(
                obj,
                "annotation %s does nothing with backend ironic: only %s (a reboot) is "
                "supported; to keep a node powered off use online: false" % (key, REBOOT_ANNOTATION),
            )
        if value is None:
            continue  # removing the annotation: nothing to do on Ironic
        if not isinstance(value, str):
            raise InvalidInput(obj, "annotation %s must be a string (empty, or JSON with mode hard or soft)" % key)
        mode = "hard"
        if value.strip():
            try:
                parsed = json.loads(value)
            except ValueError:
                parsed = None
            if (
                not isinstance(parsed, dict)
                or parsed.get("mode", "hard") not in REBOOT_TARGETS
                or not isinstance(parsed.get("force", False), bool)
                or set(parsed) - set(["mode", "force"])
            ):
                raise InvalidInput(
                    obj,
                    'annotation %s must be empty or JSON like {"mode": "soft", "force": false} '
                    "(mode hard or soft), got %r" % (key, value),
                )
            mode = parsed.get("mode", "hard")
        target = REBOOT_TARGETS[mode]
    return target


# ------------------------------------------------------------------ results


def _condition(ctype, status, reason, message):
    return {"type": ctype, "status": status, "reason": reason, "message": message}


def ready_state(
    allocation: Mapping | None, node: Mapping | None, want_image: bool, online: bool | None
) -> tuple[bool, str, str]:
    """``(ready, reason, message)`` of a claim, from what Ironic shows."""
    if allocation is None:
        return False, "NotClaimed", "the claim does not exist yet"
    if allocation.get("state") == "error":
        return (
            False,
            "AllocationFailed",
            "Ironic could not allocate a node: %s" % (allocation.get("last_error") or "no reason given"),
        )
    if not allocation.get("node_uuid") or node is None:
        return False, "Allocating", "waiting for Ironic to pick a node"
    state = node.get("provision_state")
    target = node.get("target_provision_state")
    if want_image:
        if state in FAILED_DEPLOY_STATES:
            return False, "DeployFailed", "the deployment failed; ask the owner for the reason, or rerun to retry"
        if state not in DEPLOYED_STATES or target:
            return (
                False,
                "Provisioning",
                "the node is in provision state %s%s" % (state, " -> %s" % target if target else ""),
            )
    if online is not None:
        if node.get("target_power_state") or node.get("power_state") != power_word(online):
            return False, "PowerChanging", "waiting for the node to %s" % power_word(online)
    if want_image:
        return (
            True,
            "Provisioned",
            "the node is deployed%s" % (" and powered %s" % ("on" if online else "off") if online is not None else ""),
        )
    return (
        True,
        "Allocated",
        "the node is claimed%s" % (" and powered %s" % ("on" if online else "off") if online is not None else ""),
    )


def diff_view(allocation: dict | None, node: dict | None, config_digest: str | None = None) -> dict:
    """The part of a claim that ``--diff`` shows (what the tenant asked for)."""
    if allocation is None:
        return {}
    info = (node or {}).get("instance_info") or {}
    view = {
        "name": allocation.get("name"),
        "resource_class": allocation.get("resource_class"),
        "traits": sorted(allocation.get("traits") or []),
        "host": node_label(node) if node else None,
        "image": image_of(info),
        "config_drive": info.get(CONFIGDRIVE_KEY) if config_digest is None else config_digest,
    }
    if node is not None and node.get("power_state") in ("power on", "power off"):
        view["online"] = node.get("power_state") == "power on"
    return view


def allocation_mismatch(allocation: dict, resource_class: str | None, traits: Collection[str] | None) -> str | None:
    """Why an existing allocation does not match the request, or ``None``.

    Only what the request sets is compared; an allocation cannot change.
    (Candidate nodes only matter while Ironic picks a node, and Ironic keeps
    them as UUIDs: they are not compared.)
    """
    problems = []
    if resource_class is not None and allocation.get("resource_class") != resource_class:
        problems.append("resource class %s, not %s" % (allocation.get("resource_class"), resource_class))
    if traits is not None and sorted(set(allocation.get("traits") or [])) != sorted(set(traits)):
        problems.append(
            "traits [%s], not [%s]"
            % (", ".join(sorted(allocation.get("traits") or [])), ", ".join(sorted(set(traits))))
        )
    return "; ".join(problems) or None


def candidate_problems(nodes: Sequence[dict], resource_class: str | None, traits: Iterable[str] | None) -> str | None:
    """Why no node the project can see serves the request, or ``None``."""
    if not nodes:
        return "no node owned by or leased to the project has resource class %s" % resource_class
    if traits:
        wanted = set(traits)
        if not any(wanted <= set(n.get("traits") or []) for n in nodes):
            return "no node of resource class %s owned by or leased to the project has all the traits %s" % (
                resource_class,
                ", ".join(sorted(wanted)),
            )
    return None
