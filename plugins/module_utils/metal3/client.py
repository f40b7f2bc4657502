# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The one Kubernetes client of the collection: every request of every module and of the inventory.

:class:`KubeIO` sends raw REST requests through the connection pool of a
``kubernetes`` ApiClient (built by :func:`connection.kube_api_client`; JSON
merge patches, JSON bodies, no model classes), lists with ``limit`` /
``continue`` (the next page is asked for while this one is used), lists
several namespaces side by side (:func:`parallel.parallel_map`), maps every
failure through ``common/errors.py`` so that it names the object, and counts
requests per verb (for ``host_bind``'s result and ``bench/bind.py``).  The
BMC-account ledger and host_register share it, so what they read and write
during a binder pass is counted with the pass.

:class:`Watcher` follows one collection with a watch during a binder pass.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable
from urllib.parse import quote, urlencode

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    BackendError,
    NotFound,
    connection_reason,
    http_error,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import get_path
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.parallel import parallel_map
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import (
    API_VERSION,
    CLAIMS,
    DEPLOY_POLICIES,
    HOSTS,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.dialect import OPENAPI_PATH

GROUP_VERSION = API_VERSION
MERGE_PATCH = "application/merge-patch+json"
LIST_PAGE = 500
REQUEST_TIMEOUT = (10, 120)
LIST_WORKERS = 4
VERBS = ("list", "watch", "get", "create", "replace", "patch", "delete")
WRITE_VERBS = ("create", "replace", "patch", "delete")


def api_path(
    group_version: str,
    plural: str,
    namespace: str | None = None,
    name: str | None = None,
    subresource: str | None = None,
) -> str:
    """The REST path of a collection or an object (``group_version`` ``v1``: the core API)."""
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


def claim_label(namespace: str, name: str) -> str:
    return "HostClaim %s/%s" % (namespace, name)


def host_label(namespace: str, name: str) -> str:
    return "BareMetalHost %s/%s" % (namespace, name)


def end_watch(response) -> None:
    """Close a watch's response, then give its connection's place back to the pool, from the thread that read it.

    A watch ends by a timeout, an error or a shutdown from another thread; its connection is never reused as it is
    (closed here, the pool opens a new one). Returning a connection whose response another thread may still be
    closing let the next request close it a second time: ``ValueError: I/O operation on closed file`` in a later
    request of the same client (host_bind_worker's next pass)."""
    for end in ("close", "release_conn"):
        try:
            getattr(response, end)()
        except Exception:  # pylint: disable=broad-except
            pass  # nothing more to do for a watch that is over


def watch_lines(response) -> Iterator[dict]:
    """The events of a watch response as they arrive: one JSON document per line."""
    buffered = b""
    for chunk in response.stream(65536):
        buffered += chunk
        while b"\n" in buffered:
            line, buffered = buffered.split(b"\n", 1)
            if line.strip():
                yield json.loads(line.decode("utf-8"))


class KubeIO:
    """Raw JSON requests to the API server, errors mapped to TenancyError, requests counted."""

    def __init__(self, api_client, timeout=REQUEST_TIMEOUT, user_agent: str | None = None):
        self.api_client = api_client
        self.configuration = api_client.configuration
        self.base = (self.configuration.host or "").rstrip("/")
        self.timeout = timeout
        self.user_agent = user_agent
        self.counts = dict((verb, 0) for verb in VERBS)
        self.conflicts = 0
        self.list_versions: dict[str, Any] = {}
        #: the ``fieldManager`` of every write (``None``: the API server names it after the user agent)
        self.field_manager: str | None = None
        self._lock = threading.Lock()
        self._transport = None

    # -- transport -----------------------------------------------------------
    def headers(self, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if self.user_agent:
            headers["User-Agent"] = self.user_agent
        if content_type:
            headers["Content-Type"] = content_type
        for setting in (self.configuration.auth_settings() or {}).values():
            if setting.get("in") == "header" and setting.get("value"):
                headers[setting["key"]] = setting["value"]
        return headers

    @property
    def pool(self):
        """The urllib3 pool manager of the ApiClient."""
        return self.api_client.rest_client.pool_manager

    def _urllib3_options(self):
        """Timeout and retries (connection failures only, reads of GETs once) of every request."""
        if self._transport is None:
            import urllib3

            connect, read = self.timeout if isinstance(self.timeout, tuple) else (min(self.timeout, 30), self.timeout)
            self._transport = dict(
                timeout=urllib3.Timeout(connect=connect, read=read),
                retries=urllib3.Retry(total=2, connect=2, read=1, status=0, redirect=0, backoff_factor=0.2),
            )
        return self._transport

    def count(self, verb: str) -> None:
        with self._lock:
            self.counts[verb] = self.counts.get(verb, 0) + 1

    def count_conflict(self) -> None:
        with self._lock:
            self.conflicts += 1

    def request(
        self,
        verb: str,
        method: str,
        path: str,
        obj: str,
        body: Any = None,
        query: dict | None = None,
        content_type: str | None = None,
        hint_404: str | None = None,
    ) -> dict:
        """Send one request; return the decoded JSON answer (``{}`` when empty).

        Any failure becomes a TenancyError about ``obj`` (a 409 a
        :class:`errors.Conflict`, a 404 a :class:`errors.NotFound`, ...);
        an API server that cannot be reached a :class:`errors.BackendError`
        about the API server.
        """
        import urllib3

        self.count(verb)
        url = self.base + path
        if self.field_manager and method in ("PATCH", "POST", "PUT"):
            query = dict(query or {}, fieldManager=self.field_manager)
        if query:
            url += "?" + urlencode(sorted((k, v) for k, v in query.items() if v is not None))
        if body is not None and content_type is None:
            content_type = "application/json"
        encoded = json.dumps(body).encode("utf-8") if body is not None else None
        try:
            response = self.pool.request(
                method,
                url,
                body=encoded,
                headers=self.headers(content_type),
                preload_content=True,
                **self._urllib3_options(),
            )
        except urllib3.exceptions.HTTPError as exc:
            # refused or cut connections (a restarting API server) are worth another try in a wait; time-outs are not
            # (urllib3's NewConnectionError, a refused connection, is a ConnectTimeoutError by inheritance only)
            reason = getattr(exc, "reason", None) or exc
            timed_out = isinstance(reason, urllib3.exceptions.TimeoutError) and not isinstance(
                reason, urllib3.exceptions.NewConnectionError
            )
            details = {} if timed_out else {"service_unreachable": True}
            raise BackendError(
                "Kubernetes API %s" % self.base, "cannot connect: %s" % connection_reason(exc), details
            ) from exc
        data = response.data
        if not 200 <= response.status <= 299:
            raise http_error(obj, response.status, response.reason, data, hint_404=hint_404)
        if isinstance(data, bytes):
            data = data.decode("utf-8", "replace")
        try:
            return json.loads(data) if data else {}
        except ValueError as exc:
            raise BackendError(obj, "the API answered with something that is not JSON") from exc

    def list_pages(
        self,
        path: str,
        obj: str,
        query: dict | None = None,
        page_size: int = LIST_PAGE,
        hint_404: str | None = None,
        on_first_page: Callable[[], None] | None = None,
    ):
        """The items of a list, page by page (``limit`` + ``continue``), as raw dicts.

        The next page is asked for as soon as its ``continue`` token is
        known, so the API server prepares it while this page is used.
        ``on_first_page`` is called once the first page is in: its
        ``resourceVersion`` is the snapshot every later page is served at.
        """

        def page(token):
            page_query = dict(query or {}, limit=page_size)
            if token:
                page_query["continue"] = token
            return self.request("list", "GET", path, obj, query=page_query, hint_404=hint_404)

        with ThreadPoolExecutor(max_workers=1) as fetcher:
            document = page(None)
            self.list_versions[path] = get_path(document, "metadata", "resourceVersion")
            if on_first_page is not None:
                on_first_page()
            while True:
                token = get_path(document, "metadata", "continue")
                pending = fetcher.submit(page, token) if token else None
                yield from document.get("items") or ()
                if pending is None:
                    return
                document = pending.result()

    def list_items(
        self, path: str, obj: str, query: dict | None = None, page_size: int = LIST_PAGE, hint_404: str | None = None
    ) -> list[dict]:
        """Every item of a list, following ``continue`` tokens."""
        return list(self.list_pages(path, obj, query, page_size, hint_404))

    def list_namespaced(
        self,
        group_version: str,
        plural: str,
        what: str,
        namespaces: list[str] | None,
        query: dict | None = None,
        page_size: int = LIST_PAGE,
        workers: int = LIST_WORKERS,
        convert: Callable[[dict], Any] | None = None,
        hint_404: str | None = None,
        snapshot: threading.Event | None = None,
    ) -> list:
        """The items of ``plural`` in ``namespaces`` (``None``: all namespaces), namespaces listed side by side.

        ``convert`` turns each raw item into what is kept (``None``: dropped)
        as pages arrive.  ``what`` names the kind in errors (``HostClaims``).
        ``snapshot`` (an event) is set once every list has its first page,
        and so its snapshot (``list_pages``).
        """
        lists = [None] if namespaces is None else list(namespaces)
        first_pages = {"waiting": len(lists)}
        lock = threading.Lock()

        def first_page():
            with lock:
                first_pages["waiting"] -= 1
                if not first_pages["waiting"] and snapshot is not None:
                    snapshot.set()

        def one(namespace):
            obj = "%s in namespace %s" % (what, namespace) if namespace else "%s (all namespaces)" % what
            path = api_path(group_version, plural, namespace)
            items = self.list_pages(path, obj, query, page_size, hint_404, on_first_page=first_page)
            if convert is None:
                return list(items)
            return [kept for kept in (convert(item) for item in items) if kept is not None]

        if namespaces is None:
            return one(None)
        pages = parallel_map(one, lists, workers)
        return [item for page in pages for item in page]

    def watch(self, path, resource_version):
        """Start following ``path`` from ``resource_version`` in a background thread (a :class:`Watcher`)."""
        watcher = Watcher(self, path, resource_version)
        watcher.start()
        return watcher

    def watch_events(self, path, resource_version, obj, timeout_seconds=300, on_open=None):
        """The events of one watch of ``path`` from ``resource_version``, decoded, as they come (blocking).

        Ends when the API server ends the watch (``timeoutSeconds``) or closes
        the stream.  An error answer raises its TenancyError (``410 Gone``: a
        :class:`errors.BackendError` with ``details['status'] == 410``); a
        connection that fails or drops a :class:`errors.BackendError` about the
        API server.  ``on_open`` receives the open response (to shut it down
        from another thread).  The event source follows collections with it.
        """
        import urllib3

        query = urlencode(
            [
                ("watch", "1"),
                ("resourceVersion", resource_version),
                ("timeoutSeconds", str(int(timeout_seconds))),
                ("allowWatchBookmarks", "true"),
            ]
        )
        self.count("watch")
        try:
            response = self.pool.request(
                "GET",
                self.base + path + "?" + query,
                headers=self.headers(None),
                preload_content=False,
                timeout=urllib3.Timeout(connect=10, read=timeout_seconds + 30),
                retries=False,
            )
        except urllib3.exceptions.HTTPError as exc:
            raise BackendError("Kubernetes API %s" % self.base, "cannot connect: %s" % connection_reason(exc)) from exc
        try:
            if response.status != 200:
                raise http_error(obj, response.status, response.reason, response.read())
            if on_open is not None:
                on_open(response)
            yield from watch_lines(response)
        except urllib3.exceptions.HTTPError as exc:
            raise BackendError("Kubernetes API %s" % self.base, "watch dropped: %s" % connection_reason(exc)) from exc
        finally:
            end_watch(response)

    def get_or_none(self, path, obj):
        try:
            return self.request("get", "GET", path, obj)
        except NotFound:
            return None

    # -- HostClaims ------------------------------------------------------------
    def hostclaim_openapi(self):
        """The API server's OpenAPI v3 document of metal3.io/v1alpha1 (``None``: the group is not served);
        readable by any authenticated user, so a tenant can tell which HostClaim dialect the cluster speaks."""
        return self.get_or_none(OPENAPI_PATH, "OpenAPI document of metal3.io/v1alpha1")

    def list_deploy_policies(self, namespaces=None):
        """baremetal-operator's HostDeployPolicies (in ``namespaces``, or all)."""
        return self.list_namespaced(GROUP_VERSION, DEPLOY_POLICIES, "HostDeployPolicies", namespaces)

    def list_claims(self, namespaces=None):
        return self.list_namespaced(GROUP_VERSION, CLAIMS, "HostClaims", namespaces)

    def get_claim(self, namespace, name):
        return self.get_or_none(api_path(GROUP_VERSION, CLAIMS, namespace, name), claim_label(namespace, name))

    def create_claim(self, namespace, body):
        name = get_path(body, "metadata", "name")
        return self.request(
            "create", "POST", api_path(GROUP_VERSION, CLAIMS, namespace), claim_label(namespace, name), body=body
        )

    def patch_claim(self, namespace, name, patch, status=False):
        path = api_path(GROUP_VERSION, CLAIMS, namespace, name, "status" if status else None)
        obj = claim_label(namespace, name) + (" status" if status else "")
        return self.request("patch", "PATCH", path, obj, body=patch, content_type=MERGE_PATCH)

    def delete_claim(self, namespace, name):
        return self.request(
            "delete", "DELETE", api_path(GROUP_VERSION, CLAIMS, namespace, name), claim_label(namespace, name)
        )

    # -- BareMetalHosts --------------------------------------------------------
    def list_hosts(self, namespaces=None, snapshot=None):
        """The BareMetalHosts (in ``namespaces``, or all); ``snapshot``: see ``list_namespaced``."""
        return self.list_namespaced(GROUP_VERSION, HOSTS, "BareMetalHosts", namespaces, snapshot=snapshot)

    def get_host(self, namespace, name):
        return self.get_or_none(api_path(GROUP_VERSION, HOSTS, namespace, name), host_label(namespace, name))

    def patch_host(self, namespace, name, patch):
        return self.request(
            "patch",
            "PATCH",
            api_path(GROUP_VERSION, HOSTS, namespace, name),
            host_label(namespace, name),
            body=patch,
            content_type=MERGE_PATCH,
        )

    # -- Secrets and Namespaces --------------------------------------------------
    def get_secret(self, namespace, name):
        return self.get_or_none(api_path("v1", "secrets", namespace, name), "Secret %s/%s" % (namespace, name))

    def list_secrets(self, label_selector, namespaces=None):
        return self.list_namespaced("v1", "secrets", "Secrets", namespaces, query={"labelSelector": label_selector})

    def create_secret(self, namespace, body):
        name = get_path(body, "metadata", "name")
        return self.request(
            "create", "POST", api_path("v1", "secrets", namespace), "Secret %s/%s" % (namespace, name), body=body
        )

    def patch_secret(self, namespace, name, patch):
        return self.request(
            "patch",
            "PATCH",
            api_path("v1", "secrets", namespace, name),
            "Secret %s/%s" % (namespace, name),
            body=patch,
            content_type=MERGE_PATCH,
        )

    def replace_secret(self, namespace, name, body):
        """PUT ``body`` (it carries the resourceVersion it replaces)."""
        return self.request(
            "replace", "PUT", api_path("v1", "secrets", namespace, name), "Secret %s/%s" % (namespace, name), body=body
        )

    def create_host(self, namespace, body):
        name = get_path(body, "metadata", "name")
        return self.request(
            "create", "POST", api_path(GROUP_VERSION, HOSTS, namespace), host_label(namespace, name), body=body
        )

    def delete_secret(self, namespace, name):
        try:
            return self.request(
                "delete", "DELETE", api_path("v1", "secrets", namespace, name), "Secret %s/%s" % (namespace, name)
            )
        except NotFound:
            return None

    def list_namespaces(self):
        """``{name: labels}`` of every namespace."""
        items = self.list_items(api_path("v1", "namespaces"), "Namespaces")
        return dict((get_path(item, "metadata", "name"), get_path(item, "metadata", "labels") or {}) for item in items)

    def get_namespace(self, name):
        return self.get_or_none(api_path("v1", "namespaces", None, name), "Namespace %s" % name)

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
        except Exception:  # pylint: disable=broad-except
            return  # the pass goes on without early news
        try:
            if self._stopped or response.status != 200:
                return
            for event in watch_lines(response):
                self._event(event)
        except Exception:  # pylint: disable=broad-except
            return  # the pass goes on without early news
        finally:
            end_watch(response)

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

    def stop(self, join_timeout=10):
        """End the watch: its socket shut down (the reading thread wakes up and closes the response itself), and
        wait for that thread, so that nothing of this watch is in use when the next request takes a connection."""
        self._stopped = True
        response = self._response
        woken = response is None  # not answered yet: the thread sees _stopped when it is
        if response is not None and hasattr(response, "shutdown"):  # urllib3 2.3 and later
            try:
                response.shutdown()
                woken = True
            except Exception:  # pylint: disable=broad-except
                pass
        if woken and self._thread.is_alive():
            self._thread.join(join_timeout)
