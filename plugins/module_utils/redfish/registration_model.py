# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""What host_register wants a host to look like on each backend.  Pure.

From the facts of a Redfish system (:func:`client.system_facts`) and its
classification (:mod:`classify`), build:

* metal3: a ``BareMetalHost`` and its BMC credentials ``Secret``, and the
  JSON merge patch that brings an existing BMH to the wanted state;
* ironic: the fields of a node with the ``redfish`` hardware type, and the
  JSON patch (RFC 6902) for an existing node, the traits and ports to set.

Ownership of what the classification writes is tracked on the host, so
that labels and traits a rule no longer gives are removed on the next run
and nobody else's labels or traits are touched: annotation
:data:`MANAGED_LABELS_ANNOTATION` on the BMH, ``extra[MANAGED_TRAITS_KEY]``
on the node.  A host is matched by its system UUID (annotation
:data:`SYSTEM_UUID_ANNOTATION`; node ``uuid`` or ``extra.system_uuid``).
"""

import base64
import json
import re

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.selectors import dns1123_subdomain_problem

BMH_API_VERSION = "metal3.io/v1alpha1"
DOMAIN = "baremetal.tenancy"
SYSTEM_UUID_ANNOTATION = DOMAIN + "/system-uuid"
MANAGED_LABELS_ANNOTATION = DOMAIN + "/classified-labels"
MANAGED_TRAITS_KEY = "bmt_classified_traits"
SYSTEM_UUID_KEY = "system_uuid"
SECRET_LABEL = "environment.metal3.io"
SECRET_SUFFIX = "-bmc-secret"
DEFAULT_RESOURCE_CLASS = "baremetal"
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
IRONIC_NAME_RE = re.compile(r"^[A-Za-z0-9._~-]{1,255}$")
HIDDEN = "<hidden>"
DEFAULT_NAME_PREFIX = "host-"


def normal_uuid(value):
    text = (value or "").strip().lower()
    return text if UUID_RE.match(text) else None


def host_name(given, facts, backend):
    """The host's name: the one given, else ``host-<system UUID>`` (Ironic refuses names that look like UUIDs)."""
    uuid = normal_uuid(facts.get("uuid"))
    if not given and not uuid:
        raise InvalidInput("system", "reports no valid UUID: give the host a name")
    name = given or DEFAULT_NAME_PREFIX + uuid
    if backend == "metal3":
        problem = dns1123_subdomain_problem(name)
        if problem:
            raise InvalidInput("host name %r" % name, problem)
    elif not IRONIC_NAME_RE.match(name):
        raise InvalidInput("host name %r" % name, "must be 1-255 letters, digits, '.', '_', '~' or '-'")
    return name


def boot_mac(facts, override=None):
    if override:
        mac = override.strip().lower().replace("-", ":")
        if not re.match(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$", mac):
            raise InvalidInput("boot_mac_address %r" % override, "must be a MAC address")
        return mac
    nics = facts.get("nics") or []
    return nics[0]["mac"] if nics else None


def bmh_boot_mode(redfish_mode):
    """BMH ``spec.bootMode`` for a Redfish ``BootSourceOverrideMode``."""
    if redfish_mode == "UEFI":
        return "UEFI"
    if redfish_mode == "Legacy":
        return "legacy"
    return None


def _tracked(annotations, key):
    try:
        value = json.loads((annotations or {}).get(key) or "[]")
    except ValueError:
        return []
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def secret_name(host):
    return host + SECRET_SUFFIX


# ------------------------------------------------------------------ metal3


def desired_bmh(
    name,
    namespace,
    facts,
    labels,
    bmc_address,
    secret,
    validate_certs=True,
    boot_mac_address=None,
    host_claim_namespaces=None,
):
    """The whole BareMetalHost for a new host."""
    spec = {
        "online": False,
        "bmc": {
            "address": bmc_address,
            "credentialsName": secret,
            "disableCertificateVerification": not validate_certs,
        },
    }
    mac = boot_mac(facts, boot_mac_address)
    if mac:
        spec["bootMACAddress"] = mac
    mode = bmh_boot_mode(facts.get("boot_mode"))
    if mode:
        spec["bootMode"] = mode
    if host_claim_namespaces is not None:
        spec["hostClaimNamespaces"] = _claim_namespaces(host_claim_namespaces)
    return {
        "apiVersion": BMH_API_VERSION,
        "kind": "BareMetalHost",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": dict(labels),
            "annotations": {
                SYSTEM_UUID_ANNOTATION: normal_uuid(facts.get("uuid")),
                MANAGED_LABELS_ANNOTATION: json.dumps(sorted(labels)),
            },
        },
        "spec": spec,
    }


def _claim_namespaces(value):
    out = {}
    if value.get("matches") is not None:
        out["matches"] = value["matches"]
    if value.get("withLabel") is not None:
        out["withLabel"] = list(value["withLabel"])
    return out


def bmh_patch(current, desired, manage_claim_namespaces):
    """JSON merge patch from ``current`` BMH to ``desired`` (see :func:`desired_bmh`); ``{}`` if equal.

    Only what host_register owns is compared: the classified labels (others
    are kept), the two annotations, ``bmc``, ``bootMACAddress``,
    ``bootMode`` and, when given, ``hostClaimNamespaces``.  ``online`` is
    set on creation only.
    """
    patch = {}
    meta = current.get("metadata") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    want_labels = desired["metadata"]["labels"]
    label_patch = {}
    for key in _tracked(annotations, MANAGED_LABELS_ANNOTATION):
        if key not in want_labels and key in labels:
            label_patch[key] = None
    for key, value in want_labels.items():
        if labels.get(key) != value:
            label_patch[key] = value
    annotation_patch = {}
    for key, value in desired["metadata"]["annotations"].items():
        if key == MANAGED_LABELS_ANNOTATION:
            if sorted(_tracked(annotations, key)) == sorted(want_labels) and key in annotations:
                continue
        if annotations.get(key) != value:
            annotation_patch[key] = value
    if label_patch:
        patch.setdefault("metadata", {})["labels"] = label_patch
    if annotation_patch:
        patch.setdefault("metadata", {})["annotations"] = annotation_patch
    spec = current.get("spec") or {}
    want = desired["spec"]
    spec_patch = {}
    bmc = spec.get("bmc") or {}
    bmc_patch = dict(
        (k, v)
        for k, v in want["bmc"].items()
        if bmc.get(k, False if k == "disableCertificateVerification" else None) != v
    )
    if bmc_patch:
        spec_patch["bmc"] = bmc_patch
    for key in ("bootMACAddress", "bootMode"):
        if key in want and spec.get(key) != want[key]:
            spec_patch[key] = want[key]
    if manage_claim_namespaces and "hostClaimNamespaces" in want:
        current_ns = spec.get("hostClaimNamespaces") or {}
        wanted_ns = want["hostClaimNamespaces"]
        if current_ns != wanted_ns:
            ns_patch = dict(wanted_ns)
            for key in current_ns:
                if key not in wanted_ns:
                    ns_patch[key] = None
            spec_patch["hostClaimNamespaces"] = ns_patch
    if spec_patch:
        patch["spec"] = spec_patch
    return patch


def bmh_view(bmh):
    """What the diff shows of a BMH (no Secret contents)."""
    if not bmh:
        return {}
    meta = bmh.get("metadata") or {}
    spec = bmh.get("spec") or {}
    return {
        "name": meta.get("name"),
        "labels": dict(meta.get("labels") or {}),
        "bootMACAddress": spec.get("bootMACAddress"),
        "bootMode": spec.get("bootMode"),
        "bmc": {
            "credentialsName": (spec.get("bmc") or {}).get("credentialsName"),
            "address": HIDDEN if (spec.get("bmc") or {}).get("address") else None,
        },
        "hostClaimNamespaces": spec.get("hostClaimNamespaces"),
    }


def desired_secret(name, namespace, username, password):
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": name, "namespace": namespace, "labels": {SECRET_LABEL: "baremetal"}},
        "data": {"username": _b64(username), "password": _b64(password)},
    }


def _b64(text):
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def secret_differs(current, username, password):
    """Whether a Secret's data differ from the credentials (compared decoded, never shown)."""
    data = (current or {}).get("data") or {}
    try:
        have_user = base64.b64decode(data.get("username") or "").decode("utf-8")
        have_pass = base64.b64decode(data.get("password") or "").decode("utf-8")
    except (ValueError, TypeError):
        return True
    return have_user != username or have_pass != password


# ------------------------------------------------------------------ ironic


def node_properties(facts):
    props = {}
    if facts.get("cpus"):
        props["cpus"] = int(facts["cpus"])
    if facts.get("memory_gib"):
        props["memory_mb"] = round(float(facts["memory_gib"]) * 1024)
    if facts.get("cpu_arch"):
        props["cpu_arch"] = facts["cpu_arch"]
    if facts.get("boot_mode") in ("UEFI", "Legacy"):
        props["capabilities"] = "boot_mode:%s" % ("uefi" if facts["boot_mode"] == "UEFI" else "bios")
    return props


def driver_info(base_url, system_path, username, password, validate_certs=True):
    return {
        "redfish_address": base_url,
        "redfish_system_id": system_path,
        "redfish_username": username,
        "redfish_password": password,
        "redfish_verify_ca": bool(validate_certs),
    }


def desired_node(
    name, facts, classification, info, owner=None, default_resource_class=DEFAULT_RESOURCE_CLASS, interfaces=None
):
    """The fields of a new node (``uuid`` = the system UUID) and its traits and port MACs."""
    fields = {
        "uuid": normal_uuid(facts.get("uuid")),
        "name": name,
        "driver": "redfish",
        "driver_info": dict(info),
        "resource_class": classification.resource_class or default_resource_class,
        "properties": node_properties(facts),
        "extra": {SYSTEM_UUID_KEY: normal_uuid(facts.get("uuid")), MANAGED_TRAITS_KEY: sorted(classification.traits)},
    }
    if owner:
        fields["owner"] = owner
    for key, value in (interfaces or {}).items():
        fields[key] = value
    return fields


def node_patch(current, desired, update_password=False):
    """RFC 6902 operations from ``current`` (a dict of node fields) to ``desired``.

    ``driver_info`` is compared key by key; the password (masked by Ironic
    on reads) only when ``update_password``.  ``uuid`` and ``driver`` are
    never patched; a node of another driver is refused by the caller.
    """
    ops = []

    def put(path, have, want):
        if have != want:
            ops.append({"op": "add" if have is None else "replace", "path": path, "value": want})

    put("/name", current.get("name"), desired["name"])
    have_info = current.get("driver_info") or {}
    for key, value in desired["driver_info"].items():
        if key == "redfish_password" and not update_password:
            if key not in have_info:
                ops.append({"op": "add", "path": "/driver_info/%s" % key, "value": value})
            continue
        put("/driver_info/%s" % key, have_info.get(key), value)
    put("/resource_class", current.get("resource_class"), desired["resource_class"])
    if "owner" in desired:
        put("/owner", current.get("owner"), desired["owner"])
    have_props = current.get("properties") or {}
    for key, value in desired["properties"].items():
        put("/properties/%s" % key, have_props.get(key), value)
    have_extra = current.get("extra") or {}
    for key, value in desired["extra"].items():
        put("/extra/%s" % key, have_extra.get(key), value)
    for key, value in desired.items():
        if key.endswith("_interface"):
            put("/%s" % key, current.get(key), value)
    return ops


def node_traits(current_traits, previously_managed, classified):
    """The node's traits after classification: others' traits kept, ours replaced."""
    keep = [t for t in (current_traits or []) if t not in (previously_managed or [])]
    out = list(keep)
    for trait in classified:
        if trait not in out:
            out.append(trait)
    return sorted(out)


def missing_ports(facts, existing_macs):
    have = set(m.lower() for m in existing_macs or [])
    return [nic["mac"] for nic in facts.get("nics") or [] if nic["mac"] not in have]


def node_view(fields, traits=None, ports=None):
    """What the diff shows of a node (no password, no BMC address)."""
    if not fields:
        return {}
    info = fields.get("driver_info") or {}
    return {
        "name": fields.get("name"),
        "resource_class": fields.get("resource_class"),
        "owner": fields.get("owner"),
        "properties": dict(fields.get("properties") or {}),
        "traits": sorted(traits or []),
        "ports": sorted(ports or []),
        "driver_info": {
            "redfish_username": info.get("redfish_username"),
            "redfish_address": HIDDEN if info.get("redfish_address") else None,
            "redfish_password": HIDDEN if info.get("redfish_password") else None,
        },
        "provision_state": fields.get("provision_state"),
    }


def provision_steps(state):
    """Ironic actions that take a node from ``state`` to ``available``.

    Returns a list of (action, state reached) or ``None`` when the node is in
    a state host_register leaves alone (deployed, cleaning, failed...).
    """
    if state == "enroll":
        return [("manage", "manageable"), ("provide", "available")]
    if state == "manageable":
        return [("provide", "available")]
    if state == "available":
        return []
    return None
