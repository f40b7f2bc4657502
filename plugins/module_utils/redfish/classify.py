# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Classify hosts from their Redfish system document with ordered rules.  Pure.

A rule is data::

    {"name": "large",                       # optional, for reports and errors
     "when": "MemorySummary.TotalSystemMemoryGiB >= `256` && ProcessorSummary.Count >= `64`",
     "labels": {"infra-kind": "large"},     # BareMetalHost labels (metal3)
     "resource_class": "baremetal-large",   # Ironic resource class
     "traits": ["CUSTOM_LARGE"],            # Ironic traits
     "stop": False}                         # stop evaluating after this rule matches

``when`` is a JMESPath expression evaluated over the system document (see
:func:`client.system_document`: the ``ComputerSystem`` resource with its
``Processors`` and ``EthernetInterfaces`` collections expanded into
``Members``).  The rule matches when the result is truthy in JMESPath's sense
(not ``false``, ``null``, an empty string, list or object).  A rule without
``when`` matches every host (a default at the end of the list).

Rules are evaluated in order and every matching rule contributes:

* a label key or the resource class is set by the FIRST matching rule that
  sets it (a later, more general rule never overrides an earlier one);
* traits accumulate (union, in order of first appearance);
* a matching rule with ``stop: true`` ends the evaluation.

Comparisons of a missing field with a number give ``null`` in JMESPath, so a
rule over a figure the BMC does not report simply does not match.  An
expression that cannot be evaluated on a document (a function given the
wrong type, such as ``length(null)``) does not match either, and the rule is
listed in ``unevaluable_rules``.
"""

from __future__ import annotations

import re
import traceback
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.libraries import JMESPATH, MissingLibrary
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.selectors import (
    label_key_problem,
    label_value_problem,
)

try:
    import jmespath
    from jmespath.exceptions import JMESPathError

    HAS_JMESPATH = True
    JMESPATH_IMPORT_ERROR = None
except ImportError:  # pragma: no cover - reported by compile_rules
    JMESPATH_IMPORT_ERROR = traceback.format_exc()
    jmespath = None
    JMESPathError = Exception
    HAS_JMESPATH = False

RULE_KEYS = ("name", "when", "labels", "resource_class", "traits", "stop")
# Ironic: standard traits (os-traits, upper case with underscores) or CUSTOM_*; at most 255 characters.
TRAIT_RE = re.compile(r"^[A-Z][A-Z0-9_]{0,254}$")
# Ironic resource classes: at most 80 characters; placement normalises them to CUSTOM_<UPPER>.
RESOURCE_CLASS_RE = re.compile(r"^[A-Za-z0-9_.-]{1,80}$")


class Rule:
    """A validated, compiled rule."""

    __slots__ = ("expression", "index", "labels", "name", "resource_class", "stop", "traits", "when")

    def __init__(self, index, name, when, expression, labels, resource_class, traits, stop):
        self.index = index
        self.name = name
        self.when = when
        self.expression = expression
        self.labels = labels
        self.resource_class = resource_class
        self.traits = traits
        self.stop = stop

    @property
    def label(self) -> str:
        return self.name or "#%d" % self.index

    def matches(self, document: dict) -> bool:
        """Whether the rule matches; raises JMESPathError when the expression
        cannot be evaluated on this document (``length(null)``...)."""
        if self.expression is None:
            return True
        return _truthy(self.expression.search(document))


def _truthy(value):
    """JMESPath truthiness: false, null, '', [] and {} are false; 0 is true."""
    if value is None or value is False:
        return False
    if isinstance(value, (str, list, dict)) and not value:
        return False
    return True


def _where(index, rule):
    name = rule.get("name") if isinstance(rule, dict) else None
    return "option rules[%d] (classification rule %s)" % (index, repr(name) if name else "#%d" % index)


def compile_rule(index: int, rule: Any) -> Rule:
    """Validate one rule (a dict) and compile its expression; raise InvalidInput naming it."""
    where = _where(index, rule)
    if not isinstance(rule, dict):
        raise InvalidInput(where, "must be a mapping, got %s" % type(rule).__name__)
    unknown = sorted(set(rule) - set(RULE_KEYS))
    if unknown:
        raise InvalidInput(where, "unknown key(s) %s; allowed: %s" % (", ".join(unknown), ", ".join(RULE_KEYS)))
    name = rule.get("name")
    if name is not None and not isinstance(name, str):
        raise InvalidInput(where, "name must be a string")
    when = rule.get("when")
    expression = None
    if when is not None:
        if not isinstance(when, str) or not when.strip():
            raise InvalidInput(where, "when must be a non-empty JMESPath expression")
        if not HAS_JMESPATH:
            raise MissingLibrary(JMESPATH, JMESPATH_IMPORT_ERROR)
        try:
            expression = jmespath.compile(when)
        except JMESPathError as exc:
            raise InvalidInput(
                where, "when: invalid JMESPath expression %r: %s" % (when, " ".join(str(exc).split()))
            ) from exc
    labels = rule.get("labels") or {}
    if not isinstance(labels, dict):
        raise InvalidInput(where, "labels must be a mapping")
    clean_labels = {}
    for key, raw_value in labels.items():
        given = "" if raw_value is None else raw_value
        if isinstance(given, bool) or not isinstance(given, (str, int)):
            raise InvalidInput(where, "label %s: value must be a string" % key)
        value = str(given)
        problem = label_key_problem(key) if isinstance(key, str) else "must be a string"
        if problem:
            raise InvalidInput(where, "label %s" % problem)
        problem = label_value_problem(value)
        if problem:
            raise InvalidInput(where, "label %s: %s" % (key, problem))
        clean_labels[key] = value
    resource_class = rule.get("resource_class")
    if resource_class is not None and (
        not isinstance(resource_class, str) or not RESOURCE_CLASS_RE.match(resource_class)
    ):
        raise InvalidInput(where, "resource_class %r must be 1-80 letters, digits, '_', '-' or '.'" % (resource_class,))
    traits = rule.get("traits") or []
    if not isinstance(traits, list):
        raise InvalidInput(where, "traits must be a list")
    for trait in traits:
        if not isinstance(trait, str) or not TRAIT_RE.match(trait):
            raise InvalidInput(where, "trait %r must be an upper-case trait name (for example CUSTOM_GPU)" % (trait,))
    stop = rule.get("stop", False)
    if not isinstance(stop, bool):
        raise InvalidInput(where, "stop must be true or false")
    return Rule(index, name, when, expression, clean_labels, resource_class, list(traits), stop)


def compile_rules(rules: Any) -> list[Rule]:
    """Validate and compile a list of rules (all of them, before any host is touched)."""
    if rules is None:
        return []
    if not isinstance(rules, list):
        raise InvalidInput("option rules", "must be a list of rules")
    return [compile_rule(i, rule) for i, rule in enumerate(rules)]


class Classification:
    """What the rules say about one host."""

    __slots__ = ("labels", "matched", "resource_class", "traits", "unevaluable")

    def __init__(self, labels=None, resource_class=None, traits=None, matched=None, unevaluable=None):
        self.labels = labels or {}
        self.resource_class = resource_class
        self.traits = traits or []
        self.matched = matched or []
        self.unevaluable = unevaluable or []

    def as_dict(self) -> dict:
        return dict(
            labels=dict(self.labels),
            resource_class=self.resource_class,
            traits=list(self.traits),
            matched_rules=list(self.matched),
            unevaluable_rules=list(self.unevaluable),
        )

    def __eq__(self, other):
        return isinstance(other, Classification) and self.as_dict() == other.as_dict()

    def __ne__(self, other):
        return not self == other

    # Mutable, compared by value: never a dict key or set member.
    __hash__ = None

    def __repr__(self):
        return "Classification(%r)" % (self.as_dict(),)


def classify(document: dict, rules: list[Rule]) -> Classification:
    """Apply compiled ``rules`` (see :func:`compile_rules`) to one system document."""
    labels = {}
    resource_class = None
    traits = []
    matched = []
    unevaluable = []
    for rule in rules:
        try:
            if not rule.matches(document):
                continue
        except JMESPathError:
            unevaluable.append(rule.label)
            continue
        matched.append(rule.label)
        for key, value in rule.labels.items():
            labels.setdefault(key, value)
        if resource_class is None and rule.resource_class is not None:
            resource_class = rule.resource_class
        for trait in rule.traits:
            if trait not in traits:
                traits.append(trait)
        if rule.stop:
            break
    return Classification(labels, resource_class, traits, matched, unevaluable)
