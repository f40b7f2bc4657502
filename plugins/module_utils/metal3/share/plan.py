# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The owner's plan for the BareMetalHosts of one namespace: classes, labels, sharing.  Pure.

``host_share`` (backend metal3) reads the hosts once and asks this file what
to write.  The rules:

* Entries apply in order.  An entry picks hosts by ``names`` (or one
  ``name``) and/or ``selector`` (exact label values; both given: both must
  hold); a selector sees the labels that earlier entries set on the host.
* ``class`` sets the class label, ``labels`` sets labels (``None`` removes
  one); a later entry wins for the same label.
* ``share`` replaces the whole sharing policy, the annotation
  ``baremetal.tenancy/host-claim-namespaces`` (compact JSON, see
  :mod:`sharing_policy`): ``tenants`` -> ``withLabel``
  ``<tenant_label>=<name>``, ``all_tenants`` -> ``withLabel``
  ``<tenant_label>``, ``with_labels`` -> more ``withLabel`` entries,
  ``matches`` -> ``matches``.  ``{}`` (nothing set) stops sharing (the
  annotation is removed); no ``share`` key leaves sharing as it is.  A later
  entry wins.  Writing the sharing also removes a leftover
  ``spec.hostClaimNamespaces`` (where the policy lived before; no longer
  read), in the same patch: ``sharing_policy.sharing_patch`` builds it.
* Only hosts whose labels or sharing must change get a patch (a JSON merge
  patch), so a second run writes nothing.
* Every entry is checked before anything is planned: a bad entry is one
  :class:`InvalidInput` naming ``hosts[<index>]`` and the cause.  Names that
  are no host and selectors that match none are reported by the plan;
  the module refuses them (strict) before any write.

This file imports no client library.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import combine_patches, get_path
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.selectors import (
    dns1123_subdomain_problem,
    label_key_problem,
    label_value_problem,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.tenant_rules import (
    reserved_namespace_problem,
    tenant_name_problem,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share.sharing_policy import (
    ANNOTATION,
    HAS_RE2,
    MAX_VALUE_LENGTH,
    compile_pattern,
    encode_policy,
    sharing_patch,
    sharing_view,
)

ENTRY_KEYS = ("name", "names", "selector", "class", "labels", "share")
SHARE_KEYS = ("tenants", "all_tenants", "with_labels", "matches")


def label_text(value: Any) -> Any:
    """A label value as the API stores it: ``True`` -> ``"true"``, ``3`` -> ``"3"``; ``None`` stays ``None``."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return value  # refused by label_value_problem


def _problem(where, cause):
    raise InvalidInput(where, cause)


def _string_list(entry, key, where):
    value = entry.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        _problem(where, "%s must be a list of strings" % key)
    return value


def _names(entry, where):
    names = _string_list(entry, "names", where)
    single = entry.get("name")
    if single is not None:
        if not isinstance(single, str):
            _problem(where, "name must be a string")
        names = [*names, single]
    for name in names:
        problem = dns1123_subdomain_problem(name)
        if problem:
            _problem(where, "host name %r %s" % (name, problem))
    return names


def _label_map(value, what, where, allow_null):
    if value is None:
        return {}
    if not isinstance(value, dict):
        _problem(where, "%s must be a mapping of label keys to values" % what)
    result = {}
    for key, raw in value.items():
        text = label_text(raw)
        problem = label_key_problem(key)
        if not problem and not (allow_null and text is None):
            problem = label_value_problem(text)
        if problem:
            _problem(where, "%s: %s" % (what, problem))
        result[key] = text
    return result


def _with_label_entry(entry, where, index):
    if not isinstance(entry, str):
        _problem(where, 'share.with_labels[%d] must be a string "key" or "key=value"' % index)
    key, sep, value = entry.partition("=")
    problem = label_key_problem(key) or (sep and label_value_problem(value))
    if problem:
        _problem(where, "share.with_labels[%d] %r: %s" % (index, entry, problem))
    return entry


def _matches(pattern, where):
    if pattern is None or pattern == "":
        return None
    if not isinstance(pattern, str):
        _problem(where, "share.matches must be a string (an RE2 pattern)")
    if HAS_RE2:
        _compiled, error = compile_pattern(pattern)
        if error:
            _problem(where, "share.matches %r is not a valid RE2 pattern: %s" % (pattern, error))
    return pattern


def namespace_share(share: Any, tenant_label: str, where: str = "namespace_share") -> Any:
    """The sharing policy (``{matches, withLabel}``, ``None``: nobody) of the option ``namespace_share``, checked as a
    host's ``share`` is (the first problem is one :class:`InvalidInput` about ``where``)."""
    return _share(share or {}, tenant_label, where)


def _share(share, tenant_label, where):
    """The sharing policy an entry's ``share`` asks for (``None``: stop sharing)."""
    if not isinstance(share, dict):
        _problem(where, "share must be a mapping with tenants, all_tenants, with_labels and/or matches")
    unknown = sorted((str(key) for key in share if key not in SHARE_KEYS), key=str)
    if unknown:
        _problem(where, "share has unknown key(s) %s (known: %s)" % (", ".join(unknown), ", ".join(SHARE_KEYS)))
    with_label = []
    all_tenants = share.get("all_tenants")
    if all_tenants is not None and not isinstance(all_tenants, bool):
        _problem(where, "share.all_tenants must be true or false")
    if all_tenants:
        with_label.append(tenant_label)
    for tenant in _string_list(share, "tenants", where):
        problem = tenant_name_problem(tenant) or reserved_namespace_problem(tenant)
        if problem:
            _problem(where, "share.tenants: %s" % problem)
        with_label.append("%s=%s" % (tenant_label, tenant))
    for index, entry in enumerate(_string_list(share, "with_labels", where)):
        with_label.append(_with_label_entry(entry, where, index))
    value = {}
    matches = _matches(share.get("matches"), where)
    if matches:
        value["matches"] = matches
    if with_label:
        value["withLabel"] = list(dict.fromkeys(with_label))
    if value and len(encode_policy(value)) > MAX_VALUE_LENGTH:
        _problem(
            where,
            "share gives a policy longer than the %d characters of annotation %s" % (MAX_VALUE_LENGTH, ANNOTATION),
        )
    return value or None


def check_label_option(key: str, option: str) -> str:
    problem = label_key_problem(key)
    if problem:
        raise InvalidInput("option %s" % option, problem)
    return key


def validate_entries(entries: Any, tenant_label: str, where: str = "hosts") -> list[dict]:
    """Check every entry; return them normalised.

    Each becomes ``names`` (``None``: any name), ``selector``, ``host_class``,
    ``labels`` (values as text, ``None`` removes), ``share_set`` and
    ``share`` (the sharing policy asked for, ``None``: stop sharing).  The first problem is one :class:`InvalidInput` about
    ``hosts[<index>]``.
    """
    if not isinstance(entries, list):
        raise InvalidInput("option %s" % where, "must be a list of entries")
    result = []
    for index, entry in enumerate(entries):
        here = "%s[%d]" % (where, index)
        if not isinstance(entry, dict):
            _problem(here, "must be a mapping with names and/or selector")
        unknown = sorted((str(key) for key in entry if key not in ENTRY_KEYS), key=str)
        if unknown:
            _problem(here, "unknown key(s) %s (known: %s)" % (", ".join(unknown), ", ".join(ENTRY_KEYS)))
        names = _names(entry, here)
        selector = _label_map(entry.get("selector"), "selector", here, allow_null=False)
        if not names and not selector:
            _problem(here, "needs names (or name) or a selector")
        host_class = label_text(entry.get("class"))
        if host_class is not None:
            problem = label_value_problem(host_class) or (host_class == "" and "value must not be empty")
            if problem:
                _problem(here, "class: %s" % problem)
        share_set = "share" in entry
        result.append(
            dict(
                names=names or None,
                selector=selector,
                host_class=host_class,
                labels=_label_map(entry.get("labels"), "labels", here, allow_null=True),
                share_set=share_set,
                share=_share(entry["share"] or {}, tenant_label, here) if share_set else None,
            )
        )
    return result


def _entry_matches(entry, name, labels):
    if entry["names"] is not None and name not in entry["names"]:
        return False
    return all(labels.get(key) == value for key, value in entry["selector"].items())


def _one_pass(labels, name, entries, class_label, base=None):
    """The host's labels after the entries applied once in order, whether the share is set, the share and the matches.

    ``base``: ``(True, share)`` when the namespace's sharing applies to every host before the entries."""
    effective = dict(labels)
    share_set, share = base or (False, None)
    matched = []
    for index, entry in enumerate(entries):
        if not _entry_matches(entry, name, effective):
            continue
        matched.append(index)
        changes = {class_label: entry["host_class"]} if entry["host_class"] is not None else {}
        changes.update(entry["labels"])
        for key, value in changes.items():
            if value is None:
                effective.pop(key, None)
            else:
                effective[key] = value
        if entry["share_set"]:
            share_set, share = True, entry["share"]
    return effective, share_set, share, matched


def plan_host(
    host: dict, entries: Sequence[dict], class_label: str, base: tuple[bool, Any] | None = None
) -> tuple[dict, list[int]]:
    """``(patch, matched)`` for one BMH: the merge patch (``{}`` when nothing changes), the indexes of the entries that picked it.

    A selector sees the labels that earlier entries set.  A label that a later
    entry sets can make an earlier selector match on the next run, so the
    entries are applied until the labels settle (at most one pass per entry):
    the plan goes straight to where repeated runs would end, and a second run
    changes nothing.  ``base`` (``(True, share)``): the namespace's sharing, which every host gets unless an
    entry that picks it sets its own ``share``.
    """
    name = get_path(host, "metadata", "name")
    labels = get_path(host, "metadata", "labels") or {}
    current = dict(labels)
    for _pass in range(len(entries) + 1):
        settled, share_set, share, matched = _one_pass(current, name, entries, class_label, base)
        if settled == current:
            break
        current = settled
    patch = {}
    label_patch = dict((key, value) for key, value in current.items() if labels.get(key) != value)
    label_patch.update((key, None) for key in labels if key not in current)
    if label_patch:
        patch["metadata"] = {"labels": label_patch}
    if share_set:
        patch = combine_patches(patch, sharing_patch(host, share))
    return patch, matched


def host_view(host: dict) -> dict:
    """What ``host_share`` shows of a host in its diff: labels and sharing (``sharing_view``), nothing else."""
    return dict({"labels": dict(get_path(host, "metadata", "labels") or {})}, **sharing_view(host))


def plan_hosts(
    hosts: Sequence[dict], entries: Sequence[dict], class_label: str, base: tuple[bool, Any] | None = None
) -> dict:
    """The plan for the hosts of a namespace: ``changes`` (``name``, ``patch``), ``missing``, ``unmatched``.

    ``missing`` lists ``(index, name)`` of names that are no host,
    ``unmatched`` ``(index, selector)`` of entries with a selector that picked
    no host.
    """
    existing = set(get_path(host, "metadata", "name") for host in hosts)
    changes, hit = [], set()
    for host in sorted(hosts, key=lambda h: get_path(h, "metadata", "name") or ""):
        patch, matched = plan_host(host, entries, class_label, base)
        hit.update(matched)
        if patch:
            changes.append({"name": get_path(host, "metadata", "name"), "patch": patch, "host": host})
    missing = [
        (index, name) for index, entry in enumerate(entries) for name in entry["names"] or [] if name not in existing
    ]
    unmatched = [
        (index, entry["selector"]) for index, entry in enumerate(entries) if entry["selector"] and index not in hit
    ]
    return {"changes": changes, "missing": missing, "unmatched": unmatched}


def plan_problems(plan: dict, namespace: str, where: str = "hosts") -> list[str]:
    """The plan's unknown names and empty selectors, as sentences (``[]`` when there are none)."""
    problems = [
        "%s[%d]: no BareMetalHost named %s in namespace %s" % (where, index, name, namespace)
        for index, name in plan["missing"]
    ]
    problems.extend(
        "%s[%d]: no BareMetalHost in namespace %s carries the labels %s"
        % (where, index, namespace, json.dumps(selector, sort_keys=True))
        for index, selector in plan["unmatched"]
    )
    return problems


def refusal(plan: dict, namespace: str, where: str = "hosts") -> InvalidInput | None:
    """The :class:`InvalidInput` a strict run raises for the plan, or ``None``."""
    problems = plan_problems(plan, namespace, where)
    if not problems:
        return None
    return InvalidInput(
        "BareMetalHosts in namespace %s" % namespace,
        "%s. Nothing was changed (strict=false applies the other entries anyway)." % "; ".join(problems),
        {"problems": problems},
    )
