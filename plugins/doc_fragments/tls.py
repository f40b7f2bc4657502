# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  ca_cert:
    description:
      - CA bundle that signs the API server's certificate.
      - The environment variables E(K8S_AUTH_SSL_CA_CERT) and then E(OS_CACERT) are used when the option is not set.
    type: path
    aliases: [ssl_ca_cert, cacert]
  validate_certs:
    description:
      - Whether to verify the API server's TLS certificate.
      - The environment variables E(K8S_AUTH_VERIFY_SSL) and then E(OS_VERIFY) are used when the option is not set.
    type: bool
    aliases: [verify_ssl]
"""
