# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""An in-memory stand-in for the few REST calls KubeIO makes, for unit tests of the binder's race handling.

It implements what the Kubernetes API server does for these calls: lists with
``limit``/``continue`` and ``labelSelector`` (existence only), GET, POST,
DELETE (finalizers keep the object with a deletionTimestamp), JSON merge
PATCH with a ``metadata.resourceVersion`` precondition (409 on mismatch), the
``status`` subresource (only status changes), and a fresh resourceVersion on
every write.  ``hooks`` lets a test act as another binder just before a
given request is served.  The integration tests run the real API server.
"""

import copy
import itertools
import json

try:
    from urllib.parse import parse_qs, unquote, urlparse
except ImportError:  # pragma: no cover
    from urllib import unquote

    from urlparse import parse_qs, urlparse

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import apply_merge_patch

_COUNTER = itertools.count(1000)


def openapi_document(spec_fields):
    """The API server's OpenAPI v3 document of metal3.io/v1alpha1 with a HostClaim of these spec fields."""
    properties = dict((field, {"type": "object"}) for field in spec_fields)
    schema = {"properties": {"spec": {"properties": properties}}}
    return {"components": {"schemas": {"io.metal3.v1alpha1.HostClaim": schema}}}


#: what the API server serves with the proposal's HostClaim CRD (hostclaim_setup) and with baremetal-operator's
PROPOSAL_OPENAPI = openapi_document(
    ["credentials", "hostSelector", "image", "kind", "metaData", "networkData", "nodeReuse", "online", "userData"]
)
BMO_OPENAPI = openapi_document(
    [
        "consumerRef",
        "customDeploy",
        "failureDomain",
        "hostSelector",
        "image",
        "metaData",
        "networkData",
        "poweredOn",
        "userData",
    ]
)


class Response:
    def __init__(self, status, body):
        self.status = status
        self.reason = {200: "OK", 201: "Created", 404: "Not Found", 409: "Conflict", 403: "Forbidden"}.get(status, "X")
        self.data = json.dumps(body).encode("utf-8")


def _error(status, message):
    return Response(status, {"kind": "Status", "status": "Failure", "message": message, "code": status})


class FakeKube:
    """Objects by (plural, namespace, name)."""

    def __init__(self, page=2):
        self.objects = {}
        self.requests = []
        self.hooks = []  # (predicate(method, path, body), action(fake)) run once, before the request
        self.page = page
        self.openapi = PROPOSAL_OPENAPI  # the OpenAPI document of metal3.io/v1alpha1 (None: not served)
        self.field_managers = []  # the fieldManager of each write

    # -- seeding -------------------------------------------------------------------
    def add(self, plural, obj):
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        meta["resourceVersion"] = str(next(_COUNTER))
        meta.setdefault("uid", "uid-%s-%s" % (plural, meta["name"]))
        meta.setdefault("creationTimestamp", "2026-01-01T00:00:%02dZ" % (next(_COUNTER) % 60))
        self.objects[(plural, meta.get("namespace"), meta["name"])] = obj
        return obj

    def get(self, plural, namespace, name):
        return self.objects.get((plural, namespace, name))

    def write(self, plural, namespace, name, patch):
        """A write by somebody else (another binder, the tenant): applied without precondition."""
        obj = apply_merge_patch(self.objects[(plural, namespace, name)], patch)
        obj["metadata"]["resourceVersion"] = str(next(_COUNTER))
        self.objects[(plural, namespace, name)] = obj
        return obj

    # -- the REST surface KubeIO uses ----------------------------------------------
    @property
    def pool_manager(self):
        """KubeIO sends through the ApiClient's urllib3 pool manager: this fake is both."""
        return self

    def request(self, method, url, headers=None, body=None, **kwargs):
        if isinstance(body, bytes):
            body = json.loads(body.decode("utf-8"))
        parsed = urlparse(url)
        query = dict((k, v[0]) for k, v in parse_qs(parsed.query).items())
        self.requests.append((method, parsed.path, copy.deepcopy(body)))
        if method != "GET":
            self.field_managers.append(query.get("fieldManager"))
        if parsed.path.startswith("/openapi/"):
            return Response(200, self.openapi) if self.openapi else _error(404, "not found")
        for hook in list(self.hooks):
            predicate, action = hook
            if predicate(method, parsed.path, body):
                self.hooks.remove(hook)
                action(self)
        if parsed.path.startswith("/openapi/"):
            if method != "GET" or self.openapi is None:
                return _error(404, "the server could not find the requested resource")
            return Response(200, self.openapi)
        parts = [unquote(p) for p in parsed.path.strip("/").split("/")]
        parts = parts[2:] if parts[0] == "api" else parts[3:]
        namespace = None
        if parts and parts[0] == "namespaces" and len(parts) > 2:
            namespace, parts = parts[1], parts[2:]
        plural = parts[0]
        name = parts[1] if len(parts) > 1 else None
        subresource = parts[2] if len(parts) > 2 else None
        if plural == "namespaces" and namespace is None and len(parts) == 2:
            name = parts[1]
        if method == "GET" and name is None:
            return self._list(plural, namespace, query)
        if method == "GET":
            obj = self.objects.get((plural, namespace, name))
            return Response(200, obj) if obj else _error(404, '%s "%s" not found' % (plural, name))
        if method == "POST":
            if (plural, namespace, body["metadata"]["name"]) in self.objects:
                return _error(409, '%s "%s" already exists' % (plural, body["metadata"]["name"]))
            body = dict(body, metadata=dict(body["metadata"], namespace=namespace))
            return Response(201, self.add(plural, body))
        if method == "DELETE":
            obj = self.objects.get((plural, namespace, name))
            if obj is None:
                return _error(404, '%s "%s" not found' % (plural, name))
            if obj["metadata"].get("finalizers"):
                obj["metadata"]["deletionTimestamp"] = "2026-01-02T00:00:00Z"
                obj["metadata"]["resourceVersion"] = str(next(_COUNTER))
            else:
                del self.objects[(plural, namespace, name)]
            return Response(200, {"kind": "Status", "status": "Success"})
        if method == "PATCH":
            return self._patch(plural, namespace, name, subresource, body)
        if method == "PUT" and subresource is None:
            return self._replace(plural, namespace, name, body)
        return _error(405, "unsupported")

    def _replace(self, plural, namespace, name, body):
        """PUT: the whole object, with the resourceVersion it replaces."""
        obj = self.objects.get((plural, namespace, name))
        if obj is None:
            return _error(404, '%s "%s" not found' % (plural, name))
        if body["metadata"].get("resourceVersion") != obj["metadata"]["resourceVersion"]:
            return _error(
                409, 'Operation cannot be fulfilled on %s "%s": the object has been modified' % (plural, name)
            )
        updated = copy.deepcopy(body)
        updated["metadata"] = dict(
            updated["metadata"],
            namespace=namespace,
            uid=obj["metadata"]["uid"],
            creationTimestamp=obj["metadata"]["creationTimestamp"],
            resourceVersion=str(next(_COUNTER)),
        )
        self.objects[(plural, namespace, name)] = updated
        return Response(200, updated)

    def _list(self, plural, namespace, query):
        items = [
            copy.deepcopy(obj)
            for (p, ns, dummy), obj in sorted(self.objects.items(), key=lambda i: str(i[0]))
            if p == plural and (namespace is None or ns == namespace)
        ]
        selector = query.get("labelSelector")
        if selector:
            items = [i for i in items if selector in (i["metadata"].get("labels") or {})]
        start = int(query.get("continue") or 0)
        limit = min(int(query.get("limit") or len(items) or 1), self.page)
        page = items[start : start + limit]
        meta = {"continue": str(start + limit)} if start + limit < len(items) else {}
        return Response(200, {"items": page, "metadata": meta})

    def _patch(self, plural, namespace, name, subresource, patch):
        key = (plural, namespace, name)
        obj = self.objects.get(key)
        if obj is None:
            return _error(404, '%s "%s" not found' % (plural, name))
        wanted = (patch.get("metadata") or {}).get("resourceVersion")
        if wanted and wanted != obj["metadata"]["resourceVersion"]:
            return _error(
                409, 'Operation cannot be fulfilled on %s "%s": the object has been modified' % (plural, name)
            )
        patch = copy.deepcopy(patch)
        (patch.get("metadata") or {}).pop("resourceVersion", None)
        if subresource == "status":
            patch = {"status": patch.get("status")} if "status" in patch else {}
        elif plural in ("hostclaims", "baremetalhosts"):
            patch.pop("status", None)
        updated = apply_merge_patch(obj, patch)
        updated["metadata"]["resourceVersion"] = str(next(_COUNTER))
        if updated["metadata"].get("deletionTimestamp") and not updated["metadata"].get("finalizers"):
            del self.objects[key]
        else:
            self.objects[key] = updated
        return Response(200, updated)


class FakeConfiguration:
    host = "https://fake.invalid:6443"

    @staticmethod
    def auth_settings():
        return {"BearerToken": {"type": "api_key", "in": "header", "key": "authorization", "value": "Bearer t"}}


class FakeApiClient:
    def __init__(self, fake):
        self.rest_client = fake
        self.configuration = FakeConfiguration()
