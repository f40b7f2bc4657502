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

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.selectors import (
    dns1123_label_problem,
    dns1123_subdomain_problem,
    label_value_problem,
    validate_selector,
)

CHECKSUM_TYPES = ("md5", "sha256", "sha512", "auto")
CHECKSUM_LENGTHS = {"md5": 32, "sha256": 64, "sha512": 128}
IMAGE_FORMATS = ("raw", "qcow2", "vdi", "vmdk", "live-iso")
IMAGE_FIELDS = ("url", "checksum", "checksumType", "format")
URL_SCHEMES = ("http", "https")
DATA_FIELDS = ("userData", "networkData", "metaData")
SPEC_FIELDS = ("online", "kind", "hostSelector", "image", "nodeReuse", "credentials", *DATA_FIELDS)
#: the proposal's kinds; both mean a BareMetalHost
CLAIM_KINDS = ("baremetal", "baremetalhost")


def _invalid(owner, where, cause):
    raise InvalidInput(owner, "spec.%s: %s" % (where, cause))


def _validate_url(owner, where, url):
    if not isinstance(url, str) or not url:
        _invalid(owner, where, "must be a non-empty string")
    if any(char.isspace() for char in url):
        _invalid(owner, where, "must not contain white space")
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in URL_SCHEMES or not rest.split("/")[0]:
        _invalid(owner, where, "must be an http:// or https:// URL with a host, got %r" % url)
    if "@" in rest.split("/")[0]:
        _invalid(owner, where, "must not carry user information")


def _validate_choice(owner, where, value, choices):
    if value is not None and value not in choices:
        _invalid(owner, where, "%r is not one of %s" % (value, ", ".join(choices)))


def _validate_checksum(owner, checksum, checksum_type):
    if checksum is None:
        return
    if not isinstance(checksum, str) or not checksum or any(char.isspace() for char in checksum):
        _invalid(owner, "image.checksum", "must be a non-empty string without white space")
    if "://" in checksum:
        _validate_url(owner, "image.checksum", checksum)
        return
    expected = CHECKSUM_LENGTHS.get(checksum_type)
    is_hex = all(char in "0123456789abcdefABCDEF" for char in checksum)
    if expected and is_hex and len(checksum) != expected:
        _invalid(
            owner,
            "image.checksum",
            "a %s checksum has %d hex digits, got %d" % (checksum_type, expected, len(checksum)),
        )


def _validate_image(owner, image):
    if image is None:
        return None
    if not isinstance(image, dict):
        _invalid(owner, "image", "must be a mapping with url, checksum, checksumType and format")
    unknown = sorted(set(image) - set(IMAGE_FIELDS), key=str)
    if unknown:
        _invalid(owner, "image", "unknown field(s) %s" % ", ".join(repr(k) for k in unknown))
    result = dict((field, image.get(field)) for field in IMAGE_FIELDS)
    _validate_url(owner, "image.url", result["url"])
    _validate_choice(owner, "image.checksumType", result["checksumType"], CHECKSUM_TYPES)
    _validate_choice(owner, "image.format", result["format"], IMAGE_FORMATS)
    _validate_checksum(owner, result["checksum"], result["checksumType"])
    if result["checksum"] is None and result["format"] != "live-iso":
        _invalid(owner, "image", "a checksum is required unless format is live-iso")
    return result


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


def validate_claim_spec(spec, name, namespace=None):
    """Return the normalised HostClaim spec, or raise ``InvalidInput`` naming the claim and the field.

    ``name`` names the claim in errors; with ``namespace`` the node-reuse label value is checked too.
    Every field is present in the result (``None`` when unset); Secret names are plain strings.
    """
    owner = "HostClaim %s" % (name if namespace is None else "%s/%s" % (namespace, name))
    spec = {} if spec is None else spec
    if not isinstance(spec, dict):
        raise InvalidInput(owner, "spec must be a mapping")
    unknown = sorted(set(spec) - set(SPEC_FIELDS), key=str)
    if unknown:
        raise InvalidInput(owner, "spec has unknown field(s) %s" % ", ".join(repr(k) for k in unknown))
    online, kind = _validate_scalars(owner, spec)
    result = {
        "online": online,
        "kind": kind,
        "hostSelector": validate_selector(spec.get("hostSelector"), owner, "spec.hostSelector"),
        "image": _validate_image(owner, spec.get("image")),
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
