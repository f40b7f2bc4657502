# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The metal3 side of host_claim, host_claim_info and host_release.

Each entry point takes the running module (a TenancyModule): it reads
``mod.params``, writes through the Metal3 writer (:class:`metal3.writer.KubeWrites`,
which simulates check mode), reports with ``mod.changed()`` and
``mod.set_diff()``, and fills ``mod.result``.

These run with the TENANT's credentials: they read and write HostClaims and
read Secrets in the tenant's namespace, and nothing else.  Everything a
result carries comes from the claim (its spec, labels, annotations and the
status the binder writes), never from a BareMetalHost.

Both HostClaim dialects (``claim_dialect``): the option ``dialect`` is
settled against what the API server's OpenAPI document serves (a tenant may
read it, not CRDs), and the same options mean the same on both.  On the
proposal's dialect the options are written as merge patches of the claim's
own fields (:func:`spec_changes`); on baremetal-operator's the options change
the claim's normalised spec and the fields whose wire form changes are
written (:func:`bmo_spec_patch`).  What a dialect cannot say is refused with
one error naming the claim and the field, before anything is written.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    Conflict,
    Forbidden,
    InvalidInput,
    WaitTimeout,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import (
    apply_merge_patch,
    get_path,
    minimal_patch,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.option_errors import naming_options
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.params import check_timeout
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.polling import poll
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.selectors import (
    dns1123_label_problem,
    dns1123_subdomain_problem,
    label_key_problem,
    validate_selector,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import (
    API_VERSION,
    BINDING_DOMAIN,
    CLAIM_KIND,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import dialect as claim_dialect
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.spec import (
    DATA_FIELDS,
    claim_owner,
    validate_claim_spec,
    validate_image,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.view import (
    bound_host,
    claim_record,
    is_bmo_claim,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.client import KubeIO
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.connection import kube_api_client
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.writer import KubeWrites

if TYPE_CHECKING:  # pragma: no cover
    from ansible_collections.baremetal.tenancy.plugins.module_utils.common.base import TenancyModule

SECRET_OPTIONS = (
    ("userData", "user_data_secret"),
    ("networkData", "network_data_secret"),
    ("metaData", "meta_data_secret"),
)
#: the option that fills each spec field of a claim (both dialects), named in errors about the field
CLAIM_FIELD_OPTIONS = dict(
    SECRET_OPTIONS,
    online="online",
    poweredOn="online",
    hostSelector="host_selector",
    image="image",
    **{"hostSelector.inNamespace": "in_namespace"},
    nodeReuse="node_reuse",
    credentials="credentials",
    failureDomain="failure_domain",
    customDeploy="custom_deploy",
)

# ------------------------------------------------------------------ views (pure)


def conditions_of(claim: dict) -> dict[str, dict]:
    """``{type: condition}`` of a claim's status."""
    return dict((c.get("type"), c) for c in get_path(claim, "status", "conditions") or [] if isinstance(c, dict))


#: The ``claim`` result of host_claim / host_claim_info / host_release: the one HostClaim view, which the
#: ``claimed_hosts`` inventory presents too (``claim_view.claim_record``; its bound host is ``bound_host``).
claim_view = claim_record


def _diff_view(claim):
    """What ``--diff`` shows of a claim: the part the tenant writes."""
    if not claim:
        return {}
    return {
        "metadata": {
            "name": get_path(claim, "metadata", "name"),
            "namespace": get_path(claim, "metadata", "namespace"),
            "annotations": dict(get_path(claim, "metadata", "annotations") or {}),
        },
        "spec": copy.deepcopy(claim.get("spec") or {}),
    }


def replacement_patch(current: dict, wanted: dict) -> dict:
    """Merge patch replacing the mapping ``current`` by ``wanted`` (keys ``wanted`` lacks are removed)."""
    current = current if isinstance(current, dict) else {}
    patch = dict((key, None) for key in current if key not in wanted)
    for key, value in wanted.items():
        if isinstance(value, dict) and isinstance(current.get(key), dict):
            patch[key] = replacement_patch(current[key], value)
        else:
            patch[key] = value
    return patch


def secret_ref_name(value: object) -> str | None:
    """The Secret name of a data reference in either form (``name`` or ``{name: name}``), else ``None``."""
    if isinstance(value, dict):
        value = value.get("name")
    return value if isinstance(value, str) and value else None


def _secret_ref_change(existing, wanted):
    """The proposal's ``{name: ...}`` form for a new reference; an equal one (in either form) is left as it is."""
    if not wanted:
        return None
    if secret_ref_name(existing) == wanted and (not isinstance(existing, dict) or set(existing) == set(["name"])):
        return existing
    return {"name": wanted} if not isinstance(existing, dict) else replacement_patch(existing, {"name": wanted})


def _drop_none(mapping):
    return dict((k, v) for k, v in (mapping or {}).items() if v is not None)


def _image_option(image):
    """The ``image`` option as a HostClaim's ``spec.image`` (the same fields on both dialects)."""
    return _drop_none(
        {
            "url": image.get("url"),
            "checksum": image.get("checksum"),
            "checksumType": image.get("checksum_type"),
            "format": image.get("format"),
        }
    )


def spec_changes(params: dict, existing_spec: dict | None) -> dict:
    """The spec merge patch the module options ask for (options left unset change nothing)."""
    existing_spec = existing_spec or {}
    changes = {}
    if params.get("online") is not None:
        changes["online"] = params["online"]
    selector = params.get("host_selector")
    if selector is not None:
        wanted = _drop_none(selector)
        changes["hostSelector"] = replacement_patch(existing_spec.get("hostSelector"), wanted)
    image = params.get("image")
    if image is not None:
        changes["image"] = replacement_patch(existing_spec.get("image"), _image_option(image))
    for field, option in SECRET_OPTIONS:
        if params.get(option) is not None:
            changes[field] = _secret_ref_change(existing_spec.get(field), params[option])
    if params.get("node_reuse") is not None:
        changes["nodeReuse"] = params["node_reuse"] or None
    if params.get("credentials") is not None:
        changes["credentials"] = params["credentials"] or None
    return changes


def refuse_a_credentials_change(existing_spec: dict | None, changes: dict, name: str, namespace: str) -> None:
    """``spec.credentials`` is set when a claim is created, never after (the CRD refuses a change too): a claim
    relayed to another cluster and then pointed elsewhere, or bound here and then relayed, would leave its first
    claim behind. One ``InvalidInput`` naming the claim when ``changes`` would add, change or remove it."""
    if existing_spec is None or "credentials" not in changes:
        return
    before = existing_spec.get("credentials") or None
    if changes["credentials"] != before:
        raise InvalidInput(
            "HostClaim %s/%s" % (namespace, name),
            "spec.credentials is %s and cannot become %s once the claim exists: delete the claim and create it again"
            % (
                "unset" if before is None else repr(before),
                "unset" if changes["credentials"] is None else repr(changes["credentials"]),
            ),
        )


#: options only one dialect can say: normalised key -> option
DIALECT_OPTIONS = (
    ("nodeReuse", "node_reuse"),
    ("credentials", "credentials"),
    ("inNamespace", "in_namespace"),
    ("failureDomain", "failure_domain"),
    ("customDeploy", "custom_deploy"),
)


def _dialect_option_values(params):
    """The normalised values of the options only one dialect can say (``None``: unset, or empty)."""
    values = dict((key, params.get(option) or None) for key, option in DIALECT_OPTIONS)
    if values["customDeploy"] is not None:
        values["customDeploy"] = {"method": values["customDeploy"]}
    return values


def refuse_what_the_dialect_lacks(dialect: str, params: dict, name: str, namespace: str) -> None:
    """One ``InvalidInput`` naming the claim and the fields, when an option asks what ``dialect`` cannot say."""
    asked = _dialect_option_values(params)
    if claim_dialect.lacking(dialect, asked):
        claim_dialect.wire_spec(dialect, asked, name, namespace)  # raises, naming the claim and the fields


def bmo_model_changes(params: dict, current: dict, name: str, namespace: str) -> dict:
    """The normalised spec the options ask for, from the ``current`` one (options left unset keep their field).

    An empty string removes a Secret reference, ``inNamespace``, ``failureDomain`` or ``customDeploy``.
    """
    owner = claim_owner(name, namespace)
    model = dict(current)
    if params.get("online") is not None:
        model["online"] = params["online"]
    if params.get("host_selector") is not None:
        model["hostSelector"] = validate_selector(_drop_none(params["host_selector"]), owner, "spec.hostSelector")
    if params.get("image") is not None:
        model["image"] = validate_image(owner, _image_option(params["image"]))
    for field, option in SECRET_OPTIONS:
        if params.get(option) is not None:
            model[field] = params[option] or None
    asked = _dialect_option_values(params)
    for key, option in DIALECT_OPTIONS:
        if params.get(option) is not None:
            model[key] = asked[key]
    return model


def bmo_spec_patch(existing_spec: dict | None, current: dict, wanted: dict, name: str, namespace: str) -> dict:
    """The spec merge patch from the ``current`` normalised spec to the ``wanted`` one, on a baremetal-operator claim.

    Only the fields whose wire form differs are written (a claim written by
    hand in another spelling of the same thing, ``In`` for ``in``, is left as
    it is); ``consumerRef`` and any field the options do not touch are kept.
    """
    before = claim_dialect.wire_spec(claim_dialect.BMO, current, name, namespace)
    after = claim_dialect.wire_spec(claim_dialect.BMO, wanted, name, namespace)
    existing_spec = existing_spec or {}
    patch = {}
    for key in sorted(set(before) | set(after)):
        if before.get(key) == after.get(key):
            continue
        if key not in after:
            patch[key] = None
        elif isinstance(after[key], dict):
            patch[key] = replacement_patch(existing_spec.get(key), after[key])
        else:
            patch[key] = after[key]
    return patch


def annotation_changes(params: dict) -> dict:
    """The annotation merge patch of the ``annotations`` option; raises InvalidInput for a bad or reserved key."""
    wanted = params.get("annotations")
    if not wanted:
        return {}
    changes = {}
    for key in sorted(wanted):
        problem = label_key_problem(key)
        if problem:
            raise InvalidInput("option annotations", problem)
        if key.startswith(BINDING_DOMAIN + "/"):
            raise InvalidInput("option annotations", "key %r is reserved for the binder" % key)
        value = wanted[key]
        changes[key] = None if value is None else str(value)
    return changes


# ------------------------------------------------------------------ checks


def _check_names(params, namespace_option="namespace"):
    namespace, name = params.get("namespace"), params.get("name")
    problem = dns1123_label_problem(namespace)
    if problem:
        raise InvalidInput("option %s" % namespace_option, "namespace name %r %s" % (namespace, problem))
    if name is not None:
        problem = dns1123_subdomain_problem(name)
        if problem:
            raise InvalidInput("option name", "claim name %r %s" % (name, problem))


def _check_namespace(io, namespace):
    """Fail clearly when the namespace does not exist (a tenant may not read namespaces: then the API answers later)."""
    try:
        found = io.get_namespace(namespace)
    except Forbidden:
        return
    if found is None:
        raise InvalidInput("namespace %s" % namespace, "does not exist")


def _check_secrets(io, namespace, name, spec):
    """``spec`` is validated (``validate_claim_spec``): references are plain Secret names there (the credentials
    Secret's too: the binder reads it from the claim's namespace only)."""
    for field in ("credentials", *DATA_FIELDS):
        secret = spec.get(field)
        if secret and io.get_secret(namespace, secret) is None:
            raise InvalidInput(
                "HostClaim %s/%s" % (namespace, name),
                "spec.%s: Secret %r was not found in namespace %s" % (field, secret, namespace),
            )


def _client(mod):
    return KubeIO(kube_api_client(mod.params))


def settle_dialect(mod: TenancyModule, io: KubeIO) -> str:
    """The HostClaim dialect to speak: option ``dialect`` against the API server's OpenAPI document.

    Sets the result's ``dialect``.  A forced dialect the cluster does not
    serve, and a cluster that serves neither, are errors (nothing is written).
    """
    document = io.hostclaim_openapi()
    dialect = claim_dialect.resolve_dialect(
        mod.params.get("dialect") or claim_dialect.AUTO,
        claim_dialect.openapi_dialect(document),
        claim_dialect.openapi_spec_fields(document),
    )
    mod.result["dialect"] = dialect
    return dialect


# ------------------------------------------------------------------ waiting


def _wait(io, namespace, name, predicate, timeout, what):
    """Read the claim until ``predicate(claim)`` holds; return the last claim read.

    One wait loop (:func:`polling.poll`, monotonic clock, back-off).  A claim
    that disappears while a state is awaited fails at once (unless its
    disappearance is what is awaited): it will never reach that state.
    """
    label = "HostClaim %s/%s" % (namespace, name)
    last: list[dict | None] = [None]

    def fetch():
        last[0] = io.get_claim(namespace, name)
        return last[0]

    try:
        return poll(
            fetch,
            predicate,
            timeout,
            label,
            gone=None if predicate(None) else "was deleted while waiting for it (still %s)" % what,
        )
    except WaitTimeout as exc:
        raise WaitTimeout(label, "%s after %s seconds%s" % (what, timeout, _why(last[0]))) from exc


def _why(claim):
    if not claim:
        return ""
    conditions = conditions_of(claim)
    for ctype in ("AssociateBMH", "Associated", "Ready"):
        condition = conditions.get(ctype) or {}
        if condition.get("status") != "True" and condition.get("message"):
            return " (%s %s: %s)" % (ctype, condition.get("reason"), condition.get("message"))
    return ""


def _condition_true(ctype):
    return lambda claim: claim is not None and (conditions_of(claim).get(ctype) or {}).get("status") == "True"


def claim_is_bound(claim: dict) -> bool:
    return claim is not None and bound_host(claim) is not None


def _gone(claim):
    return claim is None


# ------------------------------------------------------------------ entry points


def run_host_claim(mod: TenancyModule) -> None:
    params = mod.params
    check_timeout(params.get("wait_timeout"))
    _check_names(params)
    namespace, name = params["namespace"], params["name"]
    annotations = annotation_changes(params)
    io = _client(mod)
    dialect = settle_dialect(mod, io)
    if params["state"] != "absent":
        with naming_options(CLAIM_FIELD_OPTIONS):
            refuse_what_the_dialect_lacks(dialect, params, name, namespace)
    existing = io.get_claim(namespace, name)
    if params["state"] == "absent":
        return _delete_claim(mod, io, existing)
    if existing is None:
        _check_namespace(io, namespace)
    elif get_path(existing, "metadata", "deletionTimestamp"):
        raise Conflict(
            "HostClaim %s/%s" % (namespace, name),
            "is being deleted (its host is being released); "
            "wait until it is gone before claiming again under this name",
        )
    with naming_options(CLAIM_FIELD_OPTIONS):
        after, patch = _claim_after(params, io, existing, dialect, annotations)
    writer = KubeWrites(mod, io)
    if existing is None or patch:
        mod.changed()
        mod.set_diff(_diff_view(existing), _diff_view(after))
        if existing is None:
            after = writer.create("claim", namespace, after)
        else:
            after = writer.patch("claim", namespace, name, patch, predicted=after)
    if params.get("wait") and not writer.check_mode:
        if params["wait_for"] == "associated":
            after = _wait(io, namespace, name, claim_is_bound, params["wait_timeout"], "not bound to a host")
        else:
            after = _wait(io, namespace, name, _condition_true("Ready"), params["wait_timeout"], "not ready")
    mod.result["claim"] = claim_view(after)


def _claim_after(params, io, existing, dialect, annotations):
    """The claim the options ask for and the patch from ``existing``, checked (its spec, its Secrets)."""
    namespace, name = params["namespace"], params["name"]
    if dialect == claim_dialect.BMO:
        changes, check = _bmo_changes(params, existing, name, namespace)
    else:
        changes = spec_changes(params, (existing or {}).get("spec"))
        refuse_a_credentials_change(None if existing is None else existing.get("spec") or {}, changes, name, namespace)
        if existing is None:
            changes.setdefault("online", False)
            changes.setdefault("kind", "baremetal")

        def check(spec):
            return validate_claim_spec(spec, name, namespace)

    patch = minimal_patch(existing or {}, {"spec": changes, "metadata": {"annotations": annotations}})
    after = apply_merge_patch(
        existing or {"apiVersion": API_VERSION, "kind": CLAIM_KIND, "metadata": {"name": name, "namespace": namespace}},
        patch,
    )
    _check_secrets(io, namespace, name, check(after.get("spec")))
    return after, patch


def _bmo_changes(params, existing, name, namespace):
    """The spec changes on a baremetal-operator claim, and the check of the spec after them (normalised spec)."""

    def check(spec):
        return claim_dialect.normalise_bmo_spec(spec, name, namespace)

    if existing is None:
        current = check({"poweredOn": False})
        wanted = bmo_model_changes(params, current, name, namespace)
        return claim_dialect.wire_spec(claim_dialect.BMO, wanted, name, namespace), check
    if not is_bmo_claim(existing):
        raise Conflict(
            claim_owner(name, namespace),
            "is not of baremetal-operator's dialect (no spec.poweredOn) although the cluster serves it",
        )
    current = check(existing.get("spec"))
    wanted = bmo_model_changes(params, current, name, namespace)
    return bmo_spec_patch(existing.get("spec"), current, wanted, name, namespace), check


def _delete_claim(mod, io, existing):
    params = mod.params
    if existing is None:
        return
    writer = KubeWrites(mod, io)
    if not get_path(existing, "metadata", "deletionTimestamp"):
        mod.changed()
        mod.set_diff(_diff_view(existing), {})
        writer.delete("claim", params["namespace"], params["name"])
    if params.get("wait") and not writer.check_mode:
        _wait(io, params["namespace"], params["name"], _gone, params["wait_timeout"], "still exists")


def claim_info(mod: TenancyModule) -> list[dict]:
    params = mod.params
    namespaces = [params["namespace"]] if params.get("namespace") else list(params.get("namespaces") or [])
    if not namespaces:
        raise InvalidInput("option namespace", "namespace or namespaces is required with backend metal3")
    for namespace in namespaces:
        _check_names(
            dict(namespace=namespace, name=params.get("name")),
            "namespace" if params.get("namespace") else "namespaces",
        )
    io = _client(mod)
    settle_dialect(mod, io)
    claims = []
    for namespace in namespaces:
        if params.get("name"):
            claim = io.get_claim(namespace, params["name"])
            claims.extend([claim] if claim else [])
        else:
            claims.extend(io.list_claims([namespace]))
    views = [claim_view(claim) for claim in claims]
    return sorted(views, key=lambda view: (view["namespace"], view["name"]))


def run_host_release(mod: TenancyModule) -> None:
    params = mod.params
    check_timeout(params.get("wait_timeout"))
    _check_names(params)
    namespace, name = params["namespace"], params["name"]
    node_reuse = params.get("node_reuse")
    if node_reuse is not None:
        with naming_options(CLAIM_FIELD_OPTIONS):
            validate_claim_spec({"nodeReuse": node_reuse}, name, namespace)
    io = _client(mod)
    refuse_what_the_dialect_lacks(settle_dialect(mod, io), params, name, namespace)
    existing = io.get_claim(namespace, name)
    mod.result.update(released=False, host=None)
    if existing is None:
        _check_namespace(io, namespace)
        return
    mod.result.update(released=True, host=bound_host(existing), claim=claim_view(existing))
    before = _diff_view(existing)
    deleting = bool(get_path(existing, "metadata", "deletionTimestamp"))
    reuse_patch = {}
    if node_reuse is not None and get_path(existing, "spec", "nodeReuse") != node_reuse:
        reuse_patch = {"spec": {"nodeReuse": node_reuse}}
    if reuse_patch or not deleting:
        mod.changed()
        after = apply_merge_patch(before, reuse_patch) if reuse_patch else before
        mod.set_diff(before, {} if not deleting else after)
    writer = KubeWrites(mod, io)
    if reuse_patch:
        writer.patch("claim", namespace, name, reuse_patch)
    if not deleting:
        writer.delete("claim", namespace, name)
    if params.get("wait") and not writer.check_mode:
        _wait(io, namespace, name, _gone, params["wait_timeout"], "the host is not back in the pool yet")
