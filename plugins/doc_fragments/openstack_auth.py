# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  cloud:
    description:
      - Name of a cloud in C(clouds.yaml), or a dict of connection settings (backend V(ironic)).
      - The environment variable E(OS_CLOUD) is used when the option is not set.
      - E(OS_CLIENT_CONFIG_FILE) locates C(clouds.yaml), as AWX's OpenStack credential sets it.
    type: raw
  auth:
    description:
      - Authentication settings for openstacksdk (C(auth_url), C(username), C(password), C(project_name), C(user_domain_name),
        C(project_domain_name), C(token), C(application_credential_id), C(application_credential_secret), ...).
      - When not set, built from the E(OS_AUTH_URL), E(OS_USERNAME), E(OS_PASSWORD), E(OS_PROJECT_NAME), E(OS_PROJECT_ID),
        E(OS_USER_DOMAIN_NAME), E(OS_PROJECT_DOMAIN_NAME), E(OS_SYSTEM_SCOPE), E(OS_TOKEN), E(OS_APPLICATION_CREDENTIAL_ID)
        and E(OS_APPLICATION_CREDENTIAL_SECRET) environment variables.
      - Tenants use credentials scoped to their own project.
    type: dict
  auth_type:
    description:
      - The keystoneauth plugin, for example V(password), V(token), V(v3applicationcredential).
      - The environment variable E(OS_AUTH_TYPE) is used when the option is not set.
    type: str
  region_name:
    description:
      - Region of the cloud.
      - The environment variable E(OS_REGION_NAME) is used when the option is not set.
    type: str
  interface:
    description:
      - Endpoint interface of the service catalog.
      - The environment variable E(OS_INTERFACE) is used when the option is not set.
    type: str
    choices: [admin, internal, public]
    aliases: [endpoint_type]
  api_timeout:
    description:
      - Timeout of each API request, in seconds.
      - The environment variable E(OS_API_TIMEOUT) is used when the option is not set.
    type: int
"""
