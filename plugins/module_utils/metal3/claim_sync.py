# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""What crosses between a HostClaim and its BareMetalHost, pure.

Downward (claim -> BMH): ``online``, ``image``, the user/network/meta data
Secret references (pointing at the binder's COPIES in the BMH namespace) and
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
  are the administrator's).
* Reboot values must be empty or JSON ``{"mode": "hard"|"soft", "force": bool}``.
  Any other ``host.metal3.io`` key or value is ignored (and reported by
  ``passed_annotations``).  Nothing else crosses downward.

Upward (BMH -> claim): ``status`` (addresses, bootMACAddress, nics,
conditions; never ``errorMessage``, which can quote the BMC, nor an address
or NIC entry that repeats the host's BMC data) and metadata:

* labels are imported unless their domain is reserved (``metal3.io``,
  ``x-k8s.io``, ``kubernetes.io``, ``k8s.io``, ``openshift.io`` and their
  subdomains, except ``topology.kubernetes.io``): those carry operator state
  and the previous consumer's data (``node-reuse`` names another tenant's
  namespace);
* annotations are imported ONLY from an allow-list of domains (default
  ``export.hostclaim.metal3.io``): the administrator opts in per annotation;
* any key or value that looks sensitive (``bmc``, ``credential``,
  ``password``, ``secret``, ``token``, ``ipmi``, ``redfish``, ``idrac``,
  ``ilo<n>``, a URL whose scheme is not http/https or that has user info) is
  never imported, whatever its domain;
* any key or value that repeats the host's BMC data (its address, the
  address's host part, the credentials Secret name, and the user name and
  password the binder reads from that Secret) is never imported: see
  ``bmc_match`` for the rule, and ``import_metadata``'s ``withheld`` for what
  the binder reports to the owner (key and reason, never the value).

Imported keys are tracked on the claim in ``hostclaim.metal3.io/imported-labels``
and ``hostclaim.metal3.io/imported-annotations`` (JSON lists) and removed when
they vanish from the BMH.  The binding label ``hostclaim.metal3.io/host`` is
only an indication: ``consumerRef`` on the BMH is the authority, and readers
take the bound host from ``bound_host`` (what the binder recorded in the
status, which tenants cannot write), never from the label alone.

Patches are JSON merge patches (plain dicts, ``None`` deletes).
"""

import copy
import json

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import Conflict, InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import (
    _same,
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
    BINDING_DOMAIN,
    BINDING_LABEL,
    CLAIM_KIND,
    COPY_CLAIM_ANNOTATION,
    COPY_CLAIM_NAMESPACE_LABEL,
    COPY_CLAIM_UID_LABEL,
    COPY_FIELD_LABEL,
    COPY_SOURCE_ANNOTATION,
    FINALIZER,
    IMPORTED_ANNOTATIONS,
    IMPORTED_LABELS,
    PASSED_ANNOTATIONS,
    PAUSED_ANNOTATION,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim_spec import (
    DATA_FIELDS,
    URL_SCHEMES,
    validate_claim_spec,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim_view import (
    BOUND_PREFIX,
    binding_label_value,
    short_hash,
)

RESERVED_DOMAIN = "host.metal3.io"
CLAIM_REBOOT = RESERVED_DOMAIN + "/reboot"
CLAIM_INSPECT = RESERVED_DOMAIN + "/inspect"
HOST_REBOOT = "reboot.metal3.io"
HOST_INSPECT = "inspect.metal3.io"
HOLD_PREFIX = "hostclaim-"
ONE_SHOT = {CLAIM_REBOOT: HOST_REBOOT, CLAIM_INSPECT: HOST_INSPECT}

#: a BMC value shorter than this is matched only as a whole value or word (see ``bmc_match``)
MIN_CONTAINED_BMC_VALUE = 4

DENIED_LABEL_DOMAINS = ("metal3.io", "x-k8s.io", "kubernetes.io", "k8s.io", "openshift.io")
ALLOWED_LABEL_DOMAINS = ("topology.kubernetes.io",)
EXPORT_ANNOTATION_DOMAINS = ("export.hostclaim.metal3.io",)
MAX_IMPORTED_VALUE = 4096
SENSITIVE_WORDS = (
    "bmc",
    "credential",
    "password",
    "passwd",
    "secret",
    "token",
    "ipmi",
    "redfish",
    "idrac",
    "irmc",
    "kubeconfig",
    "last-applied-configuration",
    "private-key",
    "privatekey",
)
SENSITIVE_TOKENS = ("drac", "cimc", "xcc", "ilo")

HOST_STATES = (
    "",
    "unmanaged",
    "registering",
    "match profile",
    "preparing",
    "ready",
    "available",
    "provisioning",
    "provisioned",
    "externally provisioned",
    "deprovisioning",
    "inspecting",
    "deleting",
    "powering off before delete",
    "detached",
    "servicing",
)
HOST_ERROR_TYPES = (
    "provisioned registration error",
    "registration error",
    "inspection error",
    "preparation error",
    "provisioning error",
    "power management error",
    "detach error",
    "servicing error",
)


# ---------------------------------------------------------------- helpers


def object_name(obj, kind):
    """``Kind namespace/name`` for messages."""
    meta = (obj or {}).get("metadata") or {}
    if meta.get("namespace"):
        return "%s %s/%s" % (kind, meta.get("namespace"), meta.get("name"))
    return "%s %s" % (kind, meta.get("name"))


# ------------------------------------------------------------ consumerRef


def claim_identity(claim):
    """``(namespace, name, uid)`` of a claim dict."""
    meta = (claim or {}).get("metadata") or {}
    return meta.get("namespace"), meta.get("name"), meta.get("uid")


def consumer_ref_for(claim):
    """The BMH ``spec.consumerRef`` naming ``claim`` (uid included when known)."""
    namespace, name, uid = claim_identity(claim)
    ref = {"apiVersion": API_VERSION, "kind": CLAIM_KIND, "namespace": namespace, "name": name}
    if uid:
        ref["uid"] = uid
    return ref


def claim_ref_matches(host, claim):
    """True if the BMH ``consumerRef`` points at this claim (uid compared when both have one)."""
    ref = get_path(host, "spec", "consumerRef")
    if not isinstance(ref, dict) or not ref:
        return False
    namespace, name, uid = claim_identity(claim)
    if (ref.get("apiVersion"), ref.get("kind")) != (API_VERSION, CLAIM_KIND):
        return False
    if (ref.get("namespace"), ref.get("name")) != (namespace, name) or not name:
        return False
    return not (ref.get("uid") and uid and ref.get("uid") != uid)


def _require_bound(host, claim):
    if not claim_ref_matches(host, claim):
        raise Conflict(
            object_name(host, "BareMetalHost"), "consumerRef does not point at %s" % object_name(claim, "HostClaim")
        )


# ------------------------------------------------------- claim validation


def validate_claim(claim):
    """``validate_claim_spec`` for a whole HostClaim dict."""
    namespace, name, _dummy = claim_identity(claim)
    return validate_claim_spec((claim or {}).get("spec"), name, namespace)


# -------------------------------------------------------------- downward


def secret_copy_names(claim):
    """Names of the binder's Secret copies in the BMH namespace, per data field the claim sets."""
    namespace, name, uid = claim_identity(claim)
    token = uid if uid and not dns1123_label_problem(uid) else short_hash("%s/%s/%s" % (namespace, name, uid), 32)
    spec = validate_claim(claim)
    return dict((field, "hostclaim-%s-%s" % (token, field.lower())) for field in DATA_FIELDS if spec[field])


def secret_copy(source, claim, host, field, copy_name):
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


def secret_copy_patch(current, wanted):
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


def finalizer_patch(obj, present):
    """Merge patch adding (``present``) or removing the binder's finalizer, with a resourceVersion precondition."""
    finalizers = list(get_path(obj, "metadata", "finalizers") or [])
    if (FINALIZER in finalizers) == bool(present):
        return {}
    if present:
        finalizers.append(FINALIZER)
    else:
        finalizers = [item for item in finalizers if item != FINALIZER]
    return with_precondition({"metadata": {"finalizers": finalizers}}, obj)


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
    suffix = key[len(CLAIM_REBOOT) + 1 :] if key.startswith(CLAIM_REBOOT + ".") else ""
    host_key = "%s/%s%s" % (HOST_REBOOT, HOLD_PREFIX, suffix)
    if suffix and not label_key_problem(host_key) and _valid_reboot_value(value):
        return host_key
    return None


def passed_annotations(claim_annotations):
    """Map the claim's ``host.metal3.io`` annotations to BMH annotations.

    Returns ``(mapping, ignored)``: ``mapping`` is ``{bmh key: value}``, ``ignored``
    lists the reserved claim keys that do not cross (unknown key or invalid value).
    """
    mapping, ignored = {}, []
    for key in sorted(claim_annotations or {}):
        if not key.startswith(RESERVED_DOMAIN + "/"):
            continue
        host_key = _host_key_for(key, claim_annotations[key])
        if host_key is None:
            ignored.append(key)
        else:
            mapping[host_key] = claim_annotations[key]
    return mapping, ignored


def is_hold_key(key):
    """True for the reboot hold annotations the binder passes down (and removes on release)."""
    return isinstance(key, str) and key.startswith("%s/%s" % (HOST_REBOOT, HOLD_PREFIX))


def tracked_keys(annotations, tracking_key):
    """The JSON list stored in ``annotations[tracking_key]`` (``[]`` when absent or malformed)."""
    raw = (annotations or {}).get(tracking_key)
    try:
        keys = json.loads(raw) if isinstance(raw, str) else []
    except ValueError:
        return []
    if not isinstance(keys, list):
        return []
    return [key for key in keys if isinstance(key, str)]


def _tracking_value(keys):
    return json.dumps(sorted(keys), separators=(",", ":")) if keys else None


def _annotation_patch(host, claim_annotations):
    current = get_path(host, "metadata", "annotations") or {}
    mapping, _dummy = passed_annotations(claim_annotations)
    holds = [key for key in mapping if is_hold_key(key)]
    patch = dict(mapping)
    for key in tracked_keys(current, PASSED_ANNOTATIONS):
        if is_hold_key(key) and key not in mapping:
            patch[key] = None
    patch[PASSED_ANNOTATIONS] = _tracking_value(holds)
    return patch


def _secret_ref(field, spec, copy_names, host_namespace, owner):
    if not spec[field]:
        return None
    copy_name = (copy_names or {}).get(field)
    problem = dns1123_subdomain_problem(copy_name)
    if problem:
        raise InvalidInput(owner, "no valid name for the copy of %s Secret %r: %s" % (field, spec[field], problem))
    return {"name": copy_name, "namespace": host_namespace}


def downward_patch(claim, host, secret_copy_names_by_field):
    """The minimal BMH merge patch that applies the claim (with resourceVersion precondition); ``{}`` if none.

    ``secret_copy_names_by_field`` maps ``userData``/``networkData``/``metaData``
    to the names of the copies in the BMH namespace.  Raises ``Conflict`` if
    the BMH is not bound to the claim, ``InvalidInput`` for an invalid claim.
    """
    _require_bound(host, claim)
    spec = validate_claim(claim)
    owner = object_name(claim, "HostClaim")
    host_namespace = get_path(host, "metadata", "namespace")
    host_spec = {"online": spec["online"], "image": spec["image"]}
    for field in DATA_FIELDS:
        host_spec[field] = _secret_ref(field, spec, secret_copy_names_by_field, host_namespace, owner)
    annotations = _annotation_patch(host, get_path(claim, "metadata", "annotations"))
    patch = minimal_patch(host, {"spec": host_spec, "metadata": {"annotations": annotations}})
    return with_precondition(patch, host)


def one_shot_cleanup_patch(claim):
    """Claim merge patch removing one-shot annotations (reboot, inspect) once they were passed down."""
    annotations = get_path(claim, "metadata", "annotations") or {}
    mapping, _dummy = passed_annotations(annotations)
    removed = dict((key, None) for key, host_key in ONE_SHOT.items() if key in annotations and host_key in mapping)
    return {"metadata": {"annotations": removed}} if removed else {}


# ------------------------------------------------------------ upward: status


def _condition(ctype, status, reason, message, existing, now):
    previous = [c for c in existing if isinstance(c, dict) and c.get("type") == ctype]
    since = now
    if previous and previous[0].get("status") == status and previous[0].get("lastTransitionTime"):
        since = previous[0]["lastTransitionTime"]
    return {"type": ctype, "status": status, "reason": reason, "message": message, "lastTransitionTime": since}


def _addresses(host):
    addresses = []
    for nic in get_path(host, "status", "hardware", "nics") or []:
        if isinstance(nic, dict) and nic.get("ip"):
            addresses.append({"type": "InternalIP", "address": nic["ip"]})
    hostname = get_path(host, "status", "hardware", "hostname")
    if hostname:
        addresses.append({"type": "Hostname", "address": hostname})
        addresses.append({"type": "InternalDNS", "address": hostname})
    unique = []
    for address in addresses:
        if address not in unique:
            unique.append(address)
    return unique


def _nics(host):
    nics = []
    for nic in get_path(host, "status", "hardware", "nics") or []:
        if not isinstance(nic, dict):
            continue
        entry = {"name": nic.get("name"), "MAC": nic.get("mac"), "ip": nic.get("ip") or None}
        nics.append(dict((k, v) for k, v in entry.items() if v))
    return nics


def _desired_online(host, claim):
    if claim is not None:
        online = get_path(claim, "spec", "online")
    else:
        online = get_path(host, "spec", "online")
    return online is True


def _power_word(on):
    return "on" if on else "off"


def _provisioned_ready(host, online):
    powered = get_path(host, "status", "poweredOn") is True
    if powered == online:
        return "True", "Provisioned", "the host is provisioned and powered %s" % _power_word(online)
    return "False", "PowerChanging", "waiting for the host to power %s" % _power_word(online)


def _ready(host, online):
    """``(status, reason, message)`` of the Ready condition; never quotes errorMessage."""
    state = get_path(host, "status", "provisioning", "state")
    error_type = get_path(host, "status", "errorType")
    if get_path(host, "metadata", "deletionTimestamp"):
        return "False", "HostDeleting", "the host is being deleted"
    if PAUSED_ANNOTATION in (get_path(host, "metadata", "annotations") or {}):
        return "False", "HostPaused", "the host is paused by its administrator"
    if error_type or get_path(host, "status", "errorMessage"):
        kind = error_type if error_type in HOST_ERROR_TYPES else "error"
        return "False", "HostError", "the host reports a %s; ask the infrastructure administrator" % kind
    if state == "provisioned":
        return _provisioned_ready(host, online)
    if state == "provisioning":
        return "False", "Provisioning", "the image is being written"
    if state == "deprovisioning":
        return "False", "Deprovisioning", "the host is being cleaned"
    if state in ("available", "ready"):
        return "False", "NotProvisioned", "no image is provisioned; set spec.image"
    shown = state if state in HOST_STATES and state else "unknown"
    return "False", "HostNotReady", "the host is in state %r" % shown


def _finish_status(status, existing_status, now):
    previous = dict(existing_status or {})
    previous_updated = previous.pop("lastUpdated", None)
    status["lastUpdated"] = previous_updated if previous_updated and _same(previous, status) else now
    return status


def hardware_withheld(host, bmc_values):
    """``[{kind: status, key, reason}]``: the hardware addresses and NICs ``upward_status`` leaves out for ``bmc_values``."""
    withheld = []
    for key, entries in (("addresses", _addresses(host)), ("nics", _nics(host))):
        reasons = [_entry_match(entry, bmc_values) for entry in entries]
        for what in sorted(set(reason for reason in reasons if reason)):
            withheld.append({"kind": "status", "key": key, "reason": "an entry repeats the %s" % what})
    return withheld


def _entry_match(entry, bmc_values):
    for value in entry.values():
        what = bmc_match(value, bmc_values)
        if what:
            return what
    return None


def upward_status(host, existing_status, now, claim=None, bmc_values=()):
    """The claim status for its bound BMH (``host``), or an unbound status when ``host`` is ``None``.

    An address or NIC entry that repeats one of ``bmc_values`` (``bmc_needles``:
    a BMC reachable on a host NIC, a host name carrying the BMC user) is left
    out (``hardware_withheld`` says which).

    ``now`` is an RFC 3339 string.  ``lastUpdated`` and each
    ``lastTransitionTime`` only move when something changed.  Desired power is
    the claim's ``spec.online`` when ``claim`` is given, else the BMH's.
    With ``claim``, raises ``Conflict`` unless the BMH ``consumerRef`` points
    at it (pass the claim: a tenant can forge the binding label).
    """
    if host is None:
        return pending_status(existing_status, "NotBound", "the claim is not bound to a host", now)
    if claim is not None:
        _require_bound(host, claim)
    existing = (existing_status or {}).get("conditions") or []
    name = get_path(host, "metadata", "name")
    ready = _ready(host, _desired_online(host, claim))
    status = {
        "addresses": [entry for entry in _addresses(host) if not _entry_match(entry, bmc_values)],
        "nics": [entry for entry in _nics(host) if not _entry_match(entry, bmc_values)],
        "conditions": [
            _condition("AssociateBMH", "True", "Associated", BOUND_PREFIX + str(name), existing, now),
            _condition("Ready", ready[0], ready[1], ready[2], existing, now),
        ],
    }
    boot_mac = get_path(host, "spec", "bootMACAddress")
    if boot_mac:
        status["bootMACAddress"] = boot_mac
    powered_on = get_path(host, "status", "poweredOn")
    if isinstance(powered_on, bool):
        status["poweredOn"] = powered_on
    return _finish_status(status, existing_status, now)


def ready_problem(status, existing_status, reason, message, now):
    """``status`` with its Ready condition replaced by ``False``/``reason``/``message`` (a problem the tenant can fix).

    Used when the binder cannot apply the claim (for example a data Secret the
    claim names does not exist); ``message`` must only name the tenant's own
    objects.  Transition time and ``lastUpdated`` follow the usual rules.
    """
    existing = (existing_status or {}).get("conditions") or []
    result = copy.deepcopy(status)
    result.pop("lastUpdated", None)
    result["conditions"] = [c for c in result.get("conditions") or [] if c.get("type") != "Ready"]
    result["conditions"].append(_condition("Ready", "False", reason, message, existing, now))
    return _finish_status(result, existing_status, now)


def status_patch(existing_status, status):
    """Merge patch (``{'status': ...}``) turning ``existing_status`` into ``status``; ``{}`` if they are equal."""
    existing_status = existing_status if isinstance(existing_status, dict) else {}
    if _same(existing_status, status):
        return {}
    patch = dict((key, None) for key in existing_status if key not in status)
    patch.update(status)
    return {"status": patch}


def merge_patches(*patches):
    """One merge patch with the effect of applying ``patches`` in order (``{}``/``None`` are skipped).

    Exact for patches that never delete a mapping (``None``) that a later
    patch sets members of, which is how the binder composes its patches.
    """
    result = {}
    for patch in patches:
        if patch:
            result = _merge_two(result, patch)
    return result


def _merge_two(first, second):
    result = copy.deepcopy(first)
    for key, value in second.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = _merge_two(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def pending_status(existing_status, reason, message, now):
    """Status of an unbound claim: no host data, AssociateBMH and Ready False with ``reason``/``message``."""
    existing = (existing_status or {}).get("conditions") or []
    status = {
        "addresses": [],
        "nics": [],
        "conditions": [
            _condition("AssociateBMH", "False", reason, message, existing, now),
            _condition("Ready", "False", "NotBound", "the claim is not bound to a host", existing, now),
        ],
    }
    return _finish_status(status, existing_status, now)


# -------------------------------------------------------- upward: metadata


def _key_domain(key):
    prefix, sep, _dummy = key.rpartition("/")
    return prefix if sep else ""


def _in_domains(prefix, domains):
    return any(prefix == domain or prefix.endswith("." + domain) for domain in domains)


def _url_problem(text):
    start = text.find("://")
    while start != -1:
        begin = start
        while begin > 0 and (text[begin - 1].isalnum() or text[begin - 1] in "+.-"):
            begin -= 1
        scheme = text[begin:start].lower()
        authority = text[start + 3 :].split("/")[0]
        if scheme not in URL_SCHEMES or "@" in authority:
            return True
        start = text.find("://", start + 3)
    return False


def looks_sensitive(text):
    """True if ``text`` may carry BMC data or a credential (deny-list, case-insensitive)."""
    if not isinstance(text, str):
        return False
    lower = text.lower()
    if any(word in lower for word in SENSITIVE_WORDS):
        return True
    tokens = "".join(char if char.isalnum() else " " for char in lower).split()
    for token in tokens:
        if token in SENSITIVE_TOKENS or (token.startswith("ilo") and token[3:].isdigit()):
            return True
    return _url_problem(text)


def _bmc_host_part(address):
    rest = address.split("://", 1)[-1]
    authority = rest.split("/", 1)[0].rpartition("@")[2]
    if authority.startswith("["):
        return authority[1:].split("]", 1)[0]
    return authority.split(":", 1)[0] if authority.count(":") == 1 else authority


def bmc_needles(host, username=None, password=None):
    """``[(what, value)]``: the BMC data of a BMH dict that nothing imported may repeat.

    ``what`` names the kind of value for reports (``BMC address``, ``BMC address host part``, ``BMC credentials
    Secret name``, ``BMC user name``, ``BMC password``); ``username`` and ``password`` come from the credentials
    Secret when the caller could read it.  Empty values are left out.
    """
    bmc = get_path(host, "spec", "bmc") or {}
    needles = []
    address = bmc.get("address")
    if isinstance(address, str) and address:
        needles.extend([("BMC address", address), ("BMC address host part", _bmc_host_part(address))])
    needles.append(("BMC credentials Secret name", bmc.get("credentialsName")))
    needles.extend([("BMC user name", username), ("BMC password", password)])
    return [(what, value) for what, value in needles if isinstance(value, str) and value]


def bmc_values_of(host, username=None, password=None):
    """The values of ``bmc_needles`` (for ``import_metadata`` and ``find_bmc_data``)."""
    return [value for dummy, value in bmc_needles(host, username, password)]


def _words(lower):
    return "".join(char if char.isalnum() else " " for char in lower).split()


def bmc_match(text, bmc_values):
    """What ``text`` repeats of ``bmc_values`` (``[(what, value)]`` or plain strings), or ``None``.

    Case-insensitive.  A value of at least ``MIN_CONTAINED_BMC_VALUE`` characters
    matches wherever it occurs in ``text``; a shorter one (a weak password, a
    one-letter user name) only when it is the whole of ``text`` or one of its
    words (runs of letters and digits), so that a one-character password does
    not withhold every value containing that character.  Empty values never
    match.
    """
    if not isinstance(text, str) or not text:
        return None
    lower = text.lower()
    words = None
    for needle in bmc_values or ():
        what, value = needle if isinstance(needle, tuple) else ("BMC data", needle)
        if not isinstance(value, str) or not value:
            continue
        value = value.lower()
        if len(value) >= MIN_CONTAINED_BMC_VALUE:
            if value in lower:
                return what
            continue
        if words is None:
            words = set(_words(lower))
        if lower == value or value in words:
            return what
    return None


def _mentions(text, bmc_values):
    return bmc_match(text, bmc_values) is not None


#: ``import_verdict`` result for an item that is not imported by policy (domain, format): not reported
NOT_IMPORTED = ""


def _content_verdict(key, value, bmc_values, blocked):
    """``None`` if the key and value may cross, else the reason to report (withheld)."""
    if blocked:
        return blocked
    for part, text in (("key", key), ("value", value)):
        what = bmc_match(text, bmc_values)
        if what:
            return "the %s repeats the %s" % (part, what)
    if looks_sensitive(key) or looks_sensitive(value):
        return "the key or value looks like BMC or credential data"
    return None


def label_verdict(key, value="", bmc_values=(), blocked=None):
    """``None`` if a BMH label may be copied to the claim; ``NOT_IMPORTED`` (policy) or the reason it is withheld.

    ``blocked`` (a reason) withholds every label that policy would import (the
    binder could not read the BMC credentials: fail closed).
    """
    if not isinstance(key, str) or label_key_problem(key) or label_value_problem(value):
        return NOT_IMPORTED
    domain = _key_domain(key)
    if _in_domains(domain, DENIED_LABEL_DOMAINS) and not _in_domains(domain, ALLOWED_LABEL_DOMAINS):
        return NOT_IMPORTED
    return _content_verdict(key, value, bmc_values, blocked)


def annotation_verdict(key, value="", domains=EXPORT_ANNOTATION_DOMAINS, bmc_values=(), blocked=None):
    """As ``label_verdict`` for a BMH annotation (allow-listed domains only)."""
    if not isinstance(key, str) or label_key_problem(key) or _key_domain(key) not in domains:
        return NOT_IMPORTED
    if not isinstance(value, str) or len(value) > MAX_IMPORTED_VALUE:
        return NOT_IMPORTED
    return _content_verdict(key, value, bmc_values, blocked)


def label_importable(key, value="", bmc_values=()):
    """True if a BMH label may be copied to the claim."""
    return label_verdict(key, value, bmc_values) is None


def annotation_importable(key, value="", domains=EXPORT_ANNOTATION_DOMAINS, bmc_values=()):
    """True if a BMH annotation may be copied to the claim (allow-listed domains only)."""
    return annotation_verdict(key, value, domains, bmc_values) is None


def has_import_candidates(host_meta, annotation_domains=EXPORT_ANNOTATION_DOMAINS):
    """True if any label or annotation of the BMH metadata passes the policy rules (so its content must be checked)."""
    host_meta = host_meta or {}
    return any(label_verdict(k, v) != NOT_IMPORTED for k, v in (host_meta.get("labels") or {}).items()) or any(
        annotation_verdict(k, v, annotation_domains) != NOT_IMPORTED
        for k, v in (host_meta.get("annotations") or {}).items()
    )


def _protected(key):
    """Keys the import never removes, whatever the (tenant-editable) tracking annotation says."""
    return _key_domain(key) in (BINDING_DOMAIN, RESERVED_DOMAIN)


def _import_one(current, source, tracked, verdict):
    wanted, withheld = {}, []
    for key, value in sorted(source.items(), key=lambda item: str(item[0])):
        reason = verdict(key, value)
        if reason is None:
            wanted[key] = value
        elif reason:
            withheld.append((key, reason))
    to_set = dict((k, v) for k, v in wanted.items() if current.get(k) != v)
    stale = [k for k in tracked if k not in wanted and k in current and not _protected(k)]
    return wanted, to_set, sorted(set(stale)), withheld


def _section(current, source, tracking_key, tracking_holder, verdict):
    tracked = tracked_keys(tracking_holder, tracking_key)
    wanted, to_set, stale, withheld = _import_one(current, source, tracked, verdict)
    return {"set": to_set, "remove": stale, "keys": sorted(wanted), "withheld": withheld}


def _withheld_items(kind, withheld, bmc_values):
    """Report entries: the key, unless the key itself repeats BMC data (then ``None``), and the reason."""
    return [
        {"kind": kind, "key": None if _mentions(key, bmc_values) else key, "reason": reason} for key, reason in withheld
    ]


def _tracking_patch(annotations, key, keys):
    value = _tracking_value(keys)
    if value == (annotations or {}).get(key) or (value is None and key not in (annotations or {})):
        return {}
    return {key: value}


def _section_patch(section):
    patch = dict(section["set"])
    patch.update((key, None) for key in section["remove"])
    return patch


def import_metadata(claim_meta, host_meta, annotation_domains=EXPORT_ANNOTATION_DOMAINS, bmc_values=(), blocked=None):
    """Labels and annotations to import from the BMH metadata onto the claim.

    ``host_meta`` ``None`` (unbound) removes every tracked import.  Nothing
    repeating one of ``bmc_values`` (pass ``bmc_needles(host, user, password)``,
    or plain strings; see ``bmc_match``) is imported, on top of the deny rules
    of this module; ``blocked`` (a reason) withholds everything policy would
    import (fail closed when the BMC credentials could not be read).  Returns
    ``{'labels': {'set', 'remove'}, 'annotations': {'set', 'remove'}, 'patch', 'withheld'}``
    where ``annotations`` includes the two tracking annotations, ``patch``
    is the claim merge patch (``{}`` when nothing changes) and ``withheld``
    lists ``{kind, key, reason}`` for each label (``kind: label``) or
    annotation the content rules kept back (never the value; ``key`` is
    ``None`` when the key itself repeats BMC data): for the owner, never the tenant.
    """
    claim_meta, host_meta = claim_meta or {}, host_meta or {}
    claim_labels = claim_meta.get("labels") or {}
    claim_annotations = claim_meta.get("annotations") or {}
    bmc_values = [
        value
        for value in bmc_values or ()
        if (isinstance(value, str) and value) or (isinstance(value, tuple) and value[1])
    ]
    labels = _section(
        claim_labels,
        host_meta.get("labels") or {},
        IMPORTED_LABELS,
        claim_annotations,
        lambda k, v: label_verdict(k, v, bmc_values, blocked),
    )
    annotations = _section(
        claim_annotations,
        host_meta.get("annotations") or {},
        IMPORTED_ANNOTATIONS,
        claim_annotations,
        lambda k, v: annotation_verdict(k, v, annotation_domains, bmc_values, blocked),
    )
    label_patch = _section_patch(labels)
    annotation_patch = _section_patch(annotations)
    annotation_patch.update(_tracking_patch(claim_annotations, IMPORTED_LABELS, labels["keys"]))
    annotation_patch.update(_tracking_patch(claim_annotations, IMPORTED_ANNOTATIONS, annotations["keys"]))
    metadata = {}
    if label_patch:
        metadata["labels"] = label_patch
    if annotation_patch:
        metadata["annotations"] = annotation_patch
    return {
        "labels": {"set": labels["set"], "remove": labels["remove"]},
        "annotations": {
            "set": dict((k, v) for k, v in annotation_patch.items() if v is not None),
            "remove": sorted(k for k, v in annotation_patch.items() if v is None),
        },
        "patch": {"metadata": metadata} if metadata else {},
        "withheld": (
            _withheld_items("label", labels["withheld"], bmc_values)
            + _withheld_items("annotation", annotations["withheld"], bmc_values)
        ),
    }


# ------------------------------------------------------------ binding label


def binding_label_fix(claim, bound_host_name):
    """Claim merge patch making the binding label agree with ``consumerRef`` (``{}`` if it already does).

    ``bound_host_name`` is the name of the BMH whose ``consumerRef`` points at
    the claim, or ``None``: then any binding label is erased.
    """
    labels = get_path(claim, "metadata", "labels") or {}
    wanted = None if bound_host_name is None else binding_label_value(bound_host_name)
    if labels.get(BINDING_LABEL) == wanted and (wanted is not None or BINDING_LABEL not in labels):
        return {}
    return {"metadata": {"labels": {BINDING_LABEL: wanted}}}


# ------------------------------------------------------------ leak scanner


def _hits(text, needles):
    lower = text.lower()
    return any(needle in lower for needle in needles)


def _scan(obj, needles, path, found):
    if isinstance(obj, dict):
        for key, value in obj.items():
            child = "%s.%s" % (path, key) if path else str(key)
            if _hits(str(key), needles):
                found.append(child + " (key)")
            _scan(value, needles, child, found)
    elif isinstance(obj, (list, tuple)):
        for index, value in enumerate(obj):
            _scan(value, needles, "%s[%d]" % (path, index), found)
    elif obj is not None and not isinstance(obj, bool) and _hits(str(obj), needles):
        found.append(path or ".")


def find_bmc_data(obj, bmc_values):
    """Paths in ``obj`` (nested dicts/lists/strings) whose key or value contains any of ``bmc_values``.

    Matching is case-insensitive on substrings; empty needles are ignored.
    Returns ``[]`` when nothing leaks.
    """
    needles = [str(value).lower() for value in bmc_values or [] if value is not None and str(value)]
    found = []
    if needles:
        _scan(obj, needles, "", found)
    return found
