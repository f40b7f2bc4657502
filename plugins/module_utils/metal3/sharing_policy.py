# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Which namespaces a BareMetalHost is shared with (``spec.hostClaimNamespaces``).

The policy is ``{matches: <pattern>, withLabel: [<entry>, ...]}``, as in the
Metal3 HostClaim proposal:

* A host without the field (or with ``null``) is not shared with anyone.
* ``matches`` is an RE2 pattern (Go ``regexp`` syntax, which is RE2 syntax)
  that must match the WHOLE namespace name: ``p-.*`` allows ``p-a`` and
  refuses ``xp-a``.  It is evaluated with google-re2 only (linear time);
  Python's ``re`` is never used for it.
* ``withLabel`` entries are ``key`` (the namespace carries the label, with any
  value) or ``key=value``; the namespace must carry ONE of them.
* When both are set, BOTH must hold.
* A subfield that is ``null``, ``""`` or ``[]`` is not set (Go zero values).
  A policy that sets neither subfield shares nothing and is reported.
* Anything invalid (bad pattern, bad entry, unknown field, wrong type, or
  google-re2 missing while ``matches`` is set) shares nothing: fail closed.
  ``validate_policy`` lists the problems; ``evaluate`` gives the reason.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Mapping
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.libraries import RE2, missing_message
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.selectors import (
    dns1123_label_problem,
    label_key_problem,
    label_value_problem,
)

try:
    import re2

    HAS_RE2 = True
except ImportError:
    re2 = None
    HAS_RE2 = False

FIELD = "hostClaimNamespaces"
POLICY_KEYS = ("matches", "withLabel")
MISSING_RE2 = missing_message(RE2)

Decision = namedtuple("Decision", ["allowed", "reason"])

_CACHE_SIZE = 512
_CACHE = {}


def host_policy(host: dict | None) -> Any:
    """The ``spec.hostClaimNamespaces`` of a BMH dict, or ``None``."""
    spec = (host or {}).get("spec") or {}
    return spec.get(FIELD)


def _re2_options():
    options = re2.Options()
    options.log_errors = False
    return options


def _error_text(exc):
    args = getattr(exc, "args", None) or ("",)
    text = args[0]
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return str(text) or exc.__class__.__name__


def compile_pattern(pattern: str) -> tuple[Any, str | None]:
    """Return ``(compiled, None)`` or ``(None, error)``; cached, RE2 only."""
    if not HAS_RE2:
        return None, MISSING_RE2
    cached = _CACHE.get(pattern)
    if cached is not None:
        return cached
    try:
        result = (re2.compile(pattern, _re2_options()), None)
    except (re2.error, UnicodeError, TypeError, ValueError) as exc:
        result = (None, _error_text(exc))
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.clear()
    _CACHE[pattern] = result
    return result


def clear_cache() -> None:
    """Forget compiled patterns (for tests)."""
    _CACHE.clear()


def parse_with_label(entry: str) -> tuple[str, str | None]:
    """Split a ``withLabel`` entry into ``(key, value or None)``; ``None`` value means any value."""
    key, sep, value = entry.partition("=")
    return key, (value if sep else None)


def _is_set(value):
    return value is not None and value != "" and value != []


def _pattern_problems(pattern):
    if not isinstance(pattern, str):
        return ["matches must be a string, got %s" % type(pattern).__name__]
    if not HAS_RE2:
        return ["matches %r cannot be checked: %s" % (pattern, MISSING_RE2)]
    error = compile_pattern(pattern)[1]
    if error:
        return ["matches %r is not a valid RE2 pattern: %s" % (pattern, error)]
    return []


def _entry_problem(index, entry):
    where = "withLabel[%d]" % index
    if not isinstance(entry, str):
        return '%s must be a string "key" or "key=value", got %s' % (where, type(entry).__name__)
    key, value = parse_with_label(entry)
    problem = label_key_problem(key) or (value is not None and label_value_problem(value))
    if problem:
        return "%s %r: %s" % (where, entry, problem)
    return None


def _with_label_problems(entries):
    if not isinstance(entries, list):
        return ['withLabel must be a list of "key" or "key=value" strings']
    problems = [_entry_problem(index, entry) for index, entry in enumerate(entries)]
    return [problem for problem in problems if problem]


def _structure_problems(policy):
    if not isinstance(policy, dict):
        return ["%s must be a mapping with matches and/or withLabel, got %s" % (FIELD, type(policy).__name__)]
    unknown = sorted(set(policy) - set(POLICY_KEYS), key=str)
    if unknown:
        return [
            "%s has unknown field(s) %s (expected matches, withLabel)" % (FIELD, ", ".join(repr(k) for k in unknown))
        ]
    if not _is_set(policy.get("matches")) and not _is_set(policy.get("withLabel")):
        return ["%s sets neither matches nor withLabel, so the host is shared with no namespace" % FIELD]
    return []


def validate_policy(policy: Any, owner: str | None = None) -> list[str]:
    """List the problems of a policy (``[]`` if valid or absent).

    ``owner`` (``BareMetalHost ns/name``) prefixes each problem.
    """
    if policy is None:
        return []
    problems = _structure_problems(policy)
    if not problems:
        if _is_set(policy.get("matches")):
            problems.extend(_pattern_problems(policy["matches"]))
        if _is_set(policy.get("withLabel")):
            problems.extend(_with_label_problems(policy["withLabel"]))
    if owner:
        problems = ["%s: %s" % (owner, problem) for problem in problems]
    return problems


def _label_entry_present(entry, labels):
    key, value = parse_with_label(entry)
    if key not in labels:
        return False
    return value is None or labels[key] == value


def _check_matches(pattern, namespace):
    compiled, error = compile_pattern(pattern)
    if error:
        return Decision(False, "matches %r cannot be evaluated: %s" % (pattern, error))
    if compiled.fullmatch(namespace) is None:
        return Decision(False, "namespace %r does not match the whole pattern %r" % (namespace, pattern))
    return None


def _check_with_label(entries, namespace, labels):
    if any(_label_entry_present(entry, labels) for entry in entries):
        return None
    return Decision(False, "namespace %r carries none of the labels %s" % (namespace, ", ".join(entries)))


def evaluate(policy: Any, namespace: str, ns_labels: Mapping[str, str] | None) -> Decision:
    """Decide whether a host with ``policy`` is shared with ``namespace`` (labels ``ns_labels``).

    Returns ``Decision(allowed, reason)``; never raises for a bad policy.
    """
    if policy is None:
        return Decision(False, "the host has no %s, so it is not shared" % FIELD)
    problems = validate_policy(policy)
    if problems:
        return Decision(False, "invalid %s, the host is shared with no namespace: %s" % (FIELD, "; ".join(problems)))
    name_problem = dns1123_label_problem(namespace)
    if name_problem:
        return Decision(False, "namespace name %r %s" % (namespace, name_problem))
    labels = ns_labels or {}
    checks = []
    if _is_set(policy.get("matches")):
        checks.append(_check_matches(policy["matches"], namespace))
    if _is_set(policy.get("withLabel")):
        checks.append(_check_with_label(policy["withLabel"], namespace, labels))
    refusals = [check for check in checks if check is not None]
    if refusals:
        return refusals[0]
    return Decision(True, "namespace %r is allowed by %s" % (namespace, FIELD))


def is_shared(host: dict | None, namespace: str, ns_labels: Mapping[str, str] | None) -> Decision:
    """``evaluate`` applied to a BMH dict."""
    return evaluate(host_policy(host), namespace, ns_labels)
