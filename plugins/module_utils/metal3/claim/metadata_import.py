# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Host -> claim: which labels and annotations of a BareMetalHost are imported onto its claim, pure.

* labels are imported unless their domain is reserved (``metal3.io``,
  ``x-k8s.io``, ``kubernetes.io``, ``k8s.io``, ``openshift.io`` and their
  subdomains, except ``topology.kubernetes.io``): those carry operator state
  and the previous consumer's data (``node-reuse`` names another tenant's
  namespace);
* annotations are imported ONLY from an allow-list of domains (default
  ``export.hostclaim.metal3.io``): the administrator opts in per annotation;
  the owner's sharing policy (``baremetal.tenancy/host-claim-namespaces``,
  which names other tenants) never, whatever the allow-list;
* any key or value that looks sensitive (``bmc_data.looks_sensitive``) or
  repeats the host's BMC data (``bmc_data.bmc_match``) is never imported,
  whatever its domain; ``import_metadata``'s ``withheld`` says what the
  binder reports to the owner (key and reason, never the value).

Imported keys are tracked on the claim in ``hostclaim.metal3.io/imported-labels``
and ``hostclaim.metal3.io/imported-annotations`` (JSON lists) and removed when
they vanish from the BMH.
"""

from __future__ import annotations

from collections.abc import Sequence

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.selectors import (
    label_key_problem,
    label_value_problem,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import (
    BINDING_DOMAIN,
    EXPORT_ANNOTATION_DOMAINS,
    IMPORTED_ANNOTATIONS,
    IMPORTED_LABELS,
    SHARING_ANNOTATION,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.bmc_data import (
    bmc_match,
    bmc_rules,
    looks_sensitive,
    mentions,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.downward import (
    RESERVED_DOMAIN,
    tracked_keys,
    tracking_value,
)

DENIED_LABEL_DOMAINS = ("metal3.io", "x-k8s.io", "kubernetes.io", "k8s.io", "openshift.io")


ALLOWED_LABEL_DOMAINS = ("topology.kubernetes.io",)


MAX_IMPORTED_VALUE = 4096

#: host annotations never imported, whatever the allow-list says
NEVER_IMPORTED_ANNOTATIONS = (SHARING_ANNOTATION,)


def _key_domain(key):
    prefix, sep = key.rpartition("/")[:2]
    return prefix if sep else ""


def _in_domains(prefix, domains):
    return any(prefix == domain or prefix.endswith("." + domain) for domain in domains)


#: ``import_verdict`` result for an item that is not imported by policy (domain, format): not reported
NOT_IMPORTED = ""


def _content_verdict(key, value, bmc_values, blocked):
    """``None`` if the key and value may cross, else the reason to report (withheld)."""
    if blocked:
        return blocked
    for part, text in (("key", key), ("value", value)):
        what = bmc_match(text, bmc_values)
        if what:
            return "the %s repeats the %s" % (part, what)
    if looks_sensitive(key) or looks_sensitive(value):
        return "the key or value looks like BMC or credential data"
    return None


def _label_policy(key, value):
    """True if policy imports a BMH label, before its content is checked."""
    if not isinstance(key, str) or label_key_problem(key) or label_value_problem(value):
        return False
    domain = _key_domain(key)
    return not _in_domains(domain, DENIED_LABEL_DOMAINS) or _in_domains(domain, ALLOWED_LABEL_DOMAINS)


def _annotation_policy(key, value, domains):
    """True if policy imports a BMH annotation (allow-listed domains only), before its content is checked."""
    if not isinstance(key, str) or label_key_problem(key) or _key_domain(key) not in domains:
        return False
    return key not in NEVER_IMPORTED_ANNOTATIONS and isinstance(value, str) and len(value) <= MAX_IMPORTED_VALUE


def label_verdict(key, value="", bmc_values=(), blocked=None):
    """``None`` if a BMH label may be copied to the claim; ``NOT_IMPORTED`` (policy) or the reason it is withheld.

    ``blocked`` (a reason) withholds every label that policy would import (the
    binder could not read the BMC credentials: fail closed).
    """
    if not _label_policy(key, value):
        return NOT_IMPORTED
    return _content_verdict(key, value, bmc_values, blocked)


def annotation_verdict(key, value="", domains=EXPORT_ANNOTATION_DOMAINS, bmc_values=(), blocked=None):
    """As ``label_verdict`` for a BMH annotation (allow-listed domains only)."""
    if not _annotation_policy(key, value, domains):
        return NOT_IMPORTED
    return _content_verdict(key, value, bmc_values, blocked)


def label_importable(key, value="", bmc_values=()):
    """True if a BMH label may be copied to the claim."""
    return label_verdict(key, value, bmc_values) is None


def annotation_importable(key, value="", domains=EXPORT_ANNOTATION_DOMAINS, bmc_values=()):
    """True if a BMH annotation may be copied to the claim (allow-listed domains only)."""
    return annotation_verdict(key, value, domains, bmc_values) is None


def has_import_candidates(
    host_meta: dict | None, annotation_domains: Sequence[str] = EXPORT_ANNOTATION_DOMAINS
) -> bool:
    """True if any label or annotation of the BMH metadata passes the policy rules (so its content must be checked)."""
    host_meta = host_meta or {}
    return any(_label_policy(k, v) for k, v in (host_meta.get("labels") or {}).items()) or any(
        _annotation_policy(k, v, annotation_domains) for k, v in (host_meta.get("annotations") or {}).items()
    )


def _protected(key):
    """Keys the import never removes, whatever the (tenant-editable) tracking annotation says."""
    return _key_domain(key) in (BINDING_DOMAIN, RESERVED_DOMAIN)


def _offered(source, verdict):
    """``(wanted, withheld)``: the items of ``source`` that may cross and ``(key, reason)`` of those withheld."""
    wanted, withheld = {}, []
    for key, value in sorted(source.items(), key=lambda item: str(item[0])):
        reason = verdict(key, value)
        if reason is None:
            wanted[key] = value
        elif reason:
            withheld.append((key, reason))
    return wanted, withheld


def _section(current, wanted, tracking_key, tracking_holder):
    tracked = tracked_keys(tracking_holder, tracking_key)
    to_set = dict((k, v) for k, v in wanted.items() if current.get(k) != v)
    stale = [k for k in tracked if k not in wanted and k in current and not _protected(k)]
    return {"set": to_set, "remove": sorted(set(stale)), "keys": sorted(wanted)}


def _withheld_items(kind, withheld, bmc_values):
    """Report entries: the key, unless the key itself repeats BMC data (then ``None``), and the reason."""
    return [
        {"kind": kind, "key": None if mentions(key, bmc_values) else key, "reason": reason} for key, reason in withheld
    ]


def _tracking_patch(annotations, key, keys):
    value = tracking_value(keys)
    if value == (annotations or {}).get(key) or (value is None and key not in (annotations or {})):
        return {}
    return {key: value}


def _section_patch(section):
    patch = dict(section["set"])
    patch.update((key, None) for key in section["remove"])
    return patch


def host_offer(host_meta, annotation_domains=EXPORT_ANNOTATION_DOMAINS, bmc_values=(), blocked=None):
    """The half of ``import_metadata`` that depends on the host alone: ``{'labels', 'annotations', 'withheld'}``,
    the labels and annotations that may cross (policy and content rules) and the report of those withheld.

    A pass computes it once per host object and gives it to ``import_metadata`` (``offer``) for each claim
    write that imports from that host: the content rules scan every key and value for the host's BMC data.
    """
    host_meta = host_meta or {}
    bmc_values = bmc_rules(bmc_values)  # once for every key and value of the host
    labels, labels_withheld = _offered(
        host_meta.get("labels") or {}, lambda k, v: label_verdict(k, v, bmc_values, blocked)
    )
    annotations, annotations_withheld = _offered(
        host_meta.get("annotations") or {},
        lambda k, v: annotation_verdict(k, v, annotation_domains, bmc_values, blocked),
    )
    return {
        "labels": labels,
        "annotations": annotations,
        "withheld": (
            _withheld_items("label", labels_withheld, bmc_values)
            + _withheld_items("annotation", annotations_withheld, bmc_values)
        ),
    }


def import_metadata(
    claim_meta, host_meta, annotation_domains=EXPORT_ANNOTATION_DOMAINS, bmc_values=(), blocked=None, offer=None
):
    """Labels and annotations to import from the BMH metadata onto the claim.

    ``host_meta`` ``None`` (unbound) removes every tracked import.  Nothing
    repeating one of ``bmc_values`` (pass ``bmc_needles(host, user, password)``,
    or plain strings; see ``bmc_match``) is imported, on top of the deny rules
    of this module; ``blocked`` (a reason) withholds everything policy would
    import (fail closed when the BMC credentials could not be read).  ``offer``:
    the host's ``host_offer`` (with those arguments) when already computed, in
    place of them.  Returns
    ``{'labels': {'set', 'remove'}, 'annotations': {'set', 'remove'}, 'patch', 'withheld'}``
    where ``annotations`` includes the two tracking annotations, ``patch``
    is the claim merge patch (``{}`` when nothing changes) and ``withheld``
    lists ``{kind, key, reason}`` for each label (``kind: label``) or
    annotation the content rules kept back (never the value; ``key`` is
    ``None`` when the key itself repeats BMC data): for the owner, never the tenant.
    """
    if offer is None:
        offer = host_offer(host_meta, annotation_domains, bmc_values, blocked)
    claim_meta = claim_meta or {}
    claim_labels = claim_meta.get("labels") or {}
    claim_annotations = claim_meta.get("annotations") or {}
    labels = _section(claim_labels, offer["labels"], IMPORTED_LABELS, claim_annotations)
    annotations = _section(claim_annotations, offer["annotations"], IMPORTED_ANNOTATIONS, claim_annotations)
    label_patch = _section_patch(labels)
    annotation_patch = _section_patch(annotations)
    annotation_patch.update(_tracking_patch(claim_annotations, IMPORTED_LABELS, labels["keys"]))
    annotation_patch.update(_tracking_patch(claim_annotations, IMPORTED_ANNOTATIONS, annotations["keys"]))
    metadata = {}
    if label_patch:
        metadata["labels"] = label_patch
    if annotation_patch:
        metadata["annotations"] = annotation_patch
    return {
        "labels": {"set": labels["set"], "remove": labels["remove"]},
        "annotations": {
            "set": dict((k, v) for k, v in annotation_patch.items() if v is not None),
            "remove": sorted(k for k, v in annotation_patch.items() if v is None),
        },
        "patch": {"metadata": metadata} if metadata else {},
        "withheld": list(offer["withheld"]),
    }
