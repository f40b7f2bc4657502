# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""host_register on Metal3: create or update BareMetalHosts and their BMC credential Secrets from what the BMCs told.

Needs a Kubernetes client with rights on BareMetalHosts and Secrets in the
infrastructure namespace.  Every request goes through the metal3
:class:`client.KubeIO`; every write step through the Metal3 writer
(:class:`metal3.writer.KubeWrites`), which in check mode records it and sends
nothing."""

from __future__ import annotations

from functools import partial

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import Conflict, undo_after
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import apply_merge_patch
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3 import registration_model as bmh_model
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.client import KubeIO
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.writer import KubeWrites
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import client as redfish
from ansible_collections.baremetal.tenancy.plugins.module_utils.redfish import registration_model as reg


class Metal3Registrar:
    parallel = False  # one writer per namespace: BareMetalHost names are checked against one listing

    def __init__(
        self,
        api_client,
        namespace: str,
        check_mode: bool,
        host_claim_namespaces: dict | None = None,
        inspection: str | None = None,
        automated_cleaning: bool | None = None,
    ):
        """``api_client``: a :class:`KubeIO` or a kubernetes ApiClient (wrapped in one)."""
        self.io = api_client if isinstance(api_client, KubeIO) else KubeIO(api_client)
        self.namespace = namespace
        self.check_mode = check_mode
        # each job reports its own change: the writer marks no module
        self.writer = KubeWrites(None, self.io, check_mode=check_mode)
        self.claim_namespaces = host_claim_namespaces
        self.inspection = inspection
        self.automated_cleaning = automated_cleaning
        listing = self.io.list_hosts([namespace])
        self.by_name = dict((h["metadata"]["name"], h) for h in listing)
        self.by_uuid = {}
        for host in self.by_name.values():
            uuid = reg.normal_uuid((host["metadata"].get("annotations") or {}).get(reg.SYSTEM_UUID_ANNOTATION))
            if uuid:
                self.by_uuid[uuid] = host

    def register(self, job):
        uuid = reg.normal_uuid(job.facts["uuid"])
        existing = self.by_uuid.get(uuid)
        name = existing["metadata"]["name"] if existing else reg.host_name(job.spec.get("name"), job.facts, "metal3")
        job.name = name
        obj = "BareMetalHost %s/%s" % (self.namespace, name)
        if existing is None and name in self.by_name:
            raise Conflict(
                obj,
                "exists for another system (its %s is %r, this BMC's system is %s)"
                % (
                    reg.SYSTEM_UUID_ANNOTATION,
                    (self.by_name[name]["metadata"].get("annotations") or {}).get(reg.SYSTEM_UUID_ANNOTATION),
                    uuid,
                ),
            )
        if existing is not None and job.spec.get("name") and job.spec["name"] != name:
            job.warning = "system %s is already registered as %s; name %s ignored" % (uuid, name, job.spec["name"])
        secret_name = ((existing or {}).get("spec", {}).get("bmc") or {}).get(
            "credentialsName"
        ) or bmh_model.secret_name(name)
        desired = bmh_model.desired_bmh(
            name,
            self.namespace,
            job.facts,
            job.classification.labels,
            redfish.bmh_address(job.base_url, job.system_path, job.driver),
            secret_name,
            validate_certs=job.spec.get("validate_certs", True),
            boot_mac_address=job.spec.get("boot_mac_address"),
            host_claim_namespaces=self.claim_namespaces,
            inspection=self.inspection,
            automated_cleaning=self.automated_cleaning,
        )
        spec = job.spec
        secret = self.io.get_secret(self.namespace, secret_name)
        secret_change = secret is None or bmh_model.secret_differs(secret, spec["username"], spec["password"])
        undo = None
        if secret_change and self.writer.change("write Secret %s/%s" % (self.namespace, secret_name)):
            body = bmh_model.desired_secret(secret_name, self.namespace, spec["username"], spec["password"])
            if secret is None:
                self.io.create_secret(self.namespace, body)
                undo = partial(self.io.delete_secret, self.namespace, secret_name)
            else:
                body["metadata"]["resourceVersion"] = secret["metadata"]["resourceVersion"]
                body["metadata"]["labels"] = dict(secret["metadata"].get("labels") or {}, **body["metadata"]["labels"])
                written = self.io.replace_secret(self.namespace, secret_name, body)
                undo = partial(self._restore_secret, secret, written)
        try:
            self._write_host(job, existing, desired, name, uuid, secret_change)
        except Exception as exc:
            if undo is not None:
                # the credentials go back as they were: a BareMetalHost that was not written must not find
                # new ones (nor leave a credentials Secret without a host)
                undo_after(exc, "Secret %s/%s" % (self.namespace, secret_name), undo)
            raise
        job.ref = dict(bareMetalHost=name, namespace=self.namespace)

    def _restore_secret(self, before, written):
        """Put the credentials Secret ``before`` back over the one this run ``written``."""
        body = dict(before, metadata=dict(before["metadata"], resourceVersion=written["metadata"]["resourceVersion"]))
        body["metadata"].pop("managedFields", None)
        self.io.replace_secret(self.namespace, before["metadata"]["name"], body)

    def _write_host(self, job, existing, desired, name, uuid, secret_change):
        """Create or patch the BareMetalHost (after its credentials Secret)."""
        job.before = bmh_model.bmh_view(existing)
        if existing is None:
            job.after = bmh_model.bmh_view(desired)
            job.status = "registered"
            job.changed = True
            if self.writer.change("create BareMetalHost %s/%s" % (self.namespace, name)):
                created = self.io.create_host(self.namespace, desired)
                self.by_name[name] = self.by_uuid[uuid] = created
        else:
            patch = bmh_model.bmh_patch(existing, desired, self.claim_namespaces is not None)
            after = apply_merge_patch(existing, patch) if patch else existing
            job.after = bmh_model.bmh_view(after)
            job.changed = bool(patch) or secret_change
            job.status = "updated" if job.changed else "unchanged"
            if patch and self.writer.change("patch BareMetalHost %s/%s" % (self.namespace, name)):
                patch.setdefault("metadata", {})["resourceVersion"] = existing["metadata"]["resourceVersion"]
                self.io.patch_host(self.namespace, name, patch)
        if secret_change and job.after is not None:
            job.after = dict(job.after, credentials="<changed>")
