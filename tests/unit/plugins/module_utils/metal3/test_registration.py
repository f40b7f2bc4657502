# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""host_register on Metal3 (``registration.Metal3Registrar``) against the in-memory API: the sharing annotation
on new hosts, the migration of registered hosts whose policy is still in ``spec.hostClaimNamespaces``, and the
BMC address's driver family (virtual media, ...) kept in ``spec.bmc.address``."""

import copy
from types import SimpleNamespace

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import Conflict
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.registration import Metal3Registrar
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.share.sharing_policy import (
    ANNOTATION,
    host_policy,
)
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.metal3.fake_kube import (
    FakeApiClient,
    FakeKube,
)
from ansible_collections.baremetal.tenancy.tests.unit.plugins.module_utils.redfish.registration_facts import (
    FACTS,
    UUID,
)

NAMESPACE = "metal3"
POLICY = {"matches": "tenant-.*", "withLabel": None}


def job(driver="redfish"):
    return SimpleNamespace(
        spec={"name": "web-1", "username": "root", "password": "calvin", "validate_certs": False},
        facts=copy.deepcopy(FACTS),
        classification=SimpleNamespace(labels={"infra-kind": "large"}),
        base_url="http://127.0.0.1:8000",
        system_path="/redfish/v1/Systems/" + UUID,
        driver=driver,
        name=None,
        warning=None,
    )


def register(fake, policy, check_mode=False, driver="redfish"):
    registrar = Metal3Registrar(FakeApiClient(fake), NAMESPACE, check_mode, policy)
    one = job(driver)
    registrar.register(one)
    return one


def writes(fake, plural="baremetalhosts"):
    return [(method, body) for method, path, body in fake.requests if method != "GET" and plural in path]


def registered_legacy_host(fake):
    """Register web-1 as an older release did it: the policy in spec.hostClaimNamespaces, the Secret in place."""
    register(fake, None)
    fake.write("baremetalhosts", NAMESPACE, "web-1", {"spec": {"hostClaimNamespaces": {"withLabel": ["old"]}}})
    fake.requests.clear()


def test_a_new_host_gets_the_annotation_and_no_spec_field():
    fake = FakeKube(page=10)
    created = register(fake, POLICY)
    assert created.status == "registered"
    host = fake.get("baremetalhosts", NAMESPACE, "web-1")
    assert host["metadata"]["annotations"][ANNOTATION] == '{"matches":"tenant-.*"}'
    assert "hostClaimNamespaces" not in host["spec"]
    assert created.after["sharing"] == {"matches": "tenant-.*"}


def test_a_legacy_host_is_migrated_in_one_patch_then_left_unchanged():
    fake = FakeKube(page=10)
    registered_legacy_host(fake)
    first = register(fake, POLICY)
    assert first.status == "updated" and first.changed
    sent = writes(fake)
    assert len(sent) == 1 and sent[0][0] == "PATCH"
    assert sent[0][1]["metadata"]["annotations"] == {ANNOTATION: '{"matches":"tenant-.*"}'}
    assert sent[0][1]["spec"] == {"hostClaimNamespaces": None}
    host = fake.get("baremetalhosts", NAMESPACE, "web-1")
    assert "hostClaimNamespaces" not in host["spec"] and host_policy(host) == ({"matches": "tenant-.*"}, [])
    assert first.before["legacy_sharing"] == {"withLabel": ["old"]} and first.before["sharing"] is None
    assert first.after["sharing"] == {"matches": "tenant-.*"} and "legacy_sharing" not in first.after
    fake.requests.clear()
    second = register(fake, POLICY)
    assert second.status == "unchanged" and not second.changed and writes(fake) == []


def test_check_mode_shows_the_migration_and_writes_nothing():
    fake = FakeKube(page=10)
    registered_legacy_host(fake)
    before = copy.deepcopy(fake.get("baremetalhosts", NAMESPACE, "web-1"))
    planned = register(fake, POLICY, check_mode=True)
    assert planned.changed and writes(fake) == [] and writes(fake, "secrets") == []
    assert fake.get("baremetalhosts", NAMESPACE, "web-1") == before
    assert planned.before["legacy_sharing"] == {"withLabel": ["old"]}
    assert planned.after["sharing"] == {"matches": "tenant-.*"} and "legacy_sharing" not in planned.after


def test_without_the_option_a_legacy_host_is_left_as_it_is():
    fake = FakeKube(page=10)
    registered_legacy_host(fake)
    again = register(fake, None)
    assert again.status == "unchanged" and writes(fake) == []


VMEDIA = "redfish-virtualmedia+http://127.0.0.1:8000/redfish/v1/Systems/" + UUID


def test_a_new_host_keeps_the_driver_family_of_its_address():
    fake = FakeKube(page=10)
    created = register(fake, None, driver="redfish-virtualmedia")
    assert created.status == "registered"
    assert fake.get("baremetalhosts", NAMESPACE, "web-1")["spec"]["bmc"]["address"] == VMEDIA
    fake.requests.clear()
    again = register(fake, None, driver="redfish-virtualmedia")
    assert again.status == "unchanged" and not again.changed and writes(fake) == []


def test_plain_redfish_is_written_as_before():
    fake = FakeKube(page=10)
    register(fake, None)
    address = fake.get("baremetalhosts", NAMESPACE, "web-1")["spec"]["bmc"]["address"]
    assert address == "redfish+http://127.0.0.1:8000/redfish/v1/Systems/" + UUID


def test_another_driver_for_a_registered_system_patches_the_address_only():
    """bmc.address is a field host_register owns: a new family is patched like a new host or port would be
    (baremetal-operator's webhook then refuses it unless the host is registering or detached)."""
    fake = FakeKube(page=10)
    register(fake, None)  # as before the fix: redfish+http://
    fake.requests.clear()
    moved = register(fake, None, driver="redfish-virtualmedia")
    assert moved.status == "updated" and moved.changed
    sent = writes(fake)
    assert len(sent) == 1 and sent[0][0] == "PATCH"
    assert sent[0][1]["spec"] == {"bmc": {"address": VMEDIA}}
    assert set(sent[0][1]) == {"spec", "metadata"} and set(sent[0][1]["metadata"]) == {"resourceVersion"}
    assert fake.get("baremetalhosts", NAMESPACE, "web-1")["spec"]["bmc"]["address"] == VMEDIA


def test_check_mode_reports_a_new_driver_in_the_diff_and_writes_nothing():
    fake = FakeKube(page=10)
    register(fake, None)
    fake.requests.clear()
    would = register(fake, None, check_mode=True, driver="redfish-virtualmedia")
    assert would.status == "updated" and would.changed and writes(fake) == [] and writes(fake, "secrets") == []
    assert (
        would.before["bmc"]["scheme"] == "redfish+http" and would.after["bmc"]["scheme"] == "redfish-virtualmedia+http"
    )
    assert dict(would.before, bmc=None) == dict(would.after, bmc=None)  # nothing else would change
    assert "127.0.0.1:8000" not in repr((would.before, would.after))
    assert fake.get("baremetalhosts", NAMESPACE, "web-1")["spec"]["bmc"]["address"].startswith("redfish+http://")


def test_redfish_inspection_is_handed_to_a_new_host_once():
    """inspection=redfish: the new host has the agent's inspection off and the Redfish facts in the annotation
    the operator consumes; once the operator removed it, a rerun writes nothing."""
    fake = FakeKube(page=10)
    registrar = Metal3Registrar(FakeApiClient(fake), NAMESPACE, False, None, "redfish", False)
    first = job()
    registrar.register(first)
    host = fake.get("baremetalhosts", NAMESPACE, "web-1")
    assert (host["spec"]["inspectionMode"], host["spec"]["automatedCleaningMode"]) == ("disabled", "disabled")
    assert '"ramMebibytes": 524288' in host["metadata"]["annotations"]["inspect.metal3.io/hardwaredetails"]
    fake.write(
        "baremetalhosts", NAMESPACE, "web-1", {"metadata": {"annotations": {"inspect.metal3.io/hardwaredetails": None}}}
    )
    fake.requests.clear()
    again = job()
    Metal3Registrar(FakeApiClient(fake), NAMESPACE, False, None, "redfish", False).register(again)
    assert again.status == "unchanged" and writes(fake) == []


# -- a BareMetalHost write that fails after its credentials Secret (issue 34, item 3) ---------------------------------

HOSTS_PATH = "/apis/metal3.io/v1alpha1/namespaces/%s/baremetalhosts" % NAMESPACE


def on(method, path):
    return lambda m, p, body: m == method and p == path


def created_meanwhile(fake):
    """Another writer creates web-1 between the listing and the create: the create is refused (409)."""
    fake.add("baremetalhosts", {"metadata": {"name": "web-1", "namespace": NAMESPACE}})


def failed_registration(fake, one):
    try:
        Metal3Registrar(FakeApiClient(fake), NAMESPACE, False, None).register(one)
    except Conflict as exc:
        return exc
    raise AssertionError("the registration did not fail")


def new_credentials():
    one = job()
    one.spec["password"] = "new-password"
    one.classification.labels = {"infra-kind": "small"}
    return one


def test_a_host_that_cannot_be_created_takes_its_new_credentials_secret_with_it():
    fake = FakeKube(page=10)
    fake.hooks.append((on("POST", HOSTS_PATH), created_meanwhile))
    error = failed_registration(fake, job())
    assert fake.get("secrets", NAMESPACE, "web-1-bmc-secret") is None
    assert "already exists" in error.message and "Secret metal3/web-1-bmc-secret was undone" in error.message


def test_a_host_that_cannot_be_patched_gets_its_old_credentials_back():
    fake = FakeKube(page=10)
    register(fake, None)
    before = copy.deepcopy(fake.get("secrets", NAMESPACE, "web-1-bmc-secret"))
    # somebody changes the host between the listing and the patch: the patch is refused (409)
    fake.hooks.append(
        (
            on("PATCH", HOSTS_PATH + "/web-1"),
            lambda f: f.write("baremetalhosts", NAMESPACE, "web-1", {"metadata": {"labels": {"x": "y"}}}),
        )
    )
    error = failed_registration(fake, new_credentials())
    after = fake.get("secrets", NAMESPACE, "web-1-bmc-secret")
    assert after["data"] == before["data"] and after["metadata"]["labels"] == before["metadata"]["labels"]
    assert "Secret metal3/web-1-bmc-secret was undone" in error.message


def test_credentials_that_cannot_be_put_back_are_named_in_the_error():
    fake = FakeKube(page=10)
    register(fake, None)

    def both_change(f):
        f.write("baremetalhosts", NAMESPACE, "web-1", {"metadata": {"labels": {"x": "y"}}})
        f.write("secrets", NAMESPACE, "web-1-bmc-secret", {"metadata": {"labels": {"x": "y"}}})

    fake.hooks.append((on("PATCH", HOSTS_PATH + "/web-1"), both_change))
    error = failed_registration(fake, new_credentials())
    assert error.message.startswith("BareMetalHost metal3/web-1: ")
    assert "; Secret metal3/web-1-bmc-secret is left behind: undoing it failed (" in error.message
