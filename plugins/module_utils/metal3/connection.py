# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Build a Kubernetes API client (its configuration and connection pool) from the shared auth options.

Nothing else: every request goes through :class:`client.KubeIO`.  The usual
credentials (``host`` with ``api_key`` or a client certificate; a kubeconfig
with a token, basic auth or a client certificate) get a light client of
:mod:`transport` without importing the kubernetes library; every other
kubeconfig (``exec``, ``auth-provider``, ``tokenFile``, a proxy, several files,
the in-cluster service account, any error) is read by the kubernetes library,
imported then, with its own messages.
"""

from __future__ import annotations

import importlib

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.libraries import KUBERNETES, require
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3 import transport


def kube_api_client(params: dict):
    """A client for :class:`client.KubeIO` for the options in ``params``: a light one, or the library's ``ApiClient``.

    ``host`` + ``api_key`` (or client certificates) win over ``kubeconfig``;
    with neither, the default kubeconfig (``~/.kube/config`` or
    ``KUBECONFIG``) and then the in-cluster service account are tried.
    """
    if params.get("host"):
        settings = transport.settings_from_options(params)
    else:
        settings = transport.from_kubeconfig(params.get("kubeconfig"), params.get("context"))
    if settings is not None:
        if params.get("ca_cert"):
            settings = settings._replace(ca_file=params["ca_cert"], ca_data=None)
        if params.get("validate_certs") is not None:
            settings = settings._replace(verify=params["validate_certs"])
        return transport.light_client(settings)
    return library_api_client(params)


def library_api_client(params: dict):
    """A ``kubernetes.client.ApiClient`` for ``params``, read by the kubernetes library (every kind of kubeconfig)."""
    require(KUBERNETES)  # imports kubernetes.config, or raises MissingLibrary with the import traceback
    k8s_client = importlib.import_module("kubernetes.client")
    k8s_config = importlib.import_module("kubernetes.config")
    configuration = k8s_client.Configuration()
    if params.get("host"):
        configuration.host = params["host"]
        if params.get("api_key"):
            configuration.api_key = {"authorization": "Bearer %s" % params["api_key"]}
        if params.get("client_cert"):
            configuration.cert_file = params["client_cert"]
        if params.get("client_key"):
            configuration.key_file = params["client_key"]
    else:
        try:
            k8s_config.load_kube_config(
                config_file=params.get("kubeconfig"), context=params.get("context"), client_configuration=configuration
            )
        except Exception as exc:  # kubernetes raises ConfigException, IOError, ...
            if params.get("kubeconfig") or params.get("context"):
                raise InvalidInput(
                    "kubeconfig %s" % (params.get("kubeconfig") or "(default)"), "cannot be loaded: %s" % exc
                ) from exc
            try:
                k8s_config.load_incluster_config(client_configuration=configuration)
            except Exception as incluster_exc:
                raise InvalidInput(
                    "Kubernetes credentials",
                    "none found: set kubeconfig, or host and api_key (or K8S_AUTH_* variables)",
                ) from incluster_exc
    if params.get("ca_cert"):
        configuration.ssl_ca_cert = params["ca_cert"]
    if params.get("validate_certs") is not None:
        configuration.verify_ssl = params["validate_certs"]
    return k8s_client.ApiClient(configuration)
