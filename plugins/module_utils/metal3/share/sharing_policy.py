# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Which namespaces a BareMetalHost is shared with: the annotation ``baremetal.tenancy/host-claim-namespaces``.

The annotation's value is the policy as compact JSON, ``{"matches":"p-.*"}``
or ``{"withLabel":["team=a"]}``, with the semantics of the Metal3 HostClaim
proposal's ``hostClaimNamespaces``:

* A host without the annotation is not shared with anyone.
* ``matches`` is an RE2 pattern (Go ``regexp`` syntax, which is RE2 syntax)
  that must match the WHOLE namespace name: ``p-.*`` allows ``p-a`` and
  refuses ``xp-a``.  It is evaluated with google-re2 only (linear time);
  Python's ``re`` is never used for it.
* ``withLabel`` entries are ``key`` (the namespace carries the label, with any
  value) or ``key=value``; the namespace must carry ONE of them.
* When both are set, BOTH must hold.
* A subfield that is ``null``, ``""`` or ``[]`` is not set (Go zero values).
  A policy that sets neither subfield shares nothing and is reported.
* Anything invalid shares nothing (fail closed) and is reported: a value that
  is empty, not JSON, longer than ``MAX_VALUE_LENGTH``, not a JSON object, an
  object with a repeated or unknown key, a bad pattern or entry, or google-re2
  missing while ``matches`` is set.  ``parse_annotation`` and
  ``validate_policy`` list the problems, ``evaluate`` gives the reason.  A
  problem never quotes more than ``SHOWN_LENGTH`` characters of a bad value.

Why an annotation: baremetal-operator writes a host back with a full update of
its typed Go object (finalizer, inspection, clearing the reboot annotations),
which drops every spec field its types lack, and an upgrade re-applies its CRD
without them.  Annotations are ObjectMeta, which its types carry.  The policy's
former home, ``spec.hostClaimNamespaces``, is no longer read: a host that
carries it and no annotation is shared with nobody and reported
(``has_legacy_policy``); ``sharing_patch``, the one place that builds the
write, sets the annotation and removes the leftover field in the same patch.
"""

from __future__ import annotations

import json
from collections import namedtuple
from collections.abc import Mapping
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.libraries import RE2, missing_message
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.selectors import (
    dns1123_label_problem,
    label_key_problem,
    label_value_problem,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import (
    LEGACY_SHARING_FIELD,
    SHARING_ANNOTATION,
)

try:
    import re2

    HAS_RE2 = True
except ImportError:
    re2 = None
    HAS_RE2 = False

ANNOTATION = SHARING_ANNOTATION
LEGACY_FIELD = LEGACY_SHARING_FIELD
POLICY_KEYS = ("matches", "withLabel")
MISSING_RE2 = missing_message(RE2)
#: a longer annotation value is refused unread (the API server allows 256 KiB for all annotations together)
MAX_VALUE_LENGTH = 65536
#: how much of a bad value a problem quotes
SHOWN_LENGTH = 40
#: how many bad withLabel entries are listed one by one
MAX_PROBLEMS = 5

Decision = namedtuple("Decision", ["allowed", "reason"])

_CACHE_SIZE = 512
_CACHE = {}

_JSON_TYPES = ((bool, "a boolean"), (str, "a string"), ((int, float), "a number"), (list, "an array"))


def shown(value: Any) -> str:
    """``repr`` of a value from the annotation, cut to ``SHOWN_LENGTH`` characters."""
    if isinstance(value, str) and len(value) > SHOWN_LENGTH:
        return "%r... (%d characters)" % (value[:SHOWN_LENGTH], len(value))
    text = repr(value)
    return text if len(text) <= SHOWN_LENGTH + 2 else text[:SHOWN_LENGTH] + "..."


def _cut(text: str, limit: int = 2 * SHOWN_LENGTH) -> str:
    """``text`` cut to ``limit`` characters (error texts can quote a whole pattern)."""
    return text if len(text) <= limit else text[:limit] + "..."


def _json_type(value):
    if value is None:
        return "null"
    for types, name in _JSON_TYPES:
        if isinstance(value, types):
            return name
    return type(value).__name__


def annotation_value(host: dict | None) -> Any:
    """The raw value of the sharing annotation of a BMH dict, or ``None`` without one."""
    annotations = ((host or {}).get("metadata") or {}).get("annotations")
    return annotations.get(ANNOTATION) if isinstance(annotations, dict) else None


def encode_policy(policy: dict) -> str:
    """The annotation value for a policy: compact JSON, keys sorted (``{"matches":"p-.*"}``)."""
    return json.dumps(policy, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class _RepeatedKey(ValueError):
    """A JSON object names a key twice (JSON decoders disagree on which one wins: refuse)."""


def _no_repeated_keys(pairs):
    seen = {}
    for key, value in pairs:
        if key in seen:
            raise _RepeatedKey("a JSON object gives the key %s twice" % shown(key))
        seen[key] = value
    return seen


def parse_annotation(value: Any) -> tuple[Any, list[str]]:
    """``(policy, problems)`` of an annotation value.

    ``(None, [])`` without a value (not shared); ``(None, [problem])`` when
    the value is no JSON object; otherwise the object and
    :func:`validate_policy`'s problems.  Never raises.
    """
    if value is None:
        return None, []
    if not isinstance(value, str):
        return None, ["the value must be a string of JSON, got %s" % type(value).__name__]
    if len(value) > MAX_VALUE_LENGTH:
        return None, [
            "the value is %d characters long, more than the %d that are read" % (len(value), MAX_VALUE_LENGTH)
        ]
    if not value.strip():
        return None, ['the value is empty, not a JSON object such as {"matches":"tenant-.*"}']
    try:
        policy = json.loads(value, object_pairs_hook=_no_repeated_keys)
    except _RepeatedKey as exc:
        return None, [str(exc)]
    except json.JSONDecodeError as exc:
        return None, ["the value is not valid JSON (%s at character %d): %s" % (exc.msg, exc.pos, shown(value))]
    except (ValueError, RecursionError) as exc:
        return None, ["the value is not valid JSON (%s): %s" % (_cut(str(exc)), shown(value))]
    if not isinstance(policy, dict):
        return None, [
            "the value must be a JSON object with matches and/or withLabel, got %s: %s"
            % (_json_type(policy), shown(value))
        ]
    return policy, validate_policy(policy)


def host_policy(host: dict | None) -> tuple[Any, list[str]]:
    """``parse_annotation`` of a BMH dict's sharing annotation."""
    return parse_annotation(annotation_value(host))


def _host_name(host):
    meta = (host or {}).get("metadata") or {}
    return "BareMetalHost %s/%s" % (meta.get("namespace"), meta.get("name"))


def policy_problems(host: dict | None) -> list[str]:
    """The problems of a BMH's sharing annotation, each naming the host and the annotation (``[]``: valid or absent)."""
    problems = host_policy(host)[1]
    return ["%s: annotation %s: %s" % (_host_name(host), ANNOTATION, problem) for problem in problems]


def legacy_warning(names: list[str], shown_names: int = 10) -> str:
    """The owner's warning about hosts whose policy is still in ``spec.hostClaimNamespaces`` (``names``: ``ns/name``)."""
    listed = ", ".join(names[:shown_names]) + (
        " and %d more" % (len(names) - shown_names) if len(names) > shown_names else ""
    )
    return (
        "%d BareMetalHost(s) carry spec.%s and no annotation %s: the field is no longer read, so they are shared "
        "with no namespace (%s). Run baremetal.tenancy.host_share or the baremetal.tenancy.host_pool role again: "
        "it writes the annotation and removes the field." % (len(names), LEGACY_FIELD, ANNOTATION, listed)
    )


def _spec(host):
    spec = (host or {}).get("spec")
    return spec if isinstance(spec, dict) else {}


def has_legacy_policy(host: dict | None) -> bool:
    """True if the BMH still carries ``spec.hostClaimNamespaces`` and no sharing annotation (so it is shared with nobody)."""
    return annotation_value(host) is None and _spec(host).get(LEGACY_FIELD) is not None


def has_legacy_field(host: dict | None) -> bool:
    """True if the BMH carries the key ``spec.hostClaimNamespaces`` at all (``sharing_patch`` removes it)."""
    return LEGACY_FIELD in _spec(host)


def _set_members(policy):
    return dict((key, value) for key, value in policy.items() if _is_set(value))


def sharing_patch(host: dict | None, wanted: dict | None) -> dict:
    """The JSON merge patch that gives ``host`` the sharing ``wanted`` (``None``: shared with nobody), or ``{}``.

    Sets (or removes) the annotation, and removes a leftover
    ``spec.hostClaimNamespaces`` in the same patch.  An annotation that
    already holds the same policy (unset members ignored, however it is
    formatted) is not rewritten, so a second run writes nothing.
    """
    patch = {}
    current_value = annotation_value(host)
    if wanted is None or not _set_members(wanted):
        if current_value is not None:
            patch["metadata"] = {"annotations": {ANNOTATION: None}}
    else:
        current, problems = parse_annotation(current_value)
        if current is None or problems or _set_members(current) != _set_members(wanted):
            patch["metadata"] = {"annotations": {ANNOTATION: encode_policy(_set_members(wanted))}}
    if has_legacy_field(host):
        patch["spec"] = {LEGACY_FIELD: None}
    return patch


def sharing_view(host: dict | None) -> dict:
    """What a diff shows of a host's sharing: ``sharing`` (the policy of the annotation, or its raw value when
    it is no JSON), and ``legacy_sharing`` (the ignored ``spec.hostClaimNamespaces``) while that is present."""
    value = annotation_value(host)
    policy, _problems = parse_annotation(value)
    view = {"sharing": policy if policy is not None else (shown(value) if value is not None else None)}
    if has_legacy_field(host):
        view["legacy_sharing"] = _spec(host)[LEGACY_FIELD]
    return view


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
        return ["matches %s cannot be checked: %s" % (shown(pattern), MISSING_RE2)]
    error = compile_pattern(pattern)[1]
    if error:
        return ["matches %s is not a valid RE2 pattern: %s" % (shown(pattern), _cut(error, SHOWN_LENGTH))]
    return []


def _entry_problem(index, entry):
    where = "withLabel[%d]" % index
    if not isinstance(entry, str):
        return '%s must be a string "key" or "key=value", got %s' % (where, type(entry).__name__)
    key, value = parse_with_label(entry)
    problem = label_key_problem(key) or (value is not None and label_value_problem(value))
    if problem:
        for part in (key, key.rpartition("/")[0], value):
            if part and len(part) > SHOWN_LENGTH:
                problem = problem.replace(repr(part), shown(part))
        return "%s %s: %s" % (where, shown(entry), _cut(problem, 4 * SHOWN_LENGTH))
    return None


def _with_label_problems(entries):
    if not isinstance(entries, list):
        return ['withLabel must be a list of "key" or "key=value" strings']
    problems = [problem for problem in (_entry_problem(i, entry) for i, entry in enumerate(entries)) if problem]
    if len(problems) > MAX_PROBLEMS:
        problems[MAX_PROBLEMS:] = ["and %d more bad withLabel entries" % (len(problems) - MAX_PROBLEMS)]
    return problems


def _structure_problems(policy):
    if not isinstance(policy, dict):
        return ["the policy must be a mapping with matches and/or withLabel, got %s" % _json_type(policy)]
    unknown = sorted(set(policy) - set(POLICY_KEYS), key=str)
    if unknown:
        return ["unknown field(s) %s (expected matches, withLabel)" % _cut(", ".join(shown(key) for key in unknown))]
    if not _is_set(policy.get("matches")) and not _is_set(policy.get("withLabel")):
        return ["the policy sets neither matches nor withLabel, so the host is shared with no namespace"]
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
        return Decision(False, "matches %s cannot be evaluated: %s" % (shown(pattern), _cut(error, SHOWN_LENGTH)))
    if compiled.fullmatch(namespace) is None:
        return Decision(False, "namespace %r does not match the whole pattern %s" % (namespace, shown(pattern)))
    return None


def _check_with_label(entries, namespace, labels):
    if any(_label_entry_present(entry, labels) for entry in entries):
        return None
    return Decision(False, "namespace %r carries none of the labels %s" % (namespace, _cut(", ".join(entries))))


def evaluate(policy: Any, namespace: str, ns_labels: Mapping[str, str] | None) -> Decision:
    """Decide whether a host with ``policy`` (decoded) is shared with ``namespace`` (labels ``ns_labels``).

    Returns ``Decision(allowed, reason)``; never raises for a bad policy.
    """
    if policy is None:
        return Decision(False, "the host has no annotation %s, so it is not shared" % ANNOTATION)
    return _decide(policy, validate_policy(policy), namespace, ns_labels)


def _decide(policy, problems, namespace, ns_labels):
    if problems:
        return Decision(
            False,
            "invalid sharing policy (annotation %s), the host is shared with no namespace: %s"
            % (ANNOTATION, "; ".join(problems)),
        )
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
    return Decision(True, "namespace %r is allowed by the annotation %s" % (namespace, ANNOTATION))


def evaluate_annotation(value: Any, namespace: str, ns_labels: Mapping[str, str] | None) -> Decision:
    """``evaluate`` for a raw annotation value (``None``: no annotation); a value that does not parse refuses."""
    if value is None:
        return evaluate(None, namespace, ns_labels)
    policy, problems = parse_annotation(value)
    return _decide(policy, problems, namespace, ns_labels)


def decision_key(host: dict | None) -> tuple:
    """What a host's decisions depend on, hashable: hosts with equal keys get the same decision for a namespace."""
    value = annotation_value(host)
    if value is not None and not isinstance(value, str):
        value = (type(value).__name__, repr(value))  # not from the API server; decided as invalid all the same
    return (value, has_legacy_policy(host))


def is_shared(host: dict | None, namespace: str, ns_labels: Mapping[str, str] | None) -> Decision:
    """The decision for a BMH dict: its annotation decides; ``spec.hostClaimNamespaces`` is never read."""
    if has_legacy_policy(host):
        return Decision(
            False,
            "the host has no annotation %s, so it is not shared (its spec.%s is no longer read: "
            "run host_share or the host_pool role again to write the annotation)" % (ANNOTATION, LEGACY_FIELD),
        )
    return evaluate_annotation(annotation_value(host), namespace, ns_labels)
