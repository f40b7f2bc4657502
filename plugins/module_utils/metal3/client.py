# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Kubernetes I/O of the metal3 backend: HostClaims, BareMetalHosts, Secrets, Namespaces.

:class:`KubeIO` sends raw REST requests through the ``kubernetes``
client's connection pool (JSON merge patches, JSON bodies, no model
classes), maps every failure through :func:`errors.wrap_errors` so that it
names the object, and counts requests per verb (for ``host_bind``'s
result and ``bench/bind.py``).

:class:`Watcher` follows one collection with a watch during a binder pass.
"""

import json
import threading

try:
    from urllib.parse import quote, urlencode
except ImportError:  # pragma: no cover - Python 2 is not supported by the collection
    from urllib import quote, urlencode

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import HttpError, NotFound, wrap_errors
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import get_path
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import API_VERSION

GROUP_VERSION = API_VERSION
CLAIMS = "hostclaims"
HOSTS = "baremetalhosts"
MERGE_PATCH = "application/merge-patch+json"
LIST_PAGE = 500
REQUEST_TIMEOUT = (10, 120)
VERBS = ("list", "watch", "get", "create", "patch", "delete")
WRITE_VERBS = ("create", "patch", "delete")


def _path(group_version, plural, namespace=None, name=None, subresource=None):
    prefix = "/api/v1" if group_version == "v1" else "/apis/%s" % group_version
    parts = [prefix]
    if namespace:
        parts.append("namespaces/%s" % quote(namespace, safe=""))
    parts.append(plural)
    if name:
        parts.append(quote(name, safe=""))
    if subresource:
        parts.append(subresource)
    return "/".join(parts)


def claim_label(namespace, name):
    return "HostClaim %s/%s" % (namespace, name)


def host_label(namespace, name):
    return "BareMetalHost %s/%s" % (namespace, name)


class KubeIO:
    """Raw JSON requests to the API server, errors mapped to TenancyError, requests counted."""

    def __init__(self, api_client, timeout=REQUEST_TIMEOUT):
        self.api_client = api_client
        self.configuration = api_client.configuration
        self.timeout = timeout
        self.counts = dict((verb, 0) for verb in VERBS)
        self.conflicts = 0
        self.list_versions = {}
        self._lock = threading.Lock()

    # -- transport -----------------------------------------------------------
    def headers(self, content_type):
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        for setting in (self.configuration.auth_settings() or {}).values():
            if setting.get("in") == "header" and setting.get("value"):
                headers[setting["key"]] = setting["value"]
        return headers

    def count(self, verb):
        with self._lock:
            self.counts[verb] = self.counts.get(verb, 0) + 1

    def count_conflict(self):
        with self._lock:
            self.conflicts += 1

    def request(self, verb, method, path, obj, body=None, query=None, content_type=None):
        """Send one request; return the decoded JSON answer (``{}`` when empty).

        Any failure becomes a TenancyError about ``obj`` (a 409 a
        :class:`errors.Conflict`, a 404 a :class:`errors.NotFound`, ...).
        """
        self.count(verb)
        url = self.configuration.host.rstrip("/") + path
        if query:
            url += "?" + urlencode(sorted((k, v) for k, v in query.items() if v is not None))
        if body is not None and content_type is None:
            content_type = "application/json"
        with wrap_errors(obj):
            response = self.api_client.rest_client.request(
                method, url, headers=self.headers(content_type), body=body, _request_timeout=self.timeout
            )
            data = getattr(response, "data", None)
            if data is None:
                data = response.read()
            if not 200 <= response.status <= 299:
                raise HttpError(response.status, response.reason, data)
        if isinstance(data, bytes):
            data = data.decode("utf-8")
        return json.loads(data) if data else {}

    def list_items(self, path, obj, query=None):
        """Every item of a list, following ``continue`` tokens (pages of LIST_PAGE)."""
        items, token = [], None
        while True:
            page_query = dict(query or {}, limit=LIST_PAGE)
            if token:
                page_query["continue"] = token
            document = self.request("list", "GET", path, obj, query=page_query)
            if not token:
                self.list_versions[path] = get_path(document, "metadata", "resourceVersion")
            items.extend(document.get("items") or [])
            token = get_path(document, "metadata", "continue")
            if not token:
                return items

    def watch(self, path, resource_version):
        """Start following ``path`` from ``resource_version`` in a background thread (a :class:`Watcher`)."""
        watcher = Watcher(self, path, resource_version)
        watcher.start()
        return watcher

    def get_or_none(self, path, obj):
        try:
            return self.request("get", "GET", path, obj)
        except NotFound:
            return None

    # -- HostClaims ------------------------------------------------------------
    def list_claims(self, namespaces=None):
        if namespaces is None:
            return self.list_items(_path(GROUP_VERSION, CLAIMS), "HostClaims (all namespaces)")
        items = []
        for namespace in namespaces:
            items.extend(
                self.list_items(_path(GROUP_VERSION, CLAIMS, namespace), "HostClaims in namespace %s" % namespace)
            )
        return items

    def get_claim(self, namespace, name):
        return self.get_or_none(_path(GROUP_VERSION, CLAIMS, namespace, name), claim_label(namespace, name))

    def create_claim(self, namespace, body):
        name = get_path(body, "metadata", "name")
        return self.request(
            "create", "POST", _path(GROUP_VERSION, CLAIMS, namespace), claim_label(namespace, name), body=body
        )

    def patch_claim(self, namespace, name, patch, status=False):
        path = _path(GROUP_VERSION, CLAIMS, namespace, name, "status" if status else None)
        obj = claim_label(namespace, name) + (" status" if status else "")
        return self.request("patch", "PATCH", path, obj, body=patch, content_type=MERGE_PATCH)

    def delete_claim(self, namespace, name):
        return self.request(
            "delete", "DELETE", _path(GROUP_VERSION, CLAIMS, namespace, name), claim_label(namespace, name)
        )

    # -- BareMetalHosts --------------------------------------------------------
    def list_hosts(self, namespaces=None):
        if namespaces is None:
            return self.list_items(_path(GROUP_VERSION, HOSTS), "BareMetalHosts (all namespaces)")
        items = []
        for namespace in namespaces:
            items.extend(
                self.list_items(_path(GROUP_VERSION, HOSTS, namespace), "BareMetalHosts in namespace %s" % namespace)
            )
        return items

    def get_host(self, namespace, name):
        return self.get_or_none(_path(GROUP_VERSION, HOSTS, namespace, name), host_label(namespace, name))

    def patch_host(self, namespace, name, patch):
        return self.request(
            "patch",
            "PATCH",
            _path(GROUP_VERSION, HOSTS, namespace, name),
            host_label(namespace, name),
            body=patch,
            content_type=MERGE_PATCH,
        )

    # -- Secrets and Namespaces --------------------------------------------------
    def get_secret(self, namespace, name):
        return self.get_or_none(_path("v1", "secrets", namespace, name), "Secret %s/%s" % (namespace, name))

    def list_secrets(self, label_selector, namespaces=None):
        query = {"labelSelector": label_selector}
        if namespaces is None:
            return self.list_items(_path("v1", "secrets"), "Secrets (all namespaces)", query)
        items = []
        for namespace in namespaces:
            items.extend(
                self.list_items(_path("v1", "secrets", namespace), "Secrets in namespace %s" % namespace, query)
            )
        return items

    def create_secret(self, namespace, body):
        name = get_path(body, "metadata", "name")
        return self.request(
            "create", "POST", _path("v1", "secrets", namespace), "Secret %s/%s" % (namespace, name), body=body
        )

    def patch_secret(self, namespace, name, patch):
        return self.request(
            "patch",
            "PATCH",
            _path("v1", "secrets", namespace, name),
            "Secret %s/%s" % (namespace, name),
            body=patch,
            content_type=MERGE_PATCH,
        )

    def delete_secret(self, namespace, name):
        try:
            return self.request(
                "delete", "DELETE", _path("v1", "secrets", namespace, name), "Secret %s/%s" % (namespace, name)
            )
        except NotFound:
            return None

    def list_namespaces(self):
        """``{name: labels}`` of every namespace."""
        items = self.list_items(_path("v1", "namespaces"), "Namespaces")
        return dict((get_path(item, "metadata", "name"), get_path(item, "metadata", "labels") or {}) for item in items)

    def get_namespace(self, name):
        return self.get_or_none(_path("v1", "namespaces", None, name), "Namespace %s" % name)

    # -- figures -------------------------------------------------------------
    def figures(self):
        counts = dict(self.counts)
        counts["total"] = sum(counts[verb] for verb in VERBS)
        counts["writes"] = sum(counts[verb] for verb in WRITE_VERBS)
        counts["conflicts"] = self.conflicts
        return counts


def _newer(version, than):
    """True if resourceVersion ``version`` is later than ``than`` (integers when they are, else any difference)."""
    if version is None or than is None:
        return version != than
    try:
        return int(version) > int(than)
    except ValueError:
        return version != than


class Watcher:
    """The latest version of each object of one collection, followed with a watch during a pass.

    Only an optimisation: concurrent binders learn early that a claim was
    committed or a host taken by someone else, and skip it instead of writing
    and getting a 409. Every write still carries its precondition, so a
    watch that fails or lags changes nothing but the number of conflicts.
    """

    def __init__(self, io, path, resource_version):
        self.io = io
        self.path = path
        self.resource_version = resource_version
        self.latest = {}
        self._lock = threading.Lock()
        self._response = None
        self._stopped = False
        self._thread = threading.Thread(target=self._follow, name="watch %s" % path)
        self._thread.daemon = True

    def start(self):
        if self.resource_version:
            self._thread.start()

    def _follow(self):
        try:
            import urllib3

            query = urlencode(
                [
                    ("watch", "1"),
                    ("resourceVersion", self.resource_version),
                    ("timeoutSeconds", "900"),
                    ("allowWatchBookmarks", "true"),
                ]
            )
            url = self.io.configuration.host.rstrip("/") + self.path + "?" + query
            self.io.count("watch")
            response = self.io.api_client.rest_client.pool_manager.request(
                "GET",
                url,
                headers=self.io.headers(None),
                preload_content=False,
                timeout=urllib3.Timeout(connect=10, read=960),
            )
            self._response = response
            if self._stopped or response.status != 200:
                return
            buffered = b""
            for chunk in response.stream(65536):
                buffered += chunk
                while b"\n" in buffered:
                    line, buffered = buffered.split(b"\n", 1)
                    if line.strip():
                        self._event(json.loads(line.decode("utf-8")))
        except Exception:  # pylint: disable=broad-except
            return  # the pass goes on without early news

    def _event(self, event):
        obj = event.get("object") or {}
        if event.get("type") not in ("ADDED", "MODIFIED", "DELETED"):
            return
        meta = obj.get("metadata") or {}
        with self._lock:
            self.latest[(meta.get("namespace"), meta.get("name"))] = (event["type"], obj)

    def newer(self, obj):
        """The object this watch saw after ``obj`` (``('DELETED', obj)`` when deleted), or ``None``."""
        meta = (obj or {}).get("metadata") or {}
        with self._lock:
            seen = self.latest.get((meta.get("namespace"), meta.get("name")))
        if seen is None or not _newer(get_path(seen[1], "metadata", "resourceVersion"), meta.get("resourceVersion")):
            return None
        return seen

    def stop(self):
        self._stopped = True
        response = self._response
        if response is not None:
            try:
                if hasattr(response, "shutdown"):
                    response.shutdown()
                response.release_conn()
            except Exception:  # pylint: disable=broad-except
                pass
