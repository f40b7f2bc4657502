# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The two HostClaim dialects of one model.  Pure.

* ``proposal``: the Metal3 HostClaim proposal's CRD, which ``hostclaim_setup``
  installs (annotation ``baremetal.tenancy/schema: hostclaim-proposal-v1``):
  ``spec.online``, ``kind``, ``nodeReuse``, ``credentials``, Secret
  references by name in the claim's namespace.
* ``bmo``: baremetal-operator's own HostClaim (v0.14): ``spec.poweredOn``,
  Secret references ``{name, namespace}``, ``customDeploy``,
  ``hostSelector.inNamespace``, ``failureDomain``, ``consumerRef``; the
  selector's operators as Kubernetes' ``selection`` package spells them
  (``in``, ``notin``, ``exists``, ``!``): baremetal-operator's controller
  lower-cases what it reads, so ``In`` would select, but its validating
  webhook compares the spelling as it is and refuses ``In``, ``NotIn`` and
  ``Exists`` (``DoesNotExist`` means nothing to either).

Both are read into one normalised spec (:func:`normalise_spec`): the keys of
``claim_spec.validate_claim_spec`` plus ``inNamespace``, ``failureDomain`` and
``customDeploy`` (``None`` where unset or where the dialect has no such field).
:func:`wire_spec` writes a normalised spec back in a dialect, refusing what
the dialect cannot say.  :func:`crd_dialect` tells the dialect of a served
``hostclaims.metal3.io`` CRD, :func:`openapi_dialect` the same from the API
server's OpenAPI document (which tenants may read, CRDs they may not), and
:func:`resolve_dialect` settles the modules' ``dialect`` option against it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import BackendError, InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.selectors import (
    dns1123_label_problem,
    dns1123_subdomain_problem,
    label_value_problem,
    validate_selector,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim import spec as claim_spec

PROPOSAL = "proposal"
BMO = "bmo"
AUTO = "auto"
DIALECTS = (PROPOSAL, BMO)
#: the modules' option ``dialect``
DIALECT_CHOICES = (AUTO, PROPOSAL, BMO)

CRD_NAME = "hostclaims.metal3.io"
SCHEMA_ANNOTATION = "baremetal.tenancy/schema"
PROPOSAL_SCHEMA = "hostclaim-proposal-v1"

BMO_SPEC_FIELDS = (
    "poweredOn",
    "image",
    "userData",
    "networkData",
    "metaData",
    "customDeploy",
    "hostSelector",
    "consumerRef",
    "failureDomain",
)
#: what only one dialect can say (normalised key -> the field's name in errors)
ONLY_PROPOSAL = {"nodeReuse": "nodeReuse", "credentials": "credentials"}
ONLY_BMO = {"inNamespace": "hostSelector.inNamespace", "failureDomain": "failureDomain", "customDeploy": "customDeploy"}
#: the label by which baremetal-operator prefers hosts of a claim's failureDomain
FAILURE_DOMAIN_LABEL = "infrastructure.cluster.x-k8s.io/failure-domain"

# baremetal-operator's selector operators (k8s.io/apimachinery selection, after lower-casing) -> the model's
_BMO_OPERATORS = {
    "in": ("In", None),
    "notin": ("NotIn", None),
    "exists": ("Exists", None),
    "!": ("DoesNotExist", None),
    "=": ("In", 1),
    "==": ("In", 1),
    "!=": ("NotIn", 1),
}
#: the model's operators as baremetal-operator's webhook accepts them (selection's spelling, exactly)
_WIRE_OPERATORS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


# ------------------------------------------------------------------ which dialect the cluster serves


def _storage_version(crd: Mapping[str, Any]) -> Mapping[str, Any]:
    versions = (crd.get("spec") or {}).get("versions") or []
    for version in versions:
        if version.get("storage"):
            return version
    return versions[0] if versions else {}


def crd_spec_fields(crd: Mapping[str, Any]) -> list[str]:
    """The spec fields of a HostClaim CRD's stored version (sorted)."""
    schema = (_storage_version(crd).get("schema") or {}).get("openAPIV3Schema") or {}
    spec = (schema.get("properties") or {}).get("spec") or {}
    return sorted(spec.get("properties") or {})


def _dialect_of_fields(fields) -> str | None:
    fields = set(fields)
    if "poweredOn" in fields and "online" not in fields and fields <= set(BMO_SPEC_FIELDS):
        return BMO
    if "online" in fields and "poweredOn" not in fields:
        return PROPOSAL
    return None


def crd_dialect(crd: Mapping[str, Any] | None) -> str | None:
    """``proposal``, ``bmo`` or ``None`` (no CRD, or one of neither shape)."""
    if not crd:
        return None
    if ((crd.get("metadata") or {}).get("annotations") or {}).get(SCHEMA_ANNOTATION) == PROPOSAL_SCHEMA:
        return PROPOSAL
    return _dialect_of_fields(crd_spec_fields(crd))


#: what any authenticated user may read (``system:discovery``): the served schemas of metal3.io/v1alpha1
OPENAPI_PATH = "/openapi/v3/apis/metal3.io/v1alpha1"
OPENAPI_SCHEMA = "io.metal3.v1alpha1.HostClaim"


def openapi_spec_fields(document: Mapping[str, Any] | None) -> list[str] | None:
    """The HostClaim spec fields in the OpenAPI v3 document of metal3.io/v1alpha1 (``None``: no HostClaim)."""
    schemas = ((document or {}).get("components") or {}).get("schemas") or {}
    schema = schemas.get(OPENAPI_SCHEMA)
    if schema is None:
        return None
    spec = (schema.get("properties") or {}).get("spec") or {}
    return sorted(spec.get("properties") or {})


def openapi_dialect(document: Mapping[str, Any] | None) -> str | None:
    """The dialect the API server serves, from what a tenant can read (no CRD access needed)."""
    fields = openapi_spec_fields(document)
    return None if fields is None else _dialect_of_fields(fields)


def resolve_dialect(requested: str, served: str | None, fields: list[str] | None = None) -> str:
    """The dialect to speak: the served one for ``auto``; a forced one must be the served one.

    ``served`` is :func:`crd_dialect` or :func:`openapi_dialect`; ``fields`` the spec fields seen
    (``None``: no HostClaim API at all), for the error when the cluster serves neither dialect.
    """
    if served is None:
        if fields is None:
            raise BackendError(
                "HostClaim API",
                "the cluster serves none (no %s): run the role baremetal.tenancy.hostclaim_setup "
                "(the proposal's HostClaim) or install baremetal-operator v0.14 or later with its CRDs" % CRD_NAME,
            )
        raise BackendError(
            "HostClaim API",
            "%s is of neither dialect (spec fields %s): not the proposal's (spec.online) nor "
            "baremetal-operator's (spec.poweredOn)" % (CRD_NAME, ", ".join(fields) or "none"),
        )
    if requested not in (AUTO, served):
        raise InvalidInput(
            "option dialect",
            "is %s but the cluster serves the %s HostClaim (%s); use dialect auto or %s"
            % (requested, served, CRD_NAME, served),
        )
    return served


# ------------------------------------------------------------------ reading a claim of either dialect


def _secret_reference(owner, field, value, namespace):
    """BMO's ``{name, namespace}``: only a Secret of the claim's own namespace."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidInput(owner, "spec.%s: must be a Secret reference {name, namespace}" % field)
    unknown = sorted(set(value) - {"name", "namespace"}, key=str)
    if unknown:
        raise InvalidInput(owner, "spec.%s: unknown field(s) %s" % (field, ", ".join(repr(k) for k in unknown)))
    ref_namespace = value.get("namespace")
    if ref_namespace not in (None, "") and ref_namespace != namespace:
        raise InvalidInput(
            owner,
            "spec.%s: Secret %s/%s is not in the claim's namespace %s (a claim may only use its own Secrets)"
            % (field, ref_namespace, value.get("name"), namespace),
        )
    problem = dns1123_subdomain_problem(value.get("name"))
    if problem:
        raise InvalidInput(owner, "spec.%s: Secret name %r %s" % (field, value.get("name"), problem))
    return value["name"]


def _bmo_expression(owner, where, expr):
    if not isinstance(expr, Mapping) or not isinstance(expr.get("operator"), str):
        raise InvalidInput(owner, "%s: must be a mapping with key, operator and values" % where)
    operator = expr["operator"].lower()
    if operator not in _BMO_OPERATORS:
        raise InvalidInput(
            owner,
            "%s: operator %r is not one baremetal-operator reads (%s, any case)"
            % (where, expr["operator"], ", ".join(sorted(_BMO_OPERATORS))),
        )
    model, count = _BMO_OPERATORS[operator]
    values = expr.get("values")
    if count is not None and (not isinstance(values, list) or len(values) != count):
        raise InvalidInput(owner, "%s: operator %r takes exactly one value" % (where, expr["operator"]))
    out = {"key": expr.get("key"), "operator": model}
    if model in ("In", "NotIn"):
        out["values"] = values
    elif values:
        raise InvalidInput(owner, "%s: operator %r takes no values, got %r" % (where, expr["operator"], values))
    return out


def _bmo_selector(owner, selector):
    if selector is None:
        selector = {}
    if not isinstance(selector, Mapping):
        raise InvalidInput(owner, "spec.hostSelector: must be a mapping")
    unknown = sorted(set(selector) - {"matchLabels", "matchExpressions", "inNamespace"}, key=str)
    if unknown:
        raise InvalidInput(owner, "spec.hostSelector: unknown field(s) %s" % ", ".join(repr(k) for k in unknown))
    expressions = selector.get("matchExpressions")
    if expressions is not None and not isinstance(expressions, list):
        raise InvalidInput(owner, "spec.hostSelector.matchExpressions: must be a list")
    model = {
        "matchLabels": selector.get("matchLabels"),
        "matchExpressions": [
            _bmo_expression(owner, "spec.hostSelector.matchExpressions[%d]" % index, expr)
            for index, expr in enumerate(expressions or [])
        ],
    }
    in_namespace = selector.get("inNamespace") or None
    if in_namespace is not None:
        problem = dns1123_label_problem(in_namespace)
        if problem:
            raise InvalidInput(owner, "spec.hostSelector.inNamespace: %r %s" % (in_namespace, problem))
    return validate_selector(model, owner, "spec.hostSelector"), in_namespace


def _custom_deploy(owner, value):
    if value is None:
        return None
    if not isinstance(value, Mapping) or set(value) != {"method"} or not isinstance(value["method"], str):
        raise InvalidInput(owner, "spec.customDeploy: must be {method: <deploy step>}")
    if not value["method"]:
        raise InvalidInput(owner, "spec.customDeploy.method: must not be empty")
    return {"method": value["method"]}


def _failure_domain(owner, value):
    if value in (None, ""):
        return None
    problem = label_value_problem(value)
    if problem:
        raise InvalidInput(owner, "spec.failureDomain: %r %s" % (value, problem))
    return value


def normalise_bmo_spec(spec: Any, name: str, namespace: str | None = None) -> dict:
    """A baremetal-operator HostClaim spec as the model's normalised spec; ``InvalidInput`` names claim and field."""
    owner = claim_spec.claim_owner(name, namespace)
    spec = claim_spec.known_fields(owner, spec, BMO_SPEC_FIELDS)
    powered = spec.get("poweredOn", False)
    if not isinstance(powered, bool):
        raise InvalidInput(owner, "spec.poweredOn: must be true or false, got %r" % (powered,))
    selector, in_namespace = _bmo_selector(owner, spec.get("hostSelector"))
    result = {
        "online": powered,
        "kind": "baremetal",
        "hostSelector": selector,
        "image": claim_spec.validate_image(owner, spec.get("image")),
        "nodeReuse": None,
        "credentials": None,
        "inNamespace": in_namespace,
        "failureDomain": _failure_domain(owner, spec.get("failureDomain")),
        "customDeploy": _custom_deploy(owner, spec.get("customDeploy")),
    }
    for field in claim_spec.DATA_FIELDS:
        result[field] = _secret_reference(owner, field, spec.get(field), namespace)
    if result["image"] is not None and result["customDeploy"] is not None:
        raise InvalidInput(owner, "spec: image and customDeploy are alternatives, set one")
    return result


def normalise_spec(dialect: str, spec: Any, name: str, namespace: str | None = None) -> dict:
    """Either dialect's spec as the normalised spec (the proposal's through ``claim_spec.validate_claim_spec``)."""
    if dialect == BMO:
        return normalise_bmo_spec(spec, name, namespace)
    result = claim_spec.validate_claim_spec(spec, name, namespace)
    result.update(inNamespace=None, failureDomain=None, customDeploy=None)
    return result


# ------------------------------------------------------------------ writing a claim in a dialect


def lacking(dialect: str, normalised: Mapping[str, Any]) -> list[str]:
    """The set fields of a normalised spec that ``dialect`` cannot say (their names as the other dialect has them)."""
    other = ONLY_PROPOSAL if dialect == BMO else ONLY_BMO
    return [field for key, field in other.items() if normalised.get(key) is not None]


def wire_spec(dialect: str, normalised: Mapping[str, Any], name: str, namespace: str) -> dict:
    """The spec to write in ``dialect`` for a normalised spec; ``InvalidInput`` for what the dialect lacks."""
    missing = lacking(dialect, normalised)
    if missing:
        raise InvalidInput(
            claim_spec.claim_owner(name, namespace),
            "%s cannot be set on a %s HostClaim (this cluster's dialect)"
            % (", ".join(missing), "baremetal-operator" if dialect == BMO else "proposal"),
        )
    selector = normalised.get("hostSelector") or {}
    if dialect == PROPOSAL:
        spec = {"online": bool(normalised.get("online")), "kind": normalised.get("kind") or "baremetal"}
        if selector.get("matchLabels") or selector.get("matchExpressions"):
            spec["hostSelector"] = _wire_selector(selector, dict)
        for key in ("image", "nodeReuse"):
            if normalised.get(key) is not None:
                spec[key] = normalised[key]
        for key in ("credentials", *claim_spec.DATA_FIELDS):
            if normalised.get(key) is not None:
                spec[key] = {"name": normalised[key]}
        return spec
    spec = {"poweredOn": bool(normalised.get("online"))}
    wire_selector = _wire_selector(selector, _bmo_wire_expression)
    if normalised.get("inNamespace"):
        wire_selector["inNamespace"] = normalised["inNamespace"]
    if wire_selector:
        spec["hostSelector"] = wire_selector
    for key in ("image", "customDeploy", "failureDomain"):
        if normalised.get(key) is not None:
            spec[key] = normalised[key]
    if spec.get("image") is not None:
        # the model has every image field (None when unset); the wire only those set
        spec["image"] = dict((field, value) for field, value in spec["image"].items() if value is not None)
    for key in claim_spec.DATA_FIELDS:
        if normalised.get(key) is not None:
            spec[key] = {"name": normalised[key], "namespace": namespace}
    return spec


def _bmo_wire_expression(expr):
    out = {"key": expr["key"], "operator": _WIRE_OPERATORS[expr["operator"]]}
    out["values"] = list(expr.get("values") or [])
    return out


def _wire_selector(selector, expression):
    out = {}
    if selector.get("matchLabels"):
        out["matchLabels"] = dict(selector["matchLabels"])
    if selector.get("matchExpressions"):
        out["matchExpressions"] = [expression(expr) for expr in selector["matchExpressions"]]
    return out
