# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""Shared argument specs for authentication, with environment fallbacks.

Every auth option falls back to an environment variable, because AWX and
execution environments inject credentials that way: the Kubernetes options
use the ``K8S_AUTH_*`` names of kubernetes.core, the OpenStack ones the
``OS_*`` names of openstacksdk.  Every secret is ``no_log``.  Pure: imports
only ansible-core.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from ansible.module_utils.basic import env_fallback
from ansible.module_utils.errors import AnsibleFallbackNotFound

BACKENDS = ("metal3", "ironic")

KUBERNETES_AUTH_SPEC = dict(
    kubeconfig=dict(type="path", fallback=(env_fallback, ["K8S_AUTH_KUBECONFIG"])),
    context=dict(type="str", fallback=(env_fallback, ["K8S_AUTH_CONTEXT"])),
    host=dict(type="str", fallback=(env_fallback, ["K8S_AUTH_HOST"])),
    api_key=dict(type="str", no_log=True, fallback=(env_fallback, ["K8S_AUTH_API_KEY"])),
    client_cert=dict(type="path", aliases=["cert_file"], fallback=(env_fallback, ["K8S_AUTH_CERT_FILE"])),
    client_key=dict(type="path", aliases=["key_file"], no_log=False, fallback=(env_fallback, ["K8S_AUTH_KEY_FILE"])),
)

# Options both planes understand the same way.
TLS_SPEC = dict(
    ca_cert=dict(
        type="path", aliases=["ssl_ca_cert", "cacert"], fallback=(env_fallback, ["K8S_AUTH_SSL_CA_CERT", "OS_CACERT"])
    ),
    validate_certs=dict(
        type="bool", aliases=["verify_ssl"], fallback=(env_fallback, ["K8S_AUTH_VERIFY_SSL", "OS_VERIFY"])
    ),
)

# OS_* variable -> key of the openstacksdk ``auth`` dict.
OPENSTACK_AUTH_ENV = (
    ("OS_AUTH_URL", "auth_url"),
    ("OS_USERNAME", "username"),
    ("OS_USER_ID", "user_id"),
    ("OS_PASSWORD", "password"),
    ("OS_PROJECT_NAME", "project_name"),
    ("OS_PROJECT_ID", "project_id"),
    ("OS_USER_DOMAIN_NAME", "user_domain_name"),
    ("OS_USER_DOMAIN_ID", "user_domain_id"),
    ("OS_PROJECT_DOMAIN_NAME", "project_domain_name"),
    ("OS_PROJECT_DOMAIN_ID", "project_domain_id"),
    ("OS_SYSTEM_SCOPE", "system_scope"),
    ("OS_TOKEN", "token"),
    ("OS_APPLICATION_CREDENTIAL_ID", "application_credential_id"),
    ("OS_APPLICATION_CREDENTIAL_SECRET", "application_credential_secret"),
)


def openstack_auth_from_env(environ: Mapping[str, str] | None = None) -> dict:
    """Build the ``auth`` option from ``OS_*`` variables (an AnsibleModule fallback)."""
    environ = os.environ if environ is None else environ
    auth = dict((key, environ[var]) for var, key in OPENSTACK_AUTH_ENV if environ.get(var))
    if not auth:
        raise AnsibleFallbackNotFound
    return auth


OPENSTACK_AUTH_SPEC = dict(
    cloud=dict(type="raw", fallback=(env_fallback, ["OS_CLOUD"])),
    auth=dict(type="dict", no_log=True, fallback=(openstack_auth_from_env,)),
    auth_type=dict(type="str", fallback=(env_fallback, ["OS_AUTH_TYPE"])),
    region_name=dict(type="str", fallback=(env_fallback, ["OS_REGION_NAME"])),
    interface=dict(
        type="str",
        choices=["admin", "internal", "public"],
        aliases=["endpoint_type"],
        fallback=(env_fallback, ["OS_INTERFACE"]),
    ),
    api_timeout=dict(type="int", fallback=(env_fallback, ["OS_API_TIMEOUT"])),
)

WAIT_SPEC = dict(
    wait=dict(type="bool", default=False),
    wait_timeout=dict(type="int", default=600),
)


def auth_spec(backends: Sequence[str] = BACKENDS) -> dict:
    """The auth argument spec for modules working on ``backends``."""
    spec = dict(TLS_SPEC)
    if "metal3" in backends:
        spec.update(KUBERNETES_AUTH_SPEC)
    if "ironic" in backends:
        spec.update(OPENSTACK_AUTH_SPEC)
    return dict((k, dict(v)) for k, v in spec.items())
