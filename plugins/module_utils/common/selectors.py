# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Kubernetes names and label selectors, pure.

Label keys, label values and object names follow the Kubernetes validation
rules (``k8s.io/apimachinery/pkg/util/validation``).  A ``hostSelector`` is a
``metav1.LabelSelector``: ``matchLabels`` and ``matchExpressions`` are ANDed;
operators are ``In``, ``NotIn``, ``Exists`` and ``DoesNotExist``.

A missing (``None``) or empty selector matches every label set: a HostClaim
without ``hostSelector`` accepts any host that is shared with it.

This file imports nothing but the standard library.  The fixed patterns below
are applied only after a length check, so they run in bounded time.
"""

from __future__ import annotations

import re
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
OPERATORS_WITH_VALUES = ("In", "NotIn")

_NAME_RE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")
_DNS_LABEL_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_DNS_SUBDOMAIN_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")

_SELECTOR_KEYS = ("matchLabels", "matchExpressions")
_EXPRESSION_KEYS = ("key", "operator", "values")


def _is_str(value):
    return isinstance(value, str)


def dns1123_label_problem(value: Any) -> str | None:
    """Why ``value`` is not a DNS-1123 label (a namespace name), or ``None``."""
    if not _is_str(value) or not value:
        return "must be a non-empty string"
    if len(value) > 63:
        return "must be at most 63 characters"
    if not _DNS_LABEL_RE.match(value):
        return 'must consist of lower case alphanumerics and "-", and start and end with an alphanumeric'
    return None


def dns1123_subdomain_problem(value: Any) -> str | None:
    """Why ``value`` is not a DNS-1123 subdomain (an object name), or ``None``."""
    if not _is_str(value) or not value:
        return "must be a non-empty string"
    if len(value) > 253:
        return "must be at most 253 characters"
    if not _DNS_SUBDOMAIN_RE.match(value):
        return 'must consist of lower case alphanumerics, "-" and ".", and start and end with an alphanumeric'
    return None


def label_key_problem(key: str) -> str | None:
    """Why ``key`` is not a qualified name (label or annotation key), or ``None``."""
    if not _is_str(key) or not key:
        return "key must be a non-empty string"
    prefix, sep, name = key.rpartition("/")
    if sep:
        if "/" in prefix:
            return 'key %r has more than one "/"' % key
        problem = dns1123_subdomain_problem(prefix)
        if problem:
            return "key %r: prefix %s" % (key, problem)
    if not name:
        return "key %r has an empty name part" % key
    if len(name) > 63:
        return "key %r: name part must be at most 63 characters" % key
    if not _NAME_RE.match(name):
        return (
            'key %r: name part must consist of alphanumerics, "-", "_" and ".", '
            "and start and end with an alphanumeric" % key
        )
    return None


def label_value_problem(value: Any) -> str | None:
    """Why ``value`` is not a valid label value, or ``None`` (empty is valid)."""
    if not _is_str(value):
        return "value %r must be a string" % (value,)
    if value == "":
        return None
    if len(value) > 63:
        return "value %r must be at most 63 characters" % value
    if not _NAME_RE.match(value):
        return (
            'value %r must consist of alphanumerics, "-", "_" and ".", and start and end with an alphanumeric' % value
        )
    return None


def _fail(owner, where, cause):
    raise InvalidInput(owner, "%s: %s" % (where, cause))


def _validate_match_labels(match_labels, owner, where):
    if match_labels is None:
        return {}
    if not isinstance(match_labels, dict):
        _fail(owner, where, "must be a mapping of label keys to values")
    result = {}
    for key in sorted(match_labels, key=str):
        problem = label_key_problem(key) or label_value_problem(match_labels[key])
        if problem:
            _fail(owner, where, problem)
        result[key] = match_labels[key]
    return result


def _validate_values(expr, owner, where):
    values = expr.get("values")
    operator = expr["operator"]
    if operator in OPERATORS_WITH_VALUES:
        if not isinstance(values, list) or not values:
            _fail(owner, where, "operator %s requires a non-empty list of values" % operator)
        for value in values:
            problem = label_value_problem(value)
            if problem:
                _fail(owner, where, problem)
        return sorted(set(values))
    if values:
        _fail(owner, where, "operator %s takes no values, got %r" % (operator, values))
    if values is not None and not isinstance(values, list):
        _fail(owner, where, "values must be a list")
    return []


def _validate_expression(expr, owner, where):
    if not isinstance(expr, dict):
        _fail(owner, where, "must be a mapping with key, operator and values")
    unknown = sorted(set(expr) - set(_EXPRESSION_KEYS), key=str)
    if unknown:
        _fail(owner, where, "unknown field(s) %s" % ", ".join(repr(k) for k in unknown))
    problem = label_key_problem(expr.get("key"))
    if problem:
        _fail(owner, where, problem)
    operator = expr.get("operator")
    if operator not in OPERATORS:
        _fail(owner, where, "unknown operator %r (expected one of %s)" % (operator, ", ".join(OPERATORS)))
    values = _validate_values(expr, owner, where)
    return {"key": expr["key"], "operator": operator, "values": values}


def _validate_match_expressions(expressions, owner, where):
    if expressions is None:
        return []
    if not isinstance(expressions, list):
        _fail(owner, where, "must be a list")
    return [_validate_expression(expr, owner, "%s[%d]" % (where, index)) for index, expr in enumerate(expressions)]


def validate_selector(selector: Any, owner: str = "hostSelector", where: str = "hostSelector") -> dict:
    """Return the normalised selector, or raise ``InvalidInput``.

    ``owner`` names the object in errors (``HostClaim ns/name``), ``where``
    the field.  The result always has both ``matchLabels`` (dict) and
    ``matchExpressions`` (list, values sorted and de-duplicated).
    """
    if selector is None:
        selector = {}
    if not isinstance(selector, dict):
        _fail(owner, where, "must be a mapping with matchLabels and/or matchExpressions")
    unknown = sorted(set(selector) - set(_SELECTOR_KEYS), key=str)
    if unknown:
        _fail(owner, where, "unknown field(s) %s" % ", ".join(repr(k) for k in unknown))
    return {
        "matchLabels": _validate_match_labels(selector.get("matchLabels"), owner, where + ".matchLabels"),
        "matchExpressions": _validate_match_expressions(
            selector.get("matchExpressions"), owner, where + ".matchExpressions"
        ),
    }


def is_empty(selector: dict) -> bool:
    """True if the (normalised or raw) selector places no constraint."""
    selector = selector or {}
    return not selector.get("matchLabels") and not selector.get("matchExpressions")


def _expression_matches(expr, labels):
    key, operator = expr["key"], expr["operator"]
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    if operator == "In":
        return key in labels and labels[key] in expr["values"]
    return key not in labels or labels[key] not in expr["values"]


def matches_normalised(selector: dict, labels: dict) -> bool:
    """``matches`` for a selector already returned by ``validate_selector``."""
    labels = labels or {}
    for key, value in selector["matchLabels"].items():
        if key not in labels or labels[key] != value:
            return False
    return all(_expression_matches(expr, labels) for expr in selector["matchExpressions"])


def matches(selector: Any, labels: dict, owner: str = "hostSelector") -> bool:
    """True if ``labels`` (a dict) satisfy ``selector``; raises ``InvalidInput`` if it is invalid."""
    return matches_normalised(validate_selector(selector, owner), labels)
