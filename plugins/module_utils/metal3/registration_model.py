# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""What host_register writes on Metal3: the BareMetalHost and its BMC credential Secret, as pure functions of the BMC facts (no I/O).

The sharing policy (option ``host_claim_namespaces``) is the annotation
``baremetal.tenancy/host-claim-namespaces`` (see :mod:`sharing_policy`); the
patch that writes it also removes a leftover ``spec.hostClaimNamespaces``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import combine_patches
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share.sharing_policy import (
    ANNOTATION,
    encode_policy,
    parse_annotation,
    sharing_patch,
    sharing_view,
    validate_policy,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish.registration_model import (
    DOMAIN,
    HIDDEN,
    SYSTEM_UUID_ANNOTATION,
    boot_mac,
    normal_uuid,
)

BMH_API_VERSION = "metal3.io/v1alpha1"

MANAGED_LABELS_ANNOTATION = DOMAIN + "/classified-labels"

SECRET_LABEL = "environment.metal3.io"

SECRET_SUFFIX = "-bmc-secret"

#: baremetal-operator takes this annotation into ``status.hardware`` when inspection is disabled, then removes it
HARDWARE_DETAILS_ANNOTATION = "inspect.metal3.io/hardwaredetails"

#: option ``inspection`` -> ``spec.inspectionMode``; ``redfish`` also writes what Redfish reported at creation
INSPECTION_MODES = {"agent": "agent", "redfish": "disabled"}


def cleaning_mode(automated_cleaning: bool | None) -> str | None:
    """``spec.automatedCleaningMode`` of option ``automated_cleaning`` (``None``: not managed)."""
    if automated_cleaning is None:
        return None
    return "metadata" if automated_cleaning else "disabled"


def hardware_details(facts: Mapping[str, Any]) -> dict:
    """BareMetalHost ``HardwareDetails`` (``status.hardware``) of what the BMC reported over Redfish,
    for the annotation that stands in for inspection (only the fields Redfish gave)."""
    vendor = dict(
        (key, facts.get(fact))
        for key, fact in (("manufacturer", "manufacturer"), ("productName", "model"), ("serialNumber", "serial_number"))
        if facts.get(fact)
    )
    cpu = dict(
        (key, facts.get(fact))
        for key, fact in (("arch", "cpu_arch"), ("model", "cpu_model"), ("count", "cpus"))
        if facts.get(fact)
    )
    details: dict = {}
    if vendor:
        details["systemVendor"] = vendor
    if cpu:
        details["cpu"] = cpu
    if facts.get("memory_gib"):
        details["ramMebibytes"] = round(float(facts["memory_gib"]) * 1024)
    nics = [
        dict((k, v) for k, v in (("name", nic.get("name")), ("mac", nic["mac"])) if v)
        for nic in facts.get("nics") or []
    ]
    if nics:
        details["nics"] = nics
    return details


def bmh_boot_mode(redfish_mode: str | None) -> str | None:
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


def secret_name(host: str) -> str:
    return host + SECRET_SUFFIX


def desired_bmh(
    name: str,
    namespace: str,
    facts: dict,
    labels: Mapping[str, str],
    bmc_address: str,
    secret: str,
    validate_certs: bool = True,
    boot_mac_address: str | None = None,
    host_claim_namespaces: dict | None = None,
    inspection: str | None = None,
    automated_cleaning: bool | None = None,
) -> dict:
    """The whole BareMetalHost for a new host.

    ``inspection`` (``None``: baremetal-operator's default) sets ``spec.inspectionMode``;
    ``redfish`` disables the agent's inspection and hands the operator the Redfish facts
    in the hardware-details annotation instead (new hosts only: the operator consumes it).
    ``automated_cleaning`` sets ``spec.automatedCleaningMode`` (``None``: not managed).
    """
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
    annotations = {
        SYSTEM_UUID_ANNOTATION: normal_uuid(facts.get("uuid")),
        MANAGED_LABELS_ANNOTATION: json.dumps(sorted(labels)),
    }
    if inspection is not None:
        spec["inspectionMode"] = INSPECTION_MODES[inspection]
        if inspection == "redfish":
            annotations[HARDWARE_DETAILS_ANNOTATION] = json.dumps(hardware_details(facts), sort_keys=True)
    if automated_cleaning is not None:
        spec["automatedCleaningMode"] = cleaning_mode(automated_cleaning)
    policy = claim_namespaces_policy(host_claim_namespaces)
    if policy is not None:
        annotations[ANNOTATION] = encode_policy(policy)
    return {
        "apiVersion": BMH_API_VERSION,
        "kind": "BareMetalHost",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": dict(labels),
            "annotations": annotations,
        },
        "spec": spec,
    }


def claim_namespaces_policy(value: Mapping[str, Any] | None) -> dict | None:
    """The sharing policy of option ``host_claim_namespaces``: its set members, ``None`` when it sets none."""
    out = {}
    if (value or {}).get("matches"):
        out["matches"] = value["matches"]
    if (value or {}).get("withLabel"):
        out["withLabel"] = list(value["withLabel"])
    return out or None


def claim_namespaces_problems(value: Mapping[str, Any] | None) -> list[str]:
    """What is wrong with option ``host_claim_namespaces`` (``[]``: nothing); checked before any BMC is read."""
    return validate_policy(claim_namespaces_policy(value))


def bmh_patch(current: dict, desired: dict, manage_claim_namespaces: bool) -> dict:
    """JSON merge patch from ``current`` BMH to ``desired`` (see :func:`desired_bmh`); ``{}`` if equal.

    Only what host_register owns is compared: the classified labels (others
    are kept), the two annotations, ``bmc``, ``bootMACAddress``,
    ``bootMode``, ``inspectionMode`` and ``automatedCleaningMode`` (when
    given), and, when ``manage_claim_namespaces``, the sharing
    annotation (with a leftover ``spec.hostClaimNamespaces`` removed, see
    ``sharing_policy.sharing_patch``).  ``online`` and the hardware-details annotation are set on creation only.
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
        if key == ANNOTATION:
            continue  # sharing: below
        if key == HARDWARE_DETAILS_ANNOTATION:
            continue  # new hosts only: the operator removes it once it took the details
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
        if not _same_bmc_value(k, bmc.get(k, False if k == "disableCertificateVerification" else None), v)
    )
    if bmc_patch:
        spec_patch["bmc"] = bmc_patch
    for key in ("bootMACAddress", "bootMode", "inspectionMode", "automatedCleaningMode"):
        if key in want and spec.get(key) != want[key]:
            spec_patch[key] = want[key]
    if spec_patch:
        patch["spec"] = spec_patch
    if manage_claim_namespaces:
        wanted = parse_annotation(desired["metadata"]["annotations"].get(ANNOTATION))[0]
        patch = combine_patches(patch, sharing_patch(current, wanted))
    return patch


def _canonical_address(address: str) -> str:
    """``address`` as baremetal-operator reads it: the scheme's case and a ``+https`` (the default) do not count."""
    if "://" not in address:
        return address
    scheme, rest = address.split("://", 1)
    scheme = scheme.lower()
    if scheme.endswith("+https"):
        scheme = scheme[: -len("+https")]
    return scheme + "://" + rest


def _same_bmc_value(key: str, current: Any, wanted: Any) -> bool:
    """A hand-made ``redfish-virtualmedia+https://`` host is not patched to the ``redfish-virtualmedia://`` written
    for the same BMC (the operator's webhook refuses address changes once a host is registered)."""
    if key == "address" and isinstance(current, str) and isinstance(wanted, str):
        return _canonical_address(current) == _canonical_address(wanted)
    return current == wanted


def address_scheme(address: Any) -> str | None:
    """The scheme of a BMC address (``redfish-virtualmedia+http``), lower case; None without one."""
    if not isinstance(address, str) or "://" not in address:
        return None
    scheme = address.strip().split("://", 1)[0].lower()
    # Only a URL scheme's characters: never a piece of the address itself.
    if not scheme or not all(c.isalnum() or c in "+-." for c in scheme):
        return None
    return scheme


def bmh_view(bmh: dict | None) -> dict:
    """What the diff shows of a BMH (no Secret contents)."""
    if not bmh:
        return {}
    meta = bmh.get("metadata") or {}
    spec = bmh.get("spec") or {}
    address = (spec.get("bmc") or {}).get("address")
    return {
        "name": meta.get("name"),
        "labels": dict(meta.get("labels") or {}),
        "bootMACAddress": spec.get("bootMACAddress"),
        "bootMode": spec.get("bootMode"),
        "inspectionMode": spec.get("inspectionMode"),
        "automatedCleaningMode": spec.get("automatedCleaningMode"),
        "bmc": {
            "credentialsName": (spec.get("bmc") or {}).get("credentialsName"),
            "address": HIDDEN if address else None,
            # The driver and transport (redfish-virtualmedia+http), so a change of driver shows in the diff.
            "scheme": address_scheme(address),
        },
        **sharing_view(bmh),
    }


def desired_secret(name: str, namespace: str, username: str, password: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": name, "namespace": namespace, "labels": {SECRET_LABEL: "baremetal"}},
        "data": {"username": _b64(username), "password": _b64(password)},
    }


def _b64(text):
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def secret_differs(current: dict | None, username: str, password: str) -> bool:
    """Whether a Secret's data differ from the credentials (compared decoded, never shown)."""
    data = (current or {}).get("data") or {}
    try:
        have_user = base64.b64decode(data.get("username") or "").decode("utf-8")
        have_pass = base64.b64decode(data.get("password") or "").decode("utf-8")
    except (ValueError, TypeError):
        return True
    return have_user != username or have_pass != password
