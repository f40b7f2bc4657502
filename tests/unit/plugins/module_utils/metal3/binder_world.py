# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A small cluster of hosts, claims and namespaces on the in-memory API, and a binder on it (shared by the binder tests)."""

import base64

from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3 import client as m3client
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.api import SHARING_ANNOTATION
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder import run as metal3
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.pass_state import PassState
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.fake_kube import (
    FakeApiClient,
    FakeKube,
)

INFRA = "infra"


def world(hosts=3, claims=1, page=2):
    fake = FakeKube(page=page)
    for name in (INFRA, "tenant-a", "tenant-b"):
        fake.add("namespaces", {"metadata": {"name": name, "labels": {}}})
    for index in range(hosts):
        fake.add(
            "baremetalhosts",
            {
                "apiVersion": "metal3.io/v1alpha1",
                "kind": "BareMetalHost",
                "metadata": {
                    "name": "h%d" % index,
                    "namespace": INFRA,
                    "labels": {"kind": "m"},
                    "annotations": {SHARING_ANNOTATION: '{"matches":"tenant-.*"}'},
                },
                "spec": {
                    "online": False,
                    "bmc": {"address": "redfish://10.1.1.1/x", "credentialsName": "h%d-bmc" % index},
                },
                "status": {"provisioning": {"state": "available"}, "operationalStatus": "OK", "poweredOn": False},
            },
        )
    for index in range(claims):
        fake.add(
            "hostclaims",
            {
                "apiVersion": "metal3.io/v1alpha1",
                "kind": "HostClaim",
                "metadata": {"name": "c%d" % index, "namespace": "tenant-a"},
                "spec": {"online": False, "hostSelector": {"matchLabels": {"kind": "m"}}},
            },
        )
    return fake


def binder(fake, **kwargs):
    return metal3.Binder(m3client.KubeIO(FakeApiClient(fake)), workers=1, **kwargs)


def pass_state(fake, **kwargs):
    """What a pass reads, alone (no binder around it)."""
    return PassState(m3client.KubeIO(FakeApiClient(fake)), **kwargs)


def bound(fake):
    return dict(
        (obj["spec"]["consumerRef"]["name"], name)
        for (plural, dummy, name), obj in fake.objects.items()
        if plural == "baremetalhosts" and obj["spec"].get("consumerRef")
    )


def granted_and_deleted(fake):
    """c0 bound to a host carrying a BMC account granted to tenant-a, then deleted by the tenant."""
    binder(fake).run()
    host = bound(fake)["c0"]
    ledger = '[{"username": "bmt-1", "uri": "/redfish/v1/AccountService/Accounts/3", "grantee": "tenant-a"}]'
    fake.write("baremetalhosts", INFRA, host, {"metadata": {"annotations": {"baremetal.tenancy/bmc-accounts": ledger}}})
    fake.request("DELETE", "https://x/apis/metal3.io/v1alpha1/namespaces/tenant-a/hostclaims/c0")
    return host


def _b64(text):
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def credentialed_world(labels):
    fake = world(hosts=1)
    host = fake.get("baremetalhosts", INFRA, "h0")
    host["metadata"]["labels"].update(labels)
    fake.add(
        "secrets",
        {
            "metadata": {"name": "h0-bmc", "namespace": INFRA},
            "data": {"username": _b64("opsadmin"), "password": _b64("Kx7pQ2vR9wLm")},
        },
    )
    return fake


def hosts_labelled_with_their_bmc_user(fake, count):
    """Each host's credentials Secret, and a label repeating its BMC user (to be withheld)."""
    for index in range(count):
        fake.add(
            "secrets",
            {
                "metadata": {"name": "h%d-bmc" % index, "namespace": INFRA},
                "data": {"username": _b64("opsadmin"), "password": _b64("Kx7pQ2vR9wLm")},
            },
        )
        fake.get("baremetalhosts", INFRA, "h%d" % index)["metadata"]["labels"]["owner"] = "opsadmin"
