# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The light transport reads a kubeconfig as the kubernetes library does, or leaves it to the library.

Every kubeconfig the transport takes gives the same server, Authorization header, TLS verification, server name, CA,
client certificate and key, and urllib3 pool arguments as ``kubernetes.config.load_kube_config`` and the library's REST
client (compared field by field over generated kubeconfigs); every other kubeconfig is left to the library; a module
built on a plain kubeconfig never imports the kubernetes library.
"""

from __future__ import annotations

import base64
import os
import ssl
import stat
import subprocess
import sys

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3 import connection, transport

CA = b"-----BEGIN CERTIFICATE-----\nQ0EgZm9yIHRlc3Rz\n-----END CERTIFICATE-----\n"
CERT = b"-----BEGIN CERTIFICATE-----\nY2xpZW50\n-----END CERTIFICATE-----\n"
KEY = b"-----BEGIN PRIVATE KEY-----\na2V5\n-----END PRIVATE KEY-----\n"


def b64(data: bytes) -> str:
    return base64.standard_b64encode(data).decode("ascii")


def kubeconfig(cluster: dict, user: dict | None, context_extra: dict | None = None, current: str | None = "ctx"):
    context = dict(cluster="c", **(context_extra or {}))
    if user is not None:
        context["user"] = "u"
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": cluster}],
        "contexts": [{"name": "ctx", "context": context}],
        "users": [{"name": "u", "user": user}] if user is not None else [],
    }
    if current:
        document["current-context"] = current
    return document


def write(tmp_path, document, name="config") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(document))
    return str(path)


def read(path):
    if path is None:
        return None
    with open(path, "rb") as handle:
        return handle.read()


def view(configuration, pool: dict) -> dict:
    """The server, Authorization header and TLS of a configuration and its urllib3 pool arguments (files read)."""
    return dict(
        host=configuration.host,
        auth=configuration.auth_settings(),
        cert_reqs=pool["cert_reqs"],
        ca=read(pool.get("ca_certs")) or (pool.get("ca_cert_data") or "").encode() or None,
        cert=read(pool.get("cert_file")),
        key=read(pool.get("key_file")),
        server_hostname=pool.get("server_hostname"),
        maxsize=pool.get("maxsize"),
    )


def library_view(path: str, context=None) -> dict:
    """What the kubernetes library makes of ``path``: its configuration and its REST client's pool arguments."""
    from kubernetes import client, config
    from kubernetes.client import rest

    configuration = client.Configuration()
    config.load_kube_config(config_file=path, context=context, client_configuration=configuration)
    return view(configuration, rest.RESTClientObject(configuration).pool_manager.connection_pool_kw)


def light_view(path: str, context=None) -> dict:
    settings_ = transport.from_kubeconfig(path, context)
    assert settings_ is not None, "the transport left %s to the library" % path
    files = transport.PrivateFiles()
    try:
        return view(transport.Configuration(settings_), transport.pool_arguments(settings_, files))
    finally:
        files.close()


@pytest.fixture
def files():
    """Private files removed after the test: the process-wide ones are removed at exit, which the workers of
    ``pytest -n`` skip (they end with ``os._exit``), leaving a ``bmt-kube-*`` directory per worker behind."""
    private = transport.PrivateFiles()
    yield private
    private.close()


@pytest.fixture(autouse=True)
def no_proxy_environment(monkeypatch):
    for name in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "KUBECONFIG"):
        monkeypatch.delenv(name, raising=False)


USERS = {
    "token": {"token": "tok-123"},
    "basic": {"username": "ann", "password": "s3cret:x"},
    "cert-data": {"client-certificate-data": b64(CERT), "client-key-data": b64(KEY)},
    "cert-files": {"client-certificate": "pki/client.crt", "client-key": "pki/client.key"},
    "cert-absolute": {"client-certificate": "ABS/client.crt", "client-key": "ABS/client.key"},
    "token-and-cert": {"token": "tok-9", "client-certificate-data": b64(CERT), "client-key-data": b64(KEY)},
    "nothing": {},
    "no-user": None,
}
CAS = {
    "none": {},
    "data": {"certificate-authority-data": b64(CA)},
    "file": {"certificate-authority": "pki/ca.crt"},
    "both": {"certificate-authority": "pki/other.crt", "certificate-authority-data": b64(CA)},
}


@settings(max_examples=80, deadline=None)
@given(
    user=st.sampled_from(sorted(USERS)),
    ca=st.sampled_from(sorted(CAS)),
    scheme=st.sampled_from(["https", "http"]),
    slash=st.booleans(),
    insecure=st.sampled_from([None, True, False]),
    server_name=st.sampled_from([None, "api.internal"]),
    named_context=st.booleans(),
)
def test_every_kubeconfig_the_transport_takes_reads_as_the_library_reads_it(
    tmp_path_factory, user, ca, scheme, slash, insecure, server_name, named_context
):
    tmp_path = tmp_path_factory.mktemp("kc")
    (tmp_path / "pki").mkdir()
    for name, data in (("client.crt", CERT), ("client.key", KEY), ("ca.crt", CA), ("other.crt", b"other")):
        (tmp_path / "pki" / name).write_bytes(data)
    cluster = dict(server="%s://127.0.0.1:6443%s" % (scheme, "/" if slash else ""), **CAS[ca])
    if insecure is not None:
        cluster["insecure-skip-tls-verify"] = insecure
    if server_name:
        cluster["tls-server-name"] = server_name
    user_fields = USERS[user]
    if user_fields is not None:
        user_fields = {k: v.replace("ABS", str(tmp_path / "pki")) for k, v in user_fields.items()}
    document = kubeconfig(cluster, user_fields, current=None if named_context else "ctx")
    path = write(tmp_path, document)
    context = "ctx" if named_context else None
    assert light_view(path, context) == library_view(path, context)


@pytest.mark.parametrize(
    "change, why",
    [
        (lambda d: d["users"][0]["user"].update(exec={"command": "get-token", "apiVersion": "v1"}), "exec"),
        (lambda d: d["users"][0]["user"].update({"auth-provider": {"name": "oidc"}}), "auth-provider"),
        (lambda d: d["users"][0]["user"].update(token=None, tokenFile="token.txt"), "tokenFile"),
        (lambda d: d["clusters"][0]["cluster"].update({"proxy-url": "http://proxy:3128"}), "proxy-url"),
        (lambda d: d.update({"current-context": "elsewhere"}), "a context that is not there"),
        (lambda d: d.pop("current-context"), "no context at all"),
        (lambda d: d["clusters"][0]["cluster"].pop("server"), "no server"),
        (lambda d: d["clusters"][0]["cluster"].update({"certificate-authority": "missing.crt"}), "a missing CA file"),
        (lambda d: d["clusters"][0]["cluster"].update({"certificate-authority-data": "%%%"}), "CA data not base64"),
        (lambda d: d["contexts"][0]["context"].update(user="nobody"), "a user that is not there"),
        (lambda d: d["users"][0]["user"].update(token=["a", "list"]), "a token that is not text"),
    ],
)
def test_what_the_transport_does_not_read_is_left_to_the_library(tmp_path, change, why):
    document = kubeconfig({"server": "https://127.0.0.1:6443"}, {"token": "tok"})
    change(document)
    assert transport.from_kubeconfig(write(tmp_path, document), None) is None, why


def test_files_that_are_not_one_kubeconfig_are_left_to_the_library(tmp_path, monkeypatch):
    good = write(tmp_path, kubeconfig({"server": "https://127.0.0.1:6443"}, {"token": "tok"}))
    (tmp_path / "broken").write_text("clusters: [unclosed\n")
    (tmp_path / "list").write_text("- 1\n- 2\n")
    assert transport.from_kubeconfig(str(tmp_path / "absent"), None) is None
    assert transport.from_kubeconfig(str(tmp_path / "broken"), None) is None
    assert transport.from_kubeconfig(str(tmp_path / "list"), None) is None
    monkeypatch.setenv("KUBECONFIG", good + os.pathsep + good)
    assert transport.from_kubeconfig(None, None) is None
    monkeypatch.setenv("KUBECONFIG", good)
    assert transport.from_kubeconfig(None, None).authorization == "Bearer tok"


def test_a_proxy_in_the_environment_leaves_the_connection_to_the_library(tmp_path, monkeypatch):
    path = write(tmp_path, kubeconfig({"server": "https://127.0.0.1:6443"}, {"token": "tok"}))
    assert transport.from_kubeconfig(path, None) is not None
    monkeypatch.setenv("https_proxy", "http://proxy:3128")
    assert transport.from_kubeconfig(path, None) is None
    assert transport.settings_from_options({"host": "https://127.0.0.1:6443", "api_key": "x"}) is None


def test_host_and_api_key_give_the_same_client_as_the_library(tmp_path):
    from kubernetes import client
    from kubernetes.client import rest

    (tmp_path / "c.crt").write_bytes(CERT)
    (tmp_path / "c.key").write_bytes(KEY)
    (tmp_path / "ca.crt").write_bytes(CA)
    params = dict(
        host="https://10.0.0.1:6443",
        api_key="abc",
        client_cert=str(tmp_path / "c.crt"),
        client_key=str(tmp_path / "c.key"),
        ca_cert=str(tmp_path / "ca.crt"),
        validate_certs=False,
    )
    light = connection.kube_api_client(params)
    library = connection.library_api_client(params)
    assert isinstance(light, transport.LightClient) and isinstance(library, client.ApiClient)
    assert light.configuration.host == library.configuration.host
    assert light.configuration.auth_settings() == library.configuration.auth_settings()
    mine = light.rest_client.pool_manager.connection_pool_kw
    theirs = rest.RESTClientObject(library.configuration).pool_manager.connection_pool_kw
    for key in ("cert_reqs", "ca_certs", "cert_file", "key_file", "maxsize"):
        assert mine.get(key) == theirs.get(key), key
    assert mine["cert_reqs"] == ssl.CERT_NONE


def test_the_options_ca_cert_and_validate_certs_override_the_kubeconfig(tmp_path):
    (tmp_path / "mine.crt").write_bytes(b"mine")
    path = write(tmp_path, kubeconfig({"server": "https://h:1", "certificate-authority-data": b64(CA)}, {"token": "t"}))
    client = connection.kube_api_client(dict(kubeconfig=path, ca_cert=str(tmp_path / "mine.crt"), validate_certs=False))
    pool = client.rest_client.pool_manager.connection_pool_kw
    assert pool["ca_certs"] == str(tmp_path / "mine.crt") and pool["ca_cert_data"] is None
    assert pool["cert_reqs"] == ssl.CERT_NONE


def test_a_token_file_kubeconfig_is_read_by_the_library(tmp_path):
    from kubernetes import client

    (tmp_path / "token.txt").write_text("from-file")
    path = write(tmp_path, kubeconfig({"server": "https://h:1"}, {"tokenFile": "token.txt"}))
    built = connection.kube_api_client(dict(kubeconfig=path))
    assert isinstance(built, client.ApiClient)
    assert built.configuration.auth_settings()["BearerToken"]["value"] == "Bearer from-file"


def test_embedded_client_keys_are_written_readable_by_this_user_only(files):
    settings_ = transport.Settings(host="https://h:1", cert_data=CERT, key_data=KEY)
    arguments = transport.pool_arguments(settings_, files)
    for key in ("cert_file", "key_file"):
        mode = os.stat(arguments[key]).st_mode
        assert stat.S_IMODE(mode) == 0o600, key
    assert read(arguments["key_file"]) == KEY
    assert stat.S_IMODE(os.stat(os.path.dirname(arguments["key_file"])).st_mode) == 0o700
    files.close()
    assert not os.path.exists(os.path.dirname(arguments["key_file"])), "close leaves the keys behind"


def test_the_settings_never_show_the_token():
    shown = repr(transport.Settings(host="https://h:1", authorization="Bearer very-secret"))
    assert "very-secret" not in shown and "https://h:1" in shown


def test_a_plain_kubeconfig_never_imports_the_kubernetes_library(tmp_path):
    path = write(tmp_path, kubeconfig({"server": "https://127.0.0.1:1"}, {"token": "t"}))
    code = (
        "import sys\n"
        "from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3 import client, connection\n"
        "io = client.KubeIO(connection.kube_api_client({'kubeconfig': %r}))\n"
        "assert io.headers(None)['authorization'] == 'Bearer t'\n"
        "print(sorted(m for m in sys.modules if m == 'kubernetes' or m.startswith('kubernetes.')))\n" % path
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
