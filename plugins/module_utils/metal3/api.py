# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The Metal3 API as the collection uses it: group/version, kinds, and the keys
the binder writes (binding label, tracking annotations, finalizer, Secret
copy labels) and the REST plurals.  Written once; pure.
"""

from __future__ import annotations

GROUP = "metal3.io"
VERSION = "v1alpha1"
API_VERSION = GROUP + "/" + VERSION
#: REST plurals (paths: ``client.api_path(API_VERSION, CLAIMS, namespace, name)``)
CLAIMS = "hostclaims"
HOSTS = "baremetalhosts"
DEPLOY_POLICIES = "hostdeploypolicies"
HOST_KIND = "BareMetalHost"
CLAIM_KIND = "HostClaim"
BINDING_DOMAIN = "hostclaim.metal3.io"
BINDING_LABEL = BINDING_DOMAIN + "/host"
IMPORTED_LABELS = BINDING_DOMAIN + "/imported-labels"
IMPORTED_ANNOTATIONS = BINDING_DOMAIN + "/imported-annotations"
PASSED_ANNOTATIONS = BINDING_DOMAIN + "/passed-annotations"
NODE_REUSE_LABEL = "infrastructure.cluster.x-k8s.io/node-reuse"
FINALIZER = BINDING_DOMAIN + "/release"
COPY_CLAIM_UID_LABEL = BINDING_DOMAIN + "/claim-uid"
COPY_CLAIM_NAMESPACE_LABEL = BINDING_DOMAIN + "/claim-namespace"
COPY_FIELD_LABEL = BINDING_DOMAIN + "/field"
COPY_SOURCE_ANNOTATION = BINDING_DOMAIN + "/source"
COPY_CLAIM_ANNOTATION = BINDING_DOMAIN + "/claim"
PAUSED_ANNOTATION = "baremetalhost.metal3.io/paused"
#: on a claim of baremetal-operator's dialect (whose status has no such fields): the bound host's addresses,
#: NICs and boot MAC as compact JSON, written by the binder (BMC data left out), read only with status.bareMetalHost
HOST_STATUS_ANNOTATION = BINDING_DOMAIN + "/host-status"
#: the owner's sharing policy of a host, as compact JSON (``sharing_policy``); written by host_share and
#: host_register, read by the binder.  An annotation, not a spec field: baremetal-operator's typed writes keep
#: ObjectMeta and drop spec fields its Go types lack.
SHARING_ANNOTATION = "baremetal.tenancy/host-claim-namespaces"
#: where the policy lived before (``spec.hostClaimNamespaces``): no longer read, only reported and removed
LEGACY_SHARING_FIELD = "hostClaimNamespaces"
#: annotation domains a host exports to its claim (the default of host_bind's annotation_domains)
EXPORT_ANNOTATION_DOMAINS = ("export.hostclaim.metal3.io",)
