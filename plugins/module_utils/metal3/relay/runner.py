# Copyright (c) 2026, baremetal.tenancy contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!

"""The relay of claims to another cluster, in ``host_bind``'s pass (composed into :class:`binder.run.Binder`).

For a claim with ``spec.credentials``, :meth:`Relay.sync`:

1. reads the credentials Secret from the claim's own namespace, and nowhere
   else, and parses it (:mod:`relay.kubeconfig`: no plugin, no file);
2. reaches the other cluster with that kubeconfig alone (one client per
   kubeconfig and pass, :class:`RemoteClients`), tells its dialect from the
   OpenAPI document any authenticated user may read, and plans the remote
   claim (:mod:`relay.remote`); everything that can be refused locally (the
   spec, a missing data Secret) is refused before anything remote is written;
3. puts the binder's finalizer on the local claim, then writes the Secret
   copies, the remote claim (create, or a merge patch with a precondition),
   and removes copies no field uses any more;
4. writes back the binding label, the remote claim's metadata and the status.

:meth:`Relay.release` deletes the remote claim of a deleted local claim and
keeps the local finalizer until the host cluster has let it go (its own
binder releases and cleans the host), then deletes the copies and removes the
finalizer.  A relay that fails writes one reason on the claim (``Ready``
when it was bound, so its last known host stays visible; ``AssociateBMH``
otherwise) and changes nothing remote.  Every message comes from
:func:`remote.failure_reason` and is scrubbed of the kubeconfig's secrets;
no exception text of the remote API reaches a result.  Writes go through the
pass's :class:`binder.writer.Writer` (check mode simulates them).

Each local claim comes as its record (:class:`claim.parsed.ParsedClaim`, parsed once when the pass read it):
its spec is not validated again here; an invalid one raises its ``InvalidInput`` where the spec is needed.
The other claims :meth:`Relay.release_credentials` reads are parsed when they are looked at (``parse``: the
pass's records, so a version the pass read is not parsed again).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ansible_collections.baremetal.tenancy.plugins.module_utils.common.errors import (
    BackendError,
    Conflict,
    InvalidInput,
    NotFound,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.common.merge_patch import get_path, with_precondition
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3 import transport
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.outcome import Outcome
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.binder.writer import Writer
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.dialect import openapi_dialect
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.identity import (
    claim_identity,
    finalizer_patch,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.metadata_import import import_metadata
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.parsed import ParsedClaim, parse_claim
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.spec import DATA_FIELDS
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.upward import (
    merge_patches,
    ready_problem,
    status_patch,
)
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.claim.view import recorded_host
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.client import KubeIO
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.relay import remote as model
from ansible_collections.baremetal.tenancy.plugins.module_utils.metal3.relay.kubeconfig import (
    RemoteAccess,
    access_from_secret,
)

USER_AGENT = "baremetal.tenancy-relay"


class RemoteClients:
    """A :class:`client.KubeIO` for each relayed claim's kubeconfig in one pass; certificates in a private directory
    (:class:`transport.PrivateFiles`) removed by :meth:`close`.  The kubeconfig is never written as a whole, never read back from a file by a library,
    and its token only ever goes in the ``Authorization`` header."""

    def __init__(self):
        self._files = transport.PrivateFiles()

    def __call__(self, access: RemoteAccess) -> KubeIO:
        settings = transport.Settings(
            host=access.server,
            authorization="Bearer %s" % access.token if access.token else None,
            cert_data=None if access.token else access.client_certificate,
            key_data=None if access.token else access.client_key,
            ca_data=access.certificate_authority.decode("ascii", "replace") if access.certificate_authority else None,
            verify=True,
            server_name=access.tls_server_name or None,
        )
        return KubeIO(transport.light_client(settings, self._files), user_agent=USER_AGENT)

    def close(self) -> None:
        self._files.close()


class Relay:
    """Relayed claims in one pass: sync, release, and the reason when it cannot be done."""

    #: remote writes retried after a conflict (the host cluster's binder writes the remote claim too)
    attempts = 2

    def __init__(
        self,
        io: KubeIO,
        writer: Writer,
        now: str,
        annotation_domains=(),
        clients: Callable[[RemoteAccess], KubeIO] | None = None,
        parse: Callable[[dict], ParsedClaim] | None = None,
    ):
        self.io = io
        self.writer = writer
        self.now = now
        self.annotation_domains = tuple(annotation_domains or ())
        self.clients = clients if clients is not None else RemoteClients()
        #: the record of a claim read (``PassState.parsed`` in a pass: the one parsed when the pass read it)
        self.parse = parse if parse is not None else parse_claim
        self._lock = threading.Lock()
        self._connected: dict[str, tuple[KubeIO, str]] = {}
        #: what the host clusters were asked, summed (for the module result)
        self.remote_ios: list[KubeIO] = []

    def close(self) -> None:
        close = getattr(self.clients, "close", None)
        if close is not None:
            close()

    def figures(self) -> dict:
        totals: dict = {}
        for io in self.remote_ios:
            for key, value in io.figures().items():
                totals[key] = totals.get(key, 0) + value
        return totals

    # -- reaching the other cluster ------------------------------------------------
    @staticmethod
    def secret_label(record: ParsedClaim) -> str:
        return "%s/%s" % (record.namespace, model.credentials_name(record))

    def access(self, record: ParsedClaim) -> tuple[RemoteAccess, dict]:
        """The kubeconfig of the claim's credentials Secret, read from the claim's own namespace only, and the
        Secret."""
        namespace = record.namespace
        name = model.credentials_name(record)
        owner = "Secret %s/%s" % (namespace, name)
        secret = self.io.get_secret(namespace, name)
        if secret is None:
            raise NotFound(owner, "was not found", {"reason": model.CREDENTIALS_NOT_FOUND})
        try:
            return access_from_secret(secret, owner), secret
        except InvalidInput as exc:
            exc.details["reason"] = model.CREDENTIALS_INVALID
            raise

    def hold_credentials(self, secret: dict, outcome: Outcome) -> None:
        """The credentials finalizer on the Secret (not on one being deleted: it is held already, or it goes)."""
        if not get_path(secret, "metadata", "deletionTimestamp"):
            patch = finalizer_patch(secret, True, model.CREDENTIALS_FINALIZER)
            if patch:
                self.writer.patch_secret(secret, patch, outcome)

    def release_credentials(self, record: ParsedClaim, outcome: Outcome) -> None:
        """The credentials finalizer off the Secret once no other claim of its namespace names it (read again, and
        tried twice: the claim released, no later pass would come back to it; a finalizer left on a Secret that
        changed twice meanwhile is its owner's to remove)."""
        name = model.credentials_name(record)
        for other in self.io.list_claims([record.namespace]):
            if claim_identity(other).uid != record.uid and model.credentials_name(self.parse(other)) == name:
                return
        for _attempt in range(self.attempts):
            secret = self.io.get_secret(record.namespace, name)
            patch = finalizer_patch(secret, False, model.CREDENTIALS_FINALIZER) if secret is not None else {}
            try:
                if patch:
                    self.writer.patch_secret(secret, patch, outcome)
                return
            except (Conflict, NotFound):
                self.io.count_conflict()

    def connect(self, access: RemoteAccess) -> tuple[KubeIO, str]:
        """The client and the HostClaim dialect of the other cluster (once per kubeconfig and pass)."""
        key = access.fingerprint()
        with self._lock:
            found = self._connected.get(key)
        if found is not None:
            return found
        remote_io = self.clients(access)
        dialect = openapi_dialect(remote_io.hostclaim_openapi())
        if dialect is None:
            raise BackendError("HostClaim API", "none served", {"reason": model.REMOTE_NO_API})
        with self._lock:
            self._connected[key] = (remote_io, dialect)
            self.remote_ios.append(remote_io)
        return remote_io, dialect

    def data_sources(self, record: ParsedClaim) -> dict:
        """``{field: Secret}`` of the claim's data Secrets, from its own namespace; ``NotFound`` for a missing one."""
        namespace = record.namespace
        sources = {}
        for field, name in model.data_secret_names(record).items():
            secret = self.io.get_secret(namespace, name)
            if secret is None:
                raise NotFound(
                    "Secret %s/%s" % (namespace, name),
                    "named in spec.%s was not found in namespace %s" % (field, namespace),
                    {"reason": model.DATA_SECRET_NOT_FOUND},
                )
            sources[field] = secret
        return sources

    # -- sync --------------------------------------------------------------------------
    def sync(self, record: ParsedClaim, outcome: Outcome) -> None:
        """Relay one claim (its record) that is not being deleted (see the module docstring)."""
        claim, access = record.obj, None
        try:
            access, secret = self.access(record)
            remote_io, dialect = self.connect(access)
            wanted = model.remote_claim(record, dialect, access.namespace)
            sources = self.data_sources(record)
            claim = self.writer.write_claim(claim, finalizer_patch(claim, True), outcome)
            self.hold_credentials(secret, outcome)
            remote = self._apply(claim, wanted, sources, self.writer.on(remote_io), remote_io, outcome)
        except Exception as exc:  # pylint: disable=broad-except
            self.failed(record, claim, exc, access, outcome)
            return
        self.write_back(claim, remote, outcome)

    def _apply(self, claim, wanted, sources, writer, remote_io, outcome):
        namespace, name = wanted["metadata"]["namespace"], wanted["metadata"]["name"]
        stale = []
        for field in DATA_FIELDS:
            current = remote_io.get_secret(namespace, model.remote_secret_name(name, field))
            if field not in sources:
                if current is not None and model.owned_by(current, claim):
                    stale.append(current)
                continue
            body = model.remote_secret(sources[field], claim, name, field, namespace)
            if current is None:
                writer.create_copy(body, outcome)
                continue
            patch = model.remote_secret_patch(current, body, claim)
            if patch is None:
                writer.delete_copy(current, outcome)
                writer.create_copy(body, outcome)
            elif patch:
                writer.patch_secret(current, patch, outcome)
        remote = None
        for attempt in range(self.attempts):
            current = remote_io.get_claim(namespace, name)
            try:
                if current is None:
                    remote = writer.create_claim(wanted, outcome)
                else:
                    remote = writer.write_claim(current, model.remote_claim_patch(current, wanted, claim), outcome)
                break
            except Conflict as exc:
                if (exc.details or {}).get("reason") or attempt + 1 == self.attempts:
                    raise
                remote_io.count_conflict()
        for secret in stale:
            writer.delete_copy(secret, outcome)
        return remote

    def write_back(self, claim: dict, remote: dict, outcome: Outcome) -> None:
        """The remote claim's binding, metadata and status on the local claim."""
        meta = merge_patches(
            model.local_label_patch(claim, remote),
            import_metadata(claim.get("metadata"), model.remote_metadata(remote), self.annotation_domains)["patch"],
        )
        status = model.local_status(remote, claim.get("status"), self.now)
        associate = next(c for c in status["conditions"] if c["type"] == "AssociateBMH")
        outcome.action = "relayed"
        outcome.host = model.bound_remote_host(remote)
        outcome.host_namespace = get_path(remote, "metadata", "namespace")
        outcome.reason, outcome.message = associate["reason"], associate["message"]
        try:
            claim = self.writer.write_claim(claim, with_precondition(meta, claim), outcome)
            patch = status_patch(claim.get("status"), status)
            self.writer.write_claim(claim, with_precondition(patch, claim), outcome, status=True)
        except (Conflict, NotFound):
            self.io.count_conflict()  # the tenant changed its claim since the list: the next pass sees it

    def failed(
        self, record: ParsedClaim, claim: dict, exc: Exception, access: RemoteAccess | None, outcome: Outcome
    ) -> None:
        """One reason on ``claim`` (the version of the claim of ``record`` last read or written, the same spec);
        nothing remote changed by this step."""
        reason, message = model.failure_reason(
            exc, self.secret_label(record), access.namespace if access is not None else None
        )
        message = model.scrub(message, access.secret_values() if access is not None else ())
        if reason == "RemoteRetry":
            outcome.action, outcome.reason, outcome.message = "deferred", reason, message
            return
        outcome.action, outcome.reason, outcome.message = "pending", reason, message
        existing = claim.get("status")
        if recorded_host(claim):
            status = ready_problem(existing or {}, existing, reason, message, self.now)
        else:
            status = model.pending_status(existing, reason, message, self.now)
        try:
            self.writer.write_claim(
                claim, with_precondition(status_patch(existing, status), claim), outcome, status=True
            )
        except (Conflict, NotFound):
            self.io.count_conflict()

    # -- release -----------------------------------------------------------------------
    def release(self, record: ParsedClaim, outcome: Outcome) -> None:
        """A deleted local claim (its record): delete the remote claim, wait until it is gone, then the copies and
        the finalizer."""
        claim, access = record.obj, None
        try:
            access = self.access(record)[0]
            remote_io, _dialect = self.connect(access)
            done = self._release_remote(claim, access.namespace, self.writer.on(remote_io), remote_io, outcome)
        except Exception as exc:  # pylint: disable=broad-except
            self.failed(record, claim, exc, access, outcome)
            outcome.action = "releasing"
            return
        if not done:
            outcome.action, outcome.reason = "releasing", "Releasing"
            outcome.message = "waiting for the host cluster to release the relayed claim"
            return
        try:
            self.writer.write_claim(claim, finalizer_patch(claim, False), outcome)
        except (Conflict, NotFound):
            self.io.count_conflict()
            return
        self.release_credentials(record, outcome)
        outcome.action, outcome.reason, outcome.message = "released", "Released", "the relayed claim was released"

    def _release_remote(self, claim, namespace, writer, remote_io, outcome):
        identity = claim_identity(claim)
        name = model.remote_claim_name(identity.namespace, identity.name, identity.uid)
        remote = remote_io.get_claim(namespace, name)
        if remote is not None and model.owned_by(remote, claim):
            outcome.host = model.bound_remote_host(remote)
            outcome.host_namespace = namespace
            if not get_path(remote, "metadata", "deletionTimestamp"):
                writer.delete_claim(remote, outcome)
                if not writer.check_mode:
                    remote = remote_io.get_claim(namespace, name)
            if remote is not None and model.owned_by(remote, claim):
                return False
        for field in DATA_FIELDS:
            copy = remote_io.get_secret(namespace, model.remote_secret_name(name, field))
            if copy is not None and model.owned_by(copy, claim):
                writer.delete_copy(copy, outcome)
        return True
