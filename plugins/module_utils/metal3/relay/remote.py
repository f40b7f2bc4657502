# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""A claim relayed to another cluster: the remote claim, its Secret copies, the status coming back.  Pure.

A HostClaim with ``spec.credentials`` (:mod:`relay.kubeconfig`) is mirrored
as a HostClaim in the other cluster, in the kubeconfig context's namespace,
in the dialect that cluster serves (``claim.dialect.wire_spec``: ``online``
becomes ``poweredOn`` on baremetal-operator's; ``nodeReuse`` cannot be said
there and is refused).  Its name is stable and unique per local claim
(:func:`remote_claim_name`: the local name and a hash of namespace, name and
uid), and the label :data:`ORIGIN_UID_LABEL` marks whose it is: a remote
claim of that name without the local claim's uid is someone else's and is
never changed (:func:`owned_by`).  The claim's data Secrets are copied next
to it (:func:`remote_secret`), its ``host.metal3.io`` and ``reboot.metal3.io``
annotations (reboot, inspection) are passed down and removed when the tenant
removes them (tracked in :data:`PASSED_ANNOTATIONS`).

Upward, :func:`local_status` builds the local claim's status from the remote
claim as the tenant reads it (``claim.view.claim_record``, either dialect):
addresses, NICs, boot MAC, power and the ``AssociateBMH`` / ``Ready``
conditions, their messages prefixed with where they come from; nothing else
(the remote binder already keeps BMC data out of the claims it writes, and
only these fields are read).  :func:`remote_metadata` is the remote claim's
imported labels and exported annotations, imported like a host's.

:func:`failure_reason` turns what went wrong into the one reason the claim
shows; its messages name the local Secret and the remote namespace, never the
kubeconfig, its server or the remote API's own words.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    BackendError,
    Conflict,
    Forbidden,
    InvalidInput,
    NotFound,
    TenancyError,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import (
    get_path,
    minimal_patch,
    with_precondition,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import (
    API_VERSION,
    BINDING_LABEL,
    CLAIM_KIND,
    IMPORTED_LABELS,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.dialect import (
    BMO,
    BMO_SPEC_FIELDS,
    PROPOSAL,
    wire_spec,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.downward import (
    is_request_key,
    tracked_keys,
    tracking_value,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.identity import claim_identity
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.parsed import ParsedClaim
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.spec import DATA_FIELDS, SPEC_FIELDS
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.upward import (
    finish_status,
    pending_status,
    status_condition,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.view import (
    BOUND_PREFIX,
    binding_label_value,
    claim_record,
    exported_annotations,
    short_hash,
)

RELAY_DOMAIN = "relay.hostclaim.metal3.io"
#: on the remote claim and its Secret copies: the uid of the local claim they belong to
ORIGIN_UID_LABEL = RELAY_DOMAIN + "/origin-uid"
#: on the remote claim and its Secret copies: ``<namespace>/<name>`` of the local claim (for the remote owner)
ORIGIN_ANNOTATION = RELAY_DOMAIN + "/origin"
#: on a Secret copy: the claim field it serves
FIELD_LABEL = RELAY_DOMAIN + "/field"
#: on the remote claim: the request annotations passed down (JSON list), so that removed ones are removed there
PASSED_ANNOTATIONS = RELAY_DOMAIN + "/passed-annotations"
#: on the local claim: where it is relayed (``<namespace>/<name>`` in the other cluster; no server, no credentials)
REMOTE_ANNOTATION = RELAY_DOMAIN + "/remote"
#: on a credentials Secret while a claim relayed with it exists: the relay needs the kubeconfig to release the remote
#: claim, so a Secret deleted first stays (deleting) until the last of those claims is released
CREDENTIALS_FINALIZER = RELAY_DOMAIN + "/credentials"
#: where the local messages say a remote message comes from
REMOTE_PREFIX = "in the host cluster: "
MAX_MESSAGE = 512

#: reasons the local claim shows (AssociateBMH False) when the relay cannot work
CREDENTIALS_NOT_FOUND = "CredentialsNotFound"
CREDENTIALS_INVALID = "CredentialsInvalid"
REMOTE_UNREACHABLE = "RemoteUnreachable"
REMOTE_UNAUTHORIZED = "RemoteUnauthorized"
REMOTE_FORBIDDEN = "RemoteForbidden"
REMOTE_NO_API = "RemoteHostClaimAPIMissing"
REMOTE_SPEC_UNSUPPORTED = "RemoteSpecUnsupported"
REMOTE_NAME_TAKEN = "RemoteNameTaken"
REMOTE_NAMESPACE_NOT_FOUND = "RemoteNamespaceNotFound"
DATA_SECRET_NOT_FOUND = "SecretNotFound"
RELAYING = "Relaying"
REASONS = (
    CREDENTIALS_NOT_FOUND,
    CREDENTIALS_INVALID,
    REMOTE_UNREACHABLE,
    REMOTE_UNAUTHORIZED,
    REMOTE_FORBIDDEN,
    REMOTE_NO_API,
    REMOTE_SPEC_UNSUPPORTED,
    REMOTE_NAME_TAKEN,
    REMOTE_NAMESPACE_NOT_FOUND,
    DATA_SECRET_NOT_FOUND,
    RELAYING,
)

#: the spec fields of each dialect that the relay owns on the remote claim (unset locally: removed remotely)
TENANT_FIELDS = {
    PROPOSAL: tuple(field for field in SPEC_FIELDS if field != "credentials"),
    BMO: tuple(field for field in BMO_SPEC_FIELDS if field != "consumerRef"),
}

_NAME_ROOM = 63 - 11  # the remote name stays a valid label value: <prefix>-<10 hex>
_REASON_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_,:]{0,127}$")


# ------------------------------------------------------------------ names and ownership


def remote_claim_name(namespace: str, name: str, uid: str | None) -> str:
    """The remote claim's name: the local name (cut to fit) and a hash of namespace, name and uid.

    Stable for one local claim, different for a claim deleted and created again
    under the same name (its uid differs) and for same-named claims of
    different namespaces; at most 63 characters.
    """
    digest = short_hash("%s\0%s\0%s" % (namespace, name, uid or ""), 10)
    prefix = re.sub(r"[^a-z0-9-]", "-", str(name).lower())[:_NAME_ROOM].strip("-") or "claim"
    return "%s-%s" % (prefix, digest)


def remote_secret_name(remote_name: str, field: str) -> str:
    """The name of the copy of the Secret of ``field`` (``userData``...) beside the remote claim."""
    return "%s-%s" % (remote_name, field.lower())


def origin_of(claim: dict) -> str:
    namespace, name = claim_identity(claim)[:2]
    return "%s/%s" % (namespace, name)


def owned_by(remote: dict | None, local: dict) -> bool:
    """Whether a remote object is the relay's for ``local`` (its origin-uid label is the local claim's uid)."""
    uid = claim_identity(local).uid
    labels = get_path(remote, "metadata", "labels") or {}
    return bool(uid) and isinstance(labels, dict) and labels.get(ORIGIN_UID_LABEL) == uid


def require_owned(remote: dict, local: dict, kind: str) -> None:
    """``Conflict`` (reason :data:`REMOTE_NAME_TAKEN`) unless ``remote`` is the relay's object for ``local``."""
    if not owned_by(remote, local):
        raise Conflict(
            "%s %s" % (kind, get_path(remote, "metadata", "name")),
            "exists in the host cluster but was not made for %s by the relay; it is left alone"
            % ("HostClaim " + origin_of(local)),
            {"reason": REMOTE_NAME_TAKEN},
        )


def _origin_metadata(local: dict) -> tuple[dict, dict]:
    return {ORIGIN_UID_LABEL: claim_identity(local).uid}, {ORIGIN_ANNOTATION: origin_of(local)}


# ------------------------------------------------------------------ downward


def request_annotations(local: dict) -> dict:
    """The local claim's request annotations (``host.metal3.io/...``, ``reboot.metal3.io[/...]``) passed down as they are."""
    annotations = get_path(local, "metadata", "annotations") or {}
    return dict((key, value) for key, value in annotations.items() if is_request_key(key) and isinstance(value, str))


def remote_claim(record: ParsedClaim, dialect: str, namespace: str) -> dict:
    """The remote HostClaim for the local claim (its record, :mod:`claim.parsed`) in ``dialect`` and ``namespace``,
    as it should be.

    Raises ``InvalidInput`` (reason :data:`REMOTE_SPEC_UNSUPPORTED`) for a spec
    the remote dialect cannot say, and for an invalid local spec.
    """
    local = record.obj
    spec = dict(record.valid_spec())
    name = remote_claim_name(record.namespace, record.name, record.uid)
    spec["credentials"] = None
    for field in DATA_FIELDS:
        if spec.get(field):
            spec[field] = remote_secret_name(name, field)
    if dialect not in (PROPOSAL, BMO):
        raise InvalidInput("HostClaim %s" % origin_of(local), "unknown dialect %r of the host cluster" % (dialect,))
    try:
        wire = wire_spec(dialect, spec, record.name, namespace)
    except InvalidInput as exc:
        raise InvalidInput(
            "HostClaim %s" % origin_of(local),
            "cannot be relayed: %s" % exc.cause,
            {"reason": REMOTE_SPEC_UNSUPPORTED},
        ) from exc
    labels, annotations = _origin_metadata(local)
    passed = request_annotations(local)
    annotations.update(passed)
    if passed:
        annotations[PASSED_ANNOTATIONS] = tracking_value(sorted(passed))
    return {
        "apiVersion": API_VERSION,
        "kind": CLAIM_KIND,
        "metadata": {"name": name, "namespace": namespace, "labels": labels, "annotations": annotations},
        "spec": wire,
    }


def remote_claim_patch(current: dict, wanted: dict, local: dict) -> dict:
    """Merge patch turning the remote claim ``current`` into ``wanted`` (``{}``: nothing to do), with a precondition.

    The fields a tenant sets (:data:`TENANT_FIELDS`) follow the local claim (one
    set by hand in the host cluster is removed); others (``consumerRef``, which
    the host cluster's controller may write) are kept; request annotations the tenant removed are removed; labels and
    annotations others put there are kept.  ``Conflict`` if ``current`` is not
    the relay's (:func:`require_owned`).
    """
    require_owned(current, local, "HostClaim")
    fields = TENANT_FIELDS[BMO if "poweredOn" in wanted["spec"] else PROPOSAL]
    spec = dict((key, None) for key in (current.get("spec") or {}) if key not in wanted["spec"] and key in fields)
    spec.update(copy.deepcopy(wanted["spec"]))
    current_annotations = get_path(current, "metadata", "annotations") or {}
    annotations = dict(
        (key, None) for key in tracked_keys(current_annotations, PASSED_ANNOTATIONS) if is_request_key(key)
    )
    if PASSED_ANNOTATIONS in current_annotations:
        annotations[PASSED_ANNOTATIONS] = None
    annotations.update(wanted["metadata"]["annotations"])
    patch = {
        "metadata": {"labels": dict(wanted["metadata"]["labels"]), "annotations": annotations},
        "spec": spec,
    }
    return with_precondition(minimal_patch(current, patch), current)


def remote_secret(source: dict, local: dict, remote_name: str, field: str, namespace: str) -> dict:
    """The copy of the local data Secret ``source`` beside the remote claim: same type and data, origin marked."""
    labels, annotations = _origin_metadata(local)
    labels[FIELD_LABEL] = field
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": source.get("type") or "Opaque",
        "metadata": {
            "name": remote_secret_name(remote_name, field),
            "namespace": namespace,
            "labels": labels,
            "annotations": annotations,
        },
        "data": dict(source.get("data") or {}),
    }


def remote_secret_patch(current: dict, wanted: dict, local: dict) -> dict | None:
    """Merge patch making a remote copy agree with ``wanted`` (``{}``: it does); ``None`` when the type differs
    (immutable: delete and create again).  ``Conflict`` if ``current`` is not the relay's."""
    require_owned(current, local, "Secret")
    if (current.get("type") or "Opaque") != wanted["type"]:
        return None
    data = dict((key, None) for key in current.get("data") or {} if key not in wanted["data"])
    data.update(wanted["data"])
    meta = wanted["metadata"]
    patch = {"data": data, "metadata": {"labels": meta["labels"], "annotations": meta["annotations"]}}
    return with_precondition(minimal_patch(current, patch), current)


def stale_remote_secrets(secrets: Sequence[dict], local: dict, wanted_names: Sequence[str]) -> list[dict]:
    """The relay's copies for ``local`` (by origin uid) that no field uses any more."""
    return [
        secret
        for secret in secrets
        if owned_by(secret, local) and get_path(secret, "metadata", "name") not in set(wanted_names)
    ]


# ------------------------------------------------------------------ upward


def _message(text) -> str:
    text = text if isinstance(text, str) else ""
    text = REMOTE_PREFIX + " ".join(text.split())
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 3] + "..."


def _reason(text, default: str) -> str:
    return text if isinstance(text, str) and _REASON_RE.match(text) else default


def _remote_condition(record: dict, ctype: str) -> dict:
    return next((c for c in record["conditions"] if c.get("type") == ctype), {})


def local_status(remote: dict, existing_status: dict | None, now: str) -> dict:
    """The local claim's status from its remote claim (either dialect), only the fields a tenant reads."""
    record = claim_record(remote)
    existing = (existing_status or {}).get("conditions") or []
    bmo = isinstance(remote.get("spec"), dict) and "poweredOn" in remote["spec"]
    associated_type = "Associated" if bmo else "AssociateBMH"
    if not (record["associated"] and record["host"]):
        remote_associated = _remote_condition(record, associated_type)
        return pending_status(
            existing_status,
            _reason(remote_associated.get("reason"), "RemotePending"),
            _message(remote_associated.get("message") or "the relayed claim waits for a host"),
            now,
        )
    ready = _remote_condition(record, "Ready")
    reason_source = _remote_condition(record, "Provisioned") if bmo else ready
    status = {
        "addresses": copy.deepcopy(record["addresses"]),
        "nics": copy.deepcopy(record["nics"]),
        "conditions": [
            status_condition("AssociateBMH", "True", "Associated", BOUND_PREFIX + record["host"], existing, now),
            status_condition(
                "Ready",
                "True" if record["ready"] else "False",
                _reason(reason_source.get("reason"), "RemoteNotReady"),
                _message(ready.get("message") or reason_source.get("message") or ""),
                existing,
                now,
            ),
        ],
    }
    if record["boot_mac_address"]:
        status["bootMACAddress"] = record["boot_mac_address"]
    if isinstance(record["powered_on"], bool):
        status["poweredOn"] = record["powered_on"]
    return finish_status(status, existing_status, now)


def bound_remote_host(remote: dict | None) -> str | None:
    """The host the remote claim is bound to, as its own cluster's readers tell it (``None``: not bound)."""
    if remote is None:
        return None
    record = claim_record(remote)
    return record["host"] if record["associated"] else None


def local_label_patch(local: dict, remote: dict | None) -> dict:
    """Local claim merge patch: the binding label agreeing with the remote binding, and the remote's address."""
    host = bound_remote_host(remote)
    labels = get_path(local, "metadata", "labels") or {}
    annotations = get_path(local, "metadata", "annotations") or {}
    wanted_label = binding_label_value(host) if host else None
    patch = {}
    if labels.get(BINDING_LABEL) != wanted_label or (wanted_label is None and BINDING_LABEL in labels):
        patch["labels"] = {BINDING_LABEL: wanted_label}
    where = None
    if remote is not None:
        where = "%s/%s" % (get_path(remote, "metadata", "namespace"), get_path(remote, "metadata", "name"))
    if annotations.get(REMOTE_ANNOTATION) != where:
        patch["annotations"] = {REMOTE_ANNOTATION: where}
    return {"metadata": patch} if patch else {}


def remote_metadata(remote: dict | None) -> dict | None:
    """What the remote claim carries from its host, as host metadata for ``metadata_import``: its imported labels
    (those its binder tracks) and its exported annotations; ``None`` when it is not bound (imports are removed)."""
    if bound_remote_host(remote) is None:
        return None
    annotations = get_path(remote, "metadata", "annotations") or {}
    labels = get_path(remote, "metadata", "labels") or {}
    imported = tracked_keys(annotations, IMPORTED_LABELS)
    return {
        "labels": dict((key, labels[key]) for key in imported if isinstance(labels.get(key), str)),
        "annotations": exported_annotations(annotations),
    }


# ------------------------------------------------------------------ failures


def failure_reason(exc: Exception, secret: str, namespace: str | None) -> tuple[str, str]:
    """``(reason, message)`` for the local claim when the relay failed with ``exc``.

    ``secret`` names the credentials Secret (``namespace/name``), ``namespace``
    the remote namespace (``None`` before the kubeconfig was read).  The message
    never quotes the remote API or the kubeconfig (only the relay's own words and
    the ``InvalidInput`` causes of :mod:`relay.kubeconfig`, which quote none of it).
    """
    details = exc.details if isinstance(exc, TenancyError) else {}
    where = "namespace %s of the host cluster" % namespace if namespace else "the host cluster"
    if details.get("reason") == CREDENTIALS_NOT_FOUND:
        return CREDENTIALS_NOT_FOUND, "the credentials Secret %s was not found" % secret
    if details.get("reason") == CREDENTIALS_INVALID:
        return CREDENTIALS_INVALID, "Secret %s: %s" % (secret, exc.cause)
    if details.get("reason") in (REMOTE_SPEC_UNSUPPORTED, DATA_SECRET_NOT_FOUND):
        return details["reason"], exc.cause
    if details.get("reason") == REMOTE_NAME_TAKEN:
        return REMOTE_NAME_TAKEN, "%s in %s %s" % (exc.obj, where, exc.cause)
    if details.get("reason") == REMOTE_NO_API:
        return REMOTE_NO_API, "%s serves no HostClaim API of either dialect" % where.replace(
            "namespace", "the cluster of namespace"
        )
    status = details.get("status")
    if status == 401:
        return (
            REMOTE_UNAUTHORIZED,
            "the host cluster refused the kubeconfig of Secret %s (invalid, expired or revoked)" % secret,
        )
    if isinstance(exc, Forbidden) or status == 403:
        return (
            REMOTE_FORBIDDEN,
            "the identity of the kubeconfig of Secret %s may not manage HostClaims and Secrets in %s" % (secret, where),
        )
    if isinstance(exc, BackendError) and details.get("service_unreachable"):
        return REMOTE_UNREACHABLE, "the host cluster of the kubeconfig of Secret %s cannot be reached" % secret
    if isinstance(exc, BackendError) and not status:
        return REMOTE_UNREACHABLE, "the host cluster of the kubeconfig of Secret %s did not answer" % secret
    if isinstance(exc, NotFound):
        return (
            REMOTE_NAMESPACE_NOT_FOUND,
            "%s does not exist, or the identity of the kubeconfig of Secret %s may not use it" % (where, secret),
        )
    if isinstance(exc, Conflict):
        return "RemoteRetry", "the relayed claim changed in %s during the pass; retried on the next pass" % where
    return "RemoteError", "the host cluster answered with an error (HTTP %s) in %s" % (status or "?", where)


def scrub(text, secrets: Sequence[str]):
    """``text`` with every secret value replaced (defence in depth for messages built from exceptions)."""
    if not isinstance(text, str):
        return text
    for value in secrets:
        if value and len(value) >= 8:
            text = text.replace(value, "[hidden]")
    return text


def is_relayed(claim: Mapping) -> bool:
    """Whether a claim asks to be relayed (``spec.credentials`` set; the proposal's dialect only has it)."""
    spec = claim.get("spec") if isinstance(claim, Mapping) else None
    return isinstance(spec, Mapping) and spec.get("credentials") not in (None, "", {})


def data_secret_names(record: ParsedClaim) -> dict:
    """``{field: local Secret name}`` of the data Secrets the local claim (its record) names."""
    spec = record.valid_spec()
    return dict((field, spec[field]) for field in DATA_FIELDS if spec.get(field))


def credentials_name(record: ParsedClaim) -> str | None:
    """The credentials Secret's name (in the claim's own namespace), from the claim's record."""
    return record.valid_spec().get("credentials")
