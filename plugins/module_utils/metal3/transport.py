# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The connection to an API server for the usual kubeconfigs, without importing the kubernetes library.

:class:`client.KubeIO` needs three things of a client: ``configuration.host``,
``configuration.auth_settings()`` (the ``Authorization`` header) and
``rest_client.pool_manager`` (a urllib3 pool).  Importing the kubernetes
library to build them costs about 0.3 s of CPU in every module run (the whole
package loads with ``kubernetes.config``), more than the rest of a short task.

:func:`from_kubeconfig` reads a kubeconfig the way
``kubernetes.config.load_kube_config`` does when it is one file whose context's
user has an inline ``token``, basic auth, a client certificate and key (files,
relative to the kubeconfig's directory, or ``-data``) or nothing, and whose
cluster has a ``server``, a CA (file or ``-data``), ``insecure-skip-tls-verify``
and ``tls-server-name``.  For anything else it returns ``None`` and the
library reads the kubeconfig as before, with its own errors: ``exec`` and
``auth-provider`` users (they refresh their tokens), ``tokenFile``,
``proxy-url``, several files in ``KUBECONFIG``, a proxy in the environment, a
file that is missing or does not parse, a context that is not there.
:func:`settings_from_options` does the same for ``host`` with ``api_key`` or a
client certificate.  :func:`light_client` turns :class:`Settings` into the
client; a kubeconfig's embedded client certificate and key are written to
files readable only by this user (urllib3 loads them from files), removed when
the process ends, as the library does.
"""

from __future__ import annotations

import atexit
import base64
import os
import shutil
import ssl
import tempfile
import threading
from typing import Any, NamedTuple
from urllib.request import getproxies


class Settings(NamedTuple):
    """What a client needs: the server, the Authorization header, TLS."""

    host: str
    authorization: str | None = None
    ca_file: str | None = None
    ca_data: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    cert_data: bytes | None = None
    key_data: bytes | None = None
    verify: bool = True
    server_name: str | None = None

    def __repr__(self) -> str:
        return "Settings(host=%r, authorization=%s)" % (self.host, "<hidden>" if self.authorization else None)


class Configuration:
    """The part of ``kubernetes.client.Configuration`` that :class:`client.KubeIO` reads."""

    def __init__(self, settings: Settings) -> None:
        self.host = settings.host
        self.verify_ssl = settings.verify
        self._authorization = settings.authorization

    def auth_settings(self) -> dict[str, dict[str, str]]:
        if not self._authorization:
            return {}
        return {
            "BearerToken": {"type": "api_key", "in": "header", "key": "authorization", "value": self._authorization}
        }


class RestClient:
    def __init__(self, pool_manager) -> None:
        self.pool_manager = pool_manager


class LightClient:
    """A client for :class:`client.KubeIO` (``configuration`` and ``rest_client.pool_manager``)."""

    def __init__(self, settings: Settings, pool_manager) -> None:
        self.configuration = Configuration(settings)
        self.rest_client = RestClient(pool_manager)


def proxied(host: str) -> bool:
    """Whether the environment names a proxy the kubernetes library would consider for ``host``."""
    proxies = getproxies()
    scheme = host.split("://", 1)[0].lower() if "://" in host else "https"
    return bool(proxies.get(scheme) or proxies.get("all"))


def settings_from_options(params: dict) -> Settings | None:
    """``host`` with ``api_key`` and/or a client certificate; ``None`` without ``host`` or behind a proxy."""
    host = params.get("host")
    if not host or proxied(host):
        return None
    return Settings(
        host=host,
        authorization="Bearer %s" % params["api_key"] if params.get("api_key") else None,
        cert_file=params.get("client_cert") or None,
        key_file=params.get("client_key") or None,
    )


def kubeconfig_path(path: str | None) -> str:
    """The file ``kubernetes.config.load_kube_config`` reads for ``path`` (``KUBECONFIG``, ``~/.kube/config``)."""
    return os.path.expanduser(path or os.environ.get("KUBECONFIG") or "~/.kube/config")


def _named(document: dict, section: str, name: Any) -> dict | None:
    for entry in document.get(section) or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            body = entry.get(section[:-1])
            return body if isinstance(body, dict) else None
    return None


def _pem(value: Any) -> bytes:
    if not isinstance(value, str) or not value:
        raise ValueError("not base64 text")
    return base64.b64decode(value.encode("ascii"), validate=True)


def _file(base: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError("not a path")
    path = os.path.normpath(os.path.join(base, value))
    if not os.path.isfile(path):
        raise ValueError("no such file")
    return path


def parse_kubeconfig(document: Any, base: str, context: str | None) -> Settings | None:
    """:class:`Settings` from a parsed kubeconfig (``base``: its directory), or ``None`` for the library."""
    if not isinstance(document, dict):
        return None
    context_name = context or document.get("current-context")
    current = _named(document, "contexts", context_name) if context_name else None
    if current is None:
        return None
    cluster = _named(document, "clusters", current.get("cluster"))
    user: dict | None = {}
    if current.get("user") is not None:
        user = _named(document, "users", current.get("user"))
    if cluster is None or user is None or not isinstance(cluster.get("server"), str):
        return None
    if "proxy-url" in cluster or "exec" in user or "auth-provider" in user:
        return None
    host = cluster["server"].rstrip("/")
    if proxied(host):
        return None
    if user.get("token"):
        if not isinstance(user["token"], str):
            return None
        authorization: str | None = "Bearer %s" % user["token"]
    elif user.get("tokenFile"):
        return None
    elif "username" in user and "password" in user:
        credentials = "%s:%s" % (user["username"], user["password"])
        authorization = "Basic %s" % base64.b64encode(credentials.encode("latin-1")).decode("ascii")
    else:
        authorization = None
    values: dict[str, Any] = dict(host=host, authorization=authorization)
    try:
        if host.startswith("https"):
            if cluster.get("certificate-authority-data"):
                values["ca_data"] = _pem(cluster["certificate-authority-data"]).decode("ascii")
            elif "certificate-authority" in cluster:
                values["ca_file"] = _file(base, cluster["certificate-authority"])
            if user.get("client-certificate-data"):
                values["cert_data"] = _pem(user["client-certificate-data"])
            elif "client-certificate" in user:
                values["cert_file"] = _file(base, user["client-certificate"])
            if user.get("client-key-data"):
                values["key_data"] = _pem(user["client-key-data"])
            elif "client-key" in user:
                values["key_file"] = _file(base, user["client-key"])
    except (ValueError, UnicodeError):
        return None
    if "insecure-skip-tls-verify" in cluster:
        values["verify"] = not cluster["insecure-skip-tls-verify"]
    if cluster.get("tls-server-name"):
        values["server_name"] = cluster["tls-server-name"]
    return Settings(**values)


def from_kubeconfig(path: str | None, context: str | None) -> Settings | None:
    """:class:`Settings` for the kubeconfig ``path`` (or the default one) and ``context``; ``None``: use the library."""
    try:
        import yaml  # a dependency of ansible-core and of the kubernetes library
    except ImportError:
        return None  # the library path then names what is missing
    chosen = kubeconfig_path(path)
    if os.pathsep in chosen or not os.path.isfile(chosen):
        return None
    try:
        with open(chosen, encoding="utf-8") as handle:
            document = yaml.safe_load(handle)
    except (OSError, UnicodeError, yaml.YAMLError):
        return None
    return parse_kubeconfig(document, os.path.dirname(os.path.abspath(chosen)), context)


class PrivateFiles:
    """Files readable only by this user, in a directory removed by :meth:`close` or when the process ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._directory: str | None = None
        self._count = 0

    def write(self, data: bytes) -> str:
        with self._lock:
            if self._directory is None:
                self._directory = tempfile.mkdtemp(prefix="bmt-kube-")
                atexit.register(self.close)
            self._count += 1
            path = os.path.join(self._directory, "%d.pem" % self._count)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        return path

    def close(self) -> None:
        with self._lock:
            directory, self._directory = self._directory, None
        if directory:
            shutil.rmtree(directory, ignore_errors=True)


PRIVATE_FILES = PrivateFiles()


def pool_arguments(settings: Settings, files: PrivateFiles = PRIVATE_FILES) -> dict[str, Any]:
    """The urllib3 ``PoolManager`` arguments the kubernetes library's REST client gives for the same settings."""
    arguments: dict[str, Any] = dict(
        cert_reqs=ssl.CERT_REQUIRED if settings.verify else ssl.CERT_NONE,
        ca_certs=settings.ca_file,
        ca_cert_data=settings.ca_data,
        cert_file=settings.cert_file or (files.write(settings.cert_data) if settings.cert_data else None),
        key_file=settings.key_file or (files.write(settings.key_data) if settings.key_data else None),
        maxsize=(os.cpu_count() or 1) * 5,  # the library's default: cpu_count * 5
    )
    if settings.server_name:
        arguments["server_hostname"] = settings.server_name
    return arguments


def light_client(settings: Settings, files: PrivateFiles = PRIVATE_FILES) -> LightClient:
    """The client for ``settings``; embedded certificates and keys are written to ``files``."""
    import urllib3

    return LightClient(settings, urllib3.PoolManager(**pool_arguments(settings, files)))
