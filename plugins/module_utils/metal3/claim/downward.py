# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Claim -> host: what crosses downward from a HostClaim to its BareMetalHost, pure.

``online`` (``poweredOn``), ``image`` or ``customDeploy``, the user/network/meta data Secret references (pointing
at the binder's COPIES in the BMH namespace, see ``secret_copy``) and
reserved ``host.metal3.io`` annotations, mapped as follows:

* ``host.metal3.io/reboot`` -> ``reboot.metal3.io`` (one-shot reboot; the
  baremetal-operator removes it once done, and the binder removes the claim
  annotation once passed down, see ``one_shot_cleanup_patch``).
* ``host.metal3.io/reboot.<suffix>`` -> ``reboot.metal3.io/hostclaim-<suffix>``
  (power off and hold until the tenant removes the claim annotation).  The
  ``hostclaim-`` prefix keeps tenants away from the administrator's own holds.
  Passed keys are tracked on the BMH in ``hostclaim.metal3.io/passed-annotations``.
* ``host.metal3.io/inspect`` -> ``inspect.metal3.io`` (one-shot re-inspection;
  only the empty value: ``disabled`` and ``inspect.metal3.io/hardwaredetails``
  are the administrator's).  Passed only when the host can honour it (see
  ``inspection_refusal``): the baremetal-operator inspects again only an
  ``available`` (or ``ready``) host whose inspection is not disabled; on a
  provisioned host it leaves the annotation in place (it would inspect when
  the host comes back to the pool), and on a host whose inspection is
  disabled (``spec.inspectionMode: disabled``) it cycles available ->
  inspecting -> preparing -> available for as long as the annotation stays.
  And ``inspect.metal3.io: disabled`` on the host is the owner's: a tenant's
  request never overwrites it.  Until the host can honour it, the request
  stays on the claim.
* ``reboot.metal3.io`` and ``reboot.metal3.io/<suffix>`` on a claim (the keys
  baremetal-operator's webhook validates on its own HostClaims) mean the same as
  ``host.metal3.io/reboot`` and ``host.metal3.io/reboot.<suffix>``.
* Reboot values must be empty or JSON ``{"mode": "hard"|"soft", "force": bool}``.
  Any other ``host.metal3.io`` key or value is ignored (and reported by
  ``passed_annotations``).  Nothing else crosses downward.

Patches are JSON merge patches (plain dicts, ``None`` deletes).
"""

from __future__ import annotations

import json

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import (
    get_path,
    minimal_patch,
    with_precondition,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.selectors import (
    dns1123_label_problem,
    dns1123_subdomain_problem,
    label_key_problem,
    label_value_problem,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import (
    API_VERSION,
    COPY_CLAIM_ANNOTATION,
    COPY_CLAIM_NAMESPACE_LABEL,
    COPY_CLAIM_UID_LABEL,
    COPY_FIELD_LABEL,
    COPY_SOURCE_ANNOTATION,
    PASSED_ANNOTATIONS,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.identity import (
    claim_identity,
    object_name,
    require_bound,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.parsed import ParsedClaim
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.spec import (
    DATA_FIELDS,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.view import (
    short_hash,
)

RESERVED_DOMAIN = "host.metal3.io"


CLAIM_REBOOT = RESERVED_DOMAIN + "/reboot"


CLAIM_INSPECT = RESERVED_DOMAIN + "/inspect"


HOST_REBOOT = "reboot.metal3.io"


HOST_INSPECT = "inspect.metal3.io"


HOLD_PREFIX = "hostclaim-"


ONE_SHOT = {CLAIM_REBOOT: HOST_REBOOT, CLAIM_INSPECT: HOST_INSPECT, HOST_REBOOT: HOST_REBOOT}


def secret_copy_names(record: ParsedClaim) -> dict[str, str]:
    """Names of the binder's Secret copies in the BMH namespace, per data field the claim (its record,
    :mod:`claim.parsed`) sets; ``InvalidInput`` for an invalid spec."""
    namespace, name, uid = record.namespace, record.name, record.uid
    token = uid if uid and not dns1123_label_problem(uid) else short_hash("%s/%s/%s" % (namespace, name, uid), 32)
    spec = record.valid_spec()
    return dict((field, "hostclaim-%s-%s" % (token, field.lower())) for field in DATA_FIELDS if spec[field])


def secret_copy(source: dict, claim: dict, host: dict, field: str, copy_name: str) -> dict:
    """The Secret the binder keeps in the BMH namespace for one data field of ``claim``.

    ``source`` is the tenant's Secret (as the API returns it).  The copy is
    labelled with the claim's uid and namespace (so the binder finds and
    deletes it on release) and owned by the BMH (deleted with it).  It is
    always ``Opaque``: the type of the tenant's Secret is not trusted (a type
    such as ``kubernetes.io/service-account-token`` or
    ``bootstrap.kubernetes.io/token`` means something to the cluster, and the
    copy lives in the owner's namespace).
    """
    namespace, name, uid = claim_identity(claim)
    host_meta = (host or {}).get("metadata") or {}
    labels = {COPY_CLAIM_NAMESPACE_LABEL: namespace, COPY_FIELD_LABEL: field.lower()}
    if uid and not label_value_problem(uid):
        labels[COPY_CLAIM_UID_LABEL] = uid
    metadata = {
        "name": copy_name,
        "namespace": host_meta.get("namespace"),
        "labels": labels,
        "annotations": {
            COPY_SOURCE_ANNOTATION: "%s/%s" % (namespace, get_path(source, "metadata", "name")),
            COPY_CLAIM_ANNOTATION: "%s/%s" % (namespace, name),
        },
    }
    if host_meta.get("uid"):
        metadata["ownerReferences"] = [
            {"apiVersion": API_VERSION, "kind": "BareMetalHost", "name": host_meta.get("name"), "uid": host_meta["uid"]}
        ]
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata,
        "type": "Opaque",
        "data": dict((source or {}).get("data") or {}),
    }


def secret_copy_patch(current: dict, wanted: dict):
    """Merge patch making the existing copy ``current`` equal to ``wanted``.

    ``{}`` when they already agree; ``None`` when the Secret type differs
    (immutable: the copy must be deleted and created again).
    """
    if (current.get("type") or "Opaque") != wanted.get("type"):
        return None
    data = dict((key, None) for key in current.get("data") or {} if key not in wanted["data"])
    data.update(wanted["data"])
    wanted_meta = wanted["metadata"]
    patch = {"data": data, "metadata": {"labels": wanted_meta["labels"], "annotations": wanted_meta["annotations"]}}
    if wanted_meta.get("ownerReferences"):
        patch["metadata"]["ownerReferences"] = wanted_meta["ownerReferences"]
    return with_precondition(minimal_patch(current, patch), current)


def _valid_reboot_value(value):
    if value == "":
        return True
    try:
        parsed = json.loads(value)
    except ValueError:
        return False
    if not isinstance(parsed, dict) or set(parsed) - set(["mode", "force"]):
        return False
    if "mode" in parsed and parsed["mode"] not in ("hard", "soft"):
        return False
    return "force" not in parsed or isinstance(parsed["force"], bool)


def _host_key_for(key, value):
    """The BMH annotation for a reserved claim annotation, or ``None`` if it does not cross."""
    if not isinstance(value, str):
        return None
    if key == CLAIM_INSPECT:
        return HOST_INSPECT if value == "" else None
    if key == CLAIM_REBOOT:
        return HOST_REBOOT if _valid_reboot_value(value) else None
    if key == HOST_REBOOT:
        return HOST_REBOOT if _valid_reboot_value(value) else None
    if key.startswith(HOST_REBOOT + "/"):
        suffix = key[len(HOST_REBOOT) + 1 :]
    else:
        suffix = key[len(CLAIM_REBOOT) + 1 :] if key.startswith(CLAIM_REBOOT + ".") else ""
    host_key = "%s/%s%s" % (HOST_REBOOT, HOLD_PREFIX, suffix)
    if suffix and not label_key_problem(host_key) and _valid_reboot_value(value):
        return host_key
    return None


INSPECTABLE_STATES = ("available", "ready")


def inspection_refusal(host: dict) -> str | None:
    """Why the baremetal-operator would not inspect ``host`` again now (``None``: it would)."""
    annotations = get_path(host, "metadata", "annotations") or {}
    if annotations.get(HOST_INSPECT) == "disabled" or get_path(host, "spec", "inspectionMode") == "disabled":
        return "inspection is disabled on the host"
    state = get_path(host, "status", "provisioning", "state")
    if state not in INSPECTABLE_STATES:
        return "the host is %s: it is inspected again only before provisioning" % (state or "not registered")
    return None


def passed_annotations(claim_annotations: dict | None):
    """Map the claim's ``host.metal3.io`` annotations to BMH annotations.

    Returns ``(mapping, ignored)``: ``mapping`` is ``{bmh key: value}``, ``ignored``
    lists the reserved claim keys that do not cross (unknown key or invalid value).
    """
    mapping, ignored = {}, []
    for key in sorted(claim_annotations or {}):
        if not is_request_key(key):
            continue
        host_key = _host_key_for(key, claim_annotations[key])
        if host_key is None:
            ignored.append(key)
        else:
            mapping[host_key] = claim_annotations[key]
    return mapping, ignored


def is_request_key(key: str) -> bool:
    """Whether a claim annotation key asks something of the host: ``host.metal3.io/...``, or
    ``reboot.metal3.io[/...]`` (the keys baremetal-operator's webhook validates on its HostClaims)."""
    return key.startswith(RESERVED_DOMAIN + "/") or key == HOST_REBOOT or key.startswith(HOST_REBOOT + "/")


def is_hold_key(key: str) -> bool:
    """True for the reboot hold annotations the binder passes down (and removes on release)."""
    return isinstance(key, str) and key.startswith("%s/%s" % (HOST_REBOOT, HOLD_PREFIX))


def tracked_keys(annotations: dict | None, tracking_key: str) -> list[str]:
    """The JSON list stored in ``annotations[tracking_key]`` (``[]`` when absent or malformed)."""
    raw = (annotations or {}).get(tracking_key)
    try:
        keys = json.loads(raw) if isinstance(raw, str) else []
    except ValueError:
        return []
    if not isinstance(keys, list):
        return []
    return [key for key in keys if isinstance(key, str)]


def tracking_value(keys: list[str]) -> str:
    return json.dumps(sorted(keys), separators=(",", ":")) if keys else None


def _annotation_patch(host, claim_annotations):
    current = get_path(host, "metadata", "annotations") or {}
    mapping = passed_annotations(claim_annotations)[0]
    if HOST_INSPECT in mapping and inspection_refusal(host):
        del mapping[HOST_INSPECT]  # waits on the claim
    holds = [key for key in mapping if is_hold_key(key)]
    patch = dict(mapping)
    for key in tracked_keys(current, PASSED_ANNOTATIONS):
        if is_hold_key(key) and key not in mapping:
            patch[key] = None
    patch[PASSED_ANNOTATIONS] = tracking_value(holds)
    return patch


def _secret_ref(field, spec, copy_names, host_namespace, owner):
    if not spec[field]:
        return None
    copy_name = (copy_names or {}).get(field)
    problem = dns1123_subdomain_problem(copy_name)
    if problem:
        raise InvalidInput(owner, "no valid name for the copy of %s Secret %r: %s" % (field, spec[field], problem))
    return {"name": copy_name, "namespace": host_namespace}


def downward_patch(record: ParsedClaim, host: dict, secret_copy_names_by_field: dict | None) -> dict:
    """The minimal BMH merge patch that applies the claim (with resourceVersion precondition); ``{}`` if none.

    ``record`` is the claim parsed (:mod:`claim.parsed`).  ``secret_copy_names_by_field`` maps
    ``userData``/``networkData``/``metaData`` to the names of the copies in the BMH namespace.  Raises
    ``Conflict`` if the BMH is not bound to the claim, ``InvalidInput`` for an invalid claim.
    """
    claim = record.obj
    require_bound(host, claim)
    spec = record.valid_spec()
    owner = object_name(claim, "HostClaim")
    host_namespace = get_path(host, "metadata", "namespace")
    host_spec = {"online": spec["online"], "image": spec["image"]}
    if spec.get("customDeploy") is not None or get_path(host, "spec", "customDeploy") is not None:
        host_spec["customDeploy"] = spec.get("customDeploy")
    for field in DATA_FIELDS:
        host_spec[field] = _secret_ref(field, spec, secret_copy_names_by_field, host_namespace, owner)
    annotations = _annotation_patch(host, get_path(claim, "metadata", "annotations"))
    patch = minimal_patch(host, {"spec": host_spec, "metadata": {"annotations": annotations}})
    return with_precondition(patch, host)


def one_shot_cleanup_patch(claim: dict, host: dict | None = None) -> dict:
    """Claim merge patch removing one-shot annotations (reboot, inspect) once they were passed down.

    ``host`` (as it was before the downward patch): an inspection request it
    cannot honour (``inspection_refusal``) was not passed and stays.
    """
    annotations = get_path(claim, "metadata", "annotations") or {}
    mapping = passed_annotations(annotations)[0]
    if host is not None and inspection_refusal(host):
        mapping.pop(HOST_INSPECT, None)
    removed = dict((key, None) for key, host_key in ONE_SHOT.items() if key in annotations and host_key in mapping)
    return {"metadata": {"annotations": removed}} if removed else {}
