# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""A tenant's kubeconfig for the cluster where its hosts are, read and refused safely.  Pure.

A HostClaim's ``spec.credentials`` names a Secret in the claim's own
namespace whose key ``kubeconfig`` (or ``value``, the key Cluster API's
kubeconfig Secrets use) holds a kubeconfig.  The binder uses it, and nothing
else, to manage the relayed claim in the other cluster; so the kubeconfig
must not be able to do anything on the management host:

* the identity is a bearer ``token`` or an embedded client certificate and key
  (``client-certificate-data`` + ``client-key-data``); ``exec`` and
  ``auth-provider`` (they run commands or plugins), ``tokenFile`` and file
  paths (``client-certificate``, ``client-key``, ``certificate-authority``:
  they read the management host's files), basic auth, impersonation and
  ``proxy-url`` are refused;
* the server is ``https``, verified (``insecure-skip-tls-verify`` is
  refused), optionally against an embedded ``certificate-authority-data``;
* the context used is ``current-context``, or the only one; its
  ``namespace`` is where the relayed claim lives (the identity may be
  limited to it), and it is required.

Every refusal is an :class:`errors.InvalidInput` about the Secret whose
cause quotes nothing of the kubeconfig but key names (a YAML error gives only
its line): error messages go to the claim's status, which the tenant reads,
and to the owner's module result.  :class:`RemoteAccess` hides its secrets in
its ``repr``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.selectors import dns1123_label_problem

#: the Secret keys that may hold the kubeconfig, in the order they are looked for
SECRET_KEYS = ("kubeconfig", "value")
#: the largest kubeconfig read (embedded certificates included)
MAX_BYTES = 256 * 1024

#: user fields refused, with the reason the claim is told
REFUSED_USER_FIELDS = {
    "exec": "runs a command on the management host",
    "auth-provider": "runs an authentication plugin on the management host",
    "tokenFile": "reads a file of the management host",
    "client-certificate": "reads a file of the management host (embed client-certificate-data instead)",
    "client-key": "reads a file of the management host (embed client-key-data instead)",
    "username": "basic authentication is not supported (use a token or a client certificate)",
    "password": "basic authentication is not supported (use a token or a client certificate)",
    "as": "impersonation is not supported",
    "as-uid": "impersonation is not supported",
    "as-groups": "impersonation is not supported",
    "as-user-extra": "impersonation is not supported",
}
REFUSED_CLUSTER_FIELDS = {
    "certificate-authority": "reads a file of the management host (embed certificate-authority-data instead)",
    "insecure-skip-tls-verify": "an unverified server could take the tenant's credentials",
    "proxy-url": "proxies are not supported",
}


class RemoteAccess(NamedTuple):
    """Where and as whom the relay works in the other cluster (secrets hidden in ``repr``)."""

    server: str
    namespace: str
    token: str | None = None
    client_certificate: bytes | None = None
    client_key: bytes | None = None
    certificate_authority: bytes | None = None
    tls_server_name: str | None = None

    def __repr__(self) -> str:
        return "RemoteAccess(server=%r, namespace=%r, auth=%s)" % (self.server, self.namespace, self.auth_kind)

    __str__ = __repr__

    @property
    def auth_kind(self) -> str:
        return "token" if self.token else "client-certificate"

    def fingerprint(self) -> str:
        """A SHA-256 of everything that makes the access: tells that a kubeconfig changed without keeping it."""
        digest = hashlib.sha256()
        for part in self:
            value = part if isinstance(part, bytes) else str(part).encode("utf-8")
            digest.update(hashlib.sha256(value).digest())
        return digest.hexdigest()

    def secret_values(self) -> list[str]:
        """The values that must never appear anywhere (token, key, certificate as text and base64)."""
        found = []
        for value in (self.token, self.client_key, self.client_certificate):
            if not value:
                continue
            raw = value if isinstance(value, bytes) else value.encode("utf-8")
            found.append(raw.decode("utf-8", "replace"))
            found.append(base64.b64encode(raw).decode("ascii"))
        return found


def _refuse(owner: str, cause: str):
    raise InvalidInput(owner, "the kubeconfig %s" % cause)


def kubeconfig_text(secret: dict | None, owner: str) -> str:
    """The kubeconfig held by a Secret (its ``data`` base64, or ``stringData``), by :data:`SECRET_KEYS`."""
    if not isinstance(secret, dict):
        _refuse(owner, "Secret was not found")
    data = secret.get("data") if isinstance(secret.get("data"), dict) else {}
    for key in SECRET_KEYS:
        if key in data:
            try:
                raw = base64.b64decode(data[key] or "", validate=True)
            except (binascii.Error, TypeError, ValueError):
                _refuse(owner, "in key %s is not base64" % key)
            break
    else:
        _refuse(owner, "is missing: the Secret has no key %s" % " or ".join(SECRET_KEYS))
    if len(raw) > MAX_BYTES:
        _refuse(owner, "in key %s is larger than %d bytes" % (key, MAX_BYTES))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        _refuse(owner, "in key %s is not UTF-8 text" % key)
    raise AssertionError("unreachable")  # pragma: no cover


def _load(text: str, owner: str) -> dict:
    import yaml  # ansible-core's own dependency; imported here so the module is importable without it

    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = " (line %d)" % (mark.line + 1) if mark is not None else ""
        _refuse(owner, "is not valid YAML%s" % where)
    if not isinstance(document, dict):
        _refuse(owner, "is not a mapping")
    return document


def _named(document: dict, section: str, name: str, owner: str) -> dict:
    entries = document.get(section)
    if not isinstance(entries, list):
        _refuse(owner, "has no %s" % section)
    found = [e for e in entries if isinstance(e, dict) and e.get("name") == name]
    if len(found) != 1:
        _refuse(owner, "has %s %s named %r" % ("no entry in" if not found else "several entries in", section, name))
    body = found[0].get(section[:-1])
    if not isinstance(body, dict):
        _refuse(owner, "entry %r of %s has no %s" % (name, section, section[:-1]))
    return body


def _context(document: dict, owner: str) -> tuple[str, dict]:
    current = document.get("current-context")
    if current in (None, ""):
        contexts = document.get("contexts")
        if not isinstance(contexts, list) or len(contexts) != 1 or not isinstance(contexts[0], dict):
            _refuse(owner, "sets no current-context and has not exactly one context")
        current = contexts[0].get("name")
    if not isinstance(current, str) or not current:
        _refuse(owner, "names no context")
    return current, _named(document, "contexts", current, owner)


def _pem(value: Any, field: str, owner: str, marker: str) -> bytes:
    if not isinstance(value, str) or not value:
        _refuse(owner, "field %s is empty" % field)
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        _refuse(owner, "field %s is not base64" % field)
    if b"-----BEGIN " not in raw or marker.encode("ascii") not in raw:
        _refuse(owner, "field %s does not hold a PEM %s" % (field, marker.lower()))
    return raw


def _refused(body: dict, refused: dict, where: str, owner: str) -> None:
    for field in sorted(refused):
        if body.get(field) not in (None, False, "", [], {}):
            _refuse(owner, "%s sets %s: %s" % (where, field, refused[field]))


def _server(cluster: dict, owner: str) -> str:
    server = cluster.get("server")
    if not isinstance(server, str) or not server:
        _refuse(owner, "cluster has no server")
    try:
        parts = urlsplit(server)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        _refuse(owner, "server is not a URL")
    if parts.scheme != "https" or not parts.hostname:
        _refuse(owner, "server must be an https:// URL")
    if parts.username or parts.password or parts.query or parts.fragment:
        _refuse(owner, "server URL must carry no user, password, query or fragment")
    return server.rstrip("/")


def _identity(user: dict, owner: str) -> tuple[str | None, bytes | None, bytes | None]:
    _refused(user, REFUSED_USER_FIELDS, "user", owner)
    token = user.get("token")
    cert, key = user.get("client-certificate-data"), user.get("client-key-data")
    if token not in (None, ""):
        if not isinstance(token, str) or any(c.isspace() for c in token.strip()) or not token.strip():
            _refuse(owner, "user token is not a single word")
        if cert or key:
            _refuse(owner, "user has both a token and a client certificate: keep one")
        return token.strip(), None, None
    if cert or key:
        if not (cert and key):
            _refuse(owner, "user needs both client-certificate-data and client-key-data")
        return (
            None,
            _pem(cert, "client-certificate-data", owner, "CERTIFICATE"),
            _pem(key, "client-key-data", owner, "PRIVATE KEY"),
        )
    _refuse(owner, "user has no token and no client certificate (the only identities accepted)")
    raise AssertionError("unreachable")  # pragma: no cover


def parse_kubeconfig(text: str, owner: str) -> RemoteAccess:
    """The :class:`RemoteAccess` a kubeconfig gives, or ``InvalidInput`` about ``owner`` (the Secret)."""
    if not isinstance(text, str) or not text.strip():
        _refuse(owner, "is empty")
    document = _load(text, owner)
    name, context = _context(document, owner)
    cluster_name, user_name = context.get("cluster"), context.get("user")
    if not isinstance(cluster_name, str) or not isinstance(user_name, str):
        _refuse(owner, "context %r needs a cluster and a user" % name)
    namespace = context.get("namespace")
    if not namespace:
        _refuse(
            owner,
            "context %r sets no namespace: it names the namespace of the other cluster where the claim is relayed"
            % name,
        )
    problem = dns1123_label_problem(namespace)
    if problem:
        _refuse(owner, "context %r namespace %s" % (name, problem))
    cluster = _named(document, "clusters", cluster_name, owner)
    user = _named(document, "users", user_name, owner)
    _refused(cluster, REFUSED_CLUSTER_FIELDS, "cluster", owner)
    server = _server(cluster, owner)
    ca = cluster.get("certificate-authority-data")
    authority = _pem(ca, "certificate-authority-data", owner, "CERTIFICATE") if ca else None
    tls_name = cluster.get("tls-server-name")
    if tls_name is not None and (not isinstance(tls_name, str) or not tls_name):
        _refuse(owner, "cluster tls-server-name is not a host name")
    token, cert, key = _identity(user, owner)
    return RemoteAccess(server, namespace, token, cert, key, authority, tls_name or None)


def access_from_secret(secret: dict | None, owner: str) -> RemoteAccess:
    """:func:`parse_kubeconfig` of what a credentials Secret holds (:func:`kubeconfig_text`)."""
    return parse_kubeconfig(kubeconfig_text(secret, owner), owner)
