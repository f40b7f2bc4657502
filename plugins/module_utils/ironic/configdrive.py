# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The config drive of an Ironic deployment: build and validate it.  Pure.

Ironic (API >= 1.56) accepts the config drive as a JSON object
``{"meta_data": {...}, "user_data": "...", "network_data": {...}}`` and
builds the ISO itself.  This file checks the three parts the way cloud-init
will read them, so that a mistake is reported before anything is deployed:

- ``user_data`` is text.  When it is declared as cloud-config (its first line
  is ``#cloud-config``) it must be a YAML mapping.  Other cloud-init formats
  (``#!`` scripts, ``#include``, ``#cloud-boothook``, ``#part-handler``,
  ``## template: jinja`` templates, MIME multipart) pass as they are; text in
  no known format gets a warning, because cloud-init ignores it.
- ``network_data`` has the shape of OpenStack's ``network_data.json``:
  ``links``, ``networks`` and ``services`` lists; every network names an
  existing link.
- ``meta_data`` is a JSON object with string keys; the claim's name is the
  default ``hostname`` and ``name``.

:func:`configdrive_digest` is a stable hash of the content.  Ironic never
shows a config drive back (it answers ``******``), so the digest is what
tells a rerun whether the host already carries this content.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.libraries import PYYAML, MissingLibrary

try:
    import yaml

    HAS_YAML = True
except ImportError:  # pragma: no cover - PyYAML is a dependency of ansible-core
    HAS_YAML = False

CLOUD_CONFIG_HEADER = "#cloud-config"
# First-line markers of the other user-data formats cloud-init understands.
KNOWN_HEADERS = (
    "#!",
    "#include",
    "#cloud-boothook",
    "#part-handler",
    "#upstart-job",
    "#cloud-config-archive",
    "#cloud-config-jsonp",
    "## template: jinja",
)
MIME_MARKERS = ("content-type:", "mime-version:")

LINK_KEYS = ("id", "type")
NETWORK_KEYS = ("id", "type", "link")
NETWORK_DATA_LISTS = ("links", "networks", "services")

# A config drive is a small ISO; Ironic stores the JSON in instance_info and
# Nova limits user-data to 64 KiB.  Refuse what cannot be intended.
MAX_USER_DATA_BYTES = 16 * 1024 * 1024


def _first_line(text):
    return text.lstrip("\ufeff").split("\n", 1)[0].rstrip("\r").strip()


def user_data_format(text: str | None) -> str:
    """The cloud-init format of ``text``: ``cloud-config``, ``jinja``, ``mime``,
    ``script`` (any other known ``#`` header), ``empty`` or ``unknown``."""
    if not text or not text.strip():
        return "empty"
    first = _first_line(text)
    lowered = first.lower()
    if lowered == CLOUD_CONFIG_HEADER:
        return "cloud-config"
    if lowered.replace(" ", "") == "##template:jinja":
        return "jinja"
    if lowered.startswith(MIME_MARKERS):
        return "mime"
    for header in KNOWN_HEADERS:
        if lowered.startswith(header):
            return "script"
    return "unknown"


def _yaml_problem(exc):
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    if mark is not None:
        return "%s (line %d, column %d)" % (problem, mark.line + 1, mark.column + 1)
    return problem


def validate_user_data(text: Any, obj: str = "option user_data") -> list[str]:
    """Check ``text`` as cloud-init user-data; return a list of warnings.

    Raises :class:`InvalidInput` when the text declares itself cloud-config
    and is not a YAML mapping.
    """
    if text is None:
        return []
    if not isinstance(text, str):
        raise InvalidInput(obj, "must be text, got %s" % type(text).__name__)
    if len(text.encode("utf-8")) > MAX_USER_DATA_BYTES:
        raise InvalidInput(obj, "is larger than %d bytes" % MAX_USER_DATA_BYTES)
    fmt = user_data_format(text)
    if fmt == "cloud-config":
        if not HAS_YAML:  # pragma: no cover
            raise MissingLibrary(PYYAML)
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise InvalidInput(obj, "is declared #cloud-config but is not valid YAML: %s" % _yaml_problem(exc)) from exc
        if doc is not None and not isinstance(doc, dict):
            raise InvalidInput(obj, "is declared #cloud-config but is a YAML %s, not a mapping" % _yaml_kind(doc))
        if isinstance(doc, dict):
            bad = sorted(str(k) for k in doc if not isinstance(k, str))
            if bad:
                raise InvalidInput(
                    obj, "is declared #cloud-config but has keys that are not strings: %s" % ", ".join(bad)
                )
        return []
    if fmt == "unknown":
        return [
            "%s: the first line is not a format cloud-init knows (for example #cloud-config or #!/bin/sh); "
            "cloud-init will ignore it" % obj
        ]
    return []


def _yaml_kind(doc):
    if isinstance(doc, list):
        return "list"
    if isinstance(doc, str):
        return "string"
    if isinstance(doc, bool):
        return "boolean"
    if isinstance(doc, (int, float)):
        return "number"
    return type(doc).__name__


def _check_json(value, obj, path):
    """Everything in a config drive part must be plain JSON."""
    if value is None or isinstance(value, (str, bool, int, float)):
        if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
            raise InvalidInput(obj, "%s is not a JSON number" % path)
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_json(item, obj, "%s[%d]" % (path, i))
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidInput(obj, "%s has a key that is not a string: %r" % (path, key))
            _check_json(item, obj, "%s.%s" % (path, key))
        return
    raise InvalidInput(obj, "%s is a %s, not JSON data" % (path, type(value).__name__))


def validate_network_data(data: Any, obj: str = "option network_data") -> None:
    """Check the shape of OpenStack ``network_data.json``."""
    if data is None:
        return
    if not isinstance(data, dict):
        raise InvalidInput(obj, "must be a mapping with links, networks and services")
    _check_json(data, obj, "network_data")
    for key in NETWORK_DATA_LISTS:
        if key in data and not isinstance(data[key], list):
            raise InvalidInput(obj, "%s must be a list" % key)
    link_ids = set()
    for i, link in enumerate(data.get("links") or []):
        where = "links[%d]" % i
        if not isinstance(link, dict):
            raise InvalidInput(obj, "%s must be a mapping" % where)
        for key in LINK_KEYS:
            if not isinstance(link.get(key), str) or not link.get(key):
                raise InvalidInput(obj, "%s needs a non-empty string %s" % (where, key))
        if link["id"] in link_ids:
            raise InvalidInput(obj, "%s repeats the link id %s" % (where, link["id"]))
        link_ids.add(link["id"])
    network_ids = set()
    for i, net in enumerate(data.get("networks") or []):
        where = "networks[%d]" % i
        if not isinstance(net, dict):
            raise InvalidInput(obj, "%s must be a mapping" % where)
        for key in NETWORK_KEYS:
            if not isinstance(net.get(key), str) or not net.get(key):
                raise InvalidInput(obj, "%s needs a non-empty string %s" % (where, key))
        if net["link"] not in link_ids:
            raise InvalidInput(obj, "%s refers to link %s, which links does not define" % (where, net["link"]))
        if net["id"] in network_ids:
            raise InvalidInput(obj, "%s repeats the network id %s" % (where, net["id"]))
        network_ids.add(net["id"])
    for i, service in enumerate(data.get("services") or []):
        if not isinstance(service, dict) or not isinstance(service.get("type"), str):
            raise InvalidInput(obj, "services[%d] must be a mapping with a type" % i)


def validate_meta_data(data: Any, obj: str = "option meta_data") -> None:
    if data is None:
        return
    if not isinstance(data, dict):
        raise InvalidInput(obj, "must be a mapping")
    _check_json(data, obj, "meta_data")
    keys = data.get("public_keys")
    if keys is not None and not (isinstance(keys, dict) and all(isinstance(v, str) for v in keys.values())):
        raise InvalidInput(obj, "public_keys must map key names to public keys (strings)")


def build_configdrive(
    name: str, user_data: str | None = None, network_data: dict | None = None, meta_data: dict | None = None
) -> tuple[dict, list[str]]:
    """Validate the parts and return ``(configdrive dict, warnings)``.

    ``meta_data`` gets ``hostname`` and ``name`` from the claim's ``name``
    unless it sets them; Ironic adds the node's ``uuid``.  Returns ``None``
    for the dict when no part is given and the defaults are all there is:
    the host then gets a config drive with only its name.
    """
    warnings = validate_user_data(user_data)
    validate_network_data(network_data)
    validate_meta_data(meta_data)
    meta = {"hostname": name, "name": name}
    meta.update(meta_data or {})
    drive = {"meta_data": meta}
    if user_data is not None:
        drive["user_data"] = user_data
    if network_data is not None:
        drive["network_data"] = network_data
    return drive, warnings


def configdrive_digest(drive: dict | None) -> str | None:
    """``sha256:<hex>`` of a canonical JSON form of ``drive`` (``None`` for none)."""
    if drive is None:
        return None
    canonical = json.dumps(drive, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(canonical.encode("ascii")).hexdigest()


def network_addresses(network_data: dict | None) -> list[dict[str, str]]:
    """``[{type, address}]`` of the static IPs in ``network_data`` (for results)."""
    addresses = []
    for net in (network_data or {}).get("networks") or []:
        address = net.get("ip_address") if isinstance(net, dict) else None
        if isinstance(address, str) and address:
            kind = "InternalIP6" if ":" in address else "InternalIP"
            addresses.append({"type": kind, "address": address})
    return addresses
