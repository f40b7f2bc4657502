# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""What a tenant may ask for in a HostClaim spec: validation and normalisation.  Pure.

Used by ``host_claim`` before it writes a claim and by the binder before it
binds one, so both apply the same rules: the image (http/https URL,
checksum, format), the Secret references (names in the claim's own
namespace), ``nodeReuse``, ``online`` and ``kind``.
"""

from __future__ import annotations

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.image import URL_SCHEMES as IMAGE_URL_SCHEMES
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.image import (
    image_fields,
    image_problem,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.selectors import (
    dns1123_label_problem,
    dns1123_subdomain_problem,
    label_value_problem,
    validate_selector,
)

IMAGE_FIELDS = image_fields("metal3")
URL_SCHEMES = IMAGE_URL_SCHEMES["metal3"]
DATA_FIELDS = ("userData", "networkData", "metaData")
SPEC_FIELDS = ("online", "kind", "hostSelector", "image", "nodeReuse", "credentials", *DATA_FIELDS)
#: the proposal's kinds; both mean a BareMetalHost
CLAIM_KINDS = ("baremetal", "baremetalhost")


def _invalid(owner, where, cause):
    raise InvalidInput(owner, "spec.%s: %s" % (where, cause))


def validate_image(owner, image):
    """The image as the binder writes it (every field present), or ``None``; the rules are ``common/image.py``'s."""
    if image is None:
        return None
    problem = image_problem(image, "metal3")
    if problem:
        raise InvalidInput(owner, "spec.%s" % problem)
    return dict((field, image.get(field)) for field in IMAGE_FIELDS)


def _secret_name(owner, field, value):
    if value is None:
        return None
    if isinstance(value, dict):
        unknown = sorted(set(value) - set(["name"]), key=str)
        if unknown:
            _invalid(
                owner,
                field,
                'only "name" is allowed (the Secret must be in the claim namespace), got %s'
                % ", ".join(repr(k) for k in unknown),
            )
        value = value.get("name")
    problem = dns1123_subdomain_problem(value)
    if problem:
        _invalid(owner, field, "Secret name %r %s" % (value, problem))
    return value


def _validate_node_reuse(owner, value, namespace):
    if value is None:
        return None
    problem = dns1123_label_problem(value)
    if problem:
        _invalid(owner, "nodeReuse", "%r %s" % (value, problem))
    if namespace is not None and node_reuse_value(namespace, value) is None:
        _invalid(
            owner, "nodeReuse", '"%s.%s" must be a valid label value of at most 63 characters' % (namespace, value)
        )
    return value


def _validate_scalars(owner, spec):
    online = spec.get("online", False)
    if online is None:
        online = False
    if not isinstance(online, bool):
        _invalid(owner, "online", "must be true or false, got %r" % (online,))
    kind = spec.get("kind") or "baremetal"
    if kind not in CLAIM_KINDS:
        _invalid(owner, "kind", "%r is not supported (expected %s)" % (kind, ", ".join(CLAIM_KINDS)))
    return online, kind


def claim_owner(name, namespace=None):
    """How errors name a claim: ``HostClaim <namespace>/<name>`` (``HostClaim <name>`` without a namespace)."""
    return "HostClaim %s" % (name if namespace is None else "%s/%s" % (namespace, name))


def known_fields(owner, spec, fields):
    """``spec`` (``{}`` for ``None``), or ``InvalidInput`` if it is no mapping or has a field not in ``fields``."""
    spec = {} if spec is None else spec
    if not isinstance(spec, dict):
        raise InvalidInput(owner, "spec must be a mapping")
    unknown = sorted(set(spec) - set(fields), key=str)
    if unknown:
        raise InvalidInput(owner, "spec has unknown field(s) %s" % ", ".join(repr(k) for k in unknown))
    return spec


def validate_claim_spec(spec, name, namespace=None):
    """Return the normalised HostClaim spec, or raise ``InvalidInput`` naming the claim and the field.

    ``name`` names the claim in errors; with ``namespace`` the node-reuse label value is checked too.
    Every field is present in the result (``None`` when unset); Secret names are plain strings.
    """
    owner = claim_owner(name, namespace)
    spec = known_fields(owner, spec, SPEC_FIELDS)
    online, kind = _validate_scalars(owner, spec)
    result = {
        "online": online,
        "kind": kind,
        "hostSelector": validate_selector(spec.get("hostSelector"), owner, "spec.hostSelector"),
        "image": validate_image(owner, spec.get("image")),
        "nodeReuse": _validate_node_reuse(owner, spec.get("nodeReuse"), namespace),
        "credentials": _secret_name(owner, "credentials", spec.get("credentials")),
    }
    for field in DATA_FIELDS:
        result[field] = _secret_name(owner, field, spec.get(field))
    return result


def node_reuse_value(namespace, node_reuse):
    """``<namespace>.<nodeReuse>``, or ``None`` if that is not a valid label value."""
    if not namespace or not node_reuse:
        return None
    value = "%s.%s" % (namespace, node_reuse)
    return None if label_value_problem(value) else value
