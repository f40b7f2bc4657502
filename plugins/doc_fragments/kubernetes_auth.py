# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path to a kubeconfig file for the Kubernetes API (backend V(metal3)).
      - When neither O(kubeconfig) nor O(host) is given, C(~/.kube/config) or E(KUBECONFIG), then the in-cluster service account, are used.
      - The environment variable E(K8S_AUTH_KUBECONFIG) is used when the option is not set.
    type: path
  context:
    description:
      - The kubeconfig context to use.
      - The environment variable E(K8S_AUTH_CONTEXT) is used when the option is not set.
    type: str
  host:
    description:
      - URL of the Kubernetes API server; with O(api_key) it replaces O(kubeconfig).
      - The environment variable E(K8S_AUTH_HOST) is used when the option is not set (AWX's Kubernetes credential sets it).
    type: str
  api_key:
    description:
      - Bearer token for O(host).
      - The environment variable E(K8S_AUTH_API_KEY) is used when the option is not set.
    type: str
  client_cert:
    description:
      - Path to a client certificate for O(host).
      - The environment variable E(K8S_AUTH_CERT_FILE) is used when the option is not set.
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - Path to the key of O(client_cert).
      - The environment variable E(K8S_AUTH_KEY_FILE) is used when the option is not set.
    type: path
    aliases: [key_file]
"""
