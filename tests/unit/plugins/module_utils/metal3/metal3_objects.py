# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Factories for HostClaim and BareMetalHost dicts, shaped like the Kubernetes API returns them."""

import copy
import json

from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import SHARING_ANNOTATION

INFRA_NS = "infra"

# BMC data that must never leave the BMH: used with find_bmc_data in the tests.
BMC_ADDRESS = "redfish-virtualmedia+https://10.99.88.77/redfish/v1/Systems/1"
BMC_IP = "10.99.88.77"
BMC_SECRET = "h1-bmc-secret-zq"
BMC_USER = "admin-zq"
BMC_PASSWORD = "hunter2-zq"
BMC_VALUES = [BMC_ADDRESS, BMC_IP, BMC_SECRET, BMC_USER, BMC_PASSWORD]


def make_claim(
    name="web-1",
    namespace="tenant-a",
    uid=None,
    spec=None,
    labels=None,
    annotations=None,
    created="2026-01-01T00:00:00Z",
    deleting=False,
    status=None,
):
    claim = {
        "apiVersion": "metal3.io/v1alpha1",
        "kind": "HostClaim",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid if uid is not None else "uid-%s-%s" % (namespace, name),
            "creationTimestamp": created,
            "resourceVersion": "11",
            "labels": dict(labels or {}),
            "annotations": dict(annotations or {}),
        },
        "spec": copy.deepcopy(spec) if spec is not None else {"online": False, "kind": "baremetal"},
    }
    if deleting:
        claim["metadata"]["deletionTimestamp"] = "2026-01-02T00:00:00Z"
        claim["metadata"]["finalizers"] = ["hostclaim.metal3.io"]
    if status is not None:
        claim["status"] = copy.deepcopy(status)
    return claim


def make_host(
    name="h1",
    namespace=INFRA_NS,
    labels=None,
    annotations=None,
    policy="default",
    state="available",
    consumer=None,
    online=False,
    powered_on=False,
    error_type=None,
    error_message=None,
    deleting=False,
    operational="OK",
    nics=None,
    hostname=None,
    image=None,
    resource_version="100",
    legacy_policy=None,
):
    """A BMH; ``policy`` is its sharing annotation (``"default"``: ``.*``), ``legacy_policy`` a ``spec.hostClaimNamespaces``."""
    host = {
        "apiVersion": "metal3.io/v1alpha1",
        "kind": "BareMetalHost",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": "uid-bmh-%s" % name,
            "resourceVersion": resource_version,
            "labels": dict(labels or {}),
            "annotations": dict(annotations or {}),
        },
        "spec": {
            "online": online,
            "bootMACAddress": "52:54:00:01:00:05",
            "bmc": {"address": BMC_ADDRESS, "credentialsName": BMC_SECRET, "disableCertificateVerification": True},
        },
        "status": {
            "operationalStatus": operational,
            "poweredOn": powered_on,
            "provisioning": {"state": state, "ID": "ironic-node-uuid"},
            "goodCredentials": {"credentials": {"name": BMC_SECRET, "namespace": namespace}},
            "triedCredentials": {"credentials": {"name": BMC_SECRET, "namespace": namespace}},
            "hardware": {
                "hostname": hostname,
                "nics": nics
                if nics is not None
                else [
                    {
                        "name": "ens3",
                        "mac": "52:54:00:01:00:05",
                        "ip": "192.168.133.33",
                        "model": "virtio",
                        "pxe": True,
                    },
                ],
                "systemVendor": {"manufacturer": "QEMU"},
            },
        },
    }
    if policy == "default":
        policy = {"matches": ".*"}
    if policy is not None:
        # the sharing policy lives in an annotation (compact JSON); a string is written as it is
        host["metadata"]["annotations"][SHARING_ANNOTATION] = (
            policy if isinstance(policy, str) else json.dumps(policy, separators=(",", ":"))
        )
    if legacy_policy is not None:
        host["spec"]["hostClaimNamespaces"] = legacy_policy
    if consumer is not None:
        host["spec"]["consumerRef"] = consumer
    if image is not None:
        host["spec"]["image"] = image
    if error_type:
        host["status"]["errorType"] = error_type
    if error_message:
        host["status"]["errorMessage"] = error_message
    if deleting:
        host["metadata"]["deletionTimestamp"] = "2026-01-02T00:00:00Z"
    return host


def ref_to(claim, uid=True):
    meta = claim["metadata"]
    ref = {
        "apiVersion": "metal3.io/v1alpha1",
        "kind": "HostClaim",
        "namespace": meta["namespace"],
        "name": meta["name"],
    }
    if uid:
        ref["uid"] = meta["uid"]
    return ref


NOW = "2026-03-01T10:00:00Z"


LATER = "2026-03-01T11:00:00Z"


IMAGE = {
    "url": "https://images.example.com/os.qcow2",
    "checksum": "https://images.example.com/os.qcow2.sha256sum",
    "checksumType": "sha256",
    "format": "qcow2",
}


def bound_pair(spec=None, claim_annotations=None, host_annotations=None, **host_args):
    claim = make_claim(spec=spec, annotations=claim_annotations)
    host = make_host(consumer=ref_to(claim), annotations=host_annotations, **host_args)
    return claim, host


def prune_empty(value):
    """Kubernetes does not distinguish an empty map from an absent one."""
    if isinstance(value, dict):
        pruned = dict((k, prune_empty(v)) for k, v in value.items())
        return dict((k, v) for k, v in pruned.items() if v != {})
    return value
